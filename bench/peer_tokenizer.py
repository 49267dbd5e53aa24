#!/usr/bin/env python3
"""peer_tokenizer.py — the peers of bench/bench_tokenizer.c on the same text (its --corpus file) and vocabulary:
  tinygrad: tinygrad's own tokenizer (tinygrad/llm/cli.py SimpleTokenizer.from_gguf_kv; llama-3-style presets only),
            found through PYTHONPATH;
  pyref:    the Python reference of tools/gen_tokenizer_fixtures.py (python3-regex split, lowest merge rank first),
            for the gpt-2 / llama-3 / o200k splits.
Prints:  peer <name> <which> <MB/s> MB/s tokens=<count>   (best of 2)
Usage: /usr/bin/python3 bench/peer_tokenizer.py tinygrad|pyref NAME FILE.gguf CORPUS"""
import os
import struct
import sys
import time


def gguf_kv(path):
    b = open(path, "rb").read()
    o = [4]

    def u(fmt):
        v = struct.unpack_from("<" + fmt, b, o[0])[0]
        o[0] += struct.calcsize("<" + fmt)
        return v

    def s():
        n = u("Q")
        v = b[o[0]:o[0] + n]
        o[0] += n
        return v

    fmts = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def val(t):
        if t == 8:
            return s().decode("utf-8", "replace")
        if t == 9:
            et, n = u("I"), u("Q")
            return [val(et) for _ in range(n)]
        return u(fmts[t])

    assert b[:4] == b"GGUF"
    u("I")
    u("Q")
    kv = {}
    for _ in range(u("Q")):
        k = s().decode()
        kv[k] = val(u("I"))
    return kv


def main():
    which, name, path, corpus = sys.argv[1:5]
    text = open(corpus, "rb").read().decode("utf-8")
    kv = gguf_kv(path)
    if which == "tinygrad":
        from tinygrad.llm.cli import SimpleTokenizer
        tok = SimpleTokenizer.from_gguf_kv(kv)
        encode = tok.encode
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
        import regex
        import gen_tokenizer_fixtures as ref
        pre = kv["tokenizer.ggml.pre"]
        pat = {"gpt-2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
               "llama-bpe": ref.PATS["llama3"], "gpt-4o": ref.PATS["o200k"]}[pre]
        vocab = {t: i for i, t in enumerate(kv["tokenizer.ggml.tokens"])}
        ranks = {}
        for r, m in enumerate(kv["tokenizer.ggml.merges"]):
            a, c = m.split(" ", 1)
            if a + c in vocab:
                ranks.setdefault((a, c), r)
        ignore = pre == "llama-bpe"
        rx = regex.compile(pat)

        def encode(t):
            out = []
            for w in rx.findall(t):
                out += [vocab[p] for p in ref.bpe_merges(w.encode("utf-8"), vocab, ranks, ignore, set())]
            return out
    best, n = 1e30, 0
    for _ in range(2):
        t0 = time.perf_counter()
        n = len(encode(text))
        best = min(best, time.perf_counter() - t0)
    print("peer %s %s %.2f MB/s tokens=%d" % (name, which, len(text.encode("utf-8")) / best / 1e6, n))


if __name__ == "__main__":
    main()
