// SPDX-License-Identifier: BSD-3-Clause
// The explanation is computed, not canned: every alternative quoted is re-planned
// (best knobs for those degrees) with the same models that ranked the winner, so
// "+X ms/step" is what the planner would have predicted had it chosen that.
#include "mini5d/plan/output/explain.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/output/goodput_plan.hpp"
#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

namespace {

// "4 layers" for an even split, "3+5 layers" (per virtual stage) for an uneven one.
std::string stage_layers_text(const ModelDesc& m, const Layout& l) {
  const std::vector<long long> split = layout_split(m, l);
  if (std::all_of(split.begin(), split.end(), [&](long long b) { return b == split.front(); }))
    return std::to_string(split.front() * l.virtual_stages) + " layers";
  std::string s = format_counts(split);
  std::replace(s.begin(), s.end(), ',', '+');
  return s + " layers" + (l.virtual_stages > 1 ? " (per virtual stage)" : "");
}

struct Ctx {
  const ModelDesc& m;
  const TrainDesc& tr;
  const ClusterDesc& cl;
  const SearchOptions& o;
  const Plan& best;
};

std::string tier_text(const ClusterDesc& cl, int tier) {
  if (tier < 0) return "no link";
  const LinkTier& t = cl.tiers[std::size_t(tier)];
  return t.name + ", " + fixed(t.bandwidth / 1e9, 0) + " GB/s";
}

std::string split_delta(const Plan& a, const Plan& b) { return time_split_delta(a, b); }

}  // namespace

// The biggest changes in the time split from a to b, e.g. "tp +20.1 ms, bubble -3.2 ms".
std::string time_split_delta(const Plan& a, const Plan& b) {
  const TimeBreakdown &x = a.time, &y = b.time;
  std::vector<std::pair<double, std::string>> parts = {
      {y.compute - x.compute, "compute"}, {y.tp - x.tp, "tp"},
      {y.pp - x.pp, "pp sends"},         {y.cp - x.cp, "cp ring"},
      {y.ep - x.ep, "all-to-all"},       {(y.dp + y.zero3) - (x.dp + x.zero3), "dp/ZeRO"},
      {y.bubble - x.bubble, "bubble"},   {y.optimizer - x.optimizer, "optimizer"}};
  std::sort(parts.begin(), parts.end(), [](const auto& u, const auto& v) {
    return std::fabs(u.first) > std::fabs(v.first);
  });
  const double total = std::fabs(y.step - x.step);
  std::string s;
  int n = 0;
  for (const auto& [dt, name] : parts) {
    if (n == 3 || std::fabs(dt) < 0.05 * total || std::fabs(dt) < 1e-7) break;
    s += (n++ ? ", " : "") + name + " " + (dt > 0 ? "+" : "-") + ms(std::fabs(dt));
  }
  return s;
}

namespace {

// "+12.3 ms/step (+4.1%: tp +20.1 ms, ...)" or "does not fit (needs 93.1 GiB, short by 13.1 GiB)".
std::string versus(const Ctx& c, const std::optional<Plan>& alt) {
  if (!alt) return "is not a valid layout";
  if (!alt->fits)
    return "does not fit (needs " + gib(alt->memory.total()) + " per device at its best " +
           "ZeRO/recompute, short by " + gib(alt->memory.total() - c.cl.device.memory) + ")";
  const double dt = alt->time.step - c.best.time.step;
  // Name the alternative's own knobs where they differ (e.g. it only fits with full
  // recomputation), so the quoted cost is attributable.
  const Layout &x = c.best.layout, &y = alt->layout;
  std::string knobs;
  auto add = [&](const std::string& k) { knobs += (knobs.empty() ? "" : ", ") + k; };
  if (y.recompute != x.recompute) add(std::string("recompute=") + to_string(y.recompute));
  if (y.zero != x.zero) add("ZeRO-" + std::to_string(y.zero));
  if (y.micro_batch != x.micro_batch) add("mb=" + std::to_string(y.micro_batch));
  if (y.virtual_stages != x.virtual_stages) add("v=" + std::to_string(y.virtual_stages));
  std::string s = (dt >= 0 ? "+" : "-") + ms(std::fabs(dt)) + "/step (" +
                  (dt >= 0 ? "+" : "-") + pct(std::fabs(dt) / c.best.time.step) + ")";
  const std::string why = split_delta(c.best, *alt);
  if (!why.empty()) s += ": " + why;
  if (!knobs.empty()) s += " [at its best: " + knobs + "]";
  return s;
}

Degrees degrees_of(const Layout& l) { return {l.d, l.t, l.p, l.c, l.e}; }

// Re-plan with one axis set to `v`, d absorbing the difference; nullopt if impossible.
std::optional<Plan> with_axis(const Ctx& c, int idx, int v, bool cross_node_ok = false) {
  Degrees g = degrees_of(c.best.layout);
  const long long rest = c.cl.devices() / (1LL * g[1] * g[2] * g[3] * g[4] / g[idx] * v);
  if (1LL * rest * g[1] * g[2] * g[3] * g[4] / g[idx] * v != c.cl.devices() || rest < 1)
    return std::nullopt;
  g[idx] = v;
  g[0] = int(rest);
  SearchOptions o = c.o;
  o.rules.allow_cross_node_tp = o.rules.allow_cross_node_tp || cross_node_ok;
  return best_for_degrees(c.m, c.tr, c.cl, g, o, false);
}

// Nearest smaller and larger degree for axis idx that keep the product integral.
std::pair<int, int> neighbours(const Ctx& c, int idx) {
  const Degrees g = degrees_of(c.best.layout);
  const long long others = 1LL * g[1] * g[2] * g[3] * g[4] / g[idx];
  const long long room = c.cl.devices() / others;
  int lo = 0, hi = 0;
  for (long long v : divisors(room)) {
    if (v < g[idx]) lo = int(v);
    if (v > g[idx] && !hi) hi = int(v);
  }
  return {lo, hi};
}

std::optional<Plan> with_knobs(const Ctx& c, int zero, int rc) {
  SearchOptions o = c.o;
  if (zero >= 0) o.zero_stages = {zero};
  if (rc >= 0) o.recomputes = {Recompute(rc)};
  return best_for_degrees(c.m, c.tr, c.cl, degrees_of(c.best.layout), o, false);
}

void explain_t(std::ostream& os, const Ctx& c) {
  const Layout& l = c.best.layout;
  const int tier = axis_tier(c.cl, l, Axis::t);
  const double a = activation_elem_bytes(c.tr.precision);
  const double msg = tp_allreduce_bytes(l.micro_batch, double(c.m.seq), l.c, double(c.m.d_model), a);
  os << "t=" << l.t << ": ";
  if (l.t == 1)
    os << "no tensor parallelism; every matrix stays whole on its device, so no all-reduce sits "
          "on the critical path.";
  else
    os << (l.t == c.cl.devices_per_node ? "a tensor group fills one node"
                                       : "a tensor group of " + std::to_string(l.t) +
                                             " stays inside one node")
       << " (" << tier_text(c.cl, tier) << "); its 4 all-reduces per block per micro-batch ("
       << human_bytes(msg) << " each" << (l.sp ? ", as all-gather/reduce-scatter pairs with "
                                                 "sequence parallelism"
                                              : "")
       << ") cost " << ms(c.best.time.tp_total) << "/step, "
       << (c.cl.software.tp_overlap > 0 ? ms(c.best.time.tp) + " of it exposed on the critical path."
                                         : std::string("all exposed on the critical path."));
  os << "\n";
  // The cluster's stated TP overlap and what the choice of t would be at the other
  // extreme (fully exposed <-> fully hidden), so its effect on t is visible.
  {
    const SoftwareDesc& sw = c.cl.software;
    os << "    TP overlap (" << sw.name << ", software.tp_overlap = " << fixed(sw.tp_overlap, 2)
       << "): " << ms(c.best.time.tp_total) << " of TP traffic per step, " << ms(c.best.time.tp)
       << " exposed.";
    ClusterDesc other = c.cl;
    other.software.tp_overlap = sw.tp_overlap > 0 ? 0.0 : 1.0;
    SearchOptions o = c.o;
    o.top = 1;
    o.given = nullptr;
    const SearchResult alt = search(c.m, c.tr, other, o);
    if (!alt.top.empty())
      os << " With tp_overlap = " << fixed(other.software.tp_overlap, 0)
         << " the best plan would be " << describe(alt.top.front().layout) << " at "
         << ms(alt.top.front().time.step) << "/step.";
    os << "\n";
  }
  // A vocabulary t does not divide is padded (rules/vocab_padding.hpp): rows that cost
  // memory and FLOPs, never a loss.
  if (const long long vp = c.m.padded_vocab(l.t); vp != c.m.vocab)
    os << "    the vocabulary of " << c.m.vocab << " is padded to " << vp << " rows ("
       << (c.m.vocab_pad_to == 0 ? "Megatron's multiple of 128*t" : "a multiple of vocab_pad_to*t = " +
                                                                      std::to_string(c.m.vocab_pad_to * l.t))
       << "): " << vp - c.m.vocab << " padding rows in the embedding and LM head, masked out of the loss.\n";
  const auto [lo, hi] = neighbours(c, 1);
  if (hi) {
    const bool cross = hi > c.cl.devices_per_node;
    const std::optional<Plan> alt = with_axis(c, 1, hi, true);
    os << "    t=" << hi << (cross ? " would put the per-block all-reduce on the inter-node link ("
                                  + tier_text(c.cl, int(c.cl.tiers.size()) - 1) + ")"
                            : " would cut every matrix further")
       << ": " << versus(c, alt) << (cross ? " (and is refused unless forced)" : "");
    // A wider tensor group also pushes the axes above it (e, c, p) to slower tiers.
    if (alt && l.c > 1 && axis_tier(c.cl, alt->layout, Axis::c) > axis_tier(c.cl, l, Axis::c))
      os << "; it also pushes the c=" << l.c << " ring onto "
         << tier_text(c.cl, axis_tier(c.cl, alt->layout, Axis::c));
    os << "\n";
  }
  if (lo) os << "    t=" << lo << " (d takes the rest): " << versus(c, with_axis(c, 1, lo)) << "\n";
}

void explain_p(std::ostream& os, const Ctx& c) {
  const Layout& l = c.best.layout;
  const auto [lo, hi] = neighbours(c, 2);
  std::optional<Plan> smaller;
  if (lo) smaller = with_axis(c, 2, lo);
  os << "p=" << l.p << ": ";
  if (l.p == 1) {
    os << "no pipeline: the state fits without splitting the depth, so there is no bubble.";
  } else {
    const bool needed = !smaller || !smaller->fits;
    const bool knob_bound = !needed && smaller->layout.recompute != l.recompute;
    os << (needed ? "the smallest pipeline depth at which the model fits"
           : knob_bound ? std::string("the shallowest pipeline at which recompute=") +
                              to_string(l.recompute) + " fits (p=" + std::to_string(lo) +
                              " needs recompute=" + to_string(smaller->layout.recompute) + ")"
                        : std::string("deeper than memory alone needs"))
       << "; " << l.p << " stages of " << stage_layers_text(c.m, l) << " across "
       << tier_text(c.cl, axis_tier(c.cl, l, Axis::p)) << ", boundary sends cost "
       << ms(c.best.time.pp) << "/step; bubble (p-1)/(v*m+p-1) = " << l.p - 1 << "/("
       << l.virtual_stages << "*" << l.accumulation << "+" << l.p - 1 << ") = "
       << pct(double(l.p - 1) / (l.virtual_stages * l.accumulation + l.p - 1)) << " = "
       << ms(c.best.time.bubble) << "/step.";
    if (l.virtual_stages > 1)
      os << " Interleaving v=" << l.virtual_stages << " chunks per stage divides the bubble by "
         << l.virtual_stages << " for " << l.virtual_stages << "x the boundary sends.";
  }
  os << "\n";
  if (lo) os << "    p=" << lo << " (d takes the rest): " << versus(c, smaller) << "\n";
  if (hi) os << "    p=" << hi << ": " << versus(c, with_axis(c, 2, hi)) << "\n";
}

// ", as a ring" or ", as a double binary tree": which all-reduce a cluster with
// software.collectives: nccl runs for these bytes over this group's link (empty otherwise).
std::string allreduce_algorithm(const LinkTier& link, double bytes, int n) {
  if (!link.tree_allreduce) return "";
  return allreduce_as_tree(bytes, n, link) ? ", as a double binary tree" : ", as a ring";
}

void explain_d(std::ostream& os, const Ctx& c) {
  const Layout& l = c.best.layout;
  const TimeBreakdown& t = c.best.time;
  const double bytes = dp_reduction_bytes(stage_params(c.m, l, t.slowest_stage).dense, c.tr.precision,
                                          c.tr.fp32_grad_accum, c.tr.bf16_grad_reduce);
  const int tier = gradient_group_tier(c.cl, l);
  const long long g = gradient_members_per_node(c.cl, l);
  const auto link = gradient_group_link(c.cl, l);
  os << "d=" << l.d << ": every remaining device goes to data parallelism, the axis with the "
     << "best ratio of communication to compute; the dense-gradient group d*c*e = "
     << l.dense_group() << " reduces " << human_bytes(bytes)
     << " of gradients per rank per step over " << tier_text(c.cl, tier);
  if (link && link->bandwidth > c.cl.tiers[std::size_t(tier)].bandwidth)
    os << " (" << g << " members per node, through " << g << " NICs at once: "
       << fixed(link->bandwidth / 1e9, 0) << " GB/s)";
  if (link && l.zero <= 1) os << allreduce_algorithm(*link, bytes, l.dense_group());
  os << ": " << ms(t.dp_total + t.zero3_total) << " of traffic, " << ms(t.dp + t.zero3)
     << (c.cl.software.grad_reduce_overlap ? " exposed after overlap with the backward.\n"
                                           : " exposed (the framework reduces after the last backward).\n");
}

void explain_ce(std::ostream& os, const Ctx& c) {
  const Layout& l = c.best.layout;
  os << "c=" << l.c << ": ";
  if (l.c == 1)
    os << "seq=" << c.m.seq << " fits without splitting the sequence, so no K/V ring is needed.";
  else {
    const bool gather = c.cl.software.context_parallel == "allgather";
    os << "the sequence is split in " << l.c << " (zig-zag), "
       << (gather ? "K/V are all-gathered before the attention core and dK/dV reduce-scattered after it on "
                  : "K/V blocks go round a ring on ")
       << tier_text(c.cl, axis_tier(c.cl, l, Axis::c)) << ": " << ms(c.best.time.cp_total) << " of traffic, ";
    if (gather)
      os << "all exposed (software.context_parallel: allgather).";
    else
      os << ms(c.best.time.cp) << " exposed behind the attention core.";
  }
  os << "\n";
  const auto [lo, hi] = neighbours(c, 3);
  if (hi) os << "    c=" << hi << " (taken from d): " << versus(c, with_axis(c, 3, hi)) << "\n";
  if (lo) os << "    c=" << lo << ": " << versus(c, with_axis(c, 3, lo)) << "\n";

  os << "e=" << l.e << ": ";
  if (!c.m.moe()) {
    os << "dense model, no experts to place.\n";
    return;
  }
  os << c.m.experts / l.e << " of " << c.m.experts << " experts per rank; the dispatch/combine "
     << "all-to-alls run on " << tier_text(c.cl, axis_tier(c.cl, l, Axis::e)) << " and cost "
     << ms(c.best.time.ep) << "/step exposed (imbalance factor " << fixed(c.o.time.moe_imbalance, 2)
     << ").\n";
  const auto [elo, ehi] = neighbours(c, 4);
  if (ehi) os << "    e=" << ehi << ": " << versus(c, with_axis(c, 4, ehi)) << "\n";
  if (elo) os << "    e=" << elo << ": " << versus(c, with_axis(c, 4, elo)) << "\n";
}

void explain_knobs(std::ostream& os, const Ctx& c) {
  const Layout& l = c.best.layout;
  const MemoryBreakdown& mb = c.best.memory;
  os << "ZeRO-" << l.zero << ": ";
  const char* what[] = {"no sharding: every rank of the dense group keeps full state",
                        "optimizer state (master + moments) sharded over the dense group",
                        "optimizer state and gradients sharded",
                        "optimizer state, gradients and weights sharded (weights gathered per micro-batch)"};
  os << what[l.zero] << "; state is " << gib(mb.weights + mb.grads + mb.optimizer)
     << " per device.\n";
  for (int z = 0; z <= 3; ++z) {
    if (z == l.zero || l.dense_group() == 1) continue;
    if (std::find(c.o.zero_stages.begin(), c.o.zero_stages.end(), z) == c.o.zero_stages.end())
      continue;
    os << "    ZeRO-" << z << ": " << versus(c, with_knobs(c, z, -1)) << "\n";
  }
  os << "recompute=" << to_string(l.recompute) << ": activations " << gib(mb.activations)
     << " per device";
  if (l.recompute != Recompute::none) os << ", recomputation costs " << ms(c.best.time.recompute) << "/step";
  os << ".\n";
  for (int r = 0; r <= 2; ++r) {
    if (r == int(l.recompute)) continue;
    if (std::find(c.o.recomputes.begin(), c.o.recomputes.end(), Recompute(r)) == c.o.recomputes.end())
      continue;
    os << "    " << to_string(Recompute(r)) << ": " << versus(c, with_knobs(c, -1, r)) << "\n";
  }
  os << "micro-batch " << l.micro_batch << " x " << l.accumulation << " per step x d*e "
     << l.d * l.e << " = " << c.tr.global_batch << " sequences"
     << (l.p > 1 ? "; more, smaller micro-batches shrink the bubble" : "")
     << (l.sp ? "; sequence parallelism shards the LayerNorm/residual activations over t" : "")
     << ".\n";
}

// The degree tuples no knob set makes valid, grouped by the rule that excludes them.
void explain_exclusions(std::ostream& os, const SearchResult& r) {
  if (r.excluded.empty()) {
    os << "excluded: none; each of the " << r.degree_tuples << " (d,t,p,c,e) tuples has a valid layout.\n";
    return;
  }
  std::map<std::string, std::vector<Degrees>> by_rule;
  for (const auto& [deg, why] : r.excluded) by_rule[why].push_back(deg);
  std::vector<std::pair<std::string, std::vector<Degrees>>> rules(by_rule.begin(), by_rule.end());
  std::stable_sort(rules.begin(), rules.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  os << "excluded: " << r.excluded.size() << " of " << r.degree_tuples
     << " (d,t,p,c,e) tuples have no valid layout whatever the knobs:\n";
  constexpr std::size_t kShown = 8;
  for (std::size_t i = 0; i < rules.size() && i < kShown; ++i) {
    const Degrees& g = rules[i].second.front();
    os << "    " << rules[i].first << ": " << rules[i].second.size() << " tuple"
       << (rules[i].second.size() > 1 ? "s" : "") << ", e.g. d=" << g[0] << " t=" << g[1] << " p=" << g[2]
       << " c=" << g[3] << " e=" << g[4] << "\n";
  }
  if (rules.size() > kShown) os << "    ... and " << rules.size() - kShown << " more rules\n";
}

std::string knob_diff(const Layout& a, const Layout& b) {
  std::ostringstream o;
  auto f = [&](const char* n, long long x, long long y) {
    if (x != y) o << (o.tellp() > 0 ? ", " : "") << n << " " << x << "->" << y;
  };
  f("d", a.d, b.d), f("t", a.t, b.t), f("p", a.p, b.p), f("c", a.c, b.c), f("e", a.e, b.e);
  f("mb", a.micro_batch, b.micro_batch), f("v", a.virtual_stages, b.virtual_stages);
  f("ZeRO", a.zero, b.zero);
  if (a.recompute != b.recompute)
    o << (o.tellp() > 0 ? ", " : "") << "recompute " << to_string(a.recompute) << "->"
      << to_string(b.recompute);
  if (a.sp != b.sp) o << (o.tellp() > 0 ? ", " : "") << "SP " << (b.sp ? "on" : "off");
  return o.str();
}

}  // namespace

void explain_plan(std::ostream& os, const ModelDesc& m, const TrainDesc& tr,
                  const ClusterDesc& cl, const Plan& p, const SearchOptions& o) {
  const Ctx c{m, tr, cl, o, p};
  explain_t(os, c);
  explain_p(os, c);
  explain_d(os, c);
  explain_ce(os, c);
  explain_knobs(os, c);
  os << goodput_text(plan_goodput(m, cl, p));
}

void explain(std::ostream& os, const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
             const SearchResult& r, const SearchOptions& o) {
  if (r.top.empty()) return;
  const Ctx c{m, tr, cl, o, r.top.front()};
  os << "\nWhy this plan (axis by axis; alternatives are re-planned with their best knobs):\n";
  explain_plan(os, m, tr, cl, c.best, o);
  if (r.top.size() > 1) {
    const Plan& ru = r.top[1];
    const double dt = ru.time.step - c.best.time.step;
    const double dm = ru.memory.total() - c.best.memory.total();
    os << "runner-up (" << knob_diff(c.best.layout, ru.layout) << "): +" << ms(dt) << "/step (+"
       << pct(dt / c.best.time.step, 2) << ")";
    const std::string why = split_delta(c.best, ru);
    if (!why.empty()) os << " [" << why << "]";
    os << " for " << (dm <= 0 ? "-" : "+") << gib(std::fabs(dm), 2) << " per device.\n";
  }
  explain_exclusions(os, r);
}

}  // namespace mini5d::plan
