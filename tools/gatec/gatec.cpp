//===- gatec.cpp - the gatec compiler driver ------------------------------===//
//
//   gatec MODEL.onnx [--compile-to=PHASE] [-o FILE] [--dump-stages=DIR]
//   gatec IR.mlir --compile-from=PHASE [--compile-to=PHASE] ...
//
//===----------------------------------------------------------------------===//
#include "compiler/FusionReport.h"
#include "compiler/GateReport.h"
#include "compiler/LibraryEmitter.h"
#include "compiler/OnnxImporter.h"
#include "compiler/Pipeline.h"
#include "compiler/support/Diagnostics.h"
#include "passes/gated/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory gatecCat("gatec options");

static cl::opt<std::string>
    inputFile(cl::Positional, cl::Required,
              cl::desc("<model.onnx | model.onnxtxt | ir.mlir>"),
              cl::cat(gatecCat));
static cl::opt<std::string>
    outputFile("o", cl::desc("Output file (default: stdout)"),
               cl::value_desc("file"), cl::init("-"), cl::cat(gatecCat));
static cl::opt<std::string>
    compileTo("compile-to", cl::desc("Stop after this phase and print its IR"),
              cl::value_desc("phase"), cl::cat(gatecCat));
static cl::opt<std::string> compileFrom(
    "compile-from",
    cl::desc("The input is MLIR at this phase (default: an ONNX model)"),
    cl::value_desc("phase"), cl::cat(gatecCat));
static cl::opt<std::string> dumpStages(
    "dump-stages",
    cl::desc("Write the IR after every phase to DIR/NN-<phase>.mlir"),
    cl::value_desc("dir"), cl::cat(gatecCat));
static cl::opt<bool> elideWeights(
    "elide-weights",
    cl::desc("Elide large weights when printing to the terminal (default "
             "on for stdout; files written with -o and --dump-stages are "
             "always complete)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<std::string> emit(
    "emit",
    cl::desc("What to write: mlir (the IR of the last phase), lib (a shared "
             "library with the model ABI; the default for -o *.so), obj (an "
             "object file; the default for -o *.o), none (run and verify the "
             "phases, write nothing)"),
    cl::init(""), cl::cat(gatecCat));
static cl::opt<std::string>
    target("target",
           cl::desc("Target: cpu (the host CPU, default) or cuda (NVIDIA GPUs: "
                    "phases gpu, nvvm, ptx after tiled)"),
           cl::init("cpu"), cl::cat(gatecCat));
static cl::opt<std::string>
    gpuArch("gpu-arch",
            cl::desc("--target=cuda: the GPU architecture (sm_80, sm_90 "
                     "(default), ...)"),
            cl::init("sm_90"), cl::cat(gatecCat));
static cl::opt<std::string> gpuFormat(
    "gpu-format",
    cl::desc("--target=cuda: how kernels are embedded: fatbin (cubin and "
             "PTX; default), bin (cubin), isa (PTX only, compiled by the "
             "driver when loaded)"),
    cl::init("fatbin"), cl::cat(gatecCat));
static cl::opt<int64_t> gpuThreads(
    "gpu-threads",
    cl::desc("--target=cuda: threads per block (multiple of 32, at most "
             "1024; default 128)"),
    cl::init(128), cl::cat(gatecCat));
static cl::opt<std::string> dumpKernels(
    "dump-kernels",
    cl::desc("--target=cuda: write each kernel module's PTX to DIR and its "
             "ptxas resource usage (registers, shared memory, spills) to "
             "DIR/resources.txt"),
    cl::value_desc("dir"), cl::cat(gatecCat));
static cl::opt<bool> gpuMma(
    "gpu-mma",
    cl::desc("--target=cuda: fp16/bf16 GEMMs on the tensor cores "
             "(mma.sync.m16n8k16, fp32 accumulation; sm_80 and later; row "
             "blocks of 16 instead of 8); with "
             "--cpu-thread-mapping, their emulation on the CPU. Not yet run "
             "on a GPU: off by default"),
    cl::init(false), cl::cat(gatecCat));
static cl::opt<bool> cpuThreadMapping(
    "cpu-thread-mapping",
    cl::desc("--target=cpu: run the GPU's block/thread mapping on the CPU "
             "(checks the mapping without a GPU; slow)"),
    cl::init(false), cl::Hidden, cl::cat(gatecCat));
static cl::opt<std::string>
    ccPath("cc",
           cl::desc("The C compiler/linker that builds the model library"),
           cl::init("clang-22"), cl::cat(gatecCat));
static cl::opt<std::string> report(
    "report",
    cl::desc("Print a report instead of the IR (unless -o is given): gates "
             "(every gate found, after the gated phase), fusion (the loop "
             "nests run and the bytes each moves, fusion off vs on)"),
    cl::value_desc("gates|fusion"), cl::cat(gatecCat));
static cl::opt<int64_t> reportDim(
    "report-dim",
    cl::desc("--report=fusion: the size taken for dynamic dims (default 128)"),
    cl::init(128), cl::cat(gatecCat));
static cl::opt<bool> checkWeights(
    "check-weights",
    cl::desc("After every graph-level phase (onnx to linalg), check that each "
             "initializer that fed an output still does (default on)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<bool> flashAttention(
    "flash-attention",
    cl::desc("Attention as the tiled online-softmax kernel with the gate in "
             "its epilogue (default on; off: the untiled reference form)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<bool> widenProjections(
    "widen-projections",
    cl::desc("The projections of one activation (q, k, v, gate) as one GEMM "
             "over concatenated weights (default on)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<bool> fuseProducers(
    "fuse-producers",
    cl::desc("Fuse producers (GEMMs, elementwise chains) into the loops of "
             "their consumers (default on; off: one loop nest per op)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<int64_t> inlineLimit(
    "inline-weight-limit",
    cl::desc("Initializers with more elements are dense_resource blobs"),
    cl::init(64), cl::cat(gatecCat));

namespace {
std::string phaseList() {
  std::string s;
  for (const gatec::Phase &p : gatec::getPhases())
    s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

LogicalResult writeIR(ModuleOp module, StringRef path, bool forPerson) {
  std::string err;
  auto out = openOutputFile(path, &err);
  if (!out) {
    llvm::errs() << "gatec: cannot write '" << path << "': " << err << "\n";
    return failure();
  }
  OpPrintingFlags flags;
  if (forPerson)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64);
  else
    flags.enableDebugInfo(); // artifacts keep the ONNX node locations
  module->print(out->os(), flags);
  out->os() << "\n";
  out->keep();
  return success();
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  gatec::registerGatecPasses();
  std::string overview =
      "gatec: compiles ONNX models of gated transformers.\n\n"
      "Phases (for --compile-to / --compile-from / --dump-stages): " +
      phaseList() + "; --compile-to=llvm prints the LLVM IR" +
      "\n\nMLIR's options (--mlir-print-ir-after-all, "
      "--mlir-print-debuginfo, --mlir-timing, ...) work too: --help-hidden "
      "lists them.\n";
  cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "gatec 0.1 (phases: " << phaseList() << ")\n";
  });
  // --help shows gatec's options; LLVM's and MLIR's (--mlir-print-ir-after-all,
  // --mlir-print-debuginfo, ...) still work and are listed by --help-hidden.
  cl::HideUnrelatedOptions(gatecCat);
  cl::ParseCommandLineOptions(argc, argv, overview);
  gatec::pipelineOptions().flashAttention = flashAttention;
  gatec::pipelineOptions().widenProjections = widenProjections;
  gatec::pipelineOptions().fuseProducers = fuseProducers;
  gatec::pipelineOptions().target = target;
  gatec::pipelineOptions().gpuArch = gpuArch;
  gatec::pipelineOptions().gpuFormat = gpuFormat;
  gatec::pipelineOptions().gpuThreads = gpuThreads;
  gatec::pipelineOptions().cpuThreadMapping = cpuThreadMapping;
  gatec::pipelineOptions().gpuMma = gpuMma;

  if (emit.empty()) {
    StringRef o(outputFile);
    emit = o.ends_with(".so") ? "lib" : o.ends_with(".o") ? "obj" : "mlir";
  }
  if (emit != "mlir" && emit != "none" && emit != "lib" && emit != "obj") {
    llvm::errs() << "gatec: unknown --emit=" << emit
                 << " (mlir, lib, obj, none)\n";
    return 1;
  }
  if (target != "cpu" && target != "cuda") {
    llvm::errs() << "gatec: unknown --target=" << target
                 << " (targets: cpu, cuda)\n";
    return 1;
  }
  bool cuda = target == "cuda";
  if (cuda) {
    StringRef arch(gpuArch);
    unsigned sm = 0;
    if (!arch.consume_front("sm_") || arch.getAsInteger(10, sm) || sm < 70) {
      llvm::errs() << "gatec: --gpu-arch=" << gpuArch
                   << " is not an NVIDIA architecture gatec supports "
                      "(sm_70 or newer, e.g. sm_80, sm_90)\n";
      return 1;
    }
    if (gpuMma && sm < 80) {
      llvm::errs() << "gatec: --gpu-mma needs sm_80 or newer (mma.sync with "
                      "bf16/f16 operands and fp32 accumulators, m16n8k16); "
                      "--gpu-arch="
                   << gpuArch << "\n";
      return 1;
    }
    if (gpuFormat != "fatbin" && gpuFormat != "bin" && gpuFormat != "isa") {
      llvm::errs() << "gatec: unknown --gpu-format=" << gpuFormat
                   << " (fatbin, bin, isa)\n";
      return 1;
    }
    if (gpuThreads < 32 || gpuThreads > 1024 || gpuThreads % 32) {
      llvm::errs() << "gatec: --gpu-threads=" << gpuThreads
                   << " must be a multiple of 32 from 32 to 1024\n";
      return 1;
    }
  } else if (!dumpKernels.empty()) {
    llvm::errs() << "gatec: --dump-kernels needs --target=cuda\n";
    return 1;
  } else if (gpuMma && !cpuThreadMapping) {
    llvm::errs() << "gatec: --gpu-mma needs --target=cuda (or, to check "
                    "its mapping on the CPU, --cpu-thread-mapping)\n";
    return 1;
  }
  bool binary = emit == "lib" || emit == "obj";
  if (binary && outputFile == "-") {
    llvm::errs() << "gatec: --emit=" << emit << " needs -o FILE\n";
    return 1;
  }
  const auto &phases = gatec::getPhases();
  bool printLLVM = compileTo == "llvm";
  if (printLLVM)
    compileTo = phases.back().name;
  int last = phases.size() - 1;
  if (!report.empty() && report != "gates" && report != "fusion") {
    llvm::errs() << "gatec: unknown --report=" << report
                 << " (gates, fusion)\n";
    return 1;
  }
  if (report == "gates" && compileTo.empty())
    last = gatec::findPhase("gated");
  int targetPhase = phases.size() - 1;
  // The first phase on memrefs: the signature is read before it.
  int bufferPhase = gatec::findPhase("tiled");
  if (binary && last != targetPhase) {
    llvm::errs() << "gatec: --emit=" << emit << " needs every phase through '"
                 << phases.back().name << "'\n";
    return 1;
  }
  if (!compileTo.empty() && (last = gatec::findPhase(compileTo)) < 0) {
    llvm::errs() << "gatec: unknown phase '" << compileTo
                 << "' for --compile-to (phases: " << phaseList() << ")\n";
    return 1;
  }
  if (!dumpKernels.empty() && last < gatec::findPhase("nvvm")) {
    llvm::errs() << "gatec: --dump-kernels needs the phases through 'nvvm' "
                    "(--compile-to="
                 << phases[last].name << " stops before)\n";
    return 1;
  }
  int first = 0;
  if (!compileFrom.empty()) {
    int from = gatec::findPhase(compileFrom);
    if (from < 0) {
      llvm::errs() << "gatec: unknown phase '" << compileFrom
                   << "' for --compile-from (phases: " << phaseList() << ")\n";
      return 1;
    }
    if (from > last) {
      llvm::errs() << "gatec: --compile-from=" << compileFrom
                   << " comes after --compile-to=" << phases[last].name << "\n";
      return 1;
    }
    first = from + 1;
  }

  StringRef in(inputFile);
  bool irInput = in.ends_with(".mlir") || in.ends_with(".mlirbc");
  if (compileFrom.empty() && irInput) {
    llvm::errs() << "gatec: " << inputFile
                 << " is MLIR: say which phase it is with --compile-from=PHASE "
                    "(phases: "
                 << phaseList() << ")\n";
    return 1;
  }
  if (!compileFrom.empty() &&
      (in.ends_with(".onnx") || in.ends_with(".onnxtxt"))) {
    llvm::errs() << "gatec: " << inputFile
                 << " is an ONNX model: --compile-from takes the MLIR of a "
                    "phase (drop --compile-from to import the model)\n";
    return 1;
  }
  if (inlineLimit < 0) {
    llvm::errs() << "gatec: --inline-weight-limit must be >= 0\n";
    return 1;
  }
  if (outputFile != "-") {
    llvm::sys::fs::UniqueID a, b;
    if (!llvm::sys::fs::getUniqueID(inputFile, a) &&
        !llvm::sys::fs::getUniqueID(outputFile, b) && a == b) {
      llvm::errs() << "gatec: -o " << outputFile
                   << " would overwrite the input\n";
      return 1;
    }
  }

  DialectRegistry registry;
  gatec::registerGatecDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  gatec::OnnxDiagnosticHandler diagHandler(&ctx);
  // Diagnostics name the ONNX node; the op itself is not printed into them.
  ctx.printOpOnDiagnostic(false);

  OwningOpRef<ModuleOp> module;
  if (compileFrom.empty()) {
    gatec::ImportOptions opts;
    opts.inlineElementLimit = inlineLimit;
    module = gatec::importOnnxModel(&ctx, inputFile, opts);
  } else {
    llvm::SourceMgr sm;
    std::string err;
    auto buf = openInputFile(inputFile, &err);
    if (!buf) {
      llvm::errs() << inputFile << ": " << err << "\n";
      return 1;
    }
    sm.AddNewSourceBuffer(std::move(buf), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sm, &ctx);
  }
  if (!module)
    return 1;
  if (!module->lookupSymbol("main_graph")) {
    llvm::errs() << "gatec: " << inputFile
                 << ": no @main_graph function (not gatec IR)\n";
    return 1;
  }

  if (report == "fusion" && reportDim < 1) {
    llvm::errs() << "gatec: --report-dim must be >= 1\n";
    return 1;
  }
  if (report == "fusion") {
    if (compileFrom.empty() || first < gatec::findPhase("tiled"))
      return failed(gatec::printFusionReport(*module, first, reportDim,
                                             llvm::outs()))
                 ? 1
                 : 0;
    llvm::errs() << "gatec: --report=fusion needs the IR of a phase before "
                    "'tiled'\n";
    return 1;
  }

  if (!dumpStages.empty()) {
    if (auto ec = llvm::sys::fs::create_directories(dumpStages)) {
      llvm::errs() << "gatec: cannot create '" << dumpStages
                   << "': " << ec.message() << "\n";
      return 1;
    }
  }
  std::optional<gatec::ModelSignature> signature;
  for (int i = first; i <= last; ++i) {
    if (i == bufferPhase) {
      // The signature, read while the types are still tensors.
      auto sig = gatec::readSignature(*module);
      if (failed(sig))
        return 1;
      signature = *sig;
      gatec::requestCInterface(*module);
    }
    PassManager pm(&ctx);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    phases[i].addPasses(pm);
    // The accounting follows initializers by their locations through the
    // graph-level phases; from `tiled` on, constants are folded into loop
    // bodies (a splat bias becomes a scalar in the loop) and lose them.
    if (checkWeights && i < bufferPhase) {
      gatec::gated::CheckWeightsOptions o;
      o.phase = phases[i].name;
      pm.addPass(gatec::gated::createCheckWeights(o));
    }
    if (failed(pm.run(*module)))
      return 1;
    if (!dumpKernels.empty() && phases[i].name == "nvvm" &&
        failed(gatec::dumpKernels(*module, dumpKernels, gpuArch)))
      return 1;
    if (!dumpStages.empty()) {
      SmallString<256> path(dumpStages);
      char name[64];
      snprintf(name, sizeof(name), "%02d-%s.mlir", i + 1,
               phases[i].name.c_str());
      llvm::sys::path::append(path, name);
      if (failed(writeIR(*module, path, /*forPerson=*/false)))
        return 1;
    }
  }
  if (failed(verify(*module)))
    return 1;

  if (report == "gates") {
    gatec::printGateReport(*module, llvm::outs());
    if (outputFile == "-")
      return 0;
  }
  if (emit == "none")
    return 0;
  if (binary) {
    if (!signature) {
      llvm::errs() << "gatec: a library needs the IR of a phase before 'tiled' "
                      "(--compile-from=linalg or earlier)\n";
      return 1;
    }
    gatec::EmitOptions opts;
    opts.output = outputFile;
    opts.objectOnly = emit == "obj";
    opts.cc = ccPath;
    opts.runtimeInclude = GATEC_RUNTIME_INCLUDE_DIR;
    if (cuda) {
      opts.cuda = true;
      opts.gpuArch = gpuArch;
      opts.cudaRuntimeLibDir = GATEC_CUDA_RUNTIME_DIR;
    }
    return failed(gatec::emitLibrary(*module, *signature, opts)) ? 1 : 0;
  }
  if (printLLVM) {
    llvm::LLVMContext llctx;
    auto llvmModule = translateModuleToLLVMIR(*module, llctx, "gatec_model");
    if (!llvmModule)
      return 1;
    std::string err;
    auto out = openOutputFile(outputFile, &err);
    if (!out) {
      llvm::errs() << "gatec: " << err << "\n";
      return 1;
    }
    llvmModule->print(out->os(), nullptr);
    out->keep();
    return 0;
  }
  bool toTerminal = outputFile == "-";
  if (failed(writeIR(*module, outputFile, toTerminal && elideWeights)))
    return 1;
  return 0;
}
