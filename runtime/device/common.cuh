// Small device helpers shared by the task bodies: bf16 packing with round-to-nearest-
// even stores, L2-coherent loads of data written during the launch (ld.global.cg, never
// the SM's L1, which other SMs' writes do not invalidate), %globaltimer and %smid, the
// body threads' barrier, fixed-order warp reductions (no floating-point atomics) and
// the descriptor's named slots.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "runtime/device/config.cuh"

namespace mpk {
namespace dev {

typedef uint16_t bf16_t;  // raw bf16 bits in memory

// A descriptor's pointer and integer slots, by name only (task_slots.cuh).
template <class T>
__device__ __forceinline__ T* dptr(const TaskDesc& d, PtrSlot s) {
  return reinterpret_cast<T*>(d.ptr[s.index]);
}
__device__ __forceinline__ int32_t arg_int(const TaskDesc& d, ArgSlot s) { return d.arg[s.index]; }
__device__ __forceinline__ float arg_float(const TaskDesc& d, ArgSlot s) { return __int_as_float(d.arg[s.index]); }

__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float bf16_to_f32(bf16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}
__device__ __forceinline__ bf16_t f32_to_bf16(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

// Unpacks 8 bf16 values held in a 16-byte vector.
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
  f[0] = bf16_lo(v.x); f[1] = bf16_hi(v.x);
  f[2] = bf16_lo(v.y); f[3] = bf16_hi(v.y);
  f[4] = bf16_lo(v.z); f[5] = bf16_hi(v.z);
  f[6] = bf16_lo(v.w); f[7] = bf16_hi(v.w);
}

// Element e (0..7, a compile-time constant after unrolling) of 8 bf16 values in a vector.
__device__ __forceinline__ float bf16_at(const uint4& v, int e) {
  const uint32_t w = e < 2 ? v.x : e < 4 ? v.y : e < 6 ? v.z : v.w;
  return e % 2 == 0 ? bf16_lo(w) : bf16_hi(w);
}

// Loads of data that other SMs write during the launch: through L2 only.
__device__ __forceinline__ bf16_t ld_cg_bf16(const bf16_t* p) {
  unsigned short v;
  asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ float ld_cg_f32(const float* p) { return __ldcg(p); }
__device__ __forceinline__ int32_t ld_cg_i32(const int32_t* p) { return __ldcg(p); }
__device__ __forceinline__ uint4 ld_cg_v4(const void* p) {
  return __ldcg(reinterpret_cast<const uint4*>(p));
}
// Weights and other data nothing writes during the launch.
__device__ __forceinline__ bf16_t ld_const_bf16(const bf16_t* p) {
  return __ldg(reinterpret_cast<const unsigned short*>(p));
}

// Asks L2 for `bytes` at p (whole 128-byte lines), without waiting: a hint. Line
// prefetches, not one bulk prefetch: the copy engine stays free for the weight stream.
__device__ __forceinline__ void prefetch_l2(const void* p, uint32_t bytes) {
  for (uint32_t o = 0; o < bytes; o += 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const char*>(p) + o) : "memory");
}

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ int32_t sm_id() {
  uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return static_cast<int32_t>(s);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes from global memory (L2, never L1: other SMs write it during the launch) to
// shared memory, asynchronously; the copies since the last commit form one group.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Until at most N of this thread's groups are pending.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Synchronizes the body threads (named barrier 1; the stream and dispatch warps of the
// block never take part): task bodies use it wherever a block-wide barrier is meant.
__device__ __forceinline__ void body_sync() { asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory"); }

// (value, index) maximum: larger value wins, the lower index on ties. Associative and
// commutative, so any reduction order gives the same answer.
__device__ __forceinline__ void argmax_combine(float& v, int32_t& i, float ov, int32_t oi) {
  if (ov > v || (ov == v && oi < i)) {
    v = ov;
    i = oi;
  }
}

}  // namespace dev
}  // namespace mpk
