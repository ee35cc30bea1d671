//===- GateReport.cpp - the list of gates a model has ---------------------===//
#include "compiler/GateReport.h"

#include "compiler/support/Diagnostics.h"
#include "dialects/gated/GatedDialect.h"
#include "dialects/onnx/ConstantValues.h"
#include "dialects/onnx/OnnxDialect.h"
#include "llvm/Support/Format.h"
#include <cmath>

using namespace mlir;

namespace gatec {
namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

/// Where the gate's logits come from: a projection x·W (+ b).
struct Source {
  int64_t inFeatures = kDyn;     // W's rows (d)
  mutable onnx::ConstantOp bias; // b, if added or subtracted
  bool biasSubtracted = false;
};

/// Walks back from gate logits through layout ops and a bias to the
/// projection (a MatMul with a constant weight).
Source sourceOf(Value v) {
  Source s;
  for (int step = 0; step < 12 && v; ++step) {
    Operation *d = v.getDefiningOp();
    if (!d)
      break;
    if (auto mm = dyn_cast<onnx::MatMulOp>(d)) {
      if (auto t = dyn_cast<RankedTensorType>(mm.getB().getType());
          t && t.getRank() == 2 && onnx::getConstantAttr(mm.getB()))
        s.inFeatures = t.getDimSize(0);
      break;
    }
    if (auto g = dyn_cast<onnx::GemmOp>(d)) {
      // nn.Linear as the dynamo exporter writes it: x·Bᵀ (transB) + C.
      auto t = dyn_cast<RankedTensorType>(g.getB().getType());
      if (t && t.getRank() == 2 && !g.getTransA() &&
          onnx::getConstantAttr(g.getB()))
        s.inFeatures = t.getDimSize(g.getTransB() ? 1 : 0);
      if (auto c = g.getC().getDefiningOp<onnx::ConstantOp>())
        s.bias = c;
      break;
    }
    if (isa<onnx::AddOp, onnx::SubOp>(d)) {
      Value a = d->getOperand(0), b = d->getOperand(1);
      // W·y + U·x: the gate reads two projections (GRU-type gates).
      auto mmA = a.getDefiningOp<onnx::MatMulOp>();
      auto mmB = b.getDefiningOp<onnx::MatMulOp>();
      if (mmA && mmB && isa<onnx::AddOp>(d)) {
        Source sa = sourceOf(a), sb = sourceOf(b);
        if (sa.inFeatures != kDyn && sb.inFeatures != kDyn)
          s.inFeatures = sa.inFeatures + sb.inFeatures;
        break;
      }
      if (auto c = b.getDefiningOp<onnx::ConstantOp>()) {
        s.bias = c, s.biasSubtracted = isa<onnx::SubOp>(d);
        v = a;
        continue;
      }
      if (auto c = a.getDefiningOp<onnx::ConstantOp>();
          c && isa<onnx::AddOp>(d)) {
        s.bias = c;
        v = b;
        continue;
      }
      break;
    }
    if (isa<onnx::ReshapeOp, onnx::TransposeOp, onnx::SliceOp, onnx::SplitOp,
            onnx::SqueezeOp, onnx::UnsqueezeOp>(d)) {
      v = d->getOperand(0);
      continue;
    }
    break;
  }
  return s;
}

/// Gate values per token: the product of the dims after batch and
/// sequence ([B, H, T, X] for G1: H·X).
int64_t widthPerToken(Value gate, bool g1) {
  auto t = dyn_cast<RankedTensorType>(gate.getType());
  if (!t)
    return kDyn;
  auto shape = t.getShape();
  int64_t w = 1;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    bool tokenDim =
        g1 ? (i == 0 || i == 2) : (t.getRank() >= 3 ? i < 2 : i < 1);
    if (tokenDim)
      continue;
    if (shape[i] == kDyn)
      return kDyn;
    w *= shape[i];
  }
  return w;
}

std::string summarize(onnx::ConstantOp c, bool tanhOf = false) {
  auto vals = onnx::getConstantDoubles(c.getResult());
  std::string out;
  llvm::raw_string_ostream os(out);
  if (!vals || vals->empty()) {
    os << c.getValue().getNumElements() << " values";
    return out;
  }
  auto show = [&](double x) { os << llvm::format("%.4g", x); };
  if (vals->size() == 1) {
    show((*vals)[0]);
    if (tanhOf) {
      os << " (tanh = ";
      show(std::tanh((*vals)[0]));
      os << ")";
    }
    return out;
  }
  double mn = (*vals)[0], mx = mn, sum = 0;
  for (double x : *vals)
    mn = std::min(mn, x), mx = std::max(mx, x), sum += x;
  os << vals->size() << " values, mean ";
  show(sum / vals->size());
  os << " [";
  show(mn);
  os << ", ";
  show(mx);
  os << "]";
  return out;
}

struct Row {
  std::string where, placement, granularity, activation, params, value;
};

std::string paramText(const Source &s, int64_t width) {
  if (s.inFeatures == kDyn || width == kDyn)
    return "?";
  int64_t n = s.inFeatures * width;
  int64_t b = s.bias ? s.bias.getValue().getNumElements() : 0;
  std::string out = std::to_string(n + b);
  if (b)
    out += " (" + std::to_string(n) + " + " + std::to_string(b) + " bias)";
  return out;
}

std::string biasText(const Source &s) {
  if (!s.bias)
    return "no bias";
  return std::string(s.biasSubtracted ? "b_g (subtracted): " : "bias: ") +
         summarize(s.bias);
}
} // namespace

void printGateReport(ModuleOp module, llvm::raw_ostream &os) {
  SmallVector<Row> rows;
  // The output gate of a gated RMSNorm (its own op, or fused into the
  // linear attention whose rows it normalises).
  auto normGate = [](Value gate, gated::GateActivation act, Location loc,
                     bool first = false) {
    Row r;
    r.where = describeLocation(loc);
    Source s = sourceOf(gate);
    r.placement = first ? "gated RMSNorm input (norm(x * act(z)))"
                        : "gated RMSNorm output (norm(x) * act(z))";
    r.granularity = "elementwise";
    r.activation = gated::stringifyGateActivation(act).str();
    r.params = paramText(s, widthPerToken(gate, false));
    r.value = biasText(s);
    return r;
  };
  module.walk([&](Operation *op) {
    Row r;
    r.where = describeLocation(op->getLoc());
    if (auto sc = dyn_cast<gated::ShortConvOp>(op)) {
      // Two gates around a causal depthwise conv (LFM2).
      auto w = dyn_cast<RankedTensorType>(sc.getWeight().getType());
      r.placement = "short conv (B·x, C·conv)";
      r.granularity = "elementwise (per channel and token)";
      r.activation = "none (b before and c after a causal depthwise conv of " +
                     (w ? std::to_string(w.getDimSize(2)) : std::string("?")) +
                     " taps)";
      r.params = "computed (chunks of the input projection)";
      r.value = sc.getBias() ? "conv bias" : "no bias";
    } else if (auto n = dyn_cast<gated::RMSNormOp>(op)) {
      if (!n.getGate())
        return;
      r = normGate(n.getGate(), *n.getGateActivation(), op->getLoc(),
                   (bool)n.getGateFirst());
    } else if (auto a = dyn_cast<gated::AttentionOp>(op)) {
      if (!a.getGate())
        return;
      Source s = sourceOf(a.getGate());
      r.placement = "G1 (attention output)";
      r.granularity =
          gated::stringifyGateGranularity(*a.getGateGranularity()).str();
      r.activation =
          gated::stringifyGateActivation(*a.getGateActivation()).str();
      if (*a.getGateMode() == gated::GateMode::add)
        r.activation += ", additive";
      r.params = paramText(s, widthPerToken(a.getGate(), true));
      r.value = biasText(s);
    } else if (auto g = dyn_cast<gated::GateOp>(op)) {
      static const char *what[] = {"",    "",      "value",
                                   "key", "query", "dense output"};
      Source s = sourceOf(g.getGate());
      bool shared = g.getPlacement() == gated::GatePlacement::shared_expert;
      r.placement =
          shared ? std::string("shared expert (MoE)")
                 : gated::stringifyGatePlacement(g.getPlacement()).str() +
                       " (" + what[(int)g.getPlacement()] + ")";
      auto gt = dyn_cast<RankedTensorType>(g.getGate().getType());
      auto xt = dyn_cast<RankedTensorType>(g.getX().getType());
      r.granularity = gt && xt && gt.getShape() == xt.getShape() ? "elementwise"
                      : shared                                   ? "per token"
                                                                 : "headwise";
      r.activation = gated::stringifyGateActivation(g.getActivation()).str();
      r.params = paramText(s, widthPerToken(g.getGate(), false));
      r.value = biasText(s);
    } else if (auto glu = dyn_cast<gated::GluOp>(op)) {
      static const char *names[] = {"GLU",   "bilinear",     "ReGLU",
                                    "GEGLU", "GEGLU (tanh)", "SwiGLU"};
      auto w = dyn_cast<RankedTensorType>(glu.getW().getType());
      r.placement =
          std::string("FFN (") + names[(int)glu.getActivation()] + ")";
      r.granularity = "elementwise (per channel)";
      r.activation = gated::stringifyGluActivation(glu.getActivation()).str();
      r.params = w && w.hasStaticShape()
                     ? std::to_string(w.getNumElements()) + " (gate branch W)"
                     : "?";
      r.value = glu.getWBias() && glu.getVBias() ? "biases (gate and up)"
                : glu.getWBias()                 ? "bias (gate)"
                : glu.getVBias()                 ? "bias (up)"
                                                 : "no bias";
    } else if (auto eg = dyn_cast<gated::ExpertGluOp>(op)) {
      static const char *names[] = {"GLU",   "bilinear",     "ReGLU",
                                    "GEGLU", "GEGLU (tanh)", "SwiGLU"};
      auto w = dyn_cast<RankedTensorType>(eg.getW().getType());
      auto e = dyn_cast<RankedTensorType>(eg.getExpert().getType());
      float alpha = eg.getAlpha().convertToFloat();
      float offset = eg.getUpOffset().convertToFloat();
      bool clamped = eg.getLimit() || alpha != 1.0f || offset != 0.0f;
      r.placement = std::string("MoE experts (") +
                    names[(int)eg.getActivation()] +
                    (clamped ? ", clamped" : "") + ")";
      std::string experts = w && !w.isDynamicDim(0)
                                ? std::to_string(w.getDimSize(0))
                                : std::string("?");
      r.granularity = "elementwise (per channel), " +
                      (e && e.getRank() == 1
                           ? experts + " experts, each row its router's pick"
                           : "one of " + experts + " experts per loop step");
      r.activation = gated::stringifyGluActivation(eg.getActivation()).str();
      if (clamped) {
        llvm::raw_string_ostream a(r.activation);
        a << " (alpha " << llvm::format("%g", alpha);
        if (eg.getLimit())
          a << ", limit "
            << llvm::format("%g", eg.getLimit()->convertToFloat());
        a << ", up + " << llvm::format("%g", offset) << ")";
      }
      r.params = w && w.hasStaticShape() ? std::to_string(w.getNumElements()) +
                                               " (gate branch W of all experts)"
                                         : "?";
      r.value = eg.getWBias() ? "bias per expert" : "no bias";
    } else if (auto router = dyn_cast<gated::RouterOp>(op)) {
      // A gate over experts: per token, the top k of E and their weights.
      auto l = dyn_cast<RankedTensorType>(router.getLogits().getType());
      int64_t experts = l ? l.getDimSize(l.getRank() - 1) : kDyn;
      Source s = sourceOf(router.getLogits());
      r.placement = "MoE router (gate over experts)";
      r.granularity = (experts == kDyn ? "?" : std::to_string(experts)) +
                      " experts, top-" + std::to_string(router.getK());
      bool renorm =
          router.getNormalisation() == gated::RouterNormalisation::renormalise;
      r.activation = router.getOrder() == gated::RouterOrder::softmax_then_topk
                         ? std::string("softmax, then top-k") +
                               (renorm ? ", renormalised" : "")
                         : "top-k, then softmax";
      r.params = paramText(s, experts);
      r.value = biasText(s);
    } else if (auto la = dyn_cast<gated::LinearAttentionOp>(op)) {
      // The decay gate of linear attention (and the delta rule's β): a
      // state S [Dk, Dv] per KV head multiplied by exp(g) at every token.
      if (!la.getDecay() && !la.getBeta())
        return;
      auto d = la.getDecay()
                   ? dyn_cast<RankedTensorType>(la.getDecay().getType())
                   : RankedTensorType();
      auto k = dyn_cast<RankedTensorType>(la.getKey().getType());
      bool bshd = la.getBshd() && !la.getBshd()->empty();
      int64_t heads = k ? k.getDimSize(bshd ? 2 : 1) : kDyn;
      r.placement =
          "decay (linear attention, " +
          gated::stringifyLinearAttentionRule(la.getUpdateRule()).str() + ")";
      r.granularity =
          (heads == kDyn ? std::string("?") : std::to_string(heads)) +
          " heads, " +
          (!d                         ? "no decay"
           : d.getShape().back() == 1 ? "a scalar per head and token"
                                      : "per key channel and token");
      r.activation = std::string(d ? "exp (log-space decay)" : "") +
                     (d && la.getBeta() ? ", " : "") +
                     (la.getBeta() ? "beta (update rate)" : "");
      r.params = "computed";
      auto ks = k ? k.getShape() : ArrayRef<int64_t>();
      auto v = dyn_cast<RankedTensorType>(la.getValue().getType());
      r.value = ks.size() == 4 && v && v.getRank() == 4
                    ? "state " + std::to_string(ks.back()) + "x" +
                          std::to_string(v.getShape().back()) + " per head"
                    : "state per head";
      if (la.getNormGate()) {
        rows.push_back(r);
        r = normGate(la.getNormGate(), *la.getNormGateActivation(),
                     op->getLoc());
      }
    } else if (auto res = dyn_cast<gated::ResidualOp>(op)) {
      gated::ResidualKind k = res.getKind();
      if (k == gated::ResidualKind::add)
        return;
      r.placement = "residual (" + gated::stringifyResidualKind(k).str() + ")";
      auto c = res.getGate() ? res.getGate().getDefiningOp<onnx::ConstantOp>()
                             : onnx::ConstantOp();
      switch (k) {
      case gated::ResidualKind::tanh_scalar:
      case gated::ResidualKind::rezero:
      case gated::ResidualKind::layerscale:
        r.granularity =
            k == gated::ResidualKind::layerscale ? "per channel" : "scalar";
        r.activation = k == gated::ResidualKind::tanh_scalar ? "tanh" : "none";
        r.params = c ? std::to_string(c.getValue().getNumElements()) : "?";
        r.value =
            c ? "value: " + summarize(c, k == gated::ResidualKind::tanh_scalar)
              : "computed";
        break;
      default: {
        Source s = sourceOf(res.getGate());
        r.granularity = "elementwise";
        r.activation = "sigmoid";
        r.params = paramText(s, widthPerToken(res.getGate(), false));
        r.value = biasText(s);
      }
      }
    } else {
      return;
    }
    rows.push_back(r);
  });
  os << "gates: " << rows.size() << "\n";
  int i = 0;
  for (const Row &r : rows) {
    os << llvm::format("%3d  ", ++i) << r.placement << " | " << r.granularity
       << " | " << r.activation << " | params " << r.params << " | " << r.value
       << "\n     at " << r.where << "\n";
  }
}

} // namespace gatec
