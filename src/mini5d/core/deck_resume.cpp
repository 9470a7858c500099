// SPDX-License-Identifier: BSD-3-Clause
// See deck_resume.hpp. One table, field by field, so that a new deck field gets a
// deliberate class (test_deck checks every schema field is listed here).
#include "mini5d/core/deck_resume.hpp"

#include <utility>

#include "mini5d/core/deck_schema.hpp"

namespace mini5d {

namespace {

using C = ResumeClass;

const std::vector<std::pair<std::string, ResumeClass>>& table() {
  static const std::vector<std::pair<std::string, ResumeClass>> t = {
      // The model's shape and routing: the weights in the file are only this model's.
      {"model.vocab", C::MustMatch}, {"model.d_model", C::MustMatch}, {"model.layers", C::MustMatch},
      {"model.heads", C::MustMatch}, {"model.kv_heads", C::MustMatch}, {"model.seq", C::MustMatch}, {"model.ffn", C::MustMatch},
      {"model.experts", C::MustMatch}, {"model.top_k", C::MustMatch}, {"model.moe_every", C::MustMatch},
      {"model.capacity_factor", C::MustMatch}, {"model.tie_embeddings", C::MustMatch},
      {"model.norm", C::MustMatch}, {"model.mlp", C::MustMatch}, {"model.bias", C::MustMatch},
      {"model.positions", C::MustMatch}, {"model.rope_theta", C::MustMatch},
      // The layout: any layout reads any checkpoint (resharding).
      {"parallel.d", C::Layout}, {"parallel.t", C::Layout}, {"parallel.p", C::Layout}, {"parallel.c", C::Layout},
      {"parallel.e", C::Layout}, {"parallel.zero", C::Layout}, {"parallel.virtual_stages", C::Layout},
      {"parallel.stage_layers", C::Layout},
      {"parallel.schedule", C::Layout}, {"parallel.ranks_per_node", C::Layout}, {"parallel.gpu_aware_mpi", C::Layout},
      {"parallel.sp", C::Layout}, {"parallel.bucket_mb", C::Layout},
      {"parallel.grad_reduce_dtype", C::MayChange}, {"parallel.collective_timeout_s", C::Run},
      {"parallel.force_placement", C::Layout},
      // How the attention core is computed, not what it computes: the parameters and the
      // model are the same (the results differ only by rounding), like a layout.
      {"model.attention", C::Layout},
      // Padding rows are not in the checkpoint (any padding reads the same file).
      {"model.vocab_pad_to", C::Layout},
      // The optimiser's schedule and hyper-parameters: changing them on resume is a
      // legitimate (reported) choice. train.seed only draws the initial weights, which
      // a resume replaces with the file's.
      {"train.steps", C::MayChange}, {"train.seed", C::MayChange}, {"train.lr", C::MayChange},
      {"train.min_lr", C::MayChange}, {"train.warmup", C::MayChange}, {"train.weight_decay", C::MayChange},
      {"train.beta1", C::MayChange}, {"train.beta2", C::MayChange}, {"train.eps", C::MayChange},
      {"train.grad_clip", C::MayChange}, {"train.aux_loss_coef", C::MayChange},
      // The split of the global batch; the global batch itself must match (the trainer
      // checks micro_batch x accumulation x d x e), so the same sequences are drawn.
      {"train.micro_batch", C::Layout}, {"train.accumulation", C::Layout}, {"train.recompute", C::Layout},
      // The arithmetic. The state is fp32 either way (a bf16 run checkpoints its fp32
      // master weights and moments), so a bf16 run may continue in fp32 and back: a
      // legitimate, reported choice, like a new learning rate.
      {"train.precision", C::MayChange},
      {"train.max_skipped", C::Run}, {"train.spike_factor", C::Run}, {"train.activation_budget_mib", C::Run},
      {"train.allow_oversubscribe_memory", C::Run},
      // The data: another source, file, seed or chain is other sequences.
      {"data.source", C::MustMatch}, {"data.path", C::MustMatch}, {"data.seed", C::MustMatch},
      {"data.markov_order", C::MustMatch}, {"data.markov_branching", C::MustMatch},
      {"checkpoint.dir", C::Run}, {"checkpoint.every", C::Run},
      {"checkpoint.node_mtbf_hours", C::Run}, {"checkpoint.at_end", C::Run}, {"checkpoint.async", C::Run},
      {"checkpoint.keep", C::Run}, {"checkpoint.resume", C::Run}, {"checkpoint.overwrite", C::Run},
      {"output.log_every", C::Run}, {"output.report", C::Run}, {"output.kernel_profile", C::Run},
      {"output.trace", C::Run},
  };
  return t;
}

std::string shown(const std::string& v) { return v.empty() ? "\"\"" : v; }

}  // namespace

ResumeClass resume_class(const std::string& key) {
  for (const auto& [k, c] : table())
    if (k == key) return c;
  return C::MustMatch;
}

std::vector<std::string> resume_classified_fields() {
  std::vector<std::string> out;
  for (const auto& [k, c] : table()) out.push_back(k);
  return out;
}

ResumeDiff compare_for_resume(const Deck& stored, const Deck& now) {
  ResumeDiff d;
  for (const auto& f : deck_schema::schema()) {
    const std::string was = f.get(stored), is = f.get(now);
    if (was == is) continue;
    switch (resume_class(f.key())) {
      case C::MustMatch:
        d.refused.push_back(f.key() + " is " + shown(was) + " in the checkpoint, " + shown(is) + " in the deck");
        break;
      case C::MayChange: d.changed.push_back("resume: " + f.key() + " changed " + shown(was) + " -> " + shown(is)); break;
      case C::Layout:
        d.changed.push_back("resume: " + f.key() + " changed " + shown(was) + " -> " + shown(is) + " (layout)");
        break;
      case C::Run: break;
    }
  }
  return d;
}

}  // namespace mini5d
