#!/usr/bin/python3
"""Scores the demo model on questions like scripts/demo.sh's, through
`ft serve` (OpenAI chat completions, greedy), so demo/README.md can give an
accuracy rather than one anecdote.

  /usr/bin/python3 demo/eval.py BUNDLE [--ft build/runtime/ft] [--json] [--verbose]

BUNDLE is `ftc compile demo/model -o BUNDLE --format bf16`'s output. Three
kinds of question, fixed lists (the numbers drawn once with a fixed seed):

  capital   "What is the capital of X?" without tools, as `ft run --chat`
            asks it: right when the answer (the content after any <think>
            block) names X's capital and no other capital or country of
            the table;
  multiply  "What is A times B?" with the three tools scripts/demo.sh
            offers: the call is right when it is the calculator with an
            expression whose value is A * B; the tool's result (the value of
            the model's own expression, as demo.sh computes it) is sent back,
            and the round trip is right when the call was and the answer
            contains that result;
  convert   "Convert V UNIT to UNIT2." with the tools: the call is right when
            it is convert_units with that value and those units, the round
            trip when the answer also contains the converted value.

Prints one line per question (with --verbose) and the scores; --json prints
them as one JSON object. Exits 0 whatever the scores (it measures, it does
not judge); 1 when ft serve cannot be started or answers an error.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prepare_data as pd  # noqa: E402 (the tools, the capitals, the unit table)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTRIES = ["France", "Germany", "Italy", "Spain", "Japan", "Egypt", "Sweden", "Canada",
             "Peru", "Greece", "Kenya", "Norway", "Poland", "Australia", "Cuba", "Ireland"]
CONVERSIONS = [(10, "km", "mi"), (5, "mi", "km"), (100, "C", "F"), (3, "kg", "lb"),
               (12, "in", "cm"), (2, "gal", "l"), (250, "g", "oz"), (68, "F", "C")]


def multiplications(n=16):
    r = random.Random(2026)
    out = [(234, 17)]
    while len(out) < n:
        out.append((r.randrange(11, 1000), r.randrange(2, 100)))
    return out


class Server:
    def __init__(self, ft, bundle):
        self.p = subprocess.Popen([ft, "serve", bundle, "--port", "0"], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        self.url = None
        t0 = time.time()
        while time.time() - t0 < 60:
            line = self.p.stdout.readline()
            if not line:
                break
            if line.startswith("listening on "):
                self.url = line.split(" ", 2)[2].strip()
                break
        if not self.url:
            self.close()
            sys.exit(f"eval.py: ft serve {bundle} did not start")

    def chat(self, messages, tools=None, max_tokens=96):
        body = {"model": "demo", "messages": messages, "temperature": 0, "max_tokens": max_tokens}
        if tools:
            body["tools"] = tools
        req = urllib.request.Request(self.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as f:
            r = json.load(f)
        if "choices" not in r:
            sys.exit(f"eval.py: ft serve answered {json.dumps(r)[:300]}")
        return r["choices"][0]["message"]

    def close(self):
        self.p.terminate()
        self.p.wait()


def answer_text(msg):
    """The answer without a <think> block (ft serve splits it off as
    reasoning_content; strip one left in the content too)."""
    c = msg.get("content") or ""
    return re.sub(r"(?s)^.*</think>", "", c).strip()


def calc_value(expr):
    """The calculator of scripts/demo.sh: digits, + - * / ( ) . and spaces."""
    if not isinstance(expr, str) or not re.fullmatch(r"[0-9.+*/() -]+", expr):
        return None
    try:
        return eval(expr, {"__builtins__": {}}, {})  # the characters are checked above
    except Exception:
        return None


def tool_args(msg):
    calls = msg.get("tool_calls") or []
    if not calls:
        return None, None, None
    f = calls[0]["function"]
    try:
        args = json.loads(f["arguments"])
    except (ValueError, TypeError):
        args = None
    return calls[0], f["name"], args


def round_trip(srv, question, result_of):
    """Asks with tools; result_of(name, args) -> (call_ok, result text or
    None). Returns (call_ok, trip_ok, log)."""
    m1 = srv.chat([{"role": "user", "content": question}], pd.TOOLS)
    call, name, args = tool_args(m1)
    if call is None:
        return False, False, f"no call, answered {answer_text(m1)!r}"
    ok, res = result_of(name, args)
    log = f"{name} {json.dumps(args)}"
    if res is None:
        return ok, False, log + " (not runnable)"
    m2 = srv.chat([{"role": "user", "content": question}, m1,
                   {"role": "tool", "tool_call_id": call.get("id", ""), "content": res}], pd.TOOLS)
    ans = answer_text(m2)
    num = re.sub(r'^\{"value": ([-0-9.]+).*$', r"\1", res)
    return ok, ok and num in ans, log + f" -> {res} -> {ans!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("--ft", default=os.path.join(ROOT, "build", "runtime", "ft"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    srv = Server(a.ft, a.bundle)
    score = {"capital": [0, 0], "multiply_call": [0, 0], "multiply_round_trip": [0, 0],
             "convert_call": [0, 0], "convert_round_trip": [0, 0]}

    def note(key, ok):
        score[key][0] += bool(ok)
        score[key][1] += 1

    try:
        for c in COUNTRIES:
            ans = answer_text(srv.chat([{"role": "user", "content": f"What is the capital of {c}?"}], max_tokens=64))
            cap = pd.CAPITALS[c]
            others = [v for k, v in pd.CAPITALS.items() if k != c and v not in cap]
            # and no other country of the table ("The capital of Sweden is Berlin" is wrong)
            others += [k.replace("the ", "") for k in pd.CAPITALS if k != c and k not in cap]
            ok = cap in ans and not any(re.search(r"\b" + re.escape(o) + r"\b", ans) for o in others)
            note("capital", ok)
            if a.verbose:
                print(f"{'ok ' if ok else 'BAD'} capital of {c}: {ans!r}")
        for x, y in multiplications():
            def calc(name, args, x=x, y=y):
                v = calc_value((args or {}).get("expression")) if name == "calculator" else None
                return v is not None and abs(v - x * y) < 1e-9, None if v is None else pd.fmt_num(v)
            ok, trip, log = round_trip(srv, f"What is {x} times {y}?", calc)
            note("multiply_call", ok)
            note("multiply_round_trip", trip)
            if a.verbose:
                print(f"{'ok ' if trip else 'BAD'} {x} times {y} = {x * y}: {log}")
        for v, fu, tu in CONVERSIONS:
            def conv(name, args, v=v, fu=fu, tu=tu):
                if name != "convert_units" or not isinstance(args, dict):
                    return False, None
                val, f_, t_ = args.get("value"), args.get("from_unit"), args.get("to_unit")
                if not isinstance(val, (int, float)) or f_ not in pd.UNITS or t_ not in pd.UNITS or \
                        pd.UNITS[f_][3] != pd.UNITS[t_][3]:
                    return False, None
                out = pd.convert(val, f_, t_)
                res = pd.tojson({"value": round(out, 2) if abs(out - round(out)) > 1e-9 else int(round(out)),
                                 "unit": t_})
                return (val, f_, t_) == (v, fu, tu), res
            q = f"Convert {v} {pd.unit_name(fu, v)} to {pd.UNITS[tu][1]}."
            ok, trip, log = round_trip(srv, q, conv)
            note("convert_call", ok)
            note("convert_round_trip", trip)
            if a.verbose:
                print(f"{'ok ' if trip else 'BAD'} {q} {log}")
    finally:
        srv.close()
    if a.json:
        print(json.dumps({k: {"right": r, "of": n} for k, (r, n) in score.items()}))
    else:
        for k, (r, n) in score.items():
            print(f"{k:20s} {r:3d} / {n}")


if __name__ == "__main__":
    main()
