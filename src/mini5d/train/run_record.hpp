// SPDX-License-Identifier: BSD-3-Clause
// What a run leaves for whoever reads it: the facts of its set-up, fixed when the trainer
// is built, and what happened after: every step, every checkpoint, how the run ended,
// the end-of-run gathers over the ranks, and the planner's predictions beside what was
// measured. The trainer writes it; report/ reads it and nothing else of the trainer, so
// the report needs neither the model nor the communicators (and the tests read the same
// figures the report prints).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/kernels/kokkos_events.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/rules/pipeline_schedule.hpp"
#include "mini5d/train/startup/activation_budget.hpp"

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

// A chunk of the blocks rank 0's pipeline stage runs as one (model::ChunkSpec).
struct StageChunk {
  int first_block = 0, blocks = 0;
  bool embedding = false, head = false;
};

// The set-up, as the header and the JSON record describe it: copied once from the
// trainer's parts when it is built (a resume changes none of it but the run id).
struct RunFacts {
  Deck deck;             // the deck as run
  plan::Layout layout;   // its parallel layout, resolved once (Trainer::parallel_layout)
  std::string grid;      // grid::ProcessGrid::describe()
  std::string data;      // data::Source::describe()
  std::optional<double> loss_floor;  // the source's exact floor at model.seq, if it has one
  std::string mpi_buffers;  // where MPI's buffers live (comm::describe_mpi_memory)
  std::int64_t parameters = 0, matmul_parameters = 0;  // on this rank
  std::int64_t tokens_per_step = 0;  // global
  double flops_per_token = 0;        // model_flops_per_token
  int zero_group = 1, expert_zero_group = 1;  // ZeRO's dense and expert partition groups
  // The pipeline the run reports (Trainer::pipeline(); empty without one): its schedule
  // blocks per virtual stage, and this rank's chunks.
  std::optional<pp::Spec> pipeline;
  std::vector<long long> split;
  std::vector<StageChunk> chunks;
};

// The planner's predictions for this rank beside what was measured: at start-up, and
// again at the end of every run().
struct MemoryFigures {
  StateMemory predicted_state, measured_state;
  ActivationMemory predicted_activations, measured_activations;
  double predicted_expert_params = 0, measured_expert_params = 0;  // elements
};

struct RunRecord {
  RunFacts facts;
  MemoryFigures memory;
  std::string run_id;  // kept in the run's checkpoints (a resume continues the checkpoint's)
  std::vector<StepStats> history;  // every step this process ran
  std::vector<CheckpointEvent> checkpoints;  // written or read
  std::string halted;   // why the run stopped because it diverged ("" if it did not)
  int stopped_by = 0;   // the signal that stopped the run early (0: it ran to the end)
  PhaseTimes phases;    // this rank's
  PhaseSpread spread;   // over every rank
  double total_seconds = 0;  // of the last run()
  // Wall time and count of this process's steps since the kernel profile
  // (kernels/profile.hpp) was last reset: after its first step (all of them when it ran
  // one). The report's kernel table divides the profile by these.
  double profiled_seconds = 0;
  long profiled_steps = 0;
  // Gathered at the end of run(): peak bytes per memory category (mem::Category order)
  // of every rank, [rank][category]; ring attention (c > 1) of every rank, [rank] =
  // {blocks per layer per forward, seconds computing blocks}, empty when c = 1.
  std::vector<std::vector<double>> peaks, ring;
  // Payload bytes per optimizer step on each axis (t, c, e, p, d, d (experts)) during
  // the last run(): the planner's prediction for this rank's stage
  // (plan/cost/axis_traffic.hpp) and what the accounts measured.
  std::vector<AxisTrafficSummary> traffic;
  // Every rank's pipeline figures (empty without a reported pipeline).
  std::vector<PipelineRankSummary> pipeline_ranks;
  // Steps skipped for a non-finite loss or gradient norm, in this process's run.
  long skipped_steps() const {
    long n = 0;
    for (const auto& st : history) n += st.skipped ? 1 : 0;
    return n;
  }
};

}  // namespace mini5d::train
