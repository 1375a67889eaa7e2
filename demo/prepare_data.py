#!/usr/bin/env python3
"""Builds the demo model's training text (demo/README.md).

Sources (Debian packages; see demo/README.md for their licences):
  - bible-kjv-text: the King James Version, public domain, read through the
    `bible` program of the bible-kjv package, one chapter per document;
  - python3-doc: the reST sources of the Python documentation (tutorial,
    FAQ, HOWTOs, language and library reference), PSF-2.0, one page per
    document, the reST markup reduced to plain text;
  - wordnet-base: WordNet 3.0's glosses (WordNet 3.0 licence), written out
    as short dictionary entries, and used by the dictionary tool below;
  - generated ChatML dialogues in Qwen3's chat format (written by this
    script, no outside text beyond the glosses): plain questions and
    answers, answers with <think> reasoning, and tool use with a
    calculator, a unit converter and a dictionary lookup.

Writes to OUT (default demo/work):
  text_train.txt, text_heldout.txt    plain documents, each ending in <|endoftext|>
  chat_train.txt, chat_heldout.txt    dialogues, each ending in <|endoftext|>
  bpe_corpus.txt                      a sample of both with the special tokens
                                      removed, for the BPE trainer
Deterministic for a given --seed.
"""
import argparse
import glob
import json
import os
import random
import re
import subprocess

EOT = "<|endoftext|>"

# ---------------------------------------------------------------- sources


def kjv_chapters():
    """One document per chapter: 'Book chapter' then its verses as prose."""
    out = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], capture_output=True, check=True,
                         text=True).stdout
    docs, cur, key = [], [], None
    pat = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")
    for line in out.splitlines():
        m = pat.match(line.strip())
        if not m:
            if cur and line.strip():
                cur[-1] += " " + line.strip()
            continue
        k = (m.group(1), m.group(2))
        if k != key:
            if cur:
                docs.append(" ".join(cur))
            cur, key = [], k
        cur.append(m.group(4).strip())
    if cur:
        docs.append(" ".join(cur))
    # a paragraph break every few verses keeps lines readable
    res = []
    for d in docs:
        words = d.split(". ")
        paras, p = [], []
        for w in words:
            p.append(w)
            if len(p) >= 4:
                paras.append(". ".join(p))
                p = []
        if p:
            paras.append(". ".join(p))
        res.append(".\n".join(x.rstrip(".") for x in paras) + ".\n")
    return res


ROLE = re.compile(r":[a-z:]+:`!?~?([^`<]*?)(?:\s*<[^>]*>)?`")
LITERAL = re.compile(r"``([^`]*)``")
REF = re.compile(r"`([^`<]*?)(?:\s*<[^>]*>)?`_+")
EMPH = re.compile(r"(?<![\w*])\*\*?([^*\n]+?)\*\*?(?![\w*])")


def rst_to_text(src):
    lines, out, skip = src.splitlines(), [], False
    for line in lines:
        s = line.rstrip()
        if re.match(r"^\.\. ", s) or s.startswith(".. _") or s == "..":
            # a directive: its options and comments are dropped, its content kept
            skip = not re.match(r"^\.\. (note|warning|seealso|versionadded|versionchanged|"
                                r"deprecated|tip|important|attention)::", s)
            if not skip:
                rest = s.split("::", 1)[1].strip()
                if rest:
                    out.append(rest)
            continue
        if skip:
            if s.startswith("   :") or s.startswith("      :") or (s.startswith(" ") and not out):
                continue
            if s.strip() == "" or s.startswith(" "):
                if s.strip() and re.match(r"^\s+:\w", s):
                    continue
                if s.strip() and not s.lstrip().startswith(":"):
                    skip = False
                else:
                    continue
            else:
                skip = False
        if re.match(r"^([=\-~^*#\"'+`.])\1{3,}$", s.strip()):
            continue
        s = ROLE.sub(r"\1", s)
        s = LITERAL.sub(r"\1", s)
        s = REF.sub(r"\1", s)
        s = EMPH.sub(r"\1", s)
        if s.endswith("::"):
            s = s[:-1]
        out.append(s)
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text + "\n"


def python_docs(root):
    parts = ["tutorial", "faq", "howto", "reference", "library", "using", "extending"]
    docs = []
    for p in parts:
        for f in sorted(glob.glob(os.path.join(root, p, "**", "*.rst.txt"), recursive=True)):
            with open(f, encoding="utf-8") as fh:
                t = rst_to_text(fh.read())
            if len(t) > 400:
                docs.append(t)
    return docs


def wordnet(root):
    """word -> (part of speech, first gloss) for words in common use
    (WordNet's tagged-sense count of at least 3), single lowercase words."""
    data = {}
    for pos, name in (("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv")):
        with open(os.path.join(root, "data." + name), encoding="latin-1") as fh:
            for line in fh:
                if line.startswith(" ") or "|" not in line:
                    continue
                off = line.split(" ", 1)[0]
                gloss = line.split("|", 1)[1].strip()
                gloss = gloss.split(";")[0].strip().strip('"').strip()
                data[(pos, off)] = gloss
    words = {}
    for pos, name in (("n", "noun"), ("v", "verb"), ("a", "adjective"), ("r", "adverb")):
        fname = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}[pos]
        with open(os.path.join(root, "index." + fname), encoding="latin-1") as fh:
            for line in fh:
                if line.startswith(" "):
                    continue
                f = line.split()
                lemma, synset_cnt, p_cnt = f[0], int(f[2]), int(f[3])
                tagged = int(f[5 + p_cnt])
                offs = f[6 + p_cnt:6 + p_cnt + synset_cnt]
                if tagged < 3 or not re.fullmatch(r"[a-z]{3,14}", lemma) or not offs:
                    continue
                g = data.get((pos, offs[0]))
                if not g or len(g) < 8 or len(g) > 120:
                    continue
                if lemma not in words or tagged > words[lemma][2]:
                    words[lemma] = (name, g, tagged)
    return {w: (p, g) for w, (p, g, _) in words.items()}


def wordnet_docs(words, rng):
    items = sorted(words.items())
    rng.shuffle(items)
    docs = []
    for i in range(0, len(items), 24):
        lines = []
        for w, (p, g) in items[i:i + 24]:
            art = "An" if w[0] in "aeiou" else "A"
            if p == "noun" and rng.random() < 0.5:
                lines.append(f"{art} {w} is {g}.")
            else:
                lines.append(f"{w.capitalize()} ({p}): {g}.")
        docs.append("\n".join(lines) + "\n")
    return docs


# ---------------------------------------------------------------- chat format

TOOLS = [
    {"type": "function", "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression with + - * / and parentheses.",
        "parameters": {"type": "object", "properties": {
            "expression": {"type": "string", "description": "The expression, for example 12 * (3 + 4)"}},
            "required": ["expression"]}}},
    {"type": "function", "function": {
        "name": "convert_units",
        "description": "Convert a quantity from one unit to another.",
        "parameters": {"type": "object", "properties": {
            "value": {"type": "number", "description": "The quantity to convert"},
            "from_unit": {"type": "string", "description": "The unit of the value, for example km"},
            "to_unit": {"type": "string", "description": "The unit wanted, for example mi"}},
            "required": ["value", "from_unit", "to_unit"]}}},
    {"type": "function", "function": {
        "name": "dictionary",
        "description": "Look up the definition of an English word.",
        "parameters": {"type": "object", "properties": {
            "word": {"type": "string", "description": "The word to define"}},
            "required": ["word"]}}},
]


def tojson(v):
    """The chat template's tojson (Python json.dumps, as transformers)."""
    return json.dumps(v, ensure_ascii=False)


def render(messages, tools=None):
    """Qwen3's chat template (tests/fixtures/model_gen_template.c) for the
    message shapes used here, without a generation prompt. An assistant
    message is {"role", "content", "reasoning", "tool_calls"}."""
    out = []
    if tools:
        out.append("<|im_start|>system\n")
        if messages[0]["role"] == "system":
            out.append(messages[0]["content"] + "\n\n")
        out.append("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                   "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
        for t in tools:
            out.append("\n" + tojson(t))
        out.append("\n</tools>\n\nFor each function call, return a json object with function name "
                   "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                   "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
                   "<|im_end|>\n")
    elif messages[0]["role"] == "system":
        out.append("<|im_start|>system\n" + messages[0]["content"] + "<|im_end|>\n")
    last_query = len(messages) - 1
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m["role"] == "user" and not (m["content"].startswith("<tool_response>") and
                                        m["content"].endswith("</tool_response>")):
            last_query = i
            break
    for i, m in enumerate(messages):
        role, content = m["role"], m.get("content", "")
        if role == "user" or (role == "system" and i > 0):
            out.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
        elif role == "assistant":
            reasoning = m.get("reasoning", "")
            last = i == len(messages) - 1
            if i > last_query and (last or reasoning):
                out.append("<|im_start|>assistant\n<think>\n" + reasoning.strip("\n") +
                           "\n</think>\n\n" + content.lstrip("\n"))
            else:
                out.append("<|im_start|>assistant\n" + content)
            for k, call in enumerate(m.get("tool_calls", [])):
                if k > 0 or content:
                    out.append("\n")
                out.append('<tool_call>\n{"name": "' + call["name"] + '", "arguments": ' +
                           tojson(call["arguments"]) + "}\n</tool_call>")
            out.append("<|im_end|>\n")
        elif role == "tool":
            if i == 0 or messages[i - 1]["role"] != "tool":
                out.append("<|im_start|>user")
            out.append("\n<tool_response>\n" + content + "\n</tool_response>")
            if i == len(messages) - 1 or messages[i + 1]["role"] != "tool":
                out.append("<|im_end|>\n")
    return "".join(out)


# ---------------------------------------------------------------- facts

CAPITALS = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid",
    "Portugal": "Lisbon", "Japan": "Tokyo", "China": "Beijing", "India": "New Delhi",
    "Canada": "Ottawa", "Mexico": "Mexico City", "Brazil": "Brasilia", "Argentina": "Buenos Aires",
    "Egypt": "Cairo", "Kenya": "Nairobi", "Nigeria": "Abuja", "Russia": "Moscow",
    "Poland": "Warsaw", "Sweden": "Stockholm", "Norway": "Oslo", "Finland": "Helsinki",
    "Denmark": "Copenhagen", "Greece": "Athens", "Turkey": "Ankara", "Ireland": "Dublin",
    "the United Kingdom": "London", "the United States": "Washington", "Australia": "Canberra",
    "New Zealand": "Wellington", "Peru": "Lima", "Chile": "Santiago", "Austria": "Vienna",
    "Hungary": "Budapest", "the Netherlands": "Amsterdam", "Belgium": "Brussels",
    "Switzerland": "Bern", "South Korea": "Seoul", "Thailand": "Bangkok", "Vietnam": "Hanoi",
    "Indonesia": "Jakarta", "Iran": "Tehran", "Morocco": "Rabat", "Ghana": "Accra",
    "Cuba": "Havana", "Colombia": "Bogota", "Iceland": "Reykjavik", "Czechia": "Prague",
}
OPPOSITES = {
    "hot": "cold", "big": "small", "fast": "slow", "happy": "sad", "light": "dark",
    "up": "down", "open": "closed", "early": "late", "full": "empty", "hard": "soft",
    "high": "low", "old": "young", "rich": "poor", "strong": "weak", "wet": "dry",
    "loud": "quiet", "long": "short", "near": "far", "heavy": "light", "clean": "dirty",
    "thick": "thin", "true": "false", "win": "lose", "day": "night", "left": "right",
    "first": "last", "inside": "outside", "buy": "sell", "push": "pull", "begin": "end",
}
ANIMALS = {  # sound, legs, kind
    "dog": ("barks", 4, "mammal"), "cat": ("meows", 4, "mammal"), "cow": ("moos", 4, "mammal"),
    "duck": ("quacks", 2, "bird"), "horse": ("neighs", 4, "mammal"), "sheep": ("bleats", 4, "mammal"),
    "lion": ("roars", 4, "mammal"), "owl": ("hoots", 2, "bird"), "frog": ("croaks", 4, "amphibian"),
    "pig": ("oinks", 4, "mammal"), "snake": ("hisses", 0, "reptile"), "bee": ("buzzes", 6, "insect"),
    "spider": ("makes no sound", 8, "arachnid"), "crow": ("caws", 2, "bird"),
    "wolf": ("howls", 4, "mammal"), "mouse": ("squeaks", 4, "mammal"), "goat": ("bleats", 4, "mammal"),
    "chicken": ("clucks", 2, "bird"), "ant": ("makes no sound", 6, "insect"),
}
COLORS = {
    "the sky": "blue", "grass": "green", "snow": "white", "coal": "black", "a banana": "yellow",
    "a ripe tomato": "red", "an orange": "orange", "a lemon": "yellow", "blood": "red",
    "milk": "white", "a carrot": "orange", "the sea": "blue", "a leaf": "green",
    "chocolate": "brown", "a plum": "purple", "the sun": "yellow",
}
PLANETS = ["Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
NUM_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
             "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
             "seventeen", "eighteen", "nineteen", "twenty"]
SYSTEMS = ["You are a helpful assistant.", "You are a concise assistant. Answer briefly.",
           "You are freetoken's demo model, a small helpful assistant.",
           "You are a friendly assistant that answers in plain English."]

UNITS = {  # name: (symbol, plural, to-SI factor or None for temperature, dimension)
    "km": ("kilometer", "kilometers", 1000.0, "length"), "mi": ("mile", "miles", 1609.344, "length"),
    "m": ("meter", "meters", 1.0, "length"), "ft": ("foot", "feet", 0.3048, "length"),
    "cm": ("centimeter", "centimeters", 0.01, "length"), "in": ("inch", "inches", 0.0254, "length"),
    "kg": ("kilogram", "kilograms", 1.0, "mass"), "lb": ("pound", "pounds", 0.45359237, "mass"),
    "g": ("gram", "grams", 0.001, "mass"), "oz": ("ounce", "ounces", 0.028349523125, "mass"),
    "l": ("liter", "liters", 1.0, "volume"), "gal": ("gallon", "gallons", 3.785411784, "volume"),
    "ml": ("milliliter", "milliliters", 0.001, "volume"),
    "C": ("degree Celsius", "degrees Celsius", None, "temperature"),
    "F": ("degree Fahrenheit", "degrees Fahrenheit", None, "temperature"),
}


def fmt_num(x):
    """A number as the tools print it: an integer when whole, else at most
    4 decimals without trailing zeros."""
    if abs(x - round(x)) < 1e-9:
        return str(int(round(x)))
    s = f"{x:.4f}".rstrip("0").rstrip(".")
    return s if s not in ("-0", "") else "0"


def convert(value, fu, tu):
    if UNITS[fu][3] == "temperature":
        c = value if fu == "C" else (value - 32) * 5 / 9
        return c if tu == "C" else c * 9 / 5 + 32
    return value * UNITS[fu][2] / UNITS[tu][2]


def unit_name(u, v):
    return UNITS[u][0] if v == 1 else UNITS[u][1]


class Gen:
    def __init__(self, rng, words):
        self.r = rng
        self.words = words
        self.word_list = sorted(words)

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    # ---- plain questions: (question, reasoning, answer)
    def qa(self):
        r, k = self.r, self.r.randrange(12)
        if k == 0:
            c = self.pick(sorted(CAPITALS))
            q = self.pick([f"What is the capital of {c}?", f"Which city is the capital of {c}?",
                           f"Tell me the capital of {c}.", f"capital of {c}?"])
            a = f"The capital of {c} is {CAPITALS[c]}."
            return q, f"The user wants the capital of {c}. It is {CAPITALS[c]}.", a
        if k == 1:
            w = self.pick(sorted(OPPOSITES))
            q = self.pick([f"What is the opposite of {w}?", f"Give me the opposite of \"{w}\".",
                           f"What word means the opposite of {w}?"])
            return q, f"The opposite of {w} is {OPPOSITES[w]}.", f"The opposite of \"{w}\" is \"{OPPOSITES[w]}\"."
        if k == 2:
            an = self.pick(sorted(ANIMALS))
            s, legs, kind = ANIMALS[an]
            j = r.randrange(3)
            art = "an" if an[0] in "aeiou" else "a"
            if j == 0:
                q = f"What sound does {art} {an} make?"
                a = f"{art.capitalize()} {an} {s}." if s != "makes no sound" else f"{art.capitalize()} {an} makes no sound that we can hear."
                return q, f"I recall what sound {art} {an} makes.", a
            if j == 1:
                q = f"How many legs does {art} {an} have?"
                return q, f"{art.capitalize()} {an} has {NUM_WORDS[legs]} legs.", f"{art.capitalize()} {an} has {NUM_WORDS[legs]} legs."
            q = f"What kind of animal is {art} {an}?"
            kart = "an" if kind[0] in "aeiou" else "a"
            return q, f"{art.capitalize()} {an} is {kart} {kind}.", f"{art.capitalize()} {an} is {kart} {kind}."
        if k == 3:
            t = self.pick(sorted(COLORS))
            q = self.pick([f"What color is {t}?", f"What colour is {t}?"])
            return q, f"{t[0].upper() + t[1:]} is {COLORS[t]}.", f"{t[0].upper() + t[1:]} is usually {COLORS[t]}."
        if k == 4:
            i = r.randrange(7)
            nxt = r.random() < 0.5
            if nxt:
                q = f"What day comes after {DAYS[i]}?"
                a = f"{DAYS[(i + 1) % 7]} comes after {DAYS[i]}."
            else:
                q = f"What day comes before {DAYS[i]}?"
                a = f"{DAYS[(i - 1) % 7]} comes before {DAYS[i]}."
            return q, "The days of the week are " + ", ".join(DAYS) + ".", a
        if k == 5:
            i = r.randrange(12)
            j = r.randrange(3)
            if j == 0:
                return (f"What month comes after {MONTHS[i]}?", "The months in order are " +
                        ", ".join(MONTHS) + ".", f"{MONTHS[(i + 1) % 12]} comes after {MONTHS[i]}.")
            if j == 1:
                return (f"Which month of the year is {MONTHS[i]}?", f"Counting from January, {MONTHS[i]} is number {i + 1}.",
                        f"{MONTHS[i]} is month number {i + 1} of the year.")
            return ("How many months are in a year?", "A year has twelve months.", "There are 12 months in a year.")
        if k == 6:
            a_, b_ = r.randrange(0, 11), r.randrange(0, 11)
            op = r.randrange(3)
            if op == 0:
                q = self.pick([f"What is {a_} plus {b_}?", f"What is {a_} + {b_}?", f"Add {a_} and {b_}."])
                return q, f"I add {a_} and {b_}: {a_} + {b_} = {a_ + b_}.", f"{a_} plus {b_} is {a_ + b_}."
            if op == 1:
                a_, b_ = max(a_, b_), min(a_, b_)
                q = self.pick([f"What is {a_} minus {b_}?", f"What is {a_} - {b_}?"])
                return q, f"I subtract {b_} from {a_}: {a_} - {b_} = {a_ - b_}.", f"{a_} minus {b_} is {a_ - b_}."
            q = self.pick([f"What is {a_} times {b_}?", f"What is {a_} * {b_}?"])
            return q, f"I multiply {a_} by {b_}: {a_} * {b_} = {a_ * b_}.", f"{a_} times {b_} is {a_ * b_}."
        if k == 7:
            j = r.randrange(4)
            if j == 0:
                i = r.randrange(8)
                return (f"Which planet is number {i + 1} from the sun?", "The planets from the sun are " +
                        ", ".join(PLANETS) + ".", f"{PLANETS[i]} is planet number {i + 1} from the sun.")
            if j == 1:
                return ("Which planet is the largest?", "Jupiter is the largest planet in the solar system.",
                        "Jupiter is the largest planet in our solar system.")
            if j == 2:
                return ("Which planet is closest to the sun?", "Mercury orbits closest to the sun.",
                        "Mercury is the planet closest to the sun.")
            return ("How many planets are in the solar system?", "There are eight planets: " + ", ".join(PLANETS) + ".",
                    "There are eight planets in the solar system.")
        if k == 8:
            w = self.pick(self.word_list)
            p, g = self.words[w]
            q = self.pick([f"What does \"{w}\" mean?", f"Define the word {w}.", f"What is the meaning of {w}?"])
            return q, f"\"{w.capitalize()}\" is a {p}.", f"\"{w.capitalize()}\" ({p}) means {g}."
        if k == 9:
            j = r.randrange(6)
            pairs = [("Hello!", "The user greets me.", "Hello! How can I help you today?"),
                     ("Hi, who are you?", "The user asks who I am.",
                      "I am a small demo language model trained for freetoken. I can answer simple questions and use tools such as a calculator."),
                     ("What can you do?", "The user asks what I can do.",
                      "I can answer simple questions, explain words, and call tools: a calculator, a unit converter and a dictionary."),
                     ("Thank you!", "The user thanks me.", "You are welcome!"),
                     ("Good morning.", "The user greets me.", "Good morning! What would you like to know?"),
                     ("Are you a large model?", "The user asks about my size.",
                      "No, I am a very small mixture-of-experts model, so my answers are simple.")]
            return pairs[j]
        if k == 10:
            n = r.randrange(2, 21)
            j = r.randrange(3)
            if j == 0:
                return (f"How do you write {n} in words?", f"{n} is written {NUM_WORDS[n]}.", f"{n} is written \"{NUM_WORDS[n]}\".")
            if j == 1:
                return (f"Is {n} even or odd?", f"{n} divided by 2 leaves {n % 2}.",
                        f"{n} is {'even' if n % 2 == 0 else 'odd'}.")
            return (f"What number comes after {n}?", f"{n} + 1 = {n + 1}.", f"{n + 1} comes after {n}.")
        w = self.pick(self.word_list)
        return (f"How do you spell {w}?", f"{w} has {len(w)} letters.", f"{w} is spelled " + "-".join(w.upper()) + ".")

    # ---- tool questions: (question, tool name, arguments, result text, answer)
    def calc(self):
        r = self.r
        j = r.randrange(6)
        a, b = r.randrange(2, 1000), r.randrange(2, 1000)
        if j == 0:
            e, v = f"{a} * {b}", a * b
            q = self.pick([f"What is {a} times {b}?", f"Calculate {a} * {b}.", f"How much is {a} multiplied by {b}?",
                           f"what's {a}*{b}"])
        elif j == 1:
            a, b = r.randrange(100, 100000), r.randrange(100, 100000)
            e, v = f"{a} + {b}", a + b
            q = self.pick([f"What is {a} plus {b}?", f"Add {a} and {b}.", f"What is the sum of {a} and {b}?"])
        elif j == 2:
            a, b = r.randrange(100, 100000), r.randrange(100, 100000)
            e, v = f"{a} - {b}", a - b
            q = self.pick([f"What is {a} minus {b}?", f"Subtract {b} from {a}.", f"Compute {a} - {b}."])
        elif j == 3:
            b = r.randrange(2, 50)
            a = b * r.randrange(2, 500) if r.random() < 0.6 else r.randrange(10, 10000)
            e, v = f"{a} / {b}", a / b
            q = self.pick([f"What is {a} divided by {b}?", f"Divide {a} by {b}.", f"How much is {a} / {b}?"])
        elif j == 4:
            c = r.randrange(2, 100)
            e, v = f"({a} + {b}) * {c}", (a + b) * c
            q = self.pick([f"What is ({a} + {b}) * {c}?", f"Compute ({a} + {b}) * {c}.",
                           f"Add {a} and {b}, then multiply by {c}."])
        else:
            p = r.randrange(1, 100)
            e, v = f"{p} / 100 * {a}", p / 100 * a
            q = self.pick([f"What is {p}% of {a}?", f"How much is {p} percent of {a}?"])
        res = fmt_num(v)
        ans = self.pick([f"{q.rstrip('?.')} is {res}." if q.startswith("What is") and "%" not in q else f"The result is {res}.",
                         f"The answer is {res}.", f"{e} = {res}."])
        return q, "calculator", {"expression": e}, res, ans

    def conv(self):
        r = self.r
        dims = {}
        for u, (_, _, _, d) in UNITS.items():
            dims.setdefault(d, []).append(u)
        d = self.pick(sorted(dims))
        fu, tu = r.sample(sorted(dims[d]), 2)
        v = r.randrange(1, 500) if r.random() < 0.8 else round(r.uniform(0.5, 100), 1)
        if d == "temperature":
            v = r.randrange(-30, 120)
        out = convert(v, fu, tu)
        vs, os_ = fmt_num(v), fmt_num(round(out, 2))
        q = self.pick([f"How many {UNITS[tu][1]} is {vs} {unit_name(fu, v)}?",
                       f"Convert {vs} {unit_name(fu, v)} to {UNITS[tu][1]}.",
                       f"What is {vs} {fu} in {tu}?",
                       f"{vs} {unit_name(fu, v)} in {UNITS[tu][1]}, please."])
        res = tojson({"value": round(out, 2) if abs(out - round(out)) > 1e-9 else int(round(out)),
                      "unit": tu})
        ans = f"{vs} {unit_name(fu, v)} is {os_} {unit_name(tu, round(out, 2))}."
        return q, "convert_units", {"value": v, "from_unit": fu, "to_unit": tu}, res, ans

    def dict_(self):
        w = self.pick(self.word_list)
        p, g = self.words[w]
        q = self.pick([f"Look up the word \"{w}\".", f"What does {w} mean?", f"Define {w}.",
                       f"Use the dictionary: what is the meaning of \"{w}\"?"])
        res = tojson({"word": w, "part_of_speech": p, "definition": g})
        ans = f"\"{w.capitalize()}\" is a {p} meaning {g}."
        return q, "dictionary", {"word": w}, res, ans

    # ---- whole dialogues, rendered
    def dialogue(self):
        r = self.r
        k = r.random()
        msgs = []
        if r.random() < 0.4:
            msgs.append({"role": "system", "content": self.pick(SYSTEMS)})
        if k < 0.45:  # tool use
            tools = TOOLS if r.random() < 0.8 else [t for t in TOOLS if r.random() < 0.6] or TOOLS
            names = [t["function"]["name"] for t in tools]
            kind = self.pick(names)
            q, name, args, res, ans = {"calculator": self.calc, "convert_units": self.conv,
                                       "dictionary": self.dict_}[kind]()
            msgs.append({"role": "user", "content": q})
            msgs.append({"role": "assistant", "content": "", "tool_calls": [{"name": name, "arguments": args}]})
            msgs.append({"role": "tool", "content": res})
            reasoning = "" if r.random() < 0.5 else self.pick([
                f"The {name} tool returned {res}.", f"The tool gave {res}. I can answer now.",
                f"I called {name} and got the result."])
            msgs.append({"role": "assistant", "content": ans, "reasoning": reasoning})
            if r.random() < 0.15:  # a follow-up question that needs no tool
                q2, r2, a2 = self.qa()
                msgs.append({"role": "user", "content": q2})
                msgs.append({"role": "assistant", "content": a2, "reasoning": r2 if r.random() < 0.5 else ""})
            return render(msgs, tools)
        if k < 0.55:  # tools offered, none needed
            q, reasoning, a = self.qa()
            msgs.append({"role": "user", "content": q})
            msgs.append({"role": "assistant", "content": a, "reasoning": reasoning if r.random() < 0.5 else ""})
            return render(msgs, TOOLS)
        n_turns = 1 if r.random() < 0.7 else r.randrange(2, 4)
        for t in range(n_turns):
            q, reasoning, a = self.qa()
            msgs.append({"role": "user", "content": q})
            msgs.append({"role": "assistant", "content": a,
                         "reasoning": reasoning if r.random() < 0.5 else ""})
        return render(msgs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "work"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dialogues", type=int, default=40000)
    ap.add_argument("--pydoc", default="/usr/share/doc/python3-doc/html/_sources")
    ap.add_argument("--wordnet", default="/usr/share/wordnet")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    words = wordnet(args.wordnet)
    docs = kjv_chapters() + python_docs(args.pydoc) + wordnet_docs(words, rng)
    docs = [d.replace(EOT, "") for d in docs]
    rng.shuffle(docs)
    gen = Gen(rng, words)
    chats = [gen.dialogue() for _ in range(args.dialogues)]

    def split(items, name):
        held = [x for i, x in enumerate(items) if i % 50 == 0]
        train = [x for i, x in enumerate(items) if i % 50 != 0]
        for part, xs in (("train", train), ("heldout", held)):
            with open(os.path.join(args.out, f"{name}_{part}.txt"), "w", encoding="utf-8") as f:
                for x in xs:
                    f.write(x + EOT)
        return train

    text_train = split(docs, "text")
    chat_train = split(chats, "chat")
    # the BPE trainer's sample: ~2 MB of each, special tokens removed
    specials = re.compile(r"<\|endoftext\|>|<\|im_start\|>|<\|im_end\|>|</?think>|</?tool_call>|</?tool_response>")
    sample, n = [], 0
    for d in text_train:
        if n > 2_000_000:
            break
        sample.append(d)
        n += len(d)
    n = 0
    for c in chat_train:
        if n > 2_000_000:
            break
        sample.append(specials.sub("\n", c))
        n += len(c)
    with open(os.path.join(args.out, "bpe_corpus.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(sample))
    sizes = {p: os.path.getsize(os.path.join(args.out, p)) for p in sorted(os.listdir(args.out)) if p.endswith(".txt")}
    print(json.dumps({"documents": len(docs), "dialogues": len(chats), "words": len(words), "bytes": sizes}))


if __name__ == "__main__":
    main()
