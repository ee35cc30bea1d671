//===- FusionReport.cpp - gatec --report=fusion ---------------------------===//
//
// The loop nests ("kernels") a compiled model runs and the bytes each one
// reads and writes, with the fusion passes on and off.
//
//===----------------------------------------------------------------------===//
#include "compiler/FusionReport.h"

#include "compiler/Pipeline.h"
#include "compiler/support/Diagnostics.h"
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
#include "llvm/Support/Format.h"
#include <limits>

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

int64_t bytesOf(Type t, int64_t dynamicDim) {
  auto m = dyn_cast<BaseMemRefType>(t);
  if (!m || !m.hasRank())
    return 0;
  // Saturating: a huge --report-dim reports INT64_MAX, not a negative size.
  int64_t n = 1;
  unsigned bits = m.getElementType().isIntOrFloat()
                      ? m.getElementType().getIntOrFloatBitWidth()
                      : 64;
  SmallVector<int64_t> factors(m.getShape());
  factors.push_back((bits + 7) / 8);
  for (int64_t d : factors)
    if (__builtin_mul_overflow(n, ShapedType::isDynamic(d) ? dynamicDim : d,
                               &n))
      return std::numeric_limits<int64_t>::max();
  return n;
}

/// Bytes a top-level op moves: every buffer it uses that is defined outside
/// it counts once, as written if anything in it writes there, else as read.
Kernel measure(Operation *op, int64_t dynamicDim, bool mma) {
  Kernel k;
  if (mma)
    op->walk([&](linalg::LinalgOp l) {
      k.mma += succeeded(gpu::matchMmaContraction(l));
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
    int64_t b = bytesOf(v.getType(), dynamicDim);
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
                                                 int64_t dynamicDim) {
  OwningOpRef<ModuleOp> m(cast<ModuleOp>(imported->clone()));
  std::vector<Phase> phases = buildPhases(opts);
  int last = findPhase(phases, "tiled");
  PassManager pm(m->getContext());
  for (int i = firstPhase; i <= last; ++i)
    if (failed(phases[i].addPasses(pm)))
      return failure();
  if (failed(pm.run(*m)))
    return failure();
  auto f = m->lookupSymbol<func::FuncOp>("main_graph");
  if (!f || f.isExternal())
    return failure();
  SmallVector<Kernel> out;
  for (Operation &op : f.getBody().front())
    if (isKernel(op))
      out.push_back(
          measure(&op, dynamicDim, opts.gpuMma && opts.target == "cuda"));
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
                                int64_t dynamicDim, llvm::raw_ostream &os) {
  PipelineOptions fused = options;
  PipelineOptions unfused = fused;
  unfused.flashAttention = false;
  unfused.widenProjections = false;
  unfused.fuseProducers = false;
  auto a = compileAndMeasure(imported, firstPhase, unfused, dynamicDim);
  auto b = compileAndMeasure(imported, firstPhase, fused, dynamicDim);
  if (failed(a) || failed(b))
    return failure();
  os << "fusion report (CPU loop nests of the tiled phase; dynamic dims taken "
        "as "
     << dynamicDim << "; bytes of every buffer a loop nest touches)\n";
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
