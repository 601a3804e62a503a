// `mpk run`'s text in and out (tools/run_text.h).
#include "tools/run_text.h"

#include <algorithm>
#include <filesystem>

#include "ir/attrs.h"
#include "ir/error.h"
#include "ir/import/model_source.h"
#include "ir/json_brief.h"
#include "text/chat_template.h"
#include "text/utf8.h"

namespace mpk {
namespace {

// The default number of new tokens of a text prompt (fewer where max_seq_len is smaller),
// and the default steps of an id prompt (as before text prompts).
constexpr int64_t kDefaultNewTokens = 128;
constexpr int64_t kDefaultIdSteps = 16;

// "1,2,3": a comma list of integers, the form of ids.
bool looks_like_ids(const std::string& s) {
  if (s.empty() || s.front() == ',' || s.back() == ',') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == ','; }) &&
         s.find(",,") == std::string::npos;
}

std::vector<int64_t> parse_ids(const std::string& s, const std::string& option) {
  std::vector<int64_t> ids = parse_int_list(s, "option '" + option + "'", kPromptTokenRange);
  if (ids.empty()) throw Error("option '" + option + "' needs at least one token");
  if (static_cast<int64_t>(ids.size()) > kMaxPromptTokens)
    throw Error("option '" + option + "' has " + std::to_string(ids.size()) + " tokens, more than " +
                std::to_string(kMaxPromptTokens));
  return ids;
}

// Rows of ids separated by ';', into r.ids and r.rows: one row, or one per batch row,
// all of the same length.
void parse_id_rows(const std::string& s, const std::string& option, int64_t batch, ResolvedPrompt& r) {
  std::vector<std::vector<int64_t>> rows;
  for (const std::string& row : split(s, ';')) rows.push_back(parse_ids(row, option));
  if (rows.size() > 1 && static_cast<int64_t>(rows.size()) != batch)
    throw Error("option '" + option + "' has " + std::to_string(rows.size()) + " rows; give one, or one per batch row (" +
                std::to_string(batch) + ")");
  r.rows = static_cast<int64_t>(rows.size());
  r.ids.clear();
  for (const std::vector<int64_t>& row : rows) {
    if (row.size() != rows[0].size())
      throw Error("option '" + option + "': its rows differ in length (" + std::to_string(rows[0].size()) + " and " +
                  std::to_string(row.size()) + " ids); every batch row reads its prompt at the same steps");
    r.ids.insert(r.ids.end(), row.begin(), row.end());
  }
}

std::shared_ptr<const text::Tokenizer> load_tokenizer(const std::string& dir, const std::string& why) {
  if (dir.empty()) throw Error(why);
  return std::make_shared<const text::Tokenizer>(text::Tokenizer::load(dir));
}

std::vector<int64_t> tokenize(const PromptOptions& o, const text::Tokenizer& tok, ResolvedPrompt& r) {
  const text::Utf8Repair repaired = text::repair_utf8(*o.prompt);
  if (repaired.replaced > 0)
    r.repair_note = "warning: --prompt is not valid UTF-8 (byte " + std::to_string(repaired.first_bad) + "); " +
                    std::to_string(repaired.replaced) +
                    " invalid sequence(s) replaced by U+FFFD, as the reference tokenizers read such bytes";
  std::vector<int32_t> ids;
  if (o.chat) {
    const text::ChatTemplate tpl = text::ChatTemplate::recognise(tok.chat_template(), tok.chat_template_source());
    std::vector<text::ChatMessage> messages;
    if (o.system) messages.push_back({"system", text::repair_utf8(*o.system).text});
    messages.push_back({"user", repaired.text});
    ids = tok.encode(tpl.render(messages, tok.bos_token(), text::today_for_chat()), false);
    r.description = " of text (chat template " + tpl.family() + ")";
  } else {
    ids = tok.encode(repaired.text, true);
    r.description = " of text";
  }
  if (ids.empty()) throw Error("--prompt '" + text_brief(*o.prompt) + "' encodes to no tokens");
  r.description = std::to_string(ids.size()) + " tokens" + r.description;
  return std::vector<int64_t>(ids.begin(), ids.end());
}

}  // namespace

PromptOptions parse_prompt_options(const Args& args) {
  PromptOptions o;
  if (args.has("prompt")) o.prompt = args.get("prompt");
  if (args.has("prompt-ids")) o.prompt_ids = args.get("prompt-ids");
  if (o.prompt && o.prompt_ids) throw Error("give --prompt TEXT or --prompt-ids 1,2,3, not both");
  o.chat = args.flag("chat");
  if (args.has("system")) o.system = args.get("system");
  if ((o.chat || o.system) && !o.prompt) throw Error("--chat and --system format a text --prompt");
  if (o.system && !o.chat) throw Error("--system adds a system turn to --chat; give --chat too");
  o.tokenizer_dir = args.get("tokenizer");
  if (args.has("max-new-tokens")) o.max_new_tokens = args.get_int("max-new-tokens", 0, {1, kMaxPositions});
  if (args.has("steps")) o.steps = args.get_int("steps", 0, kStepsRange);
  if (o.steps && o.max_new_tokens) throw Error("give --steps or --max-new-tokens, not both");
  return o;
}

ResolvedPrompt resolve_prompt(const PromptOptions& o, const Module& m) {
  ResolvedPrompt r;
  const std::string dir = o.tokenizer_dir.empty() ? checkpoint_dir_of(m) : o.tokenizer_dir;
  const std::string no_tokenizer =
      "--prompt TEXT needs a tokenizer: model '" + m.provenance.source +
      "' is not a checkpoint folder (give --tokenizer DIR with a tokenizer.json, or --prompt-ids 1,2,3)";
  if (o.prompt_ids) {
    parse_id_rows(*o.prompt_ids, "--prompt-ids", attr_int_or(m.attrs, "batch", 1), r);
  } else if (!o.prompt) {
    r.ids = {1};  // no prompt: token 1, as before
  } else if (looks_like_ids(*o.prompt) && !o.chat && o.tokenizer_dir.empty() &&
             (dir.empty() || !std::filesystem::exists(std::filesystem::path(dir) / "tokenizer.json"))) {
    r.ids = parse_ids(*o.prompt, "--prompt");  // the id form of --prompt, where no tokenizer is found
  } else {
    r.tokenizer = load_tokenizer(dir, no_tokenizer);
    r.ids = tokenize(o, *r.tokenizer, r);
    const int64_t vocab = attr_int_or(m.attrs, "vocab", 0);
    if (vocab > 0 && r.tokenizer->id_limit() > vocab)
      throw Error("the tokenizer in '" + dir + "' has ids up to " + std::to_string(r.tokenizer->id_limit() - 1) +
                  " but the model's vocabulary has " + std::to_string(vocab) + " tokens: not this model's tokenizer");
  }
  const auto p = static_cast<int64_t>(r.ids.size()) / r.rows;  // the prompt's length
  if (!r.text()) r.description = (r.rows > 1 ? std::to_string(r.rows) + " rows of " : "") + std::to_string(p) + " ids";
  const int64_t max_seq = attr_int_or(m.attrs, "max_seq_len", 0);
  if (p > max_seq)
    throw Error("the prompt has " + std::to_string(p) + " tokens but the model's max_seq_len is " +
                std::to_string(max_seq) + " (--max-seq raises it, up to the model's max_position_embeddings)");
  const int64_t room = max_seq - p + 1;  // new tokens that fit: positions P-1 .. max_seq-1
  if (o.steps) {
    r.max_new_tokens = std::max<int64_t>(0, *o.steps - p + 1);
  } else if (o.max_new_tokens) {
    if (*o.max_new_tokens > room)
      throw Error("--max-new-tokens " + std::to_string(*o.max_new_tokens) + " does not fit: a prompt of " +
                  std::to_string(p) + " tokens leaves room for " + std::to_string(room) +
                  " new tokens in the model's max_seq_len of " + std::to_string(max_seq) + " (--max-seq raises it)");
    r.max_new_tokens = *o.max_new_tokens;
  } else if (r.text()) {
    r.max_new_tokens = std::min(kDefaultNewTokens, room);
    if (room < kDefaultNewTokens) r.steps_cap = "max_seq_len " + std::to_string(max_seq);
  } else {
    r.steps = kDefaultIdSteps;
    r.max_new_tokens = std::max<int64_t>(0, kDefaultIdSteps - p + 1);
    return r;
  }
  r.steps = o.steps ? *o.steps : p + r.max_new_tokens - 1;
  return r;
}

TextPrinter::TextPrinter(const text::Tokenizer& tokenizer, size_t prompt_length, std::FILE* out)
    : tokenizer_(tokenizer), decoder_(tokenizer), prompt_length_(prompt_length), out_(out),
      start_(std::chrono::steady_clock::now()) {}

void TextPrinter::operator()(int64_t step, const std::vector<int32_t>& tokens) {
  if (step + 1 < static_cast<int64_t>(prompt_length_) || tokens.empty()) return;
  arrived_s_.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  last_ = tokens[0];
  const std::vector<int32_t>& eos = tokenizer_.eos_ids();
  if (std::binary_search(eos.begin(), eos.end(), last_)) return;
  const std::string piece = decoder_.push(last_);
  if (piece.empty()) return;
  std::fwrite(piece.data(), 1, piece.size(), out_);
  std::fflush(out_);
  wrote_ = true;
}

void TextPrinter::finish() {
  const std::string rest = decoder_.finish();
  std::fwrite(rest.data(), 1, rest.size(), out_);
  if (wrote_ || !rest.empty()) std::fputc('\n', out_);
  std::fflush(out_);
}

void print_text_summary(std::FILE* out, const ResolvedPrompt& prompt, const TextPrinter& printer,
                        const Executor& ex, const ExecResult& r) {
  const int64_t n = printer.generated();
  std::string why;
  if (r.stopped_at >= 0) {
    const int32_t t = printer.last_token();
    const std::string text = prompt.tokenizer->has_id(t) ? prompt.tokenizer->token_bytes(t) : "";
    why = "at EOS: token " + std::to_string(t) + " " + json_brief(text::repair_utf8(text).text) + " after " +
          std::to_string(n - 1) + " new tokens";
  } else {
    why = "after " + std::to_string(n) + " new tokens: --max-new-tokens " + std::to_string(prompt.max_new_tokens);
    if (!prompt.steps_cap.empty()) why += " (capped by the model's " + prompt.steps_cap + ")";
  }
  std::fprintf(out, "\nstopped  %s\n", why.c_str());
  const std::vector<double>& at = printer.arrived_s();
  if (!r.streamed) {
    std::fprintf(out, "time     kernel %.3f ms for %lld steps (%.4f ms per step); the tokens reached the host "
                 "after the launch\n", r.seconds * 1e3, static_cast<long long>(r.steps),
                 r.seconds * 1e3 / static_cast<double>(std::max<int64_t>(r.steps, 1)));
  } else if (!at.empty()) {
    if (r.prefill)
      std::fprintf(out, "time     first token after %.1f ms (a prefill of %lld positions in %lld chunk steps, then a "
                   "decode step)", at.front() * 1e3, static_cast<long long>(r.first_step),
                   static_cast<long long>(r.prefill->steps));
    else
      std::fprintf(out, "time     first token after %.1f ms (%zu prompt steps, one per token)", at.front() * 1e3,
                   prompt.ids.size());
    if (at.size() > 1)
      std::fprintf(out, ", then %.2f tokens/s (%zu tokens in %.3f s)", static_cast<double>(at.size() - 1) / (at.back() - at.front()),
                   at.size() - 1, at.back() - at.front());
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "%-9s%s\n", ex.kind(), ex.describe().c_str());
}

}  // namespace mpk
