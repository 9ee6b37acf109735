/*
 * spool-resume: let claims take jobs again after spool-pause.
 * Jobs enqueued meanwhile are claimed as usual; nothing was lost or
 * delayed but the claims themselves.  The command is pause_main() in
 * opmain.c, which spool-pause shares.
 */
#include "common.h"

const char *usage_text = "spool-resume [-d DIR] [--by WHO --note TICKET]";

int
main(int argc, char **argv)
{
	return pause_main(argc, argv, 0);
}
