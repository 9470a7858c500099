// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/grid/layout_rules.hpp"

namespace mini5d::grid {

std::string rank_count_problem(const Deck& deck, int world_size) {
  if (deck.parallel.ranks() == world_size) return "";
  return deck.origin + ": the layout d*t*p*c*e = " + std::to_string(deck.parallel.ranks()) +
         " ranks, but mpiexec started " + std::to_string(world_size);
}

std::vector<std::string> layout_problems(const Deck& deck, int world_size) {
  const auto& p = deck.parallel;
  const auto& m = deck.model;
  std::vector<std::string> out;
  auto bad = [&](const std::string& field, int value, const std::string& rule) {
    out.push_back(deck.origin + ": parallel." + field + "=" + std::to_string(value) + ": " + rule);
  };
  auto must_divide = [&](const char* field, int degree, const char* what, long value) {
    if (value % degree != 0)
      bad(field, degree, std::string("must divide ") + what + "=" + std::to_string(value));
  };
  if (auto r = rank_count_problem(deck, world_size); !r.empty()) out.push_back(r);
  // Tensor parallelism splits heads, the MLP width and the vocabulary (vocab-parallel
  // embedding and cross-entropy); sequence parallelism splits the sequence over t.
  must_divide("t", p.t, "model.heads", m.heads);
  must_divide("t", p.t, "model.ffn", m.ffn);
  must_divide("t", p.t, "model.vocab", m.vocab);
  if (p.sp == "true" && p.t > 1 && m.seq % p.t != 0)
    bad("t", p.t, "must divide model.seq=" + std::to_string(m.seq) +
                      " with parallel.sp=true (sequence parallelism splits the sequence; or set parallel.sp=false)");
  // Each pipeline stage (times its virtual chunks) owns a whole number of blocks.
  if (m.layers % (p.p * p.virtual_stages) != 0)
    bad("p", p.p, "p*virtual_stages=" + std::to_string(p.p * p.virtual_stages) +
                      " must divide model.layers=" + std::to_string(m.layers));
  if (p.virtual_stages > 1 && p.p == 1)
    bad("virtual_stages", p.virtual_stages, "interleaving needs parallel.p > 1");
  // Megatron's interleaved 1F1B cycles through the chunks in groups of p micro-batches.
  if (p.schedule == "interleaved" && p.virtual_stages < 2)
    out.push_back(deck.origin + ": parallel.schedule=interleaved needs parallel.virtual_stages > 1 (got " +
                  std::to_string(p.virtual_stages) + ")");
  if (p.schedule == "interleaved" && deck.train.accumulation % p.p != 0)
    out.push_back(deck.origin + ": parallel.schedule=interleaved needs train.accumulation=" +
                  std::to_string(deck.train.accumulation) + " (the micro-batches) divisible by parallel.p=" +
                  std::to_string(p.p));
  // Zig-zag ring attention gives each context rank two chunks of the sequence.
  if (p.c > 1 && m.seq % (2 * p.c) != 0)
    bad("c", p.c, "2*c=" + std::to_string(2 * p.c) + " must divide model.seq=" + std::to_string(m.seq));
  // With sequence parallelism too, each rank's T/c tokens are split over t.
  else if (p.c > 1 && p.sp == "true" && p.t > 1 && m.seq % p.t == 0 && (m.seq / p.c) % p.t != 0)
    bad("t", p.t, "must divide model.seq/c=" + std::to_string(m.seq / p.c) +
                      " with parallel.sp=true and parallel.c=" + std::to_string(p.c) + " (or set parallel.sp=false)");
  if (p.e > 1 && m.experts == 0) bad("e", p.e, "expert parallelism needs model.experts > 0");
  if (p.e > 1 && m.experts > 0) must_divide("e", p.e, "model.experts", m.experts);
  // With t > 1 the experts are split over the e x t group (docs/parallelism.md, expert
  // parallelism): each of its ranks routes its own sequence-parallel rows.
  if (p.t > 1 && m.experts > 0 && m.experts % p.e == 0 && m.experts % (p.e * p.t) != 0)
    bad("t", p.t, "e*t=" + std::to_string(p.e * p.t) + " must divide model.experts=" + std::to_string(m.experts) +
                      " (experts are split over the e x t ranks)");
  if (p.t > 1 && m.experts > 0 && p.sp != "true")
    bad("t", p.t, "with model.experts > 0 needs parallel.sp=true (each tensor rank routes its own token rows)");
  return out;
}

}  // namespace mini5d::grid
