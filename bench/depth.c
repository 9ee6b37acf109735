/*
 * depth: how a claim's latency depends on what else the spool holds.
 *
 *	depth fill SPOOL READY [DELAYED]
 *	depth claim [-r ROUNDS] [-k K] NAME=SPOOL ...
 *	depth drain SPOOL
 *
 * fill enqueues READY jobs due now and DELAYED jobs due 10 to 70 minutes
 * from now, through the library in batches of SPOOL_BATCH_MAX (durable, as
 * every enqueue is).  The delayed jobs are spread over that hour a second
 * apart, in the order they are enqueued, as retries and scheduled jobs
 * would be: so they fill some 3600 leaf buckets, not one.
 *
 * claim times one spool_claim() of one job at a time, K per spool a round,
 * the spools taking turns, and releases each job untimed right after, so
 * the number of ready jobs stays what it was filled with and nothing is
 * deleted.  It prints, per spool, NAME,SAMPLES,P50_US,P99_US,MEAN_US.
 *
 * drain claims and finishes (ok) everything due, 256 at a time: the spool
 * that the purge row then empties.
 */
#define _GNU_SOURCE
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define BATCH		SPOOL_BATCH_MAX
#define PAYLOAD_SIZE	100
#define DELAY_FIRST_MS	(10 * 60 * 1000LL)
#define DELAY_SPAN_S	3600

/* Descriptors for a batch: one payload file, each at its own offset. */
static void
payload_fds(int *fds)
{
	char path[] = "/tmp/depth-payload.XXXXXX", buf[PAYLOAD_SIZE];
	int fd, i;

	if ((fd = mkstemp(path)) == -1)
		err(1, "mkstemp");
	memset(buf, 'p', sizeof(buf));
	if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		err(1, "write payload");
	for (i = 0; i < BATCH; i++)
		if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			err(1, "%s", path);
	/* The descriptors keep it while we need it. */
	(void)unlink(path);
	(void)close(fd);
}

static struct spool *
open_or_die(const char *dir)
{
	struct spool *sp;

	if ((sp = spool_open(dir)) == NULL)
		err(1, "spool_open %s", dir);
	return sp;
}

static int
fill(const char *dir, long ready, long delayed)
{
	struct spool_job jobs[BATCH];
	struct spool *sp = open_or_die(dir);
	int fds[BATCH];
	long done = 0, total = ready + delayed, i, n;
	int64_t start = spool_now();
	unsigned long f0 = fsyncs_now();
	double t0 = now_s();

	payload_fds(fds);
	while (done < total) {
		n = total - done < BATCH ? total - done : BATCH;
		/* A batch is all ready or all delayed. */
		if (done < ready && done + n > ready)
			n = ready - done;
		for (i = 0; i < n; i++) {
			long j = done + i;

			if (lseek(fds[i], 0, SEEK_SET) == -1)
				err(1, "lseek");
			memset(&jobs[i], 0, sizeof(jobs[i]));
			jobs[i].fd = fds[i];
			jobs[i].deadline_ms = -1;
			if (j >= ready) {
				int64_t due = start + DELAY_FIRST_MS +
				    (j - ready) * DELAY_SPAN_S / delayed * 1000;

				jobs[i].delay_ms = due - spool_now();
				if (jobs[i].delay_ms < 1)
					errx(1, "fill took too long: delayed "
					    "jobs are due");
			}
		}
		if (spool_enqueue(sp, jobs, (size_t)n) == -1)
			err(1, "spool_enqueue");
		for (i = 0; i < n; i++)
			if (jobs[i].res.status != 0)
				errx(1, "spool_enqueue: status %d errno %d",
				    jobs[i].res.status, jobs[i].res.err);
		done += n;
	}
	printf("fill,%s,%ld,%.6f,%lu\n", dir, total, now_s() - t0,
	    fsyncs_now() - f0);
	spool_close(sp);
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The q-quantile of sorted v[n], nearest rank. */
static double
quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)(q * (double)n + 0.999999);

	if (i == 0)
		i = 1;
	return v[(i > n ? n : i) - 1];
}

struct target {
	const char *name;
	struct spool *sp;
	double *lat;
	size_t n;
};

/* One claim of one job, timed; released untimed. */
static double
claim_one(struct spool *sp, const char *name)
{
	struct spool_claim_opts opts = { 60000, "depth" };
	struct spool_lease l;
	struct spool_finish f;
	size_t n;
	double t0, t;
	int r;

	t0 = now_s();
	r = spool_claim(sp, &opts, &l, 1, &n);
	t = now_s() - t0;
	if (r == -1)
		err(1, "%s: spool_claim", name);
	if (r == 0)
		errx(1, "%s: nothing due", name);
	memset(&f, 0, sizeof(f));
	f.id = l.id;
	f.token = l.token;
	f.outcome = SPOOL_RELEASE;
	f.delay_ms = -1;
	if (spool_finish(sp, &f, 1) == -1 || f.res.status != 0)
		errx(1, "%s: release %s: status %d errno %d", name, l.id,
		    f.res.status, f.res.err);
	spool_free_leases(&l, 1);
	return t;
}

static int
claim_rounds(int rounds, int k, char **specs, int nspecs)
{
	struct target *t;
	double sum;
	int i, r, j, c;
	size_t s;

	if ((t = calloc((size_t)nspecs, sizeof(*t))) == NULL)
		err(1, "calloc");
	for (i = 0; i < nspecs; i++) {
		char *eq = strchr(specs[i], '=');

		if (eq == NULL)
			errx(2, "want NAME=SPOOL: %s", specs[i]);
		*eq = '\0';
		t[i].name = specs[i];
		t[i].sp = open_or_die(eq + 1);
		if ((t[i].lat = calloc((size_t)(rounds * k), sizeof(double))) ==
		    NULL)
			err(1, "calloc");
		/* Warm-up: the first claim of a spool scans leased/. */
		for (c = 0; c < 5; c++)
			(void)claim_one(t[i].sp, t[i].name);
	}
	for (r = 0; r < rounds; r++)
		for (j = 0; j < nspecs; j++) {
			struct target *x = &t[(j + r) % nspecs];

			for (c = 0; c < k; c++)
				x->lat[x->n++] = claim_one(x->sp, x->name);
		}
	for (i = 0; i < nspecs; i++) {
		qsort(t[i].lat, t[i].n, sizeof(double), cmp_double);
		for (s = 0, sum = 0; s < t[i].n; s++)
			sum += t[i].lat[s];
		printf("depth,%s,%zu,%.1f,%.1f,%.1f\n", t[i].name, t[i].n,
		    quantile(t[i].lat, t[i].n, 0.50) * 1e6,
		    quantile(t[i].lat, t[i].n, 0.99) * 1e6,
		    sum / (double)t[i].n * 1e6);
		spool_close(t[i].sp);
		free(t[i].lat);
	}
	free(t);
	return 0;
}

static int
drain(const char *dir)
{
	struct spool_claim_opts opts = { 600000, "drain" };
	struct spool_lease l[BATCH];
	struct spool_finish f[BATCH];
	struct spool *sp = open_or_die(dir);
	double t0 = now_s();
	long total = 0;
	size_t n, i;
	int r;

	while ((r = spool_claim(sp, &opts, l, BATCH, &n)) == 1) {
		memset(f, 0, sizeof(f));
		for (i = 0; i < n; i++) {
			f[i].id = l[i].id;
			f[i].token = l[i].token;
			f[i].outcome = SPOOL_OK;
			f[i].delay_ms = -1;
		}
		if (spool_finish(sp, f, n) == -1)
			err(1, "spool_finish");
		for (i = 0; i < n; i++)
			if (f[i].res.status != 0)
				errx(1, "finish %s: status %d errno %d",
				    f[i].id, f[i].res.status, f[i].res.err);
		spool_free_leases(l, n);
		total += (long)n;
	}
	if (r == -1)
		err(1, "spool_claim");
	printf("drain,%s,%ld,%.6f\n", dir, total, now_s() - t0);
	spool_close(sp);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: depth fill SPOOL READY [DELAYED]\n"
	    "       depth claim [-r ROUNDS] [-k K] NAME=SPOOL ...\n"
	    "       depth drain SPOOL\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	int c, rounds = 5, k = 40;

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "fill") == 0 && (argc == 4 || argc == 5))
		return fill(argv[2], (long)bench_number("READY", argv[3], 0,
		    1e8, 0), argc == 5 ? (long)bench_number("DELAYED",
		    argv[4], 0, 1e8, 0) : 0);
	if (strcmp(argv[1], "drain") == 0 && argc == 3)
		return drain(argv[2]);
	if (strcmp(argv[1], "claim") != 0)
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "k:r:")) != -1) {
		switch (c) {
		case 'k':
			k = (int)bench_number("-k", optarg, 1, 1e6, 0);
			break;
		case 'r':
			rounds = (int)bench_number("-r", optarg, 1, 1e6, 0);
			break;
		default:
			usage();
		}
	}
	if (optind == argc || rounds < 1 || k < 1)
		usage();
	return claim_rounds(rounds, k, argv + optind, argc - optind);
}
