/*
 * spool-resume: let claims take jobs again after spool-pause.
 * Jobs enqueued meanwhile are claimed as usual; nothing was lost or
 * delayed but the claims themselves.  The command is pause_main() in
 * opmain.c, which spool-pause shares.
 */
#include "common.h"

const char *usage_text = "spool-resume [-d DIR] [--by WHO --note TICKET]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR         the spool (default: $SPOOL_DIR)\n"
    "  --by WHO       who resumes (with --note; default: none named)\n"
    "  --note TICKET  why: a ticket or incident identifier\n";

int
main(int argc, char **argv)
{
	return pause_main(argc, argv, 0);
}
