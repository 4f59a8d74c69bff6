/* hetsage — datasets: the native format, importers, the generator, stats.
 *
 * A native dataset is a directory of NumPy .npy files (docs/architecture.md, "Datasets"):
 *
 *   indptr.npy              int64 (or int32) [N+1]   CSR offsets, required
 *   indices.npy             int32 or int64 [E]       neighbour ids, required
 *   weights.npy             float32 [E]              optional, finite
 *   feat.npy                float32 or float16 [N,F] optional, memory-mapped
 *   -- or the same features stored sparse (CSR, scipy.sparse.csr_matrix's
 *      arrays; a dataset holds one form or the other, never both):
 *   feat_shape.npy          int64 (or int32) [2]      (N, F)
 *   feat_indptr.npy         int64 (or int32) [N+1]    row offsets
 *   feat_indices.npy        int32 or int64 [nnz]      column ids
 *   feat_values.npy         float32 or float16 [nnz]  optional: absent, every
 *                                                     stored entry is 1 (binary
 *                                                     bag-of-words features)
 *   label.npy               int32 or int64 [N]       optional; -1 = unlabelled
 *   train_idx.npy, valid_idx.npy, test_idx.npy
 *                           int32 or int64           optional vertex ids
 *
 * Row v of the CSR (indices[indptr[v] .. indptr[v+1])) lists the vertices v
 * draws its neighbourhood from: for a directed source edge u -> w, w appears
 * in row u (scipy.sparse.csr_matrix of A[src, dst]). Importers and the
 * generator write each row sorted by id.
 *
 * Sparse features: row v's non-zeros are feat_indices[feat_indptr[v] ..
 * feat_indptr[v+1]) with values feat_values[...] (or 1). feat_indptr starts
 * at 0, never decreases and ends at nnz; column ids lie in [0, F) and are
 * strictly increasing within a row (sorted, no duplicate: scipy's canonical
 * format, X.sort_indices(); X.sum_duplicates()); values are finite. From
 * scipy: np.save("feat_shape.npy", X.shape); np.save("feat_indptr.npy",
 * X.indptr); np.save("feat_indices.npy", X.indices); np.save(
 * "feat_values.npy", X.data). Features that are mostly zeros (bag-of-words)
 * take less memory, less gather and link traffic, and a first layer that
 * multiplies only the non-zeros when stored this way. hs_dataset_open
 * checks every rule over the whole arrays. A session whose memory budget
 * the sparse arrays exceed reads the column ids and values from the files
 * through the sparse host tier (hs_session_config.memory_budget), which
 * checks each row again as it reads it (the files may change on disk) and
 * fails naming the file and the row.
 *
 * Labels are in [-1, C) where C = max label + 1 is the number of classes;
 * -1 marks an unlabelled vertex, which no split may contain. The three
 * splits are disjoint and free of repeats.
 *
 * .npy files must be C order, little-endian ('<' or '|'), format version
 * 1.0, 2.0 or 3.0 (what numpy.save writes). Vertex ids must fit in int32
 * (N < 2^31); the edge count may not.
 */
#ifndef HETSAGE_DATASET_H
#define HETSAGE_DATASET_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hetsage/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of the arrays of a dataset. */
typedef enum hs_dtype {
  HS_DTYPE_NONE = 0,
  HS_DTYPE_INT32 = 1,
  HS_DTYPE_INT64 = 2,
  HS_DTYPE_FLOAT32 = 3,
  HS_DTYPE_FLOAT16 = 4,
} hs_dtype;

/* "int32", "int64", "float32", "float16", or "none". */
HS_API const char *hs_dtype_name(hs_dtype dtype);

/* How features are stored (and, for writers, how to store them). */
typedef enum hs_feat_format {
  HS_FEAT_FORMAT_AUTO = 0,   /* writers: sparse when the density (non-zeros
                              * over N x F) is at most
                              * HS_FEAT_SPARSE_DENSITY, else dense */
  HS_FEAT_FORMAT_DENSE = 1,  /* feat.npy */
  HS_FEAT_FORMAT_SPARSE = 2, /* feat_shape/indptr/indices[/values].npy */
} hs_feat_format;

/* The density at or below which AUTO writes sparse features. Sparse rows
 * cost 4 bytes per non-zero (8 with values) against 4 per column dense,
 * and the first layer's sparse products beat the dense GEMM by far more
 * than the byte ratio at bag-of-words densities (around 1%); at 10% the
 * dense GEMM's higher rate per multiply-add has about caught up. */
#define HS_FEAT_SPARSE_DENSITY 0.10

/* "auto", "dense", "sparse", or "unknown". */
HS_API const char *hs_feat_format_name(hs_feat_format format);
/* Parse one of those names. HS_ERR_INVALID_ARG otherwise. */
HS_API hs_status hs_feat_format_parse(const char *name, hs_feat_format *out);

/* The three vertex splits, in file order. */
typedef enum hs_split {
  HS_SPLIT_TRAIN = 0,
  HS_SPLIT_VALID = 1,
  HS_SPLIT_TEST = 2,
  HS_SPLIT_COUNT_ = 3,
} hs_split;

/* An opened, validated dataset. */
typedef struct hs_dataset hs_dataset;

/* What a dataset holds. Byte footprints are what each role will hold:
 * topology_bytes on the sampler device (indptr as int64 + indices as int32
 * + weights as float32), feature_bytes in host memory or on disk (the
 * feat.npy payload, or the sparse arrays: offsets as int64, column ids as
 * int32, values), label_bytes beside them (labels as int32). */
typedef struct hs_dataset_info {
  size_t struct_size; /* set by hs_dataset_info_init */
  int64_t num_vertices;
  int64_t num_edges;
  int64_t num_features;     /* 0 when the dataset has no features */
  int32_t num_classes;      /* 0 when label.npy is absent */
  int64_t num_labelled;     /* vertices whose label is not -1 */
  hs_dtype feature_dtype;   /* HS_DTYPE_NONE without features; sparse:
                             * the values' type (float32 when binary) */
  hs_feat_format feature_format; /* DENSE or SPARSE (AUTO: no features) */
  bool feature_binary;      /* sparse without values: every non-zero is 1 */
  int64_t feature_nnz;      /* sparse: stored entries; dense: -1 (not read
                             * at open; hs_dataset_stats_compute counts) */
  bool has_weights;
  bool has_split[HS_SPLIT_COUNT_];
  int64_t split_size[HS_SPLIT_COUNT_];
  uint64_t topology_bytes;
  uint64_t feature_bytes;
  uint64_t label_bytes;
} hs_dataset_info;

/* Open and fully validate the native dataset in directory `dir`.
 * The topology, labels and splits are mapped (or, for int64 ids, converted
 * into int32 copies) and checked; feat.npy is memory-mapped read-only and
 * never read here, so datasets whose features exceed RAM open in the time
 * it takes to check the topology. The files must not be truncated or
 * rewritten while the dataset is open.
 * Ownership: `*out` belongs to the caller; release with hs_dataset_close.
 * `dir` is copied. Threading: a dataset is immutable once open, and may be
 * read from any number of threads (a session may add a copy of the
 * features on huge pages, once, under the dataset's lock: see
 * hs_session_config.feature_pages; free_host_topology is the exception and
 * says so).
 * Errors: HS_ERR_IO (a file cannot be opened or read), HS_ERR_FORMAT
 * (anything malformed: the detail names the file, the byte offset or element
 * index, and what was wrong), HS_ERR_UNSUPPORTED (N >= 2^31, a data offset
 * not aligned to the element size), HS_ERR_NOMEM, HS_ERR_INVALID_ARG. */
HS_API hs_status hs_dataset_open(const char *dir, hs_dataset **out);

/* Unmap and free. NULL is a no-op. */
HS_API void hs_dataset_close(hs_dataset *ds);

HS_API void hs_dataset_info_init_sized(hs_dataset_info *info, size_t struct_size);
static inline void hs_dataset_info_init(hs_dataset_info *info) {
  hs_dataset_info_init_sized(info, sizeof *info);
}

/* Fill `*out` (initialised with hs_dataset_info_init) with the dataset's
 * counts and footprints. Errors: HS_ERR_INVALID_ARG (NULL, a bad
 * struct_size). */
HS_API hs_status hs_dataset_get_info(const hs_dataset *ds, hs_dataset_info *out);

/* Degree and shape statistics of an opened dataset (out-degrees: row
 * lengths of the CSR); its counts are in hs_dataset_info. */
typedef struct hs_dataset_stats {
  size_t struct_size; /* set by hs_dataset_stats_init */
  int64_t degree_min;
  int64_t degree_median; /* the lower median */
  int64_t degree_p99;    /* smallest d with at least 99% of rows <= d */
  int64_t degree_max;
  double degree_mean;
  int64_t self_loops;    /* entries v in row v */
  int64_t isolated;      /* vertices with no entry in their row and in no row */
  int64_t class_size_max; /* vertices of the largest class (0 if unlabelled) */
  int64_t feature_nnz;    /* non-zero features (dense: counted) */
  double feature_density; /* feature_nnz / (N x F); 0 without features */
  int64_t feature_row_nnz_max; /* most non-zeros in one row */
  int64_t feature_nonfinite;   /* dense feature values that are NaN or infinite
                                * (opening refuses them in sparse ones) */
  int64_t feature_nonfinite_first; /* the first vertex with one, -1 if none */
} hs_dataset_stats;

HS_API void hs_dataset_stats_init_sized(hs_dataset_stats *stats, size_t struct_size);
static inline void hs_dataset_stats_init(hs_dataset_stats *stats) {
  hs_dataset_stats_init_sized(stats, sizeof *stats);
}

/* Compute statistics into `out` (initialised with hs_dataset_stats_init).
 * Reads the whole topology once, and dense features once to count their
 * non-zeros (sparse ones are counted by their offsets); allocates O(N)
 * temporary memory. Threading: safe to call concurrently on
 * the same dataset. Errors: HS_ERR_NOMEM, HS_ERR_INVALID_ARG. */
HS_API hs_status hs_dataset_stats_compute(const hs_dataset *ds,
                                          hs_dataset_stats *out);

/* ---- writing datasets: importers and the generator ------------------- */

/* Progress callback for long work: `what` is a short line ("reading
 * edges: 12.5M lines"). Called from the calling thread only. */
typedef void (*hs_progress_fn)(void *ctx, const char *what);

typedef enum hs_import_format {
  HS_IMPORT_LINQS = 1,    /* <name>.content + <name>.cites (LINQS Cora) */
  HS_IMPORT_MUSAE = 2,    /* edges/, features/, target/ folders */
  HS_IMPORT_OGB = 3,      /* OGB raw node-property directory */
  HS_IMPORT_EDGELIST = 4, /* SNAP-style whitespace edge list */
  HS_IMPORT_NATIVE = 5,   /* a native dataset, rewritten (e.g. its features
                           * turned from one form into the other) */
} hs_import_format;

/* Parse "linqs", "musae", "ogb", "edgelist", "native". HS_ERR_INVALID_ARG
 * otherwise. */
HS_API hs_status hs_import_format_parse(const char *name, hs_import_format *out);

typedef enum hs_self_loops {
  HS_SELF_LOOPS_KEEP = 0,
  HS_SELF_LOOPS_DROP = 1,
} hs_self_loops;

typedef struct hs_convert_opts {
  size_t struct_size; /* set by hs_convert_opts_init */
  hs_import_format from;
  bool undirected;        /* add the reverse of every edge */
  bool dedup;             /* drop repeated entries within a row */
  hs_self_loops self_loops;
  bool keep_ids;          /* edgelist: ids are vertex ids (N = max + 1);
                           * otherwise they are renumbered densely in order
                           * of first appearance */
  /* Split to make when the source has none (or always, with
   * split_override): stratified by class, fractions of each class's
   * labelled vertices, rounded to nearest; seeded by split_seed. A source
   * without labels gets no split. Set make_split = false to write none. */
  bool make_split;
  bool split_override;
  double split_frac[HS_SPLIT_COUNT_];
  uint64_t split_seed;
  bool force;             /* replace an existing destination dataset */
  /* How to store the features: AUTO measures the density. Sparse features
   * whose every non-zero is 1 are written without values (binary). */
  hs_feat_format feat_format;
  hs_progress_fn progress;
  void *progress_ctx;
  /* When not NULL and *stop becomes non-zero (a signal handler sets it),
   * the conversion stops at its next check (within a fraction of a second
   * of work), removes its temporary and returns HS_ERR_INTERRUPTED. */
  volatile sig_atomic_t *stop;
} hs_convert_opts;

/* Defaults: no undirected, no dedup, keep self-loops, renumber ids,
 * make_split with 0.6/0.2/0.2 and seed 0, no force, features AUTO, no
 * progress. */
HS_API void hs_convert_opts_init_sized(hs_convert_opts *opts, hs_import_format from,
                                       size_t struct_size);
static inline void hs_convert_opts_init(hs_convert_opts *opts, hs_import_format from) {
  hs_convert_opts_init_sized(opts, from, sizeof *opts);
}

/* Import `src` (a file or directory, by format) into a new native dataset
 * `dst`. The output is written to a temporary directory `dst.tmp-XXXXXX`
 * next to `dst` and renamed into place once complete; on any failure the
 * temporary is removed and `dst` is left as it was; temporaries
 * `dst.tmp-XXXXXX` of earlier runs that were killed are removed first (a
 * run in progress holds a lock on its own). The directory and its files
 * get the umask's mode. An existing `dst` is an error unless opts->force,
 * and then it is replaced only if it holds nothing but dataset files
 * (*.npy, meta.json). Text inputs may be gzip
 * files (read through zlib, with or without a ".gz" suffix); a missing
 * "X" is also looked for as "X.gz".
 * `summary` (may be NULL; initialised with hs_dataset_info_init) receives
 * the written dataset's info.
 * Threading: may run concurrently with other calls on distinct paths.
 * Errors: HS_ERR_FORMAT with "file:line:column: what" for parse errors,
 * HS_ERR_IO, HS_ERR_UNSUPPORTED (more than 2^31-1 vertices), HS_ERR_NOMEM,
 * HS_ERR_INVALID_ARG (bad options; dst exists without force),
 * HS_ERR_INTERRUPTED (opts->stop).
 * NATIVE: `src` is a native dataset directory, opened and validated; its
 * topology, weights, labels and splits are copied as they are (the edge
 * and split options do not apply) and its features written in the form
 * opts->feat_format asks for, with the same values: dense -> sparse keeps
 * every non-zero (binary when all are 1), sparse -> dense writes the
 * zeros. float16 features stay float16. */
HS_API hs_status hs_convert(const char *src, const char *dst,
                            const hs_convert_opts *opts,
                            hs_dataset_info *summary);

typedef enum hs_generate_kind {
  HS_GENERATE_RMAT = 1,
  HS_GENERATE_SBM = 2,
} hs_generate_kind;

/* How generated features are drawn. */
typedef enum hs_generate_features {
  HS_GENERATE_GAUSSIAN = 0, /* class means `margin` apart + N(0, sigma^2) */
  HS_GENERATE_WORDS = 1,    /* binary bag-of-words rows (citation-like) */
} hs_generate_features;

typedef struct hs_generate_opts {
  size_t struct_size; /* set by hs_generate_opts_init */
  hs_generate_kind kind;
  uint64_t seed;
  int64_t num_vertices;   /* R-MAT: default 2^scale */
  int scale;              /* R-MAT: ids are drawn in [0, 2^scale) */
  int64_t num_edges;      /* edges drawn; 0: num_vertices * edge_factor */
  double edge_factor;
  double rmat_a, rmat_b, rmat_c; /* d = 1 - a - b - c */
  int32_t num_classes;
  /* SBM: fraction of drawn edges that join two vertices of one class. If
   * p_in > 0, the expected edge counts follow from p_in and p_out instead
   * (num_edges and homophily are then derived). */
  double homophily;
  double p_in, p_out;
  int64_t num_features;   /* >= num_classes */
  hs_dtype feature_dtype; /* HS_DTYPE_FLOAT32 or HS_DTYPE_FLOAT16 */
  double margin;          /* distance between class means */
  double sigma;           /* per-coordinate noise */
  /* WORDS: vertex v holds about `words` distinct words (draws uniform in
   * [words/2, 3 words/2), repeats merged) of a vocabulary of num_features;
   * each draw comes with probability `topic` from its class's own block of
   * num_features / K words, else from the whole vocabulary. Values are 1.
   * CiteSeer-like: --vertices 3327 --edges 4552 --classes 6 --features 3703
   * --words 32 --topic 0.12 --homophily 0.74 (GraphSAGE then reaches about
   * 0.73 test accuracy, near what is published for CiteSeer). */
  hs_generate_features features;
  double words;
  double topic;
  hs_feat_format feat_format; /* how to write the features (AUTO: density) */
  bool undirected;        /* store both directions of each drawn edge */
  bool dedup;
  hs_self_loops self_loops;
  double split_frac[HS_SPLIT_COUNT_];
  int threads;            /* 0: 2 */
  bool force;
  hs_progress_fn progress;
  void *progress_ctx;
  volatile sig_atomic_t *stop; /* as in hs_convert_opts */
} hs_generate_opts;

/* Defaults: scale 16 (R-MAT), 8 classes, edge factor 16, a=0.57 b=0.19
 * c=0.19, homophily 0.8, 32 float32 Gaussian features, margin 1.5, sigma
 * 1.0 (WORDS: 32 words, topic 0.25), undirected, dedup, drop self-loops,
 * split 0.6/0.2/0.2, seed 1, 2 threads, features written AUTO. */
HS_API void hs_generate_opts_init_sized(hs_generate_opts *opts, hs_generate_kind kind,
                                        size_t struct_size);
static inline void hs_generate_opts_init(hs_generate_opts *opts, hs_generate_kind kind) {
  hs_generate_opts_init_sized(opts, kind, sizeof *opts);
}

typedef struct hs_generate_summary {
  size_t struct_size; /* set by hs_generate_summary_init */
  double homophily;       /* measured: fraction of stored entries joining
                           * vertices of one class */
  double bayes_accuracy;  /* of the features alone (the class-conditional
                           * Gaussians are known); NaN for WORDS */
  double onehop_accuracy; /* SBM: Bayes accuracy on the test split given a
                           * vertex's features and its neighbours' mean
                           * (what one mean-aggregation layer can know);
                           * NaN for R-MAT and WORDS */
  double seconds;
} hs_generate_summary;

HS_API void hs_generate_summary_init_sized(hs_generate_summary *sum, size_t struct_size);
static inline void hs_generate_summary_init(hs_generate_summary *sum) {
  hs_generate_summary_init_sized(sum, sizeof *sum);
}

/* Generate a synthetic dataset into `dst` (same temporary-and-rename
 * contract as hs_convert), with a meta.json that records the parameters,
 * the measured homophily and the predicted (Bayes) accuracy of the
 * features. The result is a pure function of the options (not of
 * `threads`): the same seed gives the same bytes.
 * `info` (the written dataset's counts) and `summary` may be NULL, and are
 * initialised with their *_init functions otherwise. Errors:
 * HS_ERR_INVALID_ARG, HS_ERR_IO, HS_ERR_NOMEM, HS_ERR_UNSUPPORTED,
 * HS_ERR_INTERRUPTED (opts->stop). */
HS_API hs_status hs_generate(const char *dst, const hs_generate_opts *opts,
                             hs_dataset_info *info, hs_generate_summary *summary);

/* The native dataset of a bundled public dataset ("cora"): imported on
 * first use from the copy shipped with hetsage (the source tree it was
 * built from, else the installed data folder) into the cache folder of
 * `rt`'s settings (cache_dir, HETSAGE_CACHE_DIR) and reused afterwards. Cora is symmetrised, de-duplicated and split
 * 60/20/20, stratified by class, with seed 0. `dir` receives the dataset's
 * path. Errors: HS_ERR_NOT_FOUND (unknown name, the shipped copy is
 * missing, or the settings have no cache folder), those of hs_convert. */
struct hs_runtime;
HS_API hs_status hs_dataset_bundled(const struct hs_runtime *rt, const char *name, char *dir,
                                    size_t len);

#ifdef __cplusplus
}
#endif
#endif
