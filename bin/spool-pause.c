/*
 * spool-pause: stop claims on a spool, for maintenance or an incident.
 * Producers still enqueue and holders still finish; claims find nothing and
 * say that the spool is paused, until spool-resume.  The command is
 * pause_main() in opmain.c, which spool-resume shares.
 */
#include "common.h"

const char *usage_text = "spool-pause [-d DIR] [--by WHO --note TICKET]";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR         the spool (default: $SPOOL_DIR)\n"
    "  --by WHO       who pauses (with --note; default: none named)\n"
    "  --note TICKET  why: a ticket or incident identifier\n";

int
main(int argc, char **argv)
{
	return pause_main(argc, argv, 1);
}
