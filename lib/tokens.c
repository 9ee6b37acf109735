/*
 * Fencing tokens come from one spool-wide counter, the file "tokens":
 *
 *	next=N last=P boot=B
 *
 * The rule: no token is handed out twice, whatever unsynced write is lost.
 * Every token ever handed out is below N, and N is made durable before a
 * token at or above it is handed out: it is reserved a block at a time,
 * so a claim costs a flush of its own only once in TOKEN_BLOCK claims (and
 * a claim of many jobs takes their tokens in one go).  P is the last token
 * taken, written in place under the lock, and synced in the claim's one
 * wait, beside its records (claim.c): a claim answers only once P is
 * durable.  A write lost with the host still up, by a failed writeback or
 * a file server, therefore takes back only tokens of claims that never
 * answered, whose sync saw the loss.  P is trusted only by the machine
 * that wrote it, in the same boot (B, the kernel's boot ID): another may
 * read the file before the writer's sync.  Anyone else, or the same machine
 * after a reboot, takes N - 1 as the last: the rest of a block is skipped,
 * never repeated.  A claim takes max(last, the job's highest token) + 1, so
 * a job's tokens rise even if the file were behind its sidecar.  The
 * format, and the one case this leaves, are in spool-layout.md, "Tokens".
 */
#define _GNU_SOURCE
#include <sys/file.h>

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define TOKEN_BLOCK	1024	/* tokens reserved by one flush */
#define GIVE_UP_MS	(60 * 1000)	/* no new wait this long after one failed */

/* The kernel's ID of this boot; "" if it cannot be read (never trusted). */
static const char *
boot_id(void)
{
	static char id[64];
	static int done;
	const char *s;

	if ((s = hook_boot_id()) != NULL)
		return s;
	if (done)
		return id;
	done = 1;
	if (read_small(AT_FDCWD, "/proc/sys/kernel/random/boot_id", id,
	    sizeof(id)) == -1)
		id[0] = '\0';
	id[strcspn(id, "\n")] = '\0';
	if (!spool_valid_id(id))
		id[0] = '\0';
	return id;
}

/*
 * "next=N last=P boot=B from=F\n"; keys it does not know are skipped.
 * from= is there only on a spool upgraded from format 1.
 */
int
tokens_parse(const char *text, size_t len, struct tokens *c)
{
	const char *p = text, *end, *sp, *eq;
	int64_t v;
	int have_next = 0;

	memset(c, 0, sizeof(*c));
	if (len == 0 || text[len - 1] != '\n')
		return -1;	/* torn, or not ours */
	end = text + len - 1;
	for (; p < end; p = sp + 1) {
		if ((sp = memchr(p, ' ', (size_t)(end - p))) == NULL)
			sp = end;
		if ((eq = memchr(p, '=', (size_t)(sp - p))) == NULL)
			return -1;
		if (eq - p == 4 && memcmp(p, "next", 4) == 0) {
			if (dec18(eq + 1, (size_t)(sp - eq - 1), &v) == -1)
				return -1;
			c->next = (uint64_t)v;
			have_next = 1;
		} else if (eq - p == 4 && memcmp(p, "last", 4) == 0) {
			if (dec18(eq + 1, (size_t)(sp - eq - 1), &v) == -1)
				return -1;
			c->last = (uint64_t)v;
		} else if (eq - p == 4 && memcmp(p, "from", 4) == 0) {
			if (dec18(eq + 1, (size_t)(sp - eq - 1), &v) == -1)
				return -1;
			c->from = (uint64_t)v;
		} else if (eq - p == 4 && memcmp(p, "boot", 4) == 0) {
			if ((size_t)(sp - eq - 1) >= sizeof(c->boot))
				return -1;
			memcpy(c->boot, eq + 1, (size_t)(sp - eq - 1));
			c->boot[sp - eq - 1] = '\0';
		}
	}
	return have_next && c->next > 0 && c->last < c->next ? 0 : -1;
}

static int
format(char *buf, size_t size, const struct tokens *c)
{
	char from[32] = "";
	int n;

	if (c->from != 0)
		(void)snprintf(from, sizeof(from), " from=%" PRIu64, c->from);
	n = snprintf(buf, size, "next=%" PRIu64 " last=%" PRIu64 " boot=%s%s\n",
	    c->next, c->last, c->boot[0] != '\0' ? c->boot : "-", from);

	return n < 0 || (size_t)n >= size ? -1 : n;
}

/*
 * A tokens file in which every token is below next, with from as it was
 * (0: none).  The boot is "-": no machine trusts last, which is next - 1.
 */
int
tokens_text(char *buf, size_t size, uint64_t next, uint64_t from)
{
	struct tokens c;

	memset(&c, 0, sizeof(c));
	c.next = next;
	c.last = next - 1;
	c.from = from;
	return format(buf, size, &c);
}

static int
open_tokens(struct spool *sp)
{
	if (sp->tokfd != -1)
		return 0;
	sp->tokfd = sys_openat(sp->dirfd, "tokens", O_RDWR | O_CLOEXEC |
	    O_NOFOLLOW | O_NONBLOCK, 0);
	if (sp->tokfd == -1 && (errno == ENOENT || errno == ELOOP))
		errno = EUCLEAN;	/* lost: spool-fsck --repair */
	return sp->tokfd == -1 ? -1 : 0;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);	/* cannot fail */
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The counter's lock.  A claim asks for it once for each group of jobs it
 * takes (token_take): once a wait for it has run out (in multi-host mode, a lock kept with no
 * process to let it go: spool-layout.md, "Several hosts"), this handle
 * fails at once for GIVE_UP_MS, so that a claim over many groups fails
 * after one wait, not after one wait for each.
 */
static int
lock_tokens(struct spool *sp)
{
	if (sp->tokens_gave_up != -1 &&
	    mono_ms() - sp->tokens_gave_up < GIVE_UP_MS) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (lock_fd(sp, sp->tokfd, 0) == 0) {
		sp->tokens_gave_up = -1;
		return 0;
	}
	if (errno == ETIMEDOUT)
		sp->tokens_gave_up = mono_ms();
	return -1;
}

/*
 * Write text (len bytes, over the n read) in place and let the lock go;
 * with sync (a text of the same next whose last nobody trusts), synced
 * first.  If that sync fails, the new next may still be read from the
 * cache: sync is written over it before the lock goes, so that the next
 * claim reserves, and syncs, a block of its own above it.  text NULL: only
 * let the lock go, keeping errno: the caller failed.
 */
static int
put_tokens(struct spool *sp, const char *text, int len, ssize_t n,
    const char *sync)
{
	int e, rv = -1;

	if (text != NULL && write_at(sp->tokfd, text, (size_t)len, 0) != -1 &&
	    ((size_t)len >= (size_t)n || sys_ftruncate(sp->tokfd, len) != -1)) {
		if (sync == NULL || sync_fd(sp->tokfd) != -1)
			rv = 0;
		else {
			e = errno;
			if (write_at(sp->tokfd, sync, strlen(sync), 0) != -1)
				(void)sys_ftruncate(sp->tokfd,
				    (off_t)strlen(sync));
			errno = e;
		}
	}
	e = errno;
	(void)sys_flock(sp, sp->tokfd, LOCK_UN);
	errno = e;
	return rv;
}

/*
 * The next tokens for n jobs, the highest token so far of the i-th being
 * hi[i], taken in one go under the counter's lock as n claims in a row
 * would take them.  A spool of format 1 has no counter: its tokens count
 * per ID, as they always did.
 */
int
token_take(struct spool *sp, const uint64_t *hi, size_t n, uint64_t *tok)
{
	char text[256];
	struct tokens c;
	const char *boot;
	uint64_t last;
	char untrusted[256];
	ssize_t got;
	size_t i;
	int len, reserve = 0;

	if (sp->format == 1) {
		for (i = 0; i < n; i++)
			tok[i] = hi[i] + 1;
		return 0;
	}
	if (open_tokens(sp) == -1 || lock_tokens(sp) == -1)
		return -1;
	if ((got = sys_pread(sp->tokfd, text, sizeof(text) - 1, 0)) == -1)
		goto out;
	if (tokens_parse(text, (size_t)got, &c) == -1) {
		errno = EUCLEAN;
		goto out;
	}
	boot = boot_id();
	last = boot[0] != '\0' && strcmp(c.boot, boot) == 0 ? c.last :
	    c.next - 1;
	for (i = 0; i < n; i++) {
		tok[i] = (last > hi[i] ? last : hi[i]) + 1;
		if (tok[i] >= SPOOL_TOKEN_MAX - TOKEN_BLOCK) {
			errno = EOVERFLOW;
			goto out;
		}
		last = tok[i];
		if (tok[i] >= c.next) {
			c.next = tok[i] + TOKEN_BLOCK;
			reserve = 1;
		}
	}
	c.last = last;
	(void)snprintf(c.boot, sizeof(c.boot), "%s", boot);
	if ((len = format(text, sizeof(text), &c)) == -1)
		goto out;
	/*
	 * A reservation is durable before the lock is let go: another
	 * process may hand out a token of the block as soon as it sees it.
	 * If its sync fails, the new next may still be read from the cache:
	 * then no one may trust last, so that the next claim reserves, and
	 * syncs, a block of its own above it.
	 */
	c.boot[0] = '\0';
	if (format(untrusted, sizeof(untrusted), &c) == -1)
		goto out;
	if (put_tokens(sp, text, len, got, reserve ? untrusted : NULL) == -1)
		return -1;
	sp->tokens_unsynced = !reserve;	/* else synced with next */
	return 0;
out:
	return put_tokens(sp, NULL, 0, 0, NULL);
}

/*
 * Make next at least floor, durably, and trust no one's last: after it,
 * every machine takes floor - 1 as the last token.  The file is rewritten
 * in place under its lock, as claims write it; made anew if it is lost.
 * Floor 0: keep next, and leave a file that cannot be read as it is.
 * remake: the file was lost or garbled, so which tokens below floor were
 * counted per ID is not known: from becomes floor.
 */
static int
raise_to(struct spool *sp, uint64_t floor, int remake)
{
	char text[256];
	struct tokens c;
	uint64_t from = 0;
	ssize_t n;
	int len;

	if (floor >= SPOOL_TOKEN_MAX - TOKEN_BLOCK) {
		errno = EOVERFLOW;
		return -1;
	}
	if (open_tokens(sp) == -1) {
		if (errno != EUCLEAN || floor == 0 || tokens_text(text,
		    sizeof(text), floor, remake ? floor : 0) == -1)
			return -1;
		return write_top_file(sp, "tokens", text, 0);
	}
	if (lock_tokens(sp) == -1)
		return -1;
	if ((n = sys_pread(sp->tokfd, text, sizeof(text) - 1, 0)) == -1)
		goto out;
	if (tokens_parse(text, (size_t)n, &c) == 0) {
		if (c.next > floor)
			floor = c.next;
		from = c.from;
	}
	if (floor == 0) {
		errno = EUCLEAN;
		goto out;
	}
	if (remake)
		from = floor;
	if ((len = tokens_text(text, sizeof(text), floor, from)) == -1)
		goto out;
	return put_tokens(sp, text, len, n, text);
out:
	return put_tokens(sp, NULL, 0, 0, NULL);
}

int
tokens_raise(struct spool *sp, uint64_t floor)
{
	return raise_to(sp, floor, 0);
}

/*
 * A lost or garbled counter made again at floor, above every token the
 * spool names.  spool-fsck no longer compares the claims below it for a
 * token given twice: in a spool upgraded from format 1, equal tokens of
 * two IDs there are no fault, and nothing says any more where they end.
 */
int
tokens_remake(struct spool *sp, uint64_t floor)
{
	return raise_to(sp, floor, 1);
}

/*
 * The sync of last failed: a claim after it may read an older last.  So
 * that it cannot hand out again a token already taken, no one trusts last
 * from now on: the next claim reserves, and syncs, a block of its own.
 */
int
tokens_distrust(struct spool *sp)
{
	sp->tokens_unsynced = 0;
	return tokens_raise(sp, 0);
}
