#!/usr/bin/env python3
"""Generates OnnxOps.gen.td and OnnxOpSpecs.inc from the ONNX operator schemas.

The ODS of every `onnx` op comes from the schema of the onnx Python package the
project pins (tools/requirements.txt): inputs (optional inputs accept the
`none` value of onnx.NoValue), outputs, attributes with their ONNX types and
defaults, element types allowed by the type constraints, and the schema's doc
as the op description. Run it after changing OPS or upgrading onnx:

    .venv/bin/python dialects/onnx/gen_onnx_ops.py

Both outputs are committed so that a build needs no Python.
"""
import os
import onnx
from onnx import defs, helper, AttributeProto

# The ONNX operators gatec imports (default domain). Constant is hand-written.
OPS = """
Abs Add And Attention Cast CastLike Ceil Clip Concat ConstantOfShape Conv Cos CumSum
Div Dropout Einsum Equal Erf Exp Expand Flatten Floor Gather GatherND Gelu Gemm
Greater GreaterOrEqual HardSigmoid Identity IsInf IsNaN LayerNormalization
LeakyRelu Less LessOrEqual LinearAttention Log LogSoftmax MatMul Max Min Mod Mul
Neg NonZero Not OneHot Or Pad Pow RMSNormalization Range Reciprocal ReduceL2 ReduceMax
ReduceMean ReduceMin ReduceProd ReduceSum Relu Reshape RotaryEmbedding Scan
ScatterElements ScatterND Shape Sigmoid Sign Sin Size Slice Softmax Softplus
Split Sqrt Squeeze Sub Sum SwiGLU Tanh Tile TopK Transpose Trilu Unsqueeze Where
""".split()

# Ops the importer writes as the onnx ops of their ONNX function body (no
# onnx op of their own).
EXPANDED = """
CausalConvWithState
""".split()

# Ops that fold when their operands are constants (shape chains, scalars).
FOLDERS = set("""
Add Cast Concat ConstantOfShape Div Equal Expand Gather Identity Less Mul Neg
Range Reshape Shape Size Slice Sqrt Squeeze Sub Unsqueeze Where
""".split())

ELEM = {
    "float": "F32", "double": "F64", "float16": "F16", "bfloat16": "BF16",
    "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "uint8": "UI8", "uint16": "UI16", "uint32": "UI32", "uint64": "UI64",
    "bool": "I1",
}
ATTR = {
    AttributeProto.INT: "I64Attr",
    AttributeProto.FLOAT: "F32Attr",
    AttributeProto.STRING: "StrAttr",
    AttributeProto.INTS: "DenseI64ArrayAttr",
    AttributeProto.FLOATS: "DenseF32ArrayAttr",
    AttributeProto.STRINGS: "StrArrayAttr",
    AttributeProto.TENSOR: "ElementsAttr",
}


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def tensor_type(schema, type_str):
    allowed = None
    for tc in schema.type_constraints:
        if tc.type_param_str == type_str:
            allowed = list(tc.allowed_type_strs)
    if allowed is None:
        allowed = [type_str]
    elems = []
    for t in allowed:
        if t.startswith("tensor(") and t[7:-1] in ELEM:
            e = ELEM[t[7:-1]]
            if e not in elems:
                elems.append(e)
    return "TensorOf<[%s]>" % ", ".join(elems) if elems else "AnyTensor"


def default_literal(attr):
    v = helper.get_attribute_value(attr.default_value)
    t = attr.default_value.type
    if t == AttributeProto.INT:
        return '"%d"' % v
    if t == AttributeProto.FLOAT:
        return '"%r"' % float(v)
    if t == AttributeProto.STRING:
        return '"\\"%s\\""' % v.decode()
    if t == AttributeProto.INTS:
        return '"{%s}"' % ", ".join(str(x) for x in v)
    return None


def gen_op(name):
    s = defs.get_schema(name, defs.onnx_opset_version(), "")
    args, results, regions = [], [], []
    for i in s.inputs:
        ty = tensor_type(s, i.type_str)
        if i.option == defs.OpSchema.FormalParameterOption.Optional:
            ty = "AnyTypeOf<[%s, NoneType]>" % ty
        elif i.option == defs.OpSchema.FormalParameterOption.Variadic:
            ty = "Variadic<%s>" % ty
        args.append("%s:$%s" % (ty, i.name))
    for o in s.outputs:
        ty = tensor_type(s, o.type_str)
        if o.option == defs.OpSchema.FormalParameterOption.Optional:
            ty = "AnyTypeOf<[%s, NoneType]>" % ty
        elif o.option == defs.OpSchema.FormalParameterOption.Variadic:
            ty = "Variadic<%s>" % ty
        results.append("%s:$%s" % (ty, o.name))
    for an, a in sorted(s.attributes.items()):
        if a.type == AttributeProto.GRAPH:
            regions.append("SizedRegion<1>:$%s" % an)
            continue
        if name == "Cast" and an == "to" or name == "CastLike" and an == "to":
            args.append("TypeAttr:$to")
            continue
        base = ATTR.get(a.type)
        if base is None:
            continue
        if a.required:
            args.append("%s:$%s" % (base, an))
        elif a.default_value.type != 0 and default_literal(a) is not None:
            args.append("DefaultValuedAttr<%s, %s>:$%s" % (base, default_literal(a), an))
        else:
            args.append("OptionalAttr<%s>:$%s" % (base, an))
    doc = s.doc.strip().replace("}]", "} ]").replace("[{", "[ {")
    traits = ["DeclareOpInterfaceMethods<Onnx_ShapeInferenceOpInterface>"]
    if any(i.option == defs.OpSchema.FormalParameterOption.Variadic for i in s.inputs) and \
       any(i.option == defs.OpSchema.FormalParameterOption.Optional for i in s.inputs):
        raise SystemExit("%s mixes variadic and optional inputs" % name)
    out = []
    out.append("def Onnx_%sOp : Onnx_Op<\"%s\", [%s]> {" % (name, name, ", ".join(traits)))
    out.append("  let summary = \"ONNX %s-%d\";" % (name, s.since_version))
    out.append("  let description = [{")
    out.append("    Source: ONNX operator specification, %s-%d" % (name, s.since_version))
    out.append("    (https://onnx.ai/onnx/operators/onnx__%s.html)." % name)
    out.append("")
    for line in doc.splitlines():
        out.append(("    " + line).rstrip())
    out.append("  }];")
    out.append("  let arguments = (ins%s);" % ("\n    " + ",\n    ".join(args) if args else ""))
    out.append("  let results = (outs%s);" % ("\n    " + ",\n    ".join(results) if results else ""))
    if regions:
        out.append("  let regions = (region %s);" % ", ".join(regions))
    if name in FOLDERS:
        out.append("  let hasFolder = 1;")
    out.append("}")
    nin = -1 if any(i.option == defs.OpSchema.FormalParameterOption.Variadic for i in s.inputs) else len(s.inputs)
    nout = -1 if any(o.option == defs.OpSchema.FormalParameterOption.Variadic for o in s.outputs) else len(s.outputs)
    spec = '  {"%s", %d, %d, %d},' % (name, s.since_version, nin, nout)
    return "\n".join(out), spec


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    tds, specs = [], []
    for name in sorted(OPS):
        td, spec = gen_op(name)
        tds.append(td)
        specs.append(spec)
    hdr = "// Generated by gen_onnx_ops.py from onnx %s (opset %d). Do not edit.\n" % (
        onnx.__version__, defs.onnx_opset_version())
    with open(os.path.join(here, "OnnxOps.gen.td"), "w") as f:
        f.write(hdr + "\n" + "\n\n".join(tds) + "\n")
    with open(os.path.join(here, "OnnxOpSpecs.inc"), "w") as f:
        # One entry per line (clang-format would pack the table).
        f.write(hdr + "// {op type, since version, #inputs (-1: variadic), #outputs (-1: variadic)}\n")
        f.write("// clang-format off\n" + "\n".join(specs) + "\n    // clang-format on\n")


if __name__ == "__main__":
    main()
