/*
 * Pause and resume claims.  The pause is a file, "paused", in the spool's
 * top directory (as fsq's "down" file): claims look for it and find
 * nothing while it is there; producers, finishes and operators go on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int
spool_paused(struct spool *sp)
{
	if (faccessat(sp->dirfd, "paused", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	return errno == ENOENT ? 0 : -1;
}

int
spool_pause(struct spool *sp, const struct spool_operator *op, int on)
{
	DRAINING(sp);
	struct abuf ab = { NULL, 0, 0 };
	char by[PCT_SIZE(SPOOL_ID_MAX)], note[PCT_SIZE(SPOOL_ID_MAX)];
	char text[2 * PCT_SIZE(SPOOL_ID_MAX) + 2];
	struct rec r;
	int rv;

	if (op != NULL && (!spool_valid_note(op->by) ||
	    !spool_valid_note(op->note))) {
		errno = EINVAL;
		return -1;
	}
	memset(&r, 0, sizeof(r));
	r.t = now_ms();
	if (op != NULL) {
		(void)snprintf(r.by, sizeof(r.by), "%s", op->by);
		(void)snprintf(r.note, sizeof(r.note), "%s", op->note);
	}
	if (on) {
		/* Percent-encoded, as the audit log has them: two words. */
		(void)pct_encode(by, sizeof(by), r.by);
		(void)pct_encode(note, sizeof(note), r.note);
		(void)snprintf(text, sizeof(text), "%s %s\n",
		    by[0] ? by : "-", note[0] ? note : "-");
		rv = write_top_file(sp, "paused", text, 1);
	} else {
		rv = sys_unlinkat(sp->dirfd, "paused", 0);
		if (rv == -1 && errno == ENOENT)
			rv = 0;
		else if (rv == 0)
			rv = sync_dir(sp->dirfd, ".");
	}
	if (rv == 0 && (audit_add(&ab, sp, "-", &r, on ?
	    SPOOL_EV_PAUSE : SPOOL_EV_RESUME) == -1 || audit_flush(sp, &ab) ==
	    -1))
		rv = -1;
	abuf_free(&ab);
	return rv;
}
