//===- TensorFiles.cpp - gatec-run's tensor formats -----------------------===//
#include "TensorFiles.h"

#include "onnx/onnx_pb.h" // onnx-ml.pb.h with ONNX_API defined

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/stat.h>

using gatec::Expected;
using gatec::Status;
using gatec::Tensor;

namespace gatecrun {

static Status error(const std::string &message) {
  return Status(GATEC_STATUS_INVALID_ARGUMENT, message);
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static Status readFile(const std::string &path, std::string &out) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return error("cannot read '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return error("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return error("cannot read '" + path + "'");
  out = ss.str();
  return Status();
}

static Status writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return error("cannot write '" + path + "': " + std::strerror(errno));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out)
    return error("cannot write '" + path + "'");
  return Status();
}

//===--- Elements
//----------------------------------------------------------===//

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                            : (sign | ((exp + 112) << 23) | (mant << 13));
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN: keep it a quiet NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // rounds to infinity (65520 and up)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (a < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    float v = std::fabs(f) * 16777216.0f; // exact: * 2^24
    return static_cast<uint16_t>(sign |
                                 static_cast<uint16_t>(std::nearbyint(v)));
  }
  uint32_t r = (a + 0xfffu + ((a >> 13) & 1u)) >> 13; // round to nearest even
  return static_cast<uint16_t>(sign | (r - (112u << 10)));
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

template <typename T> static T load(const void *data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char *>(data) + i * sizeof(T), sizeof(T));
  return v;
}

double elementAsDouble(const void *data, gatec_dtype dtype, int64_t i) {
  switch (dtype) {
  case GATEC_DTYPE_F32:
    return load<float>(data, i);
  case GATEC_DTYPE_F16:
    return halfToFloat(load<uint16_t>(data, i));
  case GATEC_DTYPE_BF16:
    return bf16ToFloat(load<uint16_t>(data, i));
  case GATEC_DTYPE_F64:
    return load<double>(data, i);
  case GATEC_DTYPE_I8:
    return load<int8_t>(data, i);
  case GATEC_DTYPE_I16:
    return load<int16_t>(data, i);
  case GATEC_DTYPE_I32:
    return load<int32_t>(data, i);
  case GATEC_DTYPE_I64:
    return static_cast<double>(load<int64_t>(data, i));
  case GATEC_DTYPE_U8:
    return load<uint8_t>(data, i);
  case GATEC_DTYPE_U16:
    return load<uint16_t>(data, i);
  case GATEC_DTYPE_U32:
    return load<uint32_t>(data, i);
  case GATEC_DTYPE_U64:
    return static_cast<double>(load<uint64_t>(data, i));
  case GATEC_DTYPE_BOOL:
    return load<uint8_t>(data, i) ? 1.0 : 0.0;
  case GATEC_DTYPE_INVALID:
    break;
  }
  return 0.0;
}

template <typename T> static std::string shortest(T v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

/// The shortest decimal text that reads back (through float) as the same
/// 16-bit float.
static std::string shortest16(uint16_t bits, bool bf16) {
  float f = bf16 ? bf16ToFloat(bits) : halfToFloat(bits);
  if (std::isnan(f) || std::isinf(f))
    return shortest(f);
  char buf[64];
  for (int p = 1; p < 10; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*g", p, static_cast<double>(f));
    float back = std::strtof(buf, nullptr);
    if ((bf16 ? floatToBf16(back) : floatToHalf(back)) == bits)
      return buf;
  }
  return shortest(f);
}

std::string formatElement(const void *data, gatec_dtype dtype, int64_t i) {
  switch (dtype) {
  case GATEC_DTYPE_F32:
    return shortest(load<float>(data, i));
  case GATEC_DTYPE_F16:
    return shortest16(load<uint16_t>(data, i), false);
  case GATEC_DTYPE_BF16:
    return shortest16(load<uint16_t>(data, i), true);
  case GATEC_DTYPE_F64:
    return shortest(load<double>(data, i));
  case GATEC_DTYPE_I8:
    return std::to_string(load<int8_t>(data, i));
  case GATEC_DTYPE_I16:
    return std::to_string(load<int16_t>(data, i));
  case GATEC_DTYPE_I32:
    return std::to_string(load<int32_t>(data, i));
  case GATEC_DTYPE_I64:
    return std::to_string(load<int64_t>(data, i));
  case GATEC_DTYPE_U8:
    return std::to_string(load<uint8_t>(data, i));
  case GATEC_DTYPE_U16:
    return std::to_string(load<uint16_t>(data, i));
  case GATEC_DTYPE_U32:
    return std::to_string(load<uint32_t>(data, i));
  case GATEC_DTYPE_U64:
    return std::to_string(load<uint64_t>(data, i));
  case GATEC_DTYPE_BOOL:
    return load<uint8_t>(data, i) ? "true" : "false";
  case GATEC_DTYPE_INVALID:
    break;
  }
  return "?";
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

std::string formatIndex(const std::vector<int64_t> &shape, int64_t i) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return formatShape(idx);
}

//===--- Inline tensors
//----------------------------------------------------===//

static bool parseInt64(const std::string &s, int64_t &v) {
  if (s.empty())
    return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parseTypeSpec(const std::string &spec, std::vector<int64_t> &shape,
                   gatec_dtype &dtype) {
  shape.clear();
  size_t start = 0;
  for (;;) {
    size_t x = spec.find('x', start);
    if (x == std::string::npos)
      break;
    int64_t d;
    if (!parseInt64(spec.substr(start, x - start), d) || d < 0)
      return false;
    shape.push_back(d);
    start = x + 1;
  }
  dtype = gatec_dtype_from_name(spec.substr(start).c_str());
  return dtype != GATEC_DTYPE_INVALID;
}

/// Parses one value of `dtype` into `out` (its element size).
static bool parseValue(const std::string &tok, gatec_dtype dtype, void *out,
                       std::string &why) {
  auto asFloat = [&](double &v) {
    const char *b = tok.c_str();
    char *end = nullptr;
    errno = 0;
    v = std::strtod(b, &end);
    if (end == b || *end != '\0') {
      why = "not a number";
      return false;
    }
    return true;
  };
  auto asInt = [&](int64_t lo, int64_t hi, int64_t &v) {
    if (!parseInt64(tok, v)) {
      why = "not an integer";
      return false;
    }
    if (v < lo || v > hi) {
      why = "out of range";
      return false;
    }
    return true;
  };
  double d;
  int64_t i;
  switch (dtype) {
  case GATEC_DTYPE_F32: {
    if (!asFloat(d))
      return false;
    float f = static_cast<float>(d);
    std::memcpy(out, &f, 4);
    return true;
  }
  case GATEC_DTYPE_F64:
    if (!asFloat(d))
      return false;
    std::memcpy(out, &d, 8);
    return true;
  case GATEC_DTYPE_F16:
  case GATEC_DTYPE_BF16: {
    if (!asFloat(d))
      return false;
    float f = static_cast<float>(d);
    uint16_t h = dtype == GATEC_DTYPE_F16 ? floatToHalf(f) : floatToBf16(f);
    std::memcpy(out, &h, 2);
    return true;
  }
  case GATEC_DTYPE_BOOL: {
    uint8_t b;
    if (tok == "1" || tok == "true")
      b = 1;
    else if (tok == "0" || tok == "false")
      b = 0;
    else {
      why = "not a bool (0, 1, true, false)";
      return false;
    }
    std::memcpy(out, &b, 1);
    return true;
  }
  case GATEC_DTYPE_U64: {
    uint64_t u;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), u);
    if (tok.empty() || r.ptr != tok.data() + tok.size()) {
      why = "not an unsigned integer";
      return false;
    }
    if (r.ec != std::errc()) {
      why = "out of range";
      return false;
    }
    std::memcpy(out, &u, 8);
    return true;
  }
#define INT_CASE(D, T)                                                         \
  case D: {                                                                    \
    if (!asInt(static_cast<int64_t>(std::numeric_limits<T>::min()),            \
               static_cast<int64_t>(std::numeric_limits<T>::max()), i))        \
      return false;                                                            \
    T v = static_cast<T>(i);                                                   \
    std::memcpy(out, &v, sizeof(T));                                           \
    return true;                                                               \
  }
    INT_CASE(GATEC_DTYPE_I8, int8_t)
    INT_CASE(GATEC_DTYPE_I16, int16_t)
    INT_CASE(GATEC_DTYPE_I32, int32_t)
    INT_CASE(GATEC_DTYPE_I64, int64_t)
    INT_CASE(GATEC_DTYPE_U8, uint8_t)
    INT_CASE(GATEC_DTYPE_U16, uint16_t)
    INT_CASE(GATEC_DTYPE_U32, uint32_t)
#undef INT_CASE
  case GATEC_DTYPE_INVALID:
    break;
  }
  why = "invalid dtype";
  return false;
}

Expected<Tensor> parseInlineTensor(const std::string &type,
                                   const std::string &values) {
  std::vector<int64_t> shape;
  gatec_dtype dtype;
  if (!parseTypeSpec(type, shape, dtype))
    return error("invalid tensor type '" + type +
                 "': expected SHAPExDTYPE such as 2x3xf32 (or f32 for a "
                 "scalar); dtypes: f32 f16 bf16 f64 i8 i16 i32 i64 u8 u16 u32 "
                 "u64 bool");
  std::vector<std::string> toks;
  std::string cur;
  for (char c : values) {
    if (c == ' ' || c == ',' || c == '\t' || c == '\n') {
      if (!cur.empty())
        toks.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    toks.push_back(cur);
  Expected<Tensor> t = Tensor::create(dtype, shape);
  if (!t)
    return t;
  int64_t n = t->numElements();
  size_t es = gatec_dtype_size(dtype);
  bool splat = toks.size() == 1 && n > 1;
  if (!splat && static_cast<int64_t>(toks.size()) != n)
    return error("inline tensor " + type + ": its shape has " +
                 std::to_string(n) + " element" + (n == 1 ? "" : "s") + ", " +
                 std::to_string(toks.size()) + " value" +
                 (toks.size() == 1 ? "" : "s") + " given");
  char *data = static_cast<char *>(t->data());
  for (size_t k = 0; k < toks.size(); ++k) {
    std::string why;
    if (!parseValue(toks[k], dtype, data + k * es, why))
      return error("inline tensor " + type + ": value " + std::to_string(k) +
                   " '" + toks[k] + "' is " + why + " for " +
                   gatec_dtype_name(dtype));
  }
  if (splat)
    for (int64_t k = 1; k < n; ++k)
      std::memcpy(data + k * es, data, es);
  return t;
}

/// The dense byte size of a shape, or false if it overflows.
static bool denseBytes(const std::vector<int64_t> &shape, gatec_dtype dtype,
                       uint64_t &bytes) {
  uint64_t n = gatec_dtype_size(dtype);
  for (int64_t d : shape)
    if (d == 0) {
      bytes = 0;
      return true;
    }
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n))
      return false;
  bytes = n;
  return true;
}

//===--- .npy
//---------------------------------------------------------------===//

static const char npyMagic[] = "\x93NUMPY";

static const struct {
  const char *descr; // without the byte-order character
  gatec_dtype dtype;
} npyTypes[] = {
    {"f4", GATEC_DTYPE_F32}, {"f2", GATEC_DTYPE_F16}, {"f8", GATEC_DTYPE_F64},
    {"i1", GATEC_DTYPE_I8},  {"i2", GATEC_DTYPE_I16}, {"i4", GATEC_DTYPE_I32},
    {"i8", GATEC_DTYPE_I64}, {"u1", GATEC_DTYPE_U8},  {"u2", GATEC_DTYPE_U16},
    {"u4", GATEC_DTYPE_U32}, {"u8", GATEC_DTYPE_U64}, {"b1", GATEC_DTYPE_BOOL},
};

namespace {
/// The header of a .npy file: a Python dict literal.
struct NpyHeaderParser {
  explicit NpyHeaderParser(const std::string &text) : s(text) {}
  const std::string &s;
  size_t p = 0;

  void ws() {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n'))
      ++p;
  }
  bool eat(char c) {
    ws();
    if (p < s.size() && s[p] == c) {
      ++p;
      return true;
    }
    return false;
  }
  bool str(std::string &out) {
    ws();
    if (p >= s.size() || (s[p] != '\'' && s[p] != '"'))
      return false;
    char q = s[p++];
    size_t e = s.find(q, p);
    if (e == std::string::npos)
      return false;
    out = s.substr(p, e - p);
    p = e + 1;
    return true;
  }
  bool word(std::string &out) {
    ws();
    size_t b = p;
    while (p < s.size() &&
           (std::isalnum(static_cast<unsigned char>(s[p])) || s[p] == '_'))
      ++p;
    out = s.substr(b, p - b);
    return p > b;
  }
  /// A Python tuple of non-negative integers: `()`, `(3,)`, `(2, 3)` or
  /// `(2, 3,)`. `(3)` is the integer 3, not a tuple: refused, as numpy does.
  bool tuple(std::vector<int64_t> &out) {
    if (!eat('('))
      return false;
    out.clear();
    for (;;) {
      if (eat(')'))
        return true;
      std::string w;
      int64_t v;
      if (!word(w) || !parseInt64(w, v) || v < 0)
        return false;
      out.push_back(v);
      if (!eat(','))
        return out.size() > 1 && eat(')');
    }
  }
  /// After the dict: nothing but the padding (spaces) and newlines.
  bool atEnd() {
    while (p < s.size() &&
           (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r'))
      ++p;
    return p == s.size();
  }
};

/// The header as a message shows it: without the padding and the final
/// newline, non-printable bytes escaped, at most 200 characters.
static std::string printableHeader(const std::string &raw) {
  size_t end = raw.find_last_not_of(" \n");
  std::string out;
  for (size_t i = 0; end != std::string::npos && i <= end; ++i) {
    unsigned char c = static_cast<unsigned char>(raw[i]);
    if (out.size() >= 200) {
      out += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}
} // namespace

static Expected<Tensor> readNpy(const std::string &path,
                                const std::string &bytes) {
  auto bad = [&](const std::string &why) {
    return error("'" + path + "': " + why);
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, npyMagic, 6) != 0)
    return bad("not a .npy file (no \\x93NUMPY magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) |
           (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated .npy header");
    hlen = 0;
    for (int k = 3; k >= 0; --k)
      hlen = (hlen << 8) | static_cast<unsigned char>(bytes[8 + k]);
    hstart = 12;
  } else {
    return bad("unsupported .npy format version " + std::to_string(major));
  }
  if (bytes.size() < hstart + hlen)
    return bad("truncated .npy header");
  std::string raw = bytes.substr(hstart, hlen);
  NpyHeaderParser ps(raw);
  std::string header = printableHeader(raw);
  std::string descr;
  bool fortran = false, haveDescr = false, haveShape = false,
       haveFortran = false;
  std::vector<int64_t> shape;
  if (!ps.eat('{'))
    return bad("malformed .npy header: " + header);
  while (!ps.eat('}')) {
    std::string key;
    if (!ps.str(key) || !ps.eat(':'))
      return bad("malformed .npy header: " + header);
    if ((key == "descr" && haveDescr) || (key == "shape" && haveShape) ||
        (key == "fortran_order" && haveFortran))
      return bad("key '" + key + "' given twice in the .npy header: " + header);
    if (key == "descr") {
      if (!ps.str(descr))
        return bad("unsupported .npy dtype (a structured dtype): " + header);
      haveDescr = true;
    } else if (key == "fortran_order") {
      std::string w;
      if (!ps.word(w) || (w != "True" && w != "False"))
        return bad("malformed .npy header: " + header);
      fortran = w == "True";
      haveFortran = true;
    } else if (key == "shape") {
      if (!ps.tuple(shape))
        return bad("malformed .npy shape: " + header);
      haveShape = true;
    } else {
      return bad("unknown key '" + printableHeader(key) +
                 "' in the .npy header");
    }
    if (!ps.eat(',')) {
      if (!ps.eat('}'))
        return bad("malformed .npy header: " + header);
      break;
    }
  }
  if (!ps.atEnd())
    return bad("malformed .npy header (text after the dictionary): " + header);
  if (!haveDescr || !haveShape || !haveFortran)
    return bad("malformed .npy header (it needs the keys descr, fortran_order "
               "and shape): " +
               header);
  if (fortran)
    return bad("fortran_order=True is not supported: save a C-order array "
               "(numpy.ascontiguousarray)");
  gatec_dtype dtype = GATEC_DTYPE_INVALID;
  if (descr.size() == 3) {
    char order = descr[0];
    std::string base = descr.substr(1);
    for (const auto &t : npyTypes)
      if (base == t.descr)
        dtype = t.dtype;
    bool oneByte = base[1] == '1';
    if (dtype != GATEC_DTYPE_INVALID && order == '>' && !oneByte)
      return bad("big-endian .npy data ('" + descr +
                 "') is not supported: save it little-endian "
                 "(array.astype(array.dtype.newbyteorder('<')))");
    if (order != '<' && order != '|' && order != '=' &&
        !(order == '>' && oneByte))
      dtype = GATEC_DTYPE_INVALID;
  }
  if (dtype == GATEC_DTYPE_INVALID)
    return bad("unsupported .npy dtype '" + printableHeader(descr) +
               "' (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, "
               "bool)");
  // Check the size before allocating what the header claims.
  uint64_t need;
  size_t have = bytes.size() - hstart - hlen;
  if (!denseBytes(shape, dtype, need) || have != need)
    return bad(std::to_string(have) + " bytes of data, but shape " +
               formatShape(shape) + " of " + gatec_dtype_name(dtype) +
               " needs " +
               (denseBytes(shape, dtype, need) ? std::to_string(need)
                                               : std::string("more")));
  Expected<Tensor> t = Tensor::create(dtype, shape);
  if (!t)
    return Status(t.status().code(), "'" + path + "': " + t.status().message());
  if (need)
    std::memcpy(t->data(), bytes.data() + hstart + hlen, need);
  return t;
}

static Status writeNpy(const std::string &path, const Tensor &t) {
  const char *descr = nullptr;
  for (const auto &e : npyTypes)
    if (e.dtype == t.dtype())
      descr = e.descr;
  if (!descr)
    return error("cannot write '" + path + "': " + gatec_dtype_name(t.dtype()) +
                 " has no .npy dtype (write a .pb file instead)");
  std::vector<int64_t> shape = t.shape();
  std::string sh = "(";
  for (size_t d = 0; d < shape.size(); ++d)
    sh += std::to_string(shape[d]) +
          (shape.size() == 1 || d + 1 < shape.size() ? "," : "");
  sh += ")";
  std::string order = (descr[1] == '1') ? "|" : "<";
  std::string dict = "{'descr': '" + order + descr +
                     "', 'fortran_order': False, 'shape': " + sh + ", }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out(npyMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  out += dict;
  out.append(static_cast<const char *>(t.data()), t.sizeBytes());
  return writeFile(path, out);
}

//===--- ONNX TensorProto (.pb)
//---------------------------------------------===//

static const struct {
  int onnx;
  gatec_dtype dtype;
} onnxTypes[] = {
    {onnx::TensorProto::FLOAT, GATEC_DTYPE_F32},
    {onnx::TensorProto::FLOAT16, GATEC_DTYPE_F16},
    {onnx::TensorProto::BFLOAT16, GATEC_DTYPE_BF16},
    {onnx::TensorProto::DOUBLE, GATEC_DTYPE_F64},
    {onnx::TensorProto::INT8, GATEC_DTYPE_I8},
    {onnx::TensorProto::INT16, GATEC_DTYPE_I16},
    {onnx::TensorProto::INT32, GATEC_DTYPE_I32},
    {onnx::TensorProto::INT64, GATEC_DTYPE_I64},
    {onnx::TensorProto::UINT8, GATEC_DTYPE_U8},
    {onnx::TensorProto::UINT16, GATEC_DTYPE_U16},
    {onnx::TensorProto::UINT32, GATEC_DTYPE_U32},
    {onnx::TensorProto::UINT64, GATEC_DTYPE_U64},
    {onnx::TensorProto::BOOL, GATEC_DTYPE_BOOL},
};

template <typename Field, typename Store>
static Status copyTyped(const std::string &path, const Field &field, int64_t n,
                        const char *fieldName, Store store) {
  if (static_cast<int64_t>(field.size()) != n)
    return error("'" + path + "': " + std::to_string(field.size()) +
                 " values in " + fieldName + ", but the dims hold " +
                 std::to_string(n));
  for (int64_t k = 0; k < n; ++k)
    store(k, field.Get(static_cast<int>(k)));
  return Status();
}

static Expected<Tensor> readPb(const std::string &path,
                               const std::string &bytes) {
  onnx::TensorProto tp;
  if (!tp.ParseFromString(bytes))
    return error("'" + path + "': not an ONNX TensorProto (.pb) file");
  if (tp.data_location() == onnx::TensorProto::EXTERNAL)
    return error("'" + path +
                 "': tensors with external data are not "
                 "supported");
  if (tp.has_segment())
    return error("'" + path + "': segmented tensors are not supported");
  gatec_dtype dtype = GATEC_DTYPE_INVALID;
  for (const auto &e : onnxTypes)
    if (e.onnx == tp.data_type())
      dtype = e.dtype;
  if (dtype == GATEC_DTYPE_INVALID)
    return error(
        "'" + path + "': unsupported TensorProto data_type " +
        std::to_string(tp.data_type()) +
        (tp.data_type() == onnx::TensorProto::STRING ? " (string)" : ""));
  std::vector<int64_t> shape(tp.dims().begin(), tp.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return error("'" + path + "': negative dim in " + formatShape(shape));
  // Check the data's size before allocating what the dims claim.
  uint64_t need;
  bool fits = denseBytes(shape, dtype, need);
  size_t es = gatec_dtype_size(dtype);
  if (tp.has_raw_data() || !fits) {
    size_t given = tp.raw_data().size();
    if (!fits || given != need)
      return error("'" + path + "': " + std::to_string(given) +
                   " bytes of raw_data, but shape " + formatShape(shape) +
                   " of " + gatec_dtype_name(dtype) + " needs " +
                   (fits ? std::to_string(need) : std::string("more")));
  } else {
    const char *field = "int32_data";
    int count = tp.int32_data_size();
    switch (dtype) {
    case GATEC_DTYPE_F32:
      field = "float_data";
      count = tp.float_data_size();
      break;
    case GATEC_DTYPE_F64:
      field = "double_data";
      count = tp.double_data_size();
      break;
    case GATEC_DTYPE_I64:
      field = "int64_data";
      count = tp.int64_data_size();
      break;
    case GATEC_DTYPE_U32:
    case GATEC_DTYPE_U64:
      field = "uint64_data";
      count = tp.uint64_data_size();
      break;
    default:
      break;
    }
    if (static_cast<uint64_t>(count) * es != need)
      return error("'" + path + "': " + std::to_string(count) + " values in " +
                   field + ", but the dims hold " + std::to_string(need / es));
  }
  Expected<Tensor> t = Tensor::create(dtype, shape);
  if (!t)
    return Status(t.status().code(), "'" + path + "': " + t.status().message());
  int64_t n = t->numElements();
  char *data = static_cast<char *>(t->data());
  if (tp.has_raw_data()) {
    if (t->sizeBytes())
      std::memcpy(data, tp.raw_data().data(), t->sizeBytes());
    return t;
  }
  Status st;
  auto put = [&](int64_t k, auto v) { std::memcpy(data + k * es, &v, es); };
  switch (dtype) {
  case GATEC_DTYPE_F32:
    st = copyTyped(path, tp.float_data(), n, "float_data",
                   [&](int64_t k, float v) { put(k, v); });
    break;
  case GATEC_DTYPE_F64:
    st = copyTyped(path, tp.double_data(), n, "double_data",
                   [&](int64_t k, double v) { put(k, v); });
    break;
  case GATEC_DTYPE_I64:
    st = copyTyped(path, tp.int64_data(), n, "int64_data",
                   [&](int64_t k, int64_t v) { put(k, v); });
    break;
  case GATEC_DTYPE_U32:
    st = copyTyped(
        path, tp.uint64_data(), n, "uint64_data",
        [&](int64_t k, uint64_t v) { put(k, static_cast<uint32_t>(v)); });
    break;
  case GATEC_DTYPE_U64:
    st = copyTyped(path, tp.uint64_data(), n, "uint64_data",
                   [&](int64_t k, uint64_t v) { put(k, v); });
    break;
  default: // i8 i16 i32 u8 u16 bool f16 bf16 live in int32_data
    st = copyTyped(path, tp.int32_data(), n, "int32_data",
                   [&](int64_t k, int32_t v) {
                     switch (dtype) {
                     case GATEC_DTYPE_I8:
                       put(k, static_cast<int8_t>(v));
                       break;
                     case GATEC_DTYPE_I16:
                       put(k, static_cast<int16_t>(v));
                       break;
                     case GATEC_DTYPE_I32:
                       put(k, v);
                       break;
                     case GATEC_DTYPE_U8:
                     case GATEC_DTYPE_BOOL:
                       put(k, static_cast<uint8_t>(v));
                       break;
                     default:
                       put(k, static_cast<uint16_t>(v));
                       break;
                     }
                   });
    break;
  }
  if (!st.ok())
    return st;
  return t;
}

static Status writePb(const std::string &path, const Tensor &t,
                      const std::string &name) {
  onnx::TensorProto tp;
  tp.set_name(name);
  for (const auto &e : onnxTypes)
    if (e.dtype == t.dtype())
      tp.set_data_type(e.onnx);
  for (int64_t d : t.shape())
    tp.add_dims(d);
  tp.set_raw_data(
      std::string(static_cast<const char *>(t.data()), t.sizeBytes()));
  std::string out;
  if (!tp.SerializeToString(&out))
    return error("cannot serialize '" + path + "'");
  return writeFile(path, out);
}

//===--- Dispatch
//-----------------------------------------------------------===//

Expected<Tensor> readTensorFile(const std::string &path) {
  std::string bytes;
  Status st = readFile(path, bytes);
  if (!st.ok())
    return st;
  if (bytes.empty())
    return error("'" + path + "': an empty file (not a .npy or .pb tensor)");
  if (endsWith(path, ".npy"))
    return readNpy(path, bytes);
  if (endsWith(path, ".pb"))
    return readPb(path, bytes);
  if (bytes.compare(0, 6, npyMagic, 6) == 0)
    return readNpy(path, bytes);
  return readPb(path, bytes);
}

Status writeTensorFile(const std::string &path, const Tensor &t,
                       const std::string &name) {
  if (endsWith(path, ".npy"))
    return writeNpy(path, t);
  if (endsWith(path, ".pb"))
    return writePb(path, t, name);
  return error("cannot write '" + path +
               "': unknown format (use a .npy or .pb file name)");
}

} // namespace gatecrun
