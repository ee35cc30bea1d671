//===- gatec-opt.cpp - every gatec dialect and pass, for lit tests --------===//
#include "compiler/Pipeline.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  gatec::registerGatecDialects(registry);
  gatec::registerGatecPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "gatec optimizer driver\n", registry));
}
