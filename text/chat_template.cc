// Recognising and rendering chat templates (text/chat_template.h).
#include "text/chat_template.h"

#include <ctime>

#include "ir/error.h"

namespace mpk::text {
namespace {

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Jinja string-literal escapes (\n, \t, \\, \', \") resolved.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

// The literal text in `tpl` from the end of `open` to the next `close`, or "" when there
// is none or it leaves the string literal (a quote or an expression in between).
std::string literal_after(const std::string& tpl, const std::string& open, const std::string& close) {
  for (size_t at = tpl.find(open); at != std::string::npos; at = tpl.find(open, at + 1)) {
    const size_t begin = at + open.size();
    const size_t end = tpl.find(close, begin);
    if (end == std::string::npos) return "";
    const std::string text = tpl.substr(begin, end - begin);
    if (text.find_first_of("'\"{}+") == std::string::npos) return unescape(text);
  }
  return "";
}

// Python's str.isspace() for the code point that starts at s[i]; `len` gets its length.
bool space_at(const std::string& s, size_t i, size_t* len) {
  const auto b = [&](size_t k) { return k < s.size() ? static_cast<uint8_t>(s[k]) : 0; };
  *len = 1;
  const uint8_t c = b(i);
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
  uint32_t cp = 0;
  if (c == 0xC2) {
    cp = b(i + 1);
    *len = 2;
  } else if (c == 0xE1 || c == 0xE2 || c == 0xE3) {
    cp = (static_cast<uint32_t>(c & 0x0F) << 12) | (static_cast<uint32_t>(b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
    *len = 3;
  }
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

}  // namespace

std::string jinja_trim(const std::string& s) {
  size_t begin = 0, len = 0;
  while (begin < s.size() && space_at(s, begin, &len)) begin += len;
  size_t end = begin;  // one past the last non-space character
  for (size_t i = begin; i < s.size();) {
    const bool space = space_at(s, i, &len);
    if (!space) {
      const auto c = static_cast<uint8_t>(s[i]);
      len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    }
    i += len;
    if (!space) end = i;
  }
  return s.substr(begin, end - begin);
}

ChatTemplate ChatTemplate::recognise(const std::string& tpl, const std::string& source) {
  if (tpl.empty())
    throw Error("--chat: the checkpoint has no chat template (" + source +
                " holds none: a base model? run without --chat)");
  ChatTemplate t;
  if (has(tpl, "<|start_header_id|>") && has(tpl, "<|end_header_id|>") && has(tpl, "<|eot_id|>")) {
    if (!has(tpl, "Cutting Knowledge Date")) {
      t.family_ = "llama3";
      return t;
    }
    t.family_ = "llama3.1";
    t.knowledge_line_ = literal_after(tpl, "\"Cutting Knowledge Date", "\\n");
    t.fixed_date_ = literal_after(tpl, "set date_string = \"", "\"");
    t.date_today_ = has(tpl, "strftime_now(\"%d %b %Y\")");
    if (t.knowledge_line_.empty() || (t.fixed_date_.empty() && !t.date_today_))
      throw Error("--chat: the Llama 3 chat template in " + source +
                  " writes its knowledge-date or today's-date lines in a way mpk does not recognise");
    t.knowledge_line_ = "Cutting Knowledge Date" + t.knowledge_line_;
    return t;
  }
  if (has(tpl, "<|im_start|>") && has(tpl, "<|im_end|>")) {
    t.family_ = "chatml";
    t.default_system_ = literal_after(tpl, "<|im_start|>system\\n", "<|im_end|>");
    return t;
  }
  throw Error("--chat: the chat template in " + source +
              " is of no family mpk renders (Llama 3, Llama 3.1+ or ChatML as Qwen uses; docs/text.md)");
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, const std::string& bos,
                                 const std::string& today) const {
  std::string out;
  if (family_ == "chatml") {
    if (!default_system_.empty() && (messages.empty() || messages[0].role != "system"))
      out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
    for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    return out + "<|im_start|>assistant\n";
  }
  auto turn = [](const std::string& role, const std::string& content) {
    return "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + content + "<|eot_id|>";
  };
  size_t first = 0;
  out = bos;
  if (family_ == "llama3.1") {
    const bool system = !messages.empty() && messages[0].role == "system";
    const std::string date = date_today_ ? today : fixed_date_;
    out += turn("system", knowledge_line_ + "\nToday Date: " + date + "\n\n" +
                              (system ? jinja_trim(messages[0].content) : ""));
    first = system ? 1 : 0;
  }
  for (size_t i = first; i < messages.size(); ++i) out += turn(messages[i].role, jinja_trim(messages[i].content));
  return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

std::string today_for_chat() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%d %b %Y", &local);
  return buf;
}

}  // namespace mpk::text
