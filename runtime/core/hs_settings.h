/* Settings inside the library (hetsage/settings.h is the public side). */
#ifndef HS_SETTINGS_INTERNAL_H
#define HS_SETTINGS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "hetsage/settings.h"

/* The binary cache's folder when no setting names one and the environment
 * is read: $XDG_CACHE_HOME/hetsage, else $HOME/.cache/hetsage; false when
 * neither is set (or the path does not fit). */
bool hs__settings_default_cache_dir(char *buf, size_t len);
/* The folder of *.icd files the OpenCL ICD loader reads: $OCL_ICD_VENDORS,
 * or /etc/OpenCL/vendors. */
const char *hs__settings_icd_vendors_dir(void);
/* The number of processes a launcher started this job with, from the
 * launchers' own variables (MPICH's PMI, Open MPI, PMIx, Slurm); 1 when
 * none names more than one. */
int hs__settings_launcher_size(void);
/* MPICH's PMI connection to its launcher: the descriptor of $PMI_FD and
 * the port of $PMI_PORT ("host:port"); -1 for one not set or not a
 * number. */
void hs__settings_pmi_endpoints(int *fd, int *port);

#endif
