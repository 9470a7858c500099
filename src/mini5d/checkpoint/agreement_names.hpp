// SPDX-License-Identifier: BSD-3-Clause
// The agreement calls of comm/agreement.hpp under short names in mini5d::checkpoint,
// shared by the save, the load and a load's checksums. Only .cpp files include it, so
// the short names never reach the public headers.
#pragma once
#include "mini5d/comm/agreement.hpp"

namespace mini5d::checkpoint {

using comm::ProblemKind;
using comm::allgather_strings;
using comm::any_rank;
using comm::bcast_string;
using comm::raise_if_any;
using comm::slowest_seconds;

}  // namespace mini5d::checkpoint
