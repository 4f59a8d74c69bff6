/* Dataset writer: builds a native dataset in a temporary directory next to
 * its destination and renames it into place only when complete, so that a
 * failure (or a crash) never leaves a partial dataset under the final name. */
#ifndef HS_DSW_H
#define HS_DSW_H

#include "hs_npy.h"

typedef struct hs__dsw hs__dsw;

/* Create `dst`.tmp-XXXXXX. Fails early if `dst` exists and !force (or if,
 * with force, it holds anything but dataset files). */
hs_status hs__dsw_begin(const char *dst, bool force, hs__dsw **out);
/* The temporary directory being filled. */
const char *hs__dsw_dir(const hs__dsw *w);
/* Write a whole array `name` (e.g. "indptr.npy"). */
hs_status hs__dsw_array(hs__dsw *w, const char *name, hs_dtype dtype, int ndim,
                        const uint64_t *shape, const void *data);
/* Start an array written in pieces (finish with hs__npy_out_close). */
hs_status hs__dsw_stream(hs__dsw *w, const char *name, hs_dtype dtype, int ndim,
                         const uint64_t *shape, hs__npy_out *o);
/* Write a small text file (meta.json). */
hs_status hs__dsw_text(hs__dsw *w, const char *name, const char *text);
/* Move the finished dataset into place and free `w` (also on failure, when
 * the temporary is removed). */
hs_status hs__dsw_commit(hs__dsw *w);
/* Remove the temporary and free `w`. NULL is a no-op. */
void hs__dsw_abort(hs__dsw *w);

/* "a/b" in a new allocation (NULL when out of memory). */
char *hs__path_join(const char *a, const char *b);

#endif
