// BPE encoding (text/bpe.h).
#include "text/bpe.h"

#include <queue>

#include "ir/error.h"
#include "ir/json_brief.h"

namespace mpk::text {
namespace {

using nlohmann::json;

// The length of the UTF-8 character that starts with byte `c` (valid input).
size_t char_length(uint8_t c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

void require_off(const json& m, const char* key, const std::string& source, const char* why) {
  if (!m.contains(key)) return;
  const json& v = m[key];
  const bool off = v.is_null() || (v.is_boolean() && !v.get<bool>()) ||
                   (v.is_string() && v.get<std::string>().empty()) || (v.is_number() && v.get<double>() == 0);
  if (!off) throw Error(source + ": BPE option \"" + key + "\" = " + json_brief(v) + " is not supported (" + why + ")");
}

std::pair<std::string, std::string> merge_pair(const json& m, size_t i, const std::string& source) {
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  if (m.is_string()) {
    const std::string s = m.get<std::string>();
    const size_t sp = s.find(' ');
    if (sp != std::string::npos && sp > 0 && sp + 1 < s.size() && s.find(' ', sp + 1) == std::string::npos)
      return {s.substr(0, sp), s.substr(sp + 1)};
  }
  throw Error(source + ": merge " + std::to_string(i) + " is " + json_brief(m) +
              ", not \"A B\" or [\"A\", \"B\"]");
}

}  // namespace

BpeModel BpeModel::from_json(const json& m, const std::string& source) {
  if (!m.is_object()) throw Error(source + ": \"model\" is not an object");
  const std::string type = m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "";
  if (type != "BPE")
    throw Error(source + ": tokenizer model '" + text_brief(type.empty() ? json_brief(m.value("type", json())) : type) +
                "' is not supported (mpk's tokenizer is byte-level BPE)");
  require_off(m, "dropout", source, "mpk encodes deterministically");
  require_off(m, "byte_fallback", source, "byte-level BPE needs no fallback");
  require_off(m, "continuing_subword_prefix", source, "byte-level BPE has none");
  require_off(m, "end_of_word_suffix", source, "byte-level BPE has none");
  if (!m.contains("vocab") || !m["vocab"].is_object()) throw Error(source + ": the model has no \"vocab\" object");
  if (!m.contains("merges") || !m["merges"].is_array()) throw Error(source + ": the model has no \"merges\" list");
  const json& vocab = m["vocab"];
  const json& merges = m["merges"];
  if (static_cast<int64_t>(vocab.size()) > kMaxTokenizerVocab)
    throw Error(source + ": the vocabulary has " + std::to_string(vocab.size()) + " tokens, more than " +
                std::to_string(kMaxTokenizerVocab));
  if (static_cast<int64_t>(merges.size()) > kMaxMerges)
    throw Error(source + ": the model has " + std::to_string(merges.size()) + " merges, more than " +
                std::to_string(kMaxMerges));
  BpeModel b;
  b.ignore_merges_ = m.contains("ignore_merges") && m["ignore_merges"].is_boolean() && m["ignore_merges"].get<bool>();
  b.vocab_.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxTokenizerVocab)
      throw Error(source + ": token " + text_brief(json(token).dump()) + " has id " + json_brief(id) +
                  ", not an integer in [0, " + std::to_string(kMaxTokenizerVocab) + ")");
    if (token.empty() || token.size() > kMaxTokenBytes)
      throw Error(source + ": the vocabulary holds a token of " + std::to_string(token.size()) +
                  " bytes (tokens have 1 to " + std::to_string(kMaxTokenBytes) + ")");
    b.add_token(token, static_cast<int32_t>(id.get<int64_t>()), source);
  }
  b.merges_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto [left, right] = merge_pair(merges[i], i, source);
    const std::optional<int32_t> l = b.id_of(left), r = b.id_of(right), lr = b.id_of(left + right);
    if (!l || !r || !lr)
      throw Error(source + ": merge " + std::to_string(i) + " (" + text_brief(json(left).dump()) + " " +
                  text_brief(json(right).dump()) + ") names a token the vocabulary lacks");
    b.merges_[pair_key(*l, *r)] = Merge{static_cast<int32_t>(i), *lr};  // a repeated merge: the last rank, as HF's
  }
  return b;
}

void BpeModel::add_token(const std::string& token, int32_t id, const std::string& source) {
  if (static_cast<size_t>(id) >= tokens_.size()) {
    tokens_.resize(static_cast<size_t>(id) + 1);
    has_token_.resize(static_cast<size_t>(id) + 1, false);
  }
  if (has_token_[id])
    throw Error(source + ": id " + std::to_string(id) + " is given to two tokens, " +
                text_brief(nlohmann::json(tokens_[id]).dump()) + " and " + text_brief(nlohmann::json(token).dump()));
  if (!vocab_.emplace(token, id).second)
    throw Error(source + ": token " + text_brief(nlohmann::json(token).dump()) + " has two ids");
  tokens_[id] = token;
  has_token_[id] = true;
}

std::optional<int32_t> BpeModel::id_of(std::string_view token) const {
  const auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::token_of(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size() || !has_token_[id]) return nullptr;
  return &tokens_[id];
}

void BpeModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    if (const std::optional<int32_t> whole = id_of(piece)) {
      out.push_back(*whole);
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    const size_t n = std::min(char_length(static_cast<uint8_t>(piece[i])), piece.size() - i);
    const std::optional<int32_t> id = id_of(piece.substr(i, n));
    if (!id) throw Error("the tokenizer's vocabulary has no token for the character " +
                         nlohmann::json(std::string(piece.substr(i, n))).dump(-1, ' ', true));
    symbols.push_back(*id);
    i += n;
  }
  merge_symbols(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

// Merges lowest rank first, leftmost first among equal ranks, with a heap of candidate
// pairs over a linked list of symbols: O(n log n) for a piece of n characters.
void BpeModel::merge_symbols(std::vector<int32_t>& symbols) const {
  const auto n = static_cast<int32_t>(symbols.size());
  if (n < 2) return;
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank, pos, left, right;  // the pair's ids when it was queued
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  auto queue_pair = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    const auto it = merges_.find(pair_key(symbols[pos], symbols[next[pos]]));
    if (it != merges_.end()) heap.push({it->second.rank, pos, symbols[pos], symbols[next[pos]]});
  };
  for (int32_t i = 0; i + 1 < n; ++i) queue_pair(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int32_t right = next[c.pos];
    if (!alive[c.pos] || right < 0 || symbols[c.pos] != c.left || symbols[right] != c.right) continue;
    symbols[c.pos] = merges_.at(pair_key(c.left, c.right)).merged;
    alive[right] = false;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    queue_pair(prev[c.pos]);
    queue_pair(c.pos);
  }
  std::vector<int32_t> merged;
  for (int32_t i = 0; i >= 0; i = next[i]) merged.push_back(symbols[i]);
  symbols.swap(merged);
}

}  // namespace mpk::text
