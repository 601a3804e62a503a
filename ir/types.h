// Enumerations of the in-memory IR (dtypes, tensor roles, operator and task kinds)
// and their canonical kebab/snake-case names, shared by the text form and the CLIs.
// Operator and task kinds follow from the one table ir/kinds.def.
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

// Operators of a decode step and what their tasks compute, one enumerator per row of
// ir/kinds.def (docs/ir.md gives each one's exact semantics). Most operators have one
// task kind; attention and argmax split into partial tasks plus a combining task.
enum class OpKind : uint8_t {
#define MPK_OP_KIND(Name, name, family, proto, rgb) k##Name,
#include "ir/kinds.def"
};
enum class TaskKind : uint8_t {
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) k##Name,
#include "ir/kinds.def"
};
inline constexpr int kNumOpKinds = 0
#define MPK_OP_KIND(Name, name, family, proto, rgb) +1
#include "ir/kinds.def"
    ;
inline constexpr int kNumTaskKinds = 0
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) +1
#include "ir/kinds.def"
    ;

// The studio colour of an operator kind, 0xRRGGBB (ir/kinds.def).
uint32_t rgb_of(OpKind k);
// Where a task kind's tasks come among their operator's (ir/kinds.def `stage`): 0, 1, 2.
int stage_of(TaskKind k);
// Whether a task kind streams its weights through the weight stream (ir/kinds.def).
bool streams_weights(TaskKind k);

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
