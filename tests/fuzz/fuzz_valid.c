/*
 * The one place that judges strings from outside (lib/valid.c, and the
 * job-name splitter of lib/names.c): every input, as a C string, goes
 * through each validator and parser, and each answer is checked against
 * the rule spool.h and spool-layout.md state, written here a second time
 * the plain way.  Among them: a valid ID never holds '/' or ',' and never
 * starts with '.' or '-'; a note is printable UTF-8, decoded here code
 * point by code point; a duration is digits and one unit, at most 100
 * years (valid.c, DURATION_MAX), and its value written back as "<n>ms"
 * (and in any unit that divides it) parses to the same value.  And the
 * percent-encoding of free text: what pct_encode writes, pct_decode reads
 * back; pct_decode takes the input exactly when it is what pct_encode
 * writes of some text, and then gives that text.
 */
#include "fuzz.h"

#include <inttypes.h>
#include <limits.h>

#define DURATION_MAX_MS	((uint64_t)100 * 366 * 86400 * 1000)

static int
alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9');
}

static int
digit(int c)
{
	return c >= '0' && c <= '9';
}

/* spool.h: "[A-Za-z0-9._-], first alnum, <=128"; owners also ':' '@'. */
static int
word_rule(const char *s, int owner)
{
	size_t i, n = strlen(s);

	if (n < 1 || n > SPOOL_ID_MAX || !alnum((unsigned char)s[0]))
		return 0;
	for (i = 0; i < n; i++)
		if (!alnum((unsigned char)s[i]) && strchr("._-", s[i]) == NULL &&
		    !(owner && (s[i] == ':' || s[i] == '@')))
			return 0;
	return 1;
}

/* Digits only: their value if it is at most max, else -1 (as *ok = 0). */
static uint64_t
digits_value(const char *s, size_t n, uint64_t max, int *ok)
{
	unsigned __int128 v = 0;
	size_t i;

	*ok = n > 0;
	for (i = 0; i < n && *ok; i++) {
		if (!digit((unsigned char)s[i]))
			*ok = 0;
		else if ((v = v * 10 + (unsigned)(s[i] - '0')) > max)
			*ok = 0;
	}
	return *ok ? (uint64_t)v : 0;
}

/*
 * spool.h: printable UTF-8 text of 1 to 128 bytes, not "-" alone.  Each
 * code point is decoded, then judged: not a control (below U+0020, U+007F
 * to U+009F), not a surrogate, at most U+10FFFF, and written in the
 * fewest bytes.
 */
static int
note_rule(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n = strlen(str), k, len;
	uint32_t cp, least;

	if (n < 1 || n > SPOOL_ID_MAX || strcmp(str, "-") == 0)
		return 0;
	while (i < n) {
		if (s[i] < 0x80) {
			cp = s[i];
			len = 1;
			least = 0;
		} else if ((s[i] & 0xe0) == 0xc0) {
			cp = s[i] & 0x1f;
			len = 2;
			least = 0x80;
		} else if ((s[i] & 0xf0) == 0xe0) {
			cp = s[i] & 0x0f;
			len = 3;
			least = 0x800;
		} else if ((s[i] & 0xf8) == 0xf0) {
			cp = s[i] & 0x07;
			len = 4;
			least = 0x10000;
		} else
			return 0;
		if (i + len > n)
			return 0;
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < least || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 0;
		i += len;
	}
	return 1;
}

/*
 * The percent-encoding: the bytes written as they are, and the form of
 * what pct_decode takes.
 */
static int
plain_byte(unsigned char c)
{
	return c > ' ' && c < 0x7f && c != '%';
}

/* An uppercase hex digit's value, or -1. */
static int
upper_hex(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void
check_pct(const char *in, size_t len)
{
	char enc[3 * 256 + 1], dec[256 + 1], plain[256 + 1], again[3 * 256 + 1];
	size_t i, n = 0;
	int canonical = 1, rc, hi, lo;
	unsigned char c;

	/* Any text is encoded, in plain bytes and %XX only, and back. */
	if (len <= 256) {
		rc = pct_encode(enc, sizeof(enc), in);
		check(rc >= 0 && (size_t)rc == strlen(enc));
		for (i = 0; enc[i] != '\0'; i++) {
			if (enc[i] != '%') {
				check(plain_byte((unsigned char)enc[i]));
				continue;
			}
			check(upper_hex((unsigned char)enc[i + 1]) >= 0 &&
			    upper_hex((unsigned char)enc[i + 2]) >= 0);
			i += 2;
		}
		check(pct_decode(enc, (size_t)rc, dec, sizeof(dec)) == 0);
		check(strcmp(dec, in) == 0);
		/* Too small a buffer, by the NUL's byte: refused. */
		check(pct_encode(again, (size_t)rc, in) == -1);
		check(pct_decode(enc, (size_t)rc, dec, len) == -1);
	}

	/*
	 * The input as encoded text, read the plain way: canonical if each
	 * byte is one pct_encode writes as it is, or %XX, uppercase, of a
	 * byte it encodes (not NUL).
	 */
	for (i = 0; i < len && n < sizeof(plain) - 1; i++) {
		c = (unsigned char)in[i];
		if (c == '%' && i + 2 < len &&
		    (hi = upper_hex((unsigned char)in[i + 1])) >= 0 &&
		    (lo = upper_hex((unsigned char)in[i + 2])) >= 0) {
			c = (unsigned char)(hi << 4 | lo);
			canonical &= c != '\0' && !plain_byte(c);
			i += 2;
		} else
			canonical &= plain_byte(c);
		plain[n++] = (char)c;
	}
	canonical &= i == len;	/* all of it fits dec */
	plain[n] = '\0';
	rc = pct_decode(in, len, dec, sizeof(dec));
	check(rc == (canonical ? 0 : -1));
	if (rc == 0) {
		check(strcmp(dec, plain) == 0);
		check(pct_encode(again, sizeof(again), dec) == (int)len);
		check(memcmp(again, in, len) == 0);
	}
}

static void
check_words(const char *s)
{
	int id = spool_valid_id(s), note = spool_valid_note(s);
	int owner = spool_valid_owner(s);

	check(id == word_rule(s, 0));
	check(owner == word_rule(s, 1));
	check(note == note_rule(s));
	check(!id || owner);
	check(!owner || note);	/* an owner is always an actor */
	if (id) {
		check(strchr(s, '/') == NULL && strchr(s, ',') == NULL);
		check(s[0] != '.' && s[0] != '-');
		check(strcmp(s, ".") != 0 && strcmp(s, "..") != 0);
	}
	if (owner)
		check(strchr(s, '/') == NULL && strchr(s, ' ') == NULL &&
		    strchr(s, '\n') == NULL && s[0] != '-' && s[0] != '.');
}

static void
duration_back(int64_t ms, uint64_t unit, const char *suffix)
{
	char buf[64];
	int64_t again;

	if ((uint64_t)ms % unit != 0)
		return;
	(void)snprintf(buf, sizeof(buf), "%" PRIu64 "%s", (uint64_t)ms / unit,
	    suffix);
	check(spool_parse_duration(buf, &again) == 0 && again == ms);
}

static void
check_duration(const char *s)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 }, { "", 1000 }
	};
	size_t n = 0, i;
	int64_t ms = -42;
	uint64_t v = 0;
	int ok = 0, rc;

	rc = spool_parse_duration(s, &ms);
	while (digit((unsigned char)s[n]))
		n++;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(s + n, units[i].suffix) == 0)
			break;
	if (i < sizeof(units) / sizeof(units[0])) {
		v = digits_value(s, n, DURATION_MAX_MS, &ok);
		ok = ok && v <= DURATION_MAX_MS / units[i].ms;
	}
	check(rc == (ok ? 0 : -1));
	if (rc == -1) {
		check(ms == -42);	/* a failed parse leaves *ms alone */
		return;
	}
	check(ms >= 0 && (uint64_t)ms <= DURATION_MAX_MS);
	check((uint64_t)ms == v * units[i].ms);
	duration_back(ms, 1, "ms");
	duration_back(ms, 1000, "s");
	duration_back(ms, 1000, "");
	duration_back(ms, 60000, "m");
	duration_back(ms, 3600000, "h");
	duration_back(ms, 86400000, "d");
}

static void
check_size(const char *s)
{
	static const char units[] = "kMGT";
	size_t n = strlen(s);
	uint64_t bytes = 42, mul = 1, v = 0, again;
	const char *u;
	char buf[32];
	int ok, rc;

	rc = spool_parse_size(s, &bytes);
	if (n > 0 && (u = strchr(units, s[n - 1])) != NULL && s[n - 1] != '\0') {
		mul = (uint64_t)1 << (10 * (u - units + 1));
		n--;
	}
	v = digits_value(s, n, UINT64_MAX / mul, &ok);
	check(rc == (ok ? 0 : -1));
	if (rc == -1) {
		check(bytes == 42);
		return;
	}
	check(bytes == v * mul);
	(void)snprintf(buf, sizeof(buf), "%" PRIu64, bytes);
	check(spool_parse_size(buf, &again) == 0 && again == bytes);
}

static void
check_token(const char *s)
{
	uint64_t tok = 42, v, again;
	char buf[32];
	int ok, rc;

	rc = spool_parse_token(s, &tok);
	v = digits_value(s, strlen(s), SPOOL_TOKEN_MAX, &ok);
	check(rc == (ok && v >= 1 ? 0 : -1));
	if (rc == -1) {
		check(tok == 42);
		return;
	}
	check(tok == v && tok >= 1 && tok <= SPOOL_TOKEN_MAX);
	(void)snprintf(buf, sizeof(buf), "%" PRIu64, tok);
	check(spool_parse_token(buf, &again) == 0 && again == tok);
}

/* Names of outcomes, classes, reasons, states: each a bijection. */
static void
check_names(const char *s, size_t len)
{
	int o = spool_outcome_from_name(s), c = spool_class_from_name(s);
	int r = reason_from_name(s), st = state_from_name(s, len);
	int i;

	if (o != -1)
		check(o >= SPOOL_OK && o <= SPOOL_RELEASE &&
		    strcmp(spool_outcome_name(o), s) == 0);
	if (c != -1)
		check(c > SPOOL_CLASS_NONE && c <= SPOOL_CLASS_LEASE_EXPIRED &&
		    strcmp(spool_class_name(c), s) == 0);
	if (r != -1)
		check(r >= SPOOL_REASON_NONE && r <= SPOOL_REASON_CANCELLED &&
		    strcmp(spool_reason_name(r), s) == 0);
	if (st != -1)
		check(st >= SPOOL_ABSENT && st <= SPOOL_DEAD &&
		    strlen(s) == len && strcmp(spool_state_name(st), s) == 0);
	for (i = SPOOL_OK; i <= SPOOL_RELEASE; i++)
		check((o == i) == (strcmp(spool_outcome_name(i), s) == 0));
	for (i = SPOOL_CLASS_TRANSIENT; i <= SPOOL_CLASS_LEASE_EXPIRED; i++)
		check((c == i) == (strcmp(spool_class_name(i), s) == 0));
	/* Any number gets a printable name, never NULL. */
	i = len > 0 ? (signed char)s[0] : INT_MIN;
	check(spool_outcome_name(i) != NULL && spool_class_name(i) != NULL &&
	    spool_reason_name(i) != NULL && spool_state_name(i) != NULL &&
	    spool_refusal_name(i) != NULL);
}

/* "ID,NUMBER": the names of leased/ and new/ files. */
static void
check_job_name(const char *s)
{
	char id[SPOOL_ID_MAX + 1], again[NAME_MAX_SPOOL];
	const char *comma = strrchr(s, ',');
	int64_t eligible = -42;
	uint64_t tok = 42, v;
	int ok, rc, rn;

	rc = parse_leased_name(s, id, &tok);
	rn = parse_new_name(s, id, &eligible);
	check(rc == rn);
	ok = 0;
	if (comma != NULL && (size_t)(comma - s) <= SPOOL_ID_MAX) {
		char want[SPOOL_ID_MAX + 1];

		memcpy(want, s, (size_t)(comma - s));
		want[comma - s] = '\0';
		v = digits_value(comma + 1, strlen(comma + 1), INT64_MAX, &ok);
		ok = ok && spool_valid_id(want) && strlen(comma + 1) <= 19;
		if (ok)
			check(rc == 0 && strcmp(id, want) == 0 && tok == v &&
			    eligible == (int64_t)v);
	}
	check(rc == (ok ? 0 : -1));
	if (rc == 0 && (comma[1] != '0' || comma[2] == '\0')) {
		check(leaf_name(again, sizeof(again), id, eligible) == 0);
		check(strcmp(again, s) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	/* Exact size, so that reading past the terminator is caught. */
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	check_words(s);
	check_pct(s, strlen(s));
	check_duration(s);
	check_size(s);
	check_token(s);
	check_names(s, strlen(s));
	check_job_name(s);
	free(s);
	return 0;
}
