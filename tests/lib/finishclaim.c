/*
 * spool_finish_claim, which no command offers alone: spool-run calls it
 * when a handler ends and its slot is free.  Ends the delivery ID TOKEN
 * with OUTCOME (a retry: at once) and claims up to MAX jobs, in one call.
 * Prints the finish's result, then the call's return value and each job
 * claimed, one line each.
 *
 * usage: finishclaim DIR ID TOKEN OUTCOME MAX
 * Exit 0 if it printed, 1 if the spool could not be opened or a usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/spool.h"

int
main(int argc, char **argv)
{
	struct spool_claim_opts opts = { 0 };
	struct spool_lease out[8];
	struct spool_finish f = { 0 };
	struct spool *sp;
	size_t n = 0, i, max;
	int r;

	if (argc != 6 || (sp = spool_open(argv[1])) == NULL ||
	    (max = strtoul(argv[5], NULL, 10)) > 8)
		return 1;
	f.id = argv[2];
	f.token = strtoull(argv[3], NULL, 10);
	if ((r = spool_outcome_from_name(argv[4])) == -1)
		return 1;
	f.outcome = (enum spool_outcome)r;
	r = spool_finish_claim(sp, &f, 1, &opts, out, max, &n);
	if (f.res.status == 0)
		printf("finish %s: %s\n", f.id, spool_state_name(f.res.state));
	else
		printf("finish %s: %s\n", f.id, f.res.status == 1 ?
		    "refused" : strerror(f.res.err));
	printf("claim: %d\n", r);
	for (i = 0; i < n; i++)
		printf("claimed %s %" PRIu64 "\n", out[i].id, out[i].token);
	spool_free_leases(out, n);
	spool_close(sp);
	return 0;
}
