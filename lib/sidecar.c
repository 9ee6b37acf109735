/*
 * The sidecar, meta/ID: an append-only log of records, each holding the
 * event and the job's whole state after it.  The file is never replaced by
 * rename, so the flock(2) on it guards the job across all its transitions.
 *
 * A record is written and fsync'd before the rename it describes; until that
 * rename is done the record is void.  So on opening a job we check that its
 * file is where the last record says: if it is not, the record is void and
 * the job is where the one before it said (spool-layout.md, "Crashes").
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"


static int
add_finish(struct job *j, uint64_t tok, int out)
{
	char *p;
	int n;

	if ((p = realloc(j->finishes, j->nfinishes + 32)) == NULL)
		return -1;
	j->finishes = p;
	n = snprintf(p + j->nfinishes, 32, "%" PRIu64 " %d\n", tok, out);
	j->nfinishes += (size_t)n;
	return 0;
}

/* Drop the last entry: the finish that a void record made. */
static void
pop_finish(struct job *j)
{
	while (j->nfinishes > 0 && j->finishes[j->nfinishes - 1] == '\n')
		j->nfinishes--;
	while (j->nfinishes > 0 && j->finishes[j->nfinishes - 1] != '\n')
		j->nfinishes--;
}

/* Did token tok already finish this job with outcome out? */
int
job_finished(const struct job *j, uint64_t tok, int out)
{
	char want[32];
	const char *p, *end = j->finishes + j->nfinishes, *nl;
	int n;

	n = snprintf(want, sizeof(want), "%" PRIu64 " %d", tok, out);
	for (p = j->finishes; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if ((size_t)(nl - p) == (size_t)n && memcmp(p, want, n) == 0)
			return 1;
	}
	return 0;
}

/* Read every complete line and fold it into the job's state. */
int
fold_records(struct job *j, const char *buf, size_t len)
{
	const char *p = buf, *nl;
	struct rec r;
	int finish_last = 0;

	memset(&j->cur, 0, sizeof(j->cur));
	memset(&j->prev, 0, sizeof(j->prev));
	j->lastvoid = 0;
	while ((nl = memchr(p, '\n', len - (size_t)(p - buf))) != NULL) {
		if (rec_parse(p, (size_t)(nl - p), &r) == -1) {
			errno = EUCLEAN;
			return -1;
		}
		if (r.tok > j->hi)
			j->hi = r.tok;
		j->lastvoid = r.ev == SPOOL_EV_VOID;
		if (r.ev == SPOOL_EV_VOID) {
			if (finish_last)
				pop_finish(j);
			j->cur = j->prev;
			memset(&j->prev, 0, sizeof(j->prev));
			finish_last = 0;
		} else {
			j->prev = j->cur;
			j->cur = r;
			finish_last = r.out != 0;
			if (finish_last && add_finish(j, r.tok, r.out) == -1)
				return -1;
		}
		p = nl + 1;
	}
	j->valid = (size_t)(p - buf);
	j->size = len;
	j->finish_last = finish_last;
	return 0;
}

static int
unlink_place(struct spool *sp, const char *id, const struct rec *r)
{
	struct place p;
	int rv, again;

	if (place_of(sp, id, r, &p) == -1)
		return -1;
	while ((rv = sys_unlinkat(p.dirfd, p.name, 0)) == -1 &&
	    errno == ENOENT) {
		if ((again = place_again(sp, id, r, &p)) == -1)
			return -1;
		if (again == 0)
			break;
	}
	place_done(&p);
	return rv == -1 && errno != ENOENT ? -1 : 0;
}

/*
 * Is the file of a job whose only record is void in dead/ or leased/?  A
 * power cut can keep a claim's or a cancel's move and lose its record
 * (spool-layout.md, "Crashes"): the job is then not absent but damaged,
 * until spool-fsck --repair puts the file back.
 */
static int
moved_on(struct spool *sp, const char *id)
{
	char lid[SPOOL_ID_MAX + 1];
	struct dirent *de;
	struct stat st;
	uint64_t tok;
	struct dlist *d;
	int found = 0;

	if (fstatat(sp->deadfd, id, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	if (errno != ENOENT || (d = dir_list(sp->leasedfd)) == NULL)
		return -1;
	while (!found && (errno = 0, de = dir_next(d)) != NULL)
		found = parse_leased_name(de->d_name, lid, &tok) == 0 &&
		    strcmp(lid, id) == 0;
	if (!found && errno != 0) {
		dir_close(d);
		return -1;
	}
	dir_close(d);
	return found;
}

/*
 * The last record did not take effect: the job is where the one before
 * puts it.
 */
static void
void_last(struct job *j)
{
	j->voidtail = 1;
	if (j->finish_last)
		pop_finish(j);
	j->finish_last = 0;
	j->cur = j->prev;
	memset(&j->prev, 0, sizeof(j->prev));
}

/*
 * Is the name that r gives in a listing of its directory?  1 if it is, 0
 * if not, -1 on error.  A listing comes from the file system; a lookup of
 * a name may come from what this host's client holds (settle_shared).  The
 * directory is opened anew: a descriptor kept open may list what a client
 * read through it before.
 */
static int
listed(struct spool *sp, const char *id, const struct rec *r)
{
	struct place p;
	struct dirent *de;
	struct dlist *d = NULL;
	int found = 0, fd, e;

	if (place_of(sp, id, r, &p) == -1)
		return errno == ENOENT ? 0 : -1;
	fd = sys_openat(p.dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd == -1 || (d = dir_adopt(fd)) == NULL) {
		e = errno;
		place_done(&p);
		errno = e;
		return -1;
	}
	while (!found && (errno = 0, de = dir_next(d)) != NULL)
		found = strcmp(de->d_name, p.name) == 0;
	e = errno;
	dir_close(d);
	place_done(&p);
	if (!found && e != 0) {
		errno = e;
		return -1;
	}
	return found;
}

/*
 * Where is the job?  The last record took effect if the file is where it
 * says; if not, the record is void and the job is where the one before it
 * says (checked: EUCLEAN if the file is in neither place).  Changes
 * nothing on disk.
 */
int
job_locate(struct spool *sp, struct job *j)
{
	struct stat st;
	int r;

	j->voidtail = 0;
	if (j->cur.loc == SPOOL_ABSENT)
		return 0;
	if ((r = place_stat(sp, j->id, &j->cur, &st)) == -1)
		return -1;
	if (r == 1) {
		j->dev = st.st_dev;
		j->ino = st.st_ino;
		j->fmode = st.st_mode;
		j->fsize = st.st_size;
		return 0;
	}
	void_last(j);
	if (j->cur.loc != SPOOL_ABSENT) {
		if ((r = place_stat(sp, j->id, &j->cur, &st)) == -1)
			return -1;
		if (r == 0) {
			errno = EUCLEAN;	/* the file is nowhere */
			return -1;
		}
		j->dev = st.st_dev;
		j->ino = st.st_ino;
		j->fmode = st.st_mode;
		j->fsize = st.st_size;
	} else if ((r = moved_on(sp, j->id)) != 0) {
		if (r == 1)
			errno = EUCLEAN;	/* moved, its record lost */
		return -1;
	}
	return 0;
}

/* done/ and dead/ may hold many files; leased/ and a bucket, few. */
static int
big_dir(const struct rec *r)
{
	return r->loc == SPOOL_DONE || r->loc == SPOOL_DEAD;
}

/*
 * The job's one file found under the names of its last two records, on a
 * spool that several hosts share.  Either a move was cut short between
 * its link and its unlink, and the name before is a second name; or one
 * of the names is one that this host's client holds from before.
 *
 * A GlusterFS client finds a name it has seen, for a while after another
 * host moved the file on (spool-layout.md, "Several hosts"): a job
 * parked here, redriven from another host and parked here again seems
 * already in dead/ while its park is cut short.  Its link count may be a
 * moment old too: a listing on this host while another host's move had
 * both names made it 2.  Removing the name before on a count of 2 then
 * removed the job's last name.  So only listings decide, under the job's
 * lock, where no one else moves its file.  The last record's name listed:
 * the move happened, and the name before goes (a stale one is not there
 * to remove: ENOENT).  Not listed: the move did not happen, and the last
 * record is void.  Where the last name's directory is large and the one
 * before is not, that one is listed first: absent there, the file is at
 * the last record's name.
 */
static int
settle_shared(struct spool *sp, struct job *j)
{
	int r;

	if (big_dir(&j->cur) && !big_dir(&j->prev) &&
	    (r = listed(sp, j->id, &j->prev)) != 1)
		return r;
	if ((r = listed(sp, j->id, &j->cur)) == -1)
		return -1;
	if (r == 1) {
		/* A stale name is not there to remove, nor to report. */
		if ((r = listed(sp, j->id, &j->prev)) == -1)
			return -1;
		if (r == 1)
			j->settled = SETTLED_NAME;
		return unlink_place(sp, j->id, &j->prev);
	}
	void_last(j);
	return 0;
}

/*
 * Locate the job and put right what an interrupted transition left besides
 * a void record: a second name from the link(2) fallback, or the previous
 * cycle's file in done/ after a new enqueue.  j->settled says which, for
 * spool-fsck to report.
 */
int
job_settle(struct spool *sp, struct job *j, struct abuf *ab)
{
	struct stat st;
	struct rec gone;
	int r;

	if (job_locate(sp, j) == -1)
		return -1;
	/* A purge is done once recorded: remove what it left. */
	if (j->cur.ev == SPOOL_EV_PURGE && j->prev.loc != SPOOL_ABSENT)
		return unlink_place(sp, j->id, &j->prev);
	if (j->voidtail || j->cur.loc == SPOOL_ABSENT ||
	    j->prev.loc == SPOOL_ABSENT || rec_same_place(&j->prev, &j->cur))
		return 0;
	if ((r = place_stat(sp, j->id, &j->prev, &st)) == -1)
		return errno == EUCLEAN ? 0 : -1;
	if (r == 0)
		return 0;
	if (st.st_ino == j->ino && st.st_dev == j->dev) {
		/* The link(2) fallback's second name, or a stale one. */
		if (sp->multi_host)
			return settle_shared(sp, j);
		j->settled = SETTLED_NAME;
		return unlink_place(sp, j->id, &j->prev);
	}
	if (j->prev.loc == SPOOL_DONE && j->cur.ev == SPOOL_EV_ENQUEUE) {
		/*
		 * The previous cycle's file: the enqueue of this cycle
		 * removes it once the new one's name is durable, and makes
		 * the removal durable at once so that a power cut can neither
		 * leave the job nowhere nor bring the old file back.
		 */
		gone = j->prev;
		j->settled = SETTLED_CYCLE;
		if ((!j->cur_synced && sync_place(sp, &j->cur) == -1) ||
		    unlink_place(sp, j->id, &j->prev) == -1 ||
		    sync_dir(sp->donefd, ".") == -1)
			return -1;
		gone.t = now_ms();
		if (ab != NULL && audit_add(ab, sp, j->id, &gone,
		    SPOOL_EV_SUPERSEDE) == -1)
			return -1;
	}
	/* Any other second file is not ours to judge: spool-fsck. */
	return 0;
}

/*
 * Read the sidecar j->fd (whose fstat is st) to its end and fold it; the
 * text stays in j->text.  The size from fstat is only a first guess: on a
 * shared file system the attributes a client caches may lag what another
 * host wrote, so the file is read until read says it ends, and the next
 * record is written at the size read (job_write), never at an offset the
 * client believes is the end.
 */
static int
read_fold(struct job *j, const struct stat *st)
{
	size_t cap, len = 0;
	ssize_t got;
	char *p;

	if (!S_ISREG(st->st_mode)) {
		errno = EUCLEAN;
		return -1;
	}
	/* Room to see EOF; more only if the file grew since the fstat. */
	cap = (size_t)st->st_size + 128;
	if ((j->text = malloc(cap)) == NULL)
		return -1;
	for (;;) {
		got = sys_pread(j->fd, j->text + len, cap - len - 1,
		    (off_t)len);
		if (got == -1)
			return -1;
		if (got == 0)
			break;
		len += (size_t)got;
		if (cap - len - 1 == 0) {
			if ((p = realloc(j->text, cap * 2)) == NULL)
				return -1;
			j->text = p;
			cap *= 2;
		}
	}
	j->textlen = len;
	return fold_records(j, j->text, j->textlen);
}

/*
 * Zero a job, all but the bytes of its pending buffer: a batch holds a
 * job for each of its items, and pages of buffer never written are never
 * paid for (256 of them made spool-enqueue's peak RSS 0.4 MiB larger).
 */
static void
job_clear(struct job *j, const char *id)
{
	memset(j, 0, offsetof(struct job, pending));
	strcpy(j->id, id);
}

/*
 * Is the sidecar we locked (whose fstat is a) still meta/ID?  A purge
 * removes the name of a purged job's sidecar under its lock (format 2): a
 * process that waited for that lock holds a file nobody will look at
 * again, and must open the name anew.  1 if it is, 0 if not, -1 on error.
 */
static int
still_named(struct spool *sp, const struct job *j, const struct stat *a)
{
	struct stat b;

	if (fstatat(sp->metafd, j->id, &b, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	return a->st_ino == b.st_ino && a->st_dev == b.st_dev;
}

/*
 * Open, lock and read the sidecar of id, and settle the job.  create makes
 * the sidecar if there is none (enqueue); otherwise ENOENT means no job.
 * nonblock: EWOULDBLOCK if another process holds the job (claimers skip it).
 */
int
job_open(struct spool *sp, const char *id, int create, int nonblock,
    struct job *j, struct abuf *ab)
{
	const int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
	struct stat st;
	int e, named;

again:
	job_clear(j, id);
	/* An enqueue's ID is most often new: make its sidecar first. */
	j->fd = -1;
	if (create) {
		j->fd = sys_openat(sp->metafd, id, flags | O_CREAT | O_EXCL,
		    0666);
		j->created = j->fd != -1;
	}
	if (j->fd == -1 && (!create || errno == EEXIST))
		j->fd = sys_openat(sp->metafd, id, flags, 0);
	if (j->fd == -1) {
		if (errno == ELOOP)
			errno = EUCLEAN;	/* a symlink is not a sidecar */
		return -1;
	}
	if ((j->created && file_mode(sp, j->fd, 0660) == -1) ||
	    lock_fd(sp, j->fd, nonblock) == -1 || fstat(j->fd, &st) == -1 ||
	    (named = still_named(sp, j, &st)) == -1)
		goto fail;
	if (!named) {
		job_close(j);
		goto again;
	}
	if (read_fold(j, &st) == -1 || job_settle(sp, j, ab) == -1)
		goto fail;
	return 0;
fail:
	e = errno;
	job_close(j);
	errno = e;
	return -1;
}

/*
 * Read a job's sidecar without settling it.  lock: 0 (for readers that must
 * not wait on a job: what they see may be a moment old), LOCK_SH (a
 * consistent look), or LOCK_EX (to append, as spool-fsck --repair does).
 */
int
job_read(struct spool *sp, const char *id, int lock, struct job *j)
{
	struct stat st;
	int e, named = 1;

again:
	job_clear(j, id);
	j->fd = sys_openat(sp->metafd, id, (lock == LOCK_EX ? O_RDWR :
	    O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
	if (j->fd == -1) {
		if (errno == ELOOP)
			errno = EUCLEAN;	/* a symlink is not a sidecar */
		return -1;
	}
	/*
	 * Only a writer must hold the sidecar that is meta/ID: a reader of
	 * one a purge just unlinked reads its purge record, and says the
	 * job is gone, which it is.
	 */
	if ((lock != 0 && sys_flock(sp, j->fd, lock) == -1) ||
	    fstat(j->fd, &st) == -1 || (lock == LOCK_EX &&
	    (named = still_named(sp, j, &st)) == -1))
		goto fail;
	if (!named) {
		job_close(j);
		goto again;
	}
	if (read_fold(j, &st) == -1)
		goto fail;
	return 0;
fail:
	e = errno;
	job_close(j);
	errno = e;
	return -1;
}

int
job_peek(struct spool *sp, const char *id, struct job *j)
{
	return job_read(sp, id, 0, j);
}

void
job_close(struct job *j)
{
	/* Closing drops the lock; the sidecar was fsync'd on commit. */
	if (j->fd != -1)
		(void)close_fd(j->fd);
	j->fd = -1;
	free(j->finishes);
	j->finishes = NULL;
	j->nfinishes = 0;
	free(j->text);
	j->text = NULL;
}

/* A new record based on the job's current state. */
void
rec_next(const struct job *j, struct rec *r, int ev, int64_t now)
{
	*r = j->cur;		/* tok: the current lease's, not a burnt one */
	r->t = now;
	r->ev = ev;
	r->owner[0] = r->by[0] = r->note[0] = r->detail[0] = '\0';
	r->until = 0;
	r->prev = 0;
	r->out = r->cls = r->reason = 0;
}

/* Queue r to be appended; it becomes the job's state.  See job_commit. */
int
job_record(struct job *j, const struct rec *r)
{
	struct rec v;
	size_t n;

	if (j->voidtail) {
		memset(&v, 0, sizeof(v));
		v.t = r->t;
		v.ev = SPOOL_EV_VOID;
		v.tok = j->hi;
		n = rec_format(j->pending + j->npending,
		    sizeof(j->pending) - j->npending - 1, &v);
		if (n == 0)
			goto toolong;
		j->npending += n;
		j->pending[j->npending++] = '\n';
		j->voidtail = 0;
	}
	n = rec_format(j->pending + j->npending,
	    sizeof(j->pending) - j->npending - 1, r);
	if (n == 0)
		goto toolong;
	j->npending += n;
	j->pending[j->npending++] = '\n';
	j->prev = j->cur;
	j->cur = *r;
	if (r->tok > j->hi)
		j->hi = r->tok;
	j->finish_last = r->out != 0;
	if (j->finish_last && add_finish(j, r->tok, r->out) == -1)
		return -1;
	return 0;
toolong:
	errno = EOVERFLOW;
	return -1;
}

/*
 * Append the queued records in one write, not yet synced (a batch syncs
 * its sidecars side by side).  A line that a crash cut short (the file does
 * not end in a newline) is cut off first.
 */
int
job_write(struct job *j)
{
	if (j->npending == 0)
		return 0;
	if (j->valid < j->size) {
		if (sys_ftruncate(j->fd, (off_t)j->valid) == -1)
			return -1;
		j->size = j->valid;
	}
	if (write_at(j->fd, j->pending, j->npending, (off_t)j->size) == -1)
		return -1;
	crash_point("record-written");
	j->size += j->npending;
	j->valid = j->size;
	j->written = j->npending;
	j->npending = 0;
	return 0;
}

/* Write and fdatasync: for a call that changes one job. */
int
job_commit(struct job *j)
{
	if (job_write(j) == -1 || (j->written != 0 && sync_fd(j->fd) == -1))
		return -1;
	j->written = 0;
	return 0;
}

/*
 * A move refused EEXIST on a shared spool: is its target only a name that
 * this host's client holds from before, for this very file (a job
 * redriven from dead/ and parked again; see settle_shared)?  If the name
 * is not in its directory's listing, it is: no other process makes a name
 * of this job while we hold its lock.  An unlink of it is then answered
 * ENOENT, and the client lets go of it, so that the move may be made
 * again.  1 if so; 0 if the target is real (EEXIST stands); -1 on error.
 */
static int
stale_target(struct spool *sp, struct job *j, const struct place *from,
    int todir, const char *to)
{
	struct stat a, b;
	int r;

	if (fstatat(from->dirfd, from->name, &a, AT_SYMLINK_NOFOLLOW) == -1 ||
	    fstatat(todir, to, &b, AT_SYMLINK_NOFOLLOW) == -1 ||
	    a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return 0;
	if ((r = listed(sp, j->id, &j->cur)) != 0)
		return r == 1 ? 0 : -1;
	if (sys_unlinkat(todir, to, 0) == -1 && errno != ENOENT)
		return -1;
	return 1;
}

/*
 * Move the job's file from where the record before the last put it to
 * where the last record puts it (a purge: remove it).  The record must be
 * durable first.  The directory moved into goes into ds, to be synced.
 */
int
job_move(struct spool *sp, struct job *j, struct dirset *ds)
{
	static const char *const dirs[] = { NULL, NULL, "leased", "done",
	    "dead" };
	const int fds[] = { -1, -1, sp->leasedfd, sp->donefd, sp->deadfd };
	struct place from, to;
	int rv, again = 0, stale = 0;

	if (place_of(sp, j->id, &j->prev, &from) == -1)
		return -1;
move:
	if (j->cur.loc == SPOOL_NEW)
		rv = publish_new(sp, from.dirfd, from.name, j->id,
		    j->cur.eligible, ds);
	else if (j->cur.loc == SPOOL_ABSENT)
		rv = sys_unlinkat(from.dirfd, from.name, 0) == -1 ||
		    dirset_add(ds, dirs[j->prev.loc]) == -1 ? -1 : 0;
	else if (place_of(sp, j->id, &j->cur, &to) == -1)
		rv = -1;
	else if ((rv = move_noreplace(from.dirfd, from.name, fds[j->cur.loc],
	    to.name)) == 0)
		rv = dirset_add(ds, dirs[j->cur.loc]);
	else if (errno == EEXIST && sp->multi_host && !stale++) {
		if ((rv = stale_target(sp, j, &from, fds[j->cur.loc],
		    to.name)) == 1)
			goto move;
		if (rv == 0) {
			errno = EEXIST;		/* a real name: refused */
			rv = -1;
		}
	}
	/* From a leaf kept open and pruned since: look for it again. */
	if (rv == -1 && errno == ENOENT && !again &&
	    (again = place_again(sp, j->id, &j->prev, &from)) == 1)
		goto move;
	place_done(&from);
	return rv;
}
