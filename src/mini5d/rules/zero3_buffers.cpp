// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/rules/zero3_buffers.hpp"

#include <utility>

namespace mini5d::zero3 {

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

}  // namespace mini5d::zero3
