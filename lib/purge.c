/*
 * Purge: remove the payload of a finished (or, asked for by name, a parked)
 * job.  The sidecar stays, ending in a purge record that keeps the highest
 * token, so the ID can be enqueued again and its tokens still only rise.
 * The record comes first; a crash before the file is gone is finished by
 * the next command that opens the job.  Also: sweeping tmp/.
 */
#define _GNU_SOURCE
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

int
spool_purge(struct spool *sp, const struct spool_operator *op,
    enum spool_state from, struct spool_item *items, size_t n)
{
	int state = from;

	/* Parked jobs go only by a person's explicit, named request. */
	if ((from != SPOOL_DONE && from != SPOOL_DEAD) ||
	    (from == SPOOL_DEAD && op == NULL)) {
		errno = EINVAL;
		return -1;
	}
	return batch_items(sp, op, items, n, "purge", purge_one, &state);
}

int
spool_sweep_tmp(struct spool *sp, int64_t age_ms, size_t *n)
{
	struct dirent *de;
	struct stat st;
	int64_t cutoff = now_ms() - age_ms;
	DIR *d;
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
	(void)closedir(d);	/* read-only */
	return rv;
}
