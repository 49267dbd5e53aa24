/* tokenizer_chat.c — streaming decode (token ids -> complete UTF-8 text) and chat templates written in C.
 *
 * The stream keeps the bytes of an incomplete UTF-8 sequence until the tokens completing it arrive (byte-level BPE
 * and byte-fallback pieces split characters across tokens); bytes that can never be valid UTF-8 become U+FFFD, so
 * what it hands out is always valid UTF-8.
 *
 * Templates: "llama3" is llama.cpp's built-in llama-3 template (src/llama-chat.cpp: header, trimmed content,
 * <|eot_id|>); "chatml" its chatml one; "gpt-oss" OpenAI's harmony format as gpt-oss's chat template renders a chat
 * without tools: a system message with the model identity, knowledge cutoff, today's date, reasoning effort and the
 * valid channels; the caller's system message as the developer message's instructions; assistant turns on the final
 * channel, ended by <|end|> (<|return|> for a last assistant turn when no generation prompt follows). */
#include <stdio.h>
#include <time.h>

#include "nn/tokenizer.h"

const char *nn_tok_piece_for_decode(const tg_tokenizer *t, int32_t id, unsigned flags, bool *started, size_t *len);
bool nn_tok_is_harmony(const tg_tokenizer *t);

struct tg_token_stream {
  const tg_tokenizer *t;
  unsigned flags;
  bool started;
  StrBuf pend, out;
};

tg_token_stream *tg_token_stream_new(const tg_tokenizer *t, unsigned flags) {
  if (!t) { tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_token_stream_new: the tokenizer is NULL"); return NULL; }
  if (flags & ~(unsigned)TG_DETOKENIZE_SPECIAL) {
    tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_token_stream_new: unknown flags 0x%x", flags);
    return NULL;
  }
  tg_token_stream *s = tg_calloc(1, sizeof *s);
  s->t = t;
  s->flags = flags;
  sb_init(&s->pend);
  sb_init(&s->out);
  return s;
}

void tg_token_stream_free(tg_token_stream *s) {
  if (!s) return;
  sb_free(&s->pend);
  sb_free(&s->out);
  tg_free(s);
}

static void put_bytes(StrBuf *b, const char *p, size_t n) {
  for (size_t i = 0; i < n; i++) sb_putc(b, p[i]);
}
#define REPLACEMENT "\xEF\xBF\xBD"

/* Whether s[0..n) (n below the sequence's length) can still become a valid sequence. */
static bool valid_prefix(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0xC2 || c > 0xF4) return false;
  for (size_t k = 1; k < n; k++) {
    unsigned lo = 0x80, hi = 0xBF;
    if (k == 1 && c == 0xE0) lo = 0xA0;
    if (k == 1 && c == 0xED) hi = 0x9F;
    if (k == 1 && c == 0xF0) lo = 0x90;
    if (k == 1 && c == 0xF4) hi = 0x8F;
    if (s[k] < lo || s[k] > hi) return false;
  }
  return true;
}

/* Moves the complete part of pend to out; with final, the rest too (as U+FFFD). */
static void drain(tg_token_stream *s, bool final) {
  const unsigned char *p = (const unsigned char *)s->pend.s;
  size_t n = s->pend.len, i = 0;
  while (i < n) {
    unsigned c = p[i];
    size_t need = c < 0x80                 ? 1
                  : c >= 0xC2 && c <= 0xDF ? 2
                  : c >= 0xE0 && c <= 0xEF ? 3
                  : c >= 0xF0 && c <= 0xF4 ? 4
                                           : 0;
    if (need > 1 && i + need > n && valid_prefix(p + i, n - i)) {
      if (!final) break;           /* hold the incomplete sequence back */
      put_bytes(&s->out, REPLACEMENT, 3);
      i = n;
      break;
    }
    size_t l;
    uint32_t cp = nn_toku_decode(p + i, n - i, &l);
    if (cp == TOKU_INVALID) put_bytes(&s->out, REPLACEMENT, 3);
    else put_bytes(&s->out, (const char *)p + i, l);
    i += l;
  }
  if (i && n > i) memmove(s->pend.s, s->pend.s + i, n - i);
  s->pend.len = n - i;
}

static void stream_result(tg_token_stream *s, const char **text, size_t *len) {
  if (text) *text = s->out.s ? s->out.s : "";
  if (len) *len = s->out.len;
}

tg_status tg_token_stream_feed(tg_token_stream *s, int32_t id, const char **text, size_t *len) {
  if (text) *text = "";
  if (len) *len = 0;
  if (!s) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_token_stream_feed: the stream is NULL");
  if (id < 0 || (size_t)id >= tg_tokenizer_vocab_size(s->t))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_token_stream_feed: id %d is outside the vocabulary (%zu tokens)",
                        id, tg_tokenizer_vocab_size(s->t));
  if (s->out.s) s->out.s[0] = 0;
  s->out.len = 0;
  size_t l = 0;
  const char *p = nn_tok_piece_for_decode(s->t, id, s->flags, &s->started, &l);
  if (p) put_bytes(&s->pend, p, l);
  drain(s, false);
  stream_result(s, text, len);
  return TG_OK;
}

tg_status tg_token_stream_flush(tg_token_stream *s, const char **text, size_t *len) {
  if (text) *text = "";
  if (len) *len = 0;
  if (!s) return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_token_stream_flush: the stream is NULL");
  if (s->out.s) s->out.s[0] = 0;
  s->out.len = 0;
  drain(s, true);
  s->started = false;
  stream_result(s, text, len);
  return TG_OK;
}

/* ---- chat templates ---- */
const char *tg_chat_template_name(const tg_tokenizer *t) {
  if (!t) return NULL;
  const char *tmpl = tg_tokenizer_chat_template(t);
  if (nn_tok_is_harmony(t) || (tmpl && strstr(tmpl, "<|start|>") && strstr(tmpl, "<|channel|>"))) return "gpt-oss";
  if ((tmpl && strstr(tmpl, "<|start_header_id|>")) || tg_tokenizer_find(t, "<|start_header_id|>", 19) >= 0)
    return "llama3";
  if ((tmpl && strstr(tmpl, "<|im_start|>")) || tg_tokenizer_find(t, "<|im_start|>", 12) >= 0) return "chatml";
  return NULL;
}

static void put_trimmed(StrBuf *b, const char *s) {
  size_t n = strlen(s), i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
  while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
  put_bytes(b, s + i, n - i);
}

static tg_status render_gpt_oss(StrBuf *b, const tg_chat_message *msgs, size_t n, bool gen) {
  char date[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(date, sizeof date, "%Y-%m-%d", &tm);
  sb_printf(b, "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
               "Knowledge cutoff: 2024-06\nCurrent date: %s\n\nReasoning: medium\n\n"
               "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>",
            date);
  size_t i = 0;
  if (n && (strcmp(msgs[0].role, "system") == 0 || strcmp(msgs[0].role, "developer") == 0)) {
    sb_printf(b, "<|start|>developer<|message|># Instructions\n\n%s\n\n<|end|>", msgs[0].content);
    i = 1;
  }
  for (; i < n; i++) {
    if (strcmp(msgs[i].role, "user") == 0) {
      sb_printf(b, "<|start|>user<|message|>%s<|end|>", msgs[i].content);
    } else if (strcmp(msgs[i].role, "assistant") == 0) {
      sb_printf(b, "<|start|>assistant<|channel|>final<|message|>%s%s", msgs[i].content,
                i + 1 == n && !gen ? "<|return|>" : "<|end|>");
    } else {
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_chat_render: gpt-oss: message %zu has role \"%s\" (user, "
                          "assistant, and system or developer first)", i, msgs[i].role);
    }
  }
  if (gen) sb_puts(b, "<|start|>assistant");
  return TG_OK;
}

tg_status tg_chat_render(const char *template_name, const tg_chat_message *msgs, size_t n,
                         bool add_generation_prompt, char **out) {
  if (out) *out = NULL;
  if (!template_name || !out || (!msgs && n))
    return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_chat_render: NULL %s", !template_name ? "template name" :
                        !out ? "out" : "messages with a non-zero count");
  for (size_t i = 0; i < n; i++)
    if (!msgs[i].role || !msgs[i].content || !msgs[i].role[0])
      return tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_chat_render: message %zu has no role or no content", i);
  StrBuf b;
  sb_init(&b);
  tg_status st = TG_OK;
  if (strcmp(template_name, "llama3") == 0) {
    for (size_t i = 0; i < n; i++) {
      sb_printf(&b, "<|start_header_id|>%s<|end_header_id|>\n\n", msgs[i].role);
      put_trimmed(&b, msgs[i].content);
      sb_puts(&b, "<|eot_id|>");
    }
    if (add_generation_prompt) sb_puts(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
  } else if (strcmp(template_name, "chatml") == 0) {
    for (size_t i = 0; i < n; i++) sb_printf(&b, "<|im_start|>%s\n%s<|im_end|>\n", msgs[i].role, msgs[i].content);
    if (add_generation_prompt) sb_puts(&b, "<|im_start|>assistant\n");
  } else if (strcmp(template_name, "gpt-oss") == 0) {
    st = render_gpt_oss(&b, msgs, n, add_generation_prompt);
  } else {
    st = tg_set_error(TG_ERR_INVALID_ARGUMENT, "tg_chat_render: unknown template \"%s\" (llama3, chatml, gpt-oss)",
                      template_name);
  }
  if (st != TG_OK) { sb_free(&b); return st; }
  *out = sb_take(&b);
  return TG_OK;
}
