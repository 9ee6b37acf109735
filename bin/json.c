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

/*
 * A string; null when empty.  A detail, a by or a note may hold '"' and
 * '\\'.  Text that spool_valid_note accepts (a by, a note) is printable
 * UTF-8: its bytes are kept as they are.  In any other string, a byte
 * outside printable ASCII is \u00XX, so that the JSON is valid whatever
 * a hand put in a sidecar.
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
	text = spool_valid_note(s);
	putc('"', OUT);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(OUT, "\\%c", *s);
		else if ((unsigned char)*s < 0x20 || (!text &&
		    (unsigned char)*s >= 0x7f))
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
