//===- Common.h - shared by the linear attention lowerings ------*- C++ -*-===//
//
// What both forms of --convert-linear-attention-to-loops (Recurrent.cpp,
// Chunked.cpp) and the pass itself (LinearAttentionToLoops.cpp) share: the
// Builder of loops and linalg ops on tensors, the scalar helpers of generic
// bodies, the shapes of one gated.linear_attention, the head slices of its
// operands, and the step of each form that the pass's loop over tokens or
// chunks calls.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_CONVERSION_LINEARATTENTIONTOLOOPS_COMMON_H
#define GATEC_PASSES_CONVERSION_LINEARATTENTIONTOLOOPS_COMMON_H

#include "dialects/gated/GatedDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Builders.h"
#include "passes/common/TensorBuilder.h"

namespace gatec::conversion::linear_attention {
// Internal to the lowering (included by its three files only), which is
// written against the MLIR namespace.
using namespace mlir;

using utils::IteratorType;
constexpr int64_t kDyn = ShapedType::kDynamic;
constexpr IteratorType P = IteratorType::parallel;
constexpr IteratorType R = IteratorType::reduction;

using common::BodyFn;

/// Builds the loops and linalg ops at one builder's insertion point: the
/// shared vocabulary (common::TensorBuilder) with f32 shorthands.
///
/// Under --linalg-fuse-elementwise-ops: an all-parallel generic that may be
/// fused into its consumer reads only its inputs (a producer that reads its
/// output argument is fused wrongly), while the loop-carried state is
/// updated in place by generics that read their output argument (else the
/// output is replaced by a tensor.empty and the scf.for yield is no longer
/// equivalent to its iter_arg).
struct Builder : common::TensorBuilder {
  using TensorBuilder::empty;
  using TensorBuilder::mapOp;
  using TensorBuilder::TensorBuilder;

  /// The chunked form's matrix products and transposes as linalg ops (the
  /// pass's products=linalg, for targets that spread linalg ops over
  /// threads) instead of register-blocked vector loops.
  bool linalgProducts = false;

  /// tensor.empty / zeros of `shape` (f32), dynamic sizes in order.
  Value empty(ArrayRef<int64_t> shape, ValueRange dyn = {}) {
    return empty(shape, f32, dyn);
  }
  Value zeros(ArrayRef<int64_t> shape, ValueRange dyn = {}) {
    return fill(empty(shape, dyn), 0.0);
  }

  /// src broadcast to `shape` through `srcMap` (a copy, read only by a
  /// linalg.map).
  Value broadcast(Value src, ArrayRef<int64_t> shape, AffineMap srcMap) {
    unsigned n = shape.size();
    return generic(empty(shape), {src}, {srcMap, b.getMultiDimIdentityMap(n)},
                   SmallVector<IteratorType>(n, P),
                   [](OpBuilder &, ValueRange a) { return a[0]; });
  }

  /// linalg.map over inputs of `shape`. The exponentials of the chunked
  /// form are computed in linalg.map ops: elementwise fusion only fuses
  /// linalg.generic producers, which would recompute each exp once per
  /// iteration of the consuming contraction.
  Value mapOp(ArrayRef<int64_t> shape, ValueRange ins, BodyFn body) {
    return mapOp(empty(shape), ins, body);
  }

  /// x converted to f32 (and multiplied by `mul` if not 1).
  Value toF32(Value x, double mul = 1.0) {
    auto t = cast<RankedTensorType>(x.getType());
    if (t.getElementType() == f32 && mul == 1.0)
      return x;
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i))
        dyn.push_back(dim(x, i));
    unsigned n = t.getRank();
    AffineMap id = b.getMultiDimIdentityMap(n);
    return generic(
        empty(t.getShape(), dyn), {x}, {id, id},
        SmallVector<IteratorType>(n, P), [&](OpBuilder &nb, ValueRange a) {
          Value v = a[0];
          if (v.getType() != nb.getF32Type())
            v = arith::ExtFOp::create(nb, loc, nb.getF32Type(), v);
          if (mul != 1.0)
            v = arith::MulFOp::create(
                nb, loc, v,
                arith::ConstantOp::create(nb, loc, nb.getF32FloatAttr(mul)));
          return v;
        });
  }

  /// x (f32) converted to element type e.
  Value fromF32(Value x, Type e) {
    auto t = cast<RankedTensorType>(x.getType());
    if (e == f32)
      return x;
    SmallVector<Value> dyn;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (t.isDynamicDim(i))
        dyn.push_back(dim(x, i));
    unsigned n = t.getRank();
    AffineMap id = b.getMultiDimIdentityMap(n);
    Value init = tensor::EmptyOp::create(b, loc, t.getShape(), e, dyn);
    return generic(init, {x}, {id, id}, SmallVector<IteratorType>(n, P),
                   [&](OpBuilder &nb, ValueRange a) -> Value {
                     return arith::TruncFOp::create(nb, loc, e, a[0]);
                   });
  }

  /// Static sizes (and dynamic offsets) of a slice; `drop` lists the dims
  /// removed from the result type (they have size 1).
  Value slice(Value src, ArrayRef<OpFoldResult> offsets,
              ArrayRef<int64_t> sizes, ArrayRef<int64_t> drop) {
    SmallVector<int64_t> shape;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (!llvm::is_contained(drop, (int64_t)i))
        shape.push_back(sizes[i]);
    SmallVector<OpFoldResult> sz, st;
    for (int64_t s : sizes) {
      sz.push_back(b.getIndexAttr(s));
      st.push_back(b.getIndexAttr(1));
    }
    auto rt = RankedTensorType::get(
        shape, cast<RankedTensorType>(src.getType()).getElementType());
    return tensor::ExtractSliceOp::create(b, loc, rt, src, offsets, sz, st);
  }
  Value insert(Value src, Value dest, ArrayRef<OpFoldResult> offsets,
               ArrayRef<int64_t> sizes) {
    SmallVector<OpFoldResult> sz, st;
    for (int64_t s : sizes) {
      sz.push_back(b.getIndexAttr(s));
      st.push_back(b.getIndexAttr(1));
    }
    return tensor::InsertSliceOp::create(b, loc, src, dest, offsets, sz, st);
  }

  /// scf.for from lb to ub by `step` carrying `inits`; `fn` builds the
  /// body at the builder's insertion point and returns the values to yield.
  scf::ForOp loop(Value lb, Value ub, ValueRange inits,
                  llvm::function_ref<SmallVector<Value>(Value, ValueRange)> fn,
                  int64_t step = 1) {
    auto f = scf::ForOp::create(b, loc, lb, ub, index(step), inits);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(f.getBody());
    SmallVector<Value> ys = fn(f.getInductionVar(), f.getRegionIterArgs());
    scf::YieldOp::create(b, loc, ys);
    return f;
  }
};

// Scalar helpers for generic bodies.
inline Value add(OpBuilder &b, Location l, Value x, Value y) {
  return arith::AddFOp::create(b, l, x, y);
}
inline Value sub(OpBuilder &b, Location l, Value x, Value y) {
  return arith::SubFOp::create(b, l, x, y);
}
inline Value mul(OpBuilder &b, Location l, Value x, Value y) {
  return arith::MulFOp::create(b, l, x, y);
}
inline Value exp(OpBuilder &b, Location l, Value x) {
  return math::ExpOp::create(b, l, x);
}

struct Shapes {
  int64_t hq, hkv, group, dk, dv, dd, betaHeads, chunk;
  bool decay, perChannel, delta;
  double scale;
  /// The inputs are held in [B, T, H, D] order (`bshd`) and read in place,
  /// strided along T; the output is written in [B, T, Hq, Dv] order.
  bool bthd = false, outBthd = false;
};

/// x[bi, h : h+nh, t : t+nt, 0 : d] of a [B, H, T, D] operand, or of its
/// [B, T, H, D] source when `bthd`; the batch dim and the dims listed in
/// `drop` (1: heads, 2: tokens, 3: channels; all of size 1) are dropped.
/// With bthd and neither heads nor tokens dropped the slice is
/// [nt, nh, d].
inline Value headSlice(Builder &l, bool bthd, Value x, Value bi, Value h,
                       Value t, int64_t nh, int64_t nt, int64_t d,
                       ArrayRef<int64_t> drop) {
  OpFoldResult z = l.b.getIndexAttr(0);
  SmallVector<int64_t> dr{0};
  for (int64_t i : drop)
    dr.push_back(bthd && i != 3 ? 3 - i : i);
  if (bthd)
    return l.slice(x, {bi, t, h, z}, {1, nt, nh, d}, dr);
  return l.slice(x, {bi, h, t, z}, {1, nh, nt, d}, dr);
}

/// x (a step's query slice) multiplied by the scale.
inline Value scaled(Builder &l, const Shapes &s, Value x) {
  if (s.scale == 1.0)
    return x;
  auto t = cast<RankedTensorType>(x.getType());
  unsigned n = t.getRank();
  AffineMap id = l.b.getMultiDimIdentityMap(n);
  Value c = l.cst(s.scale);
  Location loc = l.loc;
  return l.generic(l.empty(t.getShape()), {x}, {id, id},
                   SmallVector<IteratorType>(n, P),
                   [&](OpBuilder &nb, ValueRange a) -> Value {
                     return mul(nb, loc, a[0], c);
                   });
}

// The steps of the two forms, run by the pass's loop over tokens (or
// chunks) of one (batch, KV head) task on its output rows and state; each
// returns the new {output rows, state}.

/// One token of the recurrence for (batch bi, kv head h) at token t
/// (Recurrent.cpp).
SmallVector<Value> recurrentStep(Builder &l, const Shapes &s, Value bi, Value h,
                                 Value t, Value q, Value k, Value v,
                                 Value decay, Value beta, Value out, Value st);

/// One chunk c (tokens c·C … c·C+C−1) for (batch bi, kv head h)
/// (Chunked.cpp).
SmallVector<Value> chunkStep(Builder &l, const Shapes &s, Value bi, Value h,
                             Value c, Value q, Value k, Value v, Value decay,
                             Value beta, Value out, Value st);

/// The last T mod C tokens (if any) of (batch bi, kv head h), after the
/// `whole` chunks, in one chunkStep on a zero-padded copy (Chunked.cpp).
SmallVector<Value> tailChunk(Builder &l, const Shapes &s, Value bi, Value whole,
                             Value len, Value q, Value k, Value v, Value decay,
                             Value beta, Value rows, Value st, Value h);

/// The gated RMSNorm epilogue of one op (norm_weight, norm_gate): the
/// weight [Dv] in f32 and the gate's rows viewed in the output's physical
/// shape; no weight when the op has none (Epilogue.cpp).
struct NormEpilogue {
  Value weight, gate;
  double eps = 0.0;
  bool unitOffset = false;
  gated::GateActivation act = gated::GateActivation::silu;
};

/// The op's epilogue operands, prepared before the loops (with the run-time
/// check that the gate has one row per output row).
NormEpilogue normEpilogue(Builder &l, const Shapes &s,
                          gated::LinearAttentionOp op, Value bsz, Value len);

/// rows (a task's output rows, [G, T', Dv] or [T', G, Dv]) with the n rows
/// per query head from token t0 on normalised and gated in place; rows
/// unchanged without an epilogue.
Value applyNormEpilogue(Builder &l, const Shapes &s, const NormEpilogue &e,
                        Value bi, Value hq0, Value rows, Value t0,
                        OpFoldResult n);

} // namespace gatec::conversion::linear_attention

#endif
