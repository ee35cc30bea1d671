/* A hand-written model library with two inputs sharing dim_param "n":
 *   a, b: f32 [n]  ->  sum = a + b, prod = a · b: f32 [n]
 * With BAD_OUTPUT_SHAPE it reports outputs of n + 1 elements, which
 * contradicts its signature (and the buffer it allocated). */
#include "test_model.h"

static const int64_t dims[1] = {-1};
static const char *const params[1] = {"n"};
static const gatec_abi_value_info inputs[2] = {
    {"a", GATEC_DTYPE_F32, 1, dims, params},
    {"b", GATEC_DTYPE_F32, 1, dims, params}};
static const gatec_abi_value_info outputs[2] = {
    {"sum", GATEC_DTYPE_F32, 1, dims, params},
    {"prod", GATEC_DTYPE_F32, 1, dims, params}};

static int run(const void *const *in_data, const int64_t *const *in_shapes,
               void **out_data, int64_t *const *out_shapes,
               gatec_alloc_fn alloc, void *alloc_ctx, char *err,
               size_t err_len) {
  const float *a = in_data[0], *b = in_data[1];
  int64_t n = in_shapes[0][0];
  float *sum = alloc((size_t)n * sizeof(float), 0, alloc_ctx);
  float *prod = alloc((size_t)n * sizeof(float), 0, alloc_ctx);
  if (!sum || !prod) {
    snprintf(err, err_len, "cannot allocate the outputs");
    return 1;
  }
  for (int64_t i = 0; i < n; ++i) {
    sum[i] = a[i] + b[i];
    prod[i] = a[i] * b[i];
  }
#ifdef BAD_OUTPUT_SHAPE
  n += 1;
#endif
  out_shapes[0][0] = n;
  out_shapes[1][0] = n;
  out_data[0] = sum;
  out_data[1] = prod;
  return 0;
}

static const gatec_model_abi abi = {
    GATEC_MODEL_ABI_VERSION, TEST_HOST_TARGET, 2, 2, inputs, outputs, run};

GATEC_MODEL_EXPORT const gatec_model_abi *gatec_model_get_abi(void) {
  return &abi;
}
