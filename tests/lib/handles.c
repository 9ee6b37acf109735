/*
 * Two spool handles in one process: a handle's settings are its own
 * (lib/spool.h, spool_open).  Opens FIRST, then SECOND, and renews ID's
 * lease (TOKEN) in SECOND; prints what came of it.  tests/88-multihost.bats
 * opens a multi-host spool beside one that is not, each way round: the
 * bound on a lock's wait that a multi-host handle has must not reach the
 * other.
 *
 * usage: handles FIRST SECOND ID TOKEN; exit 0 renewed, 1 not, 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../lib/spool.h"

int
main(int argc, char **argv)
{
	struct spool *first, *second;
	struct spool_result res;
	uint64_t tok;
	int rv;

	if (argc != 5 || spool_parse_token(argv[4], &tok) == -1) {
		fprintf(stderr, "usage: handles FIRST SECOND ID TOKEN\n");
		return 2;
	}
	if ((first = spool_open(argv[1])) == NULL ||
	    (second = spool_open(argv[2])) == NULL) {
		fprintf(stderr, "handles: open: %s\n", strerror(errno));
		return 1;
	}
	rv = spool_renew(second, argv[3], tok, 0, &res);
	if (rv == -1)
		printf("not renewed: %s\n", strerror(errno));
	else if (res.status != 0)
		printf("not renewed: %s\n", res.status == 1 ?
		    spool_refusal_name(res.refusal) : strerror(res.err));
	else
		printf("renewed\n");
	spool_close(second);
	spool_close(first);
	return rv == -1 || res.status != 0;
}
