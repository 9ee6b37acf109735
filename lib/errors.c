/*
 * What each errno means from a spool call, and whether a retry can help:
 * spool.h, "Errors", as one table.  The commands print its words and
 * exit with its status; every other program that reports a spool's
 * errors reads the same rows.
 *
 * Invariant: an errno has one row for each place it can come from (the
 * opening of a spool, its making, or a call on an open one), and an
 * errno with no row is a system call's: a retry may succeed (111).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define OPEN	SPOOL_AT_OPEN
#define INIT	SPOOL_AT_INIT
#define CALL	SPOOL_AT_CALL

#define LOCK_HELD	"a lock stayed held too long: a file system's client " \
	"may keep a killed process's lock until it is restarted (see " \
	"spool(7), Several hosts)"

static const struct {
	int when;
	struct spool_error e;
} rows[] = {
	{ OPEN, { ENOENT, 100, NULL } },
	{ OPEN, { ENOTDIR, 100, NULL } },
	{ OPEN, { ENODATA, 100, "not a spool (no format file; see "
	    "spool-init(1))" } },
	{ OPEN, { EPROTO, 100, "unknown spool format" } },
	{ OPEN, { EBADMSG, 100, "config malformed (see spool(7), FILES)" } },
	{ OPEN, { EUCLEAN, 100, "damaged spool: a state directory is missing "
	    "or not a directory" } },
	{ OPEN, { EACCES, 100, NULL } },
	{ OPEN, { EPERM, 100, NULL } },
	{ OPEN, { EMLINK, 100, "is a symlink: give the spool's real path" } },
	{ OPEN, { ENOLCK, 100, "multi-host mode on a file system whose locks "
	    "other hosts may not see (see spool-layout.md, File systems)" } },
	{ OPEN, { EXDEV, 100, "config syncfs=yes needs the whole spool on one "
	    "local disk file system, one host and Linux 5.17 or later (see "
	    "spool-layout.md, One syncfs for a large wait)" } },
	{ OPEN, { EADDRINUSE, 100, "host ID is in use by another machine (see "
	    "hosts/ in spool-layout.md): set SPOOL_HOST" } },
	{ INIT, { ENOENT, 100, "no such parent directory" } },
	{ INIT, { ENOTDIR, 100, "not a directory" } },
	{ INIT, { EEXIST, 100, "exists and is not a spool" } },
	{ INIT, { EPROTO, 100, "unknown spool format" } },
	{ INIT, { EMLINK, 100, "is a symlink: give the spool's real path" } },
	{ INIT, { ESRCH, 100, "no such group" } },
	{ CALL, { EINVAL, 100, "invalid request" } },
	{ CALL, { ERANGE, 100, "--delay reaches past the deadline: the job "
	    "could never be delivered" } },
	{ CALL, { EUCLEAN, 100, "damaged job: its file or its sidecar is not "
	    "where it should be: spool-fsck --repair settles it or says "
	    "how" } },
	{ CALL, { EDQUOT, 111, NULL } },
	{ CALL, { EOVERFLOW, 111, NULL } },
	/* spool_init takes no lock: its ETIMEDOUT is a file system's. */
	{ OPEN, { ETIMEDOUT, 111, LOCK_HELD } },
	{ CALL, { ETIMEDOUT, 111, LOCK_HELD } },
};

const struct spool_error *
spool_error(int err, int when)
{
	static const struct spool_error other = { 0, 111, NULL };
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].e.err == err && rows[i].when == when)
			return &rows[i].e;
	return &other;
}

static const char *
where(enum spool_state state)
{
	switch (state) {
	case SPOOL_NEW:
		return "the job is in new/";
	case SPOOL_LEASED:
		return "the job is in leased/";
	case SPOOL_DONE:
		return "the job is in done/";
	case SPOOL_DEAD:
		return "the job is in dead/";
	default:
		return "there is no such job";
	}
}

int
spool_result_text(const char *id, const struct spool_result *res,
    char *buf, size_t len)
{
	const struct spool_error *e;
	const char *text;

	switch (res->status) {
	case 0:
		(void)snprintf(buf, len, "%s", "");
		return 0;
	case 1:
		switch (res->refusal) {
		case SPOOL_NO_JOB:
			(void)snprintf(buf, len, "%s: no such job", id);
			break;
		case SPOOL_NO_STALE:
			/* No token was ever issued: nothing to be stale. */
			if (res->token == 0)
				(void)snprintf(buf, len, "%s: not leased: "
				    "never claimed, %s", id,
				    where(res->state));
			else
				(void)snprintf(buf, len, "%s: stale token: "
				    "the current token is %" PRIu64 " and %s",
				    id, res->token, where(res->state));
			break;
		case SPOOL_NO_UNRECONCILED:
			(void)snprintf(buf, len, "%s: its side effect may have "
			    "happened: reconcile it, then redrive with "
			    "--reconciled", id);
			break;
		case SPOOL_NO_EDITED:
			(void)snprintf(buf, len, "%s: its payload is not the "
			    "one enqueued (changed by hand?): check it, then "
			    "redrive with --edited to send it as it is", id);
			break;
		default:
			(void)snprintf(buf, len, "%s: %s: %s", id,
			    spool_refusal_name(res->refusal),
			    where(res->state));
		}
		return 1;
	}
	e = spool_error(res->err, SPOOL_AT_CALL);
	text = e->text != NULL ? e->text : strerror(res->err);
	if (res->err == EUCLEAN)
		(void)snprintf(buf, len, "%s: %s; a file removed on purpose is "
		    "recorded with spool-purge --missing --by WHO --note "
		    "TICKET %s (spool(7), EDITING THE SPOOL BY HAND)", id,
		    text, id);
	else if (e->status == 111 && res->changed)
		(void)snprintf(buf, len, "%s: state changed but not yet "
		    "durable: %s (retrying is safe)", id, text);
	else
		(void)snprintf(buf, len, "%s: %s", id, text);
	return e->status;
}
