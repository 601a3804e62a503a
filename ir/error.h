// mpk::Error: the one exception type for bad input and failed invariants.
// Tools catch it at main() and print "mpk: error: <message>" with a non-zero exit.
#pragma once

#include <stdexcept>
#include <string>

namespace mpk {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace mpk
