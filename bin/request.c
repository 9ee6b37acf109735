/*
 * A request line cut into words, in place.  The words are written over
 * the line behind the reader: a quote or an escape only ever shortens
 * what it stands for, so the writer never passes the reader.
 */
#include <stddef.h>
#include <stdint.h>

#include "request.h"

#define FAIL(w)	do { *why = (w); return -1; } while (0)

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at s, or -1. */
static long
hex4(const char *s, const char *end)
{
	long v = 0;
	int i, d;

	if (end - s < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		if ((d = hexval((unsigned char)s[i])) == -1)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* Code point c as UTF-8 at w; the bytes written. */
static size_t
utf8(char *w, long c)
{
	if (c < 0x80) {
		w[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		w[0] = (char)(0xc0 | c >> 6);
		w[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		w[0] = (char)(0xe0 | c >> 12);
		w[1] = (char)(0x80 | (c >> 6 & 0x3f));
		w[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	w[0] = (char)(0xf0 | c >> 18);
	w[1] = (char)(0x80 | (c >> 12 & 0x3f));
	w[2] = (char)(0x80 | (c >> 6 & 0x3f));
	w[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* Words apart by spaces and tabs; "a b" keeps its space. */
static int
text_words(char *line, size_t len, char **words, size_t max, size_t *n,
    const char **why)
{
	char *r = line, *end = line + len, *w;

	for (;;) {
		while (r < end && (*r == ' ' || *r == '\t'))
			r++;
		if (r == end)
			return 0;
		if (*n == max)
			FAIL("too many words");
		words[(*n)++] = w = r;
		while (r < end && *r != ' ' && *r != '\t') {
			if (*r != '"') {
				if ((unsigned char)*r < ' ' || *r == 0x7f)
					FAIL("a control character");
				*w++ = *r++;
				continue;
			}
			for (r++; r < end && *r != '"'; *w++ = *r++) {
				if (*r == '\\' && r + 1 < end &&
				    (r[1] == '"' || r[1] == '\\'))
					r++;
				else if (*r == '\\')
					FAIL("a backslash in quotes that is "
					    "not \\\" or \\\\");
				if ((unsigned char)*r < ' ' && *r != '\t')
					FAIL("a control character");
				if (*r == 0x7f)
					FAIL("a control character");
			}
			if (r == end)
				FAIL("a quote not closed");
			r++;
		}
		/* The NUL may land on the separator, never past it. */
		if (r < end)
			r++;
		*w = '\0';
	}
}

static void
skip_space(char **r, const char *end)
{
	while (*r < end && (**r == ' ' || **r == '\t' || **r == '\r' ||
	    **r == '\n'))
		(*r)++;
}

/* One JSON string at *r, decoded into w; the end of what it wrote. */
static char *
json_string(char **rp, const char *end, char *w, const char **why)
{
	char *r = *rp + 1;	/* past the opening quote */
	long c, lo;

	for (;;) {
		if (r == end) {
			*why = "a string not closed";
			return NULL;
		}
		if (*r == '"')
			break;
		if ((unsigned char)*r < ' ') {
			*why = "a control character in a string";
			return NULL;
		}
		if (*r != '\\') {
			*w++ = *r++;
			continue;
		}
		if (++r == end) {
			*why = "a string not closed";
			return NULL;
		}
		switch (*r++) {
		case '"': *w++ = '"'; continue;
		case '\\': *w++ = '\\'; continue;
		case '/': *w++ = '/'; continue;
		case 'b': *w++ = '\b'; continue;
		case 'f': *w++ = '\f'; continue;
		case 'n': *w++ = '\n'; continue;
		case 'r': *w++ = '\r'; continue;
		case 't': *w++ = '\t'; continue;
		case 'u': break;
		default:
			*why = "an unknown escape in a string";
			return NULL;
		}
		if ((c = hex4(r, end)) == -1) {
			*why = "a \\u escape without four hex digits";
			return NULL;
		}
		r += 4;
		if (c >= 0xdc00 && c <= 0xdfff) {
			*why = "a lone surrogate";
			return NULL;
		}
		if (c >= 0xd800 && c <= 0xdbff) {
			if (end - r < 6 || r[0] != '\\' || r[1] != 'u' ||
			    (lo = hex4(r + 2, end)) < 0xdc00 || lo > 0xdfff) {
				*why = "a lone surrogate";
				return NULL;
			}
			r += 6;
			c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (c == 0) {
			*why = "a NUL in a string";
			return NULL;
		}
		w += utf8(w, c);
	}
	*rp = r + 1;
	return w;
}

/* ["word", ...]: a JSON array of strings. */
static int
json_words(char *line, size_t len, char **words, size_t max, size_t *n,
    const char **why)
{
	char *r = line, *end = line + len, *w;

	skip_space(&r, end);
	if (r == end || *r != '[')
		FAIL("not a JSON array of strings");
	r++;
	skip_space(&r, end);
	if (r < end && *r == ']')
		r++;
	else
		for (;;) {
			if (r == end || *r != '"')
				FAIL("not a JSON array of strings");
			if (*n == max)
				FAIL("too many words");
			words[(*n)++] = w = r;
			if ((w = json_string(&r, end, w, why)) == NULL)
				return -1;
			/* The closing quote is behind r: room for the NUL. */
			*w = '\0';
			skip_space(&r, end);
			if (r < end && *r == ']') {
				r++;
				break;
			}
			if (r == end || *r != ',')
				FAIL("not a JSON array of strings");
			r++;
			skip_space(&r, end);
		}
	skip_space(&r, end);
	if (r != end)
		FAIL("text after the array");
	return 0;
}

int
req_words(char *line, size_t len, int json, char **words, size_t max,
    size_t *n, const char **why)
{
	size_t i;

	*n = 0;
	for (i = 0; i < len; i++)
		if (line[i] == '\0')
			FAIL("a NUL byte");
	if (json)
		return json_words(line, len, words, max, n, why);
	return text_words(line, len, words, max, n, why);
}
