#!/usr/bin/python3
"""gen_attention_fixtures.py — writes tests/fixtures/attention.tgf: PyTorch golden values for tg_attention and
tg_flash_attention (tests/test_attention.c): causal with a query offset, sliding window, attention sinks, GQA, bool
and additive masks, scale, and the gradients w.r.t. q, k, v and the sinks.
Run with Debian's python (python3-torch 1.13, numpy):   /usr/bin/python3 tools/gen_attention_fixtures.py

The file format is gen_fixtures.py's (tests/fixture.h reads it): "TGFX" u32:version(=1) u32:ncases, each case
u32:nbytes str:name str:op str:params f64:atol f64:rtol u32:flags u8:ninputs tensor* u8:noutputs tensor*, a tensor
str:view u8:dtype u8:ndim i64:shape[ndim] u64:nbytes bytes. float32 (code 11) and bool (code 0) are used.

Case "attention": params causal, start, window, scale (0: 1/sqrt(D)), sinks (0/1), mask (0 none, 1 bool, 2 float),
grad (0/1). Inputs q (B,H,T,D), k, v (B,KVH,S,D|Dv), then sinks (H,) when sinks=1, the mask when mask>0, and dout
(B,H,T,Dv) when grad=1. Outputs: out, then (grad=1) dq, dk, dv [, dsinks] of sum(out * dout).

The reference is written independently of the C code: k and v are repeated per query head (repeat_interleave, as
torch's enable_gqa), the causal/window rule is a masked_fill of the (T, S) scores, and a sink is an extra score column
that is softmaxed with the keys and dropped. It is computed in float64 and stored as float32. Deterministic.
"""
import os, struct
import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "attention.tgf")
BOOL, F32 = 0, 11
cases = []


def s(x: str) -> bytes:
  b = x.encode()
  return struct.pack("<H", len(b)) + b


def tensor(t) -> bytes:
  a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
  if a.dtype == np.bool_: a, code = a.astype(np.uint8), BOOL
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


def main():
  build()
  with open(OUT, "wb") as f:
    f.write(b"TGFX" + struct.pack("<II", 1, len(cases)) + b"".join(cases))
  print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)}")


if __name__ == "__main__":
  main()
