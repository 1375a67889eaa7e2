// What @huggingface/gguf (the Hugging Face Hub's GGUF parser, which we did
// not write) reads in a GGUF file, as JSON in the keys of
// `ftc inspect --json --tensors`, so that the two can be compared:
//
//   node gguf-view.mjs FILE.gguf > view.json
//
// Model keys come from the metadata ("<arch>.block_count" is n_layers, ...;
// a key the file lacks is left out); each tensor is its name, its ggml type
// as a lower-case name (ftc's format names), its shape outermost first (ftc's
// order; GGUF stores ne[0] first), and span: the bytes from its data offset
// to the next tensor's (or the file's end), which is its size plus the
// alignment padding. The multi-token-prediction layers GLM-4.5's converter
// appends (<arch>.nextn_predict_layers of the block_count layers) are not
// part of the model ftc imports: n_layers and n_tensors leave them out,
// mtp_layers counts them, and their tensors are marked "mtp": true.
import { statSync } from "node:fs";
import { gguf, GGMLQuantizationType } from "@huggingface/gguf";

const path = process.argv[2];
if (!path) {
  console.error("usage: node gguf-view.mjs FILE.gguf");
  process.exit(2);
}
const { metadata: md, tensorInfos, tensorDataOffset } = await gguf(path, { allowLocalFile: true });
const arch = md["general.architecture"];
const num = (v) => (typeof v === "bigint" ? Number(v) : v);
const out = { arch };
const keys = {
  n_layers: "block_count",
  d_model: "embedding_length",
  n_heads: "attention.head_count",
  n_kv_heads: "attention.head_count_kv",
  head_dim: "attention.key_length",
  n_experts: "expert_count",
  n_experts_used: "expert_used_count",
  expert_ffn: "expert_feed_forward_length",
  context_length: "context_length",
  rope_theta: "rope.freq_base",
  norm_eps: "attention.layer_norm_rms_epsilon",
};
for (const [k, m] of Object.entries(keys)) if (md[`${arch}.${m}`] !== undefined) out[k] = num(md[`${arch}.${m}`]);
const nextn = num(md[`${arch}.nextn_predict_layers`] ?? 0);
if (nextn > 0) {
  out.n_layers -= nextn;
  out.mtp_layers = nextn;
}
const isMtp = (name) => {
  const m = /^blk\.(\d+)\./.exec(name);
  return nextn > 0 && m !== null && Number(m[1]) >= out.n_layers;
};
out.vocab_size = md["tokenizer.ggml.tokens"].length;
out.tokenizer = {
  model: md["tokenizer.ggml.model"],
  pre: md["tokenizer.ggml.pre"],
  n_tokens: md["tokenizer.ggml.tokens"].length,
  n_merges: (md["tokenizer.ggml.merges"] ?? []).length,
  bos_id: num(md["tokenizer.ggml.bos_token_id"]),
  eos_id: num(md["tokenizer.ggml.eos_token_id"]),
};
out.n_tensors = tensorInfos.filter((t) => !isMtp(t.name)).length;
const size = statSync(path).size;
const byOffset = [...tensorInfos].sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
const span = new Map();
byOffset.forEach((t, i) => {
  const end = i + 1 < byOffset.length ? byOffset[i + 1].offset : BigInt(size) - BigInt(tensorDataOffset);
  span.set(t.name, Number(end - t.offset));
});
out.tensors = tensorInfos.map((t) => ({
  name: t.name,
  format: GGMLQuantizationType[t.dtype].toLowerCase(),
  shape: t.shape.map(Number).reverse(),
  span: span.get(t.name),
  ...(isMtp(t.name) ? { mtp: true } : {}),
}));
console.log(JSON.stringify(out));
