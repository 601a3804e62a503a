// What the operator fusions (passes/fuse*.cc) share: the access-order checks that keep
// a fusion from moving a read or write across another write, the rewrite of a group
// of operators into one, and the pass wrapper. docs/passes.md describes the fusions.
#pragma once

#include <memory>
#include <vector>

#include "passes/pass.h"

namespace mpk {

// A fusion: rewrites p (its use lists are current), marks the operators and tensors it
// folds away; returns whether it fused any.
using FuseFn = bool (*)(Program& p, std::vector<bool>& dead_op, std::vector<bool>& dead_tensor);

// Removes the flagged operators and tensors, renumbering the operands; rebuilds the use
// lists.
void compact(Program& p, const std::vector<bool>& dead_op, const std::vector<bool>& dead_tensor);

// Whether an operator strictly between lo and hi in program order writes (reads) t:
// fusing would then move an access of t across it.
bool written_between(const Program& p, TensorId t, OpId lo, OpId hi);
bool read_between(const Program& p, TensorId t, OpId lo, OpId hi);

// Whether t is an intermediate a fusion may drop: written only by `writer`, read only
// by `reader`.
bool only_link(const Program& p, TensorId t, OpId writer, OpId reader);

// Replaces the operators `group` by `fused`, which computes exactly what they compute
// in program order, with the tensors `dropped` (their intermediates) never stored.
// `fused` takes the place of one of the group (the last one that keeps every access in
// order: no operator outside the group between an access's old and new place writes
// what it reads, or reads or writes what it writes). Refuses, changing nothing, when no
// place does, when `fused` fails its signature (ir/verifier.h) or when its name is
// taken by another operator. Use lists stay current.
bool fuse_group(Program& p, std::vector<OpId> group, Operator fused, const std::vector<TensorId>& dropped,
                std::vector<bool>& dead_op, std::vector<bool>& dead_tensor);

// A fusion pass (it runs on operators only: before decompose), and the registry entry of
// one without options.
std::unique_ptr<Pass> fuse_pass(const char* name, FuseFn fn);
PassInfo fuse_pass_info(const char* name, const char* summary, FuseFn fn);

}  // namespace mpk
