// The tune search space from the declared options, and candidates as pipelines.
#include "driver/tune_space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ir/error.h"
#include "passes/policies/policy.h"
#include "passes/registry.h"

namespace mpk {
namespace {

constexpr double kMaxTaskGrowth = 4;     // a value may make at most 4x the default's tasks
constexpr int64_t kIntCeiling = 4096;    // integers without a declared maximum
constexpr double kMaxRealDecades = 6;    // reals spanning more are left at their default

bool is_fusion(const std::string& pass) { return pass.rfind("fuse-", 0) == 0; }

std::string real_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The ladder of an integer option: powers of two between its bounds, and its minimum.
std::vector<std::string> int_ladder(const PassOptionInfo& o) {
  const int64_t lo = static_cast<int64_t>(std::max(1.0, o.min.value_or(1)));
  const int64_t hi = static_cast<int64_t>(std::min(o.max.value_or(static_cast<double>(kIntCeiling)),
                                                   static_cast<double>(kIntCeiling)));
  std::vector<std::string> out;
  if (lo <= hi) out.push_back(std::to_string(lo));
  for (int64_t v = 1; v <= hi; v *= 2)
    if (v > lo) out.push_back(std::to_string(v));
  return out;
}

// The ladder of a real option, or none (with the reason) when it is not searched.
std::vector<std::string> real_ladder(const PassOptionInfo& o, std::string& why) {
  if (o.accepts_auto) {
    why = "its default is computed (from the machine or the cost model), so its bounds give no scale";
    return {};
  }
  if (!o.min || !o.max || *o.max <= *o.min) {
    why = "its bounds are not both declared";
    return {};
  }
  const double hi = *o.max, lo = *o.min > 0 ? *o.min : hi * 1e-3;
  if (std::log10(hi / lo) > kMaxRealDecades) {
    why = "its bounds span more than six decades";
    return {};
  }
  std::vector<std::string> out;
  if (*o.min <= 0) out.push_back(real_text(*o.min));
  const int points = 8;
  for (int i = 0; i < points; ++i) out.push_back(real_text(lo * std::pow(hi / lo, i / (points - 1.0))));
  return out;
}

// A dimension for option `o` of `pass` (of `policy`), or nullopt with a note.
std::optional<TuneDimension> dimension_for(const std::string& pass, const std::string& policy,
                                           const PassOptionInfo& o, const PipelineEntry& entry,
                                           std::vector<std::string>& notes) {
  TuneDimension d{pass, o.name, policy, o.kind, {}, 0, 0};
  std::string why;
  switch (o.kind) {
    case OptionKind::kBool: d.values = {"false", "true"}; break;
    case OptionKind::kChoice: d.values = o.choices; break;
    case OptionKind::kInt: d.values = int_ladder(o); break;
    case OptionKind::kFloat: d.values = real_ladder(o, why); break;
    case OptionKind::kString: why = "a text option (a path) is not searched"; break;
  }
  const std::string where = d.name() + (policy.empty() ? "" : " (" + policy + ")");
  if (d.values.empty()) {
    notes.push_back(where + ": left at its default: " + (why.empty() ? "no values" : why));
    return std::nullopt;
  }
  if (o.accepts_auto) {
    d.values.insert(d.values.begin(), "auto");
    d.ladder_begin = 1;
  } else if (o.kind != OptionKind::kInt && o.kind != OptionKind::kFloat) {
    d.ladder_begin = d.values.size();  // unordered
  }
  // The default: the base pipeline's value, else the declared default.
  const auto given = entry.options.find(o.name);
  const std::string def = given != entry.options.end() ? given->second
                          : o.accepts_auto && o.default_value.empty() ? "auto"
                                                                      : o.default_value;
  auto it = std::find(d.values.begin(), d.values.end(), def);
  if (it == d.values.end()) {  // off the ladder: a value of its own, in order among numbers
    it = d.values.end();
    if (def != "auto" && (o.kind == OptionKind::kInt || o.kind == OptionKind::kFloat))
      it = std::find_if(d.values.begin() + static_cast<std::ptrdiff_t>(d.ladder_begin), d.values.end(),
                        [&](const std::string& v) { return std::stod(v) > std::stod(def); });
    it = d.values.insert(it, def);
  }
  d.default_index = static_cast<size_t>(it - d.values.begin());
  return d;
}

// The base pipeline with one option set (and, for a policy's option, that policy).
Pipeline with_value(const Pipeline& base, const TuneDimension& d, const std::string& value) {
  Pipeline p = base;
  for (PipelineEntry& e : p)
    if (e.pass == d.pass) {
      e.options[d.option] = value;
      if (!d.policy.empty()) e.options["policy"] = d.policy;
    }
  return p;
}

// Tries each integer value once and drops those the pass refuses. Before assign-sm, also
// those that make more than kMaxTaskGrowth times the default's tasks (and every smaller
// one: fewer per task means more tasks), and those past the point where the task count
// stops changing (the largest value that still changes it is kept).
void probe_integers(TuneCompiler& compiler, TuneSpace& space) {
  for (TuneDimension& d : space.dims) {
    if (d.kind != OptionKind::kInt) continue;
    const bool graph_pass = d.pass != "assign-sm";
    std::vector<bool> keep(d.values.size(), true);
    int64_t prev_count = -1;
    size_t prev = d.values.size();
    bool too_many = false;
    for (size_t k = d.values.size(); k-- > d.ladder_begin;) {
      if (too_many) {
        keep[k] = false;
        continue;
      }
      int64_t count = 0;
      try {
        const Pipeline p = with_value(space.base, d, d.values[k]);
        if (graph_pass) count = compiler.decomposed_tasks(p);
        else compiler.schedule(p);
      } catch (const Error&) {
        keep[k] = false;
        continue;
      }
      if (!graph_pass) continue;
      if (static_cast<double>(count) > kMaxTaskGrowth * static_cast<double>(space.default_tasks)) {
        too_many = true;
        keep[k] = false;
        continue;
      }
      if (count == prev_count) keep[prev] = false;
      prev_count = count;
      prev = k;
    }
    keep[d.default_index] = true;
    std::vector<std::string> values;
    size_t def = 0, begin = 0;
    for (size_t k = 0; k < d.values.size(); ++k) {
      if (!keep[k]) continue;
      if (k == d.default_index) def = values.size();
      if (k < d.ladder_begin) ++begin;
      values.push_back(d.values[k]);
    }
    d.values = std::move(values);
    d.default_index = def;
    d.ladder_begin = begin;
  }
  std::erase_if(space.dims, [&](const TuneDimension& d) {
    if (d.values.size() > 1) return false;
    space.notes.push_back(d.name() + ": left at its default: no other value compiles");
    return true;
  });
}

}  // namespace

std::string TuneDimension::name() const { return option.empty() ? pass : pass + "." + option; }

TunePoint default_point(const TuneSpace& space) {
  TunePoint p;
  for (const TuneDimension& d : space.dims) p.push_back(static_cast<int32_t>(d.default_index));
  return p;
}

bool dimension_active(const TuneSpace& space, const TunePoint& p, size_t i) {
  const TuneDimension& d = space.dims[i];
  for (size_t j = 0; j < space.dims.size(); ++j) {
    const TuneDimension& o = space.dims[j];
    if (o.pass != d.pass) continue;
    if (!d.option.empty() && o.option.empty() && o.values[static_cast<size_t>(p[j])] == "off") return false;
    if (!d.policy.empty() && o.option == "policy" && o.values[static_cast<size_t>(p[j])] != d.policy) return false;
  }
  return true;
}

Pipeline pipeline_of(const TuneSpace& space, const TunePoint& p) {
  Pipeline out = space.base;
  std::vector<std::string> dropped;
  for (size_t i = 0; i < space.dims.size(); ++i) {
    const TuneDimension& d = space.dims[i];
    if (!dimension_active(space, p, i) || static_cast<size_t>(p[i]) == d.default_index) continue;
    const std::string& v = d.values[static_cast<size_t>(p[i])];
    if (d.option.empty()) {
      if (v == "off") dropped.push_back(d.pass);
      continue;
    }
    for (PipelineEntry& e : out)
      if (e.pass == d.pass) e.options[d.option] = v;
  }
  std::erase_if(out, [&](const PipelineEntry& e) {
    return std::find(dropped.begin(), dropped.end(), e.pass) != dropped.end();
  });
  return out;
}

std::string describe_point(const TuneSpace& space, const TunePoint& p) {
  std::string s;
  for (size_t i = 0; i < space.dims.size(); ++i) {
    const TuneDimension& d = space.dims[i];
    if (!dimension_active(space, p, i) || static_cast<size_t>(p[i]) == d.default_index) continue;
    s += (s.empty() ? "" : " ") + d.name() + "=" + d.values[static_cast<size_t>(p[i])];
  }
  return s.empty() ? "default" : s;
}

TuneSpace build_tune_space(TuneCompiler& compiler, const Pipeline& base) {
  TuneSpace space;
  space.base = base;
  compiler.schedule(base);  // the base must compile
  space.default_tasks = compiler.decomposed_tasks(base);
  for (const PipelineEntry& e : base) {
    const PassInfo* info = find_pass(e.pass);
    if (!info) throw Error("tune: unknown pass '" + e.pass + "' in the base pipeline");
    if (is_fusion(e.pass)) space.dims.push_back({e.pass, "", "", OptionKind::kBool, {"on", "off"}, 0, 2});
    if (e.pass != "assign-sm") {
      for (const PassOptionInfo& o : info->options)
        if (auto d = dimension_for(e.pass, "", o, e, space.notes)) space.dims.push_back(*d);
      continue;
    }
    for (const PassOptionInfo& o : info->options)  // policy, workers, costs; the policies' below
      if (o.name == "policy") {
        TuneDimension d{e.pass, "policy", "", OptionKind::kChoice, {}, 0, 0};
        for (const PolicyInfo& p : all_policies())
          if (p.base_option.empty()) d.values.push_back(p.name);
        d.ladder_begin = d.values.size();
        const std::string def = e.options.count("policy") ? e.options.at("policy") : o.default_value;
        const auto it = std::find(d.values.begin(), d.values.end(), def);
        if (it == d.values.end()) throw Error("tune: the base pipeline's policy '" + def + "' is not searchable");
        d.default_index = static_cast<size_t>(it - d.values.begin());
        space.dims.push_back(d);
      } else if (o.name == "workers" || o.name == "costs") {
        if (auto d = dimension_for(e.pass, "", o, e, space.notes)) space.dims.push_back(*d);
      }
    for (const PolicyInfo& p : all_policies())
      if (p.base_option.empty())
        for (const PassOptionInfo& o : p.options)
          if (auto d = dimension_for(e.pass, p.name, o, e, space.notes)) space.dims.push_back(*d);
  }
  probe_integers(compiler, space);
  compiler.set_task_limit(static_cast<int64_t>(kMaxTaskGrowth * static_cast<double>(space.default_tasks)));
  return space;
}

}  // namespace mpk
