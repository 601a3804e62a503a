// Cost files: the cost parameters (ir/cost_params.h) as JSON, read over a base and
// written whole.
#include "ir/cost_params.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "ir/error.h"
#include "ir/file_io.h"

namespace mpk {

using nlohmann::json;

namespace {

// A cost file is at most a few KiB; the bound stops /dev/zero and the like.
constexpr int64_t kMaxCostFileBytes = int64_t{1} << 20;

double number(const json& j, const std::string& where) {
  if (!j.is_number()) throw Error(where + ": expected a number");
  const double v = j.get<double>();
  if (!std::isfinite(v) || v < 0) throw Error(where + ": expected a finite number >= 0");
  return v;
}

void read_kind(const json& j, const std::string& where, KindCostOverride& out) {
  if (!j.is_object()) throw Error(where + ": expected an object");
  for (const auto& [key, value] : j.items()) {
    const std::string w = where + "." + key;
    if (key == "fixed_ns") out.fixed_ns = number(value, w);
    else if (key == "bytes_scale") out.bytes_scale = number(value, w);
    else if (key == "flops_per_ns") out.flops_per_ns = number(value, w);
    else if (key == "prefetch") {
      out.prefetch = number(value, w);
      if (*out.prefetch > 1) throw Error(w + ": a share, between 0 and 1");
    } else {
      throw Error(w + ": unknown key (known: fixed_ns, bytes_scale, flops_per_ns, prefetch)");
    }
  }
}

json kind_json(const KindCostOverride& o) {
  json j = json::object();
  if (o.fixed_ns) j["fixed_ns"] = *o.fixed_ns;
  if (o.bytes_scale) j["bytes_scale"] = *o.bytes_scale;
  if (o.flops_per_ns) j["flops_per_ns"] = *o.flops_per_ns;
  if (o.prefetch) j["prefetch"] = *o.prefetch;
  return j;
}

}  // namespace

CostParams parse_cost_params(const std::string& text, const std::string& source,
                             const CostParams& base) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(source + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(source + ": expected a JSON object");
  CostParams p = base;
  for (const auto& [key, value] : j.items()) {
    const std::string w = source + ": " + key;
    if (key == "format") {
      if (value != "mpk-costs") throw Error(w + ": expected \"mpk-costs\"");
    } else if (key == "version") {
      if (!value.is_number_integer() || value.get<int>() != 1)
        throw Error(w + ": unsupported cost file version (this build reads 1)");
    } else if (key == "mem_bandwidth") {
      p.mem_bandwidth = number(value, w);
    } else if (key == "sm_bandwidth") {
      p.sm_bandwidth = number(value, w);
    } else if (key == "event_latency_ns") {
      p.event_latency_ns = number(value, w);
    } else if (key == "dispatch_ns") {
      p.dispatch_ns = number(value, w);
    } else if (key == "prefetch_bytes") {
      p.prefetch_bytes = number(value, w);
    } else if (key == "trigger_ns") {
      p.trigger_ns = number(value, w);
    } else if (key == "fanout_ns") {
      p.fanout_ns = number(value, w);
    } else if (key == "step_ns") {
      p.step_ns = number(value, w);
    } else if (key == "link_latency_ns") {
      p.link_latency_ns = number(value, w);
    } else if (key == "link_bandwidth") {
      p.link_bandwidth = number(value, w);
    } else if (key == "positional_cache") {
      if (!value.is_boolean()) throw Error(w + ": expected true or false");
      p.positional_cache = value.get<bool>();
    } else if (key == "note") {
      if (!value.is_string()) throw Error(w + ": expected a string");
      p.note = value.get<std::string>();
    } else if (key == "default") {
      KindCostOverride o;
      read_kind(value, w, o);
      if (o.fixed_ns) p.defaults.fixed_ns = *o.fixed_ns;
      if (o.bytes_scale) p.defaults.bytes_scale = *o.bytes_scale;
      if (o.flops_per_ns) p.defaults.flops_per_ns = *o.flops_per_ns;
      if (o.prefetch) p.defaults.prefetch = *o.prefetch;
    } else if (key == "kinds") {
      if (!value.is_object()) throw Error(w + ": expected an object of task kinds");
      for (const auto& [kind, entry] : value.items()) {
        auto k = parse_task_kind(kind);
        if (!k) throw Error(w + "." + kind + ": unknown task kind");
        read_kind(entry, w + "." + kind, p.kinds[static_cast<size_t>(*k)]);
      }
    } else {
      throw Error(w + ": unknown key (known: format, version, note, mem_bandwidth, "
                      "sm_bandwidth, event_latency_ns, dispatch_ns, trigger_ns, fanout_ns, "
                      "step_ns, link_latency_ns, link_bandwidth, prefetch_bytes, positional_cache, default, kinds)");
    }
  }
  check_cost_params(p, source);
  return p;
}

CostParams load_cost_params(const std::string& path, const CostParams& base) {
  return parse_cost_params(read_file_bounded(path, kMaxCostFileBytes, "cost file"), path, base);
}

std::string format_cost_params(const CostParams& p) {
  json j = json::object();
  j["format"] = "mpk-costs";
  j["version"] = 1;
  if (!p.note.empty()) j["note"] = p.note;
  j["mem_bandwidth"] = p.mem_bandwidth;
  j["sm_bandwidth"] = p.sm_bandwidth;
  j["event_latency_ns"] = p.event_latency_ns;
  j["dispatch_ns"] = p.dispatch_ns;
  j["trigger_ns"] = p.trigger_ns;
  j["fanout_ns"] = p.fanout_ns;
  j["step_ns"] = p.step_ns;
  j["link_latency_ns"] = p.link_latency_ns;
  j["link_bandwidth"] = p.link_bandwidth;
  j["prefetch_bytes"] = p.prefetch_bytes;
  j["positional_cache"] = p.positional_cache;
  j["default"] = {{"fixed_ns", p.defaults.fixed_ns},
                  {"bytes_scale", p.defaults.bytes_scale},
                  {"flops_per_ns", p.defaults.flops_per_ns},
                  {"prefetch", p.defaults.prefetch}};
  json kinds = json::object();
  for (int k = 0; k < kNumTaskKinds; ++k) {
    json e = kind_json(p.kinds[k]);
    if (!e.empty()) kinds[std::string(name_of(static_cast<TaskKind>(k)))] = e;
  }
  j["kinds"] = kinds;
  return j.dump(2) + "\n";
}

void save_cost_params(const CostParams& p, const std::string& path) {
  check_cost_params(p, path);
  write_file_safely(path, format_cost_params(p));
}

}  // namespace mpk
