// SPDX-License-Identifier: BSD-3-Clause
// Trainer::save and Trainer::resume: what a checkpoint records besides the tensors
// (step, tokens, deck, layout, seeds, data cursor) and how a resume checks it; the
// check that keeps a non-finite state out of a checkpoint; and whether a stop signal
// ends the run.
#include <cstdio>

#include "mini5d/comm/watchdog.hpp"
#include "mini5d/core/deck_resume.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/kernels/grad_norm.hpp"
#include "mini5d/train/trainer.hpp"
#include "mini5d/train/stop_signal.hpp"
#include "mini5d/train/training_state.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::train {

namespace {
std::string layout_json(const Deck& d) {
  const auto& p = d.parallel;
  return "{\"d\": " + std::to_string(p.d) + ", \"t\": " + std::to_string(p.t) + ", \"p\": " + std::to_string(p.p) +
         ", \"c\": " + std::to_string(p.c) + ", \"e\": " + std::to_string(p.e) + ", \"zero\": " +
         std::to_string(p.zero) + "}";
}
}  // namespace

std::string checkpoint_name(long step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08ld", step);
  return name;
}

bool Trainer::state_is_finite() {
  zero_->settle();
  double bad = 0;
  for (const auto& b : {zero_->weights(), zero_->exp_avg(), zero_->exp_avg_sq()})
    bad += double(kernels::count_nonfinite(CVecU<float>(b.data.data(), b.data.extent(0))));
  comms_->world().allreduce_host(&bad, 1, comm::Communicator::Op::max);
  return bad == 0;
}

bool Trainer::stop_requested(bool after_save) {
  // The step's all-reduce carried every rank's signal. A save takes long enough for one
  // to arrive after it, so after a save the ranks agree once more (the largest wins).
  if (!after_save) {
    record_.stopped_by = agreed_stop_;
    return record_.stopped_by != 0;
  }
  double sig = stop_signal();
  comms_->world().allreduce_host(&sig, 1, comm::Communicator::Op::max);
  record_.stopped_by = int(sig);
  return record_.stopped_by != 0;
}

checkpoint::CheckpointMeta Trainer::checkpoint_meta() const {
  checkpoint::CheckpointMeta meta;
  meta.step = next_step_;
  meta.tokens_seen = next_step_ * tokens_per_step();
  meta.deck_yaml = deck_.to_yaml();
  meta.layout = layout_json(deck_);
  meta.train_seed = deck_.train.seed;
  meta.data_seed = deck_.data.seed;
  // The sampler is a pure function of (data seed, step, sequence index): the next
  // step is the whole data cursor, and the counter-based RNG has no other state.
  meta.data_cursor = next_step_;
  meta.run_id = record_.run_id;
  meta.extra["global_sequences_per_step"] = std::to_string(global_sequences_per_step());
  meta.extra["tokens_per_step"] = std::to_string(tokens_per_step());  // load checks tokens_seen against it
  return meta;
}

CheckpointEvent Trainer::save(const std::string& reason) {
  finish_background_save({}, "a blocking save");  // one thread in HDF5 at a time
  static const std::string kAxis = "checkpoint";
  // HDF5's collectives, which the comm layer does not see. A large checkpoint takes long
  // while healthy: the timeout counts from the save's last progress (a dataset written).
  comm::watchdog::Scope saving(kAxis, "save", true);
  zero_->settle();  // the weights of this step, not half-gathered ones
  const std::string name = checkpoint_name(next_step_);
  const auto io = save_training_state(grid_->cart().get(), *zero_, deck_.checkpoint.dir, name, checkpoint_meta(),
                                      deck_.checkpoint.keep);
  CheckpointEvent e{"save", deck_.checkpoint.dir + "/" + name + ".h5", reason, next_step_, io.bytes, io.seconds, {}, false, 0, 0, ""};
  record_.checkpoints.push_back(e);
  return e;
}

CheckpointEvent Trainer::resume(const std::string& where) {
  // The whole load is one phase for the watchdog: each read and collective that
  // completes is progress, a rank that stops answering ends the job.
  static const std::string kLoadAxis = "checkpoint";
  comm::watchdog::Scope loading(kLoadAxis, "load", true);
  const std::string path =
      checkpoint::resolve_checkpoint(where == "latest" ? deck_.checkpoint.dir : where);
  const MPI_Comm comm = grid_->cart().get();
  const auto meta = checkpoint::read_checkpoint_meta(comm, path);
  comm::watchdog::maybe_injected_stop("load");
  if (meta.step > deck_.train.steps)
    throw InputError(printable_path(path) + ": checkpoint is at step " + std::to_string(meta.step) + ", beyond train.steps=" +
                     std::to_string(deck_.train.steps));
  // The stored deck decides what the weights mean: the model, the data and the
  // arithmetic must be the same (core/deck_resume.cpp classifies every field).
  const Deck stored = parse_deck(meta.deck_yaml, path + " (the deck stored in the checkpoint)");
  const ResumeDiff diff = compare_for_resume(stored, deck_);
  if (!diff.refused.empty()) {
    std::vector<std::string> lines;
    for (const auto& r : diff.refused)
      lines.push_back(printable_path(path) + ": " + r + " (a resume keeps the model and the data; start a fresh run to change it)");
    throw InputError::from_list(lines);
  }
  const auto gs = meta.extra.find("global_sequences_per_step");
  if (gs != meta.extra.end() && gs->second != std::to_string(global_sequences_per_step()))
    throw InputError(printable_path(path) + ": written with a global batch of " + gs->second +
                     " sequences per step, the deck gives " + std::to_string(global_sequences_per_step()) +
                     " (micro_batch x accumulation x d x e must match to resume exactly)");
  // Implied by the step and the (matching) global batch: a file whose counters
  // disagree was edited or written by something else.
  if (meta.tokens_seen != meta.step * tokens_per_step())
    throw InputError(printable_path(path) + ": tokens_seen is " + std::to_string(meta.tokens_seen) + ", step " +
                     std::to_string(meta.step) + " x " + std::to_string(tokens_per_step()) +
                     " tokens per step is " + std::to_string(meta.step * tokens_per_step()) +
                     " (the checkpoint's counters disagree)");
  const auto io = load_training_state(comm, *zero_, base_->layout(), path);
  zero_->weights_loaded();  // a bf16 run's working copy, from the master weights just read
  next_step_ = meta.step;
  if (!meta.run_id.empty()) record_.run_id = meta.run_id;  // the same run, continued
  CheckpointEvent e{"load", path, "resume", meta.step, io.bytes, io.seconds, diff.changed, false, 0, 0, ""};
  record_.checkpoints.push_back(e);
  return e;
}

}  // namespace mini5d::train
