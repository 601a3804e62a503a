// Pipeline text parser and printer.
#include "passes/pipeline.h"

#include "ir/error.h"

namespace mpk {
namespace {

bool is_word_char(char c) { return c != ',' && c != '{' && c != '}' && c != '=' && c > ' '; }

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Pipeline parse() {
    Pipeline p;
    skip_spaces();
    if (pos_ == s_.size()) fail("empty pipeline");
    while (true) {
      p.push_back(entry());
      skip_spaces();
      if (pos_ == s_.size()) break;
      expect(',');
      skip_spaces();
    }
    return p;
  }

 private:
  PipelineEntry entry() {
    PipelineEntry e;
    e.pass = word("a pass name");
    skip_spaces();
    if (peek() == '{') {
      ++pos_;
      skip_spaces();
      if (peek() == '}') fail("empty option list");
      while (true) {
        std::string key = word("an option name");
        skip_spaces();
        expect('=');
        skip_spaces();
        std::string value = word("an option value");
        if (!e.options.emplace(key, value).second) fail("option '" + key + "' given twice");
        skip_spaces();
        if (peek() == '}') {
          ++pos_;
          break;
        }
        expect(',');
        skip_spaces();
      }
    }
    return e;
  }

  std::string word(const char* what) {
    size_t start = pos_;
    while (pos_ < s_.size() && is_word_char(s_[pos_])) ++pos_;
    if (pos_ == start) fail(std::string("expected ") + what);
    return std::string(s_.substr(start, pos_ - start));
  }

  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_spaces() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("pipeline: " + what + " at column " + std::to_string(pos_ + 1) + " in '" +
                std::string(s_) + "'");
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Pipeline parse_pipeline(std::string_view text) { return Parser(text).parse(); }

std::string default_pipeline_with(const std::string& policy, const std::string& decompose,
                                  const std::string& costs) {
  if (costs.find_first_of(" \t\n,{}=") != std::string::npos)
    throw Error("cost file '" + costs + "': a path in a pipeline cannot hold spaces, ',', '{', '}' or '='");
  return std::string(kDefaultFusions) + "," + decompose + ",infer-deps,assign-sm{" +
         (costs.empty() ? "" : "costs=" + costs + ",") + "policy=" + policy + "}";
}

std::string print_pipeline(const Pipeline& p) {
  std::string s;
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) s += ",";
    s += p[i].pass;
    if (!p[i].options.empty()) {
      s += "{";
      bool first = true;
      for (const auto& [k, v] : p[i].options) {
        if (!first) s += ",";
        first = false;
        s += k + "=" + v;
      }
      s += "}";
    }
  }
  return s;
}

}  // namespace mpk
