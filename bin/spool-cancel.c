/*
 * spool-cancel: stop jobs that have not finished; print the IDs cancelled.
 * A queued or leased job parks at once, reason and class cancelled, and is
 * not delivered again; a leased job's holder can no longer finish or renew
 * it, since its token no longer holds a lease.  All but the library call
 * is spool-drop's too: act_main() in opmain.c.
 */
#include "common.h"

const char *usage_text = "spool-cancel [-d DIR] --by WHO --note TICKET "
    "ID ... | [-0] -";
/* --help: a line an option, as the man page's OPTIONS. */
const char *help_text =
    "  -d DIR         the spool (default: $SPOOL_DIR)\n"
    "  --by WHO       who cancels: an operator handle or role\n"
    "  --note TICKET  why: a ticket or incident identifier\n"
    "  -0             with -, IDs end in NUL, not a newline\n";

int
main(int argc, char **argv)
{
	return act_main(argc, argv, spool_cancel);
}
