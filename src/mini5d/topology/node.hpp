// SPDX-License-Identifier: BSD-3-Clause
// What one node looks like to hwloc: packages, NUMA nodes, L3 caches, cores, PUs,
// compute GPUs and the other OS devices, flattened into plain data so that binding
// and reporting are pure functions and no hwloc type leaks out of topology/.
// `discover` reads this machine, or an hwloc synthetic description ("pack:2 core:4
// pu:1") given as an argument or in MINI5D_HWLOC_SYNTHETIC, so tests and `mini5d topo`
// can stand in for a cluster node on a laptop.
#pragma once
#include <string>
#include <vector>

namespace mini5d::topology {

// Environment variable naming a synthetic topology for `discover("")`.
inline constexpr const char* kSyntheticEnv = "MINI5D_HWLOC_SYNTHETIC";

struct Core {
  int index = 0;         // hwloc logical index (0 .. cores-1, in topology order)
  int package = -1;      // logical index of its package, -1 when hwloc shows none
  int numa = -1;         // logical index of its (first) NUMA node, -1 when unknown
  int l3 = -1;           // logical index of its L3 cache, -1 when none
  std::vector<int> pus;  // OS indices of its PUs: the CPU numbers taskset and /proc use
};

struct Device {
  std::string name;     // hwloc OS device name: cuda0, nvml0, card1, eth0, nvme0n1 ...
  std::string kind;     // gpu, coproc, network, openfabrics, block, dma, memory, other
  std::string subtype;  // e.g. CUDA, OpenCL; empty when hwloc gives none
  std::string pci;      // PCI bus id of the device it hangs off, empty when none
  std::vector<int> near_cores;  // cores in its locality (empty: unknown)
};

// One physical compute GPU (several OS devices, e.g. cuda0 + nvml0 + card1, can name it).
struct Gpu {
  std::string name;             // its OS device names, joined by '/'
  std::string pci;              // PCI bus id
  std::vector<int> near_cores;  // cores nearest it (empty: unknown, treat as all)
  // hwloc's NVIDIAUUID (NVML) or AMDUUID (ROCm SMI), empty without those backends: how a
  // CUDA_/ROCR_VISIBLE_DEVICES entry "GPU-..." is matched to this GPU.
  std::string uuid;
};

struct NodeTopology {
  std::string source;     // "this machine" or "synthetic \"pack:2 core:4 pu:1\""
  bool synthetic = false;
  std::string hostname;
  std::string hwloc_version;
  int packages = 0, numa_nodes = 0, l3_caches = 0, cores = 0, pus = 0;
  unsigned long long memory_bytes = 0;
  std::vector<Core> core_list;   // index == Core::index
  std::vector<Gpu> gpus;
  std::vector<Device> devices;   // every OS device hwloc reported
};

// Reads the node. `synthetic` non-empty: that hwloc synthetic topology; empty: the one
// in MINI5D_HWLOC_SYNTHETIC if set, else this machine. A bad synthetic string is an
// InputError naming where it came from.
NodeTopology discover(const std::string& synthetic = "");

// One line: "2 packages, 4 NUMA nodes, 12 cores, 12 PUs, 4.0 GiB, no GPU".
std::string summary(const NodeTopology& node);
// The summary, the GPUs and OS devices, and one line per core (for `mini5d topo`).
std::string describe(const NodeTopology& node);
// "0-3,8" for a sorted or unsorted list of integers.
std::string format_list(std::vector<int> values);

}  // namespace mini5d::topology
