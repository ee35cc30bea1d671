/* An LD_PRELOAD shim for alloc-failure.test: malloc and aligned_alloc of at
   least GATEC_FAIL_WORKER_MALLOC bytes fail (return NULL) on every thread but
   the process's main thread, i.e. in the OpenMP workers. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
extern void *__libc_malloc(size_t);
extern void *__libc_memalign(size_t, size_t);
static long threshold = -1;
static int refuse(size_t n) {
  if (threshold < 0) {
    const char *e = getenv("GATEC_FAIL_WORKER_MALLOC");
    threshold = e ? atol(e) : 0;
  }
  return threshold > 0 && (long)n >= threshold &&
         syscall(SYS_gettid) != getpid();
}
void *malloc(size_t n) { return refuse(n) ? NULL : __libc_malloc(n); }
void *aligned_alloc(size_t a, size_t n) {
  return refuse(n) ? NULL : __libc_memalign(a, n);
}
