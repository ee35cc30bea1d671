/*===- gatec_cuda.h - what CUDA model libraries call -----------------------===
 *
 * The functions of libgatec_cuda.so that the ABI wrapper of a model compiled
 * with `gatec --target=cuda` calls (the host code also calls MLIR's mgpu*
 * functions, defined there too). The CUDA driver is loaded at run time.
 *===----------------------------------------------------------------------===*/
#ifndef GATEC_CUDA_H
#define GATEC_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loads the driver and makes device GATEC_CUDA_DEVICE (default 0) current on
 * this thread. NULL on success, else why CUDA cannot be used here (no
 * driver, no device, ...). */
const char *gatec_cuda_init(void);

/* Clears this thread's run error; call before a run. */
void gatec_cuda_begin_run(void);
/* Waits for the device and returns the first error since begin_run (NULL if
 * none). */
const char *gatec_cuda_run_error(void);

/* Device memory (NULL / non-zero on failure, with the run error set). */
void *gatec_cuda_malloc(size_t bytes);
void gatec_cuda_free(void *device_ptr);
int gatec_cuda_to_device(void *device_dst, const void *host_src, size_t bytes);
int gatec_cuda_to_host(void *host_dst, const void *device_src, size_t bytes);

/* The device copy of a constant of the model (a weight): `bytes` bytes at
 * `host` are uploaded on the first call for `slot` (a pointer-sized variable
 * of the model library, initially NULL, one per constant), which then holds
 * the device address for every later call and run; calls from several
 * threads upload once. The copy lives until the process ends. NULL on
 * failure, with the run error set. Called by the host code of the model
 * (--device-constants), before the kernels that read the constant. */
void *gatec_cuda_constant(void **slot, const void *host,
                          unsigned long long bytes);

#ifdef __cplusplus
}
#endif

#endif
