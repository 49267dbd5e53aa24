/* test_base.c — the base layer: string builder, hashing, error slot. */
#include "base/base.h"
#include "test.h"

void suite_base(void) {
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
