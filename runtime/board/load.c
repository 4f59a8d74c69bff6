/* Finding and reading a board profile file: by path, or by name along the
 * search path ($HETSAGE_BOARDS_DIR, the source tree, the install datadir). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hs_base.h"
#include "hs_board.h"
#include "hs_config.h"

/* Profiles are a few kB; a bigger file is surely not one. */
#define HS_PROFILE_MAX_BYTES (1u << 20)

static bool is_regular_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool looks_like_path(const char *s) {
  size_t n = strlen(s);
  return strchr(s, '/') || (n > 4 && strcmp(s + n - 4, ".ini") == 0);
}

/* Try <dir>/<name>.ini; on a hit *out owns the path. Appends dir to the
 * `tried` list for the not-found message. */
static hs_status try_dir(const char *dir, size_t dir_len, const char *name,
                         char **out, char *tried, size_t tried_cap) {
  if (dir_len == 0) return HS_ERR_NOT_FOUND;
  size_t n = dir_len + strlen(name) + 6;
  char *path = malloc(n);
  if (!path) return hs__fail(HS_ERR_NOMEM, "no memory for a path");
  snprintf(path, n, "%.*s/%s.ini", (int)dir_len, dir, name);
  if (is_regular_file(path)) {
    *out = path;
    return HS_OK;
  }
  free(path);
  size_t used = strlen(tried);
  snprintf(tried + used, tried_cap - used, "%s%.*s", used ? ", " : "",
           (int)dir_len, dir);
  return HS_ERR_NOT_FOUND;
}

static hs_status find_by_name(const char *dirs, const char *name, char **out) {
  for (const char *s = name; *s; s++)
    if (!(*s == '-' || *s == '_' || *s == '.' || (*s >= '0' && *s <= '9') ||
          (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
      return hs__fail(HS_ERR_INVALID_ARG,
                      "board '%s': a name is letters, digits, '.', '_' and "
                      "'-' (or give a path to a .ini file)",
                      name);
  char tried[2048] = "";
  hs_status st;
  if (dirs) {
    for (const char *s = dirs; *s;) {
      size_t n = strcspn(s, ":");
      st = try_dir(s, n, name, out, tried, sizeof tried);
      if (st != HS_ERR_NOT_FOUND) return st;
      s += n + (s[n] == ':');
    }
  }
  const char *builtin[] = {HS_BOARDS_SRC_DIR, HS_BOARDS_INSTALL_DIR};
  for (size_t i = 0; i < HS_ARRAY_LEN(builtin); i++) {
    st = try_dir(builtin[i], strlen(builtin[i]), name, out, tried,
                 sizeof tried);
    if (st != HS_ERR_NOT_FOUND) return st;
  }
  return hs__fail(HS_ERR_NOT_FOUND,
                  "board profile '%s' not found (looked for %s.ini in: %s; "
                  "name more folders with the boards_dir setting, HETSAGE_BOARDS_DIR, "
                  "or give a path)",
                  name, name, tried);
}

static hs_status read_text(const char *path, char **out) {
  char *text = NULL;
  hs_status st;
  FILE *f = hs__fopen_regular(path, "board profile", &st);
  if (!f) return st;
  text = malloc(HS_PROFILE_MAX_BYTES + 1);
  if (!text) {
    st = hs__fail(HS_ERR_NOMEM, "no memory to read %s", path);
    goto fail;
  }
  size_t n = fread(text, 1, HS_PROFILE_MAX_BYTES + 1, f);
  if (ferror(f)) {
    st = hs__fail(HS_ERR_IO, "board profile %s: read error", path);
    goto fail;
  }
  if (n > HS_PROFILE_MAX_BYTES) {
    st = hs__fail(HS_ERR_PROFILE, "board profile %s: larger than %u bytes",
                  path, HS_PROFILE_MAX_BYTES);
    goto fail;
  }
  text[n] = '\0';
  if (strlen(text) != n) {
    int line = 1;
    for (const char *s = text; *s; s++) line += *s == '\n';
    st = hs__fail(HS_ERR_PROFILE, "board profile %s:%d: NUL byte in the text",
                  path, line);
    goto fail;
  }
  fclose(f);
  *out = text;
  return HS_OK;
fail:
  free(text);
  fclose(f);
  return st;
}

hs_status hs_board_profile_load(const char *name_or_path, hs_board_profile **out) {
  return hs_board_profile_load_from(NULL, name_or_path, out);
}

hs_status hs_board_profile_load_from(const char *dirs, const char *name_or_path,
                                     hs_board_profile **out) {
  if (!out) return hs__fail(HS_ERR_INVALID_ARG, "hs_board_profile_load: NULL out");
  *out = NULL;
  const char *arg =
      name_or_path && *name_or_path ? name_or_path : HS_BOARD_DEFAULT;
  char *path = NULL, *text = NULL, *dir = NULL;
  hs_status st;
  if (looks_like_path(arg)) {
    path = strdup(arg);
    if (!path) return hs__fail(HS_ERR_NOMEM, "no memory for a path");
  } else {
    st = find_by_name(dirs, arg, &path);
    if (st != HS_OK) return st;
  }
  st = read_text(path, &text);
  if (st != HS_OK) goto fail;
  /* Relative [binaries] paths are relative to the profile's folder. */
  const char *slash = strrchr(path, '/');
  dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
              : strdup(".");
  if (!dir) {
    st = hs__fail(HS_ERR_NOMEM, "no memory for a path");
    goto fail;
  }
  st = hs_board_profile_parse(text, path, dir, out);
  hs__log(HS_LOG_PLACE, "board profile %s: %s", path,
          st == HS_OK ? "loaded" : hs_last_error());
fail:
  free(dir);
  free(text);
  free(path);
  return st;
}
