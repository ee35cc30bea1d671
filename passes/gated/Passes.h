//===- Passes.h - raising onnx graphs to the gated dialect ------*- C++ -*-===//
#ifndef GATEC_PASSES_GATED_PASSES_H
#define GATEC_PASSES_GATED_PASSES_H

#include "dialects/gated/GatedDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace gatec::gated {
#define GEN_PASS_DECL
#include "passes/gated/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

#endif
