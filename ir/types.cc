// Names of the IR enumerations; one table per enum so adding a kind is one line.
#include "ir/types.h"

#include <array>

namespace mpk {
namespace {

constexpr std::array<std::string_view, 4> kDTypeNames = {"bf16", "f16", "f32", "i32"};
constexpr std::array<std::string_view, 6> kRoleNames = {"weight", "activation", "kv_cache",
                                                        "input",  "output",     "scratch"};
constexpr std::array<std::string_view, kNumOpKinds> kOpNames = {
    "embedding", "rms_norm", "linear",   "qk_norm",      "rope",    "kv_append",
    "attention", "silu_mul", "residual_add", "lm_head", "argmax"};
constexpr std::array<std::string_view, kNumTaskKinds> kTaskNames = {
    "embedding",     "rms_norm",          "linear",          "qk_norm",  "rope",
    "kv_append",     "attention",         "attention_partial", "attention_merge",
    "silu_mul",      "residual_add",      "lm_head",         "argmax_partial", "argmax_reduce"};

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
