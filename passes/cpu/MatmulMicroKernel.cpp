//===- MatmulMicroKernel.cpp - --matmul-micro-kernel ----------------------===//
//
// Contractions on memrefs as register-blocked FMA micro-kernels: an mr × NR
// tile of C held in vector registers across the whole k loop, B read as
// vectors (from panels packed at compile time when B is a constant), A
// broadcast one scalar at a time.
//
//===----------------------------------------------------------------------===//
#include "passes/cpu/Passes.h"

#include "passes/cpu/ColumnSplit.h"

#include "passes/common/ConstantBytes.h"
#include "passes/common/MappedPages.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

/// An elementwise generic that reads every output of a multi-output
/// contraction (a GLU's x·W and x·V) at the same indices and writes one
/// fresh buffer: act(x·W)·(x·V). Computed in the contraction's registers,
/// it leaves neither product in memory.
struct Epilogue {
  linalg::GenericOp op;
  /// Input p of `op` reads output argOutput[p] of the contraction.
  SmallVector<unsigned> argOutput;
  Value out;
  /// Every output of the contraction starts at zero (a zero fill, or a
  /// copy of one): the accumulators start in registers, and the products'
  /// buffers and their fills go.
  bool zeroInit = false;
};

/// `buf` holds zeros where `before` reads it: the last op of the block
/// before it that writes `buf` is a fill with 0, or a copy of such a
/// buffer.
bool zeroFilled(Value buf, Operation *before) {
  Operation *last = nullptr;
  for (Operation *u : buf.getUsers()) {
    if (u->getBlock() != before->getBlock() || !u->isBeforeInBlock(before))
      continue;
    auto fill = dyn_cast<linalg::FillOp>(u);
    auto copy = dyn_cast<memref::CopyOp>(u);
    bool writes = (fill && fill.getOutputs()[0] == buf) ||
                  (copy && copy.getTarget() == buf);
    bool reads = copy && copy.getSource() == buf;
    if (!writes && !reads && !isa<memref::DeallocOp>(u))
      return false; // anything else may write it
    if (writes && (!last || last->isBeforeInBlock(u)))
      last = u;
  }
  if (auto fill = dyn_cast_or_null<linalg::FillOp>(last)) {
    FloatAttr v;
    return matchPattern(fill.getInputs()[0], m_Constant(&v)) &&
           v.getValue().isZero();
  }
  if (auto copy = dyn_cast_or_null<memref::CopyOp>(last))
    return zeroFilled(copy.getSource(), copy);
  return false;
}

/// An op of an epilogue's body that has a vector form of the same name.
bool vectorizable(Operation &o) {
  if (!o.hasTrait<OpTrait::Elementwise>() || o.getNumRegions() ||
      !isa<arith::ArithDialect, math::MathDialect>(o.getDialect()) ||
      isa<arith::ConstantOp>(o))
    return false;
  // Kept to the ops the CPU pipeline lowers on vectors inline (exp, tanh
  // and erf become polynomials; no libm calls per lane).
  if (isa<math::MathDialect>(o.getDialect()) &&
      !isa<math::ExpOp, math::ExpM1Op, math::TanhOp, math::ErfOp, math::SqrtOp,
           math::RsqrtOp, math::AbsFOp, math::FmaOp>(o))
    return false;
  auto ok = [](Type t) { return t.isF32() || t.isInteger(1); };
  return llvm::all_of(o.getOperandTypes(), ok) &&
         llvm::all_of(o.getResultTypes(), ok);
}

/// The buffer `v` views (through subviews).
Value baseOf(Value v) {
  while (auto sv = v.getDefiningOp<memref::SubViewOp>())
    v = sv.getSource();
  return v;
}

/// The sizes of an allocation or a subview: static sizes as numbers,
/// dynamic ones as the values they were given.
using Sizes = SmallVector<std::pair<int64_t, Value>>;
std::optional<Sizes> sizesOf(Value v) {
  SmallVector<OpFoldResult> mixed;
  if (auto sv = v.getDefiningOp<memref::SubViewOp>())
    mixed = sv.getMixedSizes();
  else if (auto a = v.getDefiningOp<memref::AllocOp>())
    mixed = a.getMixedSizes();
  else
    return std::nullopt;
  Sizes out;
  for (OpFoldResult r : mixed) {
    std::optional<int64_t> c = getConstantIntValue(r);
    out.push_back(c ? std::make_pair(*c, Value())
                    : std::make_pair(int64_t(-1), cast<Value>(r)));
  }
  return out;
}

/// The epilogue of the contractions `cs` (the outputs of one generic):
/// the next op that touches their buffers, when it is an elementwise
/// generic as above and nothing else reads them.
std::optional<Epilogue> matchEpilogue(ArrayRef<Contraction> cs) {
  linalg::GenericOp con = cs.front().op;
  Block *block = con->getBlock();
  // The ops up to the epilogue: allocations and pure ops only (the kernel
  // moves down to the epilogue).
  linalg::GenericOp epi;
  for (Operation *o = con->getNextNode(); o; o = o->getNextNode()) {
    if ((epi = dyn_cast<linalg::GenericOp>(o)))
      break;
    if (!isa<memref::AllocOp>(o) && !isMemoryEffectFree(o))
      return std::nullopt;
  }
  if (!epi || !epi.hasPureBufferSemantics() || epi.getNumDpsInits() != 1 ||
      epi.getNumDpsInputs() != (int64_t)cs.size() ||
      epi.getNumParallelLoops() != epi.getNumLoops() ||
      !llvm::all_of(epi.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return std::nullopt;
  Epilogue e;
  e.op = epi;
  e.out = epi.getDpsInitOperand(0)->get();
  // The output: a fresh buffer or a view of one, other than A's (the
  // kernel writes it while later tiles still read A), with a unit inner
  // stride.
  Value outBase = baseOf(e.out);
  if (!outBase.getDefiningOp<memref::AllocOp>() ||
      outBase == baseOf(cs.front().a) ||
      !unitInnerStride(cast<MemRefType>(e.out.getType())))
    return std::nullopt;
  std::optional<Sizes> outSizes = sizesOf(e.out);
  SmallVector<bool> seen(cs.size(), false);
  for (OpOperand *in : epi.getDpsInputOperands()) {
    auto it = llvm::find_if(
        cs, [&](const Contraction &c) { return c.c == in->get(); });
    if (it == cs.end() || seen[it - cs.begin()] || outBase == in->get())
      return std::nullopt;
    seen[it - cs.begin()] = true;
    e.argOutput.push_back(it - cs.begin());
    // The shape of the output: the same static sizes and dynamic sizes
    // from the same values.
    if (!outSizes || sizesOf(in->get()) != outSizes)
      return std::nullopt;
  }
  // The products are read by nothing else, written by nothing else
  // before the contraction than fills and copies.
  for (const Contraction &c : cs)
    for (Operation *u : c.c.getUsers()) {
      if (u == con || u == epi || isa<memref::DeallocOp>(u))
        continue;
      auto copy = dyn_cast<memref::CopyOp>(u);
      if (!(isa<linalg::FillOp>(u) || (copy && copy.getTarget() == c.c)) ||
          u->getBlock() != block || !u->isBeforeInBlock(con))
        return std::nullopt;
    }
  // The output is not used before the epilogue.
  for (Operation *u : e.out.getUsers()) {
    Operation *top = block->findAncestorOpInBlock(*u);
    if (u != epi && (!top || !epi->isBeforeInBlock(top)))
      return std::nullopt;
  }
  // The body: vectorizable ops on the inputs; the output is not read.
  Block &body = epi.getRegion().front();
  if (!body.getArgument(cs.size()).use_empty())
    return std::nullopt;
  for (Operation &o : body.without_terminator())
    if (!vectorizable(o))
      return std::nullopt;
  e.zeroInit = llvm::all_of(
      cs, [&](const Contraction &c) { return zeroFilled(c.c, con); });
  return e;
}

/// The epilogue's body on vectors: `ins` for its inputs; scalars from
/// outside the body broadcast.
Value applyEpilogue(ImplicitLocOpBuilder &b, const Epilogue &e,
                    ArrayRef<Value> ins, VectorType vecT) {
  Block &body = linalg::GenericOp(e.op).getRegion().front();
  IRMapping map;
  for (auto [p, v] : llvm::enumerate(ins))
    map.map(body.getArgument(p), v);
  auto vec = [&](Type t) { return VectorType::get(vecT.getShape(), t); };
  for (Operation &o : body.without_terminator()) {
    SmallVector<Value> operands;
    for (Value v : o.getOperands())
      operands.push_back(map.contains(v) ? map.lookup(v)
                                         : (Value)vector::BroadcastOp::create(
                                               b, vec(v.getType()), v));
    SmallVector<Type> types;
    for (Type t : o.getResultTypes())
      types.push_back(vec(t));
    OperationState st(b.getLoc(), o.getName().getStringRef(), operands, types,
                      o.getAttrs());
    map.map(o.getResults(), b.create(st)->getResults());
  }
  return map.lookup(body.getTerminator()->getOperand(0));
}

/// Erases `buf` (an allocation) with its fills, copies into it and
/// deallocation when nothing else uses it, then the sources of those
/// copies likewise.
void eraseIfDead(Value buf) {
  SmallVector<Operation *> users(buf.getUsers().begin(), buf.getUsers().end());
  SmallVector<Value> sources;
  for (Operation *u : users) {
    auto copy = dyn_cast<memref::CopyOp>(u);
    if (!isa<linalg::FillOp, memref::DeallocOp>(u) &&
        !(copy && copy.getTarget() == buf))
      return;
    if (copy)
      sources.push_back(copy.getSource());
  }
  auto alloc = buf.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return;
  for (Operation *u : users)
    u->erase();
  alloc.erase();
  for (Value s : sources)
    eraseIfDead(s);
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

  /// The vector registers of the target (AVX-512: 32; AVX2, SSE: 16).
  int64_t registers() const { return vectorBits >= 512 ? 32 : 16; }

  /// Rows of a register tile that computes `nout` contractions at once
  /// (for an epilogue that reads them all): mr / nout rows (a row block
  /// that is a multiple of mr has no one-row remainder), fewer where the
  /// accumulators would not fit in the registers that B's vectors and A's
  /// broadcast leave.
  int64_t tileRows(size_t nout) const {
    if (nout == 1)
      return mr;
    int64_t perRow = nout * nrVectors;
    return std::max<int64_t>(
        1, std::min<int64_t>(mr / nout, (registers() - perRow - 2) / perRow));
  }

  /// The panels of every output, K x NR each, fit in half of a 1 MiB L2
  /// (K static): with an epilogue they are read over the whole k loop by
  /// every row tile.
  bool fitsInL2(ArrayRef<Contraction> cs) const {
    int64_t k =
        linalg::GenericOp(cs.front().op).getStaticLoopRanges()[cs.front().k];
    if (ShapedType::isDynamic(k))
      return false;
    int64_t bytes = 0;
    for (const Contraction &c : cs)
      bytes += k * nr() * c.bElem.getIntOrFloatBitWidth() / 8;
    return bytes <= 512 * 1024;
  }

  /// Rewrites the contractions `cs` of one generic (sharing its loops and
  /// A) into micro-kernels: one nest per contraction, or, with an
  /// epilogue, one nest whose register tiles hold every output's
  /// accumulators over the whole k loop and store only the epilogue's
  /// result.
  /// With a column split, only the panels of [nLo, nHi) (nLo a multiple
  /// of NR).
  /// `zeroStart`: C held zeros (its fill is gone), so the first k block
  /// starts its accumulators at zero instead of loading C.
  void rewrite(ArrayRef<Contraction> cs, const Epilogue *epi,
               Value nLo = nullptr, Value nHi = nullptr,
               bool zeroStart = false) {
    const Contraction &c = cs.front();
    linalg::GenericOp op = c.op;
    // With an epilogue the kernel replaces both ops where the epilogue was
    // (its output may be allocated between them).
    Operation *at =
        epi ? linalg::GenericOp(epi->op).getOperation() : op.getOperation();
    ImplicitLocOpBuilder b(op.getLoc(), at);
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
    OpBuilder cb(at);
    llvm::DenseMap<int64_t, Value> consts;
    auto idx = [&](int64_t v) -> Value {
      Value &c = consts[v];
      if (!c)
        c = arith::ConstantIndexOp::create(cb, op.getLoc(), v);
      return c;
    };
    Value c0 = idx(0), c1 = idx(1);
    Value mSize = size(c.m), nSize = size(c.n), kSize = size(c.k);
    size_t no = cs.size();
    int64_t mt = tileRows(no); // rows of a full register tile

    // B of each output: its packed panels, or itself.
    SmallVector<bool> panels;
    SmallVector<Value> bBufs, flatPanels;
    for (const Contraction &x : cs) {
      memref::GlobalOp p = packWeights ? packedWeights(x) : nullptr;
      panels.push_back((bool)p);
      bBufs.push_back(
          p ? (Value)memref::GetGlobalOp::create(
                  b,
                  MemRefType::get(cast<MemRefType>(p.getType()).getShape(),
                                  x.bElem),
                  p.getSymName())
            : x.b);
      // The panels as rows [P * K, NR], for the prefetches.
      Value flat;
      if (p && prefetchPanels) {
        flat = memref::CollapseShapeOp::create(
            b, bBufs.back(), SmallVector<ReassociationIndices>{{0, 1}, {2}});
      }
      flatPanels.push_back(flat);
    }

    auto indices = [&](OpBuilder &ob, AffineMap map, ArrayRef<Value> ivs) {
      SmallVector<Value> out;
      for (AffineExpr e : map.getResults())
        out.push_back(dimOf(e) ? ivs[*dimOf(e)] : c0);
      return out;
    };
    auto ext = [&](ImplicitLocOpBuilder &ob, Value v, Type to) -> Value {
      return v.getType() == to ? v : arith::ExtFOp::create(ob, to, v);
    };

    // One register tile: rows × NR at (m0, n0) of every output; `masked`
    // when fewer than NR columns remain (`nrem`).
    Value kLo, kHi;          // the k block of the kernels being built
    bool firstBlock = false; // ... the first, of a C that held zeros
    Value aPacked;           // A's row tiles [M / mt, K, mt], when packed
    auto kernel = [&](ImplicitLocOpBuilder &ob, SmallVector<Value> ivs,
                      Value m0, Value n0, int64_t rows, bool masked,
                      Value nrem) {
      int64_t nv = nrVectors;
      auto accAt = [&](size_t j, int64_t i, int64_t v) {
        return (j * rows + i) * nv + v;
      };
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
      for (size_t j = 0; j < no; ++j)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t v = 0; v < nv; ++v) {
            if ((epi && epi->zeroInit) || firstBlock) {
              acc.push_back(zero);
              continue;
            }
            SmallVector<Value> ci = cIndices(i, v);
            Value cj = cs[j].c;
            acc.push_back(
                masked ? (Value)vector::MaskedLoadOp::create(ob, vecT, cj, ci,
                                                             masks[v], zero)
                       : (Value)vector::LoadOp::create(ob, vecT, cj, ci));
          }
      Value panel = arith::DivUIOp::create(ob, n0, idx(nr())).getResult();
      Value tile = rows == mt && aPacked
                       ? arith::DivUIOp::create(ob, m0, idx(mt)).getResult()
                       : Value();
      auto loop = scf::ForOp::create(
          ob, kLo, kHi, c1, acc,
          [&](OpBuilder &lb, Location loc, Value k, ValueRange iter) {
            ImplicitLocOpBuilder ib(loc, lb);
            SmallVector<Value> kivs = ivs;
            kivs[c.k] = k;
            SmallVector<Value> bv; // [j][v]
            // The next k block of each panel (the next panel after the
            // last block) is brought into L2 while this block's row tiles
            // run: the first tile of a block would otherwise wait on
            // memory for every line of its slice.
            for (size_t j = 0; j < no; ++j) {
              if (!flatPanels[j])
                continue;
              auto ft = cast<MemRefType>(flatPanels[j].getType());
              Value row = arith::AddIOp::create(
                  ib, arith::MulIOp::create(ib, panel, kSize),
                  arith::AddIOp::create(ib, k,
                                        arith::SubIOp::create(ib, kHi, kLo)));
              row = arith::MinUIOp::create(ib, row, idx(ft.getDimSize(0) - 1));
              int64_t line = 64 * 8 / cs[j].bElem.getIntOrFloatBitWidth();
              for (int64_t e = 0; e < nr(); e += line)
                memref::PrefetchOp::create(ib, flatPanels[j],
                                           ValueRange{row, idx(e)},
                                           /*isWrite=*/false,
                                           /*localityHint=*/2,
                                           /*isDataCache=*/true);
            }
            for (size_t j = 0; j < no; ++j) {
              auto bVecT = VectorType::get({vl()}, cs[j].bElem);
              for (int64_t v = 0; v < nv; ++v) {
                Value x;
                if (panels[j]) {
                  x = vector::LoadOp::create(
                      ib, bVecT, bBufs[j], ValueRange{panel, k, idx(v * vl())});
                } else {
                  kivs[c.n] = colOff[v];
                  SmallVector<Value> bi = indices(ib, cs[j].bMap, kivs);
                  Value pass = arith::ConstantOp::create(
                      ib, bVecT,
                      DenseElementsAttr::get(bVecT,
                                             ib.getFloatAttr(cs[j].bElem, 0)));
                  x = masked ? (Value)vector::MaskedLoadOp::create(
                                   ib, bVecT, cs[j].b, bi, masks[v], pass)
                             : (Value)vector::LoadOp::create(ib, bVecT, cs[j].b,
                                                             bi);
                }
                bv.push_back(ext(ib, x, vecT));
              }
            }
            SmallVector<Value> next(iter.begin(), iter.end());
            for (int64_t i = 0; i < rows; ++i) {
              kivs[c.m] = arith::AddIOp::create(ib, m0, idx(i));
              Value a = tile ? memref::LoadOp::create(
                                   ib, aPacked, ValueRange{tile, k, idx(i)})
                             : memref::LoadOp::create(
                                   ib, c.a, indices(ib, c.aMap, kivs));
              Value s = vector::BroadcastOp::create(ib, vecT, ext(ib, a, f32));
              for (size_t j = 0; j < no; ++j)
                for (int64_t v = 0; v < nv; ++v)
                  next[accAt(j, i, v)] = vector::FMAOp::create(
                      ib, s, bv[j * nv + v], next[accAt(j, i, v)]);
            }
            scf::YieldOp::create(ib, next);
          });
      auto store = [&](Value r, Value buf, int64_t i, int64_t v) {
        SmallVector<Value> ci = cIndices(i, v);
        if (masked)
          vector::MaskedStoreOp::create(ob, buf, ci, masks[v], r);
        else
          vector::StoreOp::create(ob, r, buf, ci);
      };
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t v = 0; v < nv; ++v) {
          if (!epi) {
            for (size_t j = 0; j < no; ++j)
              store(loop.getResult(accAt(j, i, v)), cs[j].c, i, v);
            continue;
          }
          SmallVector<Value> ins;
          for (unsigned j : epi->argOutput)
            ins.push_back(loop.getResult(accAt(j, i, v)));
          store(applyEpilogue(ob, *epi, ins, vecT), epi->out, i, v);
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
          Value tiles = arith::DivUIOp::create(ob, mSize, idx(mt));
          Value mFull = arith::MulIOp::create(ob, tiles, idx(mt));
          // A's full row tiles packed once into [M / mt, K, mt] when more
          // than two panels of B reuse them: each k step of a kernel then
          // reads mt consecutive elements (A's rows are often a multiple
          // of 4 KiB apart, and mt of them at once alias in L1).
          int64_t staticN = getConstantIntValue(ranges[c.n].size)
                                .value_or(ShapedType::kDynamic);
          aPacked = nullptr;
          if (packA && (ShapedType::isDynamic(staticN) || staticN > 2 * nr())) {
            aPacked = memref::AllocOp::create(
                ob,
                MemRefType::get(
                    {ShapedType::kDynamic, ShapedType::kDynamic, mt}, c.aElem),
                ValueRange{tiles, kSize}, ob.getI64IntegerAttr(64));
            scf::ForOp::create(
                ob, c0, tiles, c1, ValueRange{},
                [&](OpBuilder &lb, Location l, Value t, ValueRange) {
                  ImplicitLocOpBuilder tb(l, lb);
                  SmallVector<Value> pivs = ivs;
                  Value row0 = arith::MulIOp::create(tb, t, idx(mt));
                  for (int64_t i = 0; i < mt; ++i) {
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
          // reads it (with an mt x kc slice of A beside it), and the
          // panel is read front to back, one contiguous stream. C is read
          // and written once per k block. With an epilogue the whole k
          // loop runs in registers (one block: the panels of every output,
          // K x NR each, stay in L2 across the row tiles).
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
            rows(c0, idx(mt), mt);
            rows(mFull, c1, 1);
          };
          Value nEnd = nHi ? nHi : nSize;
          scf::ForOp::create(
              ob, nLo ? nLo : c0, nEnd, idx(nr()), ValueRange{},
              [&](OpBuilder &lb, Location loc, Value n0, ValueRange) {
                ImplicitLocOpBuilder ib(loc, lb);
                Value nrem = arith::SubIOp::create(ib, nEnd, n0);
                Value full = arith::CmpIOp::create(
                    ib, arith::CmpIPredicate::sge, nrem, idx(nr()));
                auto kBlocks = [&](ImplicitLocOpBuilder &kb, bool masked) {
                  if (epi) {
                    kLo = c0;
                    kHi = kSize;
                    rowTiles(kb, n0, nrem, masked);
                    return;
                  }
                  // A C that held zeros: the first k block, peeled,
                  // starts from zero registers (C is not read).
                  Value from = c0;
                  if (zeroStart) {
                    kLo = c0;
                    kHi = arith::MinUIOp::create(kb, idx(kc), kSize);
                    firstBlock = true;
                    rowTiles(kb, n0, nrem, masked);
                    firstBlock = false;
                    from = kHi;
                  }
                  scf::ForOp::create(
                      kb, from, kSize, idx(kc), ValueRange{},
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

  /// Erases the zero fill that initialises `c`'s output, when that is all
  /// it does: the fill is the last op before the contraction that writes
  /// the buffer (no other op touches it before), and K is static and
  /// positive (the kernel then stores every element).
  bool dropZeroFill(const Contraction &c) {
    int64_t k = linalg::GenericOp(c.op).getStaticLoopRanges()[c.k];
    if (ShapedType::isDynamic(k) || k <= 0 || !zeroFilled(c.c, c.op))
      return false;
    linalg::FillOp fill;
    for (Operation *u : c.c.getUsers()) {
      if (u->getBlock() != c.op->getBlock() || !u->isBeforeInBlock(c.op) ||
          isa<memref::DeallocOp>(u))
        continue;
      auto f = dyn_cast<linalg::FillOp>(u);
      if (!f || fill)
        return false; // a copy, or two fills: left as they are
      fill = f;
    }
    if (!fill)
      return false;
    fill.erase();
    return true;
  }

  /// The column range of this GEMM's chunk when its row-block loop is
  /// split over column chunks (see ColumnSplit.h); null values otherwise.
  std::pair<Value, Value> splitColumnsOf(ArrayRef<Contraction> cs,
                                         const Epilogue *epi) {
    linalg::GenericOp op = cs.front().op;
    int64_t n = op.getStaticLoopRanges()[cs.front().n];
    if (ShapedType::isDynamic(n) || n <= nr())
      return {};
    SmallVector<Value> products;
    for (const Contraction &c : cs)
      products.push_back(c.c);
    auto isGemm = [](linalg::GenericOp g) {
      // Two inputs read along a reduction: a product (a norm reads one).
      SmallVector<unsigned> red;
      g.getReductionDims(red);
      int64_t reading = 0;
      for (OpOperand *in : g.getDpsInputOperands())
        reading += llvm::any_of(red, [&](unsigned d) {
          return g.getMatchingIndexingMap(in).isFunctionOfDim(d);
        });
      return reading >= 2;
    };
    std::optional<gatec::cpu::ColumnSplit> plan = gatec::cpu::planColumnSplit(
        op, products, epi ? linalg::GenericOp(epi->op).getOperation() : nullptr,
        isGemm);
    if (!plan)
      return {};
    return gatec::cpu::applyColumnSplit(*plan, n, nr());
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
      std::optional<Epilogue> epi;
      if (fuseEpilogues && cs.size() > 1 && fitsInL2(cs))
        epi = matchEpilogue(cs);
      // Without an epilogue: an output whose fill with zeros only
      // initialises it (K > 0) loses the fill; its kernels start from zero
      // registers.
      SmallVector<bool> zeroStart;
      if (!epi)
        for (const Contraction &c : cs)
          zeroStart.push_back(dropZeroFill(c));
      Value nLo, nHi;
      if (splitColumns)
        std::tie(nLo, nHi) = splitColumnsOf(cs, epi ? &*epi : nullptr);
      if (!epi) {
        for (auto [c, z] : llvm::zip(cs, zeroStart))
          rewrite(c, nullptr, nLo, nHi, z);
        cs.front().op.erase();
        continue;
      }
      rewrite(cs, &*epi, nLo, nHi);
      cs.front().op.erase();
      epi->op.erase();
      if (epi->zeroInit)
        for (const Contraction &c : cs)
          eraseIfDead(c.c);
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
