//===- OnnxOps.cpp - op verification and type refinement ------------------===//
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace gatec::onnx {

namespace {
/// The more precise of two compatible types, or null if incompatible.
Type meet(Type declared, Type inferred) {
  if (declared == inferred)
    return declared;
  if (isa<NoneType>(declared) || isa<NoneType>(inferred))
    return {};
  auto d = dyn_cast<TensorType>(declared), i = dyn_cast<TensorType>(inferred);
  if (!d || !i || d.getElementType() != i.getElementType())
    return {};
  if (!d.hasRank())
    return i;
  if (!i.hasRank())
    return d;
  if (d.getRank() != i.getRank())
    return {};
  SmallVector<int64_t> shape;
  for (int64_t k = 0; k < d.getRank(); ++k) {
    int64_t a = d.getDimSize(k), b = i.getDimSize(k);
    if (ShapedType::isDynamic(a))
      shape.push_back(b);
    else if (ShapedType::isDynamic(b) || a == b)
      shape.push_back(a);
    else
      return {};
  }
  return RankedTensorType::get(shape, d.getElementType());
}
} // namespace

LogicalResult verifyInferredResultTypes(Operation *op) {
  auto iface = dyn_cast<ShapeInferenceOpInterface>(op);
  if (!iface)
    return success();
  SmallVector<Type> inferred;
  if (failed(iface.inferResultTypes(inferred)))
    return failure();
  if (inferred.size() != op->getNumResults())
    return op->emitOpError()
           << "has " << op->getNumResults()
           << " results, its ONNX semantics give " << inferred.size();
  for (auto [idx, res, inf] : llvm::enumerate(op->getResults(), inferred)) {
    if (!meet(res.getType(), inf))
      return op->emitOpError()
             << "result #" << idx << " is declared " << res.getType()
             << " but its operands give " << inf;
  }
  return success();
}

LogicalResult refineResultTypes(Operation *op, bool &changed) {
  auto iface = dyn_cast<ShapeInferenceOpInterface>(op);
  if (!iface)
    return success();
  SmallVector<Type> inferred;
  if (failed(iface.inferResultTypes(inferred)))
    return failure();
  if (inferred.size() != op->getNumResults())
    return op->emitOpError()
           << "has " << op->getNumResults()
           << " results, its ONNX semantics give " << inferred.size();
  for (auto [idx, res, inf] : llvm::enumerate(op->getResults(), inferred)) {
    Type m = meet(res.getType(), inf);
    if (!m)
      return op->emitOpError()
             << "result #" << idx << " is declared " << res.getType()
             << " but its operands give " << inf;
    if (m != res.getType()) {
      res.setType(m);
      changed = true;
    }
  }
  return success();
}

} // namespace gatec::onnx

using namespace gatec::onnx;

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ConstantOp::verify() {
  if (getValue().getType() != getType())
    return emitOpError() << "result type " << getType()
                         << " differs from the type of its value "
                         << getValue().getType();
  return success();
}

/// onnx.Constant dense<[1, 2]> : tensor<2xi64>  (the value's type is the
/// result type).
void ConstantOp::print(OpAsmPrinter &p) {
  p.printOptionalAttrDict((*this)->getAttrs(), {"value"});
  p << ' ';
  p.printAttribute(getValue());
}

ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  Attribute value;
  if (parser.parseOptionalAttrDict(result.attributes))
    return failure();
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseAttribute(value))
    return failure();
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements)
    return parser.emitError(loc, "expected an elements attribute");
  result.addAttribute("value", elements);
  result.addTypes(elements.getType());
  return success();
}
OpFoldResult NoValueOp::fold(FoldAdaptor) {
  return UnitAttr::get(getContext());
}

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxOps.cpp.inc"
