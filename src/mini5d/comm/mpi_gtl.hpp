// SPDX-License-Identifier: BSD-3-Clause
// Whether Cray MPICH's GPU transport library (libmpi_gtl_*) is loaded in this process.
// With MPICH_GPU_SUPPORT_ENABLED=1 Cray MPICH needs it at MPI_Init, so `mini5d version`
// reports it and batch scripts turn GPU support on only when it is there.
// Linked through MINI5D_MPI_GTL_LINK (cmake/Mini5dMpiGtl.cmake) or by Cray's wrappers.
#pragma once
#include <string>

namespace mini5d::comm {

// The path of the first loaded shared object whose file name starts with `stem`
// (e.g. "libmpi_gtl_"), or "" when none is loaded. Reads the dynamic loader's list: no
// MPI call, so it answers before MPI_Init too.
std::string loaded_library(const std::string& stem);

// loaded_library("libmpi_gtl_"): the GTL this process has, or "".
std::string loaded_mpi_gtl();

}  // namespace mini5d::comm
