//===- FunctionExpansion.cpp - inline model-local ONNX functions ----------===//
//
// ONNX IR spec, "Functions": a node whose (domain, op_type[, overload])
// names a FunctionProto of model.functions is a call; its meaning is the
// function body with the formal inputs/outputs bound to the node's, and
// attribute references (AttributeProto.ref_attr_name) replaced by the call's
// attribute of that name or the function's default (attribute_proto).
//
//===----------------------------------------------------------------------===//
#include "compiler/importer/ImporterInternal.h"

#include <google/protobuf/unknown_field_set.h>
#include <map>

namespace gatec::importer {
namespace {
using Key = std::tuple<std::string, std::string, std::string>;

// Debian's libonnx is ONNX 1.12, whose onnx.proto predates two fields that
// current exporters write: NodeProto.overload (8), FunctionProto.overload
// (13) and FunctionProto.attribute_proto (11). Protobuf keeps them as unknown
// fields; read them from there.
const google::protobuf::UnknownFieldSet &
unknown(const google::protobuf::Message &m) {
  return m.GetReflection()->GetUnknownFields(m);
}

std::string unknownString(const google::protobuf::Message &m, int number) {
  const auto &u = unknown(m);
  for (int i = 0; i < u.field_count(); ++i)
    if (u.field(i).number() == number &&
        u.field(i).type() ==
            google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      return u.field(i).length_delimited();
  return "";
}

std::vector<::onnx::AttributeProto>
attributeDefaults(const ::onnx::FunctionProto &f) {
  std::vector<::onnx::AttributeProto> out;
  const auto &u = unknown(f);
  for (int i = 0; i < u.field_count(); ++i)
    if (u.field(i).number() == 11 &&
        u.field(i).type() ==
            google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      ::onnx::AttributeProto a;
      if (a.ParseFromString(u.field(i).length_delimited()))
        out.push_back(std::move(a));
    }
  return out;
}

struct Expander {
  std::map<Key, const ::onnx::FunctionProto *> functions;
  std::string error;
  int depth = 0;
  /// Nodes produced so far: a call tree can expand exponentially (F_n
  /// calling F_{n-1} twice), so the total is bounded too.
  int64_t produced = 0;
  int64_t maxNodes = 0;

  const ::onnx::FunctionProto *lookup(const ::onnx::NodeProto &n) {
    auto it = functions.find({n.domain(), n.op_type(), unknownString(n, 8)});
    return it == functions.end() ? nullptr : it->second;
  }

  /// Expands the calls in `nodes`, writing the result to `out`.
  bool expandNodes(
      const google::protobuf::RepeatedPtrField<::onnx::NodeProto> &nodes,
      google::protobuf::RepeatedPtrField<::onnx::NodeProto> &out) {
    for (const ::onnx::NodeProto &n : nodes) {
      const ::onnx::FunctionProto *f = lookup(n);
      if (++produced > maxNodes) {
        error = "expanding the model's functions gives more than " +
                std::to_string(maxNodes) + " nodes";
        return false;
      }
      if (!f) {
        ::onnx::NodeProto *copy = out.Add();
        *copy = n;
        if (!expandSubgraphs(*copy))
          return false;
        continue;
      }
      if (++depth > 64) {
        error = "node '" + n.name() + "': function '" + n.op_type() +
                "' is recursive (expansion deeper than 64)";
        return false;
      }
      google::protobuf::RepeatedPtrField<::onnx::NodeProto> body;
      if (!instantiate(n, *f, body) || !expandNodes(body, out))
        return false;
      --depth;
    }
    return true;
  }

  bool expandSubgraphs(::onnx::NodeProto &n) {
    for (::onnx::AttributeProto &a : *n.mutable_attribute()) {
      if (a.has_g() && !expandGraph(*a.mutable_g()))
        return false;
      for (::onnx::GraphProto &g : *a.mutable_graphs())
        if (!expandGraph(g))
          return false;
    }
    return true;
  }

  bool expandGraph(::onnx::GraphProto &g) {
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> out;
    if (!expandNodes(g.node(), out))
      return false;
    g.mutable_node()->Swap(&out);
    return true;
  }

  /// The body of `f` bound to the call `call`.
  bool
  instantiate(const ::onnx::NodeProto &call, const ::onnx::FunctionProto &f,
              google::protobuf::RepeatedPtrField<::onnx::NodeProto> &body) {
    std::string prefix =
        (call.name().empty() ? call.op_type() : call.name()) + "/";
    std::map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i)
      rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f.output_size(); ++i)
      rename[f.output(i)] = i < call.output_size() ? call.output(i) : "";
    auto mapName = [&](const std::string &v) -> std::string {
      if (v.empty())
        return v;
      auto it = rename.find(v);
      if (it != rename.end())
        return it->second;
      return rename[v] = prefix + v;
    };
    std::map<std::string, const ::onnx::AttributeProto *> actual, defaults;
    for (const auto &a : call.attribute())
      actual[a.name()] = &a;
    std::vector<::onnx::AttributeProto> defaultList = attributeDefaults(f);
    for (const auto &a : defaultList)
      defaults[a.name()] = &a;
    for (const ::onnx::NodeProto &fn : f.node()) {
      ::onnx::NodeProto *n = body.Add();
      *n = fn;
      n->set_name(prefix + (fn.name().empty() ? fn.op_type() : fn.name()));
      for (std::string &in : *n->mutable_input())
        in = mapName(in);
      for (std::string &o : *n->mutable_output())
        o = mapName(o);
      google::protobuf::RepeatedPtrField<::onnx::AttributeProto> attrs;
      for (const ::onnx::AttributeProto &a : fn.attribute()) {
        if (a.ref_attr_name().empty()) {
          *attrs.Add() = a;
          continue;
        }
        const ::onnx::AttributeProto *src = nullptr;
        if (auto it = actual.find(a.ref_attr_name()); it != actual.end())
          src = it->second;
        else if (auto it = defaults.find(a.ref_attr_name());
                 it != defaults.end())
          src = it->second;
        if (!src)
          continue; // unset: the inner op's own default applies
        ::onnx::AttributeProto *copy = attrs.Add();
        *copy = *src;
        copy->set_name(a.name());
      }
      n->mutable_attribute()->Swap(&attrs);
    }
    return true;
  }
};
} // namespace

bool expandLocalFunctions(::onnx::ModelProto &model, std::string &error,
                          int64_t maxNodes) {
  if (model.functions_size() == 0)
    return true;
  Expander ex;
  ex.maxNodes = maxNodes;
  for (const ::onnx::FunctionProto &f : model.functions())
    ex.functions[{f.domain(), f.name(), unknownString(f, 13)}] = &f;
  if (!ex.expandGraph(*model.mutable_graph())) {
    error = ex.error;
    return false;
  }
  return true;
}

} // namespace gatec::importer
