#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hs_runtime.h"

/* Where the ICD loader finds the implementations: their libraries, one
 * per *.icd file. In a trial child that found no device under a limit, each
 * is loaded here to tell "none installed" from "none could be mapped":
 * the first dlerror() that speaks of mapping or memory is written to `fd`
 * and the child exits with TRIAL_NO_ROOM. */
enum { TRIAL_NO_ROOM = 42 };

static void diagnose_icds(int fd) {
  const char *dir = getenv("OCL_ICD_VENDORS");
  if (!dir || !*dir) dir = "/etc/OpenCL/vendors";
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".icd") != 0) continue;
    char path[1024], lib[512] = "";
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    bool ok = fgets(lib, sizeof lib, f) != NULL;
    fclose(f);
    lib[strcspn(lib, "\r\n")] = '\0';
    if (!ok || !lib[0]) continue;
    if (dlopen(lib, RTLD_NOW | RTLD_LOCAL)) continue;
    const char *why = dlerror();
    if (why && (strstr(why, "map") || strstr(why, "memory") || strstr(why, "allocate"))) {
      (void)!write(fd, why, strlen(why));
      _exit(TRIAL_NO_ROOM);
    }
  }
  if (d) closedir(d);
}

/* Loading the OpenCL implementations maps hundreds of MiB (LLVM, several
 * times over) and some abort when that fails: a C++ exception thrown from
 * a library's constructor, an assertion. Nothing in this process could
 * recover from that. Where a memory limit is in force, discovery is first
 * tried in a child process; if the child dies, or finds nothing because
 * the implementations could not be mapped, discovery is refused with
 * HS_ERR_NOMEM instead of taking the caller down or blaming the drivers. */
static hs_status probe_discovery(void) {
  char why[700];
  uint64_t room = hs__mem_room(why, sizeof why);
  if (room == UINT64_MAX) return HS_OK;
  int pfd[2];
  if (pipe(pfd) != 0) return HS_OK; /* no probe: discovery runs as it would anyway */
  pid_t pid = fork();
  if (pid < 0) {
    close(pfd[0]);
    close(pfd[1]);
    return HS_OK;
  }
  if (pid == 0) {
    close(pfd[0]);
    /* The trial's own complaints (an uncaught exception's message) would
     * read as this process's. */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    hs_inventory inv;
    memset(&inv, 0, sizeof inv);
    hs_status st = hs__inventory_discover(&inv);
    if (st == HS_ERR_NO_DEVICE) diagnose_icds(pfd[1]);
    _exit(st == HS_OK ? 0 : 1);
  }
  close(pfd[1]);
  char msg[512] = "";
  ssize_t got, n = 0;
  while ((got = read(pfd[0], msg + n, sizeof msg - 1 - (size_t)n)) > 0 ||
         (got < 0 && errno == EINTR))
    if (got > 0) n += got;
  msg[n > 0 ? n : 0] = '\0';
  close(pfd[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return HS_OK;
  char r[32];
  hs__fmt_bytes(room, r, sizeof r);
  if (WIFSIGNALED(status))
    return hs__fail(HS_ERR_NOMEM, "loading the OpenCL implementations under %s (%s left) "
                    "killed a trial run (signal %d, %s); they abort rather than fail when "
                    "memory runs out: raise the limit",
                    why, r, WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == TRIAL_NO_ROOM)
    return hs__fail(HS_ERR_NOMEM, "the OpenCL implementations cannot be loaded under %s (%s "
                    "left): %s; raise the limit", why, r, msg);
  return HS_OK;
}

hs_status hs_runtime_open(hs_runtime **out, const hs_runtime_options *opts) {
  (void)opts;
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_open: out is NULL");
  *out = NULL;
  hs__clear_error();
  hs_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return hs__fail(HS_ERR_NOMEM, "out of memory for the runtime");
  hs_status st = hs__topo_open(&rt->topo);
  if (st != HS_OK) goto fail;
  hs__topo_summary(rt->topo, &rt->host);
  if ((st = probe_discovery()) != HS_OK) goto fail;
  st = hs__inventory_discover(&rt->inv);
  if (st != HS_OK) goto fail;
  rt->infos = calloc((size_t)rt->inv.n_devs, sizeof *rt->infos);
  if (!rt->infos) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for the device inventory");
    goto fail;
  }
  for (int i = 0; i < rt->inv.n_devs; i++) {
    hs__topo_locate(rt->topo, &rt->inv.devs[i].info);
    rt->infos[i] = rt->inv.devs[i].info;
  }
  *out = rt;
  return HS_OK;
fail:
  hs_runtime_close(rt);
  return st;
}

void hs_runtime_close(hs_runtime *rt) {
  if (!rt) return;
  free(rt->infos);
  hs__inventory_release(&rt->inv);
  hs__topo_close(rt->topo);
  free(rt);
}

hs_status hs_runtime_devices(const hs_runtime *rt, const hs_device_info **devs, int *n) {
  if (!rt || !devs || !n)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_devices: NULL argument");
  *devs = rt->infos;
  *n = rt->inv.n_devs;
  return HS_OK;
}

int hs_runtime_platform_count(const hs_runtime *rt) { return rt ? rt->inv.n_platforms : 0; }

hs_status hs_runtime_platform(const hs_runtime *rt, int i, hs_platform_info *out) {
  if (!rt || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_platform: NULL argument");
  if (i < 0 || i >= rt->inv.n_platforms)
    return hs__fail(HS_ERR_RANGE, "platform %d of %d", i, rt->inv.n_platforms);
  const hs_platform_note *p = &rt->inv.platforms[i];
  memcpy(out->name, p->name, sizeof out->name);
  out->num_devices = p->num_devices;
  memcpy(out->error, p->error, sizeof out->error);
  return HS_OK;
}

hs_status hs_runtime_topology(const hs_runtime *rt, hs_host_topology *out) {
  if (!rt || !out) return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_topology: NULL argument");
  out->packages = rt->host.packages;
  out->numa_nodes = rt->host.numa_nodes;
  out->cores = rt->host.cores;
  out->pus = rt->host.pus;
  return HS_OK;
}

int hs_runtime_host_cores(const hs_runtime *rt) {
  return rt && rt->host.cores > 0 ? rt->host.cores : 1;
}
