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

/* Both forms for --help; a usage error shows the form it tried. */
#define NAMED_USAGE "spool-redrive [-d DIR] --by WHO --note TICKET " \
    "[--reconciled] [--edited] [--dry-run] ID ..."
#define BULK_USAGE "spool-redrive [-d DIR] --by WHO --note TICKET " \
    "[--reconciled] [--edited] [--dry-run] [--rate N/s] [-0] - | --all " \
    "[--reason R] [--class C] [--key KEY] [--older-than DUR]"
const char *usage_text = NAMED_USAGE "\n       " BULK_USAGE;
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR            the spool (default: $SPOOL_DIR)\n"
    "  --by WHO          who redrives: an operator handle or role\n"
    "  --note TICKET     why: a ticket or incident identifier\n"
    "  --reconciled      the side effect was checked: redrive a flagged job\n"
    "  --edited          send the payload as edited by hand\n"
    "  -0                with -, IDs end in NUL, not a newline\n"
    "  --all             every parked job that the filters keep\n"
    "  --reason R        only jobs parked for reason R\n"
    "  --class C         only jobs whose last failure was of class C\n"
    "  --key KEY         only jobs with key KEY\n"
    "  --older-than DUR  only jobs parked for at least DUR\n"
    "  --rate N/s        at most N jobs a second (default: 10/s)\n"
    "  --dry-run         print what would be redriven, change nothing\n";

#define NS	1000000000LL

struct bulk {
	int all, dry_run, reason, class, paced;
	const char *key;	/* --key, or NULL */
	int64_t older_than;	/* ms; -1: any age */
	int64_t cutoff;		/* --all: what parked after is not selected */
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

static int
matches(void *arg, const struct spool_job_info *in)
{
	const struct bulk *b = arg;

	return (b->reason == 0 || in->reason == b->reason) &&
	    (b->class == 0 || in->class == b->class) &&
	    (b->key == NULL || strcmp(in->key, b->key) == 0) &&
	    in->since <= b->cutoff;
}

/*
 * --all: the parked jobs that match, oldest parked first.  The cutoff is
 * also each redrive's guard: a job that leaves dead/ and parks again while
 * the run goes on (another operator's redrive, then a failure) is a new
 * failure that nobody has looked at, and is refused as changed.
 */
static void
select_all(struct spool *sp, struct bulk *b, struct picks *l, int *status)
{
	b->cutoff = spool_now() - (b->older_than < 0 ? 0 : b->older_than);
	select_jobs(sp, SPOOL_DEAD, matches, b, l, status);
	picks_sort(l, picks_oldest_first);
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

/*
 * One job a call, each started no sooner than one interval after the one
 * before: a steady rate with no burst, even after a slow call.
 */
static int
bulk(struct spool *sp, const struct spool_operator *op, struct bulk *b,
    struct picks *l)
{
	struct spool_item item;
	int64_t start, next, interval = NS / b->rate;
	int status = EXIT_DONE, stopped = 0;
	size_t i, total = l->n + l->bad;

	b->refused = l->bad;
	if (!b->dry_run)
		block_stops();
	progress_begin(!b->dry_run, (double)b->rate);
	start = next = clock_ns(CLOCK_MONOTONIC);
	for (i = 0; i < l->n; i++) {
		memset(&item, 0, sizeof(item));
		item.id = l->v[i].id;
		item.before = b->all ? b->cutoff + 1 : 0;
		if (b->dry_run)
			preview(sp, &item, SPOOL_DEAD, SPOOL_NO_NOT_PARKED,
			    !op->reconciled, !op->edited);
		else if (wait_until(next)) {
			stopped = STOP_SIGNAL;
			break;
		} else {
			next = clock_ns(CLOCK_MONOTONIC) + interval;
			if (spool_redrive(sp, op, &item, 1) == -1) {
				say("%s", errtext(errno));
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
		}
		status = worst(status, report(item.id, &item.res));
		progress_show(NULL, i + 1, l->n);
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

struct redrive {
	struct spool *sp;
	const struct spool_operator *op;
};

static int
redrive(void *arg, struct spool_item *items, size_t n)
{
	const struct redrive *r = arg;

	return spool_redrive(r->sp, r->op, items, n);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		OPERATOR_OPTIONS,
		{ "class", required_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "edited", no_argument, NULL, 'e' },
		{ "key", required_argument, NULL, 'k' },
		{ "older-than", required_argument, NULL, 'o' },
		{ "rate", required_argument, NULL, 'R' },
		{ "reason", required_argument, NULL, 'w' },
		{ "reconciled", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_operator op = { 0 };
	struct bulk b = { .older_than = -1, .rate = 10 };
	struct picks l = { NULL, 0, 0, 0 };
	struct redrive r = { NULL, &op };
	const char *dir = NULL;
	int c, stdin_ids, filters = 0, status = EXIT_DONE;

	cmd_init(argv, 1);
	while ((c = cmd_getopt(argc, argv, "0d:", longopts)) != -1) {
		switch (c) {
		case '0':
			ids_nul = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'a':
			b.all = 1;
			break;
		case 'b':
		case 'n':
			operator_option(c, optarg, &op);
			break;
		case 'c':
			b.class = opt_name("--class", optarg,
			    &class_names);
			filters = 1;
			break;
		case 'D':
			b.dry_run = 1;
			break;
		case 'e':
			op.edited = 1;
			break;
		case 'k':
			b.key = opt_word("--key", optarg, spool_valid_key);
			filters = 1;
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
			b.reason = opt_name("--reason", optarg,
			    &reason_names);
			filters = 1;
			break;
		case 'r':
			op.reconciled = 1;
			break;
		default:
			usage_text = NAMED_USAGE;
			usage();
		}
	}
	stdin_ids = argc - optind == 1 && strcmp(argv[optind], "-") == 0;
	/* The usage shown is that of the form the command line tried. */
	usage_text = NAMED_USAGE;
	if (b.all || stdin_ids || filters || b.paced || ids_nul) {
		usage_text = BULK_USAGE;
		if (b.all ? optind < argc || ids_nul : !stdin_ids || filters)
			usage();
	}
	if (optind == argc && !b.all)
		usage();
	who_and_why(&op, NULL, 1);
	read_ids(&l, argv + optind, argc - optind, &status);
	r.sp = open_spool(spool_dir(dir));
	if (b.all)
		select_all(r.sp, &b, &l, &status);
	/*
	 * Named jobs: one batch, no pacing, no summary; but a dry run of
	 * them is previewed one by one and summed up as a bulk one is.
	 */
	if (b.all || stdin_ids || b.dry_run)
		status = worst(status, bulk(r.sp, &op, &b, &l));
	else
		status = worst(status, in_batches(&l, 0, redrive, &r));
	picks_free(&l);
	spool_close(r.sp);
	return finish_stdout(status);
}
