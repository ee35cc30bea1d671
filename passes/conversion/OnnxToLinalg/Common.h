//===- Common.h - shared by the onnx-to-linalg lowerings --------*- C++ -*-===//
//
// What the files of --convert-onnx-to-linalg share: the scalar maths of
// linalg bodies, the Lowerer (the state of lowering one onnx op, with helpers
// for sizes, tensors and linalg.generic ops), the axis and reshape helpers,
// and the lowering of each op, which dispatch() in OnnxToLinalg.cpp calls.
// Common.cpp defines the helpers; each op family has a file of its own, with
// the helpers that only it uses.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_CONVERSION_ONNXTOLINALG_COMMON_H
#define GATEC_PASSES_CONVERSION_ONNXTOLINALG_COMMON_H

#include "dialects/onnx/OnnxDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "passes/common/TensorBuilder.h"

namespace gatec::conversion::onnx_to_linalg {
// Internal to these files, which are written against MLIR's names.
using namespace mlir;
using utils::IteratorType;
using Body = function_ref<Value(ImplicitLocOpBuilder &, ValueRange)>;

//===----------------------------------------------------------------------===//
// Scalar maths (inside linalg bodies)
//===----------------------------------------------------------------------===//

bool isFloat(Type t);

/// Unsigned integers (ui8 ... ui64) are kept in tensor types, as ONNX types
/// them, but arith computes on signless integers: scalars cross over with
/// unrealized casts (which fold away in pairs and are no-ops in LLVM), and
/// the ops that depend on signedness pick their unsigned form.
bool isUnsignedInt(Type t);
Value castScalar(ImplicitLocOpBuilder &b, Value v, Type to);
Value toSignless(ImplicitLocOpBuilder &b, Value v);

/// The type a float reduction or contraction accumulates in: f32 for
/// narrower floats, the element type otherwise.
Type accType(Type e);

TypedAttr scalarAttr(Builder &b, Type t, double v);
Value scalar(ImplicitLocOpBuilder &b, Type t, double v);

/// An arith.constant of a scalar attribute of any int/float type.
Value constant(ImplicitLocOpBuilder &b, TypedAttr a);

/// The identity of max (-inf or the smallest integer) / of min.
TypedAttr extremeAttr(Builder &b, Type t, bool negative);

/// ONNX Cast of one scalar between float, (un)signed integer and bool
/// types: float to integer truncates toward zero, anything to bool is
/// `x != 0`, bool to a number is 0 or 1, integers widen by the source's
/// signedness.
Value convert(ImplicitLocOpBuilder &b, Value v, Type to);

/// max / min of two scalars of one float, signed or unsigned type.
Value maxOf(ImplicitLocOpBuilder &b, Value x, Value y);
Value minOf(ImplicitLocOpBuilder &b, Value x, Value y);

Value addOf(ImplicitLocOpBuilder &b, Value x, Value y);

//===----------------------------------------------------------------------===//
// Lowerer: the state of lowering one onnx op
//===----------------------------------------------------------------------===//

/// Builds the lowering of one onnx op at its position: the lowered operands
/// (null for onnx.NoValue), the lowered results, and helpers for sizes,
/// tensors and linalg.generic ops.
struct Lowerer {
  Operation *op;
  ImplicitLocOpBuilder b;
  SmallVector<Value> in;
  SmallVector<Value> out;
  /// The lowered value of each onnx value lowered so far (null in the
  /// Scan bodies' own lowerings).
  IRMapping *map = nullptr;

  explicit Lowerer(Operation *op) : op(op), b(op->getLoc(), op) {}

  /// The shared linalg-on-tensors builder at this lowering's insertion
  /// point (empty and generic below are written with it).
  common::TensorBuilder tensors() {
    return common::TensorBuilder(b, b.getLoc());
  }

  LogicalResult fail(const Twine &why) {
    return op->emitOpError() << "cannot be lowered: " << why;
  }
  LogicalResult done(Value v) {
    out.push_back(v);
    return success();
  }
  RankedTensorType resultType(unsigned i = 0) {
    return dyn_cast<RankedTensorType>(op->getResult(i).getType());
  }
  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  static int64_t rankOf(Value v) { return typeOf(v).getRank(); }

  // Index arithmetic on OpFoldResults, folded when both sides are known.
  OpFoldResult idx(int64_t v) { return b.getIndexAttr(v); }
  Value val(OpFoldResult f) {
    return getValueOrCreateConstantIndexOp(b, b.getLoc(), f);
  }
  template <typename OpT>
  OpFoldResult fold(OpFoldResult x, OpFoldResult y,
                    int64_t (*f)(int64_t, int64_t)) {
    auto cx = getConstantIntValue(x), cy = getConstantIntValue(y);
    if (cx && cy)
      return idx(f(*cx, *cy));
    return OpFoldResult(OpT::create(b, val(x), val(y)).getResult());
  }
  OpFoldResult add(OpFoldResult x, OpFoldResult y);
  OpFoldResult sub(OpFoldResult x, OpFoldResult y);
  OpFoldResult mul(OpFoldResult x, OpFoldResult y);
  OpFoldResult ceilDiv(OpFoldResult x, OpFoldResult y);
  OpFoldResult divTrunc(OpFoldResult x, OpFoldResult y);
  OpFoldResult min(OpFoldResult x, OpFoldResult y);
  OpFoldResult max(OpFoldResult x, OpFoldResult y);

  /// `x` unless it is 1, then `y`: the broadcast of two sizes that are
  /// equal or one of them 1.
  OpFoldResult unlessOne(OpFoldResult x, OpFoldResult y);

  /// Size of dimension i of a ranked tensor.
  OpFoldResult dim(Value t, int64_t i);
  SmallVector<OpFoldResult> dims(Value t);
  OpFoldResult numel(Value t);
  /// Sizes of `t`, static dimensions taken from the type.
  SmallVector<OpFoldResult> sizesOf(RankedTensorType t,
                                    ArrayRef<OpFoldResult> computed);

  /// Element `i` of an integer tensor (rank 0 or 1) as a scalar / an index.
  Value element(Value t, int64_t i);
  OpFoldResult elementIndex(Value t, int64_t i);

  /// tensor.empty of type `t`; its dynamic sizes from `sizes`.
  Value empty(RankedTensorType t, ArrayRef<OpFoldResult> sizes);
  Value filled(RankedTensorType t, ArrayRef<OpFoldResult> sizes, TypedAttr v);
  Value castTo(Value v, Type t);

  /// A parallel linalg.generic producing `outType` (sizes from `sizes`)
  /// from `ins` read through `maps`.
  Value generic(RankedTensorType outType, ArrayRef<OpFoldResult> sizes,
                ValueRange ins, ArrayRef<AffineMap> maps, Body body);

  /// The map reading `t` broadcast (numpy rules) to `outShape`: missing
  /// leading dims are dropped, size-1 dims read index 0. A dynamic dim is
  /// read as having the output's size: see broadcastOperand.
  AffineMap broadcastMap(ShapedType t, ArrayRef<int64_t> outShape);

  /// Sizes of the broadcast of `ins` to `out` (ONNX multidirectional).
  SmallVector<OpFoldResult> broadcastSizes(RankedTensorType out,
                                           ValueRange ins);

  /// `v` ready to be read through broadcastMap against an output of type
  /// `out` and sizes `sizes`: dynamic dims that may be 1 while the output's
  /// is not are broadcast at run time (and checked).
  Value broadcastOperand(Value v, RankedTensorType out,
                         ArrayRef<OpFoldResult> sizes);

  /// An element-wise op over `ins`, broadcast to `outType`.
  Value elementwise(RankedTensorType outType, ValueRange ins, Body body);

  /// The map of a tensor that has the dims of a rank-`rank` iteration
  /// space without `dropped` ones.
  AffineMap dropMap(int64_t rank, ArrayRef<int64_t> dropped);

  /// Reduces `x` over `axes` into a tensor (those dims dropped) of type
  /// `acc`, starting from `init`: acc = step(acc, x, rows...), where each
  /// of `rows` has the reduced tensor's shape.
  Value
  reduce(Value x, ArrayRef<int64_t> axes, Type acc, TypedAttr init,
         ValueRange rows,
         function_ref<Value(ImplicitLocOpBuilder &, Value, Value, ValueRange)>
             step);

  /// A run-time check of the data (not of the sizes): that `ok` (an i1 of
  /// an element) holds for every element of `t`, as one cf.assert with
  /// `message` at the op's position (--lower-run-time-checks makes it the
  /// run's error). The elements are read with tensor.extract when `t` has
  /// one, else AND-reduced into a rank-0 tensor by one linalg.generic: a
  /// compare and a branch per run, a pass over `t` (indices, divisors).
  /// A `dataCheck` guards only what kernels compute, not where they read
  /// or write (the op clamps its indices): it is always the reduction and
  /// is marked for --defer-data-checks, which may move it to the end of
  /// the run.
  void checkAll(Value t, function_ref<Value(ImplicitLocOpBuilder &, Value)> ok,
                const Twine &message, bool dataCheck = false);

  /// That a dim of size `n`, indexed by the elements of `indices`, is not
  /// empty unless `indices` is (a check of sizes, with `message`, kept in
  /// place): clampedIndex then has a dim to clamp into. Nothing is built
  /// where n is a constant.
  void checkIndexedDim(Value n, Value indices, const Twine &message);

  /// A cf.assert with `message` that a tensor of `sizes` (each >= 0) and
  /// element type `e` needs at most 2^47 bytes (what x86-64 can address):
  /// a product of sizes read at run time could otherwise wrap around and
  /// allocate too small a buffer. The product saturates (in i128), so no
  /// product of sizes wraps. Nothing is built when every size is a constant
  /// or a tensor's dim.
  void checkBufferSize(ArrayRef<OpFoldResult> sizes, Type e,
                       const Twine &message);

  /// The number of elements of `x` over `axes`, as a scalar of float type t.
  Value countOf(Value x, ArrayRef<int64_t> axes, Type t);

  /// Inserts the size-1 dims of `to` (marked in `unit`) into `v`.
  Value insertUnitDims(Value v, RankedTensorType to, ArrayRef<bool> unit);

  /// Removes the dims of `v` marked in `drop` (size 1 at run time).
  Value dropUnitDims(Value v, RankedTensorType to, ArrayRef<bool> drop);

  /// `v` reshaped to the static type `to`: one collapse or expand where
  /// the dims regroup, otherwise through 1-D.
  Value reshapeStatic(Value v, RankedTensorType to);
  /// Between rank 1 and any rank (static shapes): one group of all dims.
  Value regroup(Value v, RankedTensorType to);

  /// tensor.reshape of `v` to `to` with the given sizes.
  Value reshapeDynamic(Value v, RankedTensorType to,
                       ArrayRef<OpFoldResult> sizes);
};

//===----------------------------------------------------------------------===//
// Axes and reshapes
//===----------------------------------------------------------------------===//

/// `axis` of a rank-`rank` tensor counted from the front, or nullopt if it
/// is out of range.
std::optional<int64_t> normAxis(int64_t axis, int64_t rank);

/// The elements of an integer constant operand, normalised as axes of a
/// rank-`rank` tensor (negative axes count from the end).
std::optional<SmallVector<int64_t>> constantAxes(Value v, int64_t rank);

/// An index constant.
Value cidx(ImplicitLocOpBuilder &b, int64_t v);

/// An index `i` (any integer type) read from an indices tensor into a dim
/// of size `n` > 0: negative ones count from the end, and the result is
/// clamped into [0, n - 1], so a data check that --defer-data-checks moves
/// to the end of the run leaves the read or write in bounds (one unsigned
/// min; checkIndexedDim makes n > 0 hold).
Value clampedIndex(ImplicitLocOpBuilder &b, Value i, Value n);

/// Element `i` of the onnx operand `v` when it is a small dense constant (an
/// initializer), as a scalar arith.constant at the constant's location, or
/// null. The weight accounting (--check-weights) finds the initializer
/// there, where a generic reading the tensor at a constant index would be
/// folded into a constant at the reading op's location.
Value constantElement(ImplicitLocOpBuilder &b, Value v, int64_t i);

/// Element `i` (an index value) of an integer tensor as an index.
Value indexAt(ImplicitLocOpBuilder &b, Value t, Value i);

/// `a` (an index) counted from the front of a rank-`rank` tensor.
Value normAxisValue(ImplicitLocOpBuilder &b, Value a, int64_t rank);

/// The message of a run-time check that an axis is in range, naming `op`.
std::string axisOutOfRange(Operation *op);

/// For each dim of a rank-`rank` tensor, whether the 1-D axes tensor
/// `axes` (read at run time, negative axes from the end) names it; axes
/// outside [-rank, rank - 1] fail a run-time check naming the op.
SmallVector<Value> axisFlags(Lowerer &l, Value axes, int64_t rank);

/// The sizes of the `n` dims of `dims` that are not flagged, in order
/// (the i-th result is the dim d that is the i-th not flagged).
SmallVector<OpFoldResult> keptSizes(ImplicitLocOpBuilder &b,
                                    ArrayRef<Value> flag, ArrayRef<Value> dims,
                                    int64_t n);

/// `v` reshaped to `to` (same elements in the same order) with `sizes`
/// computed at run time, or statically where both shapes are static.
Value reshapeTo(Lowerer &l, Value v, RankedTensorType to,
                ArrayRef<OpFoldResult> sizes);

//===----------------------------------------------------------------------===//
// The lowerings, by op family
//===----------------------------------------------------------------------===//

// Elementwise.cpp
LogicalResult lowerUnary(Operation *op, Lowerer &l);
LogicalResult lowerBinary(Operation *op, Lowerer &l);
LogicalResult lowerCompare(Operation *op, Lowerer &l);
LogicalResult lowerLogical(Operation *op, Lowerer &l);
LogicalResult lower(onnx::WhereOp op, Lowerer &l);
LogicalResult lower(onnx::CastOp, Lowerer &l);
LogicalResult lower(onnx::CastLikeOp, Lowerer &l);
LogicalResult lower(onnx::IsInfOp op, Lowerer &l);
LogicalResult lower(onnx::IsNaNOp, Lowerer &l);
LogicalResult lower(onnx::DropoutOp op, Lowerer &l);
LogicalResult lower(onnx::ClipOp op, Lowerer &l);
LogicalResult lower(onnx::SwiGLUOp op, Lowerer &l);
LogicalResult lower(onnx::ModOp op, Lowerer &l);

// Contraction.cpp
/// A contraction over the loops [0, nLoops), the first `out.getRank()`
/// parallel: out += Π ins, accumulated in accType(element type).
Value contract(Lowerer &l, RankedTensorType out, ArrayRef<OpFoldResult> sizes,
               ValueRange ins, ArrayRef<AffineMap> maps, int64_t nLoops,
               bool keepAcc = false);
LogicalResult lower(onnx::MatMulOp op, Lowerer &l);
LogicalResult lower(onnx::GemmOp op, Lowerer &l);
LogicalResult lower(onnx::ConvOp op, Lowerer &l);
LogicalResult lower(onnx::EinsumOp op, Lowerer &l);

// Reduction.cpp (lowerReduce is instantiated there for the Reduce* ops)
template <typename OpT> LogicalResult lowerReduce(OpT op, Lowerer &l);
LogicalResult lowerSoftmax(int64_t onnxAxis, bool log, Lowerer &l);
LogicalResult lower(onnx::CumSumOp op, Lowerer &l);

// Normalization.cpp
LogicalResult lowerNorm(int64_t onnxAxis, double eps, bool rms, Lowerer &l);

// DataMovement.cpp
LogicalResult lower(onnx::ShapeOp op, Lowerer &l);
LogicalResult lower(onnx::SizeOp op, Lowerer &l);
LogicalResult lower(onnx::ConstantOfShapeOp op, Lowerer &l);
LogicalResult lower(onnx::RangeOp op, Lowerer &l);
/// Whether the lowered size `v` is a tensor's dim (or a constant >= 0)
/// passed on through index casts and the elements of shape tensors.
bool provablyNonNegative(Value v, int depth = 0);
LogicalResult lower(onnx::ConcatOp op, Lowerer &l);
LogicalResult lower(onnx::SliceOp op, Lowerer &l);
LogicalResult lower(onnx::SplitOp op, Lowerer &l);
LogicalResult lower(onnx::ExpandOp op, Lowerer &l);
LogicalResult lower(onnx::GatherOp op, Lowerer &l);
LogicalResult lower(onnx::TileOp op, Lowerer &l);

// GatherScatter.cpp
LogicalResult lower(onnx::GatherNDOp op, Lowerer &l);
LogicalResult lower(onnx::ScatterNDOp op, Lowerer &l);
LogicalResult lower(onnx::ScatterElementsOp op, Lowerer &l);

// Pad.cpp
LogicalResult lower(onnx::PadOp op, Lowerer &l);

// Selection.cpp
LogicalResult lower(onnx::OneHotOp op, Lowerer &l);
LogicalResult lower(onnx::TopKOp op, Lowerer &l);
LogicalResult lower(onnx::NonZeroOp op, Lowerer &l);

// Reshape.cpp
LogicalResult lower(onnx::ReshapeOp op, Lowerer &l);
LogicalResult lower(onnx::FlattenOp op, Lowerer &l);
LogicalResult lower(onnx::UnsqueezeOp op, Lowerer &l);
LogicalResult lower(onnx::SqueezeOp op, Lowerer &l);
LogicalResult lower(onnx::TransposeOp op, Lowerer &l);
LogicalResult lower(onnx::TriluOp op, Lowerer &l);

// Attention.cpp
LogicalResult lower(onnx::RotaryEmbeddingOp op, Lowerer &l);
LogicalResult lower(onnx::AttentionOp op, Lowerer &l);

// ControlFlow.cpp
LogicalResult lowerScan(onnx::ScanOp op, Lowerer &l, IRMapping &map);

// OnnxToLinalg.cpp
/// Lowers `op` with its operands looked up in `map`; maps its results. The
/// lowering goes before `op`, or at the end of `into` when given (the body
/// of a loop that a Scan became).
LogicalResult lowerOp(Operation *op, IRMapping &map, Block *into = nullptr);

} // namespace gatec::conversion::onnx_to_linalg

#endif
