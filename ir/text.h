// The canonical text form of the IR: printed by --emit=text and golden tests, parsed
// back losslessly (print(parse(print(m))) == print(m)). Grammar in docs/ir.md.
#pragma once

#include <string>
#include <string_view>

#include "ir/module.h"

namespace mpk {

// What print_module leaves out. The defaults print everything: the canonical text. The
// golden tests of the passes print without the two things that pin a build rather than
// the module, the tool version and the machine model's defaults, so that neither a
// version bump nor a new default rewrites their expectations. Parsing either form back
// gives the module (with an empty tool version, and the defaults for the fields left out).
struct PrintOptions {
  bool tool_version = true;      // provenance's `tool=...`
  bool machine_defaults = true;  // machine fields equal to MachineModel{}'s; with none
                                 // left, the whole `machine` line
};

std::string print_module(const Module& m, const PrintOptions& options = {});
// Throws mpk::Error("<source>:<line>:<col>: <what>") on malformed text. Does not verify.
Module parse_module(std::string_view text, const std::string& source);

// A tensor, operator or policy name as the text form writes it: bare when it matches
// [A-Za-z_][A-Za-z0-9_.]*, else double-quoted like a string attribute.
std::string format_name(std::string_view name);

}  // namespace mpk
