/*
 * The one wait of a transition (spool-layout.md, "Transitions"): the
 * audit lines written first, then every sync the transition still needs,
 * issued side by side and waited for once.  Only after it may a job be
 * let go and the call report success.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

/*
 * The one wait of a transition (spool-layout.md, "Transitions"): every
 * sync it still needs, issued side by side and waited for once: files[]
 * (records, fdatasync; errs[i] is 0 or each one's errno, NULL when none),
 * each directory of ds (fsync, once per call however many moves went
 * there), and the audit lines buffered in ab, written first.  -1 if a
 * directory or the log failed: then nothing of the call is sure to be
 * durable.  The lines are gone from ab once they are.
 */
int
commit_sync(struct spool *sp, const int *files, size_t nfiles, int *errs,
    struct dirset *ds, struct abuf *ab)
{
	return commit_with(sp, files, nfiles, errs, ds, ab, NULL);
}

/*
 * The same, and with cy the wait a finish handed on, in the same wait:
 * its records' files (cy->errs gets their errors), its directories, and
 * its log, which it wrote before ours.  A directory or either log that
 * fails fails both; cy->rv and cy->err say so for the finish.
 */
int
commit_with(struct spool *sp, const int *files, size_t nfiles, int *errs,
    struct dirset *ds, struct abuf *ab, struct carry *cy)
{
	int *fds = NULL, *all = NULL, rv = 0, e = 0, logfd = -1, created = 0;
	size_t i, n = 0, nc = cy != NULL ? cy->nfiles : 0;
	size_t nd = ds->n, ncd = cy != NULL ? cy->ds->n : 0;
	size_t most = nc + nfiles + 2 + nd + ncd;	/* 2: the two logs */
	/*
	 * What fds holds, in order: the carry's files, from 0; this call's,
	 * from mine; the logs, from shared; the directories, from dirs0.  A
	 * failed sync from shared on fails the whole wait.
	 */
	const size_t mine = nc, shared = nc + nfiles;
	size_t dirs0 = SIZE_MAX;
	char **dirs = NULL;	/* ds's names, then the carry's not in ds */

	if (cy != NULL)
		cy->taken = 1;
	fds = calloc(most, sizeof(*fds));
	all = calloc(most, sizeof(*all));
	dirs = calloc(nd + ncd + 1, sizeof(*dirs));
	if (fds == NULL || all == NULL || dirs == NULL) {
		rv = -1;
		e = errno;
		goto out;
	}
	for (i = 0; i < nc; i++)
		fds[n++] = cy->files[i];
	for (i = 0; i < nfiles; i++)
		fds[n++] = files[i];
	if (cy != NULL && cy->logfd != -1)
		fds[n++] = cy->logfd;
	if (ab != NULL && audit_write(sp, ab, &logfd, &created) == -1) {
		rv = -1;
		e = errno;
		goto out;
	}
	if (logfd != -1)
		fds[n++] = logfd;
	for (i = 0; i < nd; i++)
		dirs[i] = ds->names[i];
	for (i = 0; i < ncd; i++)
		if (!dirset_has(ds, cy->ds->names[i]))
			dirs[nd++] = cy->ds->names[i];
	dirs0 = n;
	for (i = 0; i < nd; i++) {
		fds[n] = sys_openat(sp->dirfd, dirs[i], O_RDONLY |
		    O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0);
		if (fds[n] == -1) {
			rv = -1;
			e = errno;
			goto out;
		}
		n++;
	}
	(void)psync(sp, fds, n, n - dirs0, all);
	for (i = 0; i < n && rv == 0; i++) {
		/* the carry's files and, with errs, ours are the items' own */
		if (all[i] == 0 || i < mine || (i < shared && errs != NULL))
			continue;
		rv = -1;
		e = all[i];
	}
	for (i = 0; cy != NULL && i < nc; i++)
		cy->errs[i] = all[i];
	for (i = 0; errs != NULL && i < nfiles; i++)
		errs[i] = all[mine + i];
out:
	for (i = dirs0; fds != NULL && i < n; i++)
		(void)close_fd(fds[i]);	/* directories: nothing to lose */
	if (logfd != -1 && rv == 0 &&
	    audit_done(sp, ab, logfd, created) == -1) {
		rv = -1;
		e = errno;
	} else if (logfd != -1 && rv == -1)
		(void)close_fd(logfd);
	if (cy != NULL && cy->logfd != -1) {
		if (rv == 0 && audit_done(sp, cy->ab, cy->logfd, cy->created) ==
		    -1) {
			rv = -1;
			e = errno;
		} else if (rv == -1)
			(void)close_fd(cy->logfd);
		cy->logfd = -1;
	}
	if (cy != NULL) {
		cy->rv = rv;
		cy->err = e;
	}
	free(fds);
	free(all);
	free(dirs);
	errno = e;
	return rv;
}
