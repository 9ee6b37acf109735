/*
 * The audit log reader (lib/audit.c, spool_audit_scan) over any file
 * content, the line parser (spool_audit_parse) on every line it hands
 * over, and spool-fsck's reading of those lines (through a read-only
 * spool_fsck).  The input becomes
 * audit/fuzzhost.log; after a byte 0xFD, the rest becomes a rotated file,
 * audit/fuzzhost.log.1.  To reach lines longer than the reader's buffer
 * with short inputs, 0xFE C B stands for byte B repeated (C + 1) * 512
 * times.  The reader must hand over exactly the complete lines of the
 * files (those that fit its 64 KiB buffer), each without its newline, and
 * stop when the callback says so.  The scratch spool's audit/anchor.log
 * (fuzz.h) is read too.
 */
#include "fuzz.h"

#define SCAN_BUF	65536	/* lib/audit.c: a longer line is skipped */

struct line {
	const char *p;
	size_t len;
};

struct lines {
	struct line *v;
	size_t n, cap;
	char *text;		/* what the callback saw, one after another */
	size_t tlen, tcap;
	size_t stop_after;	/* 0: never stop */
};

static void
push(struct lines *l, const char *p, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		check((l->v = realloc(l->v, l->cap * sizeof(*l->v))) != NULL);
	}
	l->v[l->n].p = p;
	l->v[l->n++].len = len;
}

/*
 * A line that spool_audit_parse accepts is one the writer would write: it
 * writes the parsed line back byte for byte.
 */
static void
parse_back(const char *line, size_t len)
{
	struct spool_audit a;
	char again[AUDIT_LINE_MAX];

	if (spool_audit_parse(line, len, &a) == -1)
		return;
	check(audit_format(again, sizeof(again), &a) == len + 1);
	check(memcmp(again, line, len) == 0 && again[len] == '\n');
}

static int
seen(void *arg, const char *line, size_t len)
{
	struct lines *l = arg;

	check(memchr(line, '\n', len) == NULL);
	check(len < SCAN_BUF);
	parse_back(line, len);
	if (l->tlen + len > l->tcap) {
		l->tcap = (l->tlen + len) * 2 + 64;
		check((l->text = realloc(l->text, l->tcap)) != NULL);
	}
	memcpy(l->text + l->tlen, line, len);
	push(l, NULL, len);
	l->v[l->n - 1].p = (const char *)(uintptr_t)l->tlen;	/* offset */
	l->tlen += len;
	return l->stop_after != 0 && l->n == l->stop_after ? 7 : 0;
}

/*
 * The complete lines of a file's content that fit the reader's buffer: a
 * longer line is skipped whole, its tail too (crash-line-over-64k-*).
 */
static void
expect(struct lines *l, const char *p, size_t len)
{
	const char *end = p + len, *nl;
	size_t n;

	for (; (nl = memchr(p, '\n', (size_t)(end - p))) != NULL; p = nl + 1)
		if ((n = (size_t)(nl - p)) < SCAN_BUF)
			push(l, p, n);
}

static int
cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->p, y->p, n);

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/*
 * Does some line of the files name anchor-0 with this token?  The token
 * is the fourth field read on its own (strtoull, never past the field's
 * end): looser than spool-fsck's parser, so that a token fsck takes from
 * a line is always found here.
 */
static int
names_token(const struct lines *files, uint64_t tok)
{
	const char *p, *end, *nl, *f[4];
	char field[64];
	size_t i, k, n;

	for (i = 0; i < files->n; i++) {
		p = files->v[i].p;
		end = p + files->v[i].len;
		for (; (nl = memchr(p, '\n', (size_t)(end - p))) != NULL;
		    p = nl + 1) {
			f[0] = p;
			for (k = 1; k < 4; k++) {
				f[k] = memchr(f[k - 1], ' ', (size_t)(nl - f[k - 1]));
				if (f[k] == NULL)
					break;
				f[k]++;
			}
			if (k < 4 || (size_t)(nl - f[2]) < 9 ||
			    memcmp(f[2], "anchor-0 ", 9) != 0)
				continue;
			n = strcspn(f[3], " \n");
			if (n >= sizeof(field))
				continue;
			memcpy(field, f[3], n);
			field[n] = '\0';
			if (strtoull(field, NULL, 10) == tok)
				return 1;
		}
	}
	return 0;
}

/*
 * spool-fsck reads only: it may find fault with anchor-0, which is
 * consistent, only for a token that a line naming it carries.
 */
static void
say(void *arg, const char *what, const char *problem, int fixed)
{
	static const char tokmsg[] = "the audit log names token ";
	const struct lines *files = arg;

	check(what != NULL && problem != NULL && !fixed);
	if (strcmp(what, "anchor-0") != 0)
		return;
	check(strncmp(problem, tokmsg, sizeof(tokmsg) - 1) == 0);
	check(names_token(files, strtoull(problem + sizeof(tokmsg) - 1, NULL,
	    10)));
}

/* Undo the 0xFE run-length escape. */
static char *
expand(const uint8_t *data, size_t size, size_t *len)
{
	size_t i, n = 0, k;
	char *out;

	for (i = 0; i < size; i++)
		if (data[i] == 0xfe && i + 2 < size) {
			n += ((size_t)data[i + 1] + 1) * 512;
			i += 2;
		} else
			n++;
	check((out = malloc(n ? n : 1)) != NULL);
	for (i = 0, k = 0; i < size; i++)
		if (data[i] == 0xfe && i + 2 < size) {
			memset(out + k, data[i + 2],
			    ((size_t)data[i + 1] + 1) * 512);
			k += ((size_t)data[i + 1] + 1) * 512;
			i += 2;
		} else
			out[k++] = (char)data[i];
	*len = n;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spool *sp = fuzz_spool();
	struct lines want = { 0 }, got = { 0 }, stop = { 0 }, files = { 0 };
	size_t len, first, i;
	char *text, *cut;
	int rc;

	text = expand(data, size, &len);
	cut = memchr(text, 0xfd, len);
	first = cut != NULL ? (size_t)(cut - text) : len;
	fuzz_write(sp->auditfd, "fuzzhost.log", text, first);
	if (cut != NULL)
		fuzz_write(sp->auditfd, "fuzzhost.log.1", cut + 1,
		    len - first - 1);
	else
		(void)unlinkat(sp->auditfd, "fuzzhost.log.1", 0);
	expect(&want, text, first);
	if (cut != NULL)
		expect(&want, cut + 1, len - first - 1);
	expect(&want, fuzz_anchor_audit.p, fuzz_anchor_audit.len);
	/* The files' text, for say(). */
	push(&files, text, first);
	if (cut != NULL)
		push(&files, cut + 1, len - first - 1);
	push(&files, fuzz_anchor_audit.p, fuzz_anchor_audit.len);

	check(spool_audit_scan(sp, seen, &got) == 0);
	for (i = 0; i < got.n; i++)	/* offsets into got.text, now fixed */
		got.v[i].p = got.text + (uintptr_t)got.v[i].p;
	check(got.n == want.n);
	qsort(want.v, want.n, sizeof(*want.v), cmp_line);	/* n >= 3 */
	qsort(got.v, got.n, sizeof(*got.v), cmp_line);
	for (i = 0; i < want.n; i++)
		check(cmp_line(&want.v[i], &got.v[i]) == 0);

	/* A callback that says stop stops the scan, which returns its word. */
	if (want.n > 0) {
		stop.stop_after = want.n / 2 + 1;
		check(spool_audit_scan(sp, seen, &stop) == 7);
		check(stop.n == stop.stop_after);
	}

	rc = spool_fsck(sp, 0, say, &files);
	check(rc == 0 || rc == 1);

	free(want.v);
	free(files.v);
	free(got.v);
	free(got.text);
	free(stop.v);
	free(stop.text);
	free(text);
	return 0;
}
