/*
 * The whole of the commands that only name who and why: spool-drop and
 * spool-cancel (then IDs), spool-pause and spool-resume (nothing else).
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

/*
 * -d DIR, --by WHO, --note TICKET: drop, cancel, pause and resume; and -0
 * for those that read IDs (ids: drop and cancel).
 */
static const char *
operator_options(int argc, char **argv, struct spool_operator *op, int ids)
{
	static const struct option longopts[] = {
		OPERATOR_OPTIONS,
		{ NULL, 0, NULL, 0 }
	};
	const char *dir = NULL;
	int c;

	while ((c = cmd_getopt(argc, argv, ids ? "0d:" : "d:", longopts)) !=
	    -1) {
		switch (c) {
		case '0':
			ids_nul = 1;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'b':
		case 'n':
			operator_option(c, optarg, op);
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
	struct spool_operator op = { 0 };
	struct acting a = { NULL, &op, action };
	const char *dir;
	int status = EXIT_DONE;

	cmd_init(argv, 1);
	dir = operator_options(argc, argv, &op, 1);
	if (optind == argc)
		usage();
	who_and_why(&op, NULL, 1);
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
	struct spool_operator op = { 0 };
	const char *dir;
	struct spool *sp;
	int paused;

	cmd_init(argv, 0);
	dir = operator_options(argc, argv, &op, 0);
	if (optind != argc)
		usage();
	who_and_why(&op, NULL, 0);
	sp = open_spool(spool_dir(dir));
	if ((paused = spool_paused(sp)) == -1 || (paused != on &&
	    spool_pause(sp, op.by != NULL ? &op : NULL, on) == -1))
		die(EXIT_TEMP, "%s", strerror(errno));
	spool_close(sp);
	return EXIT_DONE;
}
