// Pass manager implementation.
#include "passes/pass_manager.h"

#include <algorithm>

#include "ir/error.h"
#include "passes/registry.h"

namespace mpk {
namespace {

std::string known_options(const PassInfo& info) {
  if (info.options.empty()) return "it takes none";
  std::string s = "known:";
  for (const PassOptionInfo& o : info.options) s += " " + o.name;
  return s;
}

std::string known_passes() {
  std::string s;
  for (const PassInfo& p : all_passes()) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

}  // namespace

PassManager::PassManager(Pipeline pipeline, PassManagerConfig config)
    : pipeline_(std::move(pipeline)) {
  if (config.verify_each) instruments_.push_back(std::make_unique<VerifyInstrument>());
  if (config.print_ir_after_each)
    instruments_.push_back(std::make_unique<PrintIrInstrument>(*config.print_ir_after_each));
  auto timing = std::make_unique<TimingInstrument>();
  timing_ = timing.get();
  instruments_.push_back(std::move(timing));
  for (const PipelineEntry& e : pipeline_) {
    const PassInfo* info = find_pass(e.pass);
    if (!info) throw Error("unknown pass '" + e.pass + "' (known: " + known_passes() + ")");
    // Names here; values against their declared kind and bounds when the pass parses
    // them (passes/options.h).
    for (const auto& option : e.options) {
      const std::string& key = option.first;
      if (std::none_of(info->options.begin(), info->options.end(),
                       [&](const PassOptionInfo& x) { return x.name == key; }))
        throw Error("pass '" + e.pass + "': unknown option '" + key + "' (" +
                    known_options(*info) + ")");
    }
    passes_.push_back(info->create(e.options));
  }
}

void PassManager::add_instrument(std::unique_ptr<PassInstrument> instrument) {
  instruments_.push_back(std::move(instrument));
}

void PassManager::run(Module& module) {
  timing_->clear();
  for (size_t i = 0; i < passes_.size(); ++i) {
    const std::string& name = pipeline_[i].pass;
    for (const auto& instrument : instruments_) instrument->before_pass(name, module);
    const PassResult r = passes_[i]->run(module);
    // Indexes of the graph made before a change are stale (ir/task_graph_index.h).
    if (r.changed || r.error) module.graph.touch();
    if (r.error) throw Error("pass '" + name + "' failed: " + *r.error);
    for (auto it = instruments_.rbegin(); it != instruments_.rend(); ++it)
      (*it)->after_pass(name, module, r);
  }
  const std::string text = print_pipeline(pipeline_);
  module.provenance.pipeline =
      module.provenance.pipeline.empty() ? text : module.provenance.pipeline + "," + text;
  module.provenance.tool_version = tool_version();
}

}  // namespace mpk
