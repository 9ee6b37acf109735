/*
 * JSON on stdout, or on the stream jto() names, written as it goes, one
 * value at a time: no tree is built, so a listing of any length costs the
 * memory of one job.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/*
 * JSON is written as it goes, so the writers keep two facts: how deep the
 * value being written is, and whether the next one needs a comma before
 * it.  A closed object or array is a value like any other: after it, the
 * next one does.
 */
static int jfirst = 1, jdepth;
static FILE *jout;	/* NULL: stdout */

#define OUT	(jout != NULL ? jout : stdout)

void
jto(FILE *out)
{
	jout = out;
}

static void
jkey(const char *key)
{
	if (key != NULL)
		fprintf(OUT, "%s\"%s\":", jfirst ? "" : ",", key);
	else if (!jfirst && jdepth > 0)	/* values at the top stand alone */
		putc(',', OUT);
	jfirst = 0;
}

/* An object ('{') or an array ('['), with its key inside an object. */
void
jbegin(const char *key, int bracket)
{
	if (jdepth++ > 0)
		jkey(key);
	putc(bracket, OUT);
	jfirst = 1;
}

void
jend(int bracket)
{
	putc(bracket, OUT);
	jfirst = 0;
	if (--jdepth == 0)
		putc('\n', OUT);
}

/* Is s valid UTF-8: no overlong form, no surrogate, none above U+10FFFF? */
static int
utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char lo, hi;
	int n;

	while (*p != '\0') {
		if (*p < 0x80) {
			p++;
			continue;
		}
		lo = 0x80;
		hi = 0xbf;
		if (*p >= 0xc2 && *p <= 0xdf)
			n = 1;
		else if (*p >= 0xe0 && *p <= 0xef) {
			n = 2;
			if (*p == 0xe0)
				lo = 0xa0;
			if (*p == 0xed)
				hi = 0x9f;
		} else if (*p >= 0xf0 && *p <= 0xf4) {
			n = 3;
			if (*p == 0xf0)
				lo = 0x90;
			if (*p == 0xf4)
				hi = 0x8f;
		} else
			return 0;
		if (p[1] < lo || p[1] > hi)
			return 0;
		for (p++; --n > 0; )
			if (*++p < 0x80 || *p > 0xbf)
				return 0;
		p++;
	}
	return 1;
}

/*
 * A string; null when empty.  A detail, a by or a note may hold '"' and
 * '\\'.  A string of valid UTF-8 keeps its bytes above ASCII as they
 * are.  In any other string, a byte outside printable ASCII is \u00XX,
 * so that the JSON is valid whatever a hand put in a sidecar.
 */
void
jstr(const char *key, const char *s)
{
	int text;

	jkey(key);
	if (s == NULL || *s == '\0') {
		fputs("null", OUT);
		return;
	}
	text = utf8_valid(s);
	putc('"', OUT);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(OUT, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f || (!text &&
		    (unsigned char)*s >= 0x80))
			fprintf(OUT, "\\u%04x", (unsigned char)*s);
		else
			putc(*s, OUT);
	}
	putc('"', OUT);
}

void
jnum(const char *key, int64_t v)
{
	jkey(key);
	fprintf(OUT, "%" PRId64, v);
}

/* A time in ms since the epoch; null when there is none. */
void
jtime(const char *key, int64_t ms)
{
	if (ms == 0) {
		jkey(key);
		fputs("null", OUT);
	} else
		jnum(key, ms);
}

void
jbool(const char *key, int v)
{
	jkey(key);
	fputs(v ? "true" : "false", OUT);
}
