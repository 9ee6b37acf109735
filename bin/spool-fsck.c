/*
 * spool-fsck: check a spool against spool-layout.md; one line per problem
 * on stdout, "WHAT: problem".  --repair puts right what it can.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

const char *usage_text = "spool-fsck [-d DIR] [--repair | --restored] "
    "[--verify]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR      the spool (default: $SPOOL_DIR)\n"
    "  --repair    mend what it finds, and say what (default: look only)\n"
    "  --verify    check each payload's checksum (default: its size)\n"
    "  --restored  after a restore from backup: mark every job\n";

static void
print(void *arg, const char *what, const char *problem, int said)
{
	(void)arg;
	progress_hide();
	/* A fault's text says what was done; a note says it is one. */
	printf("%s: %s%s\n", what, said == SPOOL_SAID_NOTE ? "note: " : "",
	    problem);
}

static void
tick(void *arg, const char *what, size_t done, size_t total)
{
	(void)arg;
	progress_show(what, done, total);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ "restored", no_argument, NULL, 'R' },
		{ "verify", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 }
	};
	const char *dir = NULL;
	struct spool *sp;
	int c, flags = 0, r;

	cmd_init(argv, 1);
	while ((c = cmd_getopt(argc, argv, "d:", longopts)) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 'r':
			flags |= SPOOL_FSCK_REPAIR;
			break;
		case 'R':
			flags |= SPOOL_FSCK_RESTORED;
			break;
		case 'v':
			flags |= SPOOL_FSCK_VERIFY;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (flags & (SPOOL_FSCK_REPAIR |
	    SPOOL_FSCK_RESTORED)) == (SPOOL_FSCK_REPAIR | SPOOL_FSCK_RESTORED))
		usage();
	sp = open_spool(spool_dir(dir));
	progress_begin(1, 0);
	spool_set_progress(sp, tick, NULL);
	r = spool_fsck(sp, flags, print, NULL);
	progress_erase();
	if (r == -1 && errno == EPROTO)
		die(EXIT_PERM, "--restored: a spool of format 1 counts tokens "
		    "per job: run spool-init --upgrade first");
	if (r == -1)
		die(EXIT_TEMP, "could not check: %s", errtext(errno));
	spool_close(sp);
	return finish_stdout(r == 0 ? EXIT_DONE : EXIT_NO);
}
