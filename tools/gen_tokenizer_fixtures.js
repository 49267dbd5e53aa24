// gen_tokenizer_fixtures.js — the JavaScript half of tools/gen_tokenizer_fixtures.py: loads two independent
// tokenizers from npm packages and writes, as JSON on stdout, their vocabularies and their ids for the texts given
// (a JSON array of strings, file argv[3]):
//   llama3: llama3-tokenizer-js 1.2.0 (Meta's Llama 3 tokenizer.json vocabulary and merges, its own BPE)
//   o200k:  js-tiktoken 1.0.21 (OpenAI's o200k_base ranks and split regex, tiktoken's BPE, the JS regex engine)
// Usage: node tools/gen_tokenizer_fixtures.js NODE_MODULES_DIR TEXTS.json > dump.json
const path = require("path");
const fs = require("fs");
const mods = path.resolve(process.argv[2]);
const texts = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const { llama3Tokenizer } = require(path.join(mods, "llama3-tokenizer-js/bundle/commonjs-llama3-tokenizer-with-baked-data.cjs"));
const { getEncoding } = require(path.join(mods, "js-tiktoken/dist/index.cjs"));

const l3 = llama3Tokenizer;
const merges = [...l3.merges.entries()].sort((a, b) => a[1] - b[1]).map((e) => e[0]);
const llama3 = {
  vocab: l3.vocabById,
  merges,
  ids: texts.map((t) => l3.encode(t, { bos: false, eos: false })),
};

const enc = getEncoding("o200k_base");
const ranks = [];
for (const [rank, bytes] of enc.textMap.entries()) ranks.push([rank, Buffer.from(bytes).toString("base64")]);
const o200k = {
  ranks,
  special: enc.specialTokens,
  pat_str: enc.patStr,
  ids: texts.map((t) => enc.encode(t, [], [])),
};
process.stdout.write(JSON.stringify({ llama3, o200k }));
