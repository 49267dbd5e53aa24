/* test_memory.c — UOp lifetimes (DESIGN.md decision 1): hash-consing identity, uop_keep/uop_drop across scopes, and
 * ten million nodes interned and dropped in scoped batches with the live count and the resident set size back at
 * their baseline afterwards (a 10,000-step training loop must not grow memory). Under ASan+UBSan a smaller count runs
 * and the RSS check is skipped: the sanitizer keeps freed memory in quarantine. */
#include <stdio.h>
#include <unistd.h>

#include "test.h"
#include "uop/symbolic.h"

/* Resident set size in bytes (/proc/self/statm, second field), 0 when unreadable. */
static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  int got = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  return got == 2 ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

static void test_interning_identity(void) {
  UOpScope s = uop_scope_begin();
  UOp *x = uop_variable("x", 0, 10, NULL);
  CHECK(x == uop_variable("x", 0, 10, NULL));
  CHECK(x != uop_variable("x", 0, 11, NULL));
  CHECK(x != uop_variable("y", 0, 10, NULL));
  UOp *three = uop_const_int(DT_WEAKINT, 3);
  CHECK(three == uop_const_int(DT_WEAKINT, 3));
  CHECK(three != uop_const_int(DT_INT32, 3));
  CHECK(three != uop_const_int(DT_WEAKINT, 4));
  UOp *e = uop_idiv(uop_add(uop_mul(x, three), uop_const_int(DT_WEAKINT, 7)), uop_const_int(DT_WEAKINT, 5));
  UOp *e2 = uop_idiv(uop_add(uop_mul(x, uop_const_int(DT_WEAKINT, 3)), uop_const_int(DT_WEAKINT, 7)),
                     uop_const_int(DT_WEAKINT, 5));
  CHECK(e == e2);
  CHECK(uop_add(x, three) != uop_add(three, x)); /* source order is structure */
  CHECK(uop_with_tag(e, 1) != e);
  CHECK(uop_with_tag(uop_with_tag(e, 1), 0) == e);
  size_t live = uop_live_count();
  uop_idiv(uop_add(uop_mul(x, three), uop_const_int(DT_WEAKINT, 7)), uop_const_int(DT_WEAKINT, 5));
  CHECK_EQ_INT(uop_live_count(), live); /* rebuilding an existing graph creates nothing */
  uop_scope_end(s);
}

static void test_keep_and_drop(void) {
  size_t base = uop_live_count();
  UOpScope s = uop_scope_begin();
  UOp *x = uop_variable("keep_x", 0, 10, NULL);
  UOp *kept = uop_add(x, uop_const_int(DT_WEAKINT, 123457));
  uop_mul(kept, uop_const_int(DT_WEAKINT, 99991)); /* a temporary that must die */
  uop_keep(kept);
  uop_scope_end(s);
  /* kept, its two sources survive; the MUL and its constant are gone */
  CHECK_EQ_INT(uop_live_count(), base + 3);
  CHECK(kept->op == TG_OP_ADD && kept->src[0] == x); /* under ASan a freed node would be caught here */
  /* (a lookup parks the found node in the current scope, so it happens inside one: at the base level the node would
   * stay parked there until uop_collect_all) */
  s = uop_scope_begin();
  CHECK(uop_add(x, uop_const_int(DT_WEAKINT, 123457)) == kept);
  uop_scope_end(s);
  CHECK_EQ_INT(uop_live_count(), base + 3);
  s = uop_scope_begin();
  uop_drop(kept);
  CHECK_EQ_INT(uop_live_count(), base + 3); /* dropping only parks it in the scope */
  uop_scope_end(s);
  CHECK_EQ_INT(uop_live_count(), base);
  /* uop_scope_end_keep hands the node to the enclosing scope */
  UOpScope outer = uop_scope_begin();
  UOpScope inner = uop_scope_begin();
  UOp *y = uop_variable("keep_y", 0, 10, NULL);
  UOp *r = uop_scope_end_keep(inner, uop_mul(uop_add(y, y), uop_const_int(DT_WEAKINT, 77773)));
  CHECK_EQ_INT(uop_live_count(), base + 4);
  CHECK(r->op == TG_OP_MUL);
  uop_scope_end(outer);
  CHECK_EQ_INT(uop_live_count(), base);
}

/* One batch: a chain of fresh nodes, three per step (a new constant, an ADD, a MUL), some of them rebuilt to hit the
 * intern table, plus a wide fan of shared sources. Returns the number of nodes created. */
static size_t build_batch(int64_t first, size_t steps, bool *identity_ok) {
  size_t before = uop_live_count();
  UOp *x = uop_variable("mem_x", 0, 1000, NULL);
  UOp *acc = x;
  for (size_t k = 0; k < steps; k++) {
    UOp *c = uop_const_int(DT_WEAKINT, first + (int64_t)k);
    UOp *t = uop_add(acc, c);
    acc = uop_mul(t, c);
    if ((k & 1023) == 0 && uop_add(acc, c) != uop_add(acc, c)) *identity_ok = false;
  }
  return uop_live_count() - before;
}

static void test_ten_million_nodes(void) {
  const size_t target = tg_test_light() ? 200000 : 10000000;
  const size_t steps = tg_test_light() ? 20000 : 100000; /* ~300k nodes per batch */
  uop_memory_trim();
  size_t base_live = uop_live_count();
  size_t base_rss = rss_bytes();
  size_t created = 0, peak_rss = 0;
  bool identity_ok = true, flat = true;
  for (int64_t batch = 0; created < target; batch++) {
    UOpScope s = uop_scope_begin();
    created += build_batch(batch * (int64_t)steps * 4 + 1000000, steps, &identity_ok);
    size_t r = rss_bytes();
    if (r > peak_rss) peak_rss = r;
    uop_scope_end(s);
    if (uop_live_count() != base_live) flat = false;
  }
  CHECK(created >= target);
  CHECK(identity_ok);
  CHECK_MSG(flat, "live count did not return to %zu after every batch", base_live);
  CHECK_EQ_INT(uop_live_count(), base_live);
  uop_memory_trim();
  size_t end_rss = rss_bytes();
  printf("  memory: %zu nodes interned and dropped; live %zu -> %zu; RSS baseline %.1f MiB, peak %.1f MiB, "
         "after trim %.1f MiB%s\n",
         created, base_live, uop_live_count(), mib(base_rss), mib(peak_rss), mib(end_rss),
         tg_test_light() ? " (RSS not checked at this size)" : "");
  if (!tg_test_light()) {
    CHECK(base_rss > 0);
    CHECK_MSG(end_rss <= base_rss + ((size_t)8 << 20), "RSS %.1f MiB after trim, baseline %.1f MiB", mib(end_rss),
              mib(base_rss));
    CHECK(peak_rss > base_rss); /* the batches really did allocate */
  }
}

/* Rewriting inside a scope leaves nothing behind: after a warm-up (rule sets may keep constants), repeating the same
 * simplification does not change the live count. */
static void test_rewrite_is_flat(void) {
  int rounds = tg_test_light() ? 21 : 301;
  size_t live[2] = {0, 0};
  for (int i = 0; i < rounds; i++) {
    UOpScope s = uop_scope_begin();
    UOp *x = uop_variable("flat_x", 0, 100, NULL);
    UOp *y = uop_variable("flat_y", 1, 9, NULL);
    UOp *e = uop_mod(uop_add(uop_mul(uop_add(uop_idiv(x, uop_const_int(DT_WEAKINT, 4)), y),
                                     uop_const_int(DT_WEAKINT, 8)), uop_mod(x, uop_const_int(DT_WEAKINT, 4))),
                     uop_const_int(DT_WEAKINT, 8 * (i % 7 + 1)));
    CHECK(uop_simplify(e) != NULL);
    uop_scope_end(s);
    if (i == 6) live[0] = uop_live_count(); /* every variant seen once */
    if (i == rounds - 1) live[1] = uop_live_count();
  }
  CHECK_EQ_INT(live[1], live[0]);
}

void suite_memory(void) {
  test_interning_identity();
  test_keep_and_drop();
  test_rewrite_is_flat();
  test_ten_million_nodes();
}
