/*
 * Purge: remove the payload of a finished (or, asked for by name, a parked)
 * job, then, once the purge is logged, its sidecar (format 2; format 1
 * keeps it, ending in a purge record that keeps the highest token).  The
 * record comes first; a crash before the file is gone is finished by the
 * next command that opens the job.  Also: recording the removal of a file
 * a person removed by hand, and sweeping tmp/.
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static int
purge_one(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;
	int from = *(const int *)b->extra;
	struct rec r;

	(void)sp;
	if (j->cur.loc != from) {
		refuse(&it->res, from == SPOOL_DEAD ? SPOOL_NO_NOT_PARKED :
		    SPOOL_NO_NOT_DONE, j);
		return 0;
	}
	if (changed_since(it, j))
		return 0;
	rec_next(j, &r, SPOOL_EV_PURGE, b->now);
	r.loc = SPOOL_ABSENT;
	r.reason = j->cur.reason;
	r.cls = j->cur.cls;
	if (b->op != NULL) {
		(void)snprintf(r.by, sizeof(r.by), "%s", b->op->by);
		(void)snprintf(r.note, sizeof(r.note), "%s", b->op->note);
	}
	/* The removal is made durable too: a purged file does not return. */
	j->event = SPOOL_EV_PURGE;
	it->res.state = SPOOL_ABSENT;
	it->res.token = r.tok;
	return job_record(j, &r);
}

/*
 * A job whose file a person removed by hand: every command refuses it as
 * damaged until someone says so.  Its file must be in neither place its
 * last two records say (else it is not missing, or spool-fsck --repair
 * finds where it went); then it is purged as a purge of its file would,
 * with the operator's by and note.  One job at a time: this is rare, and
 * the batch's opening of a job refuses a damaged one.
 */
static void
purge_missing(struct spool *sp, const struct spool_operator *op,
    struct spool_item *it)
{
	struct abuf ab = { NULL, 0, 0 };
	struct rec cur0, prev0, r;
	struct job j;
	int located;

	memset(&it->res, 0, sizeof(it->res));
	if (!spool_valid_id(it->id)) {
		failed(&it->res, EINVAL, 0);
		return;
	}
	if (job_read(sp, it->id, LOCK_EX, &j) == -1) {
		if (errno == ENOENT) {
			it->res.status = 1;
			it->res.refusal = SPOOL_NO_JOB;
		} else
			failed(&it->res, errno, 0);
		return;
	}
	cur0 = j.cur;
	prev0 = j.prev;
	if ((located = job_locate(sp, &j)) == -1 && errno != EUCLEAN) {
		failed(&it->res, errno, 0);
		goto out;
	}
	/* Found where one of its last two records says: not missing. */
	if (located == 0 && (!j.voidtail || j.cur.loc != SPOOL_ABSENT)) {
		refuse(&it->res, SPOOL_NO_NOT_MISSING, &j);
		goto out;
	}
	j.cur = cur0;
	j.prev = prev0;
	j.voidtail = 0;
	rec_next(&j, &r, SPOOL_EV_PURGE, now_ms());
	r.loc = SPOOL_ABSENT;
	r.reason = j.cur.reason;
	r.cls = j.cur.cls;
	(void)snprintf(r.by, sizeof(r.by), "%s", op->by);
	(void)snprintf(r.note, sizeof(r.note), "%s", op->note);
	/* A purge's record, once written, is the purge (as in batch.c). */
	if (job_record(&j, &r) == -1 || job_commit(&j) == -1) {
		failed(&it->res, errno, j.written != 0);
		goto out;
	}
	if (audit_add(&ab, sp, j.id, &r, SPOOL_EV_PURGE) == -1 ||
	    audit_flush(sp, &ab) == -1) {
		failed(&it->res, errno, 1);
		goto out;
	}
	it->res.state = SPOOL_ABSENT;
	it->res.token = r.tok;
	if (sp->format >= 2 && (sys_unlinkat(sp->metafd, j.id, 0) == -1 ||
	    sync_dir(sp->metafd, ".") == -1))
		failed(&it->res, errno, 1);
out:
	abuf_free(&ab);
	job_close(&j);
}

int
spool_purge(struct spool *sp, const struct spool_operator *op,
    enum spool_state from, struct spool_item *items, size_t n)
{
	DRAINING(sp);
	int state = from;
	size_t i;

	/* Parked and missing jobs go only by a person's named request. */
	if ((from != SPOOL_DONE && from != SPOOL_DEAD &&
	    from != SPOOL_ABSENT) || (from != SPOOL_DONE && op == NULL) ||
	    (op != NULL && (!spool_valid_note(op->by) ||
	    !spool_valid_note(op->note)))) {
		errno = EINVAL;
		return -1;
	}
	if (from == SPOOL_ABSENT) {
		for (i = 0; i < n; i++)
			purge_missing(sp, op, &items[i]);
		return 0;
	}
	return batch_items(sp, op, items, n, "purge", 0, purge_one, &state);
}

int
spool_sweep_tmp(struct spool *sp, int64_t age_ms, size_t *n)
{
	struct dirent *de;
	struct stat st;
	int64_t cutoff = now_ms() - age_ms;
	struct dlist *d;
	int rv = 0;

	*n = 0;
	if ((d = dir_list(sp->tmpfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (de->d_name[0] == '.' || fstatat(sp->tmpfd, de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || !S_ISREG(st.st_mode) ||
		    (int64_t)st.st_mtim.tv_sec * 1000 > cutoff)
			continue;
		if (sys_unlinkat(sp->tmpfd, de->d_name, 0) == 0)
			(*n)++;
		else if (errno != ENOENT)
			rv = -1;
	}
	if (errno != 0)
		rv = -1;
	dir_close(d);
	return rv;
}
