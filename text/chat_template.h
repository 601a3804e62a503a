// Chat templates: `mpk run --chat` formats the prompt as the checkpoint's chat template
// would. mpk does not interpret Jinja; it recognises the template's family by what the
// template writes and renders that family's format in C++ (docs/text.md):
//   llama3    <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> per turn, BOS
//             before the first (Llama 3, 3-8B-Instruct);
//   llama3.1  the same turns after a system turn that always opens with the template's
//             "Cutting Knowledge Date" line and a "Today Date" line (the template's fixed
//             date, or today's where it calls strftime_now: Llama 3.1, 3.2, 3.3);
//   chatml    <|im_start|>ROLE\nCONTENT<|im_end|>\n per turn (Qwen2, 2.5, 3), with the
//             default system turn the template writes when none is given (Qwen2, 2.5).
// Each ends with the assistant's turn header (the generation prompt). Only system and user
// turns are rendered; tools, documents and thinking switches are not.
#pragma once

#include <string>
#include <vector>

namespace mpk::text {

struct ChatMessage {
  std::string role;  // "system" | "user"
  std::string content;
};

class ChatTemplate {
 public:
  // Recognises `jinja` (from `source`, for messages). Throws mpk::Error when it is empty
  // or of no family mpk renders.
  static ChatTemplate recognise(const std::string& jinja, const std::string& source);

  // The prompt for `messages` and the assistant's turn header. `today`: the date a
  // template that calls strftime_now gets ("27 Nov 2026").
  std::string render(const std::vector<ChatMessage>& messages, const std::string& bos_token,
                     const std::string& today) const;
  // "llama3" | "llama3.1" | "chatml".
  const std::string& family() const { return family_; }
  // Whether render() reads `today`.
  bool uses_today() const { return date_today_; }

 private:
  std::string family_;
  std::string knowledge_line_;   // llama3.1: "Cutting Knowledge Date: December 2023"
  std::string fixed_date_;       // llama3.1: the template's date_string default
  bool date_today_ = false;      // llama3.1: the template calls strftime_now
  std::string default_system_;   // chatml: the system turn written when none is given
};

// Today's date as Llama 3.2's template writes it (strftime "%d %b %Y", local time).
std::string today_for_chat();

// `s` without leading and trailing whitespace, as Jinja's trim (Python's str.strip).
std::string jinja_trim(const std::string& s);

}  // namespace mpk::text
