/*===- gatec/runtime.h - The gatec runtime C API -------------------------===*
 *
 * Loads a model library compiled by gatec (see gatec/model_abi.h), describes
 * its signature and runs it on tensors. Modelled on onnx-mlir's OMTensor /
 * run_main_graph and on ONNX Runtime sessions. Link with -lgatec_runtime.
 *
 *   gatec_model *m;
 *   gatec_status *st = gatec_model_load("model.so", GATEC_DEVICE_CPU, &m);
 *   if (st) { fprintf(stderr, "%s\n", gatec_status_message(st));
 *             gatec_status_destroy(st); return 1; }
 *   int64_t shape[3] = {2, 8, 64};
 *   gatec_tensor *x, *y;
 *   gatec_tensor_wrap(buffer, GATEC_DTYPE_F32, 3, shape, NULL,
 *                     GATEC_DEVICE_CPU, &x);
 *   st = gatec_model_run(m, (const gatec_tensor *const[]){x}, 1, &y);
 *   ... gatec_tensor_data(y) ...
 *   gatec_tensor_destroy(y); gatec_tensor_destroy(x); gatec_model_destroy(m);
 *
 * Errors. Every function that can fail returns a gatec_status *: NULL on
 * success, otherwise an object with a code and a message that the caller
 * frees with gatec_status_destroy. No function aborts or exits, whatever its
 * arguments (NULL pointers included); an out-parameter is left NULL on
 * failure.
 *
 * Threads. gatec_model_run (and _run_named) may be called concurrently from
 * any number of threads on one loaded model: a model holds no mutable state
 * after gatec_model_load, and each run gets its own buffers and allocator
 * context. Reading the signature is thread-safe too. gatec_model_destroy must
 * not race with runs of the same model. A tensor may be read by several
 * threads at once (e.g. the same input given to concurrent runs); writing or
 * destroying it must not race with other uses. Status objects, tensors and
 * models are otherwise independent and need no locking.
 *
 * Devices. A model runs on the device it was compiled for: GATEC_DEVICE_CPU
 * for "cpu-*" models, GATEC_DEVICE_CUDA for "cuda-sm_*" models (gatec
 * --target=cuda). Tensors stay in host memory either way: a CUDA model
 * copies its inputs to the GPU and its outputs back (weights live on the GPU
 * from load to unload). The CUDA driver (libcuda.so.1) is loaded at run
 * time: without it, or without a GPU, asking for GATEC_DEVICE_CUDA returns
 * GATEC_STATUS_DEVICE_UNAVAILABLE with the reason.
 *===----------------------------------------------------------------------===*/
#ifndef GATEC_RUNTIME_H
#define GATEC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GATEC_RT_API
#else
#define GATEC_RT_API __attribute__((visibility("default")))
#endif

/*===--- Versions -----------------------------------------------------------*/

/* The model ABI version this runtime loads (GATEC_MODEL_ABI_VERSION of
 * gatec/model_abi.h when it was built). */
GATEC_RT_API uint32_t gatec_runtime_abi_version(void);
/* The CPU target this runtime runs, e.g. "cpu-x86_64". */
GATEC_RT_API const char *gatec_runtime_cpu_target(void);

/*===--- Status -------------------------------------------------------------*/

typedef enum {
  GATEC_STATUS_OK = 0,
  GATEC_STATUS_INVALID_ARGUMENT = 1, /* a bad argument (NULL, bad shape...) */
  GATEC_STATUS_MISSING_INPUT = 2,    /* an input of the model not given */
  GATEC_STATUS_SHAPE_MISMATCH = 3,   /* rank or dims differ from signature */
  GATEC_STATUS_DTYPE_MISMATCH = 4,   /* element type differs */
  GATEC_STATUS_LOAD_ERROR = 5,       /* dlopen/dlsym/bad descriptor */
  GATEC_STATUS_ABI_VERSION_MISMATCH = 6,
  GATEC_STATUS_WRONG_TARGET = 7, /* library built for another target */
  GATEC_STATUS_OUT_OF_MEMORY = 8,
  GATEC_STATUS_DEVICE_UNAVAILABLE = 9, /* e.g. CUDA on a CPU-only runtime */
  GATEC_STATUS_MODEL_ERROR = 10        /* the model's run reported an error */
} gatec_status_code;

typedef struct gatec_status gatec_status;

/* GATEC_STATUS_OK for NULL. */
GATEC_RT_API gatec_status_code gatec_status_get_code(const gatec_status *s);
/* The message (never NULL; "" for NULL). Valid until the status is destroyed.
 * Messages are complete sentences about the cause, e.g.
 *   input 'x': expected shape [batch, seq, 64] (batch=?, seq=?), given [2, 8,
 * 32]
 */
GATEC_RT_API const char *gatec_status_message(const gatec_status *s);
/* Frees a status; NULL is fine. */
GATEC_RT_API void gatec_status_destroy(gatec_status *s);
/* "ok", "invalid argument", "missing input", "shape mismatch",
 * "dtype mismatch", "load error", "ABI version mismatch", "wrong target",
 * "out of memory", "device unavailable", "model error"; "unknown" otherwise. */
GATEC_RT_API const char *gatec_status_code_name(gatec_status_code code);

/*===--- Element types ------------------------------------------------------*/

/* The numbering is part of the model ABI (gatec/model_abi.h). */
typedef enum {
  GATEC_DTYPE_INVALID = 0,
  GATEC_DTYPE_F32 = 1,
  GATEC_DTYPE_F16 = 2,
  GATEC_DTYPE_BF16 = 3,
  GATEC_DTYPE_F64 = 4,
  GATEC_DTYPE_I8 = 5,
  GATEC_DTYPE_I16 = 6,
  GATEC_DTYPE_I32 = 7,
  GATEC_DTYPE_I64 = 8,
  GATEC_DTYPE_U8 = 9,
  GATEC_DTYPE_U16 = 10,
  GATEC_DTYPE_U32 = 11,
  GATEC_DTYPE_U64 = 12,
  GATEC_DTYPE_BOOL = 13 /* one byte, 0 or 1 */
} gatec_dtype;

/* Bytes per element; 0 for an invalid dtype. */
GATEC_RT_API size_t gatec_dtype_size(gatec_dtype dtype);
/* "f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
 * "u64", "bool"; "invalid" otherwise. */
GATEC_RT_API const char *gatec_dtype_name(gatec_dtype dtype);
/* The inverse of gatec_dtype_name; GATEC_DTYPE_INVALID for an unknown name. */
GATEC_RT_API gatec_dtype gatec_dtype_from_name(const char *name);

/*===--- Devices ------------------------------------------------------------*/

typedef enum {
  GATEC_DEVICE_CPU = 0,
  GATEC_DEVICE_CUDA = 1 /* NVIDIA GPUs through the CUDA driver API */
} gatec_device;

/* "cpu", "cuda"; "unknown" otherwise. */
GATEC_RT_API const char *gatec_device_name(gatec_device device);
/* NULL if the device can be used, else a DEVICE_UNAVAILABLE status. */
GATEC_RT_API gatec_status *gatec_device_check(gatec_device device);

/*===--- Tensors ------------------------------------------------------------*/

/* A tensor: data pointer, dtype, rank, shape, strides (in elements, may be
 * zero or negative; the data pointer points at element [0, ..., 0]) and
 * device. It either owns its buffer (created by gatec_tensor_create or
 * returned by a run; freed with the tensor) or borrows user memory
 * (gatec_tensor_wrap; the memory must outlive the tensor). Shape and strides
 * are copied. */
typedef struct gatec_tensor gatec_tensor;

/* A new owning, dense, zero-filled tensor. shape may be NULL if rank is 0.
 * Errors: INVALID_ARGUMENT (bad dtype, rank < 0, negative dim, size
 * overflow), OUT_OF_MEMORY, DEVICE_UNAVAILABLE. */
GATEC_RT_API gatec_status *gatec_tensor_create(gatec_dtype dtype, int32_t rank,
                                               const int64_t *shape,
                                               gatec_device device,
                                               gatec_tensor **out);
/* A tensor borrowing `data`. strides may be NULL for dense row-major.
 * Errors as gatec_tensor_create, and INVALID_ARGUMENT for NULL data with a
 * non-empty shape. */
GATEC_RT_API gatec_status *gatec_tensor_wrap(void *data, gatec_dtype dtype,
                                             int32_t rank, const int64_t *shape,
                                             const int64_t *strides,
                                             gatec_device device,
                                             gatec_tensor **out);
/* A new owning dense copy (row-major) of any tensor, strided or not. */
GATEC_RT_API gatec_status *gatec_tensor_copy_dense(const gatec_tensor *t,
                                                   gatec_tensor **out);
/* Frees the tensor and, if it owns it, its buffer. NULL is fine. */
GATEC_RT_API void gatec_tensor_destroy(gatec_tensor *t);

/* Accessors; a NULL tensor gives NULL / 0 / GATEC_DTYPE_INVALID. */
GATEC_RT_API void *gatec_tensor_data(const gatec_tensor *t);
GATEC_RT_API gatec_dtype gatec_tensor_dtype(const gatec_tensor *t);
GATEC_RT_API int32_t gatec_tensor_rank(const gatec_tensor *t);
/* rank entries; NULL for rank 0. */
GATEC_RT_API const int64_t *gatec_tensor_shape(const gatec_tensor *t);
/* rank entries, in elements; NULL for rank 0. */
GATEC_RT_API const int64_t *gatec_tensor_strides(const gatec_tensor *t);
GATEC_RT_API gatec_device gatec_tensor_device(const gatec_tensor *t);
/* The product of the dims (1 for a scalar). */
GATEC_RT_API int64_t gatec_tensor_num_elements(const gatec_tensor *t);
/* num_elements * dtype size: the size of a dense copy. */
GATEC_RT_API size_t gatec_tensor_size_bytes(const gatec_tensor *t);
/* 1 if the strides are the dense row-major ones (dims of size 1 and empty
 * tensors are ignored), else 0. */
GATEC_RT_API int gatec_tensor_is_contiguous(const gatec_tensor *t);
/* 1 if the tensor frees its buffer, 0 if it borrows it. */
GATEC_RT_API int gatec_tensor_owns_data(const gatec_tensor *t);

/*===--- Models -------------------------------------------------------------*/

typedef struct gatec_model gatec_model;

/* One input or output: the model's signature with dim_params normalised
 * (NULL for none, never ""). Pointers stay valid while the model is loaded. */
typedef struct {
  const char *name;
  gatec_dtype dtype;
  int32_t rank;
  const int64_t *dims;           /* rank entries, -1 = dynamic */
  const char *const *dim_params; /* rank entries, NULL = none */
} gatec_value_info;

/* Loads a model library (a file path; one without '/' is taken relative to
 * the current directory) to run on `device`.
 * Errors: LOAD_ERROR (cannot open, no gatec_model_get_abi, malformed
 * signature), ABI_VERSION_MISMATCH, WRONG_TARGET (a "cuda-*" model on the
 * CPU or a CPU model on CUDA, or a CPU model for another architecture),
 * DEVICE_UNAVAILABLE (CUDA without a driver or GPU). */
GATEC_RT_API gatec_status *
gatec_model_load(const char *path, gatec_device device, gatec_model **out);
/* Unloads the model. Tensors it returned stay valid. NULL is fine. */
GATEC_RT_API void gatec_model_destroy(gatec_model *m);

GATEC_RT_API const char *gatec_model_path(const gatec_model *m);
GATEC_RT_API const char *gatec_model_target(const gatec_model *m);
GATEC_RT_API uint32_t gatec_model_abi_version(const gatec_model *m);
GATEC_RT_API uint32_t gatec_model_num_inputs(const gatec_model *m);
GATEC_RT_API uint32_t gatec_model_num_outputs(const gatec_model *m);
/* NULL if i is out of range. */
GATEC_RT_API const gatec_value_info *gatec_model_input(const gatec_model *m,
                                                       uint32_t i);
GATEC_RT_API const gatec_value_info *gatec_model_output(const gatec_model *m,
                                                        uint32_t i);
/* The position of the input/output called `name`, or -1. */
GATEC_RT_API int32_t gatec_model_input_index(const gatec_model *m,
                                             const char *name);
GATEC_RT_API int32_t gatec_model_output_index(const gatec_model *m,
                                              const char *name);
/* Writes the shape of `info` as "[batch, seq, 64]" ("?" for a dynamic dim
 * without a dim_param) into buf (NUL-terminated, truncated to len bytes).
 * Returns the length the full text needs, like snprintf. */
GATEC_RT_API size_t gatec_value_info_shape_str(const gatec_value_info *info,
                                               char *buf, size_t len);

/* Runs the model. inputs[i] is the model's input i (num_inputs of them, in
 * signature order); outputs must have room for gatec_model_num_outputs
 * pointers, which receive new owning dense tensors (the caller destroys them)
 * on success and NULL on failure. Inputs may be strided: non-contiguous ones
 * are copied to dense buffers first. Before calling the model, checks the
 * input count, each input's device, dtype, rank and static dims, and that
 * inputs sharing a dim_param have equal sizes.
 * Errors: MISSING_INPUT (fewer inputs, or a NULL entry), INVALID_ARGUMENT
 * (more inputs, NULL arguments), DTYPE_MISMATCH, SHAPE_MISMATCH,
 * DEVICE_UNAVAILABLE, OUT_OF_MEMORY (an allocation for an input copy or an
 * output failed), MODEL_ERROR (the model failed, or returned a result that
 * contradicts its signature). Thread-safe (see the top of this file). */
GATEC_RT_API gatec_status *gatec_model_run(gatec_model *m,
                                           const gatec_tensor *const *inputs,
                                           size_t num_inputs,
                                           gatec_tensor **outputs);
/* The same with inputs keyed by name, in any order: names[i] names
 * inputs[i]. Errors as gatec_model_run, and INVALID_ARGUMENT for an unknown
 * or repeated name; MISSING_INPUT names the first input not given. */
GATEC_RT_API gatec_status *
gatec_model_run_named(gatec_model *m, const char *const *names,
                      const gatec_tensor *const *inputs, size_t num_inputs,
                      gatec_tensor **outputs);

#ifdef __cplusplus
}
#endif

#endif /* GATEC_RUNTIME_H */
