//===- ConstantValues.cpp - reading constant operands ---------------------===//
#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace gatec::onnx {

ElementsAttr getConstantAttr(Value v) {
  if (!v)
    return {};
  if (auto c = v.getDefiningOp<ConstantOp>())
    return c.getValue();
  return {};
}

std::optional<SmallVector<int64_t>> getConstantInts(Value v) {
  ElementsAttr attr = getConstantAttr(v);
  if (!attr || !attr.getElementType().isInteger())
    return std::nullopt;
  unsigned width = attr.getElementType().getIntOrFloatBitWidth();
  bool isUnsigned = attr.getElementType().isUnsignedInteger();
  SmallVector<int64_t> out;
  if (auto dense = dyn_cast<DenseIntElementsAttr>(attr)) {
    for (const APInt &x : dense.getValues<APInt>())
      out.push_back(width == 1 || isUnsigned ? (int64_t)x.getZExtValue()
                                             : x.getSExtValue());
    return out;
  }
  if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    ArrayRef<char> data = blob->getData();
    int64_t n = attr.getNumElements();
    unsigned bytes = width / 8;
    if (width % 8 || (int64_t)data.size() < n * bytes)
      return std::nullopt;
    for (int64_t i = 0; i < n; ++i) {
      const char *p = data.data() + i * bytes;
      int64_t x = 0;
      switch (bytes) {
      case 1: x = isUnsigned ? (int64_t)*(const uint8_t *)p : *(const int8_t *)p; break;
      case 2: { int16_t t; memcpy(&t, p, 2); x = isUnsigned ? (uint16_t)t : t; break; }
      case 4: { int32_t t; memcpy(&t, p, 4); x = isUnsigned ? (int64_t)(uint32_t)t : t; break; }
      case 8: memcpy(&x, p, 8); break;
      default: return std::nullopt;
      }
      out.push_back(x);
    }
    return out;
  }
  return std::nullopt;
}

std::optional<SmallVector<double>> getConstantDoubles(Value v) {
  ElementsAttr attr = getConstantAttr(v);
  if (!attr)
    return std::nullopt;
  if (attr.getElementType().isInteger()) {
    auto ints = getConstantInts(v);
    if (!ints)
      return std::nullopt;
    return SmallVector<double>(ints->begin(), ints->end());
  }
  auto dense = dyn_cast<DenseFPElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  SmallVector<double> out;
  for (const APFloat &x : dense.getValues<APFloat>()) {
    APFloat d = x;
    bool lost;
    d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    out.push_back(d.convertToDouble());
  }
  return out;
}

std::optional<SmallVector<std::optional<int64_t>>> getPartialInts(Value v) {
  using Result = SmallVector<std::optional<int64_t>>;
  if (auto ints = getConstantInts(v))
    return Result(ints->begin(), ints->end());
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto shape = dyn_cast<ShapeOp>(def)) {
    auto t = dyn_cast<RankedTensorType>(shape.getData().getType());
    if (!t)
      return std::nullopt;
    int64_t rank = t.getRank();
    int64_t start = shape.getStart();
    int64_t end = shape.getEnd() ? *shape.getEnd() : rank;
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    Result r;
    for (int64_t i = start; i < end; ++i)
      r.push_back(t.isDynamicDim(i) ? std::nullopt
                                    : std::optional<int64_t>(t.getDimSize(i)));
    return r;
  }
  if (auto gather = dyn_cast<GatherOp>(def)) {
    auto data = getPartialInts(gather.getData());
    auto idx = getConstantInts(gather.getIndices());
    if (!data || !idx || gather.getAxis() != 0)
      return std::nullopt;
    Result r;
    for (int64_t i : *idx) {
      if (i < 0) i += data->size();
      if (i < 0 || i >= (int64_t)data->size())
        return std::nullopt;
      r.push_back((*data)[i]);
    }
    return r;
  }
  if (isa<UnsqueezeOp, SqueezeOp, ReshapeOp, CastOp, IdentityOp>(def)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() > 1 || !t.getElementType().isInteger())
      return std::nullopt;
    auto inner = getPartialInts(def->getOperand(0));
    if (!inner)
      return std::nullopt;
    return inner;
  }
  if (auto concat = dyn_cast<ConcatOp>(def)) {
    Result r;
    for (Value in : concat.getInputs()) {
      auto part = getPartialInts(in);
      if (!part) {
        auto t = dyn_cast<RankedTensorType>(in.getType());
        if (!t || t.getRank() != 1 || t.isDynamicDim(0))
          return std::nullopt;
        part = Result(t.getDimSize(0), std::nullopt);
      }
      r.append(part->begin(), part->end());
    }
    return r;
  }
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (t && t.getRank() == 1 && !t.isDynamicDim(0))
    return Result(t.getDimSize(0), std::nullopt);
  if (t && t.getRank() == 0)
    return Result(1, std::nullopt);
  return std::nullopt;
}

} // namespace gatec::onnx
