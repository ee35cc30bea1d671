//===- LibraryEmitter.h - a compiled model as a shared library --*- C++ -*-===//
//
// The last step of the CPU target: the LLVM dialect module of phase `cpu`
// becomes one shared library that exports the model ABI of
// runtime/include/gatec/model_abi.h (signature + run entry point), with the
// weights in its read-only data (mapped, not copied, when loaded).
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_COMPILER_TARGET_LIBRARYEMITTER_H
#define GATEC_COMPILER_TARGET_LIBRARYEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include <string>
#include <vector>

namespace gatec {

/// One input or output of @main_graph, as the model ABI describes it.
struct ValueSignature {
  std::string name;
  int32_t dtype = 0;         // gatec_dtype numbering
  std::vector<int64_t> dims; // -1 = dynamic
  std::vector<std::string> dimParams;
};

struct ModelSignature {
  std::vector<ValueSignature> inputs, outputs;
};

/// Reads the signature of @main_graph while its types are still tensors;
/// fails (with an error) on element types the ABI has no code for.
mlir::FailureOr<ModelSignature> readSignature(mlir::ModuleOp module);

/// Marks @main_graph so that the LLVM lowering emits its C interface
/// (_mlir_ciface_main_graph), which the generated wrapper calls.
void requestCInterface(mlir::ModuleOp module);

struct EmitOptions {
  std::string output;      // the .so or .o to write
  bool objectOnly = false; // write a relocatable object instead
  std::string cc = "clang-22";
  /// -march of the model code: a CPU name, or native (the host).
  std::string march = "native";
  std::string runtimeInclude; // dir holding gatec/model_abi.h
  /// CUDA: the host module launches kernels through libgatec_cuda (the
  /// runtime's CUDA backend, in cudaRuntimeLibDir); the ABI wrapper copies
  /// inputs to the device and outputs back.
  bool cuda = false;
  std::string gpuArch;
  std::string cudaRuntimeLibDir;
};

/// Writes the PTX of every gpu.binary of `module` (phase `ptx`) or of every
/// gpu.module (phase `nvvm`, translated here) to DIR/<kernel module>.ptx,
/// and runs `ptxas -v` for `gpuArch` on each when ptxas is found, writing its
/// resource usage (registers, shared memory, spill stores/loads) to
/// DIR/resources.txt.
mlir::LogicalResult dumpKernels(mlir::ModuleOp module, llvm::StringRef dir,
                                llvm::StringRef gpuArch);

/// Translates the LLVM dialect module to LLVM IR, generates the ABI wrapper
/// for `sig`, and compiles and links both for the host CPU.
mlir::LogicalResult emitLibrary(mlir::ModuleOp llvmModule,
                                const ModelSignature &sig,
                                const EmitOptions &opts);

/// The C source of the ABI wrapper. With `cudaArch` set (e.g. "sm_90"), the
/// wrapper copies the inputs to device memory, runs, waits, and copies the
/// outputs back through libgatec_cuda (runtime/src/cuda/gatec_cuda.h).
std::string abiWrapperSource(const ModelSignature &sig,
                             llvm::StringRef cudaArch = "");

} // namespace gatec

#endif
