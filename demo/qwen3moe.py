"""The demo model in PyTorch: Qwen3-MoE (transformers' Qwen3MoeForCausalLM,
written out here so that nothing but python3-torch is needed), plus the
Hugging Face directory's safetensors and config.json, read and written by
hand (8-byte little-endian header length, JSON header, raw data).

Architecture, as transformers' modeling_qwen3_moe.py and our runtime
(models/qwen3moe) define it:
  x = embed[ids]
  per layer:  h = x + o_proj(attn(rope(q_norm(q)), rope(k_norm(k)), v)) of rmsnorm(x)
              x = h + moe(rmsnorm(h))
  logits = lm_head(rmsnorm(x))
RMSNorm: x / sqrt(mean(x^2) + eps) * w. q_norm/k_norm: RMSNorm over each
head's head_dim. RoPE: the rotate-half (NeoX) form over the whole head_dim,
inv_freq = theta^(-2i/head_dim). Attention: causal, GQA, scale
1/sqrt(head_dim). MoE: router softmax over all experts, the top-k
renormalized (norm_topk_prob), each expert down(silu(gate(x)) * up(x)).
"""
import json
import math
import struct

import torch
import torch.nn.functional as F


class Config:
    def __init__(self, **kw):
        self.vocab_size = kw.get("vocab_size", 4096)
        self.hidden_size = kw.get("hidden_size", 256)
        self.num_hidden_layers = kw.get("num_hidden_layers", 4)
        self.num_attention_heads = kw.get("num_attention_heads", 4)
        self.num_key_value_heads = kw.get("num_key_value_heads", 2)
        self.head_dim = kw.get("head_dim", 64)
        self.num_experts = kw.get("num_experts", 16)
        self.num_experts_per_tok = kw.get("num_experts_per_tok", 2)
        self.moe_intermediate_size = kw.get("moe_intermediate_size", 256)
        self.max_position_embeddings = kw.get("max_position_embeddings", 512)
        self.rms_norm_eps = kw.get("rms_norm_eps", 1e-6)
        self.rope_theta = kw.get("rope_theta", 10000.0)
        self.bos_token_id = kw.get("bos_token_id", 0)
        self.eos_token_id = kw.get("eos_token_id", 0)

    def to_hf(self):
        """config.json with the keys Qwen3-MoE checkpoints carry."""
        return {
            "architectures": ["Qwen3MoeForCausalLM"],
            "attention_bias": False,
            "attention_dropout": 0.0,
            "bos_token_id": self.bos_token_id,
            "decoder_sparse_step": 1,
            "eos_token_id": self.eos_token_id,
            "head_dim": self.head_dim,
            "hidden_act": "silu",
            "hidden_size": self.hidden_size,
            "initializer_range": 0.02,
            "intermediate_size": self.moe_intermediate_size * self.num_experts_per_tok,
            "max_position_embeddings": self.max_position_embeddings,
            "max_window_layers": self.num_hidden_layers,
            "mlp_only_layers": [],
            "model_type": "qwen3_moe",
            "moe_intermediate_size": self.moe_intermediate_size,
            "norm_topk_prob": True,
            "num_attention_heads": self.num_attention_heads,
            "num_experts": self.num_experts,
            "num_experts_per_tok": self.num_experts_per_tok,
            "num_hidden_layers": self.num_hidden_layers,
            "num_key_value_heads": self.num_key_value_heads,
            "output_router_logits": False,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_scaling": None,
            "rope_theta": self.rope_theta,
            "router_aux_loss_coef": 0.01,
            "sliding_window": None,
            "tie_word_embeddings": False,
            "torch_dtype": "bfloat16",
            "transformers_version": "4.51.0",
            "use_cache": True,
            "use_sliding_window": False,
            "vocab_size": self.vocab_size,
        }

    @staticmethod
    def from_hf(d):
        keys = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "num_experts", "num_experts_per_tok",
                "moe_intermediate_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",
                "bos_token_id", "eos_token_id"]
        return Config(**{k: d[k] for k in keys if k in d})


def rms_norm(x, w, eps):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d, hd, E, f = c.hidden_size, c.head_dim, c.num_experts, c.moe_intermediate_size
        self.c = c
        self.input_layernorm = torch.nn.Parameter(torch.ones(d))
        self.post_attention_layernorm = torch.nn.Parameter(torch.ones(d))
        self.q_norm = torch.nn.Parameter(torch.ones(hd))
        self.k_norm = torch.nn.Parameter(torch.ones(hd))
        std = 0.02
        self.q_proj = torch.nn.Parameter(torch.randn(c.num_attention_heads * hd, d) * std)
        self.k_proj = torch.nn.Parameter(torch.randn(c.num_key_value_heads * hd, d) * std)
        self.v_proj = torch.nn.Parameter(torch.randn(c.num_key_value_heads * hd, d) * std)
        self.o_proj = torch.nn.Parameter(torch.randn(d, c.num_attention_heads * hd) * std /
                                         math.sqrt(2 * c.num_hidden_layers))
        self.gate = torch.nn.Parameter(torch.randn(E, d) * std)
        self.gate_proj = torch.nn.Parameter(torch.randn(E, f, d) * std)
        self.up_proj = torch.nn.Parameter(torch.randn(E, f, d) * std)
        self.down_proj = torch.nn.Parameter(torch.randn(E, d, f) * std /
                                            math.sqrt(2 * c.num_hidden_layers))

    def attention(self, x, cos, sin):
        c = self.c
        B, T, _ = x.shape
        H, KV, hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        q = F.linear(x, self.q_proj).view(B, T, H, hd)
        k = F.linear(x, self.k_proj).view(B, T, KV, hd)
        v = F.linear(x, self.v_proj).view(B, T, KV, hd)
        q = rms_norm(q, self.q_norm, c.rms_norm_eps)
        k = rms_norm(k, self.k_norm, c.rms_norm_eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if KV != H:
            k = k.repeat_interleave(H // KV, dim=1)
            v = v.repeat_interleave(H // KV, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * hd)
        return F.linear(y, self.o_proj)

    def moe(self, x):
        """Returns the output and the load-balancing loss (Switch
        Transformer's: E * sum over experts of token share x mean prob)."""
        c = self.c
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        probs = F.linear(x, self.gate).softmax(-1)
        topw, topi = probs.topk(c.num_experts_per_tok, dim=-1)
        topw = topw / topw.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for e in range(c.num_experts):
            tok, slot = (topi == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            h = x[tok]
            y = F.linear(F.silu(F.linear(h, self.gate_proj[e])) * F.linear(h, self.up_proj[e]),
                         self.down_proj[e])
            out.index_add_(0, tok, y * topw[tok, slot].unsqueeze(-1))
        share = F.one_hot(topi, c.num_experts).float().sum(1).mean(0) / c.num_experts_per_tok
        aux = c.num_experts * (share * probs.mean(0)).sum()
        return out.view(shape), aux

    def forward(self, x, cos, sin):
        x = x + self.attention(rms_norm(x, self.input_layernorm, self.c.rms_norm_eps), cos, sin)
        y, aux = self.moe(rms_norm(x, self.post_attention_layernorm, self.c.rms_norm_eps))
        return x + y, aux


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Model(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Parameter(torch.randn(c.vocab_size, c.hidden_size) * 0.02)
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c.num_hidden_layers)])
        self.norm = torch.nn.Parameter(torch.ones(c.hidden_size))
        self.lm_head = torch.nn.Parameter(torch.randn(c.vocab_size, c.hidden_size) * 0.02)

    def rope(self, T, device):
        hd = self.c.head_dim
        inv = 1.0 / (self.c.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        ang = torch.cat((ang, ang), dim=-1)
        # [T, 1, hd]: broadcast over batch and heads of [B, T, H, hd]
        return ang.cos().float()[:, None, :].to(device), ang.sin().float()[:, None, :].to(device)

    def forward(self, ids):
        """ids [B, T] -> logits [B, T, vocab] (float32), aux loss."""
        x = self.embed_tokens[ids]
        cos, sin = self.rope(ids.shape[1], ids.device)
        aux = 0.0
        for layer in self.layers:
            x, a = layer(x, cos, sin)
            aux = aux + a
        x = rms_norm(x, self.norm, self.c.rms_norm_eps)
        return F.linear(x, self.lm_head), aux / len(self.layers)

    # ---- Hugging Face names
    def hf_tensors(self):
        """(name, tensor) in transformers' Qwen3MoeForCausalLM naming."""
        out = [("model.embed_tokens.weight", self.embed_tokens)]
        for i, l in enumerate(self.layers):
            p = f"model.layers.{i}."
            out += [(p + "input_layernorm.weight", l.input_layernorm),
                    (p + "self_attn.q_proj.weight", l.q_proj),
                    (p + "self_attn.k_proj.weight", l.k_proj),
                    (p + "self_attn.v_proj.weight", l.v_proj),
                    (p + "self_attn.o_proj.weight", l.o_proj),
                    (p + "self_attn.q_norm.weight", l.q_norm),
                    (p + "self_attn.k_norm.weight", l.k_norm),
                    (p + "post_attention_layernorm.weight", l.post_attention_layernorm),
                    (p + "mlp.gate.weight", l.gate)]
            for e in range(self.c.num_experts):
                q = p + f"mlp.experts.{e}."
                out += [(q + "gate_proj.weight", l.gate_proj[e]),
                        (q + "up_proj.weight", l.up_proj[e]),
                        (q + "down_proj.weight", l.down_proj[e])]
        out += [("model.norm.weight", self.norm), ("lm_head.weight", self.lm_head)]
        return out

    def load_hf(self, tensors):
        with torch.no_grad():
            for name, t in self.hf_tensors():
                if name not in tensors:
                    raise KeyError(f"missing tensor {name}")
                src = tensors[name]
                if tuple(src.shape) != tuple(t.shape):
                    raise ValueError(f"{name}: shape {tuple(src.shape)}, expected {tuple(t.shape)}")
                t.copy_(src.float())


# ---- safetensors, by hand

_DT = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}


def save_safetensors(path, named, dtype="BF16"):
    tdt = _DT[dtype][0]
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in named:
        b = t.detach().to(tdt).contiguous().view(torch.int16 if _DT[dtype][1] == 2 else torch.int32)
        raw = b.numpy().astype("<i2" if _DT[dtype][1] == 2 else "<i4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in blobs:
            f.write(raw)


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tdt, size = _DT[info["dtype"]]
        a, b = info["data_offsets"]
        raw = bytearray(data[a:b])
        t = torch.frombuffer(raw, dtype=torch.int16 if size == 2 else torch.int32)
        out[name] = t.view(tdt).reshape(info["shape"]).float()
    return out


def save_hf(model, d, dtype="BF16"):
    import os
    with open(os.path.join(d, "config.json"), "w") as f:
        cfg = model.c.to_hf()
        cfg["torch_dtype"] = {"BF16": "bfloat16", "F32": "float32", "F16": "float16"}[dtype]
        json.dump(cfg, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": model.c.bos_token_id, "do_sample": True,
                   "eos_token_id": [model.c.eos_token_id, model.c.bos_token_id],
                   "pad_token_id": model.c.bos_token_id, "temperature": 0.6, "top_k": 20,
                   "top_p": 0.95, "transformers_version": "4.51.0"}, f, indent=2)
        f.write("\n")
    save_safetensors(os.path.join(d, "model.safetensors"), model.hf_tensors(), dtype)


def load_hf(d):
    import os
    with open(os.path.join(d, "config.json")) as f:
        c = Config.from_hf(json.load(f))
    m = Model(c)
    m.load_hf(load_safetensors(os.path.join(d, "model.safetensors")))
    return m


def special_ids(d):
    """<|endoftext|> and <|im_end|> ids from tokenizer.json."""
    import os
    with open(os.path.join(d, "tokenizer.json")) as f:
        tj = json.load(f)
    ids = {t["content"]: t["id"] for t in tj["added_tokens"]}
    return ids["<|endoftext|>"], ids["<|im_end|>"], len(tj["model"]["vocab"]) + len(tj["added_tokens"])
