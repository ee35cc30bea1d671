//===- Passes.h - the tiled phase -------------------------------*- C++ -*-===//
#ifndef GATEC_PASSES_TILING_PASSES_H
#define GATEC_PASSES_TILING_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace gatec::tiling {
#define GEN_PASS_DECL
#include "passes/tiling/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/tiling/Passes.h.inc"
} // namespace gatec::tiling

#endif
