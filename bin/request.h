/*
 * spool-batch's requests: a line cut into its words, as spool-batch(1),
 * "Requests", defines them.  Pure: no I/O, no allocation, no library
 * call, so that a fuzzer can run it alone (tests/fuzz/fuzz_request.c).
 */
#ifndef SPOOL_REQUEST_H
#define SPOOL_REQUEST_H

#include <stddef.h>

#define REQ_LINE_MAX	65536	/* longest request line, without its newline */
#define REQ_WORDS_MAX	1024	/* most words in a request */

/*
 * Cut line[0..len) into words, in place: words[0..*n) point into line, each
 * ended by a NUL.  json 0: words are separated by spaces and tabs, and a
 * part between double quotes keeps its spaces, where \" and \\ stand for "
 * and \.  json 1: the line is a JSON array of strings.  line has room for
 * len + 1 bytes: the last word's NUL may fall at line[len].  0, or -1
 * with *why saying what is wrong in a few words; line is then garbled.
 */
int req_words(char *line, size_t len, int json, char **words, size_t max,
    size_t *n, const char **why);

#endif
