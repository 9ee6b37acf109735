/*
 * qbench: job cycles (enqueue, claim, finish) of spool and of the queues it
 * is measured against, timed side by side, and the floors they stand on.
 *
 * Every system named on the command line runs K cycles per round, and the
 * systems take turns within a round in an order that rotates from round to
 * round, so that a noisy neighbour slows all of them alike; round 0 is a
 * warm-up.  One CSV line per system per round goes to stdout:
 *
 *	LABEL,SYSTEM,ROUND,CYCLES,SECONDS,FSYNCS,RENAMES
 *
 * (FSYNCS and RENAMES from spool_get_counters(), -1 where the work was done
 * by other processes), and lines SYSTEM.PHASE for the parts of a cycle.
 * Every system keeps its data in a directory of its own under the work
 * directory, and nothing is deleted between rounds: on ext4, creating files
 * stays slow for minutes after many deletions, which would bill one system
 * for another's cleanup.  No system is made less durable than its own
 * documented durable mode: spool as it is, SQLite with synchronous=FULL,
 * beanstalkd with its binlog fsync'd on every write (-f 0).
 */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <limits.h>
#include <liburing.h>
#include <signal.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define PAYLOAD_SIZE	100	/* bytes: a small job, as bench/README.md says */
#define BATCH		SPOOL_BATCH_MAX
#define CLI_CLAIM_N	100	/* spool-claim -n, spool-finish - lines */
#define OUT_MAX		65536
#define MANY_MAX	128	/* -m: the most processes a turn */

extern char **environ;

static const char *label = "default";
static const char *workdir, *bindir, *truebin, *truedyn, *target_spool;
static char *sqlite3_bin, *nq_bin;
static char *init_cmd, *enqueue_cmd, *claim_cmd, *finish_cmd, *run_cmd;
static char payload_path[PATH_MAX];
static char payload[PAYLOAD_SIZE];
static int devnull, bean_port, cli_files = 10000;
static int batch_files = BATCH;	/* -n: files a step of floor-batch-* */
static long dirty_kib;		/* -u: another file's KiB dirtied a step */
static long cli_claims;	/* -c: jobs claimed and finished a round (0: all) */

struct sys;
typedef void (*op_fn)(struct sys *, long);

struct sys {
	const char *name;
	void (*init)(struct sys *);
	op_fn op;
	long unit;		/* cycles per step: an op does a multiple */
	long k;			/* cycles a round */
	int round;
	char dir[PATH_MAX];
	double own_seconds;	/* >= 0: the op timed itself (a part only) */
	/* spool */
	struct spool *sp;
	const char *key;	/* lib-spool-limit*, -rate: every job's key */
	int fds[BATCH];
	struct io_uring ring;	/* floor-wait3, and its record file */
	int recfd;
	int many[BATCH];	/* floor-batch-*: a file each */
	struct spool_job *jobs;
	struct spool_lease *leases;
	struct spool_finish *fins;
	/* sqlite */
	sqlite3 *db;
	sqlite3_stmt *ins, *claim, *fin;
	int wal;
	/* beanstalkd */
	int sock;
	char in[4096];
	size_t inlen;
	/* floors */
	int tmpfd, pubfd, adirfd, bdirfd, logfd;
	long seq;
	int where;		/* floor-dirsync: which side the file is on */
	int fixed;		/* named with =K: -T does not resize it */
	char **argv;		/* batch-cli-spool: spool-enqueue FILE ... */
	/* many workers, and the runner */
	struct pool *pool;	/* many-*: the workers, shared by every P */
	int procs;		/* P: workers of a turn, or jobs in flight */
	long ran;		/* >= 0: the cycles done, not K */
	long own_fsyncs;	/* >= 0: the workers' fsyncs */
	int dfd[8];		/* many-floor: its directories */
	PGconn *pg;
};

/* snprintf into buf[size], or die: a cut path would name another file. */
static void __attribute__((format(printf, 3, 4)))
pathf(char *buf, size_t size, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, size, f, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		errx(1, "name too long: %s", buf);
}

static void
write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "write");
		}
		if (w == 0)
			errx(1, "write: no progress");
		p += w;
		n -= (size_t)w;
	}
}

static void
sync_or_die(int fd, int dir)
{
	int r;

	do
		r = dir ? fsync(fd) : fdatasync(fd);
	while (r == -1 && errno == EINTR);
	if (r == -1)
		err(1, "fsync");
}

static char *
which(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save, buf[PATH_MAX];

	if (path == NULL)
		path = "/usr/bin:/bin";
	if ((copy = strdup(path)) == NULL)
		err(1, "strdup");
	for (dir = strtok_r(copy, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		pathf(buf, sizeof(buf), "%s/%s", dir, prog);
		if (access(buf, X_OK) == 0) {
			free(copy);
			return strdup(buf);
		}
	}
	free(copy);
	return NULL;
}

/*
 * fork, exec, wait: what a shell pays for each command, and exactly what
 * the spawn floor measures.  The child's stdin is in, its stdout out.
 */
static pid_t
start(char *const argv[], char *const envp[], int in, int out)
{
	pid_t pid;

	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		if (dup2(in, 0) == -1 || dup2(out, 1) == -1)
			_exit(126);
		execve(argv[0], argv, envp != NULL ? envp : environ);
		_exit(127);
	}
	return pid;
}

static int
reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			err(1, "waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void
run_ok(char *const argv[], char *const envp[], int in)
{
	int st = reap(start(argv, envp, in, devnull));

	if (st != 0)
		errx(1, "%s exited %d", argv[0], st);
}

/* Run argv, its stdout read into out (NUL-terminated); must exit 0. */
static size_t
run_read(char *const argv[], int in, char *out, size_t size)
{
	size_t len = 0;
	ssize_t r;
	pid_t pid;
	int p[2], st;

	if (pipe2(p, O_CLOEXEC) == -1)
		err(1, "pipe");
	pid = start(argv, NULL, in, p[1]);
	(void)close(p[1]);
	for (;;) {
		if ((r = read(p[0], out + len, size - 1 - len)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "read");
		}
		if (r == 0)
			break;
		if ((len += (size_t)r) == size - 1)
			errx(1, "%s: output too long", argv[0]);
	}
	out[len] = '\0';
	(void)close(p[0]);
	if ((st = reap(pid)) != 0)
		errx(1, "%s exited %d", argv[0], st);
	return len;
}

/* A pipe holding text, for a child's stdin (it fits in the pipe). */
static int
stdin_of(const char *text, size_t len)
{
	int p[2];

	if (len >= 65536)
		errx(1, "stdin text too long");
	if (pipe2(p, O_CLOEXEC) == -1)
		err(1, "pipe");
	write_all(p[1], text, len);
	(void)close(p[1]);
	return p[0];
}

static void
sys_dir(struct sys *s)
{
	pathf(s->dir, sizeof(s->dir), "%s/%s", workdir, s->name);
	if (mkdir(s->dir, 0777) == -1 && errno != EEXIST)
		err(1, "%s", s->dir);
}

/* The no-op a spawn floor starts: -D's for floor-spawn-dyn, else -t's. */
static const char *
spawned(const struct sys *s)
{
	return strcmp(s->name, "floor-spawn-dyn") == 0 ? truedyn : truebin;
}

static void
spawn_init(struct sys *s)
{
	if (spawned(s) == NULL)
		errx(1, "%s needs %s TRUE", s->name, spawned(s) == truedyn ?
		    "-D" : "-t");
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

static int
open_dir(const char *dir, const char *rel)
{
	char path[PATH_MAX];
	int fd;

	pathf(path, sizeof(path), "%s/%s", dir, rel);
	if (mkdir(path, 0777) == -1 && errno != EEXIST)
		err(1, "%s", path);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		err(1, "%s", path);
	return fd;
}

static void
floor_init(struct sys *s)
{
	char path[PATH_MAX];
	int fd;

	sys_dir(s);
	s->tmpfd = open_dir(s->dir, "tmp");
	s->pubfd = open_dir(s->dir, "pub");
	s->adirfd = open_dir(s->dir, "a");
	s->bdirfd = open_dir(s->dir, "b");
	pathf(path, sizeof(path), "%s/log", s->dir);
	if ((s->logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0666)) == -1)
		err(1, "%s", path);
	/* floor-dirsync moves this file between a/ and b/, never creating. */
	pathf(path, sizeof(path), "%s/a/x", s->dir);
	if (access(path, F_OK) == -1) {
		pathf(path, sizeof(path), "%s/b/x", s->dir);
		if (access(path, F_OK) == -1) {
			if ((fd = openat(s->adirfd, "x", O_WRONLY | O_CREAT |
			    O_EXCL | O_CLOEXEC, 0444)) == -1)
				err(1, "a/x");
			write_all(fd, payload, sizeof(payload));
			sync_or_die(fd, 0);
			(void)close(fd);
			sync_or_die(s->adirfd, 1);
		} else
			s->where = 1;
	}
}

/* (b) a durable publish: create, write, fdatasync, rename, fsync dir. */
static void
publish_op(struct sys *s, long k)
{
	char name[64];
	long i;
	int fd;

	for (i = 0; i < k; i++) {
		pathf(name, sizeof(name), "f.%d.%ld", (int)getpid(),
		    ++s->seq);
		if ((fd = openat(s->tmpfd, name, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0444)) == -1)
			err(1, "%s", name);
		write_all(fd, payload, sizeof(payload));
		sync_or_die(fd, 0);
		if (close(fd) == -1)
			err(1, "close");
		if (renameat(s->tmpfd, name, s->pubfd, name) == -1)
			err(1, "rename");
		sync_or_die(s->pubfd, 1);
	}
}

/* (c) the fsync of a directory that a rename just changed: only it is
 * timed; the rename is not. */
static void
dirsync_op(struct sys *s, long k)
{
	double t0, sum = 0;
	long i;
	int from, to;

	for (i = 0; i < k; i++) {
		from = s->where ? s->bdirfd : s->adirfd;
		to = s->where ? s->adirfd : s->bdirfd;
		if (renameat(from, "x", to, "x") == -1)
			err(1, "rename x");
		s->where = !s->where;
		t0 = now_s();
		sync_or_die(to, 1);
		sum += now_s() - t0;
	}
	s->own_seconds = sum;
}

static void
wait3_init(struct sys *s)
{
	char path[PATH_MAX];
	int r;

	floor_init(s);
	pathf(path, sizeof(path), "%s/rec", s->dir);
	if ((s->recfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0666)) == -1)
		err(1, "%s", path);
	if ((r = io_uring_queue_init(8, &s->ring, 0)) < 0)
		errx(1, "io_uring_queue_init: %s", strerror(-r));
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
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	char line[PAYLOAD_SIZE];
	int from, to, fds[3], j;
	long i;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (i = 0; i < k; i++) {
		write_all(s->recfd, line, sizeof(line));
		from = s->where ? s->bdirfd : s->adirfd;
		to = s->where ? s->adirfd : s->bdirfd;
		if (renameat(from, "x", to, "x") == -1)
			err(1, "rename x");
		s->where = !s->where;
		write_all(s->logfd, line, sizeof(line));
		fds[0] = s->recfd;
		fds[1] = s->logfd;
		fds[2] = to;
		for (j = 0; j < 3; j++) {
			sqe = io_uring_get_sqe(&s->ring);
			io_uring_prep_fsync(sqe, fds[j], j < 2 ?
			    IORING_FSYNC_DATASYNC : 0);
		}
		if (io_uring_submit_and_wait(&s->ring, 3) != 3)
			errx(1, "io_uring_submit_and_wait");
		for (j = 0; j < 3; j++) {
			if (io_uring_wait_cqe(&s->ring, &cqe) < 0 || cqe->res < 0)
				errx(1, "a sync through the ring failed");
			io_uring_cqe_seen(&s->ring, cqe);
		}
	}
}

static void
batch_init(struct sys *s)
{
	char path[PATH_MAX];
	int i, r;

	floor_init(s);
	for (i = 0; i < batch_files; i++) {
		pathf(path, sizeof(path), "%s/m%d", s->dir, i);
		if ((s->many[i] = open(path, O_WRONLY | O_CREAT | O_APPEND |
		    O_CLOEXEC, 0666)) == -1)
			err(1, "%s", path);
	}
	if ((r = io_uring_queue_init(BATCH, &s->ring, 0)) < 0)
		errx(1, "io_uring_queue_init: %s", strerror(-r));
	pathf(path, sizeof(path), "%s/other", s->dir);
	if (dirty_kib > 0 && (s->recfd = open(path, O_WRONLY | O_CREAT |
	    O_CLOEXEC, 0666)) == -1)
		err(1, "%s", path);
}

/*
 * -u: dirty KiB of a file that is not the batch's, on the same file
 * system, rewritten in turn over its first 32 MiB: another program's
 * writes, which a syncfs(2) writes too.  Not timed.
 */
static void
dirty_other(struct sys *s)
{
	static char buf[4096];
	long n;

	if (dirty_kib == 0)
		return;
	if (buf[0] == '\0')
		memset(buf, 'u', sizeof(buf));
	for (n = dirty_kib * 1024; n > 0; n -= (long)sizeof(buf)) {
		if (pwrite(s->recfd, buf, sizeof(buf), (off_t)s->seq) !=
		    (ssize_t)sizeof(buf))
			err(1, "pwrite other");
		s->seq = (s->seq + (long)sizeof(buf)) % (32L << 20);
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
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	char line[PAYLOAD_SIZE];
	double t0, sum = 0;
	long i;
	int j, n = batch_files;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (i = 0; i < k; i += n) {
		dirty_other(s);
		t0 = now_s();
		for (j = 0; j < n; j++)
			write_all(s->many[j], line, sizeof(line));
		if (fs) {
			if (syncfs(s->many[0]) == -1)
				err(1, "syncfs");
			sum += now_s() - t0;
			continue;
		}
		for (j = 0; j < n; j++) {
			sqe = io_uring_get_sqe(&s->ring);
			io_uring_prep_fsync(sqe, s->many[j],
			    IORING_FSYNC_DATASYNC);
		}
		if (io_uring_submit_and_wait(&s->ring, n) != n)
			errx(1, "io_uring_submit_and_wait");
		for (j = 0; j < n; j++) {
			if (io_uring_wait_cqe(&s->ring, &cqe) < 0 || cqe->res < 0)
				errx(1, "a sync through the ring failed");
			io_uring_cqe_seen(&s->ring, cqe);
		}
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
	floor_init(s);
	/* The floors' a/ and b/ are not this row's: its own three instead. */
	(void)close(s->adirfd);
	(void)close(s->bdirfd);
	s->adirfd = open_dir(s->dir, "meta");
	s->bdirfd = open_dir(s->dir, "leased");
	s->recfd = open_dir(s->dir, "done");
}

static void
batch_record(struct sys *s, const char *name, const char *rec)
{
	int fd;

	if ((fd = openat(s->adirfd, name, O_WRONLY | O_CREAT | O_APPEND |
	    O_CLOEXEC, 0644)) == -1)
		err(1, "meta/%s", name);
	write_all(fd, rec, strlen(rec));
	(void)close(fd);
	write_all(s->logfd, rec, strlen(rec));
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
	int from[3], to[3] = { s->pubfd, s->bdirfd, s->recfd };
	char name[BATCH][64], leased[64];
	long i;
	int ph, j, fd;

	from[1] = s->pubfd;
	from[2] = s->bdirfd;
	for (i = 0; i < k; i += BATCH) {
		for (ph = 0; ph < 3; ph++) {
			for (j = 0; j < BATCH; j++) {
				if (ph == 0) {
					pathf(name[j], sizeof(name[j]),
					    "b%d.%ld", (int)getpid(), s->seq++);
					if ((fd = openat(s->tmpfd, name[j],
					    O_WRONLY | O_CREAT | O_EXCL |
					    O_CLOEXEC, 0444)) == -1)
						err(1, "tmp/%s", name[j]);
					write_all(fd, payload, sizeof(payload));
					(void)close(fd);
					batch_record(s, name[j], rec[0]);
					if (renameat(s->tmpfd, name[j],
					    s->pubfd, name[j]) == -1)
						err(1, "rename");
					continue;
				}
				pathf(leased, sizeof(leased), "%s,1", name[j]);
				if (renameat(from[ph], ph == 1 ? name[j] :
				    leased, to[ph], ph == 1 ? leased :
				    name[j]) == -1)
					err(1, "rename");
				batch_record(s, name[j], rec[ph]);
			}
			if (syncfs(s->logfd) == -1)
				err(1, "syncfs");
		}
	}
}

/* (d) an append and its fdatasync, as an audit line or a sidecar record. */
static void
append_op(struct sys *s, long k)
{
	char line[PAYLOAD_SIZE];
	long i;

	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (i = 0; i < k; i++) {
		write_all(s->logfd, line, sizeof(line));
		sync_or_die(s->logfd, 0);
	}
}

/* The system's spool: -s SPOOL, or its own, made once. */
static void
spool_make(struct sys *s)
{
	char *argv[] = { init_cmd, "-d", s->dir, NULL };
	char path[PATH_MAX];
	struct stat st;

	if (target_spool != NULL) {
		pathf(s->dir, sizeof(s->dir), "%s", target_spool);
		return;
	}
	sys_dir(s);
	pathf(path, sizeof(path), "%s/format", s->dir);
	if (stat(path, &st) == -1)
		run_ok(argv, NULL, devnull);
}

static void
cli_init(struct sys *s)
{
	spool_make(s);
}

/* The command's path in bindir (made once; the caller never frees it). */
static char *
cmd_path(const char *name)
{
	char buf[PATH_MAX], *p;

	pathf(buf, sizeof(buf), "%s/%s", bindir, name);
	if ((p = strdup(buf)) == NULL)
		err(1, "strdup");
	return p;
}

/* Split "ID\tTOKEN\t..." lines; returns the next line or NULL. */
static char *
lease_line(char *line, char **id, char **token)
{
	char *nl = strchr(line, '\n'), *tab;

	if (nl == NULL)
		return NULL;
	*nl = '\0';
	*id = line;
	if ((tab = strchr(line, '\t')) == NULL)
		errx(1, "claim output: '%s'", line);
	*tab = '\0';
	*token = tab + 1;
	if ((tab = strchr(*token, '\t')) == NULL)
		errx(1, "claim output: no attempt");
	*tab = '\0';
	return nl + 1;
}

/* spool-enqueue FILE; spool-claim; spool-finish ID TOKEN ok. */
static void
cli_spool_op(struct sys *s, long k)
{
	char *enq[] = { enqueue_cmd, "-d", s->dir, payload_path,
	    NULL };
	char *claim[] = { claim_cmd, "-d", s->dir, NULL };
	char out[4096], *id, *token;
	long i;

	for (i = 0; i < k; i++) {
		run_ok(enq, NULL, devnull);
		(void)run_read(claim, devnull, out, sizeof(out));
		if (lease_line(out, &id, &token) == NULL)
			errx(1, "spool-claim printed nothing");
		{
			char *fin[] = { finish_cmd, "-d", s->dir,
			    id, token, "ok", NULL };

			run_ok(fin, NULL, devnull);
		}
	}
}

/* A queue in one SQLite table, the same for the shell and for C. */
static const char schema[] =
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, "
    "payload BLOB NOT NULL, state TEXT NOT NULL, eligible INTEGER NOT NULL, "
    "token INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, "
    "lease_until INTEGER, owner TEXT);"
    "CREATE INDEX IF NOT EXISTS jobs_due ON jobs(state, eligible);";

static long long
now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
db_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		errx(1, "sqlite: %s: %s", sql, msg != NULL ? msg : "?");
}

static void
db_open(struct sys *s, int wal)
{
	char path[PATH_MAX];

	sys_dir(s);
	s->wal = wal;
	pathf(path, sizeof(path), "%s/queue.db", s->dir);
	if (sqlite3_open(path, &s->db) != SQLITE_OK)
		errx(1, "%s: %s", path, sqlite3_errmsg(s->db));
	db_exec(s->db, wal ? "PRAGMA journal_mode=WAL" :
	    "PRAGMA journal_mode=DELETE");
	db_exec(s->db, "PRAGMA synchronous=FULL");
	db_exec(s->db, schema);
}

/* The sqlite3 shell: its database, made once (WAL mode is persistent). */
static void
cli_sqlite_init(struct sys *s, int wal)
{
	if (sqlite3_bin == NULL)
		errx(1, "%s: no sqlite3 in PATH", s->name);
	db_open(s, wal);
	sqlite3_close(s->db);
	s->db = NULL;
	pathf(s->dir + strlen(s->dir), sizeof(s->dir) - strlen(s->dir),
	    "/queue.db");
}

static void
cli_sqlite_delete_init(struct sys *s)
{
	cli_sqlite_init(s, 0);
}

static void
cli_sqlite_wal_init(struct sys *s)
{
	cli_sqlite_init(s, 1);
}

/*
 * The same cycle through the sqlite3 shell, one process each: an INSERT,
 * a claim by UPDATE ... RETURNING in one transaction, a finish by UPDATE
 * of that token.  synchronous=FULL is per connection, so each says it.
 */
static void
cli_sqlite_op(struct sys *s, long k)
{
	char sql[1024], out[256], *bar;
	long long now;
	long i;

	for (i = 0; i < k; i++) {
		now = now_ms();
		pathf(sql, sizeof(sql), "PRAGMA synchronous=FULL; "
		    "INSERT INTO jobs(payload, state, eligible) "
		    "VALUES(readfile('%s'), 'new', %lld);", payload_path, now);
		{
			char *argv[] = { sqlite3_bin, "-batch", "-bail", s->dir,
			    sql, NULL };

			run_ok(argv, NULL, devnull);
		}
		now = now_ms();
		pathf(sql, sizeof(sql), "PRAGMA synchronous=FULL; "
		    "BEGIN IMMEDIATE; UPDATE jobs SET state='leased', "
		    "token=token+1, attempts=attempts+1, owner='bench', "
		    "lease_until=%lld WHERE id IN (SELECT id FROM jobs WHERE "
		    "state='new' AND eligible<=%lld ORDER BY eligible, id "
		    "LIMIT 1) RETURNING id, token; COMMIT;", now + 30000, now);
		{
			char *argv[] = { sqlite3_bin, "-batch", "-bail", s->dir,
			    sql, NULL };

			(void)run_read(argv, devnull, out, sizeof(out));
		}
		if ((bar = strchr(out, '|')) == NULL)
			errx(1, "sqlite3 claim printed '%s'", out);
		*bar = '\0';
		bar[strcspn(bar + 1, "\n") + 1] = '\0';
		pathf(sql, sizeof(sql), "PRAGMA synchronous=FULL; "
		    "UPDATE jobs SET state='done', lease_until=NULL WHERE id=%s "
		    "AND token=%s AND state='leased' RETURNING id;", out,
		    bar + 1);
		{
			char *argv[] = { sqlite3_bin, "-batch", "-bail", s->dir,
			    sql, NULL };

			(void)run_read(argv, devnull, out, sizeof(out));
		}
		if (out[0] == '\0')
			errx(1, "sqlite3 finish changed nothing");
	}
}

static void
cli_nq_init(struct sys *s)
{
	if (nq_bin == NULL)
		errx(1, "cli-nq: no nq in PATH");
	if (truebin == NULL)
		errx(1, "cli-nq needs -t TRUE");
	sys_dir(s);
}

/*
 * nq TRUE: what a shell user waits for.  nq returns as soon as it has
 * forked its job; the job's file and nq's one directory fsync happen in
 * the background, so after the timed part the round waits (nq -w) for
 * them, untimed, to keep them out of the next system's turn.
 */
static void
cli_nq_op(struct sys *s, long k)
{
	char env[PATH_MAX + 8], *envp[] = { env, "PATH=/usr/bin:/bin", NULL };
	char *argv[] = { nq_bin, (char *)truebin, NULL };
	char *wait[] = { nq_bin, "-w", NULL };
	double t0;
	long i;

	pathf(env, sizeof(env), "NQDIR=%s", s->dir);
	t0 = now_s();
	for (i = 0; i < k; i++)
		run_ok(argv, envp, devnull);
	s->own_seconds = now_s() - t0;
	run_ok(wait, envp, devnull);
}

static void
payload_fds(struct sys *s)
{
	int i;

	for (i = 0; i < BATCH; i++)
		if ((s->fds[i] = open(payload_path, O_RDONLY | O_CLOEXEC)) == -1)
			err(1, "%s", payload_path);
	if ((s->jobs = calloc(BATCH, sizeof(*s->jobs))) == NULL ||
	    (s->leases = calloc(BATCH, sizeof(*s->leases))) == NULL ||
	    (s->fins = calloc(BATCH, sizeof(*s->fins))) == NULL)
		err(1, "calloc");
}

static void
lib_spool_init(struct sys *s)
{
	spool_make(s);
	if ((s->sp = spool_open(s->dir)) == NULL)
		err(1, "spool_open %s", s->dir);
	payload_fds(s);
}

/* The library on a spool whose config has line too, added once, before
 * the spool is opened. */
static void
lib_spool_config_init(struct sys *s, const char *line)
{
	char path[PATH_MAX];
	FILE *f;

	spool_make(s);
	pathf(path, sizeof(path), "%s/config", s->dir);
	if ((f = fopen(path, "a")) == NULL || fputs(line, f) == EOF ||
	    fclose(f) == EOF)
		err(1, "%s", path);
	if ((s->sp = spool_open(s->dir)) == NULL)
		err(1, "spool_open %s", s->dir);
	payload_fds(s);
}

/*
 * The same, on a spool whose config has syncfs=yes: a wait of 64 syncs or
 * more is one syncfs(2) of the file system (spool-layout.md, "One syncfs
 * for a large wait").
 */
static void
lib_spool_syncfs_init(struct sys *s)
{
	lib_spool_config_init(s, "syncfs=yes\n");
}

/*
 * Row 12: the library's cycle with every job of key k, under a limit or a
 * rate (spool(7), "Limits").  A claim takes the key's lock, lists
 * slots/k/, removes the slot of the job before (dead: it is done), makes
 * its own, and syncs slots/k/ in a wait of its own (spool-layout.md,
 * "Slots").  limit.k=1000 never binds.  Neither does limit.k=1, with one
 * worker.  rate.k=1000000/1s also keeps a name a claim for a second.
 */
static void
lib_spool_limit_init(struct sys *s)
{
	lib_spool_config_init(s, "limit.k=1000\n");
}

static void
lib_spool_limit1_init(struct sys *s)
{
	lib_spool_config_init(s, "limit.k=1\n");
}

static void
lib_spool_rate_init(struct sys *s)
{
	lib_spool_config_init(s, "rate.k=1000000/1s\n");
}

static void
phase(struct sys *s, const char *part, long cycles, double secs, long fsyncs)
{
	printf("%s,%s.%s,%d,%ld,%.9f,%ld,-1\n", label, s->name, part, s->round,
	    cycles, secs, fsyncs);
}

/* Enqueue n jobs in one call; every one must be done. */
static void
lib_enqueue(struct sys *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (lseek(s->fds[i], 0, SEEK_SET) == -1)
			err(1, "lseek");
		memset(&s->jobs[i], 0, sizeof(s->jobs[i]));
		s->jobs[i].fd = s->fds[i];
		s->jobs[i].deadline_ms = -1;
		s->jobs[i].key = s->key;
	}
	if (spool_enqueue(s->sp, s->jobs, n) == -1)
		err(1, "spool_enqueue");
	for (i = 0; i < n; i++)
		if (s->jobs[i].res.status != 0)
			errx(1, "spool_enqueue: item %zu: status %d errno %d", i,
			    s->jobs[i].res.status, s->jobs[i].res.err);
}

/* What a step of the library's cycle cost: time and fsyncs per part. */
struct parts {
	double t[3];
	unsigned long f[3];
};

enum { P_ENQ, P_CLAIM, P_FIN };

/* Claim n jobs (several calls if need be), then finish them ok in one. */
static void
lib_claim_finish(struct sys *s, size_t n, struct parts *p)
{
	struct spool_claim_opts opts = { 0, "bench" };
	size_t got = 0, m, i;
	unsigned long f0;
	double t0;
	int r;

	f0 = fsyncs_now();
	t0 = now_s();
	while (got < n) {
		r = spool_claim(s->sp, &opts, s->leases + got, n - got, &m);
		if (r == -1)
			err(1, "spool_claim");
		if (r == 0)
			errx(1, "spool_claim: nothing due after %zu of %zu",
			    got, n);
		got += m;
	}
	p->t[P_CLAIM] += now_s() - t0;
	p->f[P_CLAIM] += fsyncs_now() - f0;
	for (i = 0; i < n; i++) {
		memset(&s->fins[i], 0, sizeof(s->fins[i]));
		s->fins[i].id = s->leases[i].id;
		s->fins[i].token = s->leases[i].token;
		s->fins[i].outcome = SPOOL_OK;
		s->fins[i].delay_ms = -1;
	}
	f0 = fsyncs_now();
	t0 = now_s();
	if (spool_finish(s->sp, s->fins, n) == -1)
		err(1, "spool_finish");
	p->t[P_FIN] += now_s() - t0;
	p->f[P_FIN] += fsyncs_now() - f0;
	for (i = 0; i < n; i++)
		if (s->fins[i].res.status != 0)
			errx(1, "spool_finish: %s: status %d errno %d",
			    s->fins[i].id, s->fins[i].res.status,
			    s->fins[i].res.err);
	spool_free_leases(s->leases, n);
}

/* n jobs a step: 1 for the single-job cycle, BATCH for the batch API. */
static void
lib_spool_cycles(struct sys *s, long k, size_t n)
{
	struct parts p;
	unsigned long f0;
	double t0;
	long i;

	memset(&p, 0, sizeof(p));
	for (i = 0; i < k; i += (long)n) {
		f0 = fsyncs_now();
		t0 = now_s();
		lib_enqueue(s, n);
		p.t[P_ENQ] += now_s() - t0;
		p.f[P_ENQ] += fsyncs_now() - f0;
		lib_claim_finish(s, n, &p);
	}
	phase(s, "enqueue", k, p.t[P_ENQ], (long)p.f[P_ENQ]);
	phase(s, "claim", k, p.t[P_CLAIM], (long)p.f[P_CLAIM]);
	phase(s, "finish", k, p.t[P_FIN], (long)p.f[P_FIN]);
}

static void
lib_spool_op(struct sys *s, long k)
{
	lib_spool_cycles(s, k, 1);
}

static void
batch_lib_spool_op(struct sys *s, long k)
{
	lib_spool_cycles(s, k, BATCH);
}

static void
stmt(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		errx(1, "sqlite: %s: %s", sql, sqlite3_errmsg(db));
}

/* The queue's three statements, the same for one process and for many. */
static void
sqlite_stmts(struct sys *s)
{
	stmt(s->db, "INSERT INTO jobs(payload, state, eligible) "
	    "VALUES(?1, 'new', ?2)", &s->ins);
	stmt(s->db, "UPDATE jobs SET state='leased', token=token+1, "
	    "attempts=attempts+1, owner='bench', lease_until=?1 WHERE id IN "
	    "(SELECT id FROM jobs WHERE state='new' AND eligible<=?2 "
	    "ORDER BY eligible, id LIMIT ?3) RETURNING id, token", &s->claim);
	stmt(s->db, "UPDATE jobs SET state='done', lease_until=NULL "
	    "WHERE id=?1 AND token=?2 AND state='leased'", &s->fin);
}

static void
lib_sqlite_init(struct sys *s, int wal)
{
	db_open(s, wal);
	sqlite_stmts(s);
	if ((s->jobs = calloc(BATCH, sizeof(*s->jobs))) == NULL)
		err(1, "calloc");
}

static void
lib_sqlite_delete_init(struct sys *s)
{
	lib_sqlite_init(s, 0);
}

static void
lib_sqlite_wal_init(struct sys *s)
{
	lib_sqlite_init(s, 1);
}

static void
step_done(sqlite3 *db, sqlite3_stmt *st)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		errx(1, "sqlite: %s", sqlite3_errmsg(db));
	(void)sqlite3_reset(st);
}

/*
 * n jobs a transaction for each of the three steps: one INSERT each; one
 * UPDATE ... RETURNING for the claim, in BEGIN IMMEDIATE so that two
 * claimers cannot pick the same rows; one UPDATE each for the finish.
 * The payload is read from its file for each job, as spool-enqueue does.
 */
static void
lib_sqlite_cycles(struct sys *s, long k, size_t n)
{
	long long ids[BATCH], toks[BATCH], now;
	double te = 0, tc = 0, tf = 0, t0;
	char buf[PAYLOAD_SIZE];
	size_t i, got;
	long c;
	int fd = open(payload_path, O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		err(1, "%s", payload_path);
	for (c = 0; c < k; c += (long)n) {
		t0 = now_s();
		if (n > 1)
			db_exec(s->db, "BEGIN");
		for (i = 0; i < n; i++) {
			if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
				err(1, "pread payload");
			sqlite3_bind_blob(s->ins, 1, buf, sizeof(buf),
			    SQLITE_STATIC);
			sqlite3_bind_int64(s->ins, 2, now_ms());
			step_done(s->db, s->ins);
		}
		if (n > 1)
			db_exec(s->db, "COMMIT");
		te += now_s() - t0;
		t0 = now_s();
		now = now_ms();
		db_exec(s->db, "BEGIN IMMEDIATE");
		sqlite3_bind_int64(s->claim, 1, now + 30000);
		sqlite3_bind_int64(s->claim, 2, now);
		sqlite3_bind_int64(s->claim, 3, (sqlite3_int64)n);
		got = 0;
		while (sqlite3_step(s->claim) == SQLITE_ROW && got < n) {
			ids[got] = sqlite3_column_int64(s->claim, 0);
			toks[got++] = sqlite3_column_int64(s->claim, 1);
		}
		(void)sqlite3_reset(s->claim);
		db_exec(s->db, "COMMIT");
		if (got != n)
			errx(1, "sqlite claim: %zu of %zu", got, n);
		tc += now_s() - t0;
		t0 = now_s();
		if (n > 1)
			db_exec(s->db, "BEGIN");
		for (i = 0; i < n; i++) {
			sqlite3_bind_int64(s->fin, 1, ids[i]);
			sqlite3_bind_int64(s->fin, 2, toks[i]);
			step_done(s->db, s->fin);
			if (sqlite3_changes(s->db) != 1)
				errx(1, "sqlite finish: %lld not leased",
				    ids[i]);
		}
		if (n > 1)
			db_exec(s->db, "COMMIT");
		tf += now_s() - t0;
	}
	(void)close(fd);
	phase(s, "enqueue", k, te, -1);
	phase(s, "claim", k, tc, -1);
	phase(s, "finish", k, tf, -1);
}

static void
lib_sqlite_op(struct sys *s, long k)
{
	lib_sqlite_cycles(s, k, 1);
}

static void
batch_sqlite_op(struct sys *s, long k)
{
	lib_sqlite_cycles(s, k, BATCH);
}

/* beanstalkd, over its text protocol on 127.0.0.1. */
static void
bean_init(struct sys *s)
{
	struct sockaddr_in sa;
	double give_up = now_s() + 10;
	int one = 1;

	if (bean_port == 0)
		errx(1, "lib-beanstalk needs -p PORT");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)bean_port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* The script has just started the daemon: wait for it to listen. */
	for (;;) {
		if ((s->sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
		    0)) == -1)
			err(1, "socket");
		if (connect(s->sock, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (now_s() > give_up)
			err(1, "beanstalkd on 127.0.0.1:%d", bean_port);
		(void)close(s->sock);
		(void)usleep(20000);
	}
	(void)setsockopt(s->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* One reply line, without its \r\n; the bytes after it stay buffered. */
static void
bean_line(struct sys *s, char *line, size_t size)
{
	char *crlf;
	ssize_t r;
	size_t n;

	while ((crlf = memmem(s->in, s->inlen, "\r\n", 2)) == NULL) {
		if (s->inlen == sizeof(s->in))
			errx(1, "beanstalkd: line too long");
		r = read(s->sock, s->in + s->inlen, sizeof(s->in) - s->inlen);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			err(1, "beanstalkd: read");
		s->inlen += (size_t)r;
	}
	n = (size_t)(crlf - s->in);
	if (n >= size)
		errx(1, "beanstalkd: reply too long");
	memcpy(line, s->in, n);
	line[n] = '\0';
	memmove(s->in, crlf + 2, s->inlen - n - 2);
	s->inlen -= n + 2;
}

static void
bean_skip(struct sys *s, size_t n)
{
	ssize_t r;

	while (s->inlen < n) {
		r = read(s->sock, s->in + s->inlen, sizeof(s->in) - s->inlen);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			err(1, "beanstalkd: read");
		s->inlen += (size_t)r;
	}
	memmove(s->in, s->in + n, s->inlen - n);
	s->inlen -= n;
}

/* put, reserve, delete: beanstalkd's job cycle, each step's time added. */
static void
bean_cycle(struct sys *s, double t[3])
{
	char cmd[PAYLOAD_SIZE + 64], line[256];
	unsigned long long id, bytes;
	double t0;
	int n;

	t0 = now_s();
	n = snprintf(cmd, sizeof(cmd), "put 0 0 60 %d\r\n", PAYLOAD_SIZE);
	memcpy(cmd + n, payload, PAYLOAD_SIZE);
	memcpy(cmd + n + PAYLOAD_SIZE, "\r\n", 2);
	write_all(s->sock, cmd, (size_t)n + PAYLOAD_SIZE + 2);
	bean_line(s, line, sizeof(line));
	if (strncmp(line, "INSERTED ", 9) != 0)
		errx(1, "beanstalkd put: %s", line);
	t[P_ENQ] += now_s() - t0;
	t0 = now_s();
	write_all(s->sock, "reserve\r\n", 9);
	bean_line(s, line, sizeof(line));
	if (sscanf(line, "RESERVED %llu %llu", &id, &bytes) != 2)
		errx(1, "beanstalkd reserve: %s", line);
	bean_skip(s, bytes + 2);
	t[P_CLAIM] += now_s() - t0;
	t0 = now_s();
	n = snprintf(cmd, sizeof(cmd), "delete %llu\r\n", id);
	write_all(s->sock, cmd, (size_t)n);
	bean_line(s, line, sizeof(line));
	if (strcmp(line, "DELETED") != 0)
		errx(1, "beanstalkd delete: %s", line);
	t[P_FIN] += now_s() - t0;
}

/* beanstalkd's cycles, one job at a time. */
static void
bean_op(struct sys *s, long k)
{
	double t[3] = { 0, 0, 0 };
	long i;

	for (i = 0; i < k; i++)
		bean_cycle(s, t);
	phase(s, "enqueue", k, t[P_ENQ], -1);
	phase(s, "claim", k, t[P_CLAIM], -1);
	phase(s, "finish", k, t[P_FIN], -1);
}

/*
 * The batch CLI: cli_files small files, made once, enqueued by one
 * spool-enqueue (which takes SPOOL_BATCH_MAX at a time), then
 * spool-claim -n 100 and spool-finish - with its 100 lines, in turn, as a
 * worker would, until all are done.
 */
static void
batch_cli_init(struct sys *s)
{
	char path[PATH_MAX], name[32];
	int i, fd, filesfd;

	spool_make(s);
	pathf(path, sizeof(path), "%s.files", s->dir);
	if (mkdir(path, 0777) == -1 && errno != EEXIST)
		err(1, "%s", path);
	if ((filesfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		err(1, "%s", path);
	if ((s->argv = calloc((size_t)cli_files + 4, sizeof(char *))) == NULL)
		err(1, "calloc");
	s->argv[0] = enqueue_cmd;
	s->argv[1] = "-d";
	s->argv[2] = s->dir;
	for (i = 0; i < cli_files; i++) {
		pathf(name, sizeof(name), "p%05d", i);
		if ((fd = openat(filesfd, name, O_WRONLY | O_CREAT | O_CLOEXEC,
		    0666)) == -1)
			err(1, "%s", name);
		write_all(fd, payload, sizeof(payload));
		(void)close(fd);
		if (asprintf(&s->argv[3 + i], "%s/%s", path, name) == -1)
			err(1, "asprintf");
	}
	(void)close(filesfd);
}

static void
batch_cli_op(struct sys *s, long k)
{
	char *claim[] = { claim_cmd, "-d", s->dir, "-n", "100",
	    NULL };
	char *fin[] = { finish_cmd, "-d", s->dir, "-", NULL };
	char out[OUT_MAX], lines[16384], *p, *id, *token, *saved;
	double te, tc = 0, tf = 0, t0;
	size_t len;
	long done, n, nclaim;
	int in;

	if (k > cli_files)
		errx(1, "batch-cli-spool: K above -f %d", cli_files);
	/* The claims and finishes of -c jobs a round (a fifth in the
	 * warm-up); the rest stay queued, and are claimed in later rounds
	 * (oldest first), so nothing is deleted and the spool only grows. */
	nclaim = cli_claims > 0 && cli_claims < k ? cli_claims : k;
	if (s->round == 0 && (nclaim = nclaim / 5 / CLI_CLAIM_N *
	    CLI_CLAIM_N) == 0)
		nclaim = CLI_CLAIM_N;
	saved = s->argv[3 + k];
	s->argv[3 + k] = NULL;
	t0 = now_s();
	run_ok(s->argv, NULL, devnull);
	te = now_s() - t0;
	s->argv[3 + k] = saved;
	for (done = 0; done < nclaim; done += n) {
		t0 = now_s();
		(void)run_read(claim, devnull, out, sizeof(out));
		tc += now_s() - t0;
		len = 0;
		n = 0;
		for (p = out; (p = lease_line(p, &id, &token)) != NULL; n++)
			len += (size_t)snprintf(lines + len, sizeof(lines) - len,
			    "%s %s ok\n", id, token);
		if (n == 0)
			errx(1, "spool-claim -n 100: nothing after %ld", done);
		if (n > nclaim - done)
			errx(1, "spool-claim -n 100: %ld leases", n);
		t0 = now_s();
		in = stdin_of(lines, len);
		run_ok(fin, NULL, in);
		(void)close(in);
		tf += now_s() - t0;
	}
	phase(s, "enqueue", k, te, -1);
	phase(s, "claim", done, tc, -1);
	phase(s, "finish", done, tf, -1);
	/* The round's line: the time of one job's whole cycle, from the
	 * rates of its three steps. */
	s->own_seconds = (te / (double)k + (tc + tf) / (double)done) *
	    (double)k;
}

/* The purge row: enqueue speed alone, into the spool that -s names. */
static void
enq_lib_op(struct sys *s, long k)
{
	long i;

	for (i = 0; i < k; i += BATCH)
		lib_enqueue(s, BATCH);
}

static void
enq_cli_op(struct sys *s, long k)
{
	char *enq[] = { enqueue_cmd, "-d", s->dir, payload_path,
	    NULL };
	long i;

	for (i = 0; i < k; i++)
		run_ok(enq, NULL, devnull);
}

/*
 * Many workers (row 10): P processes on one spool or one database, each
 * looping over the job cycle, all released at once and stopped by the
 * clock.  A pool of workers is forked once for each system, as many as the
 * largest P; a turn at P sets its first P to work for -T seconds (half in
 * the warm-up).  A worker answers with its cycles, the time its last cycle
 * ended and, for spool, its fsyncs.  The turn's time runs from the release
 * to the last cycle's end.  With -F DEV, the device's flushes over the turn
 * come from /proc/diskstats.
 */
struct order {
	double until;		/* no new cycle from then on */
};

struct reply {
	long cycles;
	long fsyncs;
	double end;
};

struct pool {
	struct sys proto;	/* the workers' common state, as forked */
	void (*prep)(struct sys *);	/* once, in qbench: the data */
	void (*setup)(struct sys *);	/* in each worker: its handle */
	void (*cycle)(struct sys *);
	int counts;		/* the library counts its fsyncs */
	int n;			/* workers started */
	int fd[MANY_MAX];	/* qbench's end of each worker's socket */
};

static int procs[8], nprocs;	/* -m: the P of each turn */
static double turn_slice;	/* -T */
static const char *pg_conninfo;	/* -q */
static const char *flush_dev;	/* -F */
static int pool_fds[5 * MANY_MAX], npool_fds;

/*
 * The flush requests the device has completed: the 16th field after its
 * name in /proc/diskstats (Linux 5.5 on; the 15th is the time spent on
 * discards), or -1.
 */
static long long
flushes_now(void)
{
	char line[512], name[64], *p, *f;
	long long v = -1;
	FILE *fp;
	int i;

	if (flush_dev == NULL || (fp = fopen("/proc/diskstats", "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (sscanf(line, "%*u %*u %63s", name) != 1 ||
		    strcmp(name, flush_dev) != 0)
			continue;
		p = strstr(line, name) + strlen(name);
		for (i = 0; (f = strtok(i == 0 ? p : NULL, " \n")) != NULL;
		    i++)
			if (i == 15) {
				v = atoll(f);
				break;
			}
		break;
	}
	(void)fclose(fp);
	return v;
}

/* A whole message from a worker; 0 if it is gone. */
static int
recv_all(int fd, void *buf, size_t n)
{
	char *p = buf;
	ssize_t r;

	while (n > 0) {
		if ((r = read(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "read from a worker");
		}
		if (r == 0)
			return 0;
		p += r;
		n -= (size_t)r;
	}
	return 1;
}

static void
worker_main(struct pool *pl, int fd)
{
	struct order o;
	struct reply r;
	struct sys w = pl->proto;
	unsigned long f0;

	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
	pl->setup(&w);
	memset(&r, 0, sizeof(r));
	write_all(fd, &r, sizeof(r));
	while (recv_all(fd, &o, sizeof(o))) {
		f0 = fsyncs_now();
		r.cycles = 0;
		do {
			pl->cycle(&w);
			r.cycles++;
		} while (now_s() < o.until);
		r.end = now_s();
		r.fsyncs = (long)(fsyncs_now() - f0);
		write_all(fd, &r, sizeof(r));
	}
	_exit(0);
}

/* Fork the pool's workers and wait until each has its handle. */
static void
pool_start(struct pool *pl, int n)
{
	struct reply r;
	pid_t pid;
	int sv[2], i;

	pl->prep(&pl->proto);
	if (fflush(stdout) == EOF)
		err(1, "stdout");
	for (i = 0; i < n; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
			err(1, "socketpair");
		if ((pid = fork()) == -1)
			err(1, "fork");
		if (pid == 0) {
			while (npool_fds > 0)
				(void)close(pool_fds[--npool_fds]);
			(void)close(sv[0]);
			worker_main(pl, sv[1]);
		}
		(void)close(sv[1]);
		pl->fd[i] = pool_fds[npool_fds++] = sv[0];
	}
	for (i = 0; i < n; i++)
		if (!recv_all(pl->fd[i], &r, sizeof(r)))
			errx(1, "%s: a worker failed to start", pl->proto.name);
	pl->n = n;
}

static void
many_init(struct sys *s)
{
	int i, max = 0;

	if (s->pool->n > 0)
		return;
	for (i = 0; i < nprocs; i++)
		if (procs[i] > max)
			max = procs[i];
	pool_start(s->pool, max);
}

static void
many_op(struct sys *s, long k)
{
	struct pool *pl = s->pool;
	struct order o;
	struct reply r;
	long long fl0, fl1;
	double t0, end = 0;
	long n = 0, f = 0;
	int i;

	(void)k;
	fl0 = flushes_now();
	t0 = now_s();
	o.until = t0 + (s->round == 0 ? turn_slice / 2 : turn_slice);
	for (i = 0; i < s->procs; i++)
		write_all(pl->fd[i], &o, sizeof(o));
	for (i = 0; i < s->procs; i++) {
		if (!recv_all(pl->fd[i], &r, sizeof(r)))
			errx(1, "%s: a worker died", s->name);
		n += r.cycles;
		f += r.fsyncs;
		if (r.end > end)
			end = r.end;
	}
	fl1 = flushes_now();
	s->own_seconds = end - t0;
	s->ran = n;
	s->own_fsyncs = pl->counts ? f : -1;
	if (fl0 >= 0 && fl1 >= fl0)
		printf("flush,%s,%s,%d,%ld,%lld\n", label, s->name, s->round, n,
		    fl1 - fl0);
}

/* spool: P library processes on one spool, a job a cycle. */
static void
many_spool_prep(struct sys *s)
{
	spool_make(s);
}

static void
many_spool_setup(struct sys *s)
{
	if ((s->sp = spool_open(s->dir)) == NULL)
		err(1, "spool_open %s", s->dir);
	payload_fds(s);
}

/*
 * A claim finds nothing while every due job is locked by another worker:
 * it asks again.
 */
static void
many_spool_cycle(struct sys *s)
{
	struct spool_claim_opts opts = { 0, "bench" };
	size_t m = 0;

	lib_enqueue(s, 1);
	while (m == 0)
		if (spool_claim(s->sp, &opts, s->leases, 1, &m) == -1)
			err(1, "spool_claim");
	memset(&s->fins[0], 0, sizeof(s->fins[0]));
	s->fins[0].id = s->leases[0].id;
	s->fins[0].token = s->leases[0].token;
	s->fins[0].outcome = SPOOL_OK;
	s->fins[0].delay_ms = -1;
	if (spool_finish(s->sp, s->fins, 1) == -1)
		err(1, "spool_finish");
	if (s->fins[0].res.status != 0)
		errx(1, "spool_finish: %s: status %d errno %d", s->fins[0].id,
		    s->fins[0].res.status, s->fins[0].res.err);
	spool_free_leases(s->leases, 1);
}

/* SQLite-WAL: one database, a connection a worker, waits by busy_timeout. */
static void
many_sqlite_prep(struct sys *s)
{
	db_open(s, 1);
	sqlite3_close(s->db);
	s->db = NULL;
}

static void
many_sqlite_setup(struct sys *s)
{
	char path[PATH_MAX];

	pathf(path, sizeof(path), "%s/queue.db", s->dir);
	if (sqlite3_open(path, &s->db) != SQLITE_OK)
		errx(1, "%s: %s", path, sqlite3_errmsg(s->db));
	sqlite3_busy_timeout(s->db, 60000);
	db_exec(s->db, "PRAGMA synchronous=FULL");
	sqlite_stmts(s);
	if ((s->fds[0] = open(payload_path, O_RDONLY | O_CLOEXEC)) == -1)
		err(1, "%s", payload_path);
}

static void
many_sqlite_cycle(struct sys *s)
{
	char buf[PAYLOAD_SIZE];
	long long id = 0, tok = 0, now;
	int got = 0;

	if (pread(s->fds[0], buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		err(1, "pread payload");
	sqlite3_bind_blob(s->ins, 1, buf, sizeof(buf), SQLITE_STATIC);
	sqlite3_bind_int64(s->ins, 2, now_ms());
	step_done(s->db, s->ins);
	while (!got) {
		now = now_ms();
		db_exec(s->db, "BEGIN IMMEDIATE");
		sqlite3_bind_int64(s->claim, 1, now + 30000);
		sqlite3_bind_int64(s->claim, 2, now);
		sqlite3_bind_int64(s->claim, 3, 1);
		if (sqlite3_step(s->claim) == SQLITE_ROW) {
			id = sqlite3_column_int64(s->claim, 0);
			tok = sqlite3_column_int64(s->claim, 1);
			got = 1;
		}
		(void)sqlite3_reset(s->claim);
		db_exec(s->db, "COMMIT");
	}
	sqlite3_bind_int64(s->fin, 1, id);
	sqlite3_bind_int64(s->fin, 2, tok);
	step_done(s->db, s->fin);
	if (sqlite3_changes(s->db) != 1)
		errx(1, "sqlite finish: %lld not leased", id);
}

/* beanstalkd -f 0: a client a worker. */
static void
many_bean_prep(struct sys *s)
{
	if (bean_port == 0)
		errx(1, "%s needs -p PORT", s->name);
}

static void
many_bean_cycle(struct sys *s)
{
	double t[3] = { 0, 0, 0 };

	bean_cycle(s, t);
}

/*
 * PostgreSQL: a connection a worker, each statement its own transaction,
 * committed with fsync=on and synchronous_commit=on (the server's
 * settings, which bench.sh gives).  A claim takes the oldest ready row
 * that no other claim holds: SELECT ... FOR UPDATE SKIP LOCKED.
 */
static void
pg_die(PGconn *c, const char *what)
{
	char *m = PQerrorMessage(c);

	errx(1, "postgresql: %s: %.*s", what, (int)strcspn(m, "\n"), m);
}

static PGconn *
pg_connect(void)
{
	double give_up = now_s() + 20;
	PGconn *c;

	if (pg_conninfo == NULL)
		errx(1, "many-pg needs -q CONNINFO");
	/* The script has just started the server: wait for it. */
	for (;;) {
		c = PQconnectdb(pg_conninfo);
		if (PQstatus(c) == CONNECTION_OK)
			return c;
		if (now_s() > give_up)
			pg_die(c, "connect");
		PQfinish(c);
		(void)usleep(50000);
	}
}

static void
pg_ok(PGconn *c, PGresult *res, const char *what)
{
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		pg_die(c, what);
}

static void
pg_exec(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);

	pg_ok(c, res, sql);
	PQclear(res);
}

static void
many_pg_prep(struct sys *s)
{
	PGconn *c = pg_connect();

	(void)s;
	pg_exec(c, "SET client_min_messages = warning");
	pg_exec(c, "CREATE TABLE IF NOT EXISTS jobs(id bigserial PRIMARY KEY, "
	    "payload bytea NOT NULL, state text NOT NULL, "
	    "token bigint NOT NULL DEFAULT 0, "
	    "attempts integer NOT NULL DEFAULT 0, "
	    "lease_until timestamptz, owner text)");
	pg_exec(c, "CREATE INDEX IF NOT EXISTS jobs_ready ON jobs(id) "
	    "WHERE state = 'ready'");
	PQfinish(c);
}

static void
pg_prepare(PGconn *c, const char *name, const char *sql, int n)
{
	PGresult *res = PQprepare(c, name, sql, n, NULL);

	pg_ok(c, res, name);
	PQclear(res);
}

static void
many_pg_setup(struct sys *s)
{
	s->pg = pg_connect();
	pg_prepare(s->pg, "ins", "INSERT INTO jobs(payload, state) "
	    "VALUES($1, 'ready')", 1);
	pg_prepare(s->pg, "claim", "UPDATE jobs SET state = 'running', "
	    "token = token + 1, attempts = attempts + 1, owner = 'bench', "
	    "lease_until = now() + interval '30 s' WHERE id = "
	    "(SELECT id FROM jobs WHERE state = 'ready' ORDER BY id "
	    "FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id, token", 0);
	pg_prepare(s->pg, "fin", "UPDATE jobs SET state = 'done', "
	    "lease_until = NULL WHERE id = $1 AND token = $2 AND "
	    "state = 'running'", 2);
}

/* A claim finds nothing while every ready row is held: it asks again. */
static void
many_pg_cycle(struct sys *s)
{
	const char *vals[2];
	int lens[2] = { PAYLOAD_SIZE, 0 }, fmts[2] = { 1, 0 };
	char id[32], tok[32];
	PGresult *res;

	vals[0] = payload;
	res = PQexecPrepared(s->pg, "ins", 1, vals, lens, fmts, 0);
	pg_ok(s->pg, res, "insert");
	PQclear(res);
	for (;;) {
		res = PQexecPrepared(s->pg, "claim", 0, NULL, NULL, NULL, 0);
		pg_ok(s->pg, res, "claim");
		if (PQntuples(res) == 1)
			break;
		PQclear(res);
	}
	pathf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
	pathf(tok, sizeof(tok), "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	vals[0] = id;
	vals[1] = tok;
	res = PQexecPrepared(s->pg, "fin", 2, vals, NULL, NULL, 0);
	pg_ok(s->pg, res, "finish");
	if (strcmp(PQcmdTuples(res), "1") != 0)
		errx(1, "postgresql finish: job %s not running", id);
	PQclear(res);
}

/*
 * The floor: the file work of one job's cycle as this layout does it, and
 * nothing else.  All workers share the directories and one audit log, as
 * a spool's processes on one host do.  The bucket path is fixed, so no
 * bucket is made or removed; nothing is locked or read.  A cycle's four
 * waits each submit their syncs side by side through io_uring and wait
 * once (spool-layout.md, "fsyncs per transition"):
 *
 *	enqueue: payload + sidecar + tmp/ + meta/;
 *	         audit log + the leaf + the middle and top buckets + new/;
 *	claim:   sidecar + audit log + leased/;
 *	finish:  sidecar + audit log + done/.
 */
enum { D_TMP, D_META, D_NEW, D_TOP, D_MID, D_LEAF, D_LEASED, D_DONE, D_N };
_Static_assert(D_N <= 8, "struct sys has dfd[8]");

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
	char path[PATH_MAX];
	int i, r;

	for (i = 0; i < D_N; i++)
		s->dfd[i] = open_dir(s->dir, floor_dirs[i]);
	pathf(path, sizeof(path), "%s/audit.log", s->dir);
	if ((s->logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0666)) == -1)
		err(1, "%s", path);
	if ((r = io_uring_queue_init(8, &s->ring, 0)) < 0)
		errx(1, "io_uring_queue_init: %s", strerror(-r));
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
		io_uring_prep_fsync(sqe, fds[j], data[j] ?
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
floor_line(struct sys *s, int fd, const char *ev, const char *id)
{
	char line[PAYLOAD_SIZE];
	int n;

	n = snprintf(line, sizeof(line), "t=1796026336000 ev=%s id=%s\n", ev,
	    id);
	if (n < 0 || (size_t)n >= sizeof(line))
		errx(1, "floor line too long");
	write_all(fd, line, (size_t)n);
	write_all(s->logfd, line, (size_t)n);
}

static void
many_floor_cycle(struct sys *s)
{
	static const int one[5] = { 1, 1, 0, 0, 0 };
	char id[64], tmpn[96], newn[96], leased[96];
	int fd, sc, fds[5];
	long seq = s->seq++;

	pathf(id, sizeof(id), "f%d.%ld", (int)getpid(), seq);
	pathf(tmpn, sizeof(tmpn), "%s,%d.%ld", id, (int)getpid(), seq);
	pathf(newn, sizeof(newn), "%s,1796026336000", id);
	pathf(leased, sizeof(leased), "%s,1", id);
	if ((fd = openat(s->dfd[D_TMP], tmpn, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0444)) == -1)
		err(1, "tmp/%s", tmpn);
	write_all(fd, payload, sizeof(payload));
	if ((sc = openat(s->dfd[D_META], id, O_WRONLY | O_CREAT | O_APPEND |
	    O_CLOEXEC, 0644)) == -1)
		err(1, "meta/%s", id);
	write_all(sc, "ev=enqueue\n", 11);
	fds[0] = fd;
	fds[1] = sc;
	fds[2] = s->dfd[D_TMP];
	fds[3] = s->dfd[D_META];
	ring_syncs(&s->ring, fds, one, 4);
	(void)close(fd);
	if (renameat(s->dfd[D_TMP], tmpn, s->dfd[D_LEAF], newn) == -1)
		err(1, "rename into new/");
	write_all(s->logfd, "ev=enqueue\n", 11);
	fds[0] = s->logfd;
	fds[1] = s->dfd[D_LEAF];
	fds[2] = s->dfd[D_MID];
	fds[3] = s->dfd[D_TOP];
	fds[4] = s->dfd[D_NEW];
	ring_syncs(&s->ring, fds, one, 5);
	if (renameat(s->dfd[D_LEAF], newn, s->dfd[D_LEASED], leased) == -1)
		err(1, "rename into leased/");
	floor_line(s, sc, "claim", id);
	fds[0] = sc;
	fds[1] = s->logfd;
	fds[2] = s->dfd[D_LEASED];
	ring_syncs(&s->ring, fds, one, 3);
	if (renameat(s->dfd[D_LEASED], leased, s->dfd[D_DONE], id) == -1)
		err(1, "rename into done/");
	floor_line(s, sc, "ok", id);
	fds[2] = s->dfd[D_DONE];
	ring_syncs(&s->ring, fds, one, 3);
	(void)close(sc);
}

static struct pool pools[] = {
	{ .proto = { .name = "many-spool" }, .prep = many_spool_prep,
	    .setup = many_spool_setup, .cycle = many_spool_cycle, .counts = 1 },
	{ .proto = { .name = "many-sqlite-wal" }, .prep = many_sqlite_prep,
	    .setup = many_sqlite_setup, .cycle = many_sqlite_cycle },
	{ .proto = { .name = "many-beanstalk" }, .prep = many_bean_prep,
	    .setup = bean_init, .cycle = many_bean_cycle },
	{ .proto = { .name = "many-pg" }, .prep = many_pg_prep,
	    .setup = many_pg_setup, .cycle = many_pg_cycle },
	{ .proto = { .name = "many-floor" }, .prep = many_floor_prep,
	    .setup = many_floor_setup, .cycle = many_floor_cycle },
};

/*
 * The runner (row 11): spool-run -j N with a no-op handler, draining jobs
 * enqueued untimed before it starts (--idle-exit 0: it exits once nothing
 * is due and no handler runs).  Beside it, the handler spawned with N in
 * flight and nothing else.
 */
static void
run_init(struct sys *s)
{
	if (truebin == NULL)
		errx(1, "%s needs -t TRUE", s->name);
	lib_spool_init(s);
	run_cmd = cmd_path("spool-run");
}

/* argv with stdin and stdout on /dev/null, and stderr too. */
static pid_t
start_quiet(char *const argv[])
{
	pid_t pid;

	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		if (dup2(devnull, 0) == -1 || dup2(devnull, 1) == -1 ||
		    dup2(devnull, 2) == -1)
			_exit(126);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	return pid;
}

static void
run_op(struct sys *s, long k)
{
	struct spool_claim_opts opts = { 0, "bench" };
	char jobs[16];
	char *argv[] = { run_cmd, "-d", s->dir, "-j", jobs, "--idle-exit", "0",
	    "--", (char *)truebin, NULL };
	double t0;
	size_t m;
	long i;
	int st;

	for (i = 0; i < k; i += BATCH)
		lib_enqueue(s, k - i < BATCH ? (size_t)(k - i) : BATCH);
	pathf(jobs, sizeof(jobs), "%d", s->procs);
	t0 = now_s();
	if ((st = reap(start_quiet(argv))) != 0)
		errx(1, "spool-run exited %d", st);
	s->own_seconds = now_s() - t0;
	if (spool_claim(s->sp, &opts, s->leases, 1, &m) == -1)
		err(1, "spool_claim");
	if (m != 0)
		errx(1, "spool-run exited with jobs due");
}

/*
 * The no-op handler started as spool-run starts it, by vfork(2) and
 * execve(2), with stdin, stdout and stderr on /dev/null: so that the floor
 * is not a fork of qbench and its libraries, nor posix_spawn(3)'s reset
 * of every signal's handler.  spool-run's own steps, its process group and
 * its keeper, are not here.
 */
static pid_t
spawn_true(void)
{
	char *argv[] = { (char *)truebin, NULL };
	pid_t pid;

	if ((pid = vfork()) == -1)
		err(1, "vfork");
	if (pid == 0) {
		if (dup2(devnull, 0) != -1 && dup2(devnull, 1) != -1 &&
		    dup2(devnull, 2) != -1)
			execve(truebin, argv, environ);
		_exit(127);
	}
	return pid;
}

/* Wait for pid, or for any child if -1: the no-op, which must exit 0. */
static void
reap_true(pid_t pid)
{
	int st;

	if ((st = reap(pid)) != 0)
		errx(1, "%s exited %d", truebin, st);
}

/*
 * The library's part of spool-run -j 1: a job at a time, the handler
 * spawned as spawn_true spawns it, then its finish and the next claim in
 * one spool_finish_claim, as the runner makes them.  What spool-run adds
 * to this is its own: the job's files, its log line, its poll, its keeper.
 */
static void
lib_j1_op(struct sys *s, long k)
{
	struct spool_claim_opts opts = { 0, "bench" };
	struct spool_finish f;
	struct spool_lease l[2];
	size_t m;
	double t0;
	long i, done = 0;

	for (i = 0; i < k; i += BATCH)
		lib_enqueue(s, k - i < BATCH ? (size_t)(k - i) : BATCH);
	t0 = now_s();
	if (spool_claim(s->sp, &opts, &l[0], 1, &m) == -1)
		err(1, "spool_claim");
	for (i = 0; m == 1; i ^= 1) {
		reap_true(spawn_true());
		memset(&f, 0, sizeof(f));
		f.id = l[i].id;
		f.token = l[i].token;
		f.outcome = SPOOL_OK;
		if (spool_finish_claim(s->sp, &f, 1, &opts, &l[i ^ 1], 1,
		    &m) == -1 || f.res.status != 0)
			err(1, "spool_finish_claim");
		spool_free_leases(&l[i], 1);
		done++;
	}
	s->own_seconds = now_s() - t0;
	if (done != k)
		errx(1, "%ld jobs done, not %ld", done, k);
}

/* The handler spawned with s->procs in flight, nothing else. */
static void
spawn_many_op(struct sys *s, long k)
{
	long started = 0, ended = 0;

	while (ended < k) {
		while (started < k && started - ended < s->procs) {
			(void)spawn_true();
			started++;
		}
		reap_true(-1);
		ended++;
	}
}

/* Name, setup, one round's work, its unit and default K. */
#define SYS(N, I, O, U, K) { .name = N, .init = I, .op = O, .unit = U, .k = K }
static struct sys table[] = {
	SYS("floor-spawn", spawn_init, spawn_op, 1, 200),
	SYS("floor-publish", floor_init, publish_op, 1, 200),
	SYS("floor-dirsync", floor_init, dirsync_op, 1, 200),
	SYS("floor-append", floor_init, append_op, 1, 200),
	SYS("floor-spawn-dyn", spawn_init, spawn_op, 1, 200),
	SYS("floor-wait3", wait3_init, wait3_op, 1, 200),
	SYS("floor-batch-fdatasync", batch_init, batch_fdatasync_op, BATCH,
	    BATCH * 4),
	SYS("floor-batch-syncfs", batch_init, batch_syncfs_op, BATCH,
	    BATCH * 4),
	SYS("floor-batch-cycle", batch_cycle_init, batch_cycle_op, BATCH,
	    BATCH * 4),
	SYS("cli-spool", cli_init, cli_spool_op, 1, 30),
	SYS("cli-sqlite-delete", cli_sqlite_delete_init, cli_sqlite_op, 1, 10),
	SYS("cli-sqlite-wal", cli_sqlite_wal_init, cli_sqlite_op, 1, 10),
	SYS("cli-nq", cli_nq_init, cli_nq_op, 1, 30),
	SYS("lib-spool", lib_spool_init, lib_spool_op, 1, 100),
	SYS("lib-sqlite-delete", lib_sqlite_delete_init, lib_sqlite_op, 1, 100),
	SYS("lib-sqlite-wal", lib_sqlite_wal_init, lib_sqlite_op, 1, 200),
	SYS("lib-beanstalk", bean_init, bean_op, 1, 200),
	{ .name = "lib-spool-limit", .init = lib_spool_limit_init,
	    .op = lib_spool_op, .unit = 1, .k = 100, .key = "k" },
	{ .name = "lib-spool-limit1", .init = lib_spool_limit1_init,
	    .op = lib_spool_op, .unit = 1, .k = 100, .key = "k" },
	{ .name = "lib-spool-rate", .init = lib_spool_rate_init,
	    .op = lib_spool_op, .unit = 1, .k = 100, .key = "k" },
	SYS("batch-lib-spool", lib_spool_init, batch_lib_spool_op, BATCH, BATCH * 4),
	SYS("batch-lib-spool-syncfs", lib_spool_syncfs_init, batch_lib_spool_op,
	    BATCH, BATCH * 4),
	SYS("batch-lib-sqlite-wal", lib_sqlite_wal_init, batch_sqlite_op, BATCH, BATCH * 4),
	SYS("batch-cli-spool", batch_cli_init, batch_cli_op, CLI_CLAIM_N, 10000),
	SYS("enq-lib", lib_spool_init, enq_lib_op, BATCH, BATCH * 4),
	SYS("enq-cli", cli_init, enq_cli_op, 1, 50),
	{ .name = "run-j16", .init = run_init, .op = run_op, .unit = 1,
	    .k = 200, .procs = 16 },
	{ .name = "run-j1", .init = run_init, .op = run_op, .unit = 1,
	    .k = 100, .procs = 1 },
	{ .name = "lib-j1", .init = run_init, .op = lib_j1_op, .unit = 1,
	    .k = 100, .procs = 1 },
	{ .name = "spawn-16", .init = spawn_init, .op = spawn_many_op,
	    .unit = 1, .k = 200, .procs = 16 },
	{ .name = "spawn-1", .init = spawn_init, .op = spawn_many_op,
	    .unit = 1, .k = 100, .procs = 1 },
};

static void
usage(void)
{
	fprintf(stderr, "usage: qbench -w WORKDIR -b BINDIR [-l LABEL] "
	    "[-r ROUNDS] [-T SLICE] [-t TRUE] [-p PORT] [-f FILES] [-c CLAIMS] "
	    "[-n FILES] [-u KIB] [-s SPOOL] [-m PROCS] [-q CONNINFO] [-F DEV] "
	    "SYSTEM[:K | =K] ...\n"
	    "       qbench -P -p PORT\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct sys *run[64];
	struct pool *kinds[sizeof(pools) / sizeof(pools[0])];
	int nkinds = 0;
	char *tok, *save;
	struct spool_counters c0, c1;
	double t0, secs;
	double slice = 0;
	int c, i, j, n = 0, rounds = 5, r, fd, probe = 0;
	long k;

	while ((c = getopt(argc, argv, "b:c:D:F:f:l:m:n:Pp:q:r:s:T:t:u:w:")) !=
	    -1) {
		switch (c) {
		case 'F':
			flush_dev = optarg;
			break;
		case 'm':
			for (tok = strtok_r(optarg, " ,", &save); tok != NULL;
			    tok = strtok_r(NULL, " ,", &save)) {
				if (nprocs == (int)(sizeof(procs) /
				    sizeof(procs[0])))
					errx(2, "-m: too many counts");
				procs[nprocs] = atoi(tok);
				if (procs[nprocs] < 1 ||
				    procs[nprocs] > MANY_MAX)
					errx(2, "-m %s: want 1 to %d", tok,
					    MANY_MAX);
				nprocs++;
			}
			break;
		case 'q':
			pg_conninfo = optarg;
			break;
		case 'P':
			probe = 1;
			break;
		case 'b':
			bindir = optarg;
			break;
		case 'c':
			cli_claims = atol(optarg);
			break;
		case 'f':
			cli_files = atoi(optarg);
			break;
		case 'l':
			label = optarg;
			break;
		case 'n':
			batch_files = atoi(optarg);
			break;
		case 'u':
			dirty_kib = atol(optarg);
			break;
		case 'p':
			bean_port = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 's':
			target_spool = optarg;
			break;
		case 'T':
			slice = atof(optarg);
			break;
		case 'D':
			truedyn = optarg;
			break;
		case 't':
			truebin = optarg;
			break;
		case 'w':
			workdir = optarg;
			break;
		default:
			usage();
		}
	}
	/* -P: only wait until beanstalkd answers on -p PORT. */
	if (probe) {
		struct sys s;

		memset(&s, 0, sizeof(s));
		bean_init(&s);
		return 0;
	}
	if (workdir == NULL || bindir == NULL || optind == argc ||
	    rounds < 1 || cli_files < 1 || batch_files < 1 ||
	    batch_files > BATCH || dirty_kib < 0)
		usage();
	if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1)
		err(1, "/dev/null");
	sqlite3_bin = which("sqlite3");
	nq_bin = which("nq");
	init_cmd = cmd_path("spool-init");
	enqueue_cmd = cmd_path("spool-enqueue");
	claim_cmd = cmd_path("spool-claim");
	finish_cmd = cmd_path("spool-finish");
	memset(payload, 'p', sizeof(payload) - 1);
	payload[sizeof(payload) - 1] = '\n';
	pathf(payload_path, sizeof(payload_path), "%s/payload",
	    workdir);
	if ((fd = open(payload_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0666)) == -1)
		err(1, "%s", payload_path);
	write_all(fd, payload, sizeof(payload));
	(void)close(fd);
	turn_slice = slice > 0 ? slice : 1;
	for (i = optind; i < argc; i++) {
		char *colon = strpbrk(argv[i], ":=");
		int fixed = colon != NULL && *colon == '=';

		/* many-*: a turn for each -m count, added below. */
		for (j = 0; j < (int)(sizeof(pools) / sizeof(pools[0])); j++)
			if (strcmp(pools[j].proto.name, argv[i]) == 0)
				break;
		if (j < (int)(sizeof(pools) / sizeof(pools[0]))) {
			if (nprocs == 0)
				errx(2, "%s needs -m PROCS", argv[i]);
			kinds[nkinds++] = &pools[j];
			continue;
		}

		if (colon != NULL)
			*colon = '\0';
		for (j = 0; j < (int)(sizeof(table) / sizeof(table[0])); j++)
			if (strcmp(table[j].name, argv[i]) == 0)
				break;
		if (j == (int)(sizeof(table) / sizeof(table[0])))
			errx(2, "unknown system %s", argv[i]);
		if (n == (int)(sizeof(run) / sizeof(run[0])))
			errx(2, "too many systems");
		run[n] = &table[j];
		run[n]->fixed = fixed;
		/* A floor batch's step is its -n files. */
		if (run[n]->init == batch_init && batch_files != BATCH) {
			run[n]->unit = batch_files;
			run[n]->k = 10L * batch_files;
		}
		if (colon != NULL)
			run[n]->k = atol(colon + 1);
		if (run[n]->k < run[n]->unit || run[n]->k % run[n]->unit != 0)
			errx(2, "%s: K must be a multiple of %ld", argv[i],
			    run[n]->unit);
		run[n]->init(run[n]);
		n++;
	}
	/* P by P, so that the systems at one P take turns next to each
	 * other; a pool is forked at its first turn's set-up. */
	for (i = 0; i < nprocs; i++)
		for (j = 0; j < nkinds; j++) {
			struct sys *m;
			char *nm;

			if (n == (int)(sizeof(run) / sizeof(run[0])))
				errx(2, "too many systems");
			if ((m = calloc(1, sizeof(*m))) == NULL)
				err(1, "calloc");
			if (asprintf(&nm, "%s-p%d", kinds[j]->proto.name,
			    procs[i]) == -1)
				err(1, "asprintf");
			m->name = nm;
			m->init = many_init;
			m->op = many_op;
			m->unit = 1;
			m->k = 1;
			m->fixed = 1;
			m->pool = kinds[j];
			m->procs = procs[i];
			m->init(m);
			run[n++] = m;
		}
	if (n == 0)
		usage();
	/*
	 * Round 0 warms the caches with a fifth of the work (a twentieth
	 * for a system named with =K: a big fixed step); it is not
	 * counted.  With -T, it also sizes each system's turn: as many cycles
	 * as fill SLICE seconds at the pace of round 0, so that a round takes
	 * the same time however loaded the machine is (a system named with
	 * =K keeps its K).
	 */
	for (r = 0; r <= rounds; r++)
		for (j = 0; j < n; j++) {
			struct sys *s = run[(j + r) % n];

			k = s->k;
			if (r == 0 && (k = k / (s->fixed ? 20 : 5) / s->unit *
			    s->unit) == 0)
				k = s->unit;
			s->round = r;
			s->own_seconds = -1;
			s->ran = -1;
			s->own_fsyncs = -1;
			spool_get_counters(&c0);
			t0 = now_s();
			s->op(s, k);
			secs = now_s() - t0;
			spool_get_counters(&c1);
			if (s->own_seconds >= 0)
				secs = s->own_seconds;
			if (r == 0 && slice > 0 && !s->fixed && secs > 0) {
				double steps = slice / (secs / (double)k) /
				    (double)s->unit;

				if (steps > 50.0 * (double)s->k / (double)s->unit)
					steps = 50.0 * (double)s->k /
					    (double)s->unit;
				/* A one-job system does at least 3 a turn. */
				if (s->unit == 1 && steps < 3)
					steps = 3;
				s->k = steps < 1 ? s->unit : (long)(steps + 0.5) *
				    s->unit;
			}
			/* Commands count in their own processes: -1. */
			printf("%s,%s,%d,%ld,%.9f,%ld,%ld\n", label, s->name, r,
			    s->ran >= 0 ? s->ran : k, secs, s->own_fsyncs >= 0 ?
			    s->own_fsyncs : s->sp != NULL ? (long)(c1.fsyncs -
			    c0.fsyncs) : -1L, s->sp != NULL ? (long)(c1.renames -
			    c0.renames) : -1L);
			if (fflush(stdout) == EOF)
				err(1, "stdout");
		}
	return 0;
}
