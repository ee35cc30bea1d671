/* Shared helpers of the hand-written test models. */
#ifndef GATEC_TEST_MODEL_H
#define GATEC_TEST_MODEL_H

#include "gatec/model_abi.h"
#include "gatec/runtime.h" /* gatec_dtype values only; nothing is linked */

#include <stdio.h>

/* The target string of the machine the model is compiled for. */
#if defined(__x86_64__)
#define TEST_HOST_TARGET "cpu-x86_64"
#define TEST_OTHER_CPU_TARGET "cpu-aarch64"
#elif defined(__aarch64__)
#define TEST_HOST_TARGET "cpu-aarch64"
#define TEST_OTHER_CPU_TARGET "cpu-x86_64"
#else
#error "test models: unknown host architecture"
#endif

static inline int64_t test_num_elements(int32_t rank, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d)
    n *= shape[d];
  return n;
}

#endif
