//===- AttentionMasks.h - masks built in the graph --------------*- C++ -*-===//
//
// Exported decoders build their attention mask in the graph from the 2-D
// attention_mask input: causal (key index <= query index, over Range iotas)
// AND padding (attention_mask gathered at [batch, key]) AND, for local layers,
// a window. These helpers take such a boolean mask apart so the causal factor
// becomes gated.attention's `causal` flag and only the rest (a [B, 1, 1, S]
// key-padding mask, mostly) stays a mask operand: no [B, 1, T, S] mask is
// materialised per layer.
//
//===----------------------------------------------------------------------===//
#ifndef GATEC_PASSES_GATED_ATTENTIONMASKS_H
#define GATEC_PASSES_GATED_ATTENTIONMASKS_H

#include "mlir/IR/PatternMatch.h"
#include <optional>

namespace gatec::raise {

/// A boolean attention mask (true attends) split into the top-left causal
/// predicate, a sliding window (key j visible to query t iff
/// j >= t - leftWindow) and its other factors (none: nothing else).
struct CausalSplit {
  llvm::SmallVector<mlir::Value> rest;
  std::optional<int64_t> leftWindow;
};

/// If `attends` (boolean, true attends, broadcasting to the 4-D `scores`
/// [B, H, T, S]) is an And-tree, through Expand and no-op Casts, with one
/// factor saying key <= query over iotas (Range(0, S, 1) along axis 3 for
/// the key j, Range(0, T, 1) along axis 2 for the query t, S and T provably
/// the scores' dims; written as any comparison of sums of iotas and
/// constants that means j - t <= 0), returns the other factors (constant-true
/// ones dropped; the window j >= t - L, written likewise, taken out as
/// leftWindow). Creates nothing.
std::optional<CausalSplit> splitCausal(mlir::Value attends, mlir::Value scores);

/// The And of `factors` (at least one), created at the insertion point.
mlir::Value andAll(mlir::PatternRewriter &rewriter, mlir::Location loc,
                   llvm::ArrayRef<mlir::Value> factors);

/// The condition C of an additive mask Where(C, 0, -inf) (C true attends;
/// -inf or any value <= -1e30), or null.
mlir::Value additiveMaskCondition(mlir::Value m);

} // namespace gatec::raise

#endif
