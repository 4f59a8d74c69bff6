/* Output shared by the dataset commands (convert, generate, stats). */
#ifndef HS_CLI_DATA_H
#define HS_CLI_DATA_H

#include <stdio.h>

#include "hetsage.h"

/* "1.5 GiB" style text of a byte count into buf. */
const char *cli_bytes(char *buf, size_t cap, uint64_t bytes);
/* One-paragraph human summary of a dataset. */
void cli_info_print(FILE *f, const char *path, const hs_dataset_info *info);
/* The JSON members (no braces) describing a dataset, indented by two. */
void cli_info_json(FILE *f, const hs_dataset_info *info);
/* Progress callback printing "hetsage <cmd>: <line>" to stderr. */
void cli_progress(void *cmd_name, const char *line);
/* Parse "a,b,c" split fractions. */
bool cli_parse_split(const char *s, double out[3]);

#endif
