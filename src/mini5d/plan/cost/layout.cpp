// SPDX-License-Identifier: BSD-3-Clause
// Validity rules of a layout: the runtime's shape rules, and what only a search needs
// (the cluster, the global batch); the redundancy rules only keep the search from
// listing the same plan twice under different names.
#include "mini5d/plan/cost/layout.hpp"

#include <algorithm>
#include <sstream>

#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/rules/layout_shape_rules.hpp"
#include "mini5d/rules/stage_split.hpp"

namespace mini5d::plan {

const char* to_string(Mapping m) { return m == Mapping::cyclic ? "cyclic" : "block"; }

const char* axis_name(Axis a) {
  switch (a) {
    case Axis::d: return "d";
    case Axis::p: return "p";
    case Axis::c: return "c";
    case Axis::e: return "e";
    case Axis::t: return "t";
  }
  return "?";
}

long long axis_stride(const Layout& l, Axis a) {
  switch (a) {
    case Axis::t: return 1;
    case Axis::e: return l.t;
    case Axis::c: return 1LL * l.t * l.e;
    case Axis::p: return 1LL * l.t * l.e * l.c;
    case Axis::d: return 1LL * l.t * l.e * l.c * l.p;
  }
  return 1;
}

int axis_degree(const Layout& l, Axis a) {
  switch (a) {
    case Axis::d: return l.d;
    case Axis::p: return l.p;
    case Axis::c: return l.c;
    case Axis::e: return l.e;
    case Axis::t: return l.t;
  }
  return 1;
}

std::vector<std::string> check_layout(const ModelDesc& m, const TrainDesc& tr,
                                      const ClusterDesc& cl, const Layout& l,
                                      const RuleOptions& opt) {
  std::vector<std::string> bad;
  auto why = [&](const std::string& s) { bad.push_back(s); };
  const std::string T = "t=" + std::to_string(l.t);
  if (l.d < 1 || l.t < 1 || l.p < 1 || l.c < 1 || l.e < 1 || l.micro_batch < 1 ||
      l.accumulation < 1 || l.virtual_stages < 1) {
    why("degrees, micro-batch, accumulation and virtual stages must be >= 1");
    return bad;
  }
  if (l.ranks() != cl.devices())
    why("d*t*p*c*e = " + std::to_string(l.ranks()) + " but the cluster has " +
        std::to_string(cl.devices()) + " devices");
  // The shape rules are the runtime's own (rules/layout_shape_rules), so every plan
  // printed is one mini5d accepts; a model with one expert is dense here.
  const LayoutShape shape{l.d, l.t, l.p, l.c, l.e, l.virtual_stages, l.sp,
                          l.schedule == Schedule::interleaved, l.accumulation, l.stage_layers};
  const ModelShape shape_of_m{m.heads, m.ffn, m.layers, m.seq, m.moe() ? m.experts : 0, m.kv_heads};
  for (auto& s : layout_shape_problems(shape_of_m, shape)) why(s);
  if (!opt.allow_cross_node_tp && cl.devices_per_node % l.t)
    why(T + " does not fit inside a node of " + std::to_string(cl.devices_per_node) +
        " devices (tensor groups must not cross nodes)");
  else if (!opt.allow_cross_node_tp && l.mapping == Mapping::cyclic && axis_tier(cl, l, Axis::t) > 0)
    why(T + " with cyclic mapping puts each tensor group across nodes (tensor groups must not "
        "cross nodes; --allow-cross-node-tp to cost it anyway)");
  if (m.moe() && (m.top_k < 1 || m.top_k > m.experts))
    why("top_k must be in 1..experts");
  if (l.zero < 0 || l.zero > 3) why("ZeRO stage must be 0..3");
  // The runtime sums a tied head's gradient on the whole gradient buffer (ZeRO 0-1).
  if (m.tie_embeddings && l.zero > 1) why("model.tie_embeddings=true runs with ZeRO 0 or 1 only");
  // The runtime also runs chunks without interleaving; the planner's schedule model
  // knows virtual stages only in the interleaved schedule.
  if (l.virtual_stages > 1 && l.schedule != Schedule::interleaved)
    why("the planner models virtual_stages > 1 only with the interleaved schedule");
  const long long batch = 1LL * l.micro_batch * l.accumulation * l.d * l.e;
  if (tr.global_batch > 0 && batch != tr.global_batch)
    why("micro_batch*accumulation*d*e = " + std::to_string(batch) + " != global batch " +
        std::to_string(tr.global_batch));
  if (opt.skip_redundant) {
    if (l.zero > 0 && l.dense_group() == 1) why("redundant: ZeRO over a group of one rank");
    if (l.sp && l.t == 1) why("redundant: sequence parallelism with t=1");
    if (l.schedule == Schedule::gpipe && l.p == 1) why("redundant: GPipe with p=1");
  }
  return bad;
}

std::vector<long long> layout_split(const ModelDesc& m, const Layout& l, int moe_every) {
  const SplitShape shape{m.layers, m.d_model, m.ffn, m.vocab, m.seq, m.moe() ? m.experts : 0, m.top_k, moe_every,
                         m.mlp == Mlp::swiglu};
  return stage_split(shape, 1LL * l.p * l.virtual_stages, l.stage_layers);
}

bool even_split(const ModelDesc& m, const Layout& l) {
  return !l.stage_layers.given() && !l.stage_layers.balanced && m.layers % (1LL * l.p * l.virtual_stages) == 0;
}

double stage_block_count(const ModelDesc& m, const Layout& l, int stage) {
  // The search asks this for every candidate and stage: the even cut needs no split.
  if (l.p == 1 || even_split(m, l)) return double(m.layers) / l.p;
  return double(mini5d::stage_block_count(layout_split(m, l), l.p, stage));
}

std::vector<int> distinct_stages(const ModelDesc& m, const Layout& l) {
  if (l.p == 1) return {0};
  if (even_split(m, l)) return l.p == 2 ? std::vector<int>{0, 1} : std::vector<int>{0, 1, l.p - 1};
  const std::vector<long long> split = layout_split(m, l);
  std::vector<int> out{0};
  std::vector<std::vector<long long>> seen;
  for (int s = 1; s < l.p - 1; ++s) {
    const std::vector<long long> chunks = chunk_blocks(split, l.p, s);
    if (std::find(seen.begin(), seen.end(), chunks) == seen.end()) {
      seen.push_back(chunks);
      out.push_back(s);
    }
  }
  out.push_back(l.p - 1);
  return out;
}

std::string describe(const Layout& l) {
  std::ostringstream o;
  o << "d=" << l.d << " t=" << l.t << " p=" << l.p << " c=" << l.c << " e=" << l.e
    << " mb=" << l.micro_batch << " m=" << l.accumulation << " ZeRO-" << l.zero
    << " recompute=" << to_string(l.recompute);
  if (l.virtual_stages > 1) o << " v=" << l.virtual_stages;
  if (l.stage_layers.given() || l.stage_layers.balanced) o << " stages=" << format_stage_layers(l.stage_layers);
  if (l.sp) o << " SP";
  if (l.schedule == Schedule::gpipe) o << " gpipe";
  if (l.mapping == Mapping::cyclic) o << " map=cyclic";
  return o.str();
}

}  // namespace mini5d::plan
