/* hetsage train: pipelined GNN training (GraphSAGE, GCN, GAT) from one
 * command. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_ctr.h"
#include "cli_dist.h"
#include "cli_session.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage train [options]\n"
          "\n"
          "Train a GNN (GraphSAGE, GCN or GAT: --model) by neighbour sampling: the\n"
          "sampler device samples and reindexes, the host gathers features, the\n"
          "trainer device trains; batches are pipelined. With no options: GraphSAGE\n"
          "on the bundled Cora on the default board.\n"
          "Click-through-rate models: hetsage train --task ctr --help.\n"
          "\n");
  cli_session_usage(f, true);
  cli_dist_usage(f);
  fprintf(f,
          "  --node-embedding D   learn a D-wide embedding per vertex (host store,\n"
          "                       row-wise Adagrad) as the input after the features,\n"
          "                       or as the whole input when the dataset has none;\n"
          "                       no checkpoints yet (--checkpoint is refused)\n"
          "  --node-embedding-lr X  the rows' learning rate (default 0.05)\n"
          "  --epochs N           most epochs (default 50)\n"
          "  --target-acc X       stop once validation accuracy reaches X\n"
          "  --patience P         stop after P epochs without a better validation\n"
          "                       (a resumed run counts those after best.json's)\n"
          "  --checkpoint DIR     save DIR/last.ckpt each epoch, DIR/best.ckpt on a\n"
          "                       better validation; Ctrl-C saves DIR/last.ckpt\n"
          "  --resume             continue from DIR/last.ckpt: the run's options (model,\n"
          "                       fanouts, batch, seed, learning rate, dropout, sampling,\n"
          "                       ...) come from the checkpoint; one given that differs\n"
          "                       is refused\n"
          "  --new-lr X           with --resume: continue with learning rate X\n"
          "  --force              train afresh into a --checkpoint DIR that holds the\n"
          "                       checkpoints of an earlier run (they are replaced)\n"
          "  --eval full|sampled  validation and test with full neighbourhoods\n"
          "                       (default with uniform sampling) or sampled ones\n"
          "                       drawn like the training batches (default with\n"
          "                       weighted and threshold sampling)\n"
          "  --free-host-topology release the host copy of the graph topology once\n"
          "                       the sampler holds it (memory saved: see --stats-json);\n"
          "                       evaluation is then sampled (--eval full is refused)\n"
          "  --stats-json F       one JSON object per epoch: stage busy times,\n"
          "                       utilisation, rates, bytes each way and the block\n"
          "                       transfer path, memory\n"
          "  --log-json F         one JSON object per epoch: loss and accuracies\n"
          "                       (epochs from 1 in both, as printed)\n"
          "  --json               final result as JSON on stdout (numbers that are not\n"
          "                       finite, e.g. a test accuracy without a test split,\n"
          "                       are null)\n"
          "  -q, --quiet          no progress on stderr\n"
          "  -h, --help\n"
          "\n"
          "Without a validation split (valid_idx.npy missing or empty) training runs\n"
          "every epoch with no early stopping (--patience and --target-acc are refused)\n"
          "and the last epoch's model is the one reported and saved as best.ckpt;\n"
          "without a test split no test accuracy is reported. Both are said at the start.\n"
          "\n"
          "Exit status: 0 done, 1 failure, 2 bad usage, 130 interrupted (a\n"
          "checkpoint was saved).\n");
}

typedef struct progress_ctx {
  bool tty;
  int64_t epoch, epochs;
  double epoch_s; /* mean seconds per epoch so far, 0: unknown */
} progress_ctx;

static void on_batch(void *user, int64_t batch, int64_t n_batches, double loss) {
  progress_ctx *p = user;
  if (!p->tty) return;
  fprintf(stderr, "\r\033[Kepoch %lld/%lld  batch %lld/%lld  loss %.4f", (long long)p->epoch + 1,
          (long long)p->epochs, (long long)batch + 1, (long long)n_batches, loss);
  fflush(stderr);
}

/* An epoch's validation or test evaluation: in one process (`alone`), a
 * Ctrl-C that came before it starts stops it too (the session's evaluation
 * watches only a flag raised while it runs, so that a program may evaluate
 * the model of an epoch it stopped; distributed, rank 0 evaluates for
 * every rank, whatever the flag). */
static hs_status evaluate(hs_session *s, hs_split split, bool full, bool alone, double *acc) {
  if (alone && interrupted) return HS_ERR_INTERRUPTED;
  return full ? hs_session_evaluate_full(s, split, acc) : hs_session_evaluate(s, split, acc);
}

static bool path_join(char *buf, size_t len, const char *dir, const char *name) {
  int n = snprintf(buf, len, "%s/%s", dir, name);
  return n > 0 && (size_t)n < len;
}

/* An accuracy for people: "n/a" where there is none (no such split). */
static const char *acc_text(double x, int digits, char *buf, size_t len) {
  if (isfinite(x)) snprintf(buf, len, "%.*f", digits, x);
  else snprintf(buf, len, "n/a");
  return buf;
}

/* JSON members: numbers NaN or infinite are written null. */
static void jnum(FILE *f, const char *key, double x, int digits) {
  fprintf(f, ", \"%s\": ", key);
  cli_json_number(f, x, digits);
}

static void ju64(FILE *f, const char *key, uint64_t x) {
  fprintf(f, ", \"%s\": %llu", key, (unsigned long long)x);
}

static void write_stats_json(FILE *f, const hs_session *s, const hs_epoch_stats *st,
                             double valid_acc) {
  fprintf(f, "{\"epoch\": %lld, \"batches\": %lld", (long long)st->epoch + 1,
          (long long)st->batches);
  jnum(f, "wall_s", st->wall_s, 6);
  fprintf(f, ", \"pipeline\": \"%s\", \"depth\": %d, \"stages\": {",
          hs_pipeline_mode_name(st->pipeline), st->depth);
  double busiest = 0;
  for (int i = 0; i < HS_STAGE_COUNT_; i++) {
    fprintf(f, "%s\"%s\": {\"busy_s\": ", i ? ", " : "", hs_stage_name((hs_stage)i));
    cli_json_number(f, st->stage_busy_s[i], 6);
    fprintf(f, ", \"wait_s\": ");
    cli_json_number(f, st->stage_wait_s[i], 6);
    fputc('}', f);
    if (st->stage_busy_s[i] > busiest) busiest = st->stage_busy_s[i];
  }
  fputc('}', f);
  jnum(f, "wall_over_busiest", busiest > 0 ? st->wall_s / busiest : 0.0, 4);
  jnum(f, "trainer_utilisation", st->trainer_utilisation, 4);
  jnum(f, "sampled_edges_per_s", st->sampled_edges_per_s, 1);
  jnum(f, "gather_gb_per_s", st->gather_bytes_per_s / 1e9, 4);
  ju64(f, "bytes_uploaded", st->bytes_uploaded);
  ju64(f, "cache_lookups", st->cache_lookups);
  ju64(f, "cache_hits", st->cache_hits);
  jnum(f, "cache_hit_rate",
       st->cache_lookups ? (double)st->cache_hits / (double)st->cache_lookups : 0.0, 4);
  ju64(f, "cache_rows", st->cache_rows);
  ju64(f, "cache_bytes_saved", st->cache_bytes_saved);
  ju64(f, "cache_device_bytes", st->cache_device_bytes);
  ju64(f, "host_lookups", st->host_lookups);
  ju64(f, "host_hits", st->host_hits);
  ju64(f, "host_bytes_read", st->host_bytes_read);
  ju64(f, "host_memory_bytes", st->host_memory_bytes);
  ju64(f, "peak_rss_bytes", st->peak_rss_bytes);
  fprintf(f, ", \"transfer\": \"%s\"", hs_transfer_name(st->transfer));
  ju64(f, "bytes_to_host", st->bytes_to_host);
  ju64(f, "bytes_device_to_device", st->bytes_device_to_device);
  jnum(f, "upload_s", st->upload_s, 6);
  ju64(f, "host_topology_freed_bytes", st->host_topology_freed_bytes);
  ju64(f, "feature_huge_page_bytes", st->feature_huge_page_bytes);
  fprintf(f, ", \"feature_format\": \"%s\"", hs_feat_format_name(st->feature_format));
  ju64(f, "feature_nnz", st->feature_nnz);
  ju64(f, "feature_bytes_dense", st->feature_bytes_dense);
  jnum(f, "loss", st->loss, 6);
  jnum(f, "valid_acc", valid_acc, 4);
  cli_dist_stats_json(f, s, st);
  fputs("}\n", f);
}

/* An epoch's validation or test evaluation that failed: 1 (said), or 130
 * when Ctrl-C stopped it. Nothing of the epoch is saved then: `last`
 * (NULL: no checkpoint) still holds the one before, from which --resume
 * trains the epoch again, to the same bits, and evaluates it. */
static int eval_failed(hs_status st, const char *what, int64_t epoch, const char *last) {
  if (st != HS_ERR_INTERRUPTED) {
    cli_report("train", what, st);
    return 1;
  }
  bool held = last && access(last, R_OK) == 0;
  fprintf(stderr, "\nhetsage train: interrupted during the %s after epoch %lld; nothing of it "
          "was saved%s%s%s\n", what, (long long)epoch + 1, held ? " (" : "", held ? last : "",
          held ? " holds the epoch before: --resume trains it again)" : "");
  return 130;
}

static int train(int argc, char **argv, hs_world **world) {
  cli_session_args a;
  cli_session_args_init(&a);
  cli_dist_args da;
  cli_dist_args_init(&da);
  uint64_t epochs = 50, patience = 0;
  double target = 0;
  const char *ckpt_dir = NULL, *stats_path = NULL, *log_path = NULL;
  bool resume = false, json = false, quiet = false, full_eval = true, eval_set = false;
  bool force = false, new_lr = false;
  float new_lr_value = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int r = cli_session_arg("train", &a, argc, argv, &i);
    if (r == 0) r = cli_dist_arg("train", &da, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    bool has_val = i + 1 < argc;
    if (strcmp(o, "--epochs") == 0 && has_val) {
      if (!cli_opt_u64("train", o, argv[++i], 1, 1000000, &epochs)) return 2;
    } else if (strcmp(o, "--patience") == 0 && has_val) {
      if (!cli_opt_u64("train", o, argv[++i], 1, 1000000, &patience)) return 2;
    } else if (strcmp(o, "--target-acc") == 0 && has_val) {
      if (!cli_opt_number("train", o, argv[++i], 0, true, 1, false, &target)) return 2;
    } else if (strcmp(o, "--checkpoint") == 0 && has_val) {
      ckpt_dir = argv[++i];
    } else if (strcmp(o, "--node-embedding") == 0 && has_val) {
      uint64_t d;
      if (!cli_opt_u64("train", o, argv[++i], 1, 4096, &d)) return 2;
      a.cfg.node_embedding = (int32_t)d;
    } else if (strcmp(o, "--node-embedding-lr") == 0 && has_val) {
      double d;
      if (!cli_opt_number("train", o, argv[++i], 0, true, 100, true, &d)) return 2;
      a.cfg.node_embedding_lr = (float)d;
    } else if (strcmp(o, "--stats-json") == 0 && has_val) {
      stats_path = argv[++i];
    } else if (strcmp(o, "--log-json") == 0 && has_val) {
      log_path = argv[++i];
    } else if (strcmp(o, "--eval") == 0 && has_val) {
      static const char *const names[] = {"full", "sampled"};
      int k;
      if (!cli_opt_choice("train", o, argv[++i], names, 2, &k)) return 2;
      full_eval = k == 0;
      eval_set = true;
    } else if (strcmp(o, "--free-host-topology") == 0) {
      a.cfg.free_host_topology = true;
    } else if (strcmp(o, "--resume") == 0) {
      resume = true;
    } else if (strcmp(o, "--force") == 0) {
      force = true;
    } else if (strcmp(o, "--new-lr") == 0 && has_val) {
      double d;
      if (!cli_opt_number("train", o, argv[++i], 0, true, HS_MAX_LR, true, &d)) return 2;
      if (a.set & CLI_SET_LR)
        return cli_usage_error("train", "--new-lr and --lr exclude each other");
      a.cfg.lr = new_lr_value = (float)d;
      a.set |= CLI_SET_LR;
      new_lr = true;
    } else if (strcmp(o, "--json") == 0) {
      json = true;
    } else if (strcmp(o, "-q") == 0 || strcmp(o, "--quiet") == 0) {
      quiet = true;
    } else if (o[0] == '-' && !has_val &&
               (!strcmp(o, "--epochs") || !strcmp(o, "--patience") || !strcmp(o, "--target-acc") ||
                !strcmp(o, "--checkpoint") || !strcmp(o, "--stats-json") ||
                !strcmp(o, "--log-json") || !strcmp(o, "--eval") || !strcmp(o, "--new-lr") ||
                !strcmp(o, "--node-embedding") || !strcmp(o, "--node-embedding-lr"))) {
      return cli_usage_error("train", "option %s needs a value", o);
    } else {
      return cli_usage_error("train", "unknown option '%s'", o);
    }
  }
  if (resume && !ckpt_dir) return cli_usage_error("train", "--resume needs --checkpoint DIR");
  if (force && !ckpt_dir) return cli_usage_error("train", "--force needs --checkpoint DIR");
  if (force && resume) return cli_usage_error("train", "--force and --resume exclude each other");
  if (new_lr && !resume) return cli_usage_error("train", "--new-lr changes a resumed run: it needs --resume");
  if (new_lr && a.cfg.lr != new_lr_value)
    return cli_usage_error("train", "--new-lr and --lr exclude each other");
  /* Full-neighbour evaluation walks the host topology, which the option
   * releases: sampled evaluation runs on the sampler instead. */
  if (a.cfg.free_host_topology) {
    if (eval_set && full_eval)
      return cli_usage_error("train", "--eval full needs the host topology, which "
                             "--free-host-topology releases; use --eval sampled");
    full_eval = false;
  }
  int drc = cli_dist_start("train", &da, &argc, &argv, &a.cfg, world);
  if (drc != 0) return drc;
  /* Rank 0 alone reports progress and results and writes files; every
   * rank shows its placement. */
  bool root = cli_dist_root(*world);
  if (!root) {
    stats_path = log_path = NULL;
    json = false;
  }

  /* Outputs that cannot be written are said now, not after an epoch. */
  if ((stats_path && !cli_writable("train", "--stats-json", stats_path)) ||
      (log_path && !cli_writable("train", "--log-json", log_path)))
    return 1;
  char last[1100] = "", best[1100] = "", best_json[1100] = "";
  if (ckpt_dir) {
    struct stat sb;
    if (root && mkdir(ckpt_dir, 0755) != 0 &&
        (errno != EEXIST || stat(ckpt_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))) {
      fprintf(stderr, "hetsage train: --checkpoint %s: %s\n", ckpt_dir,
              errno == EEXIST ? "not a folder" : strerror(errno));
      return 1;
    }
    if (!path_join(last, sizeof last, ckpt_dir, "last.ckpt") ||
        !path_join(best, sizeof best, ckpt_dir, "best.ckpt") ||
        !path_join(best_json, sizeof best_json, ckpt_dir, "best.json"))
      return cli_usage_error("train", "--checkpoint path too long");
    if (root && resume && access(last, R_OK) != 0) {
      fprintf(stderr, "hetsage train: --resume: no checkpoint %s: %s\n", last, strerror(errno));
      return 1;
    }
    /* A fresh run would replace an earlier run's models, maybe better ones. */
    const char *held = access(best, F_OK) == 0 ? best : access(last, F_OK) == 0 ? last : NULL;
    if (held && !resume && !force)
      return cli_usage_error("train", "--checkpoint %s holds the checkpoints of an earlier run "
                             "(%s): --resume continues that run, --force replaces them",
                             ckpt_dir, held);
    /* The run's options come from its checkpoint. */
    int32_t emb_asked = a.cfg.node_embedding;
    int r = resume ? cli_session_from_checkpoint("train", &a, last, true, new_lr) : 0;
    if (r != 0) return r;
    if (resume && emb_asked > 0 && a.cfg.node_embedding != emb_asked) {
      if (a.cfg.node_embedding <= 0)
        return cli_usage_error("train", "--node-embedding %d: the checkpoint %s holds no node "
                               "embeddings (its run had none, or an older hetsage did not keep "
                               "them): --resume cannot continue it with them", (int)emb_asked,
                               last);
      return cli_usage_error("train", "--node-embedding %d conflicts with the checkpoint %s, "
                             "whose run used %d: --resume continues that run with its options",
                             (int)emb_asked, last, (int)a.cfg.node_embedding);
    }
  }
  /* Evaluation draws neighbourhoods the way training does unless told (a
   * resumed run's sampling is its checkpoint's): a full neighbourhood holds
   * the edges weighted and threshold sampling would rarely or never pick. */
  if (!eval_set && a.cfg.sampling != HS_SAMPLING_UNIFORM) full_eval = false;
  /* Opened at their first record: a run that fails before one leaves an
   * existing file as it was. */
  FILE *stats_f = NULL, *log_f = NULL;

  hs_runtime *rt;
  hs_dataset *ds;
  hs_session *s;
  int rc = cli_session_open("train", &a, &rt, &ds, &s);
  if (rc != 0) goto out_files;
  hs_status st;
  /* --force: the earlier run's checkpoints go now that this run can start,
   * so that none is taken for this run's (a best.ckpt it may never write). */
  const char *const earlier[] = {best, best_json, last};
  if (force && ckpt_dir && root && !cli_remove_files("train", "--force", earlier, 3)) {
    rc = 1;
    goto out;
  }
  /* Splits are checked now, not after the first epoch. */
  hs_dataset_info info;
  hs_dataset_info_init(&info);
  hs_dataset_get_info(ds, &info);
  bool has_valid = info.split_size[HS_SPLIT_VALID] > 0, has_test = info.split_size[HS_SPLIT_TEST] > 0;
  if (!has_valid && (patience > 0 || target > 0)) {
    rc = cli_usage_error("train", "%s needs a validation split, and %s/valid_idx.npy is %s",
                         patience > 0 ? "--patience" : "--target-acc", a.path,
                         info.has_split[HS_SPLIT_VALID] ? "empty" : "missing");
    goto out;
  }
  if (resume && (st = hs_session_resume(s, last, new_lr ? HS_RESUME_NEW_LR : 0)) != HS_OK) {
    cli_report("train", "resuming", st);
    rc = 1;
    goto out;
  }
  if (!has_valid)
    fprintf(stderr, "note: %s/valid_idx.npy is %s: no validation, so no early stopping; the "
            "last epoch's model is reported%s\n", a.path,
            info.has_split[HS_SPLIT_VALID] ? "empty" : "missing",
            ckpt_dir ? " and saved as best.ckpt" : "");
  if (!has_test)
    fprintf(stderr, "note: %s/test_idx.npy is %s: no test accuracy\n", a.path,
            info.has_split[HS_SPLIT_TEST] ? "empty" : "missing");
  if (!quiet) {
    char plan[4096];
    hs_session_describe(s, plan, sizeof plan);
    if (root)
      fprintf(stderr, "dataset   %lld vertices, %lld edges, %lld features, %d classes\n",
              (long long)info.num_vertices, (long long)info.num_edges,
              (long long)info.num_features, (int)info.num_classes);
    cli_dist_print(stderr, *world, plan);
    if (resume && root)
      fprintf(stderr, "resumed   from %s at epoch %lld\n", last, (long long)hs_session_epoch(s));
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  hs_session_set_stop_flag(s, &interrupted);
  progress_ctx pc = {.tty = root && !quiet && isatty(2), .epochs = (int64_t)epochs};
  hs_session_set_progress(s, on_batch, &pc);

  /* A resumed run's best so far is its checkpoint's. */
  double best_valid = resume && has_valid ? cli_best_read(ckpt_dir, "valid_acc") : -1;
  double test_at_best = NAN, total_s = 0, last_loss = NAN;
  int64_t best_epoch = -1, since_best = 0, done = 0;
  const char *stop_reason = "max epochs";
  /* ... and so is its count of epochs without improvement (--patience):
   * those after its best epoch (best.json's); a run that stopped for it
   * stops again without training. */
  if (resume && has_valid && best_valid >= 0) {
    double at = cli_best_read(ckpt_dir, "epoch");
    if (at >= 1 && at <= (double)hs_session_epoch(s)) since_best = hs_session_epoch(s) - (int64_t)at;
  }
  bool spent = patience > 0 && since_best >= (int64_t)patience;
  if (spent && hs_session_epoch(s) < (int64_t)epochs) stop_reason = "no validation improvement";
  while (!spent && hs_session_epoch(s) < (int64_t)epochs) {
    pc.epoch = hs_session_epoch(s);
    hs_epoch_stats es;
    hs_epoch_stats_init(&es);
    st = hs_session_train_epoch(s, &es);
    if (pc.tty) fputs("\r\033[K", stderr);
    if (st != HS_OK) {
      cli_report("train", "training", st);
      rc = 1;
      goto out;
    }
    if (es.interrupted) {
      const char *where = ckpt_dir ? last : "hetsage-interrupted.ckpt";
      st = hs_session_save(s, where);
      if (st != HS_OK) {
        cli_report("train", "saving the checkpoint after Ctrl-C", st);
        rc = 1;
      } else {
        if (root)
          fprintf(stderr, "interrupted: checkpoint saved to %s (resume with --checkpoint %s "
                  "--resume)\n", where, ckpt_dir ? ckpt_dir : "DIR holding it as last.ckpt");
        rc = 130;
      }
      goto out;
    }
    done++;
    total_s += es.wall_s;
    last_loss = es.loss;
    double valid = NAN;
    if (has_valid && (st = evaluate(s, HS_SPLIT_VALID, full_eval, !*world, &valid)) != HS_OK) {
      rc = eval_failed(st, "validation", es.epoch, ckpt_dir ? last : NULL);
      goto out;
    }
    /* The epoch's stats before any test evaluation (which can take longer
     * than the epoch on a large test split). */
    if (stats_path && !stats_f && !(stats_f = fopen(stats_path, "w"))) {
      fprintf(stderr, "hetsage train: cannot write %s: %s\n", stats_path, strerror(errno));
      rc = 1;
      goto out;
    }
    if (stats_f) {
      write_stats_json(stats_f, s, &es, valid);
      if (!cli_file_check("train", stats_f, stats_path)) {
        rc = 1;
        goto out;
      }
    }
    /* Without validation, each epoch's model is the latest, and the best. */
    bool better = !has_valid || valid > best_valid;
    if (better) {
      best_valid = valid;
      best_epoch = es.epoch;
      since_best = 0;
      if (has_test && (st = evaluate(s, HS_SPLIT_TEST, full_eval, !*world, &test_at_best)) != HS_OK) {
        rc = eval_failed(st, "test evaluation", es.epoch, ckpt_dir ? last : NULL);
        goto out;
      }
    } else {
      since_best++;
    }
    if (ckpt_dir) {
      if ((st = hs_session_save(s, last)) != HS_OK || (better && (st = hs_session_save(s, best)) != HS_OK)) {
        cli_report("train", "saving a checkpoint", st);
        rc = 1;
        goto out;
      }
      /* One writer of the directory: rank 0 (it also writes the checkpoints). */
      if (better && root && !cli_best_write("train", ckpt_dir, "valid_acc", valid, es.epoch)) {
        rc = 1;
        goto out;
      }
    }
    if (root && !quiet) {
      double eta = (total_s / (double)done) * (double)((int64_t)epochs - hs_session_epoch(s));
      char v[16];
      fprintf(stderr,
              "epoch %3lld  loss %.4f  train acc %.3f  valid acc %s%s  %.2f s  %.0f edges/s  "
              "ETA %.0f s\n",
              (long long)es.epoch + 1, es.loss, es.train_acc, acc_text(valid, 3, v, sizeof v),
              better ? "*" : " ", es.wall_s, es.sampled_edges_per_s, eta);
    }
    if (log_path && !log_f && !(log_f = fopen(log_path, "w"))) {
      fprintf(stderr, "hetsage train: cannot write %s: %s\n", log_path, strerror(errno));
      rc = 1;
      goto out;
    }
    if (log_f) {
      fprintf(log_f, "{\"epoch\": %lld", (long long)es.epoch + 1);
      jnum(log_f, "loss", es.loss, 6);
      jnum(log_f, "train_acc", es.train_acc, 4);
      jnum(log_f, "valid_acc", valid, 4);
      jnum(log_f, "wall_s", es.wall_s, 4);
      fputs("}\n", log_f);
      if (!cli_file_check("train", log_f, log_path)) {
        rc = 1;
        goto out;
      }
    }
    if (target > 0 && valid >= target) {
      stop_reason = "target accuracy";
      break;
    }
    if ((spent = patience > 0 && since_best >= (int64_t)patience)) {
      stop_reason = "no validation improvement";
      break;
    }
  }
  int64_t epochs_run = hs_session_epoch(s);
  if (best_epoch < 0) {
    /* No epoch of this resumed run beat its checkpoint's best (or none
     * ran: resumed at the end). The best model is then the folder's
     * best.ckpt where there is one (one process: a distributed run's
     * folder may be rank 0's alone), else the model as it is. */
    bool from_best = resume && has_valid && !*world && access(best, R_OK) == 0;
    if (from_best && (st = hs_session_resume(s, best, 0)) != HS_OK) {
      cli_report("train", best, st);
      rc = 1;
      goto out;
    }
    best_valid = NAN;
    if ((has_valid && (st = evaluate(s, HS_SPLIT_VALID, full_eval, !*world, &best_valid)) != HS_OK) ||
        (has_test && (st = evaluate(s, HS_SPLIT_TEST, full_eval, !*world, &test_at_best)) != HS_OK)) {
      if (st == HS_ERR_INTERRUPTED) {
        fprintf(stderr, "hetsage train: interrupted during the evaluation\n");
        rc = 130;
      } else {
        cli_report("train", "evaluation", st);
        rc = 1;
      }
      goto out;
    }
    double at = from_best ? cli_best_read(ckpt_dir, "epoch") : -1;
    best_epoch = at >= 1 ? (int64_t)at - 1 : hs_session_epoch(s) - 1;
  }
  if (!root) {
    /* rank 0 reports */
  } else if (json) {
    printf("{\"epochs\": %lld, \"stopped_by\": \"%s\"", (long long)epochs_run, stop_reason);
    jnum(stdout, "final_loss", last_loss, 6);
    printf(", \"best_epoch\": %lld", (long long)best_epoch + 1);
    jnum(stdout, "valid_acc", best_valid, 4);
    jnum(stdout, "test_acc", test_at_best, 4);
    jnum(stdout, "train_s", total_s, 3);
    printf("}\n");
  } else {
    char t[16], v[16];
    printf("test accuracy %s (validation %s at epoch %lld; %lld epochs, stopped by %s, "
           "%.1f s training)\n",
           acc_text(test_at_best, 4, t, sizeof t), acc_text(best_valid, 4, v, sizeof v),
           (long long)best_epoch + 1, (long long)epochs_run, stop_reason, total_s);
  }
out:
  cli_session_close(rt, ds, s);
out_files:;
  /* A run that wrote no record (resumed at its end) leaves them empty. */
  const char *const paths[2] = {stats_path, log_path};
  FILE **files[2] = {&stats_f, &log_f};
  for (int k = 0; k < 2 && rc == 0; k++)
    if (paths[k] && !*files[k] && !(*files[k] = fopen(paths[k], "w"))) {
      fprintf(stderr, "hetsage train: cannot write %s: %s\n", paths[k], strerror(errno));
      rc = 1;
    }
  if (stats_f && !cli_file_close("train", stats_f, stats_path) && rc == 0) rc = 1;
  if (log_f && !cli_file_close("train", log_f, log_path) && rc == 0) rc = 1;
  return rc;
}

int cmd_train(int argc, char **argv) {
  if (cli_is_ctr(argc, argv)) return cmd_train_ctr(argc, argv);
  hs_world *world = NULL;
  int rc = train(argc, argv, &world);
  /* A rank that fails leaves the others waiting for it: end them all. */
  if (rc != 0 && rc != 130) cli_dist_fail(world);
  hs_world_destroy(world);
  return rc;
}
