// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/watchdog.hpp"
#include "mini5d/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <stdexcept>

#include "mini5d/comm/device_mpi.hpp"
#include "mini5d/comm/agreement.hpp"
#include "mini5d/checkpoint/run_identity.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/deck_blame.hpp"
#include "mini5d/grid/layout_rules.hpp"
#include "mini5d/kernels/grad_norm.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/optim/schedule.hpp"
#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/fault_nan.hpp"
#include "mini5d/train/startup/memory_fit.hpp"
#include "mini5d/train/step_scalars.hpp"
#include "mini5d/train/stop_signal.hpp"
#include "mini5d/train/zero_model.hpp"

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

Trainer::Trainer(const Deck& deck, MPI_Comm comm)
    : deck_(deck),
      layout_(plan_layout(deck)),
      guard_(std::make_unique<StepGuard>(deck.train.max_skipped, deck.train.spike_factor)) {
  if (auto why = activation_budget_problem(deck_, layout_); !why.empty()) throw InputError(why);
  for (const auto& u : unsupported_features(deck_))  // tied: the sum needs ZeRO 0-1's whole buffer
    if (u.find("model.tie_embeddings") != std::string::npos) throw InputError(u);
  // Counting starts before the first allocation, so the first step's are seen too.
  prof::profile().enabled = kernel_profile_on(deck_);
  if (prof::profile().enabled) prof::start_counting_kokkos_events();
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  comm::watchdog::start(deck_.parallel.collective_timeout_s, world_rank);
  grid_ = std::make_unique<grid::ProcessGrid>(comm, deck_.parallel);
  // The app checks every rule first; a deck built in code (the tests') meets them too.
  if (const auto why = grid::layout_problems(deck_, grid_->size()); !why.empty()) throw InputError(why.front());
  // One identity for the run, chosen by rank 0 (a resume replaces it with the checkpoint's).
  run_id_ = comm::bcast_string(grid_->cart().get(), checkpoint::new_run_id(), 0);
  const auto transport =
      comm::gpu_aware_mpi(deck_.parallel.gpu_aware_mpi) ? comm::Transport::device : comm::Transport::staged;
  comms_ = std::make_unique<parallel::AxisComms>(*grid_, transport);
  model::ModelParallel mp{&comms_->tensor(), layout_.sp, deck_.train.recompute};
  mp.stage = pipeline_stage(deck_.model, layout_, grid_->coord(grid::Axis::p));
  mp.cp = &comms_->ring();
  mp.zigzag = cp::split_from_env(layout_.c).zigzag;
  mp.ep = &comms_->experts();
  mp.aux_loss_coef = deck_.train.aux_loss_coef;
  // Built once: the memory check reads it before anything is allocated, the model keeps it.
  model::ParamLayout params = model::param_layout(deck_.model, mp);
  // Before the data source is built: its tables count in the memory check.
  refuse_if_memory_short(params);
  // Agreed: a data file missing or unreadable on one node fails there only.
  comm::agreed(grid_->cart().get(), [&] { source_ = build_source(); });
  const int stage = layout_.zero;
  optim::AdamWConfig ac{deck_.train.beta1, deck_.train.beta2, deck_.train.eps, deck_.train.weight_decay};
  const auto bucket = std::int64_t(deck_.parallel.bucket_mb * 1024 * 1024 / sizeof(float));
  std::unique_ptr<ChunkRunner> chunks;
  // fp32, or bf16 with fp32 master weights (docs/precision.md); the rest of the run is
  // the same code.
  auto build = [&](auto& model, auto tag) {
    using S = decltype(tag);
    model = std::make_unique<model::Gpt<S>>(deck_.model, deck_.train.micro_batch, std::move(params),
                                            model_ownership(stage), mp);
    base_ = model.get();
    zero_ = dp::make_zero_optimizer<S>(zero_model(*model), comms_->dp(), stage, ac, deck_.train.seed, bucket, &comms_->tensor(),
                                       &comms_->dp_expert(), &comms_->experts(),
                                       deck_.parallel.grad_reduce_dtype == Precision::bf16);
    chunks = std::make_unique<GptChunks<S>>(*model);
  };
  if (deck_.train.precision == Precision::bf16)
    build(model16_, bf16{});
  else
    build(model_, float{});
  // Grouped-query attention with t > kv_heads: t/kv_heads ranks share each key/value head.
  if (layout_.t > deck_.model.kv_head_count())
    zero_->sum_kv_shared_over(comms_->split_kv_group(layout_.t / deck_.model.kv_head_count()));
  // A tied embedding split over the pipeline: the two ends' group, made once, and wte's
  // place (or its copy's) in the gradient buffer.
  if (const auto* wte = base_->layout().find("wte"); wte && deck_.model.tie_embeddings)
    tied_ = pp::TiedEmbedding(comms_->split_pipeline_ends(), wte->offset, wte->size());
  // Every step runs through the pipeline (p = 1: one stage).
  pipeline_ = std::make_unique<Pipeline>(deck_, pipeline_spec(layout_), comms_->pp(), std::move(chunks), *zero_,
                                         *source_, grid_->data_index(), grid_->data_shards());
  pipeline_->keep_timelines(!deck_.output.trace.empty());
  flops_per_token_ = model_flops_per_token(deck_.model, base_->layout().matmul_params());
  // The data source's tables.
  staging_mem_ = mem::Charge(mem::Category::workspace, source_->memory_bytes());
}

const model::Gpt<float>& Trainer::model() const {
  if (!model_) throw std::logic_error("mini5d: Trainer::model(): this run's model is not fp32 (model_info())");
  return *model_;
}

std::unique_ptr<data::Source> Trainer::build_source() const {
  int rank = 0;
  MPI_Comm_rank(grid_->cart().get(), &rank);
  // A large Markov table takes minutes: say so, report progress, and stop on SIGTERM
  // or SIGUSR1 (nothing has trained yet, so there is nothing to save).
  data::BuildHooks hooks;
  hooks.poll = [] {
    comm::watchdog::progress();  // local work under way: the start-up phase is not stuck
    if (const int sig = stop_signal())
      throw std::runtime_error("stopped by signal " + std::to_string(sig) +
                               " while building the data source; nothing was trained or saved");
  };
  if (rank == 0) hooks.note = [](const std::string& line) { std::cout << line << std::endl; };
  const double bytes = data::predicted_source_bytes(deck_);
  if (rank == 0 && bytes >= 256.0 * 1024 * 1024)
    std::cout << "data: building a Markov table of " << deck_.model.vocab << "^" << deck_.data.markov_order
              << " contexts x " << deck_.data.markov_branching << " successors (" << std::fixed
              << std::setprecision(2) << bytes / (1024.0 * 1024 * 1024) << std::defaultfloat
              << " GiB on every rank); progress every 10 s" << std::endl;
  auto source = data::make_source(deck_, hooks);
  if (source->vocab() > deck_.model.vocab)
  {
    const std::string what = "model.vocab=" + std::to_string(deck_.model.vocab) +
                             " is smaller than the data's vocabulary " + std::to_string(source->vocab());
    throw InputError(blamed_origin(deck_, what + " data.path") + ": " + what);
  }
  return source;
}

void Trainer::refuse_if_memory_short(const model::ParamLayout& layout) {
  MemoryNeed need;
  need.data = data::predicted_source_bytes(deck_);
  // The header's predictions, from the deck and the model's layout alone: nothing is
  // allocated yet. (A pipeline rank holds only its stage's units.)
  // Dense tensors sharded over the dense-gradient group, experts over the expert one.
  const double experts = double(layout.expert_total());
  const auto s = state_bytes(deck_, layout_, double(layout.total()) - experts, comms_->dp().size());
  const auto x = state_bytes(deck_, layout_, experts, comms_->dp_expert().size());
  need.state = s.weights + s.grads + s.optimizer + x.weights + x.grads + x.optimizer;
  const auto a = predicted_activation_memory();
  need.activations = a.activations;
  need.workspace = a.workspace;
  const auto offer = memory_offer(grid_->cart().get(), need);
  const std::string problem = memory_fit_problem(deck_.source(), need, offer);
  std::vector<std::string> problems;
  if (!problem.empty() && !deck_.train.allow_oversubscribe_memory) problems.push_back(problem);
  comm::raise_if_any(grid_->cart().get(), problems, comm::ProblemKind::Input);
}

std::int64_t Trainer::global_sequences_per_step() const {
  return std::int64_t(deck_.train.micro_batch) * deck_.train.accumulation * grid_->data_shards();
}

std::int64_t Trainer::tokens_per_step() const { return global_sequences_per_step() * deck_.model.seq; }

StepStats Trainer::step(long s) {
  if (steps_run_ == 1) {
    // The kernel table leaves out this process's first step (page faults, BLAS set-up).
    prof::profile().reset();
    profiled_seconds_ = 0;
    profiled_steps_ = 0;
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
  phases_.data += pipeline_->data_seconds() - d0;
  phases_.forward += pipeline_->forward_seconds() - f0;
  phases_.backward += pipeline_->backward_seconds() - b0;
  {
    Phase p("mini5d::train::reduce", phases_.reduce);
    zero_->finish_reductions();
    tied_.sum(zero_->reduced_grads());  // a tied embedding's two ends (ZeRO 0-1: the whole buffer)
  }
  if (fault_nan_now(comms_->world().rank(), s + 1)) zero_->poison_gradients();
  StepStats st;
  st.step = s + 1;
  {
    Phase p("mini5d::train::optimizer", phases_.optimizer);
    reduce_and_update(st, s, loss_sum, tokens);
  }
  fence("mini5d::train::step_done");  // the step's timer stops after its kernels
  st.seconds = timer.seconds();
  st.events = prof::kokkos_events() - events_before;
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

long Trainer::skipped_steps() const {
  long n = 0;
  for (const auto& st : history_) n += st.skipped ? 1 : 0;
  return n;
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
      halted_ = "step " + std::to_string(next_step_) +
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
      halted_ = std::string(e.what()) + " (the save after step " + std::to_string(next_step_) +
                " failed: the run stops, the previous checkpoint stays latest)";
      return false;
    }
    last_saved = next_step_;
    return true;
  };
  const long last = until > 0 ? std::min(until, deck_.train.steps) : deck_.train.steps;
  for (long s = next_step_; s < last; ++s) {
    history_.push_back(step(s));
    next_step_ = s + 1;
    if (on_step) on_step(history_.back());
    poll_background_save(saved);
    if (verdict_ == StepGuard::Verdict::Stop) {
      halted_ = "step " + std::to_string(next_step_) + ": " + guard_->why();
      break;
    }
    if (schedule.due(next_step_, history_.back().seconds) && !save_if_finite(schedule.reason())) break;
    if (stop_requested(last_saved == next_step_)) {
      if (last_saved != next_step_) save_if_finite(std::string("signal ") + (stopped_by_ == SIGTERM ? "SIGTERM" : "SIGUSR1"));
      break;
    }
  }
  if (halted_.empty() && stopped_by_ == 0 && next_step_ == deck_.train.steps && deck_.checkpoint.at_end &&
      last_saved != next_step_)
    save_if_finite("end of run");
  finish_background_save(saved, stopped_by_ ? "stop signal" : "end of run");  // an error: halt_reason
  // The end of the run's gathers, as one watchdog phase (a rank stopped after its last
  // step must not leave the others waiting in them).
  static const std::string kWorldAxis = "world";
  comm::watchdog::Scope finishing(kWorldAxis, "end of the run", true);
  comm::watchdog::maybe_injected_stop("end");
  zero_->settle();
  total_seconds_ = timer.seconds();
  if (pipeline()) summarise_pipeline();
  summarise_traffic(traffic_before, next_step_ - first_step);
  summarise_ranks();
}

}  // namespace mini5d::train
