/* A hand-written model library: y = 2·x + b.
 *   x: f32 [batch, seq, 4] (batch, seq dynamic), b = {0.5, -1, 0.25, 3}
 *   y: f32 [batch, seq, 4]
 * Built several times with macros that spoil the descriptor:
 *   AFFINE_ABI_VERSION=2u  another ABI version
 *   AFFINE_CUDA            target "cuda-sm_90"
 *   AFFINE_OTHER_CPU       a CPU target of another architecture
 *   AFFINE_BAD_DTYPE       input dtype 99 */
#include "test_model.h"

#ifndef AFFINE_ABI_VERSION
#define AFFINE_ABI_VERSION GATEC_MODEL_ABI_VERSION
#endif
#if defined(AFFINE_CUDA)
#define AFFINE_TARGET "cuda-sm_90"
#elif defined(AFFINE_OTHER_CPU)
#define AFFINE_TARGET TEST_OTHER_CPU_TARGET
#else
#define AFFINE_TARGET TEST_HOST_TARGET
#endif
#ifdef AFFINE_BAD_DTYPE
#define AFFINE_X_DTYPE 99
#else
#define AFFINE_X_DTYPE GATEC_DTYPE_F32
#endif

static const float bias[4] = {0.5f, -1.0f, 0.25f, 3.0f};

static const int64_t dims[3] = {-1, -1, 4};
static const char *const params[3] = {"batch", "seq", NULL};
static const gatec_abi_value_info inputs[1] = {
    {"x", AFFINE_X_DTYPE, 3, dims, params}};
static const gatec_abi_value_info outputs[1] = {
    {"y", GATEC_DTYPE_F32, 3, dims, params}};

static int run(const void *const *in_data, const int64_t *const *in_shapes,
               void **out_data, int64_t *const *out_shapes,
               gatec_alloc_fn alloc, void *alloc_ctx, char *err,
               size_t err_len) {
  const float *x = in_data[0];
  int64_t n = test_num_elements(3, in_shapes[0]);
  float *y = alloc((size_t)n * sizeof(float), 64, alloc_ctx);
  if (!y) {
    snprintf(err, err_len, "cannot allocate output 'y'");
    return 1;
  }
  for (int64_t i = 0; i < n; ++i)
    y[i] = 2.0f * x[i] + bias[i % 4];
  for (int d = 0; d < 3; ++d)
    out_shapes[0][d] = in_shapes[0][d];
  out_data[0] = y;
  return 0;
}

static const gatec_model_abi abi = {
    AFFINE_ABI_VERSION, AFFINE_TARGET, 1, 1, inputs, outputs, run};

GATEC_MODEL_EXPORT const gatec_model_abi *gatec_model_get_abi(void) {
  return &abi;
}
