// Enumerations of the in-memory IR (dtypes, tensor roles, operator and task kinds)
// and their canonical kebab/snake-case names, shared by the text form and the CLIs.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mpk {

using TensorId = int32_t;
using OpId = int32_t;
using TaskId = int32_t;
using EventId = int32_t;

enum class DType : uint8_t { kBF16, kF16, kF32, kI32 };
enum class TensorRole : uint8_t { kWeight, kActivation, kKvCache, kInput, kOutput, kScratch };

// Operators of a decode step. docs/ir.md gives each one's exact semantics.
enum class OpKind : uint8_t {
  kEmbedding,
  kRmsNorm,
  kLinear,
  kQkNorm,
  kRope,
  kKvAppend,
  kAttention,
  kSiluMul,
  kResidualAdd,
  kLmHead,
  kArgmax,
};
inline constexpr int kNumOpKinds = 11;

// What a task computes. Most operators have one task kind; attention and argmax
// split into partial tasks plus a combining task.
enum class TaskKind : uint8_t {
  kEmbedding,
  kRmsNorm,
  kLinear,
  kQkNorm,
  kRope,
  kKvAppend,
  kAttention,
  kAttentionPartial,
  kAttentionMerge,
  kSiluMul,
  kResidualAdd,
  kLmHead,
  kArgmaxPartial,
  kArgmaxReduce,
};
inline constexpr int kNumTaskKinds = 14;

std::string_view name_of(DType d);
std::string_view name_of(TensorRole r);
std::string_view name_of(OpKind k);
std::string_view name_of(TaskKind k);

std::optional<DType> parse_dtype(std::string_view s);
std::optional<TensorRole> parse_tensor_role(std::string_view s);
std::optional<OpKind> parse_op_kind(std::string_view s);
std::optional<TaskKind> parse_task_kind(std::string_view s);

// Bytes per element.
int64_t size_of(DType d);

}  // namespace mpk
