//===- FusionReport.h - gatec --report=fusion -------------------*- C++ -*-===//
#ifndef GATEC_COMPILER_FUSIONREPORT_H
#define GATEC_COMPILER_FUSIONREPORT_H

#include "compiler/Pipeline.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <string>

namespace gatec {

/// Compiles `imported` (the IR of phase `firstPhase`) through the tiled
/// phase twice, with the pipeline of `options` (copied) with the fusion
/// passes off and as given, and prints the loop
/// nests ("kernels") of @main_graph with the bytes of the buffers each
/// reads and writes. A dynamic dim counts as the size `dimParams` gives
/// the graph-input dim_param it is computed from (traced through the index
/// arithmetic that sizes each buffer), else as `dynamicDim`. A name in
/// `dimParams` that is no input's dim_param is an error.
mlir::LogicalResult
printFusionReport(mlir::ModuleOp imported, int firstPhase,
                  const PipelineOptions &options, int64_t dynamicDim,
                  const std::map<std::string, int64_t> &dimParams,
                  llvm::raw_ostream &os);

} // namespace gatec

#endif
