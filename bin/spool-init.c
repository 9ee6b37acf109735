/* spool-init: create a spool, or finish one an interrupted init left. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

const char *usage_text = "spool-init [-d DIR] [--group GROUP | --upgrade]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR         the spool to make (default: $SPOOL_DIR)\n"
    "  --group GROUP  shared by GROUP, setgid (default: private)\n"
    "  --upgrade      upgrade a spool of format 1 to format 2\n";

/*
 * A file system smaller than the spool's reserve (a small tmpfs) would
 * refuse the first enqueue: say so now, with the figures.
 */
static void
warn_small(const char *dir)
{
	struct spool *sp;
	char figures[128];

	if ((sp = spool_open(dir)) == NULL)
		return;
	if (reserve_figures(sp, figures, sizeof(figures)) == 1)
		say("warning: %s: %s: enqueues will be refused until it "
		    "has more room; lower reserve and reserve-inodes in "
		    "%s/config to use it as it is (see spool(7))", dir,
		    figures, dir);
	spool_close(sp);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "group", required_argument, NULL, 'g' },
		{ "upgrade", no_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 }
	};
	const char *dir = NULL, *group = NULL;
	const struct spool_error *e;
	char msg[512];
	int c, upgrade = 0, existed;

	cmd_init(argv, 0);
	while ((c = cmd_getopt(argc, argv, "d:", longopts)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'g':
			group = optarg;
			break;
		case 'u':
			upgrade = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (upgrade && group != NULL))
		usage();
	dir = spool_dir(dir);
	if (upgrade) {
		if (spool_upgrade(dir) == 0)
			return EXIT_DONE;
		c = open_failure(dir, errno, msg, sizeof(msg));
		die(c, "%s", msg);
	}
	/* A spool that was complete is left unchanged, and said nothing of. */
	(void)snprintf(msg, sizeof(msg), "%s/format", dir);
	existed = access(msg, F_OK) == 0;
	if (spool_init(dir, group) == 0) {
		if (!existed)
			warn_small(dir);
		return EXIT_DONE;
	}
	e = spool_error(errno, SPOOL_AT_INIT);
	die(e->status, "%s: %s", errno == ESRCH ? group : dir,
	    e->text != NULL ? e->text : strerror(errno));
}
