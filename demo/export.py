#!/usr/bin/python3
"""Writes a training checkpoint as the demo's Hugging Face directory:
config.json (Qwen3MoeForCausalLM), generation_config.json and
model.safetensors in bfloat16, next to the tokenizer files demotok wrote.

  /usr/bin/python3 demo/export.py [--ckpt demo/work/ckpt.pt] [--out demo/model] [--dtype BF16|F32]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3moe  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default=os.path.join(HERE, "work", "ckpt.pt"))
    ap.add_argument("--out", default=os.path.join(HERE, "model"))
    ap.add_argument("--dtype", default="BF16", choices=["BF16", "F32"])
    a = ap.parse_args()
    s = torch.load(a.ckpt)
    m = qwen3moe.Model(qwen3moe.Config.from_hf(s["config"]))
    m.load_state_dict(s["model"])
    os.makedirs(a.out, exist_ok=True)
    qwen3moe.save_hf(m, a.out, a.dtype)
    print(f"{a.out}: step {s['step']}, {s['tokens']} tokens, {s['elapsed'] / 60:.1f} min of training")


if __name__ == "__main__":
    main()
