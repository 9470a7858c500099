// SPDX-License-Identifier: BSD-3-Clause
// The tile sizes of blockwise attention (model.attention=blockwise, c = 1), written once:
// the kernels cut the queries and keys with them (kernels/blockwise_attention.hpp) and
// the planner sizes the core's two work buffers [B*H, tile, panel] with them
// (plan/cost/memory_model.cpp). Each is min(size, T) when the sequence is shorter.
#pragma once

namespace mini5d::rules {

// Queries per causal tile (full attention's causal blocks are the same size).
constexpr int kAttentionTile = 64;
// Keys per panel: wide enough that each tile's products run near the machine's BLAS
// rate (kernels/blockwise_attention.hpp says why), the work buffers still constant.
constexpr int kAttentionKeyPanel = 512;

}  // namespace mini5d::rules
