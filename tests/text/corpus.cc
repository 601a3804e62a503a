// The reference corpus (corpus.h).
#include "corpus.h"

#include <random>

#include "text/utf8.h"

namespace mpk::text::testing {
namespace {

const std::vector<std::string> kEnglish = {
    "The quick brown fox jumps over the lazy dog.", "Why is the sky blue?",
    "I'm sure they'll say it's fine, but we've seen what they'd do.", "HELLO WORLD!!! It's ME.",
    "Don't panic: the answer is 42.", "e.g. Mr. Smith's dog -- a 3-year-old -- barked (loudly).",
    "She said, \"Never again.\"", "Tokenizers split text into pieces; BPE merges them back.",
    "What's the difference between 'its' and 'it's'?", "   leading spaces and trailing ones   ",
    "Line one\nLine two\r\nLine three\n\n\nafter blank lines", "tab\tseparated\tvalues\there",
    "email@example.com, https://example.org/path?q=1&r=2#frag", "$1,234.56 (+7.8%) vs. €99 or ¥1000",
    "ALL CAPS'S AND 'QUOTES' DON'T MATTER", "x", "", " ", "a b  c   d    e",
    "The year 2024 had 366 days; 10^9 is a billion.", "naïve café résumé coöperate",
    "Ünïcödé wörds: Straße, façade, jalapeño", "It was the best of times, it was the worst of times.",
};

const std::vector<std::string> kCode = {
    "int main(int argc, char** argv) {\n    return argc > 1 ? 0 : 1;\n}\n",
    "def f(x):\n\tif x <= 0:\n\t\treturn []\n\treturn [i * i for i in range(x)]\n",
    "{\"key\": [1, 2.5e-3, true, null], \"nested\": {\"a\": \"b\"}}",
    "for (auto& [k, v] : map) std::cout << k << \"=\" << v << '\\n';",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do wc -l \"$f\"; done",
    "const add = (a, b) => a + b; // arrow function\nconsole.log(add(0x1F, 0b101));",
    "<div class=\"x\"><span>&amp; &lt;tag&gt;</span></div>", "x += y ** 2 // 3 != 4 && !z || a ^ b",
    "    if (ptr != nullptr) {\n        delete ptr;\n    }\n", "fn main() { println!(\"{:?}\", vec![1, 2, 3]); }",
    "__init__ self._private __dunder__ CamelCase snake_case kebab-case SCREAMING_CASE",
};

const std::vector<std::string> kCjk = {
    "你好，世界！", "今天天气很好，我们去公园散步吧。", "日本語のテキストをトークン化します。", "こんにちは、元気ですか？",
    "한국어 문장도 잘 처리되어야 합니다.", "中文English混合text测试123", "漢字とひらがなとカタカナ", "東京都渋谷区１２３",
    "「引用」『二重引用』（括弧）【見出し】", "大規模言語モデルの推論を高速化する。", "我爱北京天安门",
    "안녕하세요 세계", "ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ　１２３",
};

const std::vector<std::string> kEmoji = {
    "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵🇺🇸🇩🇪", "I ❤️ pizza 🍕!", "🔥🔥🔥", "❤", "✨ sparkle ✨",
    "🧑🏿‍💻 codes", "1️⃣ 2️⃣ #️⃣", "🙂🙃🫠", "😀x😀y😀", "☕ ☂ ☃", "👩🏻‍❤️‍💋‍👨🏼",
};

const std::vector<std::string> kCombining = {
    "e\xCC\x81", "cafe\xCC\x81", "n\xCC\x83o", "A\xCC\x8A", "Z\xCD\x91\xCD\x8B\xCC\x80\xCC\x81\xCD\x9D" "algo",
    "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8",  // Hangul jamo that compose to 각
    "Vi\xE1\xBB\x87t Nam", "Vie\xCC\xA3\xCC\x82t", "\xE0\xA4\xA8\xE0\xA4\xAE\xE0\xA4\xB8\xE0\xA5\x8D\xE0\xA4\xA4\xE0\xA5\x87",
    "o\xCC\x88\xCC\x81", "\xC3\xA9 vs e\xCC\x81", "\xE2\x84\xAB", "\xEF\xAC\x81nance",  // Angstrom sign, fi ligature
    "a\xCC\x80\xCC\x81\xCC\x82\xCC\x83\xCC\x84", "\xD7\xA9\xD7\x81\xD7\x9C\xD7\x95\xD7\x9D",
};

// Code points from blocks assigned long before Unicode 14 (the reference and PCRE2 may
// know different Unicode versions).
const std::vector<std::pair<uint32_t, uint32_t>> kBlocks = {
    {0x20, 0x7E},     {0xA1, 0x17F},    {0x370, 0x3FF},   {0x400, 0x4FF},   {0x5D0, 0x5EA},
    {0x621, 0x64A},   {0x905, 0x939},   {0xE01, 0xE2E},   {0x2010, 0x2027}, {0x2190, 0x21FF},
    {0x3041, 0x3096}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7A3}, {0x1F600, 0x1F64F}, {0x300, 0x36F},
};

const std::vector<std::string> kSpaces = {" ", "\t", "\n", "\r\n", "  ", "\xC2\xA0", "\xE3\x80\x80", "\xE2\x80\x83", "\r"};

const std::vector<std::string> kBadBytes = {
    "\x80", "\xBF", "\xC0\xAF", "\xC1\xBF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF5", "\xFF",
    "\xFE", "\xC3", "\xE2\x82", "\xF0\x9F\x98", "\xF0\x9F", "\xE2\x28\xA1", "\xC3\x28", "\xF0\x28\x8C\x28",
};

class Generator {
 public:
  explicit Generator(const std::vector<std::string>& specials) : specials_(specials), rng_(20261127) {}

  std::vector<CorpusEntry> run() {
    for (const auto& s : kEnglish) add("english", s);
    for (const auto& s : kCode) add("code", s);
    for (const auto& s : kCjk) add("cjk", s);
    for (const auto& s : kEmoji) add("emoji", s);
    for (const auto& s : kCombining) add("combining", s);
    for (int i = 0; i < 380; ++i) add("english", join(kEnglish, 1 + pick(3), pick_space()));
    for (int i = 0; i < 290; ++i) add("code", join(kCode, 1 + pick(3), "\n"));
    for (int i = 0; i < 240; ++i) add("cjk", join(kCjk, 1 + pick(3), pick(2) ? "" : " "));
    for (int i = 0; i < 240; ++i) add("emoji", join(kEmoji, 1 + pick(4), pick(2) ? "" : " ") + pick_of(kEnglish));
    for (int i = 0; i < 240; ++i) add("combining", join(kCombining, 1 + pick(3), pick(2) ? "" : " "));
    for (int i = 0; i < 250; ++i) add("runs", runs());
    for (int i = 0; i < 200; ++i) add("specials", with_specials());
    for (int i = 0; i < 200; ++i) add("invalid", invalid());
    for (int i = 0; i < 300; ++i) add("mixed", mixed(1 + pick(60)));
    return std::move(out_);
  }

 private:
  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }
  const std::string& pick_of(const std::vector<std::string>& v) { return v[pick(v.size())]; }
  std::string pick_space() { return pick_of(kSpaces); }
  void add(const char* kind, std::string s) { out_.push_back({kind, std::move(s)}); }

  std::string join(const std::vector<std::string>& v, size_t n, const std::string& sep) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += (i ? sep : "") + pick_of(v);
    return s;
  }

  // Long runs of whitespace and digits, and numbers in text.
  std::string runs() {
    std::string s = pick(2) ? pick_of(kEnglish) : "";
    const size_t parts = 1 + pick(4);
    for (size_t p = 0; p < parts; ++p) {
      const size_t len = pick(4) == 0 ? 200 + pick(1800) : 1 + pick(40);
      switch (pick(4)) {
        case 0: for (size_t i = 0; i < len; ++i) s += static_cast<char>('0' + pick(10)); break;
        case 1: s += std::string(len, ' '); break;
        case 2: for (size_t i = 0; i < len; ++i) s += pick_space(); break;
        default: s += std::to_string(rng_()) + "." + std::to_string(pick(1000)) + "," + std::to_string(pick(100000));
      }
      if (pick(2)) s += pick(2) ? "word" : "\xE4\xB8\xAD";
    }
    return s;
  }

  // Special-token texts inside text, whole, adjacent, and cut short.
  std::string with_specials() {
    std::string s;
    const size_t parts = 1 + pick(5);
    for (size_t p = 0; p < parts; ++p) {
      const std::string& sp = pick_of(specials_);
      switch (pick(4)) {
        case 0: s += sp; break;
        case 1: s += sp.substr(0, 1 + pick(sp.size())); break;
        case 2: s += " " + sp + "\n"; break;
        default: s += pick_of(kEnglish);
      }
    }
    return s;
  }

  // Not UTF-8: bad bytes among text, and raw random bytes.
  std::string invalid() {
    if (pick(4) == 0) {
      std::string s;
      for (size_t i = 0, n = 1 + pick(40); i < n; ++i) s += static_cast<char>(pick(256));
      return s;
    }
    std::string s;
    for (size_t p = 0, parts = 1 + pick(4); p < parts; ++p) s += (pick(2) ? pick_of(kEnglish) : pick_of(kCjk)) + pick_of(kBadBytes);
    return s;
  }

  std::string mixed(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      if (pick(5) == 0) {
        s += pick_space();
        continue;
      }
      const auto& [lo, hi] = kBlocks[pick(kBlocks.size())];
      append_utf8(s, lo + static_cast<uint32_t>(pick(hi - lo + 1)));
    }
    return s;
  }

  const std::vector<std::string>& specials_;
  std::mt19937_64 rng_;
  std::vector<CorpusEntry> out_;
};

}  // namespace

std::vector<CorpusEntry> make_corpus(const std::vector<std::string>& specials) { return Generator(specials).run(); }

}  // namespace mpk::text::testing
