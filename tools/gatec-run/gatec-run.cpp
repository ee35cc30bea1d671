//===- gatec-run.cpp - Run a model library compiled by gatec
//---------------===//
//
// gatec-run MODEL.so [options]: loads the model with the gatec runtime,
// reads its inputs (.npy, ONNX TensorProto .pb, or inline), runs it, prints
// or writes its outputs, compares them with expected outputs and measures
// latency. See --help. Knows nothing of MLIR: links gatec_runtime and ONNX's
// protobuf only.
//
// Exit codes: 0 success; 1 any error (a message "gatec-run: <message>" on
// stderr, one line) or an output that differs from its expected output;
// 2 a usage error (bad command line).
//===----------------------------------------------------------------------===//
#include "TensorFiles.h"

#include "gatec/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <dirent.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using gatec::Expected;
using gatec::Model;
using gatec::Status;
using gatec::Tensor;
using namespace gatecrun;

static const char *usage =
    R"(usage: gatec-run MODEL.so [options]

Runs a model library compiled by gatec on the CPU.

Inputs (in signature order, or by name; repeat the option per input):
  --input=@FILE               a .npy file (little-endian, C order) or an ONNX
                              TensorProto .pb file
  --input=NAME=@FILE          the same for the input called NAME
  --input="2x3xf32=1 2 3 4 5 6"
                              an inline tensor: SHAPExDTYPE=VALUES, values
                              separated by spaces or commas; one value fills
                              the tensor; "f32=1.5" is a scalar
  --input=NAME=2x3xf32=...    an inline tensor for the input called NAME
  dtypes: f32 f16 bf16 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool

Outputs:
  --output=@FILE              write the next output to FILE (.npy or .pb)
  --output=NAME=@FILE         write the output called NAME; outputs not
                              written are printed (name, dtype, shape, values)
  --print-limit=N             print at most N values per output (default 16,
                              0 = all)
  --expected-output=@FILE     compare the next output with FILE (or NAME=@FILE,
                              or an inline tensor): each element must satisfy
                              |got - expected| <= atol + rtol * |expected|
                              (NaN matches NaN); exit 1 on a mismatch, printing
                              the worst element
  --atol=X, --rtol=X          tolerances (default 1e-4 each)

Other:
  --print-signature           print the model's inputs and outputs (and exit,
                              unless inputs are given)
  --benchmark=N               after the run, time N more runs (after
                              --warmup=K untimed ones, default 3) and print
                              min/median/max latency
  --device=cpu|cuda           the device to run on (default cpu; cuda: a model
                              compiled with gatec --target=cuda, on a machine
                              with an NVIDIA GPU and its driver)
  --onnx-test-dir=DIR         run an ONNX backend test directory: compile
                              DIR/model.onnx with gatec, run every
                              DIR/test_data_set_*/input_*.pb and compare with
                              its output_*.pb (--atol/--rtol)
  --gatec=PATH                the gatec that compiles it (default: the gatec
                              next to gatec-run)
  --help                      this text

Threads: the CPU kernels run on OpenMP's threads (OMP_NUM_THREADS, default
one per core). gatec-run binds them to cores (OMP_PROC_BIND=true) unless
OMP_PROC_BIND, OMP_PLACES or KMP_AFFINITY is set: unbound, two spinning
threads that share a core stall each parallel loop until the scheduler's
next tick (~1 ms).

Exit status: 0 success, 1 error or mismatch, 2 usage error.
)";

namespace {
struct Options {
  std::string model;
  std::vector<std::string> inputs, outputs, expected;
  double atol = 1e-4, rtol = 1e-4;
  bool printSignature = false;
  long long benchmark = 0, warmup = 3, printLimit = 16;
  std::string device = "cpu";
  bool onnxTestDir = false;
  std::string testDir, gatec;
};

/// Exit with "gatec-run: <message>".
[[noreturn]] void fail(const std::string &message, int code = 1) {
  std::fflush(stdout);
  std::fprintf(stderr, "gatec-run: %s\n", message.c_str());
  std::exit(code);
}
[[noreturn]] void usageError(const std::string &message) {
  fail(message + " (see gatec-run --help)", 2);
}

bool parseDouble(const std::string &s, double &v) {
  char *end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}
bool parseCount(const std::string &s, long long &v) {
  char *end = nullptr;
  v = std::strtoll(s.c_str(), &end, 10);
  return !s.empty() && *end == '\0' && v >= 0;
}

Options parseArgs(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    if (a.size() < 2 || a.compare(0, 2, "--") != 0) {
      if (a.size() > 1 && a[0] == '-')
        usageError("unknown option '" + a + "'");
      if (!o.model.empty())
        usageError("more than one model given ('" + o.model + "', '" + a +
                   "')");
      o.model = a;
      continue;
    }
    std::string name = a, value;
    bool hasValue = false;
    size_t eq = a.find('=');
    if (eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      hasValue = true;
    }
    auto needValue = [&]() {
      if (hasValue)
        return;
      if (i + 1 >= argc)
        usageError("option '" + name + "' needs a value");
      value = argv[++i];
      hasValue = true;
    };
    auto noValue = [&]() {
      if (hasValue)
        usageError("option '" + name + "' takes no value");
    };
    if (name == "--input") {
      needValue();
      o.inputs.push_back(value);
    } else if (name == "--output") {
      needValue();
      o.outputs.push_back(value);
    } else if (name == "--expected-output") {
      needValue();
      o.expected.push_back(value);
    } else if (name == "--atol" || name == "--rtol") {
      needValue();
      double v;
      if (!parseDouble(value, v) || !(v >= 0))
        usageError("invalid " + name + " '" + value +
                   "': expected a number >= 0");
      (name == "--atol" ? o.atol : o.rtol) = v;
    } else if (name == "--benchmark" || name == "--warmup" ||
               name == "--print-limit") {
      needValue();
      long long v;
      if (!parseCount(value, v) || (name == "--benchmark" && v < 1))
        usageError("invalid " + name + " '" + value + "': expected " +
                   (name == "--benchmark" ? "a count >= 1" : "a count >= 0"));
      (name == "--benchmark" ? o.benchmark
       : name == "--warmup"  ? o.warmup
                             : o.printLimit) = v;
    } else if (name == "--device") {
      needValue();
      if (value != "cpu" && value != "cuda")
        usageError("unknown device '" + value + "' (use cpu or cuda)");
      o.device = value;
    } else if (name == "--print-signature") {
      noValue();
      o.printSignature = true;
    } else if (name == "--onnx-test-dir") {
      needValue();
      o.onnxTestDir = true;
      o.testDir = value;
    } else if (name == "--gatec") {
      needValue();
      o.gatec = value;
    } else {
      usageError("unknown option '" + a + "'");
    }
  }
  return o;
}

/// A tensor given on the command line: positional (name empty) or named.
struct Given {
  std::string name;
  Tensor tensor;
};

/// Parses @FILE, NAME=@FILE, TYPE=VALUES or NAME=TYPE=VALUES. `isName` says
/// whether the text before the first '=' names an input/output.
template <typename IsName>
Given parseTensorSpec(const std::string &option, const std::string &spec,
                      IsName isName) {
  Given g;
  std::string rest = spec;
  if (spec.empty() || spec[0] != '@') {
    size_t eq = spec.find('=');
    if (eq == std::string::npos)
      usageError("invalid " + option + " '" + spec +
                 "': expected @FILE, NAME=@FILE, SHAPExDTYPE=VALUES or "
                 "NAME=SHAPExDTYPE=VALUES");
    std::string left = spec.substr(0, eq);
    std::vector<int64_t> shape;
    gatec_dtype dtype;
    if (isName(left) || !parseTypeSpec(left, shape, dtype)) {
      g.name = left;
      rest = spec.substr(eq + 1);
    }
  }
  Expected<Tensor> t = Status();
  if (!rest.empty() && rest[0] == '@') {
    t = readTensorFile(rest.substr(1));
  } else {
    size_t eq = rest.find('=');
    if (eq == std::string::npos)
      usageError("invalid " + option + " '" + spec +
                 "': expected @FILE or SHAPExDTYPE=VALUES after '" + g.name +
                 "='");
    t = parseInlineTensor(rest.substr(0, eq), rest.substr(eq + 1));
  }
  if (!t)
    fail(t.status().message());
  g.tensor = std::move(*t);
  return g;
}

std::string joinNames(const std::vector<gatec::ValueInfo> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + v[i].name;
  return s;
}

/// Maps tensors given positionally or by name to output positions.
std::vector<int> mapToOutputs(const std::string &option,
                              const std::vector<std::string> &names,
                              const Model &model) {
  std::vector<gatec::ValueInfo> outs = model.outputs();
  std::vector<int> slot;
  std::vector<bool> used(outs.size(), false);
  size_t next = 0;
  for (const std::string &name : names) {
    int k;
    if (name.empty()) {
      if (next >= outs.size())
        fail("too many " + option + " options: the model has " +
             std::to_string(outs.size()) + " output" +
             (outs.size() == 1 ? "" : "s") + " (" + joinNames(outs) + ")");
      k = static_cast<int>(next++);
    } else {
      k = model.outputIndex(name);
      if (k < 0)
        fail("unknown output '" + name + "' in " + option +
             ": the model's outputs are " + joinNames(outs));
    }
    if (used[k])
      fail("output '" + outs[k].name + "' given twice in " + option);
    used[k] = true;
    slot.push_back(k);
  }
  return slot;
}

void printSignature(const Model &m) {
  std::printf("model: %s\n", m.path().c_str());
  std::printf("target: %s (model ABI version %u)\n", m.target().c_str(),
              m.abiVersion());
  auto print = [](const char *what, const std::vector<gatec::ValueInfo> &v) {
    std::printf("%s (%zu):\n", what, v.size());
    for (const auto &i : v)
      std::printf("  %s: %s %s\n", i.name.c_str(), gatec_dtype_name(i.dtype),
                  i.shapeStr.c_str());
  };
  print("inputs", m.inputs());
  print("outputs", m.outputs());
}

void printTensor(const std::string &name, const Tensor &t, long long limit) {
  int64_t n = t.numElements();
  std::string line = name + ": " + gatec_dtype_name(t.dtype()) + " " +
                     formatShape(t.shape()) + " =";
  int64_t shown = limit > 0 ? std::min<int64_t>(n, limit) : n;
  for (int64_t i = 0; i < shown; ++i)
    line += " " + formatElement(t.data(), t.dtype(), i);
  if (n == 0)
    line += " (no elements)";
  else if (shown < n)
    line += " ... (" + std::to_string(n) + " elements)";
  std::printf("%s\n", line.c_str());
}

/// Compares output `got` with `want`; prints a line and returns whether all
/// elements are within tolerance.
bool compare(const std::string &name, const Tensor &got, const Tensor &want,
             double atol, double rtol) {
  if (want.dtype() != got.dtype())
    fail(std::string("output '") + name + "': the expected output has dtype " +
         gatec_dtype_name(want.dtype()) + ", the output " +
         gatec_dtype_name(got.dtype()));
  if (want.shape() != got.shape())
    fail("output '" + name + "': the expected output has shape " +
         formatShape(want.shape()) + ", the output " +
         formatShape(got.shape()));
  // The worst mismatch: a NaN against a number, then an infinite error, then
  // the largest finite error; the first of equals.
  int64_t n = got.numElements(), bad = 0, worst = -1;
  int worstClass = -1;
  double maxErr = 0, worstErr = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = elementAsDouble(got.data(), got.dtype(), i);
    double b = elementAsDouble(want.data(), want.dtype(), i);
    if (std::isnan(a) && std::isnan(b))
      continue;
    if (a == b) // also equal infinities
      continue;
    double err = std::fabs(a - b);
    if (!std::isnan(err) && err <= atol + rtol * std::fabs(b)) {
      maxErr = std::max(maxErr, err);
      continue;
    }
    ++bad;
    int cls = std::isnan(err) ? 2 : std::isinf(err) ? 1 : 0;
    if (cls > worstClass || (cls == worstClass && err > worstErr)) {
      worst = i;
      worstClass = cls;
      worstErr = err;
    }
  }
  char tol[128];
  std::snprintf(tol, sizeof(tol), "atol=%g + rtol=%g*|expected|", atol, rtol);
  if (bad == 0) {
    std::printf("output '%s': %lld element%s within %s, max |error| %g\n",
                name.c_str(), static_cast<long long>(n), n == 1 ? "" : "s", tol,
                maxErr);
    return true;
  }
  double a = elementAsDouble(got.data(), got.dtype(), worst);
  double b = elementAsDouble(want.data(), want.dtype(), worst);
  char err[64];
  std::snprintf(err, sizeof(err), "%g", std::fabs(a - b));
  std::fflush(stdout);
  std::fprintf(stderr,
               "gatec-run: output '%s': %lld of %lld elements differ by more "
               "than %s; worst at %s: got %s, expected %s, |error| %s\n",
               name.c_str(), static_cast<long long>(bad),
               static_cast<long long>(n), tol,
               formatIndex(got.shape(), worst).c_str(),
               formatElement(got.data(), got.dtype(), worst).c_str(),
               formatElement(want.data(), want.dtype(), worst).c_str(), err);
  return false;
}
} // namespace

/// --onnx-test-dir: compile DIR/model.onnx with gatec, run each data set.
int runOnnxTestDir(const Options &o) {
  std::string dir = o.testDir, model = dir + "/model.onnx";
  if (access(model.c_str(), R_OK) != 0)
    fail("no readable model.onnx in '" + dir + "'");
  std::string gatec = o.gatec;
  if (gatec.empty()) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
      fail("cannot find gatec: give --gatec=PATH");
    self[n] = '\0';
    std::string s(self);
    gatec = s.substr(0, s.rfind('/') + 1) + "gatec";
  }
  char tmpl[] = "/tmp/gatec-run-XXXXXX";
  if (!mkdtemp(tmpl))
    fail(std::string("cannot create a temporary directory: ") +
         std::strerror(errno));
  std::string lib = std::string(tmpl) + "/model.so";
  const char *args[] = {gatec.c_str(), model.c_str(), "-o", lib.c_str(),
                        nullptr};
  pid_t pid;
  if (posix_spawn(&pid, gatec.c_str(), nullptr, nullptr,
                  const_cast<char *const *>(args), environ) != 0)
    fail("cannot run '" + gatec + "': " + std::strerror(errno));
  int status = 0;
  waitpid(pid, &status, 0);
  auto cleanup = [&]() {
    unlink(lib.c_str());
    rmdir(tmpl);
  };
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    cleanup();
    fail("gatec could not compile '" + model + "'");
  }
  gatec_device device =
      o.device == "cuda" ? GATEC_DEVICE_CUDA : GATEC_DEVICE_CPU;
  Expected<Model> loaded = Model::load(lib, device);
  cleanup(); // the library stays mapped
  if (!loaded)
    fail(loaded.status().message());
  Model &m = *loaded;

  std::vector<std::string> sets;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::strncmp(e->d_name, "test_data_set_", 14) == 0)
        sets.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty())
    fail("no test_data_set_* in '" + dir + "'");
  auto files = [](const std::string &set, const char *prefix) {
    std::vector<std::string> out;
    for (int i = 0;; ++i) {
      std::string p = set + "/" + prefix + std::to_string(i) + ".pb";
      if (access(p.c_str(), R_OK) != 0)
        break;
      out.push_back(p);
    }
    return out;
  };
  bool allMatch = true;
  for (const std::string &set : sets) {
    std::vector<Tensor> ins;
    for (const std::string &p : files(set, "input_")) {
      Expected<Tensor> t = readTensorFile(p);
      if (!t)
        fail(t.status().message());
      ins.push_back(std::move(*t));
    }
    std::vector<const Tensor *> ptrs;
    for (const Tensor &t : ins)
      ptrs.push_back(&t);
    Expected<std::vector<Tensor>> outs = m.run(ptrs);
    if (!outs)
      fail(set + ": " + outs.status().message());
    std::vector<std::string> want = files(set, "output_");
    if (want.size() != m.numOutputs())
      fail(set + ": " + std::to_string(want.size()) +
           " expected outputs for a model with " +
           std::to_string(m.numOutputs()));
    std::printf("%s:\n", set.c_str());
    for (size_t j = 0; j < want.size(); ++j) {
      Expected<Tensor> t = readTensorFile(want[j]);
      if (!t)
        fail(t.status().message());
      allMatch &= compare(m.output(j).name, (*outs)[j], *t, o.atol, o.rtol);
    }
  }
  return allMatch ? 0 : 1;
}

/// OpenMP's threads bound to cores unless the user chose a policy: read by
/// the OpenMP runtime when the model's first parallel loop starts.
void bindThreadsByDefault() {
  for (const char *v : {"OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY"})
    if (getenv(v))
      return;
  setenv("OMP_PROC_BIND", "true", /*overwrite=*/0);
}

int main(int argc, char **argv) {
  bindThreadsByDefault();
  Options o = parseArgs(argc, argv);
  if (o.onnxTestDir)
    return runOnnxTestDir(o);
  if (o.model.empty())
    usageError("no model library given");

  gatec_device device =
      o.device == "cuda" ? GATEC_DEVICE_CUDA : GATEC_DEVICE_CPU;
  Expected<Model> loaded = Model::load(o.model, device);
  if (!loaded)
    fail(loaded.status().message());
  Model &model = *loaded;

  if (o.printSignature) {
    printSignature(model);
    if (o.inputs.empty())
      return 0;
  }

  // Inputs.
  std::vector<Given> inputs;
  for (const std::string &spec : o.inputs)
    inputs.push_back(
        parseTensorSpec("--input", spec, [&](const std::string &n) {
          return model.inputIndex(n) >= 0;
        }));
  bool anyNamed = false;
  for (const Given &g : inputs)
    anyNamed |= !g.name.empty();
  std::vector<const Tensor *> positional;
  std::vector<std::pair<std::string, const Tensor *>> named;
  size_t nextPos = 0;
  for (const Given &g : inputs) {
    positional.push_back(&g.tensor);
    if (!anyNamed)
      continue;
    std::string name = g.name;
    if (name.empty()) {
      if (nextPos >= model.numInputs())
        fail("too many inputs: the model takes " +
             std::to_string(model.numInputs()) + " input" +
             (model.numInputs() == 1 ? "" : "s") + " (" +
             joinNames(model.inputs()) + "), " + std::to_string(inputs.size()) +
             " given");
      name = model.input(nextPos++).name;
    }
    named.emplace_back(name, &g.tensor);
  }

  // Output and expected-output options (checked before running).
  std::vector<std::string> outNames, outPaths;
  for (const std::string &spec : o.outputs) {
    std::string name, rest = spec;
    size_t eq = spec.find('=');
    if (!spec.empty() && spec[0] != '@' && eq != std::string::npos) {
      name = spec.substr(0, eq);
      rest = spec.substr(eq + 1);
    }
    if (rest.size() < 2 || rest[0] != '@')
      usageError("invalid --output '" + spec +
                 "': expected @FILE or NAME=@FILE");
    outNames.push_back(name);
    outPaths.push_back(rest.substr(1));
  }
  std::vector<int> outSlots = mapToOutputs("--output", outNames, model);
  std::vector<Given> expected;
  for (const std::string &spec : o.expected)
    expected.push_back(
        parseTensorSpec("--expected-output", spec, [&](const std::string &n) {
          return model.outputIndex(n) >= 0;
        }));
  std::vector<std::string> expNames;
  for (const Given &g : expected)
    expNames.push_back(g.name);
  std::vector<int> expSlots =
      mapToOutputs("--expected-output", expNames, model);

  auto runOnce = [&]() {
    return anyNamed ? model.runNamed(named) : model.run(positional);
  };
  Expected<std::vector<Tensor>> outs = runOnce();
  if (!outs)
    fail(outs.status().message());

  // Print or write each output.
  for (size_t j = 0; j < model.numOutputs(); ++j) {
    std::string name = model.output(j).name;
    const Tensor &t = (*outs)[j];
    auto w = std::find(outSlots.begin(), outSlots.end(), static_cast<int>(j));
    if (w == outSlots.end()) {
      printTensor(name, t, o.printLimit);
      continue;
    }
    const std::string &path = outPaths[w - outSlots.begin()];
    Status st = writeTensorFile(path, t, name);
    if (!st.ok())
      fail(st.message());
    std::printf("%s: %s %s written to %s\n", name.c_str(),
                gatec_dtype_name(t.dtype()), formatShape(t.shape()).c_str(),
                path.c_str());
  }

  // Compare.
  bool allMatch = true;
  for (size_t k = 0; k < expected.size(); ++k) {
    int j = expSlots[k];
    allMatch &= compare(model.output(j).name, (*outs)[j], expected[k].tensor,
                        o.atol, o.rtol);
  }

  // Benchmark.
  if (o.benchmark > 0) {
    for (long long i = 0; i < o.warmup; ++i) {
      Expected<std::vector<Tensor>> r = runOnce();
      if (!r)
        fail(r.status().message());
    }
    std::vector<double> ms;
    for (long long i = 0; i < o.benchmark; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      Expected<std::vector<Tensor>> r = runOnce();
      auto t1 = std::chrono::steady_clock::now();
      if (!r)
        fail(r.status().message());
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    size_t n = ms.size();
    double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    std::printf("benchmark: %lld run%s after %lld warm-up run%s: min %.4f ms, "
                "median %.4f ms, max %.4f ms\n",
                o.benchmark, o.benchmark == 1 ? "" : "s", o.warmup,
                o.warmup == 1 ? "" : "s", ms.front(), median, ms.back());
  }
  return allMatch ? 0 : 1;
}
