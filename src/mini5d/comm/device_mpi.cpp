// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/device_mpi.hpp"

#include <mpi.h>
#if defined(MINI5D_HAVE_MPI_EXT_H)
#include <mpi-ext.h>  // Open MPI declares MPIX_Query_cuda_support here
#endif

#include <Kokkos_Core.hpp>

#include "mini5d/comm/staging.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::comm {

const char* to_string(MpiDeviceSupport s) {
  switch (s) {
    case MpiDeviceSupport::yes: return "yes";
    case MpiDeviceSupport::no: return "no";
    case MpiDeviceSupport::unknown: return "unknown";
  }
  return "?";
}

MpiDeviceSupport query_mpi_device_support() {
#if defined(KOKKOS_ENABLE_CUDA) && defined(MINI5D_HAVE_MPIX_QUERY_CUDA_SUPPORT)
  return MPIX_Query_cuda_support() ? MpiDeviceSupport::yes : MpiDeviceSupport::no;
#else
  return MpiDeviceSupport::unknown;
#endif
}

bool device_build() { return !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible; }

bool resolve_gpu_aware(Toggle setting, bool device_memory, MpiDeviceSupport support) {
  if (!device_memory) return false;
  if (setting == Toggle::on && support == MpiDeviceSupport::no)
    throw InputError("parallel.gpu_aware_mpi=true: this MPI library reports no CUDA support "
                     "(MPIX_Query_cuda_support() = 0); use auto or false to stage through host memory");
  if (setting == Toggle::automatic) return support == MpiDeviceSupport::yes;
  return setting == Toggle::on;
}

bool gpu_aware_mpi(Toggle setting) {
  return resolve_gpu_aware(setting, device_build(), query_mpi_device_support());
}

std::string describe_mpi_memory(Toggle setting) {
  if (!device_build()) return "host memory, handed to MPI directly (no device)";
  const auto support = query_mpi_device_support();
  const std::string why = std::string("parallel.gpu_aware_mpi=") + to_string(setting) + ", MPI reports CUDA support: " + to_string(support);
  if (resolve_gpu_aware(setting, true, support)) return "device pointers (GPU-aware MPI; " + why + ")";
  return std::string("staged through ") + StagingSpace::name() + " buffers (" + why + ")";
}

}  // namespace mini5d::comm
