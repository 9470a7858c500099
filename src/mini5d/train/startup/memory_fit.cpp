// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/startup/memory_fit.hpp"

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "mini5d/core/regular_file.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#elif defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime_api.h>
#endif

namespace mini5d::train {

namespace {

// The host's MemAvailable (the kernel's estimate of what can be allocated without
// swapping), in bytes; 0 if unknown.
double host_available() {
  std::istringstream in(read_regular_file("/proc/meminfo", std::size_t{1} << 20).text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream ss(line.substr(13));
      double kib = 0;
      ss >> kib;
      return kib * 1024.0;
    }
  return 0;
}

// Free memory of this rank's device, in bytes; false on a host backend.
bool device_free(double& bytes) {
#if defined(KOKKOS_ENABLE_CUDA)
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return false;
  bytes = double(free);
  return true;
#elif defined(KOKKOS_ENABLE_HIP)
  std::size_t free = 0, total = 0;
  if (hipMemGetInfo(&free, &total) != hipSuccess) return false;
  bytes = double(free);
  return true;
#else
  (void)bytes;
  return false;
#endif
}

// In GiB from 1 GiB up, in MiB below.
std::string gib(double b) {
  char s[32];
  const double mib = b / (1024.0 * 1024.0);
  if (mib >= 1024.0) std::snprintf(s, sizeof s, "%.2f GiB", mib / 1024.0);
  else std::snprintf(s, sizeof s, "%.1f MiB", mib);
  return s;
}

}  // namespace

MemoryOffer memory_offer(MPI_Comm world, const MemoryNeed& mine) {
  MemoryOffer o;
  const bool device = o.device = device_free(o.bytes);
  double need = device ? mine.device_part() : mine.total();
  if (device) {
    o.source = "device free memory";
    o.need_sum = need;  // one device per rank
  } else {
    // The ranks of a node share its memory: add up what they need.
    MPI_Comm node;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &o.sharers);
    MPI_Allreduce(&need, &o.need_sum, 1, MPI_DOUBLE, MPI_SUM, node);
    MPI_Comm_free(&node);
    o.bytes = host_available();
    o.source = "MemAvailable";
  }
  if (const char* mb = std::getenv("MINI5D_AVAILABLE_MEMORY_MB")) {
    o.bytes = std::atof(mb) * 1024.0 * 1024.0;
    o.source = "MINI5D_AVAILABLE_MEMORY_MB";
  }
  return o;
}

std::string memory_fit_problem(const std::string& origin, const MemoryNeed& mine, const MemoryOffer& offer) {
  if (offer.bytes <= 0 || offer.need_sum <= offer.bytes) return {};  // unknown free memory: no verdict
  std::string who = offer.sharers > 1 ? ", " + std::to_string(offer.sharers) + " ranks on this node need " +
                                            gib(offer.need_sum) + " together"
                                      : "";
  const bool host = !offer.device;
  const std::string data = host && mine.data > 0 ? ", data tables " + gib(mine.data) : "";
  return origin + ": the run needs " + gib(host ? mine.total() : mine.device_part()) + " per rank (training state " +
         gib(mine.state) + ", activations " + gib(mine.activations) + ", workspace " + gib(mine.workspace) + data +
         ")" + who + ", but " +
         gib(offer.bytes) + " is free (" + offer.source +
         "); use more ranks (d with ZeRO, t, p, c), a smaller model or micro_batch, train.recompute" +
         (data.empty() ? "" : ", a smaller Markov table (data.markov_order, data.markov_branching)") + ", or set "
         "train.allow_oversubscribe_memory=true to try anyway";
}

}  // namespace mini5d::train
