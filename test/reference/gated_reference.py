"""Reference semantics of the gated dialect, in numpy (float64).

One function per gated op, written from the op descriptions in
dialects/gated/GatedOps.td (not from gatec's code), so that tests can check
the seeds' worked examples against the documented maths now and the
compiled ops against it once they run.
"""
import numpy as np


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


GATE_ACT = {
    "sigmoid": sigmoid,
    "ns_sigmoid": lambda z: 0.5 + 0.5 * sigmoid(z),
    "silu": lambda z: z * sigmoid(z),
}


def _erf(x):
    from math import erf
    return np.vectorize(erf)(x)


GLU_ACT = {
    "sigmoid": sigmoid,
    "identity": lambda z: z,
    "relu": lambda z: np.maximum(z, 0.0),
    "gelu": lambda z: 0.5 * z * (1.0 + _erf(z / np.sqrt(2.0))),
    "gelu_tanh": lambda z: 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z ** 3))),
    "silu": lambda z: z * sigmoid(z),
}


def attention(q, k, v, scale, causal=False, mask=None, gate=None,
              gate_activation="sigmoid", gate_mode="multiply"):
    """gated.attention: q [B,Hq,T,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv]."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    k = np.repeat(k, rep, axis=1)  # query head h reads KV head h // rep
    v = np.repeat(v, rep, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    T, S = s.shape[-2:]
    if causal:
        s = np.where(np.arange(S)[None, :] > np.arange(T)[:, None], -np.inf, s)
    if mask is not None:
        mask = np.asarray(mask)
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = np.max(s, axis=-1, keepdims=True)
    e = np.where(np.isneginf(s), 0.0, np.exp(s - np.where(np.isneginf(m), 0.0, m)))
    z = e.sum(axis=-1, keepdims=True)
    p = np.where(z > 0, e / np.where(z > 0, z, 1.0), 0.0)  # fully masked row -> 0
    y = p @ v
    if gate is not None:
        a = GATE_ACT[gate_activation](np.asarray(gate, np.float64))
        y = y * a if gate_mode == "multiply" else y + a
    return y


def gate(x, g, activation="sigmoid", mode="multiply"):
    a = GATE_ACT[activation](np.asarray(g, np.float64))
    return x * a if mode == "multiply" else x + a


def glu(x, w, v, activation, w_bias=None, v_bias=None):
    x = np.asarray(x, np.float64)
    a, b = x @ np.asarray(w, np.float64), x @ np.asarray(v, np.float64)
    if w_bias is not None:
        a = a + np.asarray(w_bias, np.float64)
    if v_bias is not None:
        b = b + np.asarray(v_bias, np.float64)
    return GLU_ACT[activation](a) * b


def residual(kind, x, y, g=None):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    g = None if g is None else np.asarray(g, np.float64)
    return {
        "add": lambda: x + y,
        "input": lambda: sigmoid(g) * x + y,
        "output": lambda: x + sigmoid(g) * y,
        "highway": lambda: sigmoid(g) * x + (1 - sigmoid(g)) * y,
        "sigtanh": lambda: x + sigmoid(g) * np.tanh(y),
        "gru": lambda: (1 - sigmoid(g)) * x + sigmoid(g) * np.tanh(y),
        "tanh_scalar": lambda: x + np.tanh(g) * y,
        "rezero": lambda: x + g * y,
        "layerscale": lambda: x + g * y,
    }[kind]()


def rms_norm(x, w, epsilon, unit_offset=False):
    x = np.asarray(x, np.float64)
    n = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + epsilon)
    return n * (1 + np.asarray(w) if unit_offset else np.asarray(w))


def gated_rms_norm(x, w, z, epsilon, activation="silu"):
    """gated.rms_norm with a gate: rms_norm(x) ⊙ act(z) (Gated DeltaNet)."""
    return rms_norm(x, w, epsilon) * GATE_ACT[activation](np.asarray(z, np.float64))


def short_conv(x, b, c, w, bias=None):
    """gated.short_conv: c ⊙ causal_conv(b ⊙ x) over [N, C, T], w [C, 1, K]
    (LFM2's short conv; taps before the first token read 0)."""
    x, b, c = (np.asarray(a, np.float64) for a in (x, b, c))
    w = np.asarray(w, np.float64)
    N, C, T = x.shape
    K = w.shape[2]
    p = np.concatenate([np.zeros((N, C, K - 1)), b * x], axis=2)
    y = sum(w[None, :, 0, k, None] * p[:, :, k:k + T] for k in range(K))
    if bias is not None:
        y = y + np.asarray(bias, np.float64)[None, :, None]
    return c * y


def layer_norm(x, w, b, epsilon):
    x = np.asarray(x, np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + epsilon) * w
    return y if b is None else y + b


def router(logits, k, order="softmax_then_topk", normalisation="none"):
    """gated.router: logits [..., E] -> (weights [..., k], indices [..., k]).

    Per row the k largest logits, larger first, equal ones by the lower
    index (NaN the largest); weights by the order and normalisation."""
    l = np.asarray(logits, np.float64)
    rows = l.reshape(-1, l.shape[-1])
    idx = np.empty((rows.shape[0], k), np.int64)
    w = np.empty((rows.shape[0], k))
    for r, row in enumerate(rows):
        key = sorted(range(len(row)), key=lambda e: (
            0 if np.isnan(row[e]) else 1, -row[e] if not np.isnan(row[e]) else 0, e))
        sel = key[:k]
        idx[r] = sel
        m = np.max(row)
        e = np.exp(row - m)
        if order == "softmax_then_topk" and normalisation == "none":
            w[r] = e[sel] / e.sum()
        else:  # renormalised softmax over all = softmax over the selected
            w[r] = e[sel] / e[sel].sum()
    shape = l.shape[:-1] + (k,)
    return w.reshape(shape), idx.reshape(shape)


def linear_attention(q, k, v, rule, scale, decay=None, beta=None, state=None):
    """gated.linear_attention, token by token in float64.

    q [B,Hq,T,Dk], k [B,Hkv,T,Dk], v [B,Hkv,T,Dv]; decay (log space)
    [B,Hkv,T,Dk] or [B,Hkv,T,1]; beta [B,Hkv or 1,T,1]; state [B,Hkv,Dk,Dv].
    Returns (output [B,Hq,T,Dv], final state [B,Hkv,Dk,Dv]).
    """
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    B, Hq, T, Dk = q.shape
    Hkv, Dv = k.shape[1], v.shape[3]
    r = Hq // Hkv
    S = np.zeros((B, Hkv, Dk, Dv)) if state is None else np.array(state, np.float64)
    out = np.zeros((B, Hq, T, Dv))
    for b in range(B):
        for h in range(Hkv):
            s = S[b, h]
            for t in range(T):
                if rule in ("gated", "gated_delta"):
                    g = np.asarray(decay[b, h, t], np.float64)  # [Dk] or [1]
                    s = np.exp(g)[:, None] * s
                u = v[b, h, t]
                if rule in ("delta", "gated_delta"):
                    bt = float(beta[b, h if beta.shape[1] > 1 else 0, t, 0])
                    u = bt * (u - s.T @ k[b, h, t])
                s = s + np.outer(k[b, h, t], u)
                for j in range(r):
                    out[b, h * r + j, t] = scale * (s.T @ q[b, h * r + j, t])
            S[b, h] = s
    return out, S
