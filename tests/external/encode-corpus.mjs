// Encodes every text of a corpus with @huggingface/tokenizers (Tokenizers.js,
// a JavaScript implementation of Hugging Face tokenizers we did not write)
// from a tokenizer.json, as the golden ids freetoken's tokenizer must give.
//
//   node encode-corpus.mjs TOKENIZER_JSON TOKENIZER_CONFIG_JSON CORPUS_JSON > GOLDEN_JSON
//
// Special tokens written in the text are recognized (as HF tokenizers always
// do for added tokens); nothing is added around the text
// (add_special_tokens: false). Output: {"generator", "cases": [{"text", "ids"}]};
// a case whose text is not in Unicode NFC (which the tokenizer.json's
// normalizer applies first, when it has one) also gets "nfc": the text in
// NFC, as JavaScript's String.prototype.normalize gives it.
import { readFileSync } from "node:fs";
import { Tokenizer } from "@huggingface/tokenizers";

const [tokPath, cfgPath, corpusPath] = process.argv.slice(2);
if (!corpusPath) {
  console.error("usage: node encode-corpus.mjs TOKENIZER_JSON TOKENIZER_CONFIG_JSON CORPUS_JSON");
  process.exit(2);
}
const read = (p) => JSON.parse(readFileSync(p, "utf8"));
const here = new URL(".", import.meta.url);
const version = read(new URL("node_modules/@huggingface/tokenizers/package.json", here)).version;
const tok = new Tokenizer(read(tokPath), read(cfgPath));
const cases = read(corpusPath).map((text) => {
  const c = { text, ids: Array.from(tok.encode(text, { add_special_tokens: false }).ids) };
  if (text.normalize("NFC") !== text) c.nfc = text.normalize("NFC");
  return c;
});
const out = { generator: `@huggingface/tokenizers ${version}`, cases };
// One case a line, so a diff shows which text changed.
process.stdout.write(
  '{"generator": ' + JSON.stringify(out.generator) + ', "cases": [\n' +
    cases.map((c) => JSON.stringify(c)).join(",\n") + "\n]}\n",
);
