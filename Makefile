# tinygrad.c — build. `make` builds the libraries, tests and tools; `make test` runs every suite (optimized build,
# then the ASan+UBSan build); `make test-gpu` runs the GPU suites (tests/gpu_suites.def; needs an NVIDIA GPU, else
# each suite says SKIPPED and the status is non-zero unless TG_GPU_OPTIONAL=1); `make demo` runs the demonstration;
# `make bench` prints the benchmark lines.
CC ?= cc
WARN := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wswitch -Werror
CPPFLAGS := -D_GNU_SOURCE -Iinclude -Isrc
OPT ?= -O2 -g
CFLAGS_ALL = $(WARN) $(OPT) -fPIC -pthread $(CFLAGS)
LDLIBS := -lm -lpthread -ldl -lsqlite3 -lz
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

LIB_SRC := $(sort $(wildcard src/*/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))
GPU_TEST_SRC := $(sort $(wildcard tests/gpu/*.c))
TOOLS := fuzz_symbolic demo_symbolic demo_tensor gemm_probe gpu_opts realize_host
BENCHES := bench_rewrite bench_tensor bench_train
BENCHES += bench_matmul
BENCHES += bench_tokenizer
BENCHES += bench_attention
BENCHES += bench_llm
TOOLS += tg-llm tg-mkmodel
GPU_BENCHES := bench_gpu
EXAMPLES := beautiful_mnist

B := build
LIB_OBJ := $(LIB_SRC:%.c=$(B)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(B)/%.o)
GPU_TEST_OBJ := $(GPU_TEST_SRC:%.c=$(B)/%.o)
SAN_LIB_OBJ := $(LIB_SRC:%.c=$(B)/san/%.o)
SAN_TEST_OBJ := $(TEST_SRC:%.c=$(B)/san/%.o)

.PHONY: all lib test test-fast test-san test-gpu demo bench bench-gpu fuzz fuzz-long fuzz-idx fuzz-safetensors fuzz-gguf clean
all: lib $(B)/run_tests $(B)/run_tests_gpu $(TOOLS:%=$(B)/%) $(BENCHES:%=$(B)/%) $(GPU_BENCHES:%=$(B)/%) $(EXAMPLES:%=$(B)/%)

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
$(B)/run_tests_gpu: $(GPU_TEST_OBJ) $(B)/libtinygrad.a
	$(CC) $(CFLAGS_ALL) -o $@ $(GPU_TEST_OBJ) $(B)/libtinygrad.a $(LDLIBS)
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
$(B)/%: examples/%.c $(B)/libtinygrad.a
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -o $@ $< $(B)/libtinygrad.a $(LDLIBS)

# ---- test tiers (tests/run_all.sh) ----
# make test: the full tier (CI): the exported-symbol check, every suite optimized and under ASan+UBSan side by side,
# the symbolic fuzzer, the GGUF fuzzer (fixed seed, ASan+UBSan), the Python package's tests (python/run_tests.sh);
# one closing line with the totals. make test-fast: the optimized build's quick subset (TG_TEST_QUICK=1), what to run
# before each commit. Both keep the kernel cache in $(B)/cache.db unless CACHEDB is set.
test: $(B)/libtinygrad.a $(B)/libtinygrad.so $(B)/run_tests $(B)/run_tests_san $(B)/fuzz_symbolic $(B)/fuzz_gguf_san \
      $(B)/test_llm_serve $(B)/tg-llm $(B)/tg-mkmodel
	@bash tests/run_all.sh $(B)

test-gpu: $(B)/run_tests_gpu
	$(B)/run_tests_gpu

test-fast: $(B)/run_tests
	@bash tests/run_all.sh $(B) fast

check-symbols: $(B)/libtinygrad.a
	@bash tests/check_symbols.sh $<
# ---- end of test tiers ----

demo: $(B)/fuzz_symbolic $(B)/demo_symbolic $(B)/demo_tensor $(B)/beautiful_mnist
	@bash tools/demo.sh $(B)

bench: $(BENCHES:%=$(B)/%) $(B)/realize_host
	@bash bench/run.sh $(B)

# the GPU figures (bench/run_gpu.sh): ours on DEV=CUDA against PyTorch on CUDA, in one run; needs an NVIDIA GPU
bench-gpu: $(GPU_BENCHES:%=$(B)/%) $(B)/bench_train
	@bash bench/run_gpu.sh $(B)

fuzz: $(B)/fuzz_symbolic
	$(B)/fuzz_symbolic 20000 1

fuzz-long: $(B)/fuzz_symbolic
	$(B)/fuzz_symbolic 1000000 1

# the IDX parser under libFuzzer (clang) with ASan+UBSan: `make fuzz-idx` runs it FUZZ_SECONDS (default 600)
FUZZ_SECONDS ?= 600
$(B)/fuzz_idx: tools/fuzz_idx.c src/nn/datasets.c $(B)/libtinygrad.a
	clang $(CPPFLAGS) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ tools/fuzz_idx.c src/nn/datasets.c $(B)/libtinygrad.a $(LDLIBS)
fuzz-idx: $(B)/fuzz_idx
	@mkdir -p $(B)/fuzz_idx_corpus
	$(B)/fuzz_idx -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
	  $(B)/fuzz_idx_corpus

# the safetensors reader under libFuzzer (clang) with ASan+UBSan: `make fuzz-safetensors` runs it FUZZ_SECONDS, seeded
# with tests/fixtures/safetensors (new inputs go to $(B)/fuzz_safetensors_corpus)
$(B)/fuzz_safetensors: tools/fuzz_safetensors.c tools/fuzz_driver.h src/nn/safetensors.c src/nn/state.c $(B)/libtinygrad.a
	clang $(CPPFLAGS) -std=c11 -g -O1 -DTG_LIBFUZZER -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ tools/fuzz_safetensors.c src/nn/safetensors.c src/nn/state.c $(B)/libtinygrad.a $(LDLIBS)
fuzz-safetensors: $(B)/fuzz_safetensors
	@mkdir -p $(B)/fuzz_safetensors_corpus
	$(B)/fuzz_safetensors -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
	  -dict=tools/fuzz_safetensors.dict $(B)/fuzz_safetensors_corpus tests/fixtures/safetensors

# the GGUF reader and writer under libFuzzer (clang) with ASan+UBSan: `make fuzz-gguf` runs it FUZZ_SECONDS, seeded
# with tests/fixtures/gguf; $(B)/fuzz_gguf_san is the standalone driver under ASan+UBSan (`make test` runs a short
# fixed-seed pass of it: mutations of writer-made seeds)
$(B)/fuzz_gguf: tools/fuzz_gguf.c tools/fuzz_driver.h $(B)/libtinygrad.a
	clang $(CPPFLAGS) -std=c11 -g -O1 -DTG_LIBFUZZER -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ tools/fuzz_gguf.c $(B)/libtinygrad.a $(LDLIBS)
fuzz-gguf: $(B)/fuzz_gguf
	@mkdir -p $(B)/fuzz_gguf_corpus
	$(B)/fuzz_gguf -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
	  $(B)/fuzz_gguf_corpus tests/fixtures/gguf
$(B)/fuzz_gguf_san: tools/fuzz_gguf.c tools/fuzz_driver.h $(SAN_LIB_OBJ)
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) $(SAN) -O1 -o $@ tools/fuzz_gguf.c $(SAN_LIB_OBJ) $(LDLIBS)

# tg-llm's OpenAI-compatible server (tools/llm/serve.c) is the only user of libmicrohttpd and cJSON: they link into
# tg-llm and the server's test (tests/llm/test_serve.c, ASan+UBSan, run by make test), never into the library
SERVE_LIBS := -lmicrohttpd -lcjson -lm -lpthread
$(B)/test_llm_serve: tests/llm/test_serve.c tools/llm/serve.c tools/llm/serve.h
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) $(SAN) -O1 -o $@ tests/llm/test_serve.c tools/llm/serve.c $(SERVE_LIBS)

# tg-llm runs a GGUF model (tools/tg_llm.c: a prompt, or --serve PORT with tools/llm/serve.c); tg-mkmodel writes a
# random-weight model of a real architecture (tools/tg_mkmodel.c, src/nn/llm_mkmodel.c) for tests and bench_llm
$(B)/tg-llm: tools/tg_llm.c tools/llm/serve.c tools/llm/serve.h $(B)/libtinygrad.a
	$(CC) $(CPPFLAGS) -Itools $(CFLAGS_ALL) -o $@ tools/tg_llm.c tools/llm/serve.c $(B)/libtinygrad.a $(LDLIBS) $(SERVE_LIBS)
$(B)/tg-mkmodel: tools/tg_mkmodel.c $(B)/libtinygrad.a
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -o $@ $< $(B)/libtinygrad.a $(LDLIBS)

clean:
	rm -rf $(B)

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(GPU_TEST_OBJ:.o=.d) $(SAN_LIB_OBJ:.o=.d) $(SAN_TEST_OBJ:.o=.d)
