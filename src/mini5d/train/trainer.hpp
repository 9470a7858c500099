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
#include "mini5d/train/run_record.hpp"
#include "mini5d/train/startup/activation_budget.hpp"
#include "mini5d/train/startup/trainer_parts.hpp"
#include "mini5d/train/step_guard.hpp"

namespace mini5d::train {

// Whether output.kernel_profile turns on, for this backend, the per-kernel timers and
// the per-step Kokkos event counts (auto: on for host backends).
bool kernel_profile_on(const Deck& deck);

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
  // From parts already built (train/startup/trainer_parts.hpp).
  explicit Trainer(TrainerParts parts);
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
  // What the run did and measured, and its set-up's facts: what report/ reads.
  const RunRecord& record() const { return record_; }

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
  // The pipeline whose figures (bubble, in-flight micro-batches, trace) the run reports:
  // with p > 1, or at p = 1 when output.trace asks for the schedule; nullptr otherwise
  // (every step runs through a pipeline, but one stage's bubble is zero by construction).
  const Pipeline* pipeline() const {
    return layout_.p > 1 || !deck_.output.trace.empty() ? pipeline_.get() : nullptr;
  }
  std::int64_t tokens_per_step() const;  // global

 private:
  // The set-up's facts and the memory figures, into the record.
  void record_facts();
  void record_memory();
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
  std::unique_ptr<const Deck> deck_owner_;
  const Deck& deck_;
  RunSettings settings_;
  const plan::Layout& layout_ = settings_.layout;
  std::unique_ptr<StepGuard> guard_;
  StepGuard::Verdict verdict_ = StepGuard::Verdict::Apply;  // of the last step
  long next_step_ = 0;
  int agreed_stop_ = 0;  // the signal the last step's scalars carried (0: none)
  // The parts (train/startup/trainer_parts.hpp), in the order they go away (reversed).
  std::unique_ptr<grid::ProcessGrid> grid_;
  std::unique_ptr<parallel::AxisComms> comms_;
  std::unique_ptr<Pipeline> pipeline_;
  void summarise_pipeline();  // collective: fills pipeline_summary_, writes output.trace
  std::vector<double> traffic_snapshot() const;  // accounted payload bytes per summary axis
  void summarise_traffic(const std::vector<double>& before, long steps);  // collective: fills traffic_
  std::unique_ptr<data::Source> source_;
  std::unique_ptr<model::Gpt<float>> model_;
  std::unique_ptr<model::Gpt<bf16>> model16_;
  model::ModelBase* base_ = nullptr;
  std::unique_ptr<dp::ZeroOptimizer> zero_;
  pp::TiedEmbedding tied_;
  long steps_run_ = 0;  // steps this process ran
  RunRecord record_;
  mem::Charge staging_mem_;
  // Last: the writer thread ends (its save waited for) before anything else goes.
  std::unique_ptr<AsyncCheckpointWriter> writer_;
  std::optional<CheckpointEvent> pending_;  // the save the writer is writing
};

}  // namespace mini5d::train
