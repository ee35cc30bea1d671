//===- OnnxDialect.td - the onnx import dialect ------------*- tablegen -*-===//
#ifndef GATEC_ONNX_DIALECT_TD
#define GATEC_ONNX_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Onnx_Dialect : Dialect {
  let name = "onnx";
  let cppNamespace = "::gatec::onnx";
  let summary = "ONNX operators as imported, one op per ONNX node";
  let description = [{
    The import dialect of gatec (phase `onnx`). Every op is one ONNX operator of
    the default domain, named as in the ONNX operator specification
    (https://onnx.ai/onnx/operators/), with attributes under their ONNX names.
    Opset-dependent semantics are resolved on import: each op here has the
    semantics of the newest opset listed in its description, and older forms
    (for example Softmax-11's 2-D coercion, ReduceMean-13's `axes` attribute)
    are rewritten into that form by the importer.

    Tensors are builtin ranked or unranked tensors; a dynamic dimension (`?`)
    is either an ONNX `dim_param` (its symbol is kept in the `onnx.dim_params`
    argument/result attribute of `@main_graph`) or an unknown size. An absent
    optional input is the `none` value of `onnx.NoValue`.
  }];
  let useDefaultAttributePrinterParser = 0;
  let hasConstantMaterializer = 1;
}

#endif
