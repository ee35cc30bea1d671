//===- DimSourceInterface.h - result dims that copy operand dims -*- C++
//-*-===//
#ifndef GATEC_DIALECTS_INTERFACES_DIMSOURCEINTERFACE_H
#define GATEC_DIALECTS_INTERFACES_DIMSOURCEINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <utility>

#include "dialects/interfaces/DimSourceInterface.h.inc"

#endif
