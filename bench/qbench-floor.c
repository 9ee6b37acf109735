/*
 * The floors: the file system's and the kernel's work that a spool cannot
 * do without (a spawn, a durable publish, a directory's fsync, an append,
 * waits of syncs side by side, a batch), and row 10's floor, the layout's
 * file work of a cycle in P processes.  A floor does no more than the
 * design needs, no locks and no reads, so that it stays below the spool.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

/* Row 10's floor: its directories. */
enum { D_TMP, D_META, D_NEW, D_TOP, D_MID, D_LEAF, D_LEASED, D_DONE, D_N };

struct floor {
	int tmpfd, pubfd, adirfd, bdirfd, logfd, recfd;
	long seq;
	int where;		/* floor-dirsync: which side the file is on */
	struct io_uring ring;	/* floor-wait3, floor-batch-*, many-floor */
	int many[BATCH];	/* floor-batch-*: a file each */
	int dfd[D_N];		/* many-floor */
};

static struct floor *
floor_new(struct sys *s)
{
	if ((s->st = calloc(1, sizeof(struct floor))) == NULL)
		err(1, "calloc");
	return s->st;
}

/* The no-op a spawn floor starts: -D's for floor-spawn-dyn, else -t's. */
static const char *
spawned(const struct sys *s)
{
	return strcmp(s->name, "floor-spawn-dyn") == 0 ? opt.truedyn :
	    opt.truebin;
}

void
spawn_init(struct sys *s)
{
	if (spawned(s) == NULL)
		errx(1, "%s needs %s TRUE", s->name,
		    strcmp(s->name, "floor-spawn-dyn") == 0 ? "-D" : "-t");
}

/*
 * (a) fork+exec+wait of a trivial binary: static (floor-spawn), or linked
 * as the commands are, dynamically against the same libraries, which the
 * loader maps at every start (floor-spawn-dyn).
 */
static void
spawn_op(struct sys *s, long k)
{
	char *argv[] = { (char *)spawned(s), NULL };
	long i;

	for (i = 0; i < k; i++)
		run_ok(argv, NULL, devnull);
}

static void
floor_init(struct sys *s)
{
	struct floor *f = floor_new(s);
	char path[PATH_MAX];
	int fd;

	sys_dir(s);
	f->tmpfd = open_dir(s->dir, "tmp");
	f->pubfd = open_dir(s->dir, "pub");
	f->adirfd = open_dir(s->dir, "a");
	f->bdirfd = open_dir(s->dir, "b");
	pathf(path, sizeof(path), "%s/log", s->dir);
	if ((f->logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0666)) == -1)
		err(1, "%s", path);
	/* floor-dirsync moves this file between a/ and b/, never creating. */
	pathf(path, sizeof(path), "%s/a/x", s->dir);
	if (access(path, F_OK) == -1) {
		pathf(path, sizeof(path), "%s/b/x", s->dir);
		if (access(path, F_OK) == -1) {
			if ((fd = openat(f->adirfd, "x", O_WRONLY | O_CREAT |
			    O_EXCL | O_CLOEXEC, 0444)) == -1)
				err(1, "a/x");
			write_all(fd, payload, sizeof(payload));
			sync_or_die(fd, 0);
			(void)close(fd);
			sync_or_die(f->adirfd, 1);
		} else
			f->where = 1;
	}
}

/* (b) a durable publish: create, write, fdatasync, rename, fsync dir. */
static void
publish_op(struct sys *s, long k)
{
	struct floor *f = s->st;
	char name[64];
	long i;
	int fd;

	for (i = 0; i < k; i++) {
		pathf(name, sizeof(name), "f.%d.%ld", (int)getpid(),
		    ++f->seq);
		if ((fd = openat(f->tmpfd, name, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0444)) == -1)
			err(1, "%s", name);
		write_all(fd, payload, sizeof(payload));
		sync_or_die(fd, 0);
		if (close(fd) == -1)
			err(1, "close");
		if (renameat(f->tmpfd, name, f->pubfd, name) == -1)
			err(1, "rename");
		sync_or_die(f->pubfd, 1);
	}
}

/* (c) the fsync of a directory that a rename just changed: only it is
 * timed; the rename is not. */
static void
dirsync_op(struct sys *s, long k)
{
	struct floor *f = s->st;
	double t0, sum = 0;
	long i;
	int from, to;

	for (i = 0; i < k; i++) {
		from = f->where ? f->bdirfd : f->adirfd;
		to = f->where ? f->adirfd : f->bdirfd;
		if (renameat(from, "x", to, "x") == -1)
			err(1, "rename x");
		f->where = !f->where;
		t0 = now_s();
		sync_or_die(to, 1);
		sum += now_s() - t0;
	}
	s->own_seconds = sum;
}

/* (d) an append and its fdatasync, as an audit line or a sidecar record. */
static void
append_op(struct sys *s, long k)
{
	struct floor *f = s->st;
	char line[PAYLOAD_SIZE];
	long i;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (i = 0; i < k; i++) {
		write_all(f->logfd, line, sizeof(line));
		sync_or_die(f->logfd, 0);
	}
}

/* Sync n files side by side, waited for once; data[i]: an fdatasync. */
static void
ring_syncs(struct io_uring *ring, const int *fds, const int *data, int n)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int j;

	for (j = 0; j < n; j++) {
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_fsync(sqe, fds[j], data == NULL || data[j] ?
		    IORING_FSYNC_DATASYNC : 0);
	}
	if (io_uring_submit_and_wait(ring, n) != n)
		errx(1, "io_uring_submit_and_wait");
	for (j = 0; j < n; j++) {
		if (io_uring_wait_cqe(ring, &cqe) < 0 || cqe->res < 0)
			errx(1, "a sync through the ring failed");
		io_uring_cqe_seen(ring, cqe);
	}
}

static void
ring_init(struct io_uring *ring, unsigned entries)
{
	int r;

	if ((r = io_uring_queue_init(entries, ring, 0)) < 0)
		errx(1, "io_uring_queue_init: %s", strerror(-r));
}

static void
wait3_init(struct sys *s)
{
	struct floor *f;
	char path[PATH_MAX];

	floor_init(s);
	f = s->st;
	pathf(path, sizeof(path), "%s/rec", s->dir);
	if ((f->recfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0666)) == -1)
		err(1, "%s", path);
	ring_init(&f->ring, 8);
}

/*
 * (e) one wait of a transition: an append to each of two files (a record,
 * an audit line) and a rename, then their three syncs (two fdatasyncs, the
 * directory's fsync) submitted together through io_uring and waited for
 * once, as the spool does.
 */
static void
wait3_op(struct sys *s, long k)
{
	static const int data[3] = { 1, 1, 0 };
	struct floor *f = s->st;
	char line[PAYLOAD_SIZE];
	int from, to, fds[3];
	long i;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (i = 0; i < k; i++) {
		write_all(f->recfd, line, sizeof(line));
		from = f->where ? f->bdirfd : f->adirfd;
		to = f->where ? f->adirfd : f->bdirfd;
		if (renameat(from, "x", to, "x") == -1)
			err(1, "rename x");
		f->where = !f->where;
		write_all(f->logfd, line, sizeof(line));
		fds[0] = f->recfd;
		fds[1] = f->logfd;
		fds[2] = to;
		ring_syncs(&f->ring, fds, data, 3);
	}
}

static void
batch_init(struct sys *s)
{
	struct floor *f;
	char path[PATH_MAX];
	int i;

	floor_init(s);
	f = s->st;
	for (i = 0; i < opt.batch_files; i++) {
		pathf(path, sizeof(path), "%s/m%d", s->dir, i);
		if ((f->many[i] = open(path, O_WRONLY | O_CREAT | O_APPEND |
		    O_CLOEXEC, 0666)) == -1)
			err(1, "%s", path);
	}
	ring_init(&f->ring, BATCH);
	pathf(path, sizeof(path), "%s/other", s->dir);
	if (opt.dirty_kib > 0 && (f->recfd = open(path, O_WRONLY | O_CREAT |
	    O_CLOEXEC, 0666)) == -1)
		err(1, "%s", path);
}

/*
 * -u: dirty KiB of a file that is not the batch's, on the same file
 * system, rewritten in turn over its first 32 MiB: another program's
 * writes, which a syncfs(2) writes too.  Not timed.
 */
static void
dirty_other(struct floor *f)
{
	static char buf[4096];
	long n;

	if (opt.dirty_kib == 0)
		return;
	if (buf[0] == '\0')
		memset(buf, 'u', sizeof(buf));
	for (n = opt.dirty_kib * 1024; n > 0; n -= (long)sizeof(buf)) {
		if (pwrite(f->recfd, buf, sizeof(buf), (off_t)f->seq) !=
		    (ssize_t)sizeof(buf))
			err(1, "pwrite other");
		f->seq = (f->seq + (long)sizeof(buf)) % (32L << 20);
	}
}

/*
 * (f) a batch's records: an append to each of -n files (BATCH), then
 * either their fdatasyncs side by side through io_uring, waited for once,
 * or one syncfs(2) of the file system they are on.  A step is the batch,
 * a cycle one of its files; with -u, after another file was dirtied.
 */
static void
batch_op(struct sys *s, long k, int fs)
{
	struct floor *f = s->st;
	char line[PAYLOAD_SIZE];
	double t0, sum = 0;
	long i;
	int j, n = opt.batch_files;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (i = 0; i < k; i += n) {
		dirty_other(f);
		t0 = now_s();
		for (j = 0; j < n; j++)
			write_all(f->many[j], line, sizeof(line));
		if (fs) {
			if (syncfs(f->many[0]) == -1)
				err(1, "syncfs");
		} else
			ring_syncs(&f->ring, f->many, NULL, n);
		sum += now_s() - t0;
	}
	s->own_seconds = sum;
}

static void
batch_fdatasync_op(struct sys *s, long k)
{
	batch_op(s, k, 0);
}

static void
batch_syncfs_op(struct sys *s, long k)
{
	batch_op(s, k, 1);
}

/*
 * (g) the file system work a batched job cycle of this design cannot do
 * without, BATCH jobs a step: enqueue (a payload made in tmp/, its sidecar
 * made in meta/, the payload renamed into new/), claim (renamed into
 * leased/), finish (renamed into done/), a record appended to the sidecar
 * (open, append, close) and an audit line at each, and one syncfs(2) of the
 * file system after each of the three, the cheapest wait there is.  One
 * directory a state, no buckets, no locks, no reads: below what a spool
 * must do, and so a floor.
 */
static void
batch_cycle_init(struct sys *s)
{
	struct floor *f;

	floor_init(s);
	f = s->st;
	/* The floors' a/ and b/ are not this row's: its own three instead. */
	(void)close(f->adirfd);
	(void)close(f->bdirfd);
	f->adirfd = open_dir(s->dir, "meta");
	f->bdirfd = open_dir(s->dir, "leased");
	f->recfd = open_dir(s->dir, "done");
}

static void
batch_record(struct floor *f, const char *name, const char *rec)
{
	int fd;

	if ((fd = openat(f->adirfd, name, O_WRONLY | O_CREAT | O_APPEND |
	    O_CLOEXEC, 0644)) == -1)
		err(1, "meta/%s", name);
	write_all(fd, rec, strlen(rec));
	(void)close(fd);
	write_all(f->logfd, rec, strlen(rec));
}

/* A step's first part: BATCH payloads made, recorded and published. */
static void
batch_enqueue(struct floor *f, char name[][64], const char *rec)
{
	int j, fd;

	for (j = 0; j < BATCH; j++) {
		pathf(name[j], 64, "b%d.%ld", (int)getpid(), f->seq++);
		if ((fd = openat(f->tmpfd, name[j], O_WRONLY | O_CREAT |
		    O_EXCL | O_CLOEXEC, 0444)) == -1)
			err(1, "tmp/%s", name[j]);
		write_all(fd, payload, sizeof(payload));
		(void)close(fd);
		batch_record(f, name[j], rec);
		if (renameat(f->tmpfd, name[j], f->pubfd, name[j]) == -1)
			err(1, "rename");
	}
}

static void
batch_cycle_op(struct sys *s, long k)
{
	static const char *const rec[] = {
		"t=1796026336000 ev=enqueue at=new tok=0 n=0 due=1796026336000 "
		    "size=100 xxh=0123456789abcdef\n",
		"t=1796026336000 ev=claim at=leased tok=1 n=1 "
		    "until=1796026366000\n",
		"t=1796026336000 ev=ok at=done tok=1 n=1\n"
	};
	struct floor *f = s->st;
	int from[3], to[3] = { f->pubfd, f->bdirfd, f->recfd };
	char name[BATCH][64], leased[64];
	long i;
	int ph, j;

	from[1] = f->pubfd;
	from[2] = f->bdirfd;
	for (i = 0; i < k; i += BATCH) {
		for (ph = 0; ph < 3; ph++) {
			if (ph == 0)
				batch_enqueue(f, name, rec[0]);
			for (j = 0; j < BATCH && ph > 0; j++) {
				pathf(leased, sizeof(leased), "%s,1", name[j]);
				if (renameat(from[ph], ph == 1 ? name[j] :
				    leased, to[ph], ph == 1 ? leased :
				    name[j]) == -1)
					err(1, "rename");
				batch_record(f, name[j], rec[ph]);
			}
			if (syncfs(f->logfd) == -1)
				err(1, "syncfs");
		}
	}
}

/*
 * Row 10's floor: the file work of one job's cycle as this layout does it,
 * and nothing else.  All workers share the directories and one audit log,
 * as a spool's processes on one host do.  The bucket path is fixed, so no
 * bucket is made or removed; nothing is locked or read.  A cycle's four
 * waits each submit their syncs side by side through io_uring and wait
 * once (spool-layout.md, "fsyncs per transition"):
 *
 *	enqueue: payload + sidecar + tmp/ + meta/;
 *	         audit log + the leaf + the middle and top buckets + new/;
 *	claim:   sidecar + audit log + leased/;
 *	finish:  sidecar + audit log + done/.
 */
static const char *const floor_dirs[D_N] = {
	"tmp", "meta", "new", "new/00000000", "new/00000000/000",
	"new/00000000/000/000", "leased", "done"
};

static void
many_floor_prep(struct sys *s)
{
	int i;

	sys_dir(s);
	for (i = 0; i < D_N; i++)
		(void)close(open_dir(s->dir, floor_dirs[i]));
}

static void
many_floor_setup(struct sys *s)
{
	struct floor *f = floor_new(s);
	char path[PATH_MAX];
	int i;

	for (i = 0; i < D_N; i++)
		f->dfd[i] = open_dir(s->dir, floor_dirs[i]);
	pathf(path, sizeof(path), "%s/audit.log", s->dir);
	if ((f->logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0666)) == -1)
		err(1, "%s", path);
	ring_init(&f->ring, 8);
}

static void
many_floor_teardown(struct sys *s)
{
	struct floor *f = s->st;
	int i;

	for (i = 0; i < D_N; i++)
		(void)close(f->dfd[i]);
	(void)close(f->logfd);
	io_uring_queue_exit(&f->ring);
	free(f);
	s->st = NULL;
}

static void
floor_line(struct floor *f, int fd, const char *ev, const char *id)
{
	char line[PAYLOAD_SIZE];
	int n;

	n = snprintf(line, sizeof(line), "t=1796026336000 ev=%s id=%s\n", ev,
	    id);
	if (n < 0 || (size_t)n >= sizeof(line))
		errx(1, "floor line too long");
	write_all(fd, line, (size_t)n);
	write_all(f->logfd, line, (size_t)n);
}

static void
many_floor_cycle(struct sys *s)
{
	static const int one[5] = { 1, 1, 0, 0, 0 };
	static long seq;	/* this worker's, whichever P: names never recur */
	struct floor *f = s->st;
	char id[64], tmpn[96], newn[96], leased[96];
	int fd, sc, fds[5];

	seq++;
	pathf(id, sizeof(id), "f%d.%ld", (int)getpid(), seq);
	pathf(tmpn, sizeof(tmpn), "%s,%d.%ld", id, (int)getpid(), seq);
	pathf(newn, sizeof(newn), "%s,1796026336000", id);
	pathf(leased, sizeof(leased), "%s,1", id);
	if ((fd = openat(f->dfd[D_TMP], tmpn, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0444)) == -1)
		err(1, "tmp/%s", tmpn);
	write_all(fd, payload, sizeof(payload));
	if ((sc = openat(f->dfd[D_META], id, O_WRONLY | O_CREAT | O_APPEND |
	    O_CLOEXEC, 0644)) == -1)
		err(1, "meta/%s", id);
	write_all(sc, "ev=enqueue\n", 11);
	fds[0] = fd;
	fds[1] = sc;
	fds[2] = f->dfd[D_TMP];
	fds[3] = f->dfd[D_META];
	ring_syncs(&f->ring, fds, one, 4);
	(void)close(fd);
	if (renameat(f->dfd[D_TMP], tmpn, f->dfd[D_LEAF], newn) == -1)
		err(1, "rename into new/");
	write_all(f->logfd, "ev=enqueue\n", 11);
	fds[0] = f->logfd;
	fds[1] = f->dfd[D_LEAF];
	fds[2] = f->dfd[D_MID];
	fds[3] = f->dfd[D_TOP];
	fds[4] = f->dfd[D_NEW];
	ring_syncs(&f->ring, fds, one, 5);
	if (renameat(f->dfd[D_LEAF], newn, f->dfd[D_LEASED], leased) == -1)
		err(1, "rename into leased/");
	floor_line(f, sc, "claim", id);
	fds[0] = sc;
	fds[1] = f->logfd;
	fds[2] = f->dfd[D_LEASED];
	ring_syncs(&f->ring, fds, one, 3);
	if (renameat(f->dfd[D_LEASED], leased, f->dfd[D_DONE], id) == -1)
		err(1, "rename into done/");
	floor_line(f, sc, "ok", id);
	fds[2] = f->dfd[D_DONE];
	ring_syncs(&f->ring, fds, one, 3);
	(void)close(sc);
}

static const struct many many_floor = {
	.name = "many-floor", .prep = many_floor_prep,
	.setup = many_floor_setup, .cycle = many_floor_cycle,
	.teardown = many_floor_teardown
};

/* Name, set-up, a round's work, its unit and default K. */
static struct sys floors[] = {
	SYS("floor-spawn", spawn_init, spawn_op, 1, 200),
	SYS("floor-publish", floor_init, publish_op, 1, 200),
	SYS("floor-dirsync", floor_init, dirsync_op, 1, 200),
	SYS("floor-append", floor_init, append_op, 1, 200),
	SYS("floor-spawn-dyn", spawn_init, spawn_op, 1, 200),
	SYS("floor-wait3", wait3_init, wait3_op, 1, 200),
	{ .name = "floor-batch-fdatasync", .init = batch_init,
	    .op = batch_fdatasync_op, .unit = BATCH, .k = BATCH * 4,
	    .files_step = 1 },
	{ .name = "floor-batch-syncfs", .init = batch_init,
	    .op = batch_syncfs_op, .unit = BATCH, .k = BATCH * 4,
	    .files_step = 1 },
	SYS("floor-batch-cycle", batch_cycle_init, batch_cycle_op, BATCH,
	    BATCH * 4),
	{ .name = NULL }
};

const struct backend floor_backend = { "floor", floors, &many_floor };
