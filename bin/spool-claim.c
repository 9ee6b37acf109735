/* spool-claim: lease up to N eligible jobs; print ID TOKEN ATTEMPT PATH. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-claim [-d DIR] [--lease DUR] [--owner NAME] "
    "[-n N]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR        the spool (default: $SPOOL_DIR)\n"
    "  --lease DUR   the lease's length (default: the spool's lease, 30s)\n"
    "  --owner NAME  who holds the lease (default: HOST:PID)\n"
    "  -n N          claim up to N jobs, 1 to 256 (default: 1)\n";

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lease", required_argument, NULL, 'l' },
		{ "owner", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	struct spool_claim_opts opts = { 0, NULL };
	struct spool_lease *leases;
	const char *dir = NULL;
	char owner[SPOOL_ID_MAX + 1];
	struct spool *sp;
	size_t max = 1, n, i;
	int c, r;

	cmd_init(argv, 1);
	while ((c = cmd_getopt(argc, argv, "d:n:", longopts)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'l':
			opts.lease_ms = opt_duration("--lease", optarg, 0);
			break;
		case 'n':
			max = (size_t)opt_number("-n", optarg, 1,
			    SPOOL_BATCH_MAX);
			break;
		case 'o':
			opts.owner = opt_word("--owner", optarg,
			    spool_valid_owner);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (opts.owner == NULL)
		opts.owner = default_owner(owner, sizeof(owner));
	sp = open_spool(spool_dir(dir));
	if ((leases = calloc(max, sizeof(*leases))) == NULL)
		die(EXIT_TEMP, "%s", strerror(errno));
	r = spool_claim(sp, &opts, leases, max, &n);
	/* On failure nothing was handed out: leases taken will expire. */
	if (r == -1)
		die(EXIT_TEMP, "%s", errtext(errno));
	/* A paused spool is not an empty one: a worker may want to know. */
	if (r == 0 && spool_paused(sp) == 1)
		say("spool paused");
	for (i = 0; i < n; i++)
		printf("%s\t%" PRIu64 "\t%d\t%s\n", leases[i].id,
		    leases[i].token, leases[i].attempt, leases[i].path);
	spool_free_leases(leases, n);
	free(leases);
	spool_close(sp);
	return finish_stdout(r == 1 ? EXIT_DONE : EXIT_NO);
}
