/*
 * Drop: a person ends a parked job without running it.  It moves from dead/
 * to done/, payload and record kept, and is marked dropped; it no longer
 * counts as parked.  Like every operator action it names who and why.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "internal.h"

static int
drop_one(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;
	struct rec r;

	if (j->cur.loc != SPOOL_DEAD) {
		refuse(&it->res, SPOOL_NO_NOT_PARKED, j);
		return 0;
	}
	rec_next(j, &r, EV_DROP, b->now);
	r.loc = SPOOL_DONE;
	r.reason = j->cur.reason;	/* why it was parked, kept */
	r.cls = j->cur.cls;
	(void)snprintf(r.by, sizeof(r.by), "%s", b->op->by);
	(void)snprintf(r.note, sizeof(r.note), "%s", b->op->note);
	if (job_record(j, &r) == -1 || job_commit(j) == -1)
		return -1;
	crash_point("drop-recorded");
	if (move_noreplace(sp->deadfd, it->id, sp->donefd, it->id) == -1 ||
	    dirset_add(&b->ds, "done") == -1)
		return -1;
	it->res.state = SPOOL_DONE;
	it->res.token = r.tok;
	it->res.changed = 1;
	if (audit_add(&b->ab, sp, it->id, &r, "drop") == -1)
		return -1;
	it->res.changed = 0;
	return 0;
}

int
spool_drop(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n)
{
	return batch_items(sp, op, items, n, "drop", drop_one, NULL);
}
