/*
 * spool-fsck's audit index: every line of every log, reduced to a key,
 * sorted, so that each job's records are matched with their lines.  And
 * the checks that read it: a line missing for an effective record, a line
 * of a transition that never happened (a power cut kept the line, lost
 * the move), the removal of a previous cycle's file.  A repair appends
 * the missing lines, and void lines for the rest.
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fsck.h"

uint64_t
hash_id(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

void
problem(struct fsck *f, const char *what, int fixed, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	f->problems++;
	if (!fixed)
		f->unfixed++;
	f->say(f->arg, what, text, fixed ? SPOOL_SAID_FIXED : SPOOL_SAID_FAULT);
}

/* One audit line into the index; a line not of this format is not ours. */
int
index_line(void *arg, const char *line, size_t len)
{
	struct fsck *f = arg;
	struct spool_audit a;
	struct akey *k;

	if (spool_audit_parse(line, len, &a) == -1)
		return 0;
	if (a.id[0] == '\0') {
		/* The last pause or resume, for check_pause. */
		if (!f->indexed && (a.event == SPOOL_EV_PAUSE ||
		    a.event == SPOOL_EV_RESUME) &&
		    (f->pause_ev == 0 || a.time >= f->pause_t)) {
			f->pause_ev = a.event;
			f->pause_t = a.time;
		}
		return 0;
	}
	if (f->nkeys == f->capkeys) {
		f->capkeys = f->capkeys ? f->capkeys * 2 : 4096;
		if ((k = realloc(f->keys, f->capkeys * sizeof(*k))) == NULL)
			return -1;
		f->keys = k;
	}
	k = &f->keys[f->nkeys];
	k->idh = hash_id(a.id, strlen(a.id));
	k->t = a.time;
	if (!f->indexed && (f->nkeys == 0 || k->t < f->oldest))
		f->oldest = k->t;
	k->ev = a.event;
	k->tok = a.token;
	if (a.token > f->maxtok)
		f->maxtok = a.token;
	if (a.token > f->maxgiven)
		f->maxgiven = a.token;
	f->nkeys++;
	return 0;
}

int
cmp_key(const void *a, const void *b)
{
	const struct akey *x = a, *y = b;

	if (x->idh != y->idh)
		return x->idh < y->idh ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->ev != y->ev)
		return x->ev - y->ev;
	return x->tok < y->tok ? -1 : x->tok > y->tok;
}

/*
 * The audit event of a sidecar record: its own, but a claim that took over
 * an expired lease is logged as a reclaim.
 */
static int
audit_event(const struct rec *r)
{
	if (r->ev == SPOOL_EV_CLAIM && r->cls == SPOOL_CLASS_LEASE_EXPIRED)
		return SPOOL_EV_RECLAIM;
	return r->ev;
}

/* The first of the ID's audit lines in f->keys (sorted by ID), or past. */
static size_t
audit_first(const struct fsck *f, uint64_t idh)
{
	size_t lo = 0, hi = f->nkeys, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (f->keys[mid].idh < idh)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The highest token the audit log names for the ID; 0 if none. */
uint64_t
audit_max_tok(struct fsck *f, uint64_t idh)
{
	size_t lo;
	uint64_t max = 0;

	for (lo = audit_first(f, idh); lo < f->nkeys && f->keys[lo].idh == idh;
	    lo++)
		if (f->keys[lo].tok > max)
			max = f->keys[lo].tok;
	return max;
}

/*
 * Is the line there now?  The index was read before this job was locked,
 * and a command beside us may have moved the job and logged it since:
 * only under the job's lock is its last line sure to be on disk.  Only
 * what the logs gained since the last read is read, so that many lines
 * missing (a power cut that kept a batch's records and lost its lines)
 * cost one read of the log, not one each.
 */
static int
logged_since(struct fsck *f, const struct akey *want)
{
	size_t n = f->nkeys;

	if (audit_scan(f->sp, &f->mark, index_line, f) == -1)
		return -1;
	if (f->nkeys == n)
		return 0;
	qsort(f->keys, f->nkeys, sizeof(*f->keys), cmp_key);
	return bsearch(want, f->keys, f->nkeys, sizeof(*want), cmp_key) !=
	    NULL;
}

/*
 * A new cycle removes the previous cycle's file from done/ and then logs
 * supersede: a crash between the two leaves the file gone and no line.
 * The line appended takes the enqueue's time.
 */
int
check_supersede(struct fsck *f, struct job *j, uint64_t idh)
{
	struct stat st;
	struct rec gone;
	size_t lo;
	int r;

	if (j->voidtail || j->cur.ev != SPOOL_EV_ENQUEUE ||
	    j->prev.loc != SPOOL_DONE)
		return 0;
	if ((r = place_stat(f->sp, j->id, &j->prev, &st)) != 0)
		return r == -1 && errno != EUCLEAN ? -1 : 0;
	for (lo = audit_first(f, idh); lo < f->nkeys && f->keys[lo].idh == idh;
	    lo++)
		if (f->keys[lo].ev == SPOOL_EV_SUPERSEDE &&
		    f->keys[lo].tok == j->prev.tok &&
		    f->keys[lo].t >= j->cur.t)
			return 0;
	if (f->nkeys > 0 && j->cur.t < f->oldest)
		return 0;	/* its line may have been in a rotated log */
	gone = j->prev;
	gone.t = j->cur.t;
	if (f->repair && audit_add(&f->ab, f->sp, j->id, &gone,
	    SPOOL_EV_SUPERSEDE) == -1)
		return -1;
	problem(f, j->id, f->repair, "no audit line for the removal of its "
	    "previous cycle's file%s", f->repair ? " (appended)" : "");
	return 0;
}

/*
 * Replay the sidecar's records: each effective one must have its audit
 * line (those a crash kept from being written are appended, with repair).
 */
int
check_audit(struct fsck *f, struct job *j, uint64_t idh, int lastvoid)
{
	const char *p = j->text, *end = j->text + j->textlen, *nl, *next;
	struct akey want;
	struct rec r, v;
	int effective, since;

	for (; (nl = memchr(p, '\n', (size_t)(end - p))) != NULL; p = next) {
		next = nl + 1;
		if (rec_parse(p, (size_t)(nl - p), &r) == -1 || r.ev ==
		    SPOOL_EV_VOID)
			continue;
		nl = memchr(next, '\n', (size_t)(end - next));
		effective = nl != NULL ? !(rec_parse(next, (size_t)(nl - next),
		    &v) == 0 && v.ev == SPOOL_EV_VOID) : !lastvoid;
		if (!effective)
			continue;
		/*
		 * A record older than every line still in audit/ had its line
		 * in a rotated log since removed: that is no damage.
		 */
		if (f->nkeys > 0 && r.t < f->oldest)
			continue;
		want.idh = idh;
		want.t = r.t;
		want.ev = audit_event(&r);
		want.tok = r.tok;
		if (f->nkeys > 0 && bsearch(&want, f->keys, f->nkeys,
		    sizeof(want), cmp_key) != NULL)
			continue;
		if ((since = logged_since(f, &want)) == -1)
			return -1;
		if (since)
			continue;
		if (f->repair && audit_add(&f->ab, f->sp, j->id, &r,
		    want.ev) == 0) {
			problem(f, j->id, 1, "no audit line for its %s at %"
			    PRId64 " ms (appended)", spool_event_name(want.ev),
			    r.t);
			continue;
		}
		problem(f, j->id, 0, "no audit line for its %s at %" PRId64
		    " ms", spool_event_name(want.ev), r.t);
	}
	return 0;
}

/*
 * The events whose record a command does not sync before its move, but in
 * the one wait with its move and its line (spool-layout.md, "Transitions"):
 * their line may outlive a record that never reached the disk.
 */
static int
onewait_event(int ev)
{
	switch (ev) {
	case SPOOL_EV_CLAIM:
	case SPOOL_EV_RECLAIM:
	case SPOOL_EV_PARK:
	case SPOOL_EV_OK:
	case SPOOL_EV_RETRY:
	case SPOOL_EV_RELEASE:
	case SPOOL_EV_CANCEL:
	case SPOOL_EV_RENEW:
		return 1;
	default:
		return 0;
	}
}

/*
 * A record of the job's, as its audit line would show it (first, so that
 * cmp_key compares two of them, or one with a line's key).
 */
struct rkey {
	struct akey key;
	int effective;
};

static int
add_suspect(struct fsck *f, const char *id, const struct akey *k)
{
	struct suspect *s;

	if (f->nsus == f->capsus) {
		f->capsus = f->capsus ? f->capsus * 2 : 16;
		if ((s = realloc(f->sus, f->capsus * sizeof(*s))) == NULL)
			return -1;
		f->sus = s;
	}
	s = &f->sus[f->nsus++];
	memset(s, 0, sizeof(*s));
	s->key = *k;
	(void)snprintf(s->id, sizeof(s->id), "%s", id);
	return 0;
}

/*
 * A line of a transition that did not happen.  A command writes its lines
 * before the wait that makes its records, moves and lines durable
 * (spool-layout.md, "Transitions"), so a power cut may keep a line and
 * lose the transition: the line then names a void record, or (a record
 * synced in that same wait) none.  A line with no record at all is taken
 * for one only if it is of such an event and newer than the sidecar (or
 * its rebuild) by more than the clock skew: older lines may be of an
 * earlier life of the ID, before a purge removed its sidecar.  Such a
 * line becomes a suspect, settled after the walk (settle_suspects): repair
 * appends a void line for it (its time, ID and token), once: a reader of
 * the log then knows it for one.
 */
int
check_unhappened(struct fsck *f, struct job *j, uint64_t idh, int lastvoid)
{
	const char *p = j->text, *end = j->text + j->textlen, *nl, *next;
	struct rkey *recs = NULL, *x;
	struct akey *k;
	size_t lo, i, n = 0, cap = 0;
	int64_t first = INT64_MAX, rebuilt = INT64_MIN;
	struct rec r, v;
	int rv = 0;

	for (; (nl = memchr(p, '\n', (size_t)(end - p))) != NULL; p = next) {
		next = nl + 1;
		if (rec_parse(p, (size_t)(nl - p), &r) == -1)
			continue;
		if (r.t < first)
			first = r.t;
		if (r.ev == SPOOL_EV_REBUILD)
			rebuilt = r.t;
		if (r.ev == SPOOL_EV_VOID)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			if ((x = realloc(recs, cap * sizeof(*recs))) == NULL) {
				free(recs);
				return -1;
			}
			recs = x;
		}
		nl = memchr(next, '\n', (size_t)(end - next));
		recs[n].effective = !(nl != NULL ? rec_parse(next,
		    (size_t)(nl - next), &v) == 0 && v.ev == SPOOL_EV_VOID :
		    lastvoid);
		recs[n].key.idh = idh;
		recs[n].key.t = r.t;
		recs[n].key.ev = audit_event(&r);
		recs[n++].key.tok = r.tok;
	}
	/* Sorted as the index is, for a search a line (a long life's
	 * renewals make thousands of each). */
	if (n > 1)
		qsort(recs, n, sizeof(*recs), cmp_key);
	for (lo = audit_first(f, idh); lo < f->nkeys && f->keys[lo].idh == idh;
	    lo++) {
		k = &f->keys[lo];
		if (k->ev == SPOOL_EV_VOID || k->t <= rebuilt)
			continue;
		x = n > 0 ? bsearch(k, recs, n, sizeof(*recs), cmp_key) : NULL;
		if (x != NULL ? x->effective : !onewait_event(k->ev) ||
		    k->t <= first + f->sp->skew_ms)
			continue;
		/* Voided already: a void line with its time and token. */
		for (i = audit_first(f, idh); i < f->nkeys &&
		    f->keys[i].idh == idh && !(f->keys[i].ev == SPOOL_EV_VOID &&
		    f->keys[i].t == k->t && f->keys[i].tok == k->tok); i++)
			continue;
		if (i < f->nkeys && f->keys[i].idh == idh)
			continue;
		if (add_suspect(f, j->id, k) == -1) {
			rv = -1;
			break;
		}
	}
	free(recs);
	return rv;
}

static int
cmp_suspect(const void *a, const void *b)
{
	const struct suspect *const *x = a, *const *y = b;

	return cmp_key(&(*x)->key, &(*y)->key);
}

/* For the scan: each line that is a suspect's, by key and then by ID. */
static int
suspect_line(void *arg, const char *line, size_t len)
{
	struct fsck *f = arg;
	struct spool_audit a;
	struct suspect want, *w = &want, **s, **end = f->bykey + f->nsus;

	if (spool_audit_parse(line, len, &a) == -1 || a.id[0] == '\0')
		return 0;
	want.key.idh = hash_id(a.id, strlen(a.id));
	want.key.t = a.time;
	want.key.ev = (int)a.event;
	want.key.tok = a.token;
	if ((s = bsearch(&w, f->bykey, f->nsus, sizeof(*s), cmp_suspect)) ==
	    NULL)
		return 0;
	while (s > f->bykey && cmp_suspect(s - 1, &w) == 0)
		s--;
	for (; s < end && cmp_suspect(s, &w) == 0; s++)
		if (!(*s)->found && strcmp((*s)->id, a.id) == 0) {
			(*s)->found = 1;
			(*s)->line = a;
			break;
		}
	return 0;
}

/*
 * The suspects' lines, found by one read of the whole log (the index holds
 * hashes: a line must name its very job), reported in the walk's order
 * and voided by repair.
 */
int
settle_suspects(struct fsck *f)
{
	struct suspect *s;
	size_t i;

	if (f->nsus == 0)
		return 0;
	if ((f->bykey = calloc(f->nsus, sizeof(*f->bykey))) == NULL)
		return -1;
	for (i = 0; i < f->nsus; i++)
		f->bykey[i] = &f->sus[i];
	qsort(f->bykey, f->nsus, sizeof(*f->bykey), cmp_suspect);
	if (spool_audit_scan(f->sp, suspect_line, f) == -1)
		return -1;
	for (i = 0; i < f->nsus; i++) {
		s = &f->sus[i];
		if (!s->found)
			continue;
		if (f->repair && audit_void(&f->ab, f->sp, &s->line) == -1)
			return -1;
		problem(f, s->id, f->repair, "its %s at %" PRId64 " ms is in the "
		    "audit log but did not happen (a power cut kept the line, "
		    "not the transition)%s", spool_event_name(s->key.ev),
		    s->key.t, f->repair ? " (void line appended)" : "");
	}
	return 0;
}

/*
 * Did record r take effect?  Its audit line is written only after its
 * move is durable, so if the line is there, the move was made, whatever
 * became of the file since.
 */
int
record_logged(const struct fsck *f, uint64_t idh, const struct rec *r)
{
	struct akey want;

	if (f->nkeys == 0 || r->loc == SPOOL_ABSENT)
		return 0;
	want.idh = idh;
	want.t = r->t;
	want.ev = audit_event(r);
	want.tok = r->tok;
	return bsearch(&want, f->keys, f->nkeys, sizeof(want), cmp_key) !=
	    NULL;
}

/* Has the audit log a line of this ID? */
int
audit_knows(const struct fsck *f, uint64_t idh)
{
	size_t lo = audit_first(f, idh);

	return lo < f->nkeys && f->keys[lo].idh == idh;
}

/* A claim's token, for the search of tokens handed out twice. */
struct given {
	uint64_t tok, idh;
	int64_t t;
};

static int
cmp_given(const void *a, const void *b)
{
	const struct given *x = a, *y = b;

	if (x->tok != y->tok)
		return x->tok < y->tok ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->idh < y->idh ? -1 : x->idh > y->idh;
}

/* The claims of tokens given more than once, found by one read of the log. */
struct twice {
	const struct given *g;	/* sorted, no two alike */
	size_t n;
	char (*id)[SPOOL_ID_MAX + 1];	/* each one's ID, once found */
};

static int
twice_line(void *arg, const char *line, size_t len)
{
	struct twice *w = arg;
	struct spool_audit a;
	struct given want, *g;

	if (spool_audit_parse(line, len, &a) == -1 ||
	    (a.event != SPOOL_EV_CLAIM && a.event != SPOOL_EV_RECLAIM))
		return 0;
	want.tok = a.token;
	want.idh = hash_id(a.id, strlen(a.id));
	want.t = a.time;
	if ((g = bsearch(&want, w->g, w->n, sizeof(*g), cmp_given)) != NULL)
		memcpy(w->id[g - w->g], a.id, sizeof(a.id));
	return 0;
}

/*
 * Two claims in the audit history with one token, which spool(7) says
 * never happens (spool-layout.md, "Tokens").  Tokens below from were
 * counted per ID, in format 1, where equal tokens of two IDs are no fault.
 * A repair cannot take back a token a worker was given: it says which
 * claims share it, for the operator to check what each holder did.
 */
int
check_twice_given(struct fsck *f, uint64_t from)
{
	struct given *all;
	struct twice w = { NULL, 0, NULL };
	char t1[40], t2[40], times[32];
	size_t i, k, n = 0, nd = 0;
	int rv = -1;

	if (f->sp->format < 2 || f->nkeys == 0)
		return 0;
	if ((all = calloc(f->nkeys, sizeof(*all))) == NULL)
		return -1;
	for (i = 0; i < f->nkeys; i++)
		if ((f->keys[i].ev == SPOOL_EV_CLAIM || f->keys[i].ev ==
		    SPOOL_EV_RECLAIM) && f->keys[i].tok >= from) {
			all[n].tok = f->keys[i].tok;
			all[n].idh = f->keys[i].idh;
			all[n++].t = f->keys[i].t;
		}
	if (n > 0)
		qsort(all, n, sizeof(*all), cmp_given);
	/* A line logged twice (same ID, time and token) is one claim. */
	for (i = k = 0; i < n; i++)
		if (k == 0 || cmp_given(&all[k - 1], &all[i]) != 0)
			all[k++] = all[i];
	n = k;
	/* Keep only the claims whose token another claim has too. */
	for (i = 0; i < n; i++)
		if ((i > 0 && all[i - 1].tok == all[i].tok) ||
		    (i + 1 < n && all[i + 1].tok == all[i].tok))
			all[nd++] = all[i];
	if (nd == 0) {
		rv = 0;
		goto out;
	}
	w.g = all;
	w.n = nd;
	if ((w.id = calloc(nd, sizeof(*w.id))) == NULL ||
	    spool_audit_scan(f->sp, twice_line, &w) == -1)
		goto out;
	for (i = 0; i < nd; i = k) {
		for (k = i + 1; k < nd && all[k].tok == all[i].tok; k++)
			;
		(void)spool_format_time(t1, sizeof(t1), all[i].t);
		(void)spool_format_time(t2, sizeof(t2), all[i + 1].t);
		if (k - i == 2)
			strcpy(times, "twice");
		else
			(void)snprintf(times, sizeof(times), "%zu times", k - i);
		problem(f, "audit", 0, "token %" PRIu64 " was handed out %s: "
		    "to %s at %s and to %s at %s%s; check what each holder did "
		    "under it", all[i].tok, times, w.id[i], t1, w.id[i + 1], t2,
		    k - i > 2 ? ", and more" : "");
	}
	rv = 0;
out:
	free(all);
	free(w.id);
	return rv;
}
