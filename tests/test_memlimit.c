/* Memory limits: allocations are checked against the device's limits and
 * the memory the process may still use before they are asked for, so that
 * running out is HS_ERR_NOMEM naming the limit, never an abort inside the
 * OpenCL implementation; and the README's main job under an address-space
 * limit at 50%, 75% and 100% of its measured peak either trains or stops
 * with that error. Limits are set in child processes (fork), never on the
 * test process itself. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cl_fixture.h"
#include "hetsage.h"
#include "hs_base.h"

#if defined(__SANITIZE_ADDRESS__)
#define HS_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HS_UNDER_ASAN 1
#endif
#endif

/* AddressSanitizer reserves terabytes of address space for its shadow: no
 * address-space limit can be set under it. */
static void skip_under_asan(void) {
#ifdef HS_UNDER_ASAN
  cr_skip_test("an address-space limit cannot be set under AddressSanitizer");
#endif
}

static uint64_t vm_size(void) { return hs__proc_kb_field("/proc/self/status", "VmSize"); }

static void limit_address_space(uint64_t bytes) {
  struct rlimit rl = {.rlim_cur = bytes, .rlim_max = bytes};
  if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(90);
}

/* Run fn in a child; the child's exit status (0: as expected), or a
 * message when a signal killed it. */
static void in_child(int (*fn)(void), const char *what) {
  fflush(NULL);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) _exit(fn());
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(!WIFSIGNALED(status), "%s: killed by signal %d (%s)", what, WTERMSIG(status),
            strsignal(WTERMSIG(status)));
  cr_expect_eq(WEXITSTATUS(status), 0, "%s: exit status %d (see the child's message above)",
               what, WEXITSTATUS(status));
}

#define CHILD_CHECK(cond, ...)              \
  do {                                      \
    if (!(cond)) {                          \
      fprintf(stderr, __VA_ARGS__);         \
      fprintf(stderr, "\n");                \
      return 1;                             \
    }                                       \
  } while (0)

Test(memlimit, a_buffer_over_the_max_allocation_is_nomem) {
  cl_fixture f;
  clf_open(&f);
  size_t max = f.ctx.max_alloc;
  cr_assert_gt(max, 0);
  cl_mem m = NULL;
  hs_status st = hs__mem_create(&f.ctx, CL_MEM_READ_WRITE, max + 4096, &m);
  cr_expect_eq(st, HS_ERR_NOMEM, "%s", hs_last_error());
  cr_expect_null(m);
  cr_expect(strstr(hs_last_error(), "CL_DEVICE_MAX_MEM_ALLOC_SIZE"), "%s", hs_last_error());
  clf_close(&f);
}

static int buffer_beyond_the_room(void) {
  cl_fixture f;
  memset(&f, 0, sizeof f);
  CHILD_CHECK(hs__inventory_discover(&f.inv) == HS_OK && f.inv.n_devs > 0, "no device");
  int pick = -1;
  for (int i = 0; i < f.inv.n_devs; i++)
    if (f.inv.devs[i].info.type == HS_DEVICE_CPU) pick = i;
  if (pick < 0) return 0; /* nothing in host memory to check */
  f.dev = f.inv.devs[pick];
  CHILD_CHECK(hs__ctx_create(&f.dev, 1, &f.ctx) == HS_OK, "%s", hs_last_error());
  CHILD_CHECK(hs__queue_create(&f.ctx, &f.dev, 0, &f.q) == HS_OK, "%s", hs_last_error());
  limit_address_space(vm_size() + ((uint64_t)96 << 20));
  cl_mem m = NULL;
  size_t bytes = (size_t)256 << 20;
  if (bytes > f.ctx.max_alloc) bytes = f.ctx.max_alloc;
  hs_status st = hs__mem_create(&f.ctx, CL_MEM_READ_WRITE, bytes, &m);
  if (st == HS_OK) {
    /* Used, the implementation's lazy allocation would abort. */
    float x = 1;
    clEnqueueFillBuffer(f.q, m, &x, 4, 0, bytes, 0, NULL, NULL);
    clFinish(f.q);
  }
  CHILD_CHECK(st == HS_ERR_NOMEM, "status %s (%s)", hs_strerror(st), hs_last_error());
  CHILD_CHECK(strstr(hs_last_error(), "ulimit -v") != NULL, "%s", hs_last_error());
  /* Within the room it works. */
  st = hs__mem_create(&f.ctx, CL_MEM_READ_WRITE, (size_t)8 << 20, &m);
  CHILD_CHECK(st == HS_OK, "%s", hs_last_error());
  float x = 2, y = 0;
  CHILD_CHECK(clEnqueueFillBuffer(f.q, m, &x, 4, 0, (size_t)8 << 20, 0, NULL, NULL) ==
                  CL_SUCCESS && hs__mem_read(f.q, m, true, 4096, 4, &y, 0, NULL, NULL) == HS_OK &&
                  y == 2,
              "the buffer does not work");
  hs__mem_release(&m);
  clf_close(&f);
  return 0;
}

Test(memlimit, a_buffer_beyond_the_address_space_left_is_nomem) {
  skip_under_asan();
  in_child(buffer_beyond_the_room, "a 256 MiB buffer with 96 MiB of address space left");
}

static int room_reports_the_limit(void) {
  char why[700];
  uint64_t before = hs__mem_room(why, sizeof why);
  limit_address_space(vm_size() + ((uint64_t)64 << 20));
  uint64_t room = hs__mem_room(why, sizeof why);
  CHILD_CHECK(room <= ((uint64_t)64 << 20) && room < before, "room %llu (before %llu)",
              (unsigned long long)room, (unsigned long long)before);
  CHILD_CHECK(strstr(why, "RLIMIT_AS") != NULL, "%s", why);
  CHILD_CHECK(hs__mem_room_check((uint64_t)1 << 30, "a test allocation") == HS_ERR_NOMEM,
              "1 GiB passed the check");
  CHILD_CHECK(strstr(hs_last_error(), "a test allocation of 1.0 GiB would exceed the "
                     "address-space limit") != NULL, "%s", hs_last_error());
  return 0;
}

Test(memlimit, room_reports_the_binding_limit) {
  skip_under_asan();
  in_child(room_reports_the_limit, "hs__mem_room");
}

static int build_within_a_limit(void) {
  cl_fixture f;
  memset(&f, 0, sizeof f);
  CHILD_CHECK(hs__inventory_discover(&f.inv) == HS_OK && f.inv.n_devs > 0, "no device");
  f.dev = f.inv.devs[0];
  CHILD_CHECK(hs__ctx_create(&f.dev, 1, &f.ctx) == HS_OK, "%s", hs_last_error());
  limit_address_space(vm_size() + ((uint64_t)100 << 20));
  static const char *const src[] = {"hs_common.h", "selftest.cl"};
  cl_program prog = NULL;
  hs_status st = hs__program_build(&f.ctx, &f.dev, src, 2, "", &prog, NULL);
  CHILD_CHECK(st == HS_ERR_NOMEM, "status %s (%s)", hs_strerror(st), hs_last_error());
  CHILD_CHECK(strstr(hs_last_error(), "compiler") != NULL, "%s", hs_last_error());
  return 0;
}

Test(memlimit, a_program_build_without_the_compilers_room_is_nomem) {
  skip_under_asan();
  in_child(build_within_a_limit, "a program build with 100 MiB of address space left");
}

static int discovery_within_a_limit(void) {
  /* Nothing of OpenCL is loaded yet in this process. */
  limit_address_space(vm_size() + ((uint64_t)32 << 20));
  hs_runtime *rt = NULL;
  hs_status st = hs_runtime_open(&rt, NULL);
  hs_runtime_close(rt);
  CHILD_CHECK(st == HS_ERR_NOMEM, "status %s (%s)", hs_strerror(st), hs_last_error());
  CHILD_CHECK(strstr(hs_last_error(), "OpenCL implementations") != NULL, "%s", hs_last_error());
  return 0;
}

Test(memlimit, discovery_under_a_limit_never_aborts) {
  skip_under_asan();
  in_child(discovery_within_a_limit, "discovery with 32 MiB of address space left");
}

/* ---- the README's main job under ulimit -v ------------------------------------ */

/* Run `hetsage train` (the README's first command) with an address-space
 * limit (0: none); stderr into err. Returns the wait status; *peak gets
 * the largest VmPeak seen while it ran. */
static int run_main_job(uint64_t limit, uint64_t *peak, char *err, size_t cap) {
  const char *exe = getenv("HS_HETSAGE");
  if (!exe) cr_skip_test("HS_HETSAGE is not set");
  char errpath[] = "/tmp/hs-soak-XXXXXX";
  int efd = mkstemp(errpath);
  cr_assert(efd >= 0);
  fflush(NULL);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    dup2(efd, STDERR_FILENO);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);
    if (limit) limit_address_space(limit);
    execl(exe, exe, "train", (char *)NULL);
    _exit(127);
  }
  char status_path[64];
  snprintf(status_path, sizeof status_path, "/proc/%d/status", (int)pid);
  *peak = 0;
  int status;
  for (;;) {
    uint64_t p = hs__proc_kb_field(status_path, "VmPeak");
    if (p > *peak) *peak = p;
    pid_t w = waitpid(pid, &status, WNOHANG);
    cr_assert(w >= 0);
    if (w == pid) break;
    usleep(2000);
  }
  close(efd);
  FILE *f = fopen(errpath, "r");
  size_t n = f ? fread(err, 1, cap - 1, f) : 0;
  err[n] = '\0';
  if (f) fclose(f);
  unlink(errpath);
  return status;
}

Test(memlimit, the_main_job_under_a_limit_trains_or_says_out_of_memory, .timeout = 1200) {
  skip_under_asan();
  static char err[1 << 16];
  uint64_t peak;
  int status = run_main_job(0, &peak, err, sizeof err);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the main job failed: %s", err);
  cr_assert_gt(peak, (uint64_t)1 << 20);
  cr_log_info("main job: VmPeak %.1f MiB", (double)peak / (1 << 20));
  static const int percent[] = {50, 75, 100};
  for (int i = 0; i < 3; i++) {
    uint64_t limit = peak / 100 * (uint64_t)percent[i], p;
    status = run_main_job(limit, &p, err, sizeof err);
    cr_expect(!WIFSIGNALED(status), "%d%% of the peak: killed by signal %d (%s): %s",
              percent[i], WIFSIGNALED(status) ? WTERMSIG(status) : 0,
              WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "", err);
    if (WIFSIGNALED(status)) continue;
    int rc = WEXITSTATUS(status);
    cr_expect(rc == 0 || (rc == 1 && strstr(err, "out of memory")),
              "%d%% of the peak: exit status %d without an out-of-memory error: %s",
              percent[i], rc, err);
    cr_log_info("%d%% of the peak (%.1f MiB): %s", percent[i], (double)limit / (1 << 20),
                rc == 0 ? "trained" : "out of memory, said so");
  }
}
