/* A hand-written model library whose one input uses a dim_param twice:
 *   x: f32 [n, n]  ->  y = transpose(x): f32 [n, n] */
#include "test_model.h"

static const int64_t dims[2] = {-1, -1};
static const char *const params[2] = {"n", "n"};
static const gatec_abi_value_info inputs[1] = {
    {"x", GATEC_DTYPE_F32, 2, dims, params}};
static const gatec_abi_value_info outputs[1] = {
    {"y", GATEC_DTYPE_F32, 2, dims, params}};

static int run(const void *const *in_data, const int64_t *const *in_shapes,
               void **out_data, int64_t *const *out_shapes,
               gatec_alloc_fn alloc, void *alloc_ctx, char *err,
               size_t err_len) {
  const float *x = in_data[0];
  int64_t n = in_shapes[0][0];
  float *y = alloc((size_t)(n * n) * sizeof(float), 64, alloc_ctx);
  if (!y) {
    snprintf(err, err_len, "cannot allocate output 'y'");
    return 1;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      y[j * n + i] = x[i * n + j];
  out_shapes[0][0] = out_shapes[0][1] = n;
  out_data[0] = y;
  return 0;
}

static const gatec_model_abi abi = {
    GATEC_MODEL_ABI_VERSION, TEST_HOST_TARGET, 1, 1, inputs, outputs, run};

GATEC_MODEL_EXPORT const gatec_model_abi *gatec_model_get_abi(void) {
  return &abi;
}
