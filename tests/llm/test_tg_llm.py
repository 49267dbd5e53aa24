#!/usr/bin/env python3
"""test_tg_llm.py — tg-llm end to end (run by make test): a random-weight llama model written by tg-mkmodel (its
byte-level BPE vocabulary included), the CLI on a text prompt, then `tg-llm --serve 0` driven by a real HTTP client
(Python's http.client) over loopback: the server's greedy completion must equal the CLI's text for the same prompt,
streamed or not, with 4 clients at once; chat completions; malformed JSON, an unknown path, a wrong method and a prompt
longer than the context get their HTTP errors; SIGINT stops the server cleanly.

  tests/llm/test_tg_llm.py BUILD_DIR      (standard library only; prints "N passed, N failed")"""
import http.client, json, os, re, signal, subprocess, sys, threading, time

B = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
work = os.path.join(B, "llm_e2e")
os.makedirs(work, exist_ok=True)
model = os.path.join(work, "tiny.gguf")
passed = failed = 0

def check(ok, what):
  global passed, failed
  if ok: passed += 1
  else:
    failed += 1
    print(f"  FAIL {what}", flush=True)

def run(*args, timeout=300):
  return subprocess.run([os.path.join(B, args[0]), *args[1:]], capture_output=True, timeout=timeout)

r = run("tg-mkmodel", "-o", model, "--preset", "tiny", "--seed", "7")
check(r.returncode == 0, f"tg-mkmodel: {r.stderr.decode(errors='replace')}")
PROMPT = "Hello world, tinygrad"

# ---- the CLI ----
cli = run("tg-llm", "--model", model, "--prompt", PROMPT, "--n", "12")
err = cli.stderr.decode(errors="replace")
check(cli.returncode == 0, f"tg-llm --prompt: rc {cli.returncode}: {err}")
text = cli.stdout.decode("utf-8")  # the stream hands out whole UTF-8 characters: this must decode
check(text.endswith("\n") and len(text) > 1, f"tg-llm printed {text!r}")
text = text[:-1]
wire = text.replace("\0", "\ufffd")  # the server sends a NUL byte as U+FFFD (tools/llm/serve.c: cJSON strings)
m = re.search(r"prefill (\d+) tokens .* decode (\d+) steps", err)
check(m is not None and int(m.group(1)) > 0, f"tg-llm stats line: {err}")
cli_prompt_tokens = int(m.group(1)) if m else -1
again = run("tg-llm", "--model", model, "--prompt", PROMPT, "--n", "12")
check(again.stdout.decode() == cli.stdout.decode(), "greedy decoding is deterministic")
s1 = run("tg-llm", "--model", model, "--prompt", PROMPT, "--n", "12", "--temp", "0.9", "--seed", "5")
s2 = run("tg-llm", "--model", model, "--prompt", PROMPT, "--n", "12", "--temp", "0.9", "--seed", "5")
check(s1.returncode == 0 and s1.stdout == s2.stdout, "the same seed gives the same sample")
seeds = {run("tg-llm", "--model", model, "--prompt", PROMPT, "--n", "12", "--temp", "2", "--seed", str(k)).stdout
         for k in range(4)}
check(len(seeds) > 1, "different seeds give different samples at temperature 2")
bad = run("tg-llm", "--model", model, "--prompt", PROMPT, "--top-p", "0")
check(bad.returncode == 2, "--top-p 0 is refused")
bad = run("tg-llm", "--model", os.path.join(work, "missing.gguf"), "--prompt", "x")
check(bad.returncode == 1 and b"missing.gguf" in bad.stderr, f"a missing model file is named: {bad.stderr!r}")
nochat = run("tg-llm", "--model", model, "--prompt", "hi", "--chat")
check(nochat.returncode == 1 and b"chat template" in nochat.stderr, "--chat without a template says so")

# ---- the server ----
srv = subprocess.Popen([os.path.join(B, "tg-llm"), "--model", model, "--serve", "0", "--chat-template", "llama3"],
                       stderr=subprocess.PIPE)
port = None
t0 = time.time()
while port is None and time.time() - t0 < 120:
  line = srv.stderr.readline().decode(errors="replace")
  if not line: break
  m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
  if m: port = int(m.group(1))
check(port is not None, "the server announced its port")

def request(method, path, body=None, raw=None):
  c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
  data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
  c.request(method, path, body=data, headers={"Content-Type": "application/json"} if data is not None else {})
  resp = c.getresponse()
  out = resp.status, resp.getheader("Content-Type") or "", resp.read()
  c.close()
  return out

if port is not None:
  st, ct, body = request("GET", "/v1/models")
  check(st == 200 and json.loads(body)["data"][0]["id"] == "tiny.gguf", f"/v1/models: {st} {body!r}")

  greedy = {"prompt": PROMPT, "max_tokens": 12, "temperature": 0}
  st, ct, body = request("POST", "/v1/completions", greedy)
  j = json.loads(body) if st == 200 else {}
  check(st == 200 and j["choices"][0]["text"] == wire, f"/v1/completions equals the CLI: {wire!r} vs {body!r}")
  check(st == 200 and j["usage"]["prompt_tokens"] == cli_prompt_tokens and 0 < j["usage"]["completion_tokens"] <= 12 and j["choices"][0]["finish_reason"] in ("stop", "length"),
        f"usage and finish_reason: {body!r}")

  st, ct, body = request("POST", "/v1/completions", dict(greedy, stream=True))
  events = [l[len(b"data: "):] for l in body.split(b"\n") if l.startswith(b"data: ")]
  check(st == 200 and ct.startswith("text/event-stream") and events and events[-1] == b"[DONE]",
        f"SSE stream ends with [DONE]: {ct} {body[-200:]!r}")
  streamed = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
  check(streamed == wire, f"the streamed text equals the CLI's: {streamed!r} vs {wire!r}")

  results = [None] * 4
  def client(i): results[i] = request("POST", "/v1/completions", greedy)
  ts = [threading.Thread(target=client, args=(i,)) for i in range(4)]
  for t in ts: t.start()
  for t in ts: t.join()
  check(all(r is not None and r[0] == 200 and json.loads(r[2])["choices"][0]["text"] == wire for r in results),
        "4 concurrent clients each get the greedy text")

  st, ct, body = request("POST", "/v1/chat/completions",
                         {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
                          "max_tokens": 6})
  j = json.loads(body) if st == 200 else {}
  check(st == 200 and j["choices"][0]["message"]["role"] == "assistant" and j["usage"]["prompt_tokens"] > 10,
        f"/v1/chat/completions: {st} {body!r}")

  st, ct, body = request("POST", "/v1/chat/completions", raw=b'{"messages": [')
  check(st == 400 and "error" in json.loads(body), f"malformed JSON is a 400: {st} {body!r}")
  st, ct, body = request("POST", "/v1/chat/completions", {"messages": [{"role": "user"}]})
  check(st == 400, f"a message without content is a 400: {st} {body!r}")
  st, ct, body = request("POST", "/v1/completions", {"prompt": "word " * 400, "max_tokens": 4})
  check(st == 400 and b"context_length_exceeded" in body, f"a prompt over the context is a 400: {st} {body!r}")
  st, ct, body = request("GET", "/v1/nothing")
  check(st == 404, f"an unknown path is a 404: {st}")
  st, ct, body = request("GET", "/v1/completions")
  check(st == 405, f"GET on completions is a 405: {st}")

  srv.send_signal(signal.SIGINT)
  try: rc = srv.wait(timeout=30)
  except subprocess.TimeoutExpired:
    srv.kill(); rc = None
  check(rc == 0, f"SIGINT stops the server (rc {rc})")
else:
  srv.kill()
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
