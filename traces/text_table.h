// Aligned plain-text tables for reports a person reads: columns whose cells all look
// numeric are right-aligned, the others left-aligned; two spaces between columns.
#pragma once

#include <string>
#include <vector>

namespace mpk {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  // Every line starts with `indent` spaces and ends with '\n'.
  std::string str(int indent = 2) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting into a std::string.
std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace mpk
