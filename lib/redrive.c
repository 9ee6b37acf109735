/*
 * Redrive: a person puts parked jobs back in new/, unchanged.  Only a job
 * in dead/ now may go, so of two operators redriving one job, the second
 * finds it gone from dead/ and is refused.  The token is kept (never
 * lowered), attempts start again, the deadline is fresh, the cycle counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int
redrive_one(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;
	const struct spool_operator *op = b->op;
	struct rec r;

	(void)sp;
	if (j->cur.loc != SPOOL_DEAD || (j->cur.se && !op->reconciled)) {
		refuse(&it->res, j->cur.loc != SPOOL_DEAD ?
		    SPOOL_NO_NOT_PARKED : SPOOL_NO_UNRECONCILED, j);
		return 0;
	}
	if (changed_since(it, j))
		return 0;
	rec_next(j, &r, SPOOL_EV_REDRIVE, b->now);
	r.loc = SPOOL_NEW;
	r.eligible = b->now;
	r.att = 0;
	r.cyc = j->cur.cyc + 1;
	r.deadline = b->now + j->cur.ttl;
	r.se = 0;
	(void)snprintf(r.by, sizeof(r.by), "%s", op->by);
	(void)snprintf(r.note, sizeof(r.note), "%s", op->note);
	j->event = SPOOL_EV_REDRIVE;
	it->res.state = SPOOL_NEW;
	it->res.token = r.tok;
	return job_record(j, &r);
}

int
spool_redrive(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n)
{
	return batch_items(sp, op, items, n, "redrive", redrive_one, NULL);
}
