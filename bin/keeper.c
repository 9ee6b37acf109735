/*
 * keeper.c: a worker's handlers die with it, even when it is killed with
 * SIGKILL (spool-run(1), "Handlers and the worker").
 *
 * The keeper is a small process that the worker forks before it opens the
 * spool.  It holds the read end of a pipe; the worker holds the only write
 * end.  Each handler writes its own PID there after it has made its
 * process group, before it execs: so the keeper knows of a group before
 * anything can run in it.  The worker writes the PID negated before it
 * reaps the handler: until then the handler's zombie holds the ID, so
 * while the worker lives the keeper knows no group whose ID was given to
 * someone else.  Once it is gone, init reaps the handlers; the keeper's
 * SIGKILL follows its death by microseconds, and a group ID reused that
 * soon is a risk it takes.
 *
 * Invariant: when the pipe's last writer is gone, every group the keeper
 * knows of belongs to a handler of a worker that is gone.  The keeper then
 * kills each with SIGKILL, removes the worker's result directory, and
 * exits.  A worker that ends cleanly has forgotten every handler first.
 */
#define _GNU_SOURCE
#include <sys/prctl.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define KEPT_MAX	1024	/* more than the handlers of -j 256 */

/* Kill each group still listed, and say so on stderr. */
static void
kill_all(const pid_t *kept, size_t n)
{
	char msg[128];
	size_t i, killed = 0;
	int len;

	for (i = 0; i < n; i++)
		if (killpg(kept[i], SIGKILL) == 0)
			killed++;
	if (killed == 0)
		return;
	len = snprintf(msg, sizeof(msg), "%s: the worker is gone: killed "
	    "%zu handler%s and what %s started\n", progname, killed,
	    killed == 1 ? "" : "s", killed == 1 ? "it" : "they");
	if (len > 0)
		(void)write(2, msg, (size_t)len);	/* a last word */
}

/* The worker's result directory: the files its handlers left, then it. */
static void
remove_results(const char *resdir)
{
	struct dirent *d;
	DIR *dir;

	if ((dir = opendir(resdir)) == NULL)
		return;		/* the worker removed it, as it does */
	while ((d = readdir(dir)) != NULL)
		if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0)
			(void)unlinkat(dirfd(dir), d->d_name, 0);
	(void)closedir(dir);
	(void)rmdir(resdir);
}

static void __attribute__((noreturn))
keep(int fd, const char *resdir)
{
	pid_t kept[KEPT_MAX], msg[64];
	size_t n = 0, i, k, have = 0;
	ssize_t r;

	for (;;) {
		r = read(fd, (char *)msg + have, sizeof(msg) - have);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;	/* the worker and its handlers' execs are done */
		have += (size_t)r;
		for (i = 0; i < have / sizeof(pid_t); i++) {
			if (msg[i] > 0 && n < KEPT_MAX)
				kept[n++] = msg[i];
			for (k = 0; msg[i] < 0 && k < n; k++)
				if (kept[k] == -msg[i]) {
					kept[k] = kept[--n];
					break;
				}
		}
		/* A message cut in two: its start waits for its end. */
		memmove(msg, (char *)msg + i * sizeof(pid_t),
		    have % sizeof(pid_t));
		have %= sizeof(pid_t);
	}
	kill_all(kept, n);
	if (resdir != NULL)
		remove_results(resdir);
	_exit(0);
}

/*
 * Fork the keeper.  Returns the write end of its pipe (close-on-exec), or
 * -1 with errno.  *pid is the keeper's, which the worker reaps should it
 * end first.
 */
int
keeper_start(const char *resdir, pid_t *pid)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	if ((*pid = fork()) == -1) {
		(void)close(p[0]);
		(void)close(p[1]);
		return -1;
	}
	if (*pid == 0) {
		/*
		 * Nothing of the worker's stays open here but stderr: a lock
		 * or a pipe held by the keeper would outlive the worker.
		 */
		if (dup2(p[0], 3) == -1)
			_exit(111);
		(void)close_range(4, ~0U, 0);
		(void)close(0);
		(void)close(1);
		(void)signal(SIGINT, SIG_IGN);	/* a terminal's ^C is ours */
		(void)signal(SIGTERM, SIG_IGN);	/* and so is a stop */
		(void)signal(SIGHUP, SIG_IGN);
		(void)signal(SIGPIPE, SIG_IGN);
		(void)prctl(PR_SET_NAME, "spool-run-keep");
		keep(3, resdir);
	}
	(void)close(p[0]);
	return p[1];
}

/* In a handler, before its exec: the keeper knows of its group. */
int
keeper_enrol(int fd)
{
	pid_t me = getpid();

	return write(fd, &me, sizeof(me)) == (ssize_t)sizeof(me) ? 0 : -1;
}

/* In the worker, before it reaps pid: the keeper forgets its group. */
void
keeper_forget(int fd, pid_t pid)
{
	pid_t msg = -pid;

	(void)write(fd, &msg, sizeof(msg));	/* a keeper gone is reaped */
}
