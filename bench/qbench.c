/*
 * qbench: job cycles (enqueue, claim, finish) of spool and of the queues it
 * is measured against, timed side by side, and the floors they stand on.
 * This is the driver: the options, the turns and their lines; each system
 * is a back end's (qbench.h).  The systems named take turns within a
 * round in an order that rotates from round to round, so that a noisy
 * neighbour slows all of them alike, and round 0, a warm-up, is printed
 * but never counted.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

#define RUN_MAX		64	/* systems, and many-* turns, of one run */
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

struct opts opt = {
	.label = "default", .cli_files = 10000, .batch_files = BATCH
};
char payload[PAYLOAD_SIZE];
char payload_path[PATH_MAX];
int devnull;

static const struct backend *const backends[] = {
	&floor_backend, &spool_backend, &sqlite_backend, &nq_backend,
	&beanstalkd_backend, &pg_backend, &run_backend, &python_backend,
	&batch_backend
};

static int rounds = 5;
static int probe;			/* -P */

static void
usage(void)
{
	fprintf(stderr, "usage: qbench -w WORKDIR -b BINDIR [-l LABEL] "
	    "[-r ROUNDS] [-T SLICE] [-t TRUE] [-p PORT] [-f FILES] [-c CLAIMS] "
	    "[-n FILES] [-u KIB] [-s SPOOL] [-m PROCS] [-q CONNINFO] [-F DEV] "
	    "[-y PYTHON -Y SCRIPT] [-B SCRIPT] [-G PROGRAM] "
	    "SYSTEM[:K | =K] ...\n"
	    "       qbench -P -p PORT\n");
	exit(2);
}

/* -m "1 4 16": the P of each turn of the many-* systems. */
static void
procs_list(char *list)
{
	char *tok, *save;

	for (tok = strtok_r(list, " ,", &save); tok != NULL;
	    tok = strtok_r(NULL, " ,", &save)) {
		if (opt.nprocs == PROCS_MAX)
			errx(2, "-m: too many counts");
		opt.procs[opt.nprocs++] = (int)bench_number("-m", tok, 1, MANY_MAX,
		    0);
	}
}

static void
options(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "B:b:c:D:F:f:G:l:m:n:Pp:q:r:s:T:t:u:w:Y:y:")) !=
	    -1) {
		switch (c) {
		case 'B':
			opt.batchscript = optarg;
			break;
		case 'G':
			opt.gocycle = optarg;
			break;
		case 'b':
			opt.bindir = optarg;
			break;
		case 'c':
			opt.cli_claims = (long)bench_number("-c", optarg, 0, 1e9, 0);
			break;
		case 'D':
			opt.truedyn = optarg;
			break;
		case 'F':
			opt.flush_dev = optarg;
			break;
		case 'f':
			opt.cli_files = (int)bench_number("-f", optarg, 1, 1e6, 0);
			break;
		case 'l':
			opt.label = optarg;
			break;
		case 'm':
			procs_list(optarg);
			break;
		case 'n':
			opt.batch_files = (int)bench_number("-n", optarg, 1, BATCH, 0);
			break;
		case 'P':
			probe = 1;
			break;
		case 'p':
			opt.bean_port = (int)bench_number("-p", optarg, 0, 65535, 0);
			break;
		case 'q':
			opt.pg_conninfo = optarg;
			break;
		case 'r':
			rounds = (int)bench_number("-r", optarg, 1, 1000, 0);
			break;
		case 's':
			opt.spool = optarg;
			break;
		case 'T':
			opt.slice = bench_number("-T", optarg, 0, 3600, 1);
			break;
		case 't':
			opt.truebin = optarg;
			break;
		case 'u':
			opt.dirty_kib = (long)bench_number("-u", optarg, 0, 1 << 20, 0);
			break;
		case 'w':
			opt.workdir = optarg;
			break;
		case 'Y':
			opt.pyscript = optarg;
			break;
		case 'y':
			opt.python = optarg;
			break;
		default:
			usage();
		}
	}
	if (!probe && (opt.workdir == NULL || opt.bindir == NULL ||
	    optind == argc))
		usage();
}

/* The payload every job carries, and a file holding it under -w. */
static void
payload_file(void)
{
	int fd;

	memset(payload, 'p', sizeof(payload) - 1);
	payload[sizeof(payload) - 1] = '\n';
	pathf(payload_path, sizeof(payload_path), "%s/payload", opt.workdir);
	if ((fd = open(payload_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0666)) == -1)
		err(1, "%s", payload_path);
	write_all(fd, payload, sizeof(payload));
	(void)close(fd);
}

/* The system called name, or NULL: *m is set if it is a many-* one. */
static struct sys *
lookup(const char *name, const struct many **m)
{
	struct sys *s;
	size_t b;

	*m = NULL;
	for (b = 0; b < nitems(backends); b++) {
		if (backends[b]->many != NULL &&
		    strcmp(backends[b]->many->name, name) == 0) {
			*m = backends[b]->many;
			return NULL;
		}
		for (s = backends[b]->systems; s->name != NULL; s++)
			if (strcmp(s->name, name) == 0)
				return s;
	}
	return NULL;
}

/* SYSTEM[:K | =K]: the system, its K checked, set up. */
static struct sys *
named(char *arg)
{
	char *colon = strpbrk(arg, ":=");
	const struct many *m;
	struct sys *s;

	int fixed = colon != NULL && *colon == '=';

	if (colon != NULL)
		*colon = '\0';
	if ((s = lookup(arg, &m)) == NULL)
		errx(2, "unknown system %s", arg);
	s->fixed = fixed;
	/* A floor batch's step is its -n files. */
	if (s->files_step && opt.batch_files != BATCH) {
		s->unit = opt.batch_files;
		s->k = 10L * opt.batch_files;
	}
	if (colon != NULL)
		s->k = (long)bench_number(arg, colon + 1, 1, 1e9, 0);
	if (s->k < s->unit || s->k % s->unit != 0)
		errx(2, "%s: K must be a multiple of %ld", arg, s->unit);
	s->init(s);
	return s;
}

/*
 * The systems the arguments name, then each many-* one's turns, P by P,
 * so that the systems at one P take turns next to each other.
 */
static int
systems(int argc, char **argv, struct sys **run)
{
	const struct many *kinds[RUN_MAX], *m;
	int i, j, n = 0, nkinds = 0;

	for (i = 0; i < argc; i++) {
		if (n == RUN_MAX)
			errx(2, "too many systems");
		if (lookup(argv[i], &m) == NULL && m != NULL) {
			if (opt.nprocs == 0)
				errx(2, "%s needs -m PROCS", argv[i]);
			kinds[nkinds++] = m;
		} else
			run[n++] = named(argv[i]);
	}
	for (i = 0; i < opt.nprocs; i++)
		for (j = 0; j < nkinds; j++) {
			if (n == RUN_MAX)
				errx(2, "too many systems");
			run[n] = many_sys(kinds[j], opt.procs[i]);
			run[n]->init(run[n]);
			n++;
		}
	return n;
}

/*
 * K for a turn of -T seconds at the pace of round 0, which took secs for
 * k: at most 50 times the K named, and at least 3 for a one-job system.
 */
static long
sized(const struct sys *s, long k, double secs)
{
	double steps = opt.slice / (secs / (double)k) / (double)s->unit;

	if (steps > 50.0 * (double)s->k / (double)s->unit)
		steps = 50.0 * (double)s->k / (double)s->unit;
	if (s->unit == 1 && steps < 3)
		steps = 3;
	return steps < 1 ? s->unit : (long)(steps + 0.5) * s->unit;
}

/*
 * A system's turn in round r, and its line on stdout:
 *
 *	LABEL,SYSTEM,ROUND,CYCLES,SECONDS,FSYNCS,RENAMES
 *
 * (FSYNCS and RENAMES from spool_get_counters(), -1 where the work was
 * done by other processes); a system may print lines SYSTEM.PHASE for
 * the parts of a cycle, or a many-* turn's tail, before it.  Round 0 does
 * a fifth of K (a twentieth for a system named with =K: a big fixed
 * step); with -T it also sizes each later turn to last SLICE seconds, so
 * that a round takes the same time however loaded the machine is (=K
 * keeps its K).  Every system keeps its data in a directory of its own
 * under -w, and nothing is deleted between rounds: on ext4, creating files
 * stays slow for minutes after many deletions, which would bill one
 * system for another's cleanup.  No system is made less durable than its
 * own documented durable mode.
 */
static void
turn(struct sys *s, int r)
{
	struct spool_counters c0, c1;
	double t0, secs;
	long k = s->k;

	if (r == 0 && (k = k / (s->fixed ? 20 : 5) / s->unit * s->unit) == 0)
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
	if (r == 0 && opt.slice > 0 && !s->fixed && secs > 0)
		s->k = sized(s, k, secs);
	printf("%s,%s,%d,%ld,%.9f,%ld,%ld\n", opt.label, s->name, r,
	    s->ran >= 0 ? s->ran : k, secs, s->own_fsyncs >= 0 ?
	    s->own_fsyncs : s->counts ? (long)(c1.fsyncs - c0.fsyncs) : -1L,
	    s->counts ? (long)(c1.renames - c0.renames) : -1L);
	if (fflush(stdout) == EOF)
		err(1, "stdout");
}

int
main(int argc, char **argv)
{
	struct sys *run[RUN_MAX];
	int n, r, j;

	options(argc, argv);
	/* -P: only wait until beanstalkd answers on -p PORT. */
	if (probe) {
		bean_probe();
		return 0;
	}
	if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1)
		err(1, "/dev/null");
	payload_file();
	if ((n = systems(argc - optind, argv + optind, run)) == 0)
		usage();
	for (r = 0; r <= rounds; r++)
		for (j = 0; j < n; j++)
			turn(run[(j + r) % n], r);
	return 0;
}
