/*
 * Cancel: a person stops a job that has not finished.  A queued or leased
 * job parks at once, reason and class cancelled.  A leased job's holder
 * then finds its token no longer holds a lease: its finish and renew are
 * refused.  It may have begun the work, so it is flagged for
 * reconciliation; a queued one never ran, and is not.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>

#include "internal.h"

static int
cancel_one(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;
	struct place from;
	struct rec r;
	int rv;

	if (j->cur.loc != SPOOL_NEW && j->cur.loc != SPOOL_LEASED) {
		refuse(&it->res, SPOOL_NO_NOT_QUEUED, j);
		return 0;
	}
	if (place_of(sp, it->id, &j->cur, &from) == -1)
		return -1;
	rec_next(j, &r, EV_CANCEL, b->now);
	r.loc = SPOOL_DEAD;
	r.reason = SPOOL_REASON_CANCELLED;
	r.cls = SPOOL_CLASS_CANCELLED;
	r.se = j->cur.loc == SPOOL_LEASED;
	if (r.se)
		(void)snprintf(r.owner, sizeof(r.owner), "%s", j->cur.owner);
	(void)snprintf(r.by, sizeof(r.by), "%s", b->op->by);
	(void)snprintf(r.note, sizeof(r.note), "%s", b->op->note);
	if (job_record(j, &r) == -1 || job_commit(j) == -1) {
		place_done(&from);
		return -1;
	}
	crash_point("cancel-recorded");
	rv = move_noreplace(from.dirfd, from.name, sp->deadfd, it->id);
	place_done(&from);
	if (rv == -1 || dirset_add(&b->ds, "dead") == -1)
		return -1;
	it->res.state = SPOOL_DEAD;
	it->res.token = r.tok;
	it->res.reason = r.reason;
	it->res.changed = 1;
	if (audit_add(&b->ab, sp, it->id, &r, "cancel") == -1)
		return -1;
	it->res.changed = 0;
	return 0;
}

int
spool_cancel(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n)
{
	return batch_items(sp, op, items, n, "cancel", cancel_one, NULL);
}
