/*
 * new/ is a tree of buckets by eligible time, new/TTTTTTTT/MMM/LLL, each
 * level at most 4096 entries, so that a claim reads a few small directories
 * however deep the backlog is.  This file puts files into that tree and
 * collects the directories a call has to fsync before it returns.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int
dirset_add(struct dirset *ds, const char *rel)
{
	char **names;
	size_t i;

	for (i = 0; i < ds->n; i++)
		if (strcmp(ds->names[i], rel) == 0)
			return 0;
	if ((names = realloc(ds->names, (ds->n + 1) * sizeof(*names))) == NULL)
		return -1;
	ds->names = names;
	if ((ds->names[ds->n] = strdup(rel)) == NULL)
		return -1;
	ds->n++;
	return 0;
}

/* One fsync per directory per call, however many renames went there. */
int
dirset_sync(struct spool *sp, struct dirset *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++)
		if (sync_dir(sp->dirfd, ds->names[i]) == -1)
			return -1;
	return 0;
}

void
dirset_free(struct dirset *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++)
		free(ds->names[i]);
	free(ds->names);
	ds->names = NULL;
	ds->n = 0;
}

/*
 * Move a file into its bucket in new/.  A claimer removes a bucket once it
 * is empty and its time has passed; if that happens between our open and
 * our rename, the rename fails with ENOENT: make the bucket again.
 */
int
publish_new(struct spool *sp, int fromfd, const char *from, const char *id,
    int64_t eligible, struct dirset *ds)
{
	char name[NAME_MAX_SPOOL], rel[NAME_MAX_SPOOL];
	struct stat st;
	int fd, r, e, tries;

	if (leaf_name(name, sizeof(name), id, eligible) == -1 ||
	    bucket_rel(rel + 4, sizeof(rel) - 4, eligible) == -1)
		return -1;
	memcpy(rel, "new/", 4);
	for (tries = 0; tries < 100; tries++) {
		if ((fd = open_bucket(sp, eligible, 1, ds)) == -1)
			return -1;
		r = move_noreplace(fromfd, from, fd, name);
		e = errno;
		(void)close_fd(fd);	/* read-only directory */
		if (r == 0)
			return dirset_add(ds, rel);
		if (e != ENOENT ||
		    fstatat(fromfd, from, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			errno = e;
			return -1;
		}
	}
	errno = EAGAIN;
	return -1;
}

/*
 * Exponential backoff with jitter: the n-th retry waits between half and
 * all of min(backoff * 2^(n-1), backoff-max).  The jitter spreads a crowd
 * of failed jobs so that they do not return all at once.
 */
int64_t
backoff_ms(struct spool *sp, int attempt)
{
	static uint64_t seed;
	int64_t d = sp->backoff_ms;
	int i;

	for (i = 1; i < attempt && d < sp->backoff_max_ms; i++)
		d *= 2;
	if (d > sp->backoff_max_ms)
		d = sp->backoff_max_ms;
	if (d < 2)
		return d;
	if (seed == 0)
		seed = (uint64_t)now_ms() * 2654435761u ^ (uint64_t)getpid();
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return d / 2 + (int64_t)(seed % (uint64_t)(d / 2 + 1));
}
