// SPDX-License-Identifier: BSD-3-Clause
// ZeRO stages 0-3 around AdamW, on the flat buffers and the per-unit partition of
// dp/zero_partition.hpp (docs/parallelism.md), of a model it sees only through
// ZeroModel (zero_model.hpp). It plugs into the model as its UnitHooks:
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
//            the buffers are dropped, is the rule of rules/zero3_buffers.hpp: with one
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
#include "mini5d/optim/adamw.hpp"
#include "mini5d/parallel/dp/dp_comm.hpp"
#include "mini5d/parallel/dp/zero_model.hpp"
#include "mini5d/parallel/dp/zero_partition.hpp"
#include "mini5d/parallel/ep/ep_comm.hpp"
#include "mini5d/parallel/tp/replicated_grads.hpp"
#include "mini5d/parallel/tp/tp_comm.hpp"
#include "mini5d/rules/zero3_buffers.hpp"

namespace mini5d::dp {

using optim::AdamW;
using optim::AdamWConfig;

// The optimizer as the trainer drives it, whatever the model's storage type: fp32, or
// bf16 with fp32 master weights (zero_adamw.hpp). Gradients are fp32 either way.
class ZeroOptimizer : public model::UnitHooks {
 public:
  ~ZeroOptimizer() override = default;

  virtual int stage() const = 0;
  // Stage 3: unit gathers started ahead of their use (prefetched) and on demand.
  virtual long prefetched_gathers() const = 0;
  virtual long blocking_gathers() const = 0;
  virtual const dp::ZeroPartition& partition() const = 0;

  virtual void begin_step() = 0;                  // zeroes the gradients
  virtual void begin_microbatch(bool last) = 0;   // last: stage 0-1 reduce during its backward
  virtual void finish_reductions() = 0;           // waits for every reduction in flight
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
  virtual NormShare norm_share() const = 0;
  // AdamW with the gradient times grad_factor (the global-norm clipping factor: no
  // separate clipping pass), then weight gathers posted (stage 1-2). A bf16 model's
  // working copy is refreshed from the updated master weights.
  virtual void update(double lr, long step, double grad_factor = 1.0) = 0;
  // Grouped-query attention with t > kv_heads: the key/value rows the t/kv_heads ranks
  // of `kv` share (ZeroPartition::kv_shared_spans) get their gradients summed over it,
  // a message per unit like the replicated tensors' over t. Before the first step.
  virtual void sum_kv_shared_over(tp::TpComm& kv) = 0;
  // Completes every operation in flight (weight gathers after an update), so the
  // buffers hold the state of the step; before a checkpoint and at the end of a run.
  virtual void settle() = 0;

  // The buffers a checkpoint reads and writes, with how tensors lie in them:
  // `flat` true when the buffer is the whole flat layout, false when it is this
  // rank's shard (ZeroPartition::tensor_shards offsets). The weights are the fp32
  // master weights (a bf16 model's working copy is not state: it is rebuilt).
  struct StateBuffer {
    VecU<float> data;
    bool flat;
  };
  virtual StateBuffer weights() const = 0;
  virtual StateBuffer exp_avg() const = 0;
  virtual StateBuffer exp_avg_sq() const = 0;
  // After a checkpoint was read into weights(): a bf16 model's working copy is made
  // from them again (and gathered, stages 1-2). Nothing to do for fp32.
  virtual void weights_loaded() = 0;
  // The reduced gradients (after finish_reductions): the flat buffer at stages 0-1,
  // this rank's shard at 2-3.
  virtual VecU<float> reduced_grads() const = 0;

  // One NaN in this rank's reduced gradients (train/fault_nan.hpp), after
  // finish_reductions(): a fault that only this rank sees.
  virtual void poison_gradients() = 0;
};

// Collective over `group` (the dense-gradient group). Initialises the parameters
// from `seed` (this rank's shard of them under stage 3) and installs itself as the
// model's hooks. `model`: the model's parts ZeRO works on (train/zero_model.hpp makes
// them from a Gpt built with train::model_ownership(stage)).
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
// reduce_in_bf16: the data-parallel gradient reductions send bf16 (parallel.
// grad_reduce_dtype=bf16; a bf16 model only), half the bytes, the sums widened back
// into the fp32 main gradients.
template <class S>
std::unique_ptr<ZeroOptimizer> make_zero_optimizer(ZeroModel<S> model, comm::Communicator& group, int stage,
                                                   AdamWConfig cfg, std::uint64_t seed,
                                                   std::int64_t bucket_elements = std::int64_t(1) << 62,
                                                   tp::TpComm* tp = nullptr, comm::Communicator* expert_group = nullptr,
                                                   ep::EpComm* ep = nullptr, bool reduce_in_bf16 = false);

}  // namespace mini5d::dp
