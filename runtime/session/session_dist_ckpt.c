/* Checkpoints of distributed sessions. Rank 0 writes the checkpoint (the
 * model as one process would: a distributed checkpoint loads into a
 * single-process session too) and, beside it, CHECKPOINT.dist with what
 * each rank needs to continue exactly:
 *
 *   0   char[8] magic "HSDIST1\n"
 *   8   u32 version (1), world size, sync mode, 0
 *   24  u64 epoch, rng_counter, optimizer step of the checkpoint
 *   48  u32 CRC-32 of the checkpoint's parameters, u32 0
 *   56  per rank, in rank order: u64 length, that many bytes
 *   end u32 CRC-32 of every byte before it
 *
 * A rank's bytes: u64 length + the distributed step's state
 * (hs__dist_save_state), then u64 length + the rank's own optimizer state
 * in local mode (moments m and v, u64 step; none otherwise).
 *
 * The state file is written (atomically) before the checkpoint, and names
 * the checkpoint it belongs to by position and parameter checksum: after
 * a crash between the two renames, the pair does not match and loading
 * says so rather than mixing them. Every value little-endian (the hosts
 * this runs on). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "hs_session_int.h"
#include "nn/checkpoint.h"

static const char dist_magic[8] = {'H', 'S', 'D', 'I', 'S', 'T', '1', '\n'};
enum { DHDR = 56 };

static uint32_t params_crc(const hs_model *m) {
  uLong c = crc32(0L, Z_NULL, 0);
  const Bytef *p = (const Bytef *)m->params;
  size_t left = m->shape.n_params * sizeof(float);
  while (left > 0) {
    uInt take = left > (1u << 30) ? (1u << 30) : (uInt)left;
    c = crc32(c, p, take);
    p += take;
    left -= take;
  }
  return (uint32_t)c;
}

static void state_path(const char *ckpt, char *out, size_t len) {
  snprintf(out, len, "%s.dist", ckpt);
}

/* Write `len` bytes at `data` to `path` through a temporary beside it,
 * fsynced and renamed. */
static hs_status write_atomic(const char *path, const uint8_t *data, size_t len) {
  size_t n = strlen(path) + 16;
  char *tmp = malloc(n);
  if (!tmp) return hs__fail(HS_ERR_NOMEM, "%s: temporary name", path);
  snprintf(tmp, n, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  hs_status st = HS_OK;
  if (fd < 0) {
    st = hs__fail(HS_ERR_IO, "%s: cannot create a temporary file beside it: %s", path,
                  strerror(errno));
    free(tmp);
    return st;
  }
  for (size_t at = 0; at < len && st == HS_OK;) {
    ssize_t w = write(fd, data + at, len - at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) st = hs__fail(HS_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    else at += (size_t)w;
  }
  if (st == HS_OK && fsync(fd) != 0)
    st = hs__fail(HS_ERR_IO, "%s: fsync failed: %s", path, strerror(errno));
  if (close(fd) != 0 && st == HS_OK)
    st = hs__fail(HS_ERR_IO, "%s: close failed: %s", path, strerror(errno));
  if (st == HS_OK && rename(tmp, path) != 0)
    st = hs__fail(HS_ERR_IO, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
  if (st != HS_OK) unlink(tmp);
  free(tmp);
  return st;
}

/* ---- one rank's state ---------------------------------------------------------- */

static size_t rank_bytes(const hs_session *s) {
  size_t n = 8 + hs__dist_state_bytes(s->dist) + 8;
  if (s->dcfg.sync == HS_SYNC_LOCAL && !s->server)
    n += 2 * s->model.shape.n_params * sizeof(float) + 8;
  return n;
}

static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint64_t get64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static hs_status rank_save(hs_session *s, uint8_t *buf, size_t len) {
  size_t ds = hs__dist_state_bytes(s->dist);
  put64(buf, ds);
  hs_status st = hs__dist_save_state(s->dist, buf + 8, ds);
  if (st != HS_OK) return st;
  uint8_t *p = buf + 8 + ds;
  size_t own = len - (size_t)(p - buf) - 8;
  put64(p, own);
  if (own) {
    size_t n = s->model.shape.n_params;
    memcpy(p + 8, s->model.m, n * sizeof(float));
    memcpy(p + 8 + n * sizeof(float), s->model.v, n * sizeof(float));
    put64(p + 8 + 2 * n * sizeof(float), s->model.step);
  }
  return HS_OK;
}

static hs_status rank_load(hs_session *s, const uint8_t *buf, size_t len) {
  if (len < 16) return hs__fail(HS_ERR_FORMAT, "rank %d's state: %zu bytes", s->rank, len);
  uint64_t ds = get64(buf);
  if (ds > len - 16) return hs__fail(HS_ERR_FORMAT, "rank %d's state is truncated", s->rank);
  hs_status st = hs__dist_load_state(s->dist, buf + 8, (size_t)ds);
  if (st != HS_OK) return st;
  const uint8_t *p = buf + 8 + ds;
  uint64_t own = get64(p);
  size_t n = s->model.shape.n_params;
  if (own != len - 16 - ds || (own && own != 2 * n * sizeof(float) + 8))
    return hs__fail(HS_ERR_FORMAT, "rank %d's optimizer state: %llu bytes", s->rank,
                    (unsigned long long)own);
  if (own && !s->server) { /* local SGD: this rank's moments */
    memcpy(s->model.m, p + 8, n * sizeof(float));
    memcpy(s->model.v, p + 8 + n * sizeof(float), n * sizeof(float));
    s->model.step = get64(p + 8 + 2 * n * sizeof(float));
  }
  return HS_OK;
}

/* ---- save -------------------------------------------------------------------------- */

enum { TAG_CKPT = 4 };

typedef struct ckpt_status {
  int32_t status, pad;
  char detail[480];
} ckpt_status;

/* Rank 0's outcome to every rank. */
static hs_status share_status(hs_session *s, hs_status st, const char *what) {
  ckpt_status cs = {.status = (int32_t)st};
  if (s->rank == 0 && st != HS_OK) snprintf(cs.detail, sizeof cs.detail, "%s", hs_last_error());
  hs_status cst = hs__comm_bcast(s->comm, 0, &cs, sizeof cs, what);
  if (cst != HS_OK) return cst;
  if (cs.status == HS_OK) return HS_OK;
  if (s->rank == 0) return hs__fail((hs_status)cs.status, "%s", cs.detail);
  return hs__fail((hs_status)cs.status, "on rank 0: %s", cs.detail);
}

static hs_status save(hs_session *s, const char *path) {
  hs_status st = HS_OK;
  if (!s->server) st = hs__trainer_sync_model(s->trainer, &s->model);
  /* Every rank takes part below whatever happened here, so that nobody
   * waits alone: a failure travels with the data. */
  int64_t ok = st == HS_OK ? 0 : 1;
  hs_status cst = hs__comm_sum_i64(s->comm, &ok, 1, "the checkpoint");
  if (cst != HS_OK) return cst;
  if (ok) return st != HS_OK ? st : hs__fail(HS_ERR_PEER, "another rank failed to checkpoint");
  s->model.epoch = (uint64_t)s->epoch;
  s->model.rng_counter = (uint64_t)s->batch_pos;
  /* The parameter server holds the model: it comes to rank 0. */
  st = hs__dist_gather_state(s->dist, s->model.params, s->model.m, s->model.v, &s->model.step);
  if (st != HS_OK) return st;
  size_t mine = rank_bytes(s);
  uint8_t *blob = malloc(mine);
  if (!blob) return hs__fail(HS_ERR_NOMEM, "checkpoint state (%zu bytes)", mine);
  st = rank_save(s, blob, mine);
  uint64_t my_len = mine, *lens = NULL;
  if (s->rank == 0 && !(lens = calloc((size_t)s->world_size, sizeof *lens)))
    st = hs__fail(HS_ERR_NOMEM, "checkpoint");
  if (st == HS_OK) st = hs__comm_gather(s->comm, 0, &my_len, sizeof my_len, lens, "the checkpoint");
  uint8_t *file = NULL;
  if (st == HS_OK && s->rank != 0) {
    st = hs__comm_send(s->comm, 0, TAG_CKPT, blob, mine, "the checkpoint state");
  } else if (st == HS_OK) {
    size_t total = DHDR + 4;
    for (int r = 0; r < s->world_size; r++) total += 8 + lens[r];
    file = calloc(1, total);
    if (!file) st = hs__fail(HS_ERR_NOMEM, "checkpoint state (%zu bytes)", total);
    size_t at = DHDR;
    for (int r = 0; r < s->world_size && st == HS_OK; r++) {
      put64(file + at, lens[r]);
      at += 8;
      if (r == 0) memcpy(file + at, blob, mine);
      else st = hs__comm_recv(s->comm, r, TAG_CKPT, file + at, lens[r], NULL, "a rank's state");
      at += lens[r];
    }
    if (st == HS_OK) {
      memcpy(file, dist_magic, 8);
      uint32_t h[4] = {1, (uint32_t)s->world_size, (uint32_t)s->dcfg.sync, 0};
      memcpy(file + 8, h, 16);
      uint64_t pos[3] = {s->model.epoch, s->model.rng_counter, s->model.step};
      memcpy(file + 24, pos, 24);
      uint32_t c[2] = {params_crc(&s->model), 0};
      memcpy(file + 48, c, 8);
      uint32_t all = (uint32_t)crc32(crc32(0L, Z_NULL, 0), file, (uInt)at);
      memcpy(file + at, &all, 4);
      char sp[1100];
      state_path(path, sp, sizeof sp);
      st = write_atomic(sp, file, at + 4);
      /* One worker steps through the epoch as one process does: its file
       * is a single-process checkpoint with the run's record. Several
       * count steps per worker, which the record's epoch of batches does
       * not describe: their file has no record (the ranks' options are
       * checked against each other at start instead). */
      if (st == HS_OK && s->workers == 1) {
        hs_ckpt_run run;
        hs__session_run(s, &run);
        st = hs__checkpoint_save_run(&s->model, &run, path);
      } else if (st == HS_OK) {
        st = hs__checkpoint_save(&s->model, path);
      }
    }
  }
  free(file);
  free(lens);
  free(blob);
  return st;
}

hs_status hs__session_dist_save(hs_session *s, const char *path) {
  double saved = hs__comm_set_timeout(s->comm, s->dcfg.start_timeout_s);
  hs_status st = save(s, path);
  /* The others learn whether rank 0 wrote it (and a rank that failed
   * above has already said so to all). */
  if (st == HS_OK || s->rank == 0) st = share_status(s, st, "the checkpoint's outcome");
  hs__comm_set_timeout(s->comm, saved);
  return st;
}

/* ---- load ----------------------------------------------------------------------------- */

/* Rank 0: the state file, checked against the checkpoint just read into
 * m. *data NULL when there is none. */
static hs_status read_state(const hs_session *s, const char *path, const hs_model *m,
                            uint8_t **data, size_t *len) {
  *data = NULL;
  *len = 0;
  char sp[1100];
  state_path(path, sp, sizeof sp);
  FILE *f = fopen(sp, "rb");
  if (!f) {
    if (errno == ENOENT) return HS_OK;
    return hs__fail(HS_ERR_IO, "%s: %s", sp, strerror(errno));
  }
  hs_status st = HS_OK;
  uint8_t *buf = NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (n < DHDR + 4 || fseek(f, 0, SEEK_SET) != 0) {
    st = hs__fail(HS_ERR_FORMAT, "%s: %ld bytes, too short for distributed state", sp, n);
    goto out;
  }
  buf = malloc((size_t)n);
  if (!buf) {
    st = hs__fail(HS_ERR_NOMEM, "%s: %ld bytes", sp, n);
    goto out;
  }
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    st = hs__fail(HS_ERR_IO, "%s: read failed", sp);
    goto out;
  }
  uint32_t crc_file, h[4], c[2];
  uint64_t pos[3];
  memcpy(&crc_file, buf + n - 4, 4);
  if (memcmp(buf, dist_magic, 8) != 0) {
    st = hs__fail(HS_ERR_FORMAT, "%s: not a hetsage distributed state file", sp);
    goto out;
  }
  if ((uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)(n - 4)) != crc_file) {
    st = hs__fail(HS_ERR_CHECKSUM, "%s: checksum mismatch", sp);
    goto out;
  }
  memcpy(h, buf + 8, 16);
  memcpy(pos, buf + 24, 24);
  memcpy(c, buf + 48, 8);
  if (h[0] != 1) {
    st = hs__fail(HS_ERR_UNSUPPORTED, "%s: version %u", sp, h[0]);
    goto out;
  }
  if (pos[0] != m->epoch || pos[1] != m->rng_counter || pos[2] != m->step ||
      c[0] != params_crc(m)) {
    st = hs__fail(HS_ERR_FORMAT, "%s belongs to another checkpoint than %s (epoch %llu batch "
                  "%llu, the checkpoint is at epoch %llu batch %llu): a crash between the two "
                  "writes?", sp, path, (unsigned long long)pos[0], (unsigned long long)pos[1],
                  (unsigned long long)m->epoch, (unsigned long long)m->rng_counter);
    goto out;
  }
  if (h[1] != (uint32_t)s->world_size || h[2] != (uint32_t)s->dcfg.sync) {
    st = hs__fail(HS_ERR_INVALID_ARG, "%s was written by %u ranks (%s); this run has %d ranks "
                  "(%s): resume with the world it was written by", sp, h[1],
                  hs_sync_mode_name((hs_sync_mode)h[2]), s->world_size,
                  hs_sync_mode_name(s->dcfg.sync));
    goto out;
  }
  *data = buf;
  *len = (size_t)n;
  buf = NULL;
out:
  free(buf);
  fclose(f);
  return st;
}

/* The model arrays and position, from rank 0 to every rank. */
static hs_status share_model(hs_session *s, hs_model *m) {
  size_t n = m->shape.n_params * sizeof(float);
  uint64_t pos[3] = {m->step, m->epoch, m->rng_counter};
  hs_status st = hs__comm_bcast(s->comm, 0, pos, sizeof pos, "the checkpoint");
  if (st == HS_OK) st = hs__comm_bcast(s->comm, 0, m->params, n, "the checkpoint");
  if (st == HS_OK) st = hs__comm_bcast(s->comm, 0, m->m, n, "the checkpoint");
  if (st == HS_OK) st = hs__comm_bcast(s->comm, 0, m->v, n, "the checkpoint");
  m->step = pos[0];
  m->epoch = pos[1];
  m->rng_counter = pos[2];
  return st;
}

static hs_status load(hs_session *s, const char *path, hs_model *m) {
  uint8_t *state = NULL;
  size_t state_len = 0;
  hs_status st = HS_OK;
  if (s->rank == 0) {
    st = hs__checkpoint_load(path, m);
    if (st == HS_OK && m->rng_counter > (uint64_t)s->n_batches)
      st = hs__fail(HS_ERR_FORMAT, "%s: position batch %llu of an epoch of %lld batches", path,
                    (unsigned long long)m->rng_counter, (long long)s->n_batches);
    if (st == HS_OK) st = read_state(s, path, m, &state, &state_len);
  }
  if ((st = share_status(s, st, "reading the checkpoint")) != HS_OK) goto out;
  if ((st = share_model(s, m)) != HS_OK) goto out;
  /* Each rank's own part (none: a checkpoint of another kind of run,
   * which starts the distributed state afresh). */
  int64_t have = state != NULL;
  if ((st = hs__comm_bcast(s->comm, 0, &have, sizeof have, "the checkpoint")) != HS_OK) goto out;
  uint64_t len = 0;
  uint8_t *mine = NULL;
  if (have && s->rank == 0) {
    size_t at = DHDR;
    for (int r = 0; r < s->world_size && st == HS_OK; r++) {
      uint64_t l = at + 8 <= state_len - 4 ? get64(state + at) : UINT64_MAX;
      if (l > state_len - 4 - at - 8) {
        st = hs__fail(HS_ERR_FORMAT, "%s.dist: rank %d's state is truncated", path, r);
        break;
      }
      if (r == 0) {
        len = l;
        mine = state + at + 8;
      } else {
        st = hs__comm_send(s->comm, r, TAG_CKPT, &l, 8, "the checkpoint state");
        if (st == HS_OK) st = hs__comm_send(s->comm, r, TAG_CKPT, state + at + 8, l, "state");
      }
      at += 8 + l;
    }
  } else if (have) {
    st = hs__comm_recv(s->comm, 0, TAG_CKPT, &len, 8, NULL, "the checkpoint state");
    if (st == HS_OK && !(state = malloc(len + 1))) st = hs__fail(HS_ERR_NOMEM, "checkpoint state");
    if (st == HS_OK) st = hs__comm_recv(s->comm, 0, TAG_CKPT, state, len, NULL, "state");
    mine = state;
  }
  if (st != HS_OK) goto out;
  hs_dist_tensor none = {0, 0};
  hs_dist_model dm = {.n_params = m->shape.n_params, .tensors = &none, .n_tensors = 1,
                      .params = m->params, .m = m->m, .v = m->v, .step = m->step};
  if ((st = hs__dist_scatter_state(s->dist, &dm)) != HS_OK) goto out;
  if (have) {
    /* rank_load writes the local-mode moments into s->model: take the
     * loaded model first. */
    hs_model old = s->model;
    s->model = *m;
    st = rank_load(s, mine, (size_t)len);
    *m = s->model;
    s->model = old;
  }
out:
  free(state);
  return st;
}

hs_status hs__session_dist_load(hs_session *s, const char *path) {
  hs_model m;
  hs_status st = hs__model_create(&s->model.cfg, &m);
  if (st != HS_OK) return st;
  double saved = hs__comm_set_timeout(s->comm, s->dcfg.start_timeout_s);
  st = load(s, path, &m);
  /* Any rank's failure fails every rank's load. */
  int64_t bad = st != HS_OK;
  hs_status cst = hs__comm_sum_i64(s->comm, &bad, 1, "loading the checkpoint");
  hs__comm_set_timeout(s->comm, saved);
  if (st == HS_OK && cst != HS_OK) st = cst;
  if (st == HS_OK && bad) st = hs__fail(HS_ERR_PEER, "another rank failed to load the checkpoint");
  if (st == HS_OK && !s->server) st = hs__trainer_load_model(s->trainer, &m);
  if (st != HS_OK) {
    hs__model_destroy(&m);
    return st;
  }
  hs__model_destroy(&s->model);
  s->model = m;
  s->epoch = (int64_t)m.epoch;
  s->batch_pos = (int64_t)m.rng_counter;
  return HS_OK;
}
