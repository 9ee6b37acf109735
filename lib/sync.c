/*
 * The syncs of a wait, side by side: a disk and a journal commit
 * overlapping syncs together, so a wait of many costs little more than
 * one.  Threads that live only for the call make a handle's first waits;
 * its io_uring makes the later ones; with config syncfs=yes a large wait
 * is one syncfs(2).  Every sync is counted, and a test may skip one
 * (hooks.c).  Also the set of directories a call must fsync before it
 * returns, and a small file of the top directory written durably.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#include "internal.h"

/*
 * A test may skip a sync (hook_skip_sync): then psync() makes its syncs
 * one after another in the order given, so that a number names the same
 * sync in every run.
 */
/* sync(fd), again after EINTR, counted. */
static int
sync_with(int (*sync)(int), int fd)
{
	static long nth;
	int r;

	if (hook_skip_sync() > 0 &&
	    __atomic_add_fetch(&nth, 1, __ATOMIC_RELAXED) == hook_skip_sync())
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

/*
 * The syncs of one wait through io_uring (liburing), from this one thread:
 * the kernel runs them side by side.  A ring pays for itself over many
 * waits: its kernel workers outlive a wait, which threads do not; but its
 * set-up and the start of its workers cost a process more than threads
 * do for a wait or two (a command on one job makes one or two: here, a
 * spool-enqueue, spool-claim, spool-finish cycle took 10 to 15% longer
 * with a ring in each process).  So a handle's first RING_AFTER waits of
 * more than one sync are made by threads, and it makes its ring at the
 * next one; a child after fork(2) makes its own.  Where the kernel
 * refuses io_uring (a container's seccomp profile,
 * kernel.io_uring_disabled) the threads below go on.  They do too when a
 * test asks (hook_no_uring), so that the fault shim and strace, which see
 * no sync a ring makes, see every one.  A test of the ring itself has it
 * made at a handle's first wait (hook_ring_tested).
 */
#define RING_ENTRIES	256
#define RING_AFTER	2

static struct io_uring *
ring_of(struct spool *sp)
{
	unsigned workers[2] = { PSYNC_THREADS, 0 };
	struct io_uring *r = sp->ring;

	if (r != NULL && sp->ring_pid == getpid())
		return r;
	ring_free(sp);		/* a parent's, in a child: not ours */
	if (sp->ring_pid == -1 || hook_no_uring())
		return NULL;
	if (sp->waits++ < RING_AFTER && !hook_ring_tested())
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
	res = hook_ring_result(res);
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
 * syncfs=yes (spool-layout.md, "One syncfs for a large wait").  A test
 * may set a lower one (hook_syncfs_min), so that a small batch takes this
 * path too.
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
	long min;
	size_t i;
	int e;

	if (!sp->syncfs)
		return 1;
	min = hook_syncfs_min();
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
	serial = hook_skip_sync() > 0;
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

int
dirset_has(const struct dirset *ds, const char *rel)
{
	size_t i;

	for (i = 0; i < ds->n; i++)
		if (strcmp(ds->names[i], rel) == 0)
			return 1;
	return 0;
}

int
dirset_add(struct dirset *ds, const char *rel)
{
	char **names;

	if (dirset_has(ds, rel))
		return 0;
	if ((names = realloc(ds->names, (ds->n + 1) * sizeof(*names))) == NULL)
		return -1;
	ds->names = names;
	if ((ds->names[ds->n] = strdup(rel)) == NULL)
		return -1;
	ds->n++;
	return 0;
}

/* The directories of ds alone, synced side by side. */
int
dirset_sync(struct spool *sp, struct dirset *ds)
{
	int *fds, *errs, rv = 0, e = 0;
	size_t i, n = 0;

	if (ds->n == 0)
		return 0;
	if (ds->n == 1)
		return sync_dir(sp->dirfd, ds->names[0]);
	fds = calloc(ds->n, sizeof(*fds));
	errs = calloc(ds->n, sizeof(*errs));
	if (fds == NULL || errs == NULL) {
		rv = -1;
		e = errno;
		goto out;
	}
	for (; n < ds->n; n++)
		if ((fds[n] = sys_openat(sp->dirfd, ds->names[n], O_RDONLY |
		    O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0)) == -1) {
			rv = -1;
			e = errno;
			goto out;
		}
	if ((rv = psync(sp, fds, n, n, errs)) == -1)
		e = errno;
out:
	for (i = 0; fds != NULL && i < n; i++)
		(void)close_fd(fds[i]);	/* directories: nothing to lose */
	free(fds);
	free(errs);
	errno = e;
	return rv;
}

void
dirset_free(struct dirset *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++)
		free(ds->names[i]);
	free(ds->names);
	ds->names = NULL;
	ds->n = 0;
}

/*
 * Write a small file durably: tmp/, fsync, rename into the top directory,
 * fsync that.  replace: a file of that name may be replaced (the pause).
 */
int
write_top_file(struct spool *sp, const char *name, const char *text,
    int replace)
{
	int tmpfd = sp->tmpfd;
	char tmp[64];
	int fd, e;

	(void)snprintf(tmp, sizeof(tmp), "%s,%ld", name, (long)getpid());
	(void)sys_unlinkat(tmpfd, tmp,
	    0);	/* a leftover of a crashed init */
	fd = sys_openat(tmpfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0666);
	if (fd == -1)
		return -1;
	if (file_mode(sp, fd, 0664) == -1 ||
	    write_all(fd, text, strlen(text)) == -1 || sync_fd(fd) == -1) {
		e = errno;
		(void)close_fd(fd);
		(void)sys_unlinkat(tmpfd, tmp, 0);
		errno = e;
		return -1;
	}
	if (close_fd(fd) == -1 || (replace ?
	    sys_renameat(tmpfd, tmp, sp->dirfd, name, 0) :
	    move_noreplace(tmpfd, tmp, sp->dirfd, name)) == -1) {
		e = errno;
		(void)sys_unlinkat(tmpfd, tmp, 0);
		errno = e;
		return -1;
	}
	return sync_dir(sp->dirfd, ".");
}
