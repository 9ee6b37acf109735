/*
 * The test build's hooks: crash points, pauses, a pinned clock, a sync
 * skipped, and the other SPOOL_TEST_* variables that tests/README.md
 * lists.  They are compiled only with -DSPOOL_TESTING, into the library
 * the suite links (tests/libspool-test.a).  The library that make install
 * and the Debian packages ship has none: there each hook gives the answer
 * of a spool with no test around, and no environment variable can make
 * it skip a sync or move its clock.
 */
#define _GNU_SOURCE
#include <sys/timex.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifdef SPOOL_TESTING

/* A variable's number, read once: 0 if unset. */
static long
number(const char *name, long *cache)
{
	const char *s;

	if (*cache == -1)
		*cache = (s = getenv(name)) != NULL ? strtol(s, NULL, 10) : 0;
	return *cache;
}

/*
 * SPOOL_TEST_NOW=MS pins the clock, so that a test can stand exactly on a
 * lease's expiry.  It is read on every call: a test may move it between
 * the commands of one process's life.
 */
static int64_t
pinned_now(void)
{
	const char *s = getenv("SPOOL_TEST_NOW");
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	return errno == 0 && *end == '\0' && v >= 0 ? (int64_t)v : -1;
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
 * SPOOL_TEST_CRASH=point[:n] kills the process with SIGKILL the n-th
 * time (default the first) it reaches the named point: the crash tests
 * walk every point that tests/README.md lists.  SPOOL_TEST_PAUSE=point[:n]
 * stops it there instead (SIGSTOP), so that a test can act on the spool
 * from another host before it goes on (SIGCONT).
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

/*
 * SPOOL_TEST_SKIP_SYNC=N: the process's N-th sync (from 1, in the order
 * the calls are made) is not made but reported done, so that the
 * power-cut explorer can show what each sync is for.
 */
long
hook_skip_sync(void)
{
	static long at = -1;

	return number("SPOOL_TEST_SKIP_SYNC", &at);
}

/* SPOOL_TEST_NO_URING=1: the threads make every sync, which strace sees. */
int
hook_no_uring(void)
{
	static long off = -1;

	return number("SPOOL_TEST_NO_URING", &off) != 0;
}

/*
 * The ring's own hooks, which make it at a handle's first wait:
 * SPOOL_TEST_RING_FAIL=N makes its N-th sync (from 1, in the order they
 * complete) report EIO; SPOOL_TEST_RING_LOG=FILE gets a line for each.
 */
int
hook_ring_tested(void)
{
	static int tested = -1;

	if (tested == -1)
		tested = getenv("SPOOL_TEST_RING_FAIL") != NULL ||
		    getenv("SPOOL_TEST_RING_LOG") != NULL;
	return tested;
}

int
hook_ring_result(int res)
{
	static long failat = -1, nth;
	static int logfd = -2;
	const char *s;
	char line[32];
	int n;

	if (number("SPOOL_TEST_RING_FAIL", &failat) > 0 && ++nth == failat)
		res = -EIO;
	if (logfd == -2)
		logfd = (s = getenv("SPOOL_TEST_RING_LOG")) != NULL ?
		    open(s, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) :
		    -1;
	/* A line this short is written whole, or the test sees it is not. */
	if (logfd >= 0 && (n = snprintf(line, sizeof(line), "sync %d\n",
	    res)) > 0)
		(void)write(logfd, line, (size_t)n);
	return res;
}

/* SPOOL_TEST_SYNCFS_MIN=N: a wait of N syncs is one syncfs; 0: unset. */
long
hook_syncfs_min(void)
{
	static long min = -1;

	return number("SPOOL_TEST_SYNCFS_MIN", &min);
}

/*
 * SPOOL_TEST_NOREPLACE=off: every move goes without RENAME_NOREPLACE
 * (link and unlink, or check and rename), so that the tests cover them.
 */
int
hook_no_noreplace(void)
{
	const char *s = getenv("SPOOL_TEST_NOREPLACE");

	return s != NULL && strcmp(s, "off") == 0;
}

/* SPOOL_TEST_MOUNTINFO=FILE: the mount table the file-system check reads. */
const char *
hook_mountinfo(void)
{
	const char *s = getenv("SPOOL_TEST_MOUNTINFO");

	return s != NULL && *s != '\0' ? s : "/proc/self/mountinfo";
}

/* SPOOL_TEST_LOCK_WAIT=MS: the longest wait for a lock; -1: unset. */
int64_t
hook_lock_wait(void)
{
	const char *s = getenv("SPOOL_TEST_LOCK_WAIT");
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno == 0 && *end == '\0' && v >= 0 ? v : -1;
}

/* SPOOL_TEST_CLOCK=synced|unsynced: 1 or 0; -1: ask the kernel. */
int
hook_clock(void)
{
	const char *t = getenv("SPOOL_TEST_CLOCK");

	if (t != NULL && strcmp(t, "synced") == 0)
		return 1;
	if (t != NULL && strcmp(t, "unsynced") == 0)
		return 0;
	return -1;
}

/* SPOOL_TEST_BOOT_ID=ID stands for the kernel's boot ID; NULL: unset. */
const char *
hook_boot_id(void)
{
	return getenv("SPOOL_TEST_BOOT_ID");
}

/*
 * SPOOL_TEST_ENOMEM=point[:n]: the n-th time (default the first) the
 * process reaches the named point, the allocation there fails as if
 * memory ran out.
 */
int
hook_enomem(const char *name)
{
	static int hits;

	return point_hit("SPOOL_TEST_ENOMEM", name, &hits);
}

#else	/* the shipped build: no test around */

static int64_t
pinned_now(void)
{
	return -1;
}

void
crash_point(const char *name)
{
	(void)name;
}

long
hook_skip_sync(void)
{
	return 0;
}

int
hook_no_uring(void)
{
	return 0;
}

int
hook_ring_tested(void)
{
	return 0;
}

int
hook_ring_result(int res)
{
	return res;
}

long
hook_syncfs_min(void)
{
	return 0;
}

int
hook_no_noreplace(void)
{
	return 0;
}

const char *
hook_mountinfo(void)
{
	return "/proc/self/mountinfo";
}

int64_t
hook_lock_wait(void)
{
	return -1;
}

int
hook_clock(void)
{
	return -1;
}

const char *
hook_boot_id(void)
{
	return NULL;
}

int
hook_enomem(const char *name)
{
	(void)name;
	return 0;
}

#endif

/* Milliseconds since the epoch. */
int64_t
now_ms(void)
{
	struct timespec ts;
	int64_t pinned;

	if ((pinned = pinned_now()) != -1)
		return pinned;
	(void)clock_gettime(CLOCK_REALTIME, &ts);	/* cannot fail */
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
spool_now(void)
{
	return now_ms();
}

/*
 * Whether the system clock is synchronised, and its error bound: the
 * kernel's, or a test's clock of known state.
 */
int
spool_clock(int64_t *maxerror_ms)
{
	struct timex tx;
	int r;

	if ((r = hook_clock()) != -1) {
		*maxerror_ms = 16;	/* a test's clock of known state */
		return r;
	}
	memset(&tx, 0, sizeof(tx));
	if ((r = adjtimex(&tx)) == -1) {
		*maxerror_ms = -1;
		return 0;
	}
	*maxerror_ms = tx.maxerror / 1000;	/* microseconds */
	return r != TIME_ERROR && (tx.status & STA_UNSYNC) == 0;
}
