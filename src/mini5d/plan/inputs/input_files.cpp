// SPDX-License-Identifier: BSD-3-Clause
// The model reader: a model file, or a mini5d deck read as a model with its layout.
// The cluster file reader is cluster_file.cpp; both check through yaml_fields.hpp.
#include "mini5d/plan/inputs/input_files.hpp"

#include <string>

#include "mini5d/rules/deck_choices.hpp"
#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/plan/inputs/input_schema.hpp"
#include "mini5d/plan/inputs/yaml_fields.hpp"
#include "mini5d/rules/stage_split.hpp"

namespace mini5d::plan {

namespace {

using namespace yaml_input;  // a reader is written in its checked accessors

constexpr long long kMaxBatch = 2147483647LL;  // sequences per step: 2^31-1

// A choice field in the deck's words, read into the deck's enum (rules/deck_choices.hpp);
// `valid` lists the words as the message names them.
template <class E>
E choice(const Fields& f, const std::string& key, E fallback, const char* valid) {
  const std::string text = f.text(key, to_string(fallback));
  E v = fallback;
  if (!parse_choice(text, v)) f.fail(key, "'" + text + "' is not valid (valid: " + std::string(valid) + ")");
  return v;
}

void read_model_section(const Fields& f, const std::string& source, ModelDesc& m) {
  m.source = source;
  m.name = f.text("model.name", "");
  if (m.name.empty()) {
    std::string base = source.substr(source.find_last_of('/') + 1);
    m.name = base.substr(0, base.find_last_of('.'));
  }
  m.vocab = f.integer("model.vocab", 2, 100000000, "vocabulary size");
  // The runtime's default (core/deck.hpp): pad only where t does not divide vocab.
  m.vocab_pad_to = f.integer("model.vocab_pad_to", 0, 65536,
                             "pad the vocabulary to a multiple of this x t; 0: 128 x t", false, 1);
  m.d_model = f.integer("model.d_model", 1, 10000000, "residual width");
  m.layers = f.integer("model.layers", 1, 100000, "transformer blocks");
  m.heads = f.integer("model.heads", 1, 100000, "attention heads");
  m.seq = f.integer("model.seq", 1, 100000000, "tokens per sequence");
  m.ffn = f.integer("model.ffn", 1, 100000000, "MLP hidden width");
  m.experts = f.integer("model.experts", 0, 1000000, "experts per MoE layer, 0 or 1 for dense",
                        false, 0);
  m.top_k = f.integer("model.top_k", 1, 1000000, "experts per token", false, m.experts > 1 ? 2 : 1);
  if (m.experts > 1 && m.top_k > m.experts)
    f.fail("model.top_k", std::to_string(m.top_k) + " is out of range (experts per token; valid: 1.." +
                              std::to_string(m.experts) + ")");
  // Every block is costed as MoE: a deck alternating dense and MoE blocks is refused
  // rather than planned wrongly.
  if (m.experts > 1 &&
      f.integer("model.moe_every", 1, 1024, "blocks per MoE block", false, 1) != 1)
    f.fail("model.moe_every", "only 1 (every block has experts) is modelled by mini5d-plan");
  m.tie_embeddings = f.flag("model.tie_embeddings", false);
  m.attention = choice(f, "model.attention", Attention::blockwise, "blockwise, full");
  // The block's parts (GPT-2's by default): the same fields and words as a mini5d deck.
  m.norm = choice(f, "model.norm", Norm::layernorm, "layernorm, rmsnorm");
  m.mlp = choice(f, "model.mlp", Mlp::gelu, "gelu, swiglu");
  m.bias = f.flag("model.bias", true);
  // Positions: the same fields, words and ranges as a mini5d deck (core/deck_schema.cpp).
  m.positions = choice(f, "model.positions", Positions::learned, "learned, rope");
  m.rope_theta = f.number("model.rope_theta", 1e-6, 1e12, "base of the rotary angles", false, 10000);
  if (m.positions == Positions::rope && m.d_model % m.heads == 0 && (m.d_model / m.heads) % 2 != 0)
    f.fail("model.positions", "rope turns pairs of a head's columns: d_model / heads must be even, got " +
                                  std::to_string(m.d_model / m.heads));
  if (m.d_model % m.heads)
    f.fail("model.heads", std::to_string(m.heads) + " does not divide d_model=" +
                              std::to_string(m.d_model) + " (valid: a divisor of d_model)");
  // Dropout (model files only: a deck is mini5d's, which has none). A probability of 1
  // would drop everything, so the range stops below it.
  m.hidden_dropout = f.number("model.hidden_dropout", 0, 0.999, "dropout probability after the embedding, "
                              "the attention projection and the MLP; 0: off", false, 0);
  m.attention_dropout = f.number("model.attention_dropout", 0, 0.999, "dropout probability on the "
                                 "attention probabilities; 0: off", false, 0);
  m.kv_heads = f.integer("model.kv_heads", 0, 100000, "key/value heads, 0 for heads", false, 0);
  if (m.kv_heads > 0 && m.heads % m.kv_heads)
    f.fail("model.kv_heads", std::to_string(m.kv_heads) + " does not divide heads=" + std::to_string(m.heads) +
                                 " (valid: a divisor of heads, or 0 for heads)");
}

// A deck's layout, and the fields it carries into emitted decks; its global batch is
// what the layout implies unless train.global_batch says otherwise.
void read_deck_layout(const Fields& f, ModelInput& in) {
  Layout& l = in.deck_layout;
  l.d = int(f.integer("parallel.d", 1, 1 << 20, "data-parallel degree", false, 1));
  l.t = int(f.integer("parallel.t", 1, 1 << 20, "tensor-parallel degree", false, 1));
  l.p = int(f.integer("parallel.p", 1, 1 << 20, "pipeline-parallel degree", false, 1));
  l.c = int(f.integer("parallel.c", 1, 1 << 20, "context-parallel degree", false, 1));
  l.e = int(f.integer("parallel.e", 1, 1 << 20, "expert-parallel degree", false, 1));
  l.zero = int(f.integer("parallel.zero", 0, 3, "ZeRO stage", false, 0));
  l.virtual_stages = int(f.integer("parallel.virtual_stages", 1, 1024, "virtual pipeline stages", false, 1));
  if (const YAML::Node n = f.at("parallel.stage_layers"); n && !n.IsNull()) {
    // A YAML list, or the command line's "3,5" (the runtime's syntax, rules/stage_split).
    std::string text;
    if (n.IsSequence())
      for (const auto& item : n) text += (text.empty() ? "" : ",") + (item.IsScalar() ? item.Scalar() : "?");
    else if (n.IsScalar())
      text = n.Scalar();
    if (const std::string why = parse_stage_layers(text, l.stage_layers); !why.empty())
      f.fail("parallel.stage_layers", why + " (valid: auto, balanced or a list of positive integers such as [3, 5])");
  }
  l.schedule = choice(f, "parallel.schedule", l.virtual_stages > 1 ? Schedule::interleaved : Schedule::one_f_one_b,
                      "1f1b, gpipe, interleaved");
  // The runtime's defaults (core/deck.hpp): micro_batch 8, sequence parallelism on.
  l.micro_batch = int(f.integer("train.micro_batch", 1, 1 << 20, "sequences per micro-batch", false, 8));
  l.accumulation = int(f.integer("train.accumulation", 1, 1 << 20, "micro-batches per step", false, 1));
  l.recompute = choice(f, "train.recompute", Recompute::none, "none, selective, full");
  l.sp = l.t > 1 && f.flag("parallel.sp", true);
  in.train_fields = f.scalars("train");
  in.data_fields = f.scalars("data");
  in.output_fields = f.scalars("output");
  // Each factor is at most 2^20, so the product needs a wider type than long long
  // could promise for five of them; double is exact well past 2^31.
  const double batch = double(l.micro_batch) * l.accumulation * l.d * l.e;
  if (batch > double(kMaxBatch))
    f.fail("train.micro_batch", "micro_batch*accumulation*d*e = " + fmt(batch) +
                                    " sequences per step is out of range (valid: at most " +
                                    std::to_string(kMaxBatch) + ")");
  in.train.global_batch = static_cast<long long>(batch);
}

}  // namespace

ModelInput parse_model_text(const std::string& text, const std::string& source) {
  const Fields f(parse(text, source), source);
  ModelInput in;
  ModelDesc& m = in.model;
  // A file with any of the runtime's other sections is a deck and is held to the
  // runtime's field list; otherwise it is a model file (model: and train: only).
  const bool deck_like = f.has("parallel") || f.has("data") || f.has("checkpoint") ||
                         f.has("output");
  f.check_keys(deck_like ? deck_schema() : model_file_schema(),
               deck_like ? "deck" : "model file (a mini5d deck also has parallel:, data:, ...)");
  if (!f.has("model")) f.fail("model", "missing section (vocab, d_model, layers, heads, seq, ffn)");
  read_model_section(f, source, m);

  in.is_deck = f.has("parallel");
  if (in.is_deck) read_deck_layout(f, in);
  in.train.global_batch = f.integer("train.global_batch", 1, kMaxBatch,
                                    "sequences per optimizer step", false, in.train.global_batch);
  if (in.train.global_batch == 0) in.train.global_batch = 1;
  in.train.precision = choice(f, "train.precision", Precision::fp32, "fp32, bf16, fp64");
  // A deck plans what the runtime does: a bf16 run keeps fp32 main gradients (18 bytes
  // per parameter), and sends them as parallel.grad_reduce_dtype says. A model file
  // keeps the planner's default, bf16 gradients (16 bytes: the ZeRO paper's count).
  in.train.fp32_grad_accum = f.flag("train.fp32_grad_accum", in.is_deck);
  if (in.is_deck) {
    const char* wire_words = "fp32, bf16";
    const Precision wire = choice(f, "parallel.grad_reduce_dtype", Precision::fp32, wire_words);
    if (wire == Precision::fp64)
      f.fail("parallel.grad_reduce_dtype", "'fp64' is not valid (valid: " + std::string(wire_words) + ")");
    in.train.bf16_grad_reduce = wire == Precision::bf16;
  }
  return in;
}

ModelInput load_model_file(const std::string& path) {
  return parse_model_text(read_file(path), path);
}

void validate_model(const ModelDesc& m, const TrainDesc& tr) {
  if (tr.global_batch < 1 || tr.global_batch > 2147483647LL)
    throw InputError(m.source + ": train.global_batch: " + std::to_string(tr.global_batch) +
                     " is out of range (sequences per step; valid: an integer in [1, 2147483647])");
}

}  // namespace mini5d::plan
