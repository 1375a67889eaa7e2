#!/usr/bin/env bash
# TTFT and decode speed through ft serve's HTTP API (issue 11's benchmark):
# for each client count C (default "1 8"), C streaming clients at once
# send /v1/chat/completions with different prompts (no shared prefix
# beyond the template's first tokens) of about PROMPT tokens, asking for
# GEN tokens (the end-of-turn token banned with logit_bias so that every
# reply runs to GEN). Per client: TTFT (request sent to the first content
# chunk) and decode tok/s (GEN - 1 tokens over the time from the first
# chunk to the last). Prints one JSON line per client count: median and
# worst TTFT, median per-stream tok/s, and the aggregate tok/s (all
# generated tokens over the wall time of the round). The server runs with
# --parallel at the largest C. A benchmark, not a test: nothing is checked.
#
#   scripts/bench-serve-http.sh BUNDLE [PROMPT [GEN [THREADS ["CLIENTS"]]]]
set -euo pipefail
bundle=${1:?usage: $0 BUNDLE [PROMPT [GEN [THREADS [\"CLIENTS\"]]]]}
prompt=${2:-200}
gen=${3:-64}
threads=${4:-2}
clients=${5:-1 8}
ft=${FT:-$(dirname "$0")/../build/runtime/ft}
tmp=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || { kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null; }; rm -rf "$tmp"' EXIT
max=$(tr ' ' '\n' <<< "$clients" | sort -n | tail -1)
"$ft" serve "$bundle" --port 0 --threads "$threads" --parallel "$max" > "$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -qs '^listening on' "$tmp/log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$tmp/log")
[ -n "$url" ] || { echo "no server: $(cat "$tmp/log")" >&2; exit 1; }
python3 - "$url" "$prompt" "$gen" "$clients" <<'EOF'
import json, random, statistics, sys, threading, time, urllib.request
url, prompt, gen, clients = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return urllib.request.urlopen(req)
eog = json.load(post("/tokenize", {"content": "<|im_end|>", "parse_special": True}))["tokens"]
W = "the file returns value struct index buffer tokens error static const page session if while return size count layer tool path result cache".split()
ratio = len(json.load(post("/tokenize", {"content": " ".join(W)}))["tokens"]) / len(W)
def one(k, rnd, out):
    words = " ".join(rnd.choice(W) for _ in range(int(prompt / ratio)))
    body = {"messages": [{"role": "user", "content": f"{k} {words}"}], "max_tokens": gen,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}, "logit_bias": {str(t): -100 for t in eog},
            "chat_template_kwargs": {"enable_thinking": False}}
    t0 = time.perf_counter()
    first = last = None
    n = 0
    with post("/v1/chat/completions", body) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ch = json.loads(line[6:])
            d = ch["choices"][0]["delta"] if ch.get("choices") else {}
            if d.get("content") or d.get("reasoning_content"):
                now = time.perf_counter()
                first = first or now
                last = now
            if ch.get("usage"):
                n = ch["usage"]["completion_tokens"]
    out[k] = (first - t0, (n - 1) / (last - first) if last > first else 0.0, n)
rnd = random.Random(1)
for c in clients:
    c = int(c)
    for rep in range(2):  # the first round warms the server (pages, caches); the second is reported
        out = {}
        ts = [threading.Thread(target=one, args=(k + 100 * rep, random.Random(rnd.random()), out)) for k in range(c)]
        t0 = time.perf_counter()
        for t in ts: t.start()
        for t in ts: t.join()
        wall = time.perf_counter() - t0
    ttft = sorted(v[0] for v in out.values())
    print(json.dumps({"clients": c, "prompt_tokens": prompt, "gen_tokens": gen,
                      "ttft_ms_median": round(statistics.median(ttft) * 1000, 1),
                      "ttft_ms_max": round(ttft[-1] * 1000, 1),
                      "decode_tok_s_per_stream_median": round(statistics.median(v[1] for v in out.values()), 2),
                      "aggregate_tok_s": round(sum(v[2] for v in out.values()) / wall, 2)}), flush=True)
EOF
