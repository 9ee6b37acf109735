/*
 * The structs of the API, zeroed and filled with designated initialisers
 * naming only what matters (lib/spool.h, "Defaults"): a job, a claim's
 * options, a finish ok and a permanent one.  Enqueues two jobs in DIR,
 * claims them, finishes one ok and one permanent, and prints each step's
 * result, one line each.
 *
 * usage: defaults DIR PAYLOAD; exit 0 if every call did, 1 if not.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/spool.h"

int
main(int argc, char **argv)
{
	struct spool_claim_opts opts = { 0 };
	struct spool_lease out[2];
	struct spool_job jobs[2] = { { .id = "a" }, { .id = "b" } };
	struct spool_finish fin[2];
	struct spool_job_info in;
	struct spool *sp;
	size_t n, i;
	int bad = 0;

	if (argc != 3 || (sp = spool_open(argv[1])) == NULL)
		return 1;
	for (i = 0; i < 2; i++)
		if ((jobs[i].fd = open(argv[2], O_RDONLY)) == -1)
			return 1;
	if (spool_enqueue(sp, jobs, 2) == -1)
		return 1;
	for (i = 0; i < 2; i++) {
		printf("enqueue %s: %d %s\n", jobs[i].id, jobs[i].res.status,
		    jobs[i].res.status == -1 ? strerror(jobs[i].res.err) : "ok");
		bad |= jobs[i].res.status != 0;
	}
	if (spool_job_info(sp, "a", 0, &in) == -1)
		return 1;
	printf("deadline: %" PRId64 " ms after creation\n",
	    in.deadline - in.created);
	spool_job_info_free(&in);
	if (spool_claim(sp, &opts, out, 2, &n) != 1 || n != 2)
		return 1;
	printf("claimed %zu\n", n);
	/* Jobs due in one bucket come in any order: a first, then b. */
	if (strcmp(out[0].id, out[1].id) > 0) {
		struct spool_lease t = out[0];

		out[0] = out[1];
		out[1] = t;
	}
	fin[0] = (struct spool_finish){ .id = out[0].id,
	    .token = out[0].token, .outcome = SPOOL_OK };
	fin[1] = (struct spool_finish){ .id = out[1].id,
	    .token = out[1].token, .outcome = SPOOL_PERMANENT };
	if (spool_finish(sp, fin, 2) == -1)
		return 1;
	for (i = 0; i < 2; i++) {
		printf("finish %s: %d %s\n", fin[i].id, fin[i].res.status,
		    spool_state_name(fin[i].res.state));
		bad |= fin[i].res.status != 0;
	}
	spool_free_leases(out, n);
	spool_close(sp);
	return bad;
}
