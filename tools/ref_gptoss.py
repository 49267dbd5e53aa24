#!/usr/bin/python3
"""ref_gptoss.py - the gpt-oss fixture of tests/test_llm.c: a tiny random-weight gpt-oss model as a GGUF file with the
logits of an independent PyTorch forward, in ref_llm.py's format (golden.tokens, golden.n_prompt, golden.logits).

Run with /usr/bin/python3 tools/ref_gptoss.py (Debian's python3-torch and numpy); it writes
tests/fixtures/llm/gptoss_tiny.gguf. The weights are drawn in the layout of OpenAI's reference checkpoint
(gpt_oss/torch/model.py: a fused qkv Linear with bias, per-head sinks, a router Linear with bias, mlp1 with the SwiGLU
gate and linear halves interleaved along its output rows, mlp2) and converted the way llama.cpp's converter stores
gpt-oss (attn_q/k/v split with their biases, attn_sinks, ffn_gate_inp, the interleaved rows of mlp1 split into
ffn_gate_exps / ffn_up_exps, experts quantized to MXFP4 with ggml's reference rounding: e = floor(log2(amax)) - 2 + 127,
each value the nearest of kvalues_mxfp4 * 2^(e-128), the first on ties). The forward follows OpenAI's reference, in
float64 on the values the file holds: RMSNorm, neox RoPE (chunked halves) with YaRN (NTK-by-parts ramp with beta 32,
alpha 1, unrounded; cos and sin times the concentration 0.1 ln(factor) + 1), attention with the sinks as an extra
logit column dropped after the softmax, a window on the even layers (mask k <= q - window), top-k router logits then
softmax over the k, swiglu with limit 7 and alpha 1.702 on the interleaved halves, biases everywhere.
Structured weights: one head's sink is large (the sink takes most of its mass) and one expert's router bias is large
(it is chosen by most tokens; the second choice varies).
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_llm import GT_ARR, GT_F32, GT_I32, GT_STR, GT_U32, OUTDIR, T_F32, write_gguf  # noqa: E402

T_MXFP4 = 39
KVALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float32)

def quant_mxfp4(x):
  """rows of x (..., k), k % 32 == 0 -> (bytes, dequantized) as ggml's quantize_row_mxfp4_ref"""
  b = x.reshape(-1, 32).astype(np.float32)
  amax = np.abs(b).max(axis=1)
  e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 2 + 127, 0).astype(np.int64)
  e = np.clip(e, 0, 255)
  d = np.ldexp(np.float32(1), (e - 128).astype(np.int32)).astype(np.float32)
  err = np.abs(KVALUES[None, None, :] * d[:, None, None] - b[:, :, None])  # (blocks, 32, 16), float32
  idx = err.argmin(axis=2).astype(np.uint8)                                 # the first of equal errors
  packed = (idx[:, :16] | (idx[:, 16:] << 4)).astype(np.uint8)
  raw = np.concatenate([e.astype(np.uint8)[:, None], packed], axis=1)
  deq = KVALUES[idx] * d[:, None]
  return raw.tobytes(), deq.reshape(x.shape).astype(np.float64)

# ---------------------------------------------------------------------------------------------- the reference forward

def rms_norm(x, w, eps):
  return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w

def rope_tables(cfg, n):
  """OpenAI's RotaryEmbedding._compute_concentration_and_inv_freq and _compute_cos_sin, in float64"""
  hd, base, factor, octx = cfg["head_dim"], cfg["rope_base"], cfg["yarn_factor"], cfg["yarn_ctx"]
  freq = base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
  concentration = 0.1 * math.log(factor) + 1.0
  d_half = hd / 2
  low = d_half * math.log(octx / (32.0 * 2 * math.pi)) / math.log(base)
  high = d_half * math.log(octx / (1.0 * 2 * math.pi)) / math.log(base)
  assert 0 < low < high < d_half - 1
  interpolation, extrapolation = 1.0 / (factor * freq), 1.0 / freq
  ramp = (torch.arange(d_half, dtype=torch.float64) - low) / (high - low)
  mask = 1 - ramp.clamp(0, 1)
  inv_freq = interpolation * (1 - mask) + extrapolation * mask
  f = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None, :]
  return f.cos() * concentration, f.sin() * concentration

def apply_rope(x, cos, sin):  # x (T, heads, hd); cos, sin (T, hd/2)
  cos, sin = cos[:, None, :], sin[:, None, :]
  x1, x2 = torch.chunk(x, 2, dim=-1)
  return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

def sdpa(Q, K, V, S, sm_scale, window):
  """OpenAI's sdpa: Q (T, nkv, rep, hd), K/V (T, nkv, hd), S (nkv*rep,) -> (T, nkv*rep*hd)"""
  T, nkv, rep, hd = Q.shape
  K, V = K[:, :, None, :].expand(-1, -1, rep, -1), V[:, :, None, :].expand(-1, -1, rep, -1)
  S = S.reshape(nkv, rep, 1, 1).expand(-1, -1, T, -1)
  mask = torch.triu(Q.new_full((T, T), -float("inf")), diagonal=1)
  if window > 0: mask += torch.tril(mask.new_full((T, T), -float("inf")), diagonal=-window)
  QK = torch.einsum("qhmd,khmd->hmqk", Q, K) * sm_scale + mask[None, None]
  W = torch.softmax(torch.cat([QK, S], dim=-1), dim=-1)[..., :-1]
  return torch.einsum("hmqk,khmd->qhmd", W, V).reshape(T, -1)

def swiglu(x, alpha=1.702, limit=7.0):
  x_glu, x_lin = x[..., ::2], x[..., 1::2]
  x_glu, x_lin = x_glu.clamp(min=None, max=limit), x_lin.clamp(min=-limit, max=limit)
  return x_glu * torch.sigmoid(alpha * x_glu) * (x_lin + 1)

def forward(cfg, W, tokens):
  """logits (T, vocab) of every position, float64"""
  T, nh, nkv, hd, eps = len(tokens), cfg["n_head"], cfg["n_kv"], cfg["head_dim"], cfg["eps"]
  cos, sin = rope_tables(cfg, T)
  x = W["embd"][torch.tensor(tokens)]
  for l, L in enumerate(W["layers"]):
    t = rms_norm(x, L["attn_norm"], eps)
    qkv = t @ L["qkv_w"].T + L["qkv_b"]
    q, k, v = qkv[:, :nh * hd], qkv[:, nh * hd:(nh + nkv) * hd], qkv[:, (nh + nkv) * hd:]
    q, k = apply_rope(q.view(T, nh, hd), cos, sin), apply_rope(k.view(T, nkv, hd), cos, sin)
    t = sdpa(q.reshape(T, nkv, nh // nkv, hd), k, v.view(T, nkv, hd), L["sinks"], 1 / math.sqrt(hd),
             cfg["window"] if l % 2 == 0 else 0)
    x = x + t @ L["out_w"].T + L["out_b"]
    t = rms_norm(x, L["mlp_norm"], eps)
    g = t @ L["gate_w"].T + L["gate_b"]
    top = torch.topk(g, k=cfg["k"], dim=-1, sorted=True)
    ew, ei = torch.softmax(top.values, dim=1), top.indices
    h = torch.einsum("beck,bk->bec", L["mlp1_w"][ei], t) + L["mlp1_b"][ei]
    h = swiglu(h)
    h = torch.einsum("beck,bek->bec", L["mlp2_w"][ei], h) + L["mlp2_b"][ei]
    x = x + torch.einsum("bec,be->bc", h, ew)
  return rms_norm(x, W["out_norm"], eps) @ W["out"].T

# ---------------------------------------------------------------------------------------------- the model

CFG = dict(dim=64, n_layer=4, n_head=4, n_kv=2, head_dim=16, ffn=32, n_expert=8, k=2, window=8, vocab=256, ctx=64,
           eps=1e-5, rope_base=150000.0, yarn_factor=32.0, yarn_ctx=4096, n_prompt=14, n_gen=8)

def make(name, cfg, seed):
  rng = np.random.default_rng(seed)
  dim, nh, nkv, hd, ffn, E, vocab = cfg["dim"], cfg["n_head"], cfg["n_kv"], cfg["head_dim"], cfg["ffn"], cfg["n_expert"], cfg["vocab"]
  tensors, W = [], {"layers": []}
  def f32(tname, x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    tensors.append((tname, T_F32, list(reversed(x.shape)), x.tobytes()))
    return torch.tensor(x.astype(np.float64))
  def mx(tname, x):
    raw, deq = quant_mxfp4(x)
    tensors.append((tname, T_MXFP4, list(reversed(x.shape)), raw))
    return torch.tensor(deq)
  def mat(*shape, s=None): return (rng.standard_normal(shape) * (s or shape[-1] ** -0.5)).astype(np.float32)
  def vec(n, base=1.0, s=0.1): return (base + rng.standard_normal(n) * s).astype(np.float32)
  W["embd"] = f32("token_embd.weight", mat(vocab, dim, s=1.0))
  for l in range(cfg["n_layer"]):
    p, L = "blk.%d." % l, {}
    L["attn_norm"] = f32(p + "attn_norm.weight", vec(dim))
    qkv_w, qkv_b = mat((nh + 2 * nkv) * hd, dim), vec((nh + 2 * nkv) * hd, 0.0, 0.3)
    qs, ks = nh * hd, (nh + nkv) * hd
    L["qkv_w"] = torch.cat([f32(p + "attn_q.weight", qkv_w[:qs]), f32(p + "attn_k.weight", qkv_w[qs:ks]),
                            f32(p + "attn_v.weight", qkv_w[ks:])])
    L["qkv_b"] = torch.cat([f32(p + "attn_q.bias", qkv_b[:qs]), f32(p + "attn_k.bias", qkv_b[qs:ks]),
                            f32(p + "attn_v.bias", qkv_b[ks:])])
    sinks = rng.standard_normal(nh).astype(np.float32)
    sinks[l % nh] = 4.0  # one head whose sink dominates
    L["sinks"] = f32(p + "attn_sinks.weight", sinks)
    L["out_w"] = f32(p + "attn_output.weight", mat(dim, nh * hd))
    L["out_b"] = f32(p + "attn_output.bias", vec(dim, 0.0, 0.1))
    L["mlp_norm"] = f32(p + "post_attention_norm.weight", vec(dim))
    L["gate_w"] = f32(p + "ffn_gate_inp.weight", mat(E, dim))
    rb = vec(E, 0.0, 0.2)
    rb[l % E] = 3.0  # one dominant expert
    L["gate_b"] = f32(p + "ffn_gate_inp.bias", rb)
    mlp1_w, mlp1_b = mat(E, 2 * ffn, dim, s=dim ** -0.5 * 2), vec(E * 2 * ffn, 0.0, 0.2).reshape(E, 2 * ffn)
    g_w, u_w = mx(p + "ffn_gate_exps.weight", mlp1_w[:, ::2]), mx(p + "ffn_up_exps.weight", mlp1_w[:, 1::2])
    g_b, u_b = f32(p + "ffn_gate_exps.bias", mlp1_b[:, ::2]), f32(p + "ffn_up_exps.bias", mlp1_b[:, 1::2])
    L["mlp1_w"] = torch.stack([g_w, u_w], dim=2).reshape(E, 2 * ffn, dim)  # re-interleaved: the reference's layout
    L["mlp1_b"] = torch.stack([g_b, u_b], dim=2).reshape(E, 2 * ffn)
    L["mlp2_w"] = mx(p + "ffn_down_exps.weight", mat(E, dim, ffn))
    L["mlp2_b"] = f32(p + "ffn_down_exps.bias", vec(E * dim, 0.0, 0.1).reshape(E, dim))
    W["layers"].append(L)
  W["out_norm"] = f32("output_norm.weight", vec(dim))
  W["out"] = f32("output.weight", mat(vocab, dim, s=dim ** -0.5 * 4))
  a = "gpt-oss."
  kvs = [("general.architecture", GT_STR, "gpt-oss"), ("general.name", GT_STR, name),
         (a + "block_count", GT_U32, cfg["n_layer"]), (a + "context_length", GT_U32, cfg["ctx"]),
         (a + "embedding_length", GT_U32, dim), (a + "feed_forward_length", GT_U32, ffn),
         (a + "expert_feed_forward_length", GT_U32, ffn),
         (a + "attention.head_count", GT_U32, nh), (a + "attention.head_count_kv", GT_U32, nkv),
         (a + "attention.key_length", GT_U32, hd), (a + "attention.value_length", GT_U32, hd),
         (a + "attention.layer_norm_rms_epsilon", GT_F32, cfg["eps"]), (a + "rope.freq_base", GT_F32, cfg["rope_base"]),
         (a + "rope.scaling.type", GT_STR, "yarn"), (a + "rope.scaling.factor", GT_F32, cfg["yarn_factor"]),
         (a + "rope.scaling.original_context_length", GT_U32, cfg["yarn_ctx"]),
         (a + "attention.sliding_window", GT_U32, cfg["window"]),
         (a + "expert_count", GT_U32, E), (a + "expert_used_count", GT_U32, cfg["k"])]
  # the golden run: a prompt longer than the window, then the reference's greedy continuation
  toks = [int(t) for t in rng.integers(0, vocab, cfg["n_prompt"])]
  while len(toks) < cfg["n_prompt"] + cfg["n_gen"]:
    toks.append(int(forward(cfg, W, toks)[-1].argmax()))
  logits = forward(cfg, W, toks)
  kvs += [("golden.tokens", GT_ARR, (GT_I32, toks)), ("golden.n_prompt", GT_U32, cfg["n_prompt"])]
  tensors.append(("golden.logits", T_F32, [vocab, len(toks)], logits.numpy().astype(np.float32).tobytes()))
  path = os.path.join(OUTDIR, name + ".gguf")
  write_gguf(path, kvs, tensors)
  print("%s: %d bytes, %d tokens, logits |max| %.3f" % (path, os.path.getsize(path), len(toks), logits.abs().max()))

if __name__ == "__main__":
  torch.set_default_dtype(torch.float64)
  os.makedirs(OUTDIR, exist_ok=True)
  make("gptoss_tiny", CFG, 20261218)
