//===- Passes.h - the CPU target --------------------------------*- C++ -*-===//
#ifndef GATEC_PASSES_CPU_PASSES_H
#define GATEC_PASSES_CPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace gatec::cpu {
#define GEN_PASS_DECL
#include "passes/cpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/cpu/Passes.h.inc"
} // namespace gatec::cpu

#endif
