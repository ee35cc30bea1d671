/*===- internal.h - Shared helpers of the gatec runtime ------------------===*/
#define _POSIX_C_SOURCE 200809L /* posix_memalign, strerror, dlopen */
#ifndef GATEC_RUNTIME_INTERNAL_H
#define GATEC_RUNTIME_INTERNAL_H

#include "gatec/runtime.h"

#include <stdarg.h>
#include <stdbool.h>

#if defined(__GNUC__)
#define GATEC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define GATEC_PRINTF(f, a)
#endif

/* A new status with a printf-formatted message. Never returns NULL: if the
 * status itself cannot be allocated, a static out-of-memory status is
 * returned (gatec_status_destroy ignores it). */
gatec_status *gatec_rt_status(gatec_status_code code, const char *fmt, ...)
    GATEC_PRINTF(2, 3);

/* A growable NUL-terminated string; on allocation failure `failed` is set and
 * further appends are ignored. */
typedef struct {
  char *data;
  size_t len, cap;
  bool failed;
} gatec_rt_str;
void gatec_rt_str_appendf(gatec_rt_str *s, const char *fmt, ...)
    GATEC_PRINTF(2, 3);
/* The text ("" if empty or failed); valid until the next append or free. */
const char *gatec_rt_str_get(const gatec_rt_str *s);
void gatec_rt_str_free(gatec_rt_str *s);
/* Appends "[2, 8, 32]". */
void gatec_rt_str_append_shape(gatec_rt_str *s, int32_t rank,
                               const int64_t *shape);

/* Checks dtype, rank and dims and computes the element count and dense byte
 * size, or returns an INVALID_ARGUMENT status naming `what`. */
gatec_status *gatec_rt_check_shape(const char *what, gatec_dtype dtype,
                                   int32_t rank, const int64_t *shape,
                                   int64_t *num_elements, size_t *bytes);

/* A tensor taking ownership of `data` (freed with free()); dense strides.
 * On failure returns NULL and leaves `data` to the caller. */
gatec_tensor *gatec_rt_tensor_adopt(void *data, gatec_dtype dtype, int32_t rank,
                                    const int64_t *shape);

/* Allocates `bytes` (at least 1) aligned to `align` (a power of two >=
 * sizeof(void*)); NULL on failure. Freed with free(). */
void *gatec_rt_aligned_alloc(size_t bytes, size_t align);

/* Copies `t` into the dense row-major buffer `dst` (size_bytes(t) bytes).
 * False if scratch memory (only needed for rank > 64) could not be had. */
bool gatec_rt_copy_to_dense(const gatec_tensor *t, void *dst);

#endif
