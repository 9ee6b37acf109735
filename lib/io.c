/*
 * System calls the way the spool needs them: EINTR retried (never for
 * close), short writes completed, listings that start at the first entry,
 * locks whose wait is bounded in multi-host mode, modes for group
 * spools, and the one no-replace move that every state change goes
 * through.  Nothing here knows what a job is.
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct spool_counters counters;

void
spool_get_counters(struct spool_counters *c)
{
	c->fsyncs = __atomic_load_n(&counters.fsyncs, __ATOMIC_RELAXED);
	c->renames = __atomic_load_n(&counters.renames, __ATOMIC_RELAXED);
}

ssize_t
read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = read(fd, (char *)buf + got, n - got);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* A small file of ours, whole, NUL-ended: EBADMSG if it does not fit. */
int
read_small(int dirfd, const char *name, char *buf, size_t size)
{
	ssize_t n;
	int fd, e;

	fd = sys_openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK, 0);
	if (fd == -1)
		return -1;
	n = read_full(fd, buf, size - 1);
	e = errno;
	(void)close_fd(fd);	/* read-only */
	if (n == -1) {
		errno = e;
		return -1;
	}
	if ((size_t)n == size - 1) {
		errno = EBADMSG;	/* longer than any file of ours */
		return -1;
	}
	buf[n] = '\0';
	return 0;
}


/*
 * After a failure, try again?  After EINTR, yes.  After ENOSPC or EDQUOT,
 * if the operation may draw on the spool's reserve and some was given
 * back (room.c).
 */
static int
again(void)
{
	return errno == EINTR || ((errno == ENOSPC || errno == EDQUOT) &&
	    room_give() == 0);
}

/* A write that writes nothing is a full disk (as git's write_in_full). */
int
write_all(int fd, const void *buf, size_t n)
{
	return write_at(fd, buf, n, -1);
}

/* The same at offset off (pwrite), or at the file offset when off is -1. */
int
write_at(int fd, const void *buf, size_t n, off_t off)
{
	const char *p = buf;
	ssize_t w;

	while (n > 0) {
		w = off == -1 ? write(fd, p, n) : pwrite(fd, p, n, off);
		if (w == 0)
			errno = ENOSPC;
		/*
		 * An append cut short is not finished after a give: another
		 * process may append in between, inside our line.
		 */
		if (w <= 0) {
			if (off != -1 || p == buf ? again() : errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		if (off != -1)
			off += w;
	}
	return 0;
}

/*
 * close(2) is not retried: on Linux the descriptor is gone even when it
 * reports EINTR, and a retry could close a descriptor another thread just
 * opened.  EINTR is not an error for us either, and leaves errno as it was
 * (callers close on their way out of a failure).
 */
int
close_fd(int fd)
{
	int e = errno;

	if (close(fd) == -1) {
		if (errno != EINTR)
			return -1;
		errno = e;
	}
	return 0;
}

/*
 * The system calls the spool makes, again after EINTR: a handler installed
 * without SA_RESTART, or a FUSE or network file system, can interrupt any
 * of them.  Those that may need room are tried again after a full disk
 * too, while the reserve gives (again).  errno is that of the last
 * failure.  read, write and the syncs have loops of their own above;
 * close(2) is never retried (close_fd).
 */
int
sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd;

	do
		fd = openat(dirfd, path, flags, mode);
	while (fd == -1 && ((flags & O_CREAT) ? again() : errno == EINTR));
	return fd;
}

ssize_t
sys_pread(int fd, void *buf, size_t n, off_t off)
{
	ssize_t r;

	do
		r = pread(fd, buf, n, off);
	while (r == -1 && errno == EINTR);
	return r;
}

int
sys_ftruncate(int fd, off_t len)
{
	int r;

	do
		r = ftruncate(fd, len);
	while (r == -1 && errno == EINTR);
	return r;
}

int
sys_renameat(int fromfd, const char *from, int tofd, const char *to,
    unsigned flags)
{
	int r;

	do
		r = flags != 0 ? renameat2(fromfd, from, tofd, to, flags) :
		    renameat(fromfd, from, tofd, to);
	while (r == -1 && again());
	return r;
}

int
sys_unlinkat(int dirfd, const char *path, int flags)
{
	int r;

	do
		r = unlinkat(dirfd, path, flags);
	while (r == -1 && errno == EINTR);
	return r;
}

int
sys_mkdirat(int dirfd, const char *path, mode_t mode)
{
	int r;

	do
		r = mkdirat(dirfd, path, mode);
	while (r == -1 && again());
	return r;
}

static int
flock_once(int fd, int op)
{
	int r;

	do
		r = flock(fd, op);
	while (r == -1 && errno == EINTR);
	return r;
}

/*
 * A lock that has to wait waits for ever, but in multi-host mode, where a
 * handle's wait is bounded (sp->lock_wait_ms, set by hosts.c): there, a
 * lock can stay held with no process left to let it go (spool-layout.md,
 * "Several hosts"), and a command must fail rather than wait for ever.  A
 * bounded wait never queues at the file system: it asks with LOCK_NB, and
 * again after a pause that doubles up to LOCK_PAUSE_MAX_MS.  The bound is
 * the handle's: another spool the process has open keeps its own.
 */
#define LOCK_PAUSE_MAX_MS	64

/* flock(2); a wait that outlasts sp's bound fails with ETIMEDOUT. */
int
sys_flock(const struct spool *sp, int fd, int op)
{
	struct timespec start, now, pause = { 0, 1000000 };

	if (sp->lock_wait_ms < 0 || (op & (LOCK_NB | LOCK_UN)) != 0)
		return flock_once(fd, op);
	(void)clock_gettime(CLOCK_MONOTONIC, &start);	/* cannot fail */
	while (flock_once(fd, op | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK)
			return -1;
		(void)clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 +
		    (now.tv_nsec - start.tv_nsec) / 1000000 >=
		    sp->lock_wait_ms) {
			errno = ETIMEDOUT;
			return -1;
		}
		(void)nanosleep(&pause, NULL);	/* early on a signal: fine */
		if (pause.tv_nsec <= LOCK_PAUSE_MAX_MS * 1000000L / 2)
			pause.tv_nsec *= 2;
	}
	return 0;
}

/* An exclusive lock; nonblock: EWOULDBLOCK if another process has it. */
int
lock_fd(const struct spool *sp, int fd, int nonblock)
{
	return sys_flock(sp, fd, LOCK_EX | (nonblock ? LOCK_NB : 0));
}

/*
 * Move a name without ever replacing another file (spool-layout.md,
 * "Transitions").  renameat2 with RENAME_NOREPLACE where the file system
 * has it.  Elsewhere (GlusterFS, NFS and ceph-fuse answer EINVAL) link(2)
 * onto the target, then unlink(2) of the source: link never replaces, and
 * it never goes through ceph-fuse's rename, which can leave the target's
 * name waiting for ever after a lost race.  Where a link is refused
 * (fs.protected_hardlinks forbids linking another user's read-only job
 * file, which is every job of a group spool; a file system without hard
 * links), a check that the target is absent, then rename(2): every name a
 * job's file is moved to is made only by a process holding that job's
 * sidecar lock, which the caller holds, so nothing can create the target
 * between the two.  A test may force the fallbacks (hook_no_noreplace)
 * so that the tests cover them.
 */
int
move_noreplace(int fromfd, const char *from, int tofd, const char *to)
{
	static int fallback = -1;
	struct stat st;
	int r;

	if (fallback == -1)
		fallback = hook_no_noreplace();
	if (!fallback) {
		if (sys_renameat(fromfd, from, tofd, to,
		    RENAME_NOREPLACE) == 0)
			goto moved;
		if (errno != EINVAL && errno != ENOSYS)
			return -1;
		fallback = 1;
	}
	do
		r = linkat(fromfd, from, tofd, to, 0);
	while (r == -1 && again());
	if (r == 0) {
		crash_point("move-linked");
		/* The source's name is the job's second: see "Crashes". */
		if (sys_unlinkat(fromfd, from, 0) == -1 && errno != ENOENT)
			return -1;
		goto moved;
	}
	if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS &&
	    errno != EMLINK)
		return -1;
	if (fstatat(tofd, to, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		errno = EEXIST;
		return -1;
	}
	if (errno != ENOENT || sys_renameat(fromfd, from, tofd, to, 0) == -1)
		return -1;
moved:
	__atomic_fetch_add(&counters.renames, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Directories and files a shared spool's users can all write. */
int
mkdir_mode(struct spool *sp, int dirfd, const char *rel)
{
	if (sys_mkdirat(dirfd, rel, sp->group ? 02770 : 0777) == -1)
		return -1;
	/* The umask may have taken the group's write bit: give it back. */
	if (sp->group && fchmodat(dirfd, rel, 02770, 0) == -1)
		return -1;
	return 0;
}

int
file_mode(struct spool *sp, int fd, mode_t mode)
{
	if (!sp->group)
		return 0;
	return fchmod(fd, mode & 0770);
}

static int
cmp_ids(const void *a, const void *b, void *ids)
{
	const char **v = ids;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = strcmp(v[i], v[j]);

	return c != 0 ? c : (i > j) - (i < j);	/* stable */
}

/*
 * Every call that locks several jobs locks them in ID order, so two calls
 * never hold one job each while waiting for the other's.
 */
void
sort_by_id(size_t *order, size_t n, const char **ids)
{
	qsort_r(order, n, sizeof(*order), cmp_ids, ids);
}

/*
 * A listing straight from getdents64(2).  readdir(3) needs a DIR, and
 * fdopendir(3) checks its descriptor with fstat(2) and two fcntl(2)
 * calls; a dup(2) made that descriptor, closed after.  A claim's walk of
 * new/ lists every bucket it visits: five calls each.  On glibc for
 * 64-bit Linux, struct dirent is the kernel's record.
 */
_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64) &&
    offsetof(struct dirent, d_name) == offsetof(struct dirent64, d_name),
    "struct dirent is not getdents64's record");

struct dlist {
	int fd, own;
	size_t pos, len;
	char buf[32768];
};

static struct dlist *
dlist_new(int fd, int own)
{
	struct dlist *d;

	if ((d = malloc(sizeof(*d))) == NULL)
		return NULL;
	d->fd = fd;
	d->own = own;
	d->pos = d->len = 0;
	return d;
}

/*
 * A listing of the directory dirfd.  The spool keeps its directories open:
 * rewinding makes every listing of a long-lived process (spool-run) start
 * from the first entry.  dirfd stays open after dir_close.
 */
struct dlist *
dir_list(int dirfd)
{
	if (lseek(dirfd, 0, SEEK_SET) == -1)
		return NULL;
	return dlist_new(dirfd, 0);
}

/*
 * A listing of fd, a directory opened just now.  dir_close closes fd; so
 * does a failure here.
 */
struct dlist *
dir_adopt(int fd)
{
	struct dlist *d;

	if ((d = dlist_new(fd, 1)) == NULL)
		(void)close_fd(fd);	/* read-only; malloc's errno stays */
	return d;
}

/*
 * The next entry, again after EINTR, with errno 0 at the end of the
 * directory: a caller tells the end from a failure by errno alone.
 */
struct dirent *
dir_next(struct dlist *d)
{
	struct dirent *de;
	ssize_t r;

	errno = 0;
	if (d->pos >= d->len) {
		do
			r = getdents64(d->fd, d->buf, sizeof(d->buf));
		while (r == -1 && errno == EINTR);
		if (r <= 0) {
			/* A directory removed meanwhile lists as empty. */
			if (r == 0 || errno == ENOENT)
				errno = 0;
			return NULL;
		}
		d->len = (size_t)r;
		d->pos = 0;
	}
	de = (struct dirent *)(void *)(d->buf + d->pos);
	d->pos += de->d_reclen;
	return de;
}

/* The end of a listing; errno is kept. */
void
dir_close(struct dlist *d)
{
	int e = errno;

	if (d->own)
		(void)close_fd(d->fd);	/* read-only */
	free(d);
	errno = e;
}
