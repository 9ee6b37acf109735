/*
 * Names from disk: whatever a directory of the spool holds is read back by
 * the listing, claiming and checking code (lib/info.c, lib/claim.c,
 * lib/fsck.c, lib/names.c), which must take any name.  The input's first
 * byte picks the directory (done/, dead/, leased/, meta/, tmp/, a leaf of
 * new/) and what to make there (a file, a directory, a symlink); the rest
 * is the name, '/' and NUL made '_', cut to 255 bytes.  Then every state
 * is listed (each ID handed over must pass spool_valid_id), spool_next_due()
 * runs, and a read-only spool_fsck() must check the spool (0 or 1, not -1).
 */
#include "fuzz.h"	/* first: it sets _GNU_SOURCE */

#include <sys/stat.h>

/* A leaf of new/ that exists while the target runs. */
#define LEAF_ELIGIBLE	1796026336216LL

static int
listed(void *arg, const char *id, const char *file)
{
	(void)arg;
	check(spool_valid_id(id) && strncmp(file, id, strlen(id)) == 0);
	return 0;
}

static void
say(void *arg, const char *what, const char *problem, int fixed)
{
	(void)arg;
	check(what != NULL && problem != NULL && !fixed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spool *sp = fuzz_spool();
	char name[256];
	int dirfd, fd, kind, rc, made;
	int64_t when;
	size_t i, n;

	if (size < 2)
		return 0;
	n = size - 1 < sizeof(name) - 1 ? size - 1 : sizeof(name) - 1;
	for (i = 0; i < n; i++)
		name[i] = data[i + 1] == '/' || data[i + 1] == '\0' ? '_' :
		    (char)data[i + 1];
	name[n] = '\0';
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	switch (data[0] % 6) {
	case 0: dirfd = sp->donefd; break;
	case 1: dirfd = sp->deadfd; break;
	case 2: dirfd = sp->leasedfd; break;
	case 3: dirfd = sp->metafd; break;
	case 4: dirfd = sp->tmpfd; break;
	default:
		check((dirfd = open_bucket(sp, LEAF_ELIGIBLE, 1)) != -1);
		break;
	}
	/* anchor-0's own files stay as they are. */
	made = 0;
	switch (kind = data[0] / 6 % 3) {
	case 0:
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0444);
		if (fd != -1) {
			made = 1;
			check(close(fd) == 0);
		}
		break;
	case 1:
		made = mkdirat(dirfd, name, 0777) == 0;
		break;
	default:
		made = symlinkat("/etc/passwd", dirfd, name) == 0;
		break;
	}

	for (i = SPOOL_NEW; i <= SPOOL_DEAD; i++)
		check(spool_list(sp, (enum spool_state)i, listed, NULL) == 0);
	check(spool_next_due(sp, &when) == 0);
	rc = spool_fsck(sp, 0, say, NULL);
	check(rc == 0 || rc == 1);

	if (made)
		check(unlinkat(dirfd, name, kind == 1 ? AT_REMOVEDIR : 0) == 0);
	if (data[0] % 6 == 5)
		check(close(dirfd) == 0);
	return 0;
}
