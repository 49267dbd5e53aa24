/* test_base.c — the base layer: string builder, hashing, error slot, env knobs read once. */
#include "base/base.h"
#include "test.h"

/* A knob is read at first use and kept; tg_knobs_reload() reads it again; unset, empty and non-integer give the
 * caller's default (each call site keeps its own default). */
static void test_knobs(void) {
  const char *k = "TG_TEST_BASE_KNOB";
  unsetenv(k);
  tg_knobs_reload();
  CHECK_EQ_INT(tg_getenv_int(k, 7), 7);
  setenv(k, "5", 1);
  CHECK_EQ_INT(tg_getenv_int(k, 7), 7); /* kept from the first read: the environment is not read again */
  tg_knobs_reload();
  CHECK_EQ_INT(tg_getenv_int(k, 7), 5);
  CHECK_EQ_INT(tg_getenv_int(k, -1), 5);
  setenv(k, "-12", 1);
  tg_knobs_reload();
  CHECK_EQ_INT(tg_getenv_int(k, 7), -12);
  setenv(k, "3x", 1); /* not an integer: the default, as before the cache */
  tg_knobs_reload();
  CHECK_EQ_INT(tg_getenv_int(k, 7), 7);
  setenv(k, "", 1);
  tg_knobs_reload();
  CHECK_EQ_INT(tg_getenv_int(k, 9), 9);
  test_setenv(k, "4"); /* the tests' helper reloads */
  CHECK_EQ_INT(tg_getenv_int(k, 7), 4);
  test_unsetenv(k);
  CHECK_EQ_INT(tg_getenv_int(k, 7), 7);
  /* many names: each keeps its own slot */
  char name[32];
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "TG_TEST_BASE_KNOB_%d", i);
    setenv(name, i % 2 ? "1" : "0", 1);
  }
  tg_knobs_reload();
  int right = 0;
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "TG_TEST_BASE_KNOB_%d", i);
    right += tg_getenv_int(name, -1) == i % 2;
    unsetenv(name);
  }
  tg_knobs_reload();
  CHECK_EQ_INT(right, 40);
}

/* Text knobs share the table: read once, kept across a reload that sees the same text (the pointer stays valid),
 * replaced when the text changed; unset and empty are NULL. */
static void test_text_knobs(void) {
  const char *k = "TG_TEST_BASE_TEXT_KNOB";
  test_unsetenv(k);
  CHECK(tg_getenv_str(k) == NULL);
  setenv(k, "float16", 1);
  CHECK(tg_getenv_str(k) == NULL); /* not read again before a reload */
  tg_knobs_reload();
  const char *v = tg_getenv_str(k);
  CHECK(v && strcmp(v, "float16") == 0);
  tg_knobs_reload();
  CHECK(tg_getenv_str(k) == v); /* unchanged text: the same string */
  test_setenv(k, "bfloat16");
  CHECK(tg_getenv_str(k) && strcmp(tg_getenv_str(k), "bfloat16") == 0);
  CHECK_EQ_INT(tg_getenv_int(k, -3), -3); /* not an integer: the int view gives the default */
  test_setenv(k, "");
  CHECK(tg_getenv_str(k) == NULL);
  test_unsetenv(k);
  CHECK(tg_getenv_str(k) == NULL);
}

/* UTF-8 by RFC 3629: ASCII, 2-4 byte forms, and every malformed kind refused. */
static void test_utf8(void) {
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"a", 1), 1);
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xc3\xa9", 2), 2);         /* U+00E9 */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 3), 3);     /* U+20AC */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4); /* U+1F600 */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 2), 0);     /* cut off */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\x80", 1), 0);             /* stray continuation */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xc0\xaf", 2), 0);         /* overlong '/' */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xe0\x80\xaf", 3), 0);     /* overlong, 3 bytes */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xed\xa0\x80", 3), 0);     /* surrogate U+D800 */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0); /* above U+10FFFF */
  CHECK_EQ_INT((int)tg_utf8_seq_len((const unsigned char *)"\xc3\x28", 2), 0);         /* bad continuation */
  CHECK(tg_utf8_valid("caf\xc3\xa9 \xe2\x82\xac", 9));
  CHECK(!tg_utf8_valid("caf\xc3", 4));
  CHECK(tg_utf8_valid("", 0));
}

void suite_base(void) {
  test_knobs();
  test_text_knobs();
  test_utf8();
  StrBuf b;
  sb_init(&b);
  sb_printf(&b, "%d-%s", 42, "x");
  sb_putc(&b, '!');
  CHECK_EQ_STR(b.s, "42-x!");
  char *s = sb_take(&b);
  CHECK_EQ_STR(s, "42-x!");
  tg_free(s);
  CHECK(tg_hash_bytes("abc", 3, 1) == tg_hash_bytes("abc", 3, 1));
  CHECK(tg_hash_bytes("abc", 3, 1) != tg_hash_bytes("abd", 3, 1));
  CHECK(tg_set_error(TG_ERR_INVALID_ARGUMENT, "add: shapes (%d,) and (%d,)", 3, 4) == TG_ERR_INVALID_ARGUMENT);
  CHECK_EQ_STR(tg_last_error(), "add: shapes (3,) and (4,)");
  CHECK(tg_last_status() == TG_ERR_INVALID_ARGUMENT);
  tg_clear_error();
  CHECK_EQ_STR(tg_last_error(), "");
}
