/*
 * The one place that decides what is a valid ID, note, owner, duration or
 * token, how outcomes, classes, reasons, states and events are spelled,
 * and how free text is written in a file: percent-encoded, as one word.
 * Every string from outside passes through here before it reaches a path
 * or a file.
 */
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* A word's bytes: 1, a letter or digit; 2, also '.', '_' or '-'. */
static const unsigned char word_class[256] = {
	['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
	['.'] = 2, ['_'] = 2, ['-'] = 2
};

static int
valid_word(const char *s, const char *extra, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i;

	if (s == NULL || word_class[u[0]] != 1)
		return 0;
	for (i = 0; u[i] != '\0'; i++) {
		if (i >= max)
			return 0;
		if (word_class[u[i]] == 0 &&
		    (extra == NULL || strchr(extra, u[i]) == NULL))
			return 0;
	}
	return 1;
}

int
spool_valid_id(const char *s)
{
	return valid_word(s, NULL, SPOOL_ID_MAX);
}

int
spool_valid_key(const char *s)
{
	return valid_word(s, NULL, SPOOL_KEY_MAX);
}

/*
 * The length of the UTF-8 sequence at s if it is one printable character,
 * else 0: a C0 control, DEL, a C1 control (U+0080 to U+009F), a byte that
 * begins no sequence, a sequence cut short, an overlong form, a surrogate,
 * or a code point above U+10FFFF.  The range of the second byte rules out
 * the last four, as RFC 3629's table does.  A NUL ends s: the checks stop
 * at the first byte that is not a continuation byte.
 */
static size_t
utf8_printable(const unsigned char *s)
{
	unsigned lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] < 0x80)
		return s[0] >= ' ' && s[0] != 0x7f ? 1 : 0;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xc2 || s[0] == 0xe0)
		lo = 0xa0;	/* C2: past the C1 controls; E0: not overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;	/* not a surrogate */
	else if (s[0] == 0xf0)
		lo = 0x90;	/* not overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f;	/* not above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * Who acts and why, as a person writes them: printable UTF-8 text.  "-"
 * alone is refused: the audit log writes it for an empty field.
 */
int
spool_valid_note(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, n;

	if (s == NULL || s[0] == '\0' || strcmp(s, "-") == 0)
		return 0;
	for (i = 0; u[i] != '\0'; i += n)
		if ((n = utf8_printable(u + i)) == 0 || i + n > SPOOL_ID_MAX)
			return 0;
	return 1;
}

int
spool_valid_owner(const char *s)
{
	return valid_word(s, ":@", SPOOL_ID_MAX);
}

/* A byte that a percent-encoded field holds as it is. */
static int
pct_plain(unsigned char c)
{
	return c > ' ' && c < 0x7f && c != '%';
}

/*
 * src, percent-encoded, into dst of size bytes: a printable ASCII byte
 * other than space and '%' as it is, any other as '%' and two uppercase
 * hex digits.  Its length, or -1 if it does not fit (PCT_SIZE(n) bytes
 * always do for n bytes of text).
 */
int
pct_encode(char *dst, size_t size, const char *src)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *s = (const unsigned char *)src;
	size_t n = 0;

	for (; *s != '\0'; s++) {
		if (n + (pct_plain(*s) ? 1 : 3) >= size) {
			if (size > 0)
				dst[0] = '\0';
			return -1;
		}
		if (pct_plain(*s))
			dst[n++] = (char)*s;
		else {
			dst[n++] = '%';
			dst[n++] = hex[*s >> 4];
			dst[n++] = hex[*s & 15];
		}
	}
	if (size == 0)
		return -1;
	dst[n] = '\0';
	return (int)n;
}

static int
hex_upper(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The len bytes at s, decoded into dst of size bytes, a C string: 0, or -1
 * if they do not fit or are not what pct_encode writes.  So a byte it
 * writes as it is must not come encoded, nor one it encodes come as it is;
 * the hex digits are uppercase; and no byte is NUL.  What this accepts is
 * written back byte for byte.
 */
int
pct_decode(const char *s, size_t len, char *dst, size_t size)
{
	size_t i, o = 0;
	int hi, lo;
	unsigned char c;

	for (i = 0; i < len; i++) {
		if (o + 1 >= size)
			return -1;
		c = (unsigned char)s[i];
		if (c == '%') {
			if (len - i < 3 || (hi = hex_upper(s[i + 1])) < 0 ||
			    (lo = hex_upper(s[i + 2])) < 0)
				return -1;
			c = (unsigned char)(hi << 4 | lo);
			if (c == '\0' || pct_plain(c))
				return -1;
			i += 2;
		} else if (!pct_plain(c))
			return -1;
		dst[o++] = (char)c;
	}
	if (size == 0)
		return -1;
	dst[o] = '\0';
	return 0;
}

/* Digits only, no sign, no overflow past max. */
static int
parse_digits(const char *s, size_t len, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;
	size_t i;

	if (len == 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (n > (max - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		n = n * 10 + (uint64_t)(s[i] - '0');
	}
	*v = n;
	return 0;
}

/* Up to 100 years: far enough for any deadline, far from overflow. */
#define DURATION_MAX	((uint64_t)100 * 366 * 86400 * 1000)

int
spool_parse_duration(const char *s, int64_t *ms)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 }, { "", 1000 }
	};
	size_t len, digits, i;
	uint64_t v;

	if (s == NULL)
		return -1;
	len = strlen(s);
	for (digits = 0; digits < len && s[digits] >= '0' && s[digits] <= '9';)
		digits++;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(s + digits, units[i].suffix) != 0)
			continue;
		if (parse_digits(s, digits, DURATION_MAX, &v) == -1 ||
		    v > DURATION_MAX / units[i].ms)
			return -1;
		*ms = (int64_t)(v * units[i].ms);
		return 0;
	}
	return -1;
}

/* "64M", "2G", "500k", or bytes. */
int
spool_parse_size(const char *s, uint64_t *bytes)
{
	static const char units[] = "kMGT";
	const char *u;
	size_t len;
	uint64_t v, mul = 1;

	if (s == NULL || (len = strlen(s)) == 0)
		return -1;
	if ((u = strchr(units, s[len - 1])) != NULL) {
		mul = (uint64_t)1 << (10 * (u - units + 1));
		len--;
	}
	if (parse_digits(s, len, UINT64_MAX / mul, &v) == -1)
		return -1;
	*bytes = v * mul;
	return 0;
}

int
spool_parse_token(const char *s, uint64_t *token)
{
	uint64_t v;

	if (s == NULL || parse_digits(s, strlen(s), SPOOL_TOKEN_MAX, &v) == -1 ||
	    v == 0)
		return -1;
	*token = v;
	return 0;
}

static const char *const outcomes[] = {
	NULL, "ok", "retry", "permanent", "release"
};

static const char *const classes[] = {
	"-", "transient", "rate-limited", "dependency-down", "invalid-input",
	"permission", "cancelled", "unknown-side-effect", "crashed", "timeout",
	"lease-expired"
};

static const char *const reasons[] = {
	"-", "permanent", "exhausted", "deadline", "side-effect", "cancelled"
};

static const char *const states[] = {
	"absent", "new", "leased", "done", "dead"
};

/* enum spool_event: the sidecar's events, then the audit log's own. */
static const char *const events[] = {
	"-", "enqueue", "claim", "renew", "ok", "retry", "release", "park",
	"redrive", "void", "drop", "cancel", "purge", "reclaim", "supersede",
	"pause", "resume", "restore", "rebuild"
};

static const char *const refusals[] = {
	"refused", "duplicate ID", "no such job", "stale token",
	"not leased", "not parked", "side effect not reconciled",
	"not queued", "not done", "changed since it was selected",
	"payload changed", "not missing"
};

static int
lookup(const char *const *names, int n, const char *s)
{
	int i;

	for (i = 1; i < n; i++)
		if (s != NULL && strcmp(names[i], s) == 0)
			return i;
	return -1;
}

static const char *
name_of(const char *const *names, int n, int v)
{
	return v >= 0 && v < n && names[v] != NULL ? names[v] : "?";
}

int
state_from_name(const char *s, size_t len)
{
	int i;

	for (i = 0; i < NELEM(states); i++)
		if (strlen(states[i]) == len && memcmp(states[i], s, len) == 0)
			return i;
	return -1;
}

int spool_outcome_from_name(const char *s) { return lookup(outcomes, NELEM(outcomes), s); }
int spool_class_from_name(const char *s) { return lookup(classes, NELEM(classes), s); }
const char *spool_outcome_name(int v) { return name_of(outcomes, NELEM(outcomes), v); }
const char *spool_class_name(int v) { return name_of(classes, NELEM(classes), v); }
const char *spool_reason_name(int v) { return name_of(reasons, NELEM(reasons), v); }
const char *spool_state_name(int v) { return name_of(states, NELEM(states), v); }
const char *spool_refusal_name(int v) { return name_of(refusals, NELEM(refusals), v); }
const char *spool_event_name(int v) { return name_of(events, NELEM(events),
    v); }
int spool_event_from_name(const char *s) { return lookup(events, NELEM(events),
    s); }

int
spool_event_by_operator(int event)
{
	switch (event) {
	case SPOOL_EV_REDRIVE:
	case SPOOL_EV_DROP:
	case SPOOL_EV_CANCEL:
	case SPOOL_EV_PURGE:
	case SPOOL_EV_PAUSE:
	case SPOOL_EV_RESUME:
		return 1;
	default:
		return 0;
	}
}

int
spool_reason_from_name(const char *s)
{
	return lookup(reasons, NELEM(reasons), s);
}

/* For the sidecar reader, "-" is no reason. */
int
reason_from_name(const char *s)
{
	return strcmp(s, "-") == 0 ? 0 : spool_reason_from_name(s);
}
