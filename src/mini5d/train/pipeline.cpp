// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/pipeline.hpp"

#include <algorithm>

#include "mini5d/rules/stage_split.hpp"


namespace mini5d::train {

pp::Spec pipeline_spec(const plan::Layout& layout) {
  // One stage runs 1F1B whatever the deck says: GPipe's all-forwards-first would keep
  // every micro-batch's activations at once for no overlap.
  const Schedule kind = layout.p > 1 ? layout.schedule : Schedule::one_f_one_b;
  return {kind, layout.p, layout.virtual_stages, layout.accumulation};
}

SplitShape pipeline_split_shape(const ModelConfig& m) {
  return {m.layers, m.d_model, m.ffn, m.vocab, m.seq, m.experts, m.top_k, m.moe_every, m.mlp == Mlp::swiglu};
}

SplitShape pipeline_split_shape(const Deck& deck) { return pipeline_split_shape(deck.model); }

std::vector<long long> pipeline_split(const Deck& deck) {
  return stage_split(pipeline_split_shape(deck), 1LL * deck.parallel.p * deck.parallel.virtual_stages,
                     deck.parallel.stage_layers);
}

std::vector<long long> pipeline_split(const ModelConfig& m, const plan::Layout& layout) {
  // Start-up resolved the split at p > 1; one stage (then v = 1) holds every block.
  if (layout.stage_layers.given()) return layout.stage_layers.counts;
  return stage_split(pipeline_split_shape(m), 1LL * layout.p * layout.virtual_stages, layout.stage_layers);
}

model::StageSpec pipeline_stage(const ModelConfig& m, const plan::Layout& layout, int stage) {
  const pp::Spec s = pipeline_spec(layout);
  const int P = s.p * s.v;
  const auto split = pipeline_split(m, layout);
  const std::vector<long long> blocks = chunk_blocks(split, s.p, stage);
  model::StageSpec st;
  for (int c = 0; c < s.v; ++c) {
    const int vs = pp::virtual_stage(s, stage, c);
    st.chunks.push_back({int(first_block_of(split, vs)), int(blocks[std::size_t(c)]), vs == 0, vs == P - 1});
  }
  // Activation sets: the schedule's peak of blocks in flight over the (micro-batch,
  // chunk) pairs whose forward ran and backward not (chunks may differ in blocks); the
  // embeddings and the head follow their own chunk's peak.
  const auto actions = pp::schedule(s, stage);
  std::vector<int> per_chunk;
  pp::peak_in_flight(actions, s.v, &per_chunk);
  st.block_slots = int(pp::peak_in_flight_weighted(actions, blocks));
  st.embedding_slots = stage == 0 ? per_chunk.front() : 0;
  st.head_slots = stage == s.p - 1 ? per_chunk.back() : 0;
  return st;
}

Pipeline::Pipeline(const Deck& deck, const pp::Spec& s, comm::Communicator& pipe, std::unique_ptr<ChunkRunner> model,
                   dp::ZeroOptimizer& zero, const data::Source& source, int data_index, int data_shards)
    : deck_(deck), model_(std::move(model)), zero_(zero), source_(source), data_index_(data_index), data_shards_(data_shards) {
  comm_ = std::make_unique<pp::PpComm>(pipe, s.p * s.v, s.m);
  const auto& d = model_->dims();
  exec_ = std::make_unique<pp::Executor>(s, *comm_, model_->boundary_bytes());
  tokens_ = d.tokens;  // micro_batch * seq / c
  const int B = deck.train.micro_batch;
  for (int tl = 0; tl < tokens_ / B; ++tl) positions_.push_back(d.pos.global(tl));
  const std::int64_t all = std::int64_t(tokens_) * s.m;
  inputs_ = Vec<int>("mini5d::train::pipeline_inputs", all);
  targets_ = Vec<int>("mini5d::train::pipeline_targets", all);
  h_in_ = decltype(h_in_)("mini5d::train::pipeline_inputs_host", all);
  h_tg_ = decltype(h_tg_)("mini5d::train::pipeline_targets_host", all);
  tokens_mem_ = mem::Charge(mem::Category::workspace, 2 * (mem::view_bytes(inputs_) + mem::view_bytes(h_in_)) +
                                                          std::int64_t(sizeof(int)) * (deck.model.seq + 1));
}

double Pipeline::run_step(long step, float grad_scale) {
  const pp::Spec& s = spec();
  const int B = deck_.train.micro_batch, T = deck_.model.seq;
  {
    Kokkos::Profiling::pushRegion("mini5d::train::data");
    Kokkos::Timer timer;
    // Micro-batch a of data shard j holds global sequences a*B*shards + j*B + [0, B), so
    // every layout trains on the same global batch.
    for (int a = 0; a < s.m; ++a) {
      const std::uint64_t first =
          (std::uint64_t(a) * std::uint64_t(data_shards_) + std::uint64_t(data_index_)) * std::uint64_t(B);
      const std::int64_t at = std::int64_t(a) * tokens_;
      data::sample_tokens(source_, std::uint64_t(step), first, B, T, positions_, scratch_, h_in_.data() + at,
                          h_tg_.data() + at);
    }
    // Queued on the instance the step's kernels run on, so they follow it without a
    // fence (a deep copy without an execution space fences globally, twice). h_in_ and
    // h_tg_ are pageable: a device copy from them has read them when it returns, and
    // the next step rewrites them only after this step's closing fence.
    Kokkos::deep_copy(ExecSpace(), inputs_, h_in_);
    Kokkos::deep_copy(ExecSpace(), targets_, h_tg_);
    data_s_ += timer.seconds();
    Kokkos::Profiling::popRegion();
  }
  grad_scale_ = grad_scale;
  loss_ = 0;
  // ZeRO-3 drops the weights it gathered in the last step (the update made them stale).
  // One stage starts each micro-batch afresh before its forward instead (forward()).
  if (s.p > 1) zero_.begin_microbatch(false);
  pp::StepTimeline tl = exec_->run(*this, step + 1);
  BubbleStats b{step + 1, tl.busy(), tl.waiting(), tl.span, tl.bubble(), tl.peak_in_flight()};
  bubbles_.push_back(b);
  for (const auto& e : tl.events) {
    if (e.kind == pp::Event::forward) forward_s_ += e.t1 - e.t0;
    if (e.kind == pp::Event::backward) backward_s_ += e.t1 - e.t0;
  }
  if (keep_ && int(timelines_.size()) < kTraceSteps) timelines_.push_back(std::move(tl));
  return loss_;
}

CVecU<pp::Byte> Pipeline::forward(int mb, int chunk, CVecU<pp::Byte> input) {
  const auto at = std::make_pair(std::int64_t(mb) * tokens_, std::int64_t(mb + 1) * tokens_);
  const CTok in = Kokkos::subview(inputs_, at);
  const CTokU tg = Kokkos::subview(targets_, at);
  // One stage: each micro-batch's forward and backward run back to back, so ZeRO starts
  // it here, as one micro-batch (stage 3 gathers each unit once per use; stages 0-1
  // reduce during the last micro-batch's backward).
  if (spec().p == 1) zero_.begin_microbatch(mb == spec().m - 1);
  loss_ += model_->forward(chunk, mb, in, input, tg, grad_scale_);
  // The last block's output (kept for the backward, so unchanged until then).
  return model_->output(chunk, mb);
}

CVecU<pp::Byte> Pipeline::backward(int mb, int chunk, CVecU<pp::Byte> grad_output) {
  // ZeRO 0-1 start a unit's reduction after its last micro-batch's backward (every
  // schedule runs a chunk's backwards in micro-batch order).
  if (spec().p > 1) zero_.begin_microbatch(mb == spec().m - 1);
  // The model's shared residual-gradient buffer, unchanged until the next backward.
  return model_->backward(chunk, mb, grad_output);
}

}  // namespace mini5d::train
