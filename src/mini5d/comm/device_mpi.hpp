// SPDX-License-Identifier: BSD-3-Clause
// Whether MPI is handed device pointers (parallel.gpu_aware_mpi = auto|true|false).
// `auto` asks the MPI library (MPIX_Query_cuda_support, where it has it) and stages
// through host buffers unless it says yes; `true` is refused when the library says no.
// Host builds hand MPI host memory whatever the setting: there is nothing to stage.
#pragma once
#include <string>

#include "mini5d/rules/deck_choices.hpp"

namespace mini5d::comm {

enum class MpiDeviceSupport { yes, no, unknown };
const char* to_string(MpiDeviceSupport s);

// What this MPI library reports about CUDA device pointers (unknown where it has no
// query, or in a build for another device). Call after MPI_Init.
MpiDeviceSupport query_mpi_device_support();

// True when the default memory space is device memory the host cannot address.
bool device_build();

// Pure: the setting, for a build with device memory or not, given the library's
// answer. Throws InputError (one line) for "true" on a library that reports no support.
bool resolve_gpu_aware(Toggle setting, bool device_memory, MpiDeviceSupport support);

// The same for this build and this MPI library.
bool gpu_aware_mpi(Toggle setting);

// One line for the start-up header: how Views reach MPI, and why.
std::string describe_mpi_memory(Toggle setting);

}  // namespace mini5d::comm
