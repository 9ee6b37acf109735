/*
 * System calls the way the spool needs them: EINTR retried (never for
 * close), short writes completed, every fsync counted, the syncs of one
 * wait issued together (threads, then io_uring), and the one no-replace
 * move that every state change goes through.  Also most of the test hooks
 * (spool(7), ENVIRONMENT); hosts.c reads SPOOL_TEST_CLOCK.
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "internal.h"

struct spool_counters counters;

void
spool_get_counters(struct spool_counters *c)
{
	c->fsyncs = __atomic_load_n(&counters.fsyncs, __ATOMIC_RELAXED);
	c->renames = __atomic_load_n(&counters.renames, __ATOMIC_RELAXED);
}

/*
 * Milliseconds since the epoch.  SPOOL_TEST_NOW pins the clock so that the
 * tests can stand exactly on a lease's expiry; it is read on every call so a
 * test may move it between commands of one process's life.
 */
int64_t
now_ms(void)
{
	struct timespec ts;
	const char *s;
	char *end;
	long long v;

	if ((s = getenv("SPOOL_TEST_NOW")) != NULL && *s != '\0') {
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno == 0 && *end == '\0' && v >= 0)
			return v;
	}
	(void)clock_gettime(CLOCK_REALTIME, &ts);	/* cannot fail */
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
spool_now(void)
{
	return now_ms();
}

/* Does point[:n] in the variable var name this point, the n-th time? */
static int
point_hit(const char *var, const char *name, int *hits)
{
	const char *s, *colon;
	size_t len;
	int want = 1;

	if ((s = getenv(var)) == NULL)
		return 0;
	colon = strchr(s, ':');
	len = colon != NULL ? (size_t)(colon - s) : strlen(s);
	if (strlen(name) != len || strncmp(s, name, len) != 0)
		return 0;
	if (colon != NULL)
		want = atoi(colon + 1);
	return ++*hits == want;
}

/*
 * SPOOL_TEST_CRASH=point[:n] kills the process with SIGKILL the n-th time
 * (default the first) it reaches the named point: the crash tests walk every
 * point that spool-layout.md lists.  SPOOL_TEST_PAUSE=point[:n] stops it
 * there instead (SIGSTOP), so that a test can act on the spool from
 * another host before it goes on (SIGCONT).
 */
void
crash_point(const char *name)
{
	static int crashes, pauses;

	if (point_hit("SPOOL_TEST_PAUSE", name, &pauses))
		(void)raise(SIGSTOP);
	if (point_hit("SPOOL_TEST_CRASH", name, &crashes))
		(void)kill(getpid(), SIGKILL);
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
		if (w == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = ENOSPC;
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
 * SPOOL_TEST_SKIP_SYNC=N: the process's N-th sync (from 1, in the order
 * the calls are made) is not made but reported done, so that the power-cut
 * explorer (tests/powercut) can show what each sync is for.  While the
 * variable is set, psync() makes its syncs one after another in the order
 * given, so that N names the same sync in every run.  Unset, it costs one
 * getenv per process.
 */
static long
skip_sync_at(void)
{
	static long at = -1;
	const char *s;

	if (at == -1)
		at = (s = getenv("SPOOL_TEST_SKIP_SYNC")) != NULL ?
		    strtol(s, NULL, 10) : 0;
	return at;
}

/* sync(fd), again after EINTR, counted. */
static int
sync_with(int (*sync)(int), int fd)
{
	static long nth;
	int r;

	if (skip_sync_at() > 0 &&
	    __atomic_add_fetch(&nth, 1, __ATOMIC_RELAXED) == skip_sync_at())
		return 0;
	do
		r = sync(fd);
	while (r == -1 && errno == EINTR);
	if (r == 0)
		__atomic_fetch_add(&counters.fsyncs, 1, __ATOMIC_RELAXED);
	return r;
}

/* fdatasync: the spool's files only ever need their data and size. */
int
sync_fd(int fd)
{
	return sync_with(fdatasync, fd);
}

/*
 * fdatasyncs in flight: the disk and the journal overlap them.  Measured
 * here, 512 syncs of small files: 8 in flight cost 0.080 ms a sync, 32
 * cost 0.047 (ext4 without a journal; journaled, 0.246 and 0.102); 64 gain
 * no more.  The threads do nothing but wait, on small stacks.
 */
#define PSYNC_THREADS	32
#define PSYNC_STACK	(64 * 1024)

struct psync {
	const int *fds;
	int *errs;
	size_t n, files, next;	/* fds[files..n-1] are directories */
};

/*
 * A directory is fsync'd: fdatasync need not write a directory whose size
 * did not change (ext4 with a journal commits only for a change that
 * fdatasync must keep), and its new entry would not be durable.
 */
static int
sync_dirfd(int fd)
{
	return sync_with(fsync, fd);
}

static void *
psync_worker(void *arg)
{
	struct psync *p = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n)
		p->errs[i] = (i < p->files ? sync_fd(p->fds[i]) :
		    sync_dirfd(p->fds[i])) == -1 ? errno : 0;
	return NULL;
}

/* SPOOL_TEST_ variable name, read once: its number, or 0. */
static long
test_number(const char *name, long *cache)
{
	const char *s;

	if (*cache == -1)
		*cache = (s = getenv(name)) != NULL ? strtol(s, NULL, 10) : 0;
	return *cache;
}

/*
 * The syncs of one wait through io_uring (liburing), from this one thread:
 * the kernel runs them side by side.  A ring pays for itself over many
 * waits: its kernel workers outlive a wait, which threads do not; but its
 * set-up and the start of its workers cost a process more than threads
 * do for a wait or two (a command on one job makes one or two: here, a
 * spool-enqueue, spool-claim, spool-finish cycle took 10 to 15% longer
 * with a ring in each process).  So a handle's first RING_AFTER waits of
 * more than one sync are made by threads, and it makes its ring at the
 * next one; a child after fork(2) makes its own.  Where the kernel refuses
 * io_uring (a container's seccomp profile, kernel.io_uring_disabled) the
 * threads below go on, as they do with SPOOL_TEST_NO_URING=1, so that the
 * fault shim and strace, which see no sync a ring makes, see every one.
 * Test hooks of the ring itself, which make it at a handle's first wait
 * so that a command's syncs go through it: SPOOL_TEST_RING_FAIL=N makes
 * its N-th sync (from 1, in the order they complete) report EIO;
 * SPOOL_TEST_RING_LOG=FILE gets a line for each.
 */
#define RING_ENTRIES	256
#define RING_AFTER	2

/* Whether a ring's test hook is set: then the ring from the first wait. */
static int
ring_tested(void)
{
	static int tested = -1;

	if (tested == -1)
		tested = getenv("SPOOL_TEST_RING_FAIL") != NULL ||
		    getenv("SPOOL_TEST_RING_LOG") != NULL;
	return tested;
}

static struct io_uring *
ring_of(struct spool *sp)
{
	static long off = -1;
	unsigned workers[2] = { PSYNC_THREADS, 0 };
	struct io_uring *r = sp->ring;

	if (r != NULL && sp->ring_pid == getpid())
		return r;
	ring_free(sp);		/* a parent's, in a child: not ours */
	if (sp->ring_pid == -1 || test_number("SPOOL_TEST_NO_URING", &off))
		return NULL;
	if (sp->waits++ < RING_AFTER && !ring_tested())
		return NULL;	/* threads, for now */
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    io_uring_queue_init(RING_ENTRIES, r, 0) < 0) {
		free(r);
		sp->ring_pid = -1;	/* refused: threads from now on */
		return NULL;
	}
	/*
	 * The kernel's workers make the syncs; by default no more at once
	 * than 4 a CPU.  As many as the threads would: a batch's syncs
	 * overlap on the disk.
	 */
	(void)io_uring_register_iowq_max_workers(r, workers);
	sp->ring = r;
	sp->ring_pid = getpid();
	return r;
}

void
ring_free(struct spool *sp)
{
	if (sp->ring == NULL)
		return;
	io_uring_queue_exit(sp->ring);
	free(sp->ring);
	sp->ring = NULL;
	if (sp->ring_pid != -1)
		sp->ring_pid = 0;
}

static void
ring_done(size_t i, int res, int *errs)
{
	static long failat = -1, nth;
	static int logfd = -2;
	const char *s;
	char line[32];
	int n;

	if (test_number("SPOOL_TEST_RING_FAIL", &failat) > 0 &&
	    ++nth == failat)
		res = -EIO;
	if (logfd == -2)
		logfd = (s = getenv("SPOOL_TEST_RING_LOG")) != NULL ?
		    open(s, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
	if (logfd >= 0 && (n = snprintf(line, sizeof(line), "sync %d\n",
	    res)) > 0)
		(void)write_all(logfd, line, (size_t)n);
	errs[i] = res < 0 ? -res : 0;
	if (res == 0)
		__atomic_fetch_add(&counters.fsyncs, 1, __ATOMIC_RELAXED);
}

/* One completion: a sync the ring could not make is made here. */
static void
ring_reap(struct io_uring_cqe *cqe, const int *fds, size_t nfiles,
    int *errs)
{
	size_t k = (size_t)(uintptr_t)io_uring_cqe_get_data(cqe);
	int res = cqe->res;

	/*
	 * Interrupted, or cancelled where the kernel could not start a
	 * worker (a container at its limit of processes): not the disk's
	 * answer, so ask again from this thread.
	 */
	if (res == -EINTR || res == -ECANCELED || res == -EAGAIN)
		res = (k < nfiles ? sync_fd(fds[k]) : sync_dirfd(fds[k])) ==
		    -1 ? -errno : 0;
	ring_done(k, res, errs);
}

/*
 * fds[] through the ring, up to RING_ENTRIES in flight, each completion
 * making room for the next; the last ndirs are directories (fsync), the
 * others files (fdatasync).  How many it submitted, each with its answer
 * in errs[]: all of them, or, where the ring failed and is given up, the
 * ones before the failure, whose answers it waited for (a second sync of
 * a descriptor would not report an error the first one took).
 */
static size_t
ring_sync(struct spool *sp, struct io_uring *r, const int *fds, size_t n,
    size_t ndirs, int *errs)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	size_t next = 0, submitted = 0, done = 0, k;
	int ret;

	while (done < n) {
		for (; next < n && next - done < RING_ENTRIES; next++) {
			sqe = io_uring_get_sqe(r);
			io_uring_prep_fsync(sqe, fds[next], next < n - ndirs ?
			    IORING_FSYNC_DATASYNC : 0);
			io_uring_sqe_set_data(sqe, (void *)(uintptr_t)next);
		}
		/*
		 * One system call submits what is new and waits for one.  (It
		 * answers -EINTR only when it submitted nothing.)
		 */
		ret = io_uring_submit_and_wait(r, 1);
		if (ret >= 0)
			submitted += (size_t)ret;
		else if (ret != -EINTR)
			break;
		while (io_uring_peek_cqe(r, &cqe) == 0) {
			ring_reap(cqe, fds, n - ndirs, errs);
			io_uring_cqe_seen(r, cqe);
			done++;
		}
	}
	if (done == n)
		return n;
	/* Given up: the answers of what was submitted, then no more ring. */
	while (done < submitted) {
		if ((ret = io_uring_wait_cqe(r, &cqe)) == -EINTR)
			continue;
		if (ret < 0) {
			/* No answer to be had: count those as failed. */
			for (k = 0; k < submitted; k++)
				if (errs[k] == EINPROGRESS)
					errs[k] = EIO;
			break;
		}
		ring_reap(cqe, fds, n - ndirs, errs);
		io_uring_cqe_seen(r, cqe);
		done++;
	}
	ring_free(sp);
	sp->ring_pid = -1;
	return submitted;
}

/*
 * A wait of at least this many syncs is one syncfs(2) where config has
 * syncfs=yes (spool-layout.md, "One syncfs for a large wait").
 * SPOOL_TEST_SYNCFS_MIN=N stands for it in the tests, so that a small
 * batch takes this path too.
 */
#define SYNCFS_MIN	64

/*
 * The wait of n syncs as one syncfs(2) of the spool's file system: every
 * dirty page and inode on it written and the device flushed (a journal
 * committed), counted as one sync, its answer every one's (which file
 * failed is not known).  Made by this thread, never through the ring
 * (io_uring has no syncfs), so strace and the fault shim see it.  Since
 * Linux 5.8 it reports a writeback error that the file system had since
 * the spool was opened, or since the last syncfs that reported one, and
 * since 5.17 the file system's own (spool_open refuses the key before
 * that, and where a syncfs may not reach the disk).  1: not such a wait.
 */
static int
psync_whole(struct spool *sp, size_t n, int *errs)
{
	static long cache = -1;
	long min;
	size_t i;
	int e;

	if (!sp->syncfs)
		return 1;
	min = test_number("SPOOL_TEST_SYNCFS_MIN", &cache);
	if (n < (size_t)(min > 0 ? min : SYNCFS_MIN))
		return 1;
	e = sync_with(syncfs, sp->dirfd) == -1 ? errno : 0;
	for (i = 0; i < n; i++)
		errs[i] = e;
	if (e == 0)
		return 0;
	errno = e;
	return -1;
}

/*
 * Sync every descriptor, several at once: a disk (and a journal) commits
 * overlapping syncs together, so a batch costs little more than one.  The
 * last ndirs are directories (fsync), the others files (fdatasync).
 * errs[i] is 0 or the errno of fds[i].  Through the spool's ring, or else
 * threads that live only for the call, so a process may fork at any other
 * time.  -1 if any failed.  With config syncfs=yes, a wait of many syncs
 * is one syncfs(2) instead (psync_whole).
 */
int
psync(struct spool *sp, const int *fds, size_t n, size_t ndirs, int *errs)
{
	pthread_t tids[PSYNC_THREADS - 1];
	struct psync p = { fds, errs, n, n - ndirs, 0 };
	struct io_uring *r;
	pthread_attr_t attr;
	size_t i, nt = 0;
	int small, serial, w;

	if ((w = psync_whole(sp, n, errs)) != 1)
		return w;
	/* One after another while a test skips a sync (see sync_with). */
	serial = skip_sync_at() > 0;
	if (!serial && n > 1 && (r = ring_of(sp)) != NULL) {
		for (i = 0; i < n; i++)
			errs[i] = EINPROGRESS;	/* no answer yet */
		p.next = ring_sync(sp, r, fds, n, ndirs, errs);
	}
	small = !serial && p.next + 1 < n && pthread_attr_init(&attr) == 0;
	if (small && pthread_attr_setstacksize(&attr, PSYNC_STACK) != 0) {
		(void)pthread_attr_destroy(&attr);
		small = 0;
	}
	for (; !serial && nt < PSYNC_THREADS - 1 && p.next + nt + 1 < n; nt++)
		if (pthread_create(&tids[nt], small ? &attr : NULL,
		    psync_worker, &p) != 0)
			break;	/* fewer threads: the work still gets done */
	if (small)
		(void)pthread_attr_destroy(&attr);
	(void)psync_worker(&p);
	for (i = 0; i < nt; i++)
		(void)pthread_join(tids[i], NULL);
	for (i = 0; i < n; i++)
		if (errs[i] != 0) {
			errno = errs[i];
			return -1;
		}
	return 0;
}

int
sync_dir(int dirfd, const char *rel)
{
	int fd, r, e;

	fd = sys_openat(dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
	    O_NOFOLLOW, 0);
	if (fd == -1)
		return -1;
	r = sync_dirfd(fd);
	e = errno;
	if (close_fd(fd) == -1 && r == 0)
		return -1;
	errno = e;
	return r;
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
 * of them.  errno is that of the last failure.  read, write and the syncs
 * have loops of their own above; close(2) is never retried (close_fd).
 */
int
sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd;

	do
		fd = openat(dirfd, path, flags, mode);
	while (fd == -1 && errno == EINTR);
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
	while (r == -1 && errno == EINTR);
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
	while (r == -1 && errno == EINTR);
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
 * between the two.  SPOOL_TEST_NOREPLACE=off forces the fallbacks so that
 * the tests cover them.
 */
int
move_noreplace(int fromfd, const char *from, int tofd, const char *to)
{
	static int fallback = -1;
	struct stat st;
	const char *s;
	int r;

	if (fallback == -1) {
		s = getenv("SPOOL_TEST_NOREPLACE");
		fallback = s != NULL && strcmp(s, "off") == 0;
	}
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
	while (r == -1 && errno == EINTR);
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
 * A listing of the directory dirfd.  The spool keeps its directories open,
 * and a dup(2) shares their offset: rewinding makes every listing of a
 * long-lived process (spool-run) start from the first entry.
 */
DIR *
dir_list(int dirfd)
{
	DIR *d;
	int fd, e;

	if ((fd = dup(dirfd)) == -1)
		return NULL;
	if ((d = fdopendir(fd)) == NULL) {
		e = errno;
		(void)close_fd(fd);
		errno = e;
		return NULL;
	}
	rewinddir(d);
	return d;
}

/*
 * readdir(3), again after EINTR (glibc leaves the stream as it was), with
 * errno 0 at the end of the directory: a caller tells the end from a
 * failure by errno alone.
 */
struct dirent *
dir_next(DIR *d)
{
	struct dirent *de;

	do
		errno = 0;
	while ((de = readdir(d)) == NULL && errno == EINTR);
	return de;
}
