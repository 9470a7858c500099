// SPDX-License-Identifier: BSD-3-Clause
// ZeRO stages 0-3 around AdamW, on the flat buffers and the per-unit partition of
// dp/zero_partition.hpp (docs/parallelism.md). It plugs into the model as its UnitHooks:
//   stage 0: gradients all-reduced unit by unit, each started as soon as the unit's
//            backward of the last micro-batch is done and progressed from the backward
//            loop (a unit above the bucket size goes in several buckets); replicated
//            AdamW.
//   stage 1: as 0, but the moments are sharded: each rank updates its part of every
//            unit and the updated weights are all-gathered, unit by unit, while the
//            next forward runs (each unit's gather is waited for just before its
//            forward).
//   stage 2: gradients reduce-scattered unit by unit after every micro-batch into the
//            rank's gradient shard; the whole-model gradient buffer never exists (two
//            unit-sized buffers rotate instead); moments sharded; weights all-gathered.
//   stage 3: as 2, and the weights too live only as shards: a unit is gathered into
//            one of two unit-sized buffers for its forward and again for its backward,
//            and dropped after. While a unit computes, the next unit's gather is in
//            flight in the other buffer (prefetch). Which unit goes where, and when
//            the buffers are dropped, is the rule of core/zero3_buffers.hpp: with one
//            pipeline stage the head and the last block are still there for their
//            backward; the embeddings' backward reads no weights.
// The memory of each buffer is charged to its category in the ledger.
#pragma once
#include <array>
#include <memory>
#include <vector>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/kernels/grad_norm.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/optim/adamw.hpp"
#include "mini5d/parallel/dp/dp_comm.hpp"
#include "mini5d/core/zero3_buffers.hpp"
#include "mini5d/parallel/dp/zero_partition.hpp"
#include "mini5d/parallel/ep/ep_comm.hpp"
#include "mini5d/parallel/tp/replicated_grads.hpp"
#include "mini5d/parallel/tp/tp_comm.hpp"

namespace mini5d::dp {

using optim::AdamW;
using optim::AdamWConfig;

// What the Gpt must own for a ZeRO stage (construct it with this before the optimizer).
model::Gpt<float>::Owns model_ownership(int zero_stage);

class ZeroOptimizer : public model::UnitHooks {
 public:
  // Collective over `group` (the dense-gradient group). Initialises the parameters
  // from `seed` (this rank's shard of them under stage 3) and installs itself as the
  // model's hooks.
  // bucket_elements: the largest all-reduce at stages 0-1 (MPICH allocates a temporary
  // per call, and large calls run slower: docs/building.md).
  // tp: the model's tensor-parallel group (nullptr: none). Each rank of it runs its own
  // ZeRO over its part of the model; the group sums the gradients of replicated tensors
  // when sequence parallelism split the tokens, and the sharded tensors' squares in the
  // global norm.
  // expert_group: the expert-gradient group (d x c) that reduces and shards the
  // expert tensors (nullptr: `group`, for a model without experts); ep: the
  // expert-parallel group (e x t) that holds different experts (their squares in the
  // global norm are summed over it).
  ZeroOptimizer(model::Gpt<float>& model, comm::Communicator& group, int stage, AdamWConfig cfg,
                std::uint64_t seed, std::int64_t bucket_elements = std::int64_t(1) << 62,
                tp::TpComm* tp = nullptr, comm::Communicator* expert_group = nullptr, ep::EpComm* ep = nullptr);
  ~ZeroOptimizer() override;

  int stage() const { return stage_; }
  // Stage 3: unit gathers started ahead of their use (prefetched) and on demand.
  long prefetched_gathers() const { return prefetched_; }
  long blocking_gathers() const { return blocking_; }
  const dp::ZeroPartition& partition() const { return part_; }

  void begin_step();                         // zeroes the gradients
  void begin_microbatch(bool last);          // last: stage 0-1 reduce during its backward
  void finish_reductions();                  // waits for every reduction in flight
  // This rank's share of the squared global gradient norm (after finish_reductions),
  // and whether all of its reduced gradients are finite. Every logical element is
  // counted on exactly one rank of the job: a sum that an all-reduce left on several
  // ranks counts on the first of them (dense group rank 0 at stages 0-1, tensor rank 0
  // for the tensors every tensor-parallel rank holds), so the sum of the shares over
  // every rank is the squared global norm, whatever the layout. One fused pass.
  struct NormShare {
    double owned = 0;
    bool finite = true;
  };
  NormShare norm_share() const;
  // AdamW with the gradient times grad_factor (the global-norm clipping factor: no
  // separate clipping pass), then weight gathers posted (stage 1-2).
  void update(double lr, long step, double grad_factor = 1.0);
  // Grouped-query attention with t > kv_heads: the key/value rows the t/kv_heads ranks
  // of `kv` share (ZeroPartition::kv_shared_spans) get their gradients summed over it,
  // a message per unit like the replicated tensors' over t. Before the first step.
  void sum_kv_shared_over(tp::TpComm& kv);
  // Completes every operation in flight (weight gathers after an update), so the
  // buffers hold the state of the step; before a checkpoint and at the end of a run.
  void settle();

  // The buffers a checkpoint reads and writes, with how tensors lie in them:
  // `flat` true when the buffer is the whole flat layout, false when it is this
  // rank's shard (ZeroPartition::tensor_shards offsets).
  struct StateBuffer {
    VecU<float> data;
    bool flat;
  };
  StateBuffer weights() const;
  StateBuffer exp_avg() const;
  StateBuffer exp_avg_sq() const;

  // One NaN in this rank's reduced gradients (train/fault_nan.hpp), after
  // finish_reductions(): a fault that only this rank sees.
  void poison_gradients();

  // UnitHooks
  void before_forward(int unit) override;
  void before_backward(int unit) override;
  void after_backward(int unit) override;
  void progress() override;

 private:
  // A unit-sized gradient buffer with the reduce-scatter that drains it (stage 2-3).
  struct Slot {
    Vec<float> grads, part;  // whole unit, this rank's part of the reduced sum
    std::vector<comm::Request> reqs;  // one per chunk
    int unit = -1;        // the unit whose gradients the slot holds
    bool posted = false;  // its reduce-scatter is in flight, its part not yet added
    bool last = false;    // of the step's last micro-batch: the unit's shard is final once added
  };
  void drain(Slot& s);  // completes s's reduce-scatter and adds its part to the shard
  void need_weights(int unit, bool forward);          // stage 3: unit gathered and bound
  void start_gather(int buffer, int unit);
  void start_replicated_sums();         // stage 0-1: for each unit whose reduction is done

  VecU<float> grad_buffer() const;  // the reduced gradients: flat (stage 0-1) or this rank's shard

  model::Gpt<float>& model_;
  int stage_;
  tp::TpComm* tp_;
  std::vector<Span> replicated_;  // replicated tensors in grad_buffer() (tensor parallelism)
  std::vector<Span> experts_;     // expert tensors in grad_buffer()
  // grad_buffer() cut into pieces of one class each (plain, replicated, expert) for the
  // fused norm, and which classes this rank counts (norm_share).
  Kokkos::View<kernels::NormPiece*, MemSpace> norm_pieces_;
  bool owns_dense_ = true, owns_replicated_ = true, owns_experts_ = true, owns_kv_shared_ = true;
  std::vector<Span> kv_shared_;  // key/value rows shared with other tensor ranks, in grad_buffer()
  tp::ReplicatedGrads kv_grads_;  // their sums over the key/value group (inactive without)
  ep::EpComm* ep_;
  // The replicated tensors' gradients summed over t, a message per unit started once
  // the unit's gradients are final (inactive without sequence parallelism at t > 1).
  tp::ReplicatedGrads tp_grads_;
  dp::ZeroPartition part_;
  dp::DataParallelComm dp_;
  std::unique_ptr<AdamW<float>> adamw_;
  bool last_ = true;
  std::int64_t bucket_;
  std::vector<comm::Request> inflight_;  // stage 0-1 all-reduces
  // Stage 0-1, last micro-batch: units whose all-reduces are inflight_[from, to) and
  // whose replicated sums over t wait for them.
  struct Reducing {
    int unit;
    std::size_t from, to;
  };
  std::vector<Reducing> reducing_;
  std::vector<comm::Request> weight_gathers_;  // stage 1-2: per chunk, after an update
  Vec<float> weight_shard_;              // stage 3
  Vec<float> grad_shard_;                // stage 2-3
  // Stage 3: two unit-sized buffers of gathered weights, and the rule saying which
  // unit each holds (zero3_buffers.hpp).
  struct Gathered {
    Vec<float> data;
    std::vector<comm::Request> reqs;  // active while its all-gathers (one per chunk) are in flight
  };
  std::array<Gathered, 2> gathered_;
  zero3::GatherBuffers buffers_;
  long prefetched_ = 0, blocking_ = 0;
  std::array<Slot, 2> slots_;            // stage 2-3
  int next_slot_ = 0;
  mem::Charge weights_mem_, grads_mem_, comm_mem_, table_mem_;
};

}  // namespace mini5d::dp
