// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/checkpoint/read_owners.hpp"

#include <algorithm>
#include <cmath>

namespace mini5d::checkpoint {

namespace {

// Boxes are compared first, as boxes: in the loads the trainer makes, another
// reader's block either holds all of one (replicas) or none of it (other shards), and
// neither case needs the element runs. Only a partial overlap is resolved run by run.
bool holds(const ShardBlock& outer, const ShardBlock& inner) {
  for (std::size_t k = 0; k < inner.offset.size(); ++k)
    if (inner.offset[k] < outer.offset[k] || inner.offset[k] + inner.extent[k] > outer.offset[k] + outer.extent[k])
      return false;
  return true;
}

bool meet(const ShardBlock& a, const ShardBlock& b, ShardBlock& out) {
  out.offset.resize(a.offset.size());
  out.extent.resize(a.offset.size());
  out.local_offset = 0;
  for (std::size_t k = 0; k < a.offset.size(); ++k) {
    const std::int64_t lo = std::max(a.offset[k], b.offset[k]);
    const std::int64_t hi = std::min(a.offset[k] + a.extent[k], b.offset[k] + b.extent[k]);
    if (hi <= lo) return false;
    out.offset[k] = lo;
    out.extent[k] = hi - lo;
  }
  return true;
}

std::vector<Run> runs_of(const std::vector<std::int64_t>& shape, const ShardBlock& b) {
  return shard_runs(ShardDescriptor{shape, {b}});
}

// `spans` sorted and merged.
std::vector<Span> merged(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::vector<Span> out;
  for (const auto& s : spans) {
    if (!out.empty() && s.begin <= out.back().end)
      out.back().end = std::max(out.back().end, s.end);
    else
      out.push_back(s);
  }
  return out;
}

// The global ranges of `boxes`, sorted and merged.
std::vector<Span> union_of(const std::vector<std::int64_t>& shape, const std::vector<ShardBlock>& boxes) {
  std::vector<Span> all;
  for (const auto& b : boxes)
    for (const auto& r : runs_of(shape, b)) all.push_back({r.global, r.global + r.length});
  return merged(std::move(all));
}

// Where reader j (rank rj) comes before reader me (rank rm) in the owner order: the
// flat ranges of the even parts p at which j's rank is nearer, counting cyclically
// from p; for two requests of one rank, everywhere if j was asked first.
std::vector<Span> ranges_ahead(std::int64_t n, int ranks, int rj, std::size_t j, int rm, std::size_t me) {
  if (rj == rm) return j < me ? std::vector<Span>{{0, n}} : std::vector<Span>{};
  // (rj - p) mod R < (rm - p) mod R exactly for p in the cyclic interval (rm, rj].
  auto begin_of = [&](int p) { return even_part(n, ranks, p).begin; };
  auto end_of = [&](int p) { return even_part(n, ranks, p).end; };
  if (rm < rj) return {{begin_of(rm + 1), end_of(rj)}};
  std::vector<Span> out{{0, end_of(rj)}};
  if (rm + 1 < ranks) out.push_back({begin_of(rm + 1), n});
  return out;
}

// The parts of `runs` (sorted) outside `taken` (sorted, disjoint), local positions kept.
void append_outside(const std::vector<Run>& runs, const std::vector<Span>& taken, std::vector<Run>& out) {
  std::size_t t = 0;
  for (const auto& r : runs) {
    std::int64_t pos = r.global;
    const std::int64_t end = r.global + r.length;
    while (t < taken.size() && taken[t].end <= pos) ++t;
    for (std::size_t k = t; k < taken.size() && taken[k].begin < end && pos < end; ++k) {
      if (taken[k].begin > pos) out.push_back({pos, r.local + (pos - r.global), taken[k].begin - pos});
      pos = std::max(pos, taken[k].end);
    }
    if (pos < end) out.push_back({pos, r.local + (pos - r.global), end - pos});
  }
}

}  // namespace

std::vector<Run> owned_runs(const std::vector<std::int64_t>& shape, const std::vector<Reader>& readers,
                            std::size_t me, const ShardDescriptor& mine, int ranks) {
  const std::int64_t n = element_count(shape);
  const int my_rank = readers[me].rank;
  std::vector<Run> out;
  for (const auto& b : mine.blocks) {
    if (b.size() == 0) continue;
    std::vector<Span> taken;  // elements of b an earlier reader owns
    for (std::size_t j = 0; j < readers.size(); ++j) {
      if (j == me) continue;
      const auto ahead = ranges_ahead(n, ranks, readers[j].rank, j, my_rank, me);
      if (ahead.empty()) continue;
      for (const auto& e : readers[j].blocks) {
        ShardBlock m;
        if (e.size() == 0 || !meet(e, b, m)) continue;
        if (holds(e, b)) {
          taken.insert(taken.end(), ahead.begin(), ahead.end());
          continue;
        }
        for (const auto& r : runs_of(shape, m))
          for (const auto& a : ahead) {
            const std::int64_t lo = std::max(a.begin, r.global), hi = std::min(a.end, r.global + r.length);
            if (lo < hi) taken.push_back({lo, hi});
          }
      }
    }
    append_outside(runs_of(shape, b), merged(std::move(taken)), out);
  }
  return out;
}

std::vector<Span> unread_spans(const std::vector<std::int64_t>& shape, const std::vector<Reader>& readers,
                               Span part) {
  std::vector<ShardBlock> all;
  for (const auto& r : readers)
    for (const auto& b : r.blocks)
      if (b.size() > 0) all.push_back(b);
  std::vector<Span> gaps;
  std::int64_t pos = part.begin;
  for (const auto& s : union_of(shape, all)) {
    if (s.end <= pos) continue;
    if (s.begin >= part.end) break;
    if (s.begin > pos) gaps.push_back({pos, s.begin});
    pos = std::max(pos, s.end);
  }
  if (pos < part.end) gaps.push_back({pos, part.end});
  return gaps;
}

void add_owned_sums(const std::vector<Run>& runs, const float* data, OwnedSums& s) {
  for (const auto& r : runs) {
    for (std::int64_t k = 0; k < r.length; ++k) {
      const float x = data[r.local + k];
      s.checksum += element_hash(rng::mix64(static_cast<std::uint64_t>(r.global + k)), x);
      s.nonfinite += std::isfinite(x) ? 0 : 1;
    }
    s.count += static_cast<std::uint64_t>(r.length);
  }
}

}  // namespace mini5d::checkpoint
