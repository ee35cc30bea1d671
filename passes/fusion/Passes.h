//===- Passes.h - the fused phase -------------------------------*- C++ -*-===//
#ifndef GATEC_PASSES_FUSION_PASSES_H
#define GATEC_PASSES_FUSION_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace gatec::fusion {
#define GEN_PASS_DECL
#include "passes/fusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/fusion/Passes.h.inc"
} // namespace gatec::fusion

#endif
