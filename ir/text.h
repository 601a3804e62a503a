// The canonical text form of the IR: printed by --emit=text and golden tests, parsed
// back losslessly (print(parse(print(m))) == print(m)). Grammar in docs/ir.md.
#pragma once

#include <string>
#include <string_view>

#include "ir/module.h"

namespace mpk {

std::string print_module(const Module& m);
// Throws mpk::Error("<source>:<line>:<col>: <what>") on malformed text. Does not verify.
Module parse_module(std::string_view text, const std::string& source);

// A tensor, operator or policy name as the text form writes it: bare when it matches
// [A-Za-z_][A-Za-z0-9_.]*, else double-quoted like a string attribute.
std::string format_name(std::string_view name);

}  // namespace mpk
