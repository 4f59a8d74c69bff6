/* hetsage bringup: check a board against its profile, every kernel on
 * every device against its reference, peaks against thresholds. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: hetsage bringup [--board B] [--level quick|standard|long]\n"
          "                       [--soak-seconds S] [--json F] [--junit F] [-v] [-q]\n"
          "\n"
          "Bring up a board: the devices its profile expects are present (a missing\n"
          "required device fails, a missing optional one is skipped), the devices that\n"
          "take a role have what [require] asks, every kernel (sampling in every mode,\n"
          "reindex, gather, training kernels, each GEMM provider, a full training step of every model)\n"
          "runs on every device and matches its plain-C reference (bit for bit where\n"
          "the design promises it), an epoch of the bundled Cora trains for each role\n"
          "placement the profile allows, and peak figures meet [thresholds].\n"
          "\n"
          "  --board B          board profile name or path (default: generic-cpu)\n"
          "  --level L          quick (seconds), standard (about a minute, default),\n"
          "                     long (standard, then a soak: kernels repeated until\n"
          "                     --soak-seconds, results must stay bit-identical and\n"
          "                     resident memory flat)\n"
          "  --soak-seconds S   length of the soak (default 120)\n"
          "  --json F           CTS-style results, device inventory and figures ('-':\n"
          "                     stdout, the human report then goes to stderr)\n"
          "  --junit F          JUnit XML for CI\n"
          "  -v, --verbose      print every check with its detail as it completes\n"
          "  -q, --quiet        only the summary line\n"
          "  -h, --help\n"
          "\n"
          "HETSAGE_BRINGUP_INJECT=gather runs a deliberately wrong gather kernel, to\n"
          "prove that bring-up catches it.\n"
          "\n"
          "Exit status: 0 every check passed (skips allowed), 1 a check failed,\n"
          "2 bring-up could not run (bad usage, no profile, no device, no data).\n");
}

typedef struct progress {
  FILE *out;
  bool verbose, quiet, tty;
} progress;

static void on_check(void *user, const hs_bringup_check *c) {
  progress *p = user;
  if (p->quiet) return;
  if (p->verbose || c->result == HS_CHECK_FAIL) {
    fprintf(p->out, "%-4s %-40s %7.2f s  %s\n", hs_check_result_name(c->result), c->name,
            c->seconds, c->detail);
  } else if (p->tty) {
    fprintf(stderr, "\r\033[K%s %s", hs_check_result_name(c->result), c->name);
  }
  fflush(p->out);
}

static bool write_file(const char *path, const hs_bringup_report *r, bool junit) {
  bool to_stdout = strcmp(path, "-") == 0;
  FILE *f = to_stdout ? stdout : fopen(path, "w");
  if (!f) {
    fprintf(stderr, "hetsage bringup: cannot write %s: %s\n", path, strerror(errno));
    return false;
  }
  hs_status st = junit ? hs_bringup_report_write_junit(r, f) : hs_bringup_report_write_json(r, f);
  bool ok = to_stdout ? cli_file_check("bringup", f, "standard output")
                      : cli_file_close("bringup", f, path);
  if (st != HS_OK) {
    cli_report("bringup", path, st);
    return false;
  }
  return ok;
}

static void summary(FILE *out, const hs_bringup_report *r, bool quiet) {
  int pass, fail, skip;
  hs_bringup_report_counts(r, &pass, &fail, &skip);
  if (!quiet) {
    size_t nm = hs_bringup_report_measurement_count(r);
    if (nm) fprintf(out, "\nfigures:\n");
    for (size_t i = 0; i < nm; i++) {
      const hs_bringup_measurement *m = hs_bringup_report_measurement(r, i);
      fprintf(out, "  %-44s %10.4g %-9s (min %.4g, max %.4g)", m->name, m->median, m->unit, m->min,
              m->max);
      if (m->threshold > 0)
        fprintf(out, "  %s %.4g", m->upper_bound ? "ceiling" : "floor", m->threshold);
      fputc('\n', out);
    }
    /* per scope: pass / fail / skip */
    fprintf(out, "\nby scope:\n");
    size_t n = hs_bringup_report_check_count(r);
    for (size_t i = 0; i < n; i++) {
      const char *scope = hs_bringup_report_check(r, i)->scope;
      bool seen = false;
      for (size_t j = 0; j < i && !seen; j++)
        seen = strcmp(hs_bringup_report_check(r, j)->scope, scope) == 0;
      if (seen) continue;
      int c[3] = {0, 0, 0};
      for (size_t j = i; j < n; j++)
        if (strcmp(hs_bringup_report_check(r, j)->scope, scope) == 0)
          c[hs_bringup_report_check(r, j)->result]++;
      fprintf(out, "  %-12s %3d pass %3d fail %3d skip\n", scope, c[0], c[1], c[2]);
    }
    if (skip) {
      fprintf(out, "\nskipped:\n");
      for (size_t i = 0; i < n; i++) {
        const hs_bringup_check *c = hs_bringup_report_check(r, i);
        if (c->result == HS_CHECK_SKIP) fprintf(out, "  %s: %s\n", c->name, c->detail);
      }
    }
    if (fail) {
      fprintf(out, "\nfailed:\n");
      for (size_t i = 0; i < n; i++) {
        const hs_bringup_check *c = hs_bringup_report_check(r, i);
        if (c->result == HS_CHECK_FAIL) fprintf(out, "  %s: %s\n", c->name, c->detail);
      }
    }
  }
  fprintf(out, "\nbring-up %s of board %s: %s — %d passed, %d failed, %d skipped in %.1f s\n",
          hs_bringup_level_name(hs_bringup_report_level(r)), hs_bringup_report_board(r),
          fail ? "FAIL" : "PASS", pass, fail, skip, hs_bringup_report_seconds(r));
}

int cmd_bringup(int argc, char **argv) {
  const char *board = NULL, *json = NULL, *junit = NULL;
  hs_bringup_options o;
  hs_bringup_options_init(&o);
  progress p = {stdout, false, false, false};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has = i + 1 < argc;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--board") == 0 && has) {
      board = argv[++i];
    } else if (strcmp(a, "--level") == 0 && has) {
      if (hs_bringup_level_parse(argv[++i], &o.level) != HS_OK)
        return cli_usage_error("bringup", "--level '%s': expected quick, standard or long",
                               argv[i]);
    } else if (strcmp(a, "--soak-seconds") == 0 && has) {
      if (!cli_opt_number("bringup", a, argv[++i], 0, true, INFINITY, true, &o.soak_seconds))
        return 2;
    } else if (strcmp(a, "--json") == 0 && has) {
      json = argv[++i];
    } else if (strcmp(a, "--junit") == 0 && has) {
      junit = argv[++i];
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      p.verbose = true;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      p.quiet = true;
    } else {
      return cli_usage_error("bringup", "unknown option or missing value: '%s'", a);
    }
  }
  if ((json && strcmp(json, "-") == 0) || (junit && strcmp(junit, "-") == 0)) p.out = stderr;
  if (json && junit && strcmp(json, "-") == 0 && strcmp(junit, "-") == 0)
    return cli_usage_error("bringup", "--json and --junit cannot both go to stdout");
  p.tty = !p.verbose && !p.quiet && isatty(STDERR_FILENO);

  hs_board_profile *prof = NULL;
  hs_status st = hs_board_profile_load_from(cli_settings()->boards_dir, board, &prof);
  if (st != HS_OK) {
    cli_report("bringup", "loading the board profile", st);
    return 2;
  }
  hs_runtime *rt = NULL;
  st = hs_runtime_open(&rt, NULL);
  if (st != HS_OK) {
    cli_report("bringup", "device discovery", st);
    hs_board_profile_free(prof);
    return 2;
  }
  hs_bringup_report *r = NULL;
  st = hs_bringup_run(rt, prof, &o, on_check, &p, &r);
  if (p.tty) fprintf(stderr, "\r\033[K");
  int rc = 2;
  if (st != HS_OK) {
    cli_report("bringup", "bring-up could not run", st);
    goto done;
  }
  summary(p.out, r, p.quiet);
  bool wrote = true;
  if (json) wrote &= write_file(json, r, false);
  if (junit) wrote &= write_file(junit, r, true);
  int fail;
  hs_bringup_report_counts(r, NULL, &fail, NULL);
  rc = !wrote ? 2 : fail ? 1 : 0;
done:
  hs_bringup_report_free(r);
  hs_runtime_close(rt);
  hs_board_profile_free(prof);
  return rc;
}
