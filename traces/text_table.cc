// TextTable layout.
#include "traces/text_table.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace mpk {
namespace {

bool looks_numeric(const std::string& s) {
  if (s.empty()) return true;
  const char c = s[0];
  return (c >= '0' && c <= '9') || ((c == '-' || c == '+' || c == '.') && s.size() > 1);
}

}  // namespace

std::string TextTable::str(int indent) const {
  const size_t cols = header_.size();
  std::vector<size_t> width(cols, 0);
  std::vector<bool> right(cols, true);
  for (size_t c = 0; c < cols; ++c) width[c] = header_[c].size();
  for (const auto& row : rows_)
    for (size_t c = 0; c < cols && c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
      if (!looks_numeric(row[c])) right[c] = false;
    }
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    std::string l(static_cast<size_t>(indent), ' ');
    for (size_t c = 0; c < cols; ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const size_t pad = width[c] - std::min(width[c], cell.size());
      if (right[c]) l += std::string(pad, ' ') + cell;
      else l += cell + (c + 1 < cols ? std::string(pad, ' ') : "");
      if (c + 1 < cols) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header_);
  for (const auto& row : rows_) line(row);
  return out;
}

std::string strf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[512];
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.resize(static_cast<size_t>(n));
  return big;
}

}  // namespace mpk
