//===- OnnxImporter.cpp - ONNX graphs to the onnx dialect -----------------===//
#include "compiler/OnnxImporter.h"
#include "compiler/importer/ImporterInternal.h"
#include "compiler/support/Diagnostics.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include <limits>
#include <map>

using namespace mlir;

namespace gatec {
namespace {
using importer::elementTypeOf;

struct OpSpec {
  const char *name;
  int64_t sinceVersion, numInputs, numOutputs;
};
const OpSpec kOpSpecs[] = {
#include "dialects/onnx/OnnxOpSpecs.inc"
};

const OpSpec *findSpec(StringRef op) {
  for (const OpSpec &s : kOpSpecs)
    if (op == s.name)
      return &s;
  return nullptr;
}

/// The first opset in which an op exists, for ops newer than kMinOpset.
int64_t firstOpset(StringRef op) {
  static const std::map<std::string, int64_t> first = {
      {"Trilu", 14},
      {"CastLike", 15},
      {"LayerNormalization", 17},
      {"Gelu", 20},
      {"Attention", 23},
      {"RMSNormalization", 23},
      {"RotaryEmbedding", 23},
      {"LinearAttention", 27},
      {"SwiGLU", 28}};
  auto it = first.find(op.str());
  return it == first.end() ? 1 : it->second;
}

/// Imports one ONNX graph (the main graph or a subgraph) into a block.
class GraphImporter {
public:
  GraphImporter(MLIRContext *ctx, StringRef file, int64_t opset,
                importer::TensorImporter &tensors, GraphImporter *parent)
      : ctx(ctx), b(ctx), file(file.str()), opset(opset), tensors(tensors),
        parent(parent) {}

  OwningOpRef<ModuleOp> importMain(::onnx::GraphProto &g);

private:
  Location fileLoc() { return FileLineColLoc::get(ctx, file, 0, 0); }
  Location nodeLoc(const ::onnx::NodeProto &n, int idx) {
    std::string name = n.name();
    if (name.empty())
      name = n.op_type() + "#" + std::to_string(idx);
    int64_t v = opset;
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      auto it = domainOpsets.find(n.domain());
      v = it == domainOpsets.end() ? 0 : it->second;
    }
    return makeNodeLoc(ctx, file, name, n.op_type(), v);
  }

  Value lookup(const std::string &name) {
    auto it = values.find(name);
    if (it != values.end())
      return it->second;
    return parent ? parent->lookup(name) : Value();
  }
  /// The main graph's outputs: their declared dims do not make a dim that
  /// the graph computes from a dynamic input static (see importNode).
  llvm::StringSet<> mainOutputs;
  const ::onnx::ValueInfoProto *lookupInfo(const std::string &name) {
    auto it = infos.find(name);
    if (it != infos.end())
      return it->second;
    return parent ? parent->lookupInfo(name) : nullptr;
  }
  Value none() {
    if (!noneValue) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(block);
      noneValue = onnx::NoValueOp::create(b, fileLoc());
    }
    return noneValue;
  }

  FailureOr<Type> typeOf(const ::onnx::TypeProto &t, Location loc,
                         StringRef what, SmallVectorImpl<Attribute> *dimParams);
  LogicalResult importInitializers(::onnx::GraphProto &g);
  LogicalResult importNodes(::onnx::GraphProto &g);
  LogicalResult importNode(::onnx::NodeProto &n, int idx);
  /// A node of the default domain (the opset checks done).
  LogicalResult importDefaultNode(::onnx::NodeProto &n, Location loc);
  /// CausalConvWithState (ONNX 27, com.microsoft) as the ops of its ONNX
  /// function body.
  LogicalResult importCausalConv(::onnx::NodeProto &n, Location loc);
  /// com.microsoft.GatedRMSNorm as RMSNormalization over groups of C and
  /// the gate's activation.
  LogicalResult importGatedRMSNorm(::onnx::NodeProto &n, Location loc);
  /// com.microsoft.GatedDeltaNet (uniform packing) as LinearAttention-27
  /// between reshapes of its token-major layout.
  LogicalResult importGatedDeltaNet(::onnx::NodeProto &n, Location loc);
  /// Maps the node's outputs to `results` (an output past them or a null
  /// one must be absent).
  LogicalResult mapOutputs(::onnx::NodeProto &n, ArrayRef<Value> results,
                           Location loc);
  LogicalResult importConstant(::onnx::NodeProto &n, Location loc);
  FailureOr<Attribute> convertAttr(::onnx::AttributeProto &a, StringRef opType,
                                   Location loc);
  /// Imports a subgraph into `region`. `argTypes` give the types of its
  /// inputs where the subgraph leaves them out (ONNX allows untyped
  /// subgraph inputs; the op defines them).
  LogicalResult importSubgraph(::onnx::GraphProto &g, Region &region,
                               Location loc, ArrayRef<Type> argTypes);
  /// Types of a Scan body's inputs: the states, then one slice of each scan
  /// input (its scan axis removed).
  SmallVector<Type> scanBodyInputTypes(const ::onnx::NodeProto &n,
                                       ArrayRef<Value> operands);
  Value constI64(ArrayRef<int64_t> v, Location loc) {
    auto t = RankedTensorType::get({(int64_t)v.size()}, b.getI64Type());
    return onnx::ConstantOp::create(b, loc, DenseIntElementsAttr::get(t, v));
  }
  /// Creates an onnx op with inferred result types (absent optional results
  /// get `none`), and verifies it.
  FailureOr<Operation *> createOp(StringRef opType, ArrayRef<Value> operands,
                                  ArrayRef<NamedAttribute> attrs,
                                  ArrayRef<bool> present, Location loc,
                                  Region *body = nullptr);
  /// createOp for an op with one result (the rewrites of contrib ops into
  /// onnx ops): that result.
  FailureOr<Value> createSingle(StringRef opType, ArrayRef<Value> operands,
                                ArrayRef<NamedAttribute> attrs, Location loc) {
    auto o = createOp(opType, operands, attrs, {true}, loc);
    if (failed(o))
      return failure();
    return (*o)->getResult(0);
  }

  MLIRContext *ctx;
  OpBuilder b;
  std::string file;
  int64_t opset;
  importer::TensorImporter &tensors;
  GraphImporter *parent;

public:
  /// Opset of every imported domain (for the locations of other domains).
  std::map<std::string, int64_t> domainOpsets;

private:
  Block *block = nullptr;
  Value noneValue;
  llvm::StringMap<Value> values;
  llvm::StringMap<const ::onnx::ValueInfoProto *> infos;
};

FailureOr<Type> GraphImporter::typeOf(const ::onnx::TypeProto &t, Location loc,
                                      StringRef what,
                                      SmallVectorImpl<Attribute> *dimParams) {
  if (!t.has_tensor_type())
    return emitError(loc) << what << " is not a tensor (sequence, map and "
                          << "optional types are not supported)",
           failure();
  const auto &tt = t.tensor_type();
  Type e = elementTypeOf(ctx, tt.elem_type());
  if (!e)
    return emitError(loc) << what << " has unsupported element type "
                          << importer::dataTypeName(tt.elem_type()),
           failure();
  if (!tt.has_shape())
    return Type(UnrankedTensorType::get(e));
  SmallVector<int64_t> shape;
  bool anyParam = false;
  for (const auto &d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      shape.push_back(d.dim_value());
      if (dimParams)
        dimParams->push_back(b.getStringAttr(""));
    } else {
      shape.push_back(ShapedType::kDynamic);
      if (dimParams)
        dimParams->push_back(b.getStringAttr(d.dim_param()));
      anyParam |= d.has_dim_param();
    }
  }
  if (dimParams && !anyParam)
    dimParams->clear();
  return Type(RankedTensorType::get(shape, e));
}

LogicalResult GraphImporter::importInitializers(::onnx::GraphProto &g) {
  if (g.sparse_initializer_size() > 0)
    return emitError(fileLoc())
           << "sparse initializer '" << g.sparse_initializer(0).values().name()
           << "' is not supported (densify it, e.g. with onnx.numpy_helper)";
  for (::onnx::TensorProto &t : *g.mutable_initializer()) {
    std::string error;
    Location loc = makeNodeLoc(ctx, file, t.name(), "initializer", 0);
    ElementsAttr attr = tensors.import(t, error);
    if (!attr)
      return emitError(loc) << error;
    values[t.name()] = onnx::ConstantOp::create(b, loc, attr);
  }
  return success();
}

FailureOr<Attribute> GraphImporter::convertAttr(::onnx::AttributeProto &a,
                                                StringRef opType,
                                                Location loc) {
  auto type = a.type();
  if (type == ::onnx::AttributeProto::UNDEFINED) {
    // Old models leave the type unset: deduce it from the field present.
    if (a.has_i())
      type = ::onnx::AttributeProto::INT;
    else if (a.has_f())
      type = ::onnx::AttributeProto::FLOAT;
    else if (a.has_s())
      type = ::onnx::AttributeProto::STRING;
    else if (a.has_t())
      type = ::onnx::AttributeProto::TENSOR;
    else if (a.ints_size())
      type = ::onnx::AttributeProto::INTS;
    else if (a.floats_size())
      type = ::onnx::AttributeProto::FLOATS;
    else if (a.strings_size())
      type = ::onnx::AttributeProto::STRINGS;
  }
  switch (type) {
  case ::onnx::AttributeProto::INT:
    if ((opType == "Cast") && a.name() == "to") {
      Type e = elementTypeOf(ctx, a.i());
      if (!e)
        return emitError(loc) << "Cast to unsupported type "
                              << importer::dataTypeName(a.i()),
               failure();
      return Attribute(TypeAttr::get(e));
    }
    return Attribute(b.getI64IntegerAttr(a.i()));
  case ::onnx::AttributeProto::FLOAT:
    return Attribute(b.getF32FloatAttr(a.f()));
  case ::onnx::AttributeProto::STRING:
    return Attribute(b.getStringAttr(a.s()));
  case ::onnx::AttributeProto::INTS:
    return Attribute(b.getDenseI64ArrayAttr(
        SmallVector<int64_t>(a.ints().begin(), a.ints().end())));
  case ::onnx::AttributeProto::FLOATS:
    return Attribute(b.getDenseF32ArrayAttr(
        SmallVector<float>(a.floats().begin(), a.floats().end())));
  case ::onnx::AttributeProto::STRINGS: {
    SmallVector<Attribute> s;
    for (const std::string &x : a.strings())
      s.push_back(b.getStringAttr(x));
    return Attribute(b.getArrayAttr(s));
  }
  case ::onnx::AttributeProto::TENSOR: {
    std::string error;
    ElementsAttr t = tensors.import(*a.mutable_t(), error);
    if (!t)
      return emitError(loc) << "attribute '" << a.name() << "': " << error,
             failure();
    return Attribute(t);
  }
  default:
    return emitError(loc) << "attribute '" << a.name() << "' has type "
                          << ::onnx::AttributeProto::AttributeType_Name(type)
                          << ", which gatec does not support",
           failure();
  }
}

/// Runs the op's ODS verifier on an op whose result types are still
/// placeholders: attribute and operand constraints are checked first (in
/// that order), so the first error is kept unless it is about a result.
/// Shape inference may only run on ops that pass these checks.
LogicalResult verifyAttributesAndOperands(Operation *op) {
  std::optional<Diagnostic> first;
  {
    ScopedDiagnosticHandler capture(op->getContext(), [&](Diagnostic &d) {
      if (!first && d.getSeverity() == DiagnosticSeverity::Error)
        first.emplace(std::move(d));
      return success();
    });
    if (succeeded(op->getName().verifyInvariants(op)))
      return success();
  }
  if (!first)
    return failure();
  std::string msg = first->str();
  if (msg.find(" op result #") != std::string::npos)
    return success();
  emitError(first->getLocation()) << msg;
  return failure();
}

FailureOr<Operation *> GraphImporter::createOp(StringRef opType,
                                               ArrayRef<Value> operands,
                                               ArrayRef<NamedAttribute> attrs,
                                               ArrayRef<bool> present,
                                               Location loc, Region *body) {
  std::string name = ("onnx." + opType).str();
  OperationState state(loc, name);
  // Attribute kinds are checked before the op exists: properties cannot
  // hold an attribute of the wrong kind.
  NamedAttrList attrList(attrs);
  if (failed(state.name.verifyInherentAttrs(attrList, [&]() {
        return emitError(loc) << "'" << name << "' op ";
      })))
    return failure();
  state.addOperands(operands);
  state.addAttributes(attrs);
  for (bool p : present)
    state.addTypes(p ? Type(UnrankedTensorType::get(b.getF32Type()))
                     : Type(b.getNoneType()));
  if (opType == "Scan") {
    if (!body || body->empty())
      return emitError(loc) << "Scan needs a 'body' graph", failure();
    state.addRegion()->takeBody(*body);
  }
  Operation *op = b.create(state);
  if (failed(verifyAttributesAndOperands(op)))
    return failure();
  auto iface = dyn_cast<onnx::ShapeInferenceOpInterface>(op);
  if (!iface)
    return emitError(loc) << "no shape inference for " << opType, failure();
  SmallVector<Type> inferred;
  if (failed(iface.inferResultTypes(inferred)))
    return failure(); // reported at the node
  if (inferred.size() != op->getNumResults())
    return emitError(loc) << "cannot infer the result types", failure();
  for (auto [res, t] : llvm::zip(op->getResults(), inferred))
    res.setType(t);
  return op;
}

LogicalResult GraphImporter::importConstant(::onnx::NodeProto &n,
                                            Location loc) {
  if (n.attribute_size() != 1 || n.output_size() != 1)
    return emitError(loc) << "Constant must have exactly one value attribute "
                             "and one output";
  ::onnx::AttributeProto &a = *n.mutable_attribute(0);
  Attribute value;
  if (a.name() == "value") {
    std::string error;
    ElementsAttr t = tensors.import(*a.mutable_t(), error);
    if (!t)
      return emitError(loc) << error;
    value = t;
  } else if (a.name() == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   a.f());
  } else if (a.name() == "value_floats") {
    SmallVector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, b.getF32Type()),
        ArrayRef<float>(v));
  } else if (a.name() == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   (int64_t)a.i());
  } else if (a.name() == "value_ints") {
    SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, b.getI64Type()),
        ArrayRef<int64_t>(v));
  } else {
    return emitError(loc) << "Constant with attribute '" << a.name()
                          << "' is not supported";
  }
  values[n.output(0)] =
      onnx::ConstantOp::create(b, loc, cast<ElementsAttr>(value));
  return success();
}

SmallVector<Type> GraphImporter::scanBodyInputTypes(const ::onnx::NodeProto &n,
                                                    ArrayRef<Value> operands) {
  int64_t numScan = 0;
  SmallVector<int64_t> axes;
  for (const auto &a : n.attribute()) {
    if (a.name() == "num_scan_inputs")
      numScan = a.i();
    if (a.name() == "scan_input_axes")
      axes.assign(a.ints().begin(), a.ints().end());
  }
  SmallVector<Type> types;
  int64_t numStates = (int64_t)operands.size() - numScan;
  for (auto [i, v] : llvm::enumerate(operands)) {
    Type t = v.getType();
    auto rt = dyn_cast<RankedTensorType>(t);
    if ((int64_t)i >= numStates && rt) {
      int64_t axis = (int64_t)i - numStates < (int64_t)axes.size()
                         ? axes[i - numStates]
                         : 0;
      if (axis < 0)
        axis += rt.getRank();
      if (axis >= 0 && axis < rt.getRank()) {
        SmallVector<int64_t> shape(rt.getShape());
        shape.erase(shape.begin() + axis);
        t = RankedTensorType::get(shape, rt.getElementType());
      }
    } else if ((int64_t)i >= numStates) {
      t = UnrankedTensorType::get(getElementTypeOrSelf(t));
    }
    types.push_back(t);
  }
  return types;
}

LogicalResult GraphImporter::importSubgraph(::onnx::GraphProto &g,
                                            Region &region, Location loc,
                                            ArrayRef<Type> argTypes) {
  GraphImporter sub(ctx, file, opset, tensors, this);
  sub.domainOpsets = domainOpsets;
  sub.block = new Block();
  region.push_back(sub.block);
  for (const auto &vi : g.value_info())
    sub.infos[vi.name()] = &vi;
  for (const auto &vi : g.output())
    sub.infos[vi.name()] = &vi;
  if (g.input_size() != (int)argTypes.size())
    return emitError(loc) << "the body graph has " << g.input_size()
                          << " inputs, the op gives it " << argTypes.size();
  for (auto [i, in] : llvm::enumerate(g.input())) {
    if (sub.values.count(in.name()))
      return emitError(loc) << "subgraph input '" << in.name()
                            << "' is declared twice (inputs must have "
                               "distinct names)";
    Type t = argTypes[i];
    if (in.has_type() && in.type().has_tensor_type() &&
        in.type().tensor_type().elem_type() != 0) {
      auto declared = sub.typeOf(in.type(), loc,
                                 "subgraph input '" + in.name() + "'", nullptr);
      if (failed(declared))
        return failure();
      if (getElementTypeOrSelf(*declared) != getElementTypeOrSelf(t) ||
          failed(verifyCompatibleShape(*declared, t)))
        return emitError(loc)
               << "subgraph input '" << in.name() << "' is declared "
               << *declared << " but the op gives it " << t;
      if (cast<TensorType>(*declared).hasRank())
        t = *declared;
    } else if (in.has_type() && !in.type().has_tensor_type() &&
               in.type().value_case() != ::onnx::TypeProto::VALUE_NOT_SET) {
      return emitError(loc) << "subgraph input '" << in.name()
                            << "' is not a tensor (sequence, map and optional "
                               "types are not supported)";
    }
    sub.values[in.name()] = sub.block->addArgument(t, loc);
  }
  sub.b.setInsertionPointToEnd(sub.block);
  if (failed(sub.importInitializers(g)) || failed(sub.importNodes(g)))
    return failure();
  SmallVector<Value> outs;
  for (const auto &o : g.output()) {
    Value v = sub.lookup(o.name());
    if (!v)
      return emitError(loc)
             << "subgraph output '" << o.name() << "' is not defined";
    outs.push_back(v);
  }
  onnx::YieldOp::create(sub.b, loc, outs);
  return success();
}

/// The integer attribute `name` of `n`, or nullopt.
static std::optional<int64_t> intAttr(const ::onnx::NodeProto &n,
                                      StringRef name) {
  for (const auto &a : n.attribute())
    if (a.name() == name)
      return a.i();
  return std::nullopt;
}

LogicalResult GraphImporter::importNode(::onnx::NodeProto &n, int idx) {
  Location loc = nodeLoc(n, idx);
  const std::string &domain = n.domain();
  bool onnxDomain = domain.empty() || domain == "ai.onnx";
  StringRef opType = n.op_type();
  // Contrib ops of onnxruntime (com.microsoft) with the semantics of an
  // ONNX op, as onnxruntime's op schemas document them.
  if (domain == "com.microsoft" && opType == "CausalConvWithState")
    return importCausalConv(n, loc);
  if (domain == "com.microsoft" && opType == "GatedDeltaNet")
    return importGatedDeltaNet(n, loc);
  if (domain == "com.microsoft" && opType == "GatedRMSNorm")
    return importGatedRMSNorm(n, loc);
  if (domain == "com.microsoft" && opType == "LinearAttention") {
    // LinearAttention-27 plus state_window (W > 0: states of the last W
    // tokens), which gatec does not support.
    if (intAttr(n, "state_window").value_or(0) != 0)
      return emitError(loc) << "com.microsoft.LinearAttention with "
                               "state_window > 0 is not supported";
    ::onnx::NodeProto m = n;
    m.clear_domain();
    m.clear_attribute();
    for (const auto &a : n.attribute())
      if (a.name() != "state_window")
        *m.add_attribute() = a;
    return importDefaultNode(m, loc);
  }
  if (!onnxDomain)
    return emitError(loc) << "operator '" << n.op_type() << "' of domain '"
                          << domain << "' is not supported";
  if (opType == "Constant")
    return importConstant(n, loc);
  if (opType == "CausalConvWithState" && opset >= 27)
    return importCausalConv(n, loc);
  if (opset < firstOpset(opType))
    return emitError(loc) << opType << " does not exist in opset " << opset
                          << " (it was introduced in opset "
                          << firstOpset(opType) << ")";
  return importDefaultNode(n, loc);
}

LogicalResult GraphImporter::mapOutputs(::onnx::NodeProto &n,
                                        ArrayRef<Value> results, Location loc) {
  for (int i = 0; i < n.output_size(); ++i) {
    const std::string &out = n.output(i);
    if (out.empty())
      continue;
    if (i >= (int)results.size() || !results[i])
      return emitError(loc)
             << n.op_type() << " output #" << i << " is not supported";
    if (values.count(out))
      return emitError(loc) << "value '" << out << "' is produced twice";
    values[out] = results[i];
  }
  return success();
}

/// CausalConvWithState-27 (and com.microsoft's with its default layout):
///   padded = Concat(past_state or zeros [B, C, (k-1)d], input; axis 2)
///   output = act(Conv(padded, weight, bias; group = C, dilation d))
///   present_state = the last (k-1)d positions of padded
/// with the activation (SiLU) computed in f32, as in ONNX's function body.
/// com.microsoft's other layouts (ndim > 1, channels_last, state windows,
/// the CUDA-only state capture) are located errors.
LogicalResult GraphImporter::importCausalConv(::onnx::NodeProto &n,
                                              Location loc) {
  std::string act = "none";
  int64_t dil = 1;
  for (const auto &a : n.attribute()) {
    StringRef an = a.name();
    if (an == "activation") {
      act = a.s();
    } else if (an == "dilation") {
      dil = a.i();
    } else if ((an == "ndim" && a.i() == 1) ||
               (an == "state_channels_last" && a.i() == -1) ||
               ((an == "channels_last" || an == "state_window" ||
                 an == "state_update_capacity" || an == "state_length" ||
                 an == "input_channel_offset" || an == "input_channels") &&
                a.i() == 0)) {
      continue; // the default layout
    } else {
      return emitError(loc) << "CausalConvWithState attribute '" << an
                            << "' (other than its default) is not supported";
    }
  }
  if (act != "none" && act != "silu" && act != "swish")
    return emitError(loc) << "CausalConvWithState activation '" << act
                          << "' is not supported";
  if (dil < 1)
    return emitError(loc) << "CausalConvWithState dilation must be >= 1";
  auto in = [&](int i) -> Value {
    return i < n.input_size() && !n.input(i).empty() ? lookup(n.input(i))
                                                     : Value();
  };
  Value x = in(0), w = in(1), bias = in(2), past = in(3);
  if (!x || !w)
    return emitError(loc) << "CausalConvWithState needs its input and weight";
  for (int i = 0; i < n.input_size(); ++i)
    if (!n.input(i).empty() && !in(i))
      return emitError(loc) << "input '" << n.input(i)
                            << "' is not defined by any earlier node, graph "
                               "input or initializer";
  auto xt = dyn_cast<RankedTensorType>(x.getType());
  auto wt = dyn_cast<RankedTensorType>(w.getType());
  if (!xt || !wt || xt.getRank() != 3 || wt.getRank() != 3 ||
      wt.isDynamicDim(0) || wt.isDynamicDim(2))
    return emitError(loc) << "CausalConvWithState: only the 1-D form with a "
                             "3-D input and a static [C, 1, k] weight is "
                             "supported";
  int64_t c = wt.getDimSize(0), k = wt.getDimSize(2), len = (k - 1) * dil;
  Type e = xt.getElementType();
  auto op1 = [&](StringRef type, ArrayRef<Value> ops,
                 ArrayRef<NamedAttribute> attrs = {}) {
    return createSingle(type, ops, attrs, loc);
  };
  if (!past) { // zeros [B, C, len]
    auto bc = op1("Shape", {x},
                  {b.getNamedAttr("start", b.getI64IntegerAttr(0)),
                   b.getNamedAttr("end", b.getI64IntegerAttr(2))});
    if (failed(bc))
      return failure();
    auto shape = op1("Concat", {*bc, constI64({len}, loc)},
                     {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
    if (failed(shape))
      return failure();
    auto zero =
        DenseElementsAttr::get(RankedTensorType::get({1}, e), b.getZeroAttr(e));
    auto z = op1("ConstantOfShape", {*shape}, {b.getNamedAttr("value", zero)});
    if (failed(z))
      return failure();
    past = *z;
  }
  auto padded = op1("Concat", {past, x},
                    {b.getNamedAttr("axis", b.getI64IntegerAttr(2))});
  if (failed(padded))
    return failure();
  auto y = op1("Conv", {*padded, w, bias ? bias : none()},
               {b.getNamedAttr("group", b.getI64IntegerAttr(c)),
                b.getNamedAttr("dilations", b.getDenseI64ArrayAttr({dil}))});
  if (failed(y))
    return failure();
  Value out = *y;
  if (act != "none") {
    Type f32 = b.getF32Type();
    auto to = [&](Value v, Type t) -> FailureOr<Value> {
      if (getElementTypeOrSelf(v.getType()) == t)
        return v;
      return op1("Cast", {v}, {b.getNamedAttr("to", TypeAttr::get(t))});
    };
    auto yf = to(out, f32);
    if (failed(yf))
      return failure();
    auto sg = op1("Sigmoid", {*yf});
    if (failed(sg))
      return failure();
    auto m = op1("Mul", {*yf, *sg});
    if (failed(m))
      return failure();
    auto back = to(*m, e);
    if (failed(back))
      return failure();
    out = *back;
  }
  auto len1 = constI64({-len}, loc), axes = constI64({2}, loc);
  auto big = constI64({std::numeric_limits<int64_t>::max()}, loc);
  auto state = len ? op1("Slice", {*padded, len1, big, axes, none()})
                   : op1("Slice", {*padded, constI64({0}, loc),
                                   constI64({0}, loc), axes, none()});
  if (failed(state))
    return failure();
  // The state's length is known: (k - 1) d.
  auto pt = cast<RankedTensorType>(padded->getType());
  state->setType(
      RankedTensorType::get({pt.getDimSize(0), pt.getDimSize(1), len}, e));
  return mapOutputs(n, {out, *state}, loc);
}

/// com.microsoft.GatedRMSNorm (onnxruntime's schema): X [..., H * C],
/// scale [C], gate like X,
///   Y = X rsqrt(mean over each group of C (X^2) + epsilon) scale act(gate)
/// with act = silu (swish) or sigmoid, all in f32: X (reshaped to
/// [..., H, C] when H > 1) goes through RMSNormalization (stash_type f32),
/// back to X's shape, times the activated gate, cast back.
LogicalResult GraphImporter::importGatedRMSNorm(::onnx::NodeProto &n,
                                                Location loc) {
  std::string act = "silu";
  float eps = 1e-5f;
  for (const auto &a : n.attribute()) {
    if (a.name() == "activation")
      act = a.s();
    else if (a.name() == "epsilon")
      eps = a.f();
    else
      return emitError(loc)
             << "GatedRMSNorm attribute '" << a.name() << "' is not supported";
  }
  if (act != "silu" && act != "swish" && act != "sigmoid")
    return emitError(loc) << "GatedRMSNorm activation '" << act
                          << "' is not supported";
  if (n.input_size() != 3 || n.output_size() != 1)
    return emitError(loc) << "GatedRMSNorm takes X, scale and gate and gives Y";
  Value x = lookup(n.input(0)), scale = lookup(n.input(1)),
        gate = lookup(n.input(2));
  if (!x || !scale || !gate)
    return emitError(loc) << "GatedRMSNorm: an input is not defined by any "
                             "earlier node, graph input or initializer";
  auto xt = dyn_cast<RankedTensorType>(x.getType());
  auto st = dyn_cast<RankedTensorType>(scale.getType());
  if (!xt || !st || xt.getRank() < 1 || st.getRank() != 1 || st.isDynamicDim(0))
    return emitError(loc) << "GatedRMSNorm needs a ranked X and a static 1-D "
                             "scale";
  int64_t c = st.getDimSize(0), last = xt.getShape().back();
  if (last != ShapedType::kDynamic && (c == 0 || last % c))
    return emitError(loc) << "GatedRMSNorm: X's last dimension " << last
                          << " is not a multiple of scale's " << c;
  Type e = xt.getElementType(), f32 = b.getF32Type();
  auto op1 = [&](StringRef type, ArrayRef<Value> ops,
                 ArrayRef<NamedAttribute> attrs = {}) {
    return createSingle(type, ops, attrs, loc);
  };
  auto to = [&](Value v, Type t) -> FailureOr<Value> {
    if (getElementTypeOrSelf(v.getType()) == t)
      return v;
    return op1("Cast", {v}, {b.getNamedAttr("to", TypeAttr::get(t))});
  };
  auto xf = to(x, f32), sf = to(scale, f32), zf = to(gate, f32);
  if (failed(xf) || failed(sf) || failed(zf))
    return failure();
  Value v = *xf;
  bool grouped = last != c;
  FailureOr<Value> shape = failure();
  if (grouped) { // [..., H, C]
    shape = op1("Shape", {x});
    auto lead =
        op1("Shape", {x}, {b.getNamedAttr("end", b.getI64IntegerAttr(-1))});
    if (failed(shape) || failed(lead))
      return failure();
    auto s4 = op1("Concat", {*lead, constI64({-1, c}, loc)},
                  {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
    if (failed(s4))
      return failure();
    auto r = op1("Reshape", {v, *s4});
    if (failed(r))
      return failure();
    v = *r;
  }
  auto norm = op1("RMSNormalization", {v, *sf},
                  {b.getNamedAttr("axis", b.getI64IntegerAttr(-1)),
                   b.getNamedAttr("epsilon", b.getF32FloatAttr(eps))});
  if (failed(norm))
    return failure();
  v = *norm;
  if (grouped) {
    auto r = op1("Reshape", {v, *shape});
    if (failed(r))
      return failure();
    v = *r;
  }
  auto sg = op1("Sigmoid", {*zf});
  if (failed(sg))
    return failure();
  Value g = *sg;
  if (act != "sigmoid") {
    auto m = op1("Mul", {*zf, *sg});
    if (failed(m))
      return failure();
    g = *m;
  }
  auto y = op1("Mul", {v, g});
  if (failed(y))
    return failure();
  auto back = to(*y, e);
  if (failed(back))
    return failure();
  (*back).setType(RankedTensorType::get(xt.getShape(), e));
  return mapOutputs(n, {*back}, loc);
}

/// com.microsoft.GatedDeltaNet (onnxruntime's schema) with separate
/// query/key/value, uniform packing (no cu_seqlens) and num_heads_q =
/// num_heads_k = num_heads_v:
///   query/key [N, H, Dk], value [N, H, Dv] with N = B T (B from
///   initial_state), or [B, T, H, D]; decay [N, H] / [N, H, Dk] (or
///   [B, T, ...]); beta [N, H]; initial/final state V-major [B, H, Dv, Dk]
/// becomes LinearAttention-27 on [B, T, H * D] with the state transposed to
/// [B, H, Dk, Dv]; gate_activation 'softplus' (or 'qwen') computes the
/// decay as -exp(a_log) softplus(decay + dt_bias) in f32 first, and
/// beta_activation 'sigmoid' applies a sigmoid to beta. Other forms
/// (packed QKV, cu_seqlens, inverse GQA, qk_l2_norm, the 'sigmoid' gate,
/// state capture) are located errors.
LogicalResult GraphImporter::importGatedDeltaNet(::onnx::NodeProto &n,
                                                 Location loc) {
  std::string rule = "gated_delta", gateAct = "none", betaAct = "none";
  float scale = 0.0f;
  for (const auto &a : n.attribute()) {
    StringRef an = a.name();
    if (an == "update_rule")
      rule = a.s();
    else if (an == "gate_activation")
      gateAct = a.s();
    else if (an == "beta_activation")
      betaAct = a.s();
    else if (an == "scale")
      scale = a.f();
    else if (an == "chunk_size" || an == "gate_lower_bound")
      continue; // a tuning hint; the bound of the unsupported sigmoid gate
    else if ((an == "qk_l2_norm" || an == "state_update_capacity") &&
             a.i() == 0)
      continue;
    else
      return emitError(loc) << "GatedDeltaNet attribute '" << an
                            << "' (other than its default) is not supported";
  }
  if (gateAct == "qwen")
    gateAct = "softplus";
  if (gateAct != "none" && gateAct != "softplus")
    return emitError(loc) << "GatedDeltaNet gate_activation '" << gateAct
                          << "' is not supported";
  if (betaAct != "none" && betaAct != "sigmoid")
    return emitError(loc) << "GatedDeltaNet beta_activation '" << betaAct
                          << "' is not supported";
  auto in = [&](int i) -> Value {
    return i < n.input_size() && !n.input(i).empty() ? lookup(n.input(i))
                                                     : Value();
  };
  for (int i = 0; i < n.input_size(); ++i)
    if (!n.input(i).empty() && !in(i))
      return emitError(loc) << "input '" << n.input(i)
                            << "' is not defined by any earlier node, graph "
                               "input or initializer";
  Value q = in(0), k = in(1), v = in(2), decay = in(4), beta = in(5),
        state = in(6), aLog = in(7), dtBias = in(8);
  if (!q || !k || !v)
    return emitError(loc) << "GatedDeltaNet with packed QKV (no key and "
                             "value) is not supported";
  if (in(3))
    return emitError(loc) << "GatedDeltaNet with cu_seqlens (ragged "
                             "packing) is not supported";
  for (int i = 9; i < n.input_size(); ++i)
    if (in(i))
      return emitError(loc) << "GatedDeltaNet state capture inputs are not "
                               "supported";
  if (n.output_size() > 2 && !n.output(2).empty())
    return emitError(loc) << "GatedDeltaNet's state_update output is not "
                             "supported";
  auto qt = dyn_cast<RankedTensorType>(q.getType());
  auto kt = dyn_cast<RankedTensorType>(k.getType());
  auto vt = dyn_cast<RankedTensorType>(v.getType());
  if (!qt || !kt || !vt || qt.getRank() != kt.getRank() ||
      qt.getRank() != vt.getRank() || (qt.getRank() != 3 && qt.getRank() != 4))
    return emitError(loc) << "GatedDeltaNet: query, key and value must all "
                             "be [N, H, D] or all [B, T, H, D]";
  bool tokens = qt.getRank() == 3; // [N, H, D]
  int64_t r = qt.getRank();
  int64_t h = qt.getDimSize(r - 2), dk = qt.getDimSize(r - 1),
          dv = vt.getDimSize(r - 1);
  if (ShapedType::isDynamic(h) || ShapedType::isDynamic(dk) ||
      ShapedType::isDynamic(dv) || kt.getDimSize(r - 2) != h ||
      vt.getDimSize(r - 2) != h || kt.getDimSize(r - 1) != dk)
    return emitError(loc) << "GatedDeltaNet: static heads and head sizes with "
                             "num_heads_q = num_heads_k = num_heads_v are "
                             "supported (inverse GQA is not)";
  if (tokens && !state)
    return emitError(loc) << "GatedDeltaNet with [N, H, D] inputs needs "
                             "initial_state (the batch size)";
  bool gated = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if ((gated && !decay) || (delta && !beta))
    return emitError(loc) << "GatedDeltaNet update_rule '" << rule
                          << "' needs its decay / beta input";
  if (gateAct == "softplus" && (!aLog || !dtBias))
    return emitError(loc) << "GatedDeltaNet gate_activation 'softplus' needs "
                             "a_log and dt_bias";
  Type f32 = b.getF32Type();
  auto op1 = [&](StringRef type, ArrayRef<Value> ops,
                 ArrayRef<NamedAttribute> attrs = {}) {
    return createSingle(type, ops, attrs, loc);
  };
  auto i64 = [&](int64_t x) { return b.getI64IntegerAttr(x); };
  // [B, T, rest] from a token-major or [B, T, ...] tensor.
  Value batch;
  if (tokens) {
    auto bs = op1("Shape", {state}, {b.getNamedAttr("end", i64(1))});
    if (failed(bs))
      return failure();
    batch = *bs;
  }
  auto packed = [&](Value x, int64_t last) -> FailureOr<Value> {
    if (!tokens)
      return op1("Reshape", {x, constI64({0, 0, last}, loc)});
    auto shape = op1("Concat", {batch, constI64({-1, last}, loc)},
                     {b.getNamedAttr("axis", i64(0))});
    if (failed(shape))
      return failure();
    return op1("Reshape", {x, *shape});
  };
  auto q3 = packed(q, h * dk), k3 = packed(k, h * dk), v3 = packed(v, h * dv);
  if (failed(q3) || failed(k3) || failed(v3))
    return failure();
  Value g = none(), bt = none(), s0 = none();
  if (decay) {
    auto dt = cast<RankedTensorType>(decay.getType());
    bool perKey = dt.getRank() == r; // [..., H, Dk]
    Value d = decay;
    if (gateAct == "softplus") {
      if (perKey)
        return emitError(loc) << "GatedDeltaNet: the softplus gate of a "
                                 "per-key decay is not supported";
      auto cast32 = [&](Value x) -> FailureOr<Value> {
        if (getElementTypeOrSelf(x.getType()) == f32)
          return x;
        return op1("Cast", {x}, {b.getNamedAttr("to", TypeAttr::get(f32))});
      };
      auto df = cast32(d), ab = cast32(dtBias), al = cast32(aLog);
      if (failed(df) || failed(ab) || failed(al))
        return failure();
      auto sum = op1("Add", {*df, *ab});
      auto sp = succeeded(sum) ? op1("Softplus", {*sum}) : sum;
      auto ea = op1("Exp", {*al});
      auto na = succeeded(ea) ? op1("Neg", {*ea}) : ea;
      if (failed(sp) || failed(na))
        return failure();
      auto gv = op1("Mul", {*na, *sp});
      if (failed(gv))
        return failure();
      d = *gv;
      if (getElementTypeOrSelf(d.getType()) != qt.getElementType()) {
        auto c =
            op1("Cast", {d},
                {b.getNamedAttr("to", TypeAttr::get(qt.getElementType()))});
        if (failed(c))
          return failure();
        d = *c;
      }
    }
    auto g3 = packed(d, perKey ? h * dk : h);
    if (failed(g3))
      return failure();
    g = *g3;
  }
  if (beta) {
    Value x = beta;
    if (betaAct == "sigmoid") {
      auto sg = op1("Sigmoid", {x});
      if (failed(sg))
        return failure();
      x = *sg;
    }
    auto b3 = packed(x, h);
    if (failed(b3))
      return failure();
    bt = *b3;
  }
  auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 1, 3, 2}));
  if (state) {
    auto st = op1("Transpose", {state}, {perm});
    if (failed(st))
      return failure();
    s0 = *st;
  }
  SmallVector<NamedAttribute> attrs{
      b.getNamedAttr("q_num_heads", i64(h)),
      b.getNamedAttr("kv_num_heads", i64(h)),
      b.getNamedAttr("update_rule", b.getStringAttr(rule)),
      b.getNamedAttr("scale", b.getF32FloatAttr(scale))};
  auto la = createOp("LinearAttention", {*q3, *k3, *v3, s0, g, bt}, attrs,
                     {true, true}, loc);
  if (failed(la))
    return failure();
  Value y = (*la)->getResult(0), fs = (*la)->getResult(1);
  auto yr = tokens ? op1("Reshape", {y, constI64({-1, h, dv}, loc)})
                   : op1("Reshape", {y, constI64({0, 0, h, dv}, loc)});
  auto fst = op1("Transpose", {fs}, {perm});
  if (failed(yr) || failed(fst))
    return failure();
  return mapOutputs(n, {*yr, *fst}, loc);
}

LogicalResult GraphImporter::importDefaultNode(::onnx::NodeProto &n,
                                               Location loc) {
  StringRef opType = n.op_type();
  const OpSpec *spec = findSpec(opType);
  if (!spec || !RegisteredOperationName::lookup(("onnx." + opType).str(), ctx))
    return emitError(loc) << "unsupported operator '" << opType << "'";

  // Inputs; an empty name is an absent optional input.
  SmallVector<Value> operands;
  for (const std::string &in : n.input()) {
    if (in.empty()) {
      operands.push_back(none());
      continue;
    }
    Value v = lookup(in);
    if (!v)
      return emitError(loc) << "input '" << in
                            << "' is not defined by any earlier node, graph "
                               "input or initializer";
    operands.push_back(v);
  }

  // Attributes, with opset-dependent ones moved to inputs below.
  RegisteredOperationName opName =
      *RegisteredOperationName::lookup(("onnx." + opType).str(), ctx);
  SmallVector<NamedAttribute> attrs;
  std::optional<SmallVector<int64_t>> movedAxes, movedSplit;
  std::optional<int64_t> oldSoftmaxAxis;
  Region body;
  for (::onnx::AttributeProto &a : *n.mutable_attribute()) {
    StringRef an = a.name();
    bool reduceAttrAxes =
        an == "axes" &&
        ((opType.starts_with("Reduce") && opType != "ReduceSum" &&
          opset < 18) ||
         (opType == "ReduceSum" && opset < 13) ||
         ((opType == "Squeeze" || opType == "Unsqueeze") && opset < 13));
    if (reduceAttrAxes) {
      movedAxes = SmallVector<int64_t>(a.ints().begin(), a.ints().end());
      continue;
    }
    if (opType == "Split" && an == "split" && opset < 13) {
      movedSplit = SmallVector<int64_t>(a.ints().begin(), a.ints().end());
      continue;
    }
    if ((opType == "Softmax" || opType == "LogSoftmax") && an == "axis" &&
        opset < 13) {
      oldSoftmaxAxis = a.i();
      continue;
    }
    if (opType == "Dropout" && an == "ratio" && opset < 12)
      continue; // inference: Dropout is the identity whatever the ratio
    if (a.type() == ::onnx::AttributeProto::GRAPH || a.has_g()) {
      if (opName.getStringRef() != "onnx.Scan" || an != "body")
        return emitError(loc)
               << "graph attribute '" << an << "' is not supported";
      if (failed(importSubgraph(*a.mutable_g(), body, loc,
                                scanBodyInputTypes(n, operands))))
        return failure();
      continue;
    }
    if (!llvm::is_contained(opName.getAttributeNames(), an))
      return emitError(loc) << "attribute '" << an
                            << "' is not supported by gatec's " << opType;
    auto attr = convertAttr(a, opType, loc);
    if (failed(attr))
      return failure();
    attrs.push_back(b.getNamedAttr(an, *attr));
  }
  if ((movedAxes || movedSplit) && operands.empty())
    return emitError(loc) << opType << " needs an input";
  if (movedAxes) {
    operands.resize(1);
    operands.push_back(constI64(*movedAxes, loc));
  }
  if (movedSplit) {
    operands.resize(1);
    operands.push_back(constI64(*movedSplit, loc));
  }

  if (spec->numInputs >= 0) {
    if ((int64_t)operands.size() > spec->numInputs)
      return emitError(loc) << opType << " takes at most " << spec->numInputs
                            << " inputs, the node has " << operands.size();
    while ((int64_t)operands.size() < spec->numInputs)
      operands.push_back(none());
  }
  int64_t numResults =
      spec->numOutputs >= 0 ? spec->numOutputs : n.output_size();
  if (n.output_size() > numResults)
    return emitError(loc) << opType << " has at most " << numResults
                          << " outputs, the node has " << n.output_size();
  SmallVector<bool> present;
  for (int64_t i = 0; i < numResults; ++i)
    present.push_back(i < n.output_size() && !n.output(i).empty());
  if (numResults > 0)
    present[0] = true;

  Operation *op;
  if (oldSoftmaxAxis ||
      ((opType == "Softmax" || opType == "LogSoftmax") && opset < 13)) {
    // Softmax-1..12: the input is coerced to 2-D at `axis` (default 1),
    // normalised over the second dimension, and reshaped back.
    int64_t axis = oldSoftmaxAxis.value_or(1);
    auto flat = createOp("Flatten", {operands[0]},
                         {b.getNamedAttr("axis", b.getI64IntegerAttr(axis))},
                         {true}, loc);
    if (failed(flat))
      return failure();
    auto sm =
        createOp(opType, {(*flat)->getResult(0)},
                 {b.getNamedAttr("axis", b.getI64IntegerAttr(1))}, {true}, loc);
    auto shape = createOp("Shape", {operands[0]}, {}, {true}, loc);
    if (failed(sm) || failed(shape))
      return failure();
    auto re = createOp("Reshape", {(*sm)->getResult(0), (*shape)->getResult(0)},
                       {}, {true}, loc);
    if (failed(re))
      return failure();
    op = *re;
  } else {
    auto created = createOp(opType, operands, attrs, present, loc, &body);
    if (failed(created))
      return failure();
    op = *created;
  }

  // Declared types (value_info, graph outputs) refine the inferred ones.
  for (int i = 0; i < n.output_size(); ++i) {
    const std::string &out = n.output(i);
    if (out.empty())
      continue;
    if (values.count(out))
      return emitError(loc) << "value '" << out << "' is produced twice";
    Value res = op->getResult(i);
    if (const ::onnx::ValueInfoProto *vi = lookupInfo(out);
        vi && vi->has_type()) {
      auto declared = typeOf(vi->type(), loc, "value '" + out + "'", nullptr);
      if (succeeded(declared)) {
        auto inferred = cast<TensorType>(res.getType());
        auto d = cast<TensorType>(*declared);
        if (d.getElementType() != inferred.getElementType())
          return emitError(loc) << "value '" << out << "' is declared " << d
                                << " but the node computes " << inferred;
        if (d.hasRank() && inferred.hasRank() && mainOutputs.contains(out) &&
            succeeded(verifyCompatibleShape(d, inferred))) {
          // A graph output declared static where the graph computes the dim
          // from a dynamic input (torch.onnx.export with `dynamic_axes`
          // naming only the inputs) has the run-time size, as in
          // onnxruntime: the declaration is not a promise the run keeps.
        } else if (d.hasRank() &&
                   (!inferred.hasRank() ||
                    succeeded(verifyCompatibleShape(d, inferred)))) {
          if (!inferred.hasRank() ||
              d.getNumDynamicDims() < inferred.getNumDynamicDims())
            res.setType(d);
        } else if (d.hasRank()) {
          return emitError(loc) << "value '" << out << "' is declared " << d
                                << " but the node computes " << inferred;
        }
      }
    }
    values[out] = res;
  }
  // A node of a Scan body sits in a region that no op holds yet (the Scan is
  // created once its body is imported). The dominance check of the node's
  // own regions (a Scan nested in that body) would walk up past that
  // region's missing parent op: leave it to the verification of the
  // outermost Scan, which covers every nested op.
  Operation *top = op;
  while (Operation *p = top->getParentOp())
    top = p;
  bool attached = isa<ModuleOp>(top);
  if ((attached || op->getNumRegions() == 0) && failed(verify(op)))
    return failure();
  return success();
}

LogicalResult GraphImporter::importNodes(::onnx::GraphProto &g) {
  for (int i = 0; i < g.node_size(); ++i)
    if (failed(importNode(*g.mutable_node(i), i)))
      return failure();
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::importMain(::onnx::GraphProto &g) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  b.setInsertionPointToEnd(module->getBody());

  for (const auto &vi : g.value_info())
    infos[vi.name()] = &vi;
  for (const auto &vi : g.output()) {
    infos[vi.name()] = &vi;
    mainOutputs.insert(vi.name());
  }
  llvm::StringSet<> initNames;
  for (const auto &t : g.initializer())
    initNames.insert(t.name());

  // Inputs and outputs have distinct, non-empty names: a value has one
  // definition (onnxruntime refuses a repeated input), and the model ABI
  // names each input and output once (the runtime refuses a library whose
  // signature repeats a name).
  for (bool inputs : {true, false}) {
    const auto &list = inputs ? g.input() : g.output();
    const char *kind = inputs ? "graph input" : "graph output";
    llvm::StringSet<> seen;
    for (auto [i, vi] : llvm::enumerate(list)) {
      if (vi.name().empty())
        return emitError(fileLoc()) << kind << " " << i << " has no name",
               nullptr;
      if (!seen.insert(vi.name()).second)
        return emitError(fileLoc())
                   << kind << " '" << vi.name() << "' is declared twice ("
                   << (inputs ? "inputs" : "outputs")
                   << " must have distinct names)",
               nullptr;
    }
  }

  // Graph inputs (those with an initializer are constants with a default:
  // IR version < 4 style; they are imported as constants).
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  for (const auto &in : g.input()) {
    if (initNames.contains(in.name()))
      continue;
    SmallVector<Attribute> dimParams;
    auto t = typeOf(in.type(), fileLoc(), "graph input '" + in.name() + "'",
                    &dimParams);
    if (failed(t))
      return nullptr;
    argTypes.push_back(*t);
    argNames.push_back(in.name());
    SmallVector<NamedAttribute> a{
        b.getNamedAttr("onnx.name", b.getStringAttr(in.name()))};
    if (!dimParams.empty())
      a.push_back(b.getNamedAttr("onnx.dim_params", b.getArrayAttr(dimParams)));
    argAttrs.push_back(b.getDictionaryAttr(a));
  }
  auto func = func::FuncOp::create(b, fileLoc(), "main_graph",
                                   b.getFunctionType(argTypes, {}));
  block = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    values[name] = block->getArgument(i);
    func.setArgAttrs(i, argAttrs[i]);
  }
  b.setInsertionPointToStart(block);
  if (failed(importInitializers(g)) || failed(importNodes(g)))
    return nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resAttrs;
  for (const auto &o : g.output()) {
    Value v = lookup(o.name());
    if (!v)
      return emitError(fileLoc()) << "graph output '" << o.name()
                                  << "' is not produced by any node",
             nullptr;
    SmallVector<Attribute> dimParams;
    if (o.has_type()) {
      auto t = typeOf(o.type(), fileLoc(), "graph output '" + o.name() + "'",
                      &dimParams);
      if (failed(t))
        return nullptr;
    }
    results.push_back(v);
    resultTypes.push_back(v.getType());
    SmallVector<NamedAttribute> a{
        b.getNamedAttr("onnx.name", b.getStringAttr(o.name()))};
    if (!dimParams.empty())
      a.push_back(b.getNamedAttr("onnx.dim_params", b.getArrayAttr(dimParams)));
    resAttrs.push_back(b.getDictionaryAttr(a));
  }
  b.setInsertionPointToEnd(block);
  func::ReturnOp::create(b, fileLoc(), results);
  func.setType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, a] : llvm::enumerate(resAttrs))
    func.setResultAttrs(i, a);
  if (failed(verify(*module)))
    return nullptr;
  return module;
}
} // namespace

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext *ctx, StringRef path,
                                      const ImportOptions &opts) {
  ctx->getOrLoadDialect<onnx::OnnxDialect>();
  ctx->getOrLoadDialect<func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(ctx, path, 0, 0);
  ::onnx::ModelProto model;
  std::string error;
  if (!importer::loadModel(path, model, error))
    return emitError(fileLoc) << error, nullptr;

  int64_t opset = -1;
  bool found = false;
  for (const auto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      if (found)
        return emitError(fileLoc) << "the model imports the default ONNX "
                                     "domain twice",
               nullptr;
      opset = o.version(), found = true;
    }
  if (!found)
    return emitError(fileLoc) << "the model imports no opset of the default "
                                 "ONNX domain",
           nullptr;
  if (opset < kMinOpset || opset > kMaxOpset)
    return emitError(fileLoc) << "opset " << opset
                              << " of the default ONNX domain is not "
                                 "supported (gatec supports "
                              << kMinOpset << " to " << kMaxOpset << ")",
           nullptr;
  if (!importer::expandLocalFunctions(model, error, opts.maxExpandedNodes))
    return emitError(fileLoc) << error, nullptr;

  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  importer::TensorImporter tensors(ctx, dir.str().str(),
                                   opts.inlineElementLimit);
  GraphImporter g(ctx, path, opset, tensors, nullptr);
  for (const auto &o : model.opset_import())
    g.domainOpsets[o.domain()] = o.version();
  // Diagnostics name the node; printing the op into each (also into the
  // ones the importer checks and discards) would cost O(graph) per op.
  bool printOp = ctx->shouldPrintOpOnDiagnostic();
  ctx->printOpOnDiagnostic(false);
  auto module = g.importMain(*model.mutable_graph());
  ctx->printOpOnDiagnostic(printOp);
  return module;
}

} // namespace gatec
