// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/grid/layout_rules.hpp"

#include "mini5d/core/deck_blame.hpp"
#include "mini5d/rules/layout_shape_rules.hpp"

namespace mini5d::grid {

std::string rank_count_problem(const Deck& deck, int world_size) {
  if (deck.parallel.ranks() == world_size) return "";
  // The degrees are named for the blame only: an override of any of them is the cause.
  return blamed_origin(deck, "parallel.d parallel.t parallel.p parallel.c parallel.e") + ": the layout d*t*p*c*e = " + std::to_string(deck.parallel.ranks()) +
         " ranks, but mpiexec started " + std::to_string(world_size);
}

std::vector<std::string> layout_problems(const Deck& deck, int world_size) {
  const auto& p = deck.parallel;
  const auto& m = deck.model;
  std::vector<std::string> out;
  if (auto r = rank_count_problem(deck, world_size); !r.empty()) out.push_back(r);
  const LayoutShape shape{p.d, p.t, p.p, p.c, p.e, p.virtual_stages, p.sp, p.schedule == Schedule::interleaved,
                          deck.train.accumulation, p.stage_layers};
  const ModelShape model{m.heads, m.ffn, m.layers, m.seq, m.experts, m.kv_heads};
  for (const auto& why : layout_shape_problems(model, shape)) out.push_back(blamed_origin(deck, why) + ": " + why);
  return out;
}

}  // namespace mini5d::grid
