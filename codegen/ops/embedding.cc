// codegen, embedding family: task_embedding<COLS, H, B> over every row (runtime/device/
// tasks_embedding.cuh).
#include "codegen/ops/desc_builder.h"

namespace mpk::codegen {

void describe_embedding(DescBuilder& b, TaskId t, TaskDescription& out) {
  using Slot = abi::slots::Embedding;
  const TensorId table = b.input(t, 0), tokens = b.input(t, 1), y = b.output(t, 0);
  const Region& w = b.find(t, b.task(t).writes, y, "output");
  const int64_t c0 = w.dims[1].lo, c1 = w.dims[1].hi, H = b.tensor(y).shape[1];
  b.reloc(t, Slot::kTable, table, c0);
  b.reloc(t, Slot::kTokens, tokens, 0);
  b.reloc(t, Slot::kY, y, c0);
  DescBuilder::set_arg(out.d, Slot::kVocab, b.tensor(table).shape[0]);
  out.call = "task_embedding" + DescBuilder::targs({c1 - c0, H, b.rows});
}

}  // namespace mpk::codegen
