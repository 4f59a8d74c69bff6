/* Kernel arguments, launches, plain buffers and events: the thin wrappers
 * through which runtime/ drives its kernels without calling OpenCL itself.
 * Every failure names the OpenCL error, the call (with the kernel's name
 * for launches) and the device. */
#ifndef HS_LAUNCH_H
#define HS_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "hs_dev.h"

/* One kernel argument: a pointer to its value (a cl_mem, a scalar) and its
 * size; value NULL asks for `size` bytes of local memory. */
typedef struct hs_karg {
  size_t size;
  const void *value;
} hs_karg;
#define HS_KARG(x) ((hs_karg){sizeof(x), &(x)})
#define HS_KARG_LOCAL(bytes) ((hs_karg){(bytes), NULL})

/* Set arguments 0..n-1 of `k`. */
hs_status hs__kernel_args(cl_kernel k, const hs_karg *args, int n);
/* Set argument `index` of `k` alone (value NULL: `size` bytes of local
 * memory). */
hs_status hs__kernel_arg(cl_kernel k, cl_uint index, size_t size, const void *value);

/* Work-groups per compute unit for grid-stride kernels on CPU devices: a
 * launch sized for a batch's capacity would mostly be empty work-groups,
 * each with a fixed cost, so this many per unit cover any count instead.
 * Enough of them that the device's threads balance their work when other
 * processes take cores away: 16 per unit left one thread waiting on
 * another's last groups, and sampling took twice the time of 64 per unit
 * on a loaded 2-core machine (bench_sample, products scale); 256 was no
 * better. */
#define HS_CPU_GROUPS_PER_CU 64

/* Enqueue `k` over `dims` (1..3) dimensions. `local` NULL or local[0] == 0
 * lets the implementation choose; otherwise every global size is rounded up
 * to a multiple of its local size (kernels check their bounds). A global
 * size of 0 in any dimension enqueues nothing (and *ev is then a marker, so
 * callers can still wait on it). */
hs_status hs__launch(cl_command_queue q, cl_kernel k, int dims, const size_t *global,
                     const size_t *local, cl_uint n_wait, const cl_event *wait, cl_event *ev);

/* The largest work-group `k` can run with on `dev` (its resource use may
 * make it smaller than the device's limit); 1 when the query fails. */
size_t hs__kernel_max_wg(cl_kernel k, const hs_dev *dev);

/* Release and clear; NULL is fine. */
void hs__kernel_release(cl_kernel *k);
void hs__program_release(cl_program *p);

/* ---- buffers ------------------------------------------------------------- */

/* A buffer of at least one byte more than nothing: OpenCL forbids empty
 * buffers, so 0 bytes gives a 4-byte buffer. */
/* A buffer of `bytes` on the context. Checked before it is asked for: more
 * than the devices' max allocation is HS_ERR_NOMEM naming that limit; in
 * host memory (CPU devices), the memory is allocated here and handed to the
 * implementation (CL_MEM_USE_HOST_PTR, freed when the buffer is released),
 * after a check against the memory the process may still use
 * (hs__mem_room): implementations allocate lazily at first use and abort
 * when that fails, where hetsage can fail cleanly with HS_ERR_NOMEM. */
hs_status hs__mem_create(const hs_ctx *ctx, cl_mem_flags flags, size_t bytes, cl_mem *out);
/* Release and clear; NULL is fine. */
void hs__mem_release(cl_mem *m);
/* Grow `*m` to at least `bytes` (contents lost): no reallocation when it
 * is large enough already. `*cap` tracks the current size. */
hs_status hs__mem_reserve(const hs_ctx *ctx, cl_mem_flags flags, size_t bytes, cl_mem *m,
                          size_t *cap);

hs_status hs__mem_write(cl_command_queue q, cl_mem m, bool blocking, size_t offset, size_t bytes,
                        const void *src, cl_uint n_wait, const cl_event *wait, cl_event *ev);
hs_status hs__mem_read(cl_command_queue q, cl_mem m, bool blocking, size_t offset, size_t bytes,
                       void *dst, cl_uint n_wait, const cl_event *wait, cl_event *ev);
/* Fill `bytes` at `offset` with a repeated pattern (1, 2, 4, ... 128 bytes). */
hs_status hs__mem_fill(cl_command_queue q, cl_mem m, const void *pattern, size_t pattern_size,
                       size_t offset, size_t bytes, cl_uint n_wait, const cl_event *wait,
                       cl_event *ev);
hs_status hs__mem_copy(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset,
                       size_t dst_offset, size_t bytes, cl_uint n_wait, const cl_event *wait,
                       cl_event *ev);

/* ---- queues and events ------------------------------------------------------- */

hs_status hs__queue_finish(cl_command_queue q);
/* Submit what is queued on `q` without waiting: needed before another
 * queue waits for one of its events. */
hs_status hs__queue_flush(cl_command_queue q);
/* Whether `q` runs its commands in order (no out-of-order execution). */
hs_status hs__queue_in_order(cl_command_queue q, bool *in_order);
/* Make later commands on `q` wait for `wait` (a marker with a wait list). */
hs_status hs__queue_wait_for(cl_command_queue q, cl_uint n_wait, const cl_event *wait);
/* A marker that completes when `wait` has (an event for "nothing to do"). */
hs_status hs__queue_marker(cl_command_queue q, cl_uint n_wait, const cl_event *wait, cl_event *ev);
/* Start and end of a finished command on a profiling queue, nanoseconds. */
hs_status hs__event_times(cl_event ev, uint64_t *start_ns, uint64_t *end_ns);
/* The device a queue runs on (for messages), NULL if unknown. */
cl_device_id hs__queue_device(cl_command_queue q);

#endif
