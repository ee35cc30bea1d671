/*===- cuda_backend.c - the CUDA backend of gatec model libraries ----------===
 *
 * libgatec_cuda.so: what the host code of a model compiled with
 * `gatec --target=cuda` calls. It has two parts:
 *
 *  - the mgpu* functions that MLIR's gpu-to-llvm lowering emits calls to
 *    (module load, function lookup, launch, streams, memory), with MLIR's
 *    signatures (docs/toolchain.md: Debian ships no libmlir_cuda_runtime);
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
typedef struct CUmemPoolHandle_st *CUmemoryPool;
/* CUmemPoolProps (cuda.h, CUDA 12/13 layout; the fields older drivers do not
 * know are zero, which is their meaning there too). */
typedef struct {
  int allocType;   /* CU_MEM_ALLOCATION_TYPE_PINNED */
  int handleTypes; /* none */
  struct {
    int type; /* CU_MEM_LOCATION_TYPE_DEVICE */
    int id;   /* device ordinal */
  } location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;

enum {
  CU_STREAM_DEFAULT = 0,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
  CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
  CU_MEM_ALLOCATION_TYPE_PINNED = 1,
  CU_MEM_LOCATION_TYPE_DEVICE = 1,
};

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
  CUresult (*cuCtxSynchronize)(void);
  /* The stream-ordered allocator (CUDA 11.2 drivers and later; optional). */
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuMemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
  CUresult (*cuMemPoolSetAttribute)(CUmemoryPool, int, void *);
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr *, size_t, CUmemoryPool,
                                      CUstream);
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
} cu;

/* The runtime's own memory pool (stream-ordered allocation), or NULL. */
static CUmemoryPool pool;

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
  LOAD(cuCtxSynchronize, "cuCtxSynchronize");
  LOAD(cuMemcpyAsync, "cuMemcpyAsync");
  LOAD(cuMemsetD32Async, "cuMemsetD32Async");
#undef LOAD
#define LOAD_OPTIONAL(field, name)                                             \
  do {                                                                         \
    void *p = dlsym(h, name);                                                  \
    memcpy(&cu.field, &p, sizeof(p));                                          \
  } while (0)
  LOAD_OPTIONAL(cuDeviceGetAttribute, "cuDeviceGetAttribute");
  LOAD_OPTIONAL(cuMemPoolCreate, "cuMemPoolCreate");
  LOAD_OPTIONAL(cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
  LOAD_OPTIONAL(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync");
  LOAD_OPTIONAL(cuMemFreeAsync, "cuMemFreeAsync");
#undef LOAD_OPTIONAL
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
  /* Device buffers of a run (intermediates, inputs, outputs) come from the
   * stream-ordered allocator where the device has it: allocation and free
   * are queued on the stream, with no device-wide synchronisation (cuMemFree
   * waits for the whole device). The runtime's own pool (not the device's
   * default one, which other libraries in the process share) keeps freed
   * memory for the next run instead of returning it at every
   * synchronisation. */
  int pools = 0;
  CUmemoryPool own = NULL;
  CUmemPoolProps props;
  memset(&props, 0, sizeof(props));
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ordinal;
  uint64_t keep = UINT64_MAX;
  if (cu.cuDeviceGetAttribute && cu.cuMemPoolCreate &&
      cu.cuMemPoolSetAttribute && cu.cuMemAllocFromPoolAsync &&
      cu.cuMemFreeAsync &&
      cu.cuDeviceGetAttribute(
          &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev) == 0 &&
      pools && cu.cuMemPoolCreate(&own, &props) == 0) {
    (void)cu.cuMemPoolSetAttribute(own, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                   &keep);
    pool = own;
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

/* Device memory in the order of `stream` (NULL: the legacy default stream,
 * which the model's stream waits for, see mgpuStreamCreate). */
static void *device_alloc(size_t bytes, CUstream stream) {
  CUdeviceptr p = 0;
  bytes = bytes ? bytes : 1;
  if (pool) {
    if (!check(cu.cuMemAllocFromPoolAsync(&p, bytes, pool, stream),
               "cuMemAllocFromPoolAsync"))
      return NULL;
  } else if (!check(cu.cuMemAlloc(&p, bytes), "cuMemAlloc")) {
    return NULL;
  }
  return (void *)(uintptr_t)p;
}

static void device_free(void *p, CUstream stream) {
  if (!p || init_error[0] || !cu.cuMemFree)
    return;
  if (pool)
    cu.cuMemFreeAsync((CUdeviceptr)(uintptr_t)p, stream);
  else
    cu.cuMemFree((CUdeviceptr)(uintptr_t)p);
}

void *gatec_cuda_malloc(size_t bytes) {
  if (!ready())
    return NULL;
  return device_alloc(bytes, NULL);
}

void gatec_cuda_free(void *p) { device_free(p, NULL); }

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

static pthread_mutex_t constant_lock = PTHREAD_MUTEX_INITIALIZER;

void *gatec_cuda_constant(void **slot, const void *host,
                          unsigned long long bytes) {
  void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (p)
    return p;
  if (!ready())
    return NULL;
  pthread_mutex_lock(&constant_lock);
  p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!p) {
    /* Not from the stream-ordered pool: the copy outlives every stream. The
     * synchronous copy is ordered before the model stream's kernels (a
     * blocking stream, see mgpuStreamCreate). */
    CUdeviceptr d = 0;
    if (check(cu.cuMemAlloc(&d, bytes ? bytes : 1),
              "cuMemAlloc (a constant of the model)")) {
      if (!bytes || check(cu.cuMemcpyHtoD(d, host, bytes),
                          "upload of a constant of the model")) {
        p = (void *)(uintptr_t)d;
        __atomic_store_n(slot, p, __ATOMIC_RELEASE);
      } else {
        cu.cuMemFree(d);
      }
    }
  }
  pthread_mutex_unlock(&constant_lock);
  return p;
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
  /* An empty grid (a dynamic size of 0 at run time) has no work; CUDA
   * would reject it. The compiler does not guard launches (see
   * --map-forall-to-gpu), so that they stay in one stream-ordered region. */
  if (gx <= 0 || gy <= 0 || gz <= 0)
    return;
  if (!f || !ready())
    return;
  if (gx > 2147483647 || gy > 65535 || gz > 65535) {
    set_error("kernel launch: a grid of %lld x %lld x %lld blocks exceeds "
              "CUDA's limits (2^31 - 1 x 65535 x 65535)",
              (long long)gx, (long long)gy, (long long)gz);
    return;
  }
  check(cu.cuLaunchKernel(f, (unsigned)gx, (unsigned)gy, (unsigned)gz,
                          (unsigned)bx, (unsigned)by, (unsigned)bz,
                          (unsigned)smem, stream, params, extra),
        "kernel launch");
}

/* One stream per host thread, kept across runs (creating and destroying one
 * per run costs more than a small model's kernels). It is a blocking stream
 * (CU_STREAM_DEFAULT): its work is ordered with the legacy default stream,
 * on which the ABI wrapper's synchronous copies of inputs and outputs run,
 * so a kernel never starts before its input has landed. Within a run every
 * launch, copy, allocation and free is queued on it; the run waits once, at
 * its end (gpu-async-region puts the only mgpuStreamSynchronize there, and
 * before any host read of a device result). */
static _Thread_local CUstream thread_stream;
static pthread_key_t stream_key;
static pthread_once_t stream_key_once = PTHREAD_ONCE_INIT;

/* A host thread's stream dies with the thread. */
static void destroy_thread_stream(void *s) {
  if (s && cu.cuStreamDestroy && !init_error[0])
    cu.cuStreamDestroy((CUstream)s);
}

static void make_stream_key(void) {
  (void)pthread_key_create(&stream_key, destroy_thread_stream);
}

CUstream mgpuStreamCreate(void) {
  if (!thread_stream && ready() &&
      check(cu.cuStreamCreate(&thread_stream, CU_STREAM_DEFAULT),
            "cuStreamCreate")) {
    pthread_once(&stream_key_once, make_stream_key);
    (void)pthread_setspecific(stream_key, thread_stream);
  }
  return thread_stream;
}

void mgpuStreamDestroy(CUstream s) {
  if (s && s != thread_stream && cu.cuStreamDestroy)
    cu.cuStreamDestroy(s);
}

void mgpuStreamSynchronize(CUstream s) {
  if (s && ready())
    check(cu.cuStreamSynchronize(s), "kernel execution");
}

void *mgpuMemAlloc(uint64_t bytes, CUstream stream, bool hostShared) {
  (void)hostShared;
  if (!ready())
    return NULL;
  return device_alloc(bytes, stream);
}

void mgpuMemFree(void *p, CUstream stream) { device_free(p, stream); }

void mgpuMemcpy(void *dst, void *src, size_t bytes, CUstream stream) {
  if (ready() && bytes)
    check(cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst,
                           (CUdeviceptr)(uintptr_t)src, bytes, stream),
          "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned value, size_t count, CUstream stream) {
  if (ready() && count)
    check(
        cu.cuMemsetD32Async((CUdeviceptr)(uintptr_t)dst, value, count, stream),
        "cuMemsetD32Async");
}

void mgpuSetDefaultDevice(int32_t device) { (void)device; }
