/*
 * Making a spool, and turning a spool of format 1 into format 2.  A
 * spool is recognised by its format file, which spool_init writes last:
 * a directory without it is not a spool, even if an interrupted init left
 * the state directories behind, and spool_init run again completes it.
 * An upgrade writes the counter, then the format, each durable before
 * the next (spool-layout.md, "Formats").
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The only names a spool's top directory holds. */
static const char *const topnames[] = {
	"format", "config", "next-expiry", "paused", "tokens", "tmp", "new",
	"leased", "done", "dead", "meta", "audit", "quarantine", "hosts",
	"reserve"
};

static const char default_config[] =
    "# Defaults of this spool; see spool(7).  Durations take ms s m h d.\n"
    "lease=30s\n"
    "max-attempts=5\n"
    "deadline=7d\n"
    "backoff=1s\n"
    "backoff-max=1h\n"
    "# spool-run stops a handler that runs longer (0: never).\n"
    "timeout=1h\n"
    "# Free space and inodes kept for draining: enqueue stops below them.\n"
    "reserve=16M\n"
    "reserve-inodes=1000\n";

static int
check_empty_or_ours(int dirfd)
{
	struct dirent *de;
	struct dlist *d;
	size_t i;
	int ours = 1;

	if ((d = dir_list(dirfd)) == NULL)
		return -1;
	while (ours && (errno = 0, de = dir_next(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		for (ours = 0, i = 0; i < sizeof(topnames) / sizeof(topnames[0]);
		    i++)
			if (strcmp(de->d_name, topnames[i]) == 0)
				ours = 1;
	}
	dir_close(d);
	if (errno != 0)	/* the listing failed */
		return -1;
	if (!ours) {
		errno = EEXIST;
		return -1;
	}
	return 0;
}

/* Make the new spool's own name durable. */
static int
sync_parent(const char *dir)
{
	char *copy, *slash;
	int fd, r, e;

	if ((copy = strdup(dir)) == NULL)
		return -1;
	for (slash = copy + strlen(copy); slash > copy + 1 && slash[-1] == '/';)
		*--slash = '\0';
	if ((slash = strrchr(copy, '/')) == NULL)
		strcpy(copy, ".");
	else if (slash == copy)
		slash[1] = '\0';
	else
		*slash = '\0';
	/* The parent is the user's: it may be reached through symlinks. */
	fd = sys_openat(AT_FDCWD, copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	free(copy);
	if (fd == -1)
		return -1;
	r = sync_fd(fd);
	e = errno;
	(void)close_fd(fd);
	errno = e;
	return r;
}

int
spool_init(const char *dir, const char *groupname)
{
	struct spool sp;
	struct group *gr = NULL;
	char buf[64];
	size_t i;
	int made, fd, tmpfd = -1, format = 2, fresh = 0, e;

	memset(&sp, 0, sizeof(sp));
	sp.group = groupname != NULL;
	if (groupname != NULL && (gr = getgrnam(groupname)) == NULL) {
		errno = ESRCH;
		return -1;
	}
	made = sys_mkdirat(AT_FDCWD, dir, sp.group ? 02770 : 0777) == 0;
	if (!made && errno != EEXIST)
		return -1;
	if ((sp.dirfd = open_top(dir)) == -1)
		return -1;
	/* A spool already, of either format, is completed as it is. */
	if ((format = read_format(sp.dirfd)) == -1) {
		if (errno != ENODATA || check_empty_or_ours(sp.dirfd) == -1)
			goto fail;
		format = 2;
		fresh = 1;
	}
	if (gr != NULL && (fchown(sp.dirfd, (uid_t)-1, gr->gr_gid) == -1 ||
	    fchmod(sp.dirfd, 02770) == -1))
		goto fail;
	for (i = 0; i < NSUBDIRS; i++) {
		if (mkdir_mode(&sp, sp.dirfd, subdirs[i]) == -1) {
			if (errno != EEXIST)
				goto fail;
			if (gr != NULL && (fchownat(sp.dirfd, subdirs[i],
			    (uid_t)-1, gr->gr_gid, AT_SYMLINK_NOFOLLOW) == -1 ||
			    fchmodat(sp.dirfd, subdirs[i], 02770, 0) == -1))
				goto fail;
		}
		if ((fd = sys_openat(sp.dirfd, subdirs[i], O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)) == -1)
			goto fail;
		if (i == 0)
			tmpfd = fd;
		else
			(void)close_fd(fd);	/* read-only directory */
	}
	sp.tmpfd = tmpfd;
	if (faccessat(sp.dirfd, "config", F_OK, AT_SYMLINK_NOFOLLOW) == -1 &&
	    write_top_file(&sp, "config", default_config, 0) == -1)
		goto fail;
	/*
	 * A new spool's counter: no token has been handed out.  Never on a
	 * spool that exists: its counter, if lost, is spool-fsck's to make
	 * again, above every token it may have handed out.
	 */
	if (fresh && faccessat(sp.dirfd, "tokens", F_OK,
	    AT_SYMLINK_NOFOLLOW) == -1 && (tokens_text(buf, sizeof(buf),
	    1, 0) == -1 || write_top_file(&sp, "tokens", buf, 0) == -1))
		goto fail;
	/* The format file last: until it is there, this is not a spool. */
	if (sync_dir(sp.dirfd, ".") == -1)
		goto fail;
	if (faccessat(sp.dirfd, "format", F_OK, AT_SYMLINK_NOFOLLOW) == -1 &&
	    write_top_file(&sp, "format", "2\n", 0) == -1)
		goto fail;
	if (made && sync_parent(dir) == -1)
		goto fail;
	(void)close_fd(tmpfd);
	(void)close_fd(sp.dirfd);
	return 0;
fail:
	e = errno;
	if (tmpfd != -1)
		(void)close_fd(tmpfd);
	(void)close_fd(sp.dirfd);
	errno = e;
	return -1;
}

/* The highest token a sidecar or a lease's name holds, into *max. */
static int
highest_held(struct spool *sp, uint64_t *max)
{
	char id[SPOOL_ID_MAX + 1];
	struct dirent *de;
	struct job j;
	uint64_t tok;
	struct dlist *d;
	int rv = 0;

	*max = 0;
	if ((d = dir_list(sp->metafd)) == NULL)
		return -1;
	while (rv == 0 && (errno = 0, de = dir_next(d)) != NULL) {
		if (!spool_valid_id(de->d_name))
			continue;
		if (job_read(sp, de->d_name, LOCK_SH, &j) == -1) {
			/* Gone meanwhile; or damaged, which fsck reports. */
			if (errno != ENOENT && errno != EUCLEAN)
				rv = -1;
			continue;
		}
		if (j.hi > *max)
			*max = j.hi;
		job_close(&j);
	}
	if (rv == 0 && errno != 0)
		rv = -1;
	dir_close(d);
	if (rv == -1 || (d = dir_list(sp->leasedfd)) == NULL)
		return -1;
	while ((errno = 0, de = dir_next(d)) != NULL)
		if (parse_leased_name(de->d_name, id, &tok) == 0 && tok > *max)
			*max = tok;
	rv = errno != 0 ? -1 : 0;
	dir_close(d);
	return rv;
}

/*
 * Format 2 keeps no sidecar of a purged job: remove those format 1 kept
 * (each under its lock, as a purge does), then make their removal durable.
 */
static int
forget_purged_sidecars(struct spool *sp)
{
	struct dirent *de;
	struct job j;
	struct dlist *d;
	int rv = 0, forgot = 0;

	if ((d = dir_list(sp->metafd)) == NULL)
		return -1;
	while (rv == 0 && (errno = 0, de = dir_next(d)) != NULL) {
		if (!spool_valid_id(de->d_name))
			continue;
		if (job_open(sp, de->d_name, 0, 0, &j, NULL) == -1) {
			if (errno != ENOENT && errno != EUCLEAN)
				rv = -1;
			continue;
		}
		if (j.cur.ev == SPOOL_EV_PURGE) {
			if (sys_unlinkat(sp->metafd, j.id, 0) == -1)
				rv = -1;
			forgot = 1;
		}
		job_close(&j);
	}
	if (rv == 0 && errno != 0)
		rv = -1;
	dir_close(d);
	return rv == 0 && forgot ? sync_dir(sp->metafd, ".") : rv;
}

/*
 * Format 1 to 2: the counter starts above every token the sidecars and
 * leases hold, and TOKENS_RACE more, for claims of format 1 that a command
 * of the old version makes while the scan runs; its from= says that tokens
 * below it were counted per ID, so that spool-fsck does not take two IDs'
 * equal tokens of format 1 for a token handed out twice; then the format says 2;
 * then the sidecars of purged jobs go.  Each step is durable before the
 * next, and a rerun redoes what is left.
 */
#define TOKENS_RACE	((uint64_t)1 << 20)

int
spool_upgrade(const char *dir)
{
	struct spool *sp;
	char text[256];
	uint64_t max;
	int rv = -1, e;

	if ((sp = spool_open(dir)) == NULL)
		return -1;
	if (sp->format == 1 && highest_held(sp, &max) == 0 &&
	    tokens_text(text, sizeof(text), max + 1 + TOKENS_RACE,
	    max + 1 + TOKENS_RACE) != -1 &&
	    write_top_file(sp, "tokens", text, 1) == 0 &&
	    write_top_file(sp, "format", "2\n", 1) == 0)
		sp->format = 2;
	if (sp->format == 2 && forget_purged_sidecars(sp) == 0)
		rv = 0;
	e = errno;
	spool_close(sp);
	errno = e;
	return rv;
}
