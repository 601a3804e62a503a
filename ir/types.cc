// Names of the IR enumerations; operator and task kinds and their properties come from
// ir/kinds.def.
#include "ir/types.h"

#include <array>

namespace mpk {
namespace {

constexpr std::array<std::string_view, 4> kDTypeNames = {"bf16", "f16", "f32", "i32"};
constexpr std::array<std::string_view, 6> kRoleNames = {"weight", "activation", "kv_cache",
                                                        "input",  "output",     "scratch"};
constexpr std::array<std::string_view, kNumOpKinds> kOpNames = {
#define MPK_OP_KIND(Name, name, family, proto, rgb) #name,
#include "ir/kinds.def"
};
constexpr std::array<std::string_view, kNumTaskKinds> kTaskNames = {
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) #name,
#include "ir/kinds.def"
};
constexpr std::array<uint32_t, kNumOpKinds> kOpColors = {
#define MPK_OP_KIND(Name, name, family, proto, rgb) rgb,
#include "ir/kinds.def"
};
constexpr std::array<int, kNumTaskKinds> kTaskStages = {
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) stage,
#include "ir/kinds.def"
};
constexpr std::array<bool, kNumTaskKinds> kTaskStreams = {
#define MPK_TASK_KIND(Name, name, family, proto, stage, streams) streams != 0,
#include "ir/kinds.def"
};

template <typename E, size_t N>
std::optional<E> parse_in(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

std::string_view name_of(DType d) { return kDTypeNames[static_cast<size_t>(d)]; }
std::string_view name_of(TensorRole r) { return kRoleNames[static_cast<size_t>(r)]; }
std::string_view name_of(OpKind k) { return kOpNames[static_cast<size_t>(k)]; }
std::string_view name_of(TaskKind k) { return kTaskNames[static_cast<size_t>(k)]; }
uint32_t rgb_of(OpKind k) { return kOpColors[static_cast<size_t>(k)]; }
int stage_of(TaskKind k) { return kTaskStages[static_cast<size_t>(k)]; }
bool streams_weights(TaskKind k) { return kTaskStreams[static_cast<size_t>(k)]; }

std::optional<DType> parse_dtype(std::string_view s) { return parse_in<DType>(kDTypeNames, s); }
std::optional<TensorRole> parse_tensor_role(std::string_view s) {
  return parse_in<TensorRole>(kRoleNames, s);
}
std::optional<OpKind> parse_op_kind(std::string_view s) { return parse_in<OpKind>(kOpNames, s); }
std::optional<TaskKind> parse_task_kind(std::string_view s) {
  return parse_in<TaskKind>(kTaskNames, s);
}

int64_t size_of(DType d) {
  switch (d) {
    case DType::kBF16:
    case DType::kF16:
      return 2;
    case DType::kF32:
    case DType::kI32:
      return 4;
  }
  return 0;
}

}  // namespace mpk
