/*
 * The spool's own check: every invariant spool-layout.md states, read from
 * the directories, the sidecars and the audit logs.  This file walks the
 * spool and checks each job under its sidecar lock (shared; exclusive with
 * repair), so a check can run beside live commands; fsck_audit.c reads
 * the logs, and fsck_repair.c makes the repairs.  A repair completes or
 * rolls back what a crash interrupted, in the way "Crashes" says, and logs
 * it; a file it cannot place goes to quarantine/, never away.  Memory: one
 * entry per job file and per audit line (about 200 and 32 bytes).
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

#include "fsck.h"

/*
 * A name an NFS client gave a file it was asked to remove while one of
 * its processes still had it open (a "silly rename": ".nfs" and hex
 * digits).  The client removes it at the last close, or never if it
 * crashed.  It is no job's, and not the spool's to move or report: a
 * move would keep that file for ever (spool-layout.md, "Several hosts").
 */
static int
silly_renamed(const char *name)
{
	if (strncmp(name, ".nfs", 4) != 0 || name[4] == '\0')
		return 0;
	return strspn(name + 4, "0123456789abcdefABCDEF") == strlen(name + 4);
}

static int
add_stray(struct fsck *f, const char *dir, const char *name)
{
	char **s;

	if (silly_renamed(name))
		return 0;
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
	struct dlist *d;
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
	dir_close(d);
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
const char *
spool_payload_advice(enum spool_state state)
{
	static const char *const fix[] = {
		[SPOOL_ABSENT] = "run spool-fsck",
		[SPOOL_NEW] = "park it with spool-cancel, check it, then "
		    "spool-redrive --edited or spool-drop",
		[SPOOL_LEASED] = "park it with spool-cancel, check it, then "
		    "spool-redrive --edited or spool-drop",
		[SPOOL_DONE] = "it ran already; spool-purge removes it",
		[SPOOL_DEAD] = "check it, then spool-redrive --edited or "
		    "spool-drop"
	};

	return state >= SPOOL_ABSENT && state <= SPOOL_DEAD ? fix[state] :
	    fix[SPOOL_ABSENT];
}

static int
check_payload(struct fsck *f, struct job *j)
{
	struct place p;
	int fd = -1, ok, r = 0;

	if (j->cur.sum == 0 || j->cur.loc == SPOOL_ABSENT)
		return 0;
	if (place_of(f->sp, j->id, &j->cur, &p) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((ok = may_read(f, &p, &fd)) == -1 && errno == ENOENT &&
	    place_again(f->sp, j->id, &j->cur, &p) == 1)
		ok = may_read(f, &p, &fd);
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
		    j->fsize, j->cur.size, spool_payload_advice(j->cur.loc));
	else if (f->verify && (r = payload_matches(fd, &j->cur, 1)) == 0)
		problem(f, j->id, 0, "its payload is not the bytes its "
		    "checksum says: changed by hand, or damaged; %s",
		    spool_payload_advice(j->cur.loc));
	if (fd != -1)
		(void)close_fd(fd);	/* read-only */
	return r == -1 ? -1 : 0;
}

/*
 * The job's file is in neither place its last two records say, or its
 * last record is void though its line says the move happened (cur0 and
 * prev0: the records as read, before locating).  A payload a power cut
 * left in tmp/ is published; otherwise what settle_missing says is done.
 */
static int
check_missing(struct fsck *f, struct job *j, uint64_t idh,
    const struct rec *cur0, const struct rec *prev0, struct ent *ents,
    size_t n)
{
	char where[NAME_MAX_SPOOL + 8];
	int r;

	j->cur = *cur0;
	j->prev = *prev0;
	j->voidtail = 0;
	if ((r = publish_cut(f, j)) == -1)
		return -1;
	if (r == 0 && (where_of(f->sp, j->id, &j->cur, where,
	    sizeof(where)) == -1 || settle_missing(f, j, where, ents, n) == -1))
		return -1;
	return check_unhappened(f, j, idh, 0);
}

/* A last record whose move never happened: a repair marks it void. */
static int
check_cut(struct fsck *f, struct job *j)
{
	struct rec v;

	if (f->repair) {
		/* Roll back: a void record, as the next writer would. */
		memset(&v, 0, sizeof(v));
		v.t = now_ms();
		v.ev = SPOOL_EV_VOID;
		v.tok = j->hi;
		j->npending = rec_format(j->pending, sizeof(j->pending) - 1, &v);
		j->pending[j->npending++] = '\n';
		if (job_commit(j) == -1)
			return -1;
	}
	problem(f, j->id, f->repair, "its last transition was cut short "
	    "before its move%s", f->repair ? " (marked void)" : "");
	return 0;
}

/*
 * A purge cut short before it removed the sidecar (or before its unlink,
 * which settling just made): the sidecar goes once the purge's audit line
 * is on disk, as a purge does it.
 */
static int
check_purged(struct fsck *f, struct job *j, uint64_t idh, int cut)
{
	struct spool *sp = f->sp;

	if (check_audit(f, j, idh, cut) == -1 ||
	    (f->repair && (audit_flush(sp, &f->ab) == -1 ||
	    (sys_unlinkat(sp->metafd, j->id, 0) == -1 && errno != ENOENT))))
		return -1;
	f->forgot |= f->repair;
	problem(f, j->id, f->repair, "purged, but its sidecar is still in "
	    "meta/%s", f->repair ? " (removed)" : "");
	return 0;
}

/* Every file of the job but the one its sidecar names is a stray. */
static int
check_strays(struct fsck *f, struct job *j, struct ent *ents, size_t n)
{
	char where[NAME_MAX_SPOOL + 8], cycle[NAME_MAX_SPOOL + 8] = "";
	struct spool *sp = f->sp;
	const char *rel;
	struct stat st;
	size_t i;
	int listed = 0;

	if (where_of(sp, j->id, &j->cur, where, sizeof(where)) == -1)
		return -1;	/* not knowing where it is, quarantine nothing */
	/* A new cycle's enqueue removes the previous cycle's file last. */
	if (j->cur.ev == SPOOL_EV_ENQUEUE && j->prev.loc == SPOOL_DONE &&
	    where_of(sp, j->id, &j->prev, cycle, sizeof(cycle)) == -1)
		return -1;
	for (i = 0; i < n; i++)
		listed |= strcmp(ENT_REL(f, &ents[i]), where) == 0;
	for (i = 0; i < n; i++) {
		rel = ENT_REL(f, &ents[i]);
		if (strcmp(rel, where) == 0 || fstatat(sp->dirfd, rel, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;	/* the job, or gone (settled) */
		if (st.st_ino == j->ino && st.st_dev == j->dev) {
			/*
			 * The job's own file: a move cut short kept both.
			 * Unless the listing lacks the name the sidecar
			 * gives: then that name was found only through a
			 * client's stale entry (GlusterFS, see settle_shared
			 * in sidecar.c), and this is the file's one real
			 * name.
			 */
			if (!listed)
				continue;
			if (f->repair && sys_unlinkat(sp->dirfd, rel, 0) == -1 &&
			    errno != ENOENT)
				return -1;
			problem(f, rel, f->repair, "a second name of job %s's "
			    "file, left by a move cut short%s", j->id,
			    f->repair ? " (removed)" : "");
			continue;
		}
		if (strcmp(rel, cycle) == 0) {
			/* Settled by the repair's lock: see settled(). */
			problem(f, rel, 0, "the previous cycle's file of job "
			    "%s, left by an interrupted new cycle", j->id);
			continue;
		}
		if (f->repair && quarantine(f, rel) == -1)
			return -1;
		problem(f, rel, f->repair, "a second file of job %s, "
		    "whose sidecar puts it %s%s%s", j->id, where[0] ? "at " :
		    "nowhere", where, f->repair ? " (quarantined)" : "");
	}
	return 0;
}

/*
 * The rest of a job found where its records say: its tokens (a token the
 * sidecar lost is no danger in format 2 once the spool-wide counter is
 * above it, which check_tokens sees to), its payload, its strays and its
 * audit lines.
 */
static int
check_found(struct fsck *f, struct job *j, uint64_t idh, int cut,
    struct ent *ents, size_t n)
{
	uint64_t amax;

	if (f->restored && (j->cur.loc == SPOOL_LEASED || j->cur.loc ==
	    SPOOL_DEAD) && mark_restored(f, j) == -1)
		return -1;
	if (check_payload(f, j) == -1 || check_strays(f, j, ents, n) == -1)
		return -1;
	amax = audit_max_tok(f, idh);
	if (amax > j->hi && f->sp->format < 2)
		problem(f, j->id, 0, "the audit log names token %" PRIu64
		    ", above the sidecar's highest, %" PRIu64, amax, j->hi);
	if (check_audit(f, j, idh, cut) == -1 ||
	    check_unhappened(f, j, idh, cut) == -1)
		return -1;
	return 0;
}

/*
 * What a repair's job_settle removed, in the words the check without
 * repair uses for it (check_strays).
 */
static int
settled(struct fsck *f, const struct job *j)
{
	char rel[NAME_MAX_SPOOL + 8];

	if (j->settled == 0)
		return 0;
	if (where_of(f->sp, j->id, &j->prev, rel, sizeof(rel)) == -1)
		return -1;
	if (j->settled == SETTLED_NAME)
		problem(f, rel, 1, "a second name of job %s's file, left by a "
		    "move cut short (removed)", j->id);
	else
		problem(f, rel, 1, "the previous cycle's file of job %s, left "
		    "by an interrupted new cycle (removed)", j->id);
	return 0;
}

/* One job: its sidecar, its files, its tokens, its audit lines. */
static int
check_job(struct fsck *f, const char *id, struct ent *ents, size_t n)
{
	struct spool *sp = f->sp;
	struct job j;
	struct rec cur0, prev0;
	uint64_t idh = hash_id(id, strlen(id));
	int cut = 0, missing = 0, rv;

	if ((f->repair ? job_read(sp, id, LOCK_EX, &j) :
	    look_locked(sp, id, &j)) == -1) {
		if (errno == ENOENT)
			return 0;	/* a stray sidecar name vanished */
		return errno != EUCLEAN ? -1 : damaged_sidecar(f, id, ents, n);
	}
	/* Emptied (or torn before its first line): as good as lost. */
	if (j.valid == 0 && n > 0) {
		rv = orphans(f, id, ents, n, &j);
		job_close(&j);
		return rv;
	}
	if (j.hi > f->maxtok)
		f->maxtok = j.hi;
	if (j.hi > f->maxgiven)
		f->maxgiven = j.hi;
	cur0 = j.cur;
	prev0 = j.prev;
	if (job_locate(sp, &j) == -1) {
		if (errno != EUCLEAN)
			goto fail;
		missing = 1;	/* in neither place its last two records say */
	} else if (j.voidtail && record_logged(f, idh, &cur0))
		missing = 1;	/* it was there, and went */
	if (missing)
		rv = check_missing(f, &j, idh, &cur0, &prev0, ents, n);
	else if ((cut = j.voidtail) && check_cut(f, &j) == -1)
		rv = -1;
	else if (check_supersede(f, &j, idh) == -1 ||
	    (f->repair && (job_settle(sp, &j, &f->ab) == -1 ||
	    settled(f, &j) == -1)))
		rv = -1;
	else if (sp->format >= 2 && j.cur.ev == SPOOL_EV_PURGE && (n == 0 ||
	    (f->repair && all_gone(f, ents, n))))
		rv = check_purged(f, &j, idh, cut);
	else
		rv = check_found(f, &j, idh, cut, ents, n);
	if (rv == -1)
		goto fail;
	job_close(&j);
	return 0;
fail:
	f->err = errno;
	job_close(&j);
	return -1;
}

/* One name of "paused", into dst of SPOOL_ID_MAX + 1 bytes: "-" is none. */
static int
pause_name(const char *s, size_t len, char *dst)
{
	if (len == 1 && s[0] == '-') {
		dst[0] = '\0';
		return 0;
	}
	return pct_decode(s, len, dst, SPOOL_ID_MAX + 1) == 0 &&
	    spool_valid_note(dst) ? 0 : -1;
}

/*
 * Who paused, as "paused" says it: "BY NOTE\n", each percent-encoded as
 * the audit log has them, or "-".  Anything else names no one.
 */
static void
pause_names(const char *text, struct rec *r)
{
	const char *sp = strchr(text, ' '), *nl = NULL;

	if (sp == NULL || (nl = strchr(sp + 1, '\n')) == NULL ||
	    nl[1] != '\0' ||
	    pause_name(text, (size_t)(sp - text), r->by) == -1 ||
	    pause_name(sp + 1, (size_t)(nl - sp - 1), r->note) == -1)
		r->by[0] = r->note[0] = '\0';
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
	char text[2 * PCT_SIZE(SPOOL_ID_MAX) + 32];
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
		pause_names(text, &r);
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

/* Is name, of len bytes, a file that write_top_file writes? */
static int
top_file(const char *name, size_t len)
{
	static const char *const top[] = {
		"config", "format", "tokens", "paused"
	};
	size_t i;

	for (i = 0; i < NELEM(top); i++)
		if (strlen(top[i]) == len && memcmp(top[i], name, len) == 0)
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
	struct dlist *d;
	int alive;

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
			dir_close(d);
			return -1;
		}
		/*
		 * ID,PID.SEQ is an enqueue's payload; NAME,PID a file of the
		 * top directory that spool-init, spool-pause or a repair of
		 * the token counter was writing (write_top_file).
		 */
		if (comma != NULL && strchr(comma, '.') == NULL &&
		    top_file(de->d_name, (size_t)(comma - de->d_name)))
			problem(f, "tmp", f->repair, "%s: left by an "
			    "interrupted write of %.*s, never put in place%s",
			    de->d_name, (int)(comma - de->d_name), de->d_name,
			    f->repair ? " (removed)" : "");
		else
			problem(f, "tmp", f->repair, "%s: left by an "
			    "interrupted enqueue, never published%s",
			    de->d_name, f->repair ? " (removed)" : "");
	}
	dir_close(d);
	return errno != 0 ? -1 : 0;
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
		"quarantine", "hosts", "reserve", "slots"
	};
	struct dirent *de;
	struct dlist *d;
	int i, known;

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
			    "alone)", SPOOL_SAID_NOTE);
	}
	dir_close(d);
	return errno != 0 ? -1 : 0;
}

static int
cmp_lease(const void *a, const void *b)
{
	const struct spool_lease *x = a, *y = b;

	if (x->token != y->token)
		return x->token < y->token ? -1 : 1;
	return strcmp(x->id, y->id);
}

/*
 * Two leases in leased/ with one token: a token handed out twice (spool(7)
 * says never).  A repair cannot take a lease back from its worker: it says
 * what to do, and trusts the counter's last no more, so that no claim
 * repeats a token again.
 */
static int
check_shared_leases(struct fsck *f)
{
	struct spool_lease *l = NULL, *m;
	struct dirent *de;
	struct dlist *d;
	size_t i, k, n = 0, cap = 0;
	int rv = -1, shared = 0;

	if (f->sp->format < 2)
		return 0;
	if ((d = dir_list(f->sp->leasedfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			if ((m = realloc(l, cap * sizeof(*l))) == NULL)
				goto out;
			l = m;
		}
		memset(&l[n], 0, sizeof(l[n]));
		if (parse_leased_name(de->d_name, l[n].id, &l[n].token) == 0)
			n++;
	}
	if (errno != 0)
		goto out;
	if (n > 0)
		qsort(l, n, sizeof(*l), cmp_lease);
	for (i = 0; i + 1 < n; i = k) {
		for (k = i + 1; k < n && l[k].token == l[i].token; k++)
			;
		if (k - i < 2)
			continue;
		shared = 1;
		problem(f, "leased", 0, "%s and %s%s hold token %" PRIu64
		    ", handed out twice: spool-cancel all but one, then "
		    "spool-redrive them", l[i].id, l[i + 1].id, k - i > 2 ?
		    " and more" : "", l[i].token);
	}
	rv = shared && f->repair ? tokens_raise(f->sp, 0) : 0;
out:
	dir_close(d);
	free(l);
	return rv;
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
		if (f->repair && tokens_remake(sp, floor) == -1)
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
	} else if (strcmp(c.boot, "-") != 0 && f->maxgiven > c.last) {
		/* Its writer would take last + 1, a token given already. */
		if (f->repair && tokens_raise(sp, 0) == -1)
			return -1;
		problem(f, "tokens", f->repair, "the counter's last token, %"
		    PRIu64 ", is below token %" PRIu64 ", which the spool "
		    "names: a write of it was lost%s", c.last, f->maxgiven,
		    f->repair ? " (no host trusts it now)" : "");
	}
	if (check_shared_leases(f) == -1 || check_twice_given(f, c.from) == -1)
		return -1;
	return 0;
}

/*
 * 1: every job file of every state, and every audit line, indexed and
 * sorted; then every sidecar's name, sorted, into *metas.
 */
static int
walk_all(struct fsck *f, size_t **metas, size_t *nmeta)
{
	struct spool *sp = f->sp;
	size_t cap = 0, *m;
	struct dirent *de;
	struct dlist *d;

	if (bucket_walk_all(sp, scan_leaf, add_stray_cb, f) == -1 ||
	    scan_dir(f, sp->leasedfd, "leased", SPOOL_LEASED) == -1 ||
	    scan_dir(f, sp->donefd, "done", SPOOL_DONE) == -1 ||
	    scan_dir(f, sp->deadfd, "dead", SPOOL_DEAD) == -1 ||
	    audit_scan(sp, &f->mark, index_line, f) == -1)
		return -1;
	f->indexed = 1;
	if (f->nents > 0)	/* qsort and bsearch take no NULL */
		qsort_r(f->ents, f->nents, sizeof(*f->ents), cmp_ent, f);
	if (f->nkeys > 0)
		qsort(f->keys, f->nkeys, sizeof(*f->keys), cmp_key);
	if ((d = dir_list(sp->metafd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
		    strcmp(de->d_name, "..") == 0))
			continue;
		if (silly_renamed(de->d_name))
			continue;
		if (!spool_valid_id(de->d_name)) {
			problem(f, "meta", 0, "%s: not a job's sidecar",
			    de->d_name);
			continue;
		}
		if (*nmeta == cap) {
			cap = cap ? cap * 2 : 1024;
			if ((m = realloc(*metas, cap * sizeof(*m))) == NULL)
				goto fail;
			*metas = m;
		}
		if (add_name(f, de->d_name, NULL, &(*metas)[*nmeta]) == -1)
			goto fail;
		(*nmeta)++;
	}
	dir_close(d);
	if (errno != 0)
		return -1;	/* a sidecar unlisted would look missing */
	if (*nmeta > 0)
		qsort_r(*metas, *nmeta, sizeof(**metas), cmp_name, f);
	return 0;
fail:
	dir_close(d);
	return -1;
}

/*
 * 2: the sorted sidecars merged with the sorted job files: each job
 * checked, and the files of an ID with no sidecar (its sidecar lost)
 * handed to orphans.  Jobs come in ID order, their buckets in any: the
 * leaves are kept open.
 */
static int
check_all(struct fsck *f, const size_t *metas, size_t nmeta)
{
	char orphan[SPOOL_ID_MAX + 1];
	size_t i, k, e0;
	const char *id;
	int rv = 0;

	buckets_hold(f->sp);
	buckets_widen(f->sp);
	for (i = 0, k = 0; rv == 0 && (i < nmeta || k < f->nents);) {
		e0 = k;
		id = i < nmeta ? f->names + metas[i] : NULL;
		if (k < f->nents && (id == NULL ||
		    cmp_ent_id(f, &f->ents[k], id) < 0)) {
			while (k < f->nents && f->ents[k].idlen ==
			    f->ents[e0].idlen && memcmp(ENT_ID(f, &f->ents[k]),
			    ENT_ID(f, &f->ents[e0]), f->ents[e0].idlen) == 0)
				k++;
			memcpy(orphan, ENT_ID(f, &f->ents[e0]),
			    f->ents[e0].idlen);
			orphan[f->ents[e0].idlen] = '\0';
			rv = orphans(f, orphan, f->ents + e0, k - e0, NULL);
			continue;
		}
		while (k < f->nents && cmp_ent_id(f, &f->ents[k], id) == 0)
			k++;
		rv = check_job(f, id, f->ents + e0, k - e0);
		i++;
		tell(f->sp, "jobs", i, nmeta);
	}
	buckets_drop(f->sp);
	return rv;
}

/* 3: what is no job's, and what belongs to the spool as a whole. */
static int
check_rest(struct fsck *f)
{
	struct spool *sp = f->sp;
	size_t i;

	for (i = 0; i < f->nstrays; i++) {
		if (f->repair && quarantine(f, f->strays[i]) == -1)
			return -1;
		problem(f, f->strays[i], f->repair, "not a job's name%s",
		    f->repair ? " (quarantined)" : "");
	}
	if (settle_suspects(f) == -1 ||
	    check_tmp(f) == -1 || check_tokens(f) == -1 ||
	    check_pause(f) == -1 ||
	    (f->forgot && sync_dir(sp->metafd, ".") == -1) ||
	    audit_flush(sp, &f->ab) == -1)
		return -1;
	return 0;
}

static void
fsck_free(struct fsck *f)
{
	size_t i;

	free(f->names);
	for (i = 0; i < f->nstrays; i++)
		free(f->strays[i]);
	free(f->strays);
	for (i = 0; i < f->ncut; i++)
		free(f->cut[i]);
	free(f->cut);
	free(f->ents);
	free(f->keys);
	audit_mark_free(&f->mark);
	free(f->sus);
	free(f->bykey);
	abuf_free(&f->ab);
}

int
spool_fsck(struct spool *sp, int flags,
    void (*say)(void *arg, const char *what, const char *problem, int said),
    void *arg)
{
	DRAINING(sp);
	struct fsck f;
	size_t *metas = NULL, nmeta = 0;
	int c;

	memset(&f, 0, sizeof(f));
	f.sp = sp;
	f.repair = (flags & (SPOOL_FSCK_REPAIR | SPOOL_FSCK_RESTORED)) != 0;
	f.restored = (flags & SPOOL_FSCK_RESTORED) != 0;
	f.verify = (flags & SPOOL_FSCK_VERIFY) != 0;
	f.say = say;
	f.arg = arg;
	if (f.restored && sp->format < 2) {
		errno = EPROTO;		/* tokens counted per ID: upgrade first */
		return -1;
	}
	if (check_top(&f, sp) == -1)
		return -1;
	if (walk_all(&f, &metas, &nmeta) == -1 ||
	    check_all(&f, metas, nmeta) == -1 || check_rest(&f) == -1) {
		c = -1;
		if (f.err == 0)
			f.err = errno;
	} else
		c = f.unfixed > 0;
	free(metas);
	fsck_free(&f);
	if (c == -1)
		errno = f.err;
	return c;
}
