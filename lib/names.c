/*
 * The names the spool gives a job's file (spool-layout.md, "Names"): a
 * state and the job's sidecar record name it exactly,
 * new/TTTTTTTT/MMM/LLL/ID,ELIGIBLE, leased/ID,TOKEN, done/ID, dead/ID.
 * Made and parsed here, and nowhere else; nothing here touches a disk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
