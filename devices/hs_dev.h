/* The device layer: OpenCL discovery, hwloc locality, sub-devices, contexts
 * and queues, program build with a binary cache, split buffers.
 *
 * Nothing here knows about graphs. Everything above (runtime/) reaches
 * OpenCL only through these functions and the handles they return. */
#ifndef HS_DEV_H
#define HS_DEV_H

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include "hetsage/device.h"
#include "hs_base.h"

/* ---- errors ----------------------------------------------------------- */

/* "CL_OUT_OF_RESOURCES" etc.; "CL_UNKNOWN_ERROR(-1234)" style for others
 * (the returned pointer is to static or thread-local storage). */
const char *hs__cl_error_name(cl_int err);
/* Fail with HS_ERR_OPENCL: "<call> failed with <NAME> on <device>". `dev`
 * may be NULL when the call concerns no single device. */
hs_status hs__cl_fail(cl_int err, const char *call, cl_device_id dev);

/* ---- discovery ---------------------------------------------------------- */

struct hs__prog_files;

/* The runtime's settings that the device layer acts on (hetsage/settings.h;
 * strings owned by the runtime). */
typedef struct hs__dev_settings {
  const char *cache_dir; /* the binary cache's folder, NULL: no cache */
  uint64_t max_alloc;    /* split arrays at this many bytes, 0: the device's */
  int gemm;              /* hs_gemm_kind for AUTO requests, 0: choose */
} hs__dev_settings;

typedef struct hs_dev {
  cl_platform_id platform;
  cl_device_id id;
  hs_device_info info;
  /* What the board profile provides for this device's programs (prebuilt
   * binaries, whether it compiles; hs_programs.h); NULL: nothing, build
   * from source. Borrowed: set by whoever opens the device for a role. */
  const struct hs__prog_files *progs;
  /* The runtime's settings, NULL: the defaults (no binary cache). Set by
   * the runtime on its inventory; copies and sub-devices keep it. */
  const hs__dev_settings *settings;
} hs_dev;

typedef struct hs_platform_note {
  char name[HS_NAME_MAX];
  int num_devices; /* -1: the platform's calls failed */
  char error[256]; /* why, when num_devices <= 0 */
  char key[32];    /* hs_device_info.platform_key */
  char vendor[HS_NAME_MAX];
  bool simulator;
} hs_platform_note;

typedef struct hs_inventory {
  hs_dev *devs;
  int n_devs;
  hs_platform_note *platforms;
  int n_platforms;
} hs_inventory;

/* Enumerate every platform and device. A platform whose calls fail or that
 * has no device is recorded in `platforms` and skipped; only the absence of
 * any ICD/platform at all is an error (HS_ERR_NO_DEVICE). Platforms and
 * devices are ordered by hs__inventory_order, never by the ICD loader's
 * order (which follows the files of the vendors folder and differs
 * between machines). */
hs_status hs__inventory_discover(hs_inventory *inv);
/* Give platforms their keys (hs_device_info.platform_key, made unique) and
 * order platforms and devices stably: real devices before simulators, then
 * by platform key and name, then by position within the platform; set
 * every index, platform_index and selector. On entry each device's
 * platform_index is the position of its platform in `inv->platforms` and
 * platform_device its position within it. Pure: exposed for tests. */
void hs__inventory_order(hs_inventory *inv);
/* The key of a platform from its name and vendor. */
void hs__platform_key(const char *name, const char *vendor, char *out, size_t cap);
/* Whether a device or platform of these names is a simulator/emulator. */
bool hs__is_simulator(const char *platform_name, const char *device_name);
void hs__inventory_release(hs_inventory *inv);
/* Fill `info` for one device (also used for sub-devices). */
hs_status hs__device_query(cl_platform_id platform, cl_device_id dev,
                           hs_device_info *info);

/* ---- hwloc -------------------------------------------------------------- */

typedef struct hs_topo hs_topo;

typedef struct hs_topo_summary {
  int packages, numa_nodes, cores, pus;
} hs_topo_summary;

hs_status hs__topo_open(hs_topo **out);
void hs__topo_close(hs_topo *topo);
void hs__topo_summary(const hs_topo *topo, hs_topo_summary *out);
/* Fill info->cpuset for a device: PCI devices through their bus id, CPU
 * devices with the PUs of the cores they run on (`first_core`..+n). */
void hs__topo_locate(const hs_topo *topo, hs_device_info *info);
/* The PU list ("0-1") of `n_cores` cores starting at core `first_core`. */
hs_status hs__topo_cores_cpuset(const hs_topo *topo, int first_core,
                                int n_cores, char *buf, size_t len);
/* Bind the calling thread to the PUs of the given cores. */
hs_status hs__topo_bind_thread(const hs_topo *topo, int first_core,
                               int n_cores);
/* The calling thread's binding, to restore later (NULL on failure; free
 * with hs__topo_binding_restore, which also applies it). */
void *hs__topo_binding_save(const hs_topo *topo);
void hs__topo_binding_restore(const hs_topo *topo, void *saved);

/* ---- sub-devices -------------------------------------------------------- */

/* Split a device by counts (compute units per part). Sub-device handles are
 * written to `out` (n entries) and must be released with
 * hs__subdevices_release. Fails with HS_ERR_UNSUPPORTED when the device
 * cannot be partitioned by counts. */
hs_status hs__subdevices_create(const hs_dev *parent, const unsigned *counts,
                                int n, hs_dev *out);
void hs__subdevices_release(hs_dev *subs, int n);

/* ---- contexts and queues ------------------------------------------------ */

typedef struct hs_ctx {
  cl_context ctx;
  cl_platform_id platform;
  /* Limits every buffer of the context is checked against before it is
   * asked for (0 / false: unknown, not checked): the smallest max
   * allocation of its devices, and whether its buffers live in host memory
   * (CPU devices), where hetsage allocates them itself (see hs__mem_create). */
  size_t max_alloc;
  bool host_memory;
} hs_ctx;

/* One context over `n` devices of one platform. */
hs_status hs__ctx_create(const hs_dev *devs, int n, hs_ctx *out);
void hs__ctx_release(hs_ctx *ctx);

enum { HS_QUEUE_PROFILING = 1, HS_QUEUE_OUT_OF_ORDER = 2 };
/* Properties the device lacks are dropped (logged), never an error. */
hs_status hs__queue_create(const hs_ctx *ctx, const hs_dev *dev, int flags,
                           cl_command_queue *out);

/* Wait for everything queued on `*q`, release it and clear it (NULL is
 * ignored). */
void hs__queue_release(cl_command_queue *q);
/* Whether the profiling timestamps of profiling queue `q` are nanoseconds
 * of real time: a 4 MiB fill must take at least 100 ns (40 TB/s). Mesa
 * 22.3's rusticl accepts profiling queues but numbers its events 1, 2,
 * 3...: kernel times from it would be nonsense. Probed once per platform
 * (the answer is an implementation's), with a blocking fill on `q`. */
bool hs__queue_timestamps_real(const hs_ctx *ctx, cl_command_queue q);
/* Take one more reference to `q` (NULL is fine) and return it: a module
 * that keeps a queue it was given retains it and releases it with
 * hs__queue_release, so that its teardown never touches a queue its
 * creator has already released. */
cl_command_queue hs__queue_retain(cl_command_queue q);

/* ---- programs ------------------------------------------------------------ */

/* Build a program from embedded sources (names from cl_kernels/, e.g.
 * {"hs_common.h", "sample.cl"}), concatenated in order, for one device.
 * The binary is cached on disk in the cache folder of the device's settings
 * (none without settings), keyed by a hash of runtime
 * version, sources, options, platform, device and driver. A corrupt or
 * mismatched entry is rebuilt silently; a build failure returns
 * HS_ERR_BUILD with the build log in the detail. `*cache_hit` (optional)
 * says whether the binary came from the cache. */
hs_status hs__program_build(const hs_ctx *ctx, const hs_dev *dev,
                            const char *const *sources, int n_sources,
                            const char *options, cl_program *out,
                            bool *cache_hit);

/* What hs__program_build_fast did. */
typedef struct hs_build_note {
  bool cache_hit;
  /* The build with the speed-ups failed and the program was built without
   * them; `why` holds the head of that build's error. */
  bool without_speedups;
  char why[256];
} hs_build_note;

/* hs__program_build with `speedups`: options that only make the program
 * faster on some devices ("-DHS_CPU_DEVICE": software prefetches; NULL or
 * "" for none), appended to `options`. A device whose compiler rejects the
 * program with them gets it built again without them: the result is the
 * same program, slower, never a failure. That retry is logged (build
 * category) and reported in `note` (optional) for the caller to show. A
 * failure is not cached: each process tries the speed-ups first again.
 * Other errors (no source, I/O, memory) are returned as they are. */
hs_status hs__program_build_fast(const hs_ctx *ctx, const hs_dev *dev,
                                 const char *const *sources, int n_sources,
                                 const char *options, const char *speedups,
                                 cl_program *out, hs_build_note *note);

/* The sources concatenated as hs__program_build compiles them (each file
 * after a #line directive naming it); malloc'd, the caller frees. */
hs_status hs__sources_assemble(const char *const *sources, int n, char **text, size_t *len);

/* Load a program from a binary file (devices without a compiler, e.g.
 * FPGAs, whose board profile names prebuilt binaries). */
hs_status hs__program_from_binary_file(const hs_ctx *ctx, const hs_dev *dev,
                                       const char *path, const char *options,
                                       cl_program *out);
/* The same from a binary in memory; `origin` names it in messages. */
hs_status hs__program_from_binary(const hs_ctx *ctx, const hs_dev *dev,
                                  const unsigned char *bin, size_t len, const char *options,
                                  const char *origin, cl_program *out);
/* Write a built program's binary for `dev` to `path` (atomically). */
hs_status hs__program_save_binary(cl_program prog, const hs_dev *dev,
                                  const char *path);
/* A built program's binary for `dev` (malloc'd, the caller frees). */
hs_status hs__program_binary(cl_program prog, const hs_dev *dev, unsigned char **bin,
                             size_t *len);

/* A whole file into a malloc'd buffer (one byte more than its length);
 * false with errno set when it cannot be read. */
bool hs__file_read(const char *path, unsigned char **data, size_t *len);
/* Write `parts` in order to a temporary file beside `path`, flush it and
 * rename it over `path`, so that a reader never sees half a file. */
hs_status hs__file_write_atomic(const char *path, const void *const *parts,
                                const size_t *lens, int n);

/* The cache folder of `dev`'s settings (created on demand);
 * HS_ERR_NOT_FOUND when it has none. */
hs_status hs__cache_dir(const hs_dev *dev, char *buf, size_t len);
/* `dir` (NULL: none, HS_ERR_NOT_FOUND), created on demand, into buf. */
hs_status hs__cache_dir_at(const char *dir, char *buf, size_t len);

hs_status hs__kernel_create(cl_program prog, const char *name,
                            const hs_dev *dev, cl_kernel *out);

/* ---- buffers ---------------------------------------------------------- */

/* An array that may exceed the device's max allocation: split into parts of
 * at most `part_bytes` (a multiple of `elem_size`). */
#define HS_BUF_MAX_PARTS 64
typedef struct hs_split_buf {
  cl_mem parts[HS_BUF_MAX_PARTS];
  size_t part_bytes; /* every part but the last holds exactly this */
  size_t total_bytes;
  size_t elem_size;
  int n_parts;
} hs_split_buf;

/* Allocate `total_bytes`, split at the device's max allocation, or at its
 * settings' max_alloc when that is lower (for tests). */
hs_status hs__split_buf_create(const hs_ctx *ctx, const hs_dev *dev,
                               cl_mem_flags flags, size_t total_bytes,
                               size_t elem_size, hs_split_buf *out);
void hs__split_buf_release(hs_split_buf *buf);
/* Blocking write/read of a byte range that may span parts. */
hs_status hs__split_buf_write(cl_command_queue q, hs_split_buf *buf,
                              size_t offset, size_t bytes, const void *src);
hs_status hs__split_buf_read(cl_command_queue q, const hs_split_buf *buf,
                             size_t offset, size_t bytes, void *dst);
/* The device's effective max allocation (honours its settings' max_alloc). */
size_t hs__max_alloc(const hs_dev *dev);

/* The one place buffers are created (hs__mem_create, split buffers): the
 * checks and host allocation hs__mem_create describes. */
hs_status hs__buffer_create(const hs_ctx *ctx, cl_mem_flags flags, size_t bytes, cl_mem *out);

/* ---- events ------------------------------------------------------------- */

typedef enum hs_event_state {
  HS_EVENTS_DONE = 0,    /* every event completed */
  HS_EVENTS_PENDING = 1, /* at least one still queued or running */
  HS_EVENTS_FAILED = 2,  /* at least one ended with an error (detail set) */
} hs_event_state;

/* Poll without blocking (clGetEventInfo; never relies on callbacks, which
 * some drivers do not fire on error). */
hs_event_state hs__events_poll(const cl_event *events, int n);
/* Block until every event completed; HS_ERR_OPENCL naming the failed
 * command's status otherwise. */
hs_status hs__events_wait(const cl_event *events, int n);
/* Waiting for the next completion among several events (a driving
 * thread with nothing to do until some device finishes): read the
 * completion count, poll, and when nothing is done ask to be told of the
 * events' completions (clSetEventCallback; once per event) and wait for
 * the count to move past what was read, at most `timeout_s` (callbacks
 * only wake the thread early: what completed is still learnt by polling).
 * The count is process-wide: another waiter's completions wake it too. */
uint64_t hs__events_generation(void);
void hs__events_notify(const cl_event *events, int n);
void hs__events_wait_next(uint64_t since, double timeout_s);
/* Release and clear events (NULL entries are skipped). */
void hs__events_release(cl_event *events, int n);
/* Take one more reference to `ev` (NULL is fine) and return it, so that
 * two owners can each release it. */
cl_event hs__event_retain(cl_event ev);

#endif
