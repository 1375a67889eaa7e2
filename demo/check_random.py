#!/usr/bin/python3
"""Checks the PyTorch model (qwen3moe.py) against our runtime before any
training: a random-weight model of the demo's shape is written as a float32
Hugging Face directory (with demo/model's tokenizer), compiled with
`ftc compile --format f32 --kv f32`, and `ft logits` on a token sequence is
compared with the PyTorch forward. Any architecture mismatch (norms, RoPE
layout, GQA, router, expert order, tensor names) shows as a large
difference; matching models agree to about 1e-5.

  /usr/bin/python3 demo/check_random.py [--build build] [--work DIR] [--seed N]
"""
import argparse
import os
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3moe  # noqa: E402
from train import model_config  # noqa: E402


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(here, "..", "build"))
    ap.add_argument("--work", default=os.path.join(here, "work", "random"))
    ap.add_argument("--tokenizer", default=os.path.join(here, "model"))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--n", type=int, default=40, help="tokens evaluated")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    c = model_config(a.tokenizer)
    m = qwen3moe.Model(c)
    with torch.no_grad():  # norms away from 1 and a sharper router, so that every part matters
        for name, t in m.hf_tensors():
            if "norm" in name:
                t.copy_(1 + 0.3 * torch.randn_like(t))
            elif name.endswith("mlp.gate.weight"):
                t.mul_(20)
            else:
                t.mul_(3)
    hf = os.path.join(a.work, "hf")
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(hf)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(a.tokenizer, f), hf)
    qwen3moe.save_hf(m, hf, "F32")
    bundle = os.path.join(a.work, "bundle")
    subprocess.run([os.path.join(a.build, "compiler", "ftc"), "compile", hf, "-o", bundle,
                    "--format", "f32", "--kv", "f32", "--cuda-arch", "none", "--quiet"], check=True)
    g = torch.Generator().manual_seed(a.seed)
    ids = torch.randint(0, c.vocab_size, (a.n,), generator=g)
    out = os.path.join(a.work, "logits.f32")
    subprocess.run([os.path.join(a.build, "runtime", "ft"), "logits", bundle, "--tokens",
                    ",".join(str(int(i)) for i in ids), "-o", out, "--threads", "1"], check=True)
    ours = torch.from_numpy(__import__("numpy").fromfile(out, dtype="<f4")).view(a.n, c.vocab_size)
    with torch.no_grad():
        ref, _ = m(ids[None])
    ref = ref[0]
    diff = (ours - ref).abs().max().item()
    scale = ref.abs().max().item()
    same = (ours.argmax(-1) == ref.argmax(-1)).float().mean().item()
    print(f"max |ft - torch| = {diff:.3g} (largest logit {scale:.3g}), same argmax at {same:.0%} of {a.n} positions")
    if diff > 1e-4 * max(1.0, scale):
        print("MISMATCH")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
