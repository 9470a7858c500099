// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/deck_plan.hpp"

#include "mini5d/train/pipeline.hpp"

namespace mini5d::train {

plan::ModelDesc plan_model(const Deck& deck) {
  const auto& m = deck.model;
  plan::ModelDesc md;
  md.name = deck.origin;
  md.source = deck.origin;
  md.vocab = m.vocab, md.d_model = m.d_model, md.layers = m.layers, md.heads = m.heads, md.seq = m.seq;
  md.vocab_pad_to = m.vocab_pad_to;
  md.kv_heads = m.kv_heads;
  md.ffn = m.ffn, md.experts = m.experts, md.top_k = m.top_k;
  md.tie_embeddings = m.tie_embeddings;
  md.attention = m.attention;
  md.norm = m.norm;
  md.mlp = m.mlp;
  md.bias = m.bias;
  md.positions = m.positions;
  md.rope_theta = m.rope_theta;
  return md;
}

plan::Layout plan_layout(const Deck& deck) {
  const auto& p = deck.parallel;
  plan::Layout l;
  l.d = p.d, l.t = p.t, l.p = p.p, l.c = p.c, l.e = p.e;
  l.micro_batch = deck.train.micro_batch;
  l.accumulation = deck.train.accumulation;
  l.zero = p.zero;
  l.recompute = deck.train.recompute;
  l.virtual_stages = p.virtual_stages;
  l.sp = p.sp && p.t > 1;
  l.schedule = p.schedule;
  // The runtime's split, resolved: the planner then counts the same blocks per stage.
  if (p.p > 1) l.stage_layers.counts = pipeline_split(deck);
  return l;
}

}  // namespace mini5d::train
