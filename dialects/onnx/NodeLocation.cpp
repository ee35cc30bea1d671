//===- NodeLocation.cpp - the ONNX node an op comes from ------------------===//
#include "dialects/onnx/NodeLocation.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace gatec {

Location makeNodeLoc(MLIRContext *ctx, StringRef file, StringRef name,
                     StringRef opType, int64_t opset) {
  Location fileLoc = FileLineColLoc::get(ctx, file, 0, 0);
  Location nameLoc = NameLoc::get(StringAttr::get(ctx, name), fileLoc);
  std::string desc = opType.str();
  if (opset > 0)
    desc += ", opset " + std::to_string(opset);
  return FusedLoc::get(ctx, {nameLoc}, StringAttr::get(ctx, desc));
}

namespace {
struct NodeInfo {
  std::string file, name, desc;
};

void collect(Location loc, NodeInfo &info) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    if (auto s = dyn_cast_or_null<StringAttr>(fused.getMetadata()))
      if (info.desc.empty())
        info.desc = s.str();
    for (Location l : fused.getLocations()) {
      collect(l, info);
      if (!info.name.empty())
        break;
    }
  } else if (auto name = dyn_cast<NameLoc>(loc)) {
    if (info.name.empty())
      info.name = name.getName().str();
    collect(name.getChildLoc(), info);
  } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    if (info.file.empty()) {
      info.file = file.getFilename().str();
      if (file.getLine() > 0)
        info.file += ":" + std::to_string(file.getLine()) + ":" +
                     std::to_string(file.getColumn());
    }
  } else if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    collect(call.getCallee(), info);
  }
}
} // namespace

std::string describeLocation(Location loc) {
  NodeInfo info;
  collect(loc, info);
  std::string out = info.file;
  if (!info.name.empty()) {
    if (!out.empty())
      out += ": ";
    if (info.desc == "initializer") {
      out += "initializer '" + info.name + "'";
    } else {
      out += "node '" + info.name + "'";
      if (!info.desc.empty())
        out += " (" + info.desc + ")";
    }
  }
  if (out.empty()) {
    llvm::raw_string_ostream os(out);
    loc.print(os);
  }
  return out;
}

std::string describeNode(Location loc) {
  NodeInfo info;
  collect(loc, info);
  if (info.name.empty())
    return describeLocation(loc);
  std::string out = (info.desc == "initializer" ? "initializer '" : "node '") +
                    info.name + "'";
  if (!info.desc.empty() && info.desc != "initializer")
    out += " (" + info.desc + ")";
  return out;
}

/// Where an op is, for a message: its ONNX node name, or file:line:col.
std::string describeOp(Location loc) {
  if (auto n = dyn_cast<NameLoc>(loc))
    return "node '" + n.getName().str() + "'";
  if (auto f = dyn_cast<FileLineColLoc>(loc))
    return (f.getFilename().str() + ":" + std::to_string(f.getLine()) + ":" +
            std::to_string(f.getColumn()));
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty())
    return describeOp(fused.getLocations().front());
  return "an unnamed op";
}

/// Initializer names recorded in a location (FusedLoc<"initializer">).
void initializersIn(Location loc, llvm::SetVector<StringRef> &names) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    auto md = dyn_cast_or_null<StringAttr>(fused.getMetadata());
    for (Location l : fused.getLocations()) {
      if (md && md.getValue() == "initializer")
        if (auto n = dyn_cast<NameLoc>(l))
          names.insert(n.getName().getValue());
      initializersIn(l, names);
    }
  } else if (auto n = dyn_cast<NameLoc>(loc)) {
    initializersIn(n.getChildLoc(), names);
  } else if (auto c = dyn_cast<CallSiteLoc>(loc)) {
    initializersIn(c.getCallee(), names);
  }
}

} // namespace gatec
