/* bench_data: dataset layer throughput, each figure beside its same-run
 * limit (docs/architecture.md, "Measuring").
 *
 *  open_validate  hs_dataset_open (map + check every rule) of a native
 *                 dataset, against a plain sequential read() loop over the
 *                 same files (the ones open reads: everything but feat.npy),
 *                 page cache warm. ratio = read time / open time (goal >= 0.5).
 *  importers      hs_convert throughput in MB/s of input text (LINQS on Cora,
 *                 MUSAE on Facebook when present), end to end (parse, build,
 *                 write and fsync the dataset, validate it) and parse only,
 *                 against reading the same input (through zlib when gzipped)
 *                 without parsing.
 *
 * usage: bench_data [--dataset DIR] [--small] [--runs N] [--keep]
 * Without --dataset, an ogbn-products-scale SBM (2449029 vertices, 61859140
 * drawn edges stored both ways, 100 features) is generated into $TMPDIR
 * first (--small: 2^18 vertices). Prints JSON on stdout. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/hs_engine.h"
#include "hetsage.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct stats {
  double median, min, max;
} stats;

static stats summarize(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  stats s = {n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, t[0], t[n - 1]};
  return s;
}

static int rm_cb(const char *p, const struct stat *sb, int f, struct FTW *w) {
  (void)sb;
  (void)f;
  (void)w;
  return remove(p);
}

static void rmtree(const char *p) { nftw(p, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

/* Sequential read() of whole files into a reused 1 MiB buffer. */
static uint64_t read_files(char **paths, int n, bool gz) {
  static char buf[1 << 20];
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    if (gz) {
      gzFile f = gzopen(paths[i], "rb");
      if (!f) continue;
      gzbuffer(f, 1 << 17);
      int r;
      while ((r = gzread(f, buf, sizeof buf)) > 0) total += (uint64_t)r;
      gzclose(f);
      continue;
    }
    int fd = open(paths[i], O_RDONLY);
    if (fd < 0) continue;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0) total += (uint64_t)r;
    close(fd);
  }
  return total;
}

static void progress(void *ctx, const char *line) {
  (void)ctx;
  fprintf(stderr, "bench_data: %s\n", line);
}

static int runs = 7;

static char *join(const char *a, const char *b) {
  size_t l = strlen(a) + strlen(b) + 2;
  char *p = malloc(l);
  if (!p) {
    fprintf(stderr, "bench_data: out of memory\n");
    exit(1);
  }
  snprintf(p, l, "%s/%s", a, b);
  return p;
}

/* The files hs_dataset_open reads. */
static int open_files(const char *dir, char **paths) {
  static const char *const names[] = {"indptr.npy", "indices.npy", "weights.npy", "label.npy",
                                      "train_idx.npy", "valid_idx.npy", "test_idx.npy"};
  int n = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *p = join(dir, names[i]);
    struct stat sb;
    if (stat(p, &sb) == 0) paths[n++] = p;
    else free(p);
  }
  return n;
}

static int bench_open(const char *dir, const hs_dataset_info *info) {
  char *paths[8];
  int n = open_files(dir, paths);
  uint64_t bytes = read_files(paths, n, false); /* warms the page cache */
  double tr[64], to[64];
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    read_files(paths, n, false);
    tr[r] = now() - t0;
    hs_dataset *ds;
    t0 = now();
    hs_status st = hs_dataset_open(dir, &ds);
    to[r] = now() - t0;
    if (st) {
      fprintf(stderr, "bench_data: %s: %s\n", hs_strerror(st), hs_last_error());
      return 1;
    }
    hs_dataset_close(ds);
  }
  stats sr = summarize(tr, runs), so = summarize(to, runs);
  printf("  \"dataset\": {\"path\": \"%s\", \"vertices\": %" PRId64 ", \"edges\": %" PRId64
         ", \"features\": %" PRId64 ", \"feature_bytes\": %" PRIu64 "},\n",
         dir, info->num_vertices, info->num_edges, info->num_features, info->feature_bytes);
  printf("  \"open_validate\": {\"bytes\": %" PRIu64 ", \"runs\": %d, \"median_s\": %.4f, "
         "\"min_s\": %.4f, \"max_s\": %.4f, \"gb_per_s\": %.2f},\n",
         bytes, runs, so.median, so.min, so.max, (double)bytes / so.median / 1e9);
  printf("  \"read_loop_limit\": {\"bytes\": %" PRIu64 ", \"median_s\": %.4f, \"min_s\": %.4f, "
         "\"max_s\": %.4f, \"gb_per_s\": %.2f},\n",
         bytes, sr.median, sr.min, sr.max, (double)bytes / sr.median / 1e9);
  printf("  \"open_validate_ratio\": %.3f,\n  \"open_validate_goal\": 0.5,\n",
         sr.median / so.median);
  for (int i = 0; i < n; i++) free(paths[i]);
  return 0;
}

/* Input files of an import, with whether they are gzip. */
static void bench_import(const char *name, hs_import_format fmt, const char *src, char **inputs,
                         int ninputs, bool gz, bool undirected, bool first) {
  const char *tmp = getenv("TMPDIR");
  char root[256];
  snprintf(root, sizeof root, "%s/hs-bench-imp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(root)) return;
  char dst[300];
  snprintf(dst, sizeof dst, "%s/out", root);
  uint64_t bytes = read_files(inputs, ninputs, gz);
  double ti[64], tr[64], tp[64];
  hs_convert_opts o;
  hs_convert_opts_init(&o, fmt);
  o.undirected = o.dedup = undirected;
  o.force = true;
  int ok = 0;
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    read_files(inputs, ninputs, gz);
    tr[r] = now() - t0;
    t0 = now();
    hs__imported imp;
    memset(&imp, 0, sizeof imp);
    hs_status st = fmt == HS_IMPORT_LINQS ? hs__import_linqs(src, &o, &imp)
                                          : hs__import_musae(src, &o, &imp);
    tp[r] = now() - t0;
    hs__imported_free(&imp);
    if (st) {
      fprintf(stderr, "bench_data: %s: %s: %s\n", name, hs_strerror(st), hs_last_error());
      break;
    }
    t0 = now();
    st = hs_convert(src, dst, &o, NULL);
    ti[r] = now() - t0;
    if (st) {
      fprintf(stderr, "bench_data: %s: %s: %s\n", name, hs_strerror(st), hs_last_error());
      break;
    }
    ok++;
  }
  rmtree(root);
  if (!ok) return;
  stats si = summarize(ti, ok), sr = summarize(tr, ok), sp = summarize(tp, ok);
  printf("%s    {\"name\": \"%s\", \"input_bytes\": %" PRIu64 ", \"gzip\": %s, \"runs\": %d,\n"
         "     \"convert\": {\"median_s\": %.4f, \"min_s\": %.4f, \"max_s\": %.4f, \"mb_per_s\": %.1f},\n"
         "     \"parse_only\": {\"median_s\": %.4f, \"min_s\": %.4f, \"max_s\": %.4f, \"mb_per_s\": %.1f},\n"
         "     \"read_limit_mb_per_s\": %.1f, \"convert_ratio\": %.4f, \"parse_ratio\": %.4f}",
         first ? "" : ",\n", name, bytes, gz ? "true" : "false", ok, si.median, si.min, si.max,
         (double)bytes / si.median / 1e6, sp.median, sp.min, sp.max, (double)bytes / sp.median / 1e6,
         (double)bytes / sr.median / 1e6, sr.median / si.median, sr.median / sp.median);
}

static bool exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

int main(int argc, char **argv) {
  const char *dataset = NULL;
  bool small = false, keep = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--dataset") == 0 && i + 1 < argc) dataset = argv[++i];
    else if (strcmp(argv[i], "--small") == 0) small = true;
    else if (strcmp(argv[i], "--keep") == 0) keep = true;
    else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_data [--dataset DIR] [--small] [--runs N] [--keep]\n");
      return 2;
    }
  }
  if (runs < 1 || runs > 64) runs = 7;
  char gen_dir[256] = "";
  if (!dataset) {
    const char *tmp = getenv("TMPDIR");
    snprintf(gen_dir, sizeof gen_dir, "%s/hs-bench-data-%d", tmp && *tmp ? tmp : "/tmp",
             (int)getpid());
    hs_generate_opts g;
    hs_generate_opts_init(&g, HS_GENERATE_SBM);
    g.num_vertices = small ? 1 << 18 : 2449029;
    g.num_edges = small ? 16 << 18 : 61859140;
    g.num_classes = 47;
    g.num_features = 100;
    g.progress = progress;
    if (hs_generate(gen_dir, &g, NULL, NULL) != HS_OK) {
      fprintf(stderr, "bench_data: generate: %s\n", hs_last_error());
      return 1;
    }
    dataset = gen_dir;
  }
  hs_dataset *ds;
  if (hs_dataset_open(dataset, &ds) != HS_OK) {
    fprintf(stderr, "bench_data: %s\n", hs_last_error());
    return 1;
  }
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(ds, &info);
  hs_dataset_close(ds);
  printf("{\n  \"bench\": \"data\",\n  \"device\": \"host\",\n");
  int rc = bench_open(dataset, &info);
  if (gen_dir[0] && !keep) rmtree(gen_dir);
  if (rc) return rc;

  printf("  \"importers\": [\n");
  bool first = true;
  const char *shared = getenv("HS_SHARED_DATASETS");
  const char *srcroot = getenv("HS_SOURCE_ROOT");
  char *cora = shared ? join(shared, "cora") : NULL;
  char *cc = cora ? join(cora, "cora.content") : NULL;
  if (cc && exists(cc)) {
    char *in[2] = {cc, join(cora, "cora.cites")};
    bench_import("linqs/cora", HS_IMPORT_LINQS, cora, in, 2, false, true, first);
    first = false;
    free(in[1]);
  }
  char *shipped = join(srcroot ? srcroot : ".", "data/cora");
  char *sc = join(shipped, "cora.content.gz");
  if (exists(sc)) {
    char *in[2] = {sc, join(shipped, "cora.cites.gz")};
    bench_import("linqs/cora.gz", HS_IMPORT_LINQS, shipped, in, 2, true, true, first);
    first = false;
    free(in[1]);
  }
  char *fb = shared ? join(shared, "musae_facebook") : NULL;
  char *fe = fb ? join(fb, "edges/facebook_edges.csv") : NULL;
  if (fe && exists(fe)) {
    char *in[3] = {fe, join(fb, "features/facebook.json"), join(fb, "target/facebook_target.csv")};
    bench_import("musae/facebook", HS_IMPORT_MUSAE, fb, in, 3, false, true, first);
    free(in[1]);
    free(in[2]);
  }
  printf("\n  ]\n}\n");
  free(cora);
  free(cc);
  free(shipped);
  free(sc);
  free(fb);
  free(fe);
  return 0;
}
