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
#include "hs_engine.h"
#include "hs_settings.h"

/* Where the ICD loader finds the implementations: their libraries, one
 * per *.icd file. In a trial child that found no device under a limit, each
 * is loaded here to tell "none installed" from "none could be mapped":
 * the first dlerror() that speaks of mapping or memory is written to `fd`
 * and the child exits with TRIAL_NO_ROOM. */
enum { TRIAL_NO_ROOM = 42 };

static void diagnose_icds(int fd) {
  const char *dir = hs__settings_icd_vendors_dir();
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

/* The settings in force: the caller's, then the environment's (unless
 * ignored), checked, with every string copied into the runtime. */
static hs_status resolve_settings(hs_runtime *rt, const hs_runtime_options *opts) {
  hs_settings *s = &rt->settings;
  hs_settings_init(s);
  hs_status st;
  if (opts->settings && (st = hs__sized_in(s, sizeof *s, opts->settings, "hs_settings")))
    return st;
  bool env = !(opts->flags & HS_RUNTIME_IGNORE_ENV);
  if (env && (st = hs_settings_from_env(s)) != HS_OK) return st;
  if ((st = hs_settings_check(s)) != HS_OK) return st;
  char cache[1024];
  if (!s->cache_dir && env && hs__settings_default_cache_dir(cache, sizeof cache))
    s->cache_dir = cache;
  const char **fields[] = {&s->debug,   &s->cache_dir, &s->boards_dir,     &s->sampler,
                           &s->trainer, &s->bringup_inject, &s->bench_dir};
  _Static_assert(HS_ARRAY_LEN(fields) <= HS__SETTINGS_STRINGS, "room for every string");
  for (size_t i = 0; i < HS_ARRAY_LEN(fields); i++) {
    if (!*fields[i]) continue;
    if (!(rt->strings[i] = strdup(*fields[i])))
      return hs__fail(HS_ERR_NOMEM, "out of memory for the settings");
    *fields[i] = rt->strings[i];
  }
  if (s->debug && (st = hs_log_enable(s->debug)) != HS_OK) return st;
  rt->dev_settings = (hs__dev_settings){s->cache_dir, s->max_alloc, (int)s->gemm};
  return HS_OK;
}

void hs_runtime_options_init_sized(hs_runtime_options *opts, size_t struct_size) {
  hs_runtime_options d = {.struct_size = sizeof d};
  hs__sized_init(opts, struct_size, &d, sizeof d);
}

hs_status hs_runtime_open(hs_runtime **out, const hs_runtime_options *user_opts) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_runtime_open: out is NULL");
  *out = NULL;
  hs__clear_error();
  hs_runtime_options opts;
  hs_runtime_options_init(&opts);
  hs_status st;
  if (user_opts && (st = hs__sized_in(&opts, sizeof opts, user_opts, "hs_runtime_options")))
    return st;
  if (opts.flags & ~HS_RUNTIME_IGNORE_ENV)
    return hs__fail(HS_ERR_INVALID_ARG,
                    "hs_runtime_options.flags 0x%x: the flags are HS_RUNTIME_IGNORE_ENV (0x%x)",
                    (unsigned)opts.flags, (unsigned)HS_RUNTIME_IGNORE_ENV);
  hs_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return hs__fail(HS_ERR_NOMEM, "out of memory for the runtime");
  if ((st = resolve_settings(rt, &opts)) != HS_OK) goto fail;
  if (opts.board &&
      (st = hs_board_profile_load_from(rt->settings.boards_dir, opts.board, &rt->board)) != HS_OK)
    goto fail;
  st = hs__topo_open(&rt->topo);
  if (st != HS_OK) goto fail;
  hs__topo_summary(rt->topo, &rt->host);
  if ((st = probe_discovery()) != HS_OK) goto fail;
  rt->host_pub = (hs_host_topology){rt->host.packages, rt->host.numa_nodes, rt->host.cores,
                                    rt->host.pus};
  st = hs__inventory_discover(&rt->inv);
  if (st != HS_OK) goto fail;
  rt->infos = calloc((size_t)rt->inv.n_devs, sizeof *rt->infos);
  if (!rt->infos) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for the device inventory");
    goto fail;
  }
  for (int i = 0; i < rt->inv.n_devs; i++) {
    rt->inv.devs[i].settings = &rt->dev_settings;
    hs__topo_locate(rt->topo, &rt->inv.devs[i].info);
    rt->infos[i] = rt->inv.devs[i].info;
  }
  rt->platforms = calloc((size_t)rt->inv.n_platforms + 1, sizeof *rt->platforms);
  if (!rt->platforms) {
    st = hs__fail(HS_ERR_NOMEM, "out of memory for the platform list");
    goto fail;
  }
  for (int i = 0; i < rt->inv.n_platforms; i++) {
    const hs_platform_note *p = &rt->inv.platforms[i];
    memcpy(rt->platforms[i].name, p->name, sizeof rt->platforms[i].name);
    rt->platforms[i].num_devices = p->num_devices;
    memcpy(rt->platforms[i].error, p->error, sizeof rt->platforms[i].error);
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
  free(rt->platforms);
  hs_board_profile_free(rt->board);
  for (int i = 0; i < HS__SETTINGS_STRINGS; i++) free(rt->strings[i]);
  hs__inventory_release(&rt->inv);
  hs__topo_close(rt->topo);
  free(rt);
}

int hs_runtime_device_count(const hs_runtime *rt) { return rt ? rt->inv.n_devs : 0; }

const hs_device_info *hs_runtime_device(const hs_runtime *rt, int i) {
  return rt && i >= 0 && i < rt->inv.n_devs ? &rt->infos[i] : NULL;
}

int hs_runtime_platform_count(const hs_runtime *rt) { return rt ? rt->inv.n_platforms : 0; }

const hs_platform_info *hs_runtime_platform(const hs_runtime *rt, int i) {
  return rt && i >= 0 && i < rt->inv.n_platforms ? &rt->platforms[i] : NULL;
}

const hs_host_topology *hs_runtime_topology(const hs_runtime *rt) {
  return rt ? &rt->host_pub : NULL;
}

int hs_runtime_host_cores(const hs_runtime *rt) {
  return rt && rt->host.cores > 0 ? rt->host.cores : 1;
}

const struct hs_board_profile *hs_runtime_board(const hs_runtime *rt) {
  return rt ? rt->board : NULL;
}

hs_status hs__runtime_session_profile(const hs_runtime *rt, const hs_board_profile *profile,
                                      const char *board, const hs_board_profile **use,
                                      hs_board_profile **owned) {
  *owned = NULL;
  *use = profile;
  if (!*use && !board) *use = rt->board;
  if (*use) return HS_OK;
  hs_status st = hs_board_profile_load_from(rt->settings.boards_dir, board, owned);
  *use = *owned;
  return st;
}

const hs_settings *hs_runtime_settings(const hs_runtime *rt) { return rt ? &rt->settings : NULL; }

const hs_inventory *hs__runtime_inventory(const hs_runtime *rt) { return rt ? &rt->inv : NULL; }

const hs_dev *hs__runtime_dev(const hs_runtime *rt, int i) {
  return rt && i >= 0 && i < rt->inv.n_devs ? &rt->inv.devs[i] : NULL;
}
