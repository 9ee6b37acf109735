/*
 * faultshim: an LD_PRELOAD library that makes the k-th system call of one
 * family fail (or kills the process there), for the fault-injection tests
 * (tests/74-faults.bats) and the k-th-call crash walk (tests/76-syscrash.bats).
 *
 * Only calls that touch the spool count: a call counts when the path it
 * names, or the file its descriptor refers to (read from /proc/self/fd),
 * is SHIM_ROOT or below it.  So stdin, stdout, stderr, the payload files
 * given on the command line and whatever the C library opens for itself are
 * never counted and never failed; the spool's files, directories, sidecars,
 * audit log and next-expiry are.  A test that wants the spool's own name
 * (spool-init's mkdir, the fsync of its parent) to count sets SHIM_ROOT to
 * the spool's parent and keeps nothing else there.
 *
 * Environment:
 *   SHIM_ROOT=DIR      count only calls under DIR (unset: every call counts)
 *   SHIM_FAMILY=F      open read write fsync rename link unlink mkdir flock
 *                      close getdents, or all (every family, one count)
 *   SHIM_NTH=K         act on the K-th counted call of that family (from 1)
 *   SHIM_ERRNO=E       ENOSPC EIO EDQUOT EINTR: the call fails with E
 *                      without being made (close and closedir: after it is
 *                      made, as Linux releases the descriptor even when
 *                      close reports an error).  Only that one call fails,
 *                      so a retry after EINTR goes through.
 *   SHIM_STICKY=1      fail every counted call of the family from the K-th
 *                      on, not that one only (a full disk, for write)
 *   SHIM_ACTION=kill   instead, SIGKILL the process just before the call
 *   SHIM_LOG=FILE      append a line for every counted call: "N FAMILY
 *                      FUNCTION PATH", FUNCTION with "+creat" for an open
 *                      that may create and "+trunc" for one that may
 *                      truncate (what the crash walk needs to know which
 *                      calls change what is on disk)
 *   SHIM_COUNT=FILE    at exit (and before the kill) append what happened:
 *                      "FAMILY N" for every family, "total N", and
 *                      "fired FAMILY K ERRNO FUNCTION PATH" if it acted;
 *                      "close-retried FD" if a descriptor whose close was
 *                      failed is closed again while nothing has it open
 *                      (a retry, which in a threaded program could close
 *                      what another thread just opened).
 *
 * Threads: the library may fdatasync a batch's files from several threads
 * at once; the count and the decision are taken under one mutex, so each
 * call has its own number (the order of calls made at the same moment by
 * different threads is the order they reached the shim).
 *
 * Families and the functions that count in them:
 *   open     open open64 openat openat64 __open_2 __open64_2 __openat_2
 *            __openat64_2 creat creat64
 *   read     read pread pread64
 *   write    write pwrite pwrite64 ftruncate ftruncate64
 *   fsync    fsync fdatasync syncfs
 *   rename   rename renameat renameat2
 *   link     link linkat
 *   unlink   unlink unlinkat rmdir remove
 *   mkdir    mkdir mkdirat
 *   flock    flock, and fcntl/fcntl64 with a record-lock command
 *   close    close closedir
 *   getdents readdir readdir64 getdents64: glibc's readdir calls its own
 *            getdents64 without going through the dynamic linker, so the
 *            directory read is failed at the readdir call (which returns
 *            NULL with errno set, its state untouched, as glibc does when
 *            getdents64 fails).  Every readdir call counts, including those
 *            served from glibc's buffer: a superset of the real failure
 *            points.
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum family {
	F_OPEN, F_READ, F_WRITE, F_FSYNC, F_RENAME, F_LINK, F_UNLINK, F_MKDIR,
	F_FLOCK, F_CLOSE, F_GETDENTS, NFAMILY, F_ALL = NFAMILY, F_NONE
};

static const char *const family_name[NFAMILY] = {
	"open", "read", "write", "fsync", "rename", "link", "unlink", "mkdir",
	"flock", "close", "getdents"
};

/* Inside our own bookkeeping: calls made from there are not counted. */
static __thread int busy;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static struct {
	int ready;
	char root[PATH_MAX];
	size_t rootlen;			/* 0: every call counts */
	int family;			/* F_NONE: count only */
	long nth;
	int err;
	int kill;
	int sticky;
	char countfile[PATH_MAX];
	char logfile[PATH_MAX];
	int logfd;
	long count[NFAMILY], total;
	int fired;
	char fired_line[PATH_MAX + 128];
	int failed_close_fd;		/* closed by a failed close, not reused */
	int close_retried;
	int reported;
} S = { .family = F_NONE, .failed_close_fd = -1, .close_retried = -1,
    .logfd = -1 };

/* The real functions, found once. */
#define REAL(ret, name, args) \
	static ret (*real_##name) args; \
	if (real_##name == NULL) \
		real_##name = (ret (*) args)dlsym(RTLD_NEXT, #name)

static int
errno_from_name(const char *s)
{
	if (s == NULL)
		return EIO;
	if (strcmp(s, "ENOSPC") == 0)
		return ENOSPC;
	if (strcmp(s, "EIO") == 0)
		return EIO;
	if (strcmp(s, "EDQUOT") == 0)
		return EDQUOT;
	if (strcmp(s, "EINTR") == 0)
		return EINTR;
	return atoi(s) > 0 ? atoi(s) : EIO;
}

static const char *
errno_name(int e)
{
	switch (e) {
	case ENOSPC: return "ENOSPC";
	case EIO: return "EIO";
	case EDQUOT: return "EDQUOT";
	case EINTR: return "EINTR";
	default: return "E?";
	}
}

static void
shim_init(void)
{
	const char *s;
	char *real;
	int i;

	if (S.ready)
		return;
	S.ready = 1;
	if ((s = getenv("SHIM_ROOT")) != NULL && *s != '\0') {
		/* realpath opens nothing through us: it uses lstat/readlink. */
		if ((real = realpath(s, NULL)) != NULL) {
			(void)snprintf(S.root, sizeof(S.root), "%s", real);
			free(real);
		} else
			(void)snprintf(S.root, sizeof(S.root), "%s", s);
		S.rootlen = strlen(S.root);
		while (S.rootlen > 1 && S.root[S.rootlen - 1] == '/')
			S.root[--S.rootlen] = '\0';
	}
	if ((s = getenv("SHIM_FAMILY")) != NULL) {
		if (strcmp(s, "all") == 0)
			S.family = F_ALL;
		for (i = 0; i < NFAMILY; i++)
			if (strcmp(s, family_name[i]) == 0)
				S.family = i;
	}
	if ((s = getenv("SHIM_NTH")) != NULL)
		S.nth = atol(s);
	if (S.nth <= 0)
		S.family = F_NONE;
	S.err = errno_from_name(getenv("SHIM_ERRNO"));
	S.kill = (s = getenv("SHIM_ACTION")) != NULL && strcmp(s, "kill") == 0;
	S.sticky = (s = getenv("SHIM_STICKY")) != NULL && strcmp(s, "1") == 0;
	if ((s = getenv("SHIM_COUNT")) != NULL)
		(void)snprintf(S.countfile, sizeof(S.countfile), "%s", s);
	if ((s = getenv("SHIM_LOG")) != NULL)
		(void)snprintf(S.logfile, sizeof(S.logfile), "%s", s);
}

static void
log_call(int fam, const char *fn, const char *path)
{
	REAL(int, open, (const char *, int, ...));
	REAL(ssize_t, write, (int, const void *, size_t));
	char line[PATH_MAX + 128];
	int n;

	if (S.logfile[0] == '\0')
		return;
	if (S.logfd == -1 && (S.logfd = real_open(S.logfile, O_WRONLY |
	    O_APPEND | O_CREAT | O_CLOEXEC, 0666)) == -1)
		return;
	n = snprintf(line, sizeof(line), "%ld %s %s %s\n", S.total,
	    family_name[fam], fn, path);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!real_write(S.logfd, line, (size_t)n);
}

__attribute__((constructor)) static void
shim_ctor(void)
{
	int e = errno;

	shim_init();
	errno = e;
}

/* Append the counts to SHIM_COUNT, once. */
static void
report(const char *end)
{
	REAL(int, open, (const char *, int, ...));
	REAL(ssize_t, write, (int, const void *, size_t));
	REAL(int, close, (int));
	char buf[4096 + PATH_MAX];
	size_t len = 0;
	int fd, i;

	if (S.reported || S.countfile[0] == '\0')
		return;
	S.reported = 1;
	for (i = 0; i < NFAMILY; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %ld\n",
		    family_name[i], S.count[i]);
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "total %ld\n",
	    S.total);
	if (S.fired)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\n",
		    S.fired_line);
	if (S.close_retried != -1)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
		    "close-retried %d\n", S.close_retried);
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\n", end);
	if ((fd = real_open(S.countfile, O_WRONLY | O_APPEND | O_CREAT |
	    O_CLOEXEC, 0666)) == -1)
		return;
	(void)!real_write(fd, buf, len);
	(void)real_close(fd);
}

__attribute__((destructor)) static void
shim_dtor(void)
{
	int e = errno;

	(void)pthread_mutex_lock(&mu);
	report("exit");
	(void)pthread_mutex_unlock(&mu);
	errno = e;
}

static int
under_root(const char *path)
{
	if (S.rootlen == 0)
		return 1;
	return strncmp(path, S.root, S.rootlen) == 0 &&
	    (path[S.rootlen] == '\0' || path[S.rootlen] == '/');
}

static int
fd_path(int fd, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	if (fd < 0)
		return -1;
	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, buf, size - 1)) == -1)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int
at_path(int dirfd, const char *path, char *buf, size_t size)
{
	char dir[PATH_MAX];

	if (path == NULL)
		return -1;
	if (path[0] == '/') {
		(void)snprintf(buf, size, "%s", path);
		return 0;
	}
	if (dirfd == AT_FDCWD) {
		if (getcwd(dir, sizeof(dir)) == NULL)
			return -1;
	} else if (fd_path(dirfd, dir, sizeof(dir)) == -1)
		return -1;
	if ((size_t)snprintf(buf, size, "%.*s/%s", PATH_MAX / 2, dir,
	    path) >= size)
		return -1;	/* too long to say: not counted */
	return 0;
}

/*
 * The decision for one call of family fam on path (NULL: not resolvable,
 * not counted): 0 to make the call, or the errno to fail it with.  Kills
 * the process if that is the action.  errno is left as it was.
 */
static int
decide(int fam, const char *fn, const char *path)
{
	int e = errno, act;

	if (busy || path == NULL)
		return 0;
	busy = 1;
	(void)pthread_mutex_lock(&mu);
	shim_init();
	if (!under_root(path)) {
		(void)pthread_mutex_unlock(&mu);
		busy = 0;
		errno = e;
		return 0;
	}
	S.count[fam]++;
	S.total++;
	log_call(fam, fn, path);
	act = (S.family == fam && (S.count[fam] == S.nth ||
	    (S.sticky && S.count[fam] > S.nth))) ||
	    (S.family == F_ALL && (S.total == S.nth ||
	    (S.sticky && S.total > S.nth)));
	if (act && !S.fired) {
		S.fired = 1;
		(void)snprintf(S.fired_line, sizeof(S.fired_line),
		    "fired %s %ld %s %s %s", family_name[fam],
		    S.family == F_ALL ? S.total : S.count[fam],
		    S.kill ? "KILL" : errno_name(S.err), fn, path);
		if (S.kill) {
			report("killed");
			(void)kill(getpid(), SIGKILL);
		}
	}
	(void)pthread_mutex_unlock(&mu);
	busy = 0;
	errno = e;
	return act ? S.err : 0;
}

static int
decide_fd(int fam, const char *fn, int fd)
{
	char path[PATH_MAX];
	int e = errno, r;

	if (busy)
		return 0;
	busy = 1;
	r = fd_path(fd, path, sizeof(path));
	busy = 0;
	errno = e;
	return decide(fam, fn, r == 0 ? path : NULL);
}

static int
decide_at(int fam, const char *fn, int dirfd, const char *p)
{
	char path[PATH_MAX];
	int e = errno, r;

	if (busy)
		return 0;
	busy = 1;
	r = at_path(dirfd, p, path, sizeof(path));
	busy = 0;
	errno = e;
	return decide(fam, fn, r == 0 ? path : NULL);
}

/* A descriptor handed out again is no longer one a retry could hit. */
static void
fd_reused(int fd)
{
	int want = fd;

	if (fd >= 0)
		(void)__atomic_compare_exchange_n(&S.failed_close_fd, &want, -1,
		    0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

#define FAIL(err) do { errno = (err); return -1; } while (0)

static mode_t
mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ?
	    (mode_t)va_arg(ap, int) : 0;
}

/* open */

/* The name logged for an open: "+creat", "+trunc" if it may change the disk. */
static const char *
open_fn(const char *name, int flags)
{
	static __thread char buf[64];

	(void)snprintf(buf, sizeof(buf), "%s%s%s", name,
	    flags & O_CREAT ? "+creat" : "", flags & O_TRUNC ? "+trunc" : "");
	return buf;
}

#define OPEN_WRAPPER(name) \
int \
name(const char *path, int flags, ...) \
{ \
	REAL(int, name, (const char *, int, ...)); \
	va_list ap; \
	mode_t mode; \
	int err, fd; \
 \
	va_start(ap, flags); \
	mode = mode_arg(flags, ap); \
	va_end(ap); \
	if ((err = decide_at(F_OPEN, open_fn(#name, flags), AT_FDCWD, \
	    path)) != 0) \
		FAIL(err); \
	fd = real_##name(path, flags, mode); \
	fd_reused(fd); \
	return fd; \
}
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

#define OPENAT_WRAPPER(name) \
int \
name(int dirfd, const char *path, int flags, ...) \
{ \
	REAL(int, name, (int, const char *, int, ...)); \
	va_list ap; \
	mode_t mode; \
	int err, fd; \
 \
	va_start(ap, flags); \
	mode = mode_arg(flags, ap); \
	va_end(ap); \
	if ((err = decide_at(F_OPEN, open_fn(#name, flags), dirfd, \
	    path)) != 0) \
		FAIL(err); \
	fd = real_##name(dirfd, path, flags, mode); \
	fd_reused(fd); \
	return fd; \
}
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)

int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);

int
__open_2(const char *path, int flags)
{
	return open(path, flags);
}

int
__open64_2(const char *path, int flags)
{
	return open64(path, flags);
}

int
__openat_2(int dirfd, const char *path, int flags)
{
	return openat(dirfd, path, flags);
}

int
__openat64_2(int dirfd, const char *path, int flags)
{
	return openat64(dirfd, path, flags);
}

int
creat(const char *path, mode_t mode)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int
creat64(const char *path, mode_t mode)
{
	return open64(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int
dup(int fd)
{
	REAL(int, dup, (int));
	int r = real_dup(fd);

	fd_reused(r);
	return r;
}

int
dup2(int fd, int to)
{
	REAL(int, dup2, (int, int));
	int r = real_dup2(fd, to);

	fd_reused(r);
	return r;
}

/* read */

ssize_t
read(int fd, void *buf, size_t n)
{
	REAL(ssize_t, read, (int, void *, size_t));
	int err;

	if ((err = decide_fd(F_READ, "read", fd)) != 0)
		FAIL(err);
	return real_read(fd, buf, n);
}

ssize_t
pread(int fd, void *buf, size_t n, off_t off)
{
	REAL(ssize_t, pread, (int, void *, size_t, off_t));
	int err;

	if ((err = decide_fd(F_READ, "pread", fd)) != 0)
		FAIL(err);
	return real_pread(fd, buf, n, off);
}

ssize_t
pread64(int fd, void *buf, size_t n, off64_t off)
{
	REAL(ssize_t, pread64, (int, void *, size_t, off64_t));
	int err;

	if ((err = decide_fd(F_READ, "pread64", fd)) != 0)
		FAIL(err);
	return real_pread64(fd, buf, n, off);
}

/* write */

ssize_t
write(int fd, const void *buf, size_t n)
{
	REAL(ssize_t, write, (int, const void *, size_t));
	int err;

	if ((err = decide_fd(F_WRITE, "write", fd)) != 0)
		FAIL(err);
	return real_write(fd, buf, n);
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(ssize_t, pwrite, (int, const void *, size_t, off_t));
	int err;

	if ((err = decide_fd(F_WRITE, "pwrite", fd)) != 0)
		FAIL(err);
	return real_pwrite(fd, buf, n, off);
}

ssize_t
pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	REAL(ssize_t, pwrite64, (int, const void *, size_t, off64_t));
	int err;

	if ((err = decide_fd(F_WRITE, "pwrite64", fd)) != 0)
		FAIL(err);
	return real_pwrite64(fd, buf, n, off);
}

int
ftruncate(int fd, off_t len)
{
	REAL(int, ftruncate, (int, off_t));
	int err;

	if ((err = decide_fd(F_WRITE, "ftruncate", fd)) != 0)
		FAIL(err);
	return real_ftruncate(fd, len);
}

int
ftruncate64(int fd, off64_t len)
{
	REAL(int, ftruncate64, (int, off64_t));
	int err;

	if ((err = decide_fd(F_WRITE, "ftruncate64", fd)) != 0)
		FAIL(err);
	return real_ftruncate64(fd, len);
}

/* fsync */

int
fsync(int fd)
{
	REAL(int, fsync, (int));
	int err;

	if ((err = decide_fd(F_FSYNC, "fsync", fd)) != 0)
		FAIL(err);
	return real_fsync(fd);
}

int
fdatasync(int fd)
{
	REAL(int, fdatasync, (int));
	int err;

	if ((err = decide_fd(F_FSYNC, "fdatasync", fd)) != 0)
		FAIL(err);
	return real_fdatasync(fd);
}

/* syncfs: the file system of the descriptor's file, counted as its file */
int
syncfs(int fd)
{
	REAL(int, syncfs, (int));
	int err;

	if ((err = decide_fd(F_FSYNC, "syncfs", fd)) != 0)
		FAIL(err);
	return real_syncfs(fd);
}

/* rename: counted if either name is under the root (decided on the target) */

static int
decide_two(int fam, const char *fn, int fromfd, const char *from, int tofd,
    const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];
	int e = errno, ra, rb;

	if (busy)
		return 0;
	busy = 1;
	ra = at_path(fromfd, from, a, sizeof(a));
	rb = at_path(tofd, to, b, sizeof(b));
	busy = 0;
	errno = e;
	if (rb == 0 && under_root(b))
		return decide(fam, fn, b);
	return decide(fam, fn, ra == 0 ? a : NULL);
}

int
rename(const char *from, const char *to)
{
	REAL(int, rename, (const char *, const char *));
	int err;

	if ((err = decide_two(F_RENAME, "rename", AT_FDCWD, from, AT_FDCWD,
	    to)) != 0)
		FAIL(err);
	return real_rename(from, to);
}

int
renameat(int fromfd, const char *from, int tofd, const char *to)
{
	REAL(int, renameat, (int, const char *, int, const char *));
	int err;

	if ((err = decide_two(F_RENAME, "renameat", fromfd, from, tofd,
	    to)) != 0)
		FAIL(err);
	return real_renameat(fromfd, from, tofd, to);
}

int
renameat2(int fromfd, const char *from, int tofd, const char *to,
    unsigned int flags)
{
	REAL(int, renameat2, (int, const char *, int, const char *,
	    unsigned int));
	int err;

	if ((err = decide_two(F_RENAME, "renameat2", fromfd, from, tofd,
	    to)) != 0)
		FAIL(err);
	return real_renameat2(fromfd, from, tofd, to, flags);
}

/* link */

int
link(const char *from, const char *to)
{
	REAL(int, link, (const char *, const char *));
	int err;

	if ((err = decide_two(F_LINK, "link", AT_FDCWD, from, AT_FDCWD,
	    to)) != 0)
		FAIL(err);
	return real_link(from, to);
}

int
linkat(int fromfd, const char *from, int tofd, const char *to, int flags)
{
	REAL(int, linkat, (int, const char *, int, const char *, int));
	int err;

	if ((err = decide_two(F_LINK, "linkat", fromfd, from, tofd, to)) != 0)
		FAIL(err);
	return real_linkat(fromfd, from, tofd, to, flags);
}

/* unlink */

int
unlink(const char *path)
{
	REAL(int, unlink, (const char *));
	int err;

	if ((err = decide_at(F_UNLINK, "unlink", AT_FDCWD, path)) != 0)
		FAIL(err);
	return real_unlink(path);
}

int
unlinkat(int dirfd, const char *path, int flags)
{
	REAL(int, unlinkat, (int, const char *, int));
	int err;

	if ((err = decide_at(F_UNLINK, "unlinkat", dirfd, path)) != 0)
		FAIL(err);
	return real_unlinkat(dirfd, path, flags);
}

int
rmdir(const char *path)
{
	REAL(int, rmdir, (const char *));
	int err;

	if ((err = decide_at(F_UNLINK, "rmdir", AT_FDCWD, path)) != 0)
		FAIL(err);
	return real_rmdir(path);
}

int
remove(const char *path)
{
	REAL(int, remove, (const char *));
	int err;

	if ((err = decide_at(F_UNLINK, "remove", AT_FDCWD, path)) != 0)
		FAIL(err);
	return real_remove(path);
}

/* mkdir */

int
mkdir(const char *path, mode_t mode)
{
	REAL(int, mkdir, (const char *, mode_t));
	int err;

	if ((err = decide_at(F_MKDIR, "mkdir", AT_FDCWD, path)) != 0)
		FAIL(err);
	return real_mkdir(path, mode);
}

int
mkdirat(int dirfd, const char *path, mode_t mode)
{
	REAL(int, mkdirat, (int, const char *, mode_t));
	int err;

	if ((err = decide_at(F_MKDIR, "mkdirat", dirfd, path)) != 0)
		FAIL(err);
	return real_mkdirat(dirfd, path, mode);
}

/* flock, and fcntl's record locks */

int
flock(int fd, int op)
{
	REAL(int, flock, (int, int));
	int err;

	if ((err = decide_fd(F_FLOCK, "flock", fd)) != 0)
		FAIL(err);
	return real_flock(fd, op);
}

static int
is_lock_cmd(int cmd)
{
	switch (cmd) {
	case F_GETLK:
	case F_SETLK:
	case F_SETLKW:
	case F_OFD_GETLK:
	case F_OFD_SETLK:
	case F_OFD_SETLKW:
		return 1;
	default:
		return 0;
	}
}

#define FCNTL_WRAPPER(name) \
int \
name(int fd, int cmd, ...) \
{ \
	REAL(int, name, (int, int, ...)); \
	va_list ap; \
	void *arg; \
	int err, r; \
 \
	va_start(ap, cmd); \
	arg = va_arg(ap, void *);	/* every cmd takes one word or none */ \
	va_end(ap); \
	if (is_lock_cmd(cmd) && \
	    (err = decide_fd(F_FLOCK, #name, fd)) != 0) \
		FAIL(err); \
	r = real_##name(fd, cmd, arg); \
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) \
		fd_reused(r); \
	return r; \
}
FCNTL_WRAPPER(fcntl)
FCNTL_WRAPPER(fcntl64)

/* close: the descriptor is gone even when close reports an error */

int
close(int fd)
{
	REAL(int, close, (int));
	REAL(int, fcntl, (int, int, ...));
	int err, r, e = errno;

	if (fd >= 0 && fd == __atomic_load_n(&S.failed_close_fd,
	    __ATOMIC_SEQ_CST)) {
		/*
		 * Closing again what a failed close released, while nothing
		 * has opened it since (by a call this shim does not see): a
		 * retry.
		 */
		if (real_fcntl(fd, F_GETFD) == -1 && errno == EBADF)
			S.close_retried = fd;
		__atomic_store_n(&S.failed_close_fd, -1, __ATOMIC_SEQ_CST);
		errno = e;
	}
	err = decide_fd(F_CLOSE, "close", fd);
	r = real_close(fd);
	if (err != 0) {
		__atomic_store_n(&S.failed_close_fd, fd, __ATOMIC_SEQ_CST);
		FAIL(err);
	}
	return r;
}

int
closedir(DIR *d)
{
	REAL(int, closedir, (DIR *));
	int err, r;

	err = decide_fd(F_CLOSE, "closedir", dirfd(d));
	r = real_closedir(d);
	if (err != 0)
		FAIL(err);
	return r;
}

/* getdents, at readdir */

struct dirent *
readdir(DIR *d)
{
	REAL(struct dirent *, readdir, (DIR *));
	int err;

	if ((err = decide_fd(F_GETDENTS, "readdir", dirfd(d))) != 0) {
		errno = err;
		return NULL;
	}
	return real_readdir(d);
}

struct dirent64 *
readdir64(DIR *d)
{
	REAL(struct dirent64 *, readdir64, (DIR *));
	int err;

	if ((err = decide_fd(F_GETDENTS, "readdir64", dirfd(d))) != 0) {
		errno = err;
		return NULL;
	}
	return real_readdir64(d);
}

ssize_t
getdents64(int fd, void *buf, size_t n)
{
	REAL(ssize_t, getdents64, (int, void *, size_t));
	int err;

	if ((err = decide_fd(F_GETDENTS, "getdents64", fd)) != 0)
		FAIL(err);
	return real_getdents64(fd, buf, n);
}
