// Tests of the pinned policy (passes/policies/pinned.h): moves parse and print in one
// canonical form; moves replay on the base policy's lists; a move that no longer applies
// (its anchor moved, its task or worker is gone, it would deadlock) is skipped with its
// reason recorded in Schedule.params; the schedule round-trips through the pipeline
// text, the schedule's own params and the .mpk file (binary and text).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "hand_module.h"
#include "ir/import/import.h"
#include "ir/serialize.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/policies/pinned.h"
#include "passes/policies/policy.h"

namespace mpk {
namespace {

using testing::run_pass;
using Lists = std::vector<std::vector<TaskId>>;

Module with_deps(const std::string& preset) {
  Module m = import_model(preset, ImportOptions{});
  run_pass(m, "decompose");
  run_pass(m, "infer-deps");
  return m;
}

Module scheduled(const Module& base, const PassOptions& options) {
  Module m = base;
  run_pass(m, "assign-sm", options);
  const std::vector<Diagnostic> d = verify_module(m);
  EXPECT_TRUE(d.empty()) << d.front().rule << ": " << d.front().message;
  return m;
}

// Moves t to `worker` right after `after` (-1: first), by hand.
void move_by_hand(Lists& lists, TaskId t, int32_t worker, TaskId after) {
  for (auto& list : lists) list.erase(std::remove(list.begin(), list.end(), t), list.end());
  auto& target = lists[worker];
  auto at = after < 0 ? target.begin() : std::find(target.begin(), target.end(), after) + 1;
  target.insert(at, t);
}

int32_t worker_of(const Lists& lists, TaskId t) {
  for (size_t w = 0; w < lists.size(); ++w)
    if (std::find(lists[w].begin(), lists[w].end(), t) != lists[w].end())
      return static_cast<int32_t>(w);
  return -1;
}

TEST(PinnedMoves, PrintAndParseRoundTrip) {
  const std::vector<PinnedMove> moves = {{12, 3, 40}, {7, 0, -1}, {0, 131, 5}};
  const std::string text = print_moves(moves);
  EXPECT_EQ(text, "12>w3@after:40;7>w0@first;0>w131@after:5");
  EXPECT_EQ(parse_moves(text), moves);
  EXPECT_TRUE(parse_moves("").empty());
  for (const char* bad : {"12w3@first", "12>3@first", "12>w3", "12>w3@last", "x>w3@first",
                          "12>w3@after:", "12>w3@after:-4", "12>w3@first;", "-1>w0@first"}) {
    try {
      parse_moves(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("TASK>wWORKER@first"), std::string::npos) << e.what();
    }
  }
}

TEST(PinnedPolicy, ReplaysMovesOnTheBaseSchedule) {
  const Module base = with_deps("tiny");
  const Module rr = scheduled(base, {{"policy", "round-robin"}, {"workers", "4"}});
  // In task id order (a dependency order), so neither move can deadlock.
  Lists expected = rr.graph.schedule.workers;
  move_by_hand(expected, 13, 2, 10);
  move_by_hand(expected, 1, 3, -1);
  ASSERT_NE(expected, rr.graph.schedule.workers);

  const Module pinned = scheduled(base, {{"policy", "pinned"},
                                         {"base", "round-robin"},
                                         {"workers", "4"},
                                         {"moves", "13>w2@after:10;1>w3@first"}});
  const Schedule& s = pinned.graph.schedule;
  EXPECT_EQ(s.policy, "pinned");
  EXPECT_EQ(s.workers, expected);
  EXPECT_EQ(attr_str(s.params, "base"), "round-robin");
  EXPECT_EQ(attr_str(s.params, "moves"), "13>w2@after:10;1>w3@first");
  EXPECT_EQ(attr_int(s.params, "moves_applied"), 2);
  EXPECT_EQ(attr_int(s.params, "workers"), 4);
  EXPECT_EQ(s.params.count("moves_skipped"), 0u);

  // Without moves, pinned is its base; the base's options pass through.
  const Module cp = scheduled(base, {{"policy", "critical-path"}, {"event-latency-ns", "250"}});
  const Module plain = scheduled(base, {{"policy", "pinned"}, {"event-latency-ns", "250"}});
  EXPECT_EQ(plain.graph.schedule.workers, cp.graph.schedule.workers);
  EXPECT_EQ(attr_float(plain.graph.schedule.params, "event_latency_ns"), 250.0);
  EXPECT_EQ(attr_str(plain.graph.schedule.params, "base"), "critical-path");
}

TEST(PinnedPolicy, SkipsMovesThatNoLongerApplyAndSaysWhy) {
  const Module base = with_deps("tiny");
  // Made on round-robin, replayed on critical-path: the anchor of the first move sits
  // elsewhere now. Pick an anchor worker that critical-path does not put it on.
  const Module cp = scheduled(base, {{"policy", "critical-path"}, {"workers", "4"}});
  const int32_t anchor_worker = worker_of(cp.graph.schedule.workers, 10);
  const int32_t other = (anchor_worker + 1) % 4;
  // A move that deadlocks: a consumer put first on its producer's worker.
  const Event& e = *std::find_if(base.graph.events.begin(), base.graph.events.end(),
                                 [](const Event& ev) { return ev.step_distance == 0; });
  const TaskId producer = e.producers.front(), consumer = e.consumers.front();
  const int32_t producer_worker = worker_of(cp.graph.schedule.workers, producer);
  // A move that still applies: the last task (argmax_reduce, which nothing waits on in
  // its step) to the end of another worker.
  const TaskId last = static_cast<TaskId>(base.graph.tasks.size()) - 1;
  const int32_t to = (worker_of(cp.graph.schedule.workers, last) + 1) % 4;
  const TaskId tail = cp.graph.schedule.workers[to].back();
  const std::string moves = "13>w" + std::to_string(other) + "@after:10;9999>w0@first;" +
                            "13>w7@first;" + std::to_string(consumer) + ">w" +
                            std::to_string(producer_worker) + "@first;" +
                            std::to_string(last) + ">w" + std::to_string(to) + "@after:" +
                            std::to_string(tail);
  const Module pinned = scheduled(base, {{"policy", "pinned"},
                                         {"base", "critical-path"},
                                         {"workers", "4"},
                                         {"moves", moves}});
  const Schedule& s = pinned.graph.schedule;
  EXPECT_EQ(attr_int(s.params, "moves_applied"), 1);
  const std::string skipped = attr_str(s.params, "moves_skipped");
  const std::string w = std::to_string(other);
  EXPECT_NE(skipped.find("move 1 (13>w" + w + "@after:10): anchor task 10 is on worker " +
                         std::to_string(anchor_worker) + ", not on worker " + w),
            std::string::npos) << skipped;
  EXPECT_NE(skipped.find("move 2 (9999>w0@first): task 9999 does not exist"), std::string::npos)
      << skipped;
  EXPECT_NE(skipped.find("move 3 (13>w7@first): worker 7 does not exist"), std::string::npos)
      << skipped;
  EXPECT_NE(skipped.find("move 4 (" + std::to_string(consumer) + ">w"), std::string::npos);
  EXPECT_NE(skipped.find("it can deadlock: task " + std::to_string(consumer) + " -["),
            std::string::npos) << skipped;
  EXPECT_NE(skipped.find("-[event "), std::string::npos) << skipped;
  EXPECT_EQ(skipped.find("move 5"), std::string::npos) << skipped;

  Lists expected = cp.graph.schedule.workers;
  move_by_hand(expected, last, to, tail);
  EXPECT_EQ(s.workers, expected);
}

TEST(PinnedPolicy, WorkerListsNameTheCycleOfARefusedMove) {
  const Module base = with_deps("tiny");
  const Module rr = scheduled(base, {{"policy", "round-robin"}, {"workers", "2"}});
  const TaskGraphIndex g(base.graph);
  WorkerLists lists(g, rr.graph.schedule.workers);
  // Task 0 (embedding) feeds the rest; putting the last task first on task 0's worker
  // makes it wait for work queued behind it.
  const TaskId last = static_cast<TaskId>(base.graph.tasks.size()) - 1;
  const std::string why = lists.apply({last, 0, -1});
  ASSERT_NE(why.find("it can deadlock: task " + std::to_string(last)), std::string::npos) << why;
  EXPECT_NE(why.find("-[event "), std::string::npos) << why;
  EXPECT_EQ(lists.lists(), rr.graph.schedule.workers);  // refused: unchanged
  EXPECT_TRUE(lists.cycle_through(last).empty());
  const auto& first_list = rr.graph.schedule.workers[0];
  const TaskId tail = first_list.back() != last ? first_list.back() : first_list.end()[-2];
  EXPECT_EQ(lists.apply({last, 0, tail}), "");
  EXPECT_EQ(lists.worker_of(last), 0);
  EXPECT_EQ(lists.position_of(last), static_cast<int32_t>(lists.lists()[0].size()) - 1);
}

TEST(PinnedPolicy, RoundTripsThroughPipelineTextParamsAndModuleFiles) {
  const std::string text =
      "decompose,infer-deps,assign-sm{base=round-robin,moves=13>w2@after:10;1>w3@first,"
      "policy=pinned,workers=4}";
  const Pipeline pipeline = parse_pipeline(text);
  EXPECT_EQ(print_pipeline(pipeline), text);
  Module m = import_model("tiny", ImportOptions{});
  PassManager(pipeline).run(m);
  verify_or_throw(m);
  EXPECT_EQ(m.provenance.pipeline, text);

  // The params alone replay it.
  Module again = with_deps("tiny");
  run_pass(again, "assign-sm", replay_options(m.graph.schedule));
  EXPECT_EQ(again.graph.schedule.workers, m.graph.schedule.workers);
  EXPECT_EQ(again.graph.schedule.params, m.graph.schedule.params);

  // The provenance pipeline replays it from the model.
  Module from_source = import_model("tiny", ImportOptions{});
  PassManager(parse_pipeline(m.provenance.pipeline)).run(from_source);
  EXPECT_EQ(from_source.graph.schedule.workers, m.graph.schedule.workers);

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "mpk_pinned_test";
  std::filesystem::create_directories(dir);
  for (Format f : {Format::kBinary, Format::kText}) {
    const std::string path = (dir / (f == Format::kBinary ? "m.mpk" : "m.mpkt")).string();
    save_module(m, path, f);
    const Module loaded = load_module(path);
    EXPECT_EQ(loaded.graph.schedule.policy, "pinned");
    EXPECT_EQ(loaded.graph.schedule.params, m.graph.schedule.params);
    EXPECT_EQ(loaded.graph.schedule.workers, m.graph.schedule.workers);
    EXPECT_EQ(loaded.provenance.pipeline, text);
  }
  std::filesystem::remove_all(dir);
}

TEST(PinnedPolicy, PinnedOptionsAppendMovesToAScheduleOrToItsMoves) {
  const Module base = with_deps("tiny");
  const Module locality =
      scheduled(base, {{"policy", "locality"}, {"workers", "8"}, {"slack-scale", "0.5"}});
  const PassOptions first = pinned_options(locality.graph.schedule, {{5, 1, -1}});
  EXPECT_EQ(first.at("policy"), "pinned");
  EXPECT_EQ(first.at("base"), "locality");
  EXPECT_EQ(first.at("slack-scale"), "0.5");
  EXPECT_EQ(first.at("workers"), "8");
  EXPECT_EQ(first.at("moves"), "5>w1@first");
  const Module once = scheduled(base, first);

  const PassOptions second = pinned_options(once.graph.schedule, {{6, 1, 5}});
  EXPECT_EQ(second.at("base"), "locality");
  EXPECT_EQ(second.at("moves"), "5>w1@first;6>w1@after:5");
  EXPECT_EQ(second.count("moves-applied"), 0u);
  const Module twice = scheduled(base, second);
  Lists expected = once.graph.schedule.workers;
  move_by_hand(expected, 6, 1, 5);
  EXPECT_EQ(twice.graph.schedule.workers, expected);
}

TEST(PinnedPolicy, OptionErrorsNameTheProblem) {
  Module m = with_deps("tiny");
  auto error_of = [&](const PassOptions& o) -> std::string {
    try {
      run_pass(m, "assign-sm", o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({{"policy", "pinned"}, {"base", "pinned"}}).find("without a base"),
            std::string::npos);
  EXPECT_NE(error_of({{"policy", "pinned"}, {"base", "fastest"}}).find("'fastest'"),
            std::string::npos);
  EXPECT_NE(error_of({{"policy", "pinned"}, {"moves", "1>w0"}}).find("option 'moves': move 1"),
            std::string::npos);
  // A base option applies only with a base that takes it.
  EXPECT_NE(error_of({{"policy", "pinned"}, {"base", "round-robin"}, {"slack-scale", "1"}})
                .find("does not apply to policy 'pinned'"),
            std::string::npos);
  EXPECT_EQ(error_of({{"policy", "pinned"}, {"base", "locality"}, {"slack-scale", "1"}}), "");
}

}  // namespace
}  // namespace mpk
