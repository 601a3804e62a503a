// Tests of typed pass options (passes/options.h): defaults are printed from the options
// struct, values are checked against kind and bounds and land in their members, "auto"
// unsets a computed option, enum choices map both ways, and unknown names are refused.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "passes/options.h"

namespace mpk {
namespace {

enum class Mode { kFast, kSlow };

struct Opts {
  bool flag = true;
  int64_t count = 3;
  std::optional<int64_t> tile;
  double scale = 0.5;
  std::optional<double> latency;
  std::string name = "abc";
  std::string pick = "b";
  Mode mode = Mode::kSlow;
};

OptionSchema<Opts> schema() {
  return OptionSchema<Opts>()
      .flag("flag", &Opts::flag, "a flag")
      .integer("count", &Opts::count, "a count", 1, 10)
      .integer("tile", &Opts::tile, "a tile", 1)
      .real("scale", &Opts::scale, "a scale", 0, 1)
      .real("latency", &Opts::latency, "a latency", 0)
      .text("name", &Opts::name, "a name")
      .choice("pick", &Opts::pick, "a pick", {"a", "b"})
      .choice("mode", &Opts::mode, "a mode", {{"fast", Mode::kFast}, {"slow", Mode::kSlow}});
}

std::string parse_error(const PassOptions& o) {
  try {
    schema().parse(o, "p");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OptionSchema, DefaultsComeFromTheStruct) {
  std::map<std::string, std::string> defaults;
  std::map<std::string, OptionKind> kinds;
  const OptionSchema<Opts> s = schema();  // kept alive: the range of a range-for over s.infos()
  for (const PassOptionInfo& o : s.infos()) {
    defaults[o.name] = o.default_value;
    kinds[o.name] = o.kind;
    EXPECT_EQ(o.accepts_auto, o.name == "tile" || o.name == "latency") << o.name;
  }
  EXPECT_EQ(defaults, (std::map<std::string, std::string>{{"flag", "true"},
                                                          {"count", "3"},
                                                          {"tile", ""},
                                                          {"scale", "0.5"},
                                                          {"latency", ""},
                                                          {"name", "abc"},
                                                          {"pick", "b"},
                                                          {"mode", "slow"}}));
  EXPECT_EQ(kinds["count"], OptionKind::kInt);
  EXPECT_EQ(kinds["latency"], OptionKind::kFloat);
  EXPECT_EQ(kinds["mode"], OptionKind::kChoice);
  const Opts o = schema().parse({}, "p");
  EXPECT_TRUE(o.flag);
  EXPECT_EQ(o.count, 3);
  EXPECT_FALSE(o.tile);
  EXPECT_EQ(o.mode, Mode::kSlow);
}

TEST(OptionSchema, ValuesLandInTheirMembers) {
  const Opts o = schema().parse({{"flag", "0"},
                                 {"count", "10"},
                                 {"tile", "64"},
                                 {"scale", "1"},
                                 {"latency", "700.5"},
                                 {"name", "x-y"},
                                 {"pick", "a"},
                                 {"mode", "fast"}},
                                "p");
  EXPECT_FALSE(o.flag);
  EXPECT_EQ(o.count, 10);
  EXPECT_EQ(o.tile, 64);
  EXPECT_EQ(o.scale, 1.0);
  EXPECT_EQ(o.latency, 700.5);
  EXPECT_EQ(o.name, "x-y");
  EXPECT_EQ(o.pick, "a");
  EXPECT_EQ(o.mode, Mode::kFast);
  EXPECT_FALSE(schema().parse({{"tile", "auto"}, {"latency", "auto"}}, "p").tile);
}

TEST(OptionSchema, BadValuesAndNamesAreRefusedNamingPassAndOption) {
  EXPECT_EQ(parse_error({{"count", "11"}}), "pass 'p': option 'count' must be between 1 and 10, got 11");
  EXPECT_EQ(parse_error({{"count", "auto"}}),
            "pass 'p': option 'count' expects an integer, got 'auto'");
  EXPECT_EQ(parse_error({{"tile", "0"}}), "pass 'p': option 'tile' must be >= 1, got 0");
  EXPECT_EQ(parse_error({{"scale", "nan"}}), "pass 'p': option 'scale' expects a finite number, got 'nan'");
  EXPECT_EQ(parse_error({{"flag", "yes"}}), "pass 'p': option 'flag' expects true or false, got 'yes'");
  EXPECT_EQ(parse_error({{"mode", "medium"}}), "pass 'p': option 'mode' expects one of fast, slow, got 'medium'");
  EXPECT_EQ(parse_error({{"colour", "red"}}), "pass 'p': unknown option 'colour'");
}

}  // namespace
}  // namespace mpk
