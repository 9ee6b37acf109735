/*
 * Cancel: a person stops a job that has not finished.  A queued or leased
 * job parks at once, reason and class cancelled.  A leased job's holder
 * then finds its token no longer holds a lease: its finish and renew are
 * refused.  It may have begun the work, so it is flagged for
 * reconciliation; a queued one never ran, and is not.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "internal.h"

static int
cancel_one(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;
	struct rec r;

	(void)sp;
	if (j->cur.loc != SPOOL_NEW && j->cur.loc != SPOOL_LEASED) {
		refuse(&it->res, SPOOL_NO_NOT_QUEUED, j);
		return 0;
	}
	if (changed_since(it, j))
		return 0;
	rec_next(j, &r, SPOOL_EV_CANCEL, b->now);
	r.loc = SPOOL_DEAD;
	r.reason = SPOOL_REASON_CANCELLED;
	r.cls = SPOOL_CLASS_CANCELLED;
	r.se = j->cur.loc == SPOOL_LEASED;
	if (r.se)
		(void)snprintf(r.owner, sizeof(r.owner), "%s", j->cur.owner);
	(void)snprintf(r.by, sizeof(r.by), "%s", b->op->by);
	(void)snprintf(r.note, sizeof(r.note), "%s", b->op->note);
	j->event = SPOOL_EV_CANCEL;
	it->res.state = SPOOL_DEAD;
	it->res.token = r.tok;
	it->res.reason = r.reason;
	return job_record(j, &r);
}

int
spool_cancel(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n)
{
	return batch_items(sp, op, items, n, "cancel", 1, cancel_one, NULL);
}
