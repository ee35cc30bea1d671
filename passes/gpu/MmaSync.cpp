//===- MmaSync.cpp - tensor-core contractions for the thread mapping ------===//
//
// See MmaSync.h. The emitted code is per thread (lane) and plain
// scf/memref/arith apart from nvvm.mma.sync itself, which the emulation
// replaces for the CPU check.
//
//===----------------------------------------------------------------------===//
#include "passes/gpu/MmaSync.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/Utils/MMAUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace gatec::gpu {
namespace {
/// The block argument `v` extends (arith.extf of it), or null.
BlockArgument extended(Value v) {
  auto e = v.getDefiningOp<arith::ExtFOp>();
  return e ? dyn_cast<BlockArgument>(e.getIn()) : BlockArgument();
}

/// The dims of `map`'s results, or failure if one is not a dim.
FailureOr<SmallVector<unsigned>> resultDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d)
      return failure();
    dims.push_back(d.getPosition());
  }
  return dims;
}
} // namespace

FailureOr<MmaContraction> matchMmaContraction(linalg::LinalgOp op, bool tf32) {
  if (!op.hasPureBufferSemantics() || op.getNumReductionLoops() != 1 ||
      op.getNumDpsInits() == 0 || !isa<linalg::GenericOp>(op))
    return failure();
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  MmaContraction c;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  for (unsigned d = 0; d < iters.size(); ++d)
    if (iters[d] == utils::IteratorType::reduction)
      c.kDim = d;
  Block *body = op.getBlock();
  for (Operation &nested : body->without_terminator())
    if (!isa<arith::ExtFOp, arith::MulFOp, arith::AddFOp>(nested))
      return failure();
  Operation *yield = body->getTerminator();
  for (auto [j, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    BlockArgument out = op.getMatchingBlockArgument(&init);
    if (!out.getType().isF32())
      return failure();
    FailureOr<SmallVector<unsigned>> outDims =
        resultDims(op.getMatchingIndexingMap(&init));
    if (failed(outDims) || outDims->size() != iters.size() - 1)
      return failure();
    // The output is indexed by exactly the parallel dims, each once.
    SmallVector<unsigned> sorted(*outDims);
    llvm::sort(sorted);
    for (unsigned i = 0, d = 0; d < iters.size(); ++d)
      if (d != c.kDim && (i >= sorted.size() || sorted[i++] != d))
        return failure();
    SmallVector<unsigned> rowDims(outDims->begin(), outDims->end() - 1);
    if (j == 0) {
      c.nDim = outDims->back();
      c.rowDims = rowDims;
    } else if (outDims->back() != c.nDim || rowDims != c.rowDims) {
      return failure();
    }
    auto add = yield->getOperand(j).getDefiningOp<arith::AddFOp>();
    if (!add || (add.getLhs() != out && add.getRhs() != out))
      return failure();
    auto mul = (add.getLhs() == out ? add.getRhs() : add.getLhs())
                   .getDefiningOp<arith::MulFOp>();
    if (!mul)
      return failure();
    // The operands: extended fp16/bf16 ones, or with tf32 fp32 ones.
    auto operand = [&](Value v) {
      BlockArgument e = extended(v);
      auto arg = dyn_cast<BlockArgument>(v);
      if (!e && tf32 && arg && arg.getType().isF32())
        return arg;
      return e;
    };
    BlockArgument x = operand(mul.getLhs()), y = operand(mul.getRhs());
    if (!x || !y || x.getOwner() != body || y.getOwner() != body ||
        x.getArgNumber() >= op.getNumDpsInputs() ||
        y.getArgNumber() >= op.getNumDpsInputs())
      return failure();
    OpOperand *ox = &op->getOpOperand(x.getArgNumber());
    OpOperand *oy = &op->getOpOperand(y.getArgNumber());
    SmallVector<unsigned> aDims(c.rowDims), bDims{c.kDim, c.nDim};
    aDims.push_back(c.kDim);
    auto dimsOf = [&](OpOperand *o) {
      return resultDims(op.getMatchingIndexingMap(o));
    };
    FailureOr<SmallVector<unsigned>> dx = dimsOf(ox), dy = dimsOf(oy);
    if (failed(dx) || failed(dy))
      return failure();
    // In any order (a transposed operand, e.g. attention's keys in QK^T):
    // every element is addressed through the operand's own map.
    auto sameDims = [](SmallVector<unsigned> x, SmallVector<unsigned> y) {
      llvm::sort(x);
      llvm::sort(y);
      return x == y;
    };
    if (sameDims(*dx, bDims) && sameDims(*dy, aDims))
      std::swap(ox, oy);
    else if (!(sameDims(*dx, aDims) && sameDims(*dy, bDims)))
      return failure();
    if (c.a && c.a != ox)
      return failure();
    c.a = ox;
    c.b.push_back(oy);
  }
  Type ea = getElementTypeOrSelf(c.a->get().getType());
  c.tf32 = tf32 && ea.isF32();
  if (!(ea.isBF16() || ea.isF16() || c.tf32))
    return failure();
  for (OpOperand *o : c.b)
    if (getElementTypeOrSelf(o->get().getType()) != ea)
      return failure();
  c.elem = ea;
  c.n = sizes[c.nDim];
  c.k = sizes[c.kDim];
  if (ShapedType::isDynamic(c.n) || ShapedType::isDynamic(c.k) || c.n % 8 ||
      c.k % (c.tf32 ? 8 : 16))
    return failure();
  c.rows = 1;
  for (unsigned d : c.rowDims)
    c.rows = ShapedType::isDynamic(sizes[d]) || ShapedType::isDynamic(c.rows)
                 ? ShapedType::kDynamic
                 : c.rows * sizes[d];
  return c;
}

void emitMmaContraction(OpBuilder &b, linalg::LinalgOp op,
                        const MmaContraction &c, Value tid, int64_t threads,
                        bool emulate) {
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  // Index constants, created once at the start of the thread loop's body.
  Block *body = b.getInsertionBlock();
  auto top = [&]() { return OpBuilder::atBlockBegin(body); };
  llvm::DenseMap<int64_t, Value> constants;
  auto cst = [&](int64_t v) -> Value {
    Value &c = constants[v];
    if (!c) {
      OpBuilder t = top();
      c = arith::ConstantIndexOp::create(t, loc, v);
    }
    return c;
  };
  auto apply = [&](AffineMap m, ArrayRef<Value> operands) -> Value {
    return getValueOrCreateConstantIndexOp(
        b, loc,
        affine::makeComposedFoldedAffineApply(b, loc, m,
                                              getAsOpFoldResult(operands)));
  };
  AffineExpr d0, d1;
  bindDims(ctx, d0, d1);
  auto expr = [&](AffineExpr e, ArrayRef<Value> operands) {
    return apply(AffineMap::get(operands.size(), 0, e), operands);
  };
  // (lane, value id) -> (row, col) of A (16x16, rows x k), B (8x16, n x k)
  // and C (16x8, rows x n); the layout of .f16 operands is that of .bf16.
  using Role = nvgpu::MatMulOperandRole;
  auto coords = [&](ArrayRef<int64_t> shape, Type e, Role role) {
    FailureOr<AffineMap> m = nvgpu::getLaneIdAndValueIdToOperandCoord(
        b, loc, nvgpu::WarpMatrixInfo{VectorType::get(shape, e), role});
    assert(succeeded(m) && "m16n8k16 f16/f32 fragments have a layout");
    return *m;
  };
  // tf32: m16n8k8, A 16x8 and B 8x8 (n x k), one 32-bit element per
  // register (MLIR takes f32 operands as tf32 there).
  Type f16 = b.getF16Type(), f32 = b.getF32Type();
  int64_t kStep = c.tf32 ? 8 : 16;
  Type operandType = c.tf32 ? f32 : f16;
  AffineMap mapA = coords({16, kStep}, operandType, Role::A);
  AffineMap mapB = coords({8, kStep}, operandType, Role::B);
  AffineMap mapC = coords({16, 8}, f32, Role::C);

  Value warp = expr(d0.floorDiv(32), {tid});
  Value lane = expr(d0 % 32, {tid});
  int64_t n8 = c.n / 8;
  int64_t nt = n8 % 4 == 0 ? 4 : n8 % 2 == 0 ? 2 : 1;
  int64_t groups = n8 / nt;
  // The rows (dynamic: the product of the row dims' sizes at run time).
  SmallVector<Range> ranges = op.createLoopRanges(b, loc);
  SmallVector<OpFoldResult> rowSizes;
  OpFoldResult rowsF = b.getIndexAttr(1);
  for (unsigned d : c.rowDims) {
    rowSizes.push_back(ranges[d].size);
    rowsF = affine::makeComposedFoldedAffineApply(
        b, loc,
        AffineMap::get(
            0, 2, getAffineSymbolExpr(0, ctx) * getAffineSymbolExpr(1, ctx)),
        {rowsF, ranges[d].size});
  }
  Value rows = getValueOrCreateConstantIndexOp(b, loc, rowsF);
  bool masked = ShapedType::isDynamic(c.rows) || c.rows % 16 != 0;
  Value tileCount = expr(d0.ceilDiv(16) * groups, {rows});
  // (with no rows no tile runs, so lastRow is never used as -1)
  Value lastRow = masked ? expr(d0 - 1, {rows}) : Value();
  unsigned nOut = c.b.size();
  auto tiles = scf::ForOp::create(b, loc, warp, tileCount, cst(threads / 32));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tiles.getBody());
  Value t = tiles.getInductionVar();
  Value row0 = expr(d0.floorDiv(groups) * 16, {t});
  Value col0 = expr((d0 % groups) * (8 * nt), {t});

  // Loop ivs of (row, col, k): the rows delinearized over the row dims.
  SmallVector<Value> ivs(op.getNumLoops());
  auto setRow = [&](Value row) {
    if (c.rowDims.size() == 1) {
      ivs[c.rowDims[0]] = row;
      return;
    }
    auto delin = affine::AffineDelinearizeIndexOp::create(
        b, loc, row, rowSizes, /*hasOuterBound=*/true);
    for (auto [i, d] : llvm::enumerate(c.rowDims))
      ivs[d] = delin.getResult(i);
  };
  auto indices = [&](OpOperand *o) {
    SmallVector<Value> idx;
    // Bound first: a range-for over *resultDims(...) would read the
    // optional after its temporary died (ASan: stack-use-after-scope).
    auto dims = resultDims(op.getMatchingIndexingMap(o));
    for (unsigned d : *dims)
      idx.push_back(ivs[d]);
    return idx;
  };
  // A row of the tile: in bounds (clamped) and whether it is a real row.
  auto clampRow = [&](Value row) -> std::pair<Value, Value> {
    if (!masked)
      return {row, Value()};
    Value valid =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, rows);
    return {arith::MinUIOp::create(b, loc, row, lastRow), valid};
  };
  auto at = [&](AffineMap m, unsigned result, int64_t vid) {
    return apply(m.getSubMap({result}), {lane, cst(vid)});
  };
  OpBuilder t0 = top();
  Value zeroF32 = arith::ConstantOp::create(t0, loc, b.getF32FloatAttr(0.0));
  Value zeroElem =
      arith::ConstantOp::create(t0, loc, b.getFloatAttr(c.elem, 0.0));

  // The accumulators [j][s][v] (output j, 8-column subtile s, value v).
  SmallVector<Value> init;
  SmallVector<Value> cRow(4), cCol(4);
  for (int64_t v = 0; v < 4; ++v) {
    cRow[v] = expr(d0 + d1, {row0, at(mapC, 0, v)});
    cCol[v] = at(mapC, 1, v);
  }
  auto cIndices = [&](unsigned j, int64_t s, int64_t v) {
    auto [row, valid] = clampRow(cRow[v]);
    setRow(row);
    ivs[c.nDim] = expr(d0 + d1 + s * 8, {col0, cCol[v]});
    return std::make_pair(indices(op.getDpsInitOperand(j)), valid);
  };
  for (unsigned j = 0; j < nOut; ++j)
    for (int64_t s = 0; s < nt; ++s)
      for (int64_t v = 0; v < 4; ++v) {
        auto [idx, valid] = cIndices(j, s, v);
        Value x = memref::LoadOp::create(b, loc, op.getDpsInits()[j], idx);
        init.push_back(
            valid ? arith::SelectOp::create(b, loc, valid, x, zeroF32) : x);
      }

  auto kLoop = scf::ForOp::create(b, loc, cst(0), cst(c.k), cst(kStep), init);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    ValueRange acc = kLoop.getRegionIterArgs();
    SmallVector<Value> next;
    // One element of A or B_j at (row, k); masked rows read as zero.
    auto loadAt = [&](OpOperand *o, Value row, Value col, Value k) {
      Value valid;
      if (row) {
        auto [r, ok] = clampRow(row);
        setRow(r);
        valid = ok;
      }
      ivs[c.nDim] = col;
      ivs[c.kDim] = k;
      Value x = memref::LoadOp::create(b, loc, o->get(), indices(o));
      return valid && o == c.a
                 ? arith::SelectOp::create(b, loc, valid, x, zeroElem)
                       .getResult()
                 : x;
    };
    // An operand element in f32: extended, or for tf32 rounded to tf32's
    // 10 mantissa bits as cvt.rna.tf32.f32 does (to nearest, ties away
    // from zero: add half an ulp to the magnitude, clear the low 13 bits;
    // NaN and infinity kept).
    auto toF32 = [&](Value x) -> Value {
      if (!c.tf32)
        return arith::ExtFOp::create(b, loc, f32, x);
      Type i32 = b.getI32Type();
      auto ci = [&](int64_t v) {
        return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
      };
      Value bits = arith::BitcastOp::create(b, loc, i32, x);
      Value rounded = arith::AndIOp::create(
          b, loc, arith::AddIOp::create(b, loc, bits, ci(0x1000)),
          ci(static_cast<int32_t>(0xFFFFE000u)));
      Value finite = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ult,
          arith::AndIOp::create(b, loc, bits, ci(0x7F800000)), ci(0x7F800000));
      return arith::BitcastOp::create(
          b, loc, f32, arith::SelectOp::create(b, loc, finite, rounded, bits));
    };
    if (emulate) {
      // Each lane's own accumulator elements, from memory.
      for (unsigned j = 0; j < nOut; ++j)
        for (int64_t s = 0; s < nt; ++s)
          for (int64_t v = 0; v < 4; ++v) {
            auto dot =
                scf::ForOp::create(b, loc, cst(0), cst(kStep), cst(1),
                                   ValueRange{acc[(j * nt + s) * 4 + v]});
            OpBuilder::InsertionGuard gd(b);
            b.setInsertionPointToStart(dot.getBody());
            Value k = expr(d0 + d1, {k0, dot.getInductionVar()});
            Value col = expr(d0 + d1 + s * 8, {col0, cCol[v]});
            Value x = loadAt(c.a, cRow[v], col, k);
            Value y = loadAt(c.b[j], Value(), col, k);
            Value p = arith::MulFOp::create(b, loc, toF32(x), toF32(y));
            scf::YieldOp::create(
                b, loc,
                ValueRange{
                    arith::AddFOp::create(b, loc, dot.getRegionIterArgs()[0], p)
                        .getResult()});
            b.setInsertionPointAfter(dot);
            next.push_back(dot.getResult(0));
          }
    } else {
      // Two elements in one register: the first in the low half.
      Type i32 = b.getI32Type();
      OpBuilder t1 = top();
      Value sixteen =
          arith::ConstantOp::create(t1, loc, b.getI32IntegerAttr(16));
      auto pack = [&](Value lo, Value hi) -> Value {
        if (c.elem.isF16())
          return vector::FromElementsOp::create(
              b, loc, VectorType::get({2}, c.elem), ValueRange{lo, hi});
        auto bits = [&](Value e) -> Value {
          return arith::ExtUIOp::create(
              b, loc, i32, arith::BitcastOp::create(b, loc, b.getI16Type(), e));
        };
        Value sh = arith::ShLIOp::create(b, loc, bits(hi), sixteen);
        return arith::OrIOp::create(b, loc, bits(lo), sh);
      };
      auto frag = [&](int64_t regs, llvm::function_ref<Value(int64_t)> elem) {
        SmallVector<Value> r;
        for (int64_t i = 0; i < regs; ++i)
          r.push_back(c.tf32
                          ? NVVM::ConvertFloatToTF32Op::create(
                                b, loc, i32, elem(i), NVVM::FPRoundingMode::RNA,
                                NVVM::SaturationMode::NONE, /*relu=*/false)
                                .getResult()
                          : pack(elem(2 * i), elem(2 * i + 1)));
        return r;
      };
      SmallVector<Value> aRegs = frag(4, [&](int64_t vid) {
        Value row = expr(d0 + d1, {row0, at(mapA, 0, vid)});
        Value k = expr(d0 + d1, {k0, at(mapA, 1, vid)});
        return loadAt(c.a, row, Value(), k);
      });
      auto ptx = c.tf32           ? NVVM::MMATypes::tf32
                 : c.elem.isF16() ? NVVM::MMATypes::f16
                                  : NVVM::MMATypes::bf16;
      Type res = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
      for (unsigned j = 0; j < nOut; ++j)
        for (int64_t s = 0; s < nt; ++s) {
          SmallVector<Value> bRegs = frag(2, [&](int64_t vid) {
            Value col = expr(d0 + d1 + s * 8, {col0, at(mapB, 0, vid)});
            Value k = expr(d0 + d1, {k0, at(mapB, 1, vid)});
            return loadAt(c.b[j], Value(), col, k);
          });
          auto mma = NVVM::MmaOp::create(
              b, loc, res, aRegs, bRegs, acc.slice((j * nt + s) * 4, 4),
              ArrayRef<int64_t>{16, 8, kStep}, std::nullopt, std::nullopt,
              std::array<NVVM::MMATypes, 2>{ptx, ptx},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          for (int64_t v = 0; v < 4; ++v)
            next.push_back(
                LLVM::ExtractValueOp::create(b, loc, mma.getResult(), v));
        }
    }
    scf::YieldOp::create(b, loc, next);
  }
  for (unsigned j = 0; j < nOut; ++j)
    for (int64_t s = 0; s < nt; ++s)
      for (int64_t v = 0; v < 4; ++v) {
        auto [idx, valid] = cIndices(j, s, v);
        Value x = kLoop.getResult((j * nt + s) * 4 + v);
        if (!valid) {
          memref::StoreOp::create(b, loc, x, op.getDpsInits()[j], idx);
          continue;
        }
        auto guardIf = scf::IfOp::create(b, loc, valid);
        OpBuilder::InsertionGuard gi(b);
        b.setInsertionPointToStart(guardIf.thenBlock());
        memref::StoreOp::create(b, loc, x, op.getDpsInits()[j], idx);
      }
}

} // namespace gatec::gpu
