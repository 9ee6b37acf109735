/* spool-redrive: put parked jobs back in new/, unchanged; print their IDs. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-redrive [-d DIR] --by WHO --note TICKET "
    "[--reconciled] ID ...";

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "by", required_argument, NULL, 'b' },
		{ "note", required_argument, NULL, 'n' },
		{ "reconciled", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_operator op = { NULL, NULL, 0 };
	struct spool_item *items;
	const char *dir = NULL;
	struct spool *sp;
	size_t n = 0, i, k;
	int c, status = EXIT_DONE;

	cmd_init(argv, 1);
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
		case 'r':
			op.reconciled = 1;
			break;
		default:
			usage();
		}
	}
	if (op.by == NULL || op.note == NULL || optind == argc)
		usage();
	if ((items = calloc((size_t)(argc - optind), sizeof(*items))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	for (i = (size_t)optind; i < (size_t)argc; i++) {
		if (!spool_valid_id(argv[i])) {
			say("%.140s: bad ID", argv[i]);
			status = EXIT_PERM;
		} else
			items[n++].id = argv[i];
	}
	sp = open_spool(spool_dir(dir));
	for (i = 0; i < n; i += k) {
		k = n - i < SPOOL_BATCH_MAX ? n - i : SPOOL_BATCH_MAX;
		if (spool_redrive(sp, &op, items + i, k) == -1)
			die(EXIT_TEMP, "%s", strerror(errno));
	}
	for (i = 0; i < n; i++) {
		if (items[i].res.status == 0)
			printf("%s\n", items[i].id);
		status = worst(status, report(items[i].id, &items[i].res));
	}
	free(items);
	spool_close(sp);
	return finish_stdout(status);
}
