// Tests of the declared option kinds (passes/pass.h PassOptionInfo): every pass and
// policy option has a kind whose default value it accepts; assign-sm's `policy` is a
// choice over all policies and pinned's `base` over those without a base; the checks
// of option_value_problem agree with what the passes themselves accept or reject.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/error.h"
#include "passes/policies/policy.h"
#include "passes/registry.h"

namespace mpk {
namespace {

const PassOptionInfo& option(const std::vector<PassOptionInfo>& options, const std::string& name) {
  auto it = std::find_if(options.begin(), options.end(),
                         [&](const PassOptionInfo& o) { return o.name == name; });
  if (it == options.end()) throw Error("no option " + name);
  return *it;
}

bool creates(const std::string& pass, const PassOptions& o) {
  try {
    find_pass(pass)->create(o);
    return true;
  } catch (const Error&) {
    return false;
  }
}

void expect_declared(const PassOptionInfo& o, const std::string& where) {
  if (o.kind == OptionKind::kChoice) {
    EXPECT_FALSE(o.choices.empty()) << where << " " << o.name;
  }
  if (!o.default_value.empty()) {
    EXPECT_EQ(option_value_problem(o, o.default_value), "") << where << " " << o.name;
  }
  if (o.min && o.max) {
    EXPECT_LE(*o.min, *o.max) << where << " " << o.name;
  }
}

TEST(OptionInfo, EveryOptionIsDeclaredWithAKindItsDefaultFits) {
  for (const PassInfo& p : all_passes())
    for (const PassOptionInfo& o : p.options) expect_declared(o, p.name);
  for (const PolicyInfo& p : all_policies())
    for (const PassOptionInfo& o : p.options) expect_declared(o, p.name);
  const PassInfo& decompose = *find_pass("decompose");
  for (const PassOptionInfo& o : decompose.options) {
    if (o.name == "coop") {
      EXPECT_EQ(o.kind, OptionKind::kChoice);
      continue;
    }
    EXPECT_EQ(o.kind, OptionKind::kInt) << o.name;
    EXPECT_TRUE(o.accepts_auto) << o.name;
    EXPECT_EQ(o.min, o.name == "coop-unit" ? 8.0 : 1.0) << o.name;  // units are whole row groups
  }
  EXPECT_EQ(option(find_pass("infer-deps")->options, "prune-cross-step").kind, OptionKind::kBool);
  const auto& assign = find_pass("assign-sm")->options;
  EXPECT_EQ(option(assign, "workers").kind, OptionKind::kInt);
  EXPECT_EQ(option(assign, "event-latency-ns").kind, OptionKind::kFloat);
  EXPECT_EQ(option(assign, "slack-scale").kind, OptionKind::kFloat);
  EXPECT_EQ(option(assign, "moves").kind, OptionKind::kString);
}

TEST(OptionInfo, PolicyIsAChoiceOverAllPoliciesAndBaseOverPlainOnes) {
  const PassOptionInfo& policy = option(find_pass("assign-sm")->options, "policy");
  EXPECT_EQ(policy.kind, OptionKind::kChoice);
  std::vector<std::string> names;
  for (const PolicyInfo& p : all_policies()) names.push_back(p.name);
  EXPECT_EQ(policy.choices, names);
  EXPECT_NE(std::find(names.begin(), names.end(), "pinned"), names.end());

  const PolicyInfo& pinned = *find_policy("pinned");
  EXPECT_EQ(pinned.base_option, "base");
  const PassOptionInfo& base = option(pinned.options, "base");
  EXPECT_EQ(base.kind, OptionKind::kChoice);
  std::vector<std::string> plain;  // every policy without a base of its own
  for (const PolicyInfo& p : all_policies())
    if (p.base_option.empty()) plain.push_back(p.name);
  EXPECT_EQ(base.choices, plain);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "pinned"), plain.end());
  EXPECT_NE(std::find(plain.begin(), plain.end(), "critical-path"), plain.end());
  EXPECT_EQ(option(find_pass("assign-sm")->options, "base").choices, base.choices);
}

TEST(OptionInfo, PolicyOptionsFollowTheChosenBase) {
  auto names = [](const std::vector<PassOptionInfo>& options) {
    std::vector<std::string> out;
    for (const PassOptionInfo& o : options) out.push_back(o.name);
    return out;
  };
  const PolicyInfo& pinned = *find_policy("pinned");
  EXPECT_EQ(names(policy_options(pinned, {})),
            (std::vector<std::string>{"base", "moves", "event-latency-ns"}));
  EXPECT_EQ(names(policy_options(pinned, {{"base", "locality"}})),
            (std::vector<std::string>{"base", "moves", "event-latency-ns", "slack-scale"}));
  EXPECT_EQ(names(policy_options(pinned, {{"base", "round-robin"}})),
            (std::vector<std::string>{"base", "moves"}));
  EXPECT_EQ(names(policy_options(*find_policy("locality"), {{"base", "x"}})),
            (std::vector<std::string>{"event-latency-ns", "slack-scale"}));
}

TEST(OptionInfo, ValueChecksAgreeWithThePasses) {
  const PassOptionInfo& tile = option(find_pass("decompose")->options, "tile");
  for (const char* good : {"8", "1", "auto"}) {
    EXPECT_EQ(option_value_problem(tile, good), "") << good;
    EXPECT_TRUE(creates("decompose", {{"tile", good}})) << good;
  }
  for (const char* bad : {"0", "-3", "8.5", "x"}) {
    EXPECT_NE(option_value_problem(tile, bad), "") << bad;
    EXPECT_FALSE(creates("decompose", {{"tile", bad}})) << bad;
  }
  EXPECT_EQ(option_value_problem(tile, "0"), "option 'tile' must be >= 1, got 0");

  const auto& assign = find_pass("assign-sm")->options;
  const struct {
    const char* key;
    const char* value;
    bool ok;
  } cases[] = {{"policy", "locality", true},      {"policy", "fastest", false},
               {"workers", "16", true},           {"workers", "0", false},
               {"event-latency-ns", "0", true},   {"event-latency-ns", "-1", false},
               {"event-latency-ns", "abc", false}, {"event-latency-ns", "nan", false},
               {"event-latency-ns", "inf", false}};
  for (const auto& c : cases) {
    EXPECT_EQ(option_value_problem(option(assign, c.key), c.value).empty(), c.ok)
        << c.key << "=" << c.value;
    PassOptions o = {{c.key, c.value}};
    if (std::string(c.key) == "event-latency-ns") o["policy"] = "critical-path";
    EXPECT_EQ(creates("assign-sm", o), c.ok) << c.key << "=" << c.value;
  }
  std::string all;
  for (const PolicyInfo& p : all_policies()) all += (all.empty() ? "" : ", ") + p.name;
  EXPECT_EQ(option_value_problem(option(assign, "policy"), "fastest"),
            "option 'policy' expects one of " + all + ", got 'fastest'");

  const PassOptionInfo& prune = option(find_pass("infer-deps")->options, "prune-cross-step");
  EXPECT_EQ(option_value_problem(prune, "false"), "");
  EXPECT_NE(option_value_problem(prune, "maybe"), "");
  EXPECT_FALSE(creates("infer-deps", {{"prune-cross-step", "maybe"}}));

  // Whatever the kind, a value must fit in a pipeline's text.
  const PassOptionInfo& moves = option(assign, "moves");
  EXPECT_EQ(option_value_problem(moves, "1>w0@first;2>w0@after:1"), "");
  EXPECT_NE(option_value_problem(moves, "1>w0@first,2>w0@first"), "");
  EXPECT_NE(option_value_problem(moves, "a b"), "");
  EXPECT_NE(option_value_problem(moves, ""), "");
}

}  // namespace
}  // namespace mpk
