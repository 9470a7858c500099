// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/topology/device_choice.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <vector>

namespace mini5d::topology {

namespace {

// The entries of a visibility list; Slurm writes "NoDevFiles" when it gave no GPU.
std::vector<std::string> entries(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : list + ",") {
    if (ch != ',') {
      if (!std::isspace(static_cast<unsigned char>(ch))) cur += ch;
      continue;
    }
    if (!cur.empty() && cur != "NoDevFiles") out.push_back(cur);
    cur.clear();
  }
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

std::string shown(const GpuEnv& env) { return env.visible_var + "=" + (env.visible.empty() ? "''" : env.visible); }

DeviceChoice launcher_choice(const NodeTopology& node, int local_rank, const GpuEnv& env) {
  DeviceChoice c;
  const std::string fix = "; srun --gpus-per-task=1 --gpu-bind=single:1 gives each rank its own";
  if (env.visible_set) {
    const int n = static_cast<int>(entries(env.visible).size());
    if (n == 0) {
      c.note = "no GPU visible to this rank (" + shown(env) + ")";
    } else if (n == 1) {
      c.device_id = 0;
    } else {
      c.device_id = local_rank % n;
      c.note = std::to_string(n) + " GPUs visible (" + shown(env) + ") though the launcher binds: device local rank mod " +
               std::to_string(n) + " = " + std::to_string(c.device_id) + fix;
    }
    return c;
  }
  const int g = static_cast<int>(node.gpus.size());
  if (g == 0) return c;  // a CPU node, or one whose GPUs hwloc cannot see: Kokkos decides
  c.device_id = local_rank % g;
  c.note = "no CUDA/HIP_VISIBLE_DEVICES: all " + std::to_string(g) +
           " GPUs visible though the launcher binds: device local rank mod " + std::to_string(g) + " = " +
           std::to_string(c.device_id) + fix;
  return c;
}

DeviceChoice own_choice(const NodeTopology& node, int gpu, const GpuEnv& env) {
  DeviceChoice c;
  if (gpu < 0 || gpu >= static_cast<int>(node.gpus.size())) {
    if (env.visible_set && !entries(env.visible).empty()) c.note = "hwloc sees no GPU on this node: device left to Kokkos";
    return c;
  }
  // This GPU's position in PCI bus order: the runtime's number for it when all are visible.
  std::vector<std::string> pci;
  for (const auto& g : node.gpus) pci.push_back(g.pci);
  std::sort(pci.begin(), pci.end());
  const std::string& mine = node.gpus[static_cast<std::size_t>(gpu)].pci;
  const int pos = static_cast<int>(std::lower_bound(pci.begin(), pci.end(), mine) - pci.begin());
  const bool cuda = env.visible_var.empty() || env.visible_var == "CUDA_VISIBLE_DEVICES";
  if (cuda) {
    if (env.order_set && env.order != "PCI_BUS_ID") {
      c.note = "CUDA_DEVICE_ORDER=" + env.order + " numbers GPUs out of PCI bus order: device left to Kokkos "
               "(set CUDA_DEVICE_ORDER=PCI_BUS_ID, or unset it)";
      return c;
    }
    c.set_pci_order = !env.order_set;
  }
  if (!env.visible_set) {
    c.device_id = pos;
    return c;
  }
  const auto list = entries(env.visible);
  if (list.empty()) {
    c.note = "no GPU visible to this rank (" + shown(env) + ")";
    return c;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!all_digits(list[i])) {
      c.note = env.visible_var + " names GPUs by UUID (" + list[i] + "), not by PCI order: device left to Kokkos";
      return c;
    }
    if (std::stoi(list[i]) == pos) {
      c.device_id = static_cast<int>(i);
      return c;
    }
  }
  c.note = "the GPU nearest this rank's cores (pci " + mine + ", number " + std::to_string(pos) +
           " in PCI order) is not in " + shown(env) + ": device left to Kokkos";
  return c;
}

}  // namespace

GpuEnv read_gpu_env() {
  GpuEnv env;
  for (const char* var : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}) {
    if (const char* v = std::getenv(var)) {
      env.visible_var = var;
      env.visible_set = true;
      env.visible = v;
      break;
    }
  }
  if (const char* o = std::getenv("CUDA_DEVICE_ORDER")) {
    env.order_set = true;
    env.order = o;
  }
  return env;
}

DeviceChoice choose_device(const NodeTopology& node, int gpu, int local_rank, bool launcher_binds,
                           const GpuEnv& env) {
  return launcher_binds ? launcher_choice(node, local_rank, env) : own_choice(node, gpu, env);
}

}  // namespace mini5d::topology
