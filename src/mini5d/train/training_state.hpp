// SPDX-License-Identifier: BSD-3-Clause
// The trainer's state as checkpoint shards: the weights and both AdamW moments of
// every tensor, each rank naming its ZeRO part (whatever the stage, every rank writes
// only its own part of every dataset, so the file is written once, in parallel). On
// load each rank reads what its layout keeps: whole tensors where the stage keeps a
// buffer whole, its shard where the stage shards it. That is all resharding takes:
// another layout reads other blocks of the same datasets.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/parallel/dp/zero_optimizer.hpp"

namespace mini5d::train {

// What this rank writes of one part of the state ("model", "optimizer/exp_avg", ...):
// a host copy of the buffer (no copy on host backends) and, per logical tensor, its
// descriptor with a pointer into that copy. Over the ranks of a run the blocks of
// every tensor cover it exactly once; the save writes these shards, and everything
// that needs each logical element once (parameter_checksums) reads them.
struct WrittenPart {
  struct Shard {
    std::string tensor;  // logical name, e.g. "blocks.0.attn.qkv.weight"
    ShardDescriptor desc;
    const float* data = nullptr;
  };
  std::string root;
  Kokkos::View<float*, Kokkos::LayoutRight, Kokkos::HostSpace> host;
  std::vector<Shard> shards;
};
// The weights ("model") as a checkpoint writes them.
WrittenPart written_model(const dp::ZeroOptimizer& opt);
// Every part a checkpoint writes: the model, then both AdamW moments.
std::vector<WrittenPart> written_parts(const dp::ZeroOptimizer& opt);

// As written_parts, but into `staged`: copies of their own (also on host backends),
// so that training may change the state while a background save writes them. The
// buffers are allocated on the first call and reused; the copies are complete on
// return (one execution-space instance, fenced alone). Returns the bytes allocated.
std::int64_t stage_parts(const dp::ZeroOptimizer& opt, std::vector<WrittenPart>& staged);
// The shards of `parts` as the save writes them (pointers into their host copies).
std::vector<checkpoint::TensorShard> shards_of(const std::vector<WrittenPart>& parts);

// Collective over `comm` (every rank of the run). `meta` is written as is.
checkpoint::IoStats save_training_state(MPI_Comm comm, const dp::ZeroOptimizer& opt, const std::string& dir,
                                        const std::string& name, const checkpoint::CheckpointMeta& meta,
                                        int keep_last);
// Collective over `comm`. Fills weights and moments from `path` (already resolved).
checkpoint::IoStats load_training_state(MPI_Comm comm, dp::ZeroOptimizer& opt,
                                        const model::ParamLayout& layout, const std::string& path);

}  // namespace mini5d::train
