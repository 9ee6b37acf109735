/*
 * spool-run: a worker.  It claims jobs, runs HANDLER once per job with the
 * payload on stdin, renews each lease while its handler runs, and turns the
 * way the handler ended into a finish.
 *
 * Everything happens in one loop around one blocking ppoll(2), on a
 * signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP), an inotify watch of audit/
 * (every transition made on this host appends to audit/HOST.log, so an
 * enqueue, a retry or a redrive wakes the worker) and each handler's stderr
 * pipe.  Its timeout is the earliest of: the spool's next due time (only
 * while a slot is free), each handler's next renewal, timeout or kill, the
 * end of the grace and the idle exit.  An idle worker sleeps in that one
 * call with no timeout at all.  While a handler runs, an audit line also
 * makes the worker look for its job in leased/: a cancel stops it at once.
 *
 * A keeper (keeper.c), forked first, kills the handlers' process groups
 * when the worker is gone, even by SIGKILL.
 *
 * Invariant: the worker holds at most -j leases, one per slot, and claims
 * only into free slots.  It finishes a job only after reaping its handler,
 * only with the token it claimed, and never after a renew of that token was
 * refused: a lost lease belongs to someone else.
 */
#define _GNU_SOURCE
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

const char *usage_text = "spool-run [-d DIR] [--grace DUR] [--idle-exit DUR] "
    "[-j N] [--lease DUR] [--max-jobs N] [--once] [--owner NAME] "
    "[--timeout DUR] -- HANDLER [ARG ...]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR           the spool (default: $SPOOL_DIR)\n"
    "  --grace DUR      on SIGTERM, time to finish (default: 30s)\n"
    "  --idle-exit DUR  exit after DUR with nothing to claim (default: never)\n"
    "  -j N             handlers at once, 1 to 256 (default: 1)\n"
    "  --lease DUR      each job's lease (default: the spool's lease, 30s)\n"
    "  --max-jobs N     exit after N deliveries (default: no limit)\n"
    "  --once           run one job if one is due, and exit\n"
    "  --owner NAME     who holds the leases (default: HOST:PID)\n"
    "  --timeout DUR    stop a handler after DUR (default: the spool's, 1h)\n";

#define NEVER		INT64_MAX
#define SLOTS_MAX	256	/* -j: one stderr pipe each, well under 1024 fds */
/* The handlers that ended together are finished in one call. */
_Static_assert(SLOTS_MAX <= SPOOL_BATCH_MAX, "a finish of every slot");
#define KILL_AFTER_MS	5000	/* a handler told to stop gets SIGKILL after */
#define FALLBACK_MS	1000	/* without inotify, look at the spool this often */
#define RECHECK_MS	1000	/* due, yet nothing could be claimed: look again */
#define LOOK_MS		200	/* leases looked at at most this often */
#define CLOCK_NAG_MS	600000	/* an unsynchronised clock is named this often */
#define RESULT_MAX	256	/* longest $SPOOL_RESULT read */

extern char **environ;

enum state { FREE, CLAIMED, RUNNING };

/* Why the worker stopped a handler. */
enum stop { STOP_NONE, STOP_TIMEOUT, STOP_SHUTDOWN, STOP_LOST,
    STOP_CANCELLED };

/* A lease lost or cancelled: the delivery is no longer ours to finish. */
#define GONE(stop)	((stop) == STOP_LOST || (stop) == STOP_CANCELLED)

struct slot {
	enum state state;
	struct spool_lease lease;	/* lease.path is this slot's to free */
	pid_t pid;		/* the handler, leader of its process group */
	struct relay err;	/* its stderr, relayed to ours */
	int64_t started;	/* monotonic ms: the handler's start */
	int64_t lease_ms;	/* the lease's length, for the renewals */
	int64_t expires;	/* our lease runs out then unless renewed */
	int64_t renew_at, timeout_at, kill_at;	/* monotonic ms, or NEVER */
	enum stop stop;
};

static struct {
	struct spool *sp;
	char *dir;		/* the spool, absolute, for SPOOL_DIR */
	struct spool_claim_opts copts;
	char **handler;
	int64_t timeout_ms, grace_ms, idle_ms;	/* timeout_ms -1: config's */
	long max_jobs, taken;	/* max_jobs 0: no limit */
	int once;
	struct slot *slots;
	struct spool_lease *claimed;
	size_t nslots, busy;
	int sigfd, inofd;
	char *resdir;		/* private: the handlers' result files */
	int resdirfd;
	int stopping;
	int64_t grace_end, due_at, idle_since;
	int64_t claimed_at;	/* the spool's clock before the last claim */
	int want_claim;
	int placing;		/* start_jobs: a reap then only finishes */
	int status;
	struct spool_settings set;
	int64_t clock_said;	/* monotonic: when the clock warning was given */
	int keepfd;		/* the keeper's pipe (keeper.c) */
	pid_t keeper;
	volatile int spawn_err;	/* set by a vfork child that could not exec */
	int news;		/* the spool changed: are our leases still ours? */
	int64_t looked;		/* monotonic: when they were last looked at */
} w;

static int64_t
mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);	/* cannot fail */
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The spool's clock, in which due times and lease expiries are given. */
static int64_t
wall_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* now + ms, where ms may be as long as a duration can be. */
static int64_t
after(int64_t now, int64_t ms)
{
	return ms > NEVER - now ? NEVER : now + ms;
}

/*
 * Stop claiming; running handlers may go on until the grace ends.  A second
 * request ends the grace at once.
 */
static void
begin_stop(void)
{
	if (w.stopping)
		w.grace_end = mono_ms();
	else {
		w.stopping = 1;
		w.grace_end = after(mono_ms(), w.grace_ms);
	}
}

/* A system error: say it elsewhere, then stop as on SIGTERM and exit 111. */
static void
fail(void)
{
	w.status = worst(w.status, EXIT_TEMP);
	if (!w.stopping)
		begin_stop();
}

/* Is the handler there, as the exec would find it? */
static int
find_handler(const char *name)
{
	char *path, *p, *dirname, *save, *file;
	int found = 0;

	if (strchr(name, '/') != NULL)
		return access(name, X_OK) == 0;
	if ((p = getenv("PATH")) == NULL)
		p = "/bin:/usr/bin";
	if ((path = strdup(p)) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (dirname = strtok_r(path, ":", &save); dirname != NULL && !found;
	    dirname = strtok_r(NULL, ":", &save)) {
		if (asprintf(&file, "%s/%s", dirname, name) == -1)
			die(EXIT_TEMP, "%s", strerror(errno));
		found = access(file, X_OK) == 0;
		free(file);
	}
	free(path);
	return found;
}

/* Signal a handler not yet reaped, and its process group. */
static void
kill_handler(struct slot *s, int sig)
{
	/* One that left its group (setsid) is still signalled itself. */
	if (killpg(s->pid, sig) == -1 && errno == ESRCH)
		(void)kill(s->pid, sig);	/* gone already: nothing to do */
}

/*
 * Tell a handler to stop: SIGTERM now, SIGKILL later.  The first reason
 * stands, except that a lease lost or cancelled overrides any: it forbids
 * the finish.
 */
static void
stop_handler(struct slot *s, enum stop why)
{
	if (s->stop == why || GONE(s->stop) ||
	    (s->stop != STOP_NONE && !GONE(why)))
		return;
	if (s->stop == STOP_NONE) {
		kill_handler(s, SIGTERM);
		s->kill_at = mono_ms() + KILL_AFTER_MS;
	}
	s->stop = why;
	s->timeout_at = NEVER;
}

/* "ID,TOKEN": the name of the slot's result file. */
static void
result_name(const struct slot *s, char *buf, size_t len)
{
	(void)snprintf(buf, len, "%s,%" PRIu64, s->lease.id, s->lease.token);
}

/*
 * What the handler named in $SPOOL_RESULT: words class=CLASS and
 * delay=DUR.  Returns 0 (read, possibly nothing named) or -1 (malformed, or
 * unreadable: why says).  The file is removed either way.
 */
static int
read_result(const struct slot *s, int *class, int64_t *delay, char *why,
    size_t len)
{
	char name[SPOOL_ID_MAX + 32], buf[RESULT_MAX + 2], *word, *save;
	ssize_t r;
	size_t n = 0;
	int fd, v;

	*class = SPOOL_CLASS_NONE;
	*delay = -1;
	result_name(s, name, sizeof(name));
	fd = openat(w.resdirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT)
			return 0;	/* the handler removed it: nothing named */
		(void)snprintf(why, len, "SPOOL_RESULT: %s", strerror(errno));
		(void)unlinkat(w.resdirfd, name, 0);	/* a symlink, say */
		return -1;
	}
	while (n <= RESULT_MAX && (r = read(fd, buf + n,
	    sizeof(buf) - 1 - n)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			(void)snprintf(why, len, "SPOOL_RESULT: %s",
			    strerror(errno));
			n = SIZE_MAX;
			break;
		}
		n += (size_t)r;
	}
	(void)close(fd);	/* read-only */
	if (unlinkat(w.resdirfd, name, 0) == -1)
		say("%s/%s: %s", w.resdir, name, strerror(errno));
	if (n == SIZE_MAX)
		return -1;
	if (n > RESULT_MAX || memchr(buf, '\0', n) != NULL) {
		(void)snprintf(why, len, "SPOOL_RESULT: more than %d bytes "
		    "of text", RESULT_MAX);
		return -1;
	}
	buf[n] = '\0';
	for (word = strtok_r(buf, " \t\r\n", &save); word != NULL;
	    word = strtok_r(NULL, " \t\r\n", &save)) {
		if (strncmp(word, "class=", 6) == 0 &&
		    (v = spool_class_from_name(word + 6)) != -1)
			*class = v;
		else if (strncmp(word, "delay=", 6) == 0 &&
		    spool_parse_duration(word + 6, delay) == 0)
			continue;
		else {
			(void)snprintf(why, len, "SPOOL_RESULT: bad word "
			    "'%.40s'", word);
			return -1;
		}
	}
	return 0;
}

/*
 * The outcome of a handler that ended by itself (spool-run(1), "Exit
 * statuses of the handler").  Nothing but exit 0 is success; a status
 * that means nothing known is a crash, retried.
 */
static void
verdict(int wstatus, struct spool_finish *f, char *why, size_t len)
{
	int code;

	f->outcome = SPOOL_RETRY;
	f->class = SPOOL_CLASS_CRASHED;
	if (WIFSIGNALED(wstatus)) {
		(void)snprintf(why, len, "signal %d", WTERMSIG(wstatus));
		return;
	}
	code = WEXITSTATUS(wstatus);
	(void)snprintf(why, len, "exit %d", code);
	switch (code) {
	case 0:
		f->outcome = SPOOL_OK;
		f->class = SPOOL_CLASS_NONE;
		why[0] = '\0';
		break;
	case 64:	/* EX_USAGE */
	case 65:	/* EX_DATAERR */
		f->outcome = SPOOL_PERMANENT;
		f->class = SPOOL_CLASS_INVALID_INPUT;
		break;
	case 77:	/* EX_NOPERM */
		f->outcome = SPOOL_PERMANENT;
		f->class = SPOOL_CLASS_PERMISSION;
		break;
	case 100:	/* qmail: permanent failure */
		f->outcome = SPOOL_PERMANENT;
		f->class = SPOOL_CLASS_NONE;
		break;
	case 75:	/* EX_TEMPFAIL */
	case 111:	/* qmail: temporary failure */
		f->class = SPOOL_CLASS_TRANSIENT;
		break;
	case 78:	/* EX_CONFIG: the handler's setup, not the job */
		f->class = SPOOL_CLASS_DEPENDENCY_DOWN;
		break;
	}
}

static void
free_slot(struct slot *s)
{
	free(s->lease.path);
	memset(s, 0, sizeof(*s));
	s->state = FREE;
	s->err.fd = -1;
	if (--w.busy == 0)
		w.idle_since = mono_ms();
	w.want_claim = 1;	/* a slot is free: look for work */
}

/*
 * End the deliveries f[0..n) name, in one call: its wait covers them all
 * (spool-layout.md, "fsyncs per transition").  A refusal changes nothing.
 */
static void
finish(struct spool_finish *f, size_t n)
{
	size_t i;
	int r, e;

	r = spool_finish(w.sp, f, n);
	e = errno;
	for (i = 0; i < n; i++)
		if (r == -1 && f[i].res.status == 0) {
			say("%s: %s", f[i].id, errtext(e));
			f[i].res.status = -1;	/* for its log line: failed */
			fail();
		} else if (report(f[i].id, &f[i].res) > EXIT_NO)
			fail();
}

static void
release(struct slot *s, const char *detail)
{
	struct spool_finish f;

	memset(&f, 0, sizeof(f));
	f.id = s->lease.id;
	f.token = s->lease.token;
	f.outcome = SPOOL_RELEASE;
	f.delay_ms = -1;
	f.detail = detail;
	finish(&f, 1);
}

/*
 * One line for each delivery that ran, when it ends: its time, the job,
 * what the handler did (exit N, or signal N), how long it ran, the outcome
 * asked and where the job went.  stopped= says why the worker stopped it:
 * its timeout, the end of the grace, or a lease lost.  f is NULL when the
 * delivery was not the worker's to finish.
 */
static void
log_end(const struct slot *s, int wstatus, const struct spool_finish *f)
{
	static const char *const stopped[] = {
		[STOP_NONE] = "", [STOP_TIMEOUT] = " stopped=timeout",
		[STOP_SHUTDOWN] = " stopped=shutdown", [STOP_LOST] = " stopped=lost",
		[STOP_CANCELLED] = " stopped=cancelled"
	};
	char when[32], how[24], where[48];
	int64_t ran = mono_ms() - s->started;

	(void)spool_format_time(when, sizeof(when), wall_ms());
	if (WIFSIGNALED(wstatus))
		(void)snprintf(how, sizeof(how), "signal=%d", WTERMSIG(wstatus));
	else
		(void)snprintf(how, sizeof(how), "exit=%d", WEXITSTATUS(wstatus));
	if (f == NULL)
		(void)snprintf(where, sizeof(where), "-");
	else if (f->res.status == 0)
		(void)snprintf(where, sizeof(where), "%s%s%s",
		    spool_state_name(f->res.state), f->res.reason != 0 ?
		    " reason=" : "", f->res.reason != 0 ?
		    spool_reason_name(f->res.reason) : "");
	else
		(void)snprintf(where, sizeof(where), "%s", f->res.status == 1 ?
		    "refused" : "failed");
	say("%s %s token=%" PRIu64 " attempt=%d %s duration=%" PRId64 ".%03"
	    PRId64 "s outcome=%s class=%s state=%s%s", when, s->lease.id,
	    s->lease.token, s->lease.attempt, how, ran / 1000, ran % 1000,
	    f != NULL ? spool_outcome_name(f->outcome) : "-",
	    f != NULL && f->class != SPOOL_CLASS_NONE ?
	    spool_class_name(f->class) : "-", where, stopped[s->stop]);
}

/*
 * The handler of s has been reaped with wstatus: decide in f, with its
 * detail in detail[SPOOL_DETAIL_MAX + 1], how its delivery ends.
 */
static void
end_decide(struct slot *s, int wstatus, struct spool_finish *f,
    char *detail)
{
	char why[96], dur[32];
	int64_t delay;
	int class, r;

	relay_read(&s->err, s->lease.id, 16);	/* what it wrote last */
	relay_end(&s->err, s->lease.id);
	memset(f, 0, sizeof(*f));
	f->id = s->lease.id;
	f->token = s->lease.token;
	f->delay_ms = -1;
	r = read_result(s, &class, &delay, why, sizeof(why));
	switch (s->stop) {
	case STOP_LOST:
	case STOP_CANCELLED:
		break;		/* said when it was lost; not ours to finish */
	case STOP_SHUTDOWN:
		relay_detail(&s->err, "stopped after the grace", detail,
		    SPOOL_DETAIL_MAX + 1);
		f->outcome = SPOOL_RELEASE;
		f->detail = detail;
		break;
	case STOP_TIMEOUT:
		(void)snprintf(why, sizeof(why), "timed out after %s",
		    fmt_duration(dur, sizeof(dur), w.timeout_ms));
		relay_detail(&s->err, why, detail, SPOOL_DETAIL_MAX + 1);
		f->outcome = SPOOL_RETRY;
		f->class = SPOOL_CLASS_TIMEOUT;
		f->detail = detail;
		break;
	case STOP_NONE:
		if (r == -1) {
			/* An answer that cannot be read is not success. */
			f->outcome = SPOOL_RETRY;
			f->class = SPOOL_CLASS_CRASHED;
		} else {
			verdict(wstatus, f, why, sizeof(why));
			if (f->outcome != SPOOL_OK && class != SPOOL_CLASS_NONE)
				f->class = class;
			if (f->outcome == SPOOL_RETRY)
				f->delay_ms = delay;
		}
		relay_detail(&s->err, why, detail, SPOOL_DETAIL_MAX + 1);
		f->detail = detail[0] != '\0' ? detail : NULL;
		break;
	}
}

static size_t claim_room(size_t);
static int take_jobs(struct spool_finish *, size_t, size_t, size_t *,
    int64_t *);
static void start_jobs(int, size_t, size_t, int64_t);

/*
 * Reap every handler that has ended, then end their deliveries: the
 * finishes in one call, so that handlers that ended together share its
 * wait, and the claim of the slots they free shares it too; then a line
 * each, then the new jobs start.
 */
static void
reap(void)
{
	static struct spool_finish fins[SLOTS_MAX];
	static char details[SLOTS_MAX][SPOOL_DETAIL_MAX + 1];
	struct spool_finish *fin[SLOTS_MAX];	/* each ended's, or NULL */
	struct slot *s, *ended[SLOTS_MAX];
	int st, wst[SLOTS_MAX];
	size_t k, n = 0, m = 0;
	siginfo_t si;
	size_t want, got = 0;
	int64_t start = 0;
	int r = 0;

	for (;;) {
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1 &&
		    errno != ECHILD)
			die(EXIT_TEMP, "waitid: %s", strerror(errno));
		if (si.si_pid == 0)
			break;
		for (k = 0, s = NULL; k < w.nslots && s == NULL; k++)
			if (w.slots[k].state == RUNNING &&
			    w.slots[k].pid == si.si_pid)
				s = &w.slots[k];
		/*
		 * A handler that was told to stop takes what it left running
		 * with it.  Its group is signalled before it is reaped: until
		 * then its zombie holds the ID, which no one else can take.
		 */
		if (s != NULL && s->stop != STOP_NONE)
			(void)killpg(s->pid, SIGKILL);	/* none left: fine */
		if (s != NULL)
			keeper_forget(w.keepfd, s->pid);
		if (waitpid(si.si_pid, &st, 0) == -1)
			die(EXIT_TEMP, "waitpid: %s", strerror(errno));
		if (s != NULL) {
			end_decide(s, st, &fins[m], details[m]);
			fin[n] = GONE(s->stop) ? NULL : &fins[m++];
			ended[n] = s;
			wst[n++] = st;
		} else if (si.si_pid == w.keeper) {
			/* Killed by hand: no handler may start unguarded. */
			say("the keeper of the handlers (PID %ld) ended: "
			    "stopping", (long)w.keeper);
			w.keeper = 0;
			fail();
		}
	}
	want = m > 0 && !w.placing ? claim_room(n) : 0;
	if (want > 0)
		r = take_jobs(fins, m, want, &got, &start);
	else if (m > 0)
		finish(fins, m);
	for (k = 0; k < n; k++) {
		log_end(ended[k], wst[k], fin[k]);
		if (ended[k]->err.fd != -1)
			(void)close(ended[k]->err.fd);	/* held open by what
							   it left behind */
		free_slot(ended[k]);
	}
	if (want > 0) {
		w.want_claim = 0;	/* free_slot's: this claim was it */
		start_jobs(r, got, want, start);
	}
}

/* Act on the signals that have arrived; never blocks. */
static void
read_signals(void)
{
	struct signalfd_siginfo si;
	ssize_t r;
	int chld = 0;

	while ((r = read(w.sigfd, &si, sizeof(si))) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			chld = 1;
			break;
		case SIGINT:
		case SIGTERM:
			begin_stop();
			break;
		default:
			break;	/* SIGHUP: harmless by design */
		}
	}
	if (r == -1 && errno != EAGAIN && errno != EINTR)
		die(EXIT_TEMP, "signalfd: %s", strerror(errno));
	if (chld)
		reap();
}

static void
handler_env_free(char **env, size_t ncopied)
{
	char **p;

	for (p = env + ncopied; *p != NULL; p++)
		free(*p);
	free(env);
}

/*
 * The environment of a handler: ours, with the job's SPOOL_ variables put
 * last (after *ncopied entries that are ours to copy, not to free).
 */
static char **
handler_env(const struct slot *s, const char *result, size_t *ncopied)
{
	static const char *const names[] = {
		"SPOOL_DIR", "SPOOL_JOB_ID", "SPOOL_TOKEN", "SPOOL_ATTEMPT",
		"SPOOL_CYCLE", "SPOOL_TRACE", "SPOOL_JOB_PATH", "SPOOL_RESULT"
	};
	enum { NNAMES = sizeof(names) / sizeof(names[0]) };
	char token[24], attempt[16], cycle[16], resfile[PATH_MAX];
	const char *values[NNAMES];
	char **env;
	size_t n = 0, i, k, len;

	(void)snprintf(token, sizeof(token), "%" PRIu64, s->lease.token);
	(void)snprintf(attempt, sizeof(attempt), "%d", s->lease.attempt);
	(void)snprintf(cycle, sizeof(cycle), "%d", s->lease.cycle);
	(void)snprintf(resfile, sizeof(resfile), "%s/%s", w.resdir, result);
	values[0] = w.dir;
	values[1] = s->lease.id;
	values[2] = token;
	values[3] = attempt;
	values[4] = cycle;
	values[5] = s->lease.trace;
	values[6] = s->lease.path;
	values[7] = resfile;
	while (environ[n] != NULL)
		n++;
	if ((env = calloc(n + NNAMES + 1, sizeof(*env))) == NULL)
		return NULL;
	for (i = 0, *ncopied = 0; i < n; i++) {
		for (k = 0; k < NNAMES; k++) {
			len = strlen(names[k]);
			if (strncmp(environ[i], names[k], len) == 0 &&
			    environ[i][len] == '=')
				break;
		}
		if (k == NNAMES)
			env[(*ncopied)++] = environ[i];
	}
	for (k = 0; k < NNAMES; k++)
		if (asprintf(&env[*ncopied + k], "%s=%s", names[k],
		    values[k]) == -1) {
			env[*ncopied + k] = NULL;
			handler_env_free(env, *ncopied);
			errno = ENOMEM;
			return NULL;
		}
	return env;
}

/* Renew about every third of the lease. */
static int64_t
renew_interval(const struct slot *s)
{
	return s->lease_ms >= 3 ? s->lease_ms / 3 : 1;
}

/*
 * Start the handler in a process group of its own, with in and err.  It
 * tells the keeper of its group before it execs, so that nothing it starts
 * can outlive this worker.  vfork(2): the parent waits until the exec, and
 * learns from w.spawn_err why it failed.
 */
static int
spawn(pid_t *pid, int in, int err, char **env)
{
	sigset_t none;

	(void)sigemptyset(&none);
	w.spawn_err = 0;
	if ((*pid = vfork()) == -1)
		return errno;
	if (*pid == 0) {
		/*
		 * Its own group, so that stopping it stops its children (and a
		 * terminal's SIGINT, meant for us, does not reach it); the
		 * signals that we block or ignore as they were.
		 */
		if (setpgid(0, 0) == -1 || keeper_enrol(w.keepfd) == -1 ||
		    dup2(in, 0) == -1 || dup2(err, 2) == -1 ||
		    signal(SIGPIPE, SIG_DFL) == SIG_ERR ||
		    sigprocmask(SIG_SETMASK, &none, NULL) == -1)
			w.spawn_err = errno;
		else {
			(void)execvpe(w.handler[0], w.handler, env);
			w.spawn_err = errno;
		}
		_exit(127);
	}
	if (w.spawn_err != 0) {
		keeper_forget(w.keepfd, *pid);
		(void)waitpid(*pid, NULL, 0);
	}
	return w.spawn_err;
}

/*
 * Run the handler for a claimed slot.  Returns 0 (running), 1 (skipped: the
 * lease is no longer ours to run) or -1 with errno (not started; the job is
 * still ours to release).
 */
static int
start_job(struct slot *s)
{
	char result[SPOOL_ID_MAX + 32], **env = NULL;
	int payload, fd, errpipe[2] = { -1, -1 }, e;
	int64_t now = mono_ms(), left = s->expires - now;
	size_t ncopied = 0;

	/*
	 * The file is at leased/ID,TOKEN only while this lease holds it: a
	 * takeover or a finish by another process renames it.  And a lease
	 * that ran out before its handler could start is left to expire (the
	 * attempt is spent): releasing it could make a loop of claims.
	 */
	if (left <= 0 || (payload = open(s->lease.path, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (left > 0 && errno != ENOENT)
			return -1;
		say("%s: not started: the lease %s", s->lease.id, left <= 0 ?
		    "ran out first" : "is no longer held");
		return 1;
	}
	/*
	 * Nor is work started near the lease's end, timed by the monotonic
	 * clock from before the claim: the job goes back unspent.
	 */
	if (left < s->lease_ms / 10) {
		(void)close(payload);	/* read-only */
		release(s, "not started: the lease was near its end");
		return 1;
	}
	result_name(s, result, sizeof(result));
	if ((fd = openat(w.resdirfd, result, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1 ||
	    pipe2(errpipe, O_CLOEXEC) == -1 ||
	    (env = handler_env(s, result, &ncopied)) == NULL)
		e = errno;
	else
		e = spawn(&s->pid, payload, errpipe[1], env);
	if (env != NULL)
		handler_env_free(env, ncopied);
	(void)close(payload);	/* read-only; the handler has its own */
	if (errpipe[1] != -1)
		(void)close(errpipe[1]);	/* the handler's end */
	if (fd != -1)
		(void)close(fd);	/* empty: the handler writes it */
	if (e != 0) {
		if (errpipe[0] != -1)
			(void)close(errpipe[0]);
		if (fd != -1)
			(void)unlinkat(w.resdirfd, result, 0);
		errno = e;
		return -1;
	}
	/* Only our end is non-blocking: the handler's stderr stays as usual. */
	(void)fcntl(errpipe[0], F_SETFL, O_NONBLOCK);	/* cannot fail */
	s->state = RUNNING;
	s->err.fd = errpipe[0];
	s->started = now;
	s->renew_at = now + renew_interval(s);
	s->timeout_at = w.timeout_ms > 0 ? after(now, w.timeout_ms) : NEVER;
	s->kill_at = NEVER;
	return 0;
}

/* Was the job of s parked by spool-cancel(1)?  Then say by whom. */
static int
cancelled(const struct slot *s, const struct spool_result *res)
{
	struct spool_job_info info;
	int yes;

	if (res->refusal != SPOOL_NO_NOT_LEASED || res->state != SPOOL_DEAD ||
	    spool_job_info(w.sp, s->lease.id, 0, &info) == -1)
		return 0;
	if ((yes = info.reason == SPOOL_REASON_CANCELLED))
		say("%s: cancelled%s%s: handler stopped", s->lease.id,
		    info.by[0] != '\0' ? " by " : "", info.by);
	spool_job_info_free(&info);
	return yes;
}

/*
 * Extend the lease of a running handler.  A refusal means another claim
 * took the job, an operator cancelled it, or someone finished it with our
 * token: the handler is stopped and the job left alone.  A failure is
 * retried until the lease would have run out, which counts as lost too.
 */
static void
renew_job(struct slot *s, int64_t now)
{
	struct spool_result res;
	int r;

	r = spool_renew(w.sp, s->lease.id, s->lease.token, w.copts.lease_ms,
	    &res);
	if (r == 0 && res.status == 0) {
		s->expires = after(now, s->lease_ms);
		s->renew_at = now + renew_interval(s);
		return;
	}
	if (r == 0 && res.status == 1) {
		if (cancelled(s, &res)) {
			stop_handler(s, STOP_CANCELLED);
			return;
		}
		say("%s: lease lost (%s): handler stopped, job not finished",
		    s->lease.id, spool_refusal_name(res.refusal));
		stop_handler(s, STOP_LOST);
		return;
	}
	say("%s: renew: %s", s->lease.id, errtext(res.status == -1 ?
	    res.err : errno));
	fail();
	if (now >= s->expires) {
		say("%s: lease ran out unrenewed: handler stopped, job not "
		    "finished", s->lease.id);
		stop_handler(s, STOP_LOST);
	} else
		s->renew_at = now + min64(RECHECK_MS, renew_interval(s));
}

/* Is a claim allowed now? */
static int
can_claim(void)
{
	return !w.stopping && w.busy < w.nslots &&
	    (w.max_jobs == 0 || w.taken < w.max_jobs);
}

/* When the spool may next have work for us, from spool_next_due(). */
static void
next_due(void)
{
	int64_t due = INT64_MAX, now, wall;
	int paused;

	if ((paused = spool_paused(w.sp)) == -1 ||
	    (!paused && spool_next_due(w.sp, &due) == -1)) {
		say("next due time: %s", strerror(errno));
		fail();
		return;
	}
	now = mono_ms();
	wall = wall_ms();
	if (paused || due == INT64_MAX)
		w.due_at = NEVER;	/* only news: a resume is an audit line */
	else if (due > w.claimed_at)
		/* Not due when the claim looked; it may be by now. */
		w.due_at = due > wall ? after(now, due - wall) : now;
	else
		/*
		 * Due, yet the claim found nothing: another process holds
		 * the job this moment (its audit line will wake us), or the
		 * job is damaged.  Look again later rather than spin.
		 */
		w.due_at = now + RECHECK_MS;
	if (w.inofd == -1)
		w.due_at = min64(w.due_at, now + FALLBACK_MS);
}

/*
 * On a multi-host spool every host's clock judges leases, within the
 * spool's skew: say so, loudly and again every CLOCK_NAG_MS, while the
 * kernel says this clock is not synchronised.
 */
static void
check_clock(void)
{
	int64_t maxerr, now = mono_ms();
	char skew[32];

	if (!w.set.multi_host || (w.clock_said != NEVER &&
	    now - w.clock_said < CLOCK_NAG_MS) || spool_clock(&maxerr) == 1)
		return;
	(void)snprintf(skew, sizeof(skew), "%" PRId64 "ms", w.set.skew_ms);
	say("warning: the system clock is not synchronised (adjtimex); on "
	    "this multi-host spool leases are judged by every host's clock, "
	    "to within skew=%s: run NTP or chrony", skew);
	w.clock_said = now;
}

/* How many jobs a claim may take now, once ending more slots are free. */
static size_t
claim_room(size_t ending)
{
	size_t want;

	if (w.stopping)
		return 0;
	want = w.nslots - w.busy + ending;
	if (w.max_jobs > 0 && (long)want > w.max_jobs - w.taken)
		want = (size_t)(w.max_jobs - w.taken);
	return want;
}

/*
 * Claim up to want jobs into w.claimed, and end the deliveries f[0..m) in
 * the same wait (spool_finish_claim; m 0: a claim alone).  Returns as
 * spool_claim, *start the monotonic time before it: a lease is timed from
 * there.
 */
static int
take_jobs(struct spool_finish *f, size_t m, size_t want, size_t *n,
    int64_t *start)
{
	size_t i;
	int r, e;

	w.want_claim = 0;
	w.due_at = NEVER;
	check_clock();
	/* A lease is timed from before the claim, on the monotonic clock. */
	*start = mono_ms();
	w.claimed_at = wall_ms();
	if (m == 0)
		r = spool_claim(w.sp, &w.copts, w.claimed, want, n);
	else {
		r = spool_finish_claim(w.sp, f, m, &w.copts, w.claimed, want,
		    n);
		e = errno;
		for (i = 0; i < m; i++)
			if (report(f[i].id, &f[i].res) > EXIT_NO)
				fail();
		errno = e;
	}
	if (r == -1) {
		say("claim: %s", errtext(errno));
		fail();
	}
	return r;
}

/*
 * Start a handler for each of the n jobs take_jobs() claimed, of want, in
 * the free slots, unless a stop was asked for meanwhile: then those jobs
 * go back unstarted, their attempts not spent.
 */
static void
start_jobs(int r, size_t n, size_t want, int64_t start)
{
	struct slot *s;
	size_t i, k;

	if (r == -1)
		return;
	if (r == 0 && w.once) {
		/* A paused spool is not an empty one: say it, as spool-claim. */
		if (spool_paused(w.sp) == 1)
			say("spool paused");
		w.status = worst(w.status, EXIT_NO);
		w.stopping = 1;
		return;
	}
	for (i = 0, k = 0; i < n; i++, k++) {
		while (w.slots[k].state != FREE)
			k++;
		w.slots[k].state = CLAIMED;
		w.slots[k].lease = w.claimed[i];	/* and its path */
		w.slots[k].lease_ms = w.copts.lease_ms != 0 ?
		    w.copts.lease_ms : w.set.lease_ms;
		w.slots[k].expires = start + w.slots[k].lease_ms;
		w.busy++;
		w.taken++;
	}
	/* A SIGTERM that came during the claim is heard before any start. */
	w.placing = 1;
	read_signals();
	w.placing = 0;
	for (k = 0; k < w.nslots; k++) {
		s = &w.slots[k];
		if (s->state != CLAIMED)
			continue;
		if (w.stopping) {
			release(s, "not started: the worker is stopping");
			free_slot(s);
		} else if ((r = start_job(s)) == 1)
			free_slot(s);
		else if (r == -1) {
			say("%s: %s", w.handler[0], strerror(errno));
			release(s, "not started: the handler could not be run");
			free_slot(s);
			fail();
		}
	}
	if (n < want && !w.stopping)
		next_due();
}

/* Claim into the free slots, and start the jobs. */
static void
claim_jobs(void)
{
	size_t want = claim_room(0), n = 0;
	int64_t start = 0;
	int r;

	r = take_jobs(NULL, 0, want, &n, &start);
	start_jobs(r, n, want, start);
}

/*
 * A cancel on this host is an audit line, which wakes us: a lease whose
 * file has left leased/ is asked about at once, not at its next renewal.
 * Without inotify, the leases are looked at every FALLBACK_MS.
 */
static int64_t
look_at(void)
{
	if (w.busy == 0 || (w.inofd != -1 && !w.news))
		return NEVER;
	return w.looked + (w.inofd != -1 ? LOOK_MS : FALLBACK_MS);
}

static void
look(int64_t now)
{
	struct stat st;
	struct slot *s;
	size_t k;

	w.news = 0;
	w.looked = now;
	for (k = 0; k < w.nslots; k++) {
		s = &w.slots[k];
		if (s->state == RUNNING && !GONE(s->stop) &&
		    lstat(s->lease.path, &st) == -1 && errno == ENOENT)
			renew_job(s, now);
	}
}

/* Timers: kills, timeouts, the end of the grace, renewals. */
static void
tick(int64_t now)
{
	struct slot *s;
	size_t k;

	if (look_at() <= now)
		look(now);

	for (k = 0; k < w.nslots; k++) {
		s = &w.slots[k];
		if (s->state != RUNNING)
			continue;
		if (s->kill_at <= now) {
			kill_handler(s, SIGKILL);
			s->kill_at = NEVER;
		}
		if (s->timeout_at <= now)
			stop_handler(s, STOP_TIMEOUT);
		if (w.stopping && w.grace_end <= now)
			stop_handler(s, STOP_SHUTDOWN);
		if (!GONE(s->stop) && s->renew_at <= now)
			renew_job(s, now);
	}
}

/* The earliest time at which something is to be done, or NEVER. */
static int64_t
next_wake(void)
{
	int64_t t = NEVER;
	struct slot *s;
	size_t k;

	if (can_claim())
		t = w.want_claim ? 0 : w.due_at;
	for (k = 0; k < w.nslots; k++) {
		s = &w.slots[k];
		if (s->state != RUNNING)
			continue;
		t = min64(t, min64(s->timeout_at, s->kill_at));
		if (!GONE(s->stop))
			t = min64(t, s->renew_at);
		if (w.stopping && s->stop == STOP_NONE)
			t = min64(t, w.grace_end);
	}
	if (w.idle_ms >= 0 && w.busy == 0)
		t = min64(t, after(w.idle_since, w.idle_ms));
	return min64(t, look_at());
}

static void
drain_inotify(void)
{
	if (audit_drain(w.inofd) == -1) {
		say("inotify: %s: looking every %d ms instead", strerror(errno),
		    FALLBACK_MS);
		(void)close(w.inofd);	/* read-only */
		w.inofd = -1;
	}
	w.want_claim = 1;
	w.news = 1;
}

/* The one blocking call: wait for a signal, the spool, a pipe or until. */
static void
wait_events(int64_t until)
{
	struct pollfd pfd[2 + SLOTS_MAX];
	struct slot *of[2 + SLOTS_MAX];
	struct timespec ts, *tsp = NULL;
	int64_t now, ms;
	nfds_t n = 0, i, ino = 0;
	size_t k;

	pfd[n].fd = w.sigfd;
	pfd[n].events = POLLIN;
	of[n++] = NULL;
	/*
	 * A change in the spool is news while a slot is free (work), or a
	 * handler runs (was its job cancelled?).
	 */
	if (w.inofd != -1 && (can_claim() || w.busy > 0)) {
		pfd[n].fd = w.inofd;
		pfd[n].events = POLLIN;
		of[ino = n++] = NULL;
	}
	for (k = 0; k < w.nslots; k++)
		if (w.slots[k].state == RUNNING && w.slots[k].err.fd != -1) {
			pfd[n].fd = w.slots[k].err.fd;
			pfd[n].events = POLLIN;
			of[n++] = &w.slots[k];
		}
	if (until != NEVER) {
		now = mono_ms();
		ms = until > now ? until - now : 0;
		ts.tv_sec = (time_t)(ms / 1000);
		ts.tv_nsec = (long)(ms % 1000) * 1000000;
		tsp = &ts;
	}
	if (ppoll(pfd, n, tsp, NULL) == -1) {
		if (errno == EINTR)
			return;
		die(EXIT_TEMP, "ppoll: %s", strerror(errno));
	}
	/* Pipes first: what a handler wrote goes in its detail. */
	for (i = 0; i < n; i++)
		if (of[i] != NULL && pfd[i].revents != 0)
			relay_read(&of[i]->err, of[i]->lease.id, 4);
	if (ino != 0 && pfd[ino].revents != 0)
		drain_inotify();
	if (pfd[0].revents != 0)
		read_signals();
}

static void
setup(const char *dirarg)
{
	const char *tmp = getenv("TMPDIR");
	sigset_t set;
	size_t k;

	/*
	 * Signals are read from a signalfd, in the loop, so that nothing
	 * runs in a signal handler.  SIGPIPE is ignored: a closed stderr
	 * must not kill a worker that holds leases.
	 */
	(void)sigemptyset(&set);
	(void)sigaddset(&set, SIGCHLD);
	(void)sigaddset(&set, SIGTERM);
	(void)sigaddset(&set, SIGINT);
	(void)sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (w.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1 ||
	    signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		die(EXIT_TEMP, "signals: %s", strerror(errno));

	/*
	 * The keeper comes first, before the spool holds a lock or a
	 * thread; it removes the result directory once we are gone.
	 */
	if (asprintf(&w.resdir, "%s/spool-run.XXXXXX", tmp != NULL &&
	    *tmp == '/' ? tmp : "/tmp") == -1 || mkdtemp(w.resdir) == NULL)
		die(EXIT_TEMP, "a private directory for results: %s",
		    strerror(errno));
	if ((w.keepfd = keeper_start(w.resdir, &w.keeper)) == -1) {
		say("the keeper of the handlers: %s", strerror(errno));
		(void)rmdir(w.resdir);
		exit(EXIT_TEMP);
	}
	if ((w.resdirfd = open(w.resdir, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		die(EXIT_TEMP, "%s: %s", w.resdir, strerror(errno));
	w.sp = open_spool(dirarg);
	spool_settings(w.sp, &w.set);
	if (w.timeout_ms == -1)
		w.timeout_ms = w.set.timeout_ms;	/* config's timeout */
	w.clock_said = NEVER;
	if ((w.dir = realpath(dirarg, NULL)) == NULL)
		die(EXIT_TEMP, "%s: %s", dirarg, strerror(errno));
	if ((w.slots = calloc(w.nslots, sizeof(*w.slots))) == NULL ||
	    (w.claimed = calloc(w.nslots, sizeof(*w.claimed))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (k = 0; k < w.nslots; k++)
		w.slots[k].err.fd = -1;

	/*
	 * The watch is made before the first claim, so that whatever is
	 * enqueued after any claim is news to the next wait.
	 */
	if ((w.inofd = audit_watch(w.dir)) == -1)
		say("inotify: %s: looking every %d ms instead", strerror(errno),
		    FALLBACK_MS);
}

/*
 * spool-run's options end at the handler: "spool-run -j 4 h --once" hands
 * --once to h, and runs for ever.  Where no "--" said that this is meant,
 * a word after the handler that is one of spool-run's options is named.
 */
static void
warn_options(char **args, const struct option *longopts)
{
	const struct option *o;
	size_t len;

	for (; *args != NULL; args++) {
		if (strcmp(*args, "-d") == 0 || strcmp(*args, "-j") == 0) {
			o = NULL;
			goto warn;
		}
		if (strncmp(*args, "--", 2) != 0)
			continue;
		len = strcspn(*args + 2, "=");
		for (o = longopts; o->name != NULL; o++)
			if (strlen(o->name) == len &&
			    strncmp(o->name, *args + 2, len) == 0)
				goto warn;
		continue;
warn:
		say("warning: '%s' after the handler is the handler's, not "
		    "spool-run's: put spool-run's options before the handler, "
		    "or write -- before the handler to say it is meant", *args);
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "grace", required_argument, NULL, 'g' },
		{ "idle-exit", required_argument, NULL, 'i' },
		{ "lease", required_argument, NULL, 'l' },
		{ "max-jobs", required_argument, NULL, 'm' },
		{ "once", no_argument, NULL, '1' },
		{ "owner", required_argument, NULL, 'o' },
		{ "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 }
	};
	char owner[SPOOL_ID_MAX + 1];
	const char *dir = NULL;
	int c;

	cmd_init(argv, 0);
	w.nslots = 1;
	w.grace_ms = 30000;
	w.idle_ms = -1;
	w.timeout_ms = -1;
	/* '+': the handler's own options are not ours. */
	while ((c = cmd_getopt(argc, argv, "+d:j:", longopts)) != -1) {
		switch (c) {
		case '1':
			w.once = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'g':
			w.grace_ms = opt_duration("--grace", optarg, 1);
			break;
		case 'i':
			w.idle_ms = opt_duration("--idle-exit", optarg, 1);
			break;
		case 'j':
			w.nslots = (size_t)opt_number("-j", optarg, 1,
			    SLOTS_MAX);
			break;
		case 'l':
			w.copts.lease_ms = opt_duration("--lease", optarg, 0);
			break;
		case 'm':
			w.max_jobs = opt_number("--max-jobs", optarg, 1,
			    LONG_MAX);
			break;
		case 'o':
			w.copts.owner = opt_word("--owner", optarg,
			    spool_valid_owner);
			break;
		case 't':
			w.timeout_ms = opt_duration("--timeout", optarg, 1);
			break;
		default:
			usage();
		}
	}
	if (optind == argc)
		usage();
	w.handler = argv + optind;
	if (strcmp(argv[optind - 1], "--") != 0)
		warn_options(w.handler + 1, longopts);
	if (w.once)
		w.max_jobs = 1;
	if (!find_handler(w.handler[0]))
		die(EXIT_PERM, "%s: not found, or not executable",
		    w.handler[0]);
	if (w.copts.owner == NULL)
		w.copts.owner = default_owner(owner, sizeof(owner));
	setup(spool_dir(dir));

	w.want_claim = 1;
	w.due_at = NEVER;
	w.idle_since = mono_ms();
	for (;;) {
		tick(mono_ms());
		if (can_claim() && (w.want_claim || w.due_at <= mono_ms()))
			claim_jobs();
		if (w.busy == 0 && (w.stopping || !can_claim() ||
		    (w.idle_ms >= 0 && after(w.idle_since, w.idle_ms) <=
		    mono_ms())))
			break;
		wait_events(next_wake());
	}
	if (rmdir(w.resdir) == -1)
		say("%s: %s", w.resdir, strerror(errno));
	spool_close(w.sp);
	return w.status;
}
