// The workers panel's headless model: one row per worker of the current run over a time
// range, with the SM it ran on, its busy share (the union of its executions), its idle
// time by cause and the producers it waited for longest (by operator across layers, the
// critical path's names: "o_proj", "q_proj+k_proj+v_proj"). Rows sort by any column.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "studio/model/trace_model.h"

namespace mpk::studio {

struct BlamedProducer {
  std::string name;     // the producer's operator (a linear group's members), across layers
  int64_t wait_ns = 0;  // time this worker waited for it in the range
};

struct WorkerRow {
  int32_t worker = 0;
  int32_t sm = -1;
  int64_t busy_ns = 0;
  double busy = 0;                   // busy_ns / the range's length
  std::array<int64_t, 4> idle_ns{};  // by BubbleCause, clipped to the range
  std::vector<BlamedProducer> blamed;  // up to 3, longest wait first
};

enum class WorkerColumn : int { kWorker, kSm, kBusy, kWait, kQueueEmpty, kStepTail, kOverhead, kBlamed };
inline constexpr int kNumWorkerColumns = 8;

// The workers panel's state (panel_state<WorkersViewState>): the rows of `model` over
// [t0, t1), rebuilt when the run or the range changes, their order, and where each row
// was drawn in the last frame (by worker; tests click them).
struct WorkersViewState {
  const TraceModel* model = nullptr;
  int64_t t0 = 0, t1 = 0;
  std::vector<WorkerRow> rows;
  WorkerColumn column = WorkerColumn::kWorker;
  bool ascending = true;
  std::vector<float> row_y;  // by worker; -1 when not drawn
  float row_x = 0;
};

// Rows of `m`'s workers over [t0, t1) (t1 <= t0: the whole run), sorted by `column`.
std::vector<WorkerRow> worker_rows(const TraceModel& m, int64_t t0, int64_t t1);
void sort_worker_rows(std::vector<WorkerRow>& rows, WorkerColumn column, bool ascending);

}  // namespace mpk::studio
