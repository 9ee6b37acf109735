/*
 * spool-batch in row 3, beside the library's cycle: batch-coproc, one
 * bash client sending a request at a time to its spool-batch coprocess,
 * as README's coproc worker does; batch-g16, 16 bash clients on one
 * spool, each with 16 requests in flight under spool-batch --group 16;
 * go-cycle, the cycle through the Go package (go/), one Client.  Each
 * client is bench/batchcycle.sh (-B) or bench/gocycle (-G), started once
 * for the run, so that neither its start nor spool-batch's is timed.
 */
#define _GNU_SOURCE
#include <err.h>
#include <stdlib.h>

#include "qbench.h"

#define CLIENTS	16	/* batch-g16's clients, and its requests in flight */

static void
batch_start(struct sys *s, struct client **c, int n, char *mode, char *arg)
{
	char *argv[] = { "/bin/bash", (char *)opt.batchscript,
	    cmd_path("spool-batch"), s->dir, mode, arg, NULL };
	int i;

	if (opt.batchscript == NULL)
		errx(100, "%s: needs -B SCRIPT", s->name);
	made_spool(s);
	for (i = 0; i < n; i++)
		c[i] = client_start(argv);
}

static void
coproc_init(struct sys *s)
{
	struct client **c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		err(1, "calloc");
	batch_start(s, c, 1, "cycle", NULL);
	s->st = c;
}

static void
coproc_op(struct sys *s, long k)
{
	struct client **c = s->st;

	client_ask(s, c[0], k);
}

static void
group_init(struct sys *s)
{
	struct client **c;

	if ((c = calloc(CLIENTS, sizeof(*c))) == NULL)
		err(1, "calloc");
	batch_start(s, c, CLIENTS, "group", "16");
	s->st = c;
}

/* k / 16 jobs to each client, all at once; then every answer. */
static void
group_op(struct sys *s, long k)
{
	struct client **c = s->st;
	int i;

	for (i = 0; i < CLIENTS; i++)
		client_send(s, c[i], k / CLIENTS);
	for (i = 0; i < CLIENTS; i++)
		client_wait(s, c[i], k / CLIENTS);
}

static void
go_init(struct sys *s)
{
	char *argv[] = { (char *)opt.gocycle, s->dir, cmd_path("spool-batch"),
	    NULL };
	struct client **c;

	if (opt.gocycle == NULL)
		errx(100, "%s: needs -G PROGRAM", s->name);
	made_spool(s);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		err(1, "calloc");
	c[0] = client_start(argv);
	s->st = c;
}

static struct sys batch_systems[] = {
	SYS("batch-coproc", coproc_init, coproc_op, 1, 100),
	SYS("go-cycle", go_init, coproc_op, 1, 100),
	{ .name = "batch-g16", .init = group_init, .op = group_op,
	    .unit = CLIENTS * 16, .k = 512, .procs = CLIENTS },
	{ .name = NULL }
};

const struct backend batch_backend = { "batch", batch_systems, NULL };
