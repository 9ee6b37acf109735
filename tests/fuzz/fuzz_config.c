/*
 * The spool's config file (lib/open.c, parse_config), read by every
 * spool_open().  The input becomes the scratch spool's config; the open
 * then either fails with EBADMSG (spool-layout.md: "Unknown keys and
 * malformed values make every command refuse the spool") or succeeds
 * with defaults that a spool can run on: a lease and a deadline above
 * zero, at most 100 years, a backoff no longer than its maximum, and 1 to
 * 1000000 attempts.
 */
#include "fuzz.h"

#define DURATION_MAX_MS	((int64_t)100 * 366 * 86400 * 1000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spool *sp = fuzz_spool(), *cf;

	fuzz_write(sp->dirfd, "config", data, size);
	if ((cf = spool_open(sp->path)) == NULL) {
		check(errno == EBADMSG);
		return 0;
	}
	check(cf->lease_ms > 0 && cf->lease_ms <= DURATION_MAX_MS);
	check(cf->deadline_ms > 0 && cf->deadline_ms <= DURATION_MAX_MS);
	check(cf->backoff_ms >= 0 && cf->backoff_ms <= cf->backoff_max_ms);
	check(cf->backoff_max_ms <= DURATION_MAX_MS);
	check(cf->max_attempts >= 1 && cf->max_attempts <= 1000000);
	check(strcmp(cf->host, "fuzzhost") == 0);
	spool_close(cf);
	return 0;
}
