#!/usr/bin/python3
"""Builds the second training run's "focus" dialogues (demo/README.md): the
same Qwen3 chat format and tools as prepare_data.py, but denser in what the
first run did not learn, copying and facts:

  - tool dialogues in the shape scripts/demo.sh sends (the three tools'
    definitions, usually no system message), with one to three exchanges
    after one system prompt, so more of each window is the exchange; half of
    the calculator questions multiplications ("What is 234 times 17?"), and
    answers that repeat the question's numbers and the tool's result;
  - the capitals of prepare_data.CAPITALS as a fixed table asked often (one
    to three in a dialogue, in several phrasings);
  - a short copying exercise ("Repeat after me: ...");
  - the rest prepare_data's other questions, so nothing else is forgotten.

Written with its own random generator, so prepare_data.py's outputs (and
the tokenizer trained on them) stay byte for byte those of the first run.

  /usr/bin/python3 demo/focus_data.py [--out demo/work] [--dialogues 30000] [--seed 7]

Writes OUT/focus_train.txt and OUT/focus_heldout.txt (every 50th dialogue),
each dialogue ending in <|endoftext|>; encode them with demotok encode as
the others (demo/README.md).
"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prepare_data as pd  # noqa: E402


class Focus(pd.Gen):
    def times(self):
        """A multiplication for the calculator, with the question's numbers
        copied into the call and the result into the answer."""
        r = self.r
        a = r.randrange(2, 1000)
        b = r.randrange(2, 100) if r.random() < 0.6 else r.randrange(2, 1000)
        if r.random() < 0.5:
            a, b = b, a
        e, res = f"{a} * {b}", pd.fmt_num(a * b)
        q = self.pick([f"What is {a} times {b}?", f"What is {a} times {b}?", f"What is {a} * {b}?",
                       f"Calculate {a} * {b}.", f"How much is {a} multiplied by {b}?",
                       f"Multiply {a} by {b}.", f"what's {a}*{b}"])
        ans = self.pick([f"{a} times {b} is {res}.", f"The answer is {res}.", f"{a} * {b} = {res}.",
                         f"{a} multiplied by {b} is {res}."])
        return q, "calculator", {"expression": e}, res, ans

    def calc2(self):
        """The other calculator questions, with answers that read well."""
        q, name, args, res, _ = self.calc()
        e = args["expression"]
        return q, name, args, res, self.pick([f"The answer is {res}.", f"{e} = {res}.",
                                              f"The result is {res}."])

    def tool_exchange(self, names):
        kind = self.pick(names)
        if kind == "calculator":
            return self.times() if self.r.random() < 0.5 else self.calc2()
        return {"convert_units": self.conv, "dictionary": self.dict_}[kind]()

    def capital(self):
        c = self.pick(sorted(pd.CAPITALS))
        cap = pd.CAPITALS[c]
        q = self.pick([f"What is the capital of {c}?", f"What is the capital of {c}?",
                       f"Which city is the capital of {c}?", f"Tell me the capital of {c}.",
                       f"capital of {c}?", f"What's the capital city of {c}?"])
        a = self.pick([f"The capital of {c} is {cap}.", f"The capital of {c} is {cap}.",
                       f"{cap} is the capital of {c}."])
        return q, f"The user wants the capital of {c}. It is {cap}.", a

    def repeat(self):
        r = self.r
        if r.random() < 0.5:
            x = str(r.randrange(10, 10 ** r.randrange(3, 8)))
        else:
            x = " ".join(self.pick(self.word_list) for _ in range(r.randrange(1, 5)))
        q = self.pick([f"Repeat after me: {x}", f"Say \"{x}\".", f"Please repeat this: {x}"])
        return q, f"The user wants me to repeat \"{x}\".", x

    def dialogue(self):
        r = self.r
        k = r.random()
        msgs = []
        if r.random() < 0.25:
            msgs.append({"role": "system", "content": self.pick(pd.SYSTEMS)})
        if k < 0.5:  # tool use, one to three exchanges after one system prompt
            tools = pd.TOOLS if r.random() < 0.9 else [t for t in pd.TOOLS if r.random() < 0.6] or pd.TOOLS
            names = [t["function"]["name"] for t in tools]
            for _ in range(self.pick([1, 1, 2, 2, 3])):
                q, name, args, res, ans = self.tool_exchange(names)
                msgs.append({"role": "user", "content": q})
                msgs.append({"role": "assistant", "content": "", "tool_calls": [{"name": name, "arguments": args}]})
                msgs.append({"role": "tool", "content": res})
                reasoning = "" if r.random() < 0.5 else self.pick([
                    f"The {name} tool returned {res}.", f"The tool gave {res}. I can answer now."])
                msgs.append({"role": "assistant", "content": ans, "reasoning": reasoning})
            return pd.render(msgs, tools)
        turns = []
        for _ in range(self.pick([1, 1, 2, 3])):
            j = r.random()
            turns.append(self.capital() if j < 0.55 else self.repeat() if j < 0.7 else self.qa())
        for q, reasoning, a in turns:
            msgs.append({"role": "user", "content": q})
            msgs.append({"role": "assistant", "content": a, "reasoning": reasoning if r.random() < 0.5 else ""})
        return pd.render(msgs, pd.TOOLS if k < 0.6 else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "work"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dialogues", type=int, default=30000)
    ap.add_argument("--wordnet", default="/usr/share/wordnet")
    a = ap.parse_args()
    gen = Focus(random.Random(a.seed), pd.wordnet(a.wordnet))
    chats = [gen.dialogue() for _ in range(a.dialogues)]
    os.makedirs(a.out, exist_ok=True)
    sizes = {}
    for part, xs in (("train", [x for i, x in enumerate(chats) if i % 50 != 0]),
                     ("heldout", [x for i, x in enumerate(chats) if i % 50 == 0])):
        path = os.path.join(a.out, f"focus_{part}.txt")
        with open(path, "w", encoding="utf-8") as f:
            for x in xs:
                f.write(x + pd.EOT)
        sizes[os.path.basename(path)] = os.path.getsize(path)
    print(json.dumps({"dialogues": len(chats), "bytes": sizes}))


if __name__ == "__main__":
    main()
