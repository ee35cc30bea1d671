//===- DimSourceInterface.cpp ---------------------------------------------===//
#include "dialects/interfaces/DimSourceInterface.h"

#include "dialects/interfaces/DimSourceInterface.cpp.inc"
