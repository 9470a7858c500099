// SPDX-License-Identifier: BSD-3-Clause
// The exhaustive search. A thousand devices have about a thousand ordered
// factorisations into five degrees; with the knobs that is around a million
// candidates, each costed in about a microsecond, so there is no need for pruning
// heuristics that could miss the best plan.
#include "mini5d/plan/search/search.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace mini5d::plan {

std::vector<long long> divisors(long long n) {
  std::vector<long long> lo, hi;
  for (long long i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      lo.push_back(i);
      if (i != n / i) hi.push_back(n / i);
    }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  return lo;
}

static auto knob_key(const Layout& l) {
  return std::make_tuple(l.t, l.p, l.c, l.e, l.zero, int(l.recompute), l.virtual_stages,
                         int(l.schedule), l.sp ? 0 : 1, -l.micro_batch);
}

bool ranks_before(const Plan& a, const Plan& b) {
  const double ta = a.time.step, tb = b.time.step;
  if (std::fabs(ta - tb) > 1e-9 * std::max(ta, tb)) return ta < tb;
  const double ma = a.memory.total(), mb = b.memory.total();
  if (std::fabs(ma - mb) > 1e-9 * std::max(ma, mb)) return ma < mb;
  return knob_key(a.layout) < knob_key(b.layout);
}

Plan evaluate(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl, const Layout& l,
              const SearchOptions& o, double exact_below, bool searching) {
  Plan p;
  p.layout = l;
  p.memory = device_memory(m, tr, cl, l, o.memory);
  p.fits = p.memory.total() <= cl.device.memory;
  // In a search a plan that does not fit ranks nowhere: its pipelined time is bounded,
  // not replayed.
  p.time = step_time(m, tr, cl, l, o.time, p.fits || !searching ? exact_below : -std::numeric_limits<double>::infinity());
  p.split = layout_split(m, l);
  return p;
}

namespace {
// Keeps the n best plans seen.
struct TopN {
  std::size_t n;
  std::vector<Plan> v;
  void add(const Plan& p) {
    if (v.size() == n && !ranks_before(p, v.back())) return;
    auto it = std::upper_bound(v.begin(), v.end(), p, ranks_before);
    v.insert(it, p);
    if (v.size() > n) v.pop_back();
  }
};

bool less_memory(const Plan& a, const Plan& b) {
  const double ma = a.memory.total(), mb = b.memory.total();
  if (std::fabs(ma - mb) > 1e-9 * std::max(ma, mb)) return ma < mb;
  return ranks_before(a, b);
}
}  // namespace

SearchResult search(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                    const SearchOptions& o) {
  SearchResult res;
  TopN top{std::max<std::size_t>(o.top, 1), {}};
  const long long N = cl.devices();
  for (long long t : divisors(N))
    for (long long p : divisors(N / t))
      for (long long c : divisors(N / t / p))
        for (long long e : divisors(N / t / p / c)) {
          const Degrees deg{int(N / t / p / c / e), int(t), int(p), int(c), int(e)};
          ++res.degree_tuples;
          if (c > o.max_c) {
            res.excluded[deg] = "parallel.c=" + std::to_string(c) + ": above the largest context degree searched (" +
                                std::to_string(o.max_c) + ")";
            continue;
          }
          bool any_valid = false;
          std::string why;  // the first real rule a candidate breaks
          for_each_knob_set(m, tr, deg, o, [&](const Layout& l) {
            ++res.candidates;
            const auto problems = check_layout(m, tr, cl, l, o.rules);
            if (!problems.empty()) {
              // A redundant spelling is not a reason: another knob set names the plan.
              for (const auto& s : problems)
                if (why.empty() && s.rfind("redundant", 0) != 0) why = s;
              return;
            }
            any_valid = true;
            ++res.valid;
            auto it = res.best_by_degrees.find(deg);
            // Only a plan that may rank before the n-th best, its degrees' best and the
            // given plan needs its exact bubble (step_time's exact_below).
            const double inf = std::numeric_limits<double>::infinity();
            double bound = inf;
            if (!o.keep_all && top.v.size() == top.n && it != res.best_by_degrees.end())
              bound = std::max({top.v.back().time.step, it->second.time.step, o.given ? o.given->time.step : 0.0}) *
                      (1 + 1e-6);
            Plan plan = evaluate(m, tr, cl, l, o, bound, true);
            if (!res.least_memory || less_memory(plan, *res.least_memory)) {
              if (plan.time.bubble_estimated) plan = evaluate(m, tr, cl, l, o);
              res.least_memory = plan;
            }
            if (!plan.fits) return;
            ++res.fitting;
            if (o.given && ranks_before(plan, *o.given)) ++res.ahead_of_given;
            top.add(plan);
            if (o.keep_all) res.all.push_back(plan);
            if (it == res.best_by_degrees.end()) res.best_by_degrees.emplace(deg, plan);
            else if (ranks_before(plan, it->second)) it->second = plan;
          });
          if (!any_valid)
            res.excluded[deg] = !why.empty() ? why
                                : tr.global_batch % (deg[0] * deg[4])
                                    ? "the global batch " + std::to_string(tr.global_batch) +
                                          " does not divide by d*e=" + std::to_string(deg[0] * deg[4])
                                    : "no micro-batch split, pipeline schedule or knob set is valid";
        }
  res.top = std::move(top.v);
  return res;
}

std::optional<Plan> best_for_degrees(const ModelDesc& m, const TrainDesc& tr,
                                     const ClusterDesc& cl, const Degrees& deg,
                                     const SearchOptions& o, bool fitting_only) {
  std::optional<Plan> best, smallest;
  for_each_knob_set(m, tr, deg, o, [&](const Layout& l) {
    if (!check_layout(m, tr, cl, l, o.rules).empty()) return;
    const double bound = best ? best->time.step * (1 + 1e-6) : std::numeric_limits<double>::infinity();
    Plan plan = evaluate(m, tr, cl, l, o, bound, true);
    if (plan.fits && (!best || ranks_before(plan, *best))) best = plan;
    if (!smallest || less_memory(plan, *smallest)) {
      if (plan.time.bubble_estimated) plan = evaluate(m, tr, cl, l, o);
      smallest = plan;
    }
  });
  if (best || fitting_only) return best;
  return smallest;
}

}  // namespace mini5d::plan
