/*
 * Helpers of the commands: they parse, report and exit; the library never
 * does.  A message is one line on stderr; stdout carries only results.
 * What two commands would otherwise each write is here too, so that they
 * cannot drift apart: the forms of ages, times and JSON, and the reading,
 * selecting and batching of the IDs an operator acts on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

const char *progname = "spool";
int stdin_closed;

/*
 * Descriptors 0-2 must be open before the library creates files, or a job
 * file could become someone's stdout (as Postfix's postdrop does).  A
 * command whose results go to stdout refuses to run with it closed: the
 * IDs it would print are the only way to know what it did.  A command that
 * reads stdin checks stdin_closed: /dev/null there is not an empty input.
 */
void
cmd_init(char **argv, int prints)
{
	const char *slash;
	int fd, closed1 = 0;

	if (argv[0] != NULL)
		progname = (slash = strrchr(argv[0], '/')) ? slash + 1 : argv[0];
	opterr = 0;	/* a bad option gets one line: the usage */
	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		if (fd == 0)
			stdin_closed = 1;
		if (fd == 1)
			closed1 = 1;
		if (open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
			_exit(EXIT_TEMP);
	}
	if (closed1 && prints)
		die(EXIT_PERM, "standard output is closed");
}

static void
vsay(const char *fmt, va_list ap)
{
	/* One write: concurrent commands' lines do not interleave. */
	char line[1024];
	int n;

	char *p;

	n = snprintf(line, sizeof(line), "%.64s: ", progname);
	(void)vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	/* What the user gave may hold a newline: it must not make two. */
	for (p = line; *p != '\0'; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = '?';
	n = (int)strlen(line);
	line[n++] = '\n';
	(void)!write(2, line, (size_t)n);	/* nowhere to report failure */
}

void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void
die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	exit(status);
}

void
usage(void)
{
	fprintf(stderr, "usage: %s\n", usage_text);
	exit(EXIT_PERM);
}

const char *
spool_dir(const char *dflag)
{
	const char *dir = dflag != NULL ? dflag : getenv("SPOOL_DIR");

	if (dir == NULL || *dir == '\0')
		die(EXIT_PERM, "no spool: give -d DIR or set SPOOL_DIR");
	return dir;
}

struct spool *
open_spool(const char *dir)
{
	char host[SPOOL_HOST_MAX + 1];
	struct spool *sp;

	if ((sp = spool_open(dir)) != NULL)
		return sp;
	switch (errno) {
	case ENODATA:
		die(EXIT_PERM, "%s: not a spool (no format file; see "
		    "spool-init(1))", dir);
	case EPROTO:
		die(EXIT_PERM, "%s: unknown spool format", dir);
	case EBADMSG:
		die(EXIT_PERM, "%s/config: malformed", dir);
	case EUCLEAN:
		die(EXIT_TEMP, "%s: damaged spool: a state directory is "
		    "missing or not a directory", dir);
	case EMLINK:
		die(EXIT_PERM, "%s: is a symlink: give the spool's real path",
		    dir);
	case ENOLCK:
		die(EXIT_PERM, "%s: multi-host mode on a file system whose locks "
		    "other hosts may not see (see spool-layout.md, Several "
		    "hosts)", dir);
	case EADDRINUSE:
		die(EXIT_PERM, "%s: host ID '%s' is in use by another machine "
		    "(see hosts/ in spool-layout.md): set SPOOL_HOST", dir,
		    spool_host(host));
	case ENOENT:
	case ENOTDIR:
		die(EXIT_PERM, "%s: %s", dir, strerror(errno));
	default:
		die(EXIT_TEMP, "%s: %s", dir, strerror(errno));
	}
}

int64_t
opt_duration(const char *opt, const char *arg, int zero_ok)
{
	int64_t ms;

	if (spool_parse_duration(arg, &ms) == -1 || (ms == 0 && !zero_ok))
		die(EXIT_PERM, "%s: bad duration '%.40s' (use e.g. 500ms, "
		    "30s, 5m, 2h, 7d%s)", opt, arg, zero_ok ? ", 0" : "");
	return ms;
}

long
opt_number(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno != 0 ||
	    v < min || v > max)
		die(EXIT_PERM, "%s: bad number '%.40s' (%ld to %ld)", opt, arg,
		    min, max);
	return v;
}

const char *
opt_word(const char *opt, const char *arg, int (*valid)(const char *))
{
	if (!valid(arg))
		die(EXIT_PERM, "%s: bad value (letters, digits, '.', '_', "
		    "'-'%s, starting with a letter or digit, at most %d bytes)",
		    opt, valid == spool_valid_owner ? ", ':', '@'" : "",
		    SPOOL_ID_MAX);
	return arg;
}

/* A name of one of the library's closed sets: a class, a reason. */
int
opt_name(const char *opt, const char *arg, const char *what,
    int (*from_name)(const char *))
{
	int v;

	if ((v = from_name(arg)) == -1)
		die(EXIT_PERM, "%s: unknown %s '%.40s' (see spool(7))", opt,
		    what, arg);
	return v;
}

static const char *
where(int state)
{
	switch (state) {
	case SPOOL_NEW:
		return "the job is in new/";
	case SPOOL_LEASED:
		return "the job is in leased/";
	case SPOOL_DONE:
		return "the job is in done/";
	case SPOOL_DEAD:
		return "the job is in dead/";
	default:
		return "there is no such job";
	}
}

/* One line for a refused or failed item; its exit status. */
int
report(const char *id, const struct spool_result *res)
{
	switch (res->status) {
	case 0:
		return EXIT_DONE;
	case 1:
		switch (res->refusal) {
		case SPOOL_NO_JOB:
			say("%s: no such job", id);
			break;
		case SPOOL_NO_STALE:
			say("%s: stale token: the current token is %" PRIu64
			    " and %s", id, res->token, where(res->state));
			break;
		case SPOOL_NO_UNRECONCILED:
			say("%s: its side effect may have happened: reconcile "
			    "it, then redrive with --reconciled", id);
			break;
		default:
			say("%s: %s: %s", id, spool_refusal_name(res->refusal),
			    where(res->state));
		}
		return EXIT_NO;
	default:
		if (res->err == EINVAL) {
			say("%s: invalid request", id);
			return EXIT_PERM;
		}
		if (res->err == ERANGE) {
			say("%s: --delay reaches past the deadline: the job "
			    "could never be delivered", id);
			return EXIT_PERM;
		}
		if (res->err == EUCLEAN) {
			say("%s: damaged job: run spool-fsck", id);
			return EXIT_TEMP;
		}
		if (res->changed)
			say("%s: state changed but not yet durable: %s "
			    "(retrying is safe)", id, strerror(res->err));
		else
			say("%s: %s", id, strerror(res->err));
		return EXIT_TEMP;
	}
}

/* A write error on stdout is a failure, even after the work is done. */
int
finish_stdout(int status)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		say("standard output: %s%s", strerror(errno), status == 0 ?
		    " (the spool has changed)" : "");
		return worst(status, EXIT_TEMP);
	}
	return status;
}

/*
 * The default lease holder: host:pid, which says which process on which
 * machine holds a job; pid:PID where the host name is not a valid owner.
 */
const char *
default_owner(char *buf, size_t len)
{
	char host[64];

	if (gethostname(host, sizeof(host)) == -1 ||
	    (host[sizeof(host) - 1] = '\0',
	    snprintf(buf, len, "%s:%ld", host, (long)getpid()),
	    !spool_valid_owner(buf)))
		(void)snprintf(buf, len, "pid:%ld", (long)getpid());
	return buf;
}

/* 111 over 100 over 1 over 0: the numbers are in that order. */
int
worst(int a, int b)
{
	return a > b ? a : b;
}

/* A short age: 950ms, 42s, 7m12s, 3h04m, 2d05h; a time to come is 0ms. */
const char *
fmt_age(char *buf, size_t len, int64_t ms)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		ms = s = 0;
	if (ms < 1000)
		(void)snprintf(buf, len, "%" PRId64 "ms", ms);
	else if (s < 60)
		(void)snprintf(buf, len, "%" PRId64 "s", s);
	else if (s < 3600)
		(void)snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", s / 60,
		    s % 60);
	else if (s < 86400)
		(void)snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m",
		    s / 3600, s / 60 % 60);
	else
		(void)snprintf(buf, len, "%" PRId64 "d%02" PRId64 "h",
		    s / 86400, s / 3600 % 24);
	return buf;
}

/* A time as the audit log writes it, 2026-11-30T08:12:16.301Z; "-": none. */
const char *
fmt_time(char *buf, size_t len, int64_t ms)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	char when[32];

	if (ms <= 0 || gmtime_r(&secs, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		return "-";
	(void)snprintf(buf, len, "%s.%03dZ", when, (int)(ms % 1000));
	return buf;
}

const char *
dash(const char *s)
{
	return s != NULL && *s != '\0' ? s : "-";
}

/* parked, redriven, dropped, or "" (spool-ls(1), DISP). */
const char *
disposition(const struct spool_job_info *in)
{
	if (in->dropped)
		return "dropped";
	if (in->state == SPOOL_DEAD)
		return "parked";
	return in->redriven ? "redriven" : "";
}

/* Deliveries of the current cycle: "#3" in a listing. */
int
deliveries(const struct spool_job_info *in)
{
	size_t i;
	int n = 0;

	for (i = 0; i < in->ndeliveries; i++)
		n += in->deliveries[i].cycle == in->cycles;
	return n;
}

/*
 * JSON is written as it goes, so the writers keep two facts: how deep the
 * value being written is, and whether the next one needs a comma before
 * it.  A closed object or array is a value like any other: after it, the
 * next one does.
 */
static int jfirst = 1, jdepth;

static void
jkey(const char *key)
{
	if (key != NULL)
		printf("%s\"%s\":", jfirst ? "" : ",", key);
	else if (!jfirst)
		putchar(',');
	jfirst = 0;
}

/* An object ('{') or an array ('['), with its key inside an object. */
void
jbegin(const char *key, int bracket)
{
	if (jdepth++ > 0)
		jkey(key);
	putchar(bracket);
	jfirst = 1;
}

void
jend(int bracket)
{
	putchar(bracket);
	jfirst = 0;
	if (--jdepth == 0)
		putchar('\n');
}

/* A string; null when empty.  A detail may hold '"' and '\\'. */
void
jstr(const char *key, const char *s)
{
	jkey(key);
	if (s == NULL || *s == '\0') {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

void
jnum(const char *key, int64_t v)
{
	jkey(key);
	printf("%" PRId64, v);
}

/* A time in ms since the epoch; null when there is none. */
void
jtime(const char *key, int64_t ms)
{
	if (ms == 0) {
		jkey(key);
		fputs("null", stdout);
	} else
		jnum(key, ms);
}

void
jbool(const char *key, int v)
{
	jkey(key);
	fputs(v ? "true" : "false", stdout);
}

/* A job's fields, as spool-ls --json and spool-show --json give them. */
void
jjob(const struct spool_job_info *in, int64_t now)
{
	jstr("id", in->id);
	jstr("state", spool_state_name(in->state));
	jstr("disposition", disposition(in));
	jtime("since", in->since);
	jnum("age_ms", now - in->since);
	jtime("created", in->created);
	jtime("deadline", in->deadline);
	jtime("eligible", in->eligible);
	jtime("lease_until", in->lease_until);
	jstr("owner", in->owner);
	jstr("trace", in->trace);
	jnum("token", (int64_t)in->token);
	jnum("attempts", in->attempts);
	jnum("max_attempts", in->max_attempts);
	jnum("deliveries", deliveries(in));
	jnum("cycles", in->cycles);
	jstr("reason", in->reason ? spool_reason_name(in->reason) : NULL);
	jstr("class", in->class ? spool_class_name(in->class) : NULL);
	jstr("detail", in->detail);
	jbool("side_effect", in->side_effect);
	jbool("redriven", in->redriven);
	jbool("dropped", in->dropped);
	jstr("by", in->by);
	jstr("note", in->note);
	jtime("acted", in->acted);
}

static int
append(struct picks *l, const char *id, int64_t since)
{
	struct pick *v;

	if (l->n == l->size) {
		l->size = l->size ? 2 * l->size : 256;
		if ((v = reallocarray(l->v, l->size, sizeof(*v))) == NULL)
			return -1;
		l->v = v;
	}
	if ((l->v[l->n].id = strdup(id)) == NULL)
		return -1;
	l->v[l->n++].since = since;
	return 0;
}

/* Keep a valid ID; report a bad one, which no call ever sees. */
void
picks_add(struct picks *l, const char *id, size_t len, int64_t since,
    int *status)
{
	if (strlen(id) != len || !spool_valid_id(id)) {
		say("%.140s: bad ID", id);
		*status = worst(*status, EXIT_PERM);
		l->bad++;
		return;
	}
	if (append(l, id, since) == -1)
		die(EXIT_TEMP, "%s", strerror(errno));
}

/* 1 if the operands are a lone "-": IDs on stdin, which must be open. */
int
ids_on_stdin(char **args, int nargs)
{
	if (nargs != 1 || strcmp(args[0], "-") != 0)
		return 0;
	if (stdin_closed)
		die(EXIT_PERM, "standard input is closed");
	return 1;
}

/*
 * Add to l the operands, or with a lone "-" the IDs on stdin, one a line:
 * at most max of them (0: all), and return 0 at the end of the input.
 */
static int
read_some(struct picks *l, char **args, int nargs, size_t max, int *status)
{
	static char *line;
	static size_t cap;
	ssize_t len;
	int i;

	if (!ids_on_stdin(args, nargs)) {
		for (i = 0; i < nargs; i++)
			picks_add(l, args[i], strlen(args[i]), 0, status);
		return 0;
	}
	while (max == 0 || l->n < max) {
		if ((len = getline(&line, &cap, stdin)) == -1) {
			if (ferror(stdin))
				die(EXIT_TEMP, "stdin: %s", strerror(errno));
			free(line);
			line = NULL;
			cap = 0;
			return 0;
		}
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len > 0)
			picks_add(l, line, (size_t)len, 0, status);
	}
	return 1;
}

/* The operands, or with a lone "-" one ID a line from stdin. */
void
read_ids(struct picks *l, char **args, int nargs, int *status)
{
	(void)read_some(l, args, nargs, 0, status);
}

/*
 * in_batches() for the IDs that args name, its status folded into
 * *status: stdin is read a batch at a time, so that a list of any length
 * is acted on in the memory of one.
 */
void
named_in_batches(char **args, int nargs, int64_t before,
    int (*act)(void *arg, struct spool_item *items, size_t n), void *arg,
    int *status)
{
	struct picks l = { NULL, 0, 0, 0 };
	int more, st;

	do {
		more = read_some(&l, args, nargs, SPOOL_BATCH_MAX, status);
		st = in_batches(&l, before, act, arg);
		*status = worst(*status, st);
		picks_free(&l);
	} while (more);
}

/* qsort(3) must not be given a null array, even an empty one. */
void
picks_sort(struct picks *l, int (*cmp)(const void *, const void *))
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp);
}

/* For picks_sort: the longest in its state first, then by ID. */
int
picks_oldest_first(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->since != y->since)
		return x->since < y->since ? -1 : 1;
	return strcmp(x->id, y->id);
}

void
picks_free(struct picks *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].id);
	free(l->v);
	l->v = NULL;
	l->n = l->size = 0;
}

/* spool_list() hands over valid names only. */
static int
collect(void *arg, const char *id, const char *file)
{
	(void)file;
	return append(arg, id, 0);
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(((const struct pick *)a)->id,
	    ((const struct pick *)b)->id);
}

/*
 * The IDs of the jobs whose files are in state, sorted, each once: a job
 * that moves out and back during the listing is seen twice.
 */
void
list_ids(struct spool *sp, enum spool_state state, struct picks *l)
{
	size_t i, k;

	if (spool_list(sp, state, collect, l) == -1)
		die(EXIT_TEMP, "%s/: %s", spool_state_name(state),
		    strerror(errno));
	picks_sort(l, by_id);
	for (i = k = 0; i < l->n; i++) {
		if (k > 0 && strcmp(l->v[i].id, l->v[k - 1].id) == 0)
			free(l->v[i].id);
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
}

/*
 * Add to l the jobs in state that match, each with the time it entered the
 * state, in ID order.  The directory is listed first and each sidecar read
 * after, under a shared lock: a job that moved in between is not in state
 * any more, and is not selected.  One that could not be read is reported.
 */
void
select_jobs(struct spool *sp, enum spool_state state,
    int (*match)(void *arg, const struct spool_job_info *in), void *arg,
    struct picks *l, int *status)
{
	struct picks seen = { NULL, 0, 0, 0 };
	struct spool_job_info info;
	size_t i;

	list_ids(sp, state, &seen);
	for (i = 0; i < seen.n; i++) {
		if (spool_job_info(sp, seen.v[i].id, 0, &info) == -1) {
			if (errno != ENOENT) {	/* ENOENT: purged meanwhile */
				say("%s: %s", seen.v[i].id, errno == EUCLEAN ?
				    "damaged job: run spool-fsck" :
				    strerror(errno));
				*status = worst(*status, EXIT_TEMP);
			}
			continue;
		}
		if (info.state == state && match(arg, &info))
			picks_add(l, info.id, strlen(info.id), info.since,
			    status);
		spool_job_info_free(&info);
	}
	picks_free(&seen);
}

/*
 * Act on every ID of l, SPOOL_BATCH_MAX at a time, each item guarded by
 * before (0: not guarded); print the IDs done and report the others, and
 * return the worst status.  act fills in each item's result; -1 from it
 * is a failure of the whole call.
 */
int
in_batches(const struct picks *l, int64_t before,
    int (*act)(void *arg, struct spool_item *items, size_t n), void *arg)
{
	struct spool_item *items;
	size_t i, k, n;
	int status = EXIT_DONE;

	if ((items = calloc(SPOOL_BATCH_MAX, sizeof(*items))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (i = 0; i < l->n; i += n) {
		n = l->n - i < SPOOL_BATCH_MAX ? l->n - i : SPOOL_BATCH_MAX;
		for (k = 0; k < n; k++) {
			items[k].id = l->v[i + k].id;
			items[k].before = before;
		}
		if (act(arg, items, n) == -1)
			die(EXIT_TEMP, "%s", strerror(errno));
		for (k = 0; k < n; k++) {
			if (items[k].res.status == 0)
				printf("%s\n", items[k].id);
			status = worst(status, report(items[k].id,
			    &items[k].res));
		}
	}
	free(items);
	return status;
}

/*
 * What an action on item would answer, for a dry run, without taking it:
 * refused unless the job is unchanged since item->before, is in from
 * (refusal otherwise) and, with need_reconciled, is not flagged as having
 * maybe had its side effect; checked in the library's order.
 */
void
preview(struct spool *sp, struct spool_item *item, enum spool_state from,
    int refusal, int need_reconciled)
{
	struct spool_result *res = &item->res;
	struct spool_job_info info;

	memset(res, 0, sizeof(*res));
	if (spool_job_info(sp, item->id, 0, &info) == -1) {
		res->status = errno == ENOENT ? 1 : -1;
		res->refusal = SPOOL_NO_JOB;
		res->err = errno;
		return;
	}
	res->state = info.state;
	res->token = info.token;
	if (item->before != 0 && info.since >= item->before)
		res->refusal = SPOOL_NO_CHANGED;
	else if (info.state != from)
		res->refusal = refusal;
	else if (need_reconciled && info.side_effect)
		res->refusal = SPOOL_NO_UNRECONCILED;
	res->status = res->refusal != SPOOL_NO_NONE;
	spool_job_info_free(&info);
}

/* -d DIR, --by WHO, --note TICKET: drop, cancel, pause and resume. */
static const char *
operator_options(int argc, char **argv, struct spool_operator *op)
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "note", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	const char *dir = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'b':
			op->by = opt_word("--by", optarg, spool_valid_note);
			break;
		case 'n':
			op->note = opt_word("--note", optarg, spool_valid_note);
			break;
		default:
			usage();
		}
	}
	return dir;
}

struct acting {
	struct spool *sp;
	const struct spool_operator *op;
	item_action action;
};

static int
act(void *arg, struct spool_item *items, size_t n)
{
	const struct acting *a = arg;

	return a->action(a->sp, a->op, items, n);
}

/*
 * The whole of spool-drop and spool-cancel, which differ only in their
 * library call: who, why, then the IDs (or "-"); print the IDs done.
 */
int
act_main(int argc, char **argv, item_action action)
{
	struct spool_operator op = { NULL, NULL, 0 };
	struct acting a = { NULL, &op, action };
	const char *dir;
	int status = EXIT_DONE;

	cmd_init(argv, 1);
	dir = operator_options(argc, argv, &op);
	if (op.by == NULL || op.note == NULL || optind == argc)
		usage();
	(void)ids_on_stdin(argv + optind, argc - optind);
	a.sp = open_spool(spool_dir(dir));
	named_in_batches(argv + optind, argc - optind, 0, act, &a, &status);
	spool_close(a.sp);
	return finish_stdout(status);
}

/*
 * The whole of spool-pause (on) and spool-resume: who and why are both
 * given or neither.  Pausing a paused spool, or resuming one that is not,
 * changes nothing: the first pause says who and why.
 */
int
pause_main(int argc, char **argv, int on)
{
	struct spool_operator op = { NULL, NULL, 0 };
	const char *dir;
	struct spool *sp;
	int paused;

	cmd_init(argv, 0);
	dir = operator_options(argc, argv, &op);
	if (optind != argc || (op.by == NULL) != (op.note == NULL))
		usage();
	sp = open_spool(spool_dir(dir));
	if ((paused = spool_paused(sp)) == -1 || (paused != on &&
	    spool_pause(sp, op.by != NULL ? &op : NULL, on) == -1))
		die(EXIT_TEMP, "%s", strerror(errno));
	spool_close(sp);
	return EXIT_DONE;
}
