// SPDX-License-Identifier: BSD-3-Clause
// ZeRO around AdamW for a model of storage type S (zero_optimizer.hpp describes the
// stages). S = float: AdamW updates the model's weights (or the stage-3 shard) in
// place. S = bf16 (mixed precision): AdamW updates fp32 master weights (whole at stage
// 0, this rank's shard at 1-3) and the model's bf16 working copy is rounded from them
// after each update; stages 1-2 all-gather the bf16 copy and stage 3 gathers its units
// in bf16, half of fp32's bytes. Gradients are fp32 in both (the model's main
// gradients), so every reduction is the fp32 one.
#pragma once
#include "mini5d/parallel/dp/zero_optimizer.hpp"

namespace mini5d::dp {

template <class S>
class ZeroAdamW final : public ZeroOptimizer {
 public:
  ZeroAdamW(ZeroModel<S> model, comm::Communicator& group, int stage, AdamWConfig cfg, std::uint64_t seed,
            std::int64_t bucket_elements, tp::TpComm* tp, comm::Communicator* expert_group, ep::EpComm* ep,
            bool reduce_in_bf16);
  ~ZeroAdamW() override;

  int stage() const override { return stage_; }
  long prefetched_gathers() const override { return prefetched_; }
  long blocking_gathers() const override { return blocking_; }
  const dp::ZeroPartition& partition() const override { return part_; }
  void begin_step() override;
  void begin_microbatch(bool last) override;
  void finish_reductions() override;
  NormShare norm_share() const override;
  void update(double lr, long step, double grad_factor = 1.0) override;
  void sum_kv_shared_over(tp::TpComm& kv) override;
  void settle() override;
  StateBuffer weights() const override;
  StateBuffer exp_avg() const override;
  StateBuffer exp_avg_sq() const override;
  void weights_loaded() override;
  VecU<float> reduced_grads() const override { return grad_buffer(); }
  void poison_gradients() override;

  // UnitHooks
  void before_forward(int unit) override;
  void before_backward(int unit) override;
  void after_backward(int unit) override;
  void progress() override;

 private:
  // A unit-sized gradient buffer with the reduce-scatter that drains it (stage 2-3).
  struct Slot {
    Vec<float> grads, part;  // whole unit, this rank's part of the reduced sum
    Vec<bf16> wire, wire_part;  // grad_reduce_dtype=bf16: the same, as sent and received
    std::vector<comm::Request> reqs;  // one per chunk
    int unit = -1;        // the unit whose gradients the slot holds
    bool posted = false;  // its reduce-scatter is in flight, its part not yet added
    bool last = false;    // of the step's last micro-batch: the unit's shard is final once added
  };
  void drain(Slot& s);  // completes s's reduce-scatter and adds its part to the shard
  void need_weights(int unit, bool forward);          // stage 3: unit gathered and bound
  void start_gather(int buffer, int unit);
  void start_replicated_sums();         // stage 0-1: for each unit whose reduction is done
  void refresh_working_copy();          // bf16: params from the master weights (and gathers, stages 1-2)
  void post_weight_gathers();           // stages 1-2: every chunk's all-gather of the model's weights
  bool widen_reduced(std::size_t from, std::size_t to);  // bf16 reduction, stages 0-1
  void build_norm_pieces();             // the fused norm's table (norm_pieces_)

  VecU<float> grad_buffer() const;  // the reduced gradients: flat (stage 0-1) or this rank's shard
  // Stage 3: the shard the unit gathers send: the weights themselves (fp32), the bf16 copy.
  const Vec<S>& working_shard() const {
    if constexpr (is_bf16_v<S>)
      return working_shard_;
    else
      return weight_shard_;
  }

  const model::ParamLayout& param_layout() const { return *model_.layout; }
  Vec<S>& model_params() const { return *model_.params; }
  Vec<float>& model_grads() const { return *model_.grads; }

  ZeroModel<S> model_;
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
  // parallel.grad_reduce_dtype=bf16: the gradients cross the data-parallel group in bf16
  // (stages 0-1: wire_, the flat layout in bf16, one bucket per entry of inflight_;
  // stages 2-3: each slot's wire buffers), and are widened back into fp32 once summed.
  bool reduce_bf16_ = false;
  Vec<bf16> wire_;
  struct WireBucket {
    std::int64_t offset, size;
    bool widened;
  };
  std::vector<WireBucket> wire_buckets_;
  // Stage 0-1, last micro-batch: units whose all-reduces are inflight_[from, to) and
  // whose replicated sums over t wait for them.
  struct Reducing {
    int unit;
    std::size_t from, to;
  };
  std::vector<Reducing> reducing_;
  std::vector<comm::Request> weight_gathers_;  // stage 1-2: per chunk, after an update
  Vec<float> weight_shard_;              // stage 3 (the master weights' shard, for bf16 too)
  // bf16 only: the fp32 master weights of stages 0-2 (whole at 0, this rank's shard at
  // 1-2), which AdamW updates and the model's bf16 working copy is rounded from.
  Vec<float> master_;
  // bf16 at stage 3: this rank's shard of the working copy, rounded from weight_shard_
  // after each update, which the unit gathers send (as ZeRO's fp16 parameter shards).
  Vec<S> working_shard_;
  Vec<float> grad_shard_;                // stage 2-3
  // Stage 3: two unit-sized buffers of gathered weights, and the rule saying which
  // unit each holds (zero3_buffers.hpp).
  struct Gathered {
    Vec<S> data;  // the working copy's storage type: a bf16 model gathers bf16
    std::vector<comm::Request> reqs;  // active while its all-gathers (one per chunk) are in flight
  };
  std::array<Gathered, 2> gathered_;
  zero3::GatherBuffers buffers_;
  long prefetched_ = 0, blocking_ = 0;
  std::array<Slot, 2> slots_;            // stage 2-3
  int next_slot_ = 0;
  mem::Charge weights_mem_, grads_mem_, comm_mem_, table_mem_, master_mem_;
};

}  // namespace mini5d::dp
