#!/usr/bin/python3
"""gen_attention_fixtures.py — writes tests/fixtures/attention.tgf: PyTorch golden values for tg_attention and
tg_flash_attention (tests/test_attention.c): causal with a query offset, sliding window, attention sinks, GQA, bool
and additive masks, scale, and the gradients w.r.t. q, k, v and the sinks; and tests/fixtures/moe.tgf: tg_topk,
the MoE router and tg_moe_ffn.
Run with Debian's python (python3-torch 1.13, numpy):   /usr/bin/python3 tools/gen_attention_fixtures.py

The file format is gen_fixtures.py's (tests/fixture.h reads it): "TGFX" u32:version(=1) u32:ncases, each case
u32:nbytes str:name str:op str:params f64:atol f64:rtol u32:flags u8:ninputs tensor* u8:noutputs tensor*, a tensor
str:view u8:dtype u8:ndim i64:shape[ndim] u64:nbytes bytes. float32 (code 11), int64 (7) and bool (0) are used.

Case "attention": params causal, start, window, scale (0: 1/sqrt(D)), sinks (0/1), mask (0 none, 1 bool, 2 float),
grad (0/1). Inputs q (B,H,T,D), k, v (B,KVH,S,D|Dv), then sinks (H,) when sinks=1, the mask when mask>0, and dout
(B,H,T,Dv) when grad=1. Outputs: out, then (grad=1) dq, dk, dv [, dsinks] of sum(out * dout).

The reference is written independently of the C code: k and v are repeated per query head (repeat_interleave, as
torch's enable_gqa), the causal/window rule is a masked_fill of the (T, S) scores, and a sink is an extra score column
that is softmaxed with the keys and dropped. It is computed in float64 and stored as float32. Deterministic.

moe.tgf cases:
  "topk"    params k, axis, largest; input x; outputs values, indices. The reference is torch's stable sort
            (torch.sort(stable=True)): equal elements in index order, tinygrad's topk semantics (torch.topk gives the
            same values, asserted here, but its order among equal values is unspecified).
  "router"  params k, gating (0 softmax over the top-k logits, 1 softmax then top-k, 2 sigmoid, 3 sqrt-softplus),
            normalize, scale, select_bias (0/1); inputs logits [, select_bias (E,)]; outputs probs, sel.
  "moe_ffn" params k, gating, normalize, act (0 swiglu, 1 gpt-oss clamped swiglu: alpha 1.702, limit 7), biases
            (0/1); inputs x (T, D), router_w (E, D), gate_w, up_w (E, H, D), down_w (E, D, H) [, router_bias (E,),
            the gate and up biases stacked (E, 2, H), down_bias (E, D)]; output (T, D). The reference loops over tokens and their
            chosen experts one by one.
"""
import os, struct
import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "attention.tgf")
MOE_OUT = os.path.join(os.path.dirname(OUT), "moe.tgf")
BOOL, I64, F32 = 0, 7, 11
cases = []


def s(x: str) -> bytes:
  b = x.encode()
  return struct.pack("<H", len(b)) + b


def tensor(t) -> bytes:
  a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
  if a.dtype == np.bool_: a, code = a.astype(np.uint8), BOOL
  elif a.dtype.kind in "iu": a, code = a.astype("<i8"), I64
  else: a, code = a.astype("<f4"), F32
  a = np.array(a, order="C", copy=True)
  return s("") + struct.pack("<BB", code, a.ndim) + b"".join(struct.pack("<q", d) for d in a.shape) + \
      struct.pack("<Q", a.nbytes) + a.tobytes()


def add(name, op, params, inputs, outputs, atol=2e-5, rtol=2e-4):
  p = ";".join(f"{k}={v}" for k, v in params.items())
  body = s(name) + s(op) + s(p) + struct.pack("<ddI", atol, rtol, 0)
  body += struct.pack("<B", len(inputs)) + b"".join(tensor(t) for t in inputs)
  body += struct.pack("<B", len(outputs)) + b"".join(tensor(t) for t in outputs)
  cases.append(struct.pack("<I", len(body)) + body)


def r(*shape, seed, lo=-2.0, hi=2.0):
  """float32 values (the stored inputs), returned as float64 for the reference"""
  return torch.tensor(np.random.RandomState(seed).uniform(lo, hi, size=shape).astype(np.float32), dtype=torch.float64)


def ref_attention(q, k, v, causal, start, window, scale, sinks, mask):
  B, H, T, D = q.shape
  S, G = k.shape[2], H // k.shape[1]
  k2, v2 = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)
  sc = (q @ k2.transpose(-1, -2)) * (scale if scale else 1 / np.sqrt(D))
  if causal:
    qp = start + torch.arange(T)[:, None]
    kp = torch.arange(S)[None, :]
    ok = kp <= qp
    if window: ok &= kp > qp - window
    sc = sc.masked_fill(~ok, float("-inf"))
  if mask is not None:
    sc = sc.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else sc + mask
  if sinks is not None:
    col = sinks.reshape(1, H, 1, 1).expand(B, H, T, 1)
    p = torch.softmax(torch.cat([sc, col], -1), -1)[..., :-1]
  else:
    p = torch.softmax(sc, -1)
  return p @ v2


def attention_case(name, b, h, kvh, t, sl, d, dv=None, causal=0, start=0, window=0, scale=0.0, sinks=0, mask=0,
                   mask_shape=None, grad=0, seed=0):
  dv = dv or d
  q, k, v = r(b, h, t, d, seed=seed), r(b, kvh, sl, d, seed=seed + 1), r(b, kvh, sl, dv, seed=seed + 2)
  ins = [q, k, v]
  sk = m = None
  if sinks:
    sk = r(h, seed=seed + 3, lo=-1.0, hi=3.0)
    ins.append(sk)
  if mask:
    ms = mask_shape or (t, sl)
    if mask == 1:
      m = torch.tensor(np.random.RandomState(seed + 4).rand(*ms) > 0.35)
      m[..., 0] = True  # every query keeps key 0 (visible under causal): no row is fully masked
    else:
      m = r(*ms, seed=seed + 4, lo=-3.0, hi=1.0)
    ins.append(m)
  params = {"causal": causal, "start": start, "window": window, "scale": repr(float(scale)), "sinks": sinks,
            "mask": mask, "grad": grad}
  if not grad:
    out = ref_attention(q, k, v, causal, start, window, scale, sk, m)
    add(name, "attention", params, ins, [out])
    return
  leaves = [x.clone().requires_grad_(True) for x in ([q, k, v] + ([sk] if sinks else []))]
  out = ref_attention(leaves[0], leaves[1], leaves[2], causal, start, window, scale, leaves[3] if sinks else None, m)
  dout = r(*out.shape, seed=seed + 5)
  (out * dout).sum().backward()
  add(name, "attention", params, ins + [dout], [out] + [x.grad for x in leaves], atol=5e-5, rtol=5e-4)


def build():
  attention_case("plain", 2, 2, 2, 5, 7, 8, seed=100)
  attention_case("causal", 1, 2, 2, 6, 6, 8, causal=1, seed=110)
  attention_case("causal_offset", 2, 2, 2, 3, 8, 4, causal=1, start=5, seed=120)
  attention_case("decode", 1, 4, 4, 1, 9, 8, causal=1, start=8, seed=130)
  attention_case("decode_long", 1, 2, 1, 1, 300, 16, causal=1, start=299, seed=135)
  attention_case("window", 1, 2, 2, 10, 10, 4, causal=1, window=3, seed=140)
  attention_case("window_offset", 1, 2, 2, 4, 12, 4, causal=1, start=8, window=5, seed=150)
  attention_case("window_long", 1, 1, 1, 40, 40, 8, causal=1, window=7, seed=155)
  attention_case("sinks", 2, 3, 3, 4, 6, 4, sinks=1, seed=160)
  attention_case("sinks_causal", 1, 2, 2, 5, 5, 8, causal=1, sinks=1, seed=170)
  attention_case("gqa", 2, 4, 2, 3, 5, 8, seed=180)
  attention_case("mqa_causal", 1, 6, 1, 4, 7, 4, causal=1, start=3, seed=190)
  attention_case("gptoss", 1, 4, 2, 6, 6, 8, causal=1, window=4, sinks=1, seed=200)
  attention_case("mask_bool", 2, 2, 2, 4, 6, 4, mask=1, mask_shape=(2, 1, 4, 6), seed=210)
  attention_case("mask_float", 1, 2, 2, 5, 5, 4, mask=2, seed=220)
  attention_case("mask_per_head", 1, 4, 2, 3, 6, 4, mask=2, mask_shape=(1, 4, 3, 6), seed=230)
  attention_case("mask_causal", 1, 2, 2, 4, 4, 4, causal=1, mask=1, mask_shape=(4, 4), seed=235)
  attention_case("scale", 1, 2, 2, 3, 4, 8, scale=0.3, seed=240)
  attention_case("value_dim", 1, 2, 1, 4, 5, 8, dv=3, causal=1, start=1, seed=250)
  attention_case("grad_plain", 1, 2, 2, 4, 5, 4, grad=1, seed=300)
  attention_case("grad_gptoss", 1, 4, 2, 6, 6, 4, causal=1, window=3, sinks=1, grad=1, seed=310)
  attention_case("grad_decode_sinks", 1, 2, 1, 2, 9, 4, causal=1, start=7, sinks=1, grad=1, seed=320)
  attention_case("grad_mask", 2, 2, 2, 3, 5, 4, mask=2, grad=1, seed=330)
  # few queries, a short window over many keys: tg_flash_attention's banded path (its own band of keys per block)
  attention_case("grad_window_band", 1, 4, 2, 2, 30, 4, causal=1, start=28, window=4, sinks=1, grad=1, seed=340)
  attention_case("window_band_prefill", 1, 2, 1, 12, 60, 4, causal=1, start=48, window=3, seed=350)


def topk_case(name, x, k, axis=-1, largest=1):
  v, i = torch.sort(x, dim=axis, descending=bool(largest), stable=True)
  v, i = v.narrow(axis, 0, k), i.narrow(axis, 0, k)
  tv, _ = torch.topk(x, k, dim=axis, largest=bool(largest))
  assert torch.equal(tv, v), name
  add(name, "topk", {"k": k, "axis": axis, "largest": largest}, [x], [v, i], atol=0, rtol=0)


def scores_of(logits, gating):
  return [lambda l: l, lambda l: torch.softmax(l, -1), torch.sigmoid,
          lambda l: torch.sqrt(torch.nn.functional.softplus(l))][gating](logits)


def ref_route(logits, k, gating, normalize, scale, select_bias):
  sc = scores_of(logits, gating)
  pick = sc if select_bias is None else sc + select_bias
  _, sel = torch.sort(pick, dim=-1, descending=True, stable=True)
  sel = sel[..., :k]
  probs = sc.gather(-1, sel)
  if gating == 0: probs = torch.softmax(probs, -1)
  if normalize: probs = probs / probs.sum(-1, keepdim=True)
  return probs * (scale if scale else 1.0), sel


def router_case(name, shape, k, gating, normalize=0, scale=0.0, select_bias=0, seed=0):
  logits = r(*shape, seed=seed, lo=-3, hi=3)
  ins = [logits]
  sb = None
  if select_bias:
    sb = r(shape[-1], seed=seed + 1, lo=-0.5, hi=0.5)
    ins.append(sb)
  probs, sel = ref_route(logits, k, gating, normalize, scale, sb)
  add(name, "router", {"k": k, "gating": gating, "normalize": normalize, "scale": repr(float(scale)),
                       "select_bias": select_bias}, ins, [probs, sel])


def moe_case(name, t, d, e, hd, k, gating=0, normalize=0, act=0, biases=0, seed=0):
  x, rw = r(t, d, seed=seed), r(e, d, seed=seed + 1, lo=-0.5, hi=0.5)
  gw, uw = r(e, hd, d, seed=seed + 2, lo=-0.8, hi=0.8), r(e, hd, d, seed=seed + 3, lo=-0.8, hi=0.8)
  dw = r(e, d, hd, seed=seed + 4, lo=-0.8, hi=0.8)
  ins = [x, rw, gw, uw, dw]
  rb = gb = ub = db = None
  if biases:
    rb, gb, ub, db = r(e, seed=seed + 5), r(e, hd, seed=seed + 6), r(e, hd, seed=seed + 7), r(e, d, seed=seed + 8)
    ins += [rb, torch.stack([gb, ub], 1), db]  # gate and up biases stacked: (E, 2, H) (8 tensors at most)
  logits = x @ rw.T + (rb if biases else 0)
  probs, sel = ref_route(logits, k, gating, normalize, 0.0, None)
  out = torch.zeros(t, d, dtype=torch.float64)
  for ti in range(t):
    for j in range(k):
      ex = int(sel[ti, j])
      g, u = gw[ex] @ x[ti], uw[ex] @ x[ti]
      if biases: g, u = g + gb[ex], u + ub[ex]
      if act == 1:
        g, u = g.clamp(max=7.0), u.clamp(-7.0, 7.0)
        a = g * torch.sigmoid(1.702 * g) * (u + 1)
      else:
        a = torch.nn.functional.silu(g) * u
      y = dw[ex] @ a + (db[ex] if biases else 0)
      out[ti] += probs[ti, j] * y
  add(name, "moe_ffn", {"k": k, "gating": gating, "normalize": normalize, "act": act, "biases": biases}, ins, [out],
      atol=5e-5, rtol=5e-4)


def build_moe():
  topk_case("topk_1d", r(10, seed=500), 3)
  topk_case("topk_rows", r(4, 9, seed=501), 4, axis=1)
  topk_case("topk_axis0", r(7, 3, 2, seed=502), 2, axis=0)
  topk_case("topk_smallest", r(3, 8, seed=503), 5, largest=0)
  ties = torch.tensor(np.random.RandomState(504).randint(0, 3, size=(5, 12)), dtype=torch.float64)
  topk_case("topk_ties", ties, 7)
  topk_case("topk_ties_smallest", ties, 6, largest=0)
  topk_case("topk_all", r(2, 6, seed=505), 6)
  topk_case("topk_ties_axis0", torch.tensor([[1., 2.], [3., 2.], [3., 2.], [0., 5.]], dtype=torch.float64), 3, axis=0)
  router_case("router_gptoss", (2, 3, 8), 2, 0, seed=600)
  router_case("router_softmax", (5, 16), 4, 1, seed=610)
  router_case("router_softmax_norm", (5, 16), 4, 1, normalize=1, seed=620)
  router_case("router_sigmoid_bias", (4, 12), 3, 2, normalize=1, scale=2.5, select_bias=1, seed=630)
  router_case("router_softplus", (3, 10), 2, 3, scale=0.5, seed=640)
  moe_case("moe_swiglu", 4, 8, 6, 12, 2, gating=1, normalize=1, seed=700)
  moe_case("moe_gptoss", 5, 8, 8, 6, 3, gating=0, act=1, biases=1, seed=710)
  moe_case("moe_decode", 1, 16, 32, 8, 4, gating=0, act=1, biases=1, seed=720)
  moe_case("moe_sigmoid", 3, 6, 5, 4, 1, gating=2, seed=730)


def write(path):
  with open(path, "wb") as f:
    f.write(b"TGFX" + struct.pack("<II", 1, len(cases)) + b"".join(cases))
  print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")


def main():
  build()
  write(OUT)
  cases.clear()
  build_moe()
  write(MOE_OUT)


if __name__ == "__main__":
  main()
