/* Shared by the host and the sparse first layer's kernels
 * (train_sparse.cl): output features per work-item. On CPU devices a
 * work-item runs its loops alone on a core, and the work-items of a group
 * run one after the other: a work-item walks a row's (or column's) list
 * once for a whole chunk of 64 outputs, reading each gathered row in
 * contiguous runs. On other devices neighbouring work-items take
 * neighbouring 8 outputs, so that a group's loads of a row coalesce. */
#ifndef HS_SPARSE_H
#define HS_SPARSE_H

#define HS_SP_CHUNK_CPU 64
#define HS_SP_CHUNK_OTHER 8

#endif
