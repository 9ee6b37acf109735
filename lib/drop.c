/*
 * Drop: a person ends a parked job without running it.  It moves from dead/
 * to done/, payload and record kept, and is marked dropped; it no longer
 * counts as parked.  Like every operator action it names who and why.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* The record of a drop at now: to done/, why it parked kept. */
void
rec_drop(const struct job *j, struct rec *r, int64_t now, const char *by,
    const char *note)
{
	rec_next(j, r, SPOOL_EV_DROP, now);
	r->loc = SPOOL_DONE;
	r->reason = j->cur.reason;	/* why it was parked, kept */
	r->cls = j->cur.cls;
	/* and what its worker said, as spool-ls and spool-show show it */
	memcpy(r->detail, j->cur.detail, sizeof(r->detail));
	(void)snprintf(r->by, sizeof(r->by), "%s", by);
	(void)snprintf(r->note, sizeof(r->note), "%s", note != NULL ? note :
	    "");
}

static int
drop_one(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;
	struct rec r;

	(void)sp;
	if (j->cur.loc != SPOOL_DEAD) {
		refuse(&it->res, SPOOL_NO_NOT_PARKED, j);
		return 0;
	}
	if (changed_since(it, j))
		return 0;
	rec_drop(j, &r, b->now, b->op->by, b->op->note);
	j->event = SPOOL_EV_DROP;
	it->res.state = SPOOL_DONE;
	it->res.token = r.tok;
	return job_record(j, &r);
}

int
spool_drop(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n)
{
	return batch_items(sp, op, items, n, "drop", 0, drop_one, NULL);
}
