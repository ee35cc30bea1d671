//===- MatmulMicroKernel.cpp - --matmul-micro-kernel ----------------------===//
//
// Contractions on memrefs as register-blocked FMA micro-kernels: an mr × NR
// tile of C held in vector registers across the whole k loop, B read as
// vectors (from panels packed at compile time when B is a constant), A
// broadcast one scalar at a time.
//
//===----------------------------------------------------------------------===//
#include "passes/cpu/Passes.h"

#include "passes/common/ConstantBytes.h"
#include "passes/common/MappedPages.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/StringSet.h"

#include <map>

namespace gatec::cpu {
#define GEN_PASS_DEF_MATMULMICROKERNEL
#include "passes/cpu/Passes.h.inc"
} // namespace gatec::cpu

using namespace mlir;

namespace {

/// A map whose results are loop dims or the constant 0 (a broadcast).
bool isDimsOrZero(AffineMap map) {
  return llvm::all_of(map.getResults(), [](AffineExpr e) {
    if (isa<AffineDimExpr>(e))
      return true;
    auto c = dyn_cast<AffineConstantExpr>(e);
    return c && c.getValue() == 0;
  });
}

std::optional<unsigned> dimOf(AffineExpr e) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return d.getPosition();
  return std::nullopt;
}

/// True when the innermost stride of `t` is statically 1.
bool unitInnerStride(MemRefType t) {
  if (t.getRank() == 0)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(t.getStridesAndOffset(strides, offset)))
    return false;
  return strides.back() == 1;
}

/// `v`, or the value an arith.extf widened.
Value stripExt(Value v) {
  if (auto e = v.getDefiningOp<arith::ExtFOp>())
    return e.getIn();
  return v;
}

/// C[b.., m, n] += A[b.., m, k] · B[b.., k, n], as matched on a generic.
struct Contraction {
  linalg::GenericOp op;
  unsigned m, n, k;
  Value a, b, c;
  AffineMap aMap, bMap, cMap;
  Type aElem, bElem;
  /// B is [.., N, K] (a Gemm's transB, a Linear weight): read only through
  /// panels packed at compile time, so B must be a constant.
  bool bT = false;
};

/// C_j[b.., m, n] += A[b.., m, k] · B_j[b.., k, n] for output j of `op`
/// (input 0 is A, input 1 + j is B_j: a GLU's gate and up projections are
/// one generic with two outputs).
std::optional<Contraction> matchOutput(linalg::GenericOp op, unsigned j,
                                       bool allowTransposedB) {
  unsigned nout = op.getNumDpsInits();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  Contraction c;
  c.op = op;
  c.aMap = maps[0];
  c.bMap = maps[1 + j];
  c.cMap = maps[1 + nout + j];
  SmallVector<utils::IteratorType> its = op.getIteratorTypesArray();
  SmallVector<unsigned> red;
  for (unsigned i = 0; i < its.size(); ++i)
    if (its[i] == utils::IteratorType::reduction)
      red.push_back(i);
  if (red.size() != 1)
    return std::nullopt;
  c.k = red[0];
  if (c.cMap.getNumResults() < 2 || c.bMap.getNumResults() < 2)
    return std::nullopt;
  auto n = dimOf(c.cMap.getResults().back());
  auto m = dimOf(c.cMap.getResult(c.cMap.getNumResults() - 2));
  ArrayRef<AffineExpr> bRes = c.bMap.getResults();
  if (!n || !m)
    return std::nullopt;
  if (bRes.back() != c.cMap.getResults().back()) {
    // [.., N, K]: only as a constant, packed.
    c.bT = allowTransposedB && dimOf(bRes.back()) == c.k &&
           bRes[bRes.size() - 2] == c.cMap.getResults().back() &&
           op.getDpsInputOperand(1 + j)
               ->get()
               .getDefiningOp<memref::GetGlobalOp>();
    if (!c.bT)
      return std::nullopt;
  }
  c.n = *n;
  c.m = *m;
  if (!c.aMap.isFunctionOfDim(c.k) || !c.bMap.isFunctionOfDim(c.k) ||
      c.aMap.isFunctionOfDim(c.n) || !c.aMap.isFunctionOfDim(c.m) ||
      c.bMap.isFunctionOfDim(c.m))
    return std::nullopt;
  // Every other loop is a batch loop of C.
  for (unsigned i = 0; i < its.size(); ++i)
    if (i != c.k && !c.cMap.isFunctionOfDim(i))
      return std::nullopt;

  c.a = op.getDpsInputOperand(0)->get();
  c.b = op.getDpsInputOperand(1 + j)->get();
  c.c = op.getDpsInitOperand(j)->get();
  auto at = cast<MemRefType>(c.a.getType()),
       bt = cast<MemRefType>(c.b.getType()),
       ct = cast<MemRefType>(c.c.getType());
  c.aElem = at.getElementType();
  c.bElem = bt.getElementType();
  if (!ct.getElementType().isF32() || !isa<FloatType>(c.aElem) ||
      !isa<FloatType>(c.bElem) || c.aElem.getIntOrFloatBitWidth() > 32 ||
      c.bElem.getIntOrFloatBitWidth() > 32)
    return std::nullopt;
  if ((!c.bT && !unitInnerStride(bt)) || !unitInnerStride(ct))
    return std::nullopt;

  // The body: yield #j is c_j + ext(a) · ext(b_j) (either order of both).
  Block &body = op.getRegion().front();
  auto add = body.getTerminator()->getOperand(j).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  Value acc = body.getArgument(1 + nout + j);
  Value p = add.getLhs() == acc   ? add.getRhs()
            : add.getRhs() == acc ? add.getLhs()
                                  : Value();
  auto mul = p ? p.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return std::nullopt;
  Value x = stripExt(mul.getLhs()), y = stripExt(mul.getRhs());
  Value a0 = body.getArgument(0), a1 = body.getArgument(1 + j);
  if (!((x == a0 && y == a1) || (x == a1 && y == a0)))
    return std::nullopt;
  for (Value v : {mul.getLhs(), mul.getRhs()})
    if (!v.getType().isF32())
      return std::nullopt;
  return c;
}

/// One contraction per output of `op`, or none when any output is not one
/// (or the body computes anything else).
SmallVector<Contraction> matchContractions(linalg::GenericOp op,
                                           bool allowTransposedB) {
  unsigned nout = op.getNumDpsInits();
  if (!op.hasPureBufferSemantics() || nout == 0 ||
      op.getNumDpsInputs() != 1 + nout ||
      !llvm::all_of(op.getIndexingMapsArray(), isDimsOrZero))
    return {};
  for (Operation &o : op.getRegion().front().without_terminator())
    if (!isa<arith::AddFOp, arith::MulFOp, arith::ExtFOp>(o))
      return {};
  SmallVector<Contraction> out;
  for (unsigned j = 0; j < nout; ++j) {
    auto c = matchOutput(op, j, allowTransposedB);
    if (!c)
      return {};
    out.push_back(*c);
  }
  return out;
}

struct MatmulMicroKernelPass
    : gatec::cpu::impl::MatmulMicroKernelBase<MatmulMicroKernelPass> {
  using Base::Base;

  int64_t vl() const { return vectorBits / 32; }
  int64_t nr() const { return vl() * nrVectors; }

  /// The constant globals packed into panels, by name.
  llvm::StringSet<> packedFrom;
  /// Packed panels of constant globals, by (global, NR).
  std::map<std::pair<std::string, int64_t>, memref::GlobalOp> packed;

  /// B as a constant [K, N] (leading dims of size 1 or read at 0): the
  /// global of its panels [ceil(N/NR), K, NR], created once per weight.
  memref::GlobalOp packedWeights(const Contraction &c) {
    auto get = c.b.getDefiningOp<memref::GetGlobalOp>();
    if (!get)
      return {};
    auto module = c.op->getParentOfType<ModuleOp>();
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        c.op, get.getNameAttr());
    if (!global || !global.getConstant() || !global.getInitialValue())
      return {};
    auto bt = cast<MemRefType>(c.b.getType());
    if (!bt.hasStaticShape() || !bt.getLayout().isIdentity())
      return {};
    int64_t rank = bt.getRank();
    ArrayRef<AffineExpr> res = c.bMap.getResults();
    if (dimOf(res[c.bT ? rank - 1 : rank - 2]) != c.k)
      return {};
    for (int64_t i = 0; i + 2 < rank; ++i)
      if (dimOf(res[i]) && bt.getDimSize(i) != 1)
        return {};
    auto bytes = gatec::common::constantBytes(*global.getInitialValue());
    if (!bytes)
      return {};
    int64_t kk = bt.getDimSize(c.bT ? rank - 1 : rank - 2),
            n = bt.getDimSize(c.bT ? rank - 2 : rank - 1);
    // Narrower than a panel: the padding would outweigh the weight (read
    // in place, with masks, unless it must be transposed).
    if (n < nr() && !c.bT)
      return {};
    int64_t es = c.bElem.getIntOrFloatBitWidth() / 8;
    if ((int64_t)bytes->size() < kk * n * es)
      return {};
    auto key = std::make_pair(
        global.getSymName().str() + (c.bT ? "/transposed" : ""), nr());
    if (auto it = packed.find(key); it != packed.end())
      return it->second;

    int64_t panels = (n + nr() - 1) / nr();
    std::vector<char> data(panels * kk * nr() * es, 0);
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t r = 0; r < kk; ++r) {
        int64_t cols = std::min(nr(), n - p * nr());
        char *dst = &data[((p * kk + r) * nr()) * es];
        if (!c.bT) {
          std::memcpy(dst, bytes->data() + (r * n + p * nr()) * es, cols * es);
          continue;
        }
        for (int64_t j = 0; j < cols; ++j) // B[k = r, n = p·NR + j]
          std::memcpy(dst + j * es,
                      bytes->data() + ((p * nr() + j) * kk + r) * es, es);
      }
    // The original is read again (from the file) only where it is kept.
    gatec::common::dropResidentPages(*bytes);
    auto type = RankedTensorType::get({panels, kk, nr()}, c.bElem);
    std::string name =
        (global.getSymName() + (c.bT ? "_panels_t" : "_panels")).str();
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(data), alignof(double));
    auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPoint(global);
    auto g = memref::GlobalOp::create(
        b, global.getLoc(), name, b.getStringAttr("private"),
        MemRefType::get(type.getShape(), c.bElem), attr, /*constant=*/true,
        b.getI64IntegerAttr(64));
    SymbolTable(module).insert(g); // uniques the name
    packed[key] = g;
    packedFrom.insert(global.getSymName());
    return g;
  }

  void rewrite(const Contraction &c) {
    linalg::GenericOp op = c.op;
    ImplicitLocOpBuilder b(op.getLoc(), op);
    Type f32 = b.getF32Type();
    auto vecT = VectorType::get({vl()}, f32);
    auto maskT = VectorType::get({vl()}, b.getI1Type());
    unsigned nl = op.getNumLoops();
    SmallVector<Range, 4> ranges = cast<linalg::LinalgOp>(op.getOperation())
                                       .createLoopRanges(b, op.getLoc());
    auto size = [&](unsigned d) {
      return getValueOrCreateConstantIndexOp(b, op.getLoc(), ranges[d].size);
    };
    // Index constants, created once before the loops (the loop builders
    // move `b` into the bodies).
    OpBuilder cb(op);
    llvm::DenseMap<int64_t, Value> consts;
    auto idx = [&](int64_t v) -> Value {
      Value &c = consts[v];
      if (!c)
        c = arith::ConstantIndexOp::create(cb, op.getLoc(), v);
      return c;
    };
    Value c0 = idx(0), c1 = idx(1);
    Value mSize = size(c.m), nSize = size(c.n), kSize = size(c.k);

    memref::GlobalOp panels = packWeights ? packedWeights(c) : nullptr;
    Value bBuf = c.b;
    if (panels)
      bBuf = memref::GetGlobalOp::create(
          b,
          MemRefType::get(cast<MemRefType>(panels.getType()).getShape(),
                          c.bElem),
          panels.getSymName());

    auto indices = [&](OpBuilder &ob, AffineMap map, ArrayRef<Value> ivs) {
      SmallVector<Value> out;
      for (AffineExpr e : map.getResults())
        out.push_back(dimOf(e) ? ivs[*dimOf(e)] : c0);
      return out;
    };
    auto ext = [&](ImplicitLocOpBuilder &ob, Value v, Type to) -> Value {
      return v.getType() == to ? v : arith::ExtFOp::create(ob, to, v);
    };

    // One register tile: rows × NR at (m0, n0); `masked` when fewer than NR
    // columns remain (`nrem`).
    Value kLo, kHi; // the k block of the kernels being built
    Value aPacked;  // A's row tiles [M / mr, K, mr], when packed
    auto kernel = [&](ImplicitLocOpBuilder &ob, SmallVector<Value> ivs,
                      Value m0, Value n0, int64_t rows, bool masked,
                      Value nrem) {
      int64_t nv = nrVectors;
      SmallVector<Value> masks, colOff;
      for (int64_t v = 0; v < nv; ++v) {
        colOff.push_back(arith::AddIOp::create(ob, n0, idx(v * vl())));
        if (masked)
          masks.push_back(vector::CreateMaskOp::create(
              ob, maskT,
              ValueRange{arith::SubIOp::create(ob, nrem, idx(v * vl()))}));
      }
      Value zero = arith::ConstantOp::create(
          ob, vecT, DenseElementsAttr::get(vecT, ob.getF32FloatAttr(0)));
      SmallVector<Value> acc;
      auto cIndices = [&](int64_t i, int64_t v) {
        ivs[c.m] = arith::AddIOp::create(ob, m0, idx(i));
        ivs[c.n] = colOff[v];
        return indices(ob, c.cMap, ivs);
      };
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t v = 0; v < nv; ++v) {
          SmallVector<Value> ci = cIndices(i, v);
          acc.push_back(masked
                            ? (Value)vector::MaskedLoadOp::create(
                                  ob, vecT, c.c, ci, masks[v], zero)
                            : (Value)vector::LoadOp::create(ob, vecT, c.c, ci));
        }
      Value panel = panels
                        ? arith::DivUIOp::create(ob, n0, idx(nr())).getResult()
                        : Value();
      Value tile = rows == mr && aPacked
                       ? arith::DivUIOp::create(ob, m0, idx(mr)).getResult()
                       : Value();
      auto loop = scf::ForOp::create(
          ob, kLo, kHi, c1, acc,
          [&](OpBuilder &lb, Location loc, Value k, ValueRange iter) {
            ImplicitLocOpBuilder ib(loc, lb);
            SmallVector<Value> kivs = ivs;
            kivs[c.k] = k;
            auto bVecT = VectorType::get({vl()}, c.bElem);
            SmallVector<Value> bv;
            for (int64_t v = 0; v < nv; ++v) {
              Value x;
              if (panels) {
                x = vector::LoadOp::create(ib, bVecT, bBuf,
                                           ValueRange{panel, k, idx(v * vl())});
              } else {
                kivs[c.n] = colOff[v];
                SmallVector<Value> bi = indices(ib, c.bMap, kivs);
                Value pass = arith::ConstantOp::create(
                    ib, bVecT,
                    DenseElementsAttr::get(bVecT, ib.getFloatAttr(c.bElem, 0)));
                x = masked ? (Value)vector::MaskedLoadOp::create(
                                 ib, bVecT, c.b, bi, masks[v], pass)
                           : (Value)vector::LoadOp::create(ib, bVecT, c.b, bi);
              }
              bv.push_back(ext(ib, x, vecT));
            }
            SmallVector<Value> next(iter.begin(), iter.end());
            for (int64_t i = 0; i < rows; ++i) {
              kivs[c.m] = arith::AddIOp::create(ib, m0, idx(i));
              Value a = rows == mr && aPacked
                            ? memref::LoadOp::create(
                                  ib, aPacked, ValueRange{tile, k, idx(i)})
                            : memref::LoadOp::create(ib, c.a,
                                                     indices(ib, c.aMap, kivs));
              Value s = vector::BroadcastOp::create(ib, vecT, ext(ib, a, f32));
              for (int64_t v = 0; v < nv; ++v)
                next[i * nv + v] =
                    vector::FMAOp::create(ib, s, bv[v], next[i * nv + v]);
            }
            scf::YieldOp::create(ib, next);
          });
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t v = 0; v < nv; ++v) {
          SmallVector<Value> ci = cIndices(i, v);
          Value r = loop.getResult(i * nv + v);
          if (masked)
            vector::MaskedStoreOp::create(ob, c.c, ci, masks[v], r);
          else
            vector::StoreOp::create(ob, r, c.c, ci);
        }
    };

    // Loops: batch dims, then the NR-column panels, then the row tiles.
    SmallVector<unsigned> batch;
    for (unsigned d = 0; d < nl; ++d)
      if (d != c.m && d != c.n && d != c.k)
        batch.push_back(d);
    std::function<void(ImplicitLocOpBuilder &, SmallVector<Value>, size_t)>
        nest = [&](ImplicitLocOpBuilder &ob, SmallVector<Value> ivs,
                   size_t depth) {
          if (depth < batch.size()) {
            scf::ForOp::create(
                ob, c0, size(batch[depth]), c1, ValueRange{},
                [&](OpBuilder &lb, Location loc, Value iv, ValueRange) {
                  ImplicitLocOpBuilder ib(loc, lb);
                  SmallVector<Value> next = ivs;
                  next[batch[depth]] = iv;
                  nest(ib, next, depth + 1);
                  scf::YieldOp::create(ib);
                });
            return;
          }
          Value tiles = arith::DivUIOp::create(ob, mSize, idx(mr));
          Value mFull = arith::MulIOp::create(ob, tiles, idx(mr));
          // A's full row tiles packed once into [M / mr, K, mr] when more
          // than two panels of B reuse them: each k step of a kernel then
          // reads mr consecutive elements (A's rows are often a multiple
          // of 4 KiB apart, and mr of them at once alias in L1).
          int64_t staticN = getConstantIntValue(ranges[c.n].size)
                                .value_or(ShapedType::kDynamic);
          aPacked = nullptr;
          if (packA && (ShapedType::isDynamic(staticN) || staticN > 2 * nr())) {
            aPacked = memref::AllocOp::create(
                ob,
                MemRefType::get(
                    {ShapedType::kDynamic, ShapedType::kDynamic, mr}, c.aElem),
                ValueRange{tiles, kSize}, ob.getI64IntegerAttr(64));
            scf::ForOp::create(
                ob, c0, tiles, c1, ValueRange{},
                [&](OpBuilder &lb, Location l, Value t, ValueRange) {
                  ImplicitLocOpBuilder tb(l, lb);
                  SmallVector<Value> pivs = ivs;
                  Value row0 = arith::MulIOp::create(tb, t, idx(mr));
                  for (int64_t i = 0; i < mr; ++i) {
                    pivs[c.m] = arith::AddIOp::create(tb, row0, idx(i));
                    scf::ForOp::create(
                        tb, c0, kSize, c1, ValueRange{},
                        [&](OpBuilder &kb, Location kl, Value k, ValueRange) {
                          ImplicitLocOpBuilder xb(kl, kb);
                          SmallVector<Value> kivs = pivs;
                          kivs[c.k] = k;
                          Value a = memref::LoadOp::create(
                              xb, c.a, indices(xb, c.aMap, kivs));
                          memref::StoreOp::create(xb, a, aPacked,
                                                  ValueRange{t, k, idx(i)});
                          scf::YieldOp::create(xb);
                        });
                  }
                  scf::YieldOp::create(tb);
                });
          }
          // The NR-column panels, each in k blocks of kc: a kc x NR slice
          // of the panel stays in L1 while every row tile of the block
          // reads it (with an mr x kc slice of A beside it), and the
          // panel is read front to back, one contiguous stream. C is read
          // and written once per k block.
          auto rowTiles = [&](ImplicitLocOpBuilder &rb, Value n0, Value nrem,
                              bool masked) {
            auto rows = [&](Value from, Value step, int64_t tile) {
              scf::ForOp::create(
                  rb, from, tile == 1 ? mSize : mFull, step, ValueRange{},
                  [&](OpBuilder &lb, Location l, Value m0, ValueRange) {
                    ImplicitLocOpBuilder kb(l, lb);
                    kernel(kb, ivs, m0, n0, tile, masked, nrem);
                    scf::YieldOp::create(kb);
                  });
            };
            rows(c0, idx(mr), mr);
            rows(mFull, c1, 1);
          };
          scf::ForOp::create(
              ob, c0, nSize, idx(nr()), ValueRange{},
              [&](OpBuilder &lb, Location loc, Value n0, ValueRange) {
                ImplicitLocOpBuilder ib(loc, lb);
                Value nrem = arith::SubIOp::create(ib, nSize, n0);
                Value full = arith::CmpIOp::create(
                    ib, arith::CmpIPredicate::sge, nrem, idx(nr()));
                auto kBlocks = [&](ImplicitLocOpBuilder &kb, bool masked) {
                  scf::ForOp::create(
                      kb, c0, kSize, idx(kc), ValueRange{},
                      [&](OpBuilder &pb, Location pl, Value pc, ValueRange) {
                        ImplicitLocOpBuilder bb(pl, pb);
                        kLo = pc;
                        kHi = arith::MinUIOp::create(
                            bb, arith::AddIOp::create(bb, pc, idx(kc)), kSize);
                        rowTiles(bb, n0, nrem, masked);
                        scf::YieldOp::create(bb);
                      });
                };
                scf::IfOp::create(
                    ib, full,
                    [&](OpBuilder &tb, Location tl) {
                      ImplicitLocOpBuilder t(tl, tb);
                      kBlocks(t, false);
                      scf::YieldOp::create(t);
                    },
                    [&](OpBuilder &eb, Location el) {
                      ImplicitLocOpBuilder e(el, eb);
                      kBlocks(e, true);
                      scf::YieldOp::create(e);
                    });
                scf::YieldOp::create(ib);
              });
          if (aPacked)
            memref::DeallocOp::create(ob, aPacked);
        };
    nest(b, SmallVector<Value>(nl, c0), 0);
  }

  void runOnOperation() override {
    if (vectorBits < 64 || vectorBits % 32 || mr < 1 || nrVectors < 1 ||
        kc < 1) {
      getOperation().emitError("matmul-micro-kernel: bad register tile");
      return signalPassFailure();
    }
    SmallVector<SmallVector<Contraction>> found;
    getOperation().walk([&](linalg::GenericOp op) {
      SmallVector<Contraction> cs = matchContractions(op, packWeights);
      if (!cs.empty())
        found.push_back(std::move(cs));
    });
    for (SmallVector<Contraction> &cs : found) {
      // A transposed B is read only through its panels.
      if (llvm::any_of(cs, [&](const Contraction &c) {
            return c.bT && !packedWeights(c);
          }))
        continue;
      for (const Contraction &c : cs)
        rewrite(c);
      cs.front().op.erase();
    }
    // Weights now read only as panels are not kept twice in the library.
    ModuleOp module = getOperation();
    module.walk([](memref::GetGlobalOp g) {
      if (g->use_empty())
        g.erase();
    });
    llvm::StringSet<> used;
    module.walk([&](memref::GetGlobalOp g) { used.insert(g.getName()); });
    llvm::DenseSet<void *> keptBlobs;
    SmallVector<memref::GlobalOp> dead;
    for (auto g : module.getOps<memref::GlobalOp>()) {
      bool wasPacked = packedFrom.contains(g.getSymName());
      if (wasPacked && !used.contains(g.getSymName())) {
        dead.push_back(g);
        continue;
      }
      if (auto init = g.getInitialValue())
        if (auto res = dyn_cast<DenseResourceElementsAttr>(*init))
          keptBlobs.insert(res.getRawHandle().getResource());
    }
    // Their bytes go too, unless a global that stays shares the blob.
    for (memref::GlobalOp g : dead) {
      if (auto init = g.getInitialValue())
        if (auto res = dyn_cast<DenseResourceElementsAttr>(*init))
          if (!keptBlobs.contains(res.getRawHandle().getResource()))
            res.getRawHandle().getResource()->setBlob(AsmResourceBlob());
      g.erase();
    }
  }
};
} // namespace
