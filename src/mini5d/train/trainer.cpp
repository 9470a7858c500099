// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/watchdog.hpp"
#include "mini5d/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mini5d/comm/device_mpi.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/kernels/grad_norm.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/optim/schedule.hpp"
#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/train/fault_nan.hpp"
#include "mini5d/train/step_scalars.hpp"
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
// profilers) and a wall-clock timer, fenced with the kernel profile on
// (prof::fence_for_timing).
class Phase {
 public:
  Phase(const char* region, double& sink) : region_(region), sink_(sink) {
    Kokkos::Profiling::pushRegion(region);
  }
  ~Phase() {
    prof::fence_for_timing(region_);
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

bool kernel_profile_on(const Deck& deck) {
  const Toggle k = deck.output.kernel_profile;
  return k == Toggle::on || (k == Toggle::automatic && std::is_same<ExecSpace, Kokkos::DefaultHostExecutionSpace>::value);
}

Trainer::Trainer(const Deck& deck, MPI_Comm comm) : Trainer(build_trainer_parts(deck, comm)) {}

Trainer::Trainer(TrainerParts parts)
    : deck_owner_(std::move(parts.deck)),
      deck_(*deck_owner_),
      settings_(parts.settings),
      guard_(std::make_unique<StepGuard>(deck_.train.max_skipped, deck_.train.spike_factor)),
      grid_(std::move(parts.grid)),
      comms_(std::move(parts.comms)),
      pipeline_(std::move(parts.pipeline)),
      source_(std::move(parts.source)),
      model_(std::move(parts.model)),
      model16_(std::move(parts.model16)),
      base_(parts.base),
      zero_(std::move(parts.zero)),
      tied_(std::move(parts.tied)),
      staging_mem_(std::move(parts.staging)) {
  record_.run_id = parts.run_id;
  record_facts();
  record_memory();
}

void Trainer::record_facts() {
  RunFacts& f = record_.facts;
  f.deck = deck_;
  f.layout = layout_;
  f.grid = grid_->describe();
  f.data = source_->describe();
  f.loss_floor = source_->loss_floor(deck_.model.seq);
  f.mpi_buffers = comm::describe_mpi_memory(deck_.parallel.gpu_aware_mpi);
  f.parameters = base_->layout().total();
  f.matmul_parameters = base_->layout().matmul_params();
  f.tokens_per_step = tokens_per_step();
  f.flops_per_token = model_flops_per_token(deck_.model, base_->layout().matmul_params());
  f.zero_group = zero_->partition().group_size();
  f.expert_zero_group = zero_->partition().expert_group_size();
  if (const Pipeline* pl = pipeline()) {
    f.pipeline = pl->spec();
    f.split = pipeline_split(deck_.model, layout_);
    for (const auto& c : base_->chunks()) f.chunks.push_back({c.first_block, c.blocks, c.embedding, c.head});
  }
}

void Trainer::record_memory() {
  MemoryFigures& m = record_.memory;
  m.predicted_state = predicted_state_memory();
  m.measured_state = measured_state_memory();
  m.predicted_activations = predicted_activation_memory();
  m.measured_activations = measured_activation_memory();
  m.predicted_expert_params = predicted_expert_params();
  m.measured_expert_params = measured_expert_params();
}

const model::Gpt<float>& Trainer::model() const {
  if (!model_) throw std::logic_error("mini5d: Trainer::model(): this run's model is not fp32 (model_info())");
  return *model_;
}

std::int64_t Trainer::global_sequences_per_step() const {
  return std::int64_t(deck_.train.micro_batch) * deck_.train.accumulation * grid_->data_shards();
}

std::int64_t Trainer::tokens_per_step() const { return global_sequences_per_step() * deck_.model.seq; }

StepStats Trainer::step(long s) {
  if (steps_run_ == 1) {
    // The kernel table leaves out this process's first step (page faults, BLAS set-up).
    prof::profile().reset();
    record_.profiled_seconds = 0;
    record_.profiled_steps = 0;
  }
  Kokkos::Timer timer;
  const auto comm_before = comm_by_axis();
  const auto events_before = prof::kokkos_events();
  const double tokens = double(tokens_per_step());
  // Gradient of the mean over every token of the global batch: each rank scales its
  // own tokens by 1/global tokens, and the reduction sums the ranks.
  const float grad_scale = float(g_gradient_scale_error / tokens);

  comm::watchdog::set_step(s + 1);
  comm::watchdog::maybe_injected_sleep(s + 1);
  zero_->begin_step();
  base_->reset_moe_stats();
  // The schedule runs every micro-batch's forward and backward (parallel/pp; one stage
  // at p = 1), sampling the step's tokens first.
  const double d0 = pipeline_->data_seconds(), f0 = pipeline_->forward_seconds(),
               b0 = pipeline_->backward_seconds();
  const double loss_sum = pipeline_->run_step(s, grad_scale);
  record_.phases.data += pipeline_->data_seconds() - d0;
  record_.phases.forward += pipeline_->forward_seconds() - f0;
  record_.phases.backward += pipeline_->backward_seconds() - b0;
  {
    Phase p("mini5d::train::reduce", record_.phases.reduce);
    zero_->finish_reductions();
    tied_.sum(zero_->reduced_grads());  // a tied embedding's two ends (ZeRO 0-1: the whole buffer)
  }
  if (fault_nan_now(comms_->world().rank(), s + 1)) zero_->poison_gradients();
  StepStats st;
  st.step = s + 1;
  {
    Phase p("mini5d::train::optimizer", record_.phases.optimizer);
    reduce_and_update(st, s, loss_sum, tokens);
  }
  fence("mini5d::train::step_done");  // the step's timer stops after its kernels
  st.seconds = timer.seconds();
  st.events = prof::kokkos_events() - events_before;
  ++steps_run_;
  record_.profiled_seconds += st.seconds;
  ++record_.profiled_steps;
  st.tokens_per_s = tokens / st.seconds;
  st.flops_per_s = st.tokens_per_s * record_.facts.flops_per_token;
  for (const auto& [axis, now] : comm_by_axis()) {
    const auto before = comm_before.find(axis);
    const comm::OpStats was = before == comm_before.end() ? comm::OpStats{} : before->second;
    st.comm_seconds += now.seconds - was.seconds;
    st.comm_exposed += now.exposed - was.exposed;
    st.mpi_calls += now.calls - was.calls;
    st.exposed_by_axis[axis] = now.exposed - was.exposed;
  }
  return st;
}

void Trainer::reduce_and_update(StepStats& st, long s, double loss_sum, double tokens) {
  const auto& tc = deck_.train;
  // The step's scalars in one all-reduce over every rank. Every tensor-parallel rank
  // computed the same loss: the first one counts it.
  const auto share = zero_->norm_share();
  StepScalars mine;
  mine.loss = grid_->coord(grid::Axis::t) == 0 ? loss_sum : 0.0;
  mine.norm_squares = share.owned;
  mine.nonfinite = std::isfinite(loss_sum) && share.finite ? 0.0 : 1.0;
  const int sig = stop_signal();
  mine.sigterm = sig == SIGTERM ? 1.0 : 0.0;
  mine.sigusr1 = sig == SIGUSR1 ? 1.0 : 0.0;
  if (deck_.model.experts > 0) {
    // Each rank routed its own rows.
    const auto& ms = base_->moe_stats();
    mine.expert_load.assign(std::size_t(deck_.model.experts), 0.0);
    for (std::size_t e = 0; e < mine.expert_load.size() && e < ms.load.size(); ++e) mine.expert_load[e] = ms.load[e];
    mine.dropped = ms.dropped;
    mine.aux = ms.aux;
  }
  std::vector<double> packed = mine.pack();
  comms_->world().allreduce_host(packed.data(), int(packed.size()));
  const StepScalars sum = StepScalars::unpack(packed);
  st.loss = sum.loss / tokens;
  // Ranks may see a signal at slightly different times: one that any rank has seen
  // stops every rank after this step (SIGTERM before SIGUSR1, as the larger number).
  agreed_stop_ = sum.sigterm > 0 ? SIGTERM : sum.sigusr1 > 0 ? SIGUSR1 : 0;
  st.grad_norm = std::sqrt(sum.norm_squares);
  st.lr = optim::learning_rate(s, tc.steps, tc.warmup, tc.lr, tc.min_lr);
  // One verdict on every rank: a stage that sees a NaN another does not must not
  // update alone.
  const bool bad = sum.nonfinite > 0 || !std::isfinite(st.loss) || !std::isfinite(st.grad_norm);
  verdict_ = guard_->judge(bad, st.loss, st.grad_norm);
  if (verdict_ == StepGuard::Verdict::Apply) {
    zero_->update(st.lr, s + 1, kernels::clip_factor(st.grad_norm, tc.grad_clip));
  } else {
    // A skipped step and the step that stops the run leave the state untouched.
    st.skipped = verdict_ == StepGuard::Verdict::Skip;
    st.note = guard_->why();
  }
  if (deck_.model.experts > 0) {
    st.expert_load = sum.expert_load;
    double mx = 0, all = 0;
    for (double l : st.expert_load) {
      mx = std::max(mx, l);
      all += l;
    }
    st.imbalance = all > 0 ? mx / (all / deck_.model.experts) : 0;
    st.dropped = sum.dropped;
    st.aux_loss = sum.aux / tokens;
  }
}

void Trainer::run(const std::function<void(const StepStats&)>& on_step,
                  const std::function<void(const CheckpointEvent&)>& on_checkpoint, long until) {
  Kokkos::Timer timer;
  const auto traffic_before = traffic_snapshot();
  const long first_step = next_step_;
  auto schedule = checkpoint_schedule();
  auto saved = [&](const CheckpointEvent& e) {
    if (on_checkpoint) on_checkpoint(e);
    schedule.saved(e);  // after the save's line: a re-derived interval follows it
  };
  long last_saved = -1;
  install_stop_handlers();
  prepare_background_saves();
  // Never a checkpoint from a non-finite state: the run stops instead and the
  // previous checkpoint stays `latest`.
  auto save_if_finite = [&](const std::string& reason) {
    if (!state_is_finite()) {
      record_.halted = "step " + std::to_string(next_step_) +
                ": the weights or optimizer moments hold NaN or infinite values: not saved, the run stops "
                "(the previous checkpoint stays latest; lower train.lr)";
      return false;
    }
    // A failed save (a full disk) is found by every rank together (AgreedError): the run
    // stops there, but the steps it did train still get their summary, FOM line and
    // report, marked invalid with the reason (halt_reason), rather than being lost.
    try {
      if (writer_)
        save_in_background(reason, saved);
      else
        saved(save(reason));
    } catch (const AgreedError& e) {
      record_.halted = std::string(e.what()) + " (the save after step " + std::to_string(next_step_) +
                " failed: the run stops, the previous checkpoint stays latest)";
      return false;
    }
    last_saved = next_step_;
    return true;
  };
  const long last = until > 0 ? std::min(until, deck_.train.steps) : deck_.train.steps;
  for (long s = next_step_; s < last; ++s) {
    record_.history.push_back(step(s));
    next_step_ = s + 1;
    if (on_step) on_step(record_.history.back());
    poll_background_save(saved);
    if (verdict_ == StepGuard::Verdict::Stop) {
      record_.halted = "step " + std::to_string(next_step_) + ": " + guard_->why();
      break;
    }
    if (schedule.due(next_step_, record_.history.back().seconds) && !save_if_finite(schedule.reason())) break;
    if (stop_requested(last_saved == next_step_)) {
      if (last_saved != next_step_) save_if_finite(std::string("signal ") + (record_.stopped_by == SIGTERM ? "SIGTERM" : "SIGUSR1"));
      break;
    }
  }
  if (record_.halted.empty() && record_.stopped_by == 0 && next_step_ == deck_.train.steps && deck_.checkpoint.at_end &&
      last_saved != next_step_)
    save_if_finite("end of run");
  finish_background_save(saved, record_.stopped_by ? "stop signal" : "end of run");  // an error: halt_reason
  // The end of the run's gathers, as one watchdog phase (a rank stopped after its last
  // step must not leave the others waiting in them).
  static const std::string kWorldAxis = "world";
  comm::watchdog::Scope finishing(kWorldAxis, "end of the run", true);
  comm::watchdog::maybe_injected_stop("end");
  zero_->settle();
  record_.total_seconds = timer.seconds();
  if (pipeline()) summarise_pipeline();
  summarise_traffic(traffic_before, next_step_ - first_step);
  summarise_ranks();
  // What the ledger and the model hold now; the predictions do not change after start-up.
  record_.memory.measured_state = measured_state_memory();
  record_.memory.measured_activations = measured_activation_memory();
}

}  // namespace mini5d::train
