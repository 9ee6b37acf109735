/*
 * spool_finish_claim, which no command offers alone: spool-run calls it
 * when a handler ends and its slot is free.  Ends the delivery ID TOKEN
 * with OUTCOME (a retry: at once), and any more named after MAX, and
 * claims up to MAX jobs, in one call.  Prints each finish's result, then
 * the call's return value and each job claimed, one line each.
 *
 * usage: finishclaim DIR ID TOKEN OUTCOME MAX [ID TOKEN OUTCOME]...
 * Exit 0 if it printed, 1 if the spool could not be opened or a usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/spool.h"

/* f from argv[0..2]: ID TOKEN OUTCOME; -1 if OUTCOME is not one. */
static int
item(struct spool_finish *f, char **argv)
{
	int r;

	f->id = argv[0];
	f->token = strtoull(argv[1], NULL, 10);
	if ((r = spool_outcome_from_name(argv[2])) == -1)
		return -1;
	f->outcome = (enum spool_outcome)r;
	return 0;
}

int
main(int argc, char **argv)
{
	struct spool_claim_opts opts = { 0 };
	struct spool_lease out[8];
	struct spool_finish f[8] = { 0 };
	struct spool *sp;
	size_t n = 0, nf = 1, i, max;
	int r;

	if (argc < 6 || (argc - 6) % 3 != 0 || (argc - 6) / 3 + 1 > 8 ||
	    (max = strtoul(argv[5], NULL, 10)) > 8 || item(&f[0], argv + 2))
		return 1;
	for (i = 6; i < (size_t)argc; i += 3)
		if (item(&f[nf++], argv + i) == -1)
			return 1;
	if ((sp = spool_open(argv[1])) == NULL)
		return 1;
	r = spool_finish_claim(sp, f, nf, &opts, out, max, &n);
	for (i = 0; i < nf; i++)
		if (f[i].res.status == 0)
			printf("finish %s: %s\n", f[i].id,
			    spool_state_name(f[i].res.state));
		else
			printf("finish %s: %s\n", f[i].id,
			    f[i].res.status == 1 ? "refused" :
			    strerror(f[i].res.err));
	printf("claim: %d\n", r);
	for (i = 0; i < n; i++)
		printf("claimed %s %" PRIu64 "\n", out[i].id, out[i].token);
	spool_free_leases(out, n);
	spool_close(sp);
	return 0;
}
