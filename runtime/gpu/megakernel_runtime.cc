// The GPU host runtime. See runtime/gpu/megakernel_runtime.h.
#include "runtime/gpu/megakernel_runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <set>

#include "codegen/stream_pack.h"
#include "ir/ops/tensor_parallel.h"
#include "ir/rope.h"
#include "ir/row_positions.h"
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

// One launch from its preparation to its results. The buffers the kernel uses live here
// until it has ended: when an error cuts a run short before its finish (the prefill of a
// run_prefilled failed, say), the destructor waits for the kernel before freeing them.
struct PendingRun {
  GpuRunOptions o;     // the launch's (a prefill's: first_step 0, steps its chunk steps)
  int64_t steps = 0;   // the launch's steps
  abi::KernelParams p{};
  DeviceBuffer prompt, history, logits_hist, trace, trace_count, stop_ids;
  int64_t capacity = 0;  // trace records per worker
  bool streams = false;  // the kernel publishes each step's tokens to host_tokens
  std::unique_ptr<MappedHostBuffer> host_tokens, host_steps;
  EventPair ev;
  bool launched = false, waited = false;
  bool saw_token = false;  // the host has seen a published step, at first_token
  std::chrono::steady_clock::time_point first_token;

  ~PendingRun() {
    if (launched && !waited) cudaEventSynchronize(ev.stop());
  }
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
  std::shared_ptr<Stream> stream;  // a prefill chunk's is its decode megakernel's
  bool chunk_module = false;       // a prefill chunk (attr chunk): no argmax, runs by prefill()
  const Impl* shares = nullptr;    // a prefill chunk's decode megakernel, whose caches and weights it uses

  DeviceBuffer arena;  // every tensor of the program but the stream-only weights
  TpArenaLayout tp_layout;  // a tensor-parallel rank's symmetric arena (options.rank.arena)
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

  // Everything but the first launch: the megakernel generated and compiled (or loaded),
  // the tensors allocated (a prefill chunk's caches and device weights are `decode`'s),
  // the weights uploaded and packed, the table uploaded.
  void build(const Module& scheduled, const Weights& weights, const GpuOptions& opts, const Impl* decode) {
    module = scheduled;
    options = opts;
    shares = decode;
    chunk_module = is_prefill_chunk(module);
    const GpuRank& rank = options.rank;
    if (rank.ranks != tp_ranks(module))
      throw Error("the module is sharded for " + std::to_string(tp_ranks(module)) + " tensor-parallel ranks, not " +
                  std::to_string(rank.ranks) + ": run it on that many GPUs (mpk run --tp)");
    if (rank.ranks > 1 && (!rank.arena || static_cast<int>(rank.peer_delta.size()) != rank.ranks))
      throw Error("a tensor-parallel rank needs its symmetric arena and its peers' addresses");
    if (rank.arena) tp_layout = tp_arena_layout(module);
    info = gpu_info();  // every GPU of a group is of one kind
    if (info.cc_major != 9 || info.cc_minor != 0)
      throw Error("GPU " + info.name + " has compute capability " + std::to_string(info.cc_major) + "." +
                  std::to_string(info.cc_minor) + "; the megakernel is built for sm_90a (H100/H200)");
    MPK_CUDA(cudaSetDevice(rank.device));
    run_tensors = find_run_tensors(module.program, !chunk_module);
    run_tensors.batch /= chunk_rows(module);  // sequences: a prefill chunk's rows are batch x chunk
    for (TaskId t = 0; t < static_cast<TaskId>(module.graph.tasks.size()); ++t)
      if (module.graph.tasks[t].kind == TaskKind::kArgmaxReduce) publish_task = t;
    kernel = generate_megakernel(module, options.codegen);
    compiled = compile_megakernel(kernel.source, options.compile);
    stream = decode ? decode->stream : std::make_shared<Stream>();
    load_library();
    allocate(weights);
    upload_table(weights);
    MPK_CUDA(cudaDeviceSynchronize());
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
  // (pack_stream), so a model's weights take their bytes once on the GPU, not twice. A
  // prefill chunk allocates nothing for what it shares with its decode megakernel.
  void allocate(const Weights& weights) {
    const Program& p = module.program;
    stream_only.assign(p.tensors.size(), false);
    for (size_t i = 0; i < p.tensors.size(); ++i) stream_only[i] = p.tensors[i].role == TensorRole::kWeight;
    for (const Relocation& r : kernel.relocations)
      if (r.rope_table < 0) stream_only.at(r.tensor) = false;
    const std::vector<uint64_t> shared = shared_addresses();
    for (size_t i = 0; i < p.tensors.size(); ++i)
      if (shared[i]) stream_only[i] = false;  // packed from decode's copy, not from the host's
    std::vector<size_t> offset(p.tensors.size());
    size_t total = 0;
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      offset[i] = total;
      if (!stream_only[i] && !shared[i]) total = align_up(total + static_cast<size_t>(p.tensors[i].num_bytes()));
    }
    arena = DeviceBuffer(total, "tensors");
    arena.zero();
    tensor_addr.resize(p.tensors.size());
    for (size_t i = 0; i < p.tensors.size(); ++i)
      tensor_addr[i] = shared[i] ? shared[i] : stream_only[i] ? 0 : arena.address() + offset[i];
    if (options.rank.arena) {  // what the other ranks read lives in the symmetric arena
      for (size_t i = 0; i < p.tensors.size(); ++i)
        if (tp_layout.tensor_offset[i] >= 0)
          tensor_addr[i] = reinterpret_cast<uint64_t>(options.rank.arena) + static_cast<uint64_t>(tp_layout.tensor_offset[i]);
    }
    check_weights(module, weights);
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      const Tensor& t = p.tensors[i];
      if (t.role != TensorRole::kWeight) continue;
      if (t.dtype != DType::kBF16) throw Error("weight tensor '" + t.name + "' must be bf16 in the program");
      if (!stream_only[i] && !shared[i]) upload_weight(arena, offset[i], t, weights.get(t.name));
    }
  }

  // A prefill chunk's tensors that are its decode megakernel's (per tensor, 0 for none):
  // the KV caches, and the weights decode keeps on the device, by name, shape and dtype.
  std::vector<uint64_t> shared_addresses() const {
    const Program& p = module.program;
    std::vector<uint64_t> addr(p.tensors.size(), 0);
    if (!shares) return addr;
    const Program& from = shares->module.program;
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      const Tensor& tt = p.tensors[t];
      if (tt.role != TensorRole::kWeight && tt.role != TensorRole::kKvCache) continue;
      const TensorId f = from.find_tensor(tt.name);
      if (f >= 0 && from.tensors[f].role == tt.role && from.tensors[f].shape == tt.shape &&
          from.tensors[f].dtype == tt.dtype)
        addr[t] = shares->tensor_addr.at(f);  // 0: a weight that decode's stream alone holds
      else if (tt.role == TensorRole::kKvCache)
        throw Error("the prefill chunk's KV cache '" + tt.name +
                    "' is not the decode megakernel's (no tensor of that name, shape and dtype)");
    }
    return addr;
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
                                                       tp_layout.counters);
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
    if (o.first_step < 0 || o.first_step >= o.steps)
      throw Error("the first step " + std::to_string(o.first_step) + " is not a step of the run (0 to " +
                  std::to_string(o.steps - 1) + ")");
  }

  // The parameters of a launch of o.steps - o.first_step steps from o.first_step.
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
    p.num_steps = static_cast<int32_t>(o.steps - o.first_step);
    p.first_step = static_cast<int32_t>(o.first_step);
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

  // The error record's step counts the launch's steps: the message names the run's step.
  void check_watchdog(int64_t first_step) const {
    abi::ErrorRecord e{};
    d_error.download(&e, sizeof e);
    if (e.flag == 0) return;
    char buf[160];
    std::snprintf(buf, sizeof buf, "waited %.3f s", static_cast<double>(e.waited_ns) * 1e-9);
    // A tensor-parallel rank's error gets its "rank r: " from run_on_ranks (tp_group.h).
    const std::string whose = e.peer > 0 && options.rank.ranks > 1 ? " of rank " + std::to_string(e.peer - 1) : "";
    throw Error("watchdog: worker " + std::to_string(e.worker) + " (SM " + std::to_string(e.sm) + ") " +
                buf + " at step " + std::to_string(first_step + e.step) + " on event " + std::to_string(e.event) +
                whose + " (counter " + std::to_string(e.counter) + ", needs " + std::to_string(e.needed) +
                ") before " + describe_task(e.task) + "; the kernel was stopped");
  }

  // The tokens (-1 before `first`), the last step's logits and the logits history of a
  // launch of `steps` steps from step `first`. A prefill chunk has none.
  void collect(int64_t first, int64_t steps, const DeviceBuffer& history, const DeviceBuffer* logits_hist,
               GpuRunResult& r) const {
    const int64_t B = kernel.batch, V = kernel.vocab;
    r.first_step = first;
    r.steps = first + steps;
    r.batch = B;
    if (chunk_module) return;
    std::vector<int32_t> flat(static_cast<size_t>(steps * B));
    history.download(flat.data(), flat.size() * 4);
    r.tokens.assign(static_cast<size_t>(first + steps), std::vector<int32_t>(static_cast<size_t>(B), -1));
    for (int64_t s = 0; s < steps; ++s)
      for (int64_t b = 0; b < B; ++b) r.tokens[first + s][b] = flat[s * B + b];
    r.logits.resize(static_cast<size_t>(B * V));
    MPK_CUDA(cudaMemcpy(r.logits.data(), reinterpret_cast<const void*>(tensor_addr.at(run_tensors.logits)),
                        r.logits.size() * 4, cudaMemcpyDeviceToHost));
    if (logits_hist) {
      r.logits_history.resize(static_cast<size_t>(steps * B * V));
      logits_hist->download(r.logits_history.data(), r.logits_history.size() * 4);
    }
  }

  // A launch's buffers, parameters and run state, ready to launch: a decode of o.steps -
  // o.first_step steps, or a prefill chunk's ceil(E / C) steps over the first E = min(P -
  // 1, o.steps) positions of the prompt. `watch`: publish each step's tokens to the host
  // even without on_step or stop ids (the time to the first token).
  std::unique_ptr<PendingRun> prepare(const GpuRunOptions& o, bool watch) {
    auto r = std::make_unique<PendingRun>();
    r->o = o;
    const Megakernel& k = kernel;
    int64_t end = 0;  // a prefill's E
    if (chunk_module) {
      end = prefill_end(prompt_length(o.prompt, o.prompt_rows), o.steps);
      check_run_inputs(run_tensors, end, o.prompt, o.prompt_rows);
      r->o.first_step = 0;
      r->o.steps = prefill_steps(end, k.chunk);
    } else {
      check_inputs(o);
    }
    r->steps = r->o.steps - r->o.first_step;
    r->prompt = upload_prompt(o.prompt);
    if (!chunk_module) {
      r->history = DeviceBuffer(static_cast<size_t>(r->steps * k.batch) * 4, "token history");
      r->history.zero();
      if (o.logits_history)
        r->logits_hist = DeviceBuffer(static_cast<size_t>(r->steps * k.batch) * k.vocab * 4, "logits history");
    }
    abi::KernelParams& p = r->p;
    p = base_params(r->o, r->prompt, r->history);
    p.end = static_cast<int32_t>(end);
    p.logits_history = r->logits_hist.as<float>();
    if (o.trace) {
      int64_t longest = 0;  // tasks per step of the busiest worker (a group counts its members)
      for (int32_t w = 0; w < k.num_workers; ++w) {
        int64_t n = 0;
        for (int32_t i = k.queue_offsets[w]; i < k.queue_offsets[w + 1]; ++i) n += k.tasks[k.queue_items[i]].members;
        longest = std::max(longest, n);
      }
      r->capacity = o.trace_capacity > 0 ? o.trace_capacity : std::max<int64_t>(1, r->steps * longest);
      r->trace = DeviceBuffer(static_cast<size_t>(r->capacity * k.num_workers) * sizeof(abi::TraceRecord), "trace");
      r->trace_count = DeviceBuffer(static_cast<size_t>(k.num_workers) * 4, "trace counts");
      r->trace_count.zero();
      p.trace = r->trace.as<abi::TraceRecord>();
      p.trace_count = r->trace_count.as<uint32_t>();
      p.trace_capacity = static_cast<int32_t>(r->capacity);
    }
    // Streaming: the completion of the argmax_reduce task copies each step's tokens to
    // mapped host memory (runtime/device/publish.cuh), which the host reads while it waits.
    r->streams = !chunk_module && (static_cast<bool>(o.on_step) || !o.stop_ids.empty() || watch);
    if (r->streams) {
      if (publish_task < 0) throw Error("the module has no argmax_reduce task: its tokens cannot be streamed");
      if (k.batch > 32) throw Error("streaming or stopping a run supports a batch of at most 32 rows");
      r->host_tokens = std::make_unique<MappedHostBuffer>(static_cast<size_t>(r->steps * k.batch) * 4, "streamed tokens");
      r->host_steps = std::make_unique<MappedHostBuffer>(4, "streamed step count");
      r->stop_ids = DeviceBuffer(o.stop_ids.size() * 4, "stop tokens");
      r->stop_ids.upload(o.stop_ids.data(), o.stop_ids.size() * 4);
      p.host_tokens = r->host_tokens->device<int32_t>();
      p.host_steps = r->host_steps->device<uint32_t>();
      p.stop_ids = r->stop_ids.as<const int32_t>();
      p.stop_count = static_cast<int32_t>(o.stop_ids.size());
      p.first_generated = static_cast<int32_t>(std::clamp<int64_t>(o.first_generated - o.first_step, 0, r->steps));
      p.publish_task = publish_task;
    }
    reset_run_state();
    return r;
  }

  void launch(PendingRun& r) {
    cudaStream_t s = stream->get();
    if (r.o.before_launch) {
      MPK_CUDA(cudaStreamSynchronize(s));
      r.o.before_launch();
    }
    void* args[] = {&r.p};
    MPK_CUDA(cudaEventRecord(r.ev.start(), s));
    MPK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(r.o.trace ? k_traced : k_mega),
                              dim3(static_cast<unsigned>(kernel.num_workers)), dim3(block_threads()), args,
                              static_cast<size_t>(kernel.dynamic_smem_bytes), s));
    MPK_CUDA(cudaEventRecord(r.ev.stop(), s));
    r.launched = true;
  }

  // Waits for the launch (handing each streamed step to on_step meanwhile) and collects
  // its results.
  GpuRunResult finish(PendingRun& r) {
    const Megakernel& k = kernel;
    r.waited = true;  // from here on, an error leaves the kernel to the host's own timeout
    int64_t delivered = 0;
    std::vector<int32_t> row(static_cast<size_t>(k.batch));
    std::exception_ptr sink_error;  // rethrown once the kernel is done with the buffers
    auto poll = [&] {
      const int64_t ready = *r.host_steps->host<uint32_t>();
      if (ready > 0 && !r.saw_token) {
        r.saw_token = true;
        r.first_token = std::chrono::steady_clock::now();
      }
      if (!r.o.on_step || sink_error) return;
      std::atomic_thread_fence(std::memory_order_acquire);
      try {
        for (; delivered < ready; ++delivered) {
          for (int64_t b = 0; b < k.batch; ++b) row[b] = r.host_tokens->host<int32_t>()[delivered * k.batch + b];
          r.o.on_step(r.o.first_step + delivered, row);
        }
      } catch (...) {
        sink_error = std::current_exception();
      }
    };
    GpuRunResult out;
    out.kernel_ms = r.ev.wait_ms(timeout_s(r.steps), r.streams ? std::function<void()>(poll) : nullptr);
    MPK_CUDA(cudaGetLastError());
    check_watchdog(r.o.first_step);
    collect(r.o.first_step, r.steps, r.history, r.o.logits_history ? &r.logits_hist : nullptr, out);
    if (r.streams) {
      int32_t stopped = -1;
      d_stopped.download(&stopped, 4);
      if (stopped >= 0) {
        out.stopped_at = r.o.first_step + stopped;
        out.steps = out.stopped_at + 1;
        out.tokens.resize(static_cast<size_t>(out.steps));
        if (r.o.logits_history) out.logits_history.resize(static_cast<size_t>((stopped + 1) * k.batch * k.vocab));
      }
      poll();  // what arrived after the last poll
      if (sink_error) std::rethrow_exception(sink_error);
    }
    if (r.o.trace) {
      std::vector<uint32_t> counts(static_cast<size_t>(k.num_workers));
      r.trace_count.download(counts.data(), counts.size() * 4);
      std::vector<abi::TraceRecord> all(static_cast<size_t>(r.capacity * k.num_workers));
      r.trace.download(all.data(), all.size() * sizeof(abi::TraceRecord));
      for (int32_t w = 0; w < k.num_workers; ++w) {
        const uint64_t n = counts[w];
        const uint64_t kept = std::min<uint64_t>(n, static_cast<uint64_t>(r.capacity));
        out.trace_overflow += n - kept;
        for (uint64_t i = 0; i < kept; ++i) out.trace.push_back(all[w * r.capacity + i]);
      }
    }
    return out;
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
  impl_->build(scheduled, weights, options, nullptr);
}

GpuMegakernel::GpuMegakernel(const Module& chunk, const Weights& weights, GpuMegakernel& decode,
                             const GpuOptions& options)
    : impl_(std::make_unique<Impl>()) {
  const Impl& d = *decode.impl_;
  if (!is_prefill_chunk(chunk)) throw Error("the module to share a decode megakernel's caches is not a prefill chunk");
  if (d.chunk_module) throw Error("a prefill chunk shares the caches of a decode megakernel, not of another chunk");
  if (d.options.rank.ranks > 1) throw Error("prefill runs on one GPU; the decode megakernel is a tensor-parallel rank");
  GpuOptions o = options;
  o.rank = d.options.rank;
  impl_->build(chunk, weights, o, &d);
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
  if (I.chunk_module) throw Error("a prefill chunk runs by prefill() or run_prefilled(), not run()");
  MPK_CUDA(cudaSetDevice(I.options.rank.device));
  const std::unique_ptr<PendingRun> r = I.prepare(o, false);
  I.launch(*r);
  return I.finish(*r);
}

GpuRunResult GpuMegakernel::prefill(const GpuRunOptions& o) {
  Impl& I = *impl_;
  if (!I.chunk_module) throw Error("prefill() runs a prefill chunk (prefill-chunk); this module decodes");
  MPK_CUDA(cudaSetDevice(I.options.rank.device));
  const std::unique_ptr<PendingRun> r = I.prepare(o, false);
  if (r->steps == 0) return GpuRunResult{};  // a one-token prompt: nothing to fill
  I.launch(*r);
  return I.finish(*r);
}

namespace {

// Runs finish(), prefixing an error with the launch's name.
template <class Finish>
GpuRunResult finish_named(const char* name, Finish finish) {
  try {
    return finish();
  } catch (const Error& e) {
    throw Error(std::string(name) + ": " + e.what());
  }
}

// The end of the last task of `before` to the start of the first of `after` (us), or -1.
double trace_gap_us(const std::vector<abi::TraceRecord>& before, const std::vector<abi::TraceRecord>& after) {
  if (before.empty() || after.empty()) return -1;
  uint64_t end = 0, start = UINT64_MAX;
  for (const abi::TraceRecord& t : before) end = std::max(end, t.end_ns);
  for (const abi::TraceRecord& t : after) start = std::min(start, t.start_ns);
  return (static_cast<double>(start) - static_cast<double>(end)) * 1e-3;
}

}  // namespace

// The decode's buffers and run state are prepared first, so that only its launch follows
// the prefill's kernel on the stream.
GpuPrefillResult GpuMegakernel::run_prefilled(GpuMegakernel& chunk, const GpuRunOptions& o) {
  Impl& I = *impl_;
  Impl& C = *chunk.impl_;
  if (C.shares != &I) throw Error("run_prefilled: the prefill chunk was not made to share this megakernel's caches");
  MPK_CUDA(cudaSetDevice(I.options.rank.device));
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t end = prefill_end(prompt_length(o.prompt, o.prompt_rows), o.steps);
  GpuRunOptions d = o;
  d.first_step = end;
  GpuRunOptions p;
  p.steps = o.steps;
  p.prompt = o.prompt;
  p.prompt_rows = o.prompt_rows;
  p.trace = o.trace;
  p.trace_capacity = o.trace_capacity;
  const std::unique_ptr<PendingRun> dec = end < o.steps ? I.prepare(d, true) : nullptr;
  const std::unique_ptr<PendingRun> pre = end > 0 ? C.prepare(p, false) : nullptr;
  if (pre) C.launch(*pre);
  if (dec) I.launch(*dec);
  GpuPrefillResult out;
  if (pre) out.prefill = finish_named("prefill", [&] { return C.finish(*pre); });
  if (dec) {
    out.decode = finish_named("decode", [&] { return I.finish(*dec); });
    const auto first = dec->saw_token ? dec->first_token : std::chrono::steady_clock::now();
    out.first_token_ms = std::chrono::duration<double, std::milli>(first - t0).count();
  } else {  // no decode step: a prompt that fills the run
    out.decode.first_step = out.decode.steps = end;
    out.decode.batch = I.kernel.batch;
    out.decode.tokens.assign(static_cast<size_t>(end), std::vector<int32_t>(static_cast<size_t>(I.kernel.batch), -1));
  }
  if (o.trace) out.gap_us = trace_gap_us(out.prefill.trace, out.decode.trace);
  return out;
}

std::vector<char> GpuMegakernel::tensor_bytes(const std::string& name) const {
  const Impl& I = *impl_;
  const TensorId t = I.module.program.find_tensor(name);
  if (t < 0) throw Error("the module has no tensor '" + name + "'");
  if (I.tensor_addr.at(t) == 0) throw Error("tensor '" + name + "' is a weight only the weight stream holds");
  MPK_CUDA(cudaSetDevice(I.options.rank.device));
  MPK_CUDA(cudaStreamSynchronize(I.stream->get()));
  std::vector<char> out(static_cast<size_t>(I.module.program.tensors[t].num_bytes()));
  MPK_CUDA(cudaMemcpy(out.data(), reinterpret_cast<const void*>(I.tensor_addr[t]), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

GpuRunResult GpuMegakernel::run_per_op(const GpuRunOptions& o) {
  Impl& I = *impl_;
  if (I.options.rank.ranks > 1) throw Error("the per-op baseline runs one rank; a tensor-parallel run is a megakernel");
  if (I.chunk_module) throw Error("the per-op baseline decodes; a prefill chunk runs as a megakernel");
  if (o.first_step != 0) throw Error("the per-op baseline runs from step 0");
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
  I.collect(0, o.steps, I.graph_history, nullptr, r);
  return r;
}

}  // namespace mpk
