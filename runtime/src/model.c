/*===- model.c - Loading a model library and running it ------------------===*/
#include "internal.h"

#include "gatec/model_abi.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Thread safety: after gatec_model_load a gatec_model is never written
 * again; gatec_model_run keeps all of its state on its stack or in memory it
 * allocates per call (the dense input copies, the output shapes, the
 * allocator context with its own mutex). So any number of runs of one model
 * may proceed at once, as the header promises, as long as the model's own
 * `run` is reentrant, which the model ABI requires. */

struct gatec_model {
  void *handle;
  const gatec_model_abi *abi;
  char *path;
  char *target;
  uint32_t abi_version;
  uint32_t num_inputs, num_outputs;
  gatec_value_info *inputs, *outputs;
  size_t total_rank; /* sum of all input and output ranks */
  /* Every allocation of the copied signature, freed at destroy. */
  void **blocks;
  size_t num_blocks, cap_blocks;
};

/*===--- Loading ------------------------------------------------------------*/

static void *model_alloc(gatec_model *m, size_t bytes) {
  if (m->num_blocks == m->cap_blocks) {
    size_t cap = m->cap_blocks ? 2 * m->cap_blocks : 16;
    void **b = realloc(m->blocks, cap * sizeof(void *));
    if (!b)
      return NULL;
    m->blocks = b;
    m->cap_blocks = cap;
  }
  void *p = calloc(1, bytes ? bytes : 1);
  if (p)
    m->blocks[m->num_blocks++] = p;
  return p;
}

static char *model_strdup(gatec_model *m, const char *s) {
  size_t n = strlen(s);
  char *p = model_alloc(m, n + 1);
  if (p)
    memcpy(p, s, n + 1);
  return p;
}

static void model_free(gatec_model *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->num_blocks; ++i)
    free(m->blocks[i]);
  free(m->blocks);
  if (m->handle)
    dlclose(m->handle);
  free(m);
}

/* A 64-bit ELF file whose loadable segments, program header table and
 * section header table lie within its `size` bytes: else a message. dlopen
 * maps segments past the end of a truncated file, and the first touch of
 * such a page is SIGBUS inside the loader; this check turns that into the
 * load's error. Files that are not 64-bit ELF are left to dlopen. */
static const char *elf_extent_error(const char *path, off_t size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  const char *err = NULL;
  Elf64_Ehdr eh;
  if (fread(&eh, 1, sizeof eh, f) != sizeof eh ||
      memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64)
    goto done;
  uint64_t fsize = (uint64_t)size;
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > fsize ||
      (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > fsize - eh.e_phoff) {
    err = "its program headers lie past the end of the file (truncated?)";
    goto done;
  }
  if (eh.e_shnum &&
      (eh.e_shoff > fsize ||
       (uint64_t)eh.e_shnum * eh.e_shentsize > fsize - eh.e_shoff)) {
    err = "its section headers lie past the end of the file (truncated?)";
    goto done;
  }
  if (fseeko(f, (off_t)eh.e_phoff, SEEK_SET) != 0)
    goto done;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (fread(&ph, 1, sizeof ph, f) != sizeof ph)
      break;
    if (ph.p_type == PT_LOAD &&
        (ph.p_offset > fsize || ph.p_filesz > fsize - ph.p_offset)) {
      err = "a loadable segment lies past the end of the file (truncated?)";
      break;
    }
  }
done:
  fclose(f);
  return err;
}

static gatec_status *oom_loading(const char *path) {
  return gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                         "out of memory while loading model '%s'", path);
}

/* Checks and copies one side of the signature. */
static gatec_status *copy_values(gatec_model *m, const char *kind,
                                 const gatec_abi_value_info *src, uint32_t n,
                                 gatec_value_info **dst) {
  const char *path = m->path;
  if (n > 0 && !src)
    return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                           "cannot load model '%s': malformed signature: %u "
                           "%ss but no %s descriptors",
                           path, n, kind, kind);
  gatec_value_info *v = model_alloc(m, sizeof(gatec_value_info) * n);
  if (!v)
    return oom_loading(path);
  for (uint32_t i = 0; i < n; ++i) {
    const gatec_abi_value_info *s = &src[i];
    if (!s->name || !*s->name)
      return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                             "cannot load model '%s': malformed signature: "
                             "%s %u has no name",
                             path, kind, i);
    if (gatec_dtype_size((gatec_dtype)s->dtype) == 0)
      return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                             "cannot load model '%s': malformed signature: "
                             "%s '%s' has invalid dtype %d",
                             path, kind, s->name, (int)s->dtype);
    if (s->rank < 0 || (s->rank > 0 && !s->dims))
      return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                             "cannot load model '%s': malformed signature: "
                             "%s '%s' has rank %d %s",
                             path, kind, s->name, (int)s->rank,
                             s->rank < 0 ? "(negative)" : "but no dims");
    for (uint32_t j = 0; j < i; ++j)
      if (strcmp(v[j].name, s->name) == 0)
        return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                               "cannot load model '%s': malformed signature: "
                               "two %ss are called '%s'",
                               path, kind, s->name);
    v[i].name = model_strdup(m, s->name);
    v[i].dtype = (gatec_dtype)s->dtype;
    v[i].rank = s->rank;
    int64_t *dims = model_alloc(m, sizeof(int64_t) * (size_t)s->rank);
    const char **params = model_alloc(m, sizeof(char *) * (size_t)s->rank);
    if (!v[i].name || !dims || !params)
      return oom_loading(path);
    for (int32_t d = 0; d < s->rank; ++d) {
      if (s->dims[d] < -1)
        return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                               "cannot load model '%s': malformed signature: "
                               "%s '%s' has invalid dim %lld at index %d",
                               path, kind, s->name, (long long)s->dims[d],
                               (int)d);
      dims[d] = s->dims[d];
      const char *p = s->dim_params ? s->dim_params[d] : NULL;
      if (p && *p) {
        if (!(params[d] = model_strdup(m, p)))
          return oom_loading(path);
      }
    }
    v[i].dims = s->rank ? dims : NULL;
    v[i].dim_params = s->rank ? (const char *const *)params : NULL;
    m->total_rank += (size_t)s->rank;
  }
  *dst = v;
  return NULL;
}

/* "cpu-x86_64" matches "cpu-x86_64" and "cpu-x86_64-<features>". */
static bool cpu_target_matches(const char *target, const char *host) {
  size_t n = strlen(host);
  return strncmp(target, host, n) == 0 &&
         (target[n] == '\0' || target[n] == '-');
}

static gatec_status *check_target(const char *path, const char *target,
                                  gatec_device device) {
  const char *host = gatec_runtime_cpu_target();
  if (strncmp(target, "cuda-", 5) == 0) {
    if (device == GATEC_DEVICE_CUDA)
      return NULL;
    return gatec_rt_status(GATEC_STATUS_WRONG_TARGET,
                           "cannot load model '%s' on the cpu: it was "
                           "compiled for target '%s' (load it on the cuda "
                           "device, e.g. gatec-run --device=cuda)",
                           path, target);
  }
  if (strncmp(target, "cpu-", 4) == 0) {
    if (!cpu_target_matches(target, host))
      return gatec_rt_status(GATEC_STATUS_WRONG_TARGET,
                             "cannot load model '%s': it was compiled for "
                             "target '%s', but this machine runs '%s' models",
                             path, target, host);
    if (device != GATEC_DEVICE_CPU)
      return gatec_rt_status(GATEC_STATUS_WRONG_TARGET,
                             "cannot load model '%s' on the %s device: it "
                             "was compiled for the CPU ('%s'; compile it "
                             "with gatec --target=cuda)",
                             path, gatec_device_name(device), target);
    return NULL;
  }
  return gatec_rt_status(GATEC_STATUS_WRONG_TARGET,
                         "cannot load model '%s': unknown target '%s' (this "
                         "runtime runs '%s' and 'cuda-sm_*' models)",
                         path, target, host);
}

gatec_status *gatec_model_load(const char *path, gatec_device device,
                               gatec_model **out) {
  if (out)
    *out = NULL;
  if (!path || !out)
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "gatec_model_load: %s is NULL",
                           path ? "out" : "path");
  gatec_status *st = gatec_device_check(device);
  if (st)
    return st;
  if (!*path)
    return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                           "cannot load model '': empty path");
  struct stat sb;
  if (stat(path, &sb) != 0)
    return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                           "cannot load model '%s': %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode))
    return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                           "cannot load model '%s': it is a directory", path);

  const char *bad = elf_extent_error(path, sb.st_size);
  if (bad)
    return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                           "cannot load model '%s': %s", path, bad);

  gatec_model *m = calloc(1, sizeof(gatec_model));
  if (!m)
    return oom_loading(path);
  /* dlopen searches the library path for a name without '/'. */
  bool has_slash = strchr(path, '/') != NULL;
  size_t n = strlen(path);
  char *open_path = model_alloc(m, n + 3);
  m->path = model_strdup(m, path);
  if (!open_path || !m->path) {
    model_free(m);
    return oom_loading(path);
  }
  snprintf(open_path, n + 3, "%s%s", has_slash ? "" : "./", path);

  dlerror();
  m->handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
  if (!m->handle) {
    const char *e = dlerror();
    if (!e)
      e = "dlopen failed";
    /* dlerror says "<path>: <reason>"; the path is in our message already. */
    size_t pn = strlen(open_path);
    if (strncmp(e, open_path, pn) == 0 && strncmp(e + pn, ": ", 2) == 0)
      e += pn + 2;
    st = gatec_rt_status(GATEC_STATUS_LOAD_ERROR, "cannot load model '%s': %s",
                         path, e);
    model_free(m);
    return st;
  }
  void *sym = dlsym(m->handle, GATEC_MODEL_GET_ABI_SYMBOL);
  if (!sym) {
    model_free(m);
    return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                           "cannot load model '%s': it does not export '%s' "
                           "(not a gatec model library?)",
                           path, GATEC_MODEL_GET_ABI_SYMBOL);
  }
  gatec_model_get_abi_fn get_abi;
  memcpy(&get_abi, &sym, sizeof(get_abi));
  const gatec_model_abi *abi = get_abi();
  if (!abi) {
    model_free(m);
    return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                           "cannot load model '%s': %s returned NULL", path,
                           GATEC_MODEL_GET_ABI_SYMBOL);
  }
  /* Only abi_version is known to be where we expect it in other versions. */
  if (abi->abi_version != GATEC_MODEL_ABI_VERSION) {
    st = gatec_rt_status(GATEC_STATUS_ABI_VERSION_MISMATCH,
                         "cannot load model '%s': its model ABI version is "
                         "%u, but this runtime supports version %u only "
                         "(compile the model with a gatec that matches this "
                         "runtime)",
                         path, abi->abi_version, GATEC_MODEL_ABI_VERSION);
    model_free(m);
    return st;
  }
  if (!abi->target || !abi->run) {
    model_free(m);
    return gatec_rt_status(GATEC_STATUS_LOAD_ERROR,
                           "cannot load model '%s': malformed descriptor: no "
                           "%s",
                           path, abi->target ? "run function" : "target");
  }
  if ((st = check_target(path, abi->target, device))) {
    model_free(m);
    return st;
  }
  m->abi = abi;
  m->abi_version = abi->abi_version;
  m->num_inputs = abi->num_inputs;
  m->num_outputs = abi->num_outputs;
  m->target = model_strdup(m, abi->target);
  if (!m->target) {
    model_free(m);
    return oom_loading(path);
  }
  if ((st =
           copy_values(m, "input", abi->inputs, abi->num_inputs, &m->inputs)) ||
      (st = copy_values(m, "output", abi->outputs, abi->num_outputs,
                        &m->outputs))) {
    model_free(m);
    return st;
  }
  *out = m;
  return NULL;
}

void gatec_model_destroy(gatec_model *m) { model_free(m); }

/*===--- Signature ----------------------------------------------------------*/

const char *gatec_model_path(const gatec_model *m) {
  return m ? m->path : NULL;
}
const char *gatec_model_target(const gatec_model *m) {
  return m ? m->target : NULL;
}
uint32_t gatec_model_abi_version(const gatec_model *m) {
  return m ? m->abi_version : 0;
}
uint32_t gatec_model_num_inputs(const gatec_model *m) {
  return m ? m->num_inputs : 0;
}
uint32_t gatec_model_num_outputs(const gatec_model *m) {
  return m ? m->num_outputs : 0;
}
const gatec_value_info *gatec_model_input(const gatec_model *m, uint32_t i) {
  return m && i < m->num_inputs ? &m->inputs[i] : NULL;
}
const gatec_value_info *gatec_model_output(const gatec_model *m, uint32_t i) {
  return m && i < m->num_outputs ? &m->outputs[i] : NULL;
}

static int32_t find_value(const gatec_value_info *v, uint32_t n,
                          const char *name) {
  if (!name)
    return -1;
  for (uint32_t i = 0; i < n; ++i)
    if (strcmp(v[i].name, name) == 0)
      return (int32_t)i;
  return -1;
}
int32_t gatec_model_input_index(const gatec_model *m, const char *name) {
  return m ? find_value(m->inputs, m->num_inputs, name) : -1;
}
int32_t gatec_model_output_index(const gatec_model *m, const char *name) {
  return m ? find_value(m->outputs, m->num_outputs, name) : -1;
}

static void append_info_shape(gatec_rt_str *s, const gatec_value_info *info) {
  gatec_rt_str_appendf(s, "[");
  for (int32_t d = 0; d < info->rank; ++d) {
    const char *sep = d ? ", " : "";
    if (info->dim_params && info->dim_params[d])
      gatec_rt_str_appendf(s, "%s%s", sep, info->dim_params[d]);
    else if (info->dims[d] < 0)
      gatec_rt_str_appendf(s, "%s?", sep);
    else
      gatec_rt_str_appendf(s, "%s%lld", sep, (long long)info->dims[d]);
  }
  gatec_rt_str_appendf(s, "]");
}

size_t gatec_value_info_shape_str(const gatec_value_info *info, char *buf,
                                  size_t len) {
  if (!info) {
    if (buf && len)
      buf[0] = '\0';
    return 0;
  }
  gatec_rt_str s = {0};
  append_info_shape(&s, info);
  const char *text = gatec_rt_str_get(&s);
  size_t n = strlen(text);
  if (buf && len) {
    size_t c = n < len - 1 ? n : len - 1;
    memcpy(buf, text, c);
    buf[c] = '\0';
  }
  gatec_rt_str_free(&s);
  return n;
}

/*===--- Running ------------------------------------------------------------*/

/* The size a dim_param has in this run, and where it was seen first. */
typedef struct {
  const char *param;
  int64_t value;
  const char *source;      /* the input (or output) that bound it */
  const char *source_kind; /* "input" or "output" */
  int32_t dim;             /* its dim index there */
} binding;

typedef struct {
  binding *b;
  size_t n;
} bindings;

static const binding *find_binding(const bindings *bs, size_t limit,
                                   const char *param) {
  for (size_t i = 0; i < limit && i < bs->n; ++i)
    if (strcmp(bs->b[i].param, param) == 0)
      return &bs->b[i];
  return NULL;
}

/* Appends "[batch, seq, 64] (batch=2 from input 'x', seq=?)": the expected
 * shape, and each of its dim_params with the size bound before `limit`. */
static void append_expected(gatec_rt_str *s, const gatec_value_info *info,
                            const bindings *bs, size_t limit) {
  append_info_shape(s, info);
  bool any = false;
  for (int32_t d = 0; d < info->rank; ++d) {
    const char *p = info->dim_params ? info->dim_params[d] : NULL;
    if (!p)
      continue;
    bool seen = false;
    for (int32_t e = 0; e < d && !seen; ++e)
      seen = info->dim_params[e] && strcmp(info->dim_params[e], p) == 0;
    if (seen)
      continue;
    gatec_rt_str_appendf(s, "%s%s=", any ? ", " : " (", p);
    any = true;
    const binding *b = find_binding(bs, limit, p);
    if (b)
      gatec_rt_str_appendf(s, "%lld from %s '%s'", (long long)b->value,
                           b->source_kind, b->source);
    else
      gatec_rt_str_appendf(s, "?");
  }
  if (any)
    gatec_rt_str_appendf(s, ")");
}

/* Checks `shape` against `info`, binding new dim_params into `bs`. Returns
 * false on a mismatch; *intra_dim is then the earlier dim of the same value
 * whose dim_param conflicts with *bad_dim (or -1). */
static bool match_shape(const gatec_value_info *info, const char *kind,
                        int32_t rank, const int64_t *shape, bindings *bs,
                        int32_t *bad_dim, int32_t *intra_dim) {
  size_t first = bs->n;
  *bad_dim = *intra_dim = -1;
  if (rank != info->rank)
    return false;
  for (int32_t d = 0; d < rank; ++d) {
    if (info->dims[d] >= 0 && shape[d] != info->dims[d]) {
      *bad_dim = d;
      return false;
    }
    const char *p = info->dim_params ? info->dim_params[d] : NULL;
    if (!p)
      continue;
    const binding *b = find_binding(bs, bs->n, p);
    if (b) {
      if (b->value != shape[d]) {
        *bad_dim = d;
        if ((size_t)(b - bs->b) >= first)
          *intra_dim = b->dim;
        return false;
      }
      continue;
    }
    binding *nb = &bs->b[bs->n++];
    nb->param = p;
    nb->value = shape[d];
    nb->source = info->name;
    nb->source_kind = kind;
    nb->dim = d;
  }
  return true;
}

static gatec_status *check_input(const gatec_value_info *info,
                                 const gatec_tensor *t, bindings *bs) {
  if (gatec_tensor_device(t) != GATEC_DEVICE_CPU)
    return gatec_rt_status(GATEC_STATUS_DEVICE_UNAVAILABLE,
                           "input '%s': the tensor is on device '%s', the "
                           "model runs on 'cpu'",
                           info->name,
                           gatec_device_name(gatec_tensor_device(t)));
  if (gatec_tensor_dtype(t) != info->dtype)
    return gatec_rt_status(GATEC_STATUS_DTYPE_MISMATCH,
                           "input '%s': expected dtype %s, given %s",
                           info->name, gatec_dtype_name(info->dtype),
                           gatec_dtype_name(gatec_tensor_dtype(t)));
  size_t before = bs->n;
  int32_t bad_dim, intra_dim;
  int32_t rank = gatec_tensor_rank(t);
  const int64_t *shape = gatec_tensor_shape(t);
  if (match_shape(info, "input", rank, shape, bs, &bad_dim, &intra_dim))
    return NULL;
  bs->n = before;
  gatec_rt_str s = {0};
  gatec_rt_str_appendf(&s, "input '%s': expected shape ", info->name);
  append_expected(&s, info, bs, before);
  gatec_rt_str_appendf(&s, ", given ");
  gatec_rt_str_append_shape(&s, rank, shape);
  if (intra_dim >= 0)
    gatec_rt_str_appendf(&s, " (dims %d and %d are both '%s')", (int)intra_dim,
                         (int)bad_dim, info->dim_params[bad_dim]);
  gatec_status *st =
      s.failed ? gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY, "out of memory")
               : gatec_rt_status(GATEC_STATUS_SHAPE_MISMATCH, "%s",
                                 gatec_rt_str_get(&s));
  gatec_rt_str_free(&s);
  return st;
}

/* The allocator context of one run. */
typedef struct {
  pthread_mutex_t mu;
  void **ptrs;
  size_t *sizes;
  size_t n, cap;
  bool failed;         /* an allocation failed */
  size_t failed_bytes; /* the largest failed request */
  size_t bad_align;    /* a non-power-of-two alignment asked for, or 0 */
} run_alloc;

static void *run_alloc_fn(size_t bytes, size_t align, void *vctx) {
  run_alloc *a = vctx;
  if (align == 0)
    align = 64;
  if (align & (align - 1)) {
    pthread_mutex_lock(&a->mu);
    a->bad_align = align;
    pthread_mutex_unlock(&a->mu);
    return NULL;
  }
  void *p = gatec_rt_aligned_alloc(bytes, align);
  pthread_mutex_lock(&a->mu);
  if (p && a->n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 8;
    void **np = realloc(a->ptrs, cap * sizeof(void *));
    if (np)
      a->ptrs = np;
    size_t *ns = np ? realloc(a->sizes, cap * sizeof(size_t)) : NULL;
    if (ns)
      a->sizes = ns;
    if (np && ns) {
      a->cap = cap;
    } else {
      free(p);
      p = NULL;
    }
  }
  if (p) {
    a->ptrs[a->n] = p;
    a->sizes[a->n] = bytes;
    a->n++;
  } else {
    a->failed = true;
    if (bytes > a->failed_bytes)
      a->failed_bytes = bytes;
  }
  pthread_mutex_unlock(&a->mu);
  return p;
}

/* The index of p among the run's allocations, or -1. */
static ptrdiff_t find_alloc(const run_alloc *a, const void *p) {
  for (size_t i = 0; i < a->n; ++i)
    if (a->ptrs[i] == p)
      return (ptrdiff_t)i;
  return -1;
}

static gatec_status *check_output(const gatec_model *m, uint32_t j, void *data,
                                  const int64_t *shape, run_alloc *a,
                                  bindings *bs) {
  const gatec_value_info *info = &m->outputs[j];
  int32_t rank = info->rank;
  size_t before = bs->n;
  bool negative = false;
  for (int32_t d = 0; d < rank; ++d)
    negative |= shape[d] < 0;
  int32_t bad_dim, intra_dim;
  if (negative ||
      !match_shape(info, "output", rank, shape, bs, &bad_dim, &intra_dim)) {
    bs->n = before;
    gatec_rt_str s = {0};
    gatec_rt_str_appendf(&s, "model '%s' returned output '%s' with %sshape ",
                         m->path, info->name, negative ? "invalid " : "");
    gatec_rt_str_append_shape(&s, rank, shape);
    gatec_rt_str_appendf(&s, ", but its signature says ");
    append_expected(&s, info, bs, before);
    gatec_status *st =
        gatec_rt_status(GATEC_STATUS_MODEL_ERROR, "%s", gatec_rt_str_get(&s));
    gatec_rt_str_free(&s);
    return st;
  }
  ptrdiff_t k = data ? find_alloc(a, data) : -1;
  if (k < 0)
    return gatec_rt_status(GATEC_STATUS_MODEL_ERROR,
                           "model '%s' returned output '%s' in %s", m->path,
                           info->name,
                           data ? "a buffer it did not get from the "
                                  "runtime's allocator"
                                : "no buffer (NULL)");
  size_t bytes;
  gatec_status *st =
      gatec_rt_check_shape(info->name, info->dtype, rank, shape, NULL, &bytes);
  if (st) {
    gatec_status_destroy(st);
    return gatec_rt_status(GATEC_STATUS_MODEL_ERROR,
                           "model '%s' returned output '%s' with a shape too "
                           "large to address",
                           m->path, info->name);
  }
  if (a->sizes[k] < bytes)
    return gatec_rt_status(GATEC_STATUS_MODEL_ERROR,
                           "model '%s' returned output '%s' in a buffer of "
                           "%zu bytes, but its shape needs %zu bytes",
                           m->path, info->name, a->sizes[k], bytes);
  return NULL;
}

/* Runs the model on inputs already in signature order (all non-NULL). */
static gatec_status *run_ordered(gatec_model *m,
                                 const gatec_tensor *const *inputs,
                                 gatec_tensor **outputs) {
  uint32_t ni = m->num_inputs, no = m->num_outputs;
  for (uint32_t j = 0; j < no; ++j)
    outputs[j] = NULL;

  gatec_status *st = NULL;
  binding *bstore = malloc(sizeof(binding) * (m->total_rank + 1));
  const void **in_data = calloc(ni + 1, sizeof(void *));
  const int64_t **in_shapes = calloc(ni + 1, sizeof(int64_t *));
  void **copies = calloc(ni + 1, sizeof(void *));
  void **out_data = calloc(no + 1, sizeof(void *));
  int64_t **out_shapes = calloc(no + 1, sizeof(int64_t *));
  int64_t *out_dims = malloc(sizeof(int64_t) * (m->total_rank + 1));
  run_alloc a = {.n = 0};
  pthread_mutex_init(&a.mu, NULL);
  char err[1024];
  err[0] = '\0';
  if (!bstore || !in_data || !in_shapes || !copies || !out_data ||
      !out_shapes || !out_dims) {
    st = gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                         "out of memory: cannot prepare a run of model '%s'",
                         m->path);
    goto done;
  }
  bindings bs = {bstore, 0};

  /* Validate every input before touching any data. */
  for (uint32_t i = 0; i < ni; ++i)
    if ((st = check_input(&m->inputs[i], inputs[i], &bs)))
      goto done;

  /* Dense buffers for the model. */
  for (uint32_t i = 0; i < ni; ++i) {
    const gatec_tensor *t = inputs[i];
    in_shapes[i] = gatec_tensor_shape(t);
    if (gatec_tensor_is_contiguous(t)) {
      in_data[i] = gatec_tensor_data(t);
      continue;
    }
    size_t bytes = gatec_tensor_size_bytes(t);
    copies[i] = gatec_rt_aligned_alloc(bytes, 64);
    if (!copies[i] || !gatec_rt_copy_to_dense(t, copies[i])) {
      st = gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                           "out of memory: cannot allocate %zu bytes for a "
                           "dense copy of input '%s'",
                           bytes, m->inputs[i].name);
      goto done;
    }
    in_data[i] = copies[i];
  }
  size_t off = 0;
  for (uint32_t j = 0; j < no; ++j) {
    out_shapes[j] = out_dims + off;
    for (int32_t d = 0; d < m->outputs[j].rank; ++d)
      out_dims[off + (size_t)d] = -1;
    off += (size_t)m->outputs[j].rank;
  }

  int rc = m->abi->run(
      (const void *const *)in_data, (const int64_t *const *)in_shapes, out_data,
      (int64_t *const *)out_shapes, run_alloc_fn, &a, err, sizeof(err));
  err[sizeof(err) - 1] = '\0';
  if (a.failed) {
    st = gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                         "out of memory: cannot allocate %zu bytes for an "
                         "output of model '%s'%s%s",
                         a.failed_bytes, m->path, err[0] ? ": " : "", err);
    goto done;
  }
  if (a.bad_align) {
    st = gatec_rt_status(GATEC_STATUS_MODEL_ERROR,
                         "model '%s' asked for an alignment of %zu bytes, "
                         "not a power of two",
                         m->path, a.bad_align);
    goto done;
  }
  if (rc == 2) { /* an allocation inside the model failed */
    st = gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                         "out of memory in model '%s'%s%s", m->path,
                         err[0] ? ": " : "", err);
    goto done;
  }
  if (rc != 0) {
    if (err[0])
      st = gatec_rt_status(GATEC_STATUS_MODEL_ERROR, "model '%s' failed: %s",
                           m->path, err);
    else
      st = gatec_rt_status(GATEC_STATUS_MODEL_ERROR,
                           "model '%s' failed with code %d and no message",
                           m->path, rc);
    goto done;
  }
  /* Check what the model returned against its signature. */
  for (uint32_t j = 0; j < no; ++j) {
    if ((st = check_output(m, j, out_data[j], out_shapes[j], &a, &bs)))
      goto done;
    for (uint32_t k = 0; k < j; ++k)
      if (out_data[k] == out_data[j]) {
        st = gatec_rt_status(GATEC_STATUS_MODEL_ERROR,
                             "model '%s' returned outputs '%s' and '%s' in "
                             "the same buffer",
                             m->path, m->outputs[k].name, m->outputs[j].name);
        goto done;
      }
  }
  for (uint32_t j = 0; j < no; ++j) {
    outputs[j] = gatec_rt_tensor_adopt(out_data[j], m->outputs[j].dtype,
                                       m->outputs[j].rank, out_shapes[j]);
    if (!outputs[j]) {
      st = gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY,
                           "out of memory: cannot allocate an output tensor");
      goto done;
    }
    /* Now owned by the tensor. */
    a.ptrs[find_alloc(&a, out_data[j])] = NULL;
  }

done:
  if (st) {
    for (uint32_t j = 0; j < no; ++j) {
      if (outputs[j]) {
        gatec_tensor_destroy(outputs[j]); /* frees its buffer */
        outputs[j] = NULL;
      }
    }
  }
  /* Whatever the model allocated and did not return (or everything, on
   * failure). Buffers adopted by output tensors were set to NULL above; on
   * failure those tensors were destroyed with their buffers. */
  for (size_t k = 0; k < a.n; ++k)
    free(a.ptrs[k]);
  free(a.ptrs);
  free(a.sizes);
  pthread_mutex_destroy(&a.mu);
  if (copies)
    for (uint32_t i = 0; i < ni; ++i)
      free(copies[i]);
  free(copies);
  free(bstore);
  free(in_data);
  free(in_shapes);
  free(out_data);
  free(out_shapes);
  free(out_dims);
  return st;
}

static void append_input_list(gatec_rt_str *s, const gatec_model *m) {
  for (uint32_t i = 0; i < m->num_inputs; ++i)
    gatec_rt_str_appendf(s, "%s%s", i ? ", " : "", m->inputs[i].name);
}

static const char *plural(uint32_t n) { return n == 1 ? "" : "s"; }

gatec_status *gatec_model_run(gatec_model *m, const gatec_tensor *const *inputs,
                              size_t num_inputs, gatec_tensor **outputs) {
  if (!m || (!outputs && gatec_model_num_outputs(m) > 0) ||
      (!inputs && num_inputs > 0))
    return gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "gatec_model_run: %s is NULL",
                           !m                        ? "the model"
                           : (!inputs && num_inputs) ? "inputs"
                                                     : "outputs");
  for (uint32_t j = 0; j < m->num_outputs; ++j)
    outputs[j] = NULL;
  if (num_inputs != m->num_inputs) {
    gatec_rt_str s = {0};
    append_input_list(&s, m);
    gatec_status *st;
    if (num_inputs < m->num_inputs)
      st = gatec_rt_status(GATEC_STATUS_MISSING_INPUT,
                           "missing input '%s': the model takes %u input%s "
                           "(%s), %zu given",
                           m->inputs[num_inputs].name, m->num_inputs,
                           plural(m->num_inputs), gatec_rt_str_get(&s),
                           num_inputs);
    else
      st = gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "too many inputs: the model takes %u input%s (%s), "
                           "%zu given",
                           m->num_inputs, plural(m->num_inputs),
                           gatec_rt_str_get(&s), num_inputs);
    gatec_rt_str_free(&s);
    return st;
  }
  for (uint32_t i = 0; i < m->num_inputs; ++i)
    if (!inputs[i])
      return gatec_rt_status(GATEC_STATUS_MISSING_INPUT,
                             "missing input '%s': input %u is NULL",
                             m->inputs[i].name, i);
  return run_ordered(m, inputs, outputs);
}

gatec_status *gatec_model_run_named(gatec_model *m, const char *const *names,
                                    const gatec_tensor *const *inputs,
                                    size_t num_inputs, gatec_tensor **outputs) {
  if (!m || (!outputs && gatec_model_num_outputs(m) > 0) ||
      ((!inputs || !names) && num_inputs > 0))
    return gatec_rt_status(
        GATEC_STATUS_INVALID_ARGUMENT, "gatec_model_run_named: %s is NULL",
        !m                                             ? "the model"
        : (!outputs && gatec_model_num_outputs(m) > 0) ? "outputs"
        : !names                                       ? "names"
                                                       : "inputs");
  for (uint32_t j = 0; j < m->num_outputs; ++j)
    outputs[j] = NULL;
  const gatec_tensor **ordered =
      calloc(m->num_inputs + 1, sizeof(gatec_tensor *));
  if (!ordered)
    return gatec_rt_status(GATEC_STATUS_OUT_OF_MEMORY, "out of memory");
  gatec_status *st = NULL;
  for (size_t i = 0; i < num_inputs && !st; ++i) {
    if (!names[i]) {
      st = gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "gatec_model_run_named: name %zu is NULL", i);
      break;
    }
    int32_t k = gatec_model_input_index(m, names[i]);
    if (k < 0) {
      gatec_rt_str s = {0};
      append_input_list(&s, m);
      st = gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "unknown input '%s': the model's input%s %s %s",
                           names[i], plural(m->num_inputs),
                           m->num_inputs == 1 ? "is" : "are",
                           m->num_inputs ? gatec_rt_str_get(&s) : "none");
      gatec_rt_str_free(&s);
    } else if (ordered[k]) {
      st = gatec_rt_status(GATEC_STATUS_INVALID_ARGUMENT,
                           "input '%s' given twice", names[i]);
    } else if (!inputs[i]) {
      st = gatec_rt_status(GATEC_STATUS_MISSING_INPUT,
                           "missing input '%s': its tensor is NULL", names[i]);
    } else {
      ordered[k] = inputs[i];
    }
  }
  for (uint32_t i = 0; i < m->num_inputs && !st; ++i) {
    if (ordered[i])
      continue;
    gatec_rt_str s = {0};
    append_input_list(&s, m);
    gatec_rt_str given = {0};
    for (size_t g = 0; g < num_inputs; ++g)
      gatec_rt_str_appendf(&given, "%s%s", g ? ", " : "", names[g]);
    st = gatec_rt_status(GATEC_STATUS_MISSING_INPUT,
                         "missing input '%s': the model takes %u input%s "
                         "(%s), %zu given%s%s%s",
                         m->inputs[i].name, m->num_inputs,
                         plural(m->num_inputs), gatec_rt_str_get(&s),
                         num_inputs, num_inputs ? " (" : "",
                         gatec_rt_str_get(&given), num_inputs ? ")" : "");
    gatec_rt_str_free(&s);
    gatec_rt_str_free(&given);
  }
  if (!st)
    st = run_ordered(m, ordered, outputs);
  free(ordered);
  return st;
}
