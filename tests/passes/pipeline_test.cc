// Tests of text pipelines: printing a parsed pipeline and parsing it again gives the
// same pipeline, options print sorted, spaces are allowed between tokens, and malformed
// text fails with a message naming the column.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "passes/pipeline.h"
#include "passes/policies/policy.h"

namespace mpk {
namespace {

TEST(Pipeline, DefaultPipelineIsTheFusionsAndTheDefaultPolicy) {
  EXPECT_EQ(kDefaultPipeline, default_pipeline_with(kDefaultPolicy));
  EXPECT_NE(find_policy(kDefaultPolicy), nullptr);
}

TEST(Pipeline, PrintParseRoundTrip) {
  const char* cases[] = {
      "decompose",
      "infer-deps",
      "decompose,infer-deps,assign-sm{policy=critical-path}",
      "decompose{tile=64},infer-deps{prune-cross-step=false},assign-sm{policy=round-robin}",
      "assign-sm{event-latency-ns=250.5,policy=locality,slack-scale=0.25,workers=16}",
      "decompose{argmax-tile=128,attention-splits=4,elementwise-tile=256,lm-head-tile=64,tile=8}",
      "infer-deps,infer-deps,infer-deps",
      "a.b_c-d{k.1=v/x:y}",
  };
  for (const char* text : cases) {
    const Pipeline p = parse_pipeline(text);
    EXPECT_EQ(print_pipeline(p), text);
    EXPECT_EQ(parse_pipeline(print_pipeline(p)), p);
  }
  EXPECT_EQ(parse_pipeline(kDefaultPipeline).size(), 9u);
  EXPECT_EQ(default_pipeline_with("critical-path"), kDefaultPipeline);
  EXPECT_EQ(default_pipeline_with("locality", "decompose{tile=8}"),
            std::string(kDefaultFusions) + ",decompose{tile=8},infer-deps,assign-sm{policy=locality}");
}

TEST(Pipeline, ParsesStructure) {
  const Pipeline p = parse_pipeline("decompose{tile=64},assign-sm{workers=8,policy=locality}");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].pass, "decompose");
  EXPECT_EQ(p[0].options, (PassOptions{{"tile", "64"}}));
  EXPECT_EQ(p[1].pass, "assign-sm");
  EXPECT_EQ(p[1].options, (PassOptions{{"policy", "locality"}, {"workers", "8"}}));
}

TEST(Pipeline, SortsOptionsAndToleratesSpaces) {
  EXPECT_EQ(print_pipeline(parse_pipeline(" assign-sm { workers = 4 , policy = round-robin } ,"
                                          "infer-deps ")),
            "assign-sm{policy=round-robin,workers=4},infer-deps");
}

std::string parse_error(const std::string& text) {
  try {
    parse_pipeline(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Pipeline, ParseErrorsNameTheProblemAndColumn) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"", "empty pipeline"},
      {"   ", "empty pipeline"},
      {"decompose,", "expected a pass name at column 11"},
      {",decompose", "expected a pass name at column 1"},
      {"decompose{", "expected an option name at column 11"},
      {"decompose{}", "empty option list"},
      {"decompose{tile}", "expected '='"},
      {"decompose{tile=}", "expected an option value"},
      {"decompose{tile=8", "expected ','"},
      {"decompose{tile=8,tile=16}", "option 'tile' given twice"},
      {"decompose infer-deps", "expected ','"},
      {"decompose}", "expected ','"},
      {"assign-sm{policy=a=b}", "expected ','"},
  };
  for (const Case& c : cases) {
    const std::string e = parse_error(c.text);
    EXPECT_NE(e.find(c.message), std::string::npos) << "'" << c.text << "' gave: " << e;
    EXPECT_EQ(e.rfind("pipeline: ", 0), 0u) << e;
  }
}

}  // namespace
}  // namespace mpk
