//===- StripRunTimeChecks.cpp - --strip-run-time-checks -------------------===//
//
// Every run-time check of the lowering (`cf.assert`) erased, so that the
// conditions it computed are dead and fold away: the unchecked build that
// measures what the checks cost (gatec --run-time-checks=false).
//
//===----------------------------------------------------------------------===//
#include "passes/conversion/Passes.h"

namespace gatec::conversion {
#define GEN_PASS_DEF_STRIPRUNTIMECHECKS
#include "passes/conversion/Passes.h.inc"
} // namespace gatec::conversion

using namespace mlir;

namespace {
struct StripRunTimeChecksPass
    : gatec::conversion::impl::StripRunTimeChecksBase<StripRunTimeChecksPass> {
  void runOnOperation() override {
    SmallVector<cf::AssertOp> checks;
    getOperation().walk([&](cf::AssertOp a) { checks.push_back(a); });
    for (cf::AssertOp a : checks)
      a.erase();
  }
};
} // namespace
