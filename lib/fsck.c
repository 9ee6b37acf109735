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
 * buffer so that a big spool costs a few dozen bytes a file.
 */
struct ent {
	size_t rel;
	unsigned short idat, idlen;
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
	struct abuf ab;
	int problems, unfixed, err;
	int64_t oldest;			/* the earliest audit line kept */
};

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

static int
add_ent(struct fsck *f, size_t idlen, const char *dir, const char *name)
{
	struct ent *e;

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
	f->nents++;
	return 0;
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

static int
add_stray_cb(void *arg, const char *dir, const char *name)
{
	return add_stray(arg, dir, name);
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
		/* A symlink, FIFO or directory is never a job's file. */
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISREG(st.st_mode)) {
			rv = add_stray(f, rel, de->d_name);
			continue;
		}
		if (state == SPOOL_NEW)
			ok = parse_new_name(de->d_name, id, &e) == 0;
		else if (state == SPOOL_LEASED)
			ok = parse_leased_name(de->d_name, id, &v) == 0;
		else
			ok = strlen(de->d_name) <= SPOOL_ID_MAX &&
			    spool_valid_id(strcpy(id, de->d_name));
		rv = ok ? add_ent(f, strlen(id), rel, de->d_name) :
		    add_stray(f, rel, de->d_name);
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

	if (spool_audit_parse(line, len, &a) == -1 || a.id[0] == '\0')
		return 0;
	if (f->nkeys == f->capkeys) {
		f->capkeys = f->capkeys ? f->capkeys * 2 : 4096;
		if ((k = realloc(f->keys, f->capkeys * sizeof(*k))) == NULL)
			return -1;
		f->keys = k;
	}
	k = &f->keys[f->nkeys];
	k->idh = hash_id(a.id, strlen(a.id));
	k->t = a.time;
	if (f->nkeys == 0 || k->t < f->oldest)
		f->oldest = k->t;
	k->ev = a.event;
	k->tok = a.token;
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

/* The highest token the audit log names for the ID; 0 if none. */
static uint64_t
audit_max_tok(struct fsck *f, uint64_t idh)
{
	size_t lo = 0, hi = f->nkeys, mid;
	uint64_t max = 0;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (f->keys[mid].idh < idh)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < f->nkeys && f->keys[lo].idh == idh; lo++)
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
 * Replay the sidecar's records: each effective one must have its audit
 * line (those a crash kept from being written are appended, with repair).
 */
static void
check_audit(struct fsck *f, struct job *j, uint64_t idh, int lastvoid)
{
	const char *p = j->text, *end = j->text + j->textlen, *nl, *next;
	struct akey want;
	struct rec r, v;
	int effective;

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
}

/* One job: its sidecar, its files, its tokens, its audit lines. */
static int
check_job(struct fsck *f, const char *id, struct ent *ents, size_t n)
{
	struct spool *sp = f->sp;
	struct place pl;
	char where[NAME_MAX_SPOOL + 8];
	struct stat st;
	struct job j;
	struct rec v;
	uint64_t idh = hash_id(id, strlen(id)), amax;
	const char *rel;
	size_t i;
	int cut;

	if (job_read(sp, id, f->repair ? LOCK_EX : LOCK_SH, &j) == -1) {
		if (errno == ENOENT)
			return 0;	/* a stray sidecar name vanished */
		if (errno != EUCLEAN)
			return -1;
		problem(f, id, 0, "sidecar meta/%s is not a readable record "
		    "log (or not a regular file)", id);
		return 0;
	}
	if (job_locate(sp, &j) == -1) {
		if (errno != EUCLEAN)
			goto fail;
		problem(f, id, 0, "its file is not where its sidecar says "
		    "(%s), or is not a regular file", spool_state_name(j.cur.loc));
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
	if (f->repair && job_settle(sp, &j, &f->ab) == -1)
		goto fail;
	/* Every file of the job but the one its sidecar names is a stray. */
	where[0] = '\0';
	if (j.cur.loc != SPOOL_ABSENT && place_of(sp, id, &j.cur, &pl) == 0) {
		if (j.cur.loc == SPOOL_NEW) {
			memcpy(where, "new/", 4);
			(void)bucket_rel(where + 4, sizeof(where) - 4,
			    j.cur.eligible);
			(void)snprintf(where + strlen(where), sizeof(where) -
			    strlen(where), "/%s", pl.name);
		} else
			(void)snprintf(where, sizeof(where), "%s/%s",
			    spool_state_name(j.cur.loc), pl.name);
		place_done(&pl);
	} else if (j.cur.loc != SPOOL_ABSENT && errno != ENOENT)
		goto fail;	/* not knowing where it is, quarantine nothing */
	for (i = 0; i < n; i++) {
		rel = ENT_REL(f, &ents[i]);
		if (strcmp(rel, where) == 0 || fstatat(sp->dirfd, rel, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;	/* the job, or gone (settled) */
		if (f->repair && quarantine(f, rel) == -1)
			goto fail;
		problem(f, rel, f->repair, "a second file of job %s, "
		    "whose sidecar puts it %s%s%s", id, where[0] ? "at " :
		    "nowhere", where, f->repair ? " (quarantined)" : "");
	}
	amax = audit_max_tok(f, idh);
	if (amax > j.hi)
		problem(f, id, 0, "the audit log names token %" PRIu64 ", above "
		    "the sidecar's highest, %" PRIu64, amax, j.hi);
	check_audit(f, &j, idh, cut);
	job_close(&j);
	return 0;
fail:
	f->err = errno;
	job_close(&j);
	return -1;
}

/* tmp/: a file whose process is gone, or that is a day old, is left over. */
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
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		comma = strrchr(de->d_name, ',');
		pid = comma != NULL ? strtol(comma + 1, NULL, 10) : 0;
		alive = pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
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

/* The top directory holds only a spool's own names. */
static int
check_top(struct fsck *f, struct spool *sp)
{
	static const char *const ours[] = {
		".", "..", "format", "config", "next-expiry", "paused", "tmp",
		"new", "leased", "done", "dead", "meta", "audit", "quarantine",
		"hosts"
	};
	struct dirent *de;
	DIR *d;
	int i, known, e;

	if ((d = dir_list(sp->dirfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		for (known = 0, i = 0; i < NELEM(ours) && !known; i++)
			known = strcmp(de->d_name, ours[i]) == 0;
		if (!known)
			problem(f, de->d_name, 0, "not part of a spool (left "
			    "alone)");
	}
	e = errno;
	(void)closedir(d);	/* read-only */
	errno = e;
	return e != 0 ? -1 : 0;
}

int
spool_fsck(struct spool *sp, int repair,
    void (*say)(void *arg, const char *what, const char *problem, int fixed),
    void *arg)
{
	struct fsck f;
	size_t *metas = NULL, *m;
	size_t nmeta = 0, capmeta = 0, i, k, e0;
	const char *rel, *id;
	struct dirent *de;
	DIR *d;
	int c, e;

	memset(&f, 0, sizeof(f));
	f.sp = sp;
	f.repair = repair;
	f.say = say;
	f.arg = arg;
	if (check_top(&f, sp) == -1)
		return -1;
	if (bucket_walk_all(sp, scan_leaf, add_stray_cb, &f) == -1 ||
	    scan_dir(&f, sp->leasedfd, "leased", SPOOL_LEASED) == -1 ||
	    scan_dir(&f, sp->donefd, "done", SPOOL_DONE) == -1 ||
	    scan_dir(&f, sp->deadfd, "dead", SPOOL_DEAD) == -1 ||
	    spool_audit_scan(sp, index_line, &f) == -1)
		goto fail;
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
	/* Merge the sorted sidecars with the sorted job files. */
	for (i = 0, k = 0; i < nmeta || k < f.nents;) {
		e0 = k;
		id = i < nmeta ? f.names + metas[i] : NULL;
		if (k < f.nents && (id == NULL ||
		    cmp_ent_id(&f, &f.ents[k], id) < 0)) {
			/* Files of an ID with no sidecar: nobody's job. */
			while (k < f.nents && f.ents[k].idlen ==
			    f.ents[e0].idlen && memcmp(ENT_ID(&f, &f.ents[k]),
			    ENT_ID(&f, &f.ents[e0]), f.ents[e0].idlen) == 0)
				k++;
			for (; e0 < k; e0++) {
				rel = ENT_REL(&f, &f.ents[e0]);
				if (repair && quarantine(&f, rel) == -1)
					goto fail;
				problem(&f, rel, repair, "a job file with no "
				    "sidecar%s", repair ? " (quarantined)" : "");
			}
			continue;
		}
		while (k < f.nents && cmp_ent_id(&f, &f.ents[k], id) == 0)
			k++;
		if (check_job(&f, id, f.ents + e0, k - e0) == -1)
			goto fail;
		i++;
	}
	for (i = 0; i < f.nstrays; i++) {
		if (repair && quarantine(&f, f.strays[i]) == -1)
			goto fail;
		problem(&f, f.strays[i], repair, "not a job's name%s", repair ?
		    " (quarantined)" : "");
	}
	if (check_tmp(&f) == -1 || audit_flush(sp, &f.ab) == -1)
		goto fail;
	c = f.unfixed > 0;
	goto out;
fail:
	c = -1;
	if (f.err == 0)
		f.err = errno;
out:
	free(metas);
	free(f.names);
	for (i = 0; i < f.nstrays; i++)
		free(f.strays[i]);
	free(f.strays);
	free(f.ents);
	free(f.keys);
	abuf_free(&f.ab);
	if (c == -1)
		errno = f.err;
	return c;
}
