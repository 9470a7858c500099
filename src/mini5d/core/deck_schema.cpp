// SPDX-License-Identifier: BSD-3-Clause
// The deck schema. The table below is the single source of truth for the fields:
// parsing, range checks, overrides, to_yaml/to_json and `deck-help` are all generated
// from it, so a new field is one line here.
#include "mini5d/core/deck_schema.hpp"
#include "mini5d/rules/deck_choices.hpp"
#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/rules/stage_split.hpp"

#include <cstdlib>
#include <initializer_list>
#include <set>
#include <sstream>

namespace mini5d::deck_schema {

std::string fmt_real(double v) {
  for (int prec = 6; prec <= 17; ++prec) {
    std::ostringstream os;
    os.precision(prec);
    os << v;
    if (std::strtod(os.str().c_str(), nullptr) == v || prec == 17) return os.str();
  }
  return "";
}

std::string range_text(const Field& f) {
  switch (f.kind) {
    case Kind::Int:
      return "an integer in [" + std::to_string(static_cast<long long>(f.lo)) + ", " +
             std::to_string(static_cast<long long>(f.hi)) + "]";
    case Kind::IntOrAuto:
      return "auto or an integer in [" + std::to_string(static_cast<long long>(f.lo)) + ", " +
             std::to_string(static_cast<long long>(f.hi)) + "]";
    case Kind::Real: return "a number in [" + fmt_real(f.lo) + ", " + fmt_real(f.hi) + "]";
    case Kind::Text: return "a string";
    case Kind::Counts: return "auto, balanced or a list of positive integers such as [3, 5]";
    case Kind::Choice: {
      std::string s = "one of ";
      for (size_t i = 0; i < f.choices.size(); ++i) s += (i ? ", " : "") + f.choices[i];
      return s;
    }
  }
  return "";
}

namespace {

template <class Sec, class T>
Field int_field(const char* sec, const char* name, Sec Deck::*s, T Sec::*m, double lo,
                double hi, const char* doc) {
  return Field{sec, name, Kind::Int, lo, hi, {}, doc,
               [s, m](Deck& d, const std::string& v) {
                 (d.*s).*m = static_cast<T>(std::stoll(v));
               },
               [s, m](const Deck& d) { return std::to_string((d.*s).*m); }};
}
template <class Sec>
Field real_field(const char* sec, const char* name, Sec Deck::*s, double Sec::*m,
                 double lo, double hi, const char* doc) {
  return Field{sec, name, Kind::Real, lo, hi, {}, doc,
               [s, m](Deck& d, const std::string& v) { (d.*s).*m = std::strtod(v.c_str(), nullptr); },
               [s, m](const Deck& d) { return fmt_real((d.*s).*m); }};
}
template <class Sec>
Field text_field(const char* sec, const char* name, Sec Deck::*s, std::string Sec::*m,
                 std::vector<std::string> choices, const char* doc) {
  return Field{sec, name, choices.empty() ? Kind::Text : Kind::Choice, 0, 0, choices, doc,
               [s, m](Deck& d, const std::string& v) { (d.*s).*m = v; },
               [s, m](const Deck& d) { return (d.*s).*m; }};
}

// A choice field: `values` in the order messages and deck-help list them, each spelt by
// its to_string (rules/deck_choices.hpp); the value is already one of them when set.
template <class Sec, class E>
Field choice_field(const char* sec, const char* name, Sec Deck::*s, E Sec::*m,
                   std::initializer_list<E> values, const char* doc) {
  std::vector<std::string> choices;
  for (const E v : values) choices.push_back(to_string(v));
  return Field{sec, name, Kind::Choice, 0, 0, choices, doc,
               [s, m](Deck& d, const std::string& v) { parse_choice(v, (d.*s).*m); },
               [s, m](const Deck& d) { return std::string(to_string((d.*s).*m)); }};
}
// A true | false field; `order` as messages list the two.
template <class Sec>
Field flag_field(const char* sec, const char* name, Sec Deck::*s, bool Sec::*m,
                 std::initializer_list<bool> order, const char* doc) {
  std::vector<std::string> choices;
  for (const bool v : order) choices.push_back(flag_text(v));
  return Field{sec, name, Kind::Choice, 0, 0, choices, doc,
               [s, m](Deck& d, const std::string& v) { parse_choice(v, (d.*s).*m); },
               [s, m](const Deck& d) { return std::string(flag_text((d.*s).*m)); }};
}

Field counts_field(const char* sec, const char* name, StageLayers ParallelConfig::*m, const char* doc) {
  return Field{sec, name, Kind::Counts, 0, 0, {}, doc,
               [m](Deck& d, const std::string& v) { parse_stage_layers(v, d.parallel.*m); },
               [m](const Deck& d) { return format_stage_layers(d.parallel.*m); }};
}

// checkpoint.every: auto (every_auto, every = 0) or a number of steps.
Field every_field(const char* doc) {
  return Field{"checkpoint", "every", Kind::IntOrAuto, 0, 1e12, {}, doc,
               [](Deck& d, const std::string& v) {
                 d.checkpoint.every_auto = v == "auto";
                 d.checkpoint.every = d.checkpoint.every_auto ? 0 : std::stol(v);
               },
               [](const Deck& d) {
                 return d.checkpoint.every_auto ? std::string("auto") : std::to_string(d.checkpoint.every);
               }};
}

}  // namespace

const std::vector<Field>& schema() {
  static const std::vector<Field> fields = {
      int_field("model", "vocab", &Deck::model, &ModelConfig::vocab, 2, 1 << 24, "tokens in the vocabulary"),
      int_field("model", "vocab_pad_to", &Deck::model, &ModelConfig::vocab_pad_to, 0, 65536, "pad the vocabulary (token embedding and LM head rows) to a multiple of vocab_pad_to x parallel.t; 1 (default) pads only where t does not divide vocab, 0 is Megatron's 128 x t. Padding rows are never a target, are masked out of the softmax and stay out of checkpoints and the parameter checksum, so the losses do not change"),
      int_field("model", "d_model", &Deck::model, &ModelConfig::d_model, 1, 65536, "residual width"),
      int_field("model", "layers", &Deck::model, &ModelConfig::layers, 1, 1024, "transformer blocks"),
      int_field("model", "heads", &Deck::model, &ModelConfig::heads, 1, 1024, "attention heads; must divide d_model"),
      int_field("model", "kv_heads", &Deck::model, &ModelConfig::kv_heads, 0, 1024, "key/value heads (grouped-query attention: query head h reads key/value head h / (heads/kv_heads)); must divide heads; 0 (default) is heads, multi-head attention"),
      int_field("model", "seq", &Deck::model, &ModelConfig::seq, 1, 1 << 20, "tokens per sequence (context length)"),
      int_field("model", "ffn", &Deck::model, &ModelConfig::ffn, 1, 1 << 20, "MLP hidden width (GPT-2 uses 4*d_model)"),
      int_field("model", "experts", &Deck::model, &ModelConfig::experts, 0, 1 << 16, "experts per MoE layer; 0 for a dense MLP"),
      int_field("model", "top_k", &Deck::model, &ModelConfig::top_k, 1, 1 << 16, "experts each token is routed to"),
      int_field("model", "moe_every", &Deck::model, &ModelConfig::moe_every, 1, 1024, "with experts > 0, every N-th block (blocks N-1, 2N-1, ...) has a mixture-of-experts MLP; 1: every block"),
      real_field("model", "capacity_factor", &Deck::model, &ModelConfig::capacity_factor, 0, 1e6, "0: dropless routing (layout-invariant); > 0: each rank sends an expert at most ceil(factor * tokens * top_k / experts) tokens per micro-batch and drops (counts) the rest"),
      flag_field("model", "tie_embeddings", &Deck::model, &ModelConfig::tie_embeddings, {false, true}, "share the token embedding with the LM head"),
      choice_field("model", "attention", &Deck::model, &ModelConfig::attention, {Attention::blockwise, Attention::full}, "attention core at parallel.c=1: blockwise (tiles of 64 rows with an online softmax; keeps the output and a log-sum-exp per query row, the backward rebuilds the probabilities tile by tile) or full (keeps the seq x seq probabilities; the reference); at c > 1 ring attention is blockwise either way"),
      choice_field("model", "norm", &Deck::model, &ModelConfig::norm, {Norm::layernorm, Norm::rmsnorm}, "the blocks' and the final norm: layernorm (x - mean, scaled by 1/std, gain and bias) or rmsnorm (x scaled by 1/sqrt(mean(x^2) + eps), gain only; keeps one statistic per row instead of two)"),
      choice_field("model", "mlp", &Deck::model, &ModelConfig::mlp, {Mlp::gelu, Mlp::swiglu}, "the MLP (and each expert): gelu (fc, GELU, proj: two matrices) or swiglu (proj(silu(gate x) * up x): three matrices of model.ffn, the gate and up projections fused in one GEMM)"),
      flag_field("model", "bias", &Deck::model, &ModelConfig::bias, {true, false}, "biases of every linear layer (QKV, projections, MLP, experts) and of the LayerNorms; false drops them all (RMSNorm has none either way)"),
      choice_field("model", "positions", &Deck::model, &ModelConfig::positions, {Positions::learned, Positions::rope}, "token positions: learned (a seq x d_model table added to the token embeddings) or rope (rotary: q and k of every head turned pair by pair, pairs (2i, 2i+1), by the angle position x rope_theta^(-2i/head_dim) before attention; no parameters; needs an even d_model/heads)"),
      real_field("model", "rope_theta", &Deck::model, &ModelConfig::rope_theta, 1e-6, 1e12, "base of the rotary angles (model.positions=rope): pair i turns by position x rope_theta^(-2i/head_dim); 10000 as in RoFormer and Llama 2"),
      int_field("parallel", "d", &Deck::parallel, &ParallelConfig::d, 1, 1 << 20, "data-parallel degree"),
      int_field("parallel", "t", &Deck::parallel, &ParallelConfig::t, 1, 1 << 20, "tensor-parallel degree"),
      int_field("parallel", "p", &Deck::parallel, &ParallelConfig::p, 1, 1 << 20, "pipeline-parallel degree"),
      int_field("parallel", "c", &Deck::parallel, &ParallelConfig::c, 1, 1 << 20, "context-parallel degree"),
      int_field("parallel", "e", &Deck::parallel, &ParallelConfig::e, 1, 1 << 20, "expert-parallel degree"),
      int_field("parallel", "zero", &Deck::parallel, &ParallelConfig::zero, 0, 3, "ZeRO stage"),
      int_field("parallel", "virtual_stages", &Deck::parallel, &ParallelConfig::virtual_stages, 1, 1024, "interleaved pipeline chunks per stage"),
      counts_field("parallel", "stage_layers", &ParallelConfig::stage_layers, "how the blocks are cut into the p x virtual_stages virtual stages (virtual stage j*p + r is chunk j of pipeline rank r): auto (the even split when p x virtual_stages divides model.layers, else balanced), balanced (the split whose largest stage has the least forward FLOPs per token, counting the embeddings on the first stage and the head on the last), or the blocks of each virtual stage in order, e.g. [3, 5], summing to model.layers"),
      choice_field("parallel", "schedule", &Deck::parallel, &ParallelConfig::schedule, {Schedule::one_f_one_b, Schedule::gpipe, Schedule::interleaved}, "pipeline schedule when p > 1: gpipe (all forwards, then all backwards), 1f1b (one forward, one backward after a warm-up), interleaved (1F1B over virtual_stages > 1 chunks per rank; needs train.accumulation divisible by p); micro-batches = train.accumulation"),
      int_field("parallel", "ranks_per_node", &Deck::parallel, &ParallelConfig::ranks_per_node, 0, 1 << 20, "ranks per node; 0 detects nodes, > 0 makes virtual nodes for testing"),
      choice_field("parallel", "gpu_aware_mpi", &Deck::parallel, &ParallelConfig::gpu_aware_mpi, {Toggle::automatic, Toggle::off, Toggle::on}, "give MPI device pointers (GPU-aware MPI): auto asks the MPI library (MPIX_Query_cuda_support), false stages through pinned host buffers, true is refused if the library reports no support"),
      flag_field("parallel", "sp", &Deck::parallel, &ParallelConfig::sp, {true, false}, "sequence parallelism when t > 1: LayerNorms, residuals and the embedding output hold seq/t tokens per rank (all-gather / reduce-scatter instead of all-reduce)"),
      choice_field("parallel", "grad_reduce_dtype", &Deck::parallel, &ParallelConfig::grad_reduce_dtype, {Precision::fp32, Precision::bf16}, "element type of the data-parallel gradient reduction (all-reduce at ZeRO 0-1, reduce-scatter at 2-3): fp32, or bf16 (half the d bytes; needs train.precision=bf16), the fp32 main gradients rounded to bf16 for the wire and summed in bf16"),
      real_field("parallel", "bucket_mb", &Deck::parallel, &ParallelConfig::bucket_mb, 0.001, 1 << 20, "largest gradient all-reduce under ZeRO 0-1, in MiB: a unit larger than this (e.g. a big embedding) is reduced in several buckets"),
      real_field("parallel", "collective_timeout_s", &Deck::parallel, &ParallelConfig::collective_timeout_s, 0, 1e9, "seconds a rank may wait in one blocking collective (or in a checkpoint save without progress: a dataset written) before it prints its rank, step, axis and operation and ends the job, instead of hanging until the batch limit; 0 disables"),
      flag_field("parallel", "force_placement", &Deck::parallel, &ParallelConfig::force_placement, {false, true}, "run even if tensor-parallel groups cross nodes"),
      int_field("train", "steps", &Deck::train, &TrainConfig::steps, 0, 1e12, "optimizer steps"),
      int_field("train", "micro_batch", &Deck::train, &TrainConfig::micro_batch, 1, 1 << 20, "sequences per micro-batch per rank"),
      int_field("train", "accumulation", &Deck::train, &TrainConfig::accumulation, 1, 1 << 20, "micro-batches accumulated per step"),
      int_field("train", "seed", &Deck::train, &TrainConfig::seed, 0, 9007199254740992.0, "seed of the parameter initialisation"),
      real_field("train", "lr", &Deck::train, &TrainConfig::lr, 0, 10, "peak learning rate"),
      real_field("train", "min_lr", &Deck::train, &TrainConfig::min_lr, 0, 10, "learning rate at the end of the cosine decay"),
      int_field("train", "warmup", &Deck::train, &TrainConfig::warmup, 0, 1e12, "steps of linear warm-up"),
      real_field("train", "weight_decay", &Deck::train, &TrainConfig::weight_decay, 0, 10, "AdamW decoupled weight decay (matrices and embeddings only)"),
      real_field("train", "beta1", &Deck::train, &TrainConfig::beta1, 0, 0.999999, "AdamW first-moment decay"),
      real_field("train", "beta2", &Deck::train, &TrainConfig::beta2, 0, 0.999999, "AdamW second-moment decay"),
      real_field("train", "eps", &Deck::train, &TrainConfig::eps, 1e-30, 1, "AdamW epsilon"),
      real_field("train", "grad_clip", &Deck::train, &TrainConfig::grad_clip, 0, 1e30, "global-norm clipping threshold; 0 disables"),
      real_field("train", "aux_loss_coef", &Deck::train, &TrainConfig::aux_loss_coef, 0, 1e6, "weight of the mixture-of-experts load-balancing (Switch/GShard) loss, added to the training loss and reported separately"),
      int_field("train", "max_skipped", &Deck::train, &TrainConfig::max_skipped, 0, 1e12, "consecutive steps with a non-finite loss or gradient norm that are skipped (parameters and moments untouched) before the run stops; 0 stops at the first"),
      real_field("train", "spike_factor", &Deck::train, &TrainConfig::spike_factor, 0, 1e30, "stop the run when a step's loss exceeds this many times the mean of the previous (up to 20) steps' losses; 0 disables"),
      flag_field("train", "allow_oversubscribe_memory", &Deck::train, &TrainConfig::allow_oversubscribe_memory, {false, true}, "start even when the predicted memory per rank (training state, activations, workspace) exceeds the free memory of its node or device; by default such a run is refused before anything is allocated"),
      choice_field("train", "recompute", &Deck::train, &TrainConfig::recompute, {Recompute::none, Recompute::selective, Recompute::full}, "activation recomputation in the backward"),
      real_field("train", "activation_budget_mib", &Deck::train, &TrainConfig::activation_budget_mib, 0, 1e12, "per-rank budget, in MiB, for the activations one micro-batch keeps plus the backward's work buffers, as the planner's formulas predict them (the start-up header prints the prediction): a run predicted over it is refused before anything is allocated; 0: no budget"),
      choice_field("train", "precision", &Deck::train, &TrainConfig::precision, {Precision::fp32, Precision::bf16, Precision::fp64}, "arithmetic precision: fp32, or bf16 (bf16 weights, activations and messages; fp32 master weights, moments, main gradients and statistics: docs/precision.md); fp64 is accepted in decks for mini5d-plan only"),
      choice_field("data", "source", &Deck::data, &DataConfig::source, {DataSource::markov, DataSource::text, DataSource::tokens}, "markov: synthetic chain with a known entropy floor; text: bytes of a file (vocab 256); tokens: a mini5d token file"),
      text_field("data", "path", &Deck::data, &DataConfig::path, {}, "data file for source text or tokens (relative to the working directory)"),
      int_field("data", "seed", &Deck::data, &DataConfig::seed, 0, 9007199254740992.0, "seed of the Markov table and of the sequence sampler"),
      int_field("data", "markov_order", &Deck::data, &DataConfig::markov_order, 1, 8, "Markov chain order (tokens of context)"),
      int_field("data", "markov_branching", &Deck::data, &DataConfig::markov_branching, 1, 1 << 20, "successors per context (sparsity); at most vocab"),
      text_field("checkpoint", "dir", &Deck::checkpoint, &CheckpointConfig::dir, {}, "directory of the checkpoints and their latest pointer"),
      every_field("steps between checkpoints; 0: none (signals and at_end still save); auto: Young's interval sqrt(2 x C x M) in steps, with C the blocking cost of a save (estimated at start-up from the checkpoint's bytes at 1 GB/s, then measured at the first save) and M = checkpoint.node_mtbf_hours / the job's nodes, derived after the second step and again after the first save"),
      real_field("checkpoint", "node_mtbf_hours", &Deck::checkpoint, &CheckpointConfig::node_mtbf_hours, 0, 1e9, "one node's mean time between failures, in hours, for checkpoint.every=auto (the job's is this divided by its nodes: the distinct hosts of its ranks, or ranks / parallel.ranks_per_node); 0: no figure"),
      flag_field("checkpoint", "at_end", &Deck::checkpoint, &CheckpointConfig::at_end, {false, true}, "save a checkpoint after the last step"),
      int_field("checkpoint", "keep", &Deck::checkpoint, &CheckpointConfig::keep, 0, 1 << 20, "newest checkpoints kept; 0 keeps all"),
      text_field("checkpoint", "resume", &Deck::checkpoint, &CheckpointConfig::resume, {}, "resume from \"latest\" in checkpoint.dir or a checkpoint file; empty starts fresh"),
      flag_field("checkpoint", "overwrite", &Deck::checkpoint, &CheckpointConfig::overwrite, {false, true}, "let a fresh run (no resume) write into a checkpoint.dir that holds another run's checkpoints: same-step files are replaced and latest moves to this run; the other run's other files are never deleted"),
      flag_field("checkpoint", "async", &Deck::checkpoint, &CheckpointConfig::async, {false, true}, "copy the state into host staging buffers (the only part that blocks), then write the file on a background thread while training goes on; at most one save in flight, waited for at the next save, the end of the run or a stop signal (falls back to blocking saves if MPI lacks MPI_THREAD_MULTIPLE)"),
      int_field("output", "log_every", &Deck::output, &OutputConfig::log_every, 1, 1 << 30, "steps between progress lines"),
      text_field("output", "report", &Deck::output, &OutputConfig::report, {}, "JSON report path; empty disables"),
      choice_field("output", "kernel_profile", &Deck::output, &OutputConfig::kernel_profile, {Toggle::automatic, Toggle::on, Toggle::off}, "the kernel table's per-kernel timers and the per-step Kokkos event counts (launches, fences, copies, allocations); both fence, which serialises a GPU's launches: auto is on for host backends, off for GPU backends"),
      text_field("output", "trace", &Deck::output, &OutputConfig::trace, {}, "Chrome trace-event JSON of every rank's pipeline schedule (the first steps), for Perfetto or chrome://tracing; empty disables"),
  };
  return fields;
}

const Field* find_field(const std::string& section, const std::string& name) {
  for (const auto& f : schema())
    if (f.section == section && f.name == name) return &f;
  return nullptr;
}

bool is_section(const std::string& s) {
  for (const auto& f : schema())
    if (f.section == s) return true;
  return false;
}

std::string fields_of(const std::string& section) {
  std::string s;
  for (const auto& f : schema())
    if (f.section == section) s += (s.empty() ? "" : ", ") + f.name;
  return s;
}

std::string sections_text() {
  std::string s;
  std::set<std::string> seen;
  for (const auto& f : schema())
    if (seen.insert(f.section).second) s += (s.empty() ? "" : ", ") + f.section;
  return s;
}

}  // namespace mini5d::deck_schema
