// SPDX-License-Identifier: BSD-3-Clause
// The step of every run: ties the model's stage (its chunks, Gpt::forward_chunk /
// backward_chunk) and ZeRO to the schedule executor of parallel/pp, which knows
// neither. p = 1 is a pipeline of one stage (its schedule is 1F1B: forward and backward
// of each micro-batch in turn), so there is one step path. A step samples its m
// micro-batches (m = train.accumulation) straight into one host buffer, copies them to
// the device once, runs this rank's action list, and keeps what the executor recorded:
// the bubble per step, and the events for the trace (output.trace).
#pragma once
#include <memory>
#include <vector>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/data/source.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/parallel/dp/zero_optimizer.hpp"
#include "mini5d/parallel/pp/executor.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/train/chunk_runner.hpp"

namespace mini5d::train {

// The schedule of the run's layout (its schedule, p, virtual_stages, accumulation).
pp::Spec pipeline_spec(const plan::Layout& layout);
// Blocks per virtual stage, as parallel.stage_layers says (rules/stage_split.hpp, the
// planner's rule too): start-up resolves it once into the layout (train/deck_plan.hpp).
std::vector<long long> pipeline_split(const Deck& deck);
// The same split read from the run's layout (one stage at p = 1: the whole model).
std::vector<long long> pipeline_split(const ModelConfig& m, const plan::Layout& layout);
// The model's shape as the split (and the replayed bubble) costs it.
SplitShape pipeline_split_shape(const ModelConfig& m);
SplitShape pipeline_split_shape(const Deck& deck);
// Pipeline rank `stage`'s chunks (local chunk j is virtual stage j*p + stage, with its
// blocks of pipeline_split; the embeddings on virtual stage 0, the head on the last)
// and the activation sets its schedule needs at once.
model::StageSpec pipeline_stage(const ModelConfig& m, const plan::Layout& layout, int stage);

// A step's bubble on this rank: the idle share of the slowest pipeline rank's step.
struct BubbleStats {
  long step = 0;
  double busy = 0, waiting = 0, span = 0, bubble = 0;
  int peak_in_flight = 0;
};

class Pipeline : public pp::Stage {
 public:
  // Collective over nothing; `spec`: pipeline_spec of the run's layout; `pipe`: the p
  // communicator (accounted as "pp").
  Pipeline(const Deck& deck, const pp::Spec& spec, comm::Communicator& pipe, std::unique_ptr<ChunkRunner> model,
           dp::ZeroOptimizer& zero, const data::Source& source, int data_index, int data_shards);
  // One step's forwards and backwards; returns this rank's summed token loss (the
  // last stage's; 0 elsewhere).                        collective over the p group
  double run_step(long step, float grad_scale);
  // Pipeline ranks (1: the whole model on this rank).
  int stages() const { return exec_->spec().p; }
  const pp::Spec& spec() const { return exec_->spec(); }
  const std::vector<BubbleStats>& bubbles() const { return bubbles_; }
  // The first steps' timelines, kept for the trace (at most kTraceSteps).
  static constexpr int kTraceSteps = 20;
  const std::vector<pp::StepTimeline>& timelines() const { return timelines_; }
  const std::vector<pp::Action>& actions() const { return exec_->actions(); }
  double data_seconds() const { return data_s_; }
  double forward_seconds() const { return forward_s_; }
  double backward_seconds() const { return backward_s_; }
  void keep_timelines(bool on) { keep_ = on; }

  // The chunk's output activation (forward) and dL/d(input) (backward) are handed to the
  // executor as the model holds them: no copy into a send buffer.
  CVecU<pp::Byte> forward(int mb, int chunk, CVecU<pp::Byte> input) override;
  CVecU<pp::Byte> backward(int mb, int chunk, CVecU<pp::Byte> grad_output) override;

 private:
  const Deck& deck_;
  std::unique_ptr<ChunkRunner> model_;
  dp::ZeroOptimizer& zero_;
  const data::Source& source_;
  int data_index_, data_shards_;
  std::unique_ptr<pp::PpComm> comm_;
  std::unique_ptr<pp::Executor> exec_;
  int tokens_ = 0;  // per micro-batch: micro_batch * seq / c
  std::vector<int> positions_;  // the positions of a sequence this rank holds (context parallelism)
  std::vector<int> scratch_;    // one sampled sequence
  Vec<int> inputs_, targets_;  // all m micro-batches of the step
  Kokkos::View<int*, Kokkos::LayoutRight, Kokkos::HostSpace> h_in_, h_tg_;
  mem::Charge tokens_mem_;
  float grad_scale_ = 0;
  double loss_ = 0, data_s_ = 0, forward_s_ = 0, backward_s_ = 0;
  bool keep_ = false;
  std::vector<BubbleStats> bubbles_;
  std::vector<pp::StepTimeline> timelines_;
};

}  // namespace mini5d::train
