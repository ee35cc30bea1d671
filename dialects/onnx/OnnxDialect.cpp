//===- OnnxDialect.cpp - the onnx import dialect --------------------------===//
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace gatec::onnx;

#include "dialects/onnx/OnnxDialect.cpp.inc"
#include "dialects/onnx/OnnxInterfaces.cpp.inc"

void OnnxDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/onnx/OnnxOps.cpp.inc"
      >();
}

Operation *OnnxDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  if (isa<NoneType>(type))
    return NoValueOp::create(builder, loc);
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
