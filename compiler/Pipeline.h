//===- Pipeline.h - the phases of gatec -------------------------*- C++ -*-===//
//
// The spine of the compiler (DESIGN.md, "Phases"): an ordered list of named
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
  /// first phase: the clean-up that runs right after import).
  std::function<void(mlir::OpPassManager &)> addPasses;
};

/// Switches of the pipeline, for ablations (set before running phases).
struct PipelineOptions {
  /// gated.attention as the tiled online-softmax kernel with its gate in the
  /// epilogue (--tile-attention); false: the untiled reference lowering.
  bool flashAttention = true;
  /// The projections of one activation as one GEMM (--widen-projections).
  bool widenProjections = true;
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
};
PipelineOptions &pipelineOptions();

/// All phases of the current target (pipelineOptions().target), in order.
const std::vector<Phase> &getPhases();

/// Index of the phase named `name`, or -1.
int findPhase(llvm::StringRef name);

/// Registers every dialect gatec's IR may contain.
void registerGatecDialects(mlir::DialectRegistry &registry);

/// Registers every pass of the project (for gatec-opt and pass pipelines).
void registerGatecPasses();

} // namespace gatec

#endif
