// SPDX-License-Identifier: BSD-3-Clause
// Fault injection for the tests of the non-finite step guard: with
// MINI5D_FAULT_NAN=rank=R,step=S, world rank R puts one NaN into its reduced gradients
// at step S, after the reductions and before the gradient norm, as silent data
// corruption or a kernel bug on one device would. Only that rank sees it (with ZeRO 0-1
// on a data-parallel rank other than the first, not even its norm share does), so the
// step is skipped on every rank only if the ranks agree the non-finite flag.
#pragma once

namespace mini5d::train {

// True on the rank and step the variable names; false when it is unset or malformed.
bool fault_nan_now(int world_rank, long step);

}  // namespace mini5d::train
