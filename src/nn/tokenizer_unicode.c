/* tokenizer_unicode.c — UTF-8 decoding, Unicode class lookup and the three pre-tokenizers.
 *
 * A pre-tokenizer is the split regex of a vocabulary family applied with "find all" (leftmost match, alternatives
 * tried in order, greedy quantifiers with backtracking). Each regex is written here as a scanner: one function per
 * family tries its alternatives at a position and returns where the match ends; the backtracking each alternative
 * needs is spelled out in its comment. Every position is matched by some alternative, so the words cover the text.
 *   gpt-2:  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|
 *           \s+(?!\S)|\s+               (qwen2: the same with \p{N} for \p{N}{1,3})
 *   o200k:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
 *           [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
 *           \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * starcoder-style: every \p{N} character split off first, then gpt-2's regex on the rest.
 * (llama.cpp's unicode.cpp has such scanners for gpt-2 and llama3; these are written from the regexes.) */
#include "nn/tokenizer.h"

unsigned nn_toku_flags(uint32_t cp) {
  if (cp < 256) return nn_toku_latin1[cp];
  size_t lo = 0, hi = nn_toku_nranges;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cp < nn_toku_ranges[mid].lo) hi = mid;
    else if (cp > nn_toku_ranges[mid].hi) lo = mid + 1;
    else return nn_toku_ranges[mid].flags;
  }
  return 0;
}

uint32_t nn_toku_decode(const unsigned char *s, size_t n, size_t *len) {
  unsigned c = s[0];
  *len = 1;
  if (c < 0x80) return c;
  size_t need;
  uint32_t cp, min;
  if (c >= 0xC2 && c <= 0xDF) { need = 2; cp = c & 0x1F; min = 0x80; }
  else if (c >= 0xE0 && c <= 0xEF) { need = 3; cp = c & 0x0F; min = 0x800; }
  else if (c >= 0xF0 && c <= 0xF4) { need = 4; cp = c & 0x07; min = 0x10000; }
  else return TOKU_INVALID;
  if (n < need) return TOKU_INVALID;
  for (size_t k = 1; k < need; k++) {
    if ((s[k] & 0xC0) != 0x80) return TOKU_INVALID;
    cp = (cp << 6) | (s[k] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return TOKU_INVALID;
  *len = need;
  return cp;
}

size_t nn_toku_encode(uint32_t cp, char out[4]) {
  if (cp < 0x80) { out[0] = (char)cp; return 1; }
  if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* A block of the text as code points with their classes: cp[i], fl[i] for i < n. Reading at or past n sets *past:
 * unless the block ends the text, a match that looked there is redone on a longer block. */
typedef struct Cps { const uint32_t *cp; const uint8_t *fl; size_t n; bool *past; } Cps;

static inline bool inside(const Cps *c, size_t i) {
  if (i < c->n) return true;
  *c->past = true;
  return false;
}
static inline unsigned FL(const Cps *c, size_t i) { return inside(c, i) ? c->fl[i] : 0; }
static inline uint32_t CP(const Cps *c, size_t i) { return inside(c, i) ? c->cp[i] : TOKU_INVALID; }
static inline bool is_l(const Cps *c, size_t i) { return (FL(c, i) & TOKU_L) != 0; }
static inline bool is_n(const Cps *c, size_t i) { return (FL(c, i) & TOKU_N) != 0; }
static inline bool is_crlf(const Cps *c, size_t i) { return CP(c, i) == '\r' || CP(c, i) == '\n'; }
/* [^\s\p{L}\p{N}] */
static inline bool is_other(const Cps *c, size_t i) {
  return inside(c, i) && !(c->fl[i] & (TOKU_L | TOKU_N | TOKU_SPACE));
}
/* [^\r\n\p{L}\p{N}] */
static inline bool is_prefix(const Cps *c, size_t i) {
  return inside(c, i) && !(c->fl[i] & (TOKU_L | TOKU_N)) && c->cp[i] != '\r' && c->cp[i] != '\n';
}
#define UPPERISH (TOKU_LU | TOKU_LT | TOKU_LM | TOKU_LO | TOKU_M)  /* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] */
#define LOWERISH (TOKU_LL | TOKU_LM | TOKU_LO | TOKU_M)           /* [\p{Ll}\p{Lm}\p{Lo}\p{M}] */

static size_t run_flags(const Cps *c, size_t i, unsigned mask) {
  while (inside(c, i) && (c->fl[i] & mask)) i++;
  return i;
}
static size_t run_other(const Cps *c, size_t i) {
  while (is_other(c, i)) i++;
  return i;
}

static inline uint32_t lower_ascii(uint32_t cp) { return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp; }
/* A contraction 's 't 're 've 'm 'll 'd at i: its end, or i when there is none. fold: case-insensitive. */
static size_t contraction(const Cps *c, size_t i, bool fold) {
  if (CP(c, i) != '\'') return i;
  uint32_t a = CP(c, i + 1), b = CP(c, i + 2);
  if (fold) { a = lower_ascii(a); b = lower_ascii(b); }
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

/* \s+(?!\S)|\s+ at a whitespace position i: the whole run when it ends the text, else the run but its last
 * character (that one then starts the next word with what follows), a single whitespace character otherwise. */
static size_t spaces(const Cps *c, size_t i) {
  size_t e = run_flags(c, i, TOKU_SPACE);
  if (e == c->n || e - i == 1) return e;
  return e - 1;
}

/* \s*[\r\n]+ at i: \s* takes the whitespace run and gives back characters until one of \r \n follows, which [\r\n]+
 * takes with any \r \n after it; so the match ends after the run's last \r or \n (0 when the run has none). */
static size_t spaces_newlines(const Cps *c, size_t i) {
  size_t e = run_flags(c, i, TOKU_SPACE), last = 0;
  for (size_t k = i; k < e; k++)
    if (is_crlf(c, k)) last = k + 1;
  return last;
}

static size_t match_gpt2(const Cps *c, size_t i) {
  size_t e = contraction(c, i, false);
  if (e != i) return e;
  bool sp = CP(c, i) == ' ';
  /* ' ?X+' for X = letters, numbers, others: with the space when X follows it, else without */
  if (sp && is_l(c, i + 1)) return run_flags(c, i + 1, TOKU_L);
  if (is_l(c, i)) return run_flags(c, i, TOKU_L);
  if (sp && is_n(c, i + 1)) return run_flags(c, i + 1, TOKU_N);
  if (is_n(c, i)) return run_flags(c, i, TOKU_N);
  if (sp && is_other(c, i + 1)) return run_other(c, i + 1);
  if (is_other(c, i)) return run_other(c, i);
  return spaces(c, i);
}

static size_t match_llama3(const Cps *c, size_t i, size_t max_digits) {
  size_t e = contraction(c, i, true);
  if (e != i) return e;
  /* [^\r\n\p{L}\p{N}]?\p{L}+ */
  if (is_prefix(c, i) && is_l(c, i + 1)) return run_flags(c, i + 1, TOKU_L);
  if (is_l(c, i)) return run_flags(c, i, TOKU_L);
  /* \p{N}{1,3} (qwen2: \p{N}) */
  if (is_n(c, i)) {
    e = i;
    while (e < i + max_digits && is_n(c, e)) e++;
    return e;
  }
  /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
  size_t s = CP(c, i) == ' ' && is_other(c, i + 1) ? i + 1 : i;
  if (is_other(c, s)) {
    e = run_other(c, s);
    while (is_crlf(c, e)) e++;
    return e;
  }
  e = spaces_newlines(c, i);
  if (e) return e;
  return spaces(c, i);
}

/* o200k's two word alternatives, with the optional prefix character tried first (greedy ?), then without:
 * 1. UPPERISH* LOWERISH+ : UPPERISH* takes its run and gives back characters until a LOWERISH one follows
 *    (characters of Lm, Lo and M are in both classes), then LOWERISH+ takes its run;
 * 2. UPPERISH+ LOWERISH* : the UPPERISH run (at least one) and the LOWERISH run after it.
 * Either ends with an optional case-insensitive contraction. Returns 0 when neither matches. */
static size_t o200k_word(const Cps *c, size_t i, int alt) {
  for (int pre = is_prefix(c, i) ? 1 : 0; pre >= 0; pre--) {
    size_t s = i + (size_t)pre, a = run_flags(c, s, UPPERISH);
    if (alt == 1) {
      for (size_t u = a + 1; u-- > s;)
        if (FL(c, u) & LOWERISH) return contraction(c, run_flags(c, u, LOWERISH), true);
    } else if (a > s) {
      return contraction(c, run_flags(c, a, LOWERISH), true);
    }
  }
  return 0;
}

static size_t match_o200k(const Cps *c, size_t i) {
  size_t e = o200k_word(c, i, 1);
  if (e) return e;
  e = o200k_word(c, i, 2);
  if (e) return e;
  if (is_n(c, i)) {
    e = i;
    while (e < i + 3 && is_n(c, e)) e++;
    return e;
  }
  /*  ?[^\s\p{L}\p{N}]+[\r\n/]* */
  size_t s = CP(c, i) == ' ' && is_other(c, i + 1) ? i + 1 : i;
  if (is_other(c, s)) {
    e = run_other(c, s);
    while (is_crlf(c, e) || CP(c, e) == '/') e++;
    return e;
  }
  e = spaces_newlines(c, i);
  if (e) return e;
  return spaces(c, i);
}

/* The text is decoded a block of code points at a time (memory stays small for any length); a match that read past
 * its block (and the block does not end the text) is redone from a block that starts at it, twice as long when it
 * is the block's first match. */
#define PRE_BLOCK 65536
/* llama.cpp's two-regex splits (\p{N}, then gpt-2's): each number character is a word, gpt-2's regex runs on each
 * stretch between them as on a text of its own. */
static void pretokenize_digits(const char *text, size_t len, nn_tok_word_fn word, void *ctx) {
  size_t from = 0;
  for (size_t p = 0; p < len;) {
    size_t l;
    uint32_t cp = nn_toku_decode((const unsigned char *)text + p, len - p, &l);
    if (cp != TOKU_INVALID && (nn_toku_flags(cp) & TOKU_N)) {
      if (p > from) nn_tok_pretokenize(TOK_PRE_GPT2, text + from, p - from, word, ctx);
      word(ctx, text + p, l);
      from = p + l;
    }
    p += l;
  }
  if (len > from) nn_tok_pretokenize(TOK_PRE_GPT2, text + from, len - from, word, ctx);
}

void nn_tok_pretokenize(tok_pre pre, const char *text, size_t len, nn_tok_word_fn word, void *ctx) {
  if (pre == TOK_PRE_DIGITS_GPT2) { pretokenize_digits(text, len, word, ctx); return; }
  size_t bcap = PRE_BLOCK < len ? PRE_BLOCK : len, pos = 0;
  uint32_t *cp = tg_malloc((bcap ? bcap : 1) * sizeof *cp);
  uint8_t *fl = tg_malloc(bcap ? bcap : 1);
  size_t *off = tg_malloc((bcap + 1) * sizeof *off);
  const unsigned char *s = (const unsigned char *)text;
  while (pos < len) {
    size_t n = 0, p = pos;
    while (p < len && n < bcap) {
      size_t l;
      uint32_t v = nn_toku_decode(s + p, len - p, &l);
      cp[n] = v;
      fl[n] = (uint8_t)(v == TOKU_INVALID ? 0 : nn_toku_flags(v));
      off[n++] = p;
      p += l;
    }
    off[n] = p;
    bool final = p == len, past = false;
    Cps c = {cp, fl, n, &past};
    size_t i = 0;
    while (i < n) {
      past = false;
      size_t e = pre == TOK_PRE_GPT2     ? match_gpt2(&c, i)
                 : pre == TOK_PRE_LLAMA3 ? match_llama3(&c, i, 3)
                 : pre == TOK_PRE_QWEN2  ? match_llama3(&c, i, 1)
                                         : match_o200k(&c, i);
      TG_ASSERT(e > i && e <= n, "a pre-tokenizer matched nothing");
      if (past && !final) break;
      word(ctx, text + off[i], off[e] - off[i]);
      i = e;
    }
    if (i == 0 && !final) {  /* one match longer than the block */
      bcap *= 2;
      cp = tg_realloc(cp, bcap * sizeof *cp);
      fl = tg_realloc(fl, bcap);
      off = tg_realloc(off, (bcap + 1) * sizeof *off);
      continue;
    }
    pos = off[i];
  }
  tg_free(cp);
  tg_free(fl);
  tg_free(off);
}
