/* Program build from embedded sources, with an on-disk binary cache.
 *
 * Cache entry: one file per key, named by the key's hash. The file repeats
 * the full key text, so a hash collision or a stale entry is detected and
 * rebuilt rather than loaded; a CRC over the whole file catches truncation
 * and corruption. Entries are written to a temporary file and renamed, so a
 * reader never sees half a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "hs_config.h"
#include "hs_dev.h"
#include "hs_kernels.h"
#include "hs_programs.h"

#define CACHE_MAGIC "HSPBIN01"

/* ---- growing string ----------------------------------------------------- */

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

/* ---- cache directory -------------------------------------------------------- */

static hs_status mkdir_p(const char *path) {
  char tmp[1024];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
    return hs__fail(HS_ERR_INVALID_ARG, "cache path too long: %s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
      return hs__fail(HS_ERR_IO, "cannot create directory %s: %s", tmp, strerror(errno));
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
    return hs__fail(HS_ERR_IO, "cannot create directory %s: %s", tmp, strerror(errno));
  return HS_OK;
}

hs_status hs__cache_dir_at(const char *dir, char *buf, size_t len) {
  if (!dir || !*dir)
    return hs__fail(HS_ERR_NOT_FOUND,
                    "no cache folder: the settings name none (cache_dir, HETSAGE_CACHE_DIR)");
  int n = snprintf(buf, len, "%s", dir);
  if (n < 0 || (size_t)n >= len) return hs__fail(HS_ERR_INVALID_ARG, "cache path too long");
  return mkdir_p(buf);
}

hs_status hs__cache_dir(const hs_dev *dev, char *buf, size_t len) {
  return hs__cache_dir_at(dev->settings ? dev->settings->cache_dir : NULL, buf, len);
}

/* ---- key ---------------------------------------------------------------------- */

static uint64_t fnv1a64(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* Key text: everything a binary depends on. Sources are represented by
 * their CRC and length (the full text would make every entry as large as
 * the sources; the CRC+length+name triple changes with any edit). */
static void make_key(sbuf *key, const hs_dev *dev, const char *const *sources, int n,
                     const char *options, const sbuf *src) {
  char line[1024];
  snprintf(line, sizeof line, "hetsage %s\nplatform %s | %s\ndevice %s | %s | %s\n",
           HS_VERSION, dev->info.platform_name, dev->info.platform_version,
           dev->info.name, dev->info.vendor, dev->info.device_version);
  sb_str(key, line);
  snprintf(line, sizeof line, "driver %s\noptions %s\n", dev->info.driver_version,
           options ? options : "");
  sb_str(key, line);
  for (int i = 0; i < n; i++) {
    snprintf(line, sizeof line, "source %s\n", sources[i]);
    sb_str(key, line);
  }
  snprintf(line, sizeof line, "text %zu %08lx\n", src->len,
           (unsigned long)crc32(0, (const Bytef *)src->p, (uInt)src->len));
  sb_str(key, line);
}

/* ---- cache file I/O -------------------------------------------------------- */

bool hs__file_read(const char *path, unsigned char **data, size_t *len) {
  if (access(path, F_OK) != 0) return false; /* a cache miss: no error recorded */
  FILE *f = hs__fopen_regular(path, NULL, NULL);
  if (!f) return false;
  bool ok = false;
  unsigned char *buf = NULL;
  if (fseek(f, 0, SEEK_END) != 0) goto done;
  long sz = ftell(f);
  if (sz < 0 || fseek(f, 0, SEEK_SET) != 0) goto done;
  buf = malloc((size_t)sz + 1);
  if (!buf) goto done;
  if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) goto done;
  *data = buf;
  *len = (size_t)sz;
  buf = NULL;
  ok = true;
done:
  free(buf);
  fclose(f);
  return ok;
}

/* Layout: magic[8] | u64 key_len | key | u64 bin_len | bin | u32 crc(all before). */
static bool cache_parse(const unsigned char *d, size_t len, const sbuf *key,
                        const unsigned char **bin, size_t *bin_len) {
  size_t off = 0;
  uint64_t kl, bl;
  if (len < 8 + 8 + 8 + 4 || memcmp(d, CACHE_MAGIC, 8) != 0) return false;
  off = 8;
  memcpy(&kl, d + off, 8);
  off += 8;
  if (kl != key->len || kl > len - off) return false;
  if (memcmp(d + off, key->p, kl) != 0) return false;
  off += kl;
  if (len - off < 12) return false;
  memcpy(&bl, d + off, 8);
  off += 8;
  if (bl == 0 || bl != len - off - 4) return false;
  uint32_t stored;
  memcpy(&stored, d + len - 4, 4);
  if (stored != (uint32_t)crc32(0, d, (uInt)(len - 4))) return false;
  *bin = d + off;
  *bin_len = bl;
  return true;
}

hs_status hs__file_write_atomic(const char *path, const void *const *parts,
                               const size_t *lens, int n) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) return hs__fail(HS_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
  /* mkstemp makes the file private; what we write is for others to read. */
  (void)fchmod(fd, 0644);
  for (int i = 0; i < n; i++) {
    const char *p = parts[i];
    size_t left = lens[i];
    while (left > 0) {
      ssize_t w = write(fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        close(fd);
        unlink(tmp);
        return hs__fail(HS_ERR_IO, "cannot write %s: %s", tmp, strerror(e));
      }
      p += w;
      left -= (size_t)w;
    }
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(tmp);
    return hs__fail(HS_ERR_IO, "cannot flush %s: %s", tmp, strerror(errno));
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return hs__fail(HS_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
  }
  return HS_OK;
}

/* Address space the OpenCL compiler works in, above the process's size,
 * kept free before every call that compiles: implementations abort (an
 * assertion, a C++ exception nobody catches) instead of failing when they
 * run out. Measured with PoCL 3.1 (LLVM 15, Debian 12) on x86-64: 256 MiB while handing
 * a built program's binary back, under 60 MiB for the build itself; 32 MiB
 * on top for what the measurement did not see. Checked only where a limit
 * is in force (hs__mem_room), so it costs nothing otherwise. */
#define HS_COMPILER_RESERVE ((uint64_t)288 << 20)

static hs_status compiler_room(const hs_dev *dev, const char *what) {
  char label[HS_NAME_MAX + 96];
  snprintf(label, sizeof label, "%s on '%s' (the compiler's working memory)", what,
           dev->info.name);
  return hs__mem_room_check(HS_COMPILER_RESERVE, label);
}

hs_status hs__program_binary(cl_program prog, const hs_dev *dev, unsigned char **bin,
                             size_t *len) {
  /* Handing the binary back compiles every kernel (PoCL): the reserve. */
  hs_status rst = compiler_room(dev, "retrieving a program's binary");
  if (rst != HS_OK) return rst;
  cl_uint nd = 0;
  cl_int err = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL);
  if (err != CL_SUCCESS || nd == 0 || nd > 64)
    return hs__cl_fail(err, "clGetProgramInfo(CL_PROGRAM_NUM_DEVICES)", dev->id);
  cl_device_id ids[64];
  size_t sizes[64];
  err = clGetProgramInfo(prog, CL_PROGRAM_DEVICES, nd * sizeof ids[0], ids, NULL);
  if (err == CL_SUCCESS)
    err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, nd * sizeof sizes[0], sizes, NULL);
  if (err != CL_SUCCESS) return hs__cl_fail(err, "clGetProgramInfo(BINARY_SIZES)", dev->id);
  unsigned char *bins[64] = {0};
  cl_uint which = nd;
  for (cl_uint i = 0; i < nd; i++)
    if (ids[i] == dev->id) which = i;
  if (which == nd || sizes[which] == 0)
    return hs__fail(HS_ERR_UNSUPPORTED, "no program binary for device '%s'", dev->info.name);
  bins[which] = malloc(sizes[which]);
  if (!bins[which]) return hs__fail(HS_ERR_NOMEM, "out of memory for a program binary");
  err = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, nd * sizeof bins[0], bins, NULL);
  if (err != CL_SUCCESS) {
    free(bins[which]);
    return hs__cl_fail(err, "clGetProgramInfo(CL_PROGRAM_BINARIES)", dev->id);
  }
  *bin = bins[which];
  *len = sizes[which];
  return HS_OK;
}

/* ---- build ------------------------------------------------------------------ */

static hs_status build_fail(cl_program prog, const hs_dev *dev, cl_int err,
                            const char *what) {
  char log[1536] = "";
  size_t got = 0;
  if (clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                            &got) != CL_SUCCESS) {
    /* Longer than our buffer: fetch it whole and keep the head, where the
     * first error is. */
    size_t need = 0;
    clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &need);
    char *full = need ? malloc(need + 1) : NULL;
    if (full && clGetProgramBuildInfo(prog, dev->id, CL_PROGRAM_BUILD_LOG, need, full,
                                      NULL) == CL_SUCCESS) {
      full[need] = '\0';
      snprintf(log, sizeof log, "%s", full);
    }
    free(full);
  }
  log[sizeof log - 1] = '\0';
  return hs__fail(HS_ERR_BUILD, "%s failed with %s on device '%s'; build log:\n%s", what,
                  hs__cl_error_name(err), dev->info.name, log[0] ? log : "(empty)");
}

static hs_status assemble(const char *const *sources, int n, sbuf *src) {
  for (int i = 0; i < n; i++) {
    const hs__kernel_source *ks = hs__kernel_source_find(sources[i]);
    if (!ks)
      return hs__fail(HS_ERR_NOT_FOUND, "no embedded OpenCL source named '%s'", sources[i]);
    char line[300];
    snprintf(line, sizeof line, "#line 1 \"%s\"\n", ks->name);
    sb_str(src, line);
    sb_add(src, ks->text, ks->length);
    sb_str(src, "\n");
  }
  if (src->oom) return hs__fail(HS_ERR_NOMEM, "out of memory assembling program source");
  return HS_OK;
}

hs_status hs__sources_assemble(const char *const *sources, int n, char **text, size_t *len) {
  sbuf src = {0};
  hs_status st = assemble(sources, n, &src);
  if (st != HS_OK) {
    free(src.p);
    return st;
  }
  *text = src.p;
  *len = src.len;
  return HS_OK;
}

static hs_status try_cache(const hs_ctx *ctx, const hs_dev *dev, const char *path,
                           const sbuf *key, const char *options, cl_program *out) {
  unsigned char *data = NULL;
  size_t len = 0;
  const unsigned char *bin;
  size_t bin_len;
  if (!hs__file_read(path, &data, &len)) return HS_ERR_NOT_FOUND;
  hs_status st = HS_ERR_FORMAT;
  if (!cache_parse(data, len, key, &bin, &bin_len)) {
    hs__log(HS_LOG_BUILD, "cache entry %s is corrupt or stale: rebuilding", path);
    goto done;
  }
  if ((st = compiler_room(dev, "linking a cached program")) != HS_OK) goto done;
  st = HS_ERR_FORMAT;
  cl_int err, bin_status = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(ctx->ctx, 1, &dev->id, &bin_len, &bin,
                                              &bin_status, &err);
  if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    hs__log(HS_LOG_BUILD, "cache entry %s rejected by the driver: rebuilding", path);
    goto done;
  }
  err = clBuildProgram(prog, 1, &dev->id, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    clReleaseProgram(prog);
    hs__log(HS_LOG_BUILD, "cache entry %s failed to link: rebuilding", path);
    goto done;
  }
  *out = prog;
  st = HS_OK;
done:
  free(data);
  return st;
}

hs_status hs__program_build(const hs_ctx *ctx, const hs_dev *dev,
                            const char *const *sources, int n_sources,
                            const char *options, cl_program *out, bool *cache_hit) {
  *out = NULL;
  if (cache_hit) *cache_hit = false;
  sbuf src = {0}, key = {0};
  cl_program prog = NULL;
  hs_status st = assemble(sources, n_sources, &src);
  if (st != HS_OK) goto fail;
  make_key(&key, dev, sources, n_sources, options, &src);
  if (key.oom) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for a cache key");
    goto fail;
  }

  char dir[900], path[1024];
  bool use_cache = hs__cache_dir(dev, dir, sizeof dir) == HS_OK;
  if (!use_cache) hs__log(HS_LOG_BUILD, "binary cache disabled: %s", hs_last_error());
  if (use_cache) {
    snprintf(path, sizeof path, "%s/%016llx.bin", dir,
             (unsigned long long)fnv1a64(key.p, key.len));
    st = try_cache(ctx, dev, path, &key, options, &prog);
    if (st == HS_OK) {
      hs__log(HS_LOG_BUILD, "cache hit %s", path);
      if (cache_hit) *cache_hit = true;
      goto done;
    }
    if (st == HS_ERR_NOMEM) goto fail;
    st = HS_OK;
  }
  if (!hs__dev_compiles(dev)) {
    st = hs__fail(HS_ERR_UNSUPPORTED,
                  "device '%s' %s, and the binary cache has no build of this program: "
                  "name a prebuilt binary in the board profile's [binaries]",
                  dev->info.name,
                  dev->info.compiler_available ? "does not compile (its board profile says so)"
                                               : "has no OpenCL compiler");
    goto fail;
  }

  if ((st = compiler_room(dev, "building a program")) != HS_OK) goto fail;
  cl_int err;
  const char *text = src.p;
  prog = clCreateProgramWithSource(ctx->ctx, 1, &text, &src.len, &err);
  if (err != CL_SUCCESS) {
    prog = NULL;
    st = hs__cl_fail(err, "clCreateProgramWithSource", dev->id);
    goto fail;
  }
  double t0 = hs__now();
  err = clBuildProgram(prog, 1, &dev->id, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    st = build_fail(prog, dev, err, "clBuildProgram");
    goto fail;
  }
  hs__log(HS_LOG_BUILD, "built %s%s on '%s' in %.2f s", sources[n_sources - 1],
          n_sources > 1 ? " (+headers)" : "", dev->info.name, hs__now() - t0);

  if (use_cache) {
    unsigned char *bin = NULL;
    size_t bin_len = 0;
    if (hs__program_binary(prog, dev, &bin, &bin_len) == HS_OK) {
      uint64_t kl = key.len, bl = bin_len;
      uLong crc = crc32(0, (const Bytef *)CACHE_MAGIC, 8);
      crc = crc32(crc, (const Bytef *)&kl, 8);
      crc = crc32(crc, (const Bytef *)key.p, (uInt)key.len);
      crc = crc32(crc, (const Bytef *)&bl, 8);
      crc = crc32(crc, bin, (uInt)bin_len);
      uint32_t c32 = (uint32_t)crc;
      const void *parts[] = {CACHE_MAGIC, &kl, key.p, &bl, bin, &c32};
      size_t lens[] = {8, 8, key.len, 8, bin_len, 4};
      if (hs__file_write_atomic(path, parts, lens, 6) != HS_OK)
        hs__log(HS_LOG_BUILD, "binary not cached: %s", hs_last_error());
      free(bin);
    }
  }
done:
  hs__clear_error();
  free(src.p);
  free(key.p);
  *out = prog;
  return HS_OK;
fail:
  if (prog) clReleaseProgram(prog);
  free(src.p);
  free(key.p);
  return st;
}

/* The compiler's first error line of a build failure's detail, else its
 * head, on one line. */
static void first_error(const char *detail, char *out, size_t cap) {
  const char *log = strstr(detail, "build log:\n");
  const char *at = log ? log + 11 : detail;
  const char *err = strstr(at, "error");
  if (err) {
    while (err > at && err[-1] != '\n') err--;
    at = err;
  }
  size_t n = 0;
  for (; *at && n + 1 < cap; at++) out[n++] = *at == '\n' ? ' ' : *at;
  while (n > 0 && out[n - 1] == ' ') n--;
  out[n] = '\0';
}

hs_status hs__program_build_fast(const hs_ctx *ctx, const hs_dev *dev,
                                 const char *const *sources, int n_sources,
                                 const char *options, const char *speedups,
                                 cl_program *out, hs_build_note *note) {
  hs_build_note scratch;
  if (!note) note = &scratch;
  memset(note, 0, sizeof *note);
  if (!options) options = "";
  if (!speedups || !*speedups)
    return hs__program_build(ctx, dev, sources, n_sources, options, out, &note->cache_hit);
  size_t len = strlen(options) + strlen(speedups) + 2;
  char *full = malloc(len);
  if (!full) return hs__fail(HS_ERR_NOMEM, "out of memory for build options");
  snprintf(full, len, "%s%s%s", options, *options ? " " : "", speedups);
  hs_status st = hs__program_build(ctx, dev, sources, n_sources, full, out, &note->cache_hit);
  free(full);
  if (st != HS_ERR_BUILD) return st;
  first_error(hs_last_error(), note->why, sizeof note->why);
  hs__log(HS_LOG_BUILD, "%s on '%s' failed with '%s' (%s): building it without them",
          sources[n_sources - 1], dev->info.name, speedups, note->why);
  st = hs__program_build(ctx, dev, sources, n_sources, options, out, &note->cache_hit);
  note->without_speedups = st == HS_OK;
  return st;
}

hs_status hs__program_from_binary(const hs_ctx *ctx, const hs_dev *dev,
                                  const unsigned char *bin, size_t len, const char *options,
                                  const char *origin, cl_program *out) {
  *out = NULL;
  if (len == 0) return hs__fail(HS_ERR_FORMAT, "kernel binary %s is empty", origin);
  cl_int err, bin_status = CL_SUCCESS;
  cl_program prog =
      clCreateProgramWithBinary(ctx->ctx, 1, &dev->id, &len, &bin, &bin_status, &err);
  if (err != CL_SUCCESS || bin_status != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    return hs__fail(HS_ERR_FORMAT,
                    "kernel binary %s was rejected by device '%s' (%s): built for "
                    "another device or driver?",
                    origin, dev->info.name,
                    hs__cl_error_name(err != CL_SUCCESS ? err : bin_status));
  }
  hs_status rst = compiler_room(dev, "linking a program binary");
  if (rst != HS_OK) {
    clReleaseProgram(prog);
    return rst;
  }
  err = clBuildProgram(prog, 1, &dev->id, options, NULL, NULL);
  if (err != CL_SUCCESS) {
    hs_status st = build_fail(prog, dev, err, "clBuildProgram (binary)");
    clReleaseProgram(prog);
    return hs__fail_context(st, "loading %s", origin);
  }
  *out = prog;
  return HS_OK;
}

hs_status hs__program_from_binary_file(const hs_ctx *ctx, const hs_dev *dev,
                                       const char *path, const char *options,
                                       cl_program *out) {
  *out = NULL;
  unsigned char *data = NULL;
  size_t len = 0;
  if (!hs__file_read(path, &data, &len))
    return hs__fail(HS_ERR_IO, "cannot read kernel binary %s: %s", path, strerror(errno));
  hs_status st = hs__program_from_binary(ctx, dev, data, len, options, path, out);
  free(data);
  return st;
}

hs_status hs__program_save_binary(cl_program prog, const hs_dev *dev, const char *path) {
  unsigned char *bin = NULL;
  size_t len = 0;
  hs_status st = hs__program_binary(prog, dev, &bin, &len);
  if (st != HS_OK) return st;
  const void *parts[] = {bin};
  size_t lens[] = {len};
  st = hs__file_write_atomic(path, parts, lens, 1);
  free(bin);
  return st;
}

hs_status hs__kernel_create(cl_program prog, const char *name, const hs_dev *dev,
                            cl_kernel *out) {
  cl_int err;
  *out = clCreateKernel(prog, name, &err);
  if (err != CL_SUCCESS) {
    *out = NULL;
    char call[160];
    snprintf(call, sizeof call, "clCreateKernel(%s)", name);
    return hs__cl_fail(err, call, dev ? dev->id : NULL);
  }
  return HS_OK;
}
