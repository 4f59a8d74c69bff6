/* hetsage convert --from criteo: Criteo-layout text as array sets (NumPy
 * .npy files that training reads without parsing). */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_ctr.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage convert --from criteo [options] SRC DST\n"
          "\n"
          "Write Criteo-layout examples (label, 13 integers, 26 hexadecimal ids; plain or\n"
          "gzip) as array sets in NumPy's .npy format, which 'train', 'eval' and 'predict\n"
          "--task ctr' read without parsing text, to the same bits:\n"
          "  NAME_label.npy  int32 [N], 0 or 1\n"
          "  NAME_dense.npy  float32 [N, 13], the integers as log(1 + x) (0 if missing)\n"
          "  NAME_ids.npy    int64 [N, 26], the ids (-1 where missing)\n"
          "SRC is a folder from 'generate --kind ctr' (its train, valid and test files\n"
          "become the sets train, valid and test; its meta.json is copied) or one file\n"
          "(NAME is its name without .gz and .txt). DST is a new folder, written as\n"
          "DST.tmp-XXXXXX and renamed into place when complete: nothing is left behind\n"
          "on failure. '--data DST' then names the sets as it names the text files.\n"
          "\n"
          "options:\n"
          "  --from criteo          this format (required)\n"
          "  --force                replace an existing DST\n"
          "  --json                 print the summary as JSON on stdout\n"
          "  --quiet                no progress lines on stderr\n"
          "\n"
          "Each file is read twice (counting, then writing). Ctrl-C or SIGTERM stops it\n"
          "and removes the temporary. Exit status: 0 done, 1 failed, 2 usage error (bad\n"
          "options, DST exists without --force), 130 interrupted.\n");
}

typedef struct progress_ctx {
  const char *name;
  bool quiet;
} progress_ctx;

static void progress(void *user, int pass, int64_t examples) {
  const progress_ctx *p = user;
  if (!p->quiet)
    fprintf(stderr, "hetsage convert: %s: %s %" PRId64 " examples\n", p->name,
            pass == 1 ? "counted" : "wrote", examples);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static void rm_tree(const char *path) { nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

static bool copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
  bool ok = in && out;
  char buf[65536];
  for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;) ok = fwrite(buf, 1, n, out) == n;
  if (in) {
    ok = ok && !ferror(in);
    fclose(in);
  }
  if (out) ok = fclose(out) == 0 && ok;
  return ok;
}

int cmd_convert_criteo(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  const char *cmd = "convert";
  bool force = false, json = false, quiet = false;
  const char *pos[2];
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--from") == 0 && i + 1 < argc) i++; /* criteo: the caller checked */
    else if (strcmp(a, "--force") == 0) force = true;
    else if (strcmp(a, "--json") == 0) json = true;
    else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) quiet = true;
    else if (a[0] == '-' && a[1]) return cli_usage_error(cmd, "unknown option '%s' for --from criteo", a);
    else if (npos == 2) return cli_usage_error(cmd, "unexpected argument '%s'", a);
    else pos[npos++] = a;
  }
  if (npos != 2) return cli_usage_error(cmd, "expected SRC and DST");
  const char *src = pos[0], *dst = pos[1];
  struct stat ss, ds;
  if (stat(src, &ss) != 0) {
    fprintf(stderr, "hetsage %s: %s: %s\n", cmd, src, strerror(errno));
    return 1;
  }
  if (stat(dst, &ds) == 0 && !force)
    return cli_usage_error(cmd, "%s exists (--force replaces it)", dst);
  /* the sets to write: NAME and its text file */
  const char *names[3];
  char *files[3] = {0}, *own_name = NULL;
  int n = 0;
  if (S_ISDIR(ss.st_mode)) {
    const char *split[3] = {"train", "valid", "test"};
    for (int k = 0; k < 3; k++)
      if ((files[n] = cli_ctr_split_file(src, split[k], false))) names[n++] = split[k];
    if (!n) {
      fprintf(stderr, "hetsage %s: %s: a folder without train.txt, valid.txt or test.txt (.gz)\n",
              cmd, src);
      return 1;
    }
  } else {
    char *copy = strdup(src);
    own_name = copy ? strdup(basename(copy)) : NULL;
    free(copy);
    files[0] = strdup(src);
    if (!own_name || !files[0]) {
      free(own_name);
      free(files[0]);
      fprintf(stderr, "hetsage %s: out of memory\n", cmd);
      return 1;
    }
    size_t l = strlen(own_name);
    if (l > 3 && !strcmp(own_name + l - 3, ".gz")) own_name[l -= 3] = '\0';
    if (l > 4 && !strcmp(own_name + l - 4, ".txt")) own_name[l -= 4] = '\0';
    names[n++] = own_name;
  }
  /* the temporary folder: DST.tmp- and mkdtemp's six characters */
  size_t tl = strlen(dst) + 16;
  char *tmp = malloc(tl);
  int rc = 0;
  if (tmp) snprintf(tmp, tl, "%s.tmp-XXXXXX", dst);
  bool made = tmp && mkdtemp(tmp);
  if (!made) {
    fprintf(stderr, "hetsage %s: %s: cannot create a temporary folder beside it: %s\n", cmd, dst,
            tmp ? strerror(errno) : "out of memory");
    rc = 1;
  }
  static volatile sig_atomic_t stop;
  cli_catch_stop(&stop);
  int64_t count[3] = {0};
  for (int k = 0; rc == 0 && k < n; k++) {
    size_t pl = strlen(tmp) + strlen(names[k]) + 2;
    char *prefix = malloc(pl);
    if (!prefix) {
      rc = 1;
      break;
    }
    snprintf(prefix, pl, "%s/%s", tmp, names[k]);
    progress_ctx pc = {.name = files[k], .quiet = quiet};
    const char *one[1] = {files[k]};
    hs_status st = hs_ctr_write_arrays(one, 1, prefix, progress, &pc, &stop, &count[k]);
    free(prefix);
    if (st == HS_ERR_INTERRUPTED) {
      fprintf(stderr, "hetsage %s: interrupted: nothing was written\n", cmd);
      rc = 130;
    } else if (st != HS_OK) {
      cli_report(cmd, files[k], st);
      rc = 1;
    } else if (!quiet) {
      fprintf(stderr, "hetsage %s: %s: %" PRId64 " examples as %s_*.npy\n", cmd, files[k],
              count[k], names[k]);
    }
  }
  if (rc == 0 && S_ISDIR(ss.st_mode)) {
    size_t l1 = strlen(src) + 16, l2 = strlen(tmp) + 16;
    char *m1 = malloc(l1), *m2 = malloc(l2);
    if (m1 && m2) {
      snprintf(m1, l1, "%s/meta.json", src);
      snprintf(m2, l2, "%s/meta.json", tmp);
      if (access(m1, R_OK) == 0 && !copy_file(m1, m2)) {
        fprintf(stderr, "hetsage %s: %s: cannot copy it: %s\n", cmd, m1, strerror(errno));
        rc = 1;
      }
    }
    free(m1);
    free(m2);
  }
  if (rc == 0 && stat(dst, &ds) == 0) rm_tree(dst); /* --force */
  if (rc == 0 && rename(tmp, dst) != 0) {
    fprintf(stderr, "hetsage %s: %s: cannot rename into place: %s\n", cmd, dst, strerror(errno));
    rc = 1;
  }
  if (rc != 0 && made) rm_tree(tmp);
  if (rc == 0) {
    if (json) {
      printf("{\n  \"path\": ");
      cli_json_string(stdout, dst);
      printf(",\n  \"sets\": [");
      for (int k = 0; k < n; k++) {
        printf("%s\n    {\"name\": ", k ? "," : "");
        cli_json_string(stdout, names[k]);
        printf(", \"source\": ");
        cli_json_string(stdout, files[k]);
        printf(", \"examples\": %" PRId64 "}", count[k]);
      }
      printf("\n  ]\n}\n");
    } else {
      for (int k = 0; k < n; k++)
        printf("%s/%s_{label,dense,ids}.npy: %" PRId64 " examples of %s\n", dst, names[k],
               count[k], files[k]);
    }
  }
  for (int k = 0; k < n; k++) free(files[k]);
  free(own_name);
  free(tmp);
  return rc;
}
