// SPDX-License-Identifier: BSD-3-Clause
// The training loop of one rank of the process grid: sample this rank's share of the
// step's global batch, run forward and backward over the accumulation micro-batches
// while ZeRO reduces the gradients unit by unit, clip by the true global gradient
// norm, apply the scheduled learning rate with (sharded) AdamW. It records per-step
// statistics, per-phase timings and communication for the progress lines and the
// JSON report, and the memory ledger next to the analytic prediction.
#pragma once
#include <mpi.h>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/comm/communicator.hpp"
#include "mini5d/kernels/kokkos_events.hpp"
#include "mini5d/data/source.hpp"
#include "mini5d/grid/process_grid.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/parallel/dp/zero_optimizer.hpp"
#include "mini5d/parallel/axis_comms.hpp"
#include "mini5d/parallel/pp/tied_embedding.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/train/async_checkpoint.hpp"
#include "mini5d/train/checkpoint_interval.hpp"
#include "mini5d/train/pipeline.hpp"
#include "mini5d/train/startup/activation_budget.hpp"
#include "mini5d/train/step_guard.hpp"

namespace mini5d::train {

struct StepStats {
  long step = 0;          // 1-based
  double loss = 0;        // mean token loss of the step
  double lr = 0;
  double grad_norm = 0;   // before clipping
  double seconds = 0;
  double tokens_per_s = 0;
  double flops_per_s = 0;  // model FLOP/s (see model_flops_per_token)
  double comm_seconds = 0;  // communication in flight during the step (all axes)
  double comm_exposed = 0;  // time inside MPI calls and staging (comm/accounts.hpp)
  std::map<std::string, double> exposed_by_axis;  // the exposed part, per axis
  // Not applied: the loss or the gradient norm was not finite on some rank, so the
  // parameters and moments were left as they were (see StepGuard). `note` says why a
  // step was skipped or stopped the run ("" for a step applied as usual).
  bool skipped = false;
  std::string note;
  // Mixture of experts (model.experts > 0; empty / 0 otherwise), over the global batch:
  // rows each expert computed (summed over MoE layers and micro-batches), their max /
  // mean, assignments dropped in capacity mode, and the load-balancing loss (added to
  // the objective, not to `loss`, which stays the token cross-entropy).
  std::vector<double> expert_load;
  double imbalance = 0;
  double dropped = 0;
  double aux_loss = 0;
  // What the step asked of Kokkos and MPI (all zero when output.kernel_profile is off):
  // kernel launches, fences, deep copies, allocations (kernels/kokkos_events.hpp), and
  // MPI calls on every axis (comm/accounts.hpp).
  prof::KokkosEvents events;
  long mpi_calls = 0;
};

// Whether output.kernel_profile turns on, for this backend, the per-kernel timers and
// the per-step Kokkos event counts (auto: on for host backends).
bool kernel_profile_on(const Deck& deck);

struct PhaseTimes {
  // reduce: waiting for the gradient reductions still in flight after the backward.
  double data = 0, forward = 0, backward = 0, reduce = 0, optimizer = 0;
};

// A checkpoint written or read.
struct CheckpointEvent {
  std::string kind;  // "save" or "load"
  std::string path, reason;  // reason: "every", "end", "signal SIGTERM", "resume"
  long step = 0;
  double bytes = 0, seconds = 0;  // summed over ranks; wall time of the slowest rank
  std::vector<std::string> changes;  // a resume: "resume: train.lr changed 0.001 -> 0.0005", one per field
  // checkpoint.async: `seconds` is the background write; snapshot_seconds the copy that
  // blocked training (slowest rank); wait_seconds how long training then waited for the
  // write (rank 0), at `waited_at` ("next save", "end of run"; "" if it never waited).
  bool async = false;
  double snapshot_seconds = 0, wait_seconds = 0;
  std::string waited_at;
};

// A phase's time over the ranks, at the end of the run.
struct PhaseSpread {
  PhaseTimes min, mean, max;
};

// Bytes of training state one rank holds, per category.
struct StateMemory {
  double weights = 0, gradients = 0, optimizer = 0;
};

// One axis's payload bytes per step (communication accounts, scalars left out): the
// planner's prediction and the measurement on this rank, their means over every rank,
// and the worst relative difference of any rank. The expert all-to-alls depend on the
// router: a rank's bytes differ from the prediction, their mean does not (dropless).
struct AxisTrafficSummary {
  std::string axis;
  double predicted = 0, measured = 0;
  double mean_predicted = 0, mean_measured = 0;
  double worst = 0;
};

// One rank's pipeline figures at the end of a run: the bubble measured (mean over the
// steps after the first), predicted (the schedule replayed with each virtual stage's
// modelled cost, rules/pipeline_replay.hpp) and the even-stage formula's; the most micro-batches in flight (in units
// of all the stage's layers: (micro-batch, chunk) pairs / v) measured and as the
// planner predicts; the activation bytes the stage holds and the planner's prediction.
struct PipelineRankSummary {
  int rank = 0;
  std::array<int, 5> coords{};  // d, p, c, e, t
  double bubble = 0, predicted = 0, formula = 0, in_flight = 0, predicted_in_flight = 0;
  double activations = 0, predicted_activations = 0;
};

// Training state of `params` parameters sharded over a ZeRO group of `group` ranks, as
// the planner counts it for the deck's precision and the layout's ZeRO stage
// (train/trainer_memory.cpp).
plan::StateBytes state_bytes(const Deck& deck, const plan::Layout& layout, double params, int group);

// Model FLOPs per trained token: 6 * N (N = parameters in matrix products) for the
// matrix products forward and backward, plus 12 * layers * d_model * seq for the
// attention scores and their weighted sums.
double model_flops_per_token(const ModelConfig& m, std::int64_t matmul_params);

// "step-00000012": a checkpoint's name in checkpoint.dir (without ".h5").
std::string checkpoint_name(long step);

namespace testing {
// Test-only fault injection: every rank multiplies its gradient scale (1 / global
// tokens) by `factor`, as a rank that normalised by a wrong token count would (1: no
// error). Process-wide; read at each step.
void set_gradient_scale_error(double factor);
}  // namespace testing

class Trainer {
 public:
  // Collective over `comm`, whose size must equal the deck's layout (validated by the
  // caller: grid::layout_problems). One rank by default.
  explicit Trainer(const Deck& deck, MPI_Comm comm = MPI_COMM_SELF);
  // Runs from the current step (0, or where a resume left off) to deck.train.steps;
  // calls on_step after each step and on_checkpoint after each save. Saves every
  // checkpoint.every steps (auto: train/checkpoint_interval.hpp), after the last step if checkpoint.at_end, and when SIGTERM
  // or SIGUSR1 arrived (then it stops after saving; see stopped_by()). A step with a
  // non-finite loss or gradient norm is skipped; too many in a row, a loss spike, or a
  // non-finite state at a save stop the run without saving (see halt_reason()).
  // `until` > 0 stops after that step instead (the schedule still spans train.steps),
  // as a job cut short by its time limit would.
  void run(const std::function<void(const StepStats&)>& on_step = {},
           const std::function<void(const CheckpointEvent&)>& on_checkpoint = {}, long until = 0);
  // Restores weights, moments, step, schedule and data position from a checkpoint
  // (`latest` in checkpoint.dir, or a path). Collective. Throws InputError on a
  // missing, corrupt or mismatching checkpoint.
  CheckpointEvent resume(const std::string& where);
  // Saves the current state as "step-<n>" in checkpoint.dir. Collective.
  CheckpointEvent save(const std::string& reason);
  long current_step() const { return next_step_; }
  // The signal that stopped the run early (0 if it ran to the end).
  int stopped_by() const { return stopped_by_; }
  // Why the run stopped because it diverged ("" if it did not): one line.
  const std::string& halt_reason() const { return halted_; }
  // Steps skipped for a non-finite loss or gradient norm, in this process's run.
  long skipped_steps() const;
  // The run's identity, kept in its checkpoints (a resume continues the checkpoint's).
  const std::string& run_id() const { return run_id_; }
  const std::vector<CheckpointEvent>& checkpoints() const { return checkpoints_; }

  const Deck& deck() const { return deck_; }
  // The parallel layout (degrees, ZeRO stage, SP, schedule, the resolved stage split),
  // computed once from the deck at start-up: the run reads its degrees here, never from
  // the deck's parallel section again.
  const plan::Layout& parallel_layout() const { return layout_; }
  const data::Source& source() const { return *source_; }
  // The model, whatever its precision (layout, chunks, memory).
  const model::ModelBase& model_info() const { return *base_; }
  // The fp32 model's buffers (tests); a bf16 run has none: logic_error.
  const model::Gpt<float>& model() const;
  const grid::ProcessGrid& grid() const { return *grid_; }
  const dp::ZeroOptimizer& optimizer() const { return *zero_; }
  // Sequences of the global batch per step: micro_batch x accumulation x d x e.
  std::int64_t global_sequences_per_step() const;
  // Weights, gradients and optimizer state: the analytic prediction (16 bytes per
  // parameter at stage 0, each category divided by the group size from its stage on)
  // and what the memory ledger measured on this rank.
  StateMemory predicted_state_memory() const;
  StateMemory measured_state_memory() const;
  // The model's activations kept for the backward and its work buffers: the planner's
  // formulas (plan/cost/memory_model.hpp) for this deck's t, SP and recompute, and what the
  // model allocated.
  ActivationMemory predicted_activation_memory() const;
  // Expert parameters on this rank (elements): the planner's block formula
  // (plan::block_params, times the MoE blocks) and the model's layout.
  double predicted_expert_params() const;
  double measured_expert_params() const;
  ActivationMemory measured_activation_memory() const;
  const std::vector<StepStats>& history() const { return history_; }
  // The pipeline whose figures (bubble, in-flight micro-batches, trace) the run reports:
  // with p > 1, or at p = 1 when output.trace asks for the schedule; nullptr otherwise
  // (every step runs through a pipeline, but one stage's bubble is zero by construction).
  const Pipeline* pipeline() const {
    return layout_.p > 1 || !deck_.output.trace.empty() ? pipeline_.get() : nullptr;
  }
  // Every rank's pipeline figures, gathered at the end of run() (empty without a pipeline).
  const std::vector<PipelineRankSummary>& pipeline_summary() const { return pipeline_summary_; }
  const PhaseTimes& phases() const { return phases_; }
  // Wall time and count of this process's steps since the kernel profile
  // (kernels/profile.hpp) was last reset: after its first step (all of them when it ran
  // one). The report's kernel table divides the profile by these.
  double profiled_seconds() const { return profiled_seconds_; }
  long profiled_steps() const { return profiled_steps_; }
  const PhaseSpread& phase_spread() const { return spread_; }  // over every rank
  // Peak bytes per memory category (mem::Category order) of every rank, gathered at the
  // end of the run: [rank][category].
  const std::vector<std::vector<double>>& peak_memory_by_rank() const { return peaks_; }
  // Ring attention (c > 1) of every rank, gathered at the end of the run: [rank] =
  // {blocks per layer per forward, seconds computing blocks}; empty when c = 1.
  const std::vector<std::vector<double>>& ring_by_rank() const { return ring_; }
  // Payload bytes per optimizer step on each axis (t, c, e, p, d, d (experts)) during the
  // last run(): the planner's prediction for this rank's pipeline stage
  // (plan/cost/axis_traffic.hpp) and what the accounts measured, gathered at its end.
  const std::vector<AxisTrafficSummary>& traffic_summary() const { return traffic_; }
  double total_seconds() const { return total_seconds_; }
  std::int64_t tokens_per_step() const;  // global
  double flops_per_token() const { return flops_per_token_; }

 private:
  // Refuses (InputError on every rank) a run whose predicted memory per rank exceeds
  // what its node or device has free, unless train.allow_oversubscribe_memory=true.
  // The deck's data source, with progress lines (rank 0) and a stop on a stop signal.
  std::unique_ptr<data::Source> build_source() const;
  // `params`: the model's parameter layout, built before the model.
  void refuse_if_memory_short(const model::ParamLayout& params);
  StepStats step(long s);
  // The step's scalars reduced, the guard's verdict and (if it applies) the update.
  void reduce_and_update(StepStats& st, long s, double loss_sum, double tokens);
  void summarise_ranks();  // collective: spread_, peaks_, ring_ (train/run_summary.cpp)
  // Has any rank received a stop signal? As of the last step's scalars; after a save,
  // collective: the ranks agree again.
  bool stop_requested(bool after_save);
  bool state_is_finite();  // collective: weights and moments free of NaN and infinity?
  // Asynchronous saves (train/trainer_checkpoint.cpp). `notify` gets each save's event
  // once its write has finished. Collective: start-up, the save and the wait.
  using Notify = std::function<void(const CheckpointEvent&)>;
  void prepare_background_saves();  // the writer, if checkpoint.async and MPI allow it
  checkpoint::CheckpointMeta checkpoint_meta() const;  // of the current step
  void save_in_background(const std::string& reason, const Notify& notify);
  // Waits for the save in flight, if any, and reports it; `where` names the wait. An
  // AgreedError of its write is thrown on every rank.
  void finish_background_save(const Notify& notify, const char* where);
  // Reports the save in flight if its write has finished; never blocks.
  void poll_background_save(const Notify& notify);
  // When run() saves, from checkpoint.every (train/checkpoint_interval.cpp). Collective
  // with checkpoint.every=auto: it counts the job's nodes.
  CheckpointSchedule checkpoint_schedule();
  Deck deck_;
  plan::Layout layout_;  // from deck_, once (parallel_layout())
  std::string run_id_;
  std::unique_ptr<StepGuard> guard_;
  StepGuard::Verdict verdict_ = StepGuard::Verdict::Apply;  // of the last step
  std::string halted_;
  long next_step_ = 0;
  int stopped_by_ = 0;
  int agreed_stop_ = 0;  // the signal the last step's scalars carried (0: none)
  std::vector<CheckpointEvent> checkpoints_;
  std::unique_ptr<grid::ProcessGrid> grid_;
  std::unique_ptr<parallel::AxisComms> comms_;  // every accounted communicator of the run
  std::unique_ptr<Pipeline> pipeline_;
  std::vector<PipelineRankSummary> pipeline_summary_;
  void summarise_pipeline();  // collective: fills pipeline_summary_, writes output.trace
  std::vector<double> traffic_snapshot() const;  // accounted payload bytes per summary axis
  void summarise_traffic(const std::vector<double>& before, long steps);  // collective: fills traffic_
  std::vector<AxisTrafficSummary> traffic_;
  std::unique_ptr<data::Source> source_;
  // One of the two, as train.precision says; base_ points at it.
  std::unique_ptr<model::Gpt<float>> model_;
  std::unique_ptr<model::Gpt<bf16>> model16_;
  model::ModelBase* base_ = nullptr;
  std::unique_ptr<dp::ZeroOptimizer> zero_;
  pp::TiedEmbedding tied_;  // model.tie_embeddings at p > 1, on the pipeline's two ends
  std::vector<StepStats> history_;
  PhaseTimes phases_;
  long steps_run_ = 0;             // steps this process ran
  double profiled_seconds_ = 0;    // their wall time since the kernel profile's reset
  long profiled_steps_ = 0;
  PhaseSpread spread_;
  std::vector<std::vector<double>> peaks_, ring_;
  double total_seconds_ = 0;
  double flops_per_token_ = 0;
  mem::Charge staging_mem_;  // the data source's tables
  // Last: the writer thread ends (its save waited for) before anything else goes.
  std::unique_ptr<AsyncCheckpointWriter> writer_;
  std::optional<CheckpointEvent> pending_;  // the save the writer is writing
};

}  // namespace mini5d::train
