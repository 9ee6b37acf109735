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

int
batch_run(struct spool *sp, struct batch *b)
{
	struct spool_result **res;
	struct job *jobs;
	const char **ids;
	size_t *order, *synced, *later = NULL, i, k, m = 0, ns = 0, nl = 0, nm;
	const size_t *only = b->only;
	size_t nonly = b->nonly;
	int *fds, *errs, e;
	char point[32];

	if (b->n > SPOOL_BATCH_MAX) {
		errno = EINVAL;
		return -1;
	}
	leaves_hold(sp);
	jobs = calloc(b->n ? b->n : 1, sizeof(*jobs));
	order = calloc(b->n ? b->n : 1, sizeof(*order));
	synced = calloc(b->n ? b->n : 1, sizeof(*synced));
	ids = calloc(b->n ? b->n : 1, sizeof(*ids));
	res = calloc(b->n ? b->n : 1, sizeof(*res));
	fds = calloc(b->n ? b->n : 1, sizeof(*fds));
	errs = calloc(b->n ? b->n : 1, sizeof(*errs));
	if (jobs == NULL || order == NULL || synced == NULL || ids == NULL ||
	    res == NULL || fds == NULL || errs == NULL) {
		e = -1;
		goto out;
	}
	b->now = now_ms();
	for (i = 0; i < b->n; i++) {
		jobs[i].fd = -1;
		if (only != NULL && (nonly == 0 || *only != i))
			continue;	/* not in this round */
		if (only != NULL)
			only++, nonly--;
		if ((ids[i] = b->item(b, i, &res[i])) != NULL)
			order[m++] = i;
		else
			failed(res[i], EINVAL, 0);
	}
	sort_by_id(order, m, ids);
	/* 1: lock each job in ID order, decide, write its record. */
	for (k = 0; k < m; k++) {
		struct spool_result *r = res[order[k]];
		struct job *j = &jobs[order[k]];

		/*
		 * An ID named twice is done again in a round of its own, after
		 * this one, as two calls in a row would do it (the sort keeps
		 * the order in which they were named).
		 */
		if (k > 0 && strcmp(ids[order[k]], ids[order[k - 1]]) == 0) {
			if (later == NULL && (later = calloc(m, sizeof(*later))) ==
			    NULL)
				failed(r, errno, 0);
			else
				later[nl++] = order[k];
			continue;
		}
		if (job_open(sp, ids[order[k]], 0, 0, j, &b->ab) == -1) {
			if (errno == ENOENT) {
				r->status = 1;
				r->refusal = SPOOL_NO_JOB;
			} else
				failed(r, errno, 0);
			continue;
		}
		if (b->one(sp, j, order[k], b) == -1 || job_write(j) == -1)
			fail_job(b, ids, res, j, errno, 0);
	}
	/*
	 * 2: the records, durable side by side before any move, unless the
	 * call's moves are all out of new/ or leased/ (b->onewait), which
	 * wait for them together with their own syncs (see spool-layout.md,
	 * "Transitions").
	 */
	for (i = 0; i < b->n; i++)
		if (jobs[i].fd != -1 && jobs[i].written != 0) {
			synced[ns] = i;
			fds[ns++] = jobs[i].fd;
		}
	if (!b->onewait)
		(void)psync(sp, fds, ns, 0, errs);
	(void)snprintf(point, sizeof(point), "%s-recorded", b->name);
	crash_point(point);
	/* 3: the moves; a job whose record did not sync stays put (void). */
	(void)snprintf(point, sizeof(point), "%s-moved", b->name);
	for (k = 0, nm = 0; k < ns; k++) {
		struct job *j = &jobs[synced[k]];

		/*
		 * A purge's record, once written, is the purge: the next
		 * command on the ID removes the file (spool-layout.md,
		 * "Crashes").  Any other record waits for its move.
		 */
		if ((!b->onewait && errs[k] != 0) ||
		    job_move(sp, j, &b->ds) == -1) {
			fail_job(b, ids, res, j, !b->onewait && errs[k] != 0 ?
			    errs[k] : errno, j->cur.loc == SPOOL_ABSENT);
			continue;
		}
		crash_point(point);
		if (audit_add(&b->ab, sp, j->id, &j->cur, j->event) == -1)
			failed(res[synced[k]], errno, 1);
		synced[nm] = synced[k];
		fds[nm++] = j->fd;
	}
	/*
	 * 4, 5: the one wait: each directory moved into and the audit lines
	 * (and the records, if step 2 did not sync them).  A record that did
	 * not sync fails its job, which has moved: the state changed.
	 */
	(void)snprintf(point, sizeof(point), "%s-synced", b->name);
	if (commit_sync(sp, fds, b->onewait ? nm : 0, errs, &b->ds,
	    &b->ab) == -1) {
		e = errno;
		for (k = 0; k < m; k++)
			if (res[order[k]]->status == 0)
				failed(res[order[k]], e, 1);
	} else {
		crash_point(point);
		for (k = 0; b->onewait && k < nm; k++)
			if (errs[k] != 0 && res[synced[k]]->status == 0)
				fail_job(b, ids, res, &jobs[synced[k]],
				    errs[k], 1);
		(void)snprintf(point, sizeof(point), "%s-logged", b->name);
		crash_point(point);
		forget_purged(sp, jobs, b->n, ids, res);
	}
	e = 0;
out:
	for (i = 0; jobs != NULL && i < b->n; i++)
		if (jobs[i].fd != -1)
			job_close(&jobs[i]);
	dirset_free(&b->ds);
	abuf_free(&b->ab);
	if (e == 0 && nl > 0) {
		/* later[] is in ID order; the next round wants item order. */
		for (i = 1; i < nl; i++)
			for (k = i; k > 0 && later[k - 1] > later[k]; k--) {
				size_t t = later[k];

				later[k] = later[k - 1];
				later[k - 1] = t;
			}
		b->only = later;
		b->nonly = nl;
		e = batch_run(sp, b);
	}
	free(later);
	free(jobs);
	free(order);
	free(synced);
	free(ids);
	free(res);
	free(fds);
	free(errs);
	leaves_drop(sp);
	return e;
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
