/*===- cuda_backend.c - the CUDA backend of gatec model libraries ----------===
 *
 * libgatec_cuda.so: what the host code of a model compiled with
 * `gatec --target=cuda` calls. It has two parts:
 *
 *  - the mgpu* functions that MLIR's gpu-to-llvm lowering emits calls to
 *    (module load, function lookup, launch, streams, memory), with MLIR's
 *    signatures (TOOLCHAIN.md: Debian ships no libmlir_cuda_runtime);
 *  - gatec_cuda_* functions the generated model ABI wrapper calls (device
 *    availability, transfers, the error of the current run).
 *
 * The CUDA driver (libcuda.so.1) is loaded with dlopen on first use, so this
 * library builds and loads on machines without CUDA. No function here
 * aborts: a failure records a message (per thread) and makes the later calls
 * of the run no-ops; the ABI wrapper turns the message into the run's error.
 *===----------------------------------------------------------------------===*/
#include "gatec_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver API, declared here (no CUDA headers needed to build). */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

static struct {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemsetD32)(CUdeviceptr, unsigned, size_t);
  CUresult (*cuCtxSynchronize)(void);
} cu;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static char init_error[512];
static CUcontext context;

/* The first error of the current run on this thread. */
static _Thread_local char run_error[512];

static void set_error(const char *fmt, ...) {
  if (run_error[0])
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(run_error, sizeof(run_error), fmt, ap);
  va_end(ap);
}

static const char *cu_message(CUresult r) {
  const char *s = NULL;
  if (cu.cuGetErrorString && cu.cuGetErrorString(r, &s) == 0 && s)
    return s;
  return "unknown CUDA error";
}

static void init_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(init_error, sizeof(init_error),
             "no CUDA driver on this machine (%s); "
             "--device=cuda needs an NVIDIA GPU and its driver",
             e ? e : "not found");
    return;
  }
#define LOAD(field, name)                                                      \
  do {                                                                         \
    void *p = dlsym(h, name);                                                  \
    if (!p) {                                                                  \
      snprintf(init_error, sizeof(init_error),                                 \
               "the CUDA driver (libcuda.so.1) lacks %s: too old", name);      \
      return;                                                                  \
    }                                                                          \
    memcpy(&cu.field, &p, sizeof(p));                                          \
  } while (0)
  LOAD(cuInit, "cuInit");
  LOAD(cuDeviceGetCount, "cuDeviceGetCount");
  LOAD(cuDeviceGet, "cuDeviceGet");
  LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  LOAD(cuCtxSetCurrent, "cuCtxSetCurrent");
  LOAD(cuGetErrorString, "cuGetErrorString");
  LOAD(cuModuleLoadData, "cuModuleLoadData");
  LOAD(cuModuleUnload, "cuModuleUnload");
  LOAD(cuModuleGetFunction, "cuModuleGetFunction");
  LOAD(cuLaunchKernel, "cuLaunchKernel");
  LOAD(cuStreamCreate, "cuStreamCreate");
  LOAD(cuStreamSynchronize, "cuStreamSynchronize");
  LOAD(cuStreamDestroy, "cuStreamDestroy_v2");
  LOAD(cuMemAlloc, "cuMemAlloc_v2");
  LOAD(cuMemFree, "cuMemFree_v2");
  LOAD(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  LOAD(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  LOAD(cuMemcpy, "cuMemcpy");
  LOAD(cuMemsetD32, "cuMemsetD32_v2");
  LOAD(cuCtxSynchronize, "cuCtxSynchronize");
#undef LOAD
  CUresult r = cu.cuInit(0);
  if (r != 0) {
    snprintf(init_error, sizeof(init_error), "CUDA initialisation failed: %s",
             cu_message(r));
    return;
  }
  int n = 0;
  if (cu.cuDeviceGetCount(&n) != 0 || n == 0) {
    snprintf(init_error, sizeof(init_error), "no CUDA device on this machine");
    return;
  }
  int ordinal = 0;
  const char *env = getenv("GATEC_CUDA_DEVICE");
  if (env && *env)
    ordinal = atoi(env);
  if (ordinal < 0 || ordinal >= n) {
    snprintf(init_error, sizeof(init_error),
             "GATEC_CUDA_DEVICE=%s: this machine has %d CUDA device(s)", env,
             n);
    return;
  }
  CUdevice dev;
  if ((r = cu.cuDeviceGet(&dev, ordinal)) != 0 ||
      (r = cu.cuDevicePrimaryCtxRetain(&context, dev)) != 0) {
    snprintf(init_error, sizeof(init_error), "cannot open CUDA device %d: %s",
             ordinal, cu_message(r));
    return;
  }
}

const char *gatec_cuda_init(void) {
  pthread_once(&init_once, init_driver);
  if (init_error[0])
    return init_error;
  CUresult r = cu.cuCtxSetCurrent(context);
  if (r != 0) {
    static _Thread_local char msg[256];
    snprintf(msg, sizeof(msg), "cannot make the CUDA context current: %s",
             cu_message(r));
    return msg;
  }
  return NULL;
}

/* Are calls possible now? Records the reason when not. */
static bool ready(void) {
  if (run_error[0])
    return false;
  const char *e = gatec_cuda_init();
  if (e) {
    set_error("%s", e);
    return false;
  }
  return true;
}

static bool check(CUresult r, const char *what) {
  if (r == 0)
    return true;
  set_error("%s failed: %s", what, cu_message(r));
  return false;
}

void gatec_cuda_begin_run(void) { run_error[0] = 0; }

const char *gatec_cuda_run_error(void) {
  if (!run_error[0] && cu.cuCtxSynchronize && !init_error[0])
    check(cu.cuCtxSynchronize(), "kernel execution");
  return run_error[0] ? run_error : NULL;
}

void *gatec_cuda_malloc(size_t bytes) {
  if (!ready())
    return NULL;
  CUdeviceptr p = 0;
  if (!check(cu.cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc"))
    return NULL;
  return (void *)(uintptr_t)p;
}

void gatec_cuda_free(void *p) {
  if (p && cu.cuMemFree && !init_error[0])
    cu.cuMemFree((CUdeviceptr)(uintptr_t)p);
}

int gatec_cuda_to_device(void *dst, const void *src, size_t bytes) {
  if (!ready())
    return 1;
  return bytes &&
         !check(cu.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes),
                "copy to the device");
}

int gatec_cuda_to_host(void *dst, const void *src, size_t bytes) {
  if (!ready())
    return 1;
  return bytes &&
         !check(cu.cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes),
                "copy to the host");
}

/*===--- MLIR's mgpu* functions ------------------------------------------===*/

/* Module load happens when the model library is loaded (a global
 * constructor of the host code): without a device it returns NULL, and the
 * first run reports why. */
CUmodule mgpuModuleLoad(void *data, size_t size) {
  (void)size;
  CUmodule m = NULL;
  if (gatec_cuda_init())
    return NULL;
  CUresult r = cu.cuModuleLoadData(&m, data);
  if (r != 0) {
    /* Reported by the run that needs it. */
    return NULL;
  }
  return m;
}

CUmodule mgpuModuleLoadJIT(void *data, int optLevel, size_t size) {
  (void)optLevel;
  return mgpuModuleLoad(data, size);
}

void mgpuModuleUnload(CUmodule m) {
  if (m && cu.cuModuleUnload)
    cu.cuModuleUnload(m);
}

CUfunction mgpuModuleGetFunction(CUmodule m, const char *name) {
  if (!ready())
    return NULL;
  if (!m) {
    set_error("the kernels of this model could not be loaded on the GPU "
              "(compiled for another architecture? see --gpu-arch)");
    return NULL;
  }
  CUfunction f = NULL;
  if (!check(cu.cuModuleGetFunction(&f, m, name), "kernel lookup"))
    return NULL;
  return f;
}

void mgpuLaunchKernel(CUfunction f, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      CUstream stream, void **params, void **extra,
                      size_t paramsCount) {
  (void)paramsCount;
  if (!f || !ready())
    return;
  check(cu.cuLaunchKernel(f, (unsigned)gx, (unsigned)gy, (unsigned)gz,
                          (unsigned)bx, (unsigned)by, (unsigned)bz,
                          (unsigned)smem, stream, params, extra),
        "kernel launch");
}

CUstream mgpuStreamCreate(void) {
  CUstream s = NULL;
  if (ready())
    check(cu.cuStreamCreate(&s, 1 /* non-blocking */), "cuStreamCreate");
  return s;
}

void mgpuStreamDestroy(CUstream s) {
  if (s && cu.cuStreamDestroy)
    cu.cuStreamDestroy(s);
}

void mgpuStreamSynchronize(CUstream s) {
  if (s && ready())
    check(cu.cuStreamSynchronize(s), "kernel execution");
}

void *mgpuMemAlloc(uint64_t bytes, CUstream stream, bool hostShared) {
  (void)stream;
  (void)hostShared;
  return gatec_cuda_malloc(bytes);
}

void mgpuMemFree(void *p, CUstream stream) {
  (void)stream;
  gatec_cuda_free(p);
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, CUstream stream) {
  (void)stream;
  if (ready() && bytes)
    check(cu.cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src,
                      bytes),
          "cuMemcpy");
}

void mgpuMemset32(void *dst, unsigned value, size_t count, CUstream stream) {
  (void)stream;
  if (ready() && count)
    check(cu.cuMemsetD32((CUdeviceptr)(uintptr_t)dst, value, count),
          "cuMemsetD32");
}

void mgpuSetDefaultDevice(int32_t device) { (void)device; }
