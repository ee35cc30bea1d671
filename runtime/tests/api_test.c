/* Tests every function of the runtime C API (gatec/runtime.h): results,
 * status codes and exact messages. Usage: gatec-runtime-api-test MODELS_DIR
 * (the directory of the test model libraries). Prints one line per failed
 * check and a summary; exits 1 if any check failed. */
#include "gatec/runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int checks, failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* Checks the code and the exact message of a status, then frees it. */
static void expect_status(gatec_status *st, gatec_status_code code,
                          const char *msg, int line) {
  ++checks;
  gatec_status_code got = gatec_status_get_code(st);
  const char *got_msg = gatec_status_message(st);
  if (got != code || strcmp(got_msg, msg) != 0) {
    ++failures;
    fprintf(
        stderr, "%s:%d: expected status %s \"%s\"\n%*sgot status %s \"%s\"\n",
        __FILE__, line, gatec_status_code_name(code), msg,
        (int)strlen(__FILE__) + 6, "", gatec_status_code_name(got), got_msg);
  }
  gatec_status_destroy(st);
}
#define EXPECT_STATUS(expr, code, msg)                                         \
  expect_status((expr), GATEC_STATUS_##code, (msg), __LINE__)
#define EXPECT_OK(expr) expect_status((expr), GATEC_STATUS_OK, "", __LINE__)

static char models[4096];
static char buf[8192];

/* printf into a static buffer (for expected messages). */
static const char *fmt(const char *f, const char *a) {
  snprintf(buf, sizeof(buf), f, a);
  return buf;
}
static char path_buf[4096];
static const char *model_path(const char *name) {
  snprintf(path_buf, sizeof(path_buf), "%s/%s", models, name);
  return path_buf;
}

static gatec_model *load(const char *name) {
  gatec_model *m = NULL;
  gatec_status *st = gatec_model_load(model_path(name), GATEC_DEVICE_CPU, &m);
  if (st) {
    fprintf(stderr, "cannot load %s: %s\n", name, gatec_status_message(st));
    gatec_status_destroy(st);
    exit(1);
  }
  return m;
}

static gatec_tensor *wrap_f32(float *data, int32_t rank, const int64_t *shape,
                              const int64_t *strides) {
  gatec_tensor *t = NULL;
  gatec_status *st = gatec_tensor_wrap(data, GATEC_DTYPE_F32, rank, shape,
                                       strides, GATEC_DEVICE_CPU, &t);
  CHECK(st == NULL && t != NULL);
  gatec_status_destroy(st);
  return t;
}

static void test_dtypes_and_status(void) {
  static const struct {
    gatec_dtype d;
    const char *name;
    size_t size;
  } all[] = {{GATEC_DTYPE_F32, "f32", 4},   {GATEC_DTYPE_F16, "f16", 2},
             {GATEC_DTYPE_BF16, "bf16", 2}, {GATEC_DTYPE_F64, "f64", 8},
             {GATEC_DTYPE_I8, "i8", 1},     {GATEC_DTYPE_I16, "i16", 2},
             {GATEC_DTYPE_I32, "i32", 4},   {GATEC_DTYPE_I64, "i64", 8},
             {GATEC_DTYPE_U8, "u8", 1},     {GATEC_DTYPE_U16, "u16", 2},
             {GATEC_DTYPE_U32, "u32", 4},   {GATEC_DTYPE_U64, "u64", 8},
             {GATEC_DTYPE_BOOL, "bool", 1}};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) {
    CHECK(gatec_dtype_size(all[i].d) == all[i].size);
    CHECK(strcmp(gatec_dtype_name(all[i].d), all[i].name) == 0);
    CHECK(gatec_dtype_from_name(all[i].name) == all[i].d);
  }
  CHECK(gatec_dtype_size(GATEC_DTYPE_INVALID) == 0);
  CHECK(gatec_dtype_size((gatec_dtype)99) == 0);
  CHECK(strcmp(gatec_dtype_name((gatec_dtype)99), "invalid") == 0);
  CHECK(gatec_dtype_from_name("float32") == GATEC_DTYPE_INVALID);
  CHECK(gatec_dtype_from_name(NULL) == GATEC_DTYPE_INVALID);

  static const char *names[] = {"ok",
                                "invalid argument",
                                "missing input",
                                "shape mismatch",
                                "dtype mismatch",
                                "load error",
                                "ABI version mismatch",
                                "wrong target",
                                "out of memory",
                                "device unavailable",
                                "model error"};
  for (int c = 0; c <= GATEC_STATUS_MODEL_ERROR; ++c)
    CHECK(strcmp(gatec_status_code_name((gatec_status_code)c), names[c]) == 0);
  CHECK(strcmp(gatec_status_code_name((gatec_status_code)42), "unknown") == 0);
  CHECK(gatec_status_get_code(NULL) == GATEC_STATUS_OK);
  CHECK(strcmp(gatec_status_message(NULL), "") == 0);
  gatec_status_destroy(NULL);

  CHECK(gatec_runtime_abi_version() == 1);
#if defined(__x86_64__)
  CHECK(strcmp(gatec_runtime_cpu_target(), "cpu-x86_64") == 0);
#endif
  CHECK(strcmp(gatec_device_name(GATEC_DEVICE_CPU), "cpu") == 0);
  CHECK(strcmp(gatec_device_name(GATEC_DEVICE_CUDA), "cuda") == 0);
  EXPECT_OK(gatec_device_check(GATEC_DEVICE_CPU));
  /* This test runs on machines without a CUDA driver. */
  EXPECT_STATUS(
      gatec_device_check(GATEC_DEVICE_CUDA), DEVICE_UNAVAILABLE,
      "device unavailable: no CUDA driver on this machine (libcuda.so.1: "
      "cannot open shared object file: No such file or directory); "
      "the cuda device needs an NVIDIA GPU and its driver");
  EXPECT_STATUS(gatec_device_check((gatec_device)7), INVALID_ARGUMENT,
                "unknown device 7");
}

static void test_tensors(void) {
  gatec_tensor *t = NULL;
  int64_t shape[3] = {2, 3, 4};
  EXPECT_OK(
      gatec_tensor_create(GATEC_DTYPE_F32, 3, shape, GATEC_DEVICE_CPU, &t));
  CHECK(t != NULL);
  CHECK(gatec_tensor_dtype(t) == GATEC_DTYPE_F32);
  CHECK(gatec_tensor_rank(t) == 3);
  CHECK(gatec_tensor_shape(t)[0] == 2 && gatec_tensor_shape(t)[2] == 4);
  CHECK(gatec_tensor_strides(t)[0] == 12 && gatec_tensor_strides(t)[1] == 4 &&
        gatec_tensor_strides(t)[2] == 1);
  CHECK(gatec_tensor_num_elements(t) == 24);
  CHECK(gatec_tensor_size_bytes(t) == 96);
  CHECK(gatec_tensor_is_contiguous(t));
  CHECK(gatec_tensor_owns_data(t));
  CHECK(gatec_tensor_device(t) == GATEC_DEVICE_CPU);
  CHECK(((uintptr_t)gatec_tensor_data(t) % 64) == 0);
  int zero = 1;
  for (int i = 0; i < 24; ++i)
    zero &= ((float *)gatec_tensor_data(t))[i] == 0.0f;
  CHECK(zero);
  shape[0] = 99; /* the tensor copied its shape */
  CHECK(gatec_tensor_shape(t)[0] == 2);
  gatec_tensor_destroy(t);

  /* A scalar. */
  EXPECT_OK(
      gatec_tensor_create(GATEC_DTYPE_F64, 0, NULL, GATEC_DEVICE_CPU, &t));
  CHECK(gatec_tensor_rank(t) == 0 && gatec_tensor_shape(t) == NULL &&
        gatec_tensor_num_elements(t) == 1 && gatec_tensor_size_bytes(t) == 8);
  gatec_tensor_destroy(t);

  /* An empty tensor with a huge other dim is fine. */
  int64_t empty[2] = {0, (int64_t)1 << 62};
  EXPECT_OK(
      gatec_tensor_create(GATEC_DTYPE_F32, 2, empty, GATEC_DEVICE_CPU, &t));
  CHECK(gatec_tensor_num_elements(t) == 0 && gatec_tensor_size_bytes(t) == 0);
  CHECK(gatec_tensor_is_contiguous(t));
  gatec_tensor_destroy(t);

  /* Errors. */
  int64_t bad[2] = {2, -2};
  t = (gatec_tensor *)&t; /* must be reset to NULL */
  EXPECT_STATUS(
      gatec_tensor_create(GATEC_DTYPE_F32, 2, bad, GATEC_DEVICE_CPU, &t),
      INVALID_ARGUMENT, "gatec_tensor_create: negative dim -2 at index 1");
  CHECK(t == NULL);
  EXPECT_STATUS(
      gatec_tensor_create(GATEC_DTYPE_INVALID, 1, bad, GATEC_DEVICE_CPU, &t),
      INVALID_ARGUMENT, "gatec_tensor_create: invalid dtype 0");
  EXPECT_STATUS(
      gatec_tensor_create(GATEC_DTYPE_F32, -1, bad, GATEC_DEVICE_CPU, &t),
      INVALID_ARGUMENT, "gatec_tensor_create: negative rank -1");
  EXPECT_STATUS(
      gatec_tensor_create(GATEC_DTYPE_F32, 2, NULL, GATEC_DEVICE_CPU, &t),
      INVALID_ARGUMENT, "gatec_tensor_create: rank 2 but no shape");
  EXPECT_STATUS(
      gatec_tensor_create(GATEC_DTYPE_F32, 1, bad, GATEC_DEVICE_CPU, NULL),
      INVALID_ARGUMENT, "gatec_tensor_create: out is NULL");
  int64_t overflow[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
  EXPECT_STATUS(
      gatec_tensor_create(GATEC_DTYPE_F32, 2, overflow, GATEC_DEVICE_CPU, &t),
      INVALID_ARGUMENT,
      "gatec_tensor_create: shape [1099511627776, 1099511627776] of "
      "f32 elements is too large to address");
  int64_t huge[1] = {(int64_t)1 << 48};
  EXPECT_STATUS(
      gatec_tensor_create(GATEC_DTYPE_F32, 1, huge, GATEC_DEVICE_CPU, &t),
      OUT_OF_MEMORY,
      "out of memory: cannot allocate 1125899906842624 bytes for a "
      "tensor");
  CHECK(t == NULL);
  EXPECT_STATUS(
      gatec_tensor_create(GATEC_DTYPE_F32, 2, shape, GATEC_DEVICE_CUDA, &t),
      DEVICE_UNAVAILABLE,
      "device unavailable: tensors live in host memory (a CUDA model "
      "copies its inputs to the GPU and its outputs back); create them on "
      "the cpu");

  /* Borrowed memory, strides. */
  float m[6] = {1, 2, 3, 4, 5, 6}; /* [[1 2 3] [4 5 6]] */
  int64_t s23[2] = {2, 3};
  gatec_tensor *w = wrap_f32(m, 2, s23, NULL);
  CHECK(gatec_tensor_data(w) == m && !gatec_tensor_owns_data(w));
  CHECK(gatec_tensor_is_contiguous(w));
  CHECK(gatec_tensor_strides(w)[0] == 3 && gatec_tensor_strides(w)[1] == 1);
  gatec_tensor_destroy(w); /* must not free m */
  CHECK(m[0] == 1);

  /* Its transpose as a view: [3, 2] with strides [1, 3]. */
  int64_t s32[2] = {3, 2}, st32[2] = {1, 3};
  gatec_tensor *tr = wrap_f32(m, 2, s32, st32);
  CHECK(!gatec_tensor_is_contiguous(tr));
  gatec_tensor *dense = NULL;
  EXPECT_OK(gatec_tensor_copy_dense(tr, &dense));
  float want_tr[6] = {1, 4, 2, 5, 3, 6};
  CHECK(dense && gatec_tensor_is_contiguous(dense) &&
        gatec_tensor_owns_data(dense) &&
        memcmp(gatec_tensor_data(dense), want_tr, sizeof(want_tr)) == 0);
  gatec_tensor_destroy(dense);
  gatec_tensor_destroy(tr);

  /* Reversed (negative stride) and broadcast (zero stride). */
  int64_t s5[1] = {5}, neg[1] = {-1};
  float v[5] = {10, 11, 12, 13, 14};
  gatec_tensor *rev = wrap_f32(&v[4], 1, s5, neg);
  EXPECT_OK(gatec_tensor_copy_dense(rev, &dense));
  float want_rev[5] = {14, 13, 12, 11, 10};
  CHECK(dense && memcmp(gatec_tensor_data(dense), want_rev, 20) == 0);
  gatec_tensor_destroy(dense);
  gatec_tensor_destroy(rev);
  int64_t sb[2] = {3, 2}, zb[2] = {0, 1};
  gatec_tensor *bc = wrap_f32(v, 2, sb, zb);
  EXPECT_OK(gatec_tensor_copy_dense(bc, &dense));
  float want_bc[6] = {10, 11, 10, 11, 10, 11};
  CHECK(dense && memcmp(gatec_tensor_data(dense), want_bc, 24) == 0);
  gatec_tensor_destroy(dense);
  gatec_tensor_destroy(bc);

  /* Rank 3, every other element of the middle dim. */
  float cube[2 * 4 * 2];
  for (int i = 0; i < 16; ++i)
    cube[i] = (float)i;
  int64_t s3[3] = {2, 2, 2}, st3[3] = {8, 4, 1};
  gatec_tensor *sl = wrap_f32(cube, 3, s3, st3);
  EXPECT_OK(gatec_tensor_copy_dense(sl, &dense));
  float want_sl[8] = {0, 1, 4, 5, 8, 9, 12, 13};
  CHECK(dense && memcmp(gatec_tensor_data(dense), want_sl, 32) == 0);
  gatec_tensor_destroy(dense);
  gatec_tensor_destroy(sl);

  /* Size-1 dims do not make a tensor non-contiguous. */
  int64_t s1[2] = {1, 3}, st1[2] = {77, 1};
  gatec_tensor *one = wrap_f32(m, 2, s1, st1);
  CHECK(gatec_tensor_is_contiguous(one));
  gatec_tensor_destroy(one);

  EXPECT_STATUS(gatec_tensor_wrap(NULL, GATEC_DTYPE_F32, 2, s23, NULL,
                                  GATEC_DEVICE_CPU, &t),
                INVALID_ARGUMENT,
                "gatec_tensor_wrap: data is NULL for a tensor of 6 elements");
  int64_t s0[1] = {0};
  EXPECT_OK(gatec_tensor_wrap(NULL, GATEC_DTYPE_F32, 1, s0, NULL,
                              GATEC_DEVICE_CPU, &t));
  gatec_tensor_destroy(t);
  EXPECT_STATUS(
      gatec_tensor_wrap(m, GATEC_DTYPE_F32, 2, s23, NULL, GATEC_DEVICE_CUDA,
                        &t),
      DEVICE_UNAVAILABLE,
      "device unavailable: tensors live in host memory (a CUDA model "
      "copies its inputs to the GPU and its outputs back); create them on "
      "the cpu");
  EXPECT_STATUS(gatec_tensor_copy_dense(NULL, &t), INVALID_ARGUMENT,
                "gatec_tensor_copy_dense: the tensor is NULL");

  /* NULL tensors in accessors. */
  CHECK(gatec_tensor_data(NULL) == NULL && gatec_tensor_rank(NULL) == 0 &&
        gatec_tensor_dtype(NULL) == GATEC_DTYPE_INVALID &&
        gatec_tensor_shape(NULL) == NULL &&
        gatec_tensor_num_elements(NULL) == 0 &&
        gatec_tensor_size_bytes(NULL) == 0 && !gatec_tensor_owns_data(NULL) &&
        !gatec_tensor_is_contiguous(NULL));
  gatec_tensor_destroy(NULL);
}

static void test_load_errors(void) {
  gatec_model *m = (gatec_model *)&m;
  EXPECT_STATUS(gatec_model_load(model_path("nope.so"), GATEC_DEVICE_CPU, &m),
                LOAD_ERROR,
                fmt("cannot load model '%s': No such file or directory",
                    model_path("nope.so")));
  CHECK(m == NULL);
  EXPECT_STATUS(gatec_model_load(models, GATEC_DEVICE_CPU, &m), LOAD_ERROR,
                fmt("cannot load model '%s': it is a directory", models));
  EXPECT_STATUS(gatec_model_load("", GATEC_DEVICE_CPU, &m), LOAD_ERROR,
                "cannot load model '': empty path");
  EXPECT_STATUS(gatec_model_load(NULL, GATEC_DEVICE_CPU, &m), INVALID_ARGUMENT,
                "gatec_model_load: path is NULL");
  EXPECT_STATUS(
      gatec_model_load(model_path("no_symbol.so"), GATEC_DEVICE_CPU, &m),
      LOAD_ERROR,
      fmt("cannot load model '%s': it does not export "
          "'gatec_model_get_abi' (not a gatec model library?)",
          model_path("no_symbol.so")));
  EXPECT_STATUS(
      gatec_model_load(model_path("affine_abi2.so"), GATEC_DEVICE_CPU, &m),
      ABI_VERSION_MISMATCH,
      fmt("cannot load model '%s': its model ABI version is 2, but "
          "this runtime supports version 1 only (compile the model "
          "with a gatec that matches this runtime)",
          model_path("affine_abi2.so")));
  snprintf(buf, sizeof(buf),
           "cannot load model '%s' on the cpu: it was compiled for target "
           "'cuda-sm_90' (load it on the cuda device, e.g. gatec-run "
           "--device=cuda)",
           model_path("affine_cuda.so"));
  EXPECT_STATUS(
      gatec_model_load(model_path("affine_cuda.so"), GATEC_DEVICE_CPU, &m),
      WRONG_TARGET, buf);
  EXPECT_STATUS(
      gatec_model_load(model_path("affine.so"), GATEC_DEVICE_CUDA, &m),
      DEVICE_UNAVAILABLE,
      "device unavailable: no CUDA driver on this machine (libcuda.so.1: "
      "cannot open shared object file: No such file or directory); "
      "the cuda device needs an NVIDIA GPU and its driver");
  const char *other = strcmp(gatec_runtime_cpu_target(), "cpu-x86_64") == 0
                          ? "cpu-aarch64"
                          : "cpu-x86_64";
  snprintf(buf, sizeof(buf),
           "cannot load model '%s': it was compiled for target '%s', but this "
           "machine runs '%s' models",
           model_path("affine_other_cpu.so"), other,
           gatec_runtime_cpu_target());
  EXPECT_STATUS(
      gatec_model_load(model_path("affine_other_cpu.so"), GATEC_DEVICE_CPU, &m),
      WRONG_TARGET, buf);
  EXPECT_STATUS(
      gatec_model_load(model_path("affine_bad_dtype.so"), GATEC_DEVICE_CPU, &m),
      LOAD_ERROR,
      fmt("cannot load model '%s': malformed signature: input 'x' "
          "has invalid dtype 99",
          model_path("affine_bad_dtype.so")));
  CHECK(m == NULL);
}

static void test_signature(void) {
  gatec_model *m = load("affine.so");
  CHECK(strcmp(gatec_model_path(m), model_path("affine.so")) == 0);
  CHECK(strcmp(gatec_model_target(m), gatec_runtime_cpu_target()) == 0);
  CHECK(gatec_model_abi_version(m) == 1);
  CHECK(gatec_model_num_inputs(m) == 1 && gatec_model_num_outputs(m) == 1);
  const gatec_value_info *x = gatec_model_input(m, 0);
  CHECK(x && strcmp(x->name, "x") == 0 && x->dtype == GATEC_DTYPE_F32 &&
        x->rank == 3);
  CHECK(x && x->dims[0] == -1 && x->dims[1] == -1 && x->dims[2] == 4);
  CHECK(x && strcmp(x->dim_params[0], "batch") == 0 &&
        strcmp(x->dim_params[1], "seq") == 0 && x->dim_params[2] == NULL);
  char s[64];
  CHECK(gatec_value_info_shape_str(x, s, sizeof(s)) == 15 &&
        strcmp(s, "[batch, seq, 4]") == 0);
  CHECK(gatec_value_info_shape_str(x, s, 5) == 15 && strcmp(s, "[bat") == 0);
  CHECK(gatec_model_input(m, 1) == NULL && gatec_model_output(m, 1) == NULL);
  CHECK(strcmp(gatec_model_output(m, 0)->name, "y") == 0);
  CHECK(gatec_model_input_index(m, "x") == 0 &&
        gatec_model_input_index(m, "y") == -1 &&
        gatec_model_output_index(m, "y") == 0 &&
        gatec_model_input_index(m, NULL) == -1);
  gatec_model_destroy(m);

  m = load("typed.so");
  const gatec_value_info *scale = gatec_model_input(m, 1);
  CHECK(scale && scale->rank == 0 && scale->dtype == GATEC_DTYPE_F64);
  CHECK(gatec_value_info_shape_str(scale, s, sizeof(s)) == 2 &&
        strcmp(s, "[]") == 0);
  CHECK(gatec_model_output(m, 1)->dtype == GATEC_DTYPE_BOOL);
  gatec_model_destroy(m);

  /* The same library loaded twice is two independent models. */
  gatec_model *a = load("affine.so"), *b = load("affine.so");
  gatec_model_destroy(a);
  CHECK(strcmp(gatec_model_input(b, 0)->name, "x") == 0);
  gatec_model_destroy(b);

  CHECK(gatec_model_num_inputs(NULL) == 0 &&
        gatec_model_input(NULL, 0) == NULL);
  gatec_model_destroy(NULL);
}

static void test_run(void) {
  gatec_model *m = load("two_outputs.so");
  float a[5] = {1.5f, -2.0f, 3.25f, 0.0f, 1e30f};
  float b[5] = {0.5f, 4.0f, -1.0f, 7.0f, 1e10f};
  int64_t s5[1] = {5};
  gatec_tensor *ta = wrap_f32(a, 1, s5, NULL), *tb = wrap_f32(b, 1, s5, NULL);
  gatec_tensor *out[2] = {NULL, NULL};
  const gatec_tensor *in[2] = {ta, tb};
  EXPECT_OK(gatec_model_run(m, in, 2, out));
  CHECK(out[0] && out[1]);
  if (out[0] && out[1]) {
    CHECK(gatec_tensor_rank(out[0]) == 1 && gatec_tensor_shape(out[0])[0] == 5);
    CHECK(gatec_tensor_dtype(out[1]) == GATEC_DTYPE_F32);
    CHECK(gatec_tensor_owns_data(out[0]) && gatec_tensor_is_contiguous(out[0]));
    const float *sum = gatec_tensor_data(out[0]),
                *prod = gatec_tensor_data(out[1]);
    int ok = 1;
    for (int i = 0; i < 5; ++i)
      ok &= sum[i] == a[i] + b[i] && prod[i] == a[i] * b[i];
    CHECK(ok);
  }
  gatec_tensor_destroy(out[0]);
  gatec_tensor_destroy(out[1]);

  /* Strided inputs are copied to dense buffers first. */
  float a2[10], b2[5];
  for (int i = 0; i < 10; ++i)
    a2[i] = (float)(i * i) - 3.5f;
  for (int i = 0; i < 5; ++i)
    b2[i] = (float)i + 0.25f;
  int64_t two[1] = {2}, neg[1] = {-1};
  gatec_tensor *sa = wrap_f32(a2, 1, s5, two),
               *sb = wrap_f32(&b2[4], 1, s5, neg);
  const gatec_tensor *sin[2] = {sa, sb};
  EXPECT_OK(gatec_model_run(m, sin, 2, out));
  if (out[0] && out[1]) {
    const float *sum = gatec_tensor_data(out[0]),
                *prod = gatec_tensor_data(out[1]);
    int ok = 1;
    for (int i = 0; i < 5; ++i)
      ok &= sum[i] == a2[2 * i] + b2[4 - i] && prod[i] == a2[2 * i] * b2[4 - i];
    CHECK(ok);
  }
  gatec_tensor_destroy(out[0]);
  gatec_tensor_destroy(out[1]);
  CHECK(a2[2] == 4 - 3.5f); /* inputs untouched */
  gatec_tensor_destroy(sa);
  gatec_tensor_destroy(sb);

  /* Named inputs in any order. */
  const char *names[2] = {"b", "a"};
  const gatec_tensor *rin[2] = {tb, ta};
  EXPECT_OK(gatec_model_run_named(m, names, rin, 2, out));
  if (out[0]) {
    const float *sum = gatec_tensor_data(out[0]);
    CHECK(sum[0] == 2.0f && sum[1] == 2.0f && sum[2] == 2.25f);
  }
  /* Outputs outlive the model. */
  gatec_model_destroy(m);
  if (out[1])
    CHECK(((const float *)gatec_tensor_data(out[1]))[3] == 0.0f);
  gatec_tensor_destroy(out[0]);
  gatec_tensor_destroy(out[1]);

  /* An empty input. */
  m = load("two_outputs.so");
  int64_t s0[1] = {0};
  gatec_tensor *e1 = wrap_f32(NULL, 1, s0, NULL),
               *e2 = wrap_f32(NULL, 1, s0, NULL);
  const gatec_tensor *ein[2] = {e1, e2};
  EXPECT_OK(gatec_model_run(m, ein, 2, out));
  CHECK(out[0] && gatec_tensor_num_elements(out[0]) == 0);
  gatec_tensor_destroy(out[0]);
  gatec_tensor_destroy(out[1]);
  gatec_tensor_destroy(e1);
  gatec_tensor_destroy(e2);

  /* Input errors; outputs stay NULL. */
  out[0] = out[1] = (gatec_tensor *)&out;
  EXPECT_STATUS(gatec_model_run(m, in, 1, out), MISSING_INPUT,
                "missing input 'b': the model takes 2 inputs (a, b), 1 given");
  CHECK(out[0] == NULL && out[1] == NULL);
  const gatec_tensor *three[3] = {ta, tb, ta};
  EXPECT_STATUS(gatec_model_run(m, three, 3, out), INVALID_ARGUMENT,
                "too many inputs: the model takes 2 inputs (a, b), 3 given");
  const gatec_tensor *hole[2] = {ta, NULL};
  EXPECT_STATUS(gatec_model_run(m, hole, 2, out), MISSING_INPUT,
                "missing input 'b': input 1 is NULL");
  double d5[5] = {0};
  gatec_tensor *td = NULL;
  EXPECT_OK(gatec_tensor_wrap(d5, GATEC_DTYPE_F64, 1, s5, NULL,
                              GATEC_DEVICE_CPU, &td));
  const gatec_tensor *din[2] = {ta, td};
  EXPECT_STATUS(gatec_model_run(m, din, 2, out), DTYPE_MISMATCH,
                "input 'b': expected dtype f32, given f64");
  int64_t s4[1] = {4};
  gatec_tensor *t4 = wrap_f32(b, 1, s4, NULL);
  const gatec_tensor *min[2] = {ta, t4};
  EXPECT_STATUS(
      gatec_model_run(m, min, 2, out), SHAPE_MISMATCH,
      "input 'b': expected shape [n] (n=5 from input 'a'), given [4]");
  int64_t s15[2] = {1, 5};
  gatec_tensor *t15 = wrap_f32(b, 2, s15, NULL);
  const gatec_tensor *rin2[2] = {t15, tb};
  EXPECT_STATUS(gatec_model_run(m, rin2, 2, out), SHAPE_MISMATCH,
                "input 'a': expected shape [n] (n=?), given [1, 5]");
  CHECK(out[0] == NULL && out[1] == NULL);

  /* Named errors. */
  const char *unk[2] = {"a", "c"};
  EXPECT_STATUS(gatec_model_run_named(m, unk, in, 2, out), INVALID_ARGUMENT,
                "unknown input 'c': the model's inputs are a, b");
  const char *twice[2] = {"a", "a"};
  EXPECT_STATUS(gatec_model_run_named(m, twice, in, 2, out), INVALID_ARGUMENT,
                "input 'a' given twice");
  EXPECT_STATUS(gatec_model_run_named(m, names + 1, in, 1, out), MISSING_INPUT,
                "missing input 'b': the model takes 2 inputs (a, b), 1 given "
                "(a)");
  EXPECT_STATUS(gatec_model_run_named(m, NULL, in, 2, out), INVALID_ARGUMENT,
                "gatec_model_run_named: names is NULL");
  EXPECT_STATUS(gatec_model_run(NULL, in, 2, out), INVALID_ARGUMENT,
                "gatec_model_run: the model is NULL");
  EXPECT_STATUS(gatec_model_run(m, in, 2, NULL), INVALID_ARGUMENT,
                "gatec_model_run: outputs is NULL");
  gatec_model_destroy(m);

  /* Static dims and ranks, with the dim_params of the signature. */
  m = load("affine.so");
  float x[2 * 8 * 32] = {0};
  int64_t bad[3] = {2, 8, 32}, bad2[2] = {2, 8};
  gatec_tensor *tx = wrap_f32(x, 3, bad, NULL);
  EXPECT_STATUS(gatec_model_run(m, (const gatec_tensor *const[]){tx}, 1, out),
                SHAPE_MISMATCH,
                "input 'x': expected shape [batch, seq, 4] (batch=?, seq=?), "
                "given [2, 8, 32]");
  gatec_tensor_destroy(tx);
  tx = wrap_f32(x, 2, bad2, NULL);
  EXPECT_STATUS(gatec_model_run(m, (const gatec_tensor *const[]){tx}, 1, out),
                SHAPE_MISMATCH,
                "input 'x': expected shape [batch, seq, 4] (batch=?, seq=?), "
                "given [2, 8]");
  gatec_tensor_destroy(tx);
  EXPECT_STATUS(gatec_model_run(m, NULL, 0, out), MISSING_INPUT,
                "missing input 'x': the model takes 1 input (x), 0 given");
  gatec_model_destroy(m);

  /* One dim_param used twice within an input. */
  m = load("transpose.so");
  int64_t s23[2] = {2, 3};
  tx = wrap_f32(x, 2, s23, NULL);
  EXPECT_STATUS(gatec_model_run(m, (const gatec_tensor *const[]){tx}, 1, out),
                SHAPE_MISMATCH,
                "input 'x': expected shape [n, n] (n=?), given [2, 3] (dims 0 "
                "and 1 are both 'n')");
  gatec_tensor_destroy(tx);
  gatec_model_destroy(m);

  gatec_tensor_destroy(ta);
  gatec_tensor_destroy(tb);
  gatec_tensor_destroy(td);
  gatec_tensor_destroy(t4);
  gatec_tensor_destroy(t15);
}

static void test_model_failures(void) {
  gatec_tensor *out[3] = {NULL, NULL, NULL};
  /* The model reports an error. */
  gatec_model *m = load("typed.so");
  int64_t idx[3] = {-1, 0, 2}, s3[1] = {3};
  double scale = -1.5;
  gatec_tensor *ti = NULL, *ts = NULL;
  EXPECT_OK(gatec_tensor_wrap(idx, GATEC_DTYPE_I64, 1, s3, NULL,
                              GATEC_DEVICE_CPU, &ti));
  EXPECT_OK(gatec_tensor_wrap(&scale, GATEC_DTYPE_F64, 0, NULL, NULL,
                              GATEC_DEVICE_CPU, &ts));
  const gatec_tensor *in[2] = {ti, ts};
  EXPECT_STATUS(gatec_model_run(m, in, 2, out), MODEL_ERROR,
                fmt("model '%s' failed: scale must be >= 0, got -1.5",
                    model_path("typed.so")));
  CHECK(out[0] == NULL && out[1] == NULL && out[2] == NULL);
  scale = 0.75;
  EXPECT_OK(gatec_model_run(m, in, 2, out));
  if (out[0] && out[1] && out[2]) {
    const double *sc = gatec_tensor_data(out[0]);
    const unsigned char *pos = gatec_tensor_data(out[1]);
    CHECK(sc[0] == -0.75 && sc[1] == 0.0 && sc[2] == 1.5);
    CHECK(pos[0] == 0 && pos[1] == 0 && pos[2] == 1);
    CHECK(gatec_tensor_dtype(out[2]) == GATEC_DTYPE_F16 &&
          gatec_tensor_size_bytes(out[2]) == 6);
  }
  for (int j = 0; j < 3; ++j)
    gatec_tensor_destroy(out[j]);
  gatec_tensor_destroy(ti);
  gatec_tensor_destroy(ts);
  gatec_model_destroy(m);

  /* The model contradicts its signature. */
  m = load("two_outputs_bad_shape.so");
  float a[5] = {1, 2, 3, 4, 5};
  int64_t s5[1] = {5};
  gatec_tensor *ta = wrap_f32(a, 1, s5, NULL);
  const gatec_tensor *in2[2] = {ta, ta};
  EXPECT_STATUS(gatec_model_run(m, in2, 2, out), MODEL_ERROR,
                fmt("model '%s' returned output 'sum' with shape [6], but its "
                    "signature says [n] (n=5 from input 'a')",
                    model_path("two_outputs_bad_shape.so")));
  CHECK(out[0] == NULL && out[1] == NULL);
  gatec_model_destroy(m);

  /* The allocator fails: out of memory. */
  m = load("huge.so");
  const gatec_tensor *in3[1] = {ta};
  EXPECT_STATUS(gatec_model_run(m, in3, 1, out), OUT_OF_MEMORY,
                fmt("out of memory: cannot allocate 1125899906842624 bytes for "
                    "an output of model '%s': cannot allocate output 'y' of "
                    "281474976710656 elements",
                    model_path("huge.so")));
  CHECK(out[0] == NULL);
  gatec_model_destroy(m);
  gatec_tensor_destroy(ta);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  snprintf(models, sizeof(models), "%s", argv[1]);
  test_dtypes_and_status();
  test_tensors();
  test_load_errors();
  test_signature();
  test_run();
  test_model_failures();
  printf("api test: %d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
