// Loading a tokenizer from a checkpoint folder (text/tokenizer.h): tokenizer.json's parts,
// tokenizer_config.json's BOS, EOS and chat template, and the EOS ids of the model's
// config.json and generation_config.json. Every file is untrusted: bounded reads, JSON
// depth limits, and one message naming the file and the problem.
#include <algorithm>
#include <filesystem>

#include "ir/error.h"
#include "ir/file_io.h"
#include "ir/import/limits.h"
#include "ir/json_brief.h"
#include "text/byte_level.h"
#include "text/tokenizer.h"

namespace mpk::text {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kMaxJsonDepth = 32;  // tokenizer.json nests 6 deep

json parse_json(const std::string& text, const std::string& source) {
  try {
    auto depth_guard = [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth)
        throw Error(source + ": malformed: JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      return true;
    };
    return json::parse(text, depth_guard);
  } catch (const json::parse_error& e) {
    throw Error(source + ": malformed JSON at byte " + std::to_string(e.byte) + ": " +
                text_brief(e.what(), kMaxParserMessage));
  } catch (const json::exception& e) {
    throw Error(source + ": malformed JSON: " + text_brief(e.what(), kMaxParserMessage));
  }
}

// A token named in tokenizer_config.json: a string, {"content": ...}, or null / absent ("").
std::string config_token(const json& config, const char* key, const std::string& source) {
  if (!config.contains(key) || config[key].is_null()) return "";
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  throw Error(source + ": \"" + key + "\" is " + json_brief(v) + ", not a token's text");
}

// eos_token_id of a model's config.json or generation_config.json: an id or a list of ids.
void add_eos_ids(const json& j, const std::string& source, std::vector<int32_t>& out) {
  if (!j.is_object() || !j.contains("eos_token_id") || j["eos_token_id"].is_null()) return;
  const json& v = j["eos_token_id"];
  const json list = v.is_array() ? v : json::array({v});
  for (const json& id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxTokenizerVocab)
      throw Error(source + ": eos_token_id " + json_brief(v) + " is not an id or a list of ids");
    out.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& dir) {
  TokenizerSources s;
  const fs::path d(dir);
  s.tokenizer_path = (d / "tokenizer.json").string();
  std::error_code ec;
  if (!fs::exists(s.tokenizer_path, ec))
    throw Error("'" + dir + "' has no tokenizer.json (the checkpoint's tokenizer)");
  s.tokenizer_json = read_file_bounded(s.tokenizer_path, kMaxTokenizerJsonBytes, "tokenizer file");
  s.config_path = (d / "tokenizer_config.json").string();
  if (fs::exists(s.config_path, ec))
    s.config_json = read_file_bounded(s.config_path, kMaxTokenizerConfigBytes, "tokenizer config");
  for (const char* name : {"config.json", "generation_config.json"}) {
    const std::string p = (d / name).string();
    if (fs::exists(p, ec)) add_eos_ids(parse_json(read_file_bounded(p, kMaxConfigBytes, "model config"), p), p, s.extra_eos);
  }
  Tokenizer t = parse(s);
  const std::string jinja = (d / "chat_template.jinja").string();
  if (t.chat_template_.empty() && fs::exists(jinja, ec)) {
    t.chat_template_ = read_file_bounded(jinja, kMaxTokenizerConfigBytes, "chat template");
    t.chat_template_source_ = jinja;
  }
  return t;
}

// A JSON value of an unexpected type deep inside (nlohmann's type errors) is a malformed
// file too: one message naming it.
Tokenizer Tokenizer::parse(const TokenizerSources& s) {
  try {
    return parse_checked(s);
  } catch (const json::exception& e) {
    throw Error(s.tokenizer_path + " or " + s.config_path + ": malformed: " + text_brief(e.what(), kMaxParserMessage));
  }
}

Tokenizer Tokenizer::parse_checked(const TokenizerSources& s) {
  Tokenizer t;
  t.source_ = s.tokenizer_path;
  const json j = parse_json(s.tokenizer_json, s.tokenizer_path);
  if (!j.is_object()) throw Error(s.tokenizer_path + ": not a tokenizer (the JSON is not an object)");
  t.model_ = BpeModel::from_json(j.value("model", json()), s.tokenizer_path);
  t.normalizer_ = Normalizer::from_json(j.value("normalizer", json()), s.tokenizer_path);
  t.pre_tokenizer_ = PreTokenizer::from_json(j.value("pre_tokenizer", json()), s.tokenizer_path);
  const json decoder = j.value("decoder", json());
  if (!decoder.is_object() || decoder.value("type", json()) != "ByteLevel")
    throw Error(s.tokenizer_path + ": decoder " + json_brief(decoder.is_object() ? decoder.value("type", json()) : decoder) +
                " is not supported (mpk's tokenizer is byte-level BPE: its decoder is ByteLevel)");
  // Every byte must have a token, so any text encodes.
  for (int b = 0; b < 256; ++b)
    if (!t.model_->id_of(bytes_to_byte_level(std::string(1, static_cast<char>(b)))))
      throw Error(s.tokenizer_path + ": the vocabulary lacks the byte-level token of byte " + std::to_string(b) +
                  " (not a byte-level BPE vocabulary)");
  // Token bytes by id: the vocabulary's through the byte-level alphabet, then the added tokens.
  const auto grow = [&t](int64_t limit) {
    if (limit > static_cast<int64_t>(t.bytes_.size())) {
      t.bytes_.resize(static_cast<size_t>(limit));
      t.known_.resize(static_cast<size_t>(limit), false);
    }
  };
  grow(t.model_->id_limit());
  for (int32_t id = 0; id < t.model_->id_limit(); ++id)
    if (const std::string* tok = t.model_->token_of(id)) {
      const std::optional<std::string> bytes = byte_level_to_bytes(*tok);
      t.bytes_[id] = bytes ? *bytes : *tok;
      t.known_[id] = true;
    }
  const json added = j.value("added_tokens", json::array());
  if (!added.is_array()) throw Error(s.tokenizer_path + ": \"added_tokens\" is not a list");
  for (const json& a : added) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
        !a["content"].is_string() || a["id"].get<int64_t>() < 0 || a["id"].get<int64_t>() >= kMaxTokenizerVocab ||
        a["content"].get<std::string>().empty() || a["content"].get<std::string>().size() > kMaxTokenBytes)
      throw Error(s.tokenizer_path + ": added token " + json_brief(a) + " needs an \"id\" in [0, " +
                  std::to_string(kMaxTokenizerVocab) + ") and a non-empty \"content\"");
    const std::string content = a["content"].get<std::string>();
    for (const char* opt : {"lstrip", "rstrip", "single_word"})
      if (a.contains(opt) && a[opt] == true)
        throw Error(s.tokenizer_path + ": added token " + text_brief(json(content).dump()) + " sets \"" + opt +
                    "\", which mpk's tokenizer does not support");
    if (a.contains("normalized") && a["normalized"] == true && !t.normalizer_.empty())
      throw Error(s.tokenizer_path + ": added token " + text_brief(json(content).dump()) +
                  " is matched after normalization (\"normalized\": true), which mpk's tokenizer does not support");
    const auto id = static_cast<int32_t>(a["id"].get<int64_t>());
    grow(int64_t{id} + 1);
    t.bytes_[id] = content;
    t.known_[id] = true;
    t.added_.add(content, id);
    t.added_list_.emplace_back(content, id);
  }
  t.parse_post_processor(j.value("post_processor", json()), 0);
  t.parse_config(s);
  return t;
}

void Tokenizer::parse_post_processor(const json& p, int depth) {
  if (p.is_null()) return;
  const std::string type = p.is_object() && p.contains("type") && p["type"].is_string() ? p["type"].get<std::string>() : "";
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence" && depth < 4 && p.contains("processors") && p["processors"].is_array()) {
    for (const json& q : p["processors"]) parse_post_processor(q, depth + 1);
    return;
  }
  if (type != "TemplateProcessing")
    throw Error(source_ + ": post-processor '" + text_brief(type.empty() ? json_brief(p) : type) +
                "' is not supported (mpk's tokenizer knows TemplateProcessing, ByteLevel and a Sequence of them)");
  const json single = p.value("single", json());
  const json specials = p.value("special_tokens", json::object());
  if (!single.is_array()) throw Error(source_ + ": TemplateProcessing has no \"single\" template");
  bool after = false;
  for (const json& item : single) {
    if (item.is_object() && item.contains("Sequence")) {
      after = true;
      continue;
    }
    const json name = item.is_object() && item.contains("SpecialToken") ? item["SpecialToken"].value("id", json()) : json();
    const json ids = name.is_string() && specials.is_object() && specials.contains(name.get<std::string>())
                         ? specials[name.get<std::string>()].value("ids", json())
                         : json();
    if (!ids.is_array()) throw Error(source_ + ": TemplateProcessing item " + json_brief(item) + " names no special token's ids");
    for (const json& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= id_limit() || !known_[id.get<int64_t>()])
        throw Error(source_ + ": TemplateProcessing gives the id " + json_brief(id) + ", which no token has");
      (after ? suffix_ : prefix_).push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
}

void Tokenizer::parse_config(const TokenizerSources& s) {
  eos_ids_ = s.extra_eos;
  if (!s.config_json.empty()) {
    const json c = parse_json(s.config_json, s.config_path);
    if (!c.is_object()) throw Error(s.config_path + ": not a tokenizer config (the JSON is not an object)");
    bos_token_ = config_token(c, "bos_token", s.config_path);
    const std::string eos = config_token(c, "eos_token", s.config_path);
    if (!eos.empty()) {
      const std::optional<int32_t> id = id_of(eos);
      if (!id) throw Error(s.config_path + ": eos_token " + text_brief(json(eos).dump()) + " is no token of " + source_);
      eos_ids_.push_back(*id);
    }
    const json tpl = c.value("chat_template", json());
    if (tpl.is_string()) {
      chat_template_ = tpl.get<std::string>();
    } else if (tpl.is_array()) {  // named templates: the one called "default"
      for (const json& named : tpl)
        if (named.is_object() && named.value("name", json()) == "default" && named.value("template", json()).is_string())
          chat_template_ = named["template"].get<std::string>();
    } else if (!tpl.is_null()) {
      throw Error(s.config_path + ": chat_template is " + json_brief(tpl) + ", not a template");
    }
    if (!chat_template_.empty()) chat_template_source_ = s.config_path;
  }
  for (int32_t id : eos_ids_)
    if (id >= id_limit() || !known_[id])
      throw Error(source_ + ": the EOS id " + std::to_string(id) + " of the checkpoint's configs is no token");
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
}

}  // namespace mpk::text
