/*===- model_support.c - the fixed part of every model library's wrapper --===
 *
 * gatec compiles each model into a library whose ABI wrapper (the model ABI,
 * gatec/model_abi.h, over the C interface of @main_graph) is generated per
 * model by compiler/target/LibraryEmitter.cpp: this file first, verbatim,
 * then the model's types, signature tables and gatec_run. It is a real C11
 * source: the build compiles it on its own and tests it
 * (model_support_test.c). Reentrant: the only mutable state is the calling
 * thread's run-time check handler.
 *===----------------------------------------------------------------------===*/
#include "gatec/model_abi.h"
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed run-time check of the model (--lower-run-time-checks) ends the
   run here: back to gatec_run, which returns the message as the run's
   error. */
static _Thread_local jmp_buf *gatec_check_env;
static _Thread_local const char *gatec_check_msg;
static _Thread_local int gatec_check_oom; /* the failure is a malloc's */
__attribute__((visibility("hidden"), noreturn)) void
gatec_check_failed(const char *msg) {
  gatec_check_msg = msg;
  if (gatec_check_env)
    longjmp(*gatec_check_env, 1);
  fprintf(stderr, "%s\n", msg);
  abort();
}

/* A malloc of the model's host code returned NULL: the run ends as above,
   and gatec_run returns 2 (out of memory). */
__attribute__((visibility("hidden"), noreturn)) void
gatec_alloc_failed(const char *msg) {
  gatec_check_oom = 1;
  gatec_check_failed(msg);
}

/* The model's host buffers: --lower-run-time-checks renames the malloc,
   aligned_alloc and free calls of the model's code to these. Each block
   carries a header; a block allocated by the thread that runs gatec_run is
   linked into that thread's list of live blocks, so that a run a failed
   check ends (a longjmp past the model's frees) frees what it had
   allocated. Blocks of other threads (OpenMP workers' scratch, freed in
   their iteration) are not linked. A block may be freed by another thread
   than the one that linked it: the list is changed under one lock (taken
   once per allocation, not per element). */
struct gatec_block {
  struct gatec_block *prev, *next, **head; /* head: NULL when not linked */
  void *base;
  uint64_t bytes, align; /* what the model asked for */
};
enum { gatec_header = 64 }; /* >= sizeof(struct gatec_block), 64-aligned */
static _Thread_local struct gatec_block *gatec_live;
static _Thread_local int gatec_in_run;
static int gatec_live_lock;

static void gatec_lock(void) {
  while (__atomic_test_and_set(&gatec_live_lock, __ATOMIC_ACQUIRE))
    ;
}
static void gatec_unlock(void) {
  __atomic_clear(&gatec_live_lock, __ATOMIC_RELEASE);
}

/* Large blocks the model freed, kept for its next allocations: malloc
   returns blocks this large (glibc: from 128 KiB) to the kernel on free,
   and every run then page-faults its buffers in again, zeroed, which cost
   a d=1024 Llama block at T=512 ~5 ms of 62 on 2 threads (the threads
   fault on one address space). A freed block of at least gatec_cache_min
   bytes is kept (at most gatec_cache_slots of them, and no more bytes in
   all than the model had live at its peak: the cache at most doubles the
   model's footprint); an allocation takes the smallest kept block that is
   at least as large and at most twice as large. The oldest is freed
   first; all are freed when the library is unloaded. Under the lock of
   the live list. */
enum { gatec_cache_min = 256 << 10, gatec_cache_slots = 16 };
static struct gatec_block *gatec_cache[gatec_cache_slots];
static uint64_t gatec_cached, gatec_live_bytes, gatec_peak_bytes;

static struct gatec_block *gatec_cache_take(uint64_t n, uint64_t align) {
  int best = -1;
  for (int i = 0; i < gatec_cache_slots; ++i) {
    struct gatec_block *c = gatec_cache[i];
    if (c && c->align == align && c->bytes >= n && c->bytes / 2 <= n &&
        (best < 0 || c->bytes < gatec_cache[best]->bytes))
      best = i;
  }
  if (best < 0)
    return NULL;
  struct gatec_block *b = gatec_cache[best];
  /* Slots keep their age order: the oldest first. */
  for (int i = best; i + 1 < gatec_cache_slots; ++i)
    gatec_cache[i] = gatec_cache[i + 1];
  gatec_cache[gatec_cache_slots - 1] = NULL;
  gatec_cached -= b->bytes;
  return b;
}

/* Keeps `b`, evicting the oldest blocks while the slots are full or the
   bytes over the peak; returns the blocks to free (`b` itself when it is
   larger than the peak), chained through `next`. */
static struct gatec_block *gatec_cache_put(struct gatec_block *b) {
  if (b->bytes > gatec_peak_bytes) {
    b->next = NULL;
    return b;
  }
  struct gatec_block *out = NULL;
  while (gatec_cache[0] && (gatec_cache[gatec_cache_slots - 1] ||
                            gatec_cached + b->bytes > gatec_peak_bytes)) {
    struct gatec_block *e = gatec_cache[0];
    gatec_cached -= e->bytes;
    for (int i = 0; i + 1 < gatec_cache_slots; ++i)
      gatec_cache[i] = gatec_cache[i + 1];
    gatec_cache[gatec_cache_slots - 1] = NULL;
    e->next = out;
    out = e;
  }
  int i = 0;
  while (gatec_cache[i])
    ++i;
  gatec_cache[i] = b;
  gatec_cached += b->bytes;
  return out;
}

__attribute__((destructor)) static void gatec_cache_release(void) {
  for (int i = 0; i < gatec_cache_slots; ++i) {
    if (gatec_cache[i])
      free(gatec_cache[i]->base);
    gatec_cache[i] = NULL;
  }
  gatec_cached = 0;
}

__attribute__((visibility("hidden"))) void *gatec_aligned_alloc(uint64_t align,
                                                                uint64_t n) {
  uint64_t a = align < 16 ? 16 : align;
  uint64_t h = a > gatec_header ? a : gatec_header; /* a multiple of a */
  if (a & (a - 1) || n > UINT64_MAX - h - a)
    return NULL;
  struct gatec_block *b = NULL;
  if (n >= gatec_cache_min) {
    gatec_lock();
    b = gatec_cache_take(n, a);
    gatec_unlock();
  }
  if (!b) {
    char *base = aligned_alloc(a, (h + n + a - 1) & ~(a - 1));
    if (!base)
      return NULL;
    b = (struct gatec_block *)(base + h) - 1;
    b->base = base;
    b->bytes = n;
    b->align = a;
  }
  if (b->bytes >= gatec_cache_min) {
    gatec_lock();
    gatec_live_bytes += b->bytes;
    if (gatec_live_bytes > gatec_peak_bytes)
      gatec_peak_bytes = gatec_live_bytes;
    gatec_unlock();
  }
  b->prev = NULL;
  b->head = NULL;
  if (gatec_in_run) {
    gatec_lock();
    b->head = &gatec_live;
    b->next = gatec_live;
    if (gatec_live)
      gatec_live->prev = b;
    gatec_live = b;
    gatec_unlock();
  }
  return b + 1;
}

__attribute__((visibility("hidden"))) void *gatec_malloc(uint64_t n) {
  return gatec_aligned_alloc(16, n);
}

__attribute__((visibility("hidden"))) void gatec_free(void *p) {
  if (!p)
    return;
  struct gatec_block *b = (struct gatec_block *)p - 1;
  if (b->head) {
    gatec_lock();
    if (b->prev)
      b->prev->next = b->next;
    else
      *b->head = b->next;
    if (b->next)
      b->next->prev = b->prev;
    gatec_unlock();
  }
  if (b->bytes >= gatec_cache_min) {
    gatec_lock();
    gatec_live_bytes -= b->bytes;
    b = gatec_cache_put(b);
    gatec_unlock();
  } else {
    b->next = NULL;
  }
  while (b) {
    struct gatec_block *next = b->next;
    free(b->base);
    b = next;
  }
}

/* Frees the blocks still live on this thread's list (a run that ended
   early), and returns to the list of an enclosing run (`outer`). */
static void gatec_end_run(struct gatec_block *outer, int outer_in_run) {
  while (gatec_live)
    gatec_free((struct gatec_block *)gatec_live + 1);
  gatec_live = outer;
  gatec_in_run = outer_in_run;
}

/* f32 to bf16, rounded to nearest even, NaN to the quiet NaN 0x7FC0 (as
   gatec's own rounding). LLVM's x86 backend calls it for a bf16 conversion
   it forms itself (it recognizes the integer rounding of a vectorized bf16
   store), and libgcc 12 has none. The bf16 result is returned, as the ABI
   wants, in the low 16 bits of xmm0: typed float here, since with a __bf16
   type clang would form the same conversion, i.e. a call of this function,
   again. */
__attribute__((visibility("hidden"))) float __truncsfbf2(float f) {
  unsigned u, h;
  float r;
  memcpy(&u, &f, 4);
  __asm__("" : "+r"(u)); /* opaque: no pattern to recognize */
  h = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u
                                      : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  memcpy(&r, &h, 4);
  return r;
}

/* The number of innermost dims of a view that are dense row-major in both
   `a` and `b` (strides; `b` may be NULL for a dense destination), and in
   *run the elements those dims span: each run is one memcpy. Dims of size 1
   are dense whatever their stride. */
static int64_t gatec_dense_inner(int64_t rank, const int64_t *sizes,
                                 const int64_t *a, const int64_t *b,
                                 int64_t *run) {
  int64_t d = rank;
  *run = 1;
  while (d > 0 && (sizes[d - 1] == 1 ||
                   (a[d - 1] == *run && (!b || b[d - 1] == *run)))) {
    *run *= sizes[d - 1];
    --d;
  }
  return d;
}

/* Copies a strided view into dense row-major memory: one memcpy per run of
   dense innermost dims (the whole view when it is dense, as a model's
   results nearly always are), not one per element. */
static void gatec_copy(char *dst, const char *src, int64_t rank,
                       const int64_t *sizes, const int64_t *strides,
                       size_t esize) {
  int64_t n = 1, run, idx[16] = {0};
  for (int64_t i = 0; i < rank; ++i)
    n *= sizes[i];
  if (n == 0)
    return;
  int64_t outer = gatec_dense_inner(rank, sizes, strides, NULL, &run);
  size_t bytes = (size_t)run * esize;
  for (int64_t k = 0; k < n / run; ++k) {
    int64_t off = 0;
    for (int64_t i = 0; i < outer; ++i)
      off += idx[i] * strides[i];
    memcpy(dst + k * bytes, src + off * (int64_t)esize, bytes);
    for (int64_t i = outer - 1; i >= 0; --i) {
      if (++idx[i] < sizes[i])
        break;
      idx[i] = 0;
    }
  }
}

/* memref.copy of non-contiguous views calls this (MLIR's CRunnerUtils
   signature); the model library carries its own so that it needs nothing
   but libc and libm. */
typedef struct {
  int64_t rank;
  void *descriptor;
} gatec_unranked;
__attribute__((visibility("hidden"))) void
memrefCopy(int64_t esize, gatec_unranked *src, gatec_unranked *dst) {
  int64_t rank = src->rank;
  char **s = (char **)src->descriptor, **d = (char **)dst->descriptor;
  int64_t *sm = (int64_t *)(s + 2), *dm = (int64_t *)(d + 2);
  /* offset, sizes[rank], strides[rank] */
  const int64_t *sizes = sm + 1, *sstr = sm + 1 + rank, *dstr = dm + 1 + rank;
  int64_t n = 1, run, idx[16] = {0};
  for (int64_t i = 0; i < rank; ++i)
    n *= sizes[i];
  if (n == 0)
    return;
  int64_t outer = gatec_dense_inner(rank, sizes, sstr, dstr, &run);
  size_t bytes = (size_t)run * (size_t)esize;
  for (int64_t k = 0; k < n / run; ++k) {
    int64_t so = sm[0], dof = dm[0];
    for (int64_t i = 0; i < outer; ++i)
      so += idx[i] * sstr[i], dof += idx[i] * dstr[i];
    memcpy(d[1] + dof * esize, s[1] + so * esize, bytes);
    for (int64_t i = outer - 1; i >= 0; --i) {
      if (++idx[i] < sizes[i])
        break;
      idx[i] = 0;
    }
  }
}
