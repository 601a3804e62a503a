// CSV, JSON and SVG of result rows.
#include "traces/result_files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "ir/file_io.h"

namespace mpk {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double v) {
  if (v < 0 || !std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n') out += c;  // no control bytes
    }
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A readable axis step: 1, 2 or 5 times a power of ten, about `span / 6`.
double nice_step(double span) {
  const double raw = span / 6;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                    "#17becf", "#8c564b", "#e377c2"};

}  // namespace

std::string results_csv(const std::vector<ResultRow>& rows) {
  std::string out = "label,group,name,options,predicted_ns,measured_ns,run,note,pipeline\n";
  for (const ResultRow& r : rows)
    out += csv_field(r.label) + "," + csv_field(r.group) + "," + csv_field(r.name) + "," +
           csv_field(r.options) + "," + number(r.predicted_ns) + "," + number(r.measured_ns) + "," +
           (r.run > 0 ? std::to_string(r.run) : "") + "," + csv_field(r.note) + "," +
           csv_field(r.pipeline) + "\n";
  return out;
}

std::string results_json(const std::string& title, const std::vector<ResultRow>& rows) {
  nlohmann::json j = {{"title", title}, {"rows", nlohmann::json::array()}};
  for (const ResultRow& r : rows) {
    nlohmann::json row = {{"label", r.label}, {"group", r.group}, {"name", r.name},
                          {"options", r.options}, {"pipeline", r.pipeline}, {"note", r.note}};
    row["predicted_ns"] = r.predicted_ns >= 0 ? nlohmann::json(r.predicted_ns) : nlohmann::json();
    row["measured_ns"] = r.measured_ns >= 0 ? nlohmann::json(r.measured_ns) : nlohmann::json();
    row["run"] = r.run > 0 ? nlohmann::json(r.run) : nlohmann::json();
    j["rows"].push_back(row);
  }
  return j.dump(2) + "\n";
}

std::string results_svg(const std::string& title, const std::vector<ResultRow>& rows) {
  const double left = 70, right = 20, top = 40, bottom = 120, col = std::max(12.0, 640.0 / std::max<size_t>(rows.size(), 1));
  const double width = left + right + col * static_cast<double>(rows.size()), height = 420;
  double lo = 1e300, hi = 0;
  for (const ResultRow& r : rows)
    for (double v : {r.predicted_ns, r.measured_ns})
      if (v >= 0 && std::isfinite(v)) lo = std::min(lo, v * 1e-6), hi = std::max(hi, v * 1e-6);
  if (hi <= 0) lo = 0, hi = 1;
  const double pad = std::max((hi - lo) * 0.1, hi * 0.01);
  lo = std::max(0.0, lo - pad), hi += pad;
  const double step = nice_step(hi - lo);
  lo = std::floor(lo / step) * step;
  const double plot_h = height - top - bottom;
  auto y = [&](double ms) { return top + plot_h * (1 - (ms - lo) / (hi - lo)); };
  auto x = [&](size_t i) { return left + col * (static_cast<double>(i) + 0.5); };
  std::map<std::string, size_t> colour;
  for (const ResultRow& r : rows) colour.emplace(r.group, colour.size());

  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", width) + "\" height=\"" +
       fmt("%.0f", height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s += "<title>" + xml(title) + "</title>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.0f", left) + "\" y=\"20\" font-size=\"14\">" + xml(title) + "</text>\n";
  for (double v = lo; v <= hi + 1e-12; v += step) {
    s += "<line x1=\"" + fmt("%.1f", left) + "\" x2=\"" + fmt("%.1f", width - right) + "\" y1=\"" +
         fmt("%.1f", y(v)) + "\" y2=\"" + fmt("%.1f", y(v)) + "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + fmt("%.1f", left - 6) + "\" y=\"" + fmt("%.1f", y(v) + 4) +
         "\" text-anchor=\"end\">" + fmt("%.3g", v) + "</text>\n";
  }
  s += "<text transform=\"translate(16," + fmt("%.0f", top + plot_h / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">makespan per step (ms)</text>\n";
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].note.find("default") != std::string::npos && rows[i].predicted_ns >= 0) {
      const double v = y(rows[i].predicted_ns * 1e-6);
      s += "<line x1=\"" + fmt("%.1f", left) + "\" x2=\"" + fmt("%.1f", width - right) + "\" y1=\"" +
           fmt("%.1f", v) + "\" y2=\"" + fmt("%.1f", v) + "\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n";
      break;
    }
  for (size_t i = 0; i < rows.size(); ++i) {
    const ResultRow& r = rows[i];
    const char* c = kPalette[colour[r.group] % (sizeof kPalette / sizeof *kPalette)];
    const std::string tip = xml(r.label + " " + r.name + " " + r.options);
    if (r.predicted_ns >= 0 && std::isfinite(r.predicted_ns))
      s += "<circle cx=\"" + fmt("%.1f", x(i)) + "\" cy=\"" + fmt("%.1f", y(r.predicted_ns * 1e-6)) +
           "\" r=\"4\" fill=\"" + c + "\"><title>" + tip + " predicted " +
           fmt("%.4f", r.predicted_ns * 1e-6) + " ms</title></circle>\n";
    if (r.measured_ns >= 0 && std::isfinite(r.measured_ns)) {
      const double cx = x(i), cy = y(r.measured_ns * 1e-6);
      s += "<path d=\"M" + fmt("%.1f", cx) + " " + fmt("%.1f", cy - 5) + " l5 5 l-5 5 l-5 -5 z\" fill=\"none\" stroke=\"" +
           c + "\" stroke-width=\"1.5\"><title>" + tip + " measured " + fmt("%.4f", r.measured_ns * 1e-6) +
           " ms</title></path>\n";
    }
    s += "<text transform=\"translate(" + fmt("%.1f", x(i) + 3) + "," + fmt("%.0f", height - bottom + 8) +
         ") rotate(60)\">" + xml(r.label) + "</text>\n";
  }
  double ly = top;
  for (const auto& [group, i] : colour) {
    if (group.empty()) continue;
    s += "<circle cx=\"" + fmt("%.0f", width - right - 120) + "\" cy=\"" + fmt("%.0f", ly) + "\" r=\"4\" fill=\"" +
         kPalette[i % (sizeof kPalette / sizeof *kPalette)] + "\"/><text x=\"" + fmt("%.0f", width - right - 112) +
         "\" y=\"" + fmt("%.0f", ly + 4) + "\">" + xml(group) + "</text>\n";
    ly += 14;
  }
  s += "<text x=\"" + fmt("%.0f", left) + "\" y=\"" + fmt("%.0f", height - 8) +
       "\">dot: predicted (simulator); diamond: measured (GPU); dashed: the default</text>\n";
  return s + "</svg>\n";
}

std::vector<std::string> write_result_files(const std::string& prefix, const std::string& title,
                                            const std::vector<ResultRow>& rows) {
  const std::vector<std::string> paths = {prefix + ".csv", prefix + ".json", prefix + ".svg"};
  write_file_safely(paths[0], results_csv(rows));
  write_file_safely(paths[1], results_json(title, rows));
  write_file_safely(paths[2], results_svg(title, rows));
  return paths;
}

}  // namespace mpk
