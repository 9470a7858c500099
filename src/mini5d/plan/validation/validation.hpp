// SPDX-License-Identifier: BSD-3-Clause
// Published training runs to check the planner against (inputs/validation/*.yaml): each
// file is one source (a paper, a vendor's benchmark table), its cluster, the model and
// the runs, every run marked `fit` (its figures may be used to fit the cluster file,
// perf/fit_cluster.py) or `test` (held out: only ever compared, never fitted on).
//
// A run is evaluated as the SC21 validation always was: the published degrees (d from
// the GPUs left by t, p, c, e), the knobs (micro-batch, interleaving, ZeRO, SP,
// recomputation) the planner finds best for them within the features the source's
// framework had (`features:`), and the predicted step against the published one. A
// run that publishes its knobs pins them (keys mb, v, zero, recompute, sp): then only
// those are costed, and a published layout the planner's memory model does not fit is
// still evaluated (it ran; memory is not what these sources validate) and marked so.
// The published step comes from what the source reports (`published:`):
//   step_s       the step time itself, seconds;
//   tflops_eq3   TFLOP/s per GPU with Megatron's eq. (3) count (full recomputation):
//                96 B s l h^2 (1 + s/(6h) + V/(16 l h)) FLOPs per step;
//   tflops_palm  TFLOP/s per GPU with PaLM's model-FLOPs count (the planner's
//                model_flops: tokens (6 N + 12 l s h), N the weights in matrix products).
// Error = published step / predicted step - 1: the throughput error, positive when the
// planner is optimistic.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

struct ValidationRun {
  std::string name;
  bool fit = false;  // role: fit | test
  ModelDesc model;
  TrainDesc train;
  Degrees degrees{1, 1, 1, 1, 1};  // d, t, p, c, e
  long long gpus = 0;
  double published = 0;  // in the file's `published:` unit
  double published_step = 0;  // seconds
  // The published knobs, where the source gives them (0 / -1: not given, searched).
  int pin_micro_batch = 0, pin_virtual_stages = 0, pin_zero = -1, pin_sp = -1;
  std::optional<Recompute> pin_recompute;
  bool pinned() const {
    return pin_micro_batch > 0 || pin_virtual_stages > 0 || pin_zero >= 0 || pin_sp >= 0 || pin_recompute;
  }
  // The features with this run's pins applied.
  SearchOptions options(const SearchOptions& features) const;
};

struct ValidationSet {
  std::string path, source, cluster_file;  // cluster_file: resolved path
  // `group:` of the file: its test runs are reported apart, under this name, outside the
  // per-run bound of the out-of-sample test (docs/planner.md, "Out of sample"); "": none.
  std::string group;
  SearchOptions options;
  std::vector<ValidationRun> runs;
};

// Reads and checks a validation file; throws InputError naming the file and field.
ValidationSet load_validation_file(const std::string& path);

struct ValidationResult {
  const ValidationRun* run = nullptr;
  std::optional<Plan> plan;  // nullopt: no plan for the published degrees (`why` says why)
  double predicted_step = 0;
  double error = 0;  // published_step / predicted_step - 1
  // Why the run has no predicted step: the layout rule its published degrees break
  // (broken_rule: the row is wrong, an input error), or the memory the planner's best
  // plan for them needs when that is beyond what can have run.
  std::string why;
  bool broken_rule = false;
  bool costed() const { return plan.has_value() && why.empty(); }
};

// A published run the memory model says needs more than this many times the device's
// usable memory is not costed: the model's largest excess on a run that did run is
// 1.2x (validation rows that carry "does not fit the memory model"), so such a row
// describes a run that cannot have happened as written (a mistyped degree or batch).
constexpr double kNotRunMemoryFactor = 1.5;

// Evaluates one run on `cluster` (its node count set from the run's GPUs).
ValidationResult evaluate_run(const ValidationRun& r, const ClusterDesc& cluster,
                              const SearchOptions& o);

}  // namespace mini5d::plan
