// Everything the generated megakernel source includes: the ABI, the worker loop, the
// event and stream machinery and every task body.
#pragma once

#include "runtime/device/config.cuh"
#include "runtime/device/common.cuh"
#include "runtime/device/context.cuh"
#include "runtime/device/events.cuh"
#include "runtime/device/pack.cuh"
#include "runtime/device/stream.cuh"
#include "runtime/device/tasks_argmax.cuh"
#include "runtime/device/tasks_attention.cuh"
#include "runtime/device/tasks_elementwise.cuh"
#include "runtime/device/tasks_linear.cuh"
#include "runtime/device/worker.cuh"
