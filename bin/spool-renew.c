/* spool-renew: extend a lease that the caller's token still holds. */
#include <errno.h>
#include <getopt.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-renew [-d DIR] [--lease DUR] ID TOKEN";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR       the spool (default: $SPOOL_DIR)\n"
    "  --lease DUR  the lease from now (default: the spool's lease, 30s)\n";

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lease", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_result res;
	const char *dir = NULL, *id;
	int64_t lease = 0;
	struct spool *sp;
	uint64_t token;
	int c, status;

	cmd_init(argv, 0);
	while ((c = cmd_getopt(argc, argv, "d:", longopts)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'l':
			lease = opt_duration("--lease", optarg, 0);
			break;
		default:
			negative_token(argv);
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	id = argv[optind];
	if (!spool_valid_id(id))
		die(EXIT_PERM, "%.140s: bad ID", id);
	if (spool_parse_token(argv[optind + 1], &token) == -1)
		die(EXIT_PERM, "%s: bad token '%.40s' " TOKEN_FORM, id,
		    argv[optind + 1]);
	sp = open_spool(spool_dir(dir));
	if (spool_renew(sp, id, token, lease, &res) == -1 && res.status == 0)
		die(EXIT_TEMP, "%s: %s", id, errtext(errno));
	status = report(id, &res);
	spool_close(sp);
	return status;
}
