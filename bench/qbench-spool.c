/*
 * spool's systems: its commands (cli-*, batch-cli-spool, enq-cli), its
 * library a job or a batch a step (lib-*, batch-lib-*, enq-lib), and row
 * 10's library handle a worker.  Every job is enqueued, claimed and
 * finished ok in full, each step checked, as a user's worker would.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qbench.h"

struct sp {
	struct spool *sp;
	int fds[BATCH];		/* the payload, a descriptor a job */
	struct spool_job *jobs;
	struct spool_lease *leases;
	struct spool_finish *fins;
	char **argv;		/* batch-cli-spool: spool-enqueue FILE ... */
};

/* What a step of the library's cycle cost: time and fsyncs per part. */
struct parts {
	double t[3];
	unsigned long f[3];
};

static char *init_cmd, *enqueue_cmd, *claim_cmd, *finish_cmd;

struct spool *
sys_spool(struct sys *s)
{
	return ((struct sp *)s->st)->sp;
}

struct spool_lease *
sys_leases(struct sys *s)
{
	return ((struct sp *)s->st)->leases;
}

/* The system's spool: -s SPOOL, or its own, made once. */
static void
spool_make(struct sys *s)
{
	if (enqueue_cmd == NULL) {
		enqueue_cmd = cmd_path("spool-enqueue");
		claim_cmd = cmd_path("spool-claim");
		finish_cmd = cmd_path("spool-finish");
	}
	if ((s->st = calloc(1, sizeof(struct sp))) == NULL)
		err(1, "calloc");
	if (opt.spool != NULL) {
		pathf(s->dir, sizeof(s->dir), "%s", opt.spool);
		return;
	}
	made_spool(s);
}

/* The system's own spool under -w, made by spool-init unless it is. */
void
made_spool(struct sys *s)
{
	char path[PATH_MAX];
	struct stat st;

	if (init_cmd == NULL)
		init_cmd = cmd_path("spool-init");
	sys_dir(s);
	pathf(path, sizeof(path), "%s/format", s->dir);
	if (stat(path, &st) == -1) {
		char *argv[] = { init_cmd, "-d", s->dir, NULL };

		run_ok(argv, NULL, devnull);
	}
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
	char *enq[] = { enqueue_cmd, "-d", s->dir, payload_path, NULL };
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

static void
payload_fds(struct sp *p)
{
	int i;

	for (i = 0; i < BATCH; i++)
		if ((p->fds[i] = open(payload_path, O_RDONLY | O_CLOEXEC)) == -1)
			err(1, "%s", payload_path);
	if ((p->jobs = calloc(BATCH, sizeof(*p->jobs))) == NULL ||
	    (p->leases = calloc(BATCH, sizeof(*p->leases))) == NULL ||
	    (p->fins = calloc(BATCH, sizeof(*p->fins))) == NULL)
		err(1, "calloc");
}

static void
spool_handle(struct sys *s)
{
	struct sp *p = s->st;

	if ((p->sp = spool_open(s->dir)) == NULL)
		err(1, "spool_open %s", s->dir);
	payload_fds(p);
	s->counts = 1;
}

void
lib_spool_init(struct sys *s)
{
	spool_make(s);
	spool_handle(s);
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
	spool_handle(s);
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

/* Enqueue n jobs in one call; every one must be done. */
void
lib_enqueue(struct sys *s, size_t n)
{
	struct sp *p = s->st;
	size_t i;

	for (i = 0; i < n; i++) {
		if (lseek(p->fds[i], 0, SEEK_SET) == -1)
			err(1, "lseek");
		memset(&p->jobs[i], 0, sizeof(p->jobs[i]));
		p->jobs[i].fd = p->fds[i];
		p->jobs[i].deadline_ms = -1;
		p->jobs[i].key = s->key;
	}
	if (spool_enqueue(p->sp, p->jobs, n) == -1)
		err(1, "spool_enqueue");
	for (i = 0; i < n; i++)
		if (p->jobs[i].res.status != 0)
			errx(1, "spool_enqueue: item %zu: status %d errno %d", i,
			    p->jobs[i].res.status, p->jobs[i].res.err);
}

/* k jobs, a batch a call. */
void
lib_enqueue_k(struct sys *s, long k)
{
	long i;

	for (i = 0; i < k; i += BATCH)
		lib_enqueue(s, k - i < BATCH ? (size_t)(k - i) : BATCH);
}

/*
 * Finish the n jobs of p->leases ok, in one call, which alone pt times if
 * it is not NULL; every one must be finished.
 */
static void
lib_finish(struct sp *p, size_t n, struct parts *pt)
{
	unsigned long f0;
	double t0;
	size_t i;

	for (i = 0; i < n; i++) {
		memset(&p->fins[i], 0, sizeof(p->fins[i]));
		p->fins[i].id = p->leases[i].id;
		p->fins[i].token = p->leases[i].token;
		p->fins[i].outcome = SPOOL_OK;
		p->fins[i].delay_ms = -1;
	}
	f0 = fsyncs_now();
	t0 = now_s();
	if (spool_finish(p->sp, p->fins, n) == -1)
		err(1, "spool_finish");
	if (pt != NULL) {
		pt->t[P_FIN] += now_s() - t0;
		pt->f[P_FIN] += fsyncs_now() - f0;
	}
	for (i = 0; i < n; i++)
		if (p->fins[i].res.status != 0)
			errx(1, "spool_finish: %s: status %d errno %d",
			    p->fins[i].id, p->fins[i].res.status,
			    p->fins[i].res.err);
}

/* Claim n jobs (several calls if need be), then finish them ok in one. */
static void
lib_claim_finish(struct sp *p, size_t n, struct parts *pt)
{
	struct spool_claim_opts opts = { 0, "bench" };
	size_t got = 0, m;
	unsigned long f0;
	double t0;
	int r;

	f0 = fsyncs_now();
	t0 = now_s();
	while (got < n) {
		r = spool_claim(p->sp, &opts, p->leases + got, n - got, &m);
		if (r == -1)
			err(1, "spool_claim");
		if (r == 0)
			errx(1, "spool_claim: nothing due after %zu of %zu",
			    got, n);
		got += m;
	}
	pt->t[P_CLAIM] += now_s() - t0;
	pt->f[P_CLAIM] += fsyncs_now() - f0;
	lib_finish(p, n, pt);
	spool_free_leases(p->leases, n);
}

/* n jobs a step: 1 for the single-job cycle, BATCH for the batch API. */
static void
lib_spool_cycles(struct sys *s, long k, size_t n)
{
	struct parts pt;
	unsigned long f0;
	double t0;
	long i;

	memset(&pt, 0, sizeof(pt));
	for (i = 0; i < k; i += (long)n) {
		f0 = fsyncs_now();
		t0 = now_s();
		lib_enqueue(s, n);
		pt.t[P_ENQ] += now_s() - t0;
		pt.f[P_ENQ] += fsyncs_now() - f0;
		lib_claim_finish(s->st, n, &pt);
	}
	phase(s, "enqueue", k, pt.t[P_ENQ], (long)pt.f[P_ENQ]);
	phase(s, "claim", k, pt.t[P_CLAIM], (long)pt.f[P_CLAIM]);
	phase(s, "finish", k, pt.t[P_FIN], (long)pt.f[P_FIN]);
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

/*
 * The batch CLI: -f small files, made once, enqueued by one spool-enqueue
 * (which takes SPOOL_BATCH_MAX at a time), then spool-claim -n 100 and
 * spool-finish - with its 100 lines, in turn, as a worker would, until
 * all are done.
 */
static void
batch_cli_init(struct sys *s)
{
	struct sp *p;
	char path[PATH_MAX], name[32];
	int i, fd, filesfd;

	spool_make(s);
	p = s->st;
	pathf(path, sizeof(path), "%s.files", s->dir);
	if (mkdir(path, 0777) == -1 && errno != EEXIST)
		err(1, "%s", path);
	if ((filesfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		err(1, "%s", path);
	if ((p->argv = calloc((size_t)opt.cli_files + 4, sizeof(char *))) ==
	    NULL)
		err(1, "calloc");
	p->argv[0] = enqueue_cmd;
	p->argv[1] = "-d";
	p->argv[2] = s->dir;
	for (i = 0; i < opt.cli_files; i++) {
		pathf(name, sizeof(name), "p%05d", i);
		if ((fd = openat(filesfd, name, O_WRONLY | O_CREAT | O_CLOEXEC,
		    0666)) == -1)
			err(1, "%s", name);
		write_all(fd, payload, sizeof(payload));
		(void)close(fd);
		if (asprintf(&p->argv[3 + i], "%s/%s", path, name) == -1)
			err(1, "asprintf");
	}
	(void)close(filesfd);
}

/* spool-claim -n 100's leases as spool-finish -'s lines; how many. */
static long
finish_lines(char *out, char *lines, size_t size, size_t *len)
{
	char *p, *id, *token;
	long n = 0;

	*len = 0;
	for (p = out; (p = lease_line(p, &id, &token)) != NULL; n++)
		*len += (size_t)snprintf(lines + *len, size - *len,
		    "%s %s ok\n", id, token);
	return n;
}

static void
batch_cli_op(struct sys *s, long k)
{
	struct sp *p = s->st;
	char *claim[] = { claim_cmd, "-d", s->dir, "-n", "100", NULL };
	char *fin[] = { finish_cmd, "-d", s->dir, "-", NULL };
	char out[OUT_MAX], lines[16384], *saved;
	double te, tc = 0, tf = 0, t0;
	size_t len;
	long done, n, nclaim;
	int in;

	if (k > opt.cli_files)
		errx(1, "batch-cli-spool: K above -f %d", opt.cli_files);
	/* The claims and finishes of -c jobs a round (a fifth in the
	 * warm-up); the rest stay queued, and are claimed in later rounds
	 * (oldest first), so nothing is deleted and the spool only grows. */
	nclaim = opt.cli_claims > 0 && opt.cli_claims < k ? opt.cli_claims : k;
	if (s->round == 0 && (nclaim = nclaim / 5 / CLI_CLAIM_N *
	    CLI_CLAIM_N) == 0)
		nclaim = CLI_CLAIM_N;
	saved = p->argv[3 + k];
	p->argv[3 + k] = NULL;
	t0 = now_s();
	run_ok(p->argv, NULL, devnull);
	te = now_s() - t0;
	p->argv[3 + k] = saved;
	for (done = 0; done < nclaim; done += n) {
		t0 = now_s();
		(void)run_read(claim, devnull, out, sizeof(out));
		tc += now_s() - t0;
		if ((n = finish_lines(out, lines, sizeof(lines), &len)) == 0)
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
	char *enq[] = { enqueue_cmd, "-d", s->dir, payload_path, NULL };
	long i;

	for (i = 0; i < k; i++)
		run_ok(enq, NULL, devnull);
}

/* Row 10: P library processes on one spool, a job a cycle. */
static void
many_spool_prep(struct sys *s)
{
	spool_make(s);
}

static void
many_spool_setup(struct sys *s)
{
	struct sp *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		err(1, "calloc");
	s->st = p;
	spool_handle(s);
}

static void
many_spool_teardown(struct sys *s)
{
	struct sp *p = s->st;
	int i;

	spool_close(p->sp);
	for (i = 0; i < BATCH; i++)
		(void)close(p->fds[i]);
	free(p->jobs);
	free(p->leases);
	free(p->fins);
	free(p);
	s->st = NULL;
}

/*
 * A claim finds nothing while every due job is locked by another worker:
 * it asks again.
 */
static void
many_spool_cycle(struct sys *s)
{
	struct spool_claim_opts opts = { 0, "bench" };
	struct sp *p = s->st;
	size_t m = 0;

	lib_enqueue(s, 1);
	while (m == 0)
		if (spool_claim(p->sp, &opts, p->leases, 1, &m) == -1)
			err(1, "spool_claim");
	lib_finish(p, 1, NULL);
	spool_free_leases(p->leases, 1);
}

static const struct many many_spool = {
	.name = "many-spool", .prep = many_spool_prep,
	.setup = many_spool_setup, .cycle = many_spool_cycle,
	.teardown = many_spool_teardown, .counts = 1
};

static struct sys spools[] = {
	SYS("cli-spool", spool_make, cli_spool_op, 1, 30),
	SYS("lib-spool", lib_spool_init, lib_spool_op, 1, 100),
	{ .name = "lib-spool-limit", .init = lib_spool_limit_init,
	    .op = lib_spool_op, .unit = 1, .k = 100, .key = "k" },
	{ .name = "lib-spool-limit1", .init = lib_spool_limit1_init,
	    .op = lib_spool_op, .unit = 1, .k = 100, .key = "k" },
	{ .name = "lib-spool-rate", .init = lib_spool_rate_init,
	    .op = lib_spool_op, .unit = 1, .k = 100, .key = "k" },
	SYS("batch-lib-spool", lib_spool_init, batch_lib_spool_op, BATCH,
	    BATCH * 4),
	SYS("batch-lib-spool-syncfs", lib_spool_syncfs_init,
	    batch_lib_spool_op, BATCH, BATCH * 4),
	SYS("batch-cli-spool", batch_cli_init, batch_cli_op, CLI_CLAIM_N,
	    10000),
	SYS("enq-lib", lib_spool_init, enq_lib_op, BATCH, BATCH * 4),
	SYS("enq-cli", spool_make, enq_cli_op, 1, 50),
	{ .name = NULL }
};

const struct backend spool_backend = { "spool", spools, &many_spool };
