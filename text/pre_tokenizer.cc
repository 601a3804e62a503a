// Pre-tokenization (text/pre_tokenizer.h).
#include "text/pre_tokenizer.h"

#include "ir/error.h"
#include "ir/json_brief.h"
#include "text/byte_level.h"

namespace mpk::text {
namespace {

using nlohmann::json;

// GPT-2's split, which ByteLevel applies when "use_regex" is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

bool flag(const json& j, const char* key, bool fallback) {
  return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : fallback;
}

}  // namespace

PreTokenizer PreTokenizer::from_json(const json& j, const std::string& source) {
  PreTokenizer p;
  if (j.is_null()) throw Error(source + ": there is no pre-tokenizer (mpk's tokenizer is byte-level BPE: it needs a ByteLevel step)");
  p.add_steps(j, source, 0);
  bool byte_level = false;
  for (const Step& s : p.steps_) byte_level = byte_level || s.kind == Kind::kByteLevel;
  if (!byte_level)
    throw Error(source + ": the pre-tokenizer has no ByteLevel step (mpk's tokenizer is byte-level BPE)");
  return p;
}

void PreTokenizer::add_steps(const json& j, const std::string& source, int depth) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw Error(source + ": the pre-tokenizer " + json_brief(j) + " has no \"type\"");
  const std::string type = j["type"].get<std::string>();
  const std::string what = source + ": pre-tokenizer " + type;
  if (type == "Sequence" && depth < 4) {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
      throw Error(what + " has no \"pretokenizers\" list");
    for (const json& p : j["pretokenizers"]) add_steps(p, source, depth + 1);
  } else if (type == "ByteLevel") {
    Step s{Kind::kByteLevel, nullptr, flag(j, "add_prefix_space", false)};
    if (flag(j, "use_regex", true)) s.regex = std::make_shared<const Regex>(kGpt2Pattern, what);
    steps_.push_back(std::move(s));
  } else if (type == "Split") {
    if (flag(j, "invert", false)) throw Error(what + ": \"invert\": true is not supported");
    const std::string behavior = j.contains("behavior") && j["behavior"].is_string() ? j["behavior"].get<std::string>() : "";
    Kind kind;
    if (behavior == "Isolated") kind = Kind::kSplitIsolated;
    else if (behavior == "Removed") kind = Kind::kSplitRemoved;
    else throw Error(what + ": behavior '" + text_brief(behavior) + "' is not supported (Isolated, Removed)");
    const json pattern = j.value("pattern", json());
    std::string regex;
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
      regex = pattern["Regex"].get<std::string>();
    else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
      regex = escape_regex(pattern["String"].get<std::string>());
    else
      throw Error(what + ": the pattern " + json_brief(pattern) + " is neither {\"Regex\": ...} nor {\"String\": ...}");
    steps_.push_back({kind, std::make_shared<const Regex>(regex, what), false});
  } else {
    throw Error(source + ": pre-tokenizer '" + text_brief(type) +
                "' is not supported (mpk's tokenizer knows Split, ByteLevel and a Sequence of them)");
  }
}

std::vector<std::string> PreTokenizer::split(const std::string& text) const {
  std::vector<std::string> pieces = {text};
  for (const Step& step : steps_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      if (step.kind == Kind::kByteLevel && step.add_prefix_space && piece.rfind(' ', 0) != 0) piece.insert(0, " ");
      if (!step.regex) {
        next.push_back(std::move(piece));
      } else {
        size_t at = 0;
        for (const Match& m : step.regex->find_all(piece)) {
          if (m.begin > at && step.kind != Kind::kByteLevel) next.push_back(piece.substr(at, m.begin - at));
          if (step.kind != Kind::kSplitRemoved) next.push_back(piece.substr(m.begin, m.end - m.begin));
          at = m.end;
        }
        if (at < piece.size() && step.kind != Kind::kByteLevel) next.push_back(piece.substr(at));
      }
    }
    if (step.kind == Kind::kByteLevel)
      for (std::string& p : next) p = bytes_to_byte_level(p);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace mpk::text
