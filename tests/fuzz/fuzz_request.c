/*
 * spool-batch's request lines (bin/request.c): any bytes, in words or as
 * JSON.  The input's first byte picks the grammar (even: words, odd:
 * JSON); the rest is the line, in a buffer of exactly its length and one
 * byte more, as spool-batch gives it.  A refusal must say why.  Words
 * must lie in the line, in order, apart; a word of the words grammar
 * holds no control character but a tab.  Then each word list is written
 * back, every word quoted (JSON: escaped), and read again: the same
 * words must come back.
 */
#include "fuzz.h"	/* first: it sets _GNU_SOURCE */

#include "../../bin/request.c"

static char *words[REQ_WORDS_MAX], *again[REQ_WORDS_MAX];

/* words[0..n) written back in the grammar; its length. */
static size_t
write_back(char *out, int json, char **w, size_t n)
{
	size_t i, len = 0;
	const char *s;

	if (json)
		out[len++] = '[';
	for (i = 0; i < n; i++) {
		if (i > 0)
			out[len++] = json ? ',' : ' ';
		out[len++] = '"';
		for (s = w[i]; *s != '\0'; s++) {
			if (json && (unsigned char)*s < ' ') {
				len += (size_t)sprintf(out + len, "\\u%04x",
				    (unsigned char)*s);
				continue;
			}
			if (*s == '"' || *s == '\\')
				out[len++] = '\\';
			out[len++] = *s;
		}
		out[len++] = '"';
	}
	if (json)
		out[len++] = ']';
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	char *line, *back;
	size_t n, m, i, len, blen;
	int json;

	if (size < 1 || size - 1 > REQ_LINE_MAX)
		return 0;
	json = data[0] & 1;
	len = size - 1;
	check((line = malloc(len + 1)) != NULL);
	memcpy(line, data + 1, len);
	if (req_words(line, len, json, words, REQ_WORDS_MAX, &n, &why) == -1) {
		check(why != NULL && *why != '\0');
		free(line);
		return 0;
	}
	check(n <= REQ_WORDS_MAX);
	for (i = 0; i < n; i++) {
		check(words[i] >= line && words[i] <= line + len);
		check(strlen(words[i]) <= (size_t)(line + len - words[i]));
		if (i > 0)
			check(words[i] > words[i - 1] + strlen(words[i - 1]));
		if (!json)
			for (const char *s = words[i]; *s != '\0'; s++)
				check((unsigned char)*s >= ' ' || *s == '\t');
	}
	/* Each byte at most six more (\u00XX), two quotes and a separator. */
	check((back = malloc(len * 6 + 4 * n + 4)) != NULL);
	blen = write_back(back, json, words, n);
	check(req_words(back, blen, json, again, REQ_WORDS_MAX, &m, &why) == 0);
	check(m == n);
	for (i = 0; i < n; i++)
		check(strcmp(words[i], again[i]) == 0);
	free(back);
	free(line);
	return 0;
}
