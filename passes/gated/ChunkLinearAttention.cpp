//===- ChunkLinearAttention.cpp - --chunk-linear-attention ----------------===//
#include "passes/gated/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

namespace gatec::gated {
#define GEN_PASS_DEF_CHUNKLINEARATTENTION
#include "passes/gated/Passes.h.inc"
} // namespace gatec::gated

using namespace mlir;
using namespace gatec;

namespace {
/// The first positive entry of a constant decay, if any.
std::optional<double> positiveConstant(Value decay) {
  DenseElementsAttr attr;
  if (!decay || !matchPattern(decay, m_Constant(&attr)) ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  for (APFloat f : attr.getValues<APFloat>())
    if (f.isNaN() || (!f.isNegative() && !f.isZero()))
      return f.convertToDouble();
  return std::nullopt;
}

struct ChunkLinearAttentionPass
    : gated::impl::ChunkLinearAttentionBase<ChunkLinearAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    if (chunkSize <= 0) {
      getOperation().emitError()
          << "--chunk-linear-attention: chunk-size must be positive, got "
          << chunkSize;
      return signalPassFailure();
    }
    WalkResult r = getOperation().walk([&](gated::LinearAttentionOp op) {
      if (auto g = positiveConstant(op.getDecay())) {
        op.emitError() << "log-decay " << *g
                       << " is not <= 0: a decay gate above 1 (growth) is "
                          "not accepted in a constant decay";
        return WalkResult::interrupt();
      }
      op.setForm(gated::LinearAttentionForm::chunked);
      op.setChunkSize(chunkSize);
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
