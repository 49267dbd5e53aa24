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

void suite_base(void) {
  test_knobs();
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
