/*===- status.c - Status objects and small strings ------------------------===*/
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gatec_status {
  gatec_status_code code;
  bool is_static; /* the fallback below: never freed */
  const char *message;
};

static gatec_status oom_fallback = {
    GATEC_STATUS_OUT_OF_MEMORY, true,
    "out of memory (could not even allocate the error message)"};

gatec_status *gatec_rt_status(gatec_status_code code, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    n = 0;
  gatec_status *s = malloc(sizeof(gatec_status) + (size_t)n + 1);
  if (!s) {
    va_end(ap2);
    return &oom_fallback;
  }
  char *msg = (char *)(s + 1);
  vsnprintf(msg, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  s->code = code;
  s->is_static = false;
  s->message = msg;
  return s;
}

gatec_status_code gatec_status_get_code(const gatec_status *s) {
  return s ? s->code : GATEC_STATUS_OK;
}

const char *gatec_status_message(const gatec_status *s) {
  return s ? s->message : "";
}

void gatec_status_destroy(gatec_status *s) {
  if (s && !s->is_static)
    free(s);
}

const char *gatec_status_code_name(gatec_status_code code) {
  switch (code) {
  case GATEC_STATUS_OK:
    return "ok";
  case GATEC_STATUS_INVALID_ARGUMENT:
    return "invalid argument";
  case GATEC_STATUS_MISSING_INPUT:
    return "missing input";
  case GATEC_STATUS_SHAPE_MISMATCH:
    return "shape mismatch";
  case GATEC_STATUS_DTYPE_MISMATCH:
    return "dtype mismatch";
  case GATEC_STATUS_LOAD_ERROR:
    return "load error";
  case GATEC_STATUS_ABI_VERSION_MISMATCH:
    return "ABI version mismatch";
  case GATEC_STATUS_WRONG_TARGET:
    return "wrong target";
  case GATEC_STATUS_OUT_OF_MEMORY:
    return "out of memory";
  case GATEC_STATUS_DEVICE_UNAVAILABLE:
    return "device unavailable";
  case GATEC_STATUS_MODEL_ERROR:
    return "model error";
  }
  return "unknown";
}

void gatec_rt_str_appendf(gatec_rt_str *s, const char *fmt, ...) {
  if (s->failed)
    return;
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    va_end(ap2);
    s->failed = true;
    return;
  }
  size_t need = s->len + (size_t)n + 1;
  if (need > s->cap) {
    size_t cap = s->cap ? s->cap : 64;
    while (cap < need)
      cap *= 2;
    char *p = realloc(s->data, cap);
    if (!p) {
      va_end(ap2);
      s->failed = true;
      return;
    }
    s->data = p;
    s->cap = cap;
  }
  vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  s->len += (size_t)n;
}

const char *gatec_rt_str_get(const gatec_rt_str *s) {
  return (s->data && !s->failed) ? s->data : "";
}

void gatec_rt_str_free(gatec_rt_str *s) {
  free(s->data);
  s->data = NULL;
  s->len = s->cap = 0;
  s->failed = false;
}

void gatec_rt_str_append_shape(gatec_rt_str *s, int32_t rank,
                               const int64_t *shape) {
  gatec_rt_str_appendf(s, "[");
  for (int32_t d = 0; d < rank; ++d)
    gatec_rt_str_appendf(s, "%s%lld", d ? ", " : "", (long long)shape[d]);
  gatec_rt_str_appendf(s, "]");
}
