//===- ColumnSplit.h - a row block's columns spread over threads ----------===//
//
// When a model runs on few rows (decode, short prompts), the scf.forall
// over row blocks of a GEMM has fewer iterations than there are threads.
// The column split gives that loop one more dimension, over chunks of the
// GEMM's column panels, with as many chunks as the threads left idle: each
// thread then reads only its part of the weights.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_CPU_COLUMNSPLIT_H
#define GATEC_PASSES_CPU_COLUMNSPLIT_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <functional>
#include <optional>

namespace gatec::cpu {

/// A forall whose body can run its one GEMM on a column range: the ops to
/// narrow to that range.
struct ColumnSplit {
  mlir::scf::ForallOp loop;
  /// Fills of the GEMM's output where it is the loop's result (a view of
  /// a buffer from outside the loop).
  llvm::SmallVector<mlir::linalg::FillOp> fills;
  /// Elementwise generics after the GEMM (a residual add, a bias, a gate):
  /// narrowed along their last loop.
  llvm::SmallVector<mlir::linalg::GenericOp> consumers;
};

/// The column split of the forall directly around `gemm` (its outputs
/// `products`, and an `epilogue` op the micro-kernel absorbs, or null), or
/// none. The body must hold no other GEMM (`isGemm`: computing it again
/// per chunk would cost more than the idle threads give), write outside
/// the loop only through the GEMM, its epilogue, fills of its outputs and
/// elementwise ops after it, and have nothing after the GEMM but such
/// elementwise ops (no reduction over the columns).
std::optional<ColumnSplit>
planColumnSplit(mlir::Operation *gemm, mlir::ValueRange products,
                mlir::Operation *epilogue,
                const std::function<bool(mlir::linalg::GenericOp)> &isGemm);

/// Rebuilds the plan's loop with one more dimension, the column chunk, of
/// extent `chunks = ceil(panels / ceil(panels / want))` where
/// `want = clamp(ceil(threads / iterations), 1, panels)` (threads from
/// omp_get_max_threads at run time, panels = ceil(n / nr)), narrows the
/// plan's ops, and returns the chunk's columns [lo, hi) (lo a multiple of
/// nr), built at the start of the new body.
std::pair<mlir::Value, mlir::Value> applyColumnSplit(ColumnSplit &plan,
                                                     int64_t n, int64_t nr);

} // namespace gatec::cpu

#endif
