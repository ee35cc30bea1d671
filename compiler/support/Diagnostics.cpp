//===- Diagnostics.cpp - ONNX-located error messages ----------------------===//
#include "compiler/support/Diagnostics.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace gatec {

OnnxDiagnosticHandler::OnnxDiagnosticHandler(MLIRContext *ctx)
    : ScopedDiagnosticHandler(ctx) {
  setHandler([this](Diagnostic &diag) {
    llvm::raw_ostream &os = llvm::errs();
    os << describeLocation(diag.getLocation()) << ": ";
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error:
      ++errors;
      os << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      os << "warning: ";
      break;
    case DiagnosticSeverity::Note:
      os << "note: ";
      break;
    case DiagnosticSeverity::Remark:
      os << "remark: ";
      break;
    }
    os << diag.str() << "\n";
    for (Diagnostic &note : diag.getNotes())
      os << "  " << describeLocation(note.getLocation())
         << ": note: " << note.str() << "\n";
    os.flush();
    return success();
  });
}

} // namespace gatec
