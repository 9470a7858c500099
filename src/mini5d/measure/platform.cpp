// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/measure/platform.hpp"

#include <hdf5.h>
#include <hwloc.h>
#include <mpi.h>

#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <cstdio>

#include "mini5d/kernels/views.hpp"

#ifndef MINI5D_VERSION
#define MINI5D_VERSION "0"
#endif

namespace mini5d::measure {

namespace {
std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return b;
}

// The device the default execution space runs on (after Kokkos is initialised).
std::string describe_device() {
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    const int id = Kokkos::Cuda().cuda_device();
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, id) == cudaSuccess)
      return "CUDA device " + std::to_string(id) + " " + prop.name + ", sm_" + std::to_string(prop.major) +
             std::to_string(prop.minor) + ", " + gib(double(prop.totalGlobalMem)) + " memory";
    return "CUDA device " + std::to_string(id);
  }
#endif
  const double host_bytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  return std::string("host (") + ExecSpace::name() + ", " + std::to_string(ExecSpace().concurrency()) +
         " thread(s)), " + gib(host_bytes) + " memory";
}
}  // namespace

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

Platform describe_platform() {
  Platform p;
  p.mini5d_version = MINI5D_VERSION;
  p.git_hash =
#include "mini5d_git_hash.inc"  // generated at build time: cmake/GitHash.cmake
      ;
  p.kokkos = std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) +
             "." + std::to_string(KOKKOS_VERSION % 100);
  p.backend = Kokkos::DefaultExecutionSpace::name();
  p.device = describe_device();
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib);  // up to the terminator, which some MPIs count in len
  (void)len;
  p.mpi = mpi.substr(0, mpi.find('\n'));
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  p.hdf5 = std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel);
#ifdef H5_HAVE_PARALLEL
  p.hdf5 += " (parallel)";
#endif
  const unsigned hv = hwloc_get_api_version();
  p.hwloc = std::to_string(hv >> 16) + "." + std::to_string((hv >> 8) & 0xff) + "." + std::to_string(hv & 0xff);
#if defined(__clang__)
  p.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  p.compiler = "g++ " __VERSION__;
#endif
  MPI_Comm_size(MPI_COMM_WORLD, &p.ranks);
  return p;
}

}  // namespace mini5d::measure
