// SPDX-License-Identifier: BSD-3-Clause
// Which GPU a rank gives Kokkos (--kokkos-device-id). One policy per launcher mode
// (docs/placement.md, "GPUs"):
//  * the launcher binds (MINI5D_NO_BIND=1; srun --gpus-per-task=1 --gpu-bind=single:1):
//    the rank sees exactly one GPU and uses device 0. A rank that sees several was given
//    them by a launcher that did not bind: it takes local rank mod visible, and says so.
//  * mini5d binds: every GPU of the node is visible and the runtime numbers them in PCI
//    bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID, which mini5d sets when it is unset); the
//    rank takes the GPU `distribute` put nearest its cores, i.e. that GPU's position in
//    PCI order among the visible ones (ROCm has no such switch: its order is taken as
//    PCI order). hwloc's own names (cudaN, nvmlN, rsmiN) are not used:
//    nvmlN is a physical index and cudaN follows the runtime's order, so neither is
//    the device id in every setting.
// The visibility lists are read as the runtime reads them. CUDA: CUDA_VISIBLE_DEVICES,
// indices into the node's GPUs or UUIDs. ROCm filters twice: ROCR_VISIBLE_DEVICES in the
// ROCr runtime (indices into the node's GPUs, or UUIDs), then HIP_VISIBLE_DEVICES (or
// CUDA_VISIBLE_DEVICES, which HIP also reads) picks among what ROCr left, numbered from
// 0 again. A value the runtime would stop at (an entry that is neither an index nor a
// UUID) or that names a GPU the level below does not have is an error: one line, so a
// job refuses at start-up instead of training on the wrong GPU or none.
// Pure: the environment comes in as GpuEnv, so tests use fake nodes and variables.
#pragma once
#include <string>

#include "mini5d/topology/node.hpp"

namespace mini5d::topology {

struct GpuEnv {
  // ROCm's two-level filtering (ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES) instead of
  // CUDA's one list; and no CUDA_DEVICE_ORDER.
  bool rocm = false;
  // The list the application's runtime reads last: CUDA_VISIBLE_DEVICES (CUDA),
  // HIP_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES (ROCm).
  std::string visible_var;
  bool visible_set = false;    // that variable is set (an empty value hides every GPU)
  std::string visible;         // its value
  bool rocr_set = false;       // ROCm: ROCR_VISIBLE_DEVICES is set
  std::string rocr;            // its value
  bool order_set = false;      // CUDA_DEVICE_ORDER is set
  std::string order;           // its value (FASTEST_FIRST is CUDA's default)
};

// The visibility variables of this build's GPU runtime (a HIP build reads ROCm's, a CUDA
// build CUDA's; a host-only build ROCm's when ROCR_ or HIP_VISIBLE_DEVICES is set), and
// CUDA_DEVICE_ORDER.
GpuEnv read_gpu_env();

struct DeviceChoice {
  int device_id = -1;          // -1: leave it to Kokkos (or no GPU)
  bool set_pci_order = false;  // set CUDA_DEVICE_ORDER=PCI_BUS_ID before the runtime starts
  std::string note;            // why, when it is not the plain case; empty otherwise
  std::string error;           // one line: a visibility value the runtime would misread; empty if none
};

// `gpu`: this rank's GPU as an index into node.gpus (Binding::gpu, -1: none);
// `launcher_binds`: MINI5D_NO_BIND=1.
DeviceChoice choose_device(const NodeTopology& node, int gpu, int local_rank, bool launcher_binds,
                           const GpuEnv& env);

}  // namespace mini5d::topology
