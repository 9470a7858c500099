// SPDX-License-Identifier: BSD-3-Clause
// Where each routed token goes, computed on the host from the router's top-k choices
// (a few ints per token; pure functions, tested without MPI):
//   the send plan: every (token, slot) assignment gets a row of the send buffer, sorted
//     by expert (the experts of expert rank q are contiguous, so the rows for rank q are
//     too), in (slot, token) order within an expert: first choices before second ones;
//     in capacity mode an expert takes at most `capacity` rows from this rank, and the
//     rest are dropped (row -1) and counted, the later choices first (GShard's policy);
//   the receive plan: from every rank's per-expert counts (the count exchange), how
//     many rows arrive from each rank and the permutation that makes each local
//     expert's rows one contiguous slab (received rows are rank-major, the grouped
//     GEMM wants them expert-major).
#pragma once
#include <cstdint>
#include <vector>

namespace mini5d::ep {

// ceil(factor * rows * top_k / experts): the most rows an expert takes from one rank
// in one micro-batch in capacity mode; -1 (no limit) when factor is 0 (dropless).
long expert_capacity(double factor, long rows, int top_k, int experts);

struct SendPlan {
  std::vector<int> row;        // [tokens * k]: row of assignment (token, slot) in the send buffer, -1 dropped
  std::vector<int> count;      // [E] rows sent to each expert (after drops)
  std::vector<int> dropped;    // [E] assignments dropped at each expert
  std::vector<int> send_rows;  // [ranks] rows sent to each expert rank
  int rows = 0;                // rows of the send buffer
  long total_dropped() const;
};
// expert: [tokens * k] the chosen experts, token-major. capacity < 0: dropless.
SendPlan plan_send(const std::vector<int>& expert, int tokens, int k, int experts, int ranks, long capacity);

struct ReceivePlan {
  std::vector<int> recv_rows;     // [ranks] rows arriving from each rank
  std::vector<int> expert_rows;   // [local experts] rows each local expert computes
  std::vector<int> expert_begin;  // [local experts] first row of its slab (expert-major)
  std::vector<int> order;         // [rows]: expert-major row i is received row order[i]
  int rows = 0;
};
// counts: [ranks * E] every rank's per-expert counts (SendPlan::count, exchanged);
// `me` is this rank in the expert-parallel group, holding experts me*E/ranks ...
ReceivePlan plan_receive(const std::vector<double>& counts, int experts, int ranks, int me);

}  // namespace mini5d::ep
