#!/usr/bin/python3
"""peer_torch_attention.py — the PyTorch peer of bench/bench_attention.c: the same attention and MoE decode figures
in float32 on 2 threads. torch 1.13 (Debian's python3-torch) has no F.scaled_dot_product_attention, so attention is
its matmul + softmax form (the k/v heads repeated for GQA, the causal mask added), the way torch code wrote it before
SDPA; the MoE step gathers the 4 chosen experts' weights (w[sel]) and runs the same gpt-oss clamped SwiGLU.
usage: peer_torch_attention.py [seconds]; prints "<name> torch <best ms> ms runs=<n>"; the best run counts.
"""
import sys, time
import torch

torch.set_num_threads(2)
SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0


def best_ms(fn):
  fn()
  best, runs, start = float("inf"), 0, time.perf_counter()
  while runs < 3 or (time.perf_counter() - start < SECS and runs < 1000):
    t0 = time.perf_counter()
    fn()
    best, runs = min(best, (time.perf_counter() - t0) * 1e3), runs + 1
  return best, runs


def attention(q, k, v, start):
  h, kvh, t, s = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
  k, v = k.repeat_interleave(h // kvh, 1), v.repeat_interleave(h // kvh, 1)
  sc = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
  mask = torch.full((t, s), float("-inf")).triu(start + 1)
  return torch.softmax(sc + mask, -1) @ v


def moe(x, rw, gw, uw, dw, k=4):
  logits = x @ rw.T
  top, sel = logits.topk(k, -1)
  probs = torch.softmax(top, -1)
  g = torch.einsum("td,tkhd->tkh", x, gw[sel]).clamp(max=7.0)
  u = torch.einsum("td,tkhd->tkh", x, uw[sel]).clamp(-7.0, 7.0)
  a = g * torch.sigmoid(1.702 * g) * (u + 1)
  y = torch.einsum("tkh,tkdh->tkd", a, dw[sel])
  return (y * probs.unsqueeze(-1)).sum(1)


def main():
  with torch.no_grad():
    for name, h, kvh, t, s, d in [("attn_decode_s4096", 32, 8, 1, 4096, 64), ("attn_prefill_t512", 32, 8, 512, 512, 64)]:
      q, k, v = torch.rand(1, h, t, d) * 2 - 1, torch.rand(1, kvh, s, d) * 2 - 1, torch.rand(1, kvh, s, d) * 2 - 1
      ms, runs = best_ms(lambda: attention(q, k, v, s - t))
      print(f"{name} torch {ms:.3f} ms runs={runs}")
    e, d, hd = 32, 1024, 1024
    gw, uw, dw = [(torch.rand(e, hd, d) * 2 - 1) * 0.05 for _ in range(3)]
    rw, x = (torch.rand(e, d) * 2 - 1) * 0.1, torch.rand(1, d) * 2 - 1
    ms, runs = best_ms(lambda: moe(x, rw, gw, uw, dw))
    print(f"moe_decode_e32 torch {ms:.3f} ms runs={runs}")


if __name__ == "__main__":
  main()
