//===- FusionReport.cpp - gatec --report=fusion ---------------------------===//
//
// The loop nests ("kernels") a compiled model runs and the bytes each one
// reads and writes, with the fusion passes on and off.
//
//===----------------------------------------------------------------------===//
#include "compiler/FusionReport.h"

#include "compiler/Pipeline.h"
#include "compiler/support/Diagnostics.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"
#include "passes/gpu/MmaSync.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/Format.h"
#include <limits>
#include <set>

using namespace mlir;

namespace gatec {
namespace {

/// a + b, saturating at INT64_MAX (byte counts are non-negative).
int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max()
                                          : r;
}

struct Kernel {
  std::string kind, node;
  int64_t read = 0, written = 0;
  /// GEMMs --gpu-mma runs on the tensor cores (mma.sync).
  int mma = 0;
};

/// The allocation a view (subview, reshape, cast) looks into.
Value rootBuffer(Value v) {
  while (Operation *d = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(d))
      v = view.getViewSource();
    else
      break;
  }
  return v;
}

/// The size of each dynamic dim of a buffer: the --report-dims size of the
/// graph-input dim_param it is computed from, followed through the index
/// arithmetic (memref.dim, allocations, arith and affine ops) that computes
/// it; `dflt` where that arithmetic is not known or has no dim_param.
struct Sizer {
  int64_t dflt;
  const std::map<std::string, int64_t> &params;
  llvm::DenseMap<Value, std::optional<int64_t>> memo;

  Sizer(int64_t dflt, const std::map<std::string, int64_t> &params)
      : dflt(dflt), params(params) {}

  /// Dim i of the buffer (or tensor) v.
  int64_t dim(Value v, int64_t i) {
    auto t = dyn_cast<ShapedType>(v.getType());
    if (t && t.hasRank() && !t.isDynamicDim(i))
      return t.getDimSize(i);
    return known(v, i).value_or(dflt);
  }

  std::optional<int64_t> known(Value v, int64_t i, int depth = 0) {
    if (depth > 32)
      return std::nullopt;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!fn)
        return std::nullopt;
      auto ps =
          fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "onnx.dim_params");
      auto p = ps && i < (int64_t)ps.size() ? dyn_cast<StringAttr>(ps[i])
                                            : StringAttr();
      if (!p || p.getValue().empty())
        return std::nullopt;
      auto it = params.find(p.getValue().str());
      return it == params.end() ? std::nullopt
                                : std::optional<int64_t>(it->second);
    }
    Operation *d = v.getDefiningOp();
    auto t = dyn_cast<ShapedType>(v.getType());
    if (t && t.hasRank() && !t.isDynamicDim(i))
      return t.getDimSize(i);
    if (auto a = dyn_cast_or_null<memref::AllocOp>(d))
      return index(a.getDynamicSizes()[t.getDynamicDimIndex(i)], depth + 1);
    if (auto a = dyn_cast_or_null<memref::AllocaOp>(d))
      return index(a.getDynamicSizes()[t.getDynamicDimIndex(i)], depth + 1);
    if (auto c = dyn_cast_or_null<memref::CastOp>(d))
      return known(c.getSource(), i, depth + 1);
    // Views: the sizes they were built with.
    auto mixed = [&](OpFoldResult f) -> std::optional<int64_t> {
      if (auto c = getConstantIntValue(f))
        return *c;
      return index(cast<Value>(f), depth + 1);
    };
    if (auto s = dyn_cast_or_null<memref::SubViewOp>(d)) {
      llvm::SmallBitVector dropped = s.getDroppedDims();
      SmallVector<OpFoldResult> sizes = s.getMixedSizes();
      for (int64_t j = 0, k = -1; j < (int64_t)sizes.size(); ++j)
        if (!dropped[j] && ++k == i)
          return mixed(sizes[j]);
      return std::nullopt;
    }
    if (auto e = dyn_cast_or_null<memref::ExpandShapeOp>(d))
      return mixed(e.getMixedOutputShape()[i]);
    if (auto c = dyn_cast_or_null<memref::CollapseShapeOp>(d)) {
      SmallVector<ReassociationIndices> groups = c.getReassociationIndices();
      int64_t n = 1;
      for (int64_t j : groups[i]) {
        auto s = known(c.getSrc(), j, depth + 1);
        if (!s)
          return std::nullopt;
        n *= *s;
      }
      return n;
    }
    if (auto r = dyn_cast_or_null<memref::ReinterpretCastOp>(d))
      return mixed(r.getMixedSizes()[i]);
    return std::nullopt;
  }

  /// The value of an index (or integer) computed from dims and constants.
  std::optional<int64_t> index(Value v, int depth) {
    if (depth > 32)
      return std::nullopt;
    if (auto it = memo.find(v); it != memo.end())
      return it->second;
    std::optional<int64_t> r = evaluate(v, depth);
    memo[v] = r;
    return r;
  }

  std::optional<int64_t> evaluate(Value v, int depth) {
    Operation *d = v.getDefiningOp();
    if (!d)
      return std::nullopt;
    if (auto c = getConstantIntValue(v))
      return *c;
    // An element of a shape buffer (a bufferized tensor.from_elements):
    // the value stored at that constant index, where exactly one store
    // writes it.
    if (auto ld = dyn_cast<memref::LoadOp>(d)) {
      SmallVector<int64_t> at;
      for (Value i : ld.getIndices()) {
        auto c = getConstantIntValue(i);
        if (!c)
          return std::nullopt;
        at.push_back(*c);
      }
      Value stored;
      for (Operation *u : ld.getMemRef().getUsers()) {
        auto st = dyn_cast<memref::StoreOp>(u);
        if (!st || st.getMemRef() != ld.getMemRef())
          continue;
        SmallVector<int64_t> sat;
        for (Value i : st.getIndices())
          if (auto c = getConstantIntValue(i))
            sat.push_back(*c);
        if (sat.size() != at.size())
          return std::nullopt; // a store at a run-time index
        if (sat != at)
          continue;
        if (stored)
          return std::nullopt;
        stored = st.getValueToStore();
      }
      return stored ? index(stored, depth + 1) : std::nullopt;
    }
    if (auto m = dyn_cast<memref::DimOp>(d)) {
      auto i = m.getConstantIndex();
      if (!i)
        return std::nullopt;
      return known(m.getSource(), *i, depth + 1);
    }
    auto two = [&](auto f) -> std::optional<int64_t> {
      auto a = index(d->getOperand(0), depth + 1);
      auto b = index(d->getOperand(1), depth + 1);
      if (!a || !b)
        return std::nullopt;
      return f(*a, *b);
    };
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp, arith::TruncIOp>(d))
      return index(d->getOperand(0), depth + 1);
    if (isa<arith::MulIOp>(d))
      return two([](int64_t a, int64_t b) { return a * b; });
    if (isa<arith::AddIOp>(d))
      return two([](int64_t a, int64_t b) { return a + b; });
    if (isa<arith::SubIOp>(d))
      return two([](int64_t a, int64_t b) { return a - b; });
    if (isa<arith::DivSIOp, arith::DivUIOp>(d))
      return two([](int64_t a, int64_t b) -> std::optional<int64_t> {
        return b ? std::optional<int64_t>(a / b) : std::nullopt;
      });
    if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(d))
      return two([](int64_t a, int64_t b) -> std::optional<int64_t> {
        return b ? std::optional<int64_t>((a + b - 1) / b) : std::nullopt;
      });
    if (isa<arith::MaxSIOp>(d))
      return two([](int64_t a, int64_t b) { return std::max(a, b); });
    if (isa<arith::MinSIOp>(d))
      return two([](int64_t a, int64_t b) { return std::min(a, b); });
    if (auto c = dyn_cast<arith::CmpIOp>(d)) {
      auto a = index(c.getLhs(), depth + 1), b = index(c.getRhs(), depth + 1);
      if (!a || !b)
        return std::nullopt;
      using P = arith::CmpIPredicate;
      switch (c.getPredicate()) {
      case P::eq:
        return *a == *b;
      case P::ne:
        return *a != *b;
      case P::slt:
      case P::ult:
        return *a < *b;
      case P::sle:
      case P::ule:
        return *a <= *b;
      case P::sgt:
      case P::ugt:
        return *a > *b;
      case P::sge:
      case P::uge:
        return *a >= *b;
      }
      return std::nullopt;
    }
    if (auto s = dyn_cast<arith::SelectOp>(d)) {
      auto c = index(s.getCondition(), depth + 1);
      if (!c)
        return std::nullopt;
      return index(*c ? s.getTrueValue() : s.getFalseValue(), depth + 1);
    }
    if (isa<affine::AffineApplyOp, affine::AffineMinOp, affine::AffineMaxOp>(
            d)) {
      AffineMap map;
      if (auto a = dyn_cast<affine::AffineApplyOp>(d))
        map = a.getAffineMap();
      else if (auto a = dyn_cast<affine::AffineMinOp>(d))
        map = a.getAffineMap();
      else
        map = cast<affine::AffineMaxOp>(d).getAffineMap();
      SmallVector<Attribute> ins;
      for (Value o : d->getOperands()) {
        auto x = index(o, depth + 1);
        if (!x)
          return std::nullopt;
        ins.push_back(IntegerAttr::get(IndexType::get(d->getContext()), *x));
      }
      SmallVector<Attribute> outs;
      if (failed(map.constantFold(ins, outs)) || outs.empty())
        return std::nullopt;
      std::optional<int64_t> r;
      for (Attribute a : outs) {
        int64_t x = cast<IntegerAttr>(a).getInt();
        if (!r || (isa<affine::AffineMinOp>(d) ? x < *r : x > *r))
          r = x;
      }
      return r;
    }
    return std::nullopt;
  }

  /// Bytes of the buffer v (saturating: a huge size reports INT64_MAX, not
  /// a negative one).
  int64_t bytes(Value v) {
    auto m = dyn_cast<BaseMemRefType>(v.getType());
    if (!m || !m.hasRank())
      return 0;
    unsigned bits = m.getElementType().isIntOrFloat()
                        ? m.getElementType().getIntOrFloatBitWidth()
                        : 64;
    int64_t n = (bits + 7) / 8;
    for (int64_t i = 0; i < m.getRank(); ++i) {
      int64_t d = dim(v, i);
      if (d < 0 || __builtin_mul_overflow(n, d, &n))
        return std::numeric_limits<int64_t>::max();
    }
    return n;
  }
};

/// Bytes a top-level op moves: every buffer it uses that is defined outside
/// it counts once, as written if anything in it writes there, else as read.
Kernel measure(Operation *op, Sizer &sizer, bool mma, bool tf32) {
  Kernel k;
  if (mma)
    op->walk([&](linalg::LinalgOp l) {
      k.mma += succeeded(gpu::matchMmaContraction(l, tf32));
    });
  k.node = describeNode(op->getLoc());
  k.kind = op->getName().getStringRef().str();
  llvm::SetVector<Value> used;
  llvm::DenseSet<Value> writtenRoots;
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      if (isa<BaseMemRefType>(v.getType())) {
        Operation *def = v.getDefiningOp();
        if (!def)
          def = cast<BlockArgument>(v).getOwner()->getParentOp();
        if (!op->isAncestor(def))
          used.insert(rootBuffer(v));
      }
    if (auto effects = dyn_cast<MemoryEffectOpInterface>(inner)) {
      SmallVector<MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      for (auto &e : list)
        if (isa<MemoryEffects::Write>(e.getEffect()) && e.getValue())
          writtenRoots.insert(rootBuffer(e.getValue()));
    }
  });
  for (Value v : used) {
    int64_t b = sizer.bytes(v);
    int64_t &sum = writtenRoots.contains(v) ? k.written : k.read;
    sum = satAdd(sum, b);
  }
  return k;
}

bool isKernel(Operation &op) {
  return isa<scf::ForallOp, scf::ForOp, scf::ParallelOp, linalg::LinalgOp,
             memref::CopyOp>(op);
}

FailureOr<SmallVector<Kernel>> compileAndMeasure(ModuleOp imported,
                                                 int firstPhase,
                                                 const PipelineOptions &opts,
                                                 Sizer sizer) {
  OwningOpRef<ModuleOp> m(cast<ModuleOp>(imported->clone()));
  std::vector<Phase> phases = buildPhases(opts);
  int linalgPhase = findPhase(phases, "linalg"),
      last = findPhase(phases, "tiled");
  // Up to the linalg phase, then the tiled one: the gated.attention ops
  // the linalg phase keeps become flash-attention kernels (one scf.forall
  // at the attention's location each), which the report names so.
  llvm::DenseSet<Location> attention;
  for (auto [from, to] :
       {std::pair{firstPhase, linalgPhase},
        std::pair{std::max(firstPhase, linalgPhase + 1), last}}) {
    PassManager pm(m->getContext());
    for (int i = from; i <= to; ++i)
      if (failed(phases[i].addPasses(pm)))
        return failure();
    if (failed(pm.run(*m)))
      return failure();
    if (to == linalgPhase)
      m->walk([&](Operation *op) {
        if (op->getName().getStringRef() == "gated.attention")
          attention.insert(op->getLoc());
      });
  }
  auto f = m->lookupSymbol<func::FuncOp>("main_graph");
  if (!f || f.isExternal())
    return failure();
  SmallVector<Kernel> out;
  for (Operation &op : f.getBody().front())
    if (isKernel(op)) {
      out.push_back(measure(
          &op, sizer, (opts.gpuMma || opts.gpuTf32) && opts.target == "cuda",
          opts.gpuTf32));
      if (isa<scf::ForallOp>(op) && attention.contains(op.getLoc()))
        out.back().kind = "flash-attn";
    }
  return out;
}

void printKernels(llvm::raw_ostream &os, StringRef title, ArrayRef<Kernel> ks) {
  int64_t r = 0, w = 0;
  os << title << ": " << ks.size() << " kernels\n";
  for (size_t i = 0; i < ks.size(); ++i) {
    os << llvm::format("  %3zu  %-14s read %10lld B  write %10lld B  ", i + 1,
                       ks[i].kind.c_str(), (long long)ks[i].read,
                       (long long)ks[i].written)
       << ks[i].node;
    if (ks[i].mma)
      os << "  [tensor cores: " << ks[i].mma << " GEMM"
         << (ks[i].mma > 1 ? "s" : "") << "]";
    os << "\n";
    r = satAdd(r, ks[i].read);
    w = satAdd(w, ks[i].written);
  }
  os << "  total: " << ks.size() << " kernels, read " << r << " B, write " << w
     << " B\n";
}

} // namespace

LogicalResult printFusionReport(ModuleOp imported, int firstPhase,
                                const PipelineOptions &options,
                                int64_t dynamicDim,
                                const std::map<std::string, int64_t> &dimParams,
                                llvm::raw_ostream &os) {
  // Every name given must be a dim_param of a graph input.
  std::set<std::string> known;
  if (auto f = imported.lookupSymbol<func::FuncOp>("main_graph"))
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      if (auto ps = f.getArgAttrOfType<ArrayAttr>(i, "onnx.dim_params"))
        for (Attribute p : ps)
          if (auto s = dyn_cast<StringAttr>(p); s && !s.getValue().empty())
            known.insert(s.str());
  for (auto &[name, size] : dimParams)
    if (!known.count(name)) {
      std::string all;
      for (const std::string &k : known)
        all += (all.empty() ? "" : ", ") + k;
      llvm::errs() << "gatec: --report-dims: '" << name
                   << "' is no dim_param of the model's inputs ("
                   << (all.empty() ? "it has none" : all) << ")\n";
      return failure();
    }
  PipelineOptions fused = options;
  PipelineOptions unfused = fused;
  unfused.flashAttention = false;
  unfused.widenProjections = false;
  unfused.fuseProducers = false;
  unfused.fuseNormEpilogue = false;
  auto a = compileAndMeasure(imported, firstPhase, unfused,
                             Sizer(dynamicDim, dimParams));
  auto b = compileAndMeasure(imported, firstPhase, fused,
                             Sizer(dynamicDim, dimParams));
  if (failed(a) || failed(b))
    return failure();
  os << "fusion report (CPU loop nests of the tiled phase; dynamic dims: ";
  for (auto &[name, size] : dimParams)
    os << name << " = " << size << ", ";
  os << (dimParams.empty() ? "" : "others ") << dynamicDim
     << "; bytes of every buffer a loop nest touches)\n";
  printKernels(os, "unfused", *a);
  printKernels(os, "fused", *b);
  int64_t ra = 0, rb = 0;
  for (const Kernel &k : *a)
    ra = satAdd(ra, satAdd(k.read, k.written));
  for (const Kernel &k : *b)
    rb = satAdd(rb, satAdd(k.read, k.written));
  os << "summary: kernels " << a->size() << " -> " << b->size()
     << ", bytes moved " << ra << " -> " << rb
     << llvm::format(" (%.2fx)", rb ? (double)ra / rb : 0.0) << "\n";
  return success();
}

} // namespace gatec
