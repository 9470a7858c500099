// SPDX-License-Identifier: BSD-3-Clause
// Layout-independent initialisation (gpt.hpp, init_param_range): each element of a
// logical tensor is drawn from the counter RNG at its logical index, so any shard, of
// any axis, gets exactly the slice of the single-rank tensor. Vocabulary padding rows
// are zero, so the model's rows draw the same numbers whatever the padding.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

#include "mini5d/core/counter_rng.hpp"
#include "mini5d/kernels/convert.hpp"
#include "mini5d/kernels/fill.hpp"
#include "mini5d/model/gpt.hpp"

namespace mini5d::model {

template <class S>
void init_param_range(const ParamLayout& layout, std::uint64_t seed, VecU<S> dst,
                      std::int64_t begin, std::int64_t end) {
  if constexpr (is_bf16_v<S>) {
    // A bf16 model's weights are the working copy of fp32 master weights: the fp32
    // values, each rounded once (so a bf16 run starts where its master copy does).
    Vec<float> master(Kokkos::ViewAllocateWithoutInitializing("mini5d::model::init_master"), std::size_t(end - begin));
    init_param_range<float>(layout, seed, master, begin, end);
    kernels::convert("mini5d::model::init_working_copy", dst, master);
  } else {
    for (const auto& t : layout.tensors()) {
      // The part of tensor t inside [begin, end), in flat and in dst coordinates.
      const std::int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.size());
      if (lo >= hi) continue;
      auto out = Kokkos::subview(dst, std::make_pair(lo - begin, hi - begin));
      if (t.init == Init::Zeros) {
        kernels::fill("mini5d::model::init_zeros", out, S(0));
        continue;
      }
      if (t.init == Init::Ones) {
        kernels::fill("mini5d::model::init_ones", out, S(1));
        continue;
      }
      // Each block of the logical tensor this range covers, drawn at its logical indices.
      const std::uint64_t stream = rng::name_hash(t.name.c_str());
      const double sd = t.stddev;
      // Vocabulary padding rows (2-D tensors only) start, and stay, at zero.
      if (t.stored_rows >= 0 && t.global_shape.size() != 2) throw std::logic_error("mini5d: padding of a non-matrix");
      const std::int64_t stored = t.stored_rows >= 0 ? t.stored_rows : std::numeric_limits<std::int64_t>::max();
      std::vector<ShardBlock> blocks;
      append_part_blocks(t, lo - t.offset, hi - t.offset, lo - begin, blocks);
      for (const auto& b : blocks) {
        if (b.offset.size() > 3) throw std::logic_error("mini5d: init of a tensor of rank > 3");
        // As a 3-D block (leading dimensions of extent 1 for rank 1 and 2): offsets o*,
        // extents x1, x2 of a tensor of global shape [*, g1, g2].
        const std::size_t pad = 3 - b.offset.size();
        std::int64_t o[3] = {0, 0, 0}, x[3] = {1, 1, 1}, g[3] = {1, 1, 1};
        for (std::size_t d = 0; d < b.offset.size(); ++d) {
          o[pad + d] = b.offset[d];
          x[pad + d] = b.extent[d];
          g[pad + d] = t.global_shape[d];
        }
        const std::int64_t o0 = o[0], o1 = o[1], o2 = o[2], x1 = x[1], x2 = x[2], g1 = g[1], g2 = g[2];
        auto blk = Kokkos::subview(dst, std::make_pair(b.local_offset, b.local_offset + b.size()));
        Kokkos::parallel_for(
            "mini5d::model::init_normal", Range(0, b.size()), KOKKOS_LAMBDA(const std::int64_t i) {
              const std::int64_t i2 = i % x2, i1 = (i / x2) % x1, i0 = i / (x1 * x2);
              const std::int64_t logical = ((o0 + i0) * g1 + o1 + i1) * g2 + o2 + i2;
              // For a matrix (padded to 3-D) the row is o1 + i1.
              blk(i) = o1 + i1 < stored ? S(sd * rng::normal(seed, stream, std::uint64_t(logical))) : S(0);
            });
      }
    }
  }
  fence("mini5d::model::initialised");  // the weights are read next, by MPI or a checksum
}

template void init_param_range<float>(const ParamLayout&, std::uint64_t, VecU<float>, std::int64_t, std::int64_t);
template void init_param_range<double>(const ParamLayout&, std::uint64_t, VecU<double>, std::int64_t, std::int64_t);
template void init_param_range<bf16>(const ParamLayout&, std::uint64_t, VecU<bf16>, std::int64_t, std::int64_t);

}  // namespace mini5d::model
