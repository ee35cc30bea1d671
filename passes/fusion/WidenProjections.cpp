//===- WidenProjections.cpp - --widen-projections -------------------------===//
//
// Horizontal GEMM fusion: the MatMuls of one activation by constant weights
// become one MatMul by the concatenated weights, sliced per projection.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/Passes.h"

#include "passes/common/ConstantBytes.h"
#include "passes/common/MappedPages.h"

#include "dialects/onnx/OnnxDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/MapVector.h"

namespace gatec::fusion {
#define GEN_PASS_DEF_WIDENPROJECTIONS
#include "passes/fusion/Passes.h.inc"
} // namespace gatec::fusion

using namespace mlir;
using namespace gatec;

namespace {
/// A projection x · W whose W is a 2-D constant with its bytes.
struct Projection {
  onnx::MatMulOp op;
  onnx::ConstantOp weight;
  ArrayRef<char> bytes;
  int64_t k, n;
  /// x·W + b with a constant bias of N elements: the Add and b's bytes.
  onnx::AddOp biasAdd;
  ArrayRef<char> bias;
};

/// The bias of a projection: its only user adds a constant of N elements
/// (shape [N], or 1s then N) of the same element type.
void findBias(Projection &p) {
  if (!p.op->hasOneUse())
    return;
  auto add = dyn_cast<onnx::AddOp>(*p.op->user_begin());
  if (!add || add.getType() != p.op.getType())
    return;
  Value other = add.getA() == p.op.getResult() ? add.getB() : add.getA();
  auto c = other.getDefiningOp<onnx::ConstantOp>();
  auto ct = c ? dyn_cast<RankedTensorType>(c.getType()) : nullptr;
  if (!ct || !ct.hasStaticShape() || ct.getNumElements() != p.n ||
      ct.getShape().back() != p.n ||
      ct.getElementType() !=
          cast<ShapedType>(p.weight.getType()).getElementType())
    return;
  auto bytes = common::constantBytes(c.getValue());
  int64_t elemBytes = ct.getElementType().getIntOrFloatBitWidth() / 8;
  if (!bytes || (int64_t)bytes->size() != p.n * elemBytes)
    return;
  p.biasAdd = add;
  p.bias = *bytes;
}

std::optional<Projection> asProjection(onnx::MatMulOp op) {
  auto c = op.getB().getDefiningOp<onnx::ConstantOp>();
  auto rt = dyn_cast<RankedTensorType>(op.getType());
  auto at = dyn_cast<RankedTensorType>(op.getA().getType());
  if (!c || !rt || !at || at.getRank() < 2)
    return std::nullopt;
  auto wt = dyn_cast<RankedTensorType>(c.getType());
  if (!wt || wt.getRank() != 2 || !wt.hasStaticShape() ||
      !wt.getElementType().isIntOrFloat() ||
      wt.getElementType().getIntOrFloatBitWidth() % 8)
    return std::nullopt;
  auto bytes = common::constantBytes(c.getValue());
  int64_t elemBytes = wt.getElementType().getIntOrFloatBitWidth() / 8;
  if (!bytes || (int64_t)bytes->size() != wt.getNumElements() * elemBytes)
    return std::nullopt;
  Projection p{op, c, *bytes, wt.getDimSize(0), wt.getDimSize(1), {}, {}};
  findBias(p);
  return p;
}

void widen(MutableArrayRef<Projection> group) {
  onnx::MatMulOp first = group.front().op;
  MLIRContext *ctx = first.getContext();
  auto wt = cast<RankedTensorType>(group.front().weight.getType());
  Type et = wt.getElementType();
  int64_t elemBytes = et.getIntOrFloatBitWidth() / 8, k = group.front().k;
  int64_t total = 0;
  for (Projection &p : group)
    total += p.n;

  // [K, N1 + ... + Nn]: row r is the rows r of every weight, side by side.
  std::vector<char> bytes;
  bytes.reserve(k * total * elemBytes);
  for (int64_t r = 0; r < k; ++r)
    for (Projection &p : group)
      bytes.insert(bytes.end(), p.bytes.begin() + r * p.n * elemBytes,
                   p.bytes.begin() + (r + 1) * p.n * elemBytes);
  auto type = RankedTensorType::get({k, total}, et);
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(bytes), alignof(double));
  // The originals are not read again unless they are kept (then from their
  // file): their pages need not stay resident beside the copy.
  for (Projection &p : group)
    common::dropResidentPages(p.bytes);
  // Named after the function: functions are widened in parallel, and the
  // blob names of one context are uniqued in the order they are created.
  std::string name = "widened_projection";
  if (auto f = group.front().op->getParentOfType<FunctionOpInterface>())
    name += "_" + f.getName().str();
  auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
  SmallVector<Location> weightLocs, opLocs;
  for (Projection &p : group) {
    weightLocs.push_back(p.weight.getLoc());
    opLocs.push_back(p.op.getLoc());
  }

  OpBuilder b(first);
  Location loc = FusedLoc::get(ctx, opLocs);
  Value w = onnx::ConstantOp::create(b, FusedLoc::get(ctx, weightLocs), attr);
  auto rt = cast<RankedTensorType>(first.getType());
  SmallVector<int64_t> shape(rt.getShape());
  shape.back() = total;
  auto wideType = RankedTensorType::get(shape, rt.getElementType());
  Value wide = onnx::MatMulOp::create(b, loc, wideType, first.getA(), w);
  // Biases concatenated likewise (zeros for projections without one): the
  // Add is the GEMM's epilogue.
  bool anyBias = llvm::any_of(group, [](Projection &p) { return p.biasAdd; });
  if (anyBias) {
    std::vector<char> bias;
    SmallVector<Location> biasLocs;
    for (Projection &p : group) {
      if (p.biasAdd) {
        bias.insert(bias.end(), p.bias.begin(), p.bias.end());
        Value c = p.biasAdd.getA() == p.op.getResult() ? p.biasAdd.getB()
                                                       : p.biasAdd.getA();
        biasLocs.push_back(c.getLoc());
      } else {
        bias.insert(bias.end(), p.n * elemBytes, 0);
      }
    }
    auto biasType = RankedTensorType::get({total}, et);
    auto biasAttr = DenseResourceElementsAttr::get(
        biasType, "widened_bias",
        HeapAsmResourceBlob::allocateAndCopyWithAlign(ArrayRef<char>(bias),
                                                      alignof(double)));
    Value bc =
        onnx::ConstantOp::create(b, FusedLoc::get(ctx, biasLocs), biasAttr);
    wide = onnx::AddOp::create(b, loc, wideType, wide, bc);
  }

  auto i64s = [&](int64_t v) -> Value {
    auto t = RankedTensorType::get({1}, b.getI64Type());
    auto attr = DenseElementsAttr::get(t, ArrayRef<int64_t>{v});
    return onnx::ConstantOp::create(b, loc, cast<ElementsAttr>(attr));
  };
  Value axes = i64s(-1), steps = i64s(1);
  int64_t offset = 0;
  for (Projection &p : group) {
    Value slice =
        onnx::SliceOp::create(b, p.op.getLoc(), p.op.getType(), wide,
                              i64s(offset), i64s(offset + p.n), axes, steps);
    offset += p.n;
    if (p.biasAdd)
      p.biasAdd.getResult().replaceAllUsesWith(slice);
    else
      p.op.getResult().replaceAllUsesWith(slice);
  }
  // After the slices: `first` is the insertion point.
  for (Projection &p : group) {
    if (p.biasAdd)
      p.biasAdd.erase();
    p.op.erase();
  }
}

struct WidenProjectionsPass
    : fusion::impl::WidenProjectionsBase<WidenProjectionsPass> {
  void runOnOperation() override {
    // Projections of each activation, in program order, grouped by the
    // weights' element type and K.
    llvm::MapVector<std::tuple<Value, Type, int64_t>, SmallVector<Projection>>
        groups;
    getOperation().walk([&](onnx::MatMulOp op) {
      if (auto p = asProjection(op))
        groups[{op.getA(),
                cast<ShapedType>(p->weight.getType()).getElementType(), p->k}]
            .push_back(*p);
    });
    for (auto &[key, group] : groups)
      if (group.size() > 1)
        widen(group);
  }
};
} // namespace
