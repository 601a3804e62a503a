// `mpk import`: a model (preset, Hugging Face directory or config.json) becomes a .mpk
// program of one decode step, binary or text, with a one-line summary.
#include <cstdio>
#include <iostream>
#include <string>

#include "ir/error.h"
#include "ir/import/import.h"
#include "ir/serialize.h"
#include "ir/text.h"
#include "tools/args.h"
#include "tools/subcommands.h"

namespace mpk {
namespace {

constexpr const char* kUsage =
    "usage: mpk import --model PRESET|HF_DIR|config.json [--batch N] [--max-seq N]\n"
    "                  -o OUT.mpk|- [--emit=binary|text]\n\n"
    "Imports a Llama 3 / Qwen3 model into the program of one decode step. -o - writes to\n"
    "stdout (text unless --emit=binary); a file is binary unless --emit=text.\n";

Format parse_emit(const std::string& emit) {
  if (emit == "binary") return Format::kBinary;
  if (emit == "text") return Format::kText;
  throw Error("option '--emit' expects 'binary' or 'text', got '" + emit + "'");
}

int cmd_import(int argc, char** argv) {
  const Args args(argc, argv, {"model", "batch", "max-seq", "o", "emit"}, {"help", "h"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!args.positionals().empty())
    throw Error("unexpected argument '" + args.positionals().front() + "' (see --help)");
  if (!args.has("model")) throw Error("missing --model PRESET|HF_DIR|config.json");
  if (!args.has("o")) throw Error("missing -o OUT.mpk (or -o - for stdout)");
  const std::string out = args.get("o");
  const Format format = parse_emit(args.get("emit", out == "-" ? "text" : "binary"));

  ImportOptions options;
  options.batch = args.get_int("batch", options.batch, kBatchRange);
  options.max_seq_len = args.get_int("max-seq", options.max_seq_len, kMaxSeqRange);
  const Module m = import_model(args.get("model"), options);

  if (out == "-") {
    const std::string bytes = format == Format::kText ? print_module(m) : module_to_binary(m);
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
  } else {
    save_module(m, out, format);
  }
  std::FILE* info = out == "-" ? stderr : stdout;
  std::fprintf(info, "imported %s (%s): %zu tensors, %zu operators, batch %lld, max_seq_len %lld -> %s (%s)\n",
               m.name.c_str(), m.provenance.source.c_str(), m.program.tensors.size(),
               m.program.ops.size(), static_cast<long long>(attr_int_or(m.attrs, "batch", 0)),
               static_cast<long long>(attr_int_or(m.attrs, "max_seq_len", 0)),
               out == "-" ? "stdout" : out.c_str(), format == Format::kText ? "text" : "binary");
  return 0;
}

}  // namespace
}  // namespace mpk

MPK_SUBCOMMAND(import, "import a model (preset, HF directory, config.json) into a .mpk program",
               mpk::cmd_import);
