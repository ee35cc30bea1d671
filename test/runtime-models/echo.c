/* A hand-written model library that copies its 13 inputs, one per dtype, each
 * of rank 1 and any size, to 13 outputs: input "f32" -> output "f32_out"
 * and so on. For testing how gatec-run reads and writes every dtype. */
#include "test_model.h"

#include <string.h>

static const int64_t dims[1] = {-1};

#define V(name, dt)                                                            \
  { name, dt, 1, dims, NULL }
static const gatec_abi_value_info inputs[13] = {
    V("f32", GATEC_DTYPE_F32),   V("f16", GATEC_DTYPE_F16),
    V("bf16", GATEC_DTYPE_BF16), V("f64", GATEC_DTYPE_F64),
    V("i8", GATEC_DTYPE_I8),     V("i16", GATEC_DTYPE_I16),
    V("i32", GATEC_DTYPE_I32),   V("i64", GATEC_DTYPE_I64),
    V("u8", GATEC_DTYPE_U8),     V("u16", GATEC_DTYPE_U16),
    V("u32", GATEC_DTYPE_U32),   V("u64", GATEC_DTYPE_U64),
    V("bool", GATEC_DTYPE_BOOL)};
static const gatec_abi_value_info outputs[13] = {
    V("f32_out", GATEC_DTYPE_F32),   V("f16_out", GATEC_DTYPE_F16),
    V("bf16_out", GATEC_DTYPE_BF16), V("f64_out", GATEC_DTYPE_F64),
    V("i8_out", GATEC_DTYPE_I8),     V("i16_out", GATEC_DTYPE_I16),
    V("i32_out", GATEC_DTYPE_I32),   V("i64_out", GATEC_DTYPE_I64),
    V("u8_out", GATEC_DTYPE_U8),     V("u16_out", GATEC_DTYPE_U16),
    V("u32_out", GATEC_DTYPE_U32),   V("u64_out", GATEC_DTYPE_U64),
    V("bool_out", GATEC_DTYPE_BOOL)};
#undef V

static const size_t sizes[13] = {4, 2, 2, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1};

static int run(const void *const *in_data, const int64_t *const *in_shapes,
               void **out_data, int64_t *const *out_shapes,
               gatec_alloc_fn alloc, void *alloc_ctx, char *err,
               size_t err_len) {
  for (int i = 0; i < 13; ++i) {
    size_t bytes = (size_t)in_shapes[i][0] * sizes[i];
    void *p = alloc(bytes, 0, alloc_ctx);
    if (!p) {
      snprintf(err, err_len, "cannot allocate output %d", i);
      return 1;
    }
    if (bytes)
      memcpy(p, in_data[i], bytes);
    out_shapes[i][0] = in_shapes[i][0];
    out_data[i] = p;
  }
  return 0;
}

static const gatec_model_abi abi = {
    GATEC_MODEL_ABI_VERSION, TEST_HOST_TARGET, 13, 13, inputs, outputs, run};

GATEC_MODEL_EXPORT const gatec_model_abi *gatec_model_get_abi(void) {
  return &abi;
}
