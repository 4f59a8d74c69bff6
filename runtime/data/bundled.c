/* Bundled datasets: the shipped source files, imported once into the cache
 * directory. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hetsage/runtime.h"
#include "hs_config.h"
#include "hs_dev.h"
#include "hs_graph.h"

/* Bump when the import of a bundled dataset changes, so that stale cached
 * copies are not reused. */
#define BUNDLED_VERSION 1

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

hs_status hs_dataset_bundled(const hs_runtime *rt, const char *name, char *dir, size_t len) {
  if (!rt || !name || !dir || len == 0)
    return hs__fail(HS_ERR_INVALID_ARG, "hs_dataset_bundled: NULL argument");
  if (strcmp(name, "cora") != 0)
    return hs__fail(HS_ERR_NOT_FOUND, "no bundled dataset named '%s' (bundled: cora)", name);
  char src[1024];
  snprintf(src, sizeof src, "%s/%s", HS_DATA_SRC_DIR, name);
  if (!is_dir(src)) snprintf(src, sizeof src, "%s/%s", HS_DATA_INSTALL_DIR, name);
  if (!is_dir(src))
    return hs__fail(HS_ERR_NOT_FOUND, "the bundled %s is in neither %s nor %s", name,
                    HS_DATA_SRC_DIR, HS_DATA_INSTALL_DIR);
  char cache[900];
  hs_status st = hs__cache_dir_at(hs_runtime_settings(rt)->cache_dir, cache, sizeof cache);
  if (st != HS_OK) return st;
  char datasets[960];
  snprintf(datasets, sizeof datasets, "%s/datasets", cache);
  if (mkdir(datasets, 0755) != 0 && !is_dir(datasets))
    return hs__fail(HS_ERR_IO, "cannot create %s", datasets);
  int n = snprintf(dir, len, "%s/%s-v%d", datasets, name, BUNDLED_VERSION);
  if (n < 0 || (size_t)n >= len) return hs__fail(HS_ERR_INVALID_ARG, "path buffer too small");

  /* A complete earlier import is reused (the writer only ever renames a
   * finished dataset into place). */
  hs_dataset *ds = NULL;
  if (is_dir(dir) && hs_dataset_open(dir, &ds) == HS_OK) {
    hs_dataset_close(ds);
    hs__clear_error();
    return HS_OK;
  }
  hs_convert_opts o;
  hs_convert_opts_init(&o, HS_IMPORT_LINQS);
  o.undirected = true;
  o.dedup = true;
  o.self_loops = HS_SELF_LOOPS_DROP;
  o.force = true;
  /* Dense, as the README's figures and the golden parameters were made. */
  o.feat_format = HS_FEAT_FORMAT_DENSE;
  st = hs_convert(src, dir, &o, NULL);
  if (st != HS_OK) return hs__fail_context(st, "importing the bundled %s", name);
  return HS_OK;
}
