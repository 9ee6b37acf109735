/*
 * What spool-fsck --repair does to a job that needs it, as "Crashes" in
 * spool-layout.md and EDITING THE SPOOL BY HAND in spool(7) say: a file
 * moved by hand is put back or adopted, a lost sidecar is rebuilt from
 * the file and the audit log, a payload a power cut left in tmp/ is
 * published, and a file it cannot place goes to quarantine/, never away.
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

/* Move a file that is no job's, or not where its job is, to quarantine/. */
int
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

/* None of the job's files found by the scan is there any more. */
int
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
 * A restore brought back a job in leased/ or dead/: since the backup its
 * delivery may have ended, or a person may have redriven or dropped it.
 * A restore record says so: the side effect may have happened (a redrive
 * needs --reconciled), and a lease ends now, to be taken over.
 */
int
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
int
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
 * until a person records its removal.  Several files: a person chooses.
 */
/*
 * The one file of the job's name found elsewhere than where, its index in
 * ents; or, where none or several are, the problem said and -1 (*said 1).
 * Several names of one inode are one file: a power cut split two renames
 * of it (spool-layout.md, "Crashes").  The name at prev, where the record
 * before put it, is kept; a repair removes the others.
 */
static int
only_other(struct fsck *f, struct job *j, const char *where,
    const char *prev, struct ent *ents, size_t n, int *said)
{
	const char *state = spool_state_name(j->cur.loc);
	struct stat st;
	dev_t dev = 0;
	ino_t ino = 0;
	size_t i, found = 0, at = 0;
	int one = 1;

	*said = 1;
	for (i = 0; i < n; i++)
		if (strcmp(ENT_REL(f, &ents[i]), where) != 0 && fstatat(
		    f->sp->dirfd, ENT_REL(f, &ents[i]), &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
			if (found == 0) {
				dev = st.st_dev;
				ino = st.st_ino;
			}
			one &= st.st_dev == dev && st.st_ino == ino;
			if (found++ == 0 ||
			    strcmp(ENT_REL(f, &ents[i]), prev) == 0)
				at = i;
		}
	if (found > 1 && one) {
		for (i = 0; f->repair && i < n; i++)
			if (i != at && strcmp(ENT_REL(f, &ents[i]), where) != 0 &&
			    unlinkat(f->sp->dirfd, ENT_REL(f, &ents[i]), 0) == -1 &&
			    errno != ENOENT) {
				*said = 0;	/* an error, not a finding */
				return -1;
			}
		problem(f, j->id, f->repair, "its one file is under %zu names "
		    "(a power cut split its renames): %s %s", found,
		    f->repair ? "kept" : "spool-fsck --repair keeps",
		    ENT_REL(f, &ents[at]));
		found = 1;
	}
	if (found == 0)
		problem(f, j->id, 0, "its file is missing from %s/: if it was "
		    "removed on purpose, record that with spool-purge --missing "
		    "--by WHO --note TICKET %s", state, j->id);
	else if (found > 1)
		problem(f, j->id, 0, "its file is missing from %s/, and %zu "
		    "files of its name are elsewhere: move the right one back to "
		    "%s, then spool-fsck --repair", state, found, where);
	else {
		*said = 0;
		return (int)at;
	}
	return -1;
}

int
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
	const char *rel, *why = NULL, *state = spool_state_name(j->cur.loc);
	char prev[NAME_MAX_SPOOL + 8];
	uint64_t idh = hash_id(j->id, strlen(j->id));
	enum hand how = PUT_BACK;
	int i, lost, said;

	/*
	 * Where the record before put it: the move was lost, not made by
	 * hand (a power cut kept the record and its line, not the move):
	 * the move is made again.  An enqueue's previous place holds the
	 * previous cycle's file.
	 */
	if (where_of(f->sp, j->id, &j->prev, prev, sizeof(prev)) == -1)
		return -1;
	if ((i = only_other(f, j, where, prev, ents, n, &said)) == -1)
		return said ? 0 : -1;
	rel = ENT_REL(f, &ents[i]);
	lost = j->cur.ev != SPOOL_EV_ENQUEUE && strcmp(rel, prev) == 0;
	if (!lost && meant(f, j, rel, ents[i].state, &how, &why) == -1)
		return -1;
	/*
	 * The records before an adoption took effect; so does the last one
	 * once its file is put back (an adoption cut short after its record
	 * leaves one): each needs its audit line, before the adoption's.
	 */
	if (f->repair && ((how != PUT_BACK && check_audit(f, j, idh, 0) == -1) ||
	    (how == PUT_BACK ? put_back(f, j, rel) : adopt(f, j, rel, how)) ==
	    -1))
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
	if (f->repair && how == PUT_BACK && check_audit(f, j, idh, 0) == -1)
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
int
publish_cut(struct fsck *f, struct job *j)
{
	char name[NAME_MAX_SPOOL], idc[SPOOL_ID_MAX + 2];
	struct dirset ds = { NULL, 0 };
	struct dirent *de;
	uint64_t size, sum;
	char **names;
	size_t n = 0;
	struct dlist *d;
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
	dir_close(d);
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
		/* A claim's actor is its owner: a line naming any other
		   text is not the library's, and names no holder. */
		if (h.claim.event != SPOOL_EV_NONE &&
		    spool_valid_owner(h.claim.actor))
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

/*
 * The files of id, whose sidecar is lost, empty or unreadable (held: the
 * empty one, open and locked; else NULL).  One file, with a name of its
 * state's form, of an ID the audit log knows: a job whose sidecar is
 * made again.  Otherwise no job owns it for sure (a file dropped in by
 * hand, several files of one ID): a person chooses, and each file waits
 * in quarantine/ with the command that makes it a job.
 */
int
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
int
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
