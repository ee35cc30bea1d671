/* Concurrent runs of one loaded model (the runtime's thread-safety promise,
 * gatec/runtime.h): 8 threads x 100 runs each, on one gatec_model per
 * library, every run with its own inputs of its own shape, checked against a
 * reference.
 *   two_outputs.so: sum = a + b and prod = a * b, checked against the same
 *     arithmetic done here (exact in f32). A third of the runs pass `a` as a
 *     strided view (the runtime's dense copy), a third by name.
 *   affine.so: y = 2x + b, checked against the outputs of the same inputs
 *     computed before the threads start, one run at a time.
 * Usage: gatec-runtime-thread-test MODELS_DIR. Exits 1 on any mismatch or
 * error. */
#include "gatec/runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { num_threads = 8, runs_per_thread = 100 };

static gatec_model *two_outputs, *affine;

/* The affine inputs and their sequential reference outputs, per thread and
 * run: shape [1 + r % 3, 1 + (t + r) % 5, 4]. */
static float *affine_x[num_threads][runs_per_thread];
static float *affine_ref[num_threads][runs_per_thread];
static int64_t affine_shape[num_threads][runs_per_thread][3];

static uint32_t lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}
static float rnd(uint32_t *s) {
  return (float)(lcg(s) % 20001u) / 1000.0f - 10.0f;
}

typedef struct {
  int id;
  int errors;
  char first_error[512];
} thread_result;

static void record(thread_result *r, const char *what, int run) {
  if (r->errors++ == 0)
    snprintf(r->first_error, sizeof(r->first_error), "thread %d run %d: %s",
             r->id, run, what);
}

static gatec_tensor *wrap(float *data, int rank, const int64_t *shape,
                          const int64_t *strides) {
  gatec_tensor *t = NULL;
  gatec_status *st = gatec_tensor_wrap(data, GATEC_DTYPE_F32, rank, shape,
                                       strides, GATEC_DEVICE_CPU, &t);
  gatec_status_destroy(st);
  return t;
}

static void *worker(void *arg) {
  thread_result *r = arg;
  uint32_t seed = 12345u + 977u * (uint32_t)r->id;
  for (int run = 0; run < runs_per_thread; ++run) {
    /* two_outputs with n in 1..64 */
    int64_t n = 1 + (int64_t)((r->id * 131 + run * 17) % 64);
    float *a = malloc(sizeof(float) * (size_t)n * 2);
    float *b = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < 2 * n; ++i)
      a[i] = rnd(&seed);
    for (int64_t i = 0; i < n; ++i)
      b[i] = rnd(&seed);
    int mode = run % 3; /* 0 dense, 1 strided a, 2 by name */
    int64_t stride2[1] = {2};
    gatec_tensor *ta = wrap(a, 1, &n, mode == 1 ? stride2 : NULL);
    gatec_tensor *tb = wrap(b, 1, &n, NULL);
    const gatec_tensor *in[2] = {ta, tb};
    gatec_tensor *out[2] = {NULL, NULL};
    gatec_status *st;
    if (mode == 2) {
      const char *names[2] = {"b", "a"};
      const gatec_tensor *rin[2] = {tb, ta};
      st = gatec_model_run_named(two_outputs, names, rin, 2, out);
    } else {
      st = gatec_model_run(two_outputs, in, 2, out);
    }
    if (st) {
      record(r, gatec_status_message(st), run);
      gatec_status_destroy(st);
    } else {
      const float *sum = gatec_tensor_data(out[0]);
      const float *prod = gatec_tensor_data(out[1]);
      int ok = gatec_tensor_shape(out[0])[0] == n &&
               gatec_tensor_shape(out[1])[0] == n;
      for (int64_t i = 0; ok && i < n; ++i) {
        float ai = a[mode == 1 ? 2 * i : i];
        ok = sum[i] == ai + b[i] && prod[i] == ai * b[i];
      }
      if (!ok)
        record(r, "two_outputs: wrong values", run);
    }
    gatec_tensor_destroy(out[0]);
    gatec_tensor_destroy(out[1]);
    gatec_tensor_destroy(ta);
    gatec_tensor_destroy(tb);
    free(a);
    free(b);

    /* affine */
    gatec_tensor *tx =
        wrap(affine_x[r->id][run], 3, affine_shape[r->id][run], NULL);
    gatec_tensor *y = NULL;
    st = gatec_model_run(affine, (const gatec_tensor *const[]){tx}, 1, &y);
    if (st) {
      record(r, gatec_status_message(st), run);
      gatec_status_destroy(st);
    } else {
      const int64_t *s = affine_shape[r->id][run];
      int64_t count = s[0] * s[1] * s[2];
      const int64_t *ys = gatec_tensor_shape(y);
      if (ys[0] != s[0] || ys[1] != s[1] || ys[2] != s[2] ||
          memcmp(gatec_tensor_data(y), affine_ref[r->id][run],
                 sizeof(float) * (size_t)count) != 0)
        record(r, "affine: output differs from the sequential run", run);
    }
    gatec_tensor_destroy(y);
    gatec_tensor_destroy(tx);
  }
  return NULL;
}

static gatec_model *load(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  gatec_model *m = NULL;
  gatec_status *st = gatec_model_load(path, GATEC_DEVICE_CPU, &m);
  if (st) {
    fprintf(stderr, "thread test: %s\n", gatec_status_message(st));
    gatec_status_destroy(st);
    exit(1);
  }
  return m;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODELS_DIR\n", argv[0]);
    return 2;
  }
  two_outputs = load(argv[1], "two_outputs.so");
  affine = load(argv[1], "affine.so");

  /* Sequential references for affine. */
  uint32_t seed = 777u;
  for (int t = 0; t < num_threads; ++t)
    for (int run = 0; run < runs_per_thread; ++run) {
      int64_t *s = affine_shape[t][run];
      s[0] = 1 + run % 3;
      s[1] = 1 + (t + run) % 5;
      s[2] = 4;
      int64_t count = s[0] * s[1] * s[2];
      affine_x[t][run] = malloc(sizeof(float) * (size_t)count);
      for (int64_t i = 0; i < count; ++i)
        affine_x[t][run][i] = rnd(&seed);
      gatec_tensor *tx = wrap(affine_x[t][run], 3, s, NULL), *y = NULL;
      gatec_status *st =
          gatec_model_run(affine, (const gatec_tensor *const[]){tx}, 1, &y);
      if (st) {
        fprintf(stderr, "thread test: %s\n", gatec_status_message(st));
        return 1;
      }
      affine_ref[t][run] = malloc(sizeof(float) * (size_t)count);
      memcpy(affine_ref[t][run], gatec_tensor_data(y),
             sizeof(float) * (size_t)count);
      gatec_tensor_destroy(y);
      gatec_tensor_destroy(tx);
    }

  pthread_t threads[num_threads];
  thread_result results[num_threads];
  for (int t = 0; t < num_threads; ++t) {
    results[t].id = t;
    results[t].errors = 0;
    results[t].first_error[0] = '\0';
    if (pthread_create(&threads[t], NULL, worker, &results[t]) != 0) {
      fprintf(stderr, "thread test: cannot start thread %d\n", t);
      return 1;
    }
  }
  int errors = 0;
  for (int t = 0; t < num_threads; ++t) {
    pthread_join(threads[t], NULL);
    errors += results[t].errors;
    if (results[t].errors)
      fprintf(stderr, "thread test: %d errors, first: %s\n", results[t].errors,
              results[t].first_error);
  }
  for (int t = 0; t < num_threads; ++t)
    for (int run = 0; run < runs_per_thread; ++run) {
      free(affine_x[t][run]);
      free(affine_ref[t][run]);
    }
  gatec_model_destroy(two_outputs);
  gatec_model_destroy(affine);
  printf("thread test: %d threads x %d runs of 2 models, %d errors\n",
         num_threads, runs_per_thread, errors);
  return errors ? 1 : 0;
}
