// `mpk run`'s text in and text out (docs/text.md): the prompt options resolved to token
// ids (--prompt TEXT through the checkpoint's tokenizer, optionally as one chat turn with
// --chat and --system; --prompt-ids 1,2,3; a --prompt of integers where no tokenizer is
// found, as before), the steps a run takes for --max-new-tokens, and the generated text
// printed as the tokens arrive, with what the run took and why it stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "driver/executor.h"
#include "ir/module.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"
#include "tools/args.h"

namespace mpk {

// The prompt options as given.
struct PromptOptions {
  std::optional<std::string> prompt;      // --prompt
  std::optional<std::string> prompt_ids;  // --prompt-ids
  bool chat = false;                      // --chat
  std::optional<std::string> system;      // --system
  std::string tokenizer_dir;              // --tokenizer ("" = the model's checkpoint folder)
  std::optional<int64_t> max_new_tokens;  // --max-new-tokens
  std::optional<int64_t> steps;           // --steps
};
// Reads them from `args`, refusing combinations that mean nothing (--prompt with
// --prompt-ids, --chat or --system without a text prompt, --steps with --max-new-tokens).
PromptOptions parse_prompt_options(const Args& args);

// What the prompt resolved to for a compiled module.
struct ResolvedPrompt {
  std::vector<int64_t> ids;  // `rows` rows of equal length, one per batch row or one for all
  int64_t rows = 1;
  std::shared_ptr<const text::Tokenizer> tokenizer;  // text mode; null for ids
  std::string description;   // "12 tokens of text (chat template llama3.1)" / "3 ids"
  std::string repair_note;   // "" or a warning: the prompt held invalid UTF-8
  int64_t steps = 0;         // the decode steps to run
  int64_t max_new_tokens = 0;
  std::string steps_cap;     // why fewer new tokens than asked fit ("" when none)
  bool text() const { return tokenizer != nullptr; }
};
// Tokenizes (text) or parses (ids; "1,2;3,4" gives each batch row its own) the prompt
// and works out the steps: P + N - 1 for N new tokens (the argmax of step P-1 is the
// first), within the module's max_seq_len. Throws mpk::Error for a missing or bad
// tokenizer, a prompt longer than max_seq_len, ids outside the vocabulary, id rows that
// are neither one nor one per batch row or differ in length, or a --max-new-tokens that
// does not fit.
ResolvedPrompt resolve_prompt(const PromptOptions& options, const Module& module);

// The token sink of a text run: batch row 0's generated tokens (steps P-1 on) decoded as
// they arrive and written to `out`, a stop token left out; and when each arrived.
class TextPrinter {
 public:
  TextPrinter(const text::Tokenizer& tokenizer, size_t prompt_length, std::FILE* out);
  void start() { start_ = std::chrono::steady_clock::now(); }
  void operator()(int64_t step, const std::vector<int32_t>& tokens);
  // Writes what the decoder still holds and a final newline.
  void finish();

  int64_t generated() const { return static_cast<int64_t>(arrived_s_.size()); }
  const std::vector<double>& arrived_s() const { return arrived_s_; }  // seconds from start()
  int32_t last_token() const { return last_; }

 private:
  const text::Tokenizer& tokenizer_;
  text::StreamDecoder decoder_;
  size_t prompt_length_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
  std::vector<double> arrived_s_;
  int32_t last_ = -1;
  bool wrote_ = false;
};

// The lines after a text run: why it stopped, time to first token and decode speed (cpu:
// as the tokens arrived; gpu: the kernel's time, the tokens reached the host after it),
// and the executor's line.
void print_text_summary(std::FILE* out, const ResolvedPrompt& prompt, const TextPrinter& printer,
                        const Executor& executor, const ExecResult& result);

}  // namespace mpk
