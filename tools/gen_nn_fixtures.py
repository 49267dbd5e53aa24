#!/usr/bin/python3
"""gen_nn_fixtures.py — writes tests/fixtures/nn_layers.tgf: PyTorch golden values for the nn layers and losses
(tests/test_nn.c). Run with Debian's python (python3-torch 1.13, numpy):   /usr/bin/python3 tools/gen_nn_fixtures.py

The file format is gen_fixtures.py's (tests/fixture.h reads it): "TGFX" u32:version(=1) u32:ncases, each case
u32:nbytes str:name str:op str:params f64:atol f64:rtol u32:flags u8:ninputs tensor* u8:noutputs tensor*, a tensor
str:view u8:dtype u8:ndim i64:shape[ndim] u64:nbytes bytes. Only float32 (code 11) and int64 (code 7) are used here.

Every case feeds the layer's parameters as inputs (the C test loads them into the layer with tg_load_state_dict or
passes them to the functional call) so the values do not depend on the random initialization. Where torch 1.13 lacks
the op (RMSNorm, scaled_dot_product_attention) the reference is written out with torch primitives, following
tinygrad's formula. Deterministic: fixed seeds, no timestamps.
"""
import os, struct
import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "nn_layers.tgf")
F32, I64 = 11, 7
cases = []


def s(x: str) -> bytes:
  b = x.encode()
  return struct.pack("<H", len(b)) + b


def tensor(t) -> bytes:
  a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
  if a.dtype.kind == "f": a, code = a.astype("<f4"), F32
  else: a, code = a.astype("<i8"), I64
  a = np.array(a, order="C", copy=True)  # (ascontiguousarray would make 0-d arrays 1-d)
  return s("") + struct.pack("<BB", code, a.ndim) + b"".join(struct.pack("<q", d) for d in a.shape) + \
      struct.pack("<Q", a.nbytes) + a.tobytes()


def add(name, op, params, inputs, outputs, atol=1e-5, rtol=1e-4):
  p = ";".join(f"{k}={v}" for k, v in params.items())
  body = s(name) + s(op) + s(p) + struct.pack("<ddI", atol, rtol, 0)
  body += struct.pack("<B", len(inputs)) + b"".join(tensor(t) for t in inputs)
  body += struct.pack("<B", len(outputs)) + b"".join(tensor(t) for t in outputs)
  cases.append(struct.pack("<I", len(body)) + body)


def r(*shape, seed, lo=-2.0, hi=2.0):
  return torch.tensor(np.random.RandomState(seed).uniform(lo, hi, size=shape), dtype=torch.float32)


def ri(*shape, seed, lo, hi):
  return torch.tensor(np.random.RandomState(seed).randint(lo, hi, size=shape), dtype=torch.int64)


def ints(v): return ",".join(str(int(x)) for x in v)


def build():
  # Linear: inputs x, weight (out, in), bias
  for i, (shape, fin, fout, bias) in enumerate([((3, 4), 4, 5, 1), ((2, 3, 6), 6, 2, 1), ((4, 3), 3, 3, 0)]):
    x, w, b = r(*shape, seed=10 + i), r(fout, fin, seed=20 + i, lo=-0.5, hi=0.5), r(fout, seed=30 + i)
    add(f"linear_{i}", "linear", {"in": fin, "out": fout, "bias": bias}, [x, w, b] if bias else [x, w],
        [F.linear(x, w, b if bias else None)])
  # Conv2d layer: x, weight, bias
  conv = [dict(cin=2, cout=4, k=(3, 3), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, same=0),
          dict(cin=2, cout=4, k=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 1), groups=1, same=0),
          dict(cin=4, cout=6, k=(3, 3), stride=(1, 1), padding=(1, 1), dilation=(2, 2), groups=2, same=0),
          dict(cin=3, cout=2, k=(3, 3), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, same=1),
          dict(cin=2, cout=2, k=(4, 2), stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1, same=1)]
  for i, c in enumerate(conv):
    x = r(2, c["cin"], 7, 6, seed=40 + i)
    w, b = r(c["cout"], c["cin"] // c["groups"], *c["k"], seed=50 + i, lo=-0.5, hi=0.5), r(c["cout"], seed=60 + i)
    pad = "same" if c["same"] else c["padding"]
    y = F.conv2d(x, w, b, stride=c["stride"], padding=pad, dilation=c["dilation"], groups=c["groups"])
    add(f"conv2d_{i}", "conv2d", {"cin": c["cin"], "cout": c["cout"], "kernel": ints(c["k"]), "stride": ints(c["stride"]),
        "padding": ints(c["padding"]), "dilation": ints(c["dilation"]), "groups": c["groups"], "same": c["same"]},
        [x, w, b], [y])
  # ConvTranspose2d: x, weight (cin, cout/groups, kh, kw), bias
  convt = [dict(cin=2, cout=3, k=(3, 3), stride=(1, 1), padding=(0, 0), dilation=(1, 1), op=(0, 0), groups=1),
           dict(cin=2, cout=2, k=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), op=(1, 1), groups=1),
           dict(cin=4, cout=2, k=(2, 3), stride=(2, 3), padding=(0, 1), dilation=(1, 1), op=(1, 0), groups=2),
           dict(cin=2, cout=2, k=(3, 3), stride=(1, 1), padding=(2, 1), dilation=(2, 1), op=(1, 0), groups=1),
           dict(cin=1, cout=1, k=(2, 2), stride=(3, 3), padding=(3, 0), dilation=(1, 1), op=(0, 2), groups=1)]
  for i, c in enumerate(convt):
    x = r(2, c["cin"], 4, 5, seed=70 + i)
    w, b = r(c["cin"], c["cout"] // c["groups"], *c["k"], seed=80 + i, lo=-0.5, hi=0.5), r(c["cout"], seed=90 + i)
    y = F.conv_transpose2d(x, w, b, stride=c["stride"], padding=c["padding"], output_padding=c["op"],
                           groups=c["groups"], dilation=c["dilation"])
    add(f"conv_transpose2d_{i}", "conv_transpose2d", {"cin": c["cin"], "cout": c["cout"], "kernel": ints(c["k"]),
        "stride": ints(c["stride"]), "padding": ints(c["padding"]), "dilation": ints(c["dilation"]),
        "output_padding": ints(c["op"]), "groups": c["groups"]}, [x, w, b], [y])
  # BatchNorm training: x, weight, bias, running_mean, running_var -> y, new running_mean, new running_var
  for i, shape in enumerate([(4, 3), (2, 3, 4, 5), (3, 2, 5)]):
    C = shape[1]
    x, w, b = r(*shape, seed=100 + i) * 3 + 1, r(C, seed=110 + i), r(C, seed=120 + i)
    rm, rv = r(C, seed=130 + i), r(C, seed=140 + i, lo=0.5, hi=2.0)
    rm2, rv2 = rm.clone(), rv.clone()
    y = F.batch_norm(x, rm2, rv2, w, b, training=True, momentum=0.1, eps=1e-5)
    add(f"batchnorm_train_{i}", "batchnorm_train", {"size": C, "eps": 1e-5, "momentum": 0.1},
        [x, w, b, rm, rv], [y, rm2, rv2])
    y = F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-3)
    add(f"batchnorm_eval_{i}", "batchnorm_eval", {"size": C, "eps": 1e-3}, [x, w, b, rm, rv], [y])
  # LayerNorm: x, weight, bias
  for i, (shape, ns, eps) in enumerate([((3, 5), (5,), 1e-5), ((2, 3, 4), (3, 4), 1e-5), ((4, 6), (6,), 1e-2)]):
    x, w, b = r(*shape, seed=150 + i) * 2 + 1, r(*ns, seed=160 + i), r(*ns, seed=170 + i)
    add(f"layernorm_{i}", "layernorm", {"shape": ints(ns), "eps": eps}, [x, w, b], [F.layer_norm(x, ns, w, b, eps)])
  # RMSNorm (tinygrad's formula, float32): x, weight
  for i, (shape, eps) in enumerate([((3, 4), 1e-6), ((2, 2, 8), 1e-2)]):
    x, w = r(*shape, seed=180 + i), r(shape[-1], seed=190 + i)
    y = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * w
    add(f"rmsnorm_{i}", "rmsnorm", {"dim": shape[-1], "eps": eps}, [x, w], [y])
  # GroupNorm: x, weight, bias
  for i, (shape, G) in enumerate([((2, 6, 3, 3), 3), ((3, 4, 5), 2), ((2, 4, 2, 2), 4)]):
    C = shape[1]
    x, w, b = r(*shape, seed=200 + i) * 2 - 1, r(C, seed=210 + i), r(C, seed=220 + i)
    add(f"groupnorm_{i}", "groupnorm", {"groups": G, "channels": C, "eps": 1e-5}, [x, w, b],
        [F.group_norm(x, G, w, b, 1e-5)])
  # Embedding: idx, weight
  for i, (vocab, emb, ishape) in enumerate([(10, 3, (4,)), (7, 5, (2, 3)), (3, 2, ())]):
    w, idx = r(vocab, emb, seed=230 + i), ri(*ishape, seed=240 + i, lo=0, hi=vocab)
    add(f"embedding_{i}", "embedding", {"vocab": vocab, "embed": emb}, [idx, w], [F.embedding(idx, w)])
  # cross_entropy: logits, targets (indices or probabilities)
  red = ["mean", "sum", "none"]
  for i, (shape, ls, rd, probs) in enumerate([((4, 5), 0.0, "mean", 0), ((4, 5), 0.1, "sum", 0),
                                               ((3, 4, 2), 0.2, "none", 0), ((4, 3), 0.0, "mean", 1),
                                               ((5,), 0.3, "mean", 0), ((2, 3, 2, 2), 0.0, "mean", 0)]):
    x = r(*shape, seed=250 + i) * 2
    if probs: y = torch.softmax(r(*shape, seed=260 + i), 1)
    else: y = ri(*((shape[:1] + shape[2:]) if len(shape) > 1 else ()), seed=260 + i, lo=0, hi=shape[1 if len(shape) > 1 else 0])
    ref = F.cross_entropy(x.unsqueeze(0) if len(shape) == 1 else x, y.unsqueeze(0) if len(shape) == 1 else y,
                          reduction=rd, label_smoothing=ls)
    if len(shape) == 1 and rd == "none": ref = ref.squeeze(0)
    add(f"cross_entropy_{i}", "cross_entropy", {"reduction": red.index(rd), "smoothing": ls}, [x, y], [ref])
  # sparse_categorical_crossentropy (class axis -1): logits, labels; torch puts the class axis at 1
  for i, (shape, ignore, ls, rd) in enumerate([((5, 4), -1, 0.0, "mean"), ((6, 3), 1, 0.0, "mean"),
                                               ((6, 3), 2, 0.25, "mean"), ((2, 3, 5), -1, 0.1, "sum"),
                                               ((4, 6), 0, 0.0, "none"), ((4, 6), 3, 0.5, "none")]):
    x = r(*shape, seed=270 + i) * 2
    y = ri(*shape[:-1], seed=280 + i, lo=0, hi=shape[-1])
    xt = x if x.ndim == 2 else x.permute(0, 2, 1)
    ref = F.cross_entropy(xt, y, ignore_index=ignore if ignore != -1 else -100, label_smoothing=ls, reduction=rd)
    add(f"sparse_ce_{i}", "sparse_categorical_crossentropy", {"ignore_index": ignore, "smoothing": ls,
        "reduction": red.index(rd)}, [x, y], [ref])
  # binary cross entropy: probabilities, targets
  for i, rd in enumerate(red):
    x, y = torch.sigmoid(r(6, seed=290 + i) * 2), r(6, seed=300 + i, lo=0, hi=1)
    add(f"bce_{i}", "binary_crossentropy", {"reduction": i}, [x, y], [F.binary_cross_entropy(x, y, reduction=rd)])
  for i, (rd, pw) in enumerate([("mean", 0), ("sum", 1), ("none", 1)]):
    x, y, p = r(2, 5, seed=310 + i) * 3, r(2, 5, seed=320 + i, lo=0, hi=1), r(5, seed=330 + i, lo=0.5, hi=2)
    ref = F.binary_cross_entropy_with_logits(x, y, reduction=rd, pos_weight=p if pw else None)
    add(f"bce_logits_{i}", "binary_crossentropy_logits", {"reduction": red.index(rd), "pos_weight": pw},
        [x, y, p] if pw else [x, y], [ref])
  # nll_loss: log-probabilities, targets, optional class weights
  for i, (shape, w, ignore, rd) in enumerate([((4, 3), 0, None, "mean"), ((4, 3), 1, None, "mean"),
                                              ((5, 4), 1, 2, "mean"), ((5, 4), 0, 1, "sum"),
                                              ((2, 3, 4), 1, None, "none"), ((2, 3, 4), 0, 0, "mean")]):
    x = torch.log_softmax(r(*shape, seed=340 + i), 1)
    y = ri(*(shape[:1] + shape[2:]), seed=350 + i, lo=0, hi=shape[1])
    wt = r(shape[1], seed=360 + i, lo=0.2, hi=2)
    ref = F.nll_loss(x, y, weight=wt if w else None, ignore_index=ignore if ignore is not None else -100, reduction=rd)
    add(f"nll_{i}", "nll_loss", {"weight": w, "ignore_index": "none" if ignore is None else ignore,
        "reduction": red.index(rd)}, [x, y, wt] if w else [x, y], [ref])
  # scaled_dot_product_attention: q, k, v [, mask]; mask kinds: 0 none, 1 causal, 2 bool, 3 additive float
  for i, (qs, ks, vs, kind) in enumerate([((2, 3, 4), (2, 5, 4), (2, 5, 3), 0), ((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), 1),
                                          ((2, 4, 3), (2, 6, 3), (2, 6, 2), 1), ((3, 4), (5, 4), (5, 2), 2),
                                          ((2, 3, 4), (2, 3, 4), (2, 3, 4), 3)]):
    q, k, v = r(*qs, seed=370 + i), r(*ks, seed=380 + i), r(*vs, seed=390 + i)
    qk = q @ k.transpose(-2, -1) / np.sqrt(qs[-1])
    ins = [q, k, v]
    if kind == 1: qk = qk.masked_fill(~torch.ones(qk.shape[-2:], dtype=torch.bool).tril(), float("-inf"))
    if kind == 2:
      m = torch.tensor(np.random.RandomState(400 + i).rand(qs[-2], ks[-2]) > 0.3)
      m[:, 0] = True
      qk = qk.masked_fill(~m, float("-inf"))
      ins.append(m.to(torch.int64))
    if kind == 3:
      m = r(qs[-2], ks[-2], seed=410 + i)
      qk = qk + m
      ins.append(m)
    add(f"sdpa_{i}", "sdpa", {"mask": kind}, ins, [torch.softmax(qk, -1) @ v])


def safetensors_file(path, tensors, meta=None):
  """a safetensors file as Python's json writes it (default separators, with spaces), padded like tinygrad's"""
  import json
  header, off, data = {}, 0, b""
  if meta: header["__metadata__"] = meta
  for name, (dt, shape, raw) in tensors.items():
    header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
    off, data = off + len(raw), data + raw
  j = json.dumps(header).encode()
  j += b" " * (-len(j) % 8)
  with open(path, "wb") as f: f.write(struct.pack("<Q", len(j)) + j + data)


def safetensors_seeds():
  """valid files for test_safetensors.c (values checked there) and seeds for tools/fuzz_safetensors.c"""
  d = os.path.join(os.path.dirname(OUT), "safetensors")
  os.makedirs(d, exist_ok=True)
  safetensors_file(os.path.join(d, "floats.safetensors"), {
      "w": ("F32", [2, 3], np.arange(6, dtype="<f4").tobytes()),
      "h": ("F16", [3], np.array([1.5, -2, 65504], dtype="<f2").tobytes())}, {"format": "pt"})
  safetensors_file(os.path.join(d, "ints.safetensors"), {
      "i": ("I64", [2], np.array([-5, 1 << 40], dtype="<i8").tobytes()),
      "u": ("U8", [4], bytes([1, 2, 3, 255])), "q": ("BOOL", [2], bytes([0, 1]))})
  safetensors_file(os.path.join(d, "names.safetensors"), {
      "na\u00efve \"q\"": ("BF16", [1, 1, 1], bytes([0x80, 0x3f])), "e": ("F64", [0], b""),
      "f8": ("F8_E4M3", [3], b"abc")}, {"a\\b": "\u2603"})


def main():
  build()
  safetensors_seeds()
  with open(OUT, "wb") as f:
    f.write(b"TGFX" + struct.pack("<II", 1, len(cases)) + b"".join(cases))
  print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)}")


if __name__ == "__main__":
  main()
