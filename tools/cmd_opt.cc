// `mpk-opt` / `mpk opt`: the LLVM-style pass driver. Reads a module (a .mpk file, binary
// or text; or a model to import: preset, HF directory, config.json), runs a pass
// pipeline (the default one unless --pass-pipeline is given), verifies the result,
// writes it if asked and prints a summary.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "ir/error.h"
#include "ir/import/model_source.h"
#include "ir/serialize.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/policies/policy.h"
#include "passes/registry.h"
#include "passes/summary.h"
#include "tools/args.h"
#include "tools/subcommands.h"

namespace mpk {
namespace {

constexpr const char* kUsage =
    "usage: mpk-opt INPUT [--pass-pipeline=PIPELINE] [-o OUT|-] [--emit=binary|text]\n"
    "               [--timing] [--print-ir-after-all] [--verify-each|--no-verify-each]\n"
    "               [--batch N] [--max-seq N]\n"
    "       mpk-opt --list-passes\n\n"
    "INPUT: a .mpk module (binary or text), or a model to import first (a preset, a\n"
    "Hugging Face directory or a config.json; --batch and --max-seq apply to it).\n"
    "Without --pass-pipeline runs the default pipeline (from decompose on when INPUT is\n"
    "decomposed already: its program went through the fusions). -o FILE writes the\n"
    "result (binary unless --emit=text); -o - or --emit alone write it to stdout (text\n"
    "unless --emit=binary). The summary goes to stdout, or to stderr when the module does.\n";

void list_passes() {
  std::printf("passes:\n");
  for (const PassInfo& p : all_passes()) {
    std::printf("  %-14s %s\n", p.name.c_str(), p.summary.c_str());
    for (const PassOptionInfo& o : p.options) {
      const std::string opt = o.name + "=" + (o.default_value.empty() ? "..." : o.default_value);
      std::printf("      %-28s %s\n", opt.c_str(), o.help.c_str());
    }
  }
  std::printf("\nassign-sm policies:\n");
  for (const PolicyInfo& p : all_policies()) {
    std::printf("  %-14s %s\n", p.name.c_str(), p.summary.c_str());
    for (const PassOptionInfo& o : p.options) {
      const std::string opt = o.name + "=" + (o.default_value.empty() ? "..." : o.default_value);
      std::printf("      %-28s %s\n", opt.c_str(), o.help.c_str());
    }
  }
  std::printf("\ndefault pipeline: %s\n", kDefaultPipeline);
}

// A module file is loaded (and verified); a preset or config is imported.
Module read_input(const std::string& input, const Args& args) {
  const ModelSource source = resolve_model_source(input);
  if (source.kind == ModelSourceKind::kModule && (args.has("batch") || args.has("max-seq")))
    throw Error("--batch and --max-seq apply only when INPUT is a model to import");
  ImportOptions options;
  options.batch = args.get_int("batch", options.batch, kBatchRange);
  options.max_seq_len = args.get_int("max-seq", options.max_seq_len, kMaxSeqRange);
  return load_model_source(source, options);
}

}  // namespace

int cmd_opt(int argc, char** argv) {
  const Args args(argc, argv, {"pass-pipeline", "o", "emit", "batch", "max-seq"},
                  {"list-passes", "timing", "print-ir-after-all", "verify-each",
                   "no-verify-each", "help", "h"});
  if (args.flag("help") || args.flag("h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args.flag("list-passes")) {
    list_passes();
    return 0;
  }
  if (args.positionals().size() != 1)
    throw Error(args.positionals().empty() ? "missing INPUT (see --help)"
                                           : "expected one INPUT, got '" +
                                                 args.positionals()[1] + "' as well");
  if (args.flag("verify-each") && args.flag("no-verify-each"))
    throw Error("--verify-each and --no-verify-each contradict each other");
  const std::string out = args.get("o");
  const bool to_stdout = out == "-" || (out.empty() && args.has("emit"));
  const std::string emit = args.get("emit", to_stdout ? "text" : "binary");
  if (emit != "text" && emit != "binary")
    throw Error("option '--emit' expects 'binary' or 'text', got '" + emit + "'");
  const Format format = emit == "text" ? Format::kText : Format::kBinary;

  // Parse the pipeline and resolve passes before any work, so that a typo fails fast.
  PassManagerConfig config;
  if (args.flag("verify-each")) config.verify_each = true;
  if (args.flag("no-verify-each")) config.verify_each = false;
  std::ostringstream ir_dump;
  if (args.flag("print-ir-after-all")) config.print_ir_after_each = &ir_dump;
  Pipeline pipeline = parse_pipeline(args.get("pass-pipeline", kDefaultPipeline));
  static_cast<void>(PassManager(pipeline, config));  // every pass and option resolved before any work
  Module m = read_input(args.positionals().front(), args);
  // The default on a module decomposed already: its program has been through the
  // fusions, so the default pipeline's passes from decompose on (its task graph re-derived).
  if (!args.has("pass-pipeline") && !m.graph.tasks.empty())
    pipeline.erase(pipeline.begin(), std::find_if(pipeline.begin(), pipeline.end(),
                                                  [](const PipelineEntry& e) { return e.pass == "decompose"; }));
  PassManager pm(std::move(pipeline), config);
  try {
    pm.run(m);
  } catch (const Error&) {
    std::cerr << ir_dump.str();
    throw;
  }
  std::cerr << ir_dump.str();
  verify_or_throw(m);

  if (to_stdout) {
    const std::string bytes = format == Format::kText ? print_module(m) : module_to_binary(m);
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
  } else if (!out.empty()) {
    save_module(m, out, format);
  }
  std::ostream& info = to_stdout ? std::cerr : std::cout;
  info << m.name << " (" << m.provenance.source << ") | " << print_pipeline(pm.pipeline());
  if (!out.empty() && !to_stdout) info << " -> " << out;
  info << "\n" << format_summary(summarize(m));
  if (args.flag("timing")) print_timings(std::cerr, pm.timings());
  return 0;
}

}  // namespace mpk

MPK_SUBCOMMAND(opt, "run a pass pipeline over a module (same as mpk-opt)", mpk::cmd_opt);
