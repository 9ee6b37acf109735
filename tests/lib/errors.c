/*
 * spool_error()'s table as tests/61-open.bats compares it with spool.h's
 * and libspool(3)'s: one line "WHEN ERRNO STATUS" for each row it has,
 * for each errno a spool call may set.
 *
 * usage: errors; exit 0.
 */
#include <errno.h>
#include <stdio.h>

#include "../../lib/spool.h"

#define E(x)	{ x, #x }

static const struct {
	int err;
	const char *name;
} errs[] = {
	E(ENOENT), E(ENOTDIR), E(ENODATA), E(EPROTO), E(EBADMSG), E(EUCLEAN),
	E(EACCES), E(EPERM), E(EMLINK), E(ENOLCK), E(EXDEV), E(EADDRINUSE),
	E(EEXIST), E(ESRCH), E(EINVAL), E(ERANGE), E(EDQUOT), E(EOVERFLOW),
	E(ETIMEDOUT), E(ENOSPC), E(EIO), E(EINTR)
};

int
main(void)
{
	static const char *const whens[] = { "OPEN", "INIT", "CALL" };
	const int when[] = { SPOOL_AT_OPEN, SPOOL_AT_INIT, SPOOL_AT_CALL };
	const struct spool_error *e;
	size_t i, w;

	for (w = 0; w < 3; w++)
		for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
			e = spool_error(errs[i].err, when[w]);
			if (e->err != 0)
				printf("%s %s %d\n", whens[w], errs[i].name,
				    e->status);
			else if (e->status != 111 || e->text != NULL)
				printf("%s %s: no row, yet status %d\n",
				    whens[w], errs[i].name, e->status);
		}
	return 0;
}
