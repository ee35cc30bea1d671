//===- gatec-opt.cpp - every gatec dialect and pass, for lit tests --------===//
//
// gatec's dialects and passes, plus every upstream MLIR dialect and pass so
// that lit tests can run a lowering pipeline and execute the result with
// mlir-runner.
//
//===----------------------------------------------------------------------===//
#include "compiler/registration/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  gatec::registerGatecDialects(registry);
  gatec::registerGatecPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "gatec optimizer driver\n", registry));
}
