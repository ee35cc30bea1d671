//===- Pipeline.h - the phases of gatec -------------------------*- C++ -*-===//
//
// The spine of the compiler (docs/design.md, "Phases"): ordered, named
// phases. Phase 1 (`onnx`) is produced by the importer; every later phase is
// a pass pipeline that turns the IR of the previous phase into its own.
// `--compile-to=`, `--compile-from=` and `--dump-stages=` use these names.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_COMPILER_PIPELINE_H
#define GATEC_COMPILER_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include <functional>
#include <string>
#include <vector>

namespace gatec {

struct Phase {
  std::string name;
  std::string summary;
  /// Adds the passes that produce this phase from the previous one (for the
  /// first phase: the clean-up that runs right after import); fails if one
  /// of its textual pipelines does not parse.
  std::function<mlir::LogicalResult(mlir::OpPassManager &)> addPasses;
};

/// Switches of the pipeline: the target and the ablations.
struct PipelineOptions {
  /// gated.attention as the tiled online-softmax kernel with its gate in the
  /// epilogue (--tile-attention); false: the untiled reference lowering.
  bool flashAttention = true;
  /// The projections of one activation as one GEMM (--widen-projections).
  bool widenProjections = true;
  /// The RMSNorm (and its gate) after linear attention as the linear
  /// attention's epilogue (--fuse-linear-attention-epilogue).
  bool fuseNormEpilogue = true;
  /// Producers fused into their consumers' loops (--tile-and-fuse-linalg's
  /// fusion, --fuse-elementwise); false: one loop nest per linalg op.
  bool fuseProducers = true;
  /// cpu (the host CPU) or cuda (NVIDIA GPUs; phases gpu, nvvm, ptx).
  std::string target = "cpu";
  /// CUDA: the SM architecture of the kernels (sm_80, sm_90, ...).
  std::string gpuArch = "sm_90";
  /// CUDA: threads per block of every kernel.
  int64_t gpuThreads = 128;
  /// CUDA: the kernels' container (isa: PTX text, JIT-compiled by the
  /// driver; bin: cubin from ptxas; fatbin: cubin and PTX).
  std::string gpuFormat = "fatbin";
  /// CPU: run the GPU thread mapping (--distribute-to-threads) on the CPU
  /// first, to check it against the unmapped form without a GPU.
  bool cpuThreadMapping = false;
  /// CUDA: fp16/bf16 GEMMs on the tensor cores (mma.sync); with
  /// cpuThreadMapping, their emulation on the CPU.
  bool gpuMma = false;
  /// CUDA: fp32 GEMMs on the tensor cores too, with tf32 operands
  /// (mma.sync.m16n8k8); implies gpuMma.
  bool gpuTf32 = false;
  /// CPU: contractions as register-blocked FMA micro-kernels over weights
  /// packed at compile time (--matmul-micro-kernel); false: scalar loops.
  bool cpuMicroKernels = true;
  /// CPU: the vector register width the micro-kernels use, in bits (512
  /// with AVX-512, 256 with AVX2, 128 otherwise); 0: the host's.
  int64_t cpuVectorBits = 0;
  /// CPU: each tiled kernel as a call of a function shared by identical
  /// kernels (--outline-loop-nests).
  bool outlineKernels = true;
  /// CPU micro-kernels: the rows of each row block the tiling hands to a
  /// thread (its producers are fused per block); 0: 32.
  int64_t cpuRowBlock = 0;
  /// The run-time checks of the data (indices, divisors) recorded in one
  /// error word read once at the end of the run (--defer-data-checks);
  /// the driver turns it on for cuda (no check waits for the GPU).
  bool deferDataChecks = false;
  /// The run-time checks of sizes, axes and data; false erases them
  /// (--strip-run-time-checks): only to measure what they cost.
  bool runTimeChecks = true;
  /// CPU: the x86-64 CPU the library is built for (clang's -march names:
  /// skylake-avx512, znver4, x86-64-v3, ...); empty: the compiling machine.
  std::string cpu;
};
/// The phases of `options.target`, in order; each phase's passes are
/// built from (a copy of) `options`.
std::vector<Phase> buildPhases(const PipelineOptions &options);

/// Index of the phase named `name` in `phases`, or -1.
int findPhase(llvm::ArrayRef<Phase> phases, llvm::StringRef name);

/// "onnx, gated, ...": the names of `phases`.
std::string phaseNames(llvm::ArrayRef<Phase> phases);

/// Adds the textual pass pipeline `pipeline` to `pm`; a pipeline that does
/// not parse is an error (naming the phase and MLIR's reason), never a
/// silently shorter pipeline.
mlir::LogicalResult addPassPipeline(mlir::OpPassManager &pm,
                                    llvm::StringRef phase,
                                    llvm::StringRef pipeline);

} // namespace gatec

#endif
