/*===- tensor.c - Tensors: owning or borrowed, strided -------------------===*/
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct gatec_tensor {
  void *data;
  gatec_dtype dtype;
  int32_t rank;
  gatec_device device;
  bool owns;
  int64_t *shape;   /* rank entries, in the same allocation */
  int64_t *strides; /* rank entries, in elements */
};

/* The alignment of the buffers the runtime allocates. */
enum { default_align = 64 };

void *gatec_rt_aligned_alloc(size_t bytes, size_t align) {
  if (align < sizeof(void *))
    align = sizeof(void *);
  if (bytes == 0)
    bytes = 1;
  void *p = NULL;
  if (posix_memalign(&p, align, bytes) != 0)
    return NULL;
  return p;
}

gatec_status *gatec_rt_check_shape(const char *what, gatec_dtype dtype,
                                   int32_t rank, const int64_t *shape,
                                   int64_t *num_elements, size_t *bytes) {
  size_t esize = gatec_dtype_size(dtype);
  if (esize == 0)
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "%s: invalid dtype %d", what, (int)dtype);
  if (rank < 0)
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "%s: negative rank %d", what, (int)rank);
  if (rank > 0 && !shape)
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "%s: rank %d but no shape", what, (int)rank);
  /* Overflow is only an error if no dim is 0. */
  int64_t n = 1;
  bool overflow = false, empty = false;
  for (int32_t d = 0; d < rank; ++d) {
    if (shape[d] < 0)
      return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                             "%s: negative dim %lld at index %d", what,
                             (long long)shape[d], (int)d);
    if (shape[d] == 0)
      empty = true;
    else if (!overflow && __builtin_mul_overflow(n, shape[d], &n))
      overflow = true;
  }
  if (empty)
    n = 0;
  else if (overflow || (uint64_t)n > (uint64_t)PTRDIFF_MAX / esize) {
    gatec_rt_str s = {0};
    gatec_rt_str_append_shape(&s, rank, shape);
    gatec_status *st =
        gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                        "%s: shape %s of %s elements is too large to address",
                        what, gatec_rt_str_get(&s), gatec_dtype_name(dtype));
    gatec_rt_str_free(&s);
    return st;
  }
  if (num_elements)
    *num_elements = n;
  if (bytes)
    *bytes = (size_t)n * esize;
  return NULL;
}

static gatec_tensor *tensor_new(void *data, gatec_dtype dtype, int32_t rank,
                                const int64_t *shape, const int64_t *strides,
                                gatec_device device, bool owns) {
  gatec_tensor *t =
      malloc(sizeof(gatec_tensor) + 2 * sizeof(int64_t) * (size_t)rank);
  if (!t)
    return NULL;
  t->data = data;
  t->dtype = dtype;
  t->rank = rank;
  t->device = device;
  t->owns = owns;
  t->shape = rank ? (int64_t *)(t + 1) : NULL;
  t->strides = rank ? t->shape + rank : NULL;
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    t->shape[d] = shape[d];
    t->strides[d] = strides ? strides[d] : stride;
    stride *= shape[d] ? shape[d] : 1;
  }
  return t;
}

gatec_tensor *gatec_rt_tensor_adopt(void *data, gatec_dtype dtype, int32_t rank,
                                    const int64_t *shape) {
  return tensor_new(data, dtype, rank, shape, NULL, GATEC_DEVICE_CPU, true);
}

/* Tensors live in host memory (a CUDA model copies them to the GPU). */
static gatec_status *host_tensor_device(gatec_device device) {
  if (device == GATEC_DEVICE_CUDA)
    return gatec_rt_status(GATEC_STATUS_DEVICE_UNAVAILABLE,
                           "device unavailable: tensors live in host memory "
                           "(a CUDA model copies its inputs to the GPU and "
                           "its outputs back); create them on the cpu");
  return gatec_device_check(device);
}

gatec_status *gatec_tensor_create(gatec_dtype dtype, int32_t rank,
                                  const int64_t *shape, gatec_device device,
                                  gatec_tensor **out) {
  if (out)
    *out = NULL;
  if (!out)
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "gatec_tensor_create: out is NULL");
  gatec_status *st = host_tensor_device(device);
  if (st)
    return st;
  size_t bytes;
  st = gatec_rt_check_shape("gatec_tensor_create", dtype, rank, shape, NULL,
                            &bytes);
  if (st)
    return st;
  void *data = gatec_rt_aligned_alloc(bytes, default_align);
  if (!data)
    return gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                           "out of memory: cannot allocate %zu bytes for a "
                           "tensor",
                           bytes);
  memset(data, 0, bytes);
  gatec_tensor *t = tensor_new(data, dtype, rank, shape, NULL, device, true);
  if (!t) {
    free(data);
    return gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                           "out of memory: cannot allocate a tensor");
  }
  *out = t;
  return NULL;
}

gatec_status *gatec_tensor_wrap(void *data, gatec_dtype dtype, int32_t rank,
                                const int64_t *shape, const int64_t *strides,
                                gatec_device device, gatec_tensor **out) {
  if (out)
    *out = NULL;
  if (!out)
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "gatec_tensor_wrap: out is NULL");
  gatec_status *st = host_tensor_device(device);
  if (st)
    return st;
  int64_t n;
  st = gatec_rt_check_shape("gatec_tensor_wrap", dtype, rank, shape, &n, NULL);
  if (st)
    return st;
  if (!data && n > 0)
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "gatec_tensor_wrap: data is NULL for a tensor of "
                           "%lld elements",
                           (long long)n);
  gatec_tensor *t =
      tensor_new(data, dtype, rank, shape, strides, device, false);
  if (!t)
    return gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                           "out of memory: cannot allocate a tensor");
  *out = t;
  return NULL;
}

bool gatec_rt_copy_to_dense(const gatec_tensor *t, void *dst) {
  size_t esize = gatec_dtype_size(t->dtype);
  int64_t n = gatec_tensor_num_elements(t);
  if (n == 0)
    return true;
  if (gatec_tensor_is_contiguous(t)) {
    memcpy(dst, t->data, (size_t)n * esize);
    return true;
  }
  /* Odometer over all dims but the last; the last one is a strided row. */
  int32_t rank = t->rank;
  int64_t idx[64] = {0};
  int64_t *index = idx;
  if (rank > 64) {
    index = calloc((size_t)rank, sizeof(int64_t));
    if (!index)
      return false;
  }
  const char *src = t->data;
  char *out = dst;
  int64_t inner = t->shape[rank - 1];
  int64_t inner_stride = t->strides[rank - 1] * (int64_t)esize;
  for (;;) {
    int64_t offset = 0;
    for (int32_t d = 0; d + 1 < rank; ++d)
      offset += index[d] * t->strides[d];
    const char *row = src + offset * (int64_t)esize;
    for (int64_t i = 0; i < inner; ++i) {
      memcpy(out, row + i * inner_stride, esize);
      out += esize;
    }
    int32_t d = rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < t->shape[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      break;
  }
  if (index != idx)
    free(index);
  return true;
}

gatec_status *gatec_tensor_copy_dense(const gatec_tensor *t,
                                      gatec_tensor **out) {
  if (out)
    *out = NULL;
  if (!t || !out)
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "gatec_tensor_copy_dense: %s is NULL",
                           t ? "out" : "the tensor");
  gatec_status *st =
      gatec_tensor_create(t->dtype, t->rank, t->shape, t->device, out);
  if (st)
    return st;
  if (!gatec_rt_copy_to_dense(t, (*out)->data)) {
    gatec_tensor_destroy(*out);
    *out = NULL;
    return gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                           "out of memory: cannot copy a tensor");
  }
  return NULL;
}

void gatec_tensor_destroy(gatec_tensor *t) {
  if (!t)
    return;
  if (t->owns)
    free(t->data);
  free(t);
}

void *gatec_tensor_data(const gatec_tensor *t) { return t ? t->data : NULL; }
gatec_dtype gatec_tensor_dtype(const gatec_tensor *t) {
  return t ? t->dtype : GATEC_DTYPE_INVALID;
}
int32_t gatec_tensor_rank(const gatec_tensor *t) { return t ? t->rank : 0; }
const int64_t *gatec_tensor_shape(const gatec_tensor *t) {
  return t ? t->shape : NULL;
}
const int64_t *gatec_tensor_strides(const gatec_tensor *t) {
  return t ? t->strides : NULL;
}
gatec_device gatec_tensor_device(const gatec_tensor *t) {
  return t ? t->device : GATEC_DEVICE_CPU;
}
int gatec_tensor_owns_data(const gatec_tensor *t) { return t && t->owns; }

int64_t gatec_tensor_num_elements(const gatec_tensor *t) {
  if (!t)
    return 0;
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d)
    n *= t->shape[d];
  return n;
}

size_t gatec_tensor_size_bytes(const gatec_tensor *t) {
  return t ? (size_t)gatec_tensor_num_elements(t) * gatec_dtype_size(t->dtype)
           : 0;
}

int gatec_tensor_is_contiguous(const gatec_tensor *t) {
  if (!t)
    return 0;
  if (gatec_tensor_num_elements(t) == 0)
    return 1;
  int64_t stride = 1;
  for (int32_t d = t->rank - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != stride)
      return 0;
    stride *= t->shape[d];
  }
  return 1;
}
