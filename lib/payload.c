/*
 * A payload's size and checksum, kept in the enqueue record and every
 * record after it (spool-layout.md, "The sidecar", payload=): computed
 * while the payload is copied into tmp/, and again when it must be shown
 * to be the bytes that were enqueued (a redrive, spool-fsck --verify).
 * The checksum is XXH3-64, libxxhash's: it hashes at several GB a second,
 * so a copy costs no more than its reads and writes, and it finds any
 * torn, cut or edited payload (it is no defence against a forger, who
 * could write the sidecar too).
 */
#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

#include "internal.h"

#define CHUNK	65536

/*
 * Read from to its end, writing each chunk to to (-1: nowhere), and give
 * the bytes' count and checksum.  A checksum of 0, which XXH3 gives one
 * input in 2^64, is made 1: 0 means "not known" in a record.
 */
int
payload_copy(int from, int to, uint64_t *size, uint64_t *sum)
{
	XXH3_state_t *st;
	char *buf;
	ssize_t n;
	int rv = -1, e;

	if ((st = XXH3_createState()) == NULL)
		return -1;
	if ((buf = malloc(CHUNK)) == NULL) {
		(void)XXH3_freeState(st);
		return -1;
	}
	(void)XXH3_64bits_reset(st);
	*size = 0;
	for (;;) {
		if ((n = read_full(from, buf, CHUNK)) == -1)
			goto out;
		if (n == 0)
			break;
		(void)XXH3_64bits_update(st, buf, (size_t)n);
		*size += (uint64_t)n;
		if (to != -1 && write_all(to, buf, (size_t)n) == -1)
			goto out;
		if (n < CHUNK)
			break;
	}
	if ((*sum = XXH3_64bits_digest(st)) == 0)
		*sum = 1;
	rv = 0;
out:
	e = errno;
	free(buf);
	(void)XXH3_freeState(st);
	errno = e;
	return rv;
}

/* The size and checksum of what fd holds, read from where it stands. */
int
payload_sum(int fd, uint64_t *size, uint64_t *sum)
{
	return payload_copy(fd, -1, size, sum);
}

/* The size and checksum of the file name in dirfd, never a symlink's. */
int
payload_sum_at(int dirfd, const char *name, uint64_t *size, uint64_t *sum)
{
	int fd, rv, e;

	fd = sys_openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK, 0);
	if (fd == -1)
		return -1;
	rv = payload_sum(fd, size, sum);
	e = errno;
	(void)close_fd(fd);	/* read-only */
	errno = e;
	return rv;
}

/*
 * Is the payload of the job whose current record is r, in the file fd,
 * the one that was enqueued (or last recorded)?  1 if it is, or if the
 * record says nothing (written before records kept a checksum); 0 if not;
 * -1 on error.  full: read it all for the checksum; else the size only.
 */
int
payload_matches(int fd, const struct rec *r, int full)
{
	uint64_t size, sum;
	struct stat st;

	if (r->sum == 0)
		return 1;
	if (fstat(fd, &st) == -1)
		return -1;
	if ((uint64_t)st.st_size != r->size)
		return 0;
	if (!full)
		return 1;
	if (payload_sum(fd, &size, &sum) == -1)
		return -1;
	return size == r->size && sum == r->sum;
}
