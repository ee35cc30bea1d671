//===- Driver.h - the gatec compiler as a library call ----------*- C++ -*-===//
//
// What `gatec` does, as one call: check the options, import the ONNX model
// (or parse the IR of a phase), run the phases from/to a name with the
// weight accounting after each graph-level phase, dump stages, print a
// report, and write the artifact (IR, LLVM IR, an object or a model
// library). The tool only parses its command line into CompileOptions.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_COMPILER_DRIVER_H
#define GATEC_COMPILER_DRIVER_H

#include "compiler/Pipeline.h"
#include "mlir/IR/MLIRContext.h"
#include <cstdint>
#include <string>

namespace gatec {

struct CompileOptions {
  /// model.onnx, model.onnxtxt, or the MLIR of a phase (with compileFrom).
  std::string input;
  /// "-" is stdout.
  std::string output = "-";
  /// Stop after this phase ("" = the last; "llvm" = the last, printed as
  /// LLVM IR).
  std::string compileTo;
  /// The input is the IR of this phase ("" = an ONNX model).
  std::string compileFrom;
  /// Write the IR after every phase to DIR/NN-<phase>.mlir.
  std::string dumpStages;
  /// CUDA: each kernel module's PTX and ptxas resource usage to DIR.
  std::string dumpKernels;
  /// mlir, lib, obj or none; "" = from the output's extension.
  std::string emit;
  /// "", gates or fusion.
  std::string report;
  /// --report=fusion: the size taken for dynamic dims.
  int64_t reportDim = 128;
  /// --report=fusion: sizes by dim_param, "name=N,name=N" (the others
  /// take reportDim).
  std::string reportDims;
  /// Elide large weights when printing IR to the terminal.
  bool elideWeights = true;
  /// The weight accounting after every graph-level phase.
  bool checkWeights = true;
  /// Initializers with more elements are dense_resource blobs.
  int64_t inlineWeightLimit = 64;
  /// The C compiler/linker that builds the model library.
  std::string cc = "clang-22";
  /// runtime/include (model_abi.h) and the folder of libgatec_cuda.so.
  std::string runtimeInclude, cudaRuntimeLibDir;
  /// Print each phase's passes as a textual pipeline, and stop.
  bool printPipelines = false;
  /// Target and ablations.
  PipelineOptions pipeline;
};

/// Builds the passes of every phase in `phases` (failing where a textual
/// pipeline does not parse) and, with `os`, prints them, one phase a line:
/// "<phase>: <pipeline>".
mlir::LogicalResult printPipelines(mlir::MLIRContext &ctx,
                                   llvm::ArrayRef<Phase> phases,
                                   llvm::raw_ostream *os);

/// Checks the options that do not depend on the input: an error message,
/// or "" if they are consistent.
std::string checkOptions(const CompileOptions &options);

/// Runs the compiler as `gatec` does. Errors (located at the ONNX node
/// where they have one) go to stderr; returns the exit status: 0, or 1 on
/// any error.
int runCompiler(CompileOptions options);

} // namespace gatec

#endif
