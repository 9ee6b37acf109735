/*
 * Shared by the libFuzzer targets in tests/fuzz/: a scratch spool made once
 * per process with spool_init() in a temporary directory (removed at exit),
 * a whole-file writer, and check(), which aborts with the failed property
 * so that libFuzzer saves the input that broke it.  Each target is one
 * fuzz_NAME.c; tests/fuzz.mk builds them against the library compiled
 * with the sanitizers into tests/fuzz/obj/.  Include this first: it sets
 * _GNU_SOURCE, and the system headers come before internal.h, whose
 * macros wrap some system calls (as in the library's own files).
 */
#ifndef FUZZ_H
#define FUZZ_H

#define _GNU_SOURCE
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* A property failed: say which and where, then crash for libFuzzer. */
#define check(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: property failed: %s\n",		\
		    __FILE__, __LINE__, #cond);				\
		abort();						\
	}								\
} while (0)

#define UNUSED __attribute__((unused))

/*
 * A property the library is known to break: a finding already reported,
 * whose input is in the corpus as crash-WHAT.  make fuzz-regress checks it
 * like any other, so the corpus fails until the library is fixed; make
 * fuzz sets FUZZ_SKIP_KNOWN=1 so that the search goes past it instead of
 * finding it again every few seconds.  Once fixed, make it a check().
 */
#define check_known(cond) do {						\
	if (!(cond) && !fuzz_skip_known()) {				\
		fprintf(stderr, "%s:%d: property failed (known): %s\n",	\
		    __FILE__, __LINE__, #cond);				\
		abort();						\
	}								\
} while (0)

UNUSED static int
fuzz_skip_known(void)
{
	static int skip = -1;
	const char *s;

	if (skip == -1)
		skip = (s = getenv("FUZZ_SKIP_KNOWN")) != NULL &&
		    strcmp(s, "1") == 0;
	return skip;
}

UNUSED static char fuzz_dir[64];

UNUSED static int
fuzz_rm(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	(void)remove(path);	/* best effort: it is our own scratch space */
	return 0;
}

UNUSED static void
fuzz_cleanup(void)
{
	if (fuzz_dir[0] != '\0')
		(void)nftw(fuzz_dir, fuzz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * One finished job, anchor-0, that every scratch spool holds: its file in
 * done/, its sidecar and its audit lines (audit/anchor.log), all
 * consistent, so that spool_fsck() always has a job to check the inputs'
 * lines and names against.
 */
static const char fuzz_anchor_meta[] =
    "t=1796026336216 ev=enqueue at=new:1796026336216 tok=0 att=0 cyc=1 "
    "max=5 dl=1796631136216 ttl=604800000 created=1796026336216\n"
    "t=1796026336279 ev=claim at=leased tok=1 att=1 cyc=1 max=5 "
    "dl=1796631136216 ttl=604800000 created=1796026336216 own=vm:4137 "
    "until=1796026366279\n"
    "t=1796026336287 ev=ok at=done tok=1 att=1 cyc=1 max=5 "
    "dl=1796631136216 ttl=604800000 created=1796026336216 own=vm:4137 "
    "out=ok\n";
UNUSED static struct abuf fuzz_anchor_audit;	/* audit/anchor.log */

UNUSED static void fuzz_write(int dirfd, const char *name, const void *data,
    size_t size);

UNUSED static void
fuzz_anchor(struct spool *sp)
{
	const char *p = fuzz_anchor_meta, *nl;
	struct rec r;

	for (; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
		if (rec_parse(p, (size_t)(nl - p), &r) == -1 ||
		    audit_add(&fuzz_anchor_audit, sp, "anchor-0", &r,
		    r.ev) == -1)
			abort();
	fuzz_write(sp->metafd, "anchor-0", fuzz_anchor_meta,
	    strlen(fuzz_anchor_meta));
	fuzz_write(sp->donefd, "anchor-0", "payload\n", 8);
	fuzz_write(sp->auditfd, "anchor.log", fuzz_anchor_audit.p,
	    fuzz_anchor_audit.len);
}

/*
 * The scratch spool, made on first use: $TMPDIR/spool-fuzz.XXXXXX/spool,
 * with anchor-0 in it.  SPOOL_HOST is pinned so the audit file's name is
 * known.
 */
UNUSED static struct spool *
fuzz_spool(void)
{
	static struct spool *sp;
	char path[sizeof(fuzz_dir) + 8];
	const char *tmp = getenv("TMPDIR");

	/*
	 * One handle for the whole run, as spool-run keeps one: each call
	 * lists its directories anew (dir_list rewinds the dup it reads).
	 */
	if (sp != NULL)
		return sp;
	if (tmp == NULL || strlen(tmp) > sizeof(fuzz_dir) - 24)
		tmp = "/tmp";
	(void)snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/spool-fuzz.XXXXXX", tmp);
	if (mkdtemp(fuzz_dir) == NULL) {
		perror("mkdtemp");
		abort();
	}
	atexit(fuzz_cleanup);
	(void)snprintf(path, sizeof(path), "%s/spool", fuzz_dir);
	if (setenv("SPOOL_HOST", "fuzzhost", 1) == -1 ||
	    spool_init(path, NULL) == -1 || (sp = spool_open(path)) == NULL) {
		perror(path);
		abort();
	}
	fuzz_anchor(sp);
	return sp;
}

/* Replace dirfd/name with exactly these bytes. */
UNUSED static void
fuzz_write(int dirfd, const char *name, const void *data, size_t size)
{
	int fd;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0644);
	if (fd == -1 || (size > 0 && write_all(fd, data, size) == -1) ||
	    close(fd) == -1) {
		perror(name);
		abort();
	}
}

#endif
