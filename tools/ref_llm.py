#!/usr/bin/python3
"""ref_llm.py - the LLM fixtures of tests/test_llm.c: tiny random-weight models of real architectures written as GGUF
files, with the logits of an independent PyTorch forward stored next to the weights.

Run with /usr/bin/python3 tools/ref_llm.py (Debian's python3-torch and numpy). It writes tests/fixtures/llm/*.gguf.
Each file is one model (general.architecture llama / qwen2 / qwen3) plus
  golden.tokens   int32 array: the prompt followed by the reference's greedy continuation
  golden.n_prompt uint32: how many of golden.tokens are the prompt
  golden.logits   F32 tensor ne = (vocab, len(golden.tokens)): row i = the logits after tokens[0..i]
The reference is written the way Hugging Face's modeling code computes these models, not from the C code: weights are
drawn in the Hugging Face layout, RoPE is rotate-half with inv_freq (llama-3 scaling computed as transformers'
_compute_llama3_parameters, linear scaling as position / factor), GQA repeats each KV head over consecutive query
heads, attention is causal softmax(q k^T / sqrt(head_dim)) v, RMSNorm, SwiGLU. The GGUF gets what llama.cpp's
convert_hf_to_gguf.py writes: llama's attn_q/attn_k rows permuted to the interleaved-pair order of ggml's "normal"
rope, rope_freqs.weight for llama-3 scaling, 1-D tensors in F32, matrices quantized row-wise (Q8_0 / Q4_0 with the
ggml reference quantizers; the forward uses the dequantized values, so the comparison is exact up to float rounding).
The forward runs in float64.
"""
import os
import struct

import numpy as np
import torch

OUTDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "llm")
ALIGN = 32
T_F32, T_F16, T_Q4_0, T_Q8_0 = 0, 1, 2, 8

# ---------------------------------------------------------------------------------------------- quantization

def quant_q8_0(x):
  """rows of x (n, k), k % 32 == 0 -> (bytes, dequantized) as ggml's quantize_row_q8_0_ref"""
  b = x.reshape(-1, 32).astype(np.float32)
  amax = np.abs(b).max(axis=1)
  d = (amax / 127.0).astype(np.float32)
  idn = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0).astype(np.float32)
  v = b * idn[:, None]
  q = (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int8)  # roundf
  dh = d.astype(np.float16)
  raw = np.concatenate([dh.view(np.uint8).reshape(-1, 2), q.view(np.uint8)], axis=1)
  deq = q.astype(np.float32) * dh.astype(np.float32)[:, None]
  return raw.tobytes(), deq.reshape(x.shape)

def quant_q4_0(x):
  """as ggml's quantize_row_q4_0_ref: d = (the signed value of largest magnitude) / -8, q = min(15, trunc(x/d + 8.5))"""
  b = x.reshape(-1, 32).astype(np.float32)
  idx = np.abs(b).argmax(axis=1)
  mx = b[np.arange(b.shape[0]), idx]
  d = (mx / -8.0).astype(np.float32)
  idn = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0).astype(np.float32)
  q = np.minimum(15, np.trunc(b * idn[:, None] + np.float32(8.5)).astype(np.int32)).astype(np.uint8)
  dh = d.astype(np.float16)
  packed = (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)
  raw = np.concatenate([dh.view(np.uint8).reshape(-1, 2), packed], axis=1)
  deq = (q.astype(np.float32) - 8.0) * dh.astype(np.float32)[:, None]
  return raw.tobytes(), deq.reshape(x.shape)

def encode(x, typ):
  """a float array (numpy, C order; the last axis is ggml's ne[0]) -> (ggml type, bytes, the values the file holds)"""
  if x.ndim == 1 or typ == T_F32:
    v = x.astype(np.float32)
    return T_F32, v.tobytes(), v.astype(np.float64)
  if typ == T_F16:
    v = x.astype(np.float16)
    return T_F16, v.tobytes(), v.astype(np.float64)
  raw, deq = (quant_q8_0 if typ == T_Q8_0 else quant_q4_0)(x)
  return typ, raw, deq.astype(np.float64)

# ---------------------------------------------------------------------------------------------- GGUF writer

GT_U32, GT_I32, GT_F32, GT_STR, GT_ARR = 4, 5, 6, 8, 9

def gstr(s):
  b = s.encode()
  return struct.pack("<Q", len(b)) + b

def gkv(key, t, v):
  out = gstr(key) + struct.pack("<I", t)
  if t == GT_U32: return out + struct.pack("<I", v)
  if t == GT_F32: return out + struct.pack("<f", v)
  if t == GT_STR: return out + gstr(v)
  et, items = v
  fmt = {GT_I32: "<i", GT_F32: "<f", GT_U32: "<I"}
  body = b"".join(gstr(x) if et == GT_STR else struct.pack(fmt[et], x) for x in items)
  return out + struct.pack("<IQ", et, len(items)) + body

def write_gguf(path, kvs, tensors):
  """kvs: [(key, type, value)]; tensors: [(name, ggml type, ne (ggml order), bytes)]"""
  out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
  out += b"".join(gkv(*kv) for kv in kvs)
  off = 0
  for name, typ, ne, data in tensors:
    out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
    out += struct.pack("<IQ", typ, off)
    off += (len(data) + ALIGN - 1) // ALIGN * ALIGN
  out += b"\0" * (-len(out) % ALIGN)
  for _, _, _, data in tensors: out += data + b"\0" * (-len(data) % ALIGN)
  with open(path, "wb") as f: f.write(out)

# ---------------------------------------------------------------------------------------------- the reference forward

def rms_norm(x, w, eps):
  return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w

def rotate_half(x):
  h = x.shape[-1] // 2
  return torch.cat([-x[..., h:], x[..., :h]], dim=-1)

def inv_freq(cfg):
  n = cfg["rope_dim"]
  f = 1.0 / (cfg["rope_base"] ** (torch.arange(0, n, 2, dtype=torch.float64) / n))
  sc = cfg.get("scaling")
  if sc and sc["type"] == "llama3":  # transformers' _compute_llama3_parameters
    lo_wl, hi_wl = sc["orig_ctx"] / sc["low"], sc["orig_ctx"] / sc["high"]
    wl = 2 * torch.pi / f
    scaled = torch.where(wl > lo_wl, f / sc["factor"], f)
    smooth = (sc["orig_ctx"] / wl - sc["low"]) / (sc["high"] - sc["low"])
    smoothed = (1 - smooth) * scaled / sc["factor"] + smooth * scaled
    mid = (wl >= hi_wl) & (wl <= lo_wl)
    f = torch.where(mid, smoothed, scaled)
  return f

def forward(cfg, W, tokens):
  """logits (T, vocab) of every position, float64"""
  T, nh, nkv, hd, eps = len(tokens), cfg["n_head"], cfg["n_kv"], cfg["head_dim"], cfg["eps"]
  x = W["embd"][torch.tensor(tokens)]
  pos = torch.arange(T, dtype=torch.float64)
  sc = cfg.get("scaling")
  if sc and sc["type"] == "linear": pos = pos / sc["factor"]
  ang = pos[:, None] * inv_freq(cfg)[None, :]
  cos, sin = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
  rd = cfg["rope_dim"]
  def rope(t):  # t (heads, T, hd): rotate-half on the first rope_dim dims
    r, p = t[..., :rd], t[..., rd:]
    return torch.cat([r * cos + rotate_half(r) * sin, p], -1)
  mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
  for L in W["layers"]:
    h = rms_norm(x, L["attn_norm"], eps)
    q, k, v = h @ L["wq"].T, h @ L["wk"].T, h @ L["wv"].T
    if "bq" in L: q, k, v = q + L["bq"], k + L["bk"], v + L["bv"]
    q, k, v = q.view(T, nh, hd).transpose(0, 1), k.view(T, nkv, hd).transpose(0, 1), v.view(T, nkv, hd).transpose(0, 1)
    if "q_norm" in L: q, k = rms_norm(q, L["q_norm"], eps), rms_norm(k, L["k_norm"], eps)
    q, k = rope(q), rope(k)
    rep = nh // nkv
    k, v = k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)
    att = torch.softmax(q @ k.transpose(1, 2) / hd ** 0.5 + mask, -1) @ v
    x = x + att.transpose(0, 1).reshape(T, nh * hd) @ L["wo"].T
    h = rms_norm(x, L["ffn_norm"], eps)
    x = x + (torch.nn.functional.silu(h @ L["wg"].T) * (h @ L["wu"].T)) @ L["wd"].T
  x = rms_norm(x, W["out_norm"], eps)
  return x @ W["out"].T

# ---------------------------------------------------------------------------------------------- the models

def permute_hf_to_gguf(w, n_head):
  """convert_hf_to_gguf.py's LlamaModel.permute: rotate-half row order -> interleaved pairs"""
  return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

def permute_gguf_to_hf(w, n_head):
  return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

def make(name, cfg, seed):
  rng = np.random.default_rng(seed)
  arch, typ = cfg["arch"], cfg["type"]
  dim, nh, nkv, hd, ffn, vocab = cfg["dim"], cfg["n_head"], cfg["n_kv"], cfg["head_dim"], cfg["ffn"], cfg["vocab"]
  tensors, W = [], {"layers": []}
  def add(tname, x, t=typ, permute_heads=0):
    """x in the Hugging Face layout (out, in); returns the values the file holds, back in the HF layout"""
    xf = permute_hf_to_gguf(x, permute_heads) if permute_heads else x
    gt, data, vals = encode(xf, t)
    tensors.append((tname, gt, list(reversed(x.shape)), data))
    if permute_heads: vals = permute_gguf_to_hf(vals, permute_heads)
    return torch.tensor(vals)
  def mat(o, i, s=None): return (rng.standard_normal((o, i)) * (s or i ** -0.5)).astype(np.float32)
  def vec(n, base=1.0, s=0.1): return (base + rng.standard_normal(n) * s).astype(np.float32)
  W["embd"] = add("token_embd.weight", mat(vocab, dim, 1.0))
  perm = arch == "llama"
  for l in range(cfg["n_layer"]):
    p, L = "blk.%d." % l, {}
    L["attn_norm"] = add(p + "attn_norm.weight", vec(dim))
    L["wq"] = add(p + "attn_q.weight", mat(nh * hd, dim), permute_heads=nh if perm else 0)
    L["wk"] = add(p + "attn_k.weight", mat(nkv * hd, dim), permute_heads=nkv if perm else 0)
    L["wv"] = add(p + "attn_v.weight", mat(nkv * hd, dim))
    if cfg.get("bias"):
      L["bq"], L["bk"], L["bv"] = (add(p + "attn_%s.bias" % c, vec(n, 0.0, 0.5)) for c, n in (("q", nh * hd), ("k", nkv * hd), ("v", nkv * hd)))
    if cfg.get("qk_norm"):
      L["q_norm"], L["k_norm"] = add(p + "attn_q_norm.weight", vec(hd)), add(p + "attn_k_norm.weight", vec(hd))
    L["wo"] = add(p + "attn_output.weight", mat(dim, nh * hd))
    L["ffn_norm"] = add(p + "ffn_norm.weight", vec(dim))
    L["wg"], L["wu"] = add(p + "ffn_gate.weight", mat(ffn, dim)), add(p + "ffn_up.weight", mat(ffn, dim))
    L["wd"] = add(p + "ffn_down.weight", mat(dim, ffn))
    W["layers"].append(L)
  W["out_norm"] = add("output_norm.weight", vec(dim))
  W["out"] = W["embd"] if cfg.get("tied") else add("output.weight", mat(vocab, dim, dim ** -0.5 * 4))
  kvs = [("general.architecture", GT_STR, arch), ("general.name", GT_STR, name)]
  a = arch + "."
  kvs += [(a + "block_count", GT_U32, cfg["n_layer"]), (a + "context_length", GT_U32, cfg["ctx"]),
          (a + "embedding_length", GT_U32, dim), (a + "feed_forward_length", GT_U32, ffn),
          (a + "attention.head_count", GT_U32, nh), (a + "attention.head_count_kv", GT_U32, nkv),
          (a + "attention.layer_norm_rms_epsilon", GT_F32, cfg["eps"]), (a + "rope.freq_base", GT_F32, cfg["rope_base"])]
  if hd != dim // nh: kvs += [(a + "attention.key_length", GT_U32, hd), (a + "attention.value_length", GT_U32, hd)]
  if cfg["rope_dim"] != hd: kvs.append((a + "rope.dimension_count", GT_U32, cfg["rope_dim"]))
  sc = cfg.get("scaling")
  if sc and sc["type"] == "linear":
    kvs += [(a + "rope.scaling.type", GT_STR, "linear"), (a + "rope.scaling.factor", GT_F32, sc["factor"])]
  if sc and sc["type"] == "llama3":  # convert_hf_to_gguf writes the factors as a tensor: freq / factor = scaled freq
    f0 = inv_freq(dict(cfg, scaling=None))
    tensors.append(("rope_freqs.weight", T_F32, [cfg["rope_dim"] // 2], (f0 / inv_freq(cfg)).numpy().astype(np.float32).tobytes()))
  # the golden run: a prompt, then the reference's greedy continuation, logits after every token
  toks = [int(t) for t in rng.integers(0, vocab, cfg["n_prompt"])]
  while len(toks) < cfg["n_prompt"] + cfg["n_gen"]:
    toks.append(int(forward(cfg, W, toks)[-1].argmax()))
  logits = forward(cfg, W, toks)
  kvs += [("golden.tokens", GT_ARR, (GT_I32, toks)), ("golden.n_prompt", GT_U32, cfg["n_prompt"])]
  tensors.append(("golden.logits", T_F32, [vocab, len(toks)], logits.numpy().astype(np.float32).tobytes()))
  path = os.path.join(OUTDIR, name + ".gguf")
  write_gguf(path, kvs, tensors)
  print("%s: %d bytes, %d tokens, logits |max| %.3f" % (path, os.path.getsize(path), len(toks), logits.abs().max()))

BASE = dict(dim=64, n_layer=2, n_head=4, n_kv=2, head_dim=16, rope_dim=16, ffn=96, vocab=256, ctx=64, eps=1e-5,
            rope_base=10000.0, n_prompt=6, n_gen=5)
MODELS = {
  # llama with GQA and llama-3 rope scaling (rope_freqs), untied output, F32
  "llama_f32": dict(BASE, arch="llama", type=T_F32,
                    scaling=dict(type="llama3", factor=8.0, low=1.0, high=4.0, orig_ctx=64)),
  # llama, tied embeddings, linear rope scaling, Q4_0
  "llama_q4_0": dict(BASE, arch="llama", type=T_Q4_0, tied=True, scaling=dict(type="linear", factor=2.0)),
  # qwen2: q/k/v biases, neox rope on the first 8 of 16 head dims (partial rotary), F16, multi-query (1 KV head)
  "qwen2_f16": dict(BASE, arch="qwen2", type=T_F16, bias=True, n_kv=1, rope_dim=8, rope_base=1000000.0, eps=1e-6),
  # qwen3: q/k RMSNorm, head_dim 32 != dim / n_head, Q8_0, tied
  "qwen3_q8_0": dict(BASE, arch="qwen3", type=T_Q8_0, qk_norm=True, head_dim=32, rope_dim=32, tied=True,
                     rope_base=1000000.0, eps=1e-6),
}

if __name__ == "__main__":
  torch.set_default_dtype(torch.float64)
  os.makedirs(OUTDIR, exist_ok=True)
  for i, (n, c) in enumerate(sorted(MODELS.items())): make(n, c, 20261202 + i)
