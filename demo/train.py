#!/usr/bin/python3
"""Trains the demo MoE (demo/README.md) on the encoded text of
prepare_data.py (and focus_data.py) + demotok encode, for a budget of
minutes or up to a wall-clock deadline.

  nice -n 19 /usr/bin/python3 demo/train.py --minutes 55 [--work demo/work]
      [--threads 1] [--batch 8] [--ctx 512] [--lr 3e-3] [--warmup 50]
      [--chat-share 0.55] [--focus-share 0] [--align] [--deadline EPOCH_S]
      [--reserve 90] [--quick-eval 0] [--init-from demo/model [--no-init-eval]]
      [--resume]

Each step draws --batch windows of --ctx + 1 tokens, a --focus-share of
them from focus_train.u16 (focus_data.py's dialogues), a --chat-share from
the dialogues (chat_train.u16) and the rest from the plain text
(text_train.u16), at random offsets, or with --align for dialogues at the
start of a dialogue (the token after an <|endoftext|>), so a window never
asks the model to continue an exchange whose question it cannot see. It
minimizes next-token cross-entropy plus 0.01 x the routers' load-balancing
loss with AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), the
learning rate warmed up over --warmup steps and then decayed on a cosine to
a tenth.

The cosine runs over the budget's share of training done. With --minutes
alone that is the elapsed share of the wall-clock budget (the first run's
schedule). With --deadline (a Unix time at which training must have ended,
checkpoint included) it is a share of steps: steps done / (steps done +
the steps that fit before the deadline at the median step time of the last
20 steps), never decreasing. A process that is stopped (SIGSTOP) and
continued loses the steps it could have made, but its schedule does not
jump back or overrun: the cosine still ends at the deadline, and a pause
does not count as a slow step.

--init-from DIR warm-starts the weights from a Hugging Face directory
(demo/model: config.json and model.safetensors, bf16 widened to float32)
with a fresh optimizer and step count; --resume continues WORK/ckpt.pt
(model, optimizer, step, tokens, elapsed) instead.

Every --ckpt-minutes (and at the end) it evaluates the held-out loss on
--eval-windows fixed windows of text_heldout.u16 and chat_heldout.u16 (and
focus_heldout.u16 when there is one; the periodic checkpoints only the
first --quick-eval of them when that is set), appends a line to
WORK/train_log.jsonl and saves WORK/ckpt.pt. Steps are logged to
WORK/train_log.jsonl too.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen3moe  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def model_config(tokenizer_dir):
    """The demo model's shape; vocabulary and end tokens from tokenizer.json."""
    eot, im_end, n_vocab = qwen3moe.special_ids(tokenizer_dir)
    return qwen3moe.Config(vocab_size=n_vocab, hidden_size=256, num_hidden_layers=4,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                           num_experts=16, num_experts_per_tok=2, moe_intermediate_size=256,
                           max_position_embeddings=512, rms_norm_eps=1e-6, rope_theta=10000.0,
                           bos_token_id=eot, eos_token_id=im_end)


def load_ids(path):
    return np.fromfile(path, dtype="<u2").astype(np.int64)


def windows(data, n, ctx, rng, starts=None):
    """n windows of ctx + 1 tokens: at random offsets, or at offsets drawn
    from starts (those that leave a whole window)."""
    if starts is None:
        pos = rng.integers(0, len(data) - ctx - 1, size=n)
    else:
        pos = starts[rng.integers(0, len(starts), size=n)]
    return torch.from_numpy(np.stack([data[s:s + ctx + 1] for s in pos]))


def doc_starts(data, eot, ctx):
    """Offsets of the tokens after each <|endoftext|> (and 0) that leave a
    whole window of ctx + 1 tokens."""
    s = np.concatenate([[0], np.nonzero(data == eot)[0] + 1])
    return s[s + ctx + 1 <= len(data)]


def evaluate(model, sets, n=None):
    """Mean loss per set over its first n windows (all when n is None)."""
    model.eval()
    out = {}
    with torch.no_grad():
        for name, batch in sets.items():
            batch = batch[:n]
            tot = 0.0
            for i in range(0, len(batch), 8):
                b = batch[i:i + 8]
                logits, _ = model(b[:, :-1])
                tot += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1),
                                       reduction="sum").item()
            out[name] = tot / batch[:, 1:].numel()
    model.train()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--tokenizer", default=os.path.join(HERE, "model"))
    ap.add_argument("--minutes", type=float, default=55)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--chat-share", type=float, default=0.55)
    ap.add_argument("--focus-share", type=float, default=0.0,
                    help="share of each batch from focus_train.u16 (focus_data.py)")
    ap.add_argument("--align", action="store_true", help="dialogue windows start at a dialogue")
    ap.add_argument("--deadline", type=float, default=0,
                    help="Unix time by which training ends; the cosine is then scheduled by steps")
    ap.add_argument("--init-from", default="", help="warm start from this Hugging Face directory")
    ap.add_argument("--reserve", type=float, default=90,
                    help="with --deadline: seconds kept for the final evaluation and checkpoint")
    ap.add_argument("--quick-eval", type=int, default=0,
                    help="periodic checkpoints evaluate only this many windows of each set (0: all)")
    ap.add_argument("--no-init-eval", action="store_true", help="skip the warm start's evaluation")
    ap.add_argument("--ckpt-minutes", type=float, default=5)
    ap.add_argument("--eval-windows", type=int, default=32)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (smoke tests)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--resume", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    text = load_ids(os.path.join(a.work, "text_train.u16"))
    chat = load_ids(os.path.join(a.work, "chat_train.u16"))
    erng = np.random.default_rng(12345)
    held = {"text": windows(load_ids(os.path.join(a.work, "text_heldout.u16")), a.eval_windows, a.ctx, erng),
            "chat": windows(load_ids(os.path.join(a.work, "chat_heldout.u16")), a.eval_windows, a.ctx, erng)}
    focus = None
    if os.path.exists(os.path.join(a.work, "focus_heldout.u16")):
        held["focus"] = windows(load_ids(os.path.join(a.work, "focus_heldout.u16")), a.eval_windows, a.ctx,
                                np.random.default_rng(12346))
    if a.focus_share > 0:
        focus = load_ids(os.path.join(a.work, "focus_train.u16"))
    c = model_config(a.tokenizer)
    chat_starts = doc_starts(chat, c.bos_token_id, a.ctx) if a.align else None
    focus_starts = doc_starts(focus, c.bos_token_id, a.ctx) if a.align and focus is not None else None
    model = qwen3moe.Model(c)
    if a.init_from:
        init = qwen3moe.load_hf(a.init_from)
        if init.c.to_hf() != c.to_hf():
            sys.exit(f"train.py: {a.init_from}/config.json is not this model's shape")
        model.load_state_dict(init.state_dict())
        print(f"warm start from {a.init_from}", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.95))
    ckpt = os.path.join(a.work, "ckpt.pt")
    log_path = os.path.join(a.work, "train_log.jsonl")
    step, tokens, elapsed0 = 0, 0, 0.0
    if a.resume and os.path.exists(ckpt):
        s = torch.load(ckpt)
        model.load_state_dict(s["model"])
        opt.load_state_dict(s["opt"])
        step, tokens, elapsed0 = s["step"], s["tokens"], s["elapsed"]
    n_params = sum(p.numel() for p in model.parameters())
    n_active = n_params - model.embed_tokens.numel() - sum(
        (l.gate_proj.numel() + l.up_proj.numel() + l.down_proj.numel()) * (1 - c.num_experts_per_tok / c.num_experts)
        for l in model.layers)
    print(f"parameters {n_params / 1e6:.2f} M, active per token {n_active / 1e6:.2f} M (without the embedding)",
          flush=True)
    log = open(log_path, "a")
    budget = a.minutes * 60
    t0 = time.time() - elapsed0
    last_ckpt = time.time()
    n_focus = int(round(a.batch * a.focus_share))
    n_chat = int(round(a.batch * a.chat_share))
    if n_focus + n_chat > a.batch:
        sys.exit("train.py: --chat-share + --focus-share exceed the batch")
    step_times, last_t, done_frac = [], None, 0.0

    def save(final=False):
        n = None if final or not a.quick_eval else a.quick_eval
        ev = evaluate(model, held, n)
        rec = {"kind": "eval", "step": step, "tokens": tokens, "elapsed_s": round(time.time() - t0, 1),
               "windows": n or a.eval_windows}
        rec.update({"heldout_" + k: round(v, 4) for k, v in ev.items()})
        rec["final"] = final
        log.write(json.dumps(rec) + "\n")
        log.flush()
        print(json.dumps(rec), flush=True)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "tokens": tokens,
                    "elapsed": time.time() - t0, "config": c.to_hf()}, ckpt + ".tmp")
        os.replace(ckpt + ".tmp", ckpt)

    if a.init_from and step == 0 and not a.no_init_eval:
        save()  # the warm start's own held-out loss, the baseline (step 0)
    reserve = a.reserve
    ema = None
    while True:
        now = time.time()
        el = now - t0
        if last_t is not None:
            step_times = (step_times + [now - last_t])[-20:]
        last_t = now
        if a.deadline:
            left = a.deadline - reserve - now
            if left <= 0 or (a.max_steps and step >= a.max_steps):
                break
            # a pause (SIGSTOP) shows as one long step: the median ignores it
            per_step = float(np.median(step_times)) if step_times else 5.0
            done_frac = max(done_frac, step / (step + left / per_step)) if step else 0.0
            frac = done_frac
        else:
            if el >= budget or (a.max_steps and step >= a.max_steps):
                break
            frac = el / budget
        lr = a.lr * min(1.0, (step + 1) / a.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = lr
        parts = []
        if n_focus:
            parts.append(windows(focus, n_focus, a.ctx, rng, focus_starts))
        if n_chat:
            parts.append(windows(chat, n_chat, a.ctx, rng, chat_starts))
        if a.batch - n_focus - n_chat:
            parts.append(windows(text, a.batch - n_focus - n_chat, a.ctx, rng))
        b = torch.cat(parts)
        logits, aux = model(b[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        (loss + 0.01 * aux).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        tokens += b[:, 1:].numel()
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        if step % 10 == 0 or step <= 3:
            rec = {"kind": "train", "step": step, "tokens": tokens, "elapsed_s": round(time.time() - t0, 1),
                   "loss": round(loss.item(), 4), "loss_ema": round(ema, 4), "aux": round(float(aux), 4),
                   "lr": round(lr, 6), "frac": round(frac, 4),
                   "tok_s": round(tokens / max(1e-9, time.time() - t0), 1)}
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(json.dumps(rec), flush=True)
        if time.time() - last_ckpt >= a.ckpt_minutes * 60:
            save()
            last_ckpt = time.time()
    save(final=True)


if __name__ == "__main__":
    main()
