/*
 * The sidecar record reader and writer (lib/record.c): rec_parse() must
 * take any bytes without a crash, and a record it accepts must survive
 * the writer: rec_format() succeeds within the space job_record() gives
 * it, and rec_parse() of that line gives the same record back.  The
 * formatted line is a fixed point (formatting the re-read record gives the
 * same bytes) and holds a newline only if the input line did.
 */
#include "fuzz.h"

/* What job_record() leaves for one record after a void one: struct job's
   pending[], less the void record and the newline. */
#define LINE_MAX_REC	(sizeof(((struct job *)0)->pending) - REC_VOID_MAX - 1)

static void
same_rec(const struct rec *a, const struct rec *b)
{
	check(a->t == b->t);
	check(a->ev == b->ev);
	check(a->tok == b->tok);
	if (a->ev == SPOOL_EV_VOID)
		return;		/* a void record carries t, ev and tok only */
	check(a->loc == b->loc);
	check(a->loc != SPOOL_NEW || a->eligible == b->eligible);
	check(a->att == b->att);
	check(a->cyc == b->cyc);
	check(a->max == b->max);
	check(a->deadline == b->deadline);
	check(a->ttl == b->ttl);
	check(a->created == b->created);
	check(strcmp(a->trace, b->trace) == 0);
	check(strcmp(a->owner, b->owner) == 0);
	check(a->until == b->until);
	check(a->out == b->out);
	check(a->cls == b->cls);
	check(a->reason == b->reason);
	check(a->se == b->se);	/* se is a flag: se=2 reads as 1 */
	check(strcmp(a->detail, b->detail) == 0);
	check(strcmp(a->by, b->by) == 0);
	check(strcmp(a->note, b->note) == 0);
	check(a->prev == b->prev);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char line[LINE_MAX_REC + 1], again[LINE_MAX_REC + 1];
	struct rec r, back, third;
	size_t n, m;
	char *copy;

	/* An exact-size copy, so that any read past the line is caught. */
	if ((copy = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(copy, data, size);
	if (rec_parse(copy, size, &r) == -1) {
		free(copy);
		return 0;
	}
	check((r.ev > SPOOL_EV_NONE && r.ev <= SPOOL_EV_PURGE) ||
	    r.ev == SPOOL_EV_RESTORE || r.ev == SPOOL_EV_REBUILD);
	check(r.loc >= SPOOL_ABSENT && r.loc <= SPOOL_DEAD);
	n = rec_format(line, LINE_MAX_REC, &r);
	check(n > 0);
	check(n < LINE_MAX_REC);
	check(strlen(line) == n);
	check(memchr(line, '\n', n) == NULL || memchr(copy, '\n', size) != NULL);
	check(rec_parse(line, n, &back) == 0);
	same_rec(&r, &back);
	m = rec_format(again, LINE_MAX_REC, &back);
	check(m == n && memcmp(line, again, n) == 0);
	/* And the reader takes the line as a sidecar holds it. */
	check(rec_parse(again, m, &third) == 0);
	same_rec(&back, &third);
	free(copy);
	return 0;
}
