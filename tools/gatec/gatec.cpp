//===- gatec.cpp - the gatec compiler -------------------------------------===//
//
//   gatec MODEL.onnx [--compile-to=PHASE] [-o FILE] [--dump-stages=DIR]
//   gatec IR.mlir --compile-from=PHASE [--compile-to=PHASE] ...
//
// Option parsing only: the compiler is compiler/Driver.h's runCompiler.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;

static cl::OptionCategory gatecCat("gatec options");

static cl::opt<std::string>
    inputFile(cl::Positional, cl::Optional,
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
static cl::opt<bool> gpuTf32(
    "gpu-tf32",
    cl::desc("--target=cuda: fp32 GEMMs on the tensor cores too, with tf32 "
             "operands (10-bit mantissas, rounded to nearest; "
             "mma.sync.m16n8k8, fp32 accumulation; implies --gpu-mma). Off "
             "by default: an fp32 model keeps fp32 operands unless asked "
             "(about 1e-3 relative error per product instead of 6e-8)"),
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
static cl::opt<std::string> reportDims(
    "report-dims",
    cl::desc("--report=fusion: sizes by dim_param, e.g. batch=1,seq=2048 "
             "(the other dynamic dims take --report-dim)"),
    cl::value_desc("name=N,..."), cl::init(""), cl::cat(gatecCat));
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
static cl::opt<bool> fuseNormEpilogue(
    "fuse-norm-epilogue",
    cl::desc("The (gated) RMSNorm over the head dim after linear attention "
             "as the linear attention's epilogue (default on; off: a kernel "
             "of its own)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<bool> fuseProducers(
    "fuse-producers",
    cl::desc("Fuse producers (GEMMs, elementwise chains) into the loops of "
             "their consumers (default on; off: one loop nest per op)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<bool> cpuMicroKernels(
    "cpu-micro-kernels",
    cl::desc("--target=cpu: contractions as register-blocked FMA "
             "micro-kernels over weights packed at compile time (default "
             "on; off: scalar loops)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<int64_t> cpuVectorBits(
    "cpu-vector-bits",
    cl::desc("--target=cpu: vector register width of the micro-kernels "
             "(512, 256 or 128; default: the host's)"),
    cl::init(0), cl::cat(gatecCat));
static cl::opt<bool> cpuOutlineKernels(
    "cpu-outline-kernels",
    cl::desc("--target=cpu: each tiled kernel as a function, one per "
             "distinct kernel, so that repeated layers are compiled once "
             "(default on)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<int64_t> cpuRowBlock(
    "cpu-row-block",
    cl::desc("--target=cpu: rows per row block of the tiled loops with "
             "micro-kernels (each packed weight panel is reused over a "
             "block's rows; its fused producers' tiles are this tall; "
             "default 32)"),
    cl::init(0), cl::cat(gatecCat));
static cl::opt<std::string> cpuName(
    "cpu",
    cl::desc("--target=cpu: build the library for this x86-64 CPU (clang's "
             "-march names: skylake-avx512, znver4, x86-64-v3, ...; default: "
             "the compiling machine)"),
    cl::value_desc("name"), cl::init(""), cl::cat(gatecCat));
static cl::opt<cl::boolOrDefault> deferDataChecks(
    "defer-data-checks",
    cl::desc("Run-time checks of the data (indices in range, divisors "
             "nonzero) folded into one error word that is read once at the "
             "end of the run, the ops clamping their indices meanwhile "
             "(default: on for --target=cuda, so that no check waits for "
             "the GPU; off for cpu)"),
    cl::cat(gatecCat));
static cl::opt<bool> runTimeChecks(
    "run-time-checks",
    cl::desc("Check run-time sizes, axes and data (false: the checks are "
             "erased, to measure what they cost; such a library is not safe "
             "on bad input)"),
    cl::init(true), cl::cat(gatecCat));
static cl::opt<bool> printPipelines(
    "print-pipelines",
    cl::desc("Print the passes of each phase of the target as a textual "
             "pass pipeline, and stop"),
    cl::init(false), cl::cat(gatecCat));
static cl::opt<int64_t> inlineLimit(
    "inline-weight-limit",
    cl::desc("Initializers with more elements are dense_resource blobs"),
    cl::init(64), cl::cat(gatecCat));

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  gatec::PipelineOptions cpu, cuda;
  cuda.target = "cuda";
  std::string phases = gatec::phaseNames(gatec::buildPhases(cpu)) + " (cpu); " +
                       gatec::phaseNames(gatec::buildPhases(cuda)) + " (cuda)";
  std::string overview =
      "gatec: compiles ONNX models of gated transformers.\n\n"
      "Phases (for --compile-to / --compile-from / --dump-stages): " +
      phases + "; --compile-to=llvm prints the LLVM IR" +
      "\n\nMLIR's options (--mlir-print-ir-after-all, "
      "--mlir-print-debuginfo, --mlir-timing, ...) work too: --help-hidden "
      "lists them.\n";
  cl::AddExtraVersionPrinter([&](llvm::raw_ostream &os) {
    os << "gatec 0.1 (phases: " << phases << ")\n";
  });
  // --help shows gatec's options; LLVM's and MLIR's (--mlir-print-ir-after-all,
  // --mlir-print-debuginfo, ...) still work and are listed by --help-hidden.
  cl::HideUnrelatedOptions(gatecCat);
  cl::ParseCommandLineOptions(argc, argv, overview);

  gatec::CompileOptions o;
  o.input = inputFile;
  o.output = outputFile;
  o.compileTo = compileTo;
  o.compileFrom = compileFrom;
  o.dumpStages = dumpStages;
  o.dumpKernels = dumpKernels;
  o.emit = emit;
  o.report = report;
  o.reportDim = reportDim;
  o.reportDims = reportDims;
  o.elideWeights = elideWeights;
  o.checkWeights = checkWeights;
  o.inlineWeightLimit = inlineLimit;
  o.cc = ccPath;
  o.printPipelines = printPipelines;
  o.runtimeInclude = GATEC_RUNTIME_INCLUDE_DIR;
  o.cudaRuntimeLibDir = GATEC_CUDA_RUNTIME_DIR;
  gatec::PipelineOptions &p = o.pipeline;
  p.flashAttention = flashAttention;
  p.widenProjections = widenProjections;
  p.fuseProducers = fuseProducers;
  p.fuseNormEpilogue = fuseNormEpilogue;
  p.cpuMicroKernels = cpuMicroKernels;
  p.cpuVectorBits = cpuVectorBits;
  p.cpuRowBlock = cpuRowBlock;
  p.outlineKernels = cpuOutlineKernels;
  // native: the compiling machine, as without the option.
  p.cpu = cpuName == "native" ? std::string() : std::string(cpuName);
  p.target = target;
  p.deferDataChecks = deferDataChecks == cl::BOU_UNSET
                          ? p.target == "cuda"
                          : deferDataChecks == cl::BOU_TRUE;
  p.runTimeChecks = runTimeChecks;
  p.gpuArch = gpuArch;
  p.gpuFormat = gpuFormat;
  p.gpuThreads = gpuThreads;
  p.cpuThreadMapping = cpuThreadMapping;
  p.gpuMma = gpuMma;
  p.gpuTf32 = gpuTf32;
  return gatec::runCompiler(o);
}
