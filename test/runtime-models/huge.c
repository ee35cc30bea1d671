/* A hand-written model library whose output is too large for any machine:
 *   x: f32 [n]  ->  y: f32 [2^48] (2^50 bytes, more than the 2^47-byte user
 *   address space of x86-64 and AArch64 Linux)
 * It asks the runtime's allocator for the buffer and fails when it gets
 * NULL, as a compiled model does. */
#include "test_model.h"

static const int64_t in_dims[1] = {-1};
static const char *const in_params[1] = {"n"};
static const int64_t out_dims[1] = {-1};
static const gatec_abi_value_info inputs[1] = {
    {"x", GATEC_DTYPE_F32, 1, in_dims, in_params}};
static const gatec_abi_value_info outputs[1] = {
    {"y", GATEC_DTYPE_F32, 1, out_dims, NULL}};

static int run(const void *const *in_data, const int64_t *const *in_shapes,
               void **out_data, int64_t *const *out_shapes,
               gatec_alloc_fn alloc, void *alloc_ctx, char *err,
               size_t err_len) {
  const int64_t elements = (int64_t)1 << 48;
  float *y = alloc((size_t)elements * sizeof(float), 64, alloc_ctx);
  if (!y) {
    snprintf(err, err_len, "cannot allocate output 'y' of %lld elements",
             (long long)elements);
    return 1;
  }
  /* Not reached on a real machine; a correct result if it ever is. */
  const float *x = in_data[0];
  for (int64_t i = 0; i < elements; ++i)
    y[i] = in_shapes[0][0] ? x[i % in_shapes[0][0]] : 0.0f;
  out_shapes[0][0] = elements;
  out_data[0] = y;
  return 0;
}

static const gatec_model_abi abi = {
    GATEC_MODEL_ABI_VERSION, TEST_HOST_TARGET, 1, 1, inputs, outputs, run};

GATEC_MODEL_EXPORT const gatec_model_abi *gatec_model_get_abi(void) {
  return &abi;
}
