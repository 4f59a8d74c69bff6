#include "cli_dist.h"

#include <stdlib.h>
#include <string.h>

void cli_dist_args_init(cli_dist_args *d) {
  memset(d, 0, sizeof *d);
  hs_dist_config_init(&d->cfg);
}

void cli_dist_usage(FILE *f) {
  fprintf(f,
          "  --distributed        train as one rank of an MPI job (mpiexec -n N\n"
          "                       hetsage train --distributed ...): each rank places its\n"
          "                       roles on its own board and trains its slice of every\n"
          "                       epoch; rank 0 prints progress and results\n"
          "  --sync allreduce|ps|local\n"
          "                       how ranks combine: all-reduce of gradients every step\n"
          "                       (default), a parameter server, or local SGD\n"
          "  --servers K          ps: the last K ranks hold the parameters (default 1)\n"
          "  --staleness S        ps: 0 synchronous (default), S > 0 asynchronous with\n"
          "                       no worker more than S steps ahead of the slowest\n"
          "  --quorum Q           ps: gradients per update (default: all workers);\n"
          "                       synchronous: late ones join the next update\n"
          "  --period K           local: steps between model averages (default 8)\n"
          "  --compress none|1bit gradient compression: sign bits and an L2-norm\n"
          "                       scale per chunk, with error feedback (default none);\n"
          "                       allreduce with Adam: 1-bit Adam (v frozen after the\n"
          "                       warm-up, the momenta compressed)\n"
          "  --compress-warmup N  first N steps uncompressed (default %d for 1-bit\n"
          "                       Adam, which needs N >= 1; 0 otherwise)\n"
          "  --compress-min N     tensors of fewer values stay uncompressed (1024)\n"
          "  --bucket-kb N        all-reduce bucket size (default 1024)\n"
          "  --dist-timeout S     a rank silent this long during training is reported\n"
          "                       dead or stalled and the run ends (default 60)\n"
          "  --dist-start-timeout S\n"
          "                       the same for start-up, evaluation and checkpoints,\n"
          "                       when ranks wait for one another (default 900)\n",
          HS_ONEBIT_ADAM_WARMUP);
}

static int bad(const char *cmd, const char *opt, const char *v, const char *what) {
  cli_usage_error(cmd, "%s '%s': %s", opt, v, what);
  return -1;
}

int cli_dist_arg(const char *cmd, cli_dist_args *d, int argc, char **argv, int *i) {
  const char *o = argv[*i], *v = NULL;
  uint64_t u;
  double x;
  if (strcmp(o, "--distributed") == 0) {
    d->distributed = true;
    return 1;
  }
  static const char *const with_value[] = {"--sync", "--servers", "--staleness", "--quorum",
                                           "--period", "--compress", "--compress-warmup",
                                           "--compress-min", "--bucket-kb", "--dist-timeout",
                                           "--dist-start-timeout"};
  bool known = false;
  for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
    known = known || strcmp(o, with_value[k]) == 0;
  if (!known) return 0;
  if (*i + 1 >= argc) {
    cli_usage_error(cmd, "option %s needs a value", o);
    return -1;
  }
  v = argv[++*i];
  d->mode_options = true;
  hs_dist_config *c = &d->cfg;
  if (strcmp(o, "--sync") == 0) {
    int m = HS_SYNC_LOCAL;
    while (m >= 0 && strcmp(v, hs_sync_mode_name((hs_sync_mode)m)) != 0) m--;
    if (m < 0) return bad(cmd, o, v, "expected allreduce, ps or local");
    c->sync = (hs_sync_mode)m;
  } else if (strcmp(o, "--compress") == 0) {
    int m = HS_COMPRESS_1BIT;
    while (m >= 0 && strcmp(v, hs_compress_name((hs_compress)m)) != 0) m--;
    if (m < 0) return bad(cmd, o, v, "expected none or 1bit");
    c->compress = (hs_compress)m;
  } else if (strcmp(o, "--servers") == 0) {
    if (!cli_parse_u64(v, &u) || u < 1 || u > 4096) return bad(cmd, o, v, "expected 1..4096");
    c->servers = (int)u;
  } else if (strcmp(o, "--staleness") == 0) {
    if (!cli_parse_u64(v, &u) || u > 1000000) return bad(cmd, o, v, "expected 0..1000000");
    c->staleness = (int)u;
  } else if (strcmp(o, "--quorum") == 0) {
    if (!cli_parse_u64(v, &u) || u < 1 || u > 4096) return bad(cmd, o, v, "expected 1..4096");
    c->quorum = (int)u;
  } else if (strcmp(o, "--period") == 0) {
    if (!cli_parse_u64(v, &u) || u < 1 || u > 1000000) return bad(cmd, o, v, "expected 1..1000000");
    c->period = (int)u;
  } else if (strcmp(o, "--compress-warmup") == 0) {
    if (!cli_parse_u64(v, &u) || u > INT64_MAX) return bad(cmd, o, v, "expected a step count");
    c->compress_warmup = (int64_t)u;
  } else if (strcmp(o, "--compress-min") == 0) {
    if (!cli_parse_u64(v, &u) || u > INT64_MAX) return bad(cmd, o, v, "expected a value count");
    c->compress_min = (int64_t)u;
  } else if (strcmp(o, "--bucket-kb") == 0) {
    if (!cli_parse_u64(v, &u) || u < 1 || u > (1u << 20)) return bad(cmd, o, v, "expected 1..1048576");
    c->bucket_bytes = (size_t)u << 10;
  } else if (strcmp(o, "--dist-timeout") == 0) {
    if (!cli_parse_double(v, &x) || !(x > 0 && x <= 86400)) return bad(cmd, o, v, "expected seconds in (0, 86400]");
    c->timeout_s = x;
  } else {
    if (!cli_parse_double(v, &x) || !(x > 0 && x <= 86400)) return bad(cmd, o, v, "expected seconds in (0, 86400]");
    c->start_timeout_s = x;
  }
  return 1;
}

int cli_dist_start(const char *cmd, cli_dist_args *d, int *argc, char ***argv,
                   hs_session_config *cfg, hs_world **world) {
  *world = NULL;
  if (!d->distributed) {
    if (d->mode_options)
      return cli_usage_error(cmd, "the distributed options (--sync, --compress, ...) need "
                             "--distributed");
    return 0;
  }
  hs_status st = hs_world_init(argc, argv, world);
  if (st != HS_OK) {
    cli_report(cmd, "joining the distributed run", st);
    return 1;
  }
  cfg->world = *world;
  cfg->dist = &d->cfg;
  return 0;
}

bool cli_dist_root(const hs_world *world) { return !world || hs_world_rank(world) == 0; }

void cli_dist_print(FILE *f, const hs_world *world, const char *text) {
  if (!world || hs_world_size(world) == 1) {
    fputs(text, f);
    return;
  }
  /* One write per rank, so that lines of ranks do not mix. */
  size_t lines = 1;
  for (const char *q = text; *q; q++) lines += *q == '\n';
  size_t cap = strlen(text) + 24 * lines + 1, n = 0;
  char *buf = malloc(cap);
  if (!buf) {
    fputs(text, f);
    return;
  }
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
    int k = snprintf(buf + n, cap - n, "[rank %d] %.*s", hs_world_rank(world), (int)len, p);
    if (k < 0 || (size_t)k >= cap - n) break;
    n += (size_t)k;
    p += len;
  }
  fwrite(buf, 1, n, f);
  fflush(f);
  free(buf);
}

void cli_dist_fail(hs_world *world) {
  if (world && hs_world_size(world) > 1) {
    fflush(stdout);
    fflush(stderr);
    hs_world_abort(world, 1);
  }
}

void cli_dist_stats_json(FILE *f, const hs_session *s, const hs_epoch_stats *st) {
  if (st->world_size == 0) return;
  double steps = st->dist_steps > 0 ? (double)st->dist_steps : 1;
  fprintf(f, ", \"dist\": {\"world_size\": %d, \"ranks\": [", st->world_size);
  for (int r = 0; r < st->world_size; r++) {
    hs_epoch_stats rs;
    hs_epoch_stats_init(&rs);
    if (hs_session_rank_stats(s, r, &rs) != HS_OK) continue;
    double n = rs.dist_steps > 0 ? (double)rs.dist_steps : steps;
    fprintf(f,
            "%s{\"rank\": %d, \"role\": \"%s\", \"steps\": %lld, \"compute_s\": %.6f, "
            "\"comm_s\": %.6f, \"bytes_sent\": %llu, \"bytes_recv\": %llu, "
            "\"bytes_sent_per_step\": %.1f, \"compute_s_per_step\": %.6f, "
            "\"comm_s_per_step\": %.6f, \"compressed_steps\": %lld, \"late_gradients\": %lld, "
            "\"max_staleness\": %lld, \"updates\": %lld}",
            r ? ", " : "", r, rs.server ? "server" : "worker", (long long)rs.dist_steps,
            rs.dist_compute_s, rs.dist_comm_s, (unsigned long long)rs.dist_bytes_sent,
            (unsigned long long)rs.dist_bytes_recv, (double)rs.dist_bytes_sent / n,
            rs.dist_compute_s / n, rs.dist_comm_s / n, (long long)rs.dist_compressed_steps,
            (long long)rs.dist_late_gradients, (long long)rs.dist_max_staleness,
            (long long)rs.dist_updates);
  }
  fprintf(f, "]}");
}
