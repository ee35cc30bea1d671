//===- Driver.cpp - the gatec compiler as a library call ------------------===//
#include "compiler/Driver.h"

#include "compiler/FusionReport.h"
#include "compiler/GateReport.h"
#include "compiler/OnnxImporter.h"
#include "compiler/registration/Registration.h"
#include "compiler/support/Diagnostics.h"
#include "compiler/target/LibraryEmitter.h"
#include "compiler/target/Targets.h"
#include "passes/gated/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include <optional>

using namespace mlir;

namespace gatec {
namespace {

/// Writes what `print` prints to `path` ("-": stdout), kept only if
/// `print` succeeds; an unwritable path is a one-line error.
LogicalResult writeOutput(StringRef path,
                          function_ref<LogicalResult(raw_ostream &)> print) {
  std::string err;
  auto out = openOutputFile(path, &err);
  if (!out) {
    llvm::errs() << "gatec: cannot write '" << path << "': " << err << "\n";
    return failure();
  }
  if (failed(print(out->os())))
    return failure();
  out->keep();
  return success();
}

LogicalResult writeIR(ModuleOp module, StringRef path, bool forPerson) {
  OpPrintingFlags flags;
  if (forPerson)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
  else
    flags.enableDebugInfo(); // artifacts keep the ONNX node locations
  return writeOutput(path, [&](raw_ostream &os) {
    module->print(os, flags);
    os << "\n";
    return success();
  });
}

LogicalResult writeLLVMIR(ModuleOp module, StringRef path) {
  llvm::LLVMContext llctx;
  auto llvmModule = translateModuleToLLVMIR(module, llctx, "gatec_model");
  if (!llvmModule)
    return failure();
  return writeOutput(path, [&](raw_ostream &os) {
    llvmModule->print(os, nullptr);
    return success();
  });
}

/// The input: an imported ONNX model or the parsed IR of a phase.
OwningOpRef<ModuleOp> load(MLIRContext &ctx, const CompileOptions &o) {
  OwningOpRef<ModuleOp> module;
  if (o.compileFrom.empty()) {
    ImportOptions opts;
    opts.inlineElementLimit = o.inlineWeightLimit;
    module = importOnnxModel(&ctx, o.input, opts);
  } else {
    llvm::SourceMgr sm;
    std::string err;
    auto buf = openInputFile(o.input, &err);
    if (!buf) {
      llvm::errs() << o.input << ": " << err << "\n";
      return nullptr;
    }
    sm.AddNewSourceBuffer(std::move(buf), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sm, &ctx);
  }
  if (module && !module->lookupSymbol("main_graph")) {
    llvm::errs() << "gatec: " << o.input
                 << ": no @main_graph function (not gatec IR)\n";
    return nullptr;
  }
  return module;
}

/// The phases [first, last] that a run covers, checked against the input
/// and the requested output.
struct Span {
  int first = 0, last = 0;
  bool printLLVM = false;
};

FailureOr<Span> phaseSpan(const CompileOptions &o, ArrayRef<Phase> phases) {
  auto fail = [](const Twine &msg) {
    llvm::errs() << "gatec: " << msg << "\n";
    return failure();
  };
  std::string names = phaseNames(phases);
  Span s;
  s.last = phases.size() - 1;
  std::string to = o.compileTo;
  if (to == "llvm") {
    s.printLLVM = true;
    to = phases.back().name;
  }
  if (o.report == "gates" && to.empty())
    s.last = findPhase(phases, "gated");
  bool binary = o.emit == "lib" || o.emit == "obj";
  if (binary && s.last != (int)phases.size() - 1)
    return fail("--emit=" + o.emit + " needs every phase through '" +
                phases.back().name + "'");
  if (!to.empty() && (s.last = findPhase(phases, to)) < 0)
    return fail("unknown phase '" + to +
                "' for --compile-to (phases: " + names + ")");
  if (!o.dumpKernels.empty() && s.last < findPhase(phases, "nvvm"))
    return fail("--dump-kernels needs the phases through 'nvvm' "
                "(--compile-to=" +
                phases[s.last].name + " stops before)");
  if (!o.compileFrom.empty()) {
    int from = findPhase(phases, o.compileFrom);
    if (from < 0)
      return fail("unknown phase '" + o.compileFrom +
                  "' for --compile-from (phases: " + names + ")");
    if (from > s.last)
      return fail("--compile-from=" + o.compileFrom +
                  " comes after --compile-to=" + phases[s.last].name);
    s.first = from + 1;
  }
  StringRef in(o.input);
  bool irInput = in.ends_with(".mlir") || in.ends_with(".mlirbc");
  if (o.compileFrom.empty() && irInput)
    return fail(o.input +
                " is MLIR: say which phase it is with --compile-from=PHASE "
                "(phases: " +
                names + ")");
  if (!o.compileFrom.empty() &&
      (in.ends_with(".onnx") || in.ends_with(".onnxtxt")))
    return fail(o.input + " is an ONNX model: --compile-from takes the MLIR "
                          "of a phase (drop --compile-from to import the "
                          "model)");
  return s;
}

/// The file of phase `i` in --dump-stages=DIR.
std::string stagePath(StringRef dir, int i, StringRef phase) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path,
                          llvm::formatv("{0:02}-{1}.mlir", i + 1, phase).str());
  return path.str().str();
}

} // namespace

LogicalResult printPipelines(MLIRContext &ctx, ArrayRef<Phase> phases,
                             llvm::raw_ostream *os) {
  for (const Phase &p : phases) {
    PassManager pm(&ctx);
    if (failed(p.addPasses(pm)))
      return failure();
    if (!os)
      continue;
    *os << p.name << ": ";
    pm.printAsTextualPipeline(*os);
    *os << "\n";
  }
  return success();
}

/// --report-dims: "name=N,name=N" as a map, or the error.
std::string parseReportDims(StringRef text,
                            std::map<std::string, int64_t> &out) {
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [name, size] = item.trim().split('=');
    int64_t n = 0;
    if (name.trim().empty() || size.trim().getAsInteger(10, n) || n < 1)
      return "--report-dims: '" + item.str() +
             "' is not name=N with N >= 1 (e.g. --report-dims=batch=1,"
             "seq=2048)";
    if (!out.emplace(name.trim().str(), n).second)
      return "--report-dims: '" + name.trim().str() + "' is given twice";
  }
  return "";
}

std::string checkOptions(const CompileOptions &o) {
  const PipelineOptions &p = o.pipeline;
  if (o.emit != "mlir" && o.emit != "none" && o.emit != "lib" &&
      o.emit != "obj")
    return "unknown --emit=" + o.emit + " (mlir, lib, obj, none)";
  if (p.target != "cpu" && p.target != "cuda")
    return "unknown --target=" + p.target + " (targets: cpu, cuda)";
  if (p.target == "cuda") {
    StringRef arch(p.gpuArch);
    unsigned sm = 0;
    if (!arch.consume_front("sm_") || arch.getAsInteger(10, sm) || sm < 70)
      return "--gpu-arch=" + p.gpuArch +
             " is not an NVIDIA architecture gatec supports (sm_70 or newer, "
             "e.g. sm_80, sm_90)";
    if (p.gpuTf32 && sm < 80)
      return "--gpu-tf32 needs sm_80 or newer (mma.sync with tf32 operands, "
             "m16n8k8); --gpu-arch=" +
             p.gpuArch;
    if (p.gpuMma && sm < 80)
      return "--gpu-mma needs sm_80 or newer (mma.sync with bf16/f16 "
             "operands and fp32 accumulators, m16n8k16); --gpu-arch=" +
             p.gpuArch;
    if (p.gpuFormat != "fatbin" && p.gpuFormat != "bin" && p.gpuFormat != "isa")
      return "unknown --gpu-format=" + p.gpuFormat + " (fatbin, bin, isa)";
    if (p.gpuThreads < 32 || p.gpuThreads > 1024 || p.gpuThreads % 32)
      return "--gpu-threads=" + std::to_string(p.gpuThreads) +
             " must be a multiple of 32 from 32 to 1024";
  } else if (!o.dumpKernels.empty()) {
    return "--dump-kernels needs --target=cuda";
  } else if (p.gpuTf32 && !p.cpuThreadMapping) {
    return "--gpu-tf32 needs --target=cuda (or, to check its mapping on the "
           "CPU, --cpu-thread-mapping)";
  } else if (p.gpuMma && !p.cpuThreadMapping) {
    return "--gpu-mma needs --target=cuda (or, to check its mapping on the "
           "CPU, --cpu-thread-mapping)";
  }
  if (!p.cpu.empty() && (p.target != "cpu" || !cpuVectorBitsOf(p.cpu)))
    return p.target != "cpu"
               ? "--cpu=" + p.cpu + " needs --target=cpu"
               : "unknown --cpu=" + p.cpu +
                     " (an x86-64 CPU as clang's -march names it: "
                     "skylake-avx512, sapphirerapids, znver4, x86-64-v3, ...)";
  if (p.cpuVectorBits != 0 && p.cpuVectorBits != 128 &&
      p.cpuVectorBits != 256 && p.cpuVectorBits != 512)
    return "--cpu-vector-bits=" + std::to_string(p.cpuVectorBits) +
           " must be 128, 256 or 512";
  if (p.cpuRowBlock < 0 || p.cpuRowBlock > 4096)
    return "--cpu-row-block=" + std::to_string(p.cpuRowBlock) +
           " must be from 1 to 4096 (0: the default, 32)";
  if (p.cpuRowBlock &&
      (p.target != "cpu" || !p.cpuMicroKernels || p.cpuThreadMapping))
    return "--cpu-row-block sets the row blocks of the CPU micro-kernels: it "
           "needs --target=cpu, without --cpu-micro-kernels=false or "
           "--cpu-thread-mapping";
  if ((o.emit == "lib" || o.emit == "obj") && o.output == "-")
    return "--emit=" + o.emit + " needs -o FILE";
  if (!o.report.empty() && o.report != "gates" && o.report != "fusion")
    return "unknown --report=" + o.report + " (gates, fusion)";
  if (o.inlineWeightLimit < 0)
    return "--inline-weight-limit must be >= 0";
  if (o.report == "fusion" && o.reportDim < 1)
    return "--report-dim must be >= 1";
  std::map<std::string, int64_t> dims;
  if (std::string e = parseReportDims(o.reportDims, dims); !e.empty())
    return e;
  return "";
}

int runCompiler(CompileOptions o) {
  if (o.emit.empty()) {
    StringRef out(o.output);
    o.emit = out.ends_with(".so")  ? "lib"
             : out.ends_with(".o") ? "obj"
                                   : "mlir";
  }
  if (o.input.empty() && !o.printPipelines) {
    llvm::errs() << "gatec: no input (gatec MODEL.onnx [options]; --help "
                    "lists them)\n";
    return 1;
  }
  if (std::string err = checkOptions(o); !err.empty()) {
    llvm::errs() << "gatec: " << err << "\n";
    return 1;
  }
  std::vector<Phase> phases = buildPhases(o.pipeline);
  FailureOr<Span> span = phaseSpan(o, phases);
  if (failed(span))
    return 1;
  if (o.output != "-") {
    llvm::sys::fs::UniqueID a, b;
    if (!llvm::sys::fs::getUniqueID(o.input, a) &&
        !llvm::sys::fs::getUniqueID(o.output, b) && a == b) {
      llvm::errs() << "gatec: -o " << o.output
                   << " would overwrite the input\n";
      return 1;
    }
  }

  registerGatecPasses();
  DialectRegistry registry;
  registerGatecDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OnnxDiagnosticHandler diagHandler(&ctx);
  // Diagnostics name the ONNX node; the op itself is not printed into them.
  ctx.printOpOnDiagnostic(false);
  // Every phase's passes are built once up front: a pass pipeline string
  // that does not parse is an error before any work, whatever the span.
  if (o.printPipelines)
    return failed(writeOutput(o.output,
                              [&](raw_ostream &os) {
                                return printPipelines(ctx, phases, &os);
                              }))
               ? 1
               : 0;
  if (failed(printPipelines(ctx, phases, nullptr)))
    return 1;

  OwningOpRef<ModuleOp> module = load(ctx, o);
  if (!module)
    return 1;

  if (o.report == "fusion") {
    // The report is the output: to -o when given.
    if (o.compileFrom.empty() || span->first < findPhase(phases, "tiled"))
      return failed(writeOutput(o.output,
                                [&](raw_ostream &os) {
                                  std::map<std::string, int64_t> dims;
                                  parseReportDims(o.reportDims, dims);
                                  return printFusionReport(
                                      *module, span->first, o.pipeline,
                                      o.reportDim, dims, os);
                                }))
                 ? 1
                 : 0;
    llvm::errs() << "gatec: --report=fusion needs the IR of a phase before "
                    "'tiled'\n";
    return 1;
  }
  if (!o.dumpStages.empty()) {
    if (auto ec = llvm::sys::fs::create_directories(o.dumpStages)) {
      llvm::errs() << "gatec: cannot create '" << o.dumpStages
                   << "': " << ec.message() << "\n";
      return 1;
    }
  }

  // --mlir-timing: one timer per phase, each nesting its passes' timers.
  DefaultTimingManager tm;
  applyDefaultTimingManagerCLOptions(tm);
  TimingScope timing = tm.getRootScope();
  // The first phase on memrefs: the signature is read before it.
  int bufferPhase = findPhase(phases, "tiled");
  std::optional<ModelSignature> signature;
  for (int i = span->first; i <= span->last; ++i) {
    if (i == bufferPhase) {
      // The signature, read while the types are still tensors.
      auto sig = readSignature(*module);
      if (failed(sig))
        return 1;
      signature = *sig;
      requestCInterface(*module);
    }
    PassManager pm(&ctx);
    if (failed(applyPassManagerCLOptions(pm)) ||
        failed(phases[i].addPasses(pm)))
      return 1;
    // The accounting follows initializers by their locations through the
    // graph-level phases; from `tiled` on, constants are folded into loop
    // bodies (a splat bias becomes a scalar in the loop) and lose them.
    if (o.checkWeights && i < bufferPhase) {
      gated::CheckWeightsOptions cw;
      cw.phase = phases[i].name;
      pm.addPass(gated::createCheckWeights(cw));
    }
    TimingScope phaseTiming = timing.nest(phases[i].name);
    pm.enableTiming(phaseTiming);
    unsigned errorsBefore = diagHandler.numErrors();
    if (failed(pm.run(*module))) {
      // A pass that fails must say why; one that did not is a bug of gatec,
      // but the user still learns which model and phase it was.
      if (diagHandler.numErrors() == errorsBefore)
        llvm::errs() << o.input << ": error: phase '" << phases[i].name
                     << "' failed without a message (a gatec bug: please "
                        "report it with this model)\n";
      return 1;
    }
    phaseTiming.stop();
    if (!o.dumpKernels.empty() && phases[i].name == "nvvm" &&
        failed(dumpKernels(*module, o.dumpKernels, o.pipeline.gpuArch)))
      return 1;
    if (!o.dumpStages.empty() &&
        failed(writeIR(*module, stagePath(o.dumpStages, i, phases[i].name),
                       /*forPerson=*/false)))
      return 1;
  }
  if (failed(verify(*module)))
    return 1;

  if (o.report == "gates") {
    printGateReport(*module, llvm::outs());
    if (o.output == "-")
      return 0;
  }
  if (o.emit == "none")
    return 0;
  if (o.emit == "lib" || o.emit == "obj") {
    if (!signature) {
      llvm::errs() << "gatec: a library needs the IR of a phase before 'tiled' "
                      "(--compile-from=linalg or earlier)\n";
      return 1;
    }
    EmitOptions e;
    e.output = o.output;
    e.objectOnly = o.emit == "obj";
    e.cc = o.cc;
    if (!o.pipeline.cpu.empty())
      e.march = o.pipeline.cpu;
    e.runtimeInclude = o.runtimeInclude;
    if (o.pipeline.target == "cuda") {
      e.cuda = true;
      e.gpuArch = o.pipeline.gpuArch;
      e.cudaRuntimeLibDir = o.cudaRuntimeLibDir;
    }
    return failed(emitLibrary(*module, *signature, e)) ? 1 : 0;
  }
  if (span->printLLVM)
    return failed(writeLLVMIR(*module, o.output)) ? 1 : 0;
  bool toTerminal = o.output == "-";
  return failed(writeIR(*module, o.output, toTerminal && o.elideWeights)) ? 1
                                                                          : 0;
}

} // namespace gatec
