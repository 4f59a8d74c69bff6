#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_report(const char *cmd, const char *what, hs_status st) {
  const char *detail = hs_last_error();
  fprintf(stderr, "hetsage %s: %s: %s%s%s\n", cmd, what, hs_strerror(st),
          detail[0] ? ": " : "", detail);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "hetsage %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'hetsage %s --help'.\n", cmd);
  return 2;
}

static volatile sig_atomic_t *stop_flag;

static void on_stop(int sig) {
  (void)sig;
  if (stop_flag) *stop_flag = 1;
}

void cli_catch_stop(volatile sig_atomic_t *flag) {
  stop_flag = flag;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

bool cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return true;
  return false;
}

bool cli_parse_u64(const char *s, uint64_t *out) {
  if (!s || !isdigit((unsigned char)*s)) return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return false;
  *out = (uint64_t)v;
  return true;
}

bool cli_parse_i64(const char *s, int64_t *out) {
  if (!s || !(isdigit((unsigned char)*s) || (*s == '-' && isdigit((unsigned char)s[1]))))
    return false;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *out = (int64_t)v;
  return true;
}

bool cli_parse_double(const char *s, double *out) {
  if (!s || !*s || isspace((unsigned char)*s)) return false;
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return false;
  *out = v;
  return true;
}

bool cli_parse_size(const char *s, uint64_t *out) {
  if (!s || *s == '-' || *s == '+') return false;
  return hs_harness_parse_size(s, out);
}

void cli_json_string(FILE *f, const char *s) { hs_harness_json_string(f, s); }

void cli_json_number(FILE *f, double x, int digits) {
  if (!isfinite(x)) fputs("null", f);
  else if (digits >= 0) fprintf(f, "%.*f", digits, x);
  else fprintf(f, "%.*g", -digits, x);
}

bool cli_opt_int(const char *cmd, const char *opt, const char *v, int64_t lo, int64_t hi,
                 int64_t *out) {
  int64_t x;
  if (cli_parse_i64(v, &x) && x >= lo && x <= hi) {
    *out = x;
    return true;
  }
  cli_usage_error(cmd, "%s '%s': expected an integer in [%" PRId64 ", %" PRId64 "]", opt, v,
                  lo, hi);
  return false;
}

bool cli_opt_u64(const char *cmd, const char *opt, const char *v, uint64_t lo, uint64_t hi,
                 uint64_t *out) {
  uint64_t x;
  if (cli_parse_u64(v, &x) && x >= lo && x <= hi) {
    *out = x;
    return true;
  }
  cli_usage_error(cmd, "%s '%s': expected an integer in [%" PRIu64 ", %" PRIu64 "]", opt, v,
                  lo, hi);
  return false;
}

bool cli_opt_number(const char *cmd, const char *opt, const char *v, double lo, bool lo_open,
                    double hi, bool hi_open, double *out) {
  double x;
  if (cli_parse_double(v, &x) && (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi)) {
    *out = x;
    return true;
  }
  char h[32];
  if (isinf(hi)) snprintf(h, sizeof h, "inf");
  else snprintf(h, sizeof h, "%g", hi);
  cli_usage_error(cmd, "%s '%s': expected a number in %c%g, %s%c", opt, v, lo_open ? '(' : '[',
                  lo, h, hi_open || isinf(hi) ? ')' : ']');
  return false;
}

bool cli_opt_choice(const char *cmd, const char *opt, const char *v, const char *const *names,
                    int n, int *out) {
  for (int i = 0; i < n; i++)
    if (strcmp(v, names[i]) == 0) {
      *out = i;
      return true;
    }
  char list[256] = "";
  for (int i = 0; i < n; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
             i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
  cli_usage_error(cmd, "%s '%s': expected %s", opt, v, list);
  return false;
}

int cli_list_each(const char *s, bool (*fn)(void *ctx, const char *item, int index), void *ctx) {
  if (!s || !*s) return -1;
  int n = 0;
  for (const char *p = s;; n++) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[64];
    if (len == 0 || len >= sizeof item) return -1;
    memcpy(item, p, len);
    item[len] = '\0';
    if (!fn(ctx, item, n)) return -1;
    if (!comma) return n + 1;
    p = comma + 1;
  }
}

static bool report_write(const char *cmd, const char *path, int err) {
  /* A write that failed earlier, while the buffer filled, leaves the
   * stream's error flag but not its errno. */
  fprintf(stderr, "hetsage %s: writing %s: %s\n", cmd, path,
          err ? strerror(err) : "a write failed (a full disk, a closed pipe?): output is lost");
  return false;
}

FILE *cli_fopen_regular(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat sb;
  int flags = fcntl(fd, F_GETFL);
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || flags < 0 ||
      fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  FILE *f = fdopen(fd, "r");
  if (!f) close(fd);
  return f;
}

bool cli_file_check(const char *cmd, FILE *f, const char *path) {
  errno = 0;
  if (fflush(f) == 0 && !ferror(f)) return true;
  int err = errno;
  return report_write(cmd, path, err);
}

bool cli_file_close(const char *cmd, FILE *f, const char *path) {
  errno = 0;
  bool ok = fflush(f) == 0 && !ferror(f);
  int err = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  return ok || report_write(cmd, path, err);
}

int cli_exit(const char *cmd, int rc) {
  bool ok = cli_file_close(cmd, stdout, "standard output");
  return rc == 0 && !ok ? 1 : rc;
}

typedef struct fanout_ctx {
  int32_t *out;
  int cap;
} fanout_ctx;

static bool fanout_item(void *ctx, const char *item, int index) {
  fanout_ctx *c = ctx;
  int64_t x;
  if (index >= c->cap || !cli_parse_i64(item, &x) || x == 0 || x < -1 || x > HS_MAX_FANOUT)
    return false;
  c->out[index] = (int32_t)x;
  return true;
}

int cli_parse_fanouts(const char *s, int32_t *out, int cap) {
  fanout_ctx c = {out, cap};
  return cli_list_each(s, fanout_item, &c);
}

typedef struct id_list {
  int64_t *ids;
  int64_t n;
  size_t cap;
} id_list;

static bool id_item(void *ctx, const char *item, int index) {
  (void)index;
  id_list *l = ctx;
  int64_t v;
  if (!cli_parse_i64(item, &v) || v < 0 || v > INT32_MAX) return false;
  if ((size_t)l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    int64_t *g = realloc(l->ids, cap * sizeof *g);
    if (!g) return false;
    l->ids = g;
    l->cap = cap;
  }
  l->ids[l->n++] = v;
  return true;
}

bool cli_parse_id_list(const char *s, int64_t **ids, int64_t *n) {
  id_list l = {0};
  *ids = NULL;
  *n = 0;
  if (cli_list_each(s, id_item, &l) < 1) {
    free(l.ids);
    return false;
  }
  *ids = l.ids;
  *n = l.n;
  return true;
}

void cli_parent_dir(const char *path, char *dir, size_t cap) {
  snprintf(dir, cap, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir) slash[1] = '\0';
  else if (slash) *slash = '\0';
  else snprintf(dir, cap, ".");
}

bool cli_writable(const char *cmd, const char *opt, const char *path) {
  if (access(path, F_OK) == 0) {
    if (access(path, W_OK) == 0) return true;
  } else {
    char dir[4200];
    cli_parent_dir(path, dir, sizeof dir);
    if (access(dir, W_OK | X_OK) == 0) return true;
  }
  fprintf(stderr, "hetsage %s: %s %s: cannot write: %s\n", cmd, opt, path, strerror(errno));
  return false;
}

bool cli_remove_files(const char *cmd, const char *opt, const char *const *paths, int n) {
  for (int k = 0; k < n; k++)
    if (unlink(paths[k]) != 0 && errno != ENOENT) {
      fprintf(stderr, "hetsage %s: %s: cannot remove %s: %s\n", cmd, opt, paths[k],
              strerror(errno));
      return false;
    }
  return true;
}

bool cli_best_write(const char *cmd, const char *dir, const char *key, double valid,
                    int64_t epoch) {
  char path[4200], tmp[4220];
  snprintf(path, sizeof path, "%s/best.json", dir);
  snprintf(tmp, sizeof tmp, "%s/best.json.tmp", dir);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    fprintf(stderr, "hetsage %s: cannot write %s: %s\n", cmd, tmp, strerror(errno));
    return false;
  }
  fprintf(f, "{\"%s\": ", key);
  cli_json_number(f, valid, 6);
  fprintf(f, ", \"epoch\": %lld}\n", (long long)epoch + 1);
  if (!cli_file_close(cmd, f, tmp)) return false;
  if (rename(tmp, path) != 0) {
    fprintf(stderr, "hetsage %s: cannot rename %s: %s\n", cmd, tmp, strerror(errno));
    return false;
  }
  return true;
}

double cli_best_read(const char *dir, const char *key) {
  char path[4200], text[256] = "", want[64];
  snprintf(path, sizeof path, "%s/best.json", dir);
  snprintf(want, sizeof want, "\"%s\": ", key);
  FILE *f = cli_fopen_regular(path);
  if (!f) return -1;
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  double v;
  const char *at = strstr(text, want);
  return at && sscanf(at + strlen(want), "%lf", &v) == 1 && isfinite(v) ? v : -1;
}
