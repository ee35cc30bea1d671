/* A hand-written model library with several dtypes and a scalar input:
 *   idx: i64 [k], scale: f64 []  ->
 *   scaled   = idx · scale           f64 [k]
 *   positive = idx > 0               bool [k]
 *   half     = f16(idx · scale)      f16 [k]
 * A negative scale makes run fail with a message. */
#include "test_model.h"

static const int64_t dims[1] = {-1};
static const char *const params[1] = {"k"};
static const gatec_abi_value_info inputs[2] = {
    {"idx", GATEC_DTYPE_I64, 1, dims, params},
    {"scale", GATEC_DTYPE_F64, 0, NULL, NULL}};
static const gatec_abi_value_info outputs[3] = {
    {"scaled", GATEC_DTYPE_F64, 1, dims, params},
    {"positive", GATEC_DTYPE_BOOL, 1, dims, params},
    {"half", GATEC_DTYPE_F16, 1, dims, params}};

static int run(const void *const *in_data, const int64_t *const *in_shapes,
               void **out_data, int64_t *const *out_shapes,
               gatec_alloc_fn alloc, void *alloc_ctx, char *err,
               size_t err_len) {
  const int64_t *idx = in_data[0];
  double scale = *(const double *)in_data[1];
  int64_t k = in_shapes[0][0];
  if (!(scale >= 0)) {
    snprintf(err, err_len, "scale must be >= 0, got %g", scale);
    return 1;
  }
  double *scaled = alloc((size_t)k * sizeof(double), 64, alloc_ctx);
  unsigned char *positive = alloc((size_t)k, 1, alloc_ctx);
  _Float16 *half = alloc((size_t)k * sizeof(_Float16), 2, alloc_ctx);
  if (!scaled || !positive || !half) {
    snprintf(err, err_len, "cannot allocate the outputs");
    return 1;
  }
  for (int64_t i = 0; i < k; ++i) {
    scaled[i] = (double)idx[i] * scale;
    positive[i] = idx[i] > 0;
    half[i] = (_Float16)scaled[i];
  }
  for (int j = 0; j < 3; ++j)
    out_shapes[j][0] = k;
  out_data[0] = scaled;
  out_data[1] = positive;
  out_data[2] = half;
  return 0;
}

static const gatec_model_abi abi = {
    GATEC_MODEL_ABI_VERSION, TEST_HOST_TARGET, 2, 3, inputs, outputs, run};

GATEC_MODEL_EXPORT const gatec_model_abi *gatec_model_get_abi(void) {
  return &abi;
}
