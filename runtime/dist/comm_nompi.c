/* The world of a build without MPI: one process. */
#include "core/hs_settings.h"
#include "dist/comm_int.h"

hs_status hs__comm_open_world(int *argc, char ***argv, hs_comm **out) {
  (void)argc;
  (void)argv;
  *out = NULL;
  int n = hs__settings_launcher_size();
  if (n > 1)
    return hs__fail(HS_ERR_UNSUPPORTED,
                    "started as one of %d processes, but this hetsage was built without MPI "
                    "(meson setup -Dmpi=enabled with MPICH or Open MPI installed)", n);
  return hs__comm_open_local(1, out);
}

hs_status hs__comm_open_mpi(const void *mpi_comm, hs_comm **out) {
  (void)mpi_comm;
  *out = NULL;
  return hs__fail(HS_ERR_UNSUPPORTED, "this hetsage was built without MPI");
}

const char *hs__comm_library(void) { return ""; }

bool hs__comm_have_mpi(void) { return false; }
