// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/dp/zero_adamw.hpp"
#include "mini5d/parallel/dp/zero_views.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "mini5d/kernels/accumulate.hpp"
#include "mini5d/kernels/convert.hpp"
#include "mini5d/kernels/fill.hpp"

namespace mini5d::dp {

using detail::part_of;
using detail::slice;
using detail::test_all;
using detail::wait_all;
using optim::Segment;
using optim::segment;

namespace {
// Each unit's replicated runs: its slice of the flat buffer (stage 0-1) or of the shard.
std::vector<tp::ReplicatedGrads::Runs> replicated_by_unit(const std::vector<Span>& spans, const ZeroPartition& part,
                                                          const model::ParamLayout& layout, bool flat) {
  std::vector<tp::ReplicatedGrads::Runs> out(std::size_t(part.units()));
  const auto& units = layout.units();
  for (const Span& s : spans)
    for (int u = 0; u < part.units(); ++u) {
      const std::int64_t begin = flat ? units[u].offset : part.unit_shard_offset(u);
      const std::int64_t size = flat ? units[u].size : part.unit_part_size(u);
      if (s.begin >= begin && s.end <= begin + size) out[std::size_t(u)].emplace_back(s.begin, s.end);
    }
  return out;
}

// This rank's part of every chunk's weights, from the counter RNG, into a shard buffer.
template <class S>
void init_shard(const ZeroModel<S>& model, const ZeroPartition& part, std::uint64_t seed, Vec<float> shard) {
  const auto& units = model.layout->units();
  for (int c = 0; c < int(part.chunks().size()); ++c) {
    const Span p = part.my_part(c);
    const auto& u = units[part.chunks()[c].unit];
    model.init_range(seed, slice(shard, part.shard_offset(c), p.size()), u.offset + p.begin, u.offset + p.end);
  }
}

std::vector<std::pair<std::int64_t, std::int64_t>> runs(const std::vector<Span>& spans) {
  std::vector<std::pair<std::int64_t, std::int64_t>> r;
  for (const Span& s : spans) r.emplace_back(s.begin, s.end);
  return r;
}
}  // namespace

template <class S>
ZeroAdamW<S>::ZeroAdamW(ZeroModel<S> model, comm::Communicator& group, int stage, AdamWConfig cfg,
                        std::uint64_t seed, std::int64_t bucket_elements, tp::TpComm* tp,
                        comm::Communicator* expert_group, ep::EpComm* ep, bool reduce_in_bf16)
    : model_(std::move(model)),
      stage_(stage),
      tp_(tp),
      ep_(ep),
      part_(param_layout(), group.size(), group.rank(), expert_group ? expert_group->size() : 0,
            expert_group ? expert_group->rank() : 0),
      dp_(group, part_, expert_group),
      bucket_(std::max<std::int64_t>(1, bucket_elements)) {
  if (reduce_in_bf16 && !is_bf16_v<S>)
    throw std::logic_error("mini5d: a bf16 gradient reduction needs a bf16 model (parallel.grad_reduce_dtype)");
  // Over a group of one nothing is sent: no rounding either.
  reduce_bf16_ = reduce_in_bf16 && (group.size() > 1 || (expert_group && expert_group->size() > 1));
  const auto& layout = param_layout();
  replicated_ = part_.replicated_spans(stage_ <= 1);
  experts_ = part_.expert_spans(stage_ <= 1);
  // Who counts what in the global norm (norm_share). Stages 0-1 leave the reduced sums
  // on every rank of their group; stages 2-3 leave each rank a shard of its own.
  const int tp_rank = tp_ ? tp_->rank() : 0;
  const int expert_rank = expert_group ? expert_group->rank() : group.rank();
  owns_dense_ = stage_ >= 2 || group.rank() == 0;
  owns_replicated_ = owns_dense_ && tp_rank == 0;
  owns_experts_ = stage_ >= 2 || expert_rank == 0;
  // Replicated key/value rows count on the first rank of their key/value group.
  kv_shared_ = part_.kv_shared_spans(stage_ <= 1);
  for (const auto& t : layout.tensors())
    if (t.replicas > 1) owns_kv_shared_ = owns_dense_ && t.replica == 0;
  std::vector<Segment> segs;
  if (stage_ == 0) {
    for (const auto& t : layout.tensors()) segs.push_back(segment(t.offset, t.size(), t.decay));
  } else {
    segs = part_.segments(stage_);
    // bf16 at stages 1-2: AdamW updates the master shard, laid out as the moments.
    if (is_bf16_v<S>)
      for (auto& sg : segs) sg.param_offset = sg.state_offset;
  }
  adamw_ = std::make_unique<AdamW<float>>(stage_ == 0 ? layout.total() : part_.shard_size(), segs, cfg);

  if (stage_ >= 2) {
    grad_shard_ = Vec<float>("mini5d::optim::grad_shard", part_.shard_size());
    grads_mem_ = mem::Charge(mem::Category::gradients, mem::view_bytes(grad_shard_));
    comm_mem_ = mem::Charge(mem::Category::comm_buffers, 0);
    for (auto& s : slots_) {
      s.grads = Vec<float>("mini5d::optim::unit_grads", part_.max_unit_size());
      s.part = Vec<float>("mini5d::optim::unit_grads_part", part_.max_part_size());
      comm_mem_.grow(mem::view_bytes(s.grads) + mem::view_bytes(s.part));
      if (reduce_bf16_) {
        s.wire = Vec<bf16>("mini5d::optim::unit_grads_bf16", part_.max_unit_size());
        s.wire_part = Vec<bf16>("mini5d::optim::unit_grads_part_bf16", part_.max_part_size());
        comm_mem_.grow(mem::view_bytes(s.wire) + mem::view_bytes(s.wire_part));
      }
    }
  }
  if (reduce_bf16_ && stage_ <= 1) {
    wire_ = Vec<bf16>("mini5d::optim::grads_bf16", layout.total());
    comm_mem_ = mem::Charge(mem::Category::comm_buffers, mem::view_bytes(wire_));
  }
  if (stage_ >= 3) {
    weight_shard_ = Vec<float>("mini5d::optim::weight_shard", part_.shard_size());
    // bf16: the fp32 shard is the master (optimizer state, as the planner counts it)
    // and the bf16 shard the weights.
    if constexpr (is_bf16_v<S>) {
      working_shard_ = Vec<S>("mini5d::optim::working_shard", part_.shard_size());
      weights_mem_ = mem::Charge(mem::Category::weights, mem::view_bytes(working_shard_));
      master_mem_ = mem::Charge(mem::Category::optimizer, mem::view_bytes(weight_shard_));
    } else {
      weights_mem_ = mem::Charge(mem::Category::weights, mem::view_bytes(weight_shard_));
    }
    for (auto& g : gathered_) {
      g.data = Vec<S>("mini5d::optim::unit_weights", part_.max_unit_size());
      comm_mem_.grow(mem::view_bytes(g.data));
    }
    // The rule for the two buffers (zero3_buffers.hpp): each local unit's chunk.
    buffers_ = zero3::GatherBuffers(model_.chunk_of, layout.units().front().global == 0);
    init_shard(model_, part_, seed, weight_shard_);
    if constexpr (is_bf16_v<S>) kernels::convert("mini5d::optim::working_shard", working_shard_, weight_shard_);
  } else if constexpr (is_bf16_v<S>) {
    // The fp32 master weights, from the same counter RNG: whole at stage 0, this rank's
    // shard at 1-2 (optimizer state, as the planner counts them). Stage 0 rounds the
    // working copy from the master it has just drawn; at 1-2 the model draws its whole
    // copy itself (the same values, rounded: model::init_param_range).
    master_ = Vec<float>("mini5d::optim::master_weights", stage_ == 0 ? layout.total() : part_.shard_size());
    master_mem_ = mem::Charge(mem::Category::optimizer, mem::view_bytes(master_));
    if (stage_ == 0) {
      model_.init_range(seed, master_, 0, layout.total());
      kernels::convert("mini5d::optim::working_copy", model_params(), master_);
      fence("mini5d::optim::working_copy_initialised");  // read next by MPI or a checksum
    } else {
      init_shard(model_, part_, seed, master_);
      model_.init_params(seed);
    }
  } else {
    model_.init_params(seed);
  }
  build_norm_pieces();
  if (tp_ && tp_->size() > 1 && model_.sequence_parallel && !replicated_.empty())
    tp_grads_ = tp::ReplicatedGrads(*tp_, replicated_by_unit(replicated_, part_, layout, stage_ <= 1));
  model_.set_hooks(this);
}

// The gradient buffer cut into pieces of one class each (plain, replicated, expert,
// shared key/value rows, a tied copy) for the fused norm.
template <class S>
void ZeroAdamW<S>::build_norm_pieces() {
  const std::int64_t grad_elements = stage_ <= 1 ? param_layout().total() : part_.shard_size();
  const auto pieces =
      kernels::norm_pieces(grad_elements, {{}, runs(replicated_), runs(experts_), runs(kv_shared_),
                                           runs(part_.tied_copy_spans(stage_ <= 1))});
  norm_pieces_ = decltype(norm_pieces_)("mini5d::optim::norm_pieces", pieces.size());
  auto h = Kokkos::create_mirror_view(norm_pieces_);
  for (std::size_t i = 0; i < pieces.size(); ++i) h(i) = pieces[i];
  Kokkos::deep_copy(norm_pieces_, h);
  table_mem_ = mem::Charge(mem::Category::workspace, mem::view_bytes(norm_pieces_));
}

template <class S>
void ZeroAdamW<S>::sum_kv_shared_over(tp::TpComm& kv) {
  if (kv.size() > 1 && !kv_shared_.empty())
    kv_grads_ = tp::ReplicatedGrads(kv, replicated_by_unit(kv_shared_, part_, param_layout(), stage_ <= 1));
}

template <class S>
ZeroAdamW<S>::~ZeroAdamW() {
  model_.set_hooks(nullptr);
  inflight_.clear();  // each request waits for itself
  weight_gathers_.clear();
  for (auto& s : slots_) s.reqs.clear();
  for (auto& g : gathered_) g.reqs.clear();
}

template <class S>
void ZeroAdamW<S>::begin_step() {
  tp_grads_.begin_step();
  kv_grads_.begin_step();
  if (stage_ >= 2)
    kernels::fill("mini5d::dp::zero_grad_shard", grad_shard_, 0.0f);
  else
    model_.zero_grads();
}

template <class S>
void ZeroAdamW<S>::begin_microbatch(bool last) {
  last_ = last;
  // The buffers start afresh (after an update they hold stale weights); when else is
  // the rule's (zero3_buffers.hpp), which the planner replays.
  for (auto& g : gathered_) wait_all(g.reqs);
  buffers_.drop();
}

template <class S>
void ZeroAdamW<S>::before_forward(int unit) {
  if (stage_ >= 3) need_weights(unit, true);
  if ((stage_ == 1 || stage_ == 2) && !weight_gathers_.empty())
    for (int c : part_.unit_chunks(unit)) weight_gathers_[c].wait();
}

template <class S>
void ZeroAdamW<S>::before_backward(int unit) {
  // The embeddings' backward reads no weights, only the token ids.
  if (stage_ >= 3 && buffers_.backward_reads(unit)) need_weights(unit, false);
  if (stage_ >= 2) {
    Slot& s = slots_[next_slot_];
    drain(s);
    const std::int64_t size = param_layout().units()[unit].size;
    kernels::fill("mini5d::dp::zero_unit_grads", slice(s.grads, 0, size), 0.0f);
    model_.bind_unit(unit, nullptr, s.grads.data());
    s.unit = unit;
  }
}

template <class S>
void ZeroAdamW<S>::progress() {
  for (auto& r : inflight_) r.test();
  if (!reducing_.empty()) start_replicated_sums();
  tp_grads_.progress();
  kv_grads_.progress();
  for (auto& r : weight_gathers_) r.test();
  for (auto& g : gathered_) test_all(g.reqs);
  for (auto& s : slots_)
    if (s.posted && test_all(s.reqs)) drain(s);
}

template <class S>
VecU<float> ZeroAdamW<S>::grad_buffer() const {
  return stage_ <= 1 ? VecU<float>(model_grads()) : VecU<float>(grad_shard_);
}

template <class S>
void ZeroAdamW<S>::poison_gradients() {
  const VecU<float> g = grad_buffer();
  kernels::fill("mini5d::fault::nan_gradient", Kokkos::subview(g, std::make_pair(0, 1)),
                std::numeric_limits<float>::quiet_NaN());
}

template <class S>
ZeroOptimizer::NormShare ZeroAdamW<S>::norm_share() const {
  const auto sq = kernels::class_squares<float>(norm_pieces_, grad_buffer());
  NormShare s;
  s.owned = (owns_dense_ ? sq[0] : 0.0) + (owns_replicated_ ? sq[1] : 0.0) + (owns_experts_ ? sq[2] : 0.0) +
            (owns_kv_shared_ ? sq[3] : 0.0);
  // Class 4, a tied head's copy of wte, counts on the first stage as wte.
  s.finite = std::isfinite(sq[0] + sq[1] + sq[2] + sq[3] + sq[4]);
  return s;
}

template <class S>
std::unique_ptr<ZeroOptimizer> make_zero_optimizer(ZeroModel<S> model, comm::Communicator& group, int stage,
                                                   AdamWConfig cfg, std::uint64_t seed, std::int64_t bucket_elements,
                                                   tp::TpComm* tp, comm::Communicator* expert_group, ep::EpComm* ep,
                                                   bool reduce_in_bf16) {
  return std::make_unique<ZeroAdamW<S>>(std::move(model), group, stage, cfg, seed, bucket_elements, tp, expert_group, ep,
                                        reduce_in_bf16);
}

template class ZeroAdamW<float>;
template class ZeroAdamW<bf16>;
template std::unique_ptr<ZeroOptimizer> make_zero_optimizer<float>(ZeroModel<float>, comm::Communicator&, int,
                                                                   AdamWConfig, std::uint64_t, std::int64_t,
                                                                   tp::TpComm*, comm::Communicator*, ep::EpComm*, bool);
template std::unique_ptr<ZeroOptimizer> make_zero_optimizer<bf16>(ZeroModel<bf16>, comm::Communicator&, int,
                                                                  AdamWConfig, std::uint64_t, std::int64_t,
                                                                  tp::TpComm*, comm::Communicator*, ep::EpComm*, bool);

}  // namespace mini5d::dp
