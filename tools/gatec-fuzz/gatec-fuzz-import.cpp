//===- gatec-fuzz-import.cpp - libFuzzer target: importer + graph phases -===//
//
// A libFuzzer target (llvm.org/docs/LibFuzzer.html) over what a hostile or
// broken model file reaches first: the ONNX loader (binary protobuf, or the
// ONNX text format when the input starts with '<'), the importer, and the
// graph-level phases up to GATEC_FUZZ_LAST_PHASE (default `fused`: the
// `onnx` clean-up, gate raising and fusion, each followed by the weight
// accounting, as `gatec` runs them).
//
// Local functions may expand to at most 4,000 nodes here (gatec: 500,000):
// a call tree that doubles per level reaches any bound, and at the full one
// each such input costs seconds under ASan, which would leave the campaign
// mostly re-running that one error path.
//
// An input may be accepted or rejected with diagnostics; a crash, abort,
// sanitizer report, timeout or out-of-memory is a finding. Run through
// tools/fuzz.sh (which builds the sanitized, fully instrumented copy).
//
//===----------------------------------------------------------------------===//
#include "compiler/OnnxImporter.h"
#include "compiler/Pipeline.h"
#include "compiler/registration/Registration.h"
#include "passes/gated/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <unistd.h>

using namespace mlir;

namespace {

/// One context serves many inputs; it is renewed now and then so that what
/// it uniques (types, attributes, resource blobs) does not grow without
/// bound over a long run.
constexpr int kInputsPerContext = 500;

struct FuzzState {
  std::vector<gatec::Phase> phases;
  int lastPhase = 0;
  std::string dir;
  std::unique_ptr<DialectRegistry> registry;
  std::unique_ptr<MLIRContext> ctx;
  /// The passes of each phase (with its weight accounting), built once per
  /// context.
  std::vector<std::unique_ptr<PassManager>> pms;
  int inputsOnContext = 0;

  FuzzState() {
    gatec::registerGatecPasses();
    registry = std::make_unique<DialectRegistry>();
    gatec::registerGatecDialects(*registry);
    phases = gatec::buildPhases(gatec::PipelineOptions{});
    const char *last = std::getenv("GATEC_FUZZ_LAST_PHASE");
    lastPhase = gatec::findPhase(phases, last ? last : "fused");
    if (lastPhase < 0 || lastPhase >= gatec::findPhase(phases, "tiled")) {
      llvm::errs() << "gatec-fuzz-import: GATEC_FUZZ_LAST_PHASE must name a "
                      "phase before 'tiled' ("
                   << gatec::phaseNames(phases) << ")\n";
      std::exit(2);
    }
    // The input is written to a file of its own (the importer reads files:
    // external data is resolved against the model's folder).
    llvm::SmallString<128> tmp;
    if (llvm::sys::fs::createUniqueDirectory("gatec-fuzz", tmp)) {
      llvm::errs() << "gatec-fuzz-import: cannot create a temporary folder\n";
      std::exit(2);
    }
    dir = std::string(tmp);
  }

  ~FuzzState() {
    llvm::sys::fs::remove(dir + "/model.onnx");
    llvm::sys::fs::remove(dir + "/model.onnxtxt");
    llvm::sys::fs::remove(dir);
  }

  MLIRContext &context() {
    if (!ctx || inputsOnContext++ >= kInputsPerContext) {
      pms.clear();
      ctx = std::make_unique<MLIRContext>(*registry,
                                          MLIRContext::Threading::DISABLED);
      ctx->loadAllAvailableDialects();
      ctx->printOpOnDiagnostic(false);
      inputsOnContext = 0;
      for (int i = 0; i <= lastPhase; ++i) {
        auto pm = std::make_unique<PassManager>(ctx.get());
        if (failed(phases[i].addPasses(*pm))) {
          llvm::errs() << "gatec-fuzz-import: the passes of phase '"
                       << phases[i].name << "' do not parse\n";
          std::exit(2);
        }
        gatec::gated::CheckWeightsOptions cw;
        cw.phase = phases[i].name;
        pm->addPass(gatec::gated::createCheckWeights(cw));
        pms.push_back(std::move(pm));
      }
    }
    return *ctx;
  }
};

FuzzState &state() {
  static FuzzState s;
  return s;
}

bool writeFile(const std::string &path, const uint8_t *data, size_t size) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os.write(reinterpret_cast<const char *>(data), size);
  return !os.has_error();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzState &s = state();
  bool text = size > 0 && data[0] == '<';
  std::string path = s.dir + (text ? "/model.onnxtxt" : "/model.onnx");
  if (!writeFile(path, data, size))
    return 0;
  MLIRContext &ctx = s.context();
  // Diagnostics are rendered (their locations and text are part of what is
  // tested) and dropped.
  std::string sink;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    sink = d.str();
    return success();
  });
  gatec::ImportOptions opts;
  opts.maxExpandedNodes = 4'000;
  OwningOpRef<ModuleOp> module = gatec::importOnnxModel(&ctx, path, opts);
  if (!module)
    return 0;
  for (auto &pm : s.pms)
    if (failed(pm->run(*module)))
      return 0;
  (void)verify(*module);
  return 0;
}
