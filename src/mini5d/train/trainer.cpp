// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "mini5d/comm/device_mpi.hpp"
#include "mini5d/checkpoint/collective.hpp"
#include "mini5d/checkpoint/run_identity.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/optim/schedule.hpp"
#include "mini5d/parallel/cp/zigzag.hpp"
#include "mini5d/plan/axis_traffic.hpp"
#include "mini5d/plan/memory_model.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/memory_fit.hpp"
#include "mini5d/train/stop_signal.hpp"

namespace mini5d::train {

double model_flops_per_token(const ModelConfig& m, std::int64_t matmul_params) {
  return 6.0 * double(matmul_params) + 12.0 * m.layers * double(m.d_model) * m.seq;
}

namespace {
double g_gradient_scale_error = 1.0;  // testing::set_gradient_scale_error
}  // namespace

void testing::set_gradient_scale_error(double factor) { g_gradient_scale_error = factor; }

namespace {
// Brackets a phase with a Kokkos profiling region (seen by Kokkos Tools and vendor
// profilers) and a fenced wall-clock timer.
class Phase {
 public:
  Phase(const char* region, double& sink) : region_(region), sink_(sink) {
    Kokkos::Profiling::pushRegion(region);
  }
  ~Phase() {
    fence(region_);
    sink_ += timer_.seconds();
    Kokkos::Profiling::popRegion();
  }

 private:
  const char* region_;
  double& sink_;
  Kokkos::Timer timer_;
};

// Communication recorded so far, per axis (a copy, to difference across a step).
std::map<std::string, comm::OpStats> comm_by_axis() {
  std::map<std::string, comm::OpStats> m;
  for (const auto& [axis, a] : comm::accounts().axes()) m[axis] = a.total;
  return m;
}
}  // namespace

ActivationMemory predicted_activation_memory(const Deck& deck, int stage) {
  // The planner's shapes for this deck: dense blocks, and MoE blocks where the model
  // has experts (every moe_every-th), with a router that balances its load.
  const plan::ModelDesc md = plan_model(deck);
  const plan::Layout l = plan_layout(deck);
  const plan::ActShape moe = plan::act_shape(md, l, plan::Precision::fp32);
  plan::ActShape dense = moe;
  dense.experts = 0;
  const auto blocks = plan::stage_blocks(md, l, stage, deck.model.moe_every);
  double per_mb = blocks.dense * plan::block_activation_bytes(dense, l.recompute) +
                  blocks.moe * plan::block_activation_bytes(moe, l.recompute);
  if (blocks.embedding) per_mb += plan::embedding_activation_bytes(dense);
  if (blocks.head) per_mb += plan::head_activation_bytes(dense);
  // The stage's layers, its embeddings or head, times the micro-batches in flight.
  const double in_flight =
      l.p > 1 ? plan::in_flight_microbatches(l.schedule, l.p, l.accumulation, l.virtual_stages, stage) : 1.0;
  return {per_mb * in_flight, plan::workspace_bytes(dense, l.recompute)};
}

std::string activation_budget_problem(const Deck& deck) {
  const double budget = deck.train.activation_budget_mib;
  if (budget <= 0) return "";
  // The fullest pipeline stage (the only one without a pipeline).
  ActivationMemory p;
  for (int stage = 0; stage < deck.parallel.p; ++stage) {
    const auto q = predicted_activation_memory(deck, stage);
    if (q.activations + q.workspace > p.activations + p.workspace) p = q;
  }
  const double mib = 1024.0 * 1024.0, total = (p.activations + p.workspace) / mib;
  if (total <= budget) return "";
  char line[512];
  std::snprintf(line, sizeof line,
                "%s: train.activation_budget_mib=%g: the predicted activation memory per rank is %.1f MiB "
                "(kept %.1f + work buffers %.1f) at parallel.c=%d, parallel.t=%d, train.micro_batch=%d; raise "
                "parallel.c (ring attention splits the sequence and keeps no seq x seq probabilities) or lower "
                "train.micro_batch",
                deck.origin.c_str(), budget, total, p.activations / mib, p.workspace / mib, deck.parallel.c,
                deck.parallel.t, deck.train.micro_batch);
  return line;
}

Trainer::Trainer(const Deck& deck, MPI_Comm comm)
    : deck_(deck), guard_(std::make_unique<StepGuard>(deck.train.max_skipped, deck.train.spike_factor)) {
  // Refused before anything is allocated (the app checks it even earlier).
  if (auto why = activation_budget_problem(deck_); !why.empty()) throw InputError(why);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  comm::watchdog::start(deck_.parallel.collective_timeout_s, world_rank);
  grid_ = std::make_unique<grid::ProcessGrid>(comm, deck_.parallel);
  // One identity for the run, chosen by rank 0 (a resume replaces it with the checkpoint's).
  run_id_ = checkpoint::detail::bcast_string(grid_->cart().get(), checkpoint::new_run_id(), 0);
  const auto transport =
      comm::gpu_aware_mpi(deck_.parallel.gpu_aware_mpi) ? comm::Transport::device : comm::Transport::staged;
  dense_ = std::make_unique<comm::Communicator>(grid_->dense_grad(), "dp", transport);
  all_ = std::make_unique<comm::Communicator>(grid_->cart(), "world", transport);
  tensor_ = std::make_unique<comm::Communicator>(grid_->axis(grid::Axis::t), "tp", transport);
  tp_ = std::make_unique<tp::TpComm>(*tensor_);
  context_ = std::make_unique<comm::Communicator>(grid_->axis(grid::Axis::c), "cp", transport);
  cp_ = std::make_unique<cp::CpComm>(*context_);
  expert_dp_ = std::make_unique<comm::Communicator>(grid_->expert_grad(), "dp_expert", transport);
  expert_ = std::make_unique<comm::Communicator>(grid_->expert_parallel(), "ep", transport);
  ep_ = std::make_unique<ep::EpComm>(*expert_);
  pipe_ = std::make_unique<comm::Communicator>(grid_->axis(grid::Axis::p), "pp", transport);
  // A pipeline runs the step when p > 1, and at p = 1 when a trace of it is asked for.
  const bool pipelined = deck_.parallel.p > 1 || !deck_.output.trace.empty();
  // Agreed: a data file missing or unreadable on one node fails there only.
  checkpoint::detail::agreed(grid_->cart().get(), [&] {
    source_ = data::make_source(deck_);
    if (source_->vocab() > deck_.model.vocab)
      throw InputError(deck_.origin + ": model.vocab=" + std::to_string(deck_.model.vocab) +
                       " is smaller than the data's vocabulary " + std::to_string(source_->vocab()));
  });
  const int stage = deck_.parallel.zero;
  refuse_if_memory_short();
  model::ModelParallel mp{tp_.get(), deck_.parallel.sp == "true", model::parse_recompute(deck_.train.recompute)};
  if (pipelined) mp.stage = pipeline_stage(deck_, grid_->coord(grid::Axis::p));
  mp.cp = cp_.get();
  mp.zigzag = cp::split_from_env(deck_.parallel.c).zigzag;
  mp.ep = ep_.get();
  mp.aux_loss_coef = deck_.train.aux_loss_coef;
  model_ = std::make_unique<model::Gpt<float>>(deck_.model, deck_.train.micro_batch,
                                               optim::model_ownership(stage), mp);
  optim::AdamWConfig ac{deck_.train.beta1, deck_.train.beta2, deck_.train.eps, deck_.train.weight_decay};
  const auto bucket = std::int64_t(deck_.parallel.bucket_mb * 1024 * 1024 / sizeof(float));
  zero_ = std::make_unique<optim::ZeroOptimizer>(*model_, *dense_, stage, ac, deck_.train.seed, bucket, tp_.get(),
                                                 expert_dp_.get(), ep_.get());
  if (pipelined) {
    zero_->set_pipeline_group(pipe_.get());
    pipeline_ = std::make_unique<Pipeline>(deck_, *pipe_, *model_, *zero_, *source_, grid_->data_index(),
                                           grid_->data_shards());
    pipeline_->keep_timelines(!deck_.output.trace.empty());
  }
  flops_per_token_ = model_flops_per_token(deck_.model, model_->layout().matmul_params());
  // Whole sequences are sampled; with context parallelism the rank keeps n of their tokens.
  const int whole = deck_.train.micro_batch * deck_.model.seq, n = model_->dims().tokens;
  h_in_ = decltype(h_in_)("mini5d::train::inputs_host", n);
  h_tg_ = decltype(h_tg_)("mini5d::train::targets_host", n);
  d_in_ = Vec<int>("mini5d::train::inputs", n);
  d_tg_ = Vec<int>("mini5d::train::targets", n);
  inputs_.resize(std::size_t(whole));
  targets_.resize(std::size_t(whole));
  if (n != whole) {
    local_inputs_.resize(std::size_t(n));
    local_targets_.resize(std::size_t(n));
  }
  // Token staging (host vectors, host and device views) and the data source's tables.
  staging_mem_ = mem::Charge(mem::Category::workspace,
                             2 * (std::int64_t(whole + (n != whole ? n : 0)) * std::int64_t(sizeof(int)) +
                                  mem::view_bytes(h_in_) + mem::view_bytes(d_in_)) +
                                 source_->memory_bytes());
}

void Trainer::refuse_if_memory_short() {
  MemoryNeed need;
  // The header's predictions, from the deck alone: nothing is allocated yet.
  // (A pipeline rank holds only its stage's units.)
  const model::ParamLayout layout(deck_.model, grid_->dim(grid::Axis::t), grid_->coord(grid::Axis::t),
                                  deck_.parallel.p > 1 ? model::stage_units(deck_.model, pipeline_stage(
                                                                              deck_, grid_->coord(grid::Axis::p)))
                                                       : std::vector<int>{},
                                  expert_->size(), expert_->rank());
  // Dense tensors sharded over the dense-gradient group, experts over the expert one.
  const double experts = double(layout.expert_total());
  const auto s = plan::zero_state_bytes(double(layout.total()) - experts, deck_.parallel.zero, dense_->size(),
                                        plan::Precision::fp32);
  const auto x = plan::zero_state_bytes(experts, deck_.parallel.zero, expert_dp_->size(), plan::Precision::fp32);
  need.state = s.weights + s.grads + s.optimizer + x.weights + x.grads + x.optimizer;
  const auto a = predicted_activation_memory();
  need.activations = a.activations;
  need.workspace = a.workspace;
  const auto offer = memory_offer(grid_->cart().get(), need);
  const std::string problem = memory_fit_problem(deck_.origin, need, offer);
  std::vector<std::string> problems;
  if (!problem.empty() && deck_.train.allow_oversubscribe_memory != "true") problems.push_back(problem);
  checkpoint::detail::raise_if_any(grid_->cart().get(), problems, checkpoint::detail::ProblemKind::Input);
}

std::int64_t Trainer::global_sequences_per_step() const {
  return std::int64_t(deck_.train.micro_batch) * deck_.train.accumulation * grid_->data_shards();
}

std::int64_t Trainer::tokens_per_step() const { return global_sequences_per_step() * deck_.model.seq; }

StateMemory Trainer::predicted_state_memory() const {
  // Dense tensors sharded over the dense-gradient group, expert tensors over the
  // expert-gradient group (the planner's split: plan/memory_model.cpp).
  const double experts = double(model_->layout().expert_total());
  const auto b = plan::zero_state_bytes(double(model_->layout().total()) - experts, deck_.parallel.zero,
                                        zero_->partition().group_size(), plan::Precision::fp32);
  const auto e = plan::zero_state_bytes(experts, deck_.parallel.zero, zero_->partition().expert_group_size(),
                                        plan::Precision::fp32);
  return {b.weights + e.weights, b.grads + e.grads, b.optimizer + e.optimizer};
}

ActivationMemory Trainer::predicted_activation_memory() const {
  return train::predicted_activation_memory(deck_, grid_->coord(grid::Axis::p));
}

double Trainer::predicted_expert_params() const {
  const auto& m = deck_.model;
  if (m.experts == 0) return 0;
  int moe_blocks = 0;  // of this pipeline stage's units
  for (const auto& u : model_->layout().units())
    if (u.global >= 1 && u.global <= m.layers && model::is_moe_block(m, u.global - 1)) ++moe_blocks;
  return moe_blocks * plan::block_params(plan_model(deck_), plan_layout(deck_)).expert;
}

double Trainer::measured_expert_params() const { return double(model_->layout().expert_total()); }

ActivationMemory Trainer::measured_activation_memory() const {
  return {double(model_->activation_bytes()), double(model_->workspace_bytes())};
}

StateMemory Trainer::measured_state_memory() const {
  const auto& l = mem::ledger();
  return {double(l.of(mem::Category::weights).current), double(l.of(mem::Category::gradients).current),
          double(l.of(mem::Category::optimizer).current)};
}

StepStats Trainer::step(long s) {
  if (steps_run_ == 1) {
    // The kernel table leaves out this process's first step (page faults, BLAS set-up).
    prof::profile().reset();
    profiled_seconds_ = 0;
    profiled_steps_ = 0;
  }
  Kokkos::Timer timer;
  const auto comm_before = comm_by_axis();
  const auto& tc = deck_.train;
  const int B = tc.micro_batch, T = deck_.model.seq;
  const double tokens = double(tokens_per_step());
  // Gradient of the mean over every token of the global batch: each rank scales its
  // own tokens by 1/global tokens, and the reduction sums the ranks.
  const float grad_scale = float(g_gradient_scale_error / tokens);
  // This rank's sequences: micro-batch a of data shard j holds global sequences
  // a*B*shards + j*B + [0, B), so every layout trains on the same global batch.
  const std::uint64_t shards = std::uint64_t(grid_->data_shards()), j = std::uint64_t(grid_->data_index());

  comm::watchdog::set_step(s + 1);
  comm::watchdog::maybe_injected_sleep(s + 1);
  zero_->begin_step();
  model_->reset_moe_stats();
  double loss_sum = 0;
  if (pipeline_) {
    // The schedule runs every micro-batch's forward and backward (parallel/pp).
    const double f0 = pipeline_->forward_seconds(), b0 = pipeline_->backward_seconds();
    loss_sum = pipeline_->run_step(s, grad_scale);
    phases_.forward += pipeline_->forward_seconds() - f0;
    phases_.backward += pipeline_->backward_seconds() - b0;
  }
  for (int a = 0; !pipeline_ && a < tc.accumulation; ++a) {
    {
      Phase p("mini5d::train::data", phases_.data);
      data::fill_batch(*source_, std::uint64_t(s), (std::uint64_t(a) * shards + j) * B, B, T, inputs_, targets_);
      // Context parallelism: the same sequences on every rank of the c ring, each
      // keeping its two chunks of every sequence.
      const std::vector<int>* in = &inputs_;
      const std::vector<int>* tg = &targets_;
      if (!local_inputs_.empty()) {
        cp::take_local(inputs_, B, T, model_->dims().pos, local_inputs_);
        cp::take_local(targets_, B, T, model_->dims().pos, local_targets_);
        in = &local_inputs_;
        tg = &local_targets_;
      }
      for (int i = 0; i < int(in->size()); ++i) {
        h_in_(i) = (*in)[std::size_t(i)];
        h_tg_(i) = (*tg)[std::size_t(i)];
      }
      Kokkos::deep_copy(d_in_, h_in_);
      Kokkos::deep_copy(d_tg_, h_tg_);
    }
    zero_->begin_microbatch(a == tc.accumulation - 1);
    {
      Phase p("mini5d::train::forward", phases_.forward);
      loss_sum += model_->forward(d_in_, d_tg_, grad_scale);
    }
    {
      Phase p("mini5d::train::backward", phases_.backward);
      model_->backward();
    }
  }
  {
    Phase p("mini5d::train::reduce", phases_.reduce);
    zero_->finish_reductions();
  }
  StepStats st;
  st.step = s + 1;
  {
    Phase p("mini5d::train::optimizer", phases_.optimizer);
    double loss = loss_sum;
    dense_->allreduce_host(&loss, 1);
    if (pipeline_) pipe_->allreduce_host(&loss, 1);  // the last stage's loss
    st.loss = loss / tokens;
    st.grad_norm = zero_->grad_norm();
    st.lr = optim::learning_rate(s, tc.steps, tc.warmup, tc.lr, tc.min_lr);
    // One flag over every rank: a stage that sees a NaN another does not must not
    // update alone.
    double bad = std::isfinite(st.loss) && std::isfinite(st.grad_norm) ? 0.0 : 1.0;
    all_->allreduce_host(&bad, 1, comm::Communicator::Op::max);
    verdict_ = guard_->judge(bad != 0.0, st.loss, st.grad_norm);
    if (verdict_ == StepGuard::Verdict::Apply) {
      zero_->clip(st.grad_norm, tc.grad_clip);
      zero_->update(st.lr, s + 1);
    } else {
      // A skipped step and the step that stops the run leave the state untouched.
      st.skipped = verdict_ == StepGuard::Verdict::Skip;
      st.note = guard_->why();
    }
  }
  if (deck_.model.experts > 0) {
    // [load per expert, dropped, aux] over every rank (each routed its own rows).
    const auto& ms = model_->moe_stats();
    const int E = deck_.model.experts;
    std::vector<double> v(std::size_t(E) + 2, 0.0);
    for (int e = 0; e < E && e < int(ms.load.size()); ++e) v[std::size_t(e)] = ms.load[std::size_t(e)];
    v[std::size_t(E)] = ms.dropped;
    v[std::size_t(E) + 1] = ms.aux;
    all_->allreduce_host(v.data(), int(v.size()));
    st.expert_load.assign(v.begin(), v.begin() + E);
    double mx = 0, sum = 0;
    for (double l : st.expert_load) {
      mx = std::max(mx, l);
      sum += l;
    }
    st.imbalance = sum > 0 ? mx / (sum / E) : 0;
    st.dropped = v[std::size_t(E)];
    st.aux_loss = v[std::size_t(E) + 1] / tokens;
  }
  fence("mini5d::train::step_done");  // the step's timer stops after its kernels
  st.seconds = timer.seconds();
  ++steps_run_;
  profiled_seconds_ += st.seconds;
  ++profiled_steps_;
  st.tokens_per_s = tokens / st.seconds;
  st.flops_per_s = st.tokens_per_s * flops_per_token_;
  for (const auto& [axis, now] : comm_by_axis()) {
    const auto before = comm_before.find(axis);
    const comm::OpStats was = before == comm_before.end() ? comm::OpStats{} : before->second;
    st.comm_seconds += now.seconds - was.seconds;
    st.comm_exposed += now.exposed - was.exposed;
    st.exposed_by_axis[axis] = now.exposed - was.exposed;
  }
  return st;
}

KernelTable Trainer::kernel_table() const {
  KernelTable k;
  k.profile = prof::profile();
  k.step_seconds = profiled_seconds_;
  k.steps = profiled_steps_;
  k.ceilings = cached_ceilings();
  return k;
}

long Trainer::skipped_steps() const {
  long n = 0;
  for (const auto& st : history_) n += st.skipped ? 1 : 0;
  return n;
}

bool Trainer::state_is_finite() {
  zero_->settle();
  double bad = 0;
  for (const auto& b : {zero_->weights(), zero_->exp_avg(), zero_->exp_avg_sq()})
    bad += double(count_nonfinite(CVecU<float>(b.data.data(), b.data.extent(0))));
  all_->allreduce_host(&bad, 1, comm::Communicator::Op::max);
  return bad == 0;
}

bool Trainer::stop_requested() {
  // Ranks may see the signal at slightly different times; the largest agrees.
  double sig = stop_signal();
  all_->allreduce_host(&sig, 1, comm::Communicator::Op::max);
  stopped_by_ = int(sig);
  return stopped_by_ != 0;
}

void Trainer::run(const std::function<void(const StepStats&)>& on_step,
                  const std::function<void(const CheckpointEvent&)>& on_checkpoint, long until) {
  Kokkos::Timer timer;
  const auto traffic_before = traffic_snapshot();
  const long first_step = next_step_;
  const auto& ck = deck_.checkpoint;
  auto saved = [&](const CheckpointEvent& e) {
    if (on_checkpoint) on_checkpoint(e);
  };
  long last_saved = -1;
  install_stop_handlers();
  // Never a checkpoint from a non-finite state: the run stops instead and the
  // previous checkpoint stays `latest`.
  auto save_if_finite = [&](const std::string& reason) {
    if (!state_is_finite()) {
      halted_ = "step " + std::to_string(next_step_) +
                ": the weights or optimizer moments hold NaN or infinite values: not saved, the run stops "
                "(the previous checkpoint stays latest; lower train.lr)";
      return false;
    }
    saved(save(reason));
    last_saved = next_step_;
    return true;
  };
  const long last = until > 0 ? std::min(until, deck_.train.steps) : deck_.train.steps;
  for (long s = next_step_; s < last; ++s) {
    history_.push_back(step(s));
    next_step_ = s + 1;
    if (on_step) on_step(history_.back());
    if (verdict_ == StepGuard::Verdict::Stop) {
      halted_ = "step " + std::to_string(next_step_) + ": " + guard_->why();
      break;
    }
    if (ck.every > 0 && next_step_ % ck.every == 0 && !save_if_finite("every " + std::to_string(ck.every) + " steps"))
      break;
    if (stop_requested()) {
      if (last_saved != next_step_) save_if_finite(std::string("signal ") + (stopped_by_ == SIGTERM ? "SIGTERM" : "SIGUSR1"));
      break;
    }
  }
  if (halted_.empty() && stopped_by_ == 0 && next_step_ == deck_.train.steps && ck.at_end == "true" &&
      last_saved != next_step_)
    save_if_finite("end of run");
  zero_->settle();
  total_seconds_ = timer.seconds();
  if (pipeline_) summarise_pipeline();
  summarise_traffic(traffic_before, next_step_ - first_step);
  // Min / mean / max of each phase over the ranks: a slow rank shows up here.
  double mine[5] = {phases_.data, phases_.forward, phases_.backward, phases_.reduce, phases_.optimizer};
  double lo[5], hi[5], sum[5];
  std::copy(mine, mine + 5, lo);
  std::copy(mine, mine + 5, hi);
  std::copy(mine, mine + 5, sum);
  all_->allreduce_host(lo, 5, comm::Communicator::Op::min);
  all_->allreduce_host(hi, 5, comm::Communicator::Op::max);
  all_->allreduce_host(sum, 5, comm::Communicator::Op::sum);
  auto as_phases = [](const double* v, double scale) {
    return PhaseTimes{v[0] * scale, v[1] * scale, v[2] * scale, v[3] * scale, v[4] * scale};
  };
  spread_ = {as_phases(lo, 1.0), as_phases(sum, 1.0 / grid_->size()), as_phases(hi, 1.0)};
  // Every rank's memory peaks (ranks of one ZeRO group differ when a unit does not
  // divide evenly; later axes make stages differ more).
  std::vector<double> mine_peaks(mem::kCategories), all(std::size_t(mem::kCategories) * grid_->size());
  for (int c = 0; c < mem::kCategories; ++c) mine_peaks[c] = double(mem::ledger().of(mem::Category(c)).peak);
  all_->allgather_host(mine_peaks.data(), mem::kCategories, all.data());
  peaks_.assign(grid_->size(), {});
  for (int r = 0; r < grid_->size(); ++r)
    peaks_[r].assign(all.begin() + r * mem::kCategories, all.begin() + (r + 1) * mem::kCategories);
  // Ring attention's work per rank: the balance zig-zag buys (and contiguous loses).
  if (const auto* ring = model_->ring()) {
    const auto& rs = ring->stats();
    const double mine_ring[2] = {rs.forward_calls ? double(rs.forward_blocks) / double(rs.forward_calls) : 0.0,
                                 rs.compute_seconds};
    std::vector<double> every(2 * std::size_t(grid_->size()));
    all_->allgather_host(mine_ring, 2, every.data());
    ring_.assign(grid_->size(), {});
    for (int r = 0; r < grid_->size(); ++r) ring_[r] = {every[2 * r], every[2 * r + 1]};
  }
}

}  // namespace mini5d::train
