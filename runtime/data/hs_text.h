/* Line-oriented reading of text inputs (plain or gzip, through zlib, or a
 * memory buffer for the fuzzers), with positions for error messages
 * ("file:line:column: what"), and strict number parsing. */
#ifndef HS_TEXT_H
#define HS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "hetsage/dataset.h"
#include "hs_base.h"

/* Longest line accepted (a one-line JSON file counts as one line). */
#define HS_TEXT_MAX_LINE ((size_t)1 << 30)

typedef struct hs__text {
  char *name;          /* for messages */
  gzFile gz;           /* NULL for a memory source */
  const char *mem;
  size_t mem_len, mem_pos;
  char *buf;
  size_t cap, start, end;
  bool eof;
  char *line;          /* current line, NUL-terminated, no "\n" or "\r\n" */
  size_t len;
  uint64_t lineno;     /* 1-based number of the current line */
  uint64_t bytes;      /* uncompressed bytes consumed so far */
  hs_progress_fn progress;
  void *progress_ctx;
} hs__text;

/* Open `path` (gzip or plain: zlib reads both). If `path` does not exist
 * and "`path`.gz" does, that is opened instead. */
hs_status hs__text_open(hs__text *t, const char *path);
/* Read from memory; `name` is used in messages. `data` must outlive t. */
hs_status hs__text_open_mem(hs__text *t, const char *name, const void *data, size_t len);
void hs__text_close(hs__text *t);

/* Next line into t->line / t->len: 1 if a line was read, 0 at the end,
 * -1 on error (*st set). A NUL byte in a line is an error. */
int hs__text_next(hs__text *t, hs_status *st);

/* Read the whole remaining input into a new NUL-terminated buffer. */
hs_status hs__text_slurp(hs__text *t, char **out, size_t *len);

/* HS_ERR_FORMAT with "name:line:column: " and the message; `at` points
 * into t->line (NULL: the end of the line). */
hs_status hs__text_fail(const hs__text *t, const char *at, const char *fmt, ...)
    HS_PRINTF(3, 4);

/* The same with another status (HS_ERR_UNSUPPORTED for ids past int32). */
hs_status hs__text_fail_status(const hs__text *t, hs_status st, const char *at,
                               const char *fmt, ...) HS_PRINTF(4, 5);

/* Position "name:line:col" of `at` inside an arbitrary buffer `base`. */
hs_status hs__text_fail_in(const char *name, const char *base, const char *at,
                           const char *fmt, ...) HS_PRINTF(4, 5);

/* Strict parsers over [*p, end): advance *p past what they consumed;
 * false (and *p unchanged) if there is no valid number there. */
bool hs__parse_i64(const char **p, const char *end, int64_t *out);
/* A finite or non-finite float ("nan", "inf" too); finiteness is the
 * caller's rule. Exact (same as strtof) for every input. */
bool hs__parse_f32(const char **p, const char *end, float *out);

static inline bool hs__is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Skip spaces and tabs. */
static inline const char *hs__skip_ws(const char *p, const char *end) {
  while (p < end && hs__is_space(*p)) p++;
  return p;
}

#endif
