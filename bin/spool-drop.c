/*
 * spool-drop: end parked jobs without running them; print the IDs dropped.
 * A dropped job moves from dead/ to done/ with its payload and record, and
 * is marked dropped: it no longer counts as parked, and nothing is lost.
 * All but the library call is spool-cancel's too: act_main() in opmain.c.
 */
#include "common.h"

const char *usage_text = "spool-drop [-d DIR] --by WHO --note TICKET "
    "ID ... | [-0] -";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR         the spool (default: $SPOOL_DIR)\n"
    "  --by WHO       who drops: an operator handle or role\n"
    "  --note TICKET  why: a ticket or incident identifier\n"
    "  -0             with -, IDs end in NUL, not a newline\n";

int
main(int argc, char **argv)
{
	return act_main(argc, argv, spool_drop);
}
