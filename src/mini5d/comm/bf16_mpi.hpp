// SPDX-License-Identifier: BSD-3-Clause
// bf16 in MPI messages. MPI has no bf16 datatype (MPI 4.1 names none; MPICH and Open MPI
// add none), so a bf16 value travels as 2 opaque bytes and its sums use a reduction of
// our own: widen both operands, add in fp32, round once to nearest even, as NCCL's bf16
// all-reduce does per addition. Both are created on first use (after MPI_Init) and live
// until MPI_Finalize. The reduction runs on host memory: device buffers reach it staged
// (comm/staging.hpp), never through a CUDA-aware MPI's device path.
#pragma once
#include <mpi.h>

namespace mini5d::comm {

MPI_Datatype bf16_datatype();
MPI_Op bf16_sum();

}  // namespace mini5d::comm
