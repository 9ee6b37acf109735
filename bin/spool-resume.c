/*
 * spool-resume: let claims take jobs again after spool-pause.
 * Jobs enqueued meanwhile are claimed as usual; nothing was lost or
 * delayed but the claims themselves.
 */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-resume [-d DIR] [--by WHO --note TICKET]";

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "note", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_operator op = { NULL, NULL, 0 };
	const char *dir = NULL;
	struct spool *sp;
	int c, paused;

	cmd_init(argv, 0);
	while ((c = getopt_long(argc, argv, "d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'b':
			op.by = opt_word("--by", optarg, spool_valid_note);
			break;
		case 'n':
			op.note = opt_word("--note", optarg, spool_valid_note);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (op.by == NULL) != (op.note == NULL))
		usage();
	sp = open_spool(spool_dir(dir));
	/* Resuming a spool that is not paused changes nothing. */
	if ((paused = spool_paused(sp)) == -1 || (paused == 1 &&
	    spool_pause(sp, op.by != NULL ? &op : NULL, 0) == -1))
		die(EXIT_TEMP, "%s", strerror(errno));
	spool_close(sp);
	return EXIT_DONE;
}
