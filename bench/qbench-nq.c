/*
 * nq, row 2's rival from the shell: nq TRUE, what a shell user waits for.
 * Only the enqueue is timed, since nq has no claim; its job's file and
 * its directory fsync, which nq leaves to the background, are waited for
 * after the turn, so that they never land in another system's turn.
 */
#define _GNU_SOURCE
#include <err.h>

#include "qbench.h"

static char *nq_bin;

static void
cli_nq_init(struct sys *s)
{
	if (nq_bin == NULL && (nq_bin = which("nq")) == NULL)
		errx(1, "cli-nq: no nq in PATH");
	if (opt.truebin == NULL)
		errx(1, "cli-nq needs -t TRUE");
	sys_dir(s);
}

static void
cli_nq_op(struct sys *s, long k)
{
	char env[PATH_MAX + 8], *envp[] = { env, "PATH=/usr/bin:/bin", NULL };
	char *argv[] = { nq_bin, (char *)opt.truebin, NULL };
	char *wait[] = { nq_bin, "-w", NULL };
	double t0;
	long i;

	pathf(env, sizeof(env), "NQDIR=%s", s->dir);
	t0 = now_s();
	for (i = 0; i < k; i++)
		run_ok(argv, envp, devnull);
	s->own_seconds = now_s() - t0;
	run_ok(wait, envp, devnull);
}

static struct sys nqs[] = {
	SYS("cli-nq", cli_nq_init, cli_nq_op, 1, 30),
	{ .name = NULL }
};

const struct backend nq_backend = { "nq", nqs, NULL };
