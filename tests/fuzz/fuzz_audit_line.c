/*
 * The audit line writer (lib/audit.c, audit_add).  The records it is given
 * come from the sidecar: spool-fsck --repair appends the line of a record
 * read back from meta/ID, and a new cycle's enqueue logs the superseded
 * record.  So the input's first line goes through rec_parse(), as the fold
 * does, and every record it accepts is written as an audit line.  The line
 * must be one line (a single newline, at its end) of exactly eleven
 * non-empty space-separated fields, in spool-layout.md's order, each a
 * word of the ID alphabet or ':' and '@' ("so lines split on spaces"),
 * but ACTOR and NOTE, which are the record's by (or owner) and note
 * percent-encoded, as spool-layout.md says it a second time here: every
 * byte that is not printable ASCII, a space or '%' as '%' and two
 * uppercase hex digits.  TIME is the record's t.  The input's second
 * line, if a valid ID, names the job.  And spool_audit_parse, the one
 * reader of audit lines, takes every line written back, field for field.
 */
#include "fuzz.h"

#include <inttypes.h>

static int
word_byte(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
	    c == ':' || c == '@';
}

/* s percent-encoded into dst (3 * strlen(s) + 1 bytes), "-" if empty. */
static const char *
encoded(char *dst, const char *s)
{
	char *o = dst;

	if (*s == '\0')
		return "-";
	for (; *s != '\0'; s++)
		if ((unsigned char)*s > ' ' && (unsigned char)*s < 0x7f &&
		    *s != '%')
			*o++ = *s;
		else
			o += sprintf(o, "%%%02X", (unsigned char)*s);
	*o = '\0';
	return dst;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant). */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* YYYY...-MM-DDTHH:MM:SS.mmmZ (four digits or more of year) to ms. */
static int
iso_to_ms(const char *s, size_t len, int64_t *ms)
{
	int64_t year = 0;
	unsigned f[6];
	size_t i = 0, k;

	while (i < len && s[i] >= '0' && s[i] <= '9' && i < 12)
		year = year * 10 + (s[i++] - '0');
	if (i < 4 || len != i + 20)
		return -1;
	s += i;
	/* -MM-DDTHH:MM:SS.mmmZ */
	if (s[0] != '-' || s[3] != '-' || s[6] != 'T' || s[9] != ':' ||
	    s[12] != ':' || s[15] != '.' || s[19] != 'Z')
		return -1;
	for (k = 0; k < 6; k++) {
		const char *p = s + 1 + 3 * k;

		if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
			return -1;
		f[k] = (unsigned)(p[0] - '0') * 10 + (unsigned)(p[1] - '0');
	}
	if (s[16] < '0' || s[16] > '9' || s[17] < '0' || s[17] > '9' ||
	    s[18] < '0' || s[18] > '9')
		return -1;
	if (f[0] < 1 || f[0] > 12 || f[1] < 1 || f[1] > 31 || f[2] > 23 ||
	    f[3] > 59 || f[4] > 60)
		return -1;
	*ms = ((days_from_civil(year, f[0], f[1]) * 24 + f[2]) * 60 + f[3]) *
	    60000 + f[4] * 1000 + (s[16] - '0') * 100 + (s[17] - '0') * 10 +
	    (s[18] - '0');
	return 0;
}

static int
field_is(const char *f, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(f, want, n) == 0;
}

static int
field_is_num(const char *f, size_t n, uint64_t v)
{
	char buf[24];

	(void)snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return field_is(f, n, buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spool *sp = fuzz_spool();
	struct abuf ab = { NULL, 0, 0 };
	char id[SPOOL_ID_MAX + 1] = "order-1842", prevtok[24];
	char actor_enc[3 * SPOOL_ID_MAX + 1], note_enc[3 * SPOOL_ID_MAX + 1];
	const char *nl, *f[12], *actor, *note, *p, *end;
	struct spool_audit a;
	char again[AUDIT_LINE_MAX];
	int event;
	size_t len, flen[12], n, i;
	struct rec r;
	int64_t t;

	nl = memchr(data, '\n', size);
	len = nl != NULL ? (size_t)(nl - (const char *)data) : size;
	if (rec_parse((const char *)data, len, &r) == -1)
		return 0;
	if (nl != NULL) {
		n = size - len - 1;
		p = memchr(nl + 1, '\n', n);
		n = p != NULL ? (size_t)(p - (nl + 1)) : n;
		if (n <= SPOOL_ID_MAX) {
			char want[SPOOL_ID_MAX + 1];

			memcpy(want, nl + 1, n);
			want[n] = '\0';
			if (spool_valid_id(want))
				memcpy(id, want, n + 1);
		}
	}
	/* The event as fsck --repair names it: a claim with prev= is a
	   reclaim; and a second record of the same, as supersede logs it. */
	event = r.ev == SPOOL_EV_CLAIM && r.prev != 0 ? SPOOL_EV_RECLAIM : r.ev;

	check(audit_add(&ab, sp, id, &r, event) == 0);
	check(audit_add(&ab, sp, id, &r, SPOOL_EV_SUPERSEDE) == 0);
	check(ab.len > 0 && ab.p[ab.len - 1] == '\n');
	nl = memchr(ab.p, '\n', ab.len);
	check(nl != NULL && (size_t)(nl - ab.p) + 1 < ab.len);
	len = (size_t)(nl - ab.p);
	/* The second line is the first but for its event. */
	check(memchr(nl + 1, '\n', ab.len - len - 2) == NULL);

	/* Split the first line on single spaces: 11 non-empty fields. */
	for (p = ab.p, end = ab.p + len, n = 0; n < 12; n++) {
		f[n] = p;
		p = memchr(p, ' ', (size_t)(end - p));
		flen[n] = (size_t)((p != NULL ? p : end) - f[n]);
		if (p == NULL) {
			n++;
			break;
		}
		p++;
	}
	check(n == 11);
	for (i = 0; i < n; i++) {
		check(flen[i] > 0);
		for (p = f[i]; p < f[i] + flen[i]; p++)
			check(i == 6 || i == 9 ? *p > ' ' && *p < 0x7f :
			    word_byte((unsigned char)*p));
	}
	check(iso_to_ms(f[0], flen[0], &t) == 0 && t == r.t);
	check(field_is(f[1], flen[1], spool_event_name(event)));
	check(field_is(f[2], flen[2], id));
	check(field_is_num(f[3], flen[3], r.tok));
	check(field_is_num(f[4], flen[4], (uint64_t)r.att));
	check(field_is_num(f[5], flen[5], (uint64_t)r.cyc));
	actor = r.by[0] != '\0' ? r.by : r.owner[0] != '\0' ? r.owner : "-";
	check(field_is(f[6], flen[6], encoded(actor_enc, r.by[0] != '\0' ?
	    r.by : r.owner)));
	check(field_is(f[7], flen[7], r.reason ?
	    spool_reason_name(r.reason) : "-"));
	check(field_is(f[8], flen[8], r.cls ? spool_class_name(r.cls) : "-"));
	/*
	 * A claim with no note names the token it superseded; another
	 * record's prev= (none the library writes) may or may not be named.
	 */
	(void)snprintf(prevtok, sizeof(prevtok), "%" PRIu64, r.prev);
	note = r.note[0] != '\0' ? r.note : r.prev != 0 ? prevtok : "-";
	check(field_is(f[9], flen[9], encoded(note_enc, strcmp(note, "-") ==
	    0 ? "" : note)) || (r.note[0] == '\0' && r.ev != SPOOL_EV_CLAIM &&
	    field_is(f[9], flen[9], "-")));
	check(field_is(f[10], flen[10], sp->writer));

	/*
	 * The parser that every reader uses takes the line back, field for
	 * field (a void line too: spool-fsck writes them); and the writer
	 * writes what it parsed byte for byte.
	 */
	check(spool_audit_parse(ab.p, len, &a) == 0);
	check(a.time == r.t && (int)a.event == event);
	check(strcmp(a.id, id) == 0 && a.token == r.tok);
	check(a.attempt == r.att && a.cycle == r.cyc);
	check(strcmp(a.actor, strcmp(actor, "-") == 0 ? "" : actor) == 0);
	check(a.reason == r.reason && a.class == r.cls);
	check(strcmp(a.note, strcmp(note, "-") == 0 ? "" : note) == 0 ||
	    (r.ev != SPOOL_EV_CLAIM && a.note[0] == '\0'));
	check(strcmp(a.writer, sp->writer) == 0);
	check(audit_format(again, sizeof(again), &a) == len + 1 &&
	    memcmp(again, ab.p, len + 1) == 0);
	abuf_free(&ab);
	return 0;
}
