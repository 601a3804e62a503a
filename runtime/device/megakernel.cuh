// Everything the generated megakernel source includes: the ABI, the worker loop, the
// event and stream machinery and every family's task bodies (tasks_<family>.cuh).
#pragma once

#include "runtime/device/config.cuh"
#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/events.cuh"
#include "runtime/device/pack.cuh"
#include "runtime/device/stream.cuh"
#include "runtime/device/tasks_argmax.cuh"
#include "runtime/device/tasks_attention.cuh"
#include "runtime/device/tasks_binary.cuh"
#include "runtime/device/tasks_embedding.cuh"
#include "runtime/device/tasks_kv_append.cuh"
#include "runtime/device/tasks_linear.cuh"
#include "runtime/device/tasks_norm.cuh"
#include "runtime/device/tasks_rope.cuh"
#include "runtime/device/worker.cuh"
