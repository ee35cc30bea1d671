//===- Passes.h - passes over the onnx dialect ------------------*- C++ -*-===//
#ifndef GATEC_PASSES_ONNX_PASSES_H
#define GATEC_PASSES_ONNX_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace gatec::onnx {
#define GEN_PASS_DECL
#include "passes/onnx/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/onnx/Passes.h.inc"
} // namespace gatec::onnx

#endif
