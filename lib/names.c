/*
 * Where a job's file is.  A state and the job's sidecar record name the file
 * exactly: new/TTTTTTTT/MMM/LLL/ID,ELIGIBLE, leased/ID,TOKEN, done/ID,
 * dead/ID.  Directories below new/ are opened one component at a time with
 * O_NOFOLLOW, so a symlink planted in the tree is never followed.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"


int
bucket_rel(char *buf, size_t len, int64_t eligible)
{
	uint64_t slot = (uint64_t)eligible >> SLOT_SHIFT;
	int r;

	r = snprintf(buf, len, "%08" PRIx64 "/%03x/%03x", slot >> 24,
	    (unsigned)(slot >> 12) & 0xfff, (unsigned)slot & 0xfff);
	if (r < 0 || (size_t)r >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The first and last millisecond of a bucket named by its components. */
int64_t
bucket_start(uint64_t top, unsigned mid, unsigned leaf)
{
	return (int64_t)(((top << 24) | ((uint64_t)mid << 12) | leaf)
	    << SLOT_SHIFT);
}

/* "ID,ELIGIBLE", made by hand: every listing of new/ makes one a job. */
int
leaf_name(char *buf, size_t len, const char *id, int64_t eligible)
{
	char num[24], *p = num + sizeof(num);
	uint64_t v = eligible < 0 ? -(uint64_t)eligible : (uint64_t)eligible;
	size_t idlen = strlen(id), n;

	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (eligible < 0)
		*--p = '-';
	n = (size_t)(num + sizeof(num) - p);
	if (idlen + 1 + n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, id, idlen);
	buf[idlen] = ',';
	memcpy(buf + idlen + 1, p, n);
	buf[idlen + 1 + n] = '\0';
	return 0;
}

/* Split "ID,NUMBER"; the ',' is outside the ID alphabet. */
static int
split_name(const char *name, char *id, uint64_t *num)
{
	const char *comma = strrchr(name, ',');
	uint64_t v = 0;
	size_t len;
	const char *p;

	if (comma == NULL || (len = (size_t)(comma - name)) > SPOOL_ID_MAX ||
	    comma[1] == '\0' || strlen(comma + 1) > 19)
		return -1;
	for (p = comma + 1; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	memcpy(id, name, len);
	id[len] = '\0';
	if (!spool_valid_id(id) || v > INT64_MAX)
		return -1;
	*num = v;
	return 0;
}

int
parse_new_name(const char *name, char *id, int64_t *eligible)
{
	uint64_t v;

	if (split_name(name, id, &v) == -1)
		return -1;
	*eligible = (int64_t)v;
	return 0;
}

int
parse_leased_name(const char *name, char *id, uint64_t *token)
{
	return split_name(name, id, token);
}

/*
 * Open a directory below new/ one component at a time, never following a
 * symlink.  With create, missing components are made, and the parent of
 * each component is added to ds so that its name is made durable: made by
 * us or found, for a bucket found may be one another producer has just
 * made and not yet synced (spool-layout.md, "The new/ tree").
 */
int
open_bucket(struct spool *sp, int64_t eligible, int create, struct dirset *ds)
{
	char rel[NAME_MAX_SPOOL], parent[NAME_MAX_SPOOL], *part, *slash;
	int fd, next, e;

	if (bucket_rel(rel, sizeof(rel), eligible) == -1)
		return -1;
	if ((fd = dup(sp->newfd)) == -1)
		return -1;
	strcpy(parent, "new");
	for (part = rel; part != NULL; part = slash) {
		if ((slash = strchr(part, '/')) != NULL)
			*slash++ = '\0';
		next = sys_openat(fd, part,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		if (next == -1 && errno == ENOENT && create) {
			if (mkdir_mode(sp, fd, part) == -1 && errno != EEXIST)
				goto fail;
			next = sys_openat(fd, part,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		}
		if (next != -1 && create && dirset_add(ds, parent) == -1) {
			e = errno;
			(void)close_fd(next);
			errno = e;
			goto fail;
		}
		if (next == -1)
			goto fail;
		(void)close_fd(fd);	/* read-only directory: nothing lost */
		fd = next;
		if (strlen(parent) + strlen(part) + 2 > sizeof(parent)) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		strcat(parent, "/");
		strcat(parent, part);
	}
	return fd;
fail:
	e = errno;
	(void)close_fd(fd);
	errno = e;
	return -1;
}

/* The name of the file that record r says the job has, in its directory. */
int
place_name(char *buf, size_t len, const char *id, const struct rec *r)
{
	int n;

	switch (r->loc) {
	case SPOOL_NEW:
		return leaf_name(buf, len, id, r->eligible);
	case SPOOL_LEASED:
		n = snprintf(buf, len, "%s,%" PRIu64, id, r->tok);
		break;
	case SPOOL_DONE:
	case SPOOL_DEAD:
		n = snprintf(buf, len, "%s", id);
		break;
	default:
		errno = ENOENT;
		return -1;
	}
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * The directory and name of the file that record r says the job has.  For
 * new/ the bucket is opened and *dirfd must be closed by the caller (close
 * is set); ENOENT if the bucket does not exist.
 */
int
place_of(struct spool *sp, const char *id, const struct rec *r,
    struct place *p)
{
	const int fds[] = { -1, -1, sp->leasedfd, sp->donefd, sp->deadfd };

	p->close = 0;
	if (place_name(p->name, sizeof(p->name), id, r) == -1)
		return -1;
	if (r->loc != SPOOL_NEW) {
		p->dirfd = fds[r->loc];
		return 0;
	}
	if ((p->dirfd = open_bucket(sp, r->eligible, 0, NULL)) == -1)
		return -1;
	p->close = 1;
	return 0;
}

/*
 * The same from the buckets sp->look holds open, for a file to be looked
 * at only: -1 if it holds none for r.  A file found there is where r says;
 * one not found may be in a bucket made since: look again with place_of.
 */
int
place_look(struct spool *sp, const char *id, const struct rec *r,
    struct place *p)
{
	p->close = 0;
	if (sp->look == NULL || r->loc != SPOOL_NEW ||
	    place_name(p->name, sizeof(p->name), id, r) == -1 ||
	    (p->dirfd = look_leaf(sp, sp->look, r->eligible)) == -1)
		return -1;
	return 0;
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
 * bucket that sp->look holds open is looked in first: a file found there
 * is where it says (no entry is ever made in a bucket removed since it
 * was opened); one not found is looked for again by path.
 */
int
place_stat(struct spool *sp, const char *id, const struct rec *r,
    struct stat *st)
{
	struct place p;
	int rv;

	if (place_look(sp, id, r, &p) == 0 &&
	    fstatat(p.dirfd, p.name, st, AT_SYMLINK_NOFOLLOW) == 0)
		goto found;
	if (place_of(sp, id, r, &p) == -1)
		return errno == ENOENT ? 0 : -1;
	rv = fstatat(p.dirfd, p.name, st, AT_SYMLINK_NOFOLLOW);
	place_done(&p);
	if (rv == -1)
		return errno == ENOENT ? 0 : -1;
found:
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
