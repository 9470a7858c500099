// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/dp/zero3_buffers.hpp"

#include <utility>

namespace mini5d::dp {

GatherBuffers::GatherBuffers(std::vector<int> chunk_of, bool first_is_embedding)
    : chunk_of_(std::move(chunk_of)), embedding_(first_is_embedding) {}

int GatherBuffers::next(int unit, bool forward) const {
  const int n = forward ? unit + 1 : unit - 1;
  if (n < 0 || n >= units() || chunk_of_[std::size_t(n)] != chunk_of_[std::size_t(unit)]) return -1;
  if (!forward && !backward_reads(n)) return -1;
  return n;
}

GatherBuffers::Need GatherBuffers::need(int unit, bool forward) {
  Need r;
  r.buffer = held_[0] == unit ? 0 : held_[1] == unit ? 1 : -1;
  if (r.buffer < 0) {  // not there: into the buffer the unit before did not use
    r.buffer = 1 - current_;
    r.gather = true;
    held_[r.buffer] = unit;
  }
  current_ = r.buffer;
  const int following = next(unit, forward);
  if (following >= 0 && held_[1 - r.buffer] != following) {
    r.prefetch = following;
    held_[1 - r.buffer] = following;
  }
  return r;
}

std::vector<long long> gathers_per_step(const pp::Spec& s, int stage, const std::vector<int>& chunk_of,
                                        bool first_is_embedding) {
  GatherBuffers b(chunk_of, first_is_embedding);
  std::vector<long long> count(chunk_of.size(), 0);
  auto visit = [&](int unit, bool forward) {
    const GatherBuffers::Need n = b.need(unit, forward);
    if (n.gather) ++count[std::size_t(unit)];
    if (n.prefetch >= 0) ++count[std::size_t(n.prefetch)];
  };
  const int units = int(chunk_of.size());
  b.drop();
  for (const pp::Action& a : pp::schedule(s, stage)) {
    if (!a.compute()) continue;
    const bool forward = a.op == pp::Op::forward;
    if (s.p == 1 ? forward : !forward) b.drop();
    if (forward) {
      for (int u = 0; u < units; ++u)
        if (chunk_of[std::size_t(u)] == a.chunk) visit(u, true);
    } else {
      for (int u = units - 1; u >= 0; --u)
        if (chunk_of[std::size_t(u)] == a.chunk && b.backward_reads(u)) visit(u, false);
    }
  }
  return count;
}

}  // namespace mini5d::dp
