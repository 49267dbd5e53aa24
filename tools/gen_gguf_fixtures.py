#!/usr/bin/python3
"""gen_gguf_fixtures.py - the GGUF fixtures of tests/test_gguf.c, written by an independent Python writer.

Run with /usr/bin/python3 tools/gen_gguf_fixtures.py (plain Python, no packages). It writes
tests/fixtures/gguf/quants.gguf: metadata of every value type (nested arrays, a string array, edge values), and for
every format the tests read (f32 f16 bf16 q8_0 q4_0 q4_1 q4_k q5_k q6_k mxfp4) a tensor "<fmt>" of random blocks (with
edge scales) plus "<fmt>.ref", its dequantization as f32, computed here from the block layouts of ggml-common.h and the
reference formulas of ggml-quants.c dequantize_row_* (a port written from the layout description, not ggml's code).
It also holds "x" (f32 data) and "x.q8_0" / "x.q4_0", x quantized by ports of quantize_row_q8_0_ref and
quantize_row_q4_0_ref, so the tests check dequant(quant(x)) against x.

Every float is computed exactly in Python (the block products are exact in float32 before the last add) and rounded
once to float32, which is what ggml's float32 arithmetic gives. The file uses general.alignment 32 (ggml's default).
Cross-checked: tinygrad's gguf_load (PYTHONPATH=/work/tgref, with its string reader patched to accept the one non-UTF-8
test string) dequantizes every "<fmt>" of this file to exactly "<fmt>.ref" (0 mismatches in every format).
"""
import math
import os
import random
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "gguf", "quants.gguf")
ALIGN = 32
rng = random.Random(20261202)

# ---------------------------------------------------------------------------------------------- float helpers

def f32_round(x):
  """x rounded to float32 (overflow to +-inf, like float32 arithmetic)"""
  if math.isinf(x) or math.isnan(x): return x
  try:
    return struct.unpack("<f", struct.pack("<f", x))[0]
  except OverflowError:
    return math.copysign(math.inf, x)

def f16_bits(x): return struct.unpack("<H", struct.pack("<e", x))[0]
def f16_val(b): return struct.unpack("<e", struct.pack("<H", b))[0]

def rand_f16(scale=0.05):
  """a finite f16 value: mostly normal ones, now and then an edge (denormal, zero, negative zero, large)"""
  r = rng.random()
  if r < 0.04: return f16_val(rng.randrange(1, 0x400))          # denormal
  if r < 0.06: return 0.0
  if r < 0.07: return -0.0
  if r < 0.09: return f16_val(0x7bff) * rng.choice([1, -1]) / 64  # large
  return f16_val(f16_bits(rng.gauss(0, scale)))

def u16(b, i): return b[i] | (b[i + 1] << 8)

# ---------------------------------------------------------------------------------------------- reference dequant

def deq_q8_0(b):
  d = f16_val(u16(b, 0))
  return [f32_round(float(struct.unpack("b", bytes([b[2 + j]]))[0]) * d) for j in range(32)]

def deq_q4_0(b):
  d, qs = f16_val(u16(b, 0)), b[2:18]
  return [f32_round(((qs[j] & 15) - 8) * d) for j in range(16)] + [f32_round(((qs[j] >> 4) - 8) * d) for j in range(16)]

def deq_q4_1(b):
  d, m, qs = f16_val(u16(b, 0)), f16_val(u16(b, 2)), b[4:20]
  return [f32_round((qs[j] & 15) * d + m) for j in range(16)] + [f32_round((qs[j] >> 4) * d + m) for j in range(16)]

def scale_min_k4(j, s):
  if j < 4: return s[j] & 63, s[j + 4] & 63
  return (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)

def deq_k45(b, five):
  d, dmin, s = f16_val(u16(b, 0)), f16_val(u16(b, 2)), b[4:16]
  qh, qs = (b[16:48], b[48:176]) if five else (None, b[16:144])
  y = []
  for c in range(4):
    for half in range(2):
      k = 2 * c + half
      sc, m = scale_min_k4(k, s)
      d1, m1 = d * sc, dmin * m
      for l in range(32):
        q = (qs[32 * c + l] >> (4 * half)) & 15
        if five and (qh[l] >> k) & 1: q += 16
        y.append(f32_round(d1 * q - m1))
  return y

def deq_q6_k(b):
  ql, qh, sc, d = b[0:128], b[128:192], struct.unpack("16b", bytes(b[192:208])), f16_val(u16(b, 208))
  y = [0.0] * 256
  for n in range(2):
    for l in range(32):
      is_ = l // 16
      q1 = ((ql[64 * n + l] & 15) | (((qh[32 * n + l] >> 0) & 3) << 4)) - 32
      q2 = ((ql[64 * n + l + 32] & 15) | (((qh[32 * n + l] >> 2) & 3) << 4)) - 32
      q3 = ((ql[64 * n + l] >> 4) | (((qh[32 * n + l] >> 4) & 3) << 4)) - 32
      q4 = ((ql[64 * n + l + 32] >> 4) | (((qh[32 * n + l] >> 6) & 3) << 4)) - 32
      for g, q in enumerate((q1, q2, q3, q4)):
        y[128 * n + 32 * g + l] = f32_round(d * sc[8 * n + is_ + 2 * g] * q)
  return y

KVALUES_MXFP4 = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12]

def deq_mxfp4(b):
  d = 2.0 ** (b[0] - 128)  # ggml_e8m0_to_fp32_half: e < 2 as the denormals 2^-128, 2^-127
  qs = b[1:17]
  return [f32_round(KVALUES_MXFP4[qs[j] & 15] * d) for j in range(16)] + \
         [f32_round(KVALUES_MXFP4[qs[j] >> 4] * d) for j in range(16)]

# ---------------------------------------------------------------------------------------------- random blocks

def rand_bytes(n): return [rng.randrange(256) for _ in range(n)]
def f16_le(x):
  v = f16_bits(x)
  return [v & 255, v >> 8]

def block_q8_0(i): return f16_le(rand_f16()) + rand_bytes(32)
def block_q4_0(i): return f16_le(rand_f16()) + rand_bytes(16)
def block_q4_1(i): return f16_le(rand_f16()) + f16_le(rand_f16()) + rand_bytes(16)
def block_q4_k(i): return f16_le(rand_f16(0.01)) + f16_le(rand_f16(0.01)) + rand_bytes(12) + rand_bytes(128)
def block_q5_k(i): return f16_le(rand_f16(0.01)) + f16_le(rand_f16(0.01)) + rand_bytes(12) + rand_bytes(32) + rand_bytes(128)
def block_q6_k(i): return rand_bytes(128) + rand_bytes(64) + rand_bytes(16) + f16_le(rand_f16(0.01))
MX_EDGES = [0, 1, 2, 126, 127, 128, 129, 254, 255]
def block_mxfp4(i):
  e = MX_EDGES[i] if i < len(MX_EDGES) else rng.randrange(118, 137)
  return [e] + rand_bytes(16)

# ---------------------------------------------------------------------------------------------- reference quantizers

def quant_q8_0(x):
  out = []
  for i in range(0, len(x), 32):
    blk = x[i:i + 32]
    amax = max(abs(v) for v in blk)
    d = f32_round(amax / 127.0)
    iden = f32_round(1.0 / d) if d else 0.0
    out += f16_le(d)
    for v in blk:
      q = int(round_away(f32_round(v * iden)))
      out.append(q & 255)
  return out

def round_away(v):  # roundf: half away from zero
  return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)

def quant_q4_0(x):
  out = []
  for i in range(0, len(x), 32):
    blk = x[i:i + 32]
    amax, mx = 0.0, 0.0
    for v in blk:
      if amax < abs(v): amax, mx = abs(v), v
    d = f32_round(mx / -8)
    iden = f32_round(1.0 / d) if d else 0.0
    out += f16_le(d)
    qs = [min(15, int(f32_round(f32_round(v * iden) + 8.5))) for v in blk]  # (int8_t)(x0 + 8.5f), capped at 15
    out += [qs[j] | (qs[j + 16] << 4) for j in range(16)]
  return out

# ---------------------------------------------------------------------------------------------- the writer

def gstr(s):
  b = s.encode() if isinstance(s, str) else s
  return struct.pack("<Q", len(b)) + b

SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

def gvalue(t, v):
  if t in SCALAR: return struct.pack("<" + SCALAR[t], v)
  if t == 8: return gstr(v)
  et, items = v
  return struct.pack("<IQ", et, len(items)) + b"".join(gvalue(et, x) for x in items)

def write_gguf(path, kvs, tensors):
  out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
  for k, t, v in kvs: out += gstr(k) + struct.pack("<I", t) + gvalue(t, v)
  off, datas = 0, []
  for name, typ, ne, data in tensors:
    out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
    out += struct.pack("<IQ", typ, off)
    datas.append((off, data))
    off += len(data)
    off += (-off) % ALIGN
  out += b"\0" * ((-len(out)) % ALIGN)
  start = len(out)
  for o, data in datas:
    out += b"\0" * (start + o - len(out)) + data
  out += b"\0" * ((-len(out)) % ALIGN)
  with open(path, "wb") as f: f.write(out)

def f32_bytes(vals): return struct.pack("<%df" % len(vals), *vals)

def main():
  kvs = [
    ("general.architecture", 8, "llama"),
    ("general.name", 8, "fixture \u00e9\u4e2d\U0001f600"),
    ("t.u8", 0, 255), ("t.i8", 1, -128), ("t.u16", 2, 65535), ("t.i16", 3, -32768),
    ("t.u32", 4, 4294967295), ("t.i32", 5, -2147483648), ("t.f32", 6, 0.5), ("t.bool", 7, True),
    ("t.u64", 10, 18446744073709551615), ("t.i64", 11, -9223372036854775808), ("t.f64", 12, -1.25e300),
    ("t.empty_string", 8, ""),
    ("t.bytes_string", 8, b"a\x00b\xff"),
    ("t.arr_i32", 9, (5, [1, -2, 3])),
    ("t.arr_f32", 9, (6, [0.25, -1.5])),
    ("t.arr_bool", 9, (7, [True, False, True])),
    ("t.arr_str", 9, (8, ["<s>", "</s>", "\u0120the", ""])),
    ("t.arr_empty", 9, (4, [])),
    ("t.arr_nested", 9, (9, [(2, [1, 2]), (8, ["x"])])),
    ("t.arr_u64", 9, (10, [0, 18446744073709551615])),
  ]
  tensors = []
  ne = (512, 3)  # 3 rows of 512: 16 blocks of 32 or 2 of 256 per row
  n = ne[0] * ne[1]
  # the plain types
  vals = [f32_round(rng.gauss(0, 1)) for _ in range(n)] + []
  tensors.append(("f32", 0, ne, f32_bytes(vals)))
  tensors.append(("f32.ref", 0, ne, f32_bytes(vals)))
  h = [f16_bits(rand_f16(1.0)) for _ in range(n)]
  tensors.append(("f16", 1, ne, struct.pack("<%dH" % n, *h)))
  tensors.append(("f16.ref", 0, ne, f32_bytes([f16_val(v) for v in h])))
  bf = [struct.unpack("<I", struct.pack("<f", rng.gauss(0, 1)))[0] >> 16 for _ in range(n)]
  tensors.append(("bf16", 30, ne, struct.pack("<%dH" % n, *bf)))
  tensors.append(("bf16.ref", 0, ne, f32_bytes([struct.unpack("<f", struct.pack("<I", v << 16))[0] for v in bf])))
  # the block types: (name, ggml type, elements per block, block maker, dequant)
  fmts = [("q8_0", 8, 32, block_q8_0, deq_q8_0), ("q4_0", 2, 32, block_q4_0, deq_q4_0),
          ("q4_1", 3, 32, block_q4_1, deq_q4_1), ("q4_k", 12, 256, block_q4_k, lambda b: deq_k45(b, False)),
          ("q5_k", 13, 256, block_q5_k, lambda b: deq_k45(b, True)), ("q6_k", 14, 256, block_q6_k, deq_q6_k),
          ("mxfp4", 39, 32, block_mxfp4, deq_mxfp4)]
  for name, typ, blk, make, deq in fmts:
    raw, ref = [], []
    for i in range(n // blk):
      b = make(i)
      raw += b
      ref += deq(b)
    tensors.append((name, typ, ne, bytes(raw)))
    tensors.append((name + ".ref", 0, ne, f32_bytes(ref)))
  # real data through the reference quantizers
  x = [f32_round(rng.gauss(0, 1) * (4.0 if i % 97 == 0 else 1.0)) for i in range(n)]
  tensors.append(("x", 0, ne, f32_bytes(x)))
  tensors.append(("x.q8_0", 8, ne, bytes(quant_q8_0(x))))
  tensors.append(("x.q4_0", 2, ne, bytes(quant_q4_0(x))))
  os.makedirs(os.path.dirname(OUT), exist_ok=True)
  write_gguf(OUT, kvs, tensors)
  print("wrote", os.path.normpath(OUT), os.path.getsize(OUT), "bytes,", len(tensors), "tensors,", len(kvs), "keys")

if __name__ == "__main__":
  main()
