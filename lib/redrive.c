/*
 * Redrive: a person puts parked jobs back in new/, unchanged.  Only a job
 * in dead/ now may go, so of two operators redriving one job, the second
 * finds it gone from dead/ and is refused.  The token is kept (never
 * lowered), attempts start again, the deadline is fresh, the cycle counts.
 * The payload must be the bytes recorded (spool-redrive --edited says to
 * send them as they are now, and records their size and checksum).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * The bytes dead/ID holds now: their size and checksum.  A redrive hands
 * back exactly what was enqueued, so they are read whole.
 */
static int
parked_payload(struct spool *sp, const struct job *j, uint64_t *size,
    uint64_t *sum)
{
	if (payload_sum_at(sp->deadfd, j->id, size, sum) == 0)
		return 0;
	if (errno == EACCES)
		errno = EUCLEAN;	/* its mode changed by hand: damaged */
	return -1;
}

/*
 * The record of a redrive at now: back in new/, eligible at once,
 * attempts from 0, a fresh deadline, one more cycle, the token kept.
 */
void
rec_redrive(const struct job *j, struct rec *r, int64_t now, const char *by,
    const char *note)
{
	rec_next(j, r, SPOOL_EV_REDRIVE, now);
	r->loc = SPOOL_NEW;
	r->eligible = now;
	r->att = 0;
	r->cyc = j->cur.cyc + 1;
	r->deadline = now + j->cur.ttl;
	r->se = 0;
	(void)snprintf(r->by, sizeof(r->by), "%s", by);
	(void)snprintf(r->note, sizeof(r->note), "%s", note != NULL ? note :
	    "");
}

static int
redrive_one(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_item *it = (struct spool_item *)b->arg + i;
	const struct spool_operator *op = b->op;
	uint64_t size, sum;
	struct rec r;

	if (j->cur.loc != SPOOL_DEAD || (j->cur.se && !op->reconciled)) {
		refuse(&it->res, j->cur.loc != SPOOL_DEAD ?
		    SPOOL_NO_NOT_PARKED : SPOOL_NO_UNRECONCILED, j);
		return 0;
	}
	if (changed_since(it, j))
		return 0;
	if (parked_payload(sp, j, &size, &sum) == -1)
		return -1;
	if (j->cur.sum != 0 && (size != j->cur.size || sum != j->cur.sum) &&
	    !op->edited) {
		refuse(&it->res, SPOOL_NO_EDITED, j);
		return 0;
	}
	rec_redrive(j, &r, b->now, op->by, op->note);
	r.size = size;
	r.sum = sum;
	j->event = SPOOL_EV_REDRIVE;
	it->res.state = SPOOL_NEW;
	it->res.token = r.tok;
	return job_record(j, &r);
}

int
spool_redrive(struct spool *sp, const struct spool_operator *op,
    struct spool_item *items, size_t n)
{
	return batch_items(sp, op, items, n, "redrive", 0, redrive_one, NULL);
}
