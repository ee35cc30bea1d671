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

  printf("model support: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
