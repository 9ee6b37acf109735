/*
 * spool-redrive: put parked jobs back in new/, unchanged; print their IDs.
 * Named jobs go at once, in one batch.  In bulk (IDs from stdin, or every
 * parked job that --all selects) they go one library call each, at a
 * steady rate, so that the recovery from an outage does not cause the next
 * one.  A stop signal is taken only between two jobs, and a second run goes
 * on with whatever is still parked: nothing remembers where a run was.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

const char *usage_text = "spool-redrive [-d DIR] --by WHO --note TICKET "
    "[--reconciled] ID ...";
static const char bulk_usage[] = "spool-redrive [-d DIR] --by WHO --note "
    "TICKET [--reconciled] [--dry-run] [--rate N/s] - | --all "
    "[--reason R] [--class C] [--older-than DUR]";

#define NS	1000000000LL

struct pick {
	char *id;
	int64_t parked;		/* --all: when it parked: the order */
};

struct list {
	struct pick *v;
	size_t n, size;
	size_t bad;		/* lines of stdin that were not IDs */
};

struct bulk {
	int all, dry_run, reason, class, paced;
	int64_t older_than;	/* ms; -1: any age */
	long rate;		/* jobs a second */
	size_t moved, refused, failed;
};

static sigset_t stops;

static int64_t
clock_ns(clockid_t clock)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) == -1)
		die(EXIT_TEMP, "clock_gettime: %s", strerror(errno));
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* Keep a valid ID; report a bad one, which no call ever sees. */
static void
add_id(struct list *l, const char *id, size_t len, int64_t parked,
    int *status)
{
	struct pick *v;

	if (strlen(id) != len || !spool_valid_id(id)) {
		say("%.140s: bad ID", id);
		*status = worst(*status, EXIT_PERM);
		l->bad++;
		return;
	}
	if (l->n == l->size) {
		l->size = l->size ? 2 * l->size : 256;
		if ((v = reallocarray(l->v, l->size, sizeof(*v))) == NULL)
			die(EXIT_TEMP, "%s", strerror(errno));
		l->v = v;
	}
	if ((l->v[l->n].id = strdup(id)) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	l->v[l->n++].parked = parked;
}

static void
free_list(struct list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].id);
	free(l->v);
}

static void
read_stdin(struct list *l, int *status)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	while ((len = getline(&line, &cap, stdin)) != -1) {
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len > 0)
			add_id(l, line, (size_t)len, 0, status);
	}
	if (ferror(stdin))
		die(EXIT_TEMP, "stdin: %s", strerror(errno));
	free(line);
}

static int
collect(void *arg, const char *id)
{
	int status = EXIT_DONE;

	add_id(arg, id, strlen(id), 0, &status);
	return 0;
}

/* qsort(3) must not be given a null array, even an empty one. */
static void
sort_picks(struct pick *v, size_t n,
    int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp);
}

/*
 * Read a job without locking it.  Such a read can race a transition and
 * find the file in neither place the sidecar named, which looks like
 * damage (EUCLEAN): read again before believing it.
 */
static int
job_info(struct spool *sp, const char *id, struct spool_job_info *info)
{
	int tries = 3;

	while (spool_job_info(sp, id, 0, info) == -1)
		if (errno != EUCLEAN || --tries == 0)
			return -1;
	return 0;
}

static int
by_id(const void *a, const void *b)
{
	return strcmp(((const struct pick *)a)->id,
	    ((const struct pick *)b)->id);
}

static int
by_parked(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->parked != y->parked)
		return x->parked < y->parked ? -1 : 1;
	return strcmp(x->id, y->id);
}

/*
 * --all: the parked jobs that match, oldest parked first.  A job listed in
 * dead/ may have moved since (another operator's redrive): it is no longer
 * parked, so it is simply not selected.
 */
static void
select_all(struct spool *sp, const struct bulk *b, struct list *l,
    int *status)
{
	struct spool_job_info info;
	struct list seen = { NULL, 0, 0, 0 };
	int64_t now = clock_ns(CLOCK_REALTIME) / 1000000;
	size_t i;

	if (spool_list(sp, SPOOL_DEAD, collect, &seen) == -1)
		die(EXIT_TEMP, "dead/: %s", strerror(errno));
	/* A name can be listed twice if it moved out and back meanwhile. */
	sort_picks(seen.v, seen.n, by_id);
	for (i = 0; i < seen.n; i++) {
		if (i > 0 && strcmp(seen.v[i].id, seen.v[i - 1].id) == 0)
			continue;
		if (job_info(sp, seen.v[i].id, &info) == -1) {
			if (errno != ENOENT) {
				say("%s: %s", seen.v[i].id, errno == EUCLEAN ?
				    "damaged job: run spool-fsck" :
				    strerror(errno));
				*status = worst(*status, EXIT_TEMP);
			}
			continue;
		}
		if (info.state == SPOOL_DEAD &&
		    (b->reason == 0 || info.reason == b->reason) &&
		    (b->class == 0 || info.class == b->class) &&
		    (b->older_than < 0 || now - info.since >= b->older_than))
			add_id(l, info.id, strlen(info.id), info.since,
			    status);
		spool_job_info_free(&info);
	}
	free_list(&seen);
	sort_picks(l->v, l->n, by_parked);
}

/*
 * SIGINT and SIGTERM are blocked and taken only while waiting for the next
 * job's turn, so a run never stops inside a transition and always says how
 * far it got.  A SIGINT ignored on entry (a background job of a script)
 * stays ignored, as it would be for any command.
 */
static void
block_stops(void)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	struct sigaction sa;
	size_t i;

	(void)sigemptyset(&stops);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &sa) == 0 &&
		    sa.sa_handler != SIG_IGN)
			(void)sigaddset(&stops, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &stops, NULL) == -1)
		die(EXIT_TEMP, "sigprocmask: %s", strerror(errno));
}

/* Sleep until the monotonic time until (ns); 1 if told to stop. */
static int
wait_until(int64_t until)
{
	struct timespec ts;
	int64_t left;

	for (;;) {
		left = until - clock_ns(CLOCK_MONOTONIC);
		if (left < 0)
			left = 0;
		ts.tv_sec = (time_t)(left / NS);
		ts.tv_nsec = (long)(left % NS);
		if (sigtimedwait(&stops, NULL, &ts) != -1)
			return 1;
		if (errno == EAGAIN && left == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			die(EXIT_TEMP, "sigtimedwait: %s", strerror(errno));
	}
}

/*
 * Progress on a terminal: one line rewritten in place, erased before any
 * message and at the end.  It is only a display: a failed write is let be.
 */
static int progress_width;

static void
progress(const struct bulk *b, size_t done, size_t total, int64_t elapsed)
{
	/* The first job starts at once: the rate is of the gaps after it. */
	double rate = done > 1 && elapsed > 0 ? (double)(done - 1) * NS /
	    (double)elapsed : (double)b->rate;
	long eta = (long)((double)(total - done) / rate + 0.5);
	char line[160];
	int n;

	n = snprintf(line, sizeof(line), "\r%s: %zu of %zu, %.1f/s, ETA "
	    "%ldm%02lds ", progname, done, total, rate, eta / 60, eta % 60);
	if (n > 0 && (size_t)n < sizeof(line)) {
		progress_width = n - 1;
		(void)!write(2, line, (size_t)n);
	}
}

static void
progress_erase(void)
{
	char line[160];
	int n;

	if (progress_width == 0)
		return;
	n = snprintf(line, sizeof(line), "\r%*s\r", progress_width, "");
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!write(2, line, (size_t)n);
	progress_width = 0;
}

/* Why a bulk run ended early. */
#define STOP_SIGNAL	1
#define STOP_ERROR	2

static void
summary(const struct bulk *b, size_t total, int64_t elapsed, int stopped)
{
	size_t left = total - b->moved - b->refused - b->failed;
	char failed[32] = "", rest[48] = "";

	if (b->failed > 0)
		(void)snprintf(failed, sizeof(failed), ", %zu failed",
		    b->failed);
	if (b->dry_run) {
		say("dry run: would redrive %zu of %zu (%zu refused%s)",
		    b->moved, total, b->refused, failed);
		return;
	}
	if (stopped)
		(void)snprintf(rest, sizeof(rest), ", %zu not tried", left);
	say("%sredrove %zu of %zu (%zu refused%s) in %.1fs%s",
	    stopped == STOP_SIGNAL ? "interrupted: " : stopped == STOP_ERROR ?
	    "stopped: " : "", b->moved, total, b->refused, failed,
	    (double)elapsed / NS, rest);
}

/* What a redrive would answer, without making it. */
static void
preview(struct spool *sp, const struct spool_operator *op, const char *id,
    struct spool_result *res)
{
	struct spool_job_info info;

	memset(res, 0, sizeof(*res));
	if (job_info(sp, id, &info) == -1) {
		res->status = errno == ENOENT ? 1 : -1;
		res->refusal = SPOOL_NO_JOB;
		res->err = errno;
		return;
	}
	res->state = info.state;
	res->token = info.token;
	if (info.state != SPOOL_DEAD || (info.side_effect && !op->reconciled)) {
		res->status = 1;
		res->refusal = info.state != SPOOL_DEAD ? SPOOL_NO_NOT_PARKED :
		    SPOOL_NO_UNRECONCILED;
	}
	spool_job_info_free(&info);
}

/*
 * One job a call, each started no sooner than one interval after the one
 * before: a steady rate with no burst, even after a slow call.
 */
static int
bulk(struct spool *sp, const struct spool_operator *op, struct bulk *b,
    struct list *l)
{
	struct spool_item item;
	int64_t start, now, next, shown = 0, interval = NS / b->rate;
	int tty = !b->dry_run && isatty(2), status = EXIT_DONE, stopped = 0;
	size_t i, total = l->n + l->bad;

	b->refused = l->bad;
	if (!b->dry_run)
		block_stops();
	start = next = clock_ns(CLOCK_MONOTONIC);
	for (i = 0; i < l->n; i++) {
		memset(&item, 0, sizeof(item));
		item.id = l->v[i].id;
		if (b->dry_run)
			preview(sp, op, item.id, &item.res);
		else if (wait_until(next)) {
			stopped = STOP_SIGNAL;
			break;
		} else {
			next = clock_ns(CLOCK_MONOTONIC) + interval;
			if (spool_redrive(sp, op, &item, 1) == -1) {
				progress_erase();
				say("%s", strerror(errno));
				stopped = STOP_ERROR;
				break;
			}
		}
		if (item.res.status == 0) {
			b->moved++;
			/* Each ID as it goes: a pipe sees how far it got. */
			if (printf("%s\n", item.id) < 0 ||
			    (!b->dry_run && fflush(stdout) == EOF)) {
				stopped = STOP_ERROR;
				break;
			}
		} else {
			if (item.res.status == 1)
				b->refused++;
			else
				b->failed++;
			progress_erase();
		}
		status = worst(status, report(item.id, &item.res));
		now = clock_ns(CLOCK_MONOTONIC);
		if (tty && (now - shown >= NS / 4 || i + 1 == l->n)) {
			progress(b, i + 1, l->n, now - start);
			shown = now;
		}
	}
	progress_erase();
	summary(b, total, clock_ns(CLOCK_MONOTONIC) - start, stopped);
	return stopped ? worst(status, EXIT_TEMP) : status;
}

static long
opt_rate(const char *arg)
{
	const char *slash = strchr(arg, '/');
	size_t len = slash != NULL ? (size_t)(slash - arg) : strlen(arg);
	char num[16];

	if ((slash != NULL && strcmp(slash, "/s") != 0) || len == 0 ||
	    len >= sizeof(num))
		die(EXIT_PERM, "--rate: bad rate '%.40s' (jobs a second, as "
		    "10/s)", arg);
	memcpy(num, arg, len);
	num[len] = '\0';
	return opt_number("--rate", num, 1, 10000);
}

static int
opt_reason(const char *arg)
{
	int i;

	for (i = 1; strcmp(spool_reason_name(i), "?") != 0; i++)
		if (strcmp(spool_reason_name(i), arg) == 0)
			return i;
	die(EXIT_PERM, "--reason: unknown reason '%.40s' (see spool(7))", arg);
}

/* Named jobs: one batch, no pacing, no summary. */
static int
named(struct spool *sp, const struct spool_operator *op, struct list *l)
{
	struct spool_item *items;
	size_t i, k, n;
	int status = EXIT_DONE;

	if ((items = calloc(SPOOL_BATCH_MAX, sizeof(*items))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (i = 0; i < l->n; i += n) {
		n = l->n - i < SPOOL_BATCH_MAX ? l->n - i : SPOOL_BATCH_MAX;
		for (k = 0; k < n; k++)
			items[k].id = l->v[i + k].id;
		if (spool_redrive(sp, op, items, n) == -1)
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

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "by", required_argument, NULL, 'b' },
		{ "class", required_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "note", required_argument, NULL, 'n' },
		{ "older-than", required_argument, NULL, 'o' },
		{ "rate", required_argument, NULL, 'R' },
		{ "reason", required_argument, NULL, 'w' },
		{ "reconciled", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_operator op = { NULL, NULL, 0 };
	struct bulk b = { 0, 0, 0, 0, 0, -1, 10, 0, 0, 0 };
	struct list l = { NULL, 0, 0, 0 };
	const char *dir = NULL;
	struct spool *sp;
	int c, i, stdin_ids, filters = 0, status = EXIT_DONE;

	cmd_init(argv, 1);
	while ((c = getopt_long(argc, argv, "d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'a':
			b.all = 1;
			break;
		case 'b':
			op.by = opt_word("--by", optarg, spool_valid_note);
			break;
		case 'c':
			if ((b.class = spool_class_from_name(optarg)) == -1)
				die(EXIT_PERM, "--class: unknown class '%.40s' "
				    "(see spool(7))", optarg);
			filters = 1;
			break;
		case 'D':
			b.dry_run = 1;
			break;
		case 'n':
			op.note = opt_word("--note", optarg, spool_valid_note);
			break;
		case 'o':
			b.older_than = opt_duration("--older-than", optarg, 1);
			filters = 1;
			break;
		case 'R':
			b.rate = opt_rate(optarg);
			b.paced = 1;
			break;
		case 'w':
			b.reason = opt_reason(optarg);
			filters = 1;
			break;
		case 'r':
			op.reconciled = 1;
			break;
		default:
			usage();
		}
	}
	stdin_ids = argc - optind == 1 && strcmp(argv[optind], "-") == 0;
	/* The usage shown is that of the form the command line tried. */
	if (b.all || stdin_ids || b.dry_run || filters || b.paced) {
		usage_text = bulk_usage;
		if (b.all ? optind < argc : !stdin_ids || filters)
			usage();
	}
	if (op.by == NULL || op.note == NULL || (optind == argc && !b.all))
		usage();
	if (stdin_ids)
		read_stdin(&l, &status);
	else
		for (i = optind; i < argc; i++)
			add_id(&l, argv[i], strlen(argv[i]), 0, &status);
	sp = open_spool(spool_dir(dir));
	if (b.all)
		select_all(sp, &b, &l, &status);
	if (b.all || stdin_ids)
		status = worst(status, bulk(sp, &op, &b, &l));
	else
		status = worst(status, named(sp, &op, &l));
	free_list(&l);
	spool_close(sp);
	return finish_stdout(status);
}
