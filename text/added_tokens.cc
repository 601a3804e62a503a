// Finding added tokens in text (text/added_tokens.h).
#include "text/added_tokens.h"

namespace mpk::text {

void AddedTokens::add(const std::string& content, int32_t id) {
  int32_t node = 0;
  for (char c : content) {
    const auto b = static_cast<uint8_t>(c);
    auto it = trie_[node].children.find(b);
    if (it == trie_[node].children.end()) {
      trie_.push_back(Node{});
      it = trie_[node].children.emplace(b, static_cast<int32_t>(trie_.size() - 1)).first;
    }
    node = it->second;
  }
  trie_[node].id = id;
}

std::vector<AddedTokens::Segment> AddedTokens::split(std::string_view text) const {
  std::vector<Segment> out;
  size_t start = 0;  // where the current run of plain text began
  for (size_t i = 0; i < text.size();) {
    int32_t node = 0, id = -1;
    size_t end = i;
    for (size_t j = i; j < text.size(); ++j) {
      const auto it = trie_[node].children.find(static_cast<uint8_t>(text[j]));
      if (it == trie_[node].children.end()) break;
      node = it->second;
      if (trie_[node].id >= 0) {
        id = trie_[node].id;
        end = j + 1;
      }
    }
    if (id < 0) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    out.push_back({text.substr(i, end - i), id});
    i = start = end;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
  return out;
}

}  // namespace mpk::text
