// SPDX-License-Identifier: BSD-3-Clause
// Deck writer. Field order and comments follow inputs/tiny.yaml so a diff against a
// hand-written deck reads naturally.
#include "mini5d/plan/output/emit_deck.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/output/goodput_plan.hpp"
#include "mini5d/rules/stage_split.hpp"

namespace mini5d::plan {

namespace {

// The shortest decimal that reads back as v (a deck's real field, such as rope_theta).
std::string exact(double v) {
  for (int prec = 6;; ++prec) {
    std::ostringstream os;
    os.precision(prec);
    os << v;
    if (std::strtod(os.str().c_str(), nullptr) == v || prec >= 17) return os.str();
  }
}

// Default values for the sections a model file does not carry (tiny.yaml's set).
const DeckSection kTrain = {{"steps", "100"},        {"micro_batch", "1"},
                            {"accumulation", "1"},   {"seed", "1234"},
                            {"lr", "3.0e-4"},        {"min_lr", "3.0e-5"},
                            {"warmup", "20"},        {"weight_decay", "0.1"},
                            {"beta1", "0.9"},        {"beta2", "0.95"},
                            {"eps", "1.0e-8"},       {"grad_clip", "1.0"}};
const DeckSection kData = {{"source", "markov"}, {"seed", "7"}, {"markov_order", "2"},
                           {"markov_branching", "3"}};
const DeckSection kOutput = {{"log_every", "10"}, {"report", "mini5d-report.json"}};
// A batch job saves when Slurm signals the time limit (the emitted script asks for
// --signal), and keeps the newest three.
const DeckSection kCheckpoint = {{"dir", "checkpoints"}, {"every", "0"}, {"keep", "3"}};

// Defaults first, then the deck's own values (and any extra fields it had).
DeckSection merged(const DeckSection& defaults, const DeckSection& given) {
  DeckSection out = defaults;
  // (A lambda capturing a structured binding is C++20: capture the pair instead.)
  for (const auto& field : given) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& kv) { return kv.first == field.first; });
    if (it != out.end()) it->second = field.second;
    else out.push_back(field);
  }
  return out;
}

void set(DeckSection& s, const std::string& k, const std::string& v) {
  auto it = std::find_if(s.begin(), s.end(), [&](const auto& kv) { return kv.first == k; });
  if (it != s.end()) it->second = v;
  else s.emplace_back(k, v);
}

void section(std::ostream& os, const char* name, const DeckSection& s) {
  os << name << ":\n";
  for (const auto& [k, v] : s) os << "  " << k << ": " << v << "\n";
}

long long round_to(long long v, long long mult) { return std::max(mult, (v / mult) * mult); }

// The deck's model section: the shape, and each block option that is not the default.
DeckSection model_section(const ModelDesc& s) {
  DeckSection model = {{"vocab", std::to_string(s.vocab)},   {"d_model", std::to_string(s.d_model)},
                       {"layers", std::to_string(s.layers)}, {"heads", std::to_string(s.heads)},
                       {"seq", std::to_string(s.seq)},       {"ffn", std::to_string(s.ffn)}};
  if (s.kv() != s.heads) model.emplace_back("kv_heads", std::to_string(s.kv()));
  if (s.moe()) {
    model.emplace_back("experts", std::to_string(s.experts));
    model.emplace_back("top_k", std::to_string(s.top_k));
  }
  // The padding rule travels with the deck (1, the default, is left out).
  if (s.vocab_pad_to != 1) model.emplace_back("vocab_pad_to", std::to_string(s.vocab_pad_to));
  if (s.tie_embeddings) model.emplace_back("tie_embeddings", "true");
  // The block's choices where they are not the deck's defaults, in its spellings.
  if (s.attention != Attention::blockwise) model.emplace_back("attention", to_string(s.attention));
  if (s.norm != Norm::layernorm) model.emplace_back("norm", to_string(s.norm));
  if (s.mlp != Mlp::gelu) model.emplace_back("mlp", to_string(s.mlp));
  if (!s.bias) model.emplace_back("bias", "false");
  if (s.positions != Positions::learned) model.emplace_back("positions", to_string(s.positions));
  if (s.positions == Positions::rope && s.rope_theta != 10000) model.emplace_back("rope_theta", exact(s.rope_theta));
  return model;
}

// The interval the goodput model picks for the plan where the cluster file states its
// failure rate and write rate (plan/output/goodput_plan.hpp); else saves only on signals.
// The node MTBF goes with it, so that checkpoint.every=auto lets the trainer derive the
// interval again from what it measures.
void write_checkpoint_section(std::ostream& os, const ModelInput& in, const ClusterDesc& cl, const Plan& p,
                              bool scale_down) {
  DeckSection checkpoint = kCheckpoint;
  const PlanGoodput good = scale_down ? PlanGoodput{} : plan_goodput(in.model, cl, p);
  if (good.available) {
    set(checkpoint, "every", std::to_string(good.interval_steps));
    os << "# checkpoint.every: Young's interval for a job MTBF of " << fixed(good.in.job_mtbf_s() / 3600, 2)
       << " h and a " << ms(good.in.save_s) << " save (predicted ETTR " << pct(good.ettr) << ")\n";
  }
  if (cl.node_mtbf_hours > 0) set(checkpoint, "node_mtbf_hours", exact(cl.node_mtbf_hours));
  section(os, "checkpoint", checkpoint);
}

}  // namespace

void write_deck(std::ostream& os, const ModelInput& in, const ClusterDesc& cl, const Plan& p,
                bool scale_down) {
  const ModelDesc& m = in.model;
  const Layout& l = p.layout;
  os << "# mini5d input deck written by mini5d-plan for " << m.name << " on " << cl.name
     << (scale_down ? " (scaled down to one rank)" : "") << ".\n";
  os << "# plan: " << describe(l) << "\n";
  os << "# predicted: step " << ms(p.time.step) << ", " << gib(p.memory.total())
     << "/device, MFU " << pct(p.time.mfu) << " on " << l.ranks() << " ranks ("
     << cl.nodes << " nodes x " << cl.devices_per_node << ")\n";

  ModelDesc s = m;
  Layout sl = l;
  if (scale_down) {
    // Same shape of model, one core's worth of it: 4 heads of 16, the plan's ffn/d
    // ratio, few layers and a short sequence; every degree 1.
    const double ratio = double(m.ffn) / double(m.d_model);
    s.heads = 4;
    // The same grouping of queries, as far as 4 heads allow.
    s.kv_heads = m.kv() < m.heads ? std::max<long long>(1, 4 * m.kv() / m.heads) : 0;
    s.d_model = 64;
    s.ffn = round_to(static_cast<long long>(ratio * 64 + 0.5), 4);
    s.layers = std::min<long long>(m.layers, std::max<long long>(2, std::min(l.p * l.virtual_stages, 8)));
    s.seq = std::min<long long>(m.seq, 64);
    s.vocab = std::min<long long>(m.vocab, 256);
    if (m.moe()) s.experts = std::min<long long>(m.experts, 4), s.top_k = std::min(m.top_k, s.experts);
    sl.d = sl.t = sl.p = sl.c = sl.e = 1;
    sl.zero = 0;
    sl.virtual_stages = 1;
    sl.schedule = Schedule::one_f_one_b;
    sl.micro_batch = std::min(l.micro_batch, 4);
    sl.accumulation = std::min(l.accumulation, 2);
  }
  section(os, "model", model_section(s));
  os << "parallel:            # degrees of the five axes; their product is the rank count\n";
  const DeckSection par = {{"d", std::to_string(sl.d)},
                           {"t", std::to_string(sl.t)},
                           {"p", std::to_string(sl.p)},
                           {"c", std::to_string(sl.c)},
                           {"e", std::to_string(sl.e)},
                           {"zero", std::to_string(sl.zero)},
                           {"virtual_stages", std::to_string(sl.virtual_stages)},
                           {"schedule", to_string(sl.schedule)},
                           {"sp", sl.sp ? "true" : "false"},
                           {"ranks_per_node", std::to_string(scale_down ? 1 : cl.devices_per_node)}};
  for (const auto& [k, v] : par) os << "  " << k << ": " << v << "\n";
  // A plan with bf16 gradients (no fp32 accumulation: 16 bytes per parameter) reduces them
  // in bf16. mini5d keeps fp32 main gradients whatever the plan (18 bytes per parameter)
  // and sends them in bf16 when asked: the wire matches the plan, the memory is 2 bytes
  // per parameter (before ZeRO 2 shards it) more, and the deck says so.
  if (!scale_down && in.train.precision == Precision::bf16 && !in.train.fp32_grad_accum) {
    os << "  grad_reduce_dtype: bf16   # planned with bf16 gradients; mini5d keeps fp32 main "
          "gradients (+2 bytes/parameter) and reduces them in bf16\n";
  } else if (!scale_down && in.train.bf16_grad_reduce) {
    os << "  grad_reduce_dtype: bf16\n";
  }
  // The split the plan was costed with: its rule (the runtime resolves it alike) and
  // the blocks per virtual stage it gives.
  if (!scale_down && l.p > 1) {
    if (l.stage_layers.given())
      os << "  stage_layers: [" << format_counts(l.stage_layers.counts) << "]\n";
    else if (l.stage_layers.balanced)
      os << "  stage_layers: balanced\n";
    os << "  # blocks per virtual stage: " << format_counts(p.split) << "\n";
  }
  if (scale_down)
    os << "  # planned: d=" << l.d << " t=" << l.t << " p=" << l.p << " c=" << l.c
       << " e=" << l.e << " zero=" << l.zero << " virtual_stages=" << l.virtual_stages
       << (l.p > 1 && !p.split.empty() ? " stage_layers=" + format_counts(p.split) : std::string()) << "\n";
  DeckSection train = merged(kTrain, in.train_fields);
  set(train, "micro_batch", std::to_string(sl.micro_batch));
  set(train, "accumulation", std::to_string(sl.accumulation));
  set(train, "recompute", to_string(sl.recompute));
  if (scale_down) set(train, "steps", "20");
  // The precision travels with the deck (train.precision), so that planning again from
  // it keeps bf16. The scaled-down deck, meant to run now on a few CPU cores, says fp32
  // (bf16 is slower than fp32 on a CPU here: docs/precision.md) and notes what was
  // planned.
  set(train, "precision", scale_down ? "fp32" : to_string(in.train.precision));
  // The planner's other knobs are not deck fields (the batch is micro_batch x
  // accumulation x d x e).
  train.erase(std::remove_if(train.begin(), train.end(),
                             [](const auto& kv) {
                               return kv.first == "global_batch" || kv.first == "fp32_grad_accum";
                             }),
              train.end());
  if (scale_down && in.train.precision != Precision::fp32)
    os << "# planned precision: " << to_string(in.train.precision)
       << " (this scaled-down deck trains in fp32, the faster precision on a CPU)\n";
  section(os, "train", train);
  // The default Markov source must fit the vocabulary: vocab^order contexts, at most
  // 2^24 (the deck's rule), so a large vocabulary gets order 1.
  DeckSection data = kData;
  if (double(s.vocab) * double(s.vocab) > double(1 << 24)) set(data, "markov_order", "1");
  section(os, "data", merged(data, in.data_fields));
  write_checkpoint_section(os, in, cl, p, scale_down);
  section(os, "output", merged(kOutput, in.output_fields));
}

}  // namespace mini5d::plan
