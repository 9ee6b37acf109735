/*
 * The shape shared by finish and redrive: lock the named jobs in ID order,
 * do one transition each, then make the batch durable with one fsync per
 * directory and one audit write, and only then let the jobs go, so that no
 * other process can act on a job before its transition is on disk.
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

int
batch_run(struct spool *sp, struct batch *b)
{
	struct spool_result **res;
	struct job *jobs;
	const char **ids;
	size_t *order, i, k, m = 0;
	char point[32];
	int e;

	if (b->n > SPOOL_BATCH_MAX) {
		errno = EINVAL;
		return -1;
	}
	jobs = calloc(b->n ? b->n : 1, sizeof(*jobs));
	order = calloc(b->n ? b->n : 1, sizeof(*order));
	ids = calloc(b->n ? b->n : 1, sizeof(*ids));
	res = calloc(b->n ? b->n : 1, sizeof(*res));
	if (jobs == NULL || order == NULL || ids == NULL || res == NULL) {
		free(jobs);
		free(order);
		free(ids);
		free(res);
		return -1;
	}
	b->now = now_ms();
	for (i = 0; i < b->n; i++) {
		jobs[i].fd = -1;
		if ((ids[i] = b->item(b, i, &res[i])) != NULL)
			order[m++] = i;
		else
			failed(res[i], EINVAL, 0);
	}
	sort_by_id(order, m, ids);
	for (k = 0; k < m; k++) {
		struct spool_result *r = res[order[k]];

		/*
		 * An ID named twice acts on the job as the first left it,
		 * as two calls in a row would (the sort keeps their order).
		 */
		if (k > 0 && strcmp(ids[order[k]], ids[order[k - 1]]) == 0) {
			if (jobs[order[k - 1]].fd == -1) {
				*r = *res[order[k - 1]];
				continue;
			}
			jobs[order[k]] = jobs[order[k - 1]];
			jobs[order[k - 1]].fd = -1;
			jobs[order[k - 1]].finishes = NULL;
			jobs[order[k - 1]].text = NULL;
		} else if (job_open(sp, ids[order[k]], 0, 0, &jobs[order[k]],
		    &b->ab) == -1) {
			if (errno == ENOENT) {
				r->status = 1;
				r->refusal = SPOOL_NO_JOB;
			} else
				failed(r, errno, 0);
			continue;
		}
		if (b->one(sp, &jobs[order[k]], order[k], b) == -1) {
			failed(r, errno, r->changed);
			/* Its state in memory may be wrong now: let it go. */
			job_close(&jobs[order[k]]);
		}
	}
	(void)snprintf(point, sizeof(point), "%s-synced", b->name);
	if (dirset_sync(sp, &b->ds) == -1 || (crash_point(point),
	    audit_flush(sp, &b->ab)) == -1) {
		e = errno;
		for (k = 0; k < m; k++)
			if (res[order[k]]->status == 0)
				failed(res[order[k]], e, 1);
	} else {
		(void)snprintf(point, sizeof(point), "%s-logged", b->name);
		crash_point(point);
	}
	for (i = 0; i < b->n; i++)
		if (jobs[i].fd != -1)
			job_close(&jobs[i]);
	dirset_free(&b->ds);
	abuf_free(&b->ab);
	free(jobs);
	free(order);
	free(ids);
	free(res);
	return 0;
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

/* An item selected at a time may only be acted on if it has not moved. */
static int
guarded(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;

	if (it->before != 0 && j->cur.loc != SPOOL_ABSENT &&
	    j->cur.t >= it->before) {
		refuse(&it->res, SPOOL_NO_CHANGED, j);
		return 0;
	}
	return b->inner(sp, j, i, b);
}

/* The operator's actions on a list of IDs: redrive, drop, cancel, purge. */
int
batch_items(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n, const char *name,
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
	b.one = guarded;
	b.inner = one;
	b.arg = items;
	b.op = op;
	b.extra = extra;
	b.name = name;
	return batch_run(sp, &b);
}
