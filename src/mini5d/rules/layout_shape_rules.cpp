// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/rules/layout_shape_rules.hpp"

namespace mini5d {

namespace {
std::string n(long long v) { return std::to_string(v); }
}  // namespace

std::vector<std::string> layout_shape_problems(const ModelShape& m, const LayoutShape& l) {
  std::vector<std::string> out;
  auto bad = [&](const char* field, long long degree, const std::string& rule) {
    out.push_back(std::string("parallel.") + field + "=" + n(degree) + ": " + rule);
  };
  auto must_divide = [&](const char* field, long long degree, const char* what, long long value) {
    if (value % degree != 0) bad(field, degree, std::string("must divide ") + what + "=" + n(value));
  };
  // Tensor parallelism splits heads, the MLP width and the vocabulary (vocab-parallel
  // embedding and cross-entropy); sequence parallelism splits the sequence over t. The
  // vocabulary is padded to a multiple of t (rules/vocab_padding.hpp), so it needs no rule.
  must_divide("t", l.t, "model.heads", m.heads);
  // Grouped-query attention splits the key/value heads over t too (each rank holds
  // whole ones), or with t > kv_heads replicates each over t/kv_heads ranks.
  if (m.kv_heads > 0 && m.kv_heads != m.heads && m.kv_heads % l.t != 0 && l.t % m.kv_heads != 0)
    bad("t", l.t, "must divide model.kv_heads=" + n(m.kv_heads) + " or be a multiple of it");
  must_divide("t", l.t, "model.ffn", m.ffn);
  if (l.sp && l.t > 1 && m.seq % l.t != 0)
    bad("t", l.t, "must divide model.seq=" + n(m.seq) +
                      " with parallel.sp=true (sequence parallelism splits the sequence; or set parallel.sp=false)");
  // Each virtual stage (p of them times the virtual chunks) holds at least one block;
  // an explicit split names every one of them and all the blocks.
  const long long S = l.p * l.virtual_stages;
  if (!l.stage_layers.given() && m.layers < S)
    bad("p", l.p, "p*virtual_stages=" + n(S) + " must not exceed model.layers=" + n(m.layers) +
                      " (each virtual stage holds at least one block)");
  if (l.stage_layers.given()) {
    long long sum = 0;
    for (long long b : l.stage_layers.counts) sum += b;
    if (static_cast<long long>(l.stage_layers.counts.size()) != S || sum != m.layers)
      out.push_back("parallel.stage_layers: expected p*virtual_stages=" + n(S) +
                    " positive block counts summing to model.layers=" + n(m.layers) + ", got " +
                    n(static_cast<long long>(l.stage_layers.counts.size())) + " summing to " + n(sum));
  }
  if (l.virtual_stages > 1 && l.p == 1) bad("virtual_stages", l.virtual_stages, "interleaving needs parallel.p > 1");
  // Megatron's interleaved 1F1B cycles through the chunks in groups of p micro-batches.
  if (l.interleaved && l.virtual_stages < 2)
    out.push_back("parallel.schedule=interleaved needs parallel.virtual_stages > 1 (got " + n(l.virtual_stages) + ")");
  if (l.interleaved && l.accumulation % l.p != 0)
    out.push_back("parallel.schedule=interleaved needs train.accumulation=" + n(l.accumulation) +
                  " (the micro-batches) divisible by parallel.p=" + n(l.p));
  // Zig-zag ring attention gives each context rank two chunks of the sequence.
  if (l.c > 1 && m.seq % (2 * l.c) != 0)
    bad("c", l.c, "2*c=" + n(2 * l.c) + " must divide model.seq=" + n(m.seq));
  // With sequence parallelism too, each rank's T/c tokens are split over t.
  else if (l.c > 1 && l.sp && l.t > 1 && m.seq % l.t == 0 && (m.seq / l.c) % l.t != 0)
    bad("t", l.t, "must divide model.seq/c=" + n(m.seq / l.c) + " with parallel.sp=true and parallel.c=" + n(l.c) +
                      " (or set parallel.sp=false)");
  if (l.e > 1 && m.experts == 0) bad("e", l.e, "expert parallelism needs model.experts > 0");
  if (l.e > 1 && m.experts > 0) must_divide("e", l.e, "model.experts", m.experts);
  // With t > 1 the experts are split over the e x t group (docs/parallelism.md, expert
  // parallelism): each of its ranks routes its own sequence-parallel rows.
  if (l.t > 1 && m.experts > 0 && m.experts % l.e == 0 && m.experts % (l.e * l.t) != 0)
    bad("t", l.t, "e*t=" + n(l.e * l.t) + " must divide model.experts=" + n(m.experts) +
                      " (experts are split over the e x t ranks)");
  if (l.t > 1 && m.experts > 0 && !l.sp)
    bad("t", l.t, "with model.experts > 0 needs parallel.sp=true (each tensor rank routes its own token rows)");
  return out;
}

}  // namespace mini5d
