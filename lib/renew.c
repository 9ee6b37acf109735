/*
 * Renew: the holder of the current token moves its lease's expiry later.
 * No file moves; the sidecar record and the audit line are the change.  A
 * renew never shortens a lease, so the next-expiry hint stays a lower bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

int
spool_renew(struct spool *sp, const char *id, uint64_t token,
    int64_t lease_ms, struct spool_result *res)
{
	DRAINING(sp);
	struct abuf ab = { NULL, 0, 0 };
	int64_t now = now_ms();
	struct job j;
	struct dirset none = { NULL, 0 };
	struct rec r;
	int rv = -1, e = 0;

	memset(res, 0, sizeof(*res));
	if (!spool_valid_id(id) || token == 0 || token > INT64_MAX ||
	    lease_ms < 0) {
		errno = EINVAL;
		return -1;
	}
	if (job_open(sp, id, 0, 0, &j, &ab) == -1) {
		if (errno != ENOENT)
			return -1;
		res->status = 1;
		res->refusal = SPOOL_NO_JOB;
		return 0;
	}
	if (lease_refusal(&j, token, res)) {
		rv = audit_flush(sp, &ab);	/* what settling did, if any */
		e = errno;
		goto out;
	}
	rec_next(&j, &r, SPOOL_EV_RENEW, now);
	(void)snprintf(r.owner, sizeof(r.owner), "%s", j.cur.owner);
	r.until = now + (lease_ms ? lease_ms : sp->lease_ms);
	if (r.until < j.cur.until)
		r.until = j.cur.until;
	/* The record and its line, synced side by side: one wait. */
	if (job_record(&j, &r) == -1 || job_write(&j) == -1 ||
	    (crash_point("renew-recorded"),
	    audit_add(&ab, sp, id, &r, SPOOL_EV_RENEW)) == -1 ||
	    commit_sync(sp, &j.fd, 1, NULL, &none, &ab) == -1) {
		e = errno;
		res->status = -1;
		res->err = e;
		res->changed = j.npending == 0;
		goto out;
	}
	crash_point("renew-logged");
	res->state = SPOOL_LEASED;
	res->token = token;
	rv = 0;
out:
	job_close(&j);
	abuf_free(&ab);
	errno = e;
	return rv;
}
