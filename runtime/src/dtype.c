/*===- dtype.c - Element types, devices, versions ------------------------===*/
#include "internal.h"

#include "gatec/model_abi.h"

#include <dlfcn.h>
#include <string.h>

static const struct {
  gatec_dtype dtype;
  const char *name;
  size_t size;
} dtypes[] = {
    {GATEC_DTYPE_F32, "f32", 4},   {GATEC_DTYPE_F16, "f16", 2},
    {GATEC_DTYPE_BF16, "bf16", 2}, {GATEC_DTYPE_F64, "f64", 8},
    {GATEC_DTYPE_I8, "i8", 1},     {GATEC_DTYPE_I16, "i16", 2},
    {GATEC_DTYPE_I32, "i32", 4},   {GATEC_DTYPE_I64, "i64", 8},
    {GATEC_DTYPE_U8, "u8", 1},     {GATEC_DTYPE_U16, "u16", 2},
    {GATEC_DTYPE_U32, "u32", 4},   {GATEC_DTYPE_U64, "u64", 8},
    {GATEC_DTYPE_BOOL, "bool", 1},
};
enum { num_dtypes = sizeof(dtypes) / sizeof(dtypes[0]) };

size_t gatec_dtype_size(gatec_dtype dtype) {
  for (int i = 0; i < num_dtypes; ++i)
    if (dtypes[i].dtype == dtype)
      return dtypes[i].size;
  return 0;
}

const char *gatec_dtype_name(gatec_dtype dtype) {
  for (int i = 0; i < num_dtypes; ++i)
    if (dtypes[i].dtype == dtype)
      return dtypes[i].name;
  return "invalid";
}

gatec_dtype gatec_dtype_from_name(const char *name) {
  if (!name)
    return GATEC_DTYPE_INVALID;
  for (int i = 0; i < num_dtypes; ++i)
    if (strcmp(dtypes[i].name, name) == 0)
      return dtypes[i].dtype;
  return GATEC_DTYPE_INVALID;
}

const char *gatec_device_name(gatec_device device) {
  switch (device) {
  case GATEC_DEVICE_CPU:
    return "cpu";
  case GATEC_DEVICE_CUDA:
    return "cuda";
  }
  return "unknown";
}

/* Is a CUDA device usable here? The driver is loaded at run time, so the
 * runtime builds and runs on machines without CUDA. */
static gatec_status *cuda_check(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return gatec_rt_status(GATEC_STATUS_DEVICE_UNAVAILABLE,
                           "device unavailable: no CUDA driver on this "
                           "machine (%s); the cuda device "
                           "needs an NVIDIA GPU and its driver",
                           e ? e : "not found");
  }
  int (*init)(unsigned) = NULL;
  int (*count)(int *) = NULL;
  void *p = dlsym(h, "cuInit");
  memcpy(&init, &p, sizeof(p));
  p = dlsym(h, "cuDeviceGetCount");
  memcpy(&count, &p, sizeof(p));
  int n = 0, r;
  if (!init || !count)
    return gatec_rt_status(GATEC_STATUS_DEVICE_UNAVAILABLE,
                           "device unavailable: libcuda.so.1 lacks cuInit");
  if ((r = init(0)) != 0)
    return gatec_rt_status(GATEC_STATUS_DEVICE_UNAVAILABLE,
                           "device unavailable: CUDA initialisation failed "
                           "(CUresult %d)",
                           r);
  if (count(&n) != 0 || n == 0)
    return gatec_rt_status(GATEC_STATUS_DEVICE_UNAVAILABLE,
                           "device unavailable: no CUDA device on this "
                           "machine");
  return NULL; /* the driver stays loaded */
}

gatec_status *gatec_device_check(gatec_device device) {
  switch (device) {
  case GATEC_DEVICE_CPU:
    return NULL;
  case GATEC_DEVICE_CUDA:
    return cuda_check();
  }
  return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT, "unknown device %d",
                         (int)device);
}

uint32_t gatec_runtime_abi_version(void) { return GATEC_MODEL_ABI_VERSION; }

const char *gatec_runtime_cpu_target(void) {
#if defined(__x86_64__) || defined(_M_X64)
  return "cpu-x86_64";
#elif defined(__aarch64__) || defined(_M_ARM64)
  return "cpu-aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
  return "cpu-riscv64";
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
  return "cpu-ppc64le";
#else
  return "cpu-unknown";
#endif
}
