// Pass manager implementation.
#include "passes/pass_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ir/error.h"
#include "ir/text.h"
#include "ir/verifier.h"
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
    : pipeline_(std::move(pipeline)), config_(config) {
  for (const PipelineEntry& e : pipeline_) {
    const PassInfo* info = find_pass(e.pass);
    if (!info) throw Error("unknown pass '" + e.pass + "' (known: " + known_passes() + ")");
    // Every value is checked against its declared kind and bounds here, before the pass
    // sees it (passes/pass.h option_value_problem).
    for (const auto& option : e.options) {
      const std::string& key = option.first;
      const auto o = std::find_if(info->options.begin(), info->options.end(),
                                  [&](const PassOptionInfo& x) { return x.name == key; });
      if (o == info->options.end())
        throw Error("pass '" + e.pass + "': unknown option '" + key + "' (" +
                    known_options(*info) + ")");
      if (const std::string problem = option_value_problem(*o, option.second); !problem.empty())
        throw Error("pass '" + e.pass + "': " + problem);
    }
    passes_.push_back(info->create(e.options));
  }
}

void PassManager::run(Module& module) {
  timings_.clear();
  for (size_t i = 0; i < passes_.size(); ++i) {
    const std::string& name = pipeline_[i].pass;
    auto start = std::chrono::steady_clock::now();
    PassResult r = passes_[i]->run(module);
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r.error) throw Error("pass '" + name + "' failed: " + *r.error);
    timings_.push_back({name, secs, r.changed});
    if (config_.verify_each) {
      try {
        verify_or_throw(module);
      } catch (const Error& e) {
        throw Error("after pass '" + name + "': " + e.what());
      }
    }
    if (config_.print_ir_after_each) {
      *config_.print_ir_after_each << "// ----- IR after " << name << " -----\n"
                                   << print_module(module);
    }
  }
  const std::string text = print_pipeline(pipeline_);
  module.provenance.pipeline =
      module.provenance.pipeline.empty() ? text : module.provenance.pipeline + "," + text;
  module.provenance.tool_version = tool_version();
}

void print_timings(std::ostream& os, const std::vector<PassTiming>& timings) {
  size_t width = 5;
  double total = 0;
  for (const PassTiming& t : timings) width = std::max(width, t.pass.size());
  char line[256];
  for (const PassTiming& t : timings) {
    std::snprintf(line, sizeof line, "  %-*s %9.4f s  %s\n", static_cast<int>(width),
                  t.pass.c_str(), t.seconds, t.changed ? "changed" : "unchanged");
    os << line;
    total += t.seconds;
  }
  std::snprintf(line, sizeof line, "  %-*s %9.4f s\n", static_cast<int>(width), "total", total);
  os << line;
}

}  // namespace mpk
