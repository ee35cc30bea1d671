/*===- model_support_test.c - model_support.c tested as C -----------------===
 *
 * The fixed part of the model libraries' ABI wrapper, compiled as the C
 * source it is and checked against independent references: bf16 rounding
 * (nearest even, NaN, infinities, the largest finite values), the strided
 * copies (a transposed view, an offset view), a failed run-time check
 * returning to its caller's setjmp with the message, and the tracking of a
 * run's buffers.
 *===----------------------------------------------------------------------===*/
#include "model_support.c"

static int failures, checks;

static void expect(int ok, const char *what) {
  ++checks;
  if (!ok) {
    ++failures;
    printf("FAIL %s\n", what);
  }
}

/* bf16 bits of f by rounding the f32 bits to nearest even (the reference:
   integer arithmetic on the bit pattern, written independently). */
static unsigned bf16Reference(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0u;
  uint32_t lower = u & 0xffffu, upper = u >> 16;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u)))
    ++upper;
  return upper;
}

/* The high bits of a linear congruential generator (its low bits have
   short periods). */
static unsigned rnd(unsigned *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return *seed >> 16;
}

static unsigned bits(float r) {
  uint32_t u;
  memcpy(&u, &r, 4);
  return u & 0xffffu;
}

int main(void) {
  /* bf16 rounding. */
  const uint32_t patterns[] = {
      0x3f800000u, /* 1 */
      0x3f808000u, /* a tie, even below: stays 0x3f80 */
      0x3f818000u, /* a tie, odd below: 0x3f82 */
      0x3f808001u, /* above the tie */
      0x7f800000u, /* inf */
      0xff800000u, /* -inf */
      0x7fc00001u, /* NaN */
      0xffffffffu, /* NaN */
      0x7f7fffffu, /* the largest f32 rounds to inf */
      0x00000001u, /* denormal */
      0x80000000u, /* -0 */
  };
  for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); ++i) {
    float f;
    memcpy(&f, &patterns[i], 4);
    char what[64];
    snprintf(what, sizeof(what), "__truncsfbf2(0x%08x)", patterns[i]);
    expect(bits(__truncsfbf2(f)) == bf16Reference(f), what);
  }
  for (uint32_t u = 0; u < 0xffffffffu - 65521u; u += 65521u) {
    float f;
    memcpy(&f, &u, 4);
    if (bits(__truncsfbf2(f)) != bf16Reference(f)) {
      expect(0, "__truncsfbf2 sweep");
      break;
    }
  }
  ++checks;

  /* gatec_copy: the transpose of a 2x3 row-major matrix, viewed 3x2. */
  float m[6] = {0, 1, 2, 3, 4, 5}, t[6];
  int64_t sizes[2] = {3, 2}, strides[2] = {1, 3};
  gatec_copy((char *)t, (const char *)m, 2, sizes, strides, sizeof(float));
  const float want[6] = {0, 3, 1, 4, 2, 5};
  expect(memcmp(t, want, sizeof(t)) == 0, "gatec_copy of a transposed view");

  /* memrefCopy: rank 2, the source an offset view with strides (3, 1) of a
     3x3 buffer ([1:3, 0:2]), into a dense 2x2 one. */
  float src[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, dst[4] = {0};
  struct {
    void *allocated, *aligned;
    int64_t offset, sizes[2], strides[2];
  } sd = {src, src, 3, {2, 2}, {3, 1}}, dd = {dst, dst, 0, {2, 2}, {2, 1}};
  gatec_unranked us = {2, &sd}, ud = {2, &dd};
  memrefCopy(sizeof(float), &us, &ud);
  const float wantCopy[4] = {3, 4, 6, 7};
  expect(memcmp(dst, wantCopy, sizeof(dst)) == 0, "memrefCopy of a view");

  /* Both copies on random views of rank 1-4 (slices, permutations, size-1
     dims with any stride, dense runs of every length), against an
     element-by-element walk written here. */
  {
    static float big[4096], out[4096], ref[4096], dense[4096];
    for (int i = 0; i < 4096; ++i)
      big[i] = (float)i;
    unsigned seed = 12345;
    int bad = 0;
    for (int trial = 0; trial < 2000 && !bad; ++trial) {
      int64_t rank = 1 + rnd(&seed) % 4;
      int64_t sz[4], full[4], perm[4] = {0, 1, 2, 3}, st[4], dst4[4];
      for (int64_t i = 0; i < rank; ++i) {
        full[i] = 1 + rnd(&seed) % 7;
        sz[i] = rnd(&seed) % 20 ? 1 + rnd(&seed) % full[i] : 0;
      }
      /* A row-major buffer `full`, its dims permuted half of the time. */
      int64_t fst[4], acc = 1;
      for (int64_t i = rank - 1; i >= 0; --i)
        fst[i] = acc, acc *= full[i];
      if (rnd(&seed) % 2)
        for (int64_t i = rank - 1; i > 0; --i) {
          int64_t j = rnd(&seed) % (i + 1), x;
          x = perm[i], perm[i] = perm[j], perm[j] = x;
        }
      int64_t n = 1, off = 0;
      for (int64_t i = 0; i < rank; ++i) {
        st[i] = fst[perm[i]];
        /* sizes bounded by the permuted dim's extent */
        if (sz[i] > full[perm[i]])
          sz[i] = full[perm[i]];
        n *= sz[i];
      }
      for (int64_t i = 0; i < rank; ++i)
        off += (full[perm[i]] - sz[i]) / 2 * st[i];
      acc = 1;
      for (int64_t i = rank - 1; i >= 0; --i)
        dst4[i] = acc, acc *= sz[i];
      /* The reference: every element through its index. */
      for (int64_t k = 0; k < n; ++k) {
        int64_t rem = k, o = off;
        for (int64_t i = rank - 1; i >= 0; --i)
          o += rem % sz[i] * st[i], rem /= sz[i];
        ref[k] = big[o];
      }
      memset(out, 0xff, sizeof(out));
      gatec_copy((char *)out, (const char *)(big + off), rank, sz, st,
                 sizeof(float));
      if (n && memcmp(out, ref, (size_t)n * sizeof(float)))
        bad = 1;
      /* memrefCopy into a dense buffer, then back into a view of `dense`
         with the source's strides. */
      /* Descriptors as MLIR lays them out for this rank: allocated,
         aligned, offset, sizes[rank], strides[rank]. */
      struct {
        void *allocated, *aligned;
        int64_t offset, dims[8];
      } vs = {big, big, off, {0}}, vd = {out, out, 0, {0}},
        vb = {dense, dense, off, {0}};
      for (int64_t i = 0; i < rank; ++i) {
        vs.dims[i] = vd.dims[i] = vb.dims[i] = sz[i];
        vs.dims[rank + i] = vb.dims[rank + i] = st[i];
        vd.dims[rank + i] = dst4[i];
      }
      memset(out, 0xff, sizeof(out));
      memset(dense, 0, sizeof(dense));
      gatec_unranked a = {rank, &vs}, b = {rank, &vd}, c = {rank, &vb};
      memrefCopy(sizeof(float), &a, &b);
      if (n && memcmp(out, ref, (size_t)n * sizeof(float)))
        bad = 2;
      memrefCopy(sizeof(float), &b, &c);
      for (int64_t k = 0; k < n && !bad; ++k) {
        int64_t rem = k, o = off;
        for (int64_t i = rank - 1; i >= 0; --i)
          o += rem % sz[i] * st[i], rem /= sz[i];
        if (dense[o] != ref[k])
          bad = 3;
      }
    }
    expect(bad == 0, bad == 1   ? "gatec_copy of random views"
                     : bad == 2 ? "memrefCopy from random views"
                                : "memrefCopy into random views");
  }

  /* A failed check returns to the run's setjmp with its message. */
  jmp_buf env;
  volatile int returned = 0;
  gatec_check_env = &env;
  if (setjmp(env) == 0)
    gatec_check_failed("gatec: a check");
  else
    returned = 1;
  gatec_check_env = NULL;
  expect(returned && strcmp(gatec_check_msg, "gatec: a check") == 0,
         "gatec_check_failed returns to the run");

  /* The run's buffers: aligned as asked, linked while a run is on, not
     linked outside one; a freed block leaves the list; the end of a run
     frees what is left and restores the enclosing list. */
  struct gatec_block *outer_live = gatec_live;
  gatec_live = NULL;
  gatec_in_run = 1;
  char *p1 = gatec_malloc(100), *p2 = gatec_aligned_alloc(64, 1000);
  char *p3 = gatec_aligned_alloc(256, 10), *p0 = gatec_malloc(0);
  expect(p1 && p2 && p3 && p0, "gatec_malloc / gatec_aligned_alloc");
  expect((uintptr_t)p1 % 16 == 0 && (uintptr_t)p2 % 64 == 0 &&
             (uintptr_t)p3 % 256 == 0,
         "gatec_aligned_alloc alignment");
  memset(p1, 1, 100);
  memset(p2, 2, 1000);
  memset(p3, 3, 10);
  int live = 0;
  for (struct gatec_block *b = gatec_live; b; b = b->next)
    ++live;
  expect(live == 4, "four live blocks in a run");
  gatec_free(p2);
  live = 0;
  for (struct gatec_block *b = gatec_live; b; b = b->next)
    live += (char *)(b + 1) == p2 ? 100 : 1;
  expect(live == 3, "a freed block leaves the list");
  expect(gatec_aligned_alloc(48, 8) == NULL, "an alignment not a power of 2");
  expect(gatec_malloc(UINT64_MAX - 8) == NULL, "a size that would wrap");
  gatec_end_run(outer_live, 0);
  expect(gatec_live == outer_live && !gatec_in_run,
         "the end of a run frees the rest");
  char *q = gatec_malloc(8);
  expect(q && ((struct gatec_block *)q - 1)->head == NULL,
         "a block outside a run is not linked");
  gatec_free(q);
  gatec_free(NULL);

  /* Large blocks are kept for the next allocations: the smallest kept
     block at least as large and at most twice as large, with the same
     alignment; never more bytes kept than were live at the peak; the
     oldest goes first; a block in use is never handed out twice. */
  {
    const uint64_t M = 1 << 20;
    char *a = gatec_aligned_alloc(64, 2 * M), *b = gatec_aligned_alloc(64, M);
    memset(a, 1, 2 * M);
    memset(b, 2, M);
    gatec_free(a);
    gatec_free(b);
    char *c = gatec_aligned_alloc(64, M - 4096); /* b fits best */
    char *d = gatec_aligned_alloc(64, M + 1);    /* a: 2 MiB <= 2 (M + 1) */
    char *e = gatec_aligned_alloc(64, M);        /* none kept: a new one */
    expect(c == b && d == a && e != a && e != b,
           "kept blocks reused, best fit first, never twice");
    memset(c, 3, M - 4096);
    memset(d, 4, M + 1);
    memset(e, 5, M);
    gatec_free(d);
    char *f = gatec_aligned_alloc(64, M / 2 - 1); /* 2 MiB > twice it */
    char *g = gatec_aligned_alloc(256, 2 * M);    /* another alignment */
    expect(f != a && g != a && (uintptr_t)g % 256 == 0,
           "no block more than twice the size or of another alignment");
    gatec_free(c);
    gatec_free(e);
    gatec_free(f);
    gatec_free(g);
    uint64_t peak = gatec_peak_bytes;
    expect(gatec_cached <= peak && gatec_live_bytes == 0,
           "kept bytes within the peak of live bytes");
    int kept = 0;
    for (int i = 0; i < gatec_cache_slots; ++i)
      kept += gatec_cache[i] != NULL;
    /* Small blocks are not kept; more blocks than slots evict the
       oldest. */
    char *many[gatec_cache_slots + 4];
    for (int i = 0; i < gatec_cache_slots + 4; ++i)
      many[i] = gatec_aligned_alloc(64, gatec_cache_min + 4096 * (i + 40));
    for (int i = 0; i < gatec_cache_slots + 4; ++i)
      gatec_free(many[i]);
    kept = 0;
    for (int i = 0; i < gatec_cache_slots; ++i)
      kept += gatec_cache[i] != NULL;
    expect(kept == gatec_cache_slots && gatec_cached <= gatec_peak_bytes &&
               (char *)(gatec_cache[gatec_cache_slots - 1] + 1) ==
                   many[gatec_cache_slots + 3],
           "a full cache keeps the newest blocks");
    gatec_cache_release();
    expect(gatec_cached == 0 && !gatec_cache[0], "the cache released");
  }

  printf("model support: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
