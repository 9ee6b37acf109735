/*
 * Finish: end a delivery.  Only the current token may; the record names
 * where the job goes (done/, dead/, or back to new/) and is fsync'd before
 * the rename from leased/ID,TOKEN, a name only this lease's holder moves.
 * A repeat of a finish that this token already made succeeds and changes
 * nothing, so a worker may retry a finish whose answer it did not see.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * Exponential backoff with jitter: the n-th retry waits between half and
 * all of min(backoff * 2^(n-1), backoff-max).  The jitter spreads a crowd
 * of failed jobs so that they do not return all at once.
 */
static int64_t
backoff_ms(struct spool *sp, int attempt)
{
	static __thread uint64_t seed;
	int64_t d = sp->backoff_ms;
	int i;

	for (i = 1; i < attempt && d < sp->backoff_max_ms; i++)
		d *= 2;
	if (d > sp->backoff_max_ms)
		d = sp->backoff_max_ms;
	if (d < 2)
		return d;
	if (seed == 0)
		seed = (uint64_t)now_ms() * 2654435761u ^ (uint64_t)getpid();
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return d / 2 + (int64_t)(seed % (uint64_t)(d / 2 + 1));
}

/*
 * Does token hold the job's lease?  If not, fill res with the refusal: a
 * token that is not the last one issued is stale; the last one, on a job
 * that is no longer leased, is "not leased".
 */
int
lease_refusal(const struct job *j, uint64_t token, struct spool_result *res)
{
	if (j->cur.loc == SPOOL_LEASED && j->cur.tok == token)
		return 0;
	res->status = 1;
	res->refusal = j->cur.loc == SPOOL_ABSENT ? SPOOL_NO_JOB :
	    token == j->cur.tok ? SPOOL_NO_NOT_LEASED : SPOOL_NO_STALE;
	res->state = j->cur.loc;
	res->token = j->cur.tok;
	return 1;
}

/* Printable ASCII only, and short: the detail is for people. */
static void
sanitise(char *dst, const char *src)
{
	size_t i;

	for (i = 0; src != NULL && src[i] != '\0' && i < SPOOL_DETAIL_MAX; i++)
		dst[i] = src[i] >= ' ' && src[i] < 0x7f ? src[i] : '?';
	dst[i] = '\0';
}

static int
valid_finish(const struct spool_finish *f)
{
	if (f->id == NULL || !spool_valid_id(f->id) || f->token == 0 ||
	    f->token > INT64_MAX || f->class < 0 ||
	    f->class > SPOOL_CLASS_LEASE_EXPIRED || f->delay_ms < -1)
		return 0;
	/* ok and permanent have no delay: whatever delay_ms says is unused */
	switch (f->outcome) {
	case SPOOL_OK:
		return f->class == SPOOL_CLASS_NONE;
	case SPOOL_PERMANENT:
		return 1;
	case SPOOL_RETRY:
		return 1;
	case SPOOL_RELEASE:
		return f->class == SPOOL_CLASS_NONE;
	default:
		return 0;
	}
}

/* The record that ends this delivery. */
static void
decide(struct spool *sp, const struct job *j, const struct spool_finish *f,
    int64_t now, struct rec *r)
{
	int64_t eligible;

	rec_next(j, r, SPOOL_EV_PARK, now);
	(void)snprintf(r->owner, sizeof(r->owner), "%s", j->cur.owner);
	r->out = f->outcome;
	r->cls = f->class;
	sanitise(r->detail, f->detail);
	r->loc = SPOOL_DEAD;
	if (f->class == SPOOL_CLASS_UNKNOWN_SIDE_EFFECT) {
		r->reason = SPOOL_REASON_SIDE_EFFECT;
		r->se = 1;
		return;
	}
	switch (f->outcome) {
	case SPOOL_OK:
		r->ev = SPOOL_EV_OK;
		r->loc = SPOOL_DONE;
		return;
	case SPOOL_PERMANENT:
		r->reason = SPOOL_REASON_PERMANENT;
		return;
	case SPOOL_RELEASE:
		r->ev = SPOOL_EV_RELEASE;
		r->loc = SPOOL_NEW;
		r->eligible = now + (f->delay_ms > 0 ? f->delay_ms : 0);
		r->att = j->cur.att - 1;	/* this delivery did not count */
		return;
	default:
		break;
	}
	/*
	 * A delivery that ended in a crash or a timeout may have done its
	 * work: if it parks, it waits for a person to reconcile, like a
	 * delivery whose lease ran out.
	 */
	r->se = f->class == SPOOL_CLASS_CRASHED ||
	    f->class == SPOOL_CLASS_TIMEOUT;
	if (j->cur.att >= j->cur.max) {
		r->reason = SPOOL_REASON_EXHAUSTED;
		return;
	}
	eligible = now + (f->delay_ms >= 0 ? f->delay_ms :
	    backoff_ms(sp, j->cur.att));
	if (eligible >= j->cur.deadline) {
		r->reason = SPOOL_REASON_DEADLINE;
		return;
	}
	r->se = 0;
	r->ev = SPOOL_EV_RETRY;
	r->loc = SPOOL_NEW;
	r->eligible = eligible;
}

static int
finish_one(struct spool *sp, struct job *j, size_t i, struct batch *b)
{
	struct spool_finish *f = (struct spool_finish *)b->arg + i;
	struct rec r;

	if (job_finished(j, f->token, f->outcome)) {
		/*
		 * A repeat: nothing to change, but the first finish may have
		 * died before its fsync, and this exit 0 promises durability.
		 */
		f->res.state = j->cur.loc;
		f->res.token = j->cur.tok;
		f->res.reason = j->cur.reason;
		return sync_place(sp, &j->cur);
	}
	if (lease_refusal(j, f->token, &f->res))
		return 0;
	decide(sp, j, f, b->now, &r);
	j->event = r.ev;
	f->res.state = r.loc;
	f->res.token = r.tok;
	f->res.reason = r.reason;
	return job_record(j, &r);
}

static const char *
finish_item(struct batch *b, size_t i, struct spool_result **res)
{
	struct spool_finish *f = (struct spool_finish *)b->arg + i;

	memset(&f->res, 0, sizeof(f->res));
	*res = &f->res;
	return valid_finish(f) ? f->id : NULL;
}

/* The batch that finishes f[0..n). */
static void
finish_batch(struct batch *b, struct spool_finish *f, size_t n)
{
	memset(b, 0, sizeof(*b));
	b->n = n;
	b->item = finish_item;
	b->one = finish_one;
	b->arg = f;
	b->name = "finish";
	b->onewait = 1;
}

int
spool_finish(struct spool *sp, struct spool_finish *f, size_t n)
{
	DRAINING(sp);
	struct batch b;

	finish_batch(&b, f, n);
	return batch_run(sp, &b);
}

/* The claim of spool_finish_claim, run before the finish's wait. */
struct then_claim {
	const struct spool_claim_opts *opts;
	struct spool_lease *out;
	size_t max, *n;
	int ran, rv, err;
};

static void
claim_then(struct spool *sp, struct carry *cy, void *arg)
{
	struct then_claim *t = arg;

	t->ran = 1;
	t->rv = claim_with(sp, t->opts, t->out, t->max, t->n, cy);
	t->err = errno;
}

/*
 * A worker's handler ended: end its delivery and take the next job in one
 * wait (spool-layout.md, "finish").  The finish makes its records, moves
 * and audit lines and keeps its jobs locked; the claim runs; the claim's
 * commit syncs both.  Nothing is reported before that wait.
 */
int
spool_finish_claim(struct spool *sp, struct spool_finish *f, size_t n,
    const struct spool_claim_opts *opts, struct spool_lease *out,
    size_t max, size_t *got)
{
	DRAINING(sp);
	struct then_claim t = { opts, out, max, got, 0, 0, 0 };
	struct batch b;
	size_t i;
	int bad, e = EIO;

	*got = 0;
	bad = n > SPOOL_BATCH_MAX || max == 0 || max > SPOOL_BATCH_MAX ||
	    opts->lease_ms < 0 ||
	    (opts->owner != NULL && !spool_valid_owner(opts->owner));
	for (i = 0; i < n; i++) {
		memset(&f[i].res, 0, sizeof(f[i].res));
		if (bad)
			failed(&f[i].res, EINVAL, 0);
	}
	if (bad) {
		errno = EINVAL;
		return -1;
	}
	if (n == 0)
		return claim_with(sp, opts, out, max, got, NULL);
	finish_batch(&b, f, n);
	b.then = claim_then;
	b.then_arg = &t;
	if (batch_run(sp, &b) == -1 && !t.ran) {
		e = errno;
		for (i = 0; i < n; i++)
			if (f[i].res.status == 0)
				failed(&f[i].res, e, 0);
	}
	if (!t.ran) {
		/* The finish failed before its wait: no claim was made. */
		for (i = 0; i < n && e == EIO; i++)
			if (f[i].res.status == -1)
				e = f[i].res.err;
		errno = e;
		return -1;
	}
	errno = t.err;
	return t.rv;
}
