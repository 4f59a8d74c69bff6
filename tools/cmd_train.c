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
  cli_session_usage(f);
  fprintf(f,
          "  --node-embedding D   learn a D-wide embedding per vertex (host store,\n"
          "                       row-wise Adagrad) as the input after the features,\n"
          "                       or as the whole input when the dataset has none;\n"
          "                       no checkpoints yet (--checkpoint is refused)\n"
          "  --node-embedding-lr X  the rows' learning rate (default 0.05)\n"
          "  --epochs N           most epochs (default 50)\n"
          "  --target-acc X       stop once validation accuracy reaches X\n"
          "  --patience P         stop after P epochs without a better validation\n"
          "  --checkpoint DIR     save DIR/last.ckpt each epoch, DIR/best.ckpt on a\n"
          "                       better validation; Ctrl-C saves DIR/last.ckpt\n"
          "  --resume             continue from DIR/last.ckpt\n"
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
          "  --json               final result as JSON on stdout\n"
          "  -q, --quiet          no progress on stderr\n"
          "  -h, --help\n"
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

static hs_status evaluate(hs_session *s, hs_split split, bool full, double *acc) {
  return full ? hs_session_evaluate_full(s, split, acc) : hs_session_evaluate(s, split, acc);
}

static bool path_join(char *buf, size_t len, const char *dir, const char *name) {
  int n = snprintf(buf, len, "%s/%s", dir, name);
  return n > 0 && (size_t)n < len;
}

static void write_stats_json(FILE *f, const hs_epoch_stats *st, double valid_acc) {
  fprintf(f, "{\"epoch\": %lld, \"batches\": %lld, \"wall_s\": %.6f, \"pipeline\": \"%s\", "
             "\"depth\": %d, \"stages\": {",
          (long long)st->epoch, (long long)st->batches, st->wall_s,
          hs_pipeline_mode_name(st->pipeline), st->depth);
  double busiest = 0;
  for (int i = 0; i < HS_STAGE_COUNT_; i++) {
    fprintf(f, "%s\"%s\": {\"busy_s\": %.6f, \"wait_s\": %.6f}", i ? ", " : "",
            hs_stage_name((hs_stage)i), st->stage_busy_s[i], st->stage_wait_s[i]);
    if (st->stage_busy_s[i] > busiest) busiest = st->stage_busy_s[i];
  }
  fprintf(f,
          "}, \"wall_over_busiest\": %.4f, \"trainer_utilisation\": %.4f, "
          "\"sampled_edges_per_s\": %.1f, \"gather_gb_per_s\": %.4f, \"bytes_uploaded\": %llu, "
          "\"cache_lookups\": %llu, \"cache_hits\": %llu, \"cache_hit_rate\": %.4f, "
          "\"cache_rows\": %llu, \"cache_bytes_saved\": %llu, \"cache_device_bytes\": %llu, "
          "\"host_lookups\": %llu, \"host_hits\": %llu, \"host_bytes_read\": %llu, "
          "\"host_memory_bytes\": %llu, \"peak_rss_bytes\": %llu, "
          "\"transfer\": \"%s\", \"bytes_to_host\": %llu, \"bytes_device_to_device\": %llu, "
          "\"upload_s\": %.6f, \"host_topology_freed_bytes\": %llu, "
          "\"feature_huge_page_bytes\": %llu, \"feature_format\": \"%s\", "
          "\"feature_nnz\": %llu, \"feature_bytes_dense\": %llu, "
          "\"loss\": %.6f, \"valid_acc\": %.4f}\n",
          busiest > 0 ? st->wall_s / busiest : 0.0, st->trainer_utilisation,
          st->sampled_edges_per_s, st->gather_bytes_per_s / 1e9,
          (unsigned long long)st->bytes_uploaded, (unsigned long long)st->cache_lookups,
          (unsigned long long)st->cache_hits,
          st->cache_lookups ? (double)st->cache_hits / (double)st->cache_lookups : 0.0,
          (unsigned long long)st->cache_rows, (unsigned long long)st->cache_bytes_saved,
          (unsigned long long)st->cache_device_bytes, (unsigned long long)st->host_lookups,
          (unsigned long long)st->host_hits, (unsigned long long)st->host_bytes_read,
          (unsigned long long)st->host_memory_bytes, (unsigned long long)st->peak_rss_bytes,
          hs_transfer_name(st->transfer), (unsigned long long)st->bytes_to_host,
          (unsigned long long)st->bytes_device_to_device, st->upload_s,
          (unsigned long long)st->host_topology_freed_bytes,
          (unsigned long long)st->feature_huge_page_bytes, hs_feat_format_name(st->feature_format),
          (unsigned long long)st->feature_nnz, (unsigned long long)st->feature_bytes_dense,
          st->loss, valid_acc);
  fflush(f);
}

int cmd_train(int argc, char **argv) {
  if (cli_is_ctr(argc, argv)) return cmd_train_ctr(argc, argv);
  cli_session_args a;
  cli_session_args_init(&a);
  uint64_t epochs = 50, patience = 0;
  double target = 0;
  const char *ckpt_dir = NULL, *stats_path = NULL, *log_path = NULL;
  bool resume = false, json = false, quiet = false, full_eval = true, eval_set = false;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    int r = cli_session_arg("train", &a, argc, argv, &i);
    if (r < 0) return 2;
    if (r > 0) continue;
    if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
      usage(stdout);
      return 0;
    }
    bool has_val = i + 1 < argc;
    if (strcmp(o, "--epochs") == 0 && has_val) {
      if (!cli_parse_u64(argv[++i], &epochs) || epochs < 1 || epochs > 1000000)
        return cli_usage_error("train", "--epochs '%s': expected 1..1000000", argv[i]);
    } else if (strcmp(o, "--patience") == 0 && has_val) {
      if (!cli_parse_u64(argv[++i], &patience) || patience < 1)
        return cli_usage_error("train", "--patience '%s': expected >= 1", argv[i]);
    } else if (strcmp(o, "--target-acc") == 0 && has_val) {
      if (!cli_parse_double(argv[++i], &target) || !(target > 0 && target <= 1))
        return cli_usage_error("train", "--target-acc '%s': expected (0, 1]", argv[i]);
    } else if (strcmp(o, "--checkpoint") == 0 && has_val) {
      ckpt_dir = argv[++i];
    } else if (strcmp(o, "--node-embedding") == 0 && has_val) {
      uint64_t d;
      if (!cli_parse_u64(argv[++i], &d) || d < 1 || d > 4096)
        return cli_usage_error("train", "--node-embedding '%s': expected 1..4096", argv[i]);
      a.cfg.node_embedding = (int32_t)d;
    } else if (strcmp(o, "--node-embedding-lr") == 0 && has_val) {
      double d;
      if (!cli_parse_double(argv[++i], &d) || !(d > 0 && d < 100))
        return cli_usage_error("train", "--node-embedding-lr '%s': expected a rate in (0, 100)",
                               argv[i]);
      a.cfg.node_embedding_lr = (float)d;
    } else if (strcmp(o, "--stats-json") == 0 && has_val) {
      stats_path = argv[++i];
    } else if (strcmp(o, "--log-json") == 0 && has_val) {
      log_path = argv[++i];
    } else if (strcmp(o, "--eval") == 0 && has_val) {
      const char *v = argv[++i];
      if (strcmp(v, "full") == 0) full_eval = true;
      else if (strcmp(v, "sampled") == 0) full_eval = false;
      else return cli_usage_error("train", "--eval '%s': expected full or sampled", v);
      eval_set = true;
    } else if (strcmp(o, "--free-host-topology") == 0) {
      a.cfg.free_host_topology = true;
    } else if (strcmp(o, "--resume") == 0) {
      resume = true;
    } else if (strcmp(o, "--json") == 0) {
      json = true;
    } else if (strcmp(o, "-q") == 0 || strcmp(o, "--quiet") == 0) {
      quiet = true;
    } else if (o[0] == '-' && !has_val &&
               (!strcmp(o, "--epochs") || !strcmp(o, "--patience") || !strcmp(o, "--target-acc") ||
                !strcmp(o, "--checkpoint") || !strcmp(o, "--stats-json") ||
                !strcmp(o, "--log-json") || !strcmp(o, "--eval") ||
                !strcmp(o, "--node-embedding") || !strcmp(o, "--node-embedding-lr"))) {
      return cli_usage_error("train", "option %s needs a value", o);
    } else {
      return cli_usage_error("train", "unknown option '%s'", o);
    }
  }
  if (resume && !ckpt_dir) return cli_usage_error("train", "--resume needs --checkpoint DIR");
  if (ckpt_dir && a.cfg.node_embedding > 0)
    return cli_usage_error("train", "--checkpoint: checkpoints of node embeddings are not "
                           "written yet");
  /* Evaluation draws neighbourhoods the way training does unless told: a
   * full neighbourhood holds the edges weighted and threshold sampling
   * would rarely or never pick. */
  if (!eval_set && a.cfg.sampling != HS_SAMPLING_UNIFORM) full_eval = false;
  /* Full-neighbour evaluation walks the host topology, which the option
   * releases: sampled evaluation runs on the sampler instead. */
  if (a.cfg.free_host_topology) {
    if (eval_set && full_eval)
      return cli_usage_error("train", "--eval full needs the host topology, which "
                             "--free-host-topology releases; use --eval sampled");
    full_eval = false;
  }

  char last[1100] = "", best[1100] = "";
  if (ckpt_dir) {
    if (mkdir(ckpt_dir, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "hetsage train: cannot create %s: %s\n", ckpt_dir, strerror(errno));
      return 1;
    }
    if (!path_join(last, sizeof last, ckpt_dir, "last.ckpt") ||
        !path_join(best, sizeof best, ckpt_dir, "best.ckpt"))
      return cli_usage_error("train", "--checkpoint path too long");
    if (resume && access(last, R_OK) != 0) {
      fprintf(stderr, "hetsage train: --resume: no checkpoint %s: %s\n", last, strerror(errno));
      return 1;
    }
  }
  FILE *stats_f = NULL, *log_f = NULL;
  if (stats_path && !(stats_f = fopen(stats_path, "w"))) {
    fprintf(stderr, "hetsage train: cannot write %s: %s\n", stats_path, strerror(errno));
    return 1;
  }
  if (log_path && !(log_f = fopen(log_path, "w"))) {
    fprintf(stderr, "hetsage train: cannot write %s: %s\n", log_path, strerror(errno));
    if (stats_f) fclose(stats_f);
    return 1;
  }

  hs_runtime *rt;
  hs_dataset *ds;
  hs_session *s;
  int rc = cli_session_open("train", &a, &rt, &ds, &s);
  if (rc != 0) goto out_files;
  hs_status st;
  if (resume && (st = hs_session_load(s, last)) != HS_OK) {
    cli_report("train", "resuming", st);
    rc = 1;
    goto out;
  }
  if (!quiet) {
    char plan[4096];
    hs_session_describe(s, plan, sizeof plan);
    hs_dataset_info info;
    hs_dataset_info_init(&info);
    hs_dataset_get_info(ds, &info);
    fprintf(stderr, "dataset   %lld vertices, %lld edges, %lld features, %d classes\n",
            (long long)info.num_vertices, (long long)info.num_edges,
            (long long)info.num_features, (int)info.num_classes);
    fputs(plan, stderr);
    if (resume) fprintf(stderr, "resumed   from %s at epoch %lld\n", last, (long long)hs_session_epoch(s));
  }

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  hs_session_set_stop_flag(s, &interrupted);
  progress_ctx pc = {.tty = !quiet && isatty(2), .epochs = (int64_t)epochs};
  hs_session_set_progress(s, on_batch, &pc);

  double best_valid = -1, test_at_best = NAN, total_s = 0, last_loss = NAN;
  int64_t best_epoch = -1, since_best = 0, done = 0;
  const char *stop_reason = "max epochs";
  while (hs_session_epoch(s) < (int64_t)epochs) {
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
        fprintf(stderr, "interrupted: checkpoint saved to %s (resume with --checkpoint %s --resume)\n",
                where, ckpt_dir ? ckpt_dir : "DIR holding it as last.ckpt");
        rc = 130;
      }
      goto out;
    }
    done++;
    total_s += es.wall_s;
    last_loss = es.loss;
    double valid = NAN;
    if ((st = evaluate(s, HS_SPLIT_VALID, full_eval, &valid)) != HS_OK) {
      cli_report("train", "validation", st);
      rc = 1;
      goto out;
    }
    /* The epoch's stats before any test evaluation (which can take longer
     * than the epoch on a large test split). */
    if (stats_f) write_stats_json(stats_f, &es, valid);
    bool better = valid > best_valid;
    if (better) {
      best_valid = valid;
      best_epoch = es.epoch;
      since_best = 0;
      if ((st = evaluate(s, HS_SPLIT_TEST, full_eval, &test_at_best)) != HS_OK) {
        cli_report("train", "test evaluation", st);
        rc = 1;
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
    }
    if (!quiet) {
      double eta = (total_s / (double)done) * (double)((int64_t)epochs - hs_session_epoch(s));
      fprintf(stderr,
              "epoch %3lld  loss %.4f  train acc %.3f  valid acc %.3f%s  %.2f s  %.0f edges/s  "
              "ETA %.0f s\n",
              (long long)es.epoch + 1, es.loss, es.train_acc, valid, better ? "*" : " ",
              es.wall_s, es.sampled_edges_per_s, eta);
    }
    if (log_f) {
      fprintf(log_f, "{\"epoch\": %lld, \"loss\": %.6f, \"train_acc\": %.4f, \"valid_acc\": %.4f, \"wall_s\": %.4f}\n",
              (long long)es.epoch, es.loss, es.train_acc, valid, es.wall_s);
      fflush(log_f);
    }
    if (target > 0 && valid >= target) {
      stop_reason = "target accuracy";
      break;
    }
    if (patience > 0 && since_best >= (int64_t)patience) {
      stop_reason = "no validation improvement";
      break;
    }
  }
  if (best_epoch < 0) {
    /* Resumed at the end: nothing trained in this run, evaluate as is. */
    if ((st = evaluate(s, HS_SPLIT_VALID, full_eval, &best_valid)) != HS_OK ||
        (st = evaluate(s, HS_SPLIT_TEST, full_eval, &test_at_best)) != HS_OK) {
      cli_report("train", "evaluation", st);
      rc = 1;
      goto out;
    }
    best_epoch = hs_session_epoch(s) - 1;
  }
  if (json) {
    printf("{\"epochs\": %lld, \"stopped_by\": \"%s\", \"final_loss\": %.6f, \"best_epoch\": %lld, "
           "\"valid_acc\": %.4f, \"test_acc\": %.4f, \"train_s\": %.3f}\n",
           (long long)hs_session_epoch(s), stop_reason, last_loss, (long long)best_epoch + 1,
           best_valid, test_at_best, total_s);
  } else {
    printf("test accuracy %.4f (validation %.4f at epoch %lld; %lld epochs, stopped by %s, "
           "%.1f s training)\n",
           test_at_best, best_valid, (long long)best_epoch + 1, (long long)hs_session_epoch(s),
           stop_reason, total_s);
  }
out:
  cli_session_close(rt, ds, s);
out_files:
  if (stats_f) fclose(stats_f);
  if (log_f) fclose(log_f);
  return rc;
}
