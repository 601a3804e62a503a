// The layout cross-check emitted into every generated kernel source.
#include "codegen/kernel_abi.h"

#include <sstream>

namespace mpk {
namespace abi {
namespace {

struct Asserts {
  std::ostringstream os;
  void field(const char* type, const char* name, size_t offset) {
    os << "static_assert(offsetof(mpk::dev::" << type << ", " << name << ") == " << offset
       << ", \"ABI mismatch: " << type << "::" << name << "\");\n";
  }
  void size(const char* type, size_t bytes) {
    os << "static_assert(sizeof(mpk::dev::" << type << ") == " << bytes << ", \"ABI mismatch: sizeof "
       << type << "\");\n";
  }
};

}  // namespace

std::string layout_asserts() {
  Asserts a;
#define MPK_F(T, f) a.field(#T, #f, offsetof(T, f))
  a.os << "static_assert(mpk::dev::kBlockThreads - mpk::dev::kThreads == " << kControlThreads
       << ", \"ABI mismatch: control warps\");\n";
  a.size("TaskDesc", sizeof(TaskDesc));
  MPK_F(TaskDesc, ptr);
  MPK_F(TaskDesc, inst);
  MPK_F(TaskDesc, task);
  MPK_F(TaskDesc, wait_count);
  MPK_F(TaskDesc, wait_begin);
  MPK_F(TaskDesc, trig_count);
  MPK_F(TaskDesc, trig_begin);
  MPK_F(TaskDesc, chunk_begin);
  MPK_F(TaskDesc, chunk_count);
  MPK_F(TaskDesc, arg);
  MPK_F(TaskDesc, trig);
  MPK_F(TaskDesc, wait);
  MPK_F(TaskDesc, members);
  MPK_F(TaskDesc, member);
  a.size("WaitEntry", sizeof(WaitEntry));
  MPK_F(WaitEntry, event);
  MPK_F(WaitEntry, target);
  MPK_F(WaitEntry, distance);
  a.size("StreamChunk", sizeof(StreamChunk));
  MPK_F(StreamChunk, src);
  MPK_F(StreamChunk, bytes);
  MPK_F(StreamChunk, claim);
  a.size("PoolDesc", sizeof(PoolDesc));
  MPK_F(PoolDesc, first_chunk);
  MPK_F(PoolDesc, unit_chunks);
  MPK_F(PoolDesc, total_chunks);
  MPK_F(PoolDesc, units);
  MPK_F(PoolDesc, shares);
  a.size("ErrorRecord", sizeof(ErrorRecord));
  MPK_F(ErrorRecord, flag);
  MPK_F(ErrorRecord, worker);
  MPK_F(ErrorRecord, task);
  MPK_F(ErrorRecord, step);
  MPK_F(ErrorRecord, event);
  MPK_F(ErrorRecord, sm);
  MPK_F(ErrorRecord, counter);
  MPK_F(ErrorRecord, needed);
  MPK_F(ErrorRecord, waited_ns);
  a.size("TraceRecord", sizeof(TraceRecord));
  MPK_F(TraceRecord, task);
  MPK_F(TraceRecord, step);
  MPK_F(TraceRecord, worker);
  MPK_F(TraceRecord, sm);
  MPK_F(TraceRecord, wait_begin_ns);
  MPK_F(TraceRecord, start_ns);
  MPK_F(TraceRecord, end_ns);
  a.size("PackBox", sizeof(PackBox));
  MPK_F(PackBox, src);
  MPK_F(PackBox, dst);
  MPK_F(PackBox, row_stride);
  MPK_F(PackBox, rows);
  MPK_F(PackBox, valid_rows);
  a.size("KernelParams", sizeof(KernelParams));
  MPK_F(KernelParams, tasks);
  MPK_F(KernelParams, queue_offsets);
  MPK_F(KernelParams, worker_chunks);
  MPK_F(KernelParams, chunk_offsets);
  MPK_F(KernelParams, task_chunks);
  MPK_F(KernelParams, pools);
  MPK_F(KernelParams, pool_counters);
  MPK_F(KernelParams, waits);
  MPK_F(KernelParams, triggers);
  MPK_F(KernelParams, counters);
  MPK_F(KernelParams, prompt);
  MPK_F(KernelParams, token_history);
  MPK_F(KernelParams, logits_history);
  MPK_F(KernelParams, step_counter);
  MPK_F(KernelParams, abort_flag);
  MPK_F(KernelParams, error);
  MPK_F(KernelParams, trace);
  MPK_F(KernelParams, trace_count);
  MPK_F(KernelParams, watchdog_ns);
  MPK_F(KernelParams, prompt_len);
  MPK_F(KernelParams, num_steps);
  MPK_F(KernelParams, num_workers);
  MPK_F(KernelParams, trace_capacity);
  MPK_F(KernelParams, batch);
  MPK_F(KernelParams, vocab);
#undef MPK_F
  return a.os.str();
}

}  // namespace abi
}  // namespace mpk
