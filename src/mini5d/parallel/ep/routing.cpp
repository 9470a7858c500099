// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/ep/routing.hpp"

#include <cmath>
#include <numeric>

namespace mini5d::ep {

long expert_capacity(double factor, long rows, int top_k, int experts) {
  if (factor <= 0) return -1;
  return long(std::ceil(factor * double(rows) * top_k / experts - 1e-9));
}

long SendPlan::total_dropped() const { return std::accumulate(dropped.begin(), dropped.end(), 0L); }

SendPlan plan_send(const std::vector<int>& expert, int tokens, int k, int experts, int ranks, long capacity) {
  SendPlan p;
  p.row.assign(std::size_t(tokens) * k, -1);
  p.count.assign(std::size_t(experts), 0);
  p.dropped.assign(std::size_t(experts), 0);
  // Keep or drop, slot by slot (first choices win the capacity).
  std::vector<char> kept(p.row.size(), 0);
  for (int j = 0; j < k; ++j)
    for (int i = 0; i < tokens; ++i) {
      const std::size_t a = std::size_t(i) * k + j;
      const int e = expert[a];
      if (capacity >= 0 && p.count[e] >= capacity) {
        ++p.dropped[e];
        continue;
      }
      ++p.count[e];
      kept[a] = 1;
    }
  // Rows: by expert, then slot, then token.
  std::vector<int> next(std::size_t(experts), 0);
  for (int e = 1; e < experts; ++e) next[e] = next[e - 1] + p.count[e - 1];
  p.rows = experts ? next[experts - 1] + p.count[experts - 1] : 0;
  for (int j = 0; j < k; ++j)
    for (int i = 0; i < tokens; ++i) {
      const std::size_t a = std::size_t(i) * k + j;
      if (kept[a]) p.row[a] = next[expert[a]]++;
    }
  const int local = experts / ranks;
  p.send_rows.assign(std::size_t(ranks), 0);
  for (int e = 0; e < experts; ++e) p.send_rows[e / local] += p.count[e];
  return p;
}

ReceivePlan plan_receive(const std::vector<double>& counts, int experts, int ranks, int me) {
  ReceivePlan p;
  const int local = experts / ranks, first = me * local;
  auto n = [&](int s, int j) { return int(counts[std::size_t(s) * experts + first + j]); };
  p.recv_rows.assign(std::size_t(ranks), 0);
  p.expert_rows.assign(std::size_t(local), 0);
  p.expert_begin.assign(std::size_t(local), 0);
  for (int s = 0; s < ranks; ++s)
    for (int j = 0; j < local; ++j) {
      p.recv_rows[s] += n(s, j);
      p.expert_rows[j] += n(s, j);
    }
  for (int j = 1; j < local; ++j) p.expert_begin[j] = p.expert_begin[j - 1] + p.expert_rows[j - 1];
  p.rows = std::accumulate(p.recv_rows.begin(), p.recv_rows.end(), 0);
  // Received rows are rank-major, each rank's block expert-major: rank s's rows for
  // local expert j start at (rows from ranks < s) + (its rows for experts < j).
  p.order.assign(std::size_t(p.rows), 0);
  std::vector<int> fill(p.expert_begin);
  int at = 0;
  for (int s = 0; s < ranks; ++s)
    for (int j = 0; j < local; ++j)
      for (int r = 0; r < n(s, j); ++r) p.order[std::size_t(fill[j]++)] = at++;
  return p;
}

}  // namespace mini5d::ep
