/*
 * The spool's own check: every invariant spool-layout.md states, read from
 * the directories, the sidecars and the audit logs.  Each job is checked
 * under its sidecar lock (shared; exclusive with repair), so a check can
 * run beside live commands.  A repair completes or rolls back what a crash
 * interrupted, in the way "Crashes" says, and logs it; a file it cannot
 * place goes to quarantine/, never away.  Memory: one entry per job file
 * and per audit line (about 200 and 32 bytes).
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define TMP_STALE_MS	(24 * 3600 * 1000LL)	/* a tmp/ file this old is left */

/*
 * A file found in a state directory: its path from the spool's top, in
 * f->names, with the job's ID at idat.  Paths live end to end in one
 * buffer so that a big spool costs a few dozen bytes a file.  A file
 * named ID, or ID,NUMBER, where the state's names have another form (the
 * top of new/, leased/ID) is a job's file put there by hand: misplaced.
 */
struct ent {
	size_t rel;
	unsigned short idat, idlen;
	unsigned char state;		/* the directory's: enum spool_state */
	unsigned char misplaced;
};

/* An audit line, reduced to what a record must match. */
struct akey {
	uint64_t idh, tok;
	int64_t t;
	int ev;
};

struct fsck {
	struct spool *sp;
	int repair;
	void (*say)(void *arg, const char *what, const char *problem,
	    int fixed);
	void *arg;
	struct ent *ents;
	size_t nents, capents;
	char *names;			/* the paths of ents, and the sidecars' */
	size_t nnames, capnames;
	char **strays;			/* rel paths that are no job's */
	size_t nstrays;
	struct akey *keys;
	size_t nkeys, capkeys;
	struct audit_mark mark;		/* where the index's read ended */
	int indexed;			/* later reads add keys only */
	struct abuf ab;
	int problems, unfixed, err;
	int64_t oldest;			/* the earliest audit line kept */
	int restored;			/* SPOOL_FSCK_RESTORED */
	int verify;			/* SPOOL_FSCK_VERIFY */
	uint64_t maxtok;		/* the highest token anything names */
	int forgot;			/* sidecars removed: sync meta/ */
	char **cut;			/* tmp/ names publish_cut found */
	size_t ncut;
	int pause_ev;			/* the last pause or resume line's */
	int64_t pause_t;
	struct suspect *sus;		/* lines of transitions not made */
	size_t nsus, capsus;
	struct suspect **bykey;		/* sus, sorted by key */
};

/*
 * An audit line whose transition did not happen, as the index (hashes)
 * says: the line itself is looked for once for all of them, after the
 * walk, by one read of the log.
 */
struct suspect {
	struct akey key;		/* first: a key for cmp_key */
	char id[SPOOL_ID_MAX + 1];
	int found;
	struct spool_audit line;
};

/*
 * How far a restore moves the token counter past every token the restored
 * spool names: the tokens handed out after the backup was taken are
 * nowhere in it.  2^48 is nine years of claims at a million a second, and
 * 2^63 leaves room for 32,767 restores.
 */
#define RESTORE_JUMP	((uint64_t)1 << 48)

static uint64_t
hash_id(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

static void
problem(struct fsck *f, const char *what, int fixed, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#include <stdarg.h>

static void
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
	f->say(f->arg, what, text, fixed);
}

static int
add_stray(struct fsck *f, const char *dir, const char *name)
{
	char **s;

	if ((s = realloc(f->strays, (f->nstrays + 1) * sizeof(*s))) == NULL)
		return -1;
	f->strays = s;
	if (asprintf(&s[f->nstrays], "%s/%s", dir, name) == -1)
		return -1;
	f->nstrays++;
	return 0;
}

/* Append "a/b" (b NULL: "a") to f->names; its offset in *at. */
static int
add_name(struct fsck *f, const char *a, const char *b, size_t *at)
{
	size_t la = strlen(a), lb = b != NULL ? strlen(b) + 1 : 0;
	char *p;

	while (f->capnames - f->nnames < la + lb + 1) {
		f->capnames = f->capnames ? f->capnames * 2 : 65536;
		if ((p = realloc(f->names, f->capnames)) == NULL)
			return -1;
		f->names = p;
	}
	*at = f->nnames;
	p = f->names + f->nnames;
	memcpy(p, a, la);
	if (b != NULL) {
		p[la] = '/';
		memcpy(p + la + 1, b, lb);
	} else
		p[la] = '\0';
	f->nnames += la + lb + 1;
	return 0;
}

/* Tell the progress display, every 64 things and at the last. */
static void
tell(const struct spool *sp, const char *what, size_t done, size_t total)
{
	if (sp->progress != NULL && ((done & 63) == 0 || done == total))
		sp->progress(sp->progress_arg, what, done, total);
}

void
spool_set_progress(struct spool *sp, void (*fn)(void *arg, const char *what,
    size_t done, size_t total), void *arg)
{
	sp->progress = fn;
	sp->progress_arg = arg;
}

static int
add_ent(struct fsck *f, size_t idlen, const char *dir, const char *name,
    int state, int misplaced)
{
	struct ent *e;

	tell(f->sp, "files", f->nents + 1, 0);

	if (f->nents == f->capents) {
		f->capents = f->capents ? f->capents * 2 : 1024;
		if ((e = realloc(f->ents, f->capents * sizeof(*e))) == NULL)
			return -1;
		f->ents = e;
	}
	e = &f->ents[f->nents];
	if (strlen(dir) + 1 + strlen(name) >= NAME_MAX_SPOOL)
		return add_stray(f, dir, name);	/* too long to be ours */
	if (add_name(f, dir, name, &e->rel) == -1)
		return -1;
	e->idat = (unsigned short)(strlen(dir) + 1);
	e->idlen = (unsigned short)idlen;
	e->state = (unsigned char)state;
	e->misplaced = (unsigned char)misplaced;
	f->nents++;
	return 0;
}

/* "ID" or "ID,NUMBER": a job's name, in any state's form; its ID. */
static int
any_job_name(const char *name, char *id)
{
	const char *comma = strchr(name, ',');
	size_t len = comma != NULL ? (size_t)(comma - name) : strlen(name);

	if (len > SPOOL_ID_MAX || (comma != NULL && (comma[1] == '\0' ||
	    strspn(comma + 1, "0123456789") != strlen(comma + 1))))
		return 0;
	memcpy(id, name, len);
	id[len] = '\0';
	return spool_valid_id(id);
}

#define ENT_REL(f, e)	((f)->names + (e)->rel)
#define ENT_ID(f, e)	((f)->names + (e)->rel + (e)->idat)

/* Compare a file's job ID with a NUL-terminated ID. */
static int
cmp_ent_id(const struct fsck *f, const struct ent *e, const char *id)
{
	size_t n = strlen(id);
	int c = memcmp(ENT_ID(f, e), id, e->idlen < n ? e->idlen : n);

	return c != 0 ? c : (e->idlen > n) - (e->idlen < n);
}

/* A name in new/ that is no bucket: a job's file put there by hand? */
static int
add_stray_cb(void *arg, const char *dir, const char *name)
{
	struct fsck *f = arg;
	char id[SPOOL_ID_MAX + 1], rel[NAME_MAX_SPOOL];
	struct stat st;

	if (any_job_name(name, id) && snprintf(rel, sizeof(rel), "%s/%s", dir,
	    name) < (int)sizeof(rel) && fstatat(f->sp->dirfd, rel, &st,
	    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
		return add_ent(f, strlen(id), dir, name, SPOOL_NEW, 1);
	return add_stray(f, dir, name);
}

/* Every name in one directory: a job's file, or a stray. */
static int
scan_dir(struct fsck *f, int dirfd, const char *rel, int state)
{
	char id[SPOOL_ID_MAX + 1];
	struct dirent *de;
	struct stat st;
	uint64_t v;
	int64_t e;
	DIR *d;
	int ok, rv = 0;

	if ((d = dir_list(dirfd)) == NULL)
		return -1;
	while (rv == 0 && (errno = 0, de = dir_next(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/*
		 * A symlink, FIFO or directory is never a job's file: the
		 * type the directory gives, else an lstat's.
		 */
		if (de->d_type != DT_REG && (de->d_type != DT_UNKNOWN ||
		    (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISREG(st.st_mode)))) {
			rv = add_stray(f, rel, de->d_name);
			continue;
		}
		if (state == SPOOL_NEW)
			ok = parse_new_name(de->d_name, id, &e) == 0;
		else if (state == SPOOL_LEASED) {
			ok = parse_leased_name(de->d_name, id, &v) == 0;
			if (ok && v > f->maxtok)
				f->maxtok = v;
		}
		else
			ok = strlen(de->d_name) <= SPOOL_ID_MAX &&
			    spool_valid_id(strcpy(id, de->d_name));
		if (ok)
			rv = add_ent(f, strlen(id), rel, de->d_name, state, 0);
		else if (any_job_name(de->d_name, id))
			rv = add_ent(f, strlen(id), rel, de->d_name, state, 1);
		else
			rv = add_stray(f, rel, de->d_name);
	}
	if (rv == 0 && errno != 0)
		rv = -1;
	(void)closedir(d);	/* read-only */
	return rv;
}

static int
scan_leaf(void *arg, int leaffd, int64_t start)
{
	char rel[NAME_MAX_SPOOL];

	memcpy(rel, "new/", 4);
	if (bucket_rel(rel + 4, sizeof(rel) - 4, start) == -1)
		return -1;
	return scan_dir(arg, leaffd, rel, SPOOL_NEW) == -1 ? -1 : 0;
}

/* One audit line into the index; a line not of this format is not ours. */
static int
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
	f->nkeys++;
	return 0;
}

static int
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

/* For qsort_r(3): the offsets point into the fsck's names. */
static int
cmp_ent(const void *a, const void *b, void *arg)
{
	const struct fsck *sorting = arg;
	const struct ent *x = a, *y = b;
	size_t n = x->idlen < y->idlen ? x->idlen : y->idlen;
	int c = memcmp(ENT_ID(sorting, x), ENT_ID(sorting, y), n);

	if (c == 0)
		c = (x->idlen > y->idlen) - (x->idlen < y->idlen);
	return c != 0 ? c : strcmp(ENT_REL(sorting, x), ENT_REL(sorting, y));
}

static int
cmp_name(const void *a, const void *b, void *arg)
{
	const struct fsck *sorting = arg;

	return strcmp(sorting->names + *(const size_t *)a,
	    sorting->names + *(const size_t *)b);
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
static uint64_t
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

/* Move a file that is no job's, or not where its job is, to quarantine/. */
static int
quarantine(struct fsck *f, const char *rel)
{
	struct spool *sp = f->sp;
	char name[NAME_MAX_SPOOL + 32], *p;
	int r;

	if (mkdir_mode(sp, sp->dirfd, "quarantine") == -1 && errno != EEXIST)
		return -1;
	r = snprintf(name, sizeof(name), "quarantine/%s,%" PRId64, rel,
	    now_ms());
	if (r < 0 || (size_t)r >= sizeof(name)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = name + strlen("quarantine/"); *p != '\0'; p++)
		if (*p == '/')
			*p = '_';
	if (sys_renameat(sp->dirfd, rel, sp->dirfd, name, 0) == -1 ||
	    sync_dir(sp->dirfd, "quarantine") == -1)
		return -1;
	return 0;
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
static int
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

/* None of the job's files found by the scan is there any more. */
static int
all_gone(struct fsck *f, const struct ent *ents, size_t n)
{
	struct stat st;
	size_t i;

	for (i = 0; i < n; i++)
		if (fstatat(f->sp->dirfd, ENT_REL(f, &ents[i]), &st,
		    AT_SYMLINK_NOFOLLOW) == 0)
			return 0;
	return 1;
}

/*
 * Replay the sidecar's records: each effective one must have its audit
 * line (those a crash kept from being written are appended, with repair).
 */
static int
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
static int
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
static int
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
 * May the payload at p be read?  With verify it is opened (*fd), to be
 * read whole; else access(2) answers, as an open would.  0 or -1.
 */
static int
may_read(struct fsck *f, struct place *p, int *fd)
{
	if (!f->verify)
		return faccessat(p->dirfd, p->name, R_OK, AT_EACCESS |
		    AT_SYMLINK_NOFOLLOW);
	*fd = sys_openat(p->dirfd, p->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK, 0);
	return *fd == -1 ? -1 : 0;
}

/*
 * The payload is the bytes its record describes: its size always, its
 * checksum with verify.  A record of an earlier version has neither.  A
 * payload that differs is reported, with the commands that settle it:
 * nothing can put back bytes that were changed.
 */
static int
check_payload(struct fsck *f, struct job *j)
{
	static const char *const fix[] = {
		[SPOOL_NEW] = "park it with spool-cancel, check it, then "
		    "spool-redrive --edited or spool-drop",
		[SPOOL_LEASED] = "park it with spool-cancel, check it, then "
		    "spool-redrive --edited or spool-drop",
		[SPOOL_DONE] = "it ran already; spool-purge removes it",
		[SPOOL_DEAD] = "check it, then spool-redrive --edited or "
		    "spool-drop"
	};
	struct place p;
	int fd = -1, ok, r = 0;

	if (j->cur.sum == 0 || j->cur.loc == SPOOL_ABSENT)
		return 0;
	if (place_look(f->sp, j->id, &j->cur, &p) == -1 ||
	    ((ok = may_read(f, &p, &fd)) == -1 && errno == ENOENT)) {
		if (place_of(f->sp, j->id, &j->cur, &p) == -1)
			return errno == ENOENT ? 0 : -1;
		ok = may_read(f, &p, &fd);
	}
	if (ok == -1 && errno == EACCES) {
		/* A mode changed by hand: job files are read-only, not 0. */
		if (f->repair && fchmodat(p.dirfd, p.name, f->sp->group ?
		    0440 : 0444, AT_SYMLINK_NOFOLLOW) == 0)
			ok = may_read(f, &p, &fd);
		problem(f, j->id, ok != -1, "its file cannot be read (its mode "
		    "was changed?)%s", ok != -1 ? " (made readable again)" :
		    ": give it back mode 0444 (0440 in a group spool)");
		if (ok == -1) {
			place_done(&p);
			return 0;	/* reported; not this fsck's to end */
		}
	}
	place_done(&p);
	if (ok == -1)
		return errno == ENOENT || errno == ELOOP || errno == EACCES ?
		    0 : -1;
	/* Its size: that of the file job_locate found, under the lock. */
	if ((uint64_t)j->fsize != j->cur.size)
		problem(f, j->id, 0, "its payload is %lld bytes, its record says "
		    "%" PRIu64 ": changed by hand, or torn; %s", (long long)
		    j->fsize, j->cur.size, fix[j->cur.loc]);
	else if (f->verify && (r = payload_matches(fd, &j->cur, 1)) == 0)
		problem(f, j->id, 0, "its payload is not the bytes its "
		    "checksum says: changed by hand, or damaged; %s",
		    fix[j->cur.loc]);
	if (fd != -1)
		(void)close_fd(fd);	/* read-only */
	return r == -1 ? -1 : 0;
}

/*
 * A restore brought back a job in leased/ or dead/: since the backup its
 * delivery may have ended, or a person may have redriven or dropped it.
 * A restore record says so: the side effect may have happened (a redrive
 * needs --reconciled), and a lease ends now, to be taken over.
 */
static int
mark_restored(struct fsck *f, struct job *j)
{
	struct rec r = j->cur;

	r.t = now_ms();
	r.ev = SPOOL_EV_RESTORE;
	r.se = 1;
	if (r.loc == SPOOL_LEASED && r.until > r.t)
		r.until = r.t;
	r.out = 0;
	r.by[0] = r.note[0] = '\0';
	if (job_record(j, &r) == -1 || job_commit(j) == -1 ||
	    audit_add(&f->ab, f->sp, j->id, &r, SPOOL_EV_RESTORE) == -1)
		return -1;
	problem(f, j->id, 1, "%s when the backup was taken: its outcome since "
	    "is unknown (marked: reconcile before a redrive)",
	    j->cur.loc == SPOOL_LEASED ? "leased" : "parked");
	return 0;
}

/* The path from the spool's top where record r puts id's file; "" none. */
static int
where_of(struct spool *sp, const char *id, const struct rec *r, char *buf,
    size_t size)
{
	struct place pl;
	size_t len;

	buf[0] = '\0';
	if (r->loc == SPOOL_ABSENT)
		return 0;
	if (r->loc == SPOOL_NEW) {
		memcpy(buf, "new/", 4);
		if (bucket_rel(buf + 4, size - 4, r->eligible) == -1)
			return -1;
		len = strlen(buf);
		buf[len++] = '/';
		return leaf_name(buf + len, size - len, id, r->eligible);
	}
	if (place_of(sp, id, r, &pl) == -1)
		return -1;
	(void)snprintf(buf, size, "%s/%s", spool_state_name(r->loc), pl.name);
	place_done(&pl);
	return 0;
}

/*
 * Did record r take effect?  Its audit line is written only after its
 * move is durable, so if the line is there, the move was made, whatever
 * became of the file since.
 */
static int
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

enum hand { PUT_BACK, AS_REDRIVE, AS_DROP };

/*
 * The job's file was moved by hand from where its record puts it to rel,
 * in a directory of state: what did the person mean?  From dead/ into
 * new/, a redrive; into done/, a drop; under the rules the commands keep.
 * Anything else means nothing the spool does, and goes back.  -1: the
 * payload could not be read, and nothing is decided (a file the spool may
 * not read is not the one enqueued, as far as it can tell).
 */
static int
meant(struct fsck *f, const struct job *j, const char *rel, int state,
    enum hand *how, const char **why)
{
	int fd, same, e;

	*why = NULL;
	*how = PUT_BACK;
	if (j->cur.loc != SPOOL_DEAD || (state != SPOOL_NEW &&
	    state != SPOOL_DONE))
		return 0;
	if (state == SPOOL_DONE) {
		*how = AS_DROP;
		return 0;
	}
	if (j->cur.se) {
		*why = "its side effect may have happened: reconcile it, then "
		    "spool-redrive --reconciled";
		return 0;
	}
	fd = sys_openat(f->sp->dirfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK, 0);
	if (fd == -1 && errno != EACCES)
		return -1;
	same = fd == -1 ? 0 : payload_matches(fd, &j->cur, 1);
	if (fd != -1) {
		e = errno;
		(void)close_fd(fd);	/* read-only */
		errno = e;
	}
	if (same == -1)
		return -1;
	if (!same) {
		*why = "its payload is not the one enqueued: check it, then "
		    "spool-redrive --edited";
		return 0;
	}
	*how = AS_REDRIVE;
	return 0;
}

/*
 * Adopt a hand move as the operator action it evidently was: the action's
 * record, by "hand" (a rename keeps no name of who made it), the file
 * moved where the record says, synced, and the action's audit line.
 */
static int
adopt(struct fsck *f, struct job *j, const char *rel, enum hand how)
{
	struct spool *sp = f->sp;
	struct dirset ds = { NULL, 0 };
	int64_t now = now_ms();
	struct rec r;
	int rv = -1;

	if (how == AS_REDRIVE)
		rec_redrive(j, &r, now, "hand", NULL);
	else
		rec_drop(j, &r, now, "hand", NULL);
	if (job_record(j, &r) == -1 || job_commit(j) == -1)
		return -1;
	if (how == AS_REDRIVE)
		rv = publish_new(sp, sp->dirfd, rel, j->id, r.eligible, &ds);
	else if (strcmp(rel + strlen("done/"), j->id) == 0)
		rv = dirset_add(&ds, "done");	/* already done/ID */
	else
		rv = move_noreplace(sp->dirfd, rel, sp->donefd, j->id) == -1 ||
		    dirset_add(&ds, "done") == -1 ? -1 : 0;
	if (rv == 0)
		rv = dirset_sync(sp, &ds);
	dirset_free(&ds);
	if (rv == 0)
		rv = audit_add(&f->ab, sp, j->id, &r, r.ev);
	return rv;
}

/* Move the job's file from rel back where its record puts it. */
static int
put_back(struct fsck *f, struct job *j, const char *rel)
{
	struct spool *sp = f->sp;
	struct dirset ds = { NULL, 0 };
	struct place pl;
	int rv;

	if (j->cur.loc == SPOOL_NEW)
		rv = publish_new(sp, sp->dirfd, rel, j->id, j->cur.eligible,
		    &ds);
	else if (place_of(sp, j->id, &j->cur, &pl) == -1)
		rv = -1;
	else {
		rv = move_noreplace(sp->dirfd, rel, pl.dirfd, pl.name) == -1 ||
		    dirset_add(&ds, spool_state_name(j->cur.loc)) == -1 ?
		    -1 : 0;
		place_done(&pl);
	}
	if (rv == 0)
		rv = dirset_sync(sp, &ds);
	dirset_free(&ds);
	return rv;
}

/*
 * The job's file is not where its record says, and the record took
 * effect: moved or removed by hand (or lost).  One file of its name
 * elsewhere is the job's: adopted or put back.  None: the job is damaged
 * until a person records its removal.  Several: a person chooses.
 */
static int
settle_missing(struct fsck *f, struct job *j, const char *where,
    struct ent *ents, size_t n)
{
	static const char *const done[] = {
		[PUT_BACK] = "put back",
		[AS_REDRIVE] = "adopted as a redrive by hand",
		[AS_DROP] = "adopted as a drop by hand"
	};
	static const char *const todo[] = {
		[PUT_BACK] = "spool-fsck --repair puts it back",
		[AS_REDRIVE] = "spool-fsck --repair adopts it as a redrive",
		[AS_DROP] = "spool-fsck --repair adopts it as a drop"
	};
	const char *rel = NULL, *why;
	const char *state = spool_state_name(j->cur.loc);
	char prev[NAME_MAX_SPOOL + 8];
	struct stat st;
	enum hand how;
	size_t i, found = 0;
	int lost;

	for (i = 0; i < n; i++)
		if (strcmp(ENT_REL(f, &ents[i]), where) != 0 && fstatat(
		    f->sp->dirfd, ENT_REL(f, &ents[i]), &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
			rel = ENT_REL(f, &ents[i]);
			found++;
		}
	if (found == 0) {
		problem(f, j->id, 0, "its file is missing from %s/: if it was "
		    "removed on purpose, record that with spool-purge --missing "
		    "--by WHO --note TICKET %s", state, j->id);
		return 0;
	}
	if (found > 1) {
		problem(f, j->id, 0, "its file is missing from %s/, and %zu "
		    "files of its name are elsewhere: move the right one back to "
		    "%s, then spool-fsck --repair", state, found, where);
		return 0;
	}
	for (i = 0; strcmp(ENT_REL(f, &ents[i]), rel) != 0; i++)
		continue;
	/*
	 * Where the record before put it: the move was lost, not made by
	 * hand (a power cut kept the record and its line, not the move):
	 * the move is made again.
	 */
	if (where_of(f->sp, j->id, &j->prev, prev, sizeof(prev)) == -1)
		return -1;
	/* (An enqueue's previous place holds the previous cycle's file.) */
	lost = j->cur.ev != SPOOL_EV_ENQUEUE && strcmp(rel, prev) == 0;
	if (lost) {
		how = PUT_BACK;
		why = NULL;
	} else if (meant(f, j, rel, ents[i].state, &how, &why) == -1)
		return -1;
	/*
	 * The records before an adoption took effect; so does the last one
	 * once its file is put back (an adoption cut short after its record
	 * leaves one): each needs its audit line, before the adoption's.
	 */
	if (f->repair && how != PUT_BACK &&
	    check_audit(f, j, hash_id(j->id, strlen(j->id)), 0) == -1)
		return -1;
	if (f->repair && (how == PUT_BACK ? put_back(f, j, rel) :
	    adopt(f, j, rel, how)) == -1)
		return -1;
	if (lost)
		problem(f, j->id, f->repair, "its file is still at %s, where "
		    "it was before its last transition (%s) moved it to %s/ (a "
		    "power cut lost the move, or a person undid it): %s", rel,
		    spool_event_name(j->cur.ev), state, f->repair ?
		    "the move made again" :
		    "spool-fsck --repair makes the move again");
	else
		problem(f, j->id, f->repair, "moved by hand from %s/ to %s: "
		    "%s%s%s", state, rel, f->repair ? done[how] : todo[how],
		    why != NULL ? "; " : "", why != NULL ? why : "");
	if (f->repair && how == PUT_BACK &&
	    check_audit(f, j, hash_id(j->id, strlen(j->id)), 0) == -1)
		return -1;
	return 0;
}

/*
 * An enqueue whose record and audit line a power cut kept, and whose
 * rename into new/ it lost, left its payload in tmp/ (whose names the
 * enqueue synced before it renamed).  The one tmp/ file of the job whose
 * size and checksum are the record's is the job: published, as the
 * enqueue would have.  1 if found (and, with repair, published).
 */
static int
publish_cut(struct fsck *f, struct job *j)
{
	char name[NAME_MAX_SPOOL], idc[SPOOL_ID_MAX + 2];
	struct dirset ds = { NULL, 0 };
	struct dirent *de;
	uint64_t size, sum;
	char **names;
	size_t n = 0;
	DIR *d;
	int rv;

	if (j->cur.ev != SPOOL_EV_ENQUEUE || j->cur.sum == 0)
		return 0;
	(void)snprintf(idc, sizeof(idc), "%s,", j->id);
	if ((d = dir_list(f->sp->tmpfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL)
		if (strncmp(de->d_name, idc, strlen(idc)) == 0 &&
		    payload_sum_at(f->sp->tmpfd, de->d_name, &size, &sum) == 0 &&
		    size == j->cur.size && sum == j->cur.sum && n++ == 0)
			(void)snprintf(name, sizeof(name), "%s", de->d_name);
	rv = errno != 0 ? -1 : 0;
	(void)closedir(d);	/* read-only */
	if (rv == -1 || n != 1)
		return rv;
	if (!f->repair) {
		/* Not a leftover for check_tmp to report. */
		if ((names = realloc(f->cut, (f->ncut + 1) * sizeof(*names))) ==
		    NULL || (names[f->ncut] = strdup(name)) == NULL) {
			if (names != NULL)
				f->cut = names;
			return -1;
		}
		f->cut = names;
		f->ncut++;
	} else if (publish_new(f->sp, f->sp->tmpfd, name, j->id,
	    j->cur.eligible, &ds) == -1 || dirset_sync(f->sp, &ds) == -1) {
		dirset_free(&ds);
		return -1;
	}
	dirset_free(&ds);
	problem(f, j->id, f->repair, "its enqueue was cut short before its "
	    "rename, after its audit line: %s", f->repair ? "published from "
	    "tmp/" : "spool-fsck --repair publishes it from tmp/");
	return 1;
}

/* What the audit log last said of one job. */
struct history {
	const char *id;
	struct spool_audit last, claim;	/* the last line, the last claim's */
};

static int
history_line(void *arg, const char *line, size_t len)
{
	struct history *h = arg;
	struct spool_audit a;

	if (spool_audit_parse(line, len, &a) == -1 ||
	    strcmp(a.id, h->id) != 0)
		return 0;
	if (h->last.event == SPOOL_EV_NONE || a.time >= h->last.time)
		h->last = a;
	if ((a.event == SPOOL_EV_CLAIM || a.event == SPOOL_EV_RECLAIM) &&
	    (h->claim.event == SPOOL_EV_NONE || a.time >= h->claim.time))
		h->claim = a;
	return 0;
}

/*
 * A job whose sidecar is lost, emptied or unreadable, and whose one file
 * is rel, in a directory of state: its sidecar is made again from that
 * file's place and name, what the audit log last said of it where it
 * still reaches, and the spool's defaults.  Its tokens stay above every
 * token ever issued: the next comes from the counter.  Its outcome since
 * the last line it left is unknown: a lease ends now, and a leased or
 * parked job is marked as possibly having had its side effect.  j is the
 * sidecar, open and locked (made empty, or just made).
 */
static int
rebuild(struct fsck *f, struct job *j, const char *rel, int state)
{
	struct spool *sp = f->sp;
	char name[SPOOL_ID_MAX + 32];
	struct history h;
	const char *base = strrchr(rel, '/') + 1;
	int64_t now = now_ms();
	struct rec r;

	memset(&h, 0, sizeof(h));
	h.id = j->id;
	if (spool_audit_scan(sp, history_line, &h) == -1)
		return -1;
	memset(&r, 0, sizeof(r));
	r.t = now;
	r.ev = SPOOL_EV_REBUILD;
	r.loc = state;
	r.tok = h.last.token;
	r.att = h.last.attempt;
	r.cyc = h.last.cycle > 0 ? h.last.cycle : 1;
	r.max = sp->max_attempts;
	r.ttl = sp->deadline_ms;
	r.deadline = now + sp->deadline_ms;
	r.created = now;
	if (state == SPOOL_NEW && parse_new_name(base, name, &r.eligible) == -1)
		r.eligible = now;
	if (state == SPOOL_LEASED) {
		if (parse_leased_name(base, name, &r.tok) == -1)
			r.tok = h.last.token;
		r.until = now;
		if (h.claim.event != SPOOL_EV_NONE)
			memcpy(r.owner, h.claim.actor, sizeof(r.owner));
	}
	if (state == SPOOL_DEAD && h.last.event == SPOOL_EV_PARK) {
		r.reason = h.last.reason;
		r.cls = h.last.class;
	}
	r.se = state == SPOOL_LEASED || state == SPOOL_DEAD;
	if (payload_sum_at(sp->dirfd, rel, &r.size, &r.sum) == -1 ||
	    job_record(j, &r) == -1 || job_commit(j) == -1 ||
	    sync_dir(sp->metafd, ".") == -1 ||
	    audit_add(&f->ab, sp, j->id, &r, SPOOL_EV_REBUILD) == -1)
		return -1;
	/* A lease that ends now: claims must look in leased/ at once. */
	if (state == SPOOL_LEASED && sys_unlinkat(sp->dirfd, "next-expiry",
	    0) == -1 && errno != ENOENT)
		return -1;
	return 0;
}

/* Has the audit log a line of this ID? */
static int
audit_knows(const struct fsck *f, uint64_t idh)
{
	size_t lo = audit_first(f, idh);

	return lo < f->nkeys && f->keys[lo].idh == idh;
}

/*
 * The files of id, whose sidecar is lost, empty or unreadable (held: the
 * empty one, open and locked; else NULL).  One file, with a name of its
 * state's form, of an ID the audit log knows: a job whose sidecar is
 * made again.  Otherwise no job owns it for sure (a file dropped in by
 * hand, several files of one ID): a person chooses, and each file waits
 * in quarantine/ with the command that makes it a job.
 */
static int
orphans(struct fsck *f, const char *id, struct ent *ents, size_t n,
    struct job *held)
{
	struct spool *sp = f->sp;
	const char *rel;
	struct stat st;
	struct job j;
	size_t i;
	int known = audit_knows(f, hash_id(id, strlen(id))), rv;

	if (n == 1 && !ents[0].misplaced && known) {
		rel = ENT_REL(f, &ents[0]);
		if (!f->repair) {
			problem(f, rel, 0, "a job file whose sidecar is lost or "
			    "empty: spool-fsck --repair makes it again");
			return 0;
		}
		if (held == NULL && job_open(sp, id, 1, 0, &j, NULL) == -1)
			return -1;
		rv = rebuild(f, held != NULL ? held : &j, rel, ents[0].state);
		if (held == NULL)
			job_close(&j);
		if (rv == -1)
			return -1;
		problem(f, rel, 1, "a job file whose sidecar is lost or empty: "
		    "made again from the file and the audit log (rebuilt)");
		return 0;
	}
	for (i = 0; i < n; i++) {
		rel = ENT_REL(f, &ents[i]);
		if (fstatat(sp->dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (f->repair && quarantine(f, rel) == -1)
			return -1;
		if (n > 1)
			problem(f, rel, f->repair, "one of %zu files of ID %s, "
			    "which has no sidecar%s: to make the right one the "
			    "job, spool-enqueue --id %s FILE", n, id, f->repair ?
			    " (quarantined)" : "", id);
		else if (known)
			/* Moved by hand, and its sidecar lost: two edits. */
			problem(f, rel, f->repair, "a file of job %s, whose "
			    "sidecar is lost or empty, where no job's file can "
			    "be%s: to make it the job, spool-enqueue --id %s FILE",
			    id, f->repair ? " (quarantined)" : "", id);
		else
			problem(f, rel, f->repair, "a file no job owns (no "
			    "sidecar, and no audit line of ID %s)%s: to make it "
			    "a job, spool-enqueue --id %s FILE", id, f->repair ?
			    " (quarantined)" : "", id);
	}
	return 0;
}

/*
 * A sidecar that is not a record log: garbled, or no regular file.  A
 * garbled one goes to quarantine/, where a person may read what is left
 * of it, and the job's sidecar is made again from its file; anything else
 * in its place (a directory, a symlink) is left to a person.
 */
static int
damaged_sidecar(struct fsck *f, const char *id, struct ent *ents, size_t n)
{
	char rel[SPOOL_ID_MAX + 8];
	struct stat st;

	(void)snprintf(rel, sizeof(rel), "meta/%s", id);
	if (fstatat(f->sp->dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISREG(st.st_mode) || n == 0) {
		problem(f, id, 0, "sidecar meta/%s is not a readable record "
		    "log (or not a regular file): move it away, then "
		    "spool-fsck --repair", id);
		return 0;
	}
	if (f->repair && (quarantine(f, rel) == -1 ||
	    sync_dir(f->sp->metafd, ".") == -1))
		return -1;
	problem(f, id, f->repair, "sidecar meta/%s is not a readable record "
	    "log%s", id, f->repair ? " (quarantined)" : ": spool-fsck "
	    "--repair moves it to quarantine/ and makes it again");
	return f->repair ? orphans(f, id, ents, n, NULL) : 0;
}

/* One job: its sidecar, its files, its tokens, its audit lines. */
static int
check_job(struct fsck *f, const char *id, struct ent *ents, size_t n)
{
	struct spool *sp = f->sp;
	char where[NAME_MAX_SPOOL + 8];
	struct stat st;
	struct job j;
	struct rec v, cur0, prev0;
	uint64_t idh = hash_id(id, strlen(id)), amax;
	const char *rel;
	size_t i;
	int cut, missing = 0, rv, listed;

	if ((f->repair ? job_read(sp, id, LOCK_EX, &j) :
	    look_locked(sp, id, &j)) == -1) {
		if (errno == ENOENT)
			return 0;	/* a stray sidecar name vanished */
		if (errno != EUCLEAN)
			return -1;
		return damaged_sidecar(f, id, ents, n);
	}
	/* Emptied (or torn before its first line): as good as lost. */
	if (j.valid == 0 && n > 0) {
		rv = orphans(f, id, ents, n, &j);
		job_close(&j);
		return rv;
	}
	if (j.hi > f->maxtok)
		f->maxtok = j.hi;
	cur0 = j.cur;
	prev0 = j.prev;
	if (job_locate(sp, &j) == -1) {
		if (errno != EUCLEAN)
			goto fail;
		missing = 1;	/* in neither place its last two records say */
	} else if (j.voidtail && record_logged(f, idh, &cur0))
		missing = 1;	/* it was there, and went */
	if (missing) {
		j.cur = cur0;
		j.prev = prev0;
		j.voidtail = 0;
		if ((rv = publish_cut(f, &j)) == -1)
			goto fail;
		if (rv == 1) {
			if (check_unhappened(f, &j, idh, 0) == -1)
				goto fail;
			job_close(&j);
			return 0;
		}
		if (where_of(sp, id, &j.cur, where, sizeof(where)) == -1 ||
		    settle_missing(f, &j, where, ents, n) == -1 ||
		    check_unhappened(f, &j, idh, 0) == -1)
			goto fail;
		job_close(&j);
		return 0;
	}
	if ((cut = j.voidtail)) {
		if (f->repair) {
			/* Roll back: a void record, as the next writer would. */
			memset(&v, 0, sizeof(v));
			v.t = now_ms();
			v.ev = SPOOL_EV_VOID;
			v.tok = j.hi;
			j.npending = rec_format(j.pending, sizeof(j.pending) - 1,
			    &v);
			j.pending[j.npending++] = '\n';
			if (job_commit(&j) == -1)
				goto fail;
		}
		problem(f, id, f->repair, "its last transition was cut short "
		    "before its move%s", f->repair ? " (marked void)" : "");
	}
	if (check_supersede(f, &j, idh) == -1 ||
	    (f->repair && job_settle(sp, &j, &f->ab) == -1))
		goto fail;
	if (sp->format >= 2 && j.cur.ev == SPOOL_EV_PURGE && (n == 0 ||
	    (f->repair && all_gone(f, ents, n)))) {
		/*
		 * A purge cut short before it removed the sidecar (or before
		 * its unlink, which settling just made): the sidecar goes once
		 * the purge's audit line is on disk, as a purge does it.
		 */
		if (check_audit(f, &j, idh, cut) == -1 ||
		    (f->repair && (audit_flush(sp, &f->ab) == -1 ||
		    (sys_unlinkat(sp->metafd, id, 0) == -1 &&
		    errno != ENOENT))))
			goto fail;
		f->forgot |= f->repair;
		problem(f, id, f->repair, "purged, but its sidecar is still in "
		    "meta/%s", f->repair ? " (removed)" : "");
		job_close(&j);
		return 0;
	}
	if (f->restored && (j.cur.loc == SPOOL_LEASED || j.cur.loc ==
	    SPOOL_DEAD) && mark_restored(f, &j) == -1)
		goto fail;
	if (check_payload(f, &j) == -1)
		goto fail;
	/* Every file of the job but the one its sidecar names is a stray. */
	if (where_of(sp, id, &j.cur, where, sizeof(where)) == -1)
		goto fail;	/* not knowing where it is, quarantine nothing */
	for (i = 0, listed = 0; i < n; i++)
		listed |= strcmp(ENT_REL(f, &ents[i]), where) == 0;
	for (i = 0; i < n; i++) {
		rel = ENT_REL(f, &ents[i]);
		if (strcmp(rel, where) == 0 || fstatat(sp->dirfd, rel, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;	/* the job, or gone (settled) */
		if (st.st_ino == j.ino && st.st_dev == j.dev) {
			/*
			 * The job's own file: a move cut short kept both.
			 * Unless the listing lacks the name the sidecar
			 * gives: then that name was found only through a
			 * client's stale entry (GlusterFS, see settle_shared
			 * in meta.c), and this is the file's one real name.
			 */
			if (!listed)
				continue;
			if (f->repair && sys_unlinkat(sp->dirfd, rel, 0) == -1 &&
			    errno != ENOENT)
				goto fail;
			problem(f, rel, f->repair, "a second name of job %s's "
			    "file, left by a move cut short%s", id,
			    f->repair ? " (removed)" : "");
			continue;
		}
		if (f->repair && quarantine(f, rel) == -1)
			goto fail;
		problem(f, rel, f->repair, "a second file of job %s, "
		    "whose sidecar puts it %s%s%s", id, where[0] ? "at " :
		    "nowhere", where, f->repair ? " (quarantined)" : "");
	}
	/*
	 * A token the sidecar lost.  In format 2 it is no danger once the
	 * spool-wide counter is above it, which check_tokens sees to.
	 */
	amax = audit_max_tok(f, idh);
	if (amax > j.hi && sp->format < 2)
		problem(f, id, 0, "the audit log names token %" PRIu64 ", above "
		    "the sidecar's highest, %" PRIu64, amax, j.hi);
	if (check_audit(f, &j, idh, cut) == -1 ||
	    check_unhappened(f, &j, idh, cut) == -1)
		goto fail;
	job_close(&j);
	return 0;
fail:
	f->err = errno;
	job_close(&j);
	return -1;
}

/*
 * The pause has no sidecar: a pause or resume cut short after its rename
 * or unlink, before its audit line, leaves "paused" present while the
 * log's last pause or resume is not a pause, or the other way round.
 * Repair appends the missing line, naming whom "paused" names.  A pause
 * older than every line kept may have had its line in a rotated log.
 */
static int
check_pause(struct fsck *f)
{
	char text[2 * SPOOL_ID_MAX + 32];
	struct stat st;
	struct rec r;
	int paused;

	if ((paused = spool_paused(f->sp)) == -1)
		return -1;
	if (paused == (f->pause_ev == SPOOL_EV_PAUSE))
		return 0;
	memset(&r, 0, sizeof(r));
	r.t = now_ms();
	if (paused) {
		if (fstatat(f->sp->dirfd, "paused", &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			return -1;
		if (read_small(f->sp->dirfd, "paused", text,
		    sizeof(text)) == -1) {
			if (errno != EBADMSG)
				return -1;
			text[0] = '\0';	/* not ours: names no one */
		}
		if (f->nkeys > 0 && (int64_t)st.st_mtim.tv_sec * 1000 <
		    f->oldest)
			return 0;
		if (sscanf(text, "%128s %128s", r.by, r.note) != 2 ||
		    !spool_valid_note(r.by) || !spool_valid_note(r.note))
			r.by[0] = r.note[0] = '\0';
		if (strcmp(r.by, "-") == 0)
			r.by[0] = '\0';
		if (strcmp(r.note, "-") == 0)
			r.note[0] = '\0';
	}
	if (f->repair && audit_add(&f->ab, f->sp, "-", &r, paused ?
	    SPOOL_EV_PAUSE : SPOOL_EV_RESUME) == -1)
		return -1;
	problem(f, "paused", f->repair, "%s, but the audit log's last pause "
	    "or resume says otherwise%s", paused ? "present" : "absent",
	    f->repair ? paused ? " (pause appended)" : " (resume appended)" :
	    "");
	return 0;
}

static int
cut_found(const struct fsck *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->ncut; i++)
		if (strcmp(f->cut[i], name) == 0)
			return 1;
	return 0;
}

/*
 * tmp/: a file whose process is gone, or that is a day old, is left over;
 * in multi-host mode only its age tells.
 */
static int
check_tmp(struct fsck *f)
{
	struct spool *sp = f->sp;
	struct dirent *de;
	struct stat st;
	const char *comma;
	long pid;
	DIR *d;
	int alive, e;

	if ((d = dir_list(sp->tmpfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (de->d_name[0] == '.' || fstatat(sp->tmpfd, de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 || cut_found(f, de->d_name))
			continue;
		comma = strrchr(de->d_name, ',');
		pid = comma != NULL ? strtol(comma + 1, NULL, 10) : 0;
		/* On several hosts the PID may be another host's. */
		alive = sp->multi_host || (pid > 0 &&
		    (kill((pid_t)pid, 0) == 0 || errno == EPERM));
		if (alive && (int64_t)st.st_mtim.tv_sec * 1000 >
		    now_ms() - TMP_STALE_MS)
			continue;	/* an enqueue at work */
		if (f->repair && sys_unlinkat(sp->tmpfd, de->d_name, 0) == -1 &&
		    errno != ENOENT) {
			(void)closedir(d);
			return -1;
		}
		problem(f, "tmp", f->repair, "%s: left by an interrupted "
		    "enqueue, never published%s", de->d_name, f->repair ?
		    " (removed)" : "");
	}
	e = errno;
	(void)closedir(d);	/* read-only */
	errno = e;
	return e != 0 ? -1 : 0;
}

/*
 * The top directory: config must be there (without it every command runs
 * on the built-in defaults, with no reserve).  Any other name is noted,
 * not counted: nothing of a spool reads it, and a file a person keeps
 * there (a README, a config.orig) must not fail every check for ever.
 */
static int
check_top(struct fsck *f, struct spool *sp)
{
	static const char *const ours[] = {
		".", "..", "format", "config", "next-expiry", "paused", "tokens",
		"tmp", "new", "leased", "done", "dead", "meta", "audit",
		"quarantine", "hosts"
	};
	struct dirent *de;
	DIR *d;
	int i, known, e;

	if (faccessat(sp->dirfd, "config", F_OK, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT)
			return -1;
		problem(f, "config", 0, "missing: every command runs on the "
		    "built-in defaults, with no reserve; spool-init writes the "
		    "default config again, or restore the spool's own");
	}
	if ((d = dir_list(sp->dirfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		for (known = 0, i = 0; i < NELEM(ours) && !known; i++)
			known = strcmp(de->d_name, ours[i]) == 0;
		if (!known)
			f->say(f->arg, de->d_name, "not part of a spool (left "
			    "alone)", SPOOL_FSCK_NOTE);
	}
	e = errno;
	(void)closedir(d);	/* read-only */
	errno = e;
	return e != 0 ? -1 : 0;
}

/*
 * The counter (format 2): every token anything names must be below its
 * next; a lost or garbled counter is made again as after a restore, since
 * the tokens of jobs purged since the audit logs began are nowhere else.
 */
static int
check_tokens(struct fsck *f)
{
	struct spool *sp = f->sp;
	char text[256];
	struct tokens c;
	uint64_t floor;
	int ok = 0;

	if (sp->format < 2)
		return 0;
	if (read_small(sp->dirfd, "tokens", text, sizeof(text)) == 0)
		ok = tokens_parse(text, strlen(text), &c) == 0;
	else if (errno != ENOENT && errno != ELOOP && errno != EBADMSG)
		return -1;	/* lost or too long: made again, below */
	if (!ok) {
		floor = f->maxtok + 1 + RESTORE_JUMP;
		if (f->repair && tokens_raise(sp, floor) == -1)
			return -1;
		problem(f, "tokens", f->repair, "the token counter is missing or "
		    "damaged%s", f->repair ? " (made again above every token "
		    "the spool names, as after a restore)" : "");
		return 0;
	}
	if (f->restored) {
		floor = (c.next > f->maxtok ? c.next : f->maxtok + 1) +
		    RESTORE_JUMP;
		/*
		 * The leases marked ended now; the hint may say later (it
		 * is only a hint: a claim without it reads leased/).
		 */
		if (tokens_raise(sp, floor) == -1 || (sys_unlinkat(sp->dirfd,
		    "next-expiry", 0) == -1 && errno != ENOENT))
			return -1;
		problem(f, "tokens", 1, "restored from a backup: tokens start "
		    "again at %" PRIu64 " (fixed)", floor);
		return 0;
	}
	if (f->maxtok >= c.next) {
		if (f->repair && tokens_raise(sp, f->maxtok + 1) == -1)
			return -1;
		problem(f, "tokens", f->repair, "token %" PRIu64 " is named, "
		    "but the counter says every token is below %" PRIu64 "%s",
		    f->maxtok, c.next, f->repair ? " (raised)" : "");
	}
	return 0;
}

int
spool_fsck(struct spool *sp, int flags,
    void (*say)(void *arg, const char *what, const char *problem, int fixed),
    void *arg)
{
	int repair = (flags & (SPOOL_FSCK_REPAIR | SPOOL_FSCK_RESTORED)) != 0;
	struct fsck f;
	size_t *metas = NULL, *m;
	size_t nmeta = 0, capmeta = 0, i, k, e0;
	char orphan[SPOOL_ID_MAX + 1];
	const char *id;
	struct dirent *de;
	DIR *d;
	int c, e;

	memset(&f, 0, sizeof(f));
	f.sp = sp;
	f.repair = repair;
	f.restored = (flags & SPOOL_FSCK_RESTORED) != 0;
	f.verify = (flags & SPOOL_FSCK_VERIFY) != 0;
	f.say = say;
	if (f.restored && sp->format < 2) {
		errno = EPROTO;		/* tokens counted per ID: upgrade first */
		return -1;
	}
	f.arg = arg;
	if (check_top(&f, sp) == -1)
		return -1;
	if (bucket_walk_all(sp, scan_leaf, add_stray_cb, &f) == -1 ||
	    scan_dir(&f, sp->leasedfd, "leased", SPOOL_LEASED) == -1 ||
	    scan_dir(&f, sp->donefd, "done", SPOOL_DONE) == -1 ||
	    scan_dir(&f, sp->deadfd, "dead", SPOOL_DEAD) == -1 ||
	    audit_scan(sp, &f.mark, index_line, &f) == -1)
		goto fail;
	f.indexed = 1;
	if (f.nents > 0)	/* qsort and bsearch take no NULL */
		qsort_r(f.ents, f.nents, sizeof(*f.ents), cmp_ent, &f);
	if (f.nkeys > 0)
		qsort(f.keys, f.nkeys, sizeof(*f.keys), cmp_key);
	if ((d = dir_list(sp->metafd)) == NULL)
		goto fail;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
		    strcmp(de->d_name, "..") == 0))
			continue;
		if (!spool_valid_id(de->d_name)) {
			problem(&f, "meta", 0, "%s: not a job's sidecar",
			    de->d_name);
			continue;
		}
		if (nmeta == capmeta) {
			capmeta = capmeta ? capmeta * 2 : 1024;
			if ((m = realloc(metas, capmeta * sizeof(*m))) == NULL) {
				(void)closedir(d);
				goto fail;
			}
			metas = m;
		}
		if (add_name(&f, de->d_name, NULL, &metas[nmeta]) == -1) {
			(void)closedir(d);
			goto fail;
		}
		nmeta++;
	}
	e = errno;
	(void)closedir(d);	/* read-only */
	if ((errno = e) != 0)
		goto fail;	/* a sidecar unlisted would look missing */
	if (nmeta > 0)
		qsort_r(metas, nmeta, sizeof(*metas), cmp_name, &f);
	/* Jobs come in ID order, their buckets in any: keep them open. */
	if ((sp->look = look_new()) == NULL)
		goto fail;
	/* Merge the sorted sidecars with the sorted job files. */
	for (i = 0, k = 0; i < nmeta || k < f.nents;) {
		e0 = k;
		id = i < nmeta ? f.names + metas[i] : NULL;
		if (k < f.nents && (id == NULL ||
		    cmp_ent_id(&f, &f.ents[k], id) < 0)) {
			/* Files of an ID with no sidecar: its sidecar lost. */
			while (k < f.nents && f.ents[k].idlen ==
			    f.ents[e0].idlen && memcmp(ENT_ID(&f, &f.ents[k]),
			    ENT_ID(&f, &f.ents[e0]), f.ents[e0].idlen) == 0)
				k++;
			memcpy(orphan, ENT_ID(&f, &f.ents[e0]), f.ents[e0].idlen);
			orphan[f.ents[e0].idlen] = '\0';
			if (orphans(&f, orphan, f.ents + e0, k - e0, NULL) == -1)
				goto fail;
			continue;
		}
		while (k < f.nents && cmp_ent_id(&f, &f.ents[k], id) == 0)
			k++;
		if (check_job(&f, id, f.ents + e0, k - e0) == -1)
			goto fail;
		i++;
		tell(sp, "jobs", i, nmeta);
	}
	for (i = 0; i < f.nstrays; i++) {
		if (repair && quarantine(&f, f.strays[i]) == -1)
			goto fail;
		problem(&f, f.strays[i], repair, "not a job's name%s", repair ?
		    " (quarantined)" : "");
	}
	if (settle_suspects(&f) == -1 ||
	    check_tmp(&f) == -1 || check_tokens(&f) == -1 ||
	    check_pause(&f) == -1 ||
	    (f.forgot && sync_dir(sp->metafd, ".") == -1) ||
	    audit_flush(sp, &f.ab) == -1)
		goto fail;
	c = f.unfixed > 0;
	goto out;
fail:
	c = -1;
	if (f.err == 0)
		f.err = errno;
out:
	look_free(sp->look);
	sp->look = NULL;
	free(metas);
	free(f.names);
	for (i = 0; i < f.nstrays; i++)
		free(f.strays[i]);
	free(f.strays);
	for (i = 0; i < f.ncut; i++)
		free(f.cut[i]);
	free(f.cut);
	free(f.ents);
	free(f.keys);
	audit_mark_free(&f.mark);
	free(f.sus);
	free(f.bykey);
	abuf_free(&f.ab);
	if (c == -1)
		errno = f.err;
	return c;
}
