// SPDX-License-Identifier: BSD-3-Clause
// Exhaustive search over layouts: every (d, t, p, c, e) whose product is the device
// count, and for each every micro-batch, schedule/virtual stages, sequence
// parallelism, ZeRO stage and recomputation; invalid ones (layout.hpp) are skipped,
// the rest are costed (memory_model, time_model) and ranked by predicted step time,
// ties broken by memory per device.
#pragma once
#include <array>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/plan/cost/time_model.hpp"

namespace mini5d::plan {

struct Plan;

struct SearchOptions {
  TimeOptions time;
  MemoryOptions memory;
  RuleOptions rules;
  std::vector<int> zero_stages{0, 1, 2, 3};
  std::vector<Recompute> recomputes{Recompute::none, Recompute::selective, Recompute::full};
  int max_micro_batch = 16;
  int max_virtual_stages = 8;
  bool allow_gpipe = false;  // GPipe has 1F1B's bubble and more memory: off by default
  bool allow_sp = true;      // consider sequence parallelism (frameworks before 2022: no)
  // Consider pipeline splits that are not even (p*v not dividing the layers, or the
  // balanced split beside an even one); Megatron before 2024 cut evenly only.
  bool uneven_stages = true;
  long long max_c = 1LL << 40;  // largest context-parallel degree considered
  // Knobs pinned to one value (a published run's own, validation.cpp): 0 (micro-batch,
  // virtual stages) or -1 (sequence parallelism: 0 off, 1 on) = searched.
  int pin_micro_batch = 0, pin_virtual_stages = 0, pin_sp = -1;
  std::size_t top = 10;
  bool keep_all = false;  // keep every fitting plan (tests)
  // A plan to rank (--layout/--deck): the search counts the fitting plans before it.
  const Plan* given = nullptr;
};

struct Plan {
  Layout layout;
  MemoryBreakdown memory;
  TimeBreakdown time;
  bool fits = false;
  std::vector<long long> split;  // blocks per virtual stage, resolved (layout_split)
};

// Ranking: faster first; within 1e-9 relative, less memory first; then a fixed order
// of the knobs so the output is deterministic.
bool ranks_before(const Plan& a, const Plan& b);

// exact_below: step_time's pruning bound (a search's; infinite: every bubble exact);
// `searching`: a plan that does not fit is bounded too (a search ranks only fitting ones).
Plan evaluate(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl, const Layout& l,
              const SearchOptions& o, double exact_below = std::numeric_limits<double>::infinity(),
              bool searching = false);

using Degrees = std::array<int, 5>;  // d, t, p, c, e

struct SearchResult {
  std::vector<Plan> top;        // best first
  std::vector<Plan> all;        // every fitting plan when keep_all
  std::size_t candidates = 0, valid = 0, fitting = 0;
  std::optional<Plan> least_memory;  // smallest footprint among valid plans
  std::map<Degrees, Plan> best_by_degrees;  // fastest fitting plan per degree tuple
  std::size_t ahead_of_given = 0;  // fitting plans ranking before SearchOptions::given
  std::size_t degree_tuples = 0;   // (d,t,p,c,e) tuples whose product is the device count
  // Tuples with no valid layout whatever the knobs, each with the rule its first
  // candidate breaks: what --explain lists, so no tuple is dropped without a word.
  std::map<Degrees, std::string> excluded;
};

SearchResult search(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                    const SearchOptions& o);

// The best plan for fixed degrees (knobs searched). With fitting_only=false and no
// fitting plan, returns the one with the least memory. nullopt when no valid knob set.
std::optional<Plan> best_for_degrees(const ModelDesc& m, const TrainDesc& tr,
                                     const ClusterDesc& cl, const Degrees& deg,
                                     const SearchOptions& o, bool fitting_only = true);

// Calls f(layout) for every knob combination of the given degrees (before validity).
template <class F>
void for_each_knob_set(const ModelDesc& m, const TrainDesc& tr, const Degrees& deg,
                       const SearchOptions& o, F&& f);

// Divisors of n in ascending order.
std::vector<long long> divisors(long long n);

// ---- template definition --------------------------------------------------------
template <class F>
void for_each_knob_set(const ModelDesc& m, const TrainDesc& tr, const Degrees& deg,
                       const SearchOptions& o, F&& f) {
  Layout l;
  l.d = deg[0], l.t = deg[1], l.p = deg[2], l.c = deg[3], l.e = deg[4];
  const long long de = 1LL * l.d * l.e;
  if (tr.global_batch <= 0 || tr.global_batch % de) return;
  const long long per = tr.global_batch / de;
  // The knobs that do not change the schedule: sequence parallelism, ZeRO, recomputation.
  auto inner = [&]() {
    for (int sp = 0; sp < (l.t > 1 && o.allow_sp ? 2 : 1); ++sp) {
      if (o.pin_sp >= 0 && sp != o.pin_sp) continue;
      l.sp = sp == 1;
      for (int z : o.zero_stages) {
        l.zero = z;
        for (Recompute r : o.recomputes) {
          l.recompute = r;
          f(l);
        }
      }
    }
  };
  for (long long mb : divisors(per)) {
    if (o.pin_micro_batch > 0 && mb != o.pin_micro_batch) continue;
    if (o.pin_micro_batch == 0 && mb > o.max_micro_batch) break;
    if (per / mb > 2147483647LL) continue;  // accumulation is an int (global batch < 2^31)
    l.micro_batch = int(mb);
    l.accumulation = int(per / mb);
    const bool pin_v = l.p > 1 && o.pin_virtual_stages > 0;
    const int v_lo = pin_v ? o.pin_virtual_stages : 1;
    const int v_hi = pin_v ? o.pin_virtual_stages : (l.p > 1 ? o.max_virtual_stages : 1);
    for (int v = v_lo; v <= v_hi; ++v) {
      if (m.layers < 1LL * l.p * v) continue;  // a virtual stage holds at least one block
      if (!o.uneven_stages && m.layers % (1LL * l.p * v) != 0) continue;
      for (int sch = 0; sch < 2; ++sch) {
        if (v > 1 && sch == 1) continue;
        if (sch == 1 && (!o.allow_gpipe || l.p == 1)) continue;
        l.virtual_stages = v;
        l.schedule = v > 1 ? Schedule::interleaved
                           : (sch == 1 ? Schedule::gpipe : Schedule::one_f_one_b);
        // The runtime's default split, then the balanced one where it differs (a head
        // heavier than a block on an even split).
        l.stage_layers = StageLayers{};
        inner();
        if (l.p == 1 || !o.uneven_stages) continue;
        const std::vector<long long> plain = layout_split(m, l);
        l.stage_layers.balanced = true;
        if (layout_split(m, l) != plain) inner();
      }
    }
  }
}

}  // namespace mini5d::plan
