/* tokenizer.h — internals of the tokenizer (tokenizer.c, tokenizer_unicode.c, tokenizer_chat.c): the Unicode class
 * tables (generated into tokenizer_unicode_data.c), UTF-8 decoding, the pre-tokenizers (the gpt-2, llama-3 and
 * o200k split regexes, each written as a hand scanner over Unicode classes) and the tokenizer's own structure. */
#ifndef TG_NN_TOKENIZER_H
#define TG_NN_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* Unicode classes (bits; tools/gen_unicode_tables.py writes them in this order) */
enum {
  TOKU_LU = 1, TOKU_LL = 2, TOKU_LT = 4, TOKU_LM = 8, TOKU_LO = 16, TOKU_M = 32, TOKU_N = 64, TOKU_SPACE = 128,
  TOKU_L = TOKU_LU | TOKU_LL | TOKU_LT | TOKU_LM | TOKU_LO
};
typedef struct nn_toku_range { uint32_t lo, hi; uint8_t flags; } nn_toku_range;  /* hi inclusive */
extern const uint8_t nn_toku_latin1[256];
extern const nn_toku_range nn_toku_ranges[];
extern const size_t nn_toku_nranges;

unsigned nn_toku_flags(uint32_t cp);
/* Decodes one UTF-8 sequence at s[0..n) (n >= 1): its code point and byte length. Malformed input (a stray
 * continuation byte, a truncated, overlong or surrogate sequence, a value past U+10FFFF) is one byte long and gives
 * TOKU_INVALID, which has no class: such bytes are "other" characters to the pre-tokenizers. */
#define TOKU_INVALID 0xFFFFFFFFu
uint32_t nn_toku_decode(const unsigned char *s, size_t n, size_t *len);
size_t nn_toku_encode(uint32_t cp, char out[4]);  /* the UTF-8 bytes of a valid code point */

/* Pre-tokenizers: the split regex of each family. */
/* TOK_PRE_QWEN2 is llama3's regex with \\p{N} instead of \\p{N}{1,3} (single digits); TOK_PRE_DIGITS_GPT2 splits
 * every \\p{N} character off first and runs gpt-2's regex on the text between (starcoder, refact, command-r...). */
typedef enum tok_pre { TOK_PRE_GPT2, TOK_PRE_LLAMA3, TOK_PRE_QWEN2, TOK_PRE_O200K, TOK_PRE_DIGITS_GPT2 } tok_pre;
/* Splits text[0..len) into words, in order, calling word(ctx, start, length) for each (words cover the text). Memory
 * stays bounded by the longest word, not the text. */
typedef void (*nn_tok_word_fn)(void *ctx, const char *word, size_t len);
void nn_tok_pretokenize(tok_pre pre, const char *text, size_t len, nn_tok_word_fn word, void *ctx);

#endif
