// The pass registry: every pass by name. A pass registers itself from its own file with
// one line, MPK_PASS(its_info_function) (passes/pass.h).
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace mpk {

// Every registered pass, sorted by name.
const std::vector<PassInfo>& all_passes();
// nullptr when unknown.
const PassInfo* find_pass(const std::string& name);

}  // namespace mpk
