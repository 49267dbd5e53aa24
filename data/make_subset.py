#!/usr/bin/env python3
"""make_subset.py — builds data/fashion-mnist/, the Fashion-MNIST subset shipped so `make demo` works with no set-up.

Takes the first TRAIN_PER_CLASS training images of each class and the first TEST_PER_CLASS test images of each class
(original order kept, so the subset is class-balanced and deterministic) from the full dataset, by default Debian's
dataset-fashion-mnist package, and writes them in the same IDX format, gzip'd (mtime 0: reproducible bytes).
Usage: python3 data/make_subset.py [SOURCE_DIR] [OUT_DIR]"""
import gzip, struct, sys

TRAIN_PER_CLASS, TEST_PER_CLASS = 700, 200
src = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
out = sys.argv[2] if len(sys.argv) > 2 else "data/fashion-mnist"

def read_idx(path):
  raw = gzip.open(path, "rb").read()
  ndim = raw[3]
  dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
  return dims, raw[4 + 4 * ndim:]

def write_idx(path, code, dims, payload):
  head = bytes([0, 0, code, len(dims)]) + struct.pack(">" + "I" * len(dims), *dims)
  with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="", compresslevel=9) as g:
    g.write(head + payload)

for split, per_class in (("train", TRAIN_PER_CLASS), ("t10k", TEST_PER_CLASS)):
  (n, rows, cols), images = read_idx(f"{src}/{split}-images-idx3-ubyte.gz")
  (n_labels,), labels = read_idx(f"{src}/{split}-labels-idx1-ubyte.gz")
  assert n == n_labels
  taken, keep = [0] * 10, []
  for i, y in enumerate(labels):
    if taken[y] < per_class:
      taken[y] += 1
      keep.append(i)
  size = rows * cols
  write_idx(f"{out}/{split}-images-idx3-ubyte.gz", 0x08, (len(keep), rows, cols),
            b"".join(images[i * size:(i + 1) * size] for i in keep))
  write_idx(f"{out}/{split}-labels-idx1-ubyte.gz", 0x08, (len(keep),), bytes(labels[i] for i in keep))
  print(f"{split}: {len(keep)} of {n} images ({per_class} per class)")
