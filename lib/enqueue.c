/*
 * Enqueue: the payload is copied into tmp/, its size and checksum counted
 * on the way.  The payload and the sidecar record are fsync'd; then one
 * rename publishes the file in new/.  Until that rename the job does not
 * exist: a crash leaves a file in tmp/ (never read by claimers, swept by
 * age) and a record that the next writer marks void.  A batch shares the
 * fsyncs of meta/, the buckets and the audit log.  spool_enqueue reads as
 * its five steps: take the payloads, record, sync, publish, commit.
 */
#define _GNU_SOURCE
#include <sys/random.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "internal.h"

struct pend {
	struct spool_job *in;
	char tmp[NAME_MAX_SPOOL];
	struct job j;
	int open;		/* j is open and locked */
	int fd;			/* the tmp/ file, until it is synced */
	int64_t eligible;
	uint64_t size, sum;	/* the payload's, as it was copied */
};

/* Drop a job of the batch: its tmp/ file goes. */
static void
drop(struct spool *sp, struct pend *p, int err, int changed)
{
	failed(&p->in->res, err, changed);
	if (p->tmp[0] != '\0')
		(void)sys_unlinkat(sp->tmpfd, p->tmp, 0);
	p->tmp[0] = '\0';
}

/*
 * fdatasync, side by side, every payload and record of the batch, tmp/
 * (unless a new cycle holds the lines back, see spool_enqueue) and, if a
 * sidecar was created, meta/: none of them depends on another, and all of
 * them must be durable before the first rename.  tmp/ keeps the payloads'
 * names: a power cut that loses a rename into new/ after the enqueue's
 * record and audit line leaves the payload there, where spool-fsck
 * --repair publishes it (the line is written in the rename's wait).  Then
 * close the payloads (a close can report a write error too).  A job whose
 * payload or record failed is dropped: its record, never followed by a
 * move, is void.
 */
static void
sync_batch(struct spool *sp, struct pend *p, const size_t *order, size_t m,
    int created, int cycle)
{
	int *fds, *errs, metafd = -1, tmpfd = -1, all = 0, err;
	size_t k, n = 0, nf;

	fds = calloc(2 * m + 2, sizeof(*fds));
	errs = calloc(2 * m + 2, sizeof(*errs));
	if (fds == NULL || errs == NULL)
		all = ENOMEM;
	if (!cycle)
		tmpfd = sp->tmpfd;
	if (created)
		metafd = sp->metafd;
	if (all == 0) {
		for (k = 0; k < m; k++)
			if (p[order[k]].tmp[0] != '\0') {
				fds[n++] = p[order[k]].fd;
				fds[n++] = p[order[k]].j.fd;
			}
		nf = n;
		if (tmpfd != -1)
			fds[n++] = tmpfd;
		if (metafd != -1)
			fds[n++] = metafd;
		(void)psync(sp, fds, n, (tmpfd != -1) + (metafd != -1), errs);
		/* No payload's or sidecar's name is safe. */
		for (k = nf; all == 0 && k < n; k++)
			all = errs[k];
	}
	for (k = 0, n = 0; k < m; k++) {
		struct pend *q = &p[order[k]];

		/* all == 0: every job still pending has its two syncs. */
		err = all;
		if (err == 0 && q->tmp[0] != '\0') {
			err = errs[n] != 0 ? errs[n] : errs[n + 1];
			n += 2;
		}
		if (close_fd(q->fd) == -1 && err == 0)
			err = errno;
		if (err != 0 && q->tmp[0] != '\0')
			drop(sp, q, err, 0);
	}
	free(fds);
	free(errs);
	crash_point("enqueue-recorded");
}

static int
copy_payload(struct spool *sp, struct pend *p, long pid)
{
	int fd, e;

	/*
	 * Job files are read-only: the spool never rewrites a payload.  A
	 * name left by a crashed process of the same PID (containers reuse
	 * PIDs) is passed over.
	 */
	do {
		(void)snprintf(p->tmp, sizeof(p->tmp), "%s,%ld.%lu", p->in->id,
		    pid, ++sp->tmpseq);
		fd = sys_openat(sp->tmpfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC | O_NOFOLLOW, 0444);
	} while (fd == -1 && errno == EEXIST && sp->tmpseq % 1000 != 0);
	if (fd == -1)
		return -1;
	if (file_mode(sp, fd, 0440) == -1 ||
	    payload_copy(p->in->fd, fd, &p->size, &p->sum) == -1)
		goto fail;
	p->fd = fd;	/* synced, with the batch's others, by sync_batch */
	return 0;
fail:
	e = errno;
	(void)close_fd(fd);
	(void)sys_unlinkat(sp->tmpfd, p->tmp, 0);
	errno = e;
	return -1;
}

/* The time a job is allowed: its own, or (0 or -1) the spool's. */
static int64_t
ttl_of(const struct spool *sp, const struct spool_job *in)
{
	return in->deadline_ms > 0 ? in->deadline_ms : sp->deadline_ms;
}

/* 0, or the errno for a job that cannot be taken: ERANGE if it could
 * never be delivered (eligible only after its deadline). */
static int
check_job(struct spool *sp, const struct spool_job *in)
{
	if ((in->id != NULL && !spool_valid_id(in->id)) ||
	    (in->trace != NULL && !spool_valid_id(in->trace)) ||
	    (in->key != NULL && !spool_valid_key(in->key)) ||
	    in->max_attempts < 0 || in->delay_ms < 0 ||
	    in->deadline_ms < -1)
		return EINVAL;
	if (in->delay_ms >= ttl_of(sp, in))
		return ERANGE;
	return 0;
}

/*
 * A random (version 4) UUID for each job of the call that names none, as
 * uuid_generate(3) makes them, from one getrandom(2) for them all: libuuid
 * asks the kernel six times for each.  Where getrandom cannot answer at
 * once, libuuid makes the rest.  An invalid job's is made and not used
 * (spool_enqueue checks each job before it takes its ID).
 */
static void
make_ids(struct spool_job *jobs, size_t n)
{
	unsigned char (*uu)[16];
	size_t i, k = 0, got = 0;
	ssize_t r;

	for (i = 0; i < n; i++)
		k += jobs[i].id == NULL;
	if (k == 0)
		return;
	if ((uu = calloc(k, sizeof(*uu))) != NULL)
		while (got < k * sizeof(*uu) && ((r = getrandom((char *)uu +
		    got, k * sizeof(*uu) - got, GRND_NONBLOCK)) > 0 ||
		    (r == -1 && errno == EINTR)))
			got += r > 0 ? (size_t)r : 0;
	for (i = 0, k = 0; i < n; i++) {
		if (jobs[i].id != NULL)
			continue;
		if ((k + 1) * sizeof(*uu) <= got) {
			uu[k][6] = (uu[k][6] & 0x0f) | 0x40;	/* version 4 */
			uu[k][8] = (uu[k][8] & 0x3f) | 0x80;	/* RFC 4122 */
			uuid_unparse_lower(uu[k], jobs[i].idbuf);
		} else {
			uuid_t one;

			uuid_generate(one);
			uuid_unparse_lower(one, jobs[i].idbuf);
		}
		k++;
	}
	free(uu);
}

/* Take the lock, check the ID is free (or done), write the record. */
static void
record(struct spool *sp, struct pend *p, int64_t now, int dup,
    struct abuf *ab, int *created)
{
	struct spool_job *in = p->in;
	int64_t ttl = ttl_of(sp, in);
	struct rec r;

	if (dup) {
		in->res.status = 1;
		in->res.refusal = SPOOL_NO_EXISTS;
		in->res.state = SPOOL_NEW;
		goto drop;
	}
	if (job_open(sp, in->id, 1, 0, &p->j, ab) == -1) {
		failed(&in->res, errno, 0);
		goto drop;
	}
	p->open = 1;
	/* New, or left by an enqueue that died before its fsync of meta/. */
	*created |= p->j.created || p->j.cur.cyc == 0;
	if (p->j.cur.loc != SPOOL_ABSENT && p->j.cur.loc != SPOOL_DONE) {
		in->res.status = 1;
		in->res.refusal = SPOOL_NO_EXISTS;
		in->res.state = p->j.cur.loc;
		in->res.token = p->j.hi;
		goto drop;
	}
	rec_next(&p->j, &r, SPOOL_EV_ENQUEUE, now);
	r.loc = SPOOL_NEW;
	r.eligible = p->eligible = now + in->delay_ms;
	r.att = 0;
	r.cyc = p->j.cur.cyc + 1;
	r.max = in->max_attempts ? in->max_attempts : sp->max_attempts;
	r.ttl = ttl;
	r.deadline = now + ttl;
	r.created = now;
	r.se = 0;
	r.size = p->size;
	r.sum = p->sum;
	(void)snprintf(r.trace, sizeof(r.trace), "%s",
	    in->trace != NULL ? in->trace : "");
	(void)snprintf(r.key, sizeof(r.key), "%s",
	    in->key != NULL ? in->key : "");
	if (job_record(&p->j, &r) == -1 || job_write(&p->j) == -1) {
		failed(&in->res, errno, 0);
		goto drop;
	}
	return;
drop:
	(void)sys_unlinkat(sp->tmpfd, p->tmp, 0);
	p->tmp[0] = '\0';
}

/*
 * Keep the last of the disk for draining (as Postfix's queue_minfree):
 * first make the reserve the spool holds whole (room.c), then, below the
 * reserve in free space, fail (EDQUOT, temporary).  Enqueue alone never
 * draws on the reserve: claim, finish and the rest go on when the disk is
 * full, whoever filled it.
 */
static int
below_reserve(struct spool *sp)
{
	struct spool_room r;
	int below;

	room_fill(sp);
	if (sp->reserve_bytes == 0 && sp->reserve_inodes == 0)
		return 0;
	if ((below = room_below(sp, &r)) == 1)
		errno = EDQUOT;
	return below != 0 ? -1 : 0;
}

/* One call's jobs: p[order[0 .. m - 1]] are those still going, in ID order. */
struct enq {
	struct spool *sp;
	struct pend *p;
	size_t *order, m;
	const char **ids;
	int64_t now;
	int created;	/* a sidecar was made: meta/ is synced */
	int cycle;	/* a done ID starts a new cycle: see commit_all */
	struct dirset ds;
	struct abuf ab;
};

/* A job still on its way: its payload is in tmp/, and nothing failed. */
static int
going(const struct pend *q)
{
	return q->tmp[0] != '\0';
}

/*
 * 1: check each job, give it its ID, and copy its payload into tmp/.
 * A job that fails here has nothing on disk.
 */
static void
take_payloads(struct enq *e, struct spool_job *jobs, size_t n)
{
	long pid = (long)getpid();
	size_t i;
	int err;

	make_ids(jobs, n);
	for (i = 0; i < n; i++) {
		memset(&jobs[i].res, 0, sizeof(jobs[i].res));
		e->p[i].in = &jobs[i];
		if ((err = check_job(e->sp, &jobs[i])) != 0) {
			failed(&jobs[i].res, err, 0);
			continue;
		}
		if (jobs[i].id == NULL)
			jobs[i].id = jobs[i].idbuf;
		else if (jobs[i].id != jobs[i].idbuf)
			(void)snprintf(jobs[i].idbuf, sizeof(jobs[i].idbuf),
			    "%s", jobs[i].id);
		e->ids[i] = jobs[i].id;
		if (copy_payload(e->sp, &e->p[i], pid) == -1)
			failed(&jobs[i].res, errno, 0);
		else
			e->order[e->m++] = i;
	}
	crash_point("enqueue-copied");
}

/*
 * 2: lock each job in ID order, so that two batches never wait on each
 * other, and write its record.  An ID named twice is refused the second
 * time, as a second call would be.
 */
static void
record_all(struct enq *e)
{
	struct pend *q;
	size_t k;

	sort_by_id(e->order, e->m, e->ids);
	for (k = 0; k < e->m; k++) {
		q = &e->p[e->order[k]];
		record(e->sp, q, e->now, k > 0 && strcmp(q->in->id,
		    e->p[e->order[k - 1]].in->id) == 0, &e->ab, &e->created);
		e->cycle |= going(q) && q->j.prev.loc == SPOOL_DONE;
	}
}

/* 4: move each payload into its bucket of new/, and write its line. */
static void
publish_all(struct enq *e)
{
	struct pend *q;
	size_t k;

	for (k = 0; k < e->m; k++) {
		q = &e->p[e->order[k]];
		if (!going(q))
			continue;
		if (publish_new(e->sp, e->sp->tmpfd, q->tmp, q->in->id,
		    q->eligible, &e->ds) == -1) {
			drop(e->sp, q, errno, 0);
			continue;
		}
		crash_point("enqueue-published");
		q->in->res.state = SPOOL_NEW;
		q->in->res.token = q->j.hi;
		if (audit_add(&e->ab, e->sp, q->in->id, &q->j.cur,
		    SPOOL_EV_ENQUEUE) == -1)
			failed(&q->in->res, errno, 1);
	}
}

/*
 * 5: one wait, for every bucket made or moved into and the lines.  But a
 * new cycle's lines wait for its removal of the previous cycle's file,
 * which waits for the new name: the log then has both at once.  Once the
 * new names are durable, settling removes the previous cycle's file from
 * done/ and logs it.  A job whose wait failed has moved: the state changed.
 */
static void
commit_all(struct enq *e)
{
	struct pend *q;
	size_t k;
	int err;

	err = commit_sync(e->sp, NULL, 0, NULL, &e->ds, e->cycle ? NULL :
	    &e->ab) == -1 ? errno : 0;
	if (err == 0)
		crash_point("enqueue-synced");
	for (k = 0; k < e->m && err == 0; k++) {
		q = &e->p[e->order[k]];
		q->j.cur_synced = 1;
		if (going(q) && q->in->res.status == 0 &&
		    q->j.prev.loc == SPOOL_DONE &&
		    job_settle(e->sp, &q->j, &e->ab) == -1)
			failed(&q->in->res, errno, 1);
	}
	if (err == 0 && audit_flush(e->sp, &e->ab) == 0) {
		crash_point("enqueue-logged");
		return;
	}
	err = err != 0 ? err : errno;
	for (k = 0; k < e->m; k++) {
		q = &e->p[e->order[k]];
		if (going(q) && q->in->res.status == 0)
			failed(&q->in->res, err, 1);
	}
}

int
spool_enqueue(struct spool *sp, struct spool_job *jobs, size_t n)
{
	DRAINING(NULL);		/* enqueue never draws, even from a callback */
	struct enq e = { .sp = sp, .now = now_ms() };
	size_t k;

	if (n > SPOOL_BATCH_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (below_reserve(sp) != 0)
		return -1;
	if ((e.p = calloc(n ? n : 1, sizeof(*e.p))) == NULL ||
	    (e.order = calloc(n ? n : 1, sizeof(*e.order))) == NULL ||
	    (e.ids = calloc(n ? n : 1, sizeof(*e.ids))) == NULL) {
		free(e.p);
		free(e.order);
		return -1;
	}
	buckets_hold(sp);
	take_payloads(&e, jobs, n);
	record_all(&e);
	sync_batch(sp, e.p, e.order, e.m, e.created, e.cycle);	/* 3 */
	publish_all(&e);
	commit_all(&e);
	for (k = 0; k < e.m; k++)
		if (e.p[e.order[k]].open)
			job_close(&e.p[e.order[k]].j);
	buckets_drop(sp);
	dirset_free(&e.ds);
	abuf_free(&e.ab);
	free(e.ids);
	free(e.order);
	free(e.p);
	return 0;
}
