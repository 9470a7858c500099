// SPDX-License-Identifier: BSD-3-Clause
// The memory categories in the order both outputs list them.
#pragma once
#include "mini5d/core/memory_ledger.hpp"

namespace mini5d::report {

inline constexpr mem::Category kCategories[] = {mem::Category::weights,      mem::Category::gradients,
                                                mem::Category::optimizer,    mem::Category::activations,
                                                mem::Category::comm_buffers, mem::Category::workspace,
                                                mem::Category::checkpoint_staging};

}  // namespace mini5d::report
