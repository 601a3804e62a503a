// PCRE2 behind text/regex.h.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex.h"

#include <pcre2.h>

#include "ir/error.h"
#include "ir/json_brief.h"

namespace mpk::text {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  std::string what;
};

Regex::Regex(const std::string& pattern, const std::string& what) : impl_(std::make_unique<Impl>()) {
  impl_->what = what;
  int err = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(what + ": the regex " + text_brief(pattern, 80) + " does not compile at offset " +
                std::to_string(offset) + ": " + reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // the interpreter runs where JIT cannot
}

Regex::~Regex() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

std::vector<Match> Regex::find_all(std::string_view text) const {
  std::vector<Match> out;
  const std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> data(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), pcre2_match_data_free);
  pcre2_match_data* md = data.get();
  if (!md) throw Error(impl_->what + ": out of memory for PCRE2 match data");
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t at = 0;
  while (at <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(impl_->what + ": matching " + std::to_string(text.size()) + " bytes failed: " +
                  reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t b = ov[0], e = ov[1];
    if (e > b) {
      out.push_back({b, e});
      at = e;
    } else {  // empty: move on by one character
      at = b + 1;
      while (at < text.size() && (static_cast<uint8_t>(text[at]) & 0xC0) == 0x80) ++at;
    }
  }
  return out;
}

std::string escape_regex(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/#&~").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace mpk::text
