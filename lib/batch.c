/*
 * The shape of every call that changes named jobs (finish, redrive, drop,
 * cancel, purge): lock them in ID order and decide each one's record;
 * write the records (and, but for finish and cancel, fdatasync them side by
 * side); then make the moves, write the audit lines in one write, and
 * sync what is left (each directory moved into once, the log, the records)
 * in one wait; only then let the jobs go, so that no other process acts on
 * a job before its transition is on disk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void
failed(struct spool_result *res, int err, int changed)
{
	res->status = -1;
	res->err = err;
	res->changed = changed;
}

/*
 * An item's job could not be changed (or, changed, could not be made
 * durable): every item naming it failed too.
 */
static void
fail_job(struct batch *b, const char **ids, struct spool_result **res,
    struct job *j, int err, int changed)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (ids[i] != NULL && strcmp(ids[i], j->id) == 0 &&
		    res[i]->status == 0)
			failed(res[i], err, changed);
	job_close(j);
}

/*
 * 6 (format 2): a purged job's sidecar goes too, once its purge is logged;
 * the audit line keeps its history and the token counter its tokens.  The
 * name is removed under the job's lock, and meta/ synced once, so that a
 * power cut does not bring a sidecar back.  One left behind by a crash is
 * harmless (it says the job is absent) and spool-fsck --repair removes it.
 */
static void
forget_purged(struct spool *sp, struct job *jobs, size_t n, const char **ids,
    struct spool_result **res)
{
	size_t i, k, forgot = 0;
	int e;

	if (sp->format < 2)
		return;
	for (i = 0; i < n; i++) {
		if (jobs[i].fd == -1 || jobs[i].cur.ev != SPOOL_EV_PURGE ||
		    res[i]->status != 0)
			continue;
		if (sys_unlinkat(sp->metafd, jobs[i].id, 0) == -1 &&
		    errno != ENOENT) {
			failed(res[i], errno, 1);
			continue;
		}
		forgot++;
	}
	if (forgot == 0)
		return;
	crash_point("purge-forgotten");
	if (sync_dir(sp->metafd, ".") == 0)
		return;
	e = errno;
	for (k = 0; k < n; k++)
		if (ids[k] != NULL && res[k]->status == 0 &&
		    jobs[k].cur.ev == SPOOL_EV_PURGE)
			failed(res[k], e, 1);
}

/* One round of a batch: its jobs, their results, and the order of each. */
struct round {
	struct job *jobs;		/* by item */
	struct spool_result **res;	/* by item */
	const char **ids;		/* by item: NULL, not in this round */
	size_t *order, m;		/* the round's items, in ID order */
	size_t *later, nl;		/* items named twice: the next round */
	size_t *synced, ns;		/* items whose record was written */
	int *fds, *errs;		/* their sidecars, and the syncs' answers */
};

static int
round_new(struct round *r, size_t n)
{
	memset(r, 0, sizeof(*r));
	if (hook_enomem("round")) {
		errno = ENOMEM;
		return -1;
	}
	n = n ? n : 1;
	r->jobs = calloc(n, sizeof(*r->jobs));
	r->res = calloc(n, sizeof(*r->res));
	r->ids = calloc(n, sizeof(*r->ids));
	r->order = calloc(n, sizeof(*r->order));
	r->synced = calloc(n, sizeof(*r->synced));
	r->fds = calloc(n, sizeof(*r->fds));
	r->errs = calloc(n, sizeof(*r->errs));
	return r->jobs == NULL || r->res == NULL || r->ids == NULL ||
	    r->order == NULL || r->synced == NULL || r->fds == NULL ||
	    r->errs == NULL ? -1 : 0;
}

static void
round_free(struct round *r, size_t n)
{
	size_t i;

	for (i = 0; r->jobs != NULL && i < n; i++)
		if (r->jobs[i].fd != -1)
			job_close(&r->jobs[i]);
	free(r->jobs);
	free(r->res);
	free(r->ids);
	free(r->order);
	free(r->later);
	free(r->synced);
	free(r->fds);
	free(r->errs);
}

/*
 * Is item i in this round: all items, or those b->only lists, in item
 * order?  *k walks b->only as i rises.
 */
static int
in_round(const struct batch *b, size_t i, size_t *k)
{
	if (b->only == NULL)
		return 1;
	if (*k == b->nonly || b->only[*k] != i)
		return 0;
	(*k)++;
	return 1;
}

/*
 * A round that could not begin: each of its items failed with err, and
 * reports so.  An item of a later round was given a result in the first;
 * without this it would read as done.
 */
static void
fail_round(struct batch *b, int err)
{
	struct spool_result *res;
	size_t i, k = 0;

	for (i = 0; i < b->n; i++)
		if (in_round(b, i, &k)) {
			(void)b->item(b, i, &res);
			failed(res, err, 0);
		}
}

/* The items of this round, valid ones in ID order. */
static void
take_items(struct batch *b, struct round *r)
{
	size_t i, k = 0;

	for (i = 0; i < b->n; i++) {
		r->jobs[i].fd = -1;
		if (!in_round(b, i, &k))
			continue;
		if ((r->ids[i] = b->item(b, i, &r->res[i])) != NULL)
			r->order[r->m++] = i;
		else
			failed(r->res[i], EINVAL, 0);
	}
	sort_by_id(r->order, r->m, r->ids);
}

/*
 * 1: lock each job in ID order, decide, write its record.  An ID named
 * twice is done again in a round of its own, after this one, as two calls
 * in a row would do it (the sort keeps the order in which they were named).
 */
static void
decide_all(struct spool *sp, struct batch *b, struct round *r)
{
	struct spool_result *res;
	struct job *j;
	size_t k, i;

	for (k = 0; k < r->m; k++) {
		i = r->order[k];
		res = r->res[i];
		j = &r->jobs[i];
		if (k > 0 && strcmp(r->ids[i], r->ids[r->order[k - 1]]) == 0) {
			if (r->later == NULL && (r->later = calloc(r->m,
			    sizeof(*r->later))) == NULL)
				failed(res, errno, 0);
			else
				r->later[r->nl++] = i;
			continue;
		}
		if (job_open(sp, r->ids[i], 0, 0, j, &b->ab) == -1) {
			if (errno == ENOENT) {
				res->status = 1;
				res->refusal = SPOOL_NO_JOB;
			} else
				failed(res, errno, 0);
			continue;
		}
		if (b->one(sp, j, i, b) == -1 || job_write(j) == -1)
			fail_job(b, r->ids, r->res, j, errno, 0);
	}
}

/*
 * 2: the records, durable side by side before any move, unless the call's
 * moves are all out of new/ or leased/ (b->onewait), which wait for them
 * together with their own syncs (see spool-layout.md, "Transitions").
 */
static void
sync_records(struct spool *sp, struct batch *b, struct round *r)
{
	char point[32];
	size_t i;

	for (i = 0; i < b->n; i++)
		if (r->jobs[i].fd != -1 && r->jobs[i].written != 0) {
			r->synced[r->ns] = i;
			r->fds[r->ns++] = r->jobs[i].fd;
		}
	if (!b->onewait)
		(void)psync(sp, r->fds, r->ns, 0, r->errs);
	(void)snprintf(point, sizeof(point), "%s-recorded", b->name);
	crash_point(point);
}

/*
 * 3: the moves; a job whose record did not sync stays put (void).  A
 * purge's record, once written, is the purge: the next command on the ID
 * removes the file (spool-layout.md, "Crashes").  Any other record waits
 * for its move.  What moved is left in synced[0 .. *nm - 1].
 */
static void
move_all(struct spool *sp, struct batch *b, struct round *r, size_t *nm)
{
	char point[32];
	struct job *j;
	size_t k;

	(void)snprintf(point, sizeof(point), "%s-moved", b->name);
	for (k = 0, *nm = 0; k < r->ns; k++) {
		j = &r->jobs[r->synced[k]];
		if ((!b->onewait && r->errs[k] != 0) ||
		    job_move(sp, j, &b->ds) == -1) {
			fail_job(b, r->ids, r->res, j, !b->onewait &&
			    r->errs[k] != 0 ? r->errs[k] : errno,
			    j->cur.loc == SPOOL_ABSENT);
			continue;
		}
		crash_point(point);
		if (audit_add(&b->ab, sp, j->id, &j->cur, j->event) == -1)
			failed(r->res[r->synced[k]], errno, 1);
		r->synced[*nm] = r->synced[k];
		r->fds[(*nm)++] = j->fd;
	}
}

/*
 * The wait itself.  A call with more to do first (b->then: the claim of
 * spool_finish_claim) writes its audit lines, as a finish alone does, and
 * then does it, the moves made and the jobs still locked.  It hands this
 * wait on to it: its commit is ours too.  If it made none, we wait alone.
 */
static int
wait_then(struct spool *sp, struct batch *b, const int *fds, size_t n,
    int *errs)
{
	struct dirset none = { NULL, 0 };
	struct carry cy;

	if (b->then == NULL)
		return commit_sync(sp, fds, n, errs, &b->ds, &b->ab);
	memset(&cy, 0, sizeof(cy));
	cy.files = fds;
	cy.nfiles = n;
	cy.errs = errs;
	cy.ds = &b->ds;
	cy.ab = &b->ab;
	if (audit_write(sp, &b->ab, &cy.logfd, &cy.created) == -1) {
		b->then = NULL;	/* and the claim is not made */
		return -1;
	}
	b->then(sp, &cy, b->then_arg);
	b->then = NULL;		/* the first round's alone */
	if (!cy.taken) {
		(void)commit_with(sp, NULL, 0, NULL, &none, NULL, &cy);
		dirset_free(&none);
	}
	errno = cy.err;
	return cy.rv;
}

/*
 * 4, 5: the one wait: each directory moved into and the audit lines (and
 * the records, if step 2 did not sync them).  A record that did not sync
 * fails its job, which has moved: the state changed.
 */
static void
wait_all(struct spool *sp, struct batch *b, struct round *r, size_t nm)
{
	char point[32];
	size_t k;
	int e;

	(void)snprintf(point, sizeof(point), "%s-synced", b->name);
	if (wait_then(sp, b, r->fds, b->onewait ? nm : 0, r->errs) == -1) {
		e = errno;
		for (k = 0; k < r->m; k++)
			if (r->res[r->order[k]]->status == 0)
				failed(r->res[r->order[k]], e, 1);
		return;
	}
	crash_point(point);
	for (k = 0; b->onewait && k < nm; k++)
		if (r->errs[k] != 0 && r->res[r->synced[k]]->status == 0)
			fail_job(b, r->ids, r->res, &r->jobs[r->synced[k]],
			    r->errs[k], 1);
	(void)snprintf(point, sizeof(point), "%s-logged", b->name);
	crash_point(point);
	forget_purged(sp, r->jobs, b->n, r->ids, r->res);
}

/* later[] is in ID order; the next round wants item order. */
static void
sort_items(size_t *v, size_t n)
{
	size_t i, k, t;

	for (i = 1; i < n; i++)
		for (k = i; k > 0 && v[k - 1] > v[k]; k--) {
			t = v[k];
			v[k] = v[k - 1];
			v[k - 1] = t;
		}
}

int
batch_run(struct spool *sp, struct batch *b)
{
	struct round r;
	size_t nm;
	int rv = 0, e;

	if (b->n > SPOOL_BATCH_MAX) {
		errno = EINVAL;
		return -1;
	}
	buckets_hold(sp);
	if (round_new(&r, b->n) == -1) {
		e = errno;
		fail_round(b, e);
		round_free(&r, 0);
		buckets_drop(sp);
		errno = e;
		return -1;
	}
	b->now = now_ms();
	take_items(b, &r);
	decide_all(sp, b, &r);
	sync_records(sp, b, &r);
	move_all(sp, b, &r, &nm);
	wait_all(sp, b, &r, nm);
	for (nm = 0; nm < b->n; nm++)
		if (r.jobs[nm].fd != -1)
			job_close(&r.jobs[nm]);
	dirset_free(&b->ds);
	abuf_free(&b->ab);
	if (r.nl > 0) {
		sort_items(r.later, r.nl);
		b->only = r.later;
		b->nonly = r.nl;
		rv = batch_run(sp, b);	/* the IDs named again: a round */
	}
	round_free(&r, b->n);
	buckets_drop(sp);
	return rv;
}

void
refuse(struct spool_result *res, int refusal, const struct job *j)
{
	res->status = 1;
	res->refusal = j->cur.loc == SPOOL_ABSENT ? SPOOL_NO_JOB : refusal;
	res->state = j->cur.loc;
	res->token = j->hi;
}

static const char *
item_id(struct batch *b, size_t i, struct spool_result **res)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;

	memset(&it->res, 0, sizeof(it->res));
	*res = &it->res;
	return spool_valid_id(it->id) ? it->id : NULL;
}

/*
 * A job in the state an action wants, but which entered it after the
 * selection that named it (item.before): refuse it, as changed.  Called
 * after the state check, so that a job that moved on says where it is.
 */
int
changed_since(struct spool_item *it, const struct job *j)
{
	if (it->before == 0 || j->cur.t < it->before)
		return 0;
	refuse(&it->res, SPOOL_NO_CHANGED, j);
	return 1;
}

/* The operator's actions on a list of IDs: redrive, drop, cancel, purge. */
int
batch_items(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n, const char *name, int onewait,
    int (*one)(struct spool *sp, struct job *j, size_t i, struct batch *b),
    const void *extra)
{
	DRAINING(sp);
	struct batch b;

	if (op != NULL && (!spool_valid_note(op->by) ||
	    !spool_valid_note(op->note))) {
		errno = EINVAL;
		return -1;
	}
	memset(&b, 0, sizeof(b));
	b.n = n;
	b.item = item_id;
	b.one = one;
	b.arg = items;
	b.op = op;
	b.extra = extra;
	b.name = name;
	b.onewait = onewait;
	return batch_run(sp, &b);
}
