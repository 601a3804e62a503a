// Tensor parallel in the IR (docs/ir.md "Tensor parallel"): the module attr `tp`, the
// attr `parallel` of linears, LM heads and argmaxes, and what follows from them: which
// dimension of a weight each rank holds a slice of, and which tensors an operator reads
// on every rank.
#pragma once

#include <vector>

#include "ir/module.h"

namespace mpk {

inline constexpr int64_t kMaxTpRanks = 8;

// The module attr `tp`: the ranks of a sharded module, 1 when absent.
int64_t tp_ranks(const Module& m);

// The dimension of weight `t` that `op` reads split across the ranks: a linear or LM head
// with parallel="column" splits its weights' rows (and its bias), a linear with
// parallel="row" its weights' columns. -1 when op reads all of it (or does not read it).
int split_dim_in(const Operator& op, TensorId t);

// An argmax, or an LM head with its argmax, over the vocabulary split across the ranks
// (parallel="column"): rank r holds logits r*V/N.., and the tokens are the argmax over
// every rank's.
bool vocab_parallel(const Operator& op);
// The logits columns of one rank: the attr vocab, over tp where the LM head is split.
int64_t vocab_per_rank(const Module& m);
// Whether each rank holds a slice of the logits (vocab_per_rank < vocab).
bool vocab_split(const Module& m);
// The dimension of weight `t` split across the ranks by the operators that read it (the
// verifier checks that they agree), -1 when every rank holds all of it.
int tp_split_dim(const Program& p, TensorId t);

// A copy of sharded module `m` whose weights have the whole model's shapes (a split
// dimension times the ranks): what the weight loaders check a checkpoint against and
// draw random weights for, before shard_weights cuts each rank's slices.
Module with_whole_weights(const Module& m);

// Whether `op` reads tensor `t` on every rank: an all_reduce's second operand, and the
// argmax partials (its scratch, neither input nor output) of a vocab-parallel argmax.
bool reads_every_rank(const Operator& op, TensorId t);
// Per tensor: some operator (or task) reads it on every rank. Such a tensor lives where
// the other ranks can read it (the GPU group's symmetric memory, runtime/gpu/tp_group.h).
std::vector<bool> symmetric_tensors(const Module& m);

}  // namespace mpk
