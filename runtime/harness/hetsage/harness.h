/* hetsage harness — what the command-line tools share with the library
 * beside the public API: JSON strings, sizes and XML text, written and read
 * the one way the library does. Part of libhetsage-harness (bring-up and
 * the benchmarks, hetsage/bringup.h and hetsage/bench.h), which the tools
 * link; not part of libhetsage. */
#ifndef HETSAGE_HARNESS_H
#define HETSAGE_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `s` as a JSON string literal (quotes and escapes). */
void hs_harness_json_string(FILE *f, const char *s);
/* `s` as XML or HTML text (markup as entities). */
void hs_harness_xml_text(FILE *f, const char *s);
/* Bytes with an optional K, M, G or T suffix (powers of 1024; "Ki", "KiB",
 * "KB" too), as board profiles and HETSAGE_MAX_ALLOC take them; false for
 * anything else. */
bool hs_harness_parse_size(const char *s, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
