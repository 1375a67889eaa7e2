#!/usr/bin/python3
"""Regenerates the demo model's golden (tests/e2e/test_demo_golden.sh): the
float32 logits of the PyTorch model (qwen3moe.py, the training script's
model) on a fixed chat prompt, from demo/model's bf16 weights widened to
float32, and its greedy continuation.

  /usr/bin/python3 demo/golden.py [--model demo/model] [--out demo/golden]

The prompt is encoded here in Python from tokenizer.json alone (the
special tokens, Qwen2's pre-tokenizer split for ASCII text, byte-level BPE
by merge rank), not by our tokenizer. Writes:
  OUT/golden.json   prompt text and ids, the positions whose logits are
                    kept, per position the argmax and the largest logit,
                    the greedy tokens (at most n_predict, up to an
                    end token, which is not listed, as ft run reports them)
  OUT/logits.f32    the kept positions' rows, full vocabulary, float32
                    little-endian, row-major
"""
import argparse
import json
import os
import re
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3moe  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
          "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
          "<|im_start|>assistant\n")
N_GREEDY = 24

# Qwen2's split with \p{L} -> [A-Za-z] and \p{N} -> [0-9]: exact for ASCII text.
SPLIT = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]| ?[^\sA-Za-z0-9]+[\r\n]*"
                   r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def encode(tj, text):
    if not text.isascii():
        raise ValueError("this encoder handles ASCII text only")
    vocab = tj["model"]["vocab"]
    ranks = {tuple(m.split(" ")) if isinstance(m, str) else tuple(m): i for i, m in enumerate(tj["model"]["merges"])}
    added = {t["content"]: t["id"] for t in tj["added_tokens"]}
    b2u = bytes_to_unicode()
    ids = []
    special = re.compile("(" + "|".join(re.escape(s) for s in sorted(added, key=len, reverse=True)) + ")")
    for part in special.split(text):
        if not part:
            continue
        if part in added:
            ids.append(added[part])
            continue
        for piece in SPLIT.findall(part):
            sym = [b2u[b] for b in piece.encode()]
            while len(sym) > 1:
                best = min(range(len(sym) - 1), key=lambda i: ranks.get((sym[i], sym[i + 1]), 1 << 30))
                if (sym[best], sym[best + 1]) not in ranks:
                    break
                sym[best:best + 2] = [sym[best] + sym[best + 1]]
            ids += [vocab[s] for s in sym]
    return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(HERE, "model"))
    ap.add_argument("--out", default=os.path.join(HERE, "golden"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    with open(os.path.join(a.model, "tokenizer.json")) as f:
        tj = json.load(f)
    ids = encode(tj, PROMPT)
    m = qwen3moe.load_hf(a.model)
    m.eval()
    with torch.no_grad():
        logits, _ = m(torch.tensor([ids]))
        logits = logits[0]
        end = {m.c.eos_token_id, m.c.bos_token_id}
        seq, greedy = list(ids), []
        for _ in range(N_GREEDY):
            nxt = int(m(torch.tensor([seq]))[0][0, -1].argmax())
            if nxt in end:  # as ft run: the end token ends the text, unreported
                break
            greedy.append(nxt)
            seq.append(nxt)
    n = len(ids)
    keep = sorted({0, n // 3, (2 * n) // 3, n - 1})
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "logits.f32"), "wb") as f:
        for p in keep:
            f.write(struct.pack("<%df" % logits.shape[1], *logits[p].tolist()))
    rec = {"prompt": PROMPT, "tokens": ids, "positions": keep, "vocab_size": int(logits.shape[1]),
           "argmax": [int(x) for x in logits.argmax(-1)],
           "max_logit": [float(x) for x in logits.max(-1).values],
           "n_predict": N_GREEDY, "greedy": greedy,
           "note": "demo/golden.py: PyTorch float32 forward of demo/model (bf16 weights widened)"}
    with open(os.path.join(a.out, "golden.json"), "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(f"{n} prompt tokens, positions {keep} kept; greedy: {greedy}")


if __name__ == "__main__":
    main()
