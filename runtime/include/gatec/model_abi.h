/*===- gatec/model_abi.h - The ABI between gatec's runtime and a model ---===*
 *
 * A model compiled by gatec is a shared library that exports exactly one C
 * symbol:
 *
 *     const gatec_model_abi *gatec_model_get_abi(void);
 *
 * It returns a pointer to a constant descriptor (valid as long as the library
 * stays loaded) holding the model's signature and its entry point. This header
 * is the whole contract: the runtime (libgatec_runtime, gatec/runtime.h) only
 * dlopens the library, calls gatec_model_get_abi, checks the descriptor and
 * calls `run`. A model library needs nothing from the runtime at link time.
 *
 * Compatibility: any change to the layout or meaning of these structures bumps
 * GATEC_MODEL_ABI_VERSION; the runtime refuses a library whose abi_version
 * differs from its own, naming both versions.
 *
 * Plain C (C99 and later) and C++.
 *===----------------------------------------------------------------------===*/
#ifndef GATEC_MODEL_ABI_H
#define GATEC_MODEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the structures below. */
#define GATEC_MODEL_ABI_VERSION 1u

/* The name of the one symbol a model library exports. */
#define GATEC_MODEL_GET_ABI_SYMBOL "gatec_model_get_abi"

/* Marks gatec_model_get_abi for export from a library built with hidden
 * visibility. */
#if defined(_WIN32)
#define GATEC_MODEL_EXPORT __declspec(dllexport)
#else
#define GATEC_MODEL_EXPORT __attribute__((visibility("default")))
#endif

/* One input or output of the model's signature.
 *
 * dtype is a gatec_dtype value (gatec/runtime.h; the numbering is part of this
 * ABI: F32 = 1, F16 = 2, BF16 = 3, F64 = 4, I8 = 5, I16 = 6, I32 = 7, I64 = 8,
 * U8 = 9, U16 = 10, U32 = 11, U64 = 12, BOOL = 13 (one byte, 0 or 1)).
 * dims has `rank` entries; -1 marks a dynamic dim (any size >= 0).
 * dim_params has `rank` entries (or is NULL for none at all); an entry is the
 * ONNX dim_param of that dim, NULL or "" for none. Dims that carry the same
 * dim_param, in any inputs or outputs, have the same size in one run. */
typedef struct {
  const char *name;              /* ONNX input/output name */
  int32_t dtype;                 /* gatec_dtype */
  int32_t rank;                  /* >= 0; 0 is a scalar */
  const int64_t *dims;           /* rank entries, -1 = dynamic */
  const char *const *dim_params; /* rank entries, NULL or "" = none */
} gatec_abi_value_info;

/* The allocator a model uses for its output buffers. Returns `bytes` bytes
 * aligned to `align` (a power of two; 0 means the default of 64), or NULL on
 * failure; the model then returns an error from run. The runtime owns the
 * memory: a model never frees what it got from alloc. Thread-safe. */
typedef void *(*gatec_alloc_fn)(size_t bytes, size_t align, void *ctx);

typedef struct {
  uint32_t abi_version; /* GATEC_MODEL_ABI_VERSION */
  /* The target the code was compiled for: "cpu-<arch>" (e.g. "cpu-x86_64",
   * optionally followed by "-<features>") or "cuda-sm_<NN>". */
  const char *target;
  uint32_t num_inputs, num_outputs;
  const gatec_abi_value_info *inputs;  /* num_inputs entries */
  const gatec_abi_value_info *outputs; /* num_outputs entries */

  /* Runs the model once.
   *
   * in_data[i]    dense row-major (C order) buffer of input i, on the device
   *               of `target`;
   * in_shapes[i]  its shape (inputs[i].rank entries). The runtime has checked
   *               dtype, rank, static dims and shared dim_params before the
   *               call.
   * out_data[i]   set by the model: output i's dense row-major buffer,
   *               allocated with alloc(bytes, align, alloc_ctx);
   * out_shapes[i] written by the model: output i's shape (outputs[i].rank
   *               entries, already allocated by the caller).
   *
   * Returns 0 on success. On failure returns non-zero and writes a
   * NUL-terminated message of at most err_len bytes (including the NUL) into
   * err; buffers it got from alloc are reclaimed by the runtime. 2 means an
   * allocation of the model's own failed (out of memory).
   *
   * Must be reentrant: several threads may call run at once (on different
   * buffers), so a model keeps no mutable global state. */
  int (*run)(const void *const *in_data, const int64_t *const *in_shapes,
             void **out_data, int64_t *const *out_shapes, gatec_alloc_fn alloc,
             void *alloc_ctx, char *err, size_t err_len);
} gatec_model_abi;

/* The one symbol of a model library. */
typedef const gatec_model_abi *(*gatec_model_get_abi_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* GATEC_MODEL_ABI_H */
