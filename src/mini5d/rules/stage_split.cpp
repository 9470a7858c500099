// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/rules/stage_split.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>

namespace mini5d {

double block_split_cost(const SplitShape& m, long long block) {
  const double d = double(m.d_model), T = double(m.seq);
  const double attention = 8 * d * d + 2 * d * (T + 1);
  const bool moe = m.experts > 0 && (block + 1) % std::max(1LL, m.moe_every) == 0;
  const double mlp = (m.swiglu ? 6 : 4) * d * double(m.ffn);
  return attention + (moe ? double(m.top_k) * mlp + 2 * d * double(m.experts) : mlp);
}

double embedding_split_cost(const SplitShape& m) { return 2 * double(m.d_model); }

double head_split_cost(const SplitShape& m) { return 2 * double(m.d_model) * double(m.vocab); }

namespace {

// Minimises the largest stage cost, then the sum of squared stage costs among splits
// that reach it: two O(S L^2) passes over prefix sums.
std::vector<long long> balanced(const SplitShape& m, long long S) {
  const long long L = m.layers;
  std::vector<double> prefix(std::size_t(L + 1), 0.0);
  for (long long b = 0; b < L; ++b) prefix[std::size_t(b + 1)] = prefix[std::size_t(b)] + block_split_cost(m, b);
  const double emb = embedding_split_cost(m), head = head_split_cost(m);
  // Cost of stage s holding blocks [j, i).
  auto cost = [&](long long s, long long j, long long i) {
    return prefix[std::size_t(i)] - prefix[std::size_t(j)] + (s == 0 ? emb : 0.0) + (s == S - 1 ? head : 0.0);
  };
  const double inf = std::numeric_limits<double>::infinity();
  // Pass 1: best[s][i], the least largest cost of stages 0..s holding blocks [0, i).
  std::vector<std::vector<double>> best(std::size_t(S), std::vector<double>(std::size_t(L + 1), inf));
  for (long long i = 1; i <= L; ++i) best[0][std::size_t(i)] = cost(0, 0, i);
  for (long long s = 1; s < S; ++s)
    for (long long i = s + 1; i <= L; ++i)
      for (long long j = s; j < i; ++j)
        best[std::size_t(s)][std::size_t(i)] = std::min(best[std::size_t(s)][std::size_t(i)],
                                                        std::max(best[std::size_t(s - 1)][std::size_t(j)], cost(s, j, i)));
  const double cap = best[std::size_t(S - 1)][std::size_t(L)] * (1 + 1e-12);
  // Pass 2: the least sum of squares with every stage at most the cap; from[s][i] is
  // where stage s starts. Ties keep the earliest start (fewer blocks early).
  std::vector<std::vector<double>> sq(std::size_t(S), std::vector<double>(std::size_t(L + 1), inf));
  std::vector<std::vector<long long>> from(std::size_t(S), std::vector<long long>(std::size_t(L + 1), -1));
  for (long long i = 1; i <= L; ++i)
    if (double c = cost(0, 0, i); c <= cap) sq[0][std::size_t(i)] = c * c, from[0][std::size_t(i)] = 0;
  for (long long s = 1; s < S; ++s)
    for (long long i = s + 1; i <= L; ++i)
      for (long long j = s; j < i; ++j) {
        const double c = cost(s, j, i), prev = sq[std::size_t(s - 1)][std::size_t(j)];
        if (c > cap || prev == inf) continue;
        if (prev + c * c < sq[std::size_t(s)][std::size_t(i)])
          sq[std::size_t(s)][std::size_t(i)] = prev + c * c, from[std::size_t(s)][std::size_t(i)] = j;
      }
  std::vector<long long> split(static_cast<std::size_t>(S));
  for (long long s = S - 1, i = L; s >= 0; --s) {
    const long long j = from[std::size_t(s)][std::size_t(i)];
    split[std::size_t(s)] = i - j;
    i = j;
  }
  return split;
}

}  // namespace

std::vector<long long> balanced_split(const SplitShape& m, long long S) {
  if (S <= 1) return {m.layers};
  // More stages than blocks has no split: the back-track would read from[s][-1] and
  // return whatever memory held (a planner test once did, and hung on the garbage).
  if (S > m.layers)
    throw std::invalid_argument("stage_split: " + std::to_string(S) + " virtual stages for " +
                                std::to_string(m.layers) + " blocks (needs 1 <= p * virtual_stages <= layers)");
  // The planner asks for the same split once per candidate and stage: keep them.
  using Key = std::tuple<long long, long long, long long, long long, long long, long long, long long, long long, bool,
                         long long>;
  static std::map<Key, std::vector<long long>> memo;
  static std::mutex lock;
  const Key key{m.layers, m.d_model, m.ffn, m.vocab, m.seq, m.experts, m.top_k, m.moe_every, m.swiglu, S};
  std::lock_guard<std::mutex> guard(lock);
  auto it = memo.find(key);
  if (it == memo.end()) it = memo.emplace(key, balanced(m, S)).first;
  return it->second;
}

std::vector<long long> stage_split(const SplitShape& m, long long S, const StageLayers& how) {
  if (how.given()) return how.counts;
  if (!how.balanced && S >= 1 && m.layers % S == 0) return std::vector<long long>(static_cast<std::size_t>(S), m.layers / S);
  return balanced_split(m, S);
}

std::vector<long long> chunk_blocks(const std::vector<long long>& split, int p, int stage) {
  std::vector<long long> out;
  for (std::size_t vs = std::size_t(stage); vs < split.size(); vs += std::size_t(p)) out.push_back(split[vs]);
  return out;
}

long long stage_block_count(const std::vector<long long>& split, int p, int stage) {
  const std::vector<long long> c = chunk_blocks(split, p, stage);
  return std::accumulate(c.begin(), c.end(), 0LL);
}

long long first_block_of(const std::vector<long long>& split, int vs) {
  return std::accumulate(split.begin(), split.begin() + vs, 0LL);
}

std::vector<double> virtual_stage_costs(const SplitShape& m, const std::vector<long long>& split) {
  std::vector<double> out(split.size(), 0.0);
  long long block = 0;
  for (std::size_t vs = 0; vs < split.size(); ++vs)
    for (long long b = 0; b < split[vs]; ++b) out[vs] += block_split_cost(m, block++);
  if (!out.empty()) out.front() += embedding_split_cost(m), out.back() += head_split_cost(m);
  return out;
}

}  // namespace mini5d
