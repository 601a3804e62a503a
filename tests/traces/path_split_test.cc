// The critical-path split (`mpk trace path`): per step and per decoder layer on
// simulated runs of a tiny llama, linear groups counted once on a hand-written run, a
// walk that meets a cycle of an edited trace.db, and the errors for bad arguments.
#include "traces/path_split.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>

#include "ir/error.h"
#include "ir/import/import.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "tests/traces/test_graphs.h"
#include "traces/analysis.h"
#include "traces/simulator.h"

namespace mpk {
namespace {

using testing::GraphBuilder;
using testing::grouped_execs;
using testing::grouped_graph;
using testing::TempPath;

// What `mpk run --backend sim --model tiny --steps 4 --trace t.db` writes, with
// `layers` decoder layers.
struct SimRun {
  TempPath path{"path_split.db"};
  int64_t run = 0;
};

std::unique_ptr<SimRun> simulated_tiny(int32_t layers, int32_t steps) {
  ModelConfig c = *find_preset("tiny");
  c.num_layers = layers;
  Module m = build_module(c, ImportOptions{}, "preset:tiny");
  PassManager(parse_pipeline(default_pipeline_with("critical-path"))).run(m);
  auto s = std::make_unique<SimRun>();
  RunInfo info;
  info.kind = "sim";
  info.model = "tiny";
  s->run = write_run(s->path.str(), m, info,
                     simulate(m, CostParams::from_machine(m.machine), steps));
  return s;
}

int64_t sum_of(const PathInstance& in) {
  int64_t ns = 0;
  for (const Segment& s : in.segments) ns += s.ns;
  return ns;
}

// Segments alternate wait, run; each wait leads into the run after it, and each wait
// after the first starts from the run before it: "hop A -> B", "run B", "hop B -> C".
void expect_in_path_order(const PathInstance& in) {
  ASSERT_EQ(in.segments.size(), 2 * static_cast<size_t>(in.nodes));
  std::string previous;
  for (size_t i = 0; i < in.segments.size(); i += 2) {
    const Segment& wait = in.segments[i];
    const Segment& run = in.segments[i + 1];
    ASSERT_NE(wait.kind, SegmentKind::kRun) << wait.label;
    ASSERT_EQ(run.kind, SegmentKind::kRun) << run.label;
    const std::string to = run.label.substr(4);  // after "run "
    const size_t arrow = wait.label.find(" -> ");
    ASSERT_NE(arrow, std::string::npos) << wait.label;
    EXPECT_EQ(wait.label.substr(arrow + 4), to);
    if (i > 0) {
      EXPECT_EQ(wait.label.substr(0, arrow), std::string(name_of(wait.kind)) + " " + previous);
    }
    previous = to;
  }
}

TEST(PathSplit, StepSegmentsSumToTheWalkWithinTheMakespan) {
  const auto sim = simulated_tiny(2, 4);
  TraceReader reader(sim->path.str());
  const PathSplit s = compute_path_split(reader, sim->run, {});
  EXPECT_EQ(s.first_step, 1);
  EXPECT_EQ(s.last_step, 3);
  ASSERT_EQ(s.steps.size(), 3u);
  const std::vector<StepRecord> steps = reader.steps(sim->run);
  for (const PathInstance& in : s.steps) {
    SCOPED_TRACE("step " + std::to_string(in.step));
    EXPECT_GT(in.nodes, 5);
    EXPECT_EQ(in.hops + in.same_sm, in.nodes);  // every node waited for something
    EXPECT_FALSE(in.cycle);
    EXPECT_EQ(sum_of(in), in.length_ns);
    EXPECT_EQ(in.period_ns, steps[in.step].end_ns - steps[in.step].start_ns);
    EXPECT_LE(in.length_ns, in.period_ns);
    EXPECT_GT(in.length_ns, 0);
    expect_in_path_order(in);
    EXPECT_EQ(in.segments.back().label, "run lm_head.argmax_reduce");  // fuse-argmax
    // `mpk trace stats` walks the same path.
    const RunStats stats = compute_stats(reader, sim->run, in.step);
    EXPECT_EQ(stats.path_tasks, in.nodes);
    EXPECT_EQ(stats.path_busy_ns + stats.path_gap_ns, in.length_ns);
  }
  const PathSplit one = compute_path_split(reader, sim->run, {std::make_pair(2, 2), false});
  ASSERT_EQ(one.steps.size(), 1u);
  EXPECT_EQ(one.steps[0].step, 2);
  EXPECT_EQ(one.steps[0].length_ns, s.steps[1].length_ns);
}

TEST(PathSplit, LayersGiveOneInstancePerStepAndLayer) {
  const int32_t layers = 4;
  const auto sim = simulated_tiny(layers, 4);
  TraceReader reader(sim->path.str());
  PathSplitOptions o;
  o.layers = true;
  const PathSplit s = compute_path_split(reader, sim->run, o);
  EXPECT_EQ(s.num_layers, layers);
  ASSERT_EQ(s.layers.size(), 3u * (layers - 1));

  // The last end of each (step, layer), from the executions.
  const Module m = reader.load_graph(sim->run);
  std::map<std::pair<int32_t, int32_t>, int64_t> last_end;
  for (const Execution& x : reader.executions(sim->run)) {
    const int32_t l = m.program.ops[m.graph.tasks[x.task].op].layer;
    if (l < 0) continue;
    int64_t& e = last_end[{x.step, l}];
    e = std::max(e, x.end_ns);
  }
  const std::vector<StepRecord> steps = reader.steps(sim->run);
  double periods = 0;
  size_t i = 0;
  for (int32_t k = 1; k <= 3; ++k) {
    for (int32_t l = 1; l < layers; ++l, ++i) {
      const PathInstance& in = s.layers[i];
      SCOPED_TRACE("step " + std::to_string(k) + " layer " + std::to_string(l));
      EXPECT_EQ(in.step, k);
      EXPECT_EQ(in.layer, l);
      EXPECT_EQ(in.period_ns, last_end[std::make_pair(k, l)] - last_end[std::make_pair(k, l - 1)]);
      EXPECT_EQ(sum_of(in), in.length_ns);
      EXPECT_GT(in.length_ns, 0);
      EXPECT_LE(in.length_ns, in.period_ns);  // it starts at a layer l-1 node's end
      expect_in_path_order(in);
      for (const Segment& seg : in.segments) {
        EXPECT_EQ(seg.label.find(" L"), std::string::npos) << seg.label;  // no layer prefixes
      }
      periods += static_cast<double>(in.period_ns);
    }
    // Layer periods add up to the stretch from layer 0's end to the last layer's end,
    // inside the step.
    const int64_t stretch = last_end[{k, layers - 1}] - last_end[{k, 0}];
    EXPECT_LT(stretch, steps[k].end_ns - steps[k].start_ns);
  }
  EXPECT_NEAR(s.layer_mean.period_ns, periods / static_cast<double>(s.layers.size()), 1e-6);
  double stretches = 0;
  for (int32_t k = 1; k <= 3; ++k) stretches += static_cast<double>(last_end[{k, layers - 1}] - last_end[{k, 0}]);
  EXPECT_NEAR(s.layer_mean.period_ns * (layers - 1), stretches / 3, 1e-6);

  // The mean: one row per label, the means add up to the mean length, in path order
  // (every instance has the same layer structure here).
  EXPECT_EQ(s.layer_mean.instances, 9);
  double sum = 0;
  for (const SegmentMean& seg : s.layer_mean.segments) {
    sum += seg.mean_ns;
    EXPECT_GE(seg.instances, 1);
    EXPECT_LE(seg.instances, 9);
  }
  EXPECT_NEAR(sum, s.layer_mean.length_ns, 1e-6);
  ASSERT_FALSE(s.layer_mean.segments.empty());
  EXPECT_EQ(s.layer_mean.segments.back().label.rfind("run ", 0), 0u);
  for (size_t j = 1; j < s.layer_mean.segments.size(); ++j)
    EXPECT_LE(s.layer_mean.segments[j - 1].position, s.layer_mean.segments[j].position);

  // Outside the layers: the embedding at the step's start, LM head and argmax at its end.
  ASSERT_EQ(s.outside.size(), 3u);
  for (const PathInstance& in : s.outside) {
    EXPECT_EQ(sum_of(in), in.length_ns);
    std::string labels;
    for (const Segment& seg : in.segments) labels += seg.label + "; ";
    for (const char* op : {"run embed", "run lm_head", "run lm_head.argmax_reduce"})
      EXPECT_NE(labels.find(op), std::string::npos) << op << " in " << labels;
  }
}

TEST(PathSplit, MeanOrdersDifferingInstancesByPosition) {
  PathInstance a, b;
  a.length_ns = 100;
  a.segments = {{SegmentKind::kHop, "hop x -> y", 10}, {SegmentKind::kRun, "run y", 90}};
  b.length_ns = 100;
  b.segments = {{SegmentKind::kSameSm, "same-SM gap w -> y", 30},
                {SegmentKind::kRun, "run y", 40},
                {SegmentKind::kSameSm, "same-SM gap y -> y", 0},
                {SegmentKind::kRun, "run y", 30}};
  const PathMean mean = mean_path({a, b});
  ASSERT_EQ(mean.segments.size(), 4u);
  EXPECT_EQ(mean.segments[0].label, "hop x -> y");
  EXPECT_EQ(mean.segments[0].instances, 1);
  EXPECT_DOUBLE_EQ(mean.segments[0].mean_ns, 5);
  EXPECT_EQ(mean.segments[1].label, "same-SM gap w -> y");
  EXPECT_EQ(mean.segments[2].label, "run y");  // run y: positions 0.1 and 0.3
  EXPECT_EQ(mean.segments[2].instances, 2);
  EXPECT_DOUBLE_EQ(mean.segments[2].mean_ns, 80);  // (90 + 40 + 30) / 2
  EXPECT_EQ(mean.segments[3].label, "same-SM gap y -> y");
  EXPECT_DOUBLE_EQ(mean.length_ns, 100);
}

// The text with runs of spaces squeezed to one.
std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

std::vector<std::pair<std::string, int64_t>> segments_of(const PathInstance& in) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const Segment& s : in.segments) out.push_back({s.label, s.ns});
  return out;
}

TEST(PathSplit, LinearGroupsCountOnceUnderBothNames) {
  TempPath db("path_grouped.db");
  const int64_t run = write_run(db.str(), grouped_graph(), RunInfo{}, grouped_execs());
  TraceReader reader(db.str());
  const PathSplit s = compute_path_split(reader, run, {});
  ASSERT_EQ(s.steps.size(), 1u);  // one step: step 0
  const PathInstance& in = s.steps[0];
  EXPECT_EQ(in.nodes, 6);
  EXPECT_EQ(in.length_ns, 800);
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"start -> L0.input_norm", 0},
      {"run L0.input_norm", 100},
      {"hop L0.input_norm -> L0.q_proj+L0.k_proj", 10},
      {"run L0.q_proj+L0.k_proj", 190},
      {"hop L0.q_proj+L0.k_proj -> L0.o_proj", 10},
      {"run L0.o_proj", 90},
      {"hop L0.o_proj -> L1.input_norm", 5},
      {"run L1.input_norm", 45},
      {"hop L1.input_norm -> L1.q_proj+L1.k_proj", 10},
      {"run L1.q_proj+L1.k_proj", 240},
      {"hop L1.q_proj+L1.k_proj -> L1.o_proj", 20},
      {"run L1.o_proj", 80}};
  EXPECT_EQ(segments_of(in), want);

  PathSplitOptions o;
  o.layers = true;
  const PathSplit l = compute_path_split(reader, run, o);
  ASSERT_EQ(l.layers.size(), 1u);
  EXPECT_EQ(l.layers[0].period_ns, 400);
  EXPECT_EQ(l.layers[0].length_ns, 400);
  const std::vector<std::pair<std::string, int64_t>> layer = {
      {"hop o_proj -> input_norm", 5},  {"run input_norm", 45},
      {"hop input_norm -> q_proj+k_proj", 10}, {"run q_proj+k_proj", 240},
      {"hop q_proj+k_proj -> o_proj", 20},     {"run o_proj", 80}};
  EXPECT_EQ(segments_of(l.layers[0]), layer);
  ASSERT_EQ(l.outside.size(), 1u);
  EXPECT_TRUE(l.outside[0].segments.empty());  // no operators outside the layers

  const RunStats stats = compute_stats(reader, run, 0);
  EXPECT_EQ(stats.path_tasks, 6);
  EXPECT_EQ(stats.path_busy_ns, 100 + 190 + 90 + 45 + 240 + 80);
  ASSERT_EQ(stats.path.size(), 6u);
  EXPECT_EQ(stats.path[1].name, "L0.q_proj+L0.k_proj");
  EXPECT_EQ(stats.path[1].tasks, 1);

  const std::string text = squeeze(format_path_split(s, 0));
  EXPECT_NE(text.find("9 run L1.q_proj+L1.k_proj 0.24 30.0 %"), std::string::npos) << text;
  EXPECT_NE(text.find("6 nodes: 5 hops, 0 same-SM gaps"), std::string::npos) << text;
  const std::string top = squeeze(format_path_split(s, 2));
  EXPECT_NE(top.find(" 3 run L0.q_proj+L0.k_proj 0.19 23.8 %\n 9 run L1.q_proj+L1.k_proj 0.24 30.0 %\n"
                     " (10 shorter segments) 0.37 "),
            std::string::npos) << top;
  const std::string csv = format_path_split_csv(l, 0);
  EXPECT_EQ(csv.rfind("section,step,position,kind,segment,us,share,instances,of\n", 0), 0u) << csv;
  for (const char* row : {"\nlayer,,3,run,run q_proj+k_proj,0.24,60.00,1,1\n",
                          "\nlayer,,,total,total,0.40,100.00,,1\n", "\nlayer,,,period,layer period,0.40,,,1\n"})
    EXPECT_NE(csv.find(row), std::string::npos) << row << csv;
}

void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// A task that only the next step waits for (as a kv_append after one-split attention
// tasks) may end after the rest of its layer: the layer still ends at o_proj.
TEST(PathSplit, ATaskFeedingOnlyTheNextStepDoesNotEndItsLayer) {
  GraphBuilder g(2);
  std::vector<TaskId> t;
  for (int l = 0; l < 2; ++l)
    for (const char* name : {"input_norm", "q_proj", "k_proj", "o_proj"})
      t.push_back(g.task(g.op("L" + std::to_string(l) + "." + name, OpKind::kLinear, l), 64));
  const TaskId append = g.task(g.op("L1.append", OpKind::kLinear, 1), 64);
  for (int l = 0; l < 2; ++l) {
    g.event({t[4 * l]}, {t[4 * l + 1], t[4 * l + 2]});
    g.event({t[4 * l + 1], t[4 * l + 2]}, {t[4 * l + 3]});
  }
  g.event({t[3]}, {t[4]});
  g.event({t[5]}, {append});
  g.event({append}, {t[4]}, 1);  // the next step's layer 1 waits for it
  const Module m = g.schedule({{t[0], t[3], t[4], t[7], append}, {t[1], t[2], t[5], t[6]}});
  std::vector<Execution> execs = grouped_execs();
  execs.push_back({append, 0, 0, 0, 800, 800, 950});
  TempPath db("path_append.db");
  const int64_t run = write_run(db.str(), m, RunInfo{}, execs);
  TraceReader reader(db.str());
  PathSplitOptions o;
  o.layers = true;
  const PathSplit s = compute_path_split(reader, run, o);
  ASSERT_EQ(s.layers.size(), 1u);
  EXPECT_EQ(s.layers[0].period_ns, 400);  // o_proj's end (800) minus layer 0's (400)
  ASSERT_FALSE(s.layers[0].segments.empty());
  EXPECT_EQ(s.layers[0].segments.back().label, "run o_proj");
}

TEST(PathSplit, ABlameCycleInAnEditedTraceEnds) {
  TempPath db("path_cycle.db");
  const int64_t run = write_run(db.str(), grouped_graph(), RunInfo{}, grouped_execs());
  // L0.o_proj now runs after L1.input_norm on worker 0: the norm waits for it (its
  // producer ends last) and it waits for the norm (the task before it on its SM).
  exec_sql(db.str(), "UPDATE execution SET start_ns = 500, end_ns = 600 WHERE task = 3");
  TraceReader reader(db.str());
  const PathSplit s = compute_path_split(reader, run, {});
  ASSERT_EQ(s.steps.size(), 1u);
  const PathInstance& in = s.steps[0];
  EXPECT_TRUE(in.cycle);
  EXPECT_EQ(in.nodes, 4);  // L0.o_proj, L1.input_norm, the L1 group, L1.o_proj
  EXPECT_EQ(sum_of(in), in.length_ns);
  EXPECT_LE(in.length_ns, in.period_ns);
  PathSplitOptions o;
  o.layers = true;
  EXPECT_EQ(compute_path_split(reader, run, o).layers.size(), 1u);
  EXPECT_EQ(compute_stats(reader, run, 0).path_tasks, 4);
  EXPECT_NE(format_path_split(s, 0).find("stopped at a cycle"), std::string::npos);
}

void expect_error(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(PathSplit, BadArgumentsNameTheProblem) {
  TempPath db("path_bad.db");
  const int64_t run = write_run(db.str(), grouped_graph(), RunInfo{}, grouped_execs());
  TraceReader reader(db.str());
  expect_error([&] { compute_path_split(reader, 99, {}); }, "no run 99");
  expect_error([&] { compute_path_split(reader, run, {std::make_pair(-1, -1), false}); },
               "has no step -1 (steps 0..0)");
  expect_error([&] { compute_path_split(reader, run, {std::make_pair(0, 3), false}); },
               "has no step 3 (steps 0..0)");
  GraphBuilder g(1);
  const TaskId only = g.task(g.op("L0.q_proj", OpKind::kLinear, 0), 64);
  TempPath one("path_one_layer.db");
  const int64_t r1 = write_run(one.str(), g.schedule({{only}}), RunInfo{}, {{only, 0, 0, 0, 0, 0, 10}});
  TraceReader single(one.str());
  expect_error([&] { compute_path_split(single, r1, {std::nullopt, true}); },
               "needs at least two decoder layers");
}

}  // namespace
}  // namespace mpk
