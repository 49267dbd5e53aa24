# tinygrad.c — build. `make` builds the libraries, tests and tools; `make test` runs every suite (optimized build,
# then the ASan+UBSan build); `make demo` runs the demonstration; `make bench` prints the benchmark lines.
CC ?= cc
WARN := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wswitch -Werror
CPPFLAGS := -D_GNU_SOURCE -Iinclude -Isrc
OPT ?= -O2 -g
CFLAGS_ALL = $(WARN) $(OPT) -fPIC -pthread $(CFLAGS)
LDLIBS := -lm -lpthread -ldl -lsqlite3
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

LIB_SRC := $(sort $(wildcard src/*/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))
TOOLS := fuzz_symbolic demo_symbolic demo_tensor
BENCHES := bench_rewrite bench_tensor

B := build
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o)
SAN_LIB_OBJ := $(LIB_SRC:%.c=$(B)/san/%.o)
SAN_TEST_OBJ := $(TEST_SRC:%.c=$(B)/san/%.o)

.PHONY: all lib test test-fast test-san demo bench fuzz fuzz-long clean
all: lib $(B)/run_tests $(TOOLS:%=$(B)/%) $(BENCHES:%=$(B)/%)

lib: $(B)/libtinygrad.a $(B)/libtinygrad.so

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@
$(B)/san/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) $(SAN) -O1 -MMD -MP -c $< -o $@

$(B)/libtinygrad.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(B)/libtinygrad.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS)

$(B)/run_tests: $(TEST_OBJ) $(B)/libtinygrad.a
	$(CC) $(CFLAGS_ALL) -o $@ $(TEST_OBJ) $(B)/libtinygrad.a $(LDLIBS)
$(B)/run_tests_san: $(SAN_TEST_OBJ) $(SAN_LIB_OBJ)
	$(CC) $(CFLAGS_ALL) $(SAN) -o $@ $^ $(LDLIBS)
$(B)/%: tools/%.c $(B)/libtinygrad.a
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -o $@ $< $(B)/libtinygrad.a $(LDLIBS)
# the hand-written peers are compiled the way a C programmer would: -O3 for this machine
$(B)/bench_tensor: bench/bench_tensor.c bench/peer_loops.c bench/peer_loops.h $(B)/libtinygrad.a
	$(CC) $(CPPFLAGS) $(WARN) -O3 -march=native -pthread -c bench/peer_loops.c -o $(B)/peer_loops.o
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -o $@ bench/bench_tensor.c $(B)/peer_loops.o $(B)/libtinygrad.a $(LDLIBS)
$(B)/%: bench/%.c $(B)/libtinygrad.a
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -o $@ $< $(B)/libtinygrad.a $(LDLIBS)

# every suite twice: optimized, then under ASan+UBSan; one closing line with the totals
test: $(B)/run_tests $(B)/run_tests_san $(B)/fuzz_symbolic
	@bash tests/run_all.sh $(B)

test-fast: $(B)/run_tests
	$(B)/run_tests

demo: $(B)/fuzz_symbolic $(B)/demo_symbolic $(B)/demo_tensor
	@bash tools/demo.sh $(B)

bench: $(BENCHES:%=$(B)/%)
	@bash bench/run.sh $(B)

fuzz: $(B)/fuzz_symbolic
	$(B)/fuzz_symbolic 20000 1

fuzz-long: $(B)/fuzz_symbolic
	$(B)/fuzz_symbolic 1000000 1

clean:
	rm -rf $(B)

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(SAN_LIB_OBJ:.o=.d) $(SAN_TEST_OBJ:.o=.d)
