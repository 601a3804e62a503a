// The GPU host runtime. See runtime/gpu/megakernel_runtime.h.
#include "runtime/gpu/megakernel_runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <set>
#include <thread>

#include "codegen/stream_pack.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/rope.h"
#include "runtime/cpu/bf16.h"
#include "runtime/cpu/run_common.h"

namespace mpk {
namespace {

constexpr size_t kAlign = 256;

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// The bf16 bits of a weight stored as bf16, f16 or f32.
std::vector<uint16_t> to_bf16(const WeightTensor& w) {
  const int64_t n = w.num_elements();
  std::vector<uint16_t> out(static_cast<size_t>(n));
  if (w.dtype == DType::kF16) {
    const uint16_t* src = static_cast<const uint16_t*>(w.data);
    for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(f16_to_f32(src[i]));
  } else {
    const float* src = static_cast<const float*>(w.data);
    for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(src[i]);
  }
  return out;
}

class Stream {
 public:
  Stream() { MPK_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class EventPair {
 public:
  EventPair() {
    MPK_CUDA(cudaEventCreate(&start_));
    MPK_CUDA(cudaEventCreate(&stop_));
  }
  ~EventPair() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  cudaEvent_t start() const { return start_; }
  cudaEvent_t stop() const { return stop_; }
  // Waits for stop (polling, so a runaway kernel cannot hang the host past `timeout_s`;
  // `on_poll` runs at every poll) and returns the milliseconds between the events.
  double wait_ms(double timeout_s, const std::function<void()>& on_poll = {}) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      if (on_poll) on_poll();
      const cudaError_t e = cudaEventQuery(stop_);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) cuda_check(e, "waiting for the megakernel");
      if (std::chrono::steady_clock::now() > deadline)
        throw Error("the kernel did not finish within " + std::to_string(timeout_s) +
                    " s (host-side timeout)");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    float ms = 0;
    MPK_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

TpArenaLayout tp_arena_layout(const Module& m) {
  TpArenaLayout l;
  l.bytes = align_up(std::max<size_t>(m.graph.events.size(), 1) * 8);
  const std::vector<bool> symmetric = symmetric_tensors(m);
  l.tensor_offset.assign(symmetric.size(), -1);
  for (size_t t = 0; t < symmetric.size(); ++t) {
    if (!symmetric[t]) continue;
    l.tensor_offset[t] = static_cast<int64_t>(l.bytes);
    l.bytes = align_up(l.bytes + static_cast<size_t>(m.program.tensors[t].num_bytes()));
  }
  return l;
}

int64_t weight_bytes_per_token(const Module& m) {
  std::set<TensorId> seen;
  int64_t bytes = 0;
  for (const Operator& op : m.program.ops) {
    if (op.kind == OpKind::kEmbedding) continue;
    for (TensorId t : op.inputs) {
      const Tensor& tt = m.program.tensor(t);
      if (tt.role == TensorRole::kWeight && seen.insert(t).second) bytes += tt.num_bytes();
    }
  }
  return bytes;
}

struct GpuMegakernel::Impl {
  Module module;
  GpuOptions options;
  GpuInfo info;
  Megakernel kernel;
  CompiledKernel compiled;
  RunTensors run_tensors;
  cudaLibrary_t library = nullptr;
  cudaKernel_t k_mega = nullptr, k_traced = nullptr, k_per_op = nullptr, k_advance = nullptr,
               k_pack = nullptr;
  std::unique_ptr<Stream> stream;

  DeviceBuffer arena;  // every tensor of the program but the stream-only weights
  std::vector<uint64_t> tensor_addr;
  std::vector<bool> stream_only;  // per tensor: a weight only the weight stream reads
  DeviceBuffer d_stream;  // the weight-stream images (codegen/stream_pack.h)
  DeviceBuffer d_tasks, d_qoff, d_wchunks, d_coff, d_tchunks, d_pools, d_pool_counters, d_waits, d_trig, d_counters,
      d_abort, d_error, d_step, d_stopped;
  unsigned long long* counters = nullptr;  // d_counters, or in the rank's symmetric arena
  size_t counter_bytes = 0;
  TaskId publish_task = -1;  // the argmax_reduce task, whose completion streams a step's tokens
  std::vector<int32_t> device_index;  // host descriptor index -> its place in d_tasks
  DeviceBuffer d_op_tasks;
  std::vector<DeviceBuffer> rope_tables;
  std::vector<size_t> op_task_offset;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
  abi::KernelParams graph_params{};
  DeviceBuffer graph_prompt, graph_history;

  ~Impl() {
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (graph) cudaGraphDestroy(graph);
    stream.reset();
    if (library) cudaLibraryUnload(library);
  }

  void load_library() {
    MPK_CUDA(cudaLibraryLoadData(&library, compiled.cubin.data(), nullptr, nullptr, 0, nullptr,
                                 nullptr, 0));
    MPK_CUDA(cudaLibraryGetKernel(&k_mega, library, "mpk_megakernel"));
    MPK_CUDA(cudaLibraryGetKernel(&k_traced, library, "mpk_megakernel_traced"));
    MPK_CUDA(cudaLibraryGetKernel(&k_per_op, library, "mpk_per_op"));
    MPK_CUDA(cudaLibraryGetKernel(&k_advance, library, "mpk_step_advance"));
    MPK_CUDA(cudaLibraryGetKernel(&k_pack, library, "mpk_pack_stream"));
    for (cudaKernel_t k : {k_mega, k_traced, k_per_op}) {
      const void* f = reinterpret_cast<const void*>(k);
      cudaFuncAttributes attr{};
      MPK_CUDA(cudaFuncGetAttributes(&attr, f));
      if (static_cast<int64_t>(attr.sharedSizeBytes) + kernel.dynamic_smem_bytes > info.smem_optin)
        throw Error("megakernel needs " + std::to_string(attr.sharedSizeBytes + kernel.dynamic_smem_bytes) +
                    " bytes of shared memory per block; the GPU allows " + std::to_string(info.smem_optin));
      MPK_CUDA(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(kernel.dynamic_smem_bytes)));
    }
    int blocks = 0;
    MPK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, reinterpret_cast<const void*>(k_mega), block_threads(), kernel.dynamic_smem_bytes));
    if (blocks < 1) throw Error("the megakernel's worker block does not fit on one SM");
    if (kernel.num_workers > info.sm_count * blocks)
      throw Error("the schedule has " + std::to_string(kernel.num_workers) + " workers but " +
                  info.name + " runs only " + std::to_string(info.sm_count * blocks) +
                  " worker blocks at once; schedule for at most " + std::to_string(info.sm_count) +
                  " workers");
  }

  // Every tensor but the weights that only the weight stream reads (no descriptor points
  // at them): those reach the device only to be packed into the stream images
  // (pack_stream), so a model's weights take their bytes once on the GPU, not twice.
  void allocate(const Weights& weights) {
    const Program& p = module.program;
    stream_only.assign(p.tensors.size(), false);
    for (size_t i = 0; i < p.tensors.size(); ++i) stream_only[i] = p.tensors[i].role == TensorRole::kWeight;
    for (const Relocation& r : kernel.relocations)
      if (r.rope_table < 0) stream_only.at(r.tensor) = false;
    std::vector<size_t> offset(p.tensors.size());
    size_t total = 0;
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      offset[i] = total;
      if (!stream_only[i]) total = align_up(total + static_cast<size_t>(p.tensors[i].num_bytes()));
    }
    arena = DeviceBuffer(total, "tensors");
    arena.zero();
    tensor_addr.resize(p.tensors.size());
    for (size_t i = 0; i < p.tensors.size(); ++i) tensor_addr[i] = stream_only[i] ? 0 : arena.address() + offset[i];
    if (options.rank.arena) {  // what the other ranks read lives in the symmetric arena
      const TpArenaLayout layout = tp_arena_layout(module);
      for (size_t i = 0; i < p.tensors.size(); ++i)
        if (layout.tensor_offset[i] >= 0)
          tensor_addr[i] = reinterpret_cast<uint64_t>(options.rank.arena) + static_cast<uint64_t>(layout.tensor_offset[i]);
    }
    check_weights(module, weights);
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      const Tensor& t = p.tensors[i];
      if (t.role != TensorRole::kWeight) continue;
      if (t.dtype != DType::kBF16) throw Error("weight tensor '" + t.name + "' must be bf16 in the program");
      if (!stream_only[i]) upload_weight(arena, offset[i], t, weights.get(t.name));
    }
  }

  static void upload_weight(DeviceBuffer& dst, size_t offset, const Tensor& t, const WeightTensor& w) {
    if (w.dtype == DType::kBF16) {
      dst.upload(w.data, static_cast<size_t>(t.num_bytes()), offset);
    } else {
      const std::vector<uint16_t> conv = to_bf16(w);
      dst.upload(conv.data(), conv.size() * 2, offset);
    }
  }

  int block_threads() const { return kernel.threads + abi::kControlThreads; }

  // Packs every streaming descriptor's chunks into its image on the device; returns the
  // plan (chunk offsets are relative to d_stream). The boxes of the arena's weights go in
  // one launch; a stream-only weight is uploaded into a buffer of its own, packed, and freed.
  StreamPlan pack_stream(const Weights& weights) {
    StreamPlan plan = plan_stream(kernel, module.program);
    if (plan.boxes.empty()) return plan;
    d_stream = DeviceBuffer(plan.bytes, "weight-stream images");
    std::vector<std::vector<const StreamBox*>> by_tensor(module.program.tensors.size());
    std::vector<const StreamBox*> in_arena;
    for (const StreamBox& b : plan.boxes) (stream_only.at(b.tensor) ? by_tensor[b.tensor] : in_arena).push_back(&b);
    pack_boxes(in_arena);
    for (size_t t = 0; t < by_tensor.size(); ++t) {
      if (by_tensor[t].empty()) continue;
      const Tensor& tensor = module.program.tensors[t];
      DeviceBuffer staged(static_cast<size_t>(tensor.num_bytes()), "a weight being packed");
      upload_weight(staged, 0, tensor, weights.get(tensor.name));
      tensor_addr[t] = staged.address();
      pack_boxes(by_tensor[t]);
      tensor_addr[t] = 0;  // freed with `staged`: no descriptor points at it
    }
    return plan;
  }

  void pack_boxes(const std::vector<const StreamBox*>& plan_boxes) {
    if (plan_boxes.empty()) return;
    std::vector<abi::PackBox> boxes;
    boxes.reserve(plan_boxes.size());
    for (const StreamBox* b : plan_boxes) {
      const int64_t K = module.program.tensor(b->tensor).shape[1];
      boxes.push_back({tensor_addr.at(b->tensor) + static_cast<uint64_t>((b->row * K + b->col) * 2),
                       d_stream.address() + b->dst, K * 2, b->rows, b->valid_rows});
    }
    DeviceBuffer d_boxes(boxes.size() * sizeof(abi::PackBox), "weight-stream boxes");
    d_boxes.upload(boxes.data(), d_boxes.bytes());
    const abi::PackBox* ptr = d_boxes.as<const abi::PackBox>();
    int32_t count = static_cast<int32_t>(boxes.size());
    void* args[] = {&ptr, &count};
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((boxes.size() + 7) / 8, 4 * 1024));
    MPK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(k_pack), dim3(blocks), dim3(256), args, 0,
                              stream->get()));
    MPK_CUDA(cudaStreamSynchronize(stream->get()));
  }

  // The task table in device order (every worker's queue in order, then the descriptors
  // no queue names: linear group members, which per-op mode runs), with pointers
  // resolved and chunk ranges set; the chunk lists; the wait and trigger tables.
  void upload_table(const Weights& weights) {
    std::vector<abi::TaskDesc> descs = kernel.tasks;
    for (const std::vector<float>& inv : kernel.rope_inv) {
      const std::vector<float> table = rope_cos_sin_table(inv, kernel.max_seq_len);
      rope_tables.emplace_back(table.size() * 4, "rope table");
      rope_tables.back().upload(table.data(), table.size() * 4);
    }
    for (const Relocation& r : kernel.relocations) {
      descs.at(r.task).ptr[r.slot] = r.rope_table >= 0
                                         ? rope_tables.at(r.rope_table).address()
                                         : tensor_addr.at(r.tensor) + static_cast<uint64_t>(r.byte_offset);
    }
    const StreamPlan plan = pack_stream(weights);
    std::vector<abi::StreamChunk> task_chunks, wchunks;
    for (const ChunkSpan& c : plan.chunks) task_chunks.push_back({d_stream.address() + c.offset, c.bytes, 0});
    std::vector<abi::PoolDesc> pools;
    for (const CoopPool& pool : kernel.pools) {
      const int32_t first = plan.chunk_begin[pool.image];
      pools.push_back({first, pool.unit_chunks, plan.chunk_begin[pool.image + 1] - first, pool.units, pool.shares, {}});
    }
    for (size_t i = 0; i < descs.size(); ++i) {
      const int32_t pool = kernel.stream[i].pool;
      if (pool >= 0) {  // per-op mode: the share's static units (a marker, abi.cuh)
        descs[i].chunk_begin = static_cast<int32_t>(task_chunks.size());
        descs[i].chunk_count = 1;
        const uint64_t share = static_cast<uint64_t>(coop_share(module.graph.tasks.at(descs[i].task)).share);
        task_chunks.push_back({share << 32 | static_cast<uint32_t>(pool), 0, 1});
      } else {
        descs[i].chunk_begin = plan.chunk_begin[i];
        descs[i].chunk_count = plan.chunk_begin[i + 1] - plan.chunk_begin[i];
      }
    }
    std::vector<int32_t> chunk_offsets = {0};
    for (int32_t w = 0; w < kernel.num_workers; ++w) {
      for (const WorkerRecord& r : worker_records(kernel, plan, w))
        wchunks.push_back(r.chunk >= 0 ? task_chunks[r.chunk] : abi::StreamChunk{static_cast<uint32_t>(r.pool), 0, 0});
      chunk_offsets.push_back(static_cast<int32_t>(wchunks.size()));
    }
    std::vector<abi::TaskDesc> ordered;
    device_index.assign(descs.size(), -1);
    for (int32_t d : kernel.queue_items) {
      device_index.at(d) = static_cast<int32_t>(ordered.size());
      ordered.push_back(descs[d]);
    }
    for (size_t d = 0; d < descs.size(); ++d)
      if (device_index[d] < 0) {
        device_index[d] = static_cast<int32_t>(ordered.size());
        ordered.push_back(descs[d]);
      }
    auto up = [](DeviceBuffer& b, const auto& v, const char* what) {
      using T = typename std::decay_t<decltype(v)>::value_type;
      b = DeviceBuffer(std::max<size_t>(v.size(), 1) * sizeof(T), what);
      b.upload(v.data(), v.size() * sizeof(T));
    };
    up(d_tasks, ordered, "task table");
    up(d_qoff, kernel.queue_offsets, "queues");
    up(d_wchunks, wchunks, "worker chunk lists");
    up(d_coff, chunk_offsets, "worker chunk lists");
    up(d_tchunks, task_chunks, "task chunk lists");
    up(d_pools, pools, "cooperative pools");
    d_pool_counters = DeviceBuffer(std::max<size_t>(pools.size(), 1) * 4, "cooperative pool counters");
    up(d_waits, kernel.waits, "wait table");
    up(d_trig, kernel.triggers, "trigger table");
    counter_bytes = std::max<size_t>(kernel.num_events, 1) * 8;
    if (options.rank.arena) {
      counters = reinterpret_cast<unsigned long long*>(static_cast<char*>(options.rank.arena) +
                                                       tp_arena_layout(module).counters);
    } else {
      d_counters = DeviceBuffer(counter_bytes, "event counters");
      counters = d_counters.as<unsigned long long>();
    }
    d_abort = DeviceBuffer(4, "abort flag");
    d_error = DeviceBuffer(sizeof(abi::ErrorRecord), "error record");
    d_step = DeviceBuffer(4, "step counter");
    d_stopped = DeviceBuffer(4, "stop step");
    std::vector<int32_t> op_tasks;
    for (const OpLaunch& l : kernel.op_launches) {
      op_task_offset.push_back(op_tasks.size());
      for (TaskId t : l.tasks) op_tasks.push_back(device_index.at(t));
    }
    up(d_op_tasks, op_tasks, "per-op task lists");
  }

  void check_inputs(const GpuRunOptions& o) const {
    check_run_inputs(run_tensors, o.steps, o.prompt, o.prompt_rows);
    if (o.steps < 1) throw Error("steps must be at least 1");
  }

  abi::KernelParams base_params(const GpuRunOptions& o, const DeviceBuffer& prompt,
                                const DeviceBuffer& history) const {
    abi::KernelParams p{};
    p.tasks = d_tasks.as<const abi::TaskDesc>();
    p.queue_offsets = d_qoff.as<const int32_t>();
    p.worker_chunks = d_wchunks.as<const abi::StreamChunk>();
    p.chunk_offsets = d_coff.as<const int32_t>();
    p.task_chunks = d_tchunks.as<const abi::StreamChunk>();
    p.pools = d_pools.as<const abi::PoolDesc>();
    p.pool_counters = d_pool_counters.as<uint32_t>();
    p.waits = d_waits.as<const abi::WaitEntry>();
    p.triggers = d_trig.as<const int32_t>();
    p.counters = counters;
    p.prompt = prompt.as<const int32_t>();
    p.token_history = history.as<int32_t>();
    p.step_counter = d_step.as<int32_t>();
    p.abort_flag = d_abort.as<uint32_t>();
    p.error = d_error.as<abi::ErrorRecord>();
    p.stopped_at = d_stopped.as<int32_t>();
    p.publish_task = -1;
    p.watchdog_ns = static_cast<uint64_t>(options.watchdog_s * 1e9);
    p.prompt_len = static_cast<int32_t>(prompt_length(o.prompt, o.prompt_rows));
    p.prompt_stride = o.prompt_rows == 1 ? 0 : p.prompt_len;
    p.num_steps = static_cast<int32_t>(o.steps);
    p.num_workers = kernel.num_workers;
    p.batch = kernel.batch;
    p.vocab = kernel.vocab;
    p.ranks = options.rank.ranks;
    p.rank = options.rank.rank;
    for (int q = 0; q < options.rank.ranks && options.rank.arena; ++q) p.peer_delta[q] = options.rank.peer_delta.at(q);
    return p;
  }

  static DeviceBuffer upload_prompt(const std::vector<int64_t>& prompt) {
    std::vector<int32_t> p32(prompt.begin(), prompt.end());
    DeviceBuffer b(p32.size() * 4, "prompt");
    b.upload(p32.data(), p32.size() * 4);
    return b;
  }

  double timeout_s(int64_t steps) const { return 60.0 + 2 * options.watchdog_s + 0.5 * steps; }

  void reset_run_state() {
    MPK_CUDA(cudaMemsetAsync(counters, 0, counter_bytes, stream->get()));
    MPK_CUDA(cudaMemsetAsync(d_pool_counters.get(), 0, d_pool_counters.bytes(), stream->get()));
    MPK_CUDA(cudaMemsetAsync(d_abort.get(), 0, d_abort.bytes(), stream->get()));
    MPK_CUDA(cudaMemsetAsync(d_error.get(), 0, d_error.bytes(), stream->get()));
    MPK_CUDA(cudaMemsetAsync(d_step.get(), 0, d_step.bytes(), stream->get()));
    MPK_CUDA(cudaMemsetAsync(d_stopped.get(), 0xff, d_stopped.bytes(), stream->get()));  // -1
  }

  std::string describe_task(TaskId t) const {
    if (t < 0 || t >= static_cast<TaskId>(module.graph.tasks.size())) return "task " + std::to_string(t);
    const Task& task = module.graph.tasks[t];
    return "task " + std::to_string(t) + " (" + std::string(name_of(task.kind)) + " of " +
           module.program.ops.at(task.op).name + ")";
  }

  void check_watchdog() const {
    abi::ErrorRecord e{};
    d_error.download(&e, sizeof e);
    if (e.flag == 0) return;
    char buf[160];
    std::snprintf(buf, sizeof buf, "waited %.3f s", static_cast<double>(e.waited_ns) * 1e-9);
    // A tensor-parallel rank's error gets its "rank r: " from run_on_ranks (tp_group.h).
    const std::string whose = e.peer > 0 && options.rank.ranks > 1 ? " of rank " + std::to_string(e.peer - 1) : "";
    throw Error("watchdog: worker " + std::to_string(e.worker) + " (SM " + std::to_string(e.sm) + ") " +
                buf + " at step " + std::to_string(e.step) + " on event " + std::to_string(e.event) + whose +
                " (counter " + std::to_string(e.counter) + ", needs " + std::to_string(e.needed) +
                ") before " + describe_task(e.task) + "; the kernel was stopped");
  }

  void collect(const GpuRunOptions& o, const DeviceBuffer& history, const DeviceBuffer* logits_hist,
               GpuRunResult& r) const {
    const int64_t B = kernel.batch, V = kernel.vocab;
    r.steps = o.steps;
    r.batch = B;
    std::vector<int32_t> flat(static_cast<size_t>(o.steps * B));
    history.download(flat.data(), flat.size() * 4);
    r.tokens.assign(static_cast<size_t>(o.steps), std::vector<int32_t>(static_cast<size_t>(B)));
    for (int64_t s = 0; s < o.steps; ++s)
      for (int64_t b = 0; b < B; ++b) r.tokens[s][b] = flat[s * B + b];
    r.logits.resize(static_cast<size_t>(B * V));
    MPK_CUDA(cudaMemcpy(r.logits.data(), reinterpret_cast<const void*>(tensor_addr.at(run_tensors.logits)),
                        r.logits.size() * 4, cudaMemcpyDeviceToHost));
    if (logits_hist) {
      r.logits_history.resize(static_cast<size_t>(o.steps * B * V));
      logits_hist->download(r.logits_history.data(), r.logits_history.size() * 4);
    }
  }

  void build_graph(const abi::KernelParams& params) {
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (graph) cudaGraphDestroy(graph);
    graph_exec = nullptr;
    graph = nullptr;
    graph_params = params;
    cudaStream_t s = stream->get();
    MPK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (size_t i = 0; i < kernel.op_launches.size(); ++i) {
      uint64_t list = d_op_tasks.address() + op_task_offset[i] * 4;
      void* args[] = {&graph_params, &list};
      const cudaError_t e = cudaLaunchKernel(
          reinterpret_cast<const void*>(k_per_op), dim3(static_cast<unsigned>(kernel.op_launches[i].tasks.size())),
          dim3(block_threads()), args, static_cast<size_t>(kernel.dynamic_smem_bytes), s);
      if (e != cudaSuccess) {
        cudaGraph_t broken = nullptr;
        cudaStreamEndCapture(s, &broken);
        if (broken) cudaGraphDestroy(broken);
        cuda_check(e, "cudaLaunchKernel(mpk_per_op) during capture");
      }
    }
    uint64_t step_ptr = d_step.address();
    void* adv_args[] = {&step_ptr};
    MPK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(k_advance), dim3(1), dim3(32), adv_args, 0, s));
    MPK_CUDA(cudaStreamEndCapture(s, &graph));
    MPK_CUDA(cudaGraphInstantiate(&graph_exec, graph, 0));
  }
};

GpuMegakernel::GpuMegakernel(const Module& scheduled, const Weights& weights, const GpuOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& I = *impl_;
  I.module = scheduled;
  I.options = options;
  const GpuRank& rank = options.rank;
  if (rank.ranks != tp_ranks(scheduled))
    throw Error("the module is sharded for " + std::to_string(tp_ranks(scheduled)) + " tensor-parallel ranks, not " +
                std::to_string(rank.ranks) + ": run it on that many GPUs (mpk run --tp)");
  if (rank.ranks > 1 && (!rank.arena || static_cast<int>(rank.peer_delta.size()) != rank.ranks))
    throw Error("a tensor-parallel rank needs its symmetric arena and its peers' addresses");
  I.info = gpu_info();  // every GPU of a group is of one kind
  if (I.info.cc_major != 9 || I.info.cc_minor != 0)
    throw Error("GPU " + I.info.name + " has compute capability " + std::to_string(I.info.cc_major) + "." +
                std::to_string(I.info.cc_minor) + "; the megakernel is built for sm_90a (H100/H200)");
  MPK_CUDA(cudaSetDevice(rank.device));
  I.run_tensors = find_run_tensors(I.module.program);
  for (TaskId t = 0; t < static_cast<TaskId>(I.module.graph.tasks.size()); ++t)
    if (I.module.graph.tasks[t].kind == TaskKind::kArgmaxReduce) I.publish_task = t;
  I.kernel = generate_megakernel(I.module, options.codegen);
  I.compiled = compile_megakernel(I.kernel.source, options.compile);
  I.stream = std::make_unique<Stream>();
  I.load_library();
  I.allocate(weights);
  I.upload_table(weights);
  MPK_CUDA(cudaDeviceSynchronize());
}

GpuMegakernel::~GpuMegakernel() = default;

const Module& GpuMegakernel::module() const { return impl_->module; }
const Megakernel& GpuMegakernel::kernel() const { return impl_->kernel; }
const CompiledKernel& GpuMegakernel::compiled() const { return impl_->compiled; }
const GpuInfo& GpuMegakernel::info() const { return impl_->info; }
int64_t GpuMegakernel::num_launches_per_op() const {
  return static_cast<int64_t>(impl_->kernel.op_launches.size()) + 1;
}

GpuRunResult GpuMegakernel::run(const GpuRunOptions& o) {
  Impl& I = *impl_;
  MPK_CUDA(cudaSetDevice(I.options.rank.device));
  I.check_inputs(o);
  const Megakernel& k = I.kernel;
  DeviceBuffer prompt = Impl::upload_prompt(o.prompt);
  DeviceBuffer history(static_cast<size_t>(o.steps * k.batch) * 4, "token history");
  history.zero();
  DeviceBuffer logits_hist;
  if (o.logits_history)
    logits_hist = DeviceBuffer(static_cast<size_t>(o.steps * k.batch) * k.vocab * 4, "logits history");
  abi::KernelParams p = I.base_params(o, prompt, history);
  p.logits_history = logits_hist.as<float>();

  DeviceBuffer trace, trace_count;
  int64_t capacity = 0;
  if (o.trace) {
    int64_t longest = 0;  // tasks per step of the busiest worker (a group counts its members)
    for (int32_t w = 0; w < k.num_workers; ++w) {
      int64_t n = 0;
      for (int32_t i = k.queue_offsets[w]; i < k.queue_offsets[w + 1]; ++i) {
        n += k.tasks[k.queue_items[i]].members;
      }
      longest = std::max(longest, n);
    }
    capacity = o.trace_capacity > 0 ? o.trace_capacity : std::max<int64_t>(1, o.steps * longest);
    trace = DeviceBuffer(static_cast<size_t>(capacity * k.num_workers) * sizeof(abi::TraceRecord), "trace");
    trace_count = DeviceBuffer(static_cast<size_t>(k.num_workers) * 4, "trace counts");
    trace_count.zero();
    p.trace = trace.as<abi::TraceRecord>();
    p.trace_count = trace_count.as<uint32_t>();
    p.trace_capacity = static_cast<int32_t>(capacity);
  }

  // Streaming: the completion of the argmax_reduce task copies each step's tokens to
  // mapped host memory (runtime/device/publish.cuh), which the host reads while it waits.
  const bool streams = static_cast<bool>(o.on_step) || !o.stop_ids.empty();
  std::unique_ptr<MappedHostBuffer> host_tokens, host_steps;
  DeviceBuffer stop_ids;
  if (streams) {
    if (I.publish_task < 0) throw Error("the module has no argmax_reduce task: its tokens cannot be streamed");
    if (k.batch > 32) throw Error("streaming or stopping a run supports a batch of at most 32 rows");
    host_tokens = std::make_unique<MappedHostBuffer>(static_cast<size_t>(o.steps * k.batch) * 4, "streamed tokens");
    host_steps = std::make_unique<MappedHostBuffer>(4, "streamed step count");
    stop_ids = DeviceBuffer(o.stop_ids.size() * 4, "stop tokens");
    stop_ids.upload(o.stop_ids.data(), o.stop_ids.size() * 4);
    p.host_tokens = host_tokens->device<int32_t>();
    p.host_steps = host_steps->device<uint32_t>();
    p.stop_ids = stop_ids.as<const int32_t>();
    p.stop_count = static_cast<int32_t>(o.stop_ids.size());
    p.first_generated = static_cast<int32_t>(std::clamp<int64_t>(o.first_generated, 0, o.steps));
    p.publish_task = I.publish_task;
  }
  int64_t delivered = 0;
  std::vector<int32_t> row(static_cast<size_t>(k.batch));
  std::exception_ptr sink_error;  // rethrown once the kernel is done with the buffers
  auto deliver = [&] {
    if (!o.on_step || sink_error) return;
    const int64_t ready = *host_steps->host<uint32_t>();
    std::atomic_thread_fence(std::memory_order_acquire);
    try {
      for (; delivered < ready; ++delivered) {
        for (int64_t b = 0; b < k.batch; ++b) row[b] = host_tokens->host<int32_t>()[delivered * k.batch + b];
        o.on_step(delivered, row);
      }
    } catch (...) {
      sink_error = std::current_exception();
    }
  };

  I.reset_run_state();
  cudaStream_t s = I.stream->get();
  if (o.before_launch) {
    MPK_CUDA(cudaStreamSynchronize(s));
    o.before_launch();
  }
  EventPair ev;
  void* args[] = {&p};
  MPK_CUDA(cudaEventRecord(ev.start(), s));
  MPK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(o.trace ? I.k_traced : I.k_mega),
                            dim3(static_cast<unsigned>(k.num_workers)), dim3(I.block_threads()), args,
                            static_cast<size_t>(k.dynamic_smem_bytes), s));
  MPK_CUDA(cudaEventRecord(ev.stop(), s));
  GpuRunResult r;
  r.kernel_ms = ev.wait_ms(I.timeout_s(o.steps), streams ? std::function<void()>(deliver) : nullptr);
  MPK_CUDA(cudaGetLastError());
  I.check_watchdog();
  I.collect(o, history, o.logits_history ? &logits_hist : nullptr, r);
  if (streams) {
    int32_t stopped = -1;
    I.d_stopped.download(&stopped, 4);
    if (stopped >= 0) {
      r.stopped_at = stopped;
      r.steps = stopped + 1;
      r.tokens.resize(static_cast<size_t>(r.steps));
      if (o.logits_history) r.logits_history.resize(static_cast<size_t>(r.steps * k.batch * k.vocab));
    }
    deliver();  // what arrived after the last poll
    if (sink_error) std::rethrow_exception(sink_error);
  }

  if (o.trace) {
    std::vector<uint32_t> counts(static_cast<size_t>(k.num_workers));
    trace_count.download(counts.data(), counts.size() * 4);
    std::vector<abi::TraceRecord> all(static_cast<size_t>(capacity * k.num_workers));
    trace.download(all.data(), all.size() * sizeof(abi::TraceRecord));
    for (int32_t w = 0; w < k.num_workers; ++w) {
      const uint64_t n = counts[w];
      const uint64_t kept = std::min<uint64_t>(n, static_cast<uint64_t>(capacity));
      r.trace_overflow += n - kept;
      for (uint64_t i = 0; i < kept; ++i) r.trace.push_back(all[w * capacity + i]);
    }
  }
  return r;
}

GpuRunResult GpuMegakernel::run_per_op(const GpuRunOptions& o) {
  Impl& I = *impl_;
  if (I.options.rank.ranks > 1) throw Error("the per-op baseline runs one rank; a tensor-parallel run is a megakernel");
  MPK_CUDA(cudaSetDevice(I.options.rank.device));
  I.check_inputs(o);
  const Megakernel& k = I.kernel;
  // The graph bakes in the parameters; rebuild it when the prompt or step count changes.
  const bool rebuild = !I.graph_exec || I.graph_params.num_steps != o.steps ||
                       I.graph_prompt.bytes() != o.prompt.size() * 4 ||
                       I.graph_params.prompt_len != prompt_length(o.prompt, o.prompt_rows);
  std::vector<int32_t> p32(o.prompt.begin(), o.prompt.end());
  if (rebuild) {
    I.graph_prompt = Impl::upload_prompt(o.prompt);
    I.graph_history = DeviceBuffer(static_cast<size_t>(o.steps * k.batch) * 4, "token history");
    I.build_graph(I.base_params(o, I.graph_prompt, I.graph_history));
  } else {
    I.graph_prompt.upload(p32.data(), p32.size() * 4);
  }
  I.graph_history.zero();
  I.reset_run_state();
  EventPair ev;
  cudaStream_t s = I.stream->get();
  MPK_CUDA(cudaEventRecord(ev.start(), s));
  for (int64_t step = 0; step < o.steps; ++step) MPK_CUDA(cudaGraphLaunch(I.graph_exec, s));
  MPK_CUDA(cudaEventRecord(ev.stop(), s));
  GpuRunResult r;
  r.kernel_ms = ev.wait_ms(I.timeout_s(o.steps));
  MPK_CUDA(cudaGetLastError());
  I.collect(o, I.graph_history, nullptr, r);
  return r;
}

double measure_copy_bandwidth(size_t bytes, int reps) {
  DeviceBuffer a(bytes, "bandwidth test"), b(bytes, "bandwidth test");
  MPK_CUDA(cudaMemset(a.get(), 1, bytes));
  MPK_CUDA(cudaMemset(b.get(), 2, bytes));
  Stream s;
  std::vector<double> ms;
  for (int i = 0; i < reps + 2; ++i) {
    EventPair ev;
    MPK_CUDA(cudaEventRecord(ev.start(), s.get()));
    MPK_CUDA(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s.get()));
    MPK_CUDA(cudaEventRecord(ev.stop(), s.get()));
    const double t = ev.wait_ms(60);
    if (i >= 2) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  return 2.0 * static_cast<double>(bytes) / (med * 1e-3);
}

}  // namespace mpk
