//===- FusionReport.h - gatec --report=fusion -------------------*- C++ -*-===//
#ifndef GATEC_COMPILER_FUSIONREPORT_H
#define GATEC_COMPILER_FUSIONREPORT_H

#include "compiler/Pipeline.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace gatec {

/// Compiles `imported` (the IR of phase `firstPhase`) through the tiled
/// phase twice, with the pipeline of `options` (copied) with the fusion
/// passes off and as given, and prints the loop
/// nests ("kernels") of @main_graph with the bytes of the buffers each
/// reads and writes; dynamic dims count as `dynamicDim`.
mlir::LogicalResult printFusionReport(mlir::ModuleOp imported, int firstPhase,
                                      const PipelineOptions &options,
                                      int64_t dynamicDim,
                                      llvm::raw_ostream &os);

} // namespace gatec

#endif
