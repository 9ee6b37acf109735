/*
 * The sidecar record codec: one line of meta/ID to a struct rec and back.
 * Every field but t, ev and at is described once, in the table below, in
 * the order the writer puts them; the reader takes them in any order and
 * skips keys it does not know, so that a later version may add some.  The
 * format is in spool-layout.md, "The sidecar".
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

enum type {
	F_I64,			/* int64_t, decimal */
	F_U64,			/* uint64_t, decimal */
	F_INT,			/* int, decimal */
	F_FLAG,			/* int 0 or 1; any number other than 0 is 1 */
	F_WORD,			/* char[], a word (valid() if it is given) */
	F_TEXT,			/* char[], percent-encoded (valid() if it is
				   given, of the text decoded) */
	F_NAME,			/* int, a name of one of the closed sets */
	F_PAYLOAD		/* size and sum: SIZE:XXH3, 16 hex digits */
};

struct field {
	const char *key;
	enum type type;
	size_t off, size;
	int always;			/* written even when 0 or empty */
	int (*valid)(const char *);	/* F_WORD, F_TEXT: NULL takes any */
	int (*from_name)(const char *);	/* F_NAME */
	const char *(*name)(int);	/* F_NAME */
};

#define AT(m)	offsetof(struct rec, m), sizeof(((struct rec *)0)->m)

/*
 * own goes into the audit log, which splits on spaces and is read by awk:
 * it must be a word.  by, note and detail are a person's or a worker's
 * text: percent-encoded here, by and note in the audit log too.  A
 * record's reason "-" is no reason.
 */
static const struct field fields[] = {
	{ "tok", F_U64, AT(tok), 1, NULL, NULL, NULL },
	{ "att", F_INT, AT(att), 1, NULL, NULL, NULL },
	{ "cyc", F_INT, AT(cyc), 1, NULL, NULL, NULL },
	{ "max", F_INT, AT(max), 1, NULL, NULL, NULL },
	{ "dl", F_I64, AT(deadline), 1, NULL, NULL, NULL },
	{ "ttl", F_I64, AT(ttl), 1, NULL, NULL, NULL },
	{ "created", F_I64, AT(created), 1, NULL, NULL, NULL },
	{ "payload", F_PAYLOAD, AT(size), 0, NULL, NULL, NULL },
	{ "trace", F_WORD, AT(trace), 0, NULL, NULL, NULL },
	{ "key", F_WORD, AT(key), 0, spool_valid_key, NULL, NULL },
	{ "own", F_WORD, AT(owner), 0, spool_valid_owner, NULL, NULL },
	{ "until", F_I64, AT(until), 0, NULL, NULL, NULL },
	{ "prev", F_U64, AT(prev), 0, NULL, NULL, NULL },
	{ "out", F_NAME, AT(out), 0, NULL, spool_outcome_from_name,
	    spool_outcome_name },
	{ "cls", F_NAME, AT(cls), 0, NULL, spool_class_from_name,
	    spool_class_name },
	{ "reason", F_NAME, AT(reason), 0, NULL, reason_from_name,
	    spool_reason_name },
	{ "se", F_FLAG, AT(se), 0, NULL, NULL, NULL },
	{ "by", F_TEXT, AT(by), 0, spool_valid_note, NULL, NULL },
	{ "note", F_TEXT, AT(note), 0, spool_valid_note, NULL, NULL },
	{ "detail", F_TEXT, AT(detail), 0, NULL, NULL, NULL }
};

/* Up to 18 decimal digits: below 2^63, so no overflow. */
int
dec18(const char *s, size_t len, int64_t *v)
{
	int64_t n = 0;
	size_t i;

	if (len == 0 || len > 18)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		n = n * 10 + (s[i] - '0');
	}
	*v = n;
	return 0;
}

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

/* payload=SIZE:SUM, SUM 16 lowercase hex digits and not 0. */
static int
set_payload(const char *v, size_t vlen, struct rec *r)
{
	const char *colon = memchr(v, ':', vlen);
	int64_t size;
	uint64_t sum = 0;
	size_t i;
	int h;

	if (colon == NULL || dec18(v, (size_t)(colon - v), &size) == -1 ||
	    v + vlen - colon - 1 != 16)
		return -1;
	for (i = 1; i <= 16; i++) {
		if ((h = hexval(colon[i])) == -1 || (colon[i] >= 'A' &&
		    colon[i] <= 'F'))
			return -1;
		sum = sum << 4 | (uint64_t)h;
	}
	if (sum == 0)
		return -1;
	r->size = (uint64_t)size;
	r->sum = sum;
	return 0;
}

/* The value v (vlen bytes) of field f, into the record at base. */
static int
set_field(const struct field *f, const char *v, size_t vlen, char *base)
{
	char *dst = base + f->off, name[32];
	int64_t n;
	int i;

	switch (f->type) {
	case F_I64:
	case F_U64:
	case F_INT:
	case F_FLAG:
		if (dec18(v, vlen, &n) == -1 || (f->type != F_I64 &&
		    f->type != F_U64 && n > INT_MAX))
			return -1;
		if (f->type == F_I64)
			memcpy(dst, &n, sizeof(n));
		else if (f->type == F_U64)
			*(uint64_t *)(void *)dst = (uint64_t)n;
		else
			*(int *)(void *)dst = f->type == F_FLAG ? n != 0 :
			    (int)n;
		return 0;
	case F_WORD:
		if (vlen >= f->size)
			return -1;
		memcpy(dst, v, vlen);
		dst[vlen] = '\0';
		return f->valid == NULL || f->valid(dst) ? 0 : -1;
	case F_TEXT:
		if (pct_decode(v, vlen, dst, f->size) == -1)
			return -1;
		return f->valid == NULL || f->valid(dst) ? 0 : -1;
	case F_NAME:
		if (vlen >= sizeof(name))
			return -1;
		memcpy(name, v, vlen);
		name[vlen] = '\0';
		if ((i = f->from_name(name)) == -1)
			return -1;
		*(int *)(void *)dst = i;
		return 0;
	case F_PAYLOAD:
		return set_payload(v, vlen, (struct rec *)(void *)base);
	}
	return -1;
}

/* ev: a sidecar's events are enqueue ... purge, void, restore, rebuild. */
static int
set_event(const char *v, size_t vlen, struct rec *r)
{
	char name[16];

	if (vlen >= sizeof(name))
		return -1;
	memcpy(name, v, vlen);
	name[vlen] = '\0';
	r->ev = spool_event_from_name(name);
	return (r->ev > SPOOL_EV_NONE && r->ev <= SPOOL_EV_PURGE) ||
	    r->ev == SPOOL_EV_RESTORE || r->ev == SPOOL_EV_REBUILD ? 0 : -1;
}

/* at: new:ELIGIBLE, or the name of another state (absent: a purge). */
static int
set_place(const char *v, size_t vlen, struct rec *r)
{
	if (vlen > 4 && memcmp(v, "new:", 4) == 0) {
		r->loc = SPOOL_NEW;
		return dec18(v + 4, vlen - 4, &r->eligible);
	}
	r->loc = state_from_name(v, vlen);
	return r->loc == -1 || r->loc == SPOOL_NEW ? -1 : 0;
}

int
rec_parse(const char *line, size_t len, struct rec *r)
{
	const char *p = line, *end = line + len, *sp, *eq, *v;
	size_t klen, vlen;
	int i, rv;

	memset(r, 0, sizeof(*r));
	for (; p < end; p = sp + 1) {
		if ((sp = memchr(p, ' ', (size_t)(end - p))) == NULL)
			sp = end;
		if ((eq = memchr(p, '=', (size_t)(sp - p))) == NULL)
			return -1;
		klen = (size_t)(eq - p);
		v = eq + 1;
		vlen = (size_t)(sp - v);
		if (klen == 1 && p[0] == 't')
			rv = dec18(v, vlen, &r->t);
		else if (klen == 2 && memcmp(p, "ev", 2) == 0)
			rv = set_event(v, vlen, r);
		else if (klen == 2 && memcmp(p, "at", 2) == 0)
			rv = set_place(v, vlen, r);
		else {
			for (i = 0; i < NELEM(fields); i++)
				if (fields[i].key[0] == p[0] &&
				    strlen(fields[i].key) == klen &&
				    memcmp(fields[i].key, p, klen) == 0)
					break;
			rv = i < NELEM(fields) ? set_field(&fields[i], v, vlen,
			    (char *)r) : 0;
		}
		if (rv == -1)
			return -1;
	}
	/* Only a purge leaves a job nowhere. */
	if (r->ev == SPOOL_EV_NONE || (r->ev != SPOOL_EV_VOID &&
	    (r->loc == SPOOL_ABSENT) != (r->ev == SPOOL_EV_PURGE)))
		return -1;
	return 0;
}

struct buf {
	char *p;
	size_t len, size;
	int over;
};

static void put(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Append to b; once something did not fit, nothing more is written. */
static void
put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (b->over)
		return;
	va_start(ap, fmt);
	r = vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= b->size - b->len)
		b->over = 1;
	else
		b->len += (size_t)r;
}

/* " key=value" of field f of the record at base, unless it is left out. */
static void
put_field(struct buf *b, const struct field *f, const char *base)
{
	const char *src = base + f->off;
	char text[PCT_SIZE(SPOOL_DETAIL_MAX)];	/* detail's is the longest */
	int64_t n;
	int i;

	switch (f->type) {
	case F_I64:
		memcpy(&n, src, sizeof(n));
		if (n != 0 || f->always)
			put(b, " %s=%" PRId64, f->key, n);
		break;
	case F_U64:
		if (*(const uint64_t *)(const void *)src != 0 || f->always)
			put(b, " %s=%" PRIu64, f->key,
			    *(const uint64_t *)(const void *)src);
		break;
	case F_INT:
	case F_FLAG:
	case F_NAME:
		i = *(const int *)(const void *)src;
		if (i == 0 && !f->always)
			break;
		if (f->type == F_NAME)
			put(b, " %s=%s", f->key, f->name(i));
		else
			put(b, " %s=%d", f->key, f->type == F_FLAG ? 1 : i);
		break;
	case F_WORD:
		if (src[0] != '\0' || f->always)
			put(b, " %s=%s", f->key, src);
		break;
	case F_PAYLOAD:
		if (((const struct rec *)(const void *)base)->sum != 0)
			put(b, " %s=%" PRIu64 ":%016" PRIx64, f->key,
			    ((const struct rec *)(const void *)base)->size,
			    ((const struct rec *)(const void *)base)->sum);
		break;
	case F_TEXT:
		if (src[0] == '\0')
			break;
		if (pct_encode(text, sizeof(text), src) == -1)
			b->over = 1;
		else
			put(b, " %s=%s", f->key, text);
		break;
	}
}

/* One record as a line, without the newline; 0 if it did not fit. */
size_t
rec_format(char *dst, size_t size, const struct rec *r)
{
	struct buf b = { dst, 0, size, 0 };
	int i;

	put(&b, "t=%" PRId64 " ev=%s", r->t, spool_event_name(r->ev));
	if (r->ev == SPOOL_EV_VOID) {
		/* A void record carries its time and the highest token. */
		put(&b, " tok=%" PRIu64, r->tok);
		return b.over ? 0 : b.len;
	}
	if (r->loc == SPOOL_NEW)
		put(&b, " at=new:%" PRId64, r->eligible);
	else
		put(&b, " at=%s", spool_state_name(r->loc));
	for (i = 0; i < NELEM(fields); i++)
		put_field(&b, &fields[i], (const char *)r);
	return b.over ? 0 : b.len;
}

/* Do the two records put the job's file under one name? */
int
rec_same_place(const struct rec *a, const struct rec *b)
{
	if (a->loc != b->loc)
		return 0;
	if (a->loc == SPOOL_NEW)
		return a->eligible == b->eligible;
	if (a->loc == SPOOL_LEASED)
		return a->tok == b->tok;
	return 1;
}
