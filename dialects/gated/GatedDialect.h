//===- GatedDialect.h - the gated domain dialect ----------------*- C++ -*-===//
#ifndef GATEC_DIALECTS_GATED_GATEDDIALECT_H
#define GATEC_DIALECTS_GATED_GATEDDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/interfaces/DimSourceInterface.h"

#include "dialects/gated/GatedDialect.h.inc"
#include "dialects/gated/GatedEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/gated/GatedOps.h.inc"

#endif
