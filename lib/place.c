/*
 * Where a job's file is, on disk: the directory and name that a record
 * gives, opened through the leaves kept open (newtree.c), looked up, and
 * its directory synced.  A leaf kept may be one pruned since: a file not
 * found in it is looked for again (place_again).
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "internal.h"

/*
 * The directory and name of the file that record r says the job has.  For
 * new/ the bucket is opened (or one kept open is used: p->kept, when it was
 * opened before, and may be stale), and closed by place_done; ENOENT if
 * the bucket does not exist.
 */
int
place_of(struct spool *sp, const char *id, const struct rec *r,
    struct place *p)
{
	const int fds[] = { -1, -1, sp->leasedfd, sp->donefd, sp->deadfd };
	int owned;

	p->close = p->kept = 0;
	if (place_name(p->name, sizeof(p->name), id, r) == -1)
		return -1;
	if (r->loc != SPOOL_NEW) {
		p->dirfd = fds[r->loc];
		return 0;
	}
	if ((p->dirfd = leaf_fd(sp, r->eligible, 0, &owned)) == -1)
		return -1;
	p->close = owned == 1;
	p->kept = owned == 0;
	return 0;
}

/*
 * p named no file: if p's leaf was kept open and is no longer the leaf
 * its path names, look again (1); else the file is not there (0).
 */
int
place_again(struct spool *sp, const char *id, const struct rec *r,
    struct place *p)
{
	int e = errno;

	if (!p->kept || leaf_current(sp, r->eligible, p->dirfd)) {
		errno = e;
		return 0;
	}
	p->kept = 0;
	return place_of(sp, id, r, p) == -1 ? -1 : 1;
}

void
place_done(struct place *p)
{
	if (p->close)
		(void)close_fd(p->dirfd);	/* read-only directory */
	p->close = 0;
}

/*
 * lstat of the file record r names: 1 present, 0 absent, -1 error.  A
 * file found in a kept leaf is where it says: no entry is ever made in a
 * bucket removed since it was opened.  One not found there is looked for
 * again, if the leaf is no longer the one its path names.
 */
int
place_stat(struct spool *sp, const char *id, const struct rec *r,
    struct stat *st)
{
	struct place p;
	int rv, again;

	if (place_of(sp, id, r, &p) == -1)
		return errno == ENOENT ? 0 : -1;
	while ((rv = fstatat(p.dirfd, p.name, st, AT_SYMLINK_NOFOLLOW)) ==
	    -1 && errno == ENOENT) {
		if ((again = place_again(sp, id, r, &p)) != 1) {
			place_done(&p);
			return again == 0 || errno == ENOENT ? 0 : -1;
		}
	}
	place_done(&p);
	if (rv == -1)
		return -1;
	if (!S_ISREG(st->st_mode)) {
		errno = EUCLEAN;	/* not ours: for spool-fsck */
		return -1;
	}
	return 1;
}

/*
 * fsync the directory that holds the file record r names (for new/, the
 * whole bucket chain, any link of which may be new): for a command that
 * finds a transition done by a process that died before making it durable.
 */
int
sync_place(struct spool *sp, const struct rec *r)
{
	char rel[NAME_MAX_SPOOL];
	char *slash;

	switch (r->loc) {
	case SPOOL_NEW:
		memcpy(rel, "new/", 4);
		if (bucket_rel(rel + 4, sizeof(rel) - 4, r->eligible) == -1)
			return -1;
		do {
			if (sync_dir(sp->dirfd, rel) == -1)
				return -1;
		} while ((slash = strrchr(rel, '/')) != NULL && (*slash = '\0',
		    1));
		return 0;
	case SPOOL_LEASED:
		return sync_dir(sp->leasedfd, ".");
	case SPOOL_DONE:
		return sync_dir(sp->donefd, ".");
	case SPOOL_DEAD:
		return sync_dir(sp->deadfd, ".");
	default:
		return 0;
	}
}
