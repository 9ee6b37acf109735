/*
 * Reading a job for people: its state, envelope and the history of every
 * delivery, rebuilt from the sidecar's records.  Nothing here changes the
 * spool; a shared lock on the sidecar makes each look consistent, and is
 * held only while one sidecar is read.  A listing looks at each job once
 * without the lock (list.c), and comes here for what that cannot settle.
 * Also: whether a job's payload is still the bytes recorded.
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* src, a word of a record, into dst: cut to fit, as snprintf would. */
static void
copy_word(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static struct spool_delivery *
open_delivery(struct spool_job_info *in, uint64_t tok)
{
	size_t i;

	for (i = in->ndeliveries; i-- > 0;)
		if (in->deliveries[i].token == tok)
			return in->deliveries[i].end == NULL ?
			    &in->deliveries[i] : NULL;
	return NULL;
}

static void
end_delivery(struct spool_delivery *d, const struct rec *r, const char *end)
{
	if (d == NULL)
		return;
	d->ended = r->t;
	d->end = end;
	d->class = r->cls;
	copy_word(d->detail, sizeof(d->detail), r->detail);
}

/* One effective record's part in the history of deliveries. */
static int
add_history(struct spool_job_info *in, const struct rec *r, int wasleased)
{
	struct spool_delivery *d;

	switch (r->ev) {
	case SPOOL_EV_CLAIM:
		if (r->cls == SPOOL_CLASS_LEASE_EXPIRED)
			end_delivery(open_delivery(in, r->prev), r, "expired");
		d = realloc(in->deliveries, (in->ndeliveries + 1) * sizeof(*d));
		if (d == NULL)
			return -1;
		in->deliveries = d;
		d += in->ndeliveries++;
		memset(d, 0, sizeof(*d));
		d->cycle = r->cyc;
		d->attempt = r->att;
		d->token = r->tok;
		d->claimed = r->t;
		copy_word(d->owner, sizeof(d->owner), r->owner);
		d->class = 0;
		return 0;
	case SPOOL_EV_CANCEL:
		/* An operator stopped it: the holder can no longer finish. */
		if (wasleased)
			end_delivery(open_delivery(in, r->tok), r, "cancelled");
		return 0;
	case SPOOL_EV_OK:
	case SPOOL_EV_RETRY:
	case SPOOL_EV_RELEASE:
	case SPOOL_EV_PARK:
		if (r->out != 0)
			end_delivery(open_delivery(in, r->tok), r,
			    spool_outcome_name(r->out));
		else if (wasleased)
			end_delivery(open_delivery(in, r->tok), r,
			    r->cls == SPOOL_CLASS_LEASE_EXPIRED ? "expired" :
			    "parked");
		return 0;
	default:
		return 0;
	}
}

/*
 * The record of the line p .. nl: last, already parsed, for the last
 * complete line (lastline), else parsed into into; NULL if it does not
 * parse.
 */
static const struct rec *
line_rec(const char *p, const char *nl, const char *lastline,
    const struct rec *last, struct rec *into)
{
	if (p == lastline && last != NULL)
		return last;
	return rec_parse(p, (size_t)(nl - p), into) == 0 ? into : NULL;
}

/*
 * Replay the records: those a void record cancels are skipped, and the last
 * one counts only if job_locate found the file where it says.  Each line
 * is parsed once: the one after the record at hand (is it a void?) is the
 * next record at hand; and last, if not NULL, is the last complete line's
 * record, which folding the sidecar parsed already.
 */
static int
replay(struct spool_job_info *in, const char *buf, size_t len, int lastvoid,
    int history, const struct rec *last)
{
	const char *end = buf + len, *nl, *next, *lastline;
	const struct rec *r, *v;
	struct rec recs[2];
	int wasleased = 0, skip;

	if ((nl = memchr(buf, '\n', len)) == NULL)
		return 0;
	next = memrchr(buf, '\n', len);
	lastline = (lastline = memrchr(buf, '\n', (size_t)(next - buf))) ==
	    NULL ? buf : lastline + 1;
	if ((r = line_rec(buf, nl, lastline, last, &recs[0])) == NULL)
		return errno = EUCLEAN, -1;
	for (;;) {
		next = nl + 1;
		skip = r->ev == SPOOL_EV_VOID;
		/* Is the next complete line a void, or is this the last? */
		nl = memchr(next, '\n', (size_t)(end - next));
		v = nl == NULL ? NULL : line_rec(next, nl, lastline, last,
		    r == &recs[0] ? &recs[1] : &recs[0]);
		if (nl == NULL)
			skip |= lastvoid;
		else if (v != NULL && v->ev == SPOOL_EV_VOID)
			skip = 1;
		if (!skip) {
			if (history && add_history(in, r, wasleased) == -1)
				return -1;
			wasleased = r->loc == SPOOL_LEASED;
			/*
			 * A renew or a restore keeps the job where it was: the
			 * time it entered its state is that of its last other
			 * record.
			 */
			if (r->ev != SPOOL_EV_RENEW && r->ev != SPOOL_EV_RESTORE)
				in->since = r->t;
			if (r->by[0] != '\0') {
				copy_word(in->by, sizeof(in->by), r->by);
				copy_word(in->note, sizeof(in->note), r->note);
				in->acted = r->t;
			}
			if (r->ev == SPOOL_EV_ENQUEUE || r->ev ==
			    SPOOL_EV_REDRIVE)
				in->redriven = r->ev == SPOOL_EV_REDRIVE;
		}
		if (nl == NULL)
			return 0;
		if (v == NULL)
			return errno = EUCLEAN, -1;
		r = v;
	}
}

/* Does tmp/ hold a payload of id, an enqueue's not yet published? */
static int
in_tmp(struct spool *sp, const char *id)
{
	struct dirent *de;
	size_t len = strlen(id);
	struct dlist *d;
	int found = 0;

	if ((d = dir_list(sp->tmpfd)) == NULL)
		return 1;	/* cannot tell: not damage */
	while (!found && (errno = 0, de = dir_next(d)) != NULL)
		found = strncmp(de->d_name, id, len) == 0 &&
		    de->d_name[len] == ',';
	dir_close(d);
	return found;
}

/*
 * What a job read and located says of it: shared by spool_job_info and the
 * listings' lean look (list.c).  ev0: the last record's event before
 * job_locate, for a first enqueue that died before its rename.
 */
int
info_fill(struct spool *sp, struct job *j, int ev0, int history,
    struct spool_job_info *in)
{
	const struct rec *c = &j->cur;
	int e;

	memset(in, 0, sizeof(*in));
	if (c->loc != SPOOL_ABSENT && (j->fmode & 0444) == 0) {
		errno = EUCLEAN;	/* a mode a hand took away */
		return -1;
	}
	if (c->loc == SPOOL_ABSENT) {
		/*
		 * No job: none yet, or a first enqueue that died before its
		 * rename (its payload is still in tmp/).  A last record whose
		 * file is gone otherwise (a hand's rm) is damage.
		 */
		errno = j->voidtail && (ev0 != SPOOL_EV_ENQUEUE ||
		    !in_tmp(sp, j->id)) ? EUCLEAN : ENOENT;
		return -1;
	}
	copy_word(in->id, sizeof(in->id), j->id);
	in->state = (enum spool_state)c->loc;
	if (c->loc == SPOOL_NEW)
		(void)leaf_name(in->file, sizeof(in->file), j->id,
		    c->eligible);
	else if (c->loc == SPOOL_LEASED)
		(void)snprintf(in->file, sizeof(in->file), "%s,%" PRIu64,
		    j->id, c->tok);
	else
		(void)snprintf(in->file, sizeof(in->file), "%s", j->id);
	in->since = c->t;
	in->created = c->created;
	in->deadline = c->deadline;
	in->eligible = c->loc == SPOOL_NEW ? c->eligible : 0;
	in->lease_until = c->loc == SPOOL_LEASED ? c->until : 0;
	copy_word(in->trace, sizeof(in->trace), c->trace);
	copy_word(in->key, sizeof(in->key), c->key);
	if (c->loc == SPOOL_LEASED)
		copy_word(in->owner, sizeof(in->owner), c->owner);
	in->token = j->hi;
	in->attempts = c->att;
	in->max_attempts = c->max;
	in->cycles = c->cyc;
	in->reason = c->reason;
	in->class = c->cls;
	copy_word(in->detail, sizeof(in->detail), c->detail);
	in->side_effect = c->se;
	in->dropped = c->ev == SPOOL_EV_DROP;
	in->payload_size = c->sum != 0 ? c->size : 0;
	in->payload_xxh3 = c->sum;
	in->payload_resized = c->sum != 0 && (uint64_t)j->fsize != c->size;
	/* Folding parsed the last line: the job's state, unless it is void. */
	if (replay(in, j->text, j->textlen, j->voidtail, history,
	    j->voidtail || j->lastvoid ? NULL : &j->cur) == -1) {
		e = errno;
		spool_job_info_free(in);
		errno = e;
		return -1;
	}
	return 0;
}

/*
 * A damaged job, for the person who settles it: what its sidecar says,
 * its last record taken as done, and what is wrong.  located: the job's
 * file was found, so what info_fill refused is its mode or a record.
 */
static void
damaged_fill(struct spool *sp, struct job *j, const struct rec *last,
    int located, int history, struct spool_job_info *in)
{
	enum spool_damage damage = SPOOL_DAMAGE_MISSING;

	if (located && j->cur.loc != SPOOL_ABSENT)
		damage = (j->fmode & 0444) == 0 ? SPOOL_DAMAGE_UNREADABLE :
		    SPOOL_DAMAGE_SIDECAR;

	j->cur = *last;
	j->voidtail = 0;
	j->fmode = 0444;	/* no file to read, or one no one may */
	j->fsize = (off_t)last->size;
	if (last->loc == SPOOL_ABSENT ||
	    info_fill(sp, j, last->ev, history, in) == -1) {
		memset(in, 0, sizeof(*in));
		copy_word(in->id, sizeof(in->id), j->id);
		damage = SPOOL_DAMAGE_SIDECAR;
	}
	in->damage = damage;
	errno = EUCLEAN;
}

int
spool_job_info(struct spool *sp, const char *id, int history,
    struct spool_job_info *in)
{
	struct job j;
	struct rec last;
	int e, ev0, rv, located;

	memset(in, 0, sizeof(*in));
	if (!spool_valid_id(id)) {
		errno = EINVAL;
		return -1;
	}
	/* A shared lock: a look that overlaps a move must not see it half. */
	if (job_read(sp, id, LOCK_SH, &j) == -1) {
		if (errno == EUCLEAN) {	/* a sidecar that cannot be read */
			copy_word(in->id, sizeof(in->id), id);
			in->damage = SPOOL_DAMAGE_SIDECAR;
		}
		return -1;
	}
	ev0 = j.cur.ev;
	last = j.cur;
	located = job_locate(sp, &j) == 0;
	rv = located ? info_fill(sp, &j, ev0, history, in) : -1;
	if (rv == -1 && errno == EUCLEAN)
		damaged_fill(sp, &j, &last, located, history, in);
	e = errno;
	job_close(&j);
	errno = e;
	return rv;
}

void
spool_job_info_free(struct spool_job_info *in)
{
	free(in->deliveries);
	in->deliveries = NULL;
	in->ndeliveries = 0;
}

int
spool_payload_check(struct spool *sp, const char *id, int full)
{
	struct place p;
	struct job j;
	int fd, rv = -1, e;

	if (!spool_valid_id(id)) {
		errno = EINVAL;
		return -1;
	}
	if (job_read(sp, id, LOCK_SH, &j) == -1)
		return -1;
	if (job_locate(sp, &j) == -1)
		goto out;
	if (j.cur.loc == SPOOL_ABSENT) {
		errno = ENOENT;
		goto out;
	}
	if (place_of(sp, id, &j.cur, &p) == -1)
		goto out;
	fd = sys_openat(p.dirfd, p.name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK, 0);
	place_done(&p);
	if (fd == -1)
		goto out;
	rv = payload_matches(fd, &j.cur, full);
	e = errno;
	(void)close_fd(fd);	/* read-only */
	errno = e;
out:
	e = errno;
	job_close(&j);
	errno = e;
	return rv;
}
