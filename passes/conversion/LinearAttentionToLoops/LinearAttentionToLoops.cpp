//===- LinearAttentionToLoops.cpp - --convert-linear-attention-to-loops ---===//
//
// gated.linear_attention as scf.for loops (batch, key/value head, then token
// or chunk) over linalg.generic on tensors, in f32. See Passes.td for the
// algorithm of each form. This file is the pass: the walk, and per op its
// shapes, inputs, the loops over (batch, KV head) and tokens or chunks, and
// the results; the steps of the loops are in Recurrent.cpp and Chunked.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Passes.h"

#include "dialects/gated/GatedDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "passes/conversion/LinearAttentionToLoops/Common.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_CONVERTLINEARATTENTIONTOLOOPS
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

namespace gatec::conversion::linear_attention {
namespace {

LogicalResult lower(gated::LinearAttentionOp op, bool linalgProducts) {
  OpBuilder b(op);
  Builder l(b, op.getLoc());
  l.linalgProducts = linalgProducts;
  Location loc = op.getLoc();
  for (Value v : op->getOperands())
    if (!isa<RankedTensorType>(v.getType()))
      return op.emitOpError() << "cannot be lowered: unranked operand";
  auto qt = cast<RankedTensorType>(op.getQuery().getType());
  auto kt = cast<RankedTensorType>(op.getKey().getType());
  auto vt = cast<RankedTensorType>(op.getValue().getType());
  Shapes s;
  // The head dim: 2 for operands in [B, T, H, D] order (`bshd`).
  int64_t hd = op.isBshd("query") ? 2 : 1;
  s.hq = qt.getDimSize(hd);
  s.hkv = kt.getDimSize(hd);
  s.dk = qt.getDimSize(3);
  s.dv = vt.getDimSize(3);
  s.decay = (bool)op.getDecay();
  s.delta = (bool)op.getBeta();
  s.dd = s.decay ? cast<RankedTensorType>(op.getDecay().getType()).getDimSize(3)
                 : 1;
  s.perChannel = s.decay && s.dd != 1;
  if (s.dk == 1)
    s.perChannel = false, s.dd = 1;
  s.betaHeads =
      s.delta ? cast<RankedTensorType>(op.getBeta().getType()).getDimSize(hd)
              : 1;
  bool chunked = op.getForm() == gated::LinearAttentionForm::chunked;
  s.chunk = op.getChunkSize();
  if (s.hq == kDyn || s.hkv == kDyn || s.dk == kDyn || s.dv == kDyn ||
      s.dd == kDyn || s.betaHeads == kDyn)
    return op.emitOpError() << "cannot be lowered: head counts and head "
                               "dims must be static";
  if (s.dk == 0 || s.dv == 0 || s.hkv == 0)
    return op.emitOpError() << "cannot be lowered: head counts and head "
                               "dims must be positive, got Dk = "
                            << s.dk << ", Dv = " << s.dv;
  s.group = s.hq / s.hkv;

  // The scale is applied to each step's query slice (scaled()), not by a
  // pass over the whole query tensor.
  s.scale = op.getScale().convertToDouble();
  // Inputs in [B, T, H, D] order (all of them, `bshd`, set by
  // --absorb-head-layout) are read in place, strided along T: no transposed
  // copy of the sequence. Likewise the output is written in that order when
  // `bshd` names it.
  SmallVector<Value> ins{op.getQuery(), op.getKey(), op.getValue()};
  if (s.decay)
    ins.push_back(op.getDecay());
  if (s.delta)
    ins.push_back(op.getBeta());
  s.bthd = op.isBshd("query");
  s.outBthd = op.isBshd("output");
  Value q = l.toF32(ins[0]);
  Value k = l.toF32(ins[1]), v = l.toF32(ins[2]);
  Value decay = s.decay ? l.toF32(ins[3]) : Value();
  Value beta = s.delta ? l.toF32(ins.back()) : Value();
  Value bsz = l.dim(q, 0), len = l.dim(q, s.bthd ? 1 : 2);
  Value state0 = op.getInitialState()
                     ? l.toF32(op.getInitialState())
                     : l.zeros({kDyn, s.hkv, s.dk, s.dv}, {bsz});
  NormEpilogue epi = normEpilogue(l, s, op, bsz, len);
  OpFoldResult z = b.getIndexAttr(0);
  // The batch size, static when the query's is (then the results of the
  // forall and of the scf.if below have static batch dims too, and their
  // buffers the identity layout the function returns without a copy).
  int64_t B = cast<RankedTensorType>(q.getType()).getDimSize(0);
  auto bdyn = [&](ArrayRef<Value> rest) {
    SmallVector<Value> d;
    if (B == kDyn)
      d.push_back(bsz);
    d.append(rest.begin(), rest.end());
    return d;
  };
  // The loops, on inputs of tp tokens in `steps` steps.
  auto outEmpty = [&](Value tp) {
    return s.outBthd ? l.empty({B, kDyn, s.hq, s.dv}, bdyn({tp}))
                     : l.empty({B, s.hq, kDyn, s.dv}, bdyn({tp}));
  };
  auto emit = [&](Value q, Value k, Value v, Value decay, Value beta, Value tp,
                  Value steps) -> SmallVector<Value> {
    Value out0 = outEmpty(tp);
    Value fstate0 = l.empty({B, s.hkv, s.dk, s.dv}, bdyn({}));
    // One task per (batch, KV head): an scf.forall whose iteration runs the
    // sequential loop over tokens or chunks on the head's state and writes its
    // query heads' output rows [G, T', Dv] and its final state.
    auto outer = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{bsz, b.getIndexAttr(s.hkv)},
        ValueRange{out0, fstate0}, std::nullopt);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(outer.getTerminator());
      Value bi = outer.getInductionVars()[0], h = outer.getInductionVars()[1];
      Value outShared = outer.getRegionIterArgs()[0];
      Value fsShared = outer.getRegionIterArgs()[1];
      Value hq0 = arith::MulIOp::create(b, loc, h, l.index(s.group));
      // The head's output rows: [G, T', Dv] (or [T', G, Dv]).
      auto rowsType = s.outBthd
                          ? RankedTensorType::get({kDyn, s.group, s.dv}, l.f32)
                          : RankedTensorType::get({s.group, kDyn, s.dv}, l.f32);
      SmallVector<OpFoldResult> rowsOff{bi, hq0, z, z};
      SmallVector<OpFoldResult> rowsSize{
          b.getIndexAttr(1), b.getIndexAttr(s.group), tp, b.getIndexAttr(s.dv)};
      if (s.outBthd) {
        std::swap(rowsOff[1], rowsOff[2]);
        std::swap(rowsSize[1], rowsSize[2]);
      }
      SmallVector<OpFoldResult> ones(4, b.getIndexAttr(1));
      Value rows = tensor::ExtractSliceOp::create(b, loc, rowsType, outShared,
                                                  rowsOff, rowsSize, ones);
      Value st = l.slice(state0, {bi, h, z, z}, {1, 1, s.dk, s.dv}, {0, 1});
      auto seq = l.loop(
          l.index(0), steps, {rows, st},
          [&](Value t, ValueRange it) -> SmallVector<Value> {
            SmallVector<Value> r =
                chunked ? chunkStep(l, s, bi, h, t, q, k, v, decay, beta, it[0],
                                    it[1])
                        : recurrentStep(l, s, bi, h, t, q, k, v, decay, beta,
                                        it[0], it[1]);
            // The step's rows, normalised while in cache.
            Value t0 = chunked
                           ? arith::MulIOp::create(b, loc, t, l.index(s.chunk))
                           : t;
            r[0] = applyNormEpilogue(l, s, epi, bi, hq0, r[0], t0,
                                     b.getIndexAttr(chunked ? s.chunk : 1));
            return r;
          });
      SmallVector<Value> fin(seq.getResults());
      if (chunked) {
        fin = tailChunk(l, s, bi, steps, len, q, k, v, decay, beta, fin[0],
                        fin[1], h);
        // The tail's rows one token at a time (blocks of a static size:
        // the CUDA target's scratch buffers need a constant bound).
        if (epi.weight) {
          Value t0 = arith::MulIOp::create(b, loc, steps, l.index(s.chunk));
          fin[0] = l.loop(t0, tp, {fin[0]},
                          [&](Value t, ValueRange it) -> SmallVector<Value> {
                            return {applyNormEpilogue(l, s, epi, bi, hq0, it[0],
                                                      t, b.getIndexAttr(1))};
                          })
                       .getResult(0);
        }
      }
      b.setInsertionPointToStart(outer.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(b, loc, fin[0], outShared, rowsOff,
                                            rowsSize, ones);
      SmallVector<OpFoldResult> stOff{bi, h, z, z};
      SmallVector<OpFoldResult> stSize{b.getIndexAttr(1), b.getIndexAttr(1),
                                       b.getIndexAttr(s.dk),
                                       b.getIndexAttr(s.dv)};
      tensor::ParallelInsertSliceOp::create(b, loc, fin[1], fsShared, stOff,
                                            stSize, ones);
    }
    return {outer.getResult(0), outer.getResult(1)};
  };
  SmallVector<Value> res;
  if (!chunked) {
    res = emit(q, k, v, decay, beta, len, len);
  } else {
    // floor(T / C) whole chunks read in place; the last T mod C tokens, if
    // any, by tailChunk in each task.
    Value steps = arith::DivUIOp::create(b, loc, len, l.index(s.chunk));
    res = emit(q, k, v, decay, beta, len, steps);
  }

  Value out = res[0];
  auto finish = [&](Value x, Type want) -> Value {
    auto wt = llvm::cast<RankedTensorType>(want);
    x = l.fromF32(x, wt.getElementType());
    if (x.getType() != want)
      x = tensor::CastOp::create(b, loc, want, x);
    return x;
  };
  Value fs = finish(res[1], op.getFinalState().getType());
  op.getOutput().replaceAllUsesWith(finish(out, op.getOutput().getType()));
  op.getFinalState().replaceAllUsesWith(fs);
  op.erase();
  return success();
}

struct ConvertLinearAttentionToLoopsPass
    : conversion::impl::ConvertLinearAttentionToLoopsBase<
          ConvertLinearAttentionToLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (products != "vector" && products != "linalg") {
      getOperation().emitError("--convert-linear-attention-to-loops: "
                               "products must be vector or linalg, got '")
          << products << "'";
      return signalPassFailure();
    }
    SmallVector<gated::LinearAttentionOp> ops;
    getOperation().walk(
        [&](gated::LinearAttentionOp op) { ops.push_back(op); });
    for (gated::LinearAttentionOp op : ops)
      if (failed(lower(op, products == "linalg")))
        return signalPassFailure();
  }
};
} // namespace
} // namespace gatec::conversion::linear_attention
