#!/usr/bin/env python3
"""gen_tokenizer_fixtures.py — writes tests/data/tokenizer/: vocabulary-only GGUFs for the llama-3, qwen2 and o200k
(gpt-oss) pre-tokenizers, cut down from the real vocabularies, and cases.txt, the texts with their expected ids.

Sources (npm packages, installed in a scratch folder: `npm install js-tiktoken@1.0.21 llama3-tokenizer-js@1.2.0`):
  llama3-tokenizer-js: Meta's Llama 3 vocabulary (128,256 tokens) and 280,147 merges, with its own JS BPE;
  js-tiktoken: OpenAI's o200k_base ranks and split regex, with tiktoken's BPE in JS.
tools/gen_tokenizer_fixtures.js dumps both and their ids for the texts. This script then
  1. re-derives every id with an independent Python reference (the split regexes run by python3-regex, BPE by the
     lowest merge rank, llama-3's whole-word rule) on the full vocabularies and asserts agreement with the JS
     tokenizers, and for llama-3 with llama.cpp's models/ggml-vocab-llama-bpe.gguf.out (ids from Meta's
     tokenizer.json through HF tokenizers);
  2. keeps only the tokens those encodings need: the 256 byte tokens, every token a merge produced on the way, the
     whole words llama-3 takes directly, and the chat special tokens. For BPE this is exact: at each step the merge
     applied is the lowest-ranked of the pairs present, and a subset that keeps it keeps it lowest. Ids are renumbered
     densely in the original order; the key tinygrad.fixture.original_ids maps them back, and the expected ids in
     cases.txt are the ORIGINAL ones (the JS tokenizers' and llama.cpp's), which the test maps through that key;
  3. o200k has ranks, no merges: the merges written are every split of a kept token into two kept tokens, ordered by
     the token's rank (how Hugging Face converts tiktoken vocabularies), and the reference re-encodes every text
     with those merges on the cut vocabulary to check nothing changed;
  4. qwen2's split (llama-3's with single digits) has no independent tokenizer here: its cases come from the Python
     reference alone, on the llama-3 vocabulary.
cases.txt lines: VOCAB<TAB>FLAGS<TAB>TEXT AS HEX<TAB>IDS (space separated; FLAGS 0: no special handling).
With --full DIR it writes instead (after the same checks) the uncut vocabularies as DIR/llama3-full.gguf and
DIR/o200k-full.gguf (8 and 14 MB: for bench/bench_tokenizer, not for the repository; bench/run.sh does this).
Run: /usr/bin/python3 tools/gen_tokenizer_fixtures.py NODE_MODULES_DIR [--full DIR]"""
import base64
import json
import os
import struct
import subprocess
import sys
import tempfile

import regex

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "tokenizer")
VOCAB = os.path.join(ROOT, "tests", "data", "vocab")

PATS = {
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "o200k": r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}

EXTRA = [
    "Hello World HELLO world hello", "I'm you're he'LL THEY'VE we'd it's Don'T o'clock",
    "CamelCaseWord XMLHttpRequest iPhone McDONALD", "path/to/file.txt a//b /// x/\n/y", "12345678901 3.14159 1,000,000",
    "tab\there  two spaces   three\n\nnewlines\r\nwindows\r\n", "   leading and trailing   ", "\n\n\n", " \n \n ",
    "日本語のテキスト 中文字符 한국어", "Ελληνικά Русский текст العربية עברית", "emoji 🚀🔥 👍🏽 👨‍👩‍👧",
    "combining e\u0301 a\u0300 n\u0303 \u0301start X\u0301Y", "ǅungla ǈ titlecase Ǆ", "ʰmodifier ʰʰ aʰb",
    "mixed123abc ABC123 ½ ⅓ ²³ ٣٤٥", "'s 's 'S 'x ' 'LL 'Re", "func(a, b) { return a+b; } // comment",
    "<html><body>x</body></html>", "$100 & 50% #hash @user", "ﬁ ligature ſ long s", "\u00a0nbsp\u2003em\u3000ideo",
    "a\u200bzero\u200dwidth", "x" * 300, "ab" * 200, "The quick brown fox jumps over the lazy dog. " * 3,
    "\t\t\tindented\n\t\tcode()\n", "?!?! ... ,,, ;;", "don't DON'T Don't dOn'T",
]


def long_text():
    """~70,000 code points of tricky fragments: longer than the C pre-tokenizer's 65,536-code-point block, so words
    straddle a block boundary (any of them may, the fragments' lengths vary)."""
    frags = ["\u02b0BCDEFGHIJke", "HelloWorld", "   ", "\n\n", "'re", "I'VE", "12345", "\u65e5\u672c\u8a9e", " x/y//",
             "e\u0301", "\U0001f999", "  \t\n ", "don't", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "a" * 37, " ", ".", "\r\n"]
    out, n, x = [], 0, 88172645463325252
    while n < 70000:
        x ^= (x << 13) & (2 ** 64 - 1)
        x ^= x >> 7
        x ^= (x << 17) & (2 ** 64 - 1)
        f = frags[(x >> 8) % len(frags)]
        out.append(f)
        n += len(f)
    return "".join(out)


EXTRA.append(long_text())


def byte_alphabet():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


B2U = byte_alphabet()
U2B = {v: k for k, v in B2U.items()}


def to_alpha(bs):
    return "".join(B2U[b] for b in bs)


def bpe_merges(word, vocab, ranks, ignore_merges, trace):
    """Lowest merge rank first, leftmost on ties; returns the token strings."""
    s = to_alpha(word)
    if ignore_merges and len(word) > 1 and s in vocab:
        trace.add(s)
        return [s]
    syms = [B2U[b] for b in word]
    while len(syms) > 1:
        best = None
        for i in range(len(syms) - 1):
            r = ranks.get((syms[i], syms[i + 1]))
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        syms[i:i + 2] = [syms[i] + syms[i + 1]]
        trace.add(syms[i])
    return syms


def bpe_tiktoken(word, rank_of):
    """tiktoken's rule: merge the adjacent pair whose concatenation has the lowest rank, leftmost on ties."""
    parts = [bytes([b]) for b in word]
    trace = set()
    while len(parts) > 1:
        best = None
        for i in range(len(parts) - 1):
            r = rank_of.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
        trace.add(parts[i])
    return parts, trace


def split(pre, text):
    return regex.findall(PATS[pre], text)


def read_inp(path):
    raw = open(path, "rb").read().decode("utf-8")
    sep = "\n__ggml_vocab_test__\n"
    out, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(sep, pos)
        if nxt < 0:
            out.append(raw[pos:])
            break
        out.append(raw[pos:nxt])
        pos = nxt + len(sep)
    return out


# ---- a GGUF v3 writer for metadata-only files ----
def gguf_str(s):
    b = s if isinstance(s, bytes) else s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_write(path, kv):
    out = [b"GGUF", struct.pack("<IQQ", 3, 0, len(kv))]
    for key, (typ, val) in kv.items():
        out.append(gguf_str(key))
        if typ == "str":
            out.append(struct.pack("<I", 8) + gguf_str(val))
        elif typ == "u32":
            out.append(struct.pack("<II", 4, val))
        elif typ == "bool":
            out.append(struct.pack("<IB", 7, 1 if val else 0))
        elif typ == "strs":
            out.append(struct.pack("<IIQ", 9, 8, len(val)) + b"".join(gguf_str(v) for v in val))
        elif typ == "i32s":
            out.append(struct.pack("<IIQ", 9, 5, len(val)) + struct.pack("<%di" % len(val), *val))
        elif typ == "u32s":
            out.append(struct.pack("<IIQ", 9, 4, len(val)) + struct.pack("<%dI" % len(val), *val))
        else:
            raise ValueError(typ)
    open(path, "wb").write(b"".join(out))


def write_vocab(path, pre, keep, text_of, special_ids, merges, extra):
    """keep: sorted original ids; text_of(id) -> token string; merges: list of (left, right) strings."""
    new = {o: i for i, o in enumerate(keep)}
    tokens = [text_of(o) for o in keep]
    kv = {
        "general.architecture": ("str", "llama"),
        "general.name": ("str", "tinygrad.c tokenizer fixture (%s)" % pre),
        "tokenizer.ggml.model": ("str", "gpt2"),
        "tokenizer.ggml.pre": ("str", pre),
        "tokenizer.ggml.tokens": ("strs", tokens),
        "tokenizer.ggml.token_type": ("i32s", [3 if o in special_ids else 1 for o in keep]),
        "tokenizer.ggml.merges": ("strs", ["%s %s" % m for m in merges]),
    }
    for k, (t, v) in extra.items():
        kv[k] = (t, new[v] if t == "u32" else v)
    kv["tinygrad.fixture.original_ids"] = ("u32s", keep)
    if path:
        gguf_write(path, kv)
    return new


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--full"):
        sys.exit(__doc__)
    mods = sys.argv[1]
    full_dir = sys.argv[3] if len(sys.argv) == 4 else None
    cpp_texts = read_inp(os.path.join(OUT, "ggml-vocab-llama-bpe.gguf.inp"))
    cpp_ids = [[int(x) for x in line.split()] for line in
               open(os.path.join(OUT, "ggml-vocab-llama-bpe.gguf.out"), encoding="utf-8").read().split("\n")[:len(cpp_texts)]]
    texts = cpp_texts + EXTRA
    with tempfile.TemporaryDirectory() as tmp:
        tj = os.path.join(tmp, "texts.json")
        json.dump(texts, open(tj, "w"))
        dump = json.loads(subprocess.check_output(["node", os.path.join(ROOT, "tools", "gen_tokenizer_fixtures.js"),
                                                   mods, tj]))
    cases = []

    # ---- llama-3 (and qwen2's split on the same vocabulary) ----
    l3 = dump["llama3"]
    vocab = {s: i for i, s in enumerate(l3["vocab"])}
    ranks = {}
    for r, m in enumerate(l3["merges"]):
        a, b = m.split(" ")
        if a + b in vocab:
            ranks.setdefault((a, b), r)
    used = set()
    for k, text in enumerate(texts):
        ids = []
        for w in split("llama3", text):
            ids += [vocab[s] for s in bpe_merges(w.encode("utf-8"), vocab, ranks, True, used)]
        assert ids == l3["ids"][k], ("llama3 reference != llama3-tokenizer-js", repr(text), ids, l3["ids"][k])
        if k < len(cpp_texts):
            assert ids == cpp_ids[k], ("llama3 reference != llama.cpp .out", repr(text), ids, cpp_ids[k])
        cases.append(("llama3", text, ids))
    qwen_cases = []
    for text in texts:
        ids = []
        for w in split("qwen2", text):
            ids += [vocab[s] for s in bpe_merges(w.encode("utf-8"), vocab, ranks, False, used)]
        qwen_cases.append(("qwen2", text, ids))
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
             "<|eom_id|>", "<|python_tag|>"]
    special = {vocab[n] for n in names}
    keep = sorted({vocab[B2U[b]] for b in range(256)} | {vocab[s] for s in used} | special)
    kept = {l3["vocab"][i] for i in keep}
    merges = [(a, b) for (a, b), r in sorted(ranks.items(), key=lambda e: e[1]) if a in kept and b in kept and a + b in kept]
    ids_extra = {"tokenizer.ggml.bos_token_id": ("u32", vocab["<|begin_of_text|>"]),
                 "tokenizer.ggml.eos_token_id": ("u32", vocab["<|end_of_text|>"]),
                 "tokenizer.ggml.eot_token_id": ("u32", vocab["<|eot_id|>"]),
                 "tokenizer.ggml.add_bos_token": ("bool", True)}
    os.makedirs(OUT, exist_ok=True)
    if full_dir:
        all_ids = list(range(len(l3["vocab"])))
        write_vocab(os.path.join(full_dir, "llama3-full.gguf"), "llama-bpe", all_ids, lambda i: l3["vocab"][i],
                    {i for i in all_ids if i >= 128000}, [tuple(m.split(" ")) for m in l3["merges"]], ids_extra)
    for pre, fname, pcases in (("llama-bpe", "llama3.gguf", cases), ("qwen2", "qwen2.gguf", qwen_cases)):
        new = write_vocab(None if full_dir else os.path.join(OUT, fname), pre, keep, lambda i: l3["vocab"][i], special, merges, ids_extra)
        # the cut vocabulary must give the same ids
        svocab = {l3["vocab"][o]: n for o, n in new.items()}
        sranks = {m: r for r, m in enumerate(merges)}
        for name, text, ids in pcases:
            got = []
            for w in split("llama3" if name == "llama3" else "qwen2", text):
                got += [keep[svocab[s]] for s in bpe_merges(w.encode("utf-8"), svocab, sranks, name == "llama3", set())]
            assert got == ids, ("cut vocabulary changed", name, repr(text))
    cases += qwen_cases

    # ---- o200k ----
    o2 = dump["o200k"]
    rank_of = {base64.b64decode(b): r for r, b in o2["ranks"]}
    tok_of = {r: b for b, r in rank_of.items()}
    used_b = set()
    o_cases = []
    for k, text in enumerate(texts):
        ids = []
        for w in split("o200k", text):
            parts, tr = bpe_tiktoken(w.encode("utf-8"), rank_of)
            used_b |= tr
            ids += [rank_of[p] for p in parts]
        assert ids == o2["ids"][k], ("o200k reference != js-tiktoken", repr(text), ids, o2["ids"][k])
        o_cases.append(("o200k", text, ids))
    # harmony's special tokens: o200k_harmony's ids (tiktoken; from memory), used here only by name
    harmony = {"<|startoftext|>": 199998, "<|endoftext|>": 199999, "<|return|>": 200002, "<|constrain|>": 200003,
               "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008,
               "<|call|>": 200012}
    keep_b = sorted({rank_of[bytes([b])] for b in range(256)} | {rank_of[t] for t in used_b})
    kept_b = {tok_of[r] for r in keep_b}
    merges = []
    for r in keep_b:
        t = tok_of[r]
        for i in range(1, len(t)):
            if t[:i] in kept_b and t[i:] in kept_b:
                merges.append((r, rank_of[t[:i]], rank_of[t[i:]], t[:i], t[i:]))
    merges.sort()
    merges = [(to_alpha(a), to_alpha(b)) for _, _, _, a, b in merges]
    keep_all = keep_b + sorted(harmony.values())
    text_of = lambda i: to_alpha(tok_of[i]) if i in tok_of else {v: k for k, v in harmony.items()}[i]
    new = write_vocab(None if full_dir else os.path.join(OUT, "o200k.gguf"), "gpt-4o", keep_all, text_of, set(harmony.values()), merges,
                      {"tokenizer.ggml.bos_token_id": ("u32", harmony["<|startoftext|>"]),
                       "tokenizer.ggml.eos_token_id": ("u32", harmony["<|return|>"]),
                       "tokenizer.ggml.add_bos_token": ("bool", False)})
    if full_dir:
        all_b = sorted(tok_of)
        fm = []
        for r in all_b:
            t = tok_of[r]
            for i in range(1, len(t)):
                if t[:i] in rank_of and t[i:] in rank_of:
                    fm.append((r, rank_of[t[:i]], rank_of[t[i:]], t[:i], t[i:]))
        fm.sort()
        every = all_b + sorted(harmony.values())
        write_vocab(os.path.join(full_dir, "o200k-full.gguf"), "gpt-4o", every, text_of, set(harmony.values()),
                    [(to_alpha(a), to_alpha(b)) for _, _, _, a, b in fm],
                    {"tokenizer.ggml.bos_token_id": ("u32", harmony["<|startoftext|>"]),
                     "tokenizer.ggml.eos_token_id": ("u32", harmony["<|return|>"]),
                     "tokenizer.ggml.add_bos_token": ("bool", False)})
    svocab = {text_of(o): n for o, n in new.items()}
    sranks = {m: r for r, m in enumerate(merges)}
    for name, text, ids in o_cases:
        got = []
        for w in split("o200k", text):
            got += [keep_all[svocab[s]] for s in bpe_merges(w.encode("utf-8"), svocab, sranks, False, set())]
        assert got == ids, ("cut o200k vocabulary changed", repr(text), got, ids)
    cases += o_cases

    if full_dir:
        print("wrote %s/llama3-full.gguf, o200k-full.gguf" % full_dir, file=sys.stderr)
        return
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("# GENERATED by tools/gen_tokenizer_fixtures.py; do not edit. VOCAB FLAGS TEXT(hex) ORIGINAL-IDS\n")
        for name, text, ids in cases:
            f.write("%s\t0\t%s\t%s\n" % (name, text.encode("utf-8").hex(), " ".join(map(str, ids))))
    print("wrote %s: llama3 %d tokens, o200k %d tokens, %d cases" % (OUT, len(keep), len(keep_all), len(cases)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
