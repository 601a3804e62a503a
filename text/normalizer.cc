// Unicode normalization through utf8proc (text/normalizer.h).
#include "text/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>

#include "ir/error.h"
#include "ir/json_brief.h"

namespace mpk::text {
namespace {

void add_forms(const nlohmann::json& j, const std::string& source, std::vector<NormalForm>& out, int depth) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw Error(source + ": the normalizer " + json_brief(j) + " has no \"type\"");
  const std::string type = j["type"].get<std::string>();
  if (type == "NFC") out.push_back(NormalForm::kNfc);
  else if (type == "NFD") out.push_back(NormalForm::kNfd);
  else if (type == "NFKC") out.push_back(NormalForm::kNfkc);
  else if (type == "NFKD") out.push_back(NormalForm::kNfkd);
  else if (type == "Sequence" && depth < 4 && j.contains("normalizers") && j["normalizers"].is_array())
    for (const auto& n : j["normalizers"]) add_forms(n, source, out, depth + 1);
  else
    throw Error(source + ": normalizer '" + text_brief(type) +
                "' is not supported (mpk's tokenizer knows NFC, NFD, NFKC, NFKD and a Sequence of them)");
}

}  // namespace

Normalizer Normalizer::from_json(const nlohmann::json& j, const std::string& source) {
  Normalizer n;
  if (!j.is_null()) add_forms(j, source, n.forms_, 0);
  return n;
}

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (NormalForm f : forms_) {
    int options = UTF8PROC_STABLE;
    switch (f) {
      case NormalForm::kNfc: options |= UTF8PROC_COMPOSE; break;
      case NormalForm::kNfd: options |= UTF8PROC_DECOMPOSE; break;
      case NormalForm::kNfkc: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
      case NormalForm::kNfkd: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
    }
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                            static_cast<utf8proc_ssize_t>(s.size()), &out,
                                            static_cast<utf8proc_option_t>(options));
    if (n < 0) throw Error(std::string("Unicode normalization failed: ") + utf8proc_errmsg(n));
    s.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
  }
  return s;
}

}  // namespace mpk::text
