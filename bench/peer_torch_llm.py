#!/usr/bin/env python3
"""peer_torch_llm.py - the PyTorch peer of `DEV=CUDA build/bench_llm FILE 1 NTOK PROMPT` (bench/run_gpu.sh, issue 18):
the same GGUF file (a llama-family F16 model, e.g. tg-mkmodel --preset 1b --type f16) run by torch on CUDA in float16,
eager, the way Hugging Face's LlamaForCausalLM computes it (RMSNorm, GQA by repeating each KV head over consecutive
query heads, causal softmax(q k^T / sqrt(head_dim)) v, SwiGLU, a KV cache of the prompt plus the decoded tokens).
The GGUF holds attn_q / attn_k rows in ggml's interleaved-pair rope order (convert_hf_to_gguf permutes them), so RoPE
rotates pairs (2i, 2i+1) here, with llama-3 frequency factors from rope_freqs.weight when present.
Usage: peer_torch_llm.py FILE NTOK PROMPT. Prints
  decode_tok_s <v> tok/s    NTOK one-token steps after two untimed ones (greedy, as bench_llm)
  prefill_tok_s <v> tok/s   PROMPT tokens in one forward, after an untimed one
  first_token <id>          the greedy token after the prompt (the prompt: token i = (i * 7919 + 1) % vocab, as bench_llm)
"""
import os
import struct
import sys
import time

import numpy as np
import torch

GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


class Reader:
  def __init__(self, buf):
    self.b, self.o = buf, 0

  def take(self, fmt):
    v = struct.unpack_from(fmt, self.b, self.o)[0]
    self.o += struct.calcsize(fmt)
    return v

  def string(self):
    n = self.take("<Q")
    s = bytes(self.b[self.o:self.o + n]).decode("utf-8", "replace")
    self.o += n
    return s

  def value(self, t):
    if t in GGUF_SCALARS: return self.take(GGUF_SCALARS[t])
    if t == 8: return self.string()
    if t == 9:
      et, n = self.take("<I"), self.take("<Q")
      if et in GGUF_SCALARS:  # skip numeric arrays in one step (token types, scores)
        size = struct.calcsize(GGUF_SCALARS[et])
        self.o += size * n
        return None
      return [self.value(et) for _ in range(n)]
    raise ValueError(f"GGUF value type {t}")


def load_gguf(path):
  raw = np.memmap(path, dtype=np.uint8, mode="r")
  r = Reader(memoryview(raw))
  if bytes(raw[:4]) != b"GGUF": raise ValueError(f"{path}: not a GGUF file")
  r.o = 4
  r.take("<I")
  nt, nkv = r.take("<Q"), r.take("<Q")
  kv = {}
  for _ in range(nkv):
    k = r.string()
    kv[k] = r.value(r.take("<I"))
  infos = []
  for _ in range(nt):
    name = r.string()
    nd = r.take("<I")
    ne = [r.take("<Q") for _ in range(nd)]
    typ, off = r.take("<I"), r.take("<Q")
    infos.append((name, ne, typ, off))
  align = kv.get("general.alignment", 32)
  base = (r.o + align - 1) // align * align
  tensors = {}
  for name, ne, typ, off in infos:
    if typ not in (0, 1): raise ValueError(f"{name}: ggml type {typ} (the peer reads F32 / F16 files)")
    dt = np.float32 if typ == 0 else np.float16
    n = int(np.prod(ne))
    a = np.frombuffer(raw, dtype=dt, count=n, offset=base + off).reshape(list(reversed(ne)))
    tensors[name] = a
  return kv, tensors


def main():
  path, ntok, prompt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
  kv, t = load_gguf(path)
  arch = kv["general.architecture"]
  g = lambda k, d=None: kv.get(f"{arch}.{k}", d)
  n_layer, dim, n_head = g("block_count"), g("embedding_length"), g("attention.head_count")
  n_kv = g("attention.head_count_kv", n_head)
  hd = g("attention.key_length", dim // n_head)
  eps, base = g("attention.layer_norm_rms_epsilon", 1e-5), g("rope.freq_base", 10000.0)
  dev = os.environ.get("PEER_DEVICE", "cuda")  # PEER_DEVICE=cpu: a float32 check run without a GPU
  f16 = torch.float16 if dev == "cuda" else torch.float32
  W = {k: torch.from_numpy(np.array(v)).to(dev, f16) for k, v in t.items()}
  emb = W["token_embd.weight"]
  out_w = W.get("output.weight", emb)
  vocab = emb.shape[0]
  inv = 1.0 / (base ** (torch.arange(0, hd, 2, device=dev, dtype=torch.float32) / hd))
  if "rope_freqs.weight" in W: inv = inv / W["rope_freqs.weight"].float()
  ctx = prompt + ntok + 8
  kc = [torch.zeros(1, n_kv, ctx, hd, device=dev, dtype=f16) for _ in range(n_layer)]
  vc = [torch.zeros(1, n_kv, ctx, hd, device=dev, dtype=f16) for _ in range(n_layer)]

  def rms(x, w): return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)).to(f16) * w

  def rope(x, pos):  # x (1, h, T, hd), pairs (2i, 2i+1)
    ang = pos[:, None].float() * inv[None, :]
    c, s = ang.cos().to(f16), ang.sin().to(f16)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)

  def forward(ids, start):
    T = ids.shape[0]
    pos = torch.arange(start, start + T, device=dev)
    h = emb[ids][None]
    for l in range(n_layer):
      p = f"blk.{l}."
      x = rms(h, W[p + "attn_norm.weight"])
      q = (x @ W[p + "attn_q.weight"].T).view(1, T, n_head, hd).transpose(1, 2)
      k = (x @ W[p + "attn_k.weight"].T).view(1, T, n_kv, hd).transpose(1, 2)
      v = (x @ W[p + "attn_v.weight"].T).view(1, T, n_kv, hd).transpose(1, 2)
      q, k = rope(q, pos), rope(k, pos)
      kc[l][:, :, start:start + T] = k
      vc[l][:, :, start:start + T] = v
      K = kc[l][:, :, :start + T].repeat_interleave(n_head // n_kv, dim=1)
      V = vc[l][:, :, :start + T].repeat_interleave(n_head // n_kv, dim=1)
      att = (q @ K.transpose(-1, -2)).float() / hd ** 0.5
      mask = torch.arange(start + T, device=dev)[None, :] > pos[:, None]
      att = att.masked_fill(mask, float("-inf")).softmax(-1).to(f16)
      o = (att @ V).transpose(1, 2).reshape(1, T, n_head * hd)
      h = h + o @ W[p + "attn_output.weight"].T
      x = rms(h, W[p + "ffn_norm.weight"])
      gte = x @ W[p + "ffn_gate.weight"].T
      up = x @ W[p + "ffn_up.weight"].T
      h = h + (torch.nn.functional.silu(gte) * up) @ W[p + "ffn_down.weight"].T
    return (rms(h[:, -1], W["output_norm.weight"]) @ out_w.T).float()[0]

  sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
  ids = torch.tensor([(i * 7919 + 1) % vocab for i in range(prompt)], device=dev)
  with torch.no_grad():
    forward(ids, 0)
    sync()
    t0 = time.perf_counter()
    logits = forward(ids, 0)
    sync()
    prefill = prompt / (time.perf_counter() - t0)
    tok = int(logits.argmax())
    first = tok
    td, n_past = 0.0, prompt
    for i in range(ntok + 2):
      a = time.perf_counter()
      logits = forward(torch.tensor([tok], device=dev), n_past)
      tok = int(logits.argmax())  # the host reads the token, as bench_llm's greedy loop does
      if i >= 2: td += time.perf_counter() - a
      n_past += 1
  print(f"decode_tok_s {ntok / td:.3f} tok/s")
  print(f"prefill_tok_s {prefill:.3f} tok/s")
  print(f"first_token {first}")


if __name__ == "__main__":
  main()
