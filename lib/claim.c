/*
 * Claim: take over expired leases first, then walk new/ from the oldest
 * bucket.  Each job is locked without waiting (a busy job belongs to another
 * claimer: skip it), checked to be still where it was found, recorded with
 * the next token, and renamed to leased/ID,TOKEN, a name no other lease can
 * have.  A job whose deadline has passed, or whose last lease ran out with
 * its attempts spent, parks instead.  Expired leases are found through the
 * next-expiry hint, so a claim does not read leased/ unless one has expired.
 * A job whose key is at its limit or its rate is passed over (limits.c).
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define HELD_MAX	64	/* jobs kept locked before a group commit */
#define NO_EXPIRY	INT64_MAX
#define RESCAN_MS	1000	/* longest a scan trusts what it did not see */

struct claim {
	struct spool *sp;
	int64_t now, lease;
	const char *owner;
	struct spool_lease *out;
	size_t nout, want;
	/*
	 * held[] to claim[]: 330 KB that take() writes before anything reads
	 * it, so a claim does not clear it.
	 */
	struct job held[HELD_MAX];
	int slot[HELD_MAX];	/* each held job's lease in out[], or -1 */
	struct rec claim[HELD_MAX];	/* a held job's claim, but its token */
	size_t nheld;
	struct dirset ds;
	struct abuf ab;
	int64_t expired;	/* leases that ended before this are taken over:
				   now less the spool's clock-skew allowance */
	int64_t min_until;	/* earliest expiry of the leases we saw */
	int job_err;		/* why a job was skipped, if one was */
	int64_t our_until;	/* expiry of the leases we made */
	int leaffd;		/* the leaf claim_leaf reads */
	int64_t leafstart;	/* and its first millisecond */
	char full[LIMITS_MAX][SPOOL_KEY_MAX + 1];	/* keys found at their
							   limit: passed over */
	int nfull;
	struct dirset slots;	/* slots/KEY/ of the group's keyed claims */
	struct carry *carry;	/* a finish's wait, for the first commit */
};

/*
 * May a job of key be claimed?  1 yes (its slot is made), 0 no: its key is
 * at its limit or its rate, and stays so for the rest of this claim.  A
 * takeover, made under the next-expiry hint's lock, does not wait for the
 * key's lock: a busy key's expired lease is left to the next scan.
 */
static int
slot_for(struct claim *c, const struct job *j)
{
	const char *key = j->cur.key;
	int i, r;

	if (limit_of(c->sp, key) == NULL)
		return 1;
	for (i = 0; i < c->nfull; i++)
		if (strcmp(c->full[i], key) == 0)
			return 0;
	r = slot_take(c->sp, j, c->now, c->now + c->lease,
	    j->cur.loc == SPOOL_LEASED, &c->slots);
	if (r == 0 && c->nfull < LIMITS_MAX)
		memcpy(c->full[c->nfull++], key, strlen(key) + 1);
	if (r == -1 && errno != EWOULDBLOCK && c->job_err == 0)
		c->job_err = errno;
	return r == 1;
}

/* A lease whose move failed is not handed out. */
static void
withdraw(struct claim *c, int slot)
{
	free(c->out[slot].path);
	c->out[slot].path = NULL;
	c->out[slot].id[0] = '\0';
}

static int
add_lease(struct claim *c, int slot, const struct job *j)
{
	struct spool_lease *l = &c->out[slot];

	strcpy(l->id, j->id);
	l->token = j->cur.tok;
	l->attempt = j->cur.att;
	l->cycle = j->cur.cyc;
	l->lease_until = j->cur.until;
	strcpy(l->trace, j->cur.trace);
	if (asprintf(&l->path, "%s/leased/%s,%" PRIu64, c->sp->path, j->id,
	    j->cur.tok) == -1) {
		l->path = NULL;
		l->id[0] = '\0';
		return -1;
	}
	return 0;
}

/*
 * The claims of the group: their tokens, taken from the counter in one go,
 * and their records, written.  A job whose token or record could not be
 * had is let go where it was, its lease not handed out.
 */
static void
record_claims(struct claim *c)
{
	uint64_t hi[HELD_MAX], tok[HELD_MAX];
	size_t i, k, n = 0, at[HELD_MAX];
	struct job *j;
	int e = 0;

	for (i = 0; i < c->nheld; i++)
		if (c->slot[i] != -1) {
			hi[n] = c->held[i].hi;
			at[n++] = i;
		}
	if (n > 0 && token_take(c->sp, hi, n, tok) == -1)
		e = errno;
	for (k = 0; k < n; k++) {
		i = at[k];
		j = &c->held[i];
		c->claim[i].tok = tok[k];
		/* A failure here leaves the job where it was (record void). */
		if (e != 0 || job_record(j, &c->claim[i]) == -1 ||
		    job_write(j) == -1 || add_lease(c, c->slot[i], j) == -1) {
			if (c->job_err == 0)
				c->job_err = e != 0 ? e : errno;
			job_close(j);
			c->slot[i] = -1;
		}
	}
}

/*
 * Group commit of what take() decided: the claims' tokens and records
 * (record_claims), the moves, then the records, the counter's last token,
 * the directories moved into and the audit lines, synced side by side and
 * waited for once (spool-layout.md, "claim"); only then are the jobs let
 * go.  A job whose move failed stays where it was (its record void), and
 * one whose record did not sync is not handed out: its lease, which may
 * not survive a power cut, expires.  If the counter did not sync, no lease
 * of the group is handed out, and no one trusts its last token again
 * (tokens.c).
 */
static int
flush(struct claim *c)
{
	int fds[HELD_MAX + 1] = { 0 }, errs[HELD_MAX + 1], rv = 0, claims = 0;
	int parks = 0, tok = 0;
	size_t i, k, moved[HELD_MAX], nm = 0;
	struct job *j;

	if (c->nheld == 0)
		return 0;
	/*
	 * The slots of keyed claims are durable before any of their leases
	 * can be: a lease without its slot would let the key past its limit.
	 */
	if (c->slots.n > 0 && dirset_sync(c->sp, &c->slots) == -1) {
		if (c->job_err == 0)
			c->job_err = errno;
		for (i = 0; i < c->nheld; i++) {
			if (c->slot[i] != -1)
				withdraw(c, c->slot[i]);
			job_close(&c->held[i]);
		}
		c->nheld = 0;
		dirset_free(&c->slots);
		return -1;
	}
	if (c->slots.n > 0)
		crash_point("claim-slotted");
	dirset_free(&c->slots);
	record_claims(c);
	for (i = 0; i < c->nheld; i++) {
		if (c->held[i].fd == -1)
			continue;	/* let go by record_claims */
		claims |= c->held[i].cur.ev == SPOOL_EV_CLAIM;
		parks |= c->held[i].cur.ev == SPOOL_EV_PARK;
	}
	if (claims)
		crash_point("claim-recorded");
	if (parks)
		crash_point("park-recorded");
	for (i = 0; i < c->nheld; i++) {
		j = &c->held[i];
		if (j->fd == -1)
			continue;
		if (job_move(c->sp, j, &c->ds) == -1) {
			if (c->job_err == 0)
				c->job_err = errno;
			if (c->slot[i] != -1)
				withdraw(c, c->slot[i]);
			continue;
		}
		crash_point(j->cur.ev == SPOOL_EV_CLAIM ? "claim-moved" :
		    "park-moved");
		if (audit_add(&c->ab, c->sp, j->id, &j->cur, j->event) == -1)
			rv = -1;
		if (j->cur.ev == SPOOL_EV_CLAIM && j->cur.until < c->our_until)
			c->our_until = j->cur.until;
		moved[nm] = i;
		fds[nm++] = j->fd;
	}
	if (nm > 0 && c->sp->tokens_unsynced) {
		fds[nm] = c->sp->tokfd;
		tok = 1;
	}
	if (rv == 0 && commit_with(c->sp, fds, nm + tok, errs, &c->ds, &c->ab,
	    c->carry) == -1)
		rv = -1;
	else if (rv == 0 && tok && errs[nm] != 0) {
		errno = errs[nm];
		(void)tokens_distrust(c->sp);
		errno = errs[nm];
		rv = -1;
	} else if (rv == 0 && tok)
		c->sp->tokens_unsynced = 0;
	if (c->carry != NULL && c->carry->taken)
		c->carry = NULL;	/* one commit takes it */
	if (rv == -1) {
		/*
		 * Not durable: no lease of this group is handed out, even if
		 * an earlier group's are (they expire, or are taken over).
		 */
		if (c->job_err == 0)
			c->job_err = errno;
		for (k = 0; k < nm; k++)
			if (c->slot[moved[k]] != -1)
				withdraw(c, c->slot[moved[k]]);
	} else {
		crash_point("claim-synced");
		for (k = 0; k < nm; k++) {
			if (errs[k] == 0)
				continue;
			if (c->job_err == 0)
				c->job_err = errs[k];
			if (c->slot[moved[k]] != -1)
				withdraw(c, c->slot[moved[k]]);
		}
	}
	for (i = 0; i < c->nheld; i++)
		job_close(&c->held[i]);
	c->nheld = 0;
	return rv;
}

/*
 * Take the job found under the name that id, loc and val make, if it is
 * still there and due: decide its record and write it (a claim's, once
 * flush() has its token); flush() syncs it and makes the move.
 * Returns 0 (taken or skipped), 1 (busy: another process holds it) or -1.
 * A job that cannot be taken (unreadable, a failed write) is skipped and
 * its error kept in c->job_err: one bad job must not stop the queue.
 */
static int
take(struct claim *c, const char *id, int loc, uint64_t val)
{
	struct spool *sp = c->sp;
	struct job *j;
	struct rec r;

	if (c->nheld == HELD_MAX && flush(c) == -1)
		return -1;
	j = &c->held[c->nheld];
	if (loc == SPOOL_NEW)	/* kept for the look and the move */
		leaf_seed(sp, c->leafstart, c->leaffd);
	if (job_open(sp, id, 0, 1, j, &c->ab) == -1) {
		if (errno == EWOULDBLOCK)
			return 1;
		/* Gone, or damaged (spool-fsck reports it), or unreadable. */
		if (errno != ENOENT && errno != EUCLEAN && c->job_err == 0)
			c->job_err = errno;
		return 0;
	}
	if (j->cur.loc != loc || (loc == SPOOL_NEW && j->cur.eligible !=
	    (int64_t)val) || (loc == SPOOL_LEASED && j->cur.tok != val))
		goto skip;	/* moved since we read the directory */
	/* Nobody may read it (a hand's chmod): damaged, not work. */
	if ((j->fmode & 0444) == 0)
		goto skip;
	if (loc == SPOOL_LEASED && j->cur.until > c->expired) {
		if (j->cur.until < c->min_until)
			c->min_until = j->cur.until;
		goto skip;
	}
	rec_next(j, &r, SPOOL_EV_PARK, c->now);
	if (j->cur.deadline <= c->now)
		r.reason = SPOOL_REASON_DEADLINE;
	else if (j->cur.att >= j->cur.max)
		r.reason = SPOOL_REASON_EXHAUSTED;
	if (r.reason != 0 && loc == SPOOL_LEASED) {
		/* The holder's lease ran out: it may have done the work. */
		r.cls = SPOOL_CLASS_LEASE_EXPIRED;
		r.se = 1;
		(void)snprintf(r.owner, sizeof(r.owner), "%s", j->cur.owner);
	}
	if (r.reason != 0) {
		r.loc = SPOOL_DEAD;
		j->event = SPOOL_EV_PARK;
	} else {
		if (!slot_for(c, j))
			goto skip;
		rec_next(j, &r, SPOOL_EV_CLAIM, c->now);
		r.loc = SPOOL_LEASED;
		r.att = j->cur.att + 1;
		r.until = c->now + c->lease;
		/*
		 * Each claim names the token it supersedes, so the chain of a
		 * job's leases reads whole from the audit log whatever the
		 * writers' clocks say; a takeover of a lease that ran out is
		 * marked by its class.
		 */
		r.prev = j->cur.tok;
		if (loc == SPOOL_LEASED)
			r.cls = SPOOL_CLASS_LEASE_EXPIRED;
		(void)snprintf(r.owner, sizeof(r.owner), "%s", c->owner);
		j->event = loc == SPOOL_LEASED ? SPOOL_EV_RECLAIM :
		    SPOOL_EV_CLAIM;
		/* Its token and record come with the group's (flush). */
		c->claim[c->nheld] = r;
		memset(&c->out[c->nout], 0, sizeof(c->out[c->nout]));
		c->slot[c->nheld++] = (int)c->nout++;
		return 0;
	}
	/* A failure here leaves the job where it was (the record void). */
	if (job_record(j, &r) == -1 || job_write(j) == -1) {
		if (c->job_err == 0)
			c->job_err = errno;
		goto skip;
	}
	c->slot[c->nheld++] = -1;
	return 0;
skip:
	job_close(j);
	return 0;
}

/* Claim the due jobs of one leaf bucket; 1 when enough are claimed. */
static int
claim_leaf(void *arg, int leaffd, int64_t start)
{
	struct claim *c = arg;
	char id[SPOOL_ID_MAX + 1];
	struct dirent *de = NULL;
	int64_t eligible;
	struct dlist *d;
	int rv = 0;

	c->leaffd = leaffd;	/* each name carries its own time */
	c->leafstart = start;
	if ((d = dir_list(leaffd)) == NULL)
		return -1;
	while (c->nout < c->want && (errno = 0, de = dir_next(d)) != NULL) {
		if (parse_new_name(de->d_name, id, &eligible) == -1 ||
		    eligible > c->now)
			continue;
		if ((rv = take(c, id, SPOOL_NEW, (uint64_t)eligible)) == -1)
			break;
		rv = 0;
	}
	if (rv == 0 && errno != 0 && de == NULL)
		rv = -1;
	dir_close(d);
	return rv == 0 && c->nout == c->want ? 1 : rv;
}

/*
 * The next-expiry hint: a time before which no lease expires.  Claims that
 * make a lease lower it if they must; a claim that finds it past reads all
 * of leased/ under the hint's lock, takes over what expired and writes the
 * earliest expiry it saw.  A claimer lowers the hint only after its renames,
 * under the same lock, so a scan cannot overwrite a lease it missed.  But a
 * claimer killed between its renames and that update leaves a lease the
 * hint does not know, so a scan never writes a time more than RESCAN_MS
 * ahead: such a lease is taken over at most that late.
 */
static int64_t
hint_read(int fd)
{
	char buf[32];
	ssize_t n;
	char *end;
	long long v;

	if ((n = sys_pread(fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	v = strtoll(buf, &end, 10);
	return end == buf ? 0 : (int64_t)v;
}

/*
 * Written under the hint's lock, synced outside it.  A scan's time needs
 * no sync: what a power cut may bring back instead is a time that had
 * passed, and the next claim scans again.  A lowered time is synced before
 * the claim returns: a power cut must not bring back a later time than a
 * lease that was handed out.
 */
static int
hint_write(int fd, int64_t v)
{
	char buf[32];
	int n;

	n = snprintf(buf, sizeof(buf), "%019" PRId64 "\n", v);
	/* (write_at goes on after EINTR and a short write) */
	return write_at(fd, buf, (size_t)n, 0);
}

static int
open_hint(struct spool *sp)
{
	int fd = sys_openat(sp->dirfd, "next-expiry", O_RDWR | O_CREAT |
	    O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);

	if (fd != -1 && file_mode(sp, fd, 0660) == -1) {
		(void)close_fd(fd);
		return -1;
	}
	return fd;
}

static int
scan_leased(struct claim *c, int hintfd)
{
	char id[SPOOL_ID_MAX + 1];
	struct dirent *de;
	uint64_t tok;
	struct dlist *d;
	int rv = 0, complete;

	if (lock_fd(c->sp, hintfd, 0) == -1)
		return -1;
	if (hint_read(hintfd) > c->expired)
		return 0;	/* another claimer just scanned */
	if ((d = dir_list(c->sp->leasedfd)) == NULL)
		return -1;
	c->min_until = c->expired + RESCAN_MS;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (parse_leased_name(de->d_name, id, &tok) == -1)
			continue;
		if (c->nout == c->want) {
			c->min_until = c->expired;	/* more may be due */
			break;
		}
		crash_point("lease-listed");
		if ((rv = take(c, id, SPOOL_LEASED, tok)) == -1)
			break;
		/* A busy lease is being finished or renewed: seen soon. */
		rv = 0;
	}
	complete = rv == 0 && (de != NULL || errno == 0);
	dir_close(d);
	if (!complete)
		return -1;
	return hint_write(hintfd, c->min_until);
}

/* Close the gaps withdrawn leases left in out[]; how many remain. */
static size_t
compact(struct spool_lease *out, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (out[i].id[0] != '\0')
			out[k++] = out[i];
	return k;
}

int
spool_claim(struct spool *sp, const struct spool_claim_opts *opts,
    struct spool_lease *out, size_t max, size_t *n)
{
	return claim_with(sp, opts, out, max, n, NULL);
}

/* spool_claim, its first commit taking up cy's wait, if cy is not NULL. */
int
claim_with(struct spool *sp, const struct spool_claim_opts *opts,
    struct spool_lease *out, size_t max, size_t *n, struct carry *cy)
{
	DRAINING(sp);
	struct claim *c;
	int hintfd, rv = 0, e;
	int64_t hint;

	*n = 0;
	if (max == 0 || max > SPOOL_BATCH_MAX || opts->lease_ms < 0 ||
	    (opts->owner != NULL && !spool_valid_owner(opts->owner))) {
		errno = EINVAL;
		return -1;
	}
	switch (spool_paused(sp)) {
	case 1:
		return 0;	/* spool_paused() tells the caller why */
	case -1:
		return -1;
	}
	config_limits(sp);
	if ((c = malloc(sizeof(*c))) == NULL)
		return -1;
	memset(c, 0, offsetof(struct claim, held));	/* but held[] to claim[] */
	memset(&c->nheld, 0, sizeof(*c) - offsetof(struct claim, nheld));
	c->sp = sp;
	c->now = now_ms();
	c->expired = c->now - sp->skew_ms;
	c->lease = opts->lease_ms ? opts->lease_ms : sp->lease_ms;
	c->owner = opts->owner != NULL ? opts->owner : sp->writer;
	c->out = out;
	c->want = max;
	c->our_until = NO_EXPIRY;
	c->carry = cy;
	if ((hintfd = open_hint(sp)) == -1) {
		free(c);
		return -1;
	}
	buckets_hold(sp);
	hint = hint_read(hintfd);
	if (hint <= c->expired) {
		if (scan_leased(c, hintfd) == -1)
			rv = -1;
		/* The hint's lock is not needed past here. */
		(void)sys_flock(sp, hintfd, LOCK_UN);
	}
	if (rv == 0 && c->nout < c->want &&
	    bucket_walk(sp, c->now, c->now, claim_leaf, c) == -1)
		rv = -1;
	e = errno;
	if (flush(c) == -1) {
		rv = -1;	/* its group's leases withdrawn: they expire */
		e = errno;
	}
	if ((*n = compact(out, c->nout)) > 0)
		rv = 0;		/* what is left is durable: hand it out */
	else if (rv == 0 && c->job_err != 0) {
		rv = -1;	/* nothing claimed, and some job failed */
		e = c->job_err;
	}
	/*
	 * The leases are durable now.  If the hint cannot be lowered, they
	 * are still taken over when due, at most RESCAN_MS late.
	 */
	if (rv == 0 && c->our_until != NO_EXPIRY &&
	    lock_fd(sp, hintfd, 0) == 0 && c->our_until < hint_read(hintfd) &&
	    hint_write(hintfd, c->our_until) == 0) {
		(void)sys_flock(sp, hintfd, LOCK_UN);
		(void)sync_fd(hintfd);
	}
	(void)close_fd(hintfd);	/* and its lock */
	if (rv == 0)
		crash_point("claim-logged");
	buckets_drop(sp);
	dirset_free(&c->ds);
	dirset_free(&c->slots);
	abuf_free(&c->ab);
	free(c);
	errno = e;
	if (rv == -1)
		return -1;
	return *n > 0 ? 1 : 0;
}

void
spool_free_leases(struct spool_lease *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(l[i].path);
		l[i].path = NULL;
	}
}

/* The earliest eligible time among the jobs of one leaf; 1 if any. */
static int
due_leaf(void *arg, int leaffd, int64_t start)
{
	char id[SPOOL_ID_MAX + 1];
	int64_t *first = arg, eligible;
	struct dirent *de;
	struct dlist *d;
	int any = 0;

	(void)start;	/* each name carries its own time */

	if ((d = dir_list(leaffd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (parse_new_name(de->d_name, id, &eligible) == -1)
			continue;
		any = 1;
		if (eligible < *first)
			*first = eligible;
	}
	any = errno != 0 ? -1 : any;
	dir_close(d);
	return any;
}

int
spool_next_due(struct spool *sp, int64_t *when)
{
	char id[SPOOL_ID_MAX + 1];
	int64_t first = NO_EXPIRY, until = NO_EXPIRY, hint;
	struct dirent *de;
	struct job j;
	uint64_t tok;
	struct dlist *d;
	int fd;

	if (bucket_walk(sp, NO_EXPIRY, 0, due_leaf, &first) == -1)
		return -1;
	if ((d = dir_list(sp->leasedfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (parse_leased_name(de->d_name, id, &tok) == -1 ||
		    job_peek(sp, id, &j) == -1)
			continue;	/* gone meanwhile, or damaged */
		if (j.cur.loc == SPOOL_LEASED && j.cur.tok == tok &&
		    j.cur.until < until)
			until = j.cur.until;
		job_close(&j);
	}
	dir_close(d);	/* keeps the listing's errno, set after job_close */
	if (errno != 0)
		return -1;
	/* A claim looks in leased/ only once the hint has passed. */
	if (until != NO_EXPIRY && (fd = open_hint(sp)) != -1) {
		if ((hint = hint_read(fd)) > until)
			until = hint;
		(void)close_fd(fd);
	}
	if (until != NO_EXPIRY)
		until += sp->skew_ms;	/* taken over that much later */
	*when = first < until ? first : until;
	return 0;
}
