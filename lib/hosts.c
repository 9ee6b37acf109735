/*
 * Several hosts on one spool (spool-layout.md, "Several hosts").  In
 * multi-host mode every writer registers its host ID in hosts/HOSTID with
 * the machine it runs on, so that two machines given the same ID (whose
 * audit lines would go to one file, appended from two clients) are caught;
 * and the spool's file system is checked to be one whose locks every host
 * sees, and no wait for a lock may outlast a bound.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define HOST_LIVE_MS	(10 * 60 * 1000)	/* registered and still live */
#define HOST_TOUCH_MS	(60 * 1000)		/* how often a live host says so */
#define LOCK_WAIT_MS	(30 * 1000)		/* the longest wait for a lock */

/* The machine's identity: systemd's machine-id, else the host ID. */
static void
machine_id(char *buf, size_t len)
{
	static const char *const files[] = { "/etc/machine-id",
	    "/var/lib/dbus/machine-id" };
	char line[64];
	size_t i, k;
	FILE *f;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if ((f = fopen(files[i], "re")) == NULL)
			continue;
		k = fgets(line, sizeof(line), f) != NULL ?
		    strspn(line, "0123456789abcdef") : 0;
		(void)fclose(f);	/* read-only */
		if (k >= 16) {
			(void)snprintf(buf, len, "%.*s", (int)k, line);
			return;
		}
	}
	(void)snprintf(buf, len, "hostid-%08lx", (unsigned long)gethostid());
}

/* A mountinfo field with its octal escapes (\040 for a space) undone. */
static void
unescape(char *s)
{
	char *d = s;

	for (; *s != '\0'; s++, d++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
			    (s[3] - '0'));
			s += 3;
		} else
			*d = *s;
	}
	*d = '\0';
}

/*
 * The mount the spool is on, from /proc/self/mountinfo (or a table of a
 * test's: hook_mountinfo): its type and options (mount and super options,
 * comma-joined, with a comma at each end).  0, or -1 if unknown.
 */
static int
mount_of(const char *path, char *type, size_t tlen, char *opts, size_t olen)
{
	char line[4096], mnt[PATH_MAX], mo[1024], ty[128], so[1024];
	const char *table = hook_mountinfo();
	size_t best = 0, n;
	FILE *f;

	if ((f = fopen(table, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *dash = strstr(line, " - ");

		if (dash == NULL || sscanf(line, "%*s %*s %*s %*s %4095s %1023s",
		    mnt, mo) != 2 || sscanf(dash + 3, "%127s %*s %1023s", ty,
		    so) != 2)
			continue;
		unescape(mnt);
		n = strlen(mnt);
		if (strncmp(path, mnt, n) != 0 || (path[n] != '/' &&
		    path[n] != '\0' && n != 1) || n < best)
			continue;
		best = n;
		(void)snprintf(type, tlen, "%s", ty);
		(void)snprintf(opts, olen, ",%s,%s,", mo, so);
	}
	(void)fclose(f);	/* read-only */
	return best > 0 ? 0 : -1;
}

static int
has_opt(const char *opts, const char *opt)
{
	char want[64];

	(void)snprintf(want, sizeof(want), ",%s,", opt);
	return strstr(opts, want) != NULL;
}

static int
is_one_of(const char *type, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(type, *list) == 0)
			return 1;
	return 0;
}

/*
 * Can a mount of this type, with these options (",a,b,", as mount_of gives
 * them), hold the rules of several hosts (spool-layout.md, "File
 * systems")?  0 if it can.  1 if not, and then why says so in one phrase:
 * the type, the option at fault and what it breaks.  The type and options
 * decide, never a guess: a file system the spool does not know is
 * refused.  Local disks pass, for one host.  GlusterFS and CephFS pass.
 * NFS passes at version 4.1 or 4.2, hard, with its locks sent to the
 * server and no lookup answered from a cache.  SMB (cifs, smb3) passes
 * with its byte-range locks sent to the server (no nobrl), and reads that
 * follow them (no cache=loose).  9p, any other FUSE file system and any
 * other network or cluster file system are refused.
 */
static int
fs_refused(const char *type, const char *opts, char *why, size_t len)
{
	static const char *const local[] = { "ext2", "ext3", "ext4", "xfs",
	    "btrfs", "tmpfs", "ramfs", "f2fs", "zfs", "bcachefs", "jfs",
	    "reiserfs", "nilfs2", "overlay", NULL };
	static const char *const shared[] = { "fuse.glusterfs",
	    "fuse.ceph-fuse", "ceph", NULL };
	const char *ll;

	if (is_one_of(type, local) || is_one_of(type, shared))
		return 0;
	if (strcmp(type, "nfs4") == 0 || strcmp(type, "nfs") == 0) {
		if (!has_opt(opts, "vers=4.1") && !has_opt(opts, "vers=4.2"))
			(void)snprintf(why, len, "NFS before 4.1: a rename or "
			    "link the server made can be answered with an "
			    "error when it is sent again (mount vers=4.1 or "
			    "vers=4.2)");
		else if (has_opt(opts, "soft") || has_opt(opts, "softerr"))
			(void)snprintf(why, len, "NFS mounted soft: a call "
			    "that times out may still be made (mount it "
			    "hard)");
		else if (has_opt(opts, "nolock"))
			(void)snprintf(why, len, "NFS mounted nolock: locks "
			    "that stay on this host (mount it without "
			    "nolock)");
		else if ((ll = strstr(opts, ",local_lock=")) != NULL &&
		    !has_opt(opts, "local_lock=none"))
			(void)snprintf(why, len, "NFS mounted %.*s: locks "
			    "that stay on this host (mount it "
			    "local_lock=none)", (int)strcspn(ll + 1, ","),
			    ll + 1);
		else if (!has_opt(opts, "lookupcache=none"))
			(void)snprintf(why, len, "NFS mounted without "
			    "lookupcache=none: a name another host moved "
			    "can be found from this host's cache (mount it "
			    "lookupcache=none)");
		else
			return 0;
		return 1;
	}
	if (strcmp(type, "cifs") == 0 || strcmp(type, "smb3") == 0) {
		if (has_opt(opts, "nobrl"))
			(void)snprintf(why, len, "SMB mounted nobrl: locks "
			    "that stay on this host");
		else if (has_opt(opts, "cache=loose"))
			(void)snprintf(why, len, "SMB mounted cache=loose: "
			    "reads from a cache that other hosts' writes do "
			    "not clear");
		else
			return 0;
		return 1;
	}
	(void)snprintf(why, len, "%s, a file system whose locks other hosts "
	    "may not see", type);
	return 1;
}

/*
 * The verdict on the mount that holds path, an absolute path: fs_refused's,
 * or refused when no mount holds it.
 */
static int
fs_verdict(const char *path, char *why, size_t len)
{
	char type[128], opts[2100];

	if (mount_of(path, type, sizeof(type), opts, sizeof(opts)) == -1) {
		(void)snprintf(why, len, "a file system whose locks other "
		    "hosts may not see");
		return 1;
	}
	return fs_refused(type, opts, why, len);
}

/* ENOLCK when the spool's file system is refused. */
static int
fs_check(struct spool *sp)
{
	char why[256];

	if (fs_verdict(sp->path, why, sizeof(why)) == 0)
		return 0;
	errno = ENOLCK;
	return -1;
}

int
spool_fs_error(const char *dir, char *why, size_t len)
{
	char *path;
	int r;

	if (len > 0)
		why[0] = '\0';
	if ((path = realpath(dir, NULL)) == NULL)
		return -1;
	r = fs_verdict(path, why, len);
	free(path);
	return r;
}

/*
 * A lock on a shared file system can stay held with no process left to let
 * it go (spool-layout.md, "Several hosts"): in multi-host mode no lock is
 * waited for longer than LOCK_WAIT_MS (a test may set another:
 * hook_lock_wait) through this handle; the command fails with ETIMEDOUT.
 */
static void
bound_locks(struct spool *sp)
{
	int64_t ms = hook_lock_wait();

	sp->lock_wait_ms = ms != -1 ? ms : LOCK_WAIT_MS;
}

/*
 * Is the host ID registered to this machine, and touched in the last
 * HOST_TOUCH_MS?  Read without its lock: only a whole, fresh registration
 * of this machine passes, and nothing rewrites a registration that fresh.
 * Most commands so never take the lock.
 */
static int
registered(struct spool *sp, const char *want)
{
	char have[96], path[SPOOL_HOST_MAX + 8];
	struct stat st;
	int fd;
	ssize_t n;

	(void)snprintf(path, sizeof(path), "hosts/%s", sp->host);
	if ((fd = sys_openat(sp->dirfd, path, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC | O_NONBLOCK, 0)) == -1)
		return 0;
	n = fstat(fd, &st) == -1 ? -1 : sys_pread(fd, have, sizeof(have) - 1,
	    0);
	(void)close_fd(fd);	/* read-only */
	if (n == -1)
		return 0;
	have[n] = '\0';
	return strcmp(have, want) == 0 &&
	    ((int64_t)time(NULL) - st.st_mtim.tv_sec) * 1000 < HOST_TOUCH_MS;
}

/*
 * Register this writer's host ID, or refuse (EADDRINUSE) an ID that another
 * machine has used in the last HOST_LIVE_MS.  An ID idle for longer passes
 * to the machine that now claims it.
 */
int
host_register(struct spool *sp)
{
	char want[96], have[96], mid[80];
	struct stat st;
	ssize_t n;
	int hfd = -1, fd = -1, e;
	int64_t age;

	bound_locks(sp);
	if (fs_check(sp) == -1)
		return -1;
	machine_id(mid, sizeof(mid));
	(void)snprintf(want, sizeof(want), "machine=%s\n", mid);
	if (registered(sp, want))
		return 0;
	if ((mkdir_mode(sp, sp->dirfd, "hosts") == -1 && errno != EEXIST) ||
	    (hfd = sys_openat(sp->dirfd, "hosts", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC, 0)) == -1 ||
	    (fd = sys_openat(hfd, sp->host, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC | O_NONBLOCK, 0666)) == -1 ||
	    file_mode(sp, fd, 0660) == -1 || lock_fd(sp, fd, 0) == -1 ||
	    fstat(fd, &st) == -1 ||
	    (n = sys_pread(fd, have, sizeof(have) - 1, 0)) == -1)
		goto fail;
	have[n] = '\0';
	/* The real clock, as the file system stamps mtimes: not a test's. */
	age = ((int64_t)time(NULL) - st.st_mtim.tv_sec) * 1000;
	if (strcmp(have, want) == 0) {
		if (age >= HOST_TOUCH_MS && futimens(fd, NULL) == -1)
			goto fail;
	} else if (n == 0 || age >= HOST_LIVE_MS) {
		if (sys_ftruncate(fd, 0) == -1 ||
		    write_at(fd, want, strlen(want), 0) == -1 ||
		    sync_fd(fd) == -1)
			goto fail;
	} else {
		errno = EADDRINUSE;
		goto fail;
	}
	(void)close_fd(fd);
	(void)close_fd(hfd);	/* read-only */
	return 0;
fail:
	e = errno;
	if (fd != -1)
		(void)close_fd(fd);
	if (hfd != -1)
		(void)close_fd(hfd);
	errno = e;
	return -1;
}

/*
 * The host ID, which names this writer's audit file: $SPOOL_HOST, else the
 * first line of /etc/spool-host, else the host name; in the ID alphabet,
 * at most SPOOL_HOST_MAX bytes.
 */
const char *
spool_host(char *buf)
{
	const char *s = getenv("SPOOL_HOST");
	char name[256];
	size_t i;
	FILE *f;

	if (s == NULL || !spool_valid_id(s)) {
		name[0] = '\0';
		if ((f = fopen("/etc/spool-host", "re")) != NULL) {
			if (fgets(name, sizeof(name), f) == NULL)
				name[0] = '\0';
			name[strcspn(name, "\n")] = '\0';
			(void)fclose(f);	/* read-only */
		}
		if (name[0] == '\0' && gethostname(name, sizeof(name)) == -1)
			strcpy(name, "localhost");
		name[sizeof(name) - 1] = '\0';
		s = name;
	}
	for (i = 0; s[i] != '\0' && i < SPOOL_HOST_MAX; i++)
		buf[i] = (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' &&
		    s[i] <= '9') || s[i] == '.' || s[i] == '_' ||
		    (s[i] == '-' && i > 0) ? s[i] : '_';
	buf[i] = '\0';
	if (i == 0)
		strcpy(buf, "localhost");
	return buf;
}
