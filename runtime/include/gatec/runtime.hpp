//===- gatec/runtime.hpp - C++ convenience layer over gatec/runtime.h -----===//
//
// RAII wrappers for the C API: gatec::Tensor and gatec::Model own their C
// objects; every fallible call returns a gatec::Status or a gatec::Expected<T>
// (a value or a Status), never throws. Header-only; link with gatec_runtime.
// Builds with -fno-exceptions.
//
//   auto model = gatec::Model::load("model.so");
//   if (!model) { std::cerr << model.status().message() << "\n"; return 1; }
//   auto x = gatec::Tensor::copyOf<float>({2, 8, 64}, data, 2 * 8 * 64);
//   if (!x) ...
//   auto outs = model->run({&*x});
//   if (!outs) { std::cerr << outs.status().message() << "\n"; return 1; }
//   const float *y = (*outs)[0].data<float>();
//
// Thread safety is that of the C API: Model::run may be called from several
// threads at once on one Model.
//===----------------------------------------------------------------------===//
#ifndef GATEC_RUNTIME_HPP
#define GATEC_RUNTIME_HPP

#include "gatec/runtime.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gatec {

/// The outcome of an operation: ok, or a code and a message.
class Status {
public:
  Status() = default;
  Status(gatec_status_code code, std::string message)
      : code_(code), message_(std::move(message)) {}

  /// Takes ownership of a C status (NULL means ok) and frees it.
  static Status fromC(gatec_status *s) {
    Status r;
    if (s) {
      r.code_ = gatec_status_get_code(s);
      r.message_ = gatec_status_message(s);
      gatec_status_destroy(s);
    }
    return r;
  }

  bool ok() const { return code_ == GATEC_STATUS_OK; }
  gatec_status_code code() const { return code_; }
  const std::string &message() const { return message_; }
  const char *codeName() const { return gatec_status_code_name(code_); }

private:
  gatec_status_code code_ = GATEC_STATUS_OK;
  std::string message_;
};

/// A T or the Status that explains why there is none. Accessing the value of
/// an error is a programming error: it prints the status and aborts (like
/// std::optional::value without exceptions); test with ok() first.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Status status) : status_(std::move(status)) {
    if (status_.ok())
      status_ = Status(GATEC_STATUS_INVALID_ARGUMENT,
                       "gatec::Expected made from an ok Status and no value");
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  /// The error (an ok Status if there is a value).
  const Status &status() const { return status_; }

  T &value() & {
    check();
    return *value_;
  }
  const T &value() const & {
    check();
    return *value_;
  }
  T &&value() && {
    check();
    return std::move(*value_);
  }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

private:
  void check() const {
    if (!value_) {
      std::fprintf(stderr, "gatec::Expected: no value: %s\n",
                   status_.message().c_str());
      std::abort();
    }
  }
  std::optional<T> value_;
  Status status_;
};

/// The gatec_dtype of a C++ element type.
template <typename T> struct DTypeOf;
#define GATEC_DTYPE_OF(T, D)                                                   \
  template <> struct DTypeOf<T> { static constexpr gatec_dtype value = D; };
GATEC_DTYPE_OF(float, GATEC_DTYPE_F32)
GATEC_DTYPE_OF(double, GATEC_DTYPE_F64)
GATEC_DTYPE_OF(int8_t, GATEC_DTYPE_I8)
GATEC_DTYPE_OF(int16_t, GATEC_DTYPE_I16)
GATEC_DTYPE_OF(int32_t, GATEC_DTYPE_I32)
GATEC_DTYPE_OF(int64_t, GATEC_DTYPE_I64)
GATEC_DTYPE_OF(uint8_t, GATEC_DTYPE_U8)
GATEC_DTYPE_OF(uint16_t, GATEC_DTYPE_U16)
GATEC_DTYPE_OF(uint32_t, GATEC_DTYPE_U32)
GATEC_DTYPE_OF(uint64_t, GATEC_DTYPE_U64)
GATEC_DTYPE_OF(bool, GATEC_DTYPE_BOOL)
#undef GATEC_DTYPE_OF
static_assert(sizeof(bool) == 1, "gatec's bool is one byte");

/// An owning handle to a gatec_tensor (which itself owns or borrows its
/// buffer). Move-only.
class Tensor {
public:
  Tensor() = default;
  /// Takes ownership of `t`.
  explicit Tensor(gatec_tensor *t) : t_(t) {}
  Tensor(Tensor &&o) noexcept : t_(o.release()) {}
  Tensor &operator=(Tensor &&o) noexcept {
    if (this != &o) {
      gatec_tensor_destroy(t_);
      t_ = o.release();
    }
    return *this;
  }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;
  ~Tensor() { gatec_tensor_destroy(t_); }

  /// A new zero-filled dense tensor owning its buffer.
  static Expected<Tensor> create(gatec_dtype dtype,
                                 const std::vector<int64_t> &shape,
                                 gatec_device device = GATEC_DEVICE_CPU) {
    gatec_tensor *t = nullptr;
    Status st = Status::fromC(gatec_tensor_create(
        dtype, static_cast<int32_t>(shape.size()), shape.data(), device, &t));
    if (!st.ok())
      return st;
    return Tensor(t);
  }

  /// A tensor borrowing `data` (which must outlive it); empty strides mean
  /// dense row-major.
  static Expected<Tensor> wrap(void *data, gatec_dtype dtype,
                               const std::vector<int64_t> &shape,
                               const std::vector<int64_t> &strides = {},
                               gatec_device device = GATEC_DEVICE_CPU) {
    if (!strides.empty() && strides.size() != shape.size())
      return Status(GATEC_STATUS_INVALID_ARGUMENT,
                    "gatec::Tensor::wrap: " + std::to_string(shape.size()) +
                        " dims but " + std::to_string(strides.size()) +
                        " strides");
    gatec_tensor *t = nullptr;
    Status st = Status::fromC(gatec_tensor_wrap(
        data, dtype, static_cast<int32_t>(shape.size()), shape.data(),
        strides.empty() ? nullptr : strides.data(), device, &t));
    if (!st.ok())
      return st;
    return Tensor(t);
  }

  /// A new owning tensor holding a copy of `count` values (which must be the
  /// number of elements of `shape`).
  template <typename T>
  static Expected<Tensor> copyOf(const std::vector<int64_t> &shape,
                                 const T *values, size_t count) {
    Expected<Tensor> t = create(DTypeOf<T>::value, shape);
    if (!t)
      return t;
    if (static_cast<size_t>(t->numElements()) != count)
      return Status(GATEC_STATUS_INVALID_ARGUMENT,
                    "gatec::Tensor::copyOf: the shape has " +
                        std::to_string(t->numElements()) + " elements, " +
                        std::to_string(count) + " values given");
    if (count)
      std::memcpy(t->data(), values, count * sizeof(T));
    return t;
  }

  /// A dense owning copy.
  Expected<Tensor> copyDense() const {
    gatec_tensor *c = nullptr;
    Status st = Status::fromC(gatec_tensor_copy_dense(t_, &c));
    if (!st.ok())
      return st;
    return Tensor(c);
  }

  bool valid() const { return t_ != nullptr; }
  gatec_tensor *get() const { return t_; }
  gatec_tensor *release() {
    gatec_tensor *t = t_;
    t_ = nullptr;
    return t;
  }

  void *data() const { return gatec_tensor_data(t_); }
  /// The data as T*, or nullptr if T is not the tensor's element type.
  template <typename T> T *data() const {
    return DTypeOf<T>::value == dtype() ? static_cast<T *>(data()) : nullptr;
  }
  gatec_dtype dtype() const { return gatec_tensor_dtype(t_); }
  int32_t rank() const { return gatec_tensor_rank(t_); }
  std::vector<int64_t> shape() const {
    const int64_t *s = gatec_tensor_shape(t_);
    return s ? std::vector<int64_t>(s, s + rank()) : std::vector<int64_t>();
  }
  std::vector<int64_t> strides() const {
    const int64_t *s = gatec_tensor_strides(t_);
    return s ? std::vector<int64_t>(s, s + rank()) : std::vector<int64_t>();
  }
  gatec_device device() const { return gatec_tensor_device(t_); }
  int64_t numElements() const { return gatec_tensor_num_elements(t_); }
  size_t sizeBytes() const { return gatec_tensor_size_bytes(t_); }
  bool isContiguous() const { return gatec_tensor_is_contiguous(t_) != 0; }
  bool ownsData() const { return gatec_tensor_owns_data(t_) != 0; }

private:
  gatec_tensor *t_ = nullptr;
};

/// One input or output of a model's signature.
struct ValueInfo {
  std::string name;
  gatec_dtype dtype = GATEC_DTYPE_INVALID;
  std::vector<int64_t> dims;          ///< -1 = dynamic
  std::vector<std::string> dimParams; ///< "" = none
  std::string shapeStr;               ///< "[batch, seq, 64]"

  static ValueInfo fromC(const gatec_value_info *v) {
    ValueInfo r;
    if (!v)
      return r;
    r.name = v->name;
    r.dtype = v->dtype;
    for (int32_t d = 0; d < v->rank; ++d) {
      r.dims.push_back(v->dims[d]);
      r.dimParams.push_back(v->dim_params[d] ? v->dim_params[d] : "");
    }
    size_t n = gatec_value_info_shape_str(v, nullptr, 0);
    r.shapeStr.resize(n + 1);
    gatec_value_info_shape_str(v, &r.shapeStr[0], n + 1);
    r.shapeStr.resize(n);
    return r;
  }
};

/// A loaded model library. Move-only; unloads on destruction.
class Model {
public:
  Model() = default;
  explicit Model(gatec_model *m) : m_(m) {}
  Model(Model &&o) noexcept : m_(o.m_) { o.m_ = nullptr; }
  Model &operator=(Model &&o) noexcept {
    if (this != &o) {
      gatec_model_destroy(m_);
      m_ = o.m_;
      o.m_ = nullptr;
    }
    return *this;
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { gatec_model_destroy(m_); }

  static Expected<Model> load(const std::string &path,
                              gatec_device device = GATEC_DEVICE_CPU) {
    gatec_model *m = nullptr;
    Status st = Status::fromC(gatec_model_load(path.c_str(), device, &m));
    if (!st.ok())
      return st;
    return Model(m);
  }

  gatec_model *get() const { return m_; }
  std::string path() const { return str(gatec_model_path(m_)); }
  std::string target() const { return str(gatec_model_target(m_)); }
  uint32_t abiVersion() const { return gatec_model_abi_version(m_); }
  size_t numInputs() const { return gatec_model_num_inputs(m_); }
  size_t numOutputs() const { return gatec_model_num_outputs(m_); }
  ValueInfo input(size_t i) const {
    return ValueInfo::fromC(gatec_model_input(m_, static_cast<uint32_t>(i)));
  }
  ValueInfo output(size_t i) const {
    return ValueInfo::fromC(gatec_model_output(m_, static_cast<uint32_t>(i)));
  }
  std::vector<ValueInfo> inputs() const {
    std::vector<ValueInfo> r;
    for (size_t i = 0; i < numInputs(); ++i)
      r.push_back(input(i));
    return r;
  }
  std::vector<ValueInfo> outputs() const {
    std::vector<ValueInfo> r;
    for (size_t i = 0; i < numOutputs(); ++i)
      r.push_back(output(i));
    return r;
  }
  /// -1 if there is no such input/output.
  int inputIndex(const std::string &name) const {
    return gatec_model_input_index(m_, name.c_str());
  }
  int outputIndex(const std::string &name) const {
    return gatec_model_output_index(m_, name.c_str());
  }

  /// Runs with inputs in signature order (see gatec_model_run).
  Expected<std::vector<Tensor>>
  run(const std::vector<const Tensor *> &inputs) const {
    std::vector<const gatec_tensor *> in;
    for (const Tensor *t : inputs)
      in.push_back(t ? t->get() : nullptr);
    std::vector<gatec_tensor *> out(numOutputs() + 1, nullptr);
    Status st =
        Status::fromC(gatec_model_run(m_, in.data(), in.size(), out.data()));
    return wrapOutputs(st, out);
  }

  /// Runs with inputs keyed by name (see gatec_model_run_named).
  Expected<std::vector<Tensor>> runNamed(
      const std::vector<std::pair<std::string, const Tensor *>> &inputs) const {
    std::vector<const char *> names;
    std::vector<const gatec_tensor *> in;
    for (const auto &p : inputs) {
      names.push_back(p.first.c_str());
      in.push_back(p.second ? p.second->get() : nullptr);
    }
    std::vector<gatec_tensor *> out(numOutputs() + 1, nullptr);
    Status st = Status::fromC(gatec_model_run_named(m_, names.data(), in.data(),
                                                    in.size(), out.data()));
    return wrapOutputs(st, out);
  }

private:
  static std::string str(const char *s) { return s ? s : ""; }
  Expected<std::vector<Tensor>>
  wrapOutputs(Status &st, std::vector<gatec_tensor *> &out) const {
    if (!st.ok())
      return st;
    std::vector<Tensor> r;
    for (size_t j = 0; j < numOutputs(); ++j)
      r.emplace_back(out[j]);
    return r;
  }
  gatec_model *m_ = nullptr;
};

} // namespace gatec

#endif // GATEC_RUNTIME_HPP
