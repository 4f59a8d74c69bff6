/* The checks of dist_checks.h on MPI processes: run as
 *   mpiexec -n N dist_check CHECK...
 * Every rank runs each check; rank 0 prints TAP with the failures of all
 * ranks (a failing rank's reason is sent to rank 0).
 *
 * Checks: p2p, collectives, allreduce, allreduce_1bit, modes_exact,
 * modes_1bit, onebit_adam, ps_onebit_adam, ps_async, stop, timeout (the last
 * rank stays silent; run it alone: the communicator is unusable after a
 * timeout), die (the last rank kills itself; the launcher or the others'
 * timeouts must end the run: the exit status is not 0). */
#include <signal.h>
#include <unistd.h>

#include "dist_checks.h"

static int run(hs_comm *c, const char *name, char *why) {
  if (strcmp(name, "p2p") == 0) return dc_p2p(c, why);
  if (strcmp(name, "collectives") == 0) return dc_collectives(c, why);
  if (strcmp(name, "allreduce") == 0)
    return dc_allreduce(c, why, 0) + dc_allreduce(c, why, 64) + dc_allreduce(c, why, 4096);
  if (strcmp(name, "allreduce_1bit") == 0) return dc_allreduce_1bit(c, why);
  if (strcmp(name, "modes_exact") == 0) return dc_modes_exact(c, why);
  if (strcmp(name, "modes_1bit") == 0) return dc_modes_1bit(c, why);
  if (strcmp(name, "onebit_adam") == 0) return dc_onebit_adam(c, why);
  if (strcmp(name, "ps_onebit_adam") == 0) return dc_ps_onebit_adam(c, why);
  if (strcmp(name, "ps_async") == 0) return dc_ps_async(c, why);
  if (strcmp(name, "stop") == 0) return dc_stop(c, why);
  if (strcmp(name, "timeout") == 0) return dc_timeout(c, why, 2.0);
  if (strcmp(name, "die") == 0) {
    hs__comm_set_timeout(c, 10.0);
    if (hs__comm_rank(c) == hs__comm_size(c) - 1) raise(SIGKILL);
    hs_status st = hs__comm_barrier(c, "the barrier after a rank died");
    fprintf(stderr, "rank %d: %s: %s\n", hs__comm_rank(c), hs_strerror(st), hs_last_error());
    if (st != HS_OK) hs__comm_abort(c, 3);
    return 1;
  }
  snprintf(why, 256, "unknown check '%s'", name);
  return 1;
}

int main(int argc, char **argv) {
  hs_comm *c;
  hs_status st = hs__comm_open_world(&argc, &argv, &c);
  if (st != HS_OK) {
    fprintf(stderr, "dist_check: %s: %s\n", hs_strerror(st), hs_last_error());
    return 1;
  }
  int rank = hs__comm_rank(c), size = hs__comm_size(c), bad = 0;
  if (rank == 0) printf("TAP version 13\n1..%d\n", argc - 1);
  for (int i = 1; i < argc; i++) {
    char why[256] = "";
    int64_t fails = run(c, argv[i], why);
    bool alone = strcmp(argv[i], "timeout") == 0;
    /* Rank 0 learns every rank's failures and the first rank's reason. */
    int64_t mine = fails, total = fails;
    char reason[256] = "";
    if (!alone) {
      if ((st = hs__comm_sum_i64(c, &total, 1, "results")) != HS_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, hs_last_error());
        hs__comm_abort(c, 1);
      }
      int64_t *all = calloc((size_t)size, sizeof *all);
      char *whys = calloc((size_t)size, 256);
      memcpy(reason, why, sizeof reason);
      hs__comm_allgather(c, &mine, sizeof mine, all, "results");
      hs__comm_allgather(c, reason, 256, whys, "reasons");
      for (int r = 0; r < size; r++)
        if (all[r] && !reason[0]) snprintf(reason, sizeof reason, "rank %d: %s", r, whys + 256 * r);
      free(all);
      free(whys);
    } else if (rank != 0) {
      continue; /* rank 0 reports its own view */
    } else {
      snprintf(reason, sizeof reason, "%s", why);
    }
    if (rank == 0) {
      if (total) printf("not ok %d - %s (%d ranks)\n# %s\n", i, argv[i], size, reason);
      else printf("ok %d - %s (%d ranks)\n", i, argv[i], size);
      fflush(stdout);
    }
    bad += total != 0;
  }
  /* After a timeout messages may still be outstanding: no orderly end. */
  hs__comm_destroy(c);
  return bad ? 1 : 0;
}
