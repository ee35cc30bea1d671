//===- GatedDialect.cpp - the gated domain dialect ------------------------===//
#include "dialects/gated/GatedDialect.h"

using namespace mlir;
using namespace gatec::gated;

#include "dialects/gated/GatedDialect.cpp.inc"
#include "dialects/gated/GatedEnums.cpp.inc"

void GatedDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/gated/GatedOps.cpp.inc"
      >();
}
