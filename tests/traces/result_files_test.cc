// The result files of `mpk experiment` and `mpk tune`: CSV fields quoted where they must
// be, JSON that parses back, and an SVG that is well-formed XML (checked here by a small
// XML reader: every tag closed in order, attributes quoted, text and attributes without
// a raw '<' or stray '&') with one mark per predicted or measured makespan.
#include "traces/result_files.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <vector>

namespace mpk {
namespace {

// Empty when `s` is well-formed XML (one root element, after an optional declaration);
// else what is wrong and where.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  size_t i = 0, roots = 0;
  auto entity_ok = [&](size_t at) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (s.compare(at, std::string(e).size(), e) == 0) return true;
    return false;
  };
  while (i < s.size()) {
    if (s[i] == '&' && !entity_ok(i)) return "stray '&' at " + std::to_string(i);
    if (s[i] != '<') {
      if (open.empty() && !std::isspace(static_cast<unsigned char>(s[i]))) return "text outside the root at " + std::to_string(i);
      ++i;
      continue;
    }
    const size_t end = s.find('>', i);
    if (end == std::string::npos) return "unclosed tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.rfind("?xml", 0) == 0) continue;
    if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "</" + tag.substr(1) + "> closes nothing open";
      open.pop_back();
      continue;
    }
    const bool empty = tag.back() == '/';
    if (empty) tag.pop_back();
    const std::string name = tag.substr(0, tag.find_first_of(" \n"));
    // Attributes: name="value" with the quotes balanced.
    size_t quotes = 0;
    for (char c : tag) quotes += c == '"';
    if (quotes % 2) return "unbalanced quotes in <" + name + ">";
    if (open.empty() && ++roots > 1) return "a second root element <" + name + ">";
    if (!empty) open.push_back(name);
  }
  return open.empty() ? (roots == 1 ? "" : "no root element") : "<" + open.back() + "> never closed";
}

std::vector<ResultRow> rows() {
  ResultRow a, b, c;
  a.label = "1";
  a.group = "llama-3.2-1b";
  a.name = "critical-path";
  a.options = "decompose.tile=32, odd \"quoted\" <value> & more";
  a.pipeline = "decompose{tile=32},infer-deps,assign-sm";
  a.predicted_ns = 1.02e6;
  a.measured_ns = 1.40e6;
  a.note = "default";
  b = a;
  b.label = "2";
  b.name = "wave";
  b.predicted_ns = 0.98e6;
  b.measured_ns = -1;
  b.note = "best";
  c = a;
  c.label = "3";
  c.group = "qwen3-8b";
  c.predicted_ns = -1;
  c.measured_ns = 7.1e6;
  c.note = "failed: deadlock";
  return {a, b, c};
}

TEST(ResultFiles, CsvQuotesWhatItMust) {
  const std::string csv = results_csv(rows());
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "label,group,name,options,predicted_ns,measured_ns,run,note,pipeline");
  EXPECT_NE(csv.find("\"decompose.tile=32, odd \"\"quoted\"\" <value> & more\""), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1020000,1400000,,default,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",980000,,,best,"), std::string::npos) << csv;
}

TEST(ResultFiles, JsonParsesBack) {
  const nlohmann::json j = nlohmann::json::parse(results_json("t", rows()));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["options"], rows()[0].options);
  EXPECT_EQ(j["rows"][1]["measured_ns"], nullptr);
  EXPECT_EQ(j["rows"][2]["predicted_ns"], nullptr);
  EXPECT_EQ(j["rows"][2]["measured_ns"], 7.1e6);
}

TEST(ResultFiles, SvgIsWellFormedWithOneMarkPerValue) {
  const std::string svg = results_svg("tune <llama> & co", rows());
  EXPECT_EQ(xml_problem(svg), "") << svg;
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("ms</title></circle>"), 2u);  // predicted: rows 1 and 2
  EXPECT_EQ(count("ms</title></path>"), 2u);    // measured: rows 1 and 3
  EXPECT_EQ(count("stroke-dasharray"), 1u);  // the default's line
  EXPECT_NE(svg.find("tune &lt;llama&gt; &amp; co"), std::string::npos);
  // The checker itself refuses what is not well-formed.
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg>a & b</svg>"), "");
  EXPECT_NE(xml_problem("<svg x=\"1></svg>"), "");
  EXPECT_EQ(xml_problem(results_svg("empty", {})), "");
}

}  // namespace
}  // namespace mpk
