// The binary elementwise family's one task kind per operator kind (silu_mul, residual_add,
// all_reduce), which decompose makes and every layer's family file dispatches on.
#pragma once

#include "ir/types.h"

namespace mpk {

constexpr TaskKind binary_task_kind(OpKind k) {
  return k == OpKind::kSiluMul ? TaskKind::kSiluMul
         : k == OpKind::kAllReduce ? TaskKind::kAllReduce
                                   : TaskKind::kResidualAdd;
}

}  // namespace mpk
