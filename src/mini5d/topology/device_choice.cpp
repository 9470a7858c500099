// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/topology/device_choice.hpp"

#include <Kokkos_Macros.hpp>  // which GPU runtime this build starts: KOKKOS_ENABLE_HIP / _CUDA
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

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// CUDA names a GPU "GPU-<uuid>" (or a MIG slice "MIG-..."), ROCm "GPU-<hex>".
bool is_uuid(const std::string& e) {
  const std::string l = lower(e.substr(0, 4));
  return e.size() > 4 && (l == "gpu-" || l == "mig-");
}

// A UUID without its "GPU-" and dashes, lower case: hwloc's AMDUUID/NVIDIAUUID and the
// runtimes' spellings then compare equal. The runtimes accept a unique prefix; so do we.
std::string uuid_key(const std::string& s) {
  std::string l = lower(s);
  if (l.rfind("gpu-", 0) == 0) l.erase(0, 4);
  l.erase(std::remove(l.begin(), l.end(), '-'), l.end());
  return l;
}

// The GPUs a runtime shows, in its device-id order, each as its number in the node's
// PCI bus order (-1: a UUID hwloc did not report). `known` false: no list is set and
// hwloc sees no GPU, so only the runtime knows the count.
struct Shown {
  bool known = false;
  bool filtered = false;  // some visibility list is set
  std::vector<int> pci;
  std::string lists;      // the lists applied, for notes: "ROCR_VISIBLE_DEVICES=4, HIP_VISIBLE_DEVICES=0"
  std::string error;      // one line; the runtime would misread a list
};

std::string quoted(const std::string& var, const std::string& value) { return var + "='" + value + "'"; }

// One list applied to what the level below shows. `below`: that level, for the error
// line ("this node's 4 GPUs (as hwloc sees them)").
void apply(Shown& s, const std::string& var, const std::string& value, const std::string& below,
           const NodeTopology& node, const std::vector<int>& pci_number) {
  Shown out;
  out.known = out.filtered = true;
  out.lists = (s.lists.empty() ? "" : s.lists + ", ") + var + "=" + (value.empty() ? "''" : value);
  for (const auto& e : entries(value)) {
    if (all_digits(e)) {
      const std::size_t idx = e.size() > 6 ? std::size_t(-1) : std::stoul(e);
      if (s.known && idx >= s.pci.size()) {
        s.error = quoted(var, value) + ": index " + e + " is past " + below;
        return;
      }
      out.pci.push_back(s.known ? s.pci[idx] : static_cast<int>(idx));
    } else if (is_uuid(e)) {
      int p = -1;
      for (std::size_t k = 0; k < node.gpus.size(); ++k) {
        const std::string u = uuid_key(node.gpus[k].uuid);
        if (!u.empty() && u.rfind(uuid_key(e), 0) == 0) p = pci_number[k];
      }
      if (p >= 0 && s.filtered && std::find(s.pci.begin(), s.pci.end(), p) == s.pci.end()) {
        s.error = quoted(var, value) + ": " + e + " is a GPU that " + s.lists + " hides";
        return;
      }
      out.pci.push_back(p);
    } else {
      // The runtimes stop reading at such an entry and show only the GPUs before it
      // (CUDA's -1 idiom hides them all): almost always a mistake in a job script.
      s.error = quoted(var, value) + ": '" + e + "' is neither a GPU index (0, 1, ...) nor a UUID (GPU-...)";
      return;
    }
  }
  s = out;
}

// What the runtime will show, from the node's GPUs and the environment's lists.
Shown resolve(const NodeTopology& node, const GpuEnv& env, const std::vector<int>& pci_number) {
  Shown s;
  const std::size_t g = node.gpus.size();
  if (g > 0) {
    s.known = true;
    for (std::size_t i = 0; i < g; ++i) s.pci.push_back(static_cast<int>(i));
  }
  const std::string node_gpus = "this node's " + std::to_string(g) + " GPU" + (g == 1 ? "" : "s") +
                                " (0-" + std::to_string(g > 0 ? g - 1 : 0) + ", as hwloc sees them)";
  if (env.rocm && env.rocr_set) apply(s, "ROCR_VISIBLE_DEVICES", env.rocr, node_gpus, node, pci_number);
  if (!s.error.empty() || !env.visible_set) return s;
  // HIP numbers the GPUs ROCr left from 0 again: Slurm's ROCR_VISIBLE_DEVICES=4 with a
  // leftover HIP/CUDA_VISIBLE_DEVICES=4 leaves HIP no GPU at all.
  const std::string below =
      env.rocm && env.rocr_set
          ? "the " + std::to_string(s.pci.size()) + " GPU" + (s.pci.size() == 1 ? "" : "s") + " that " +
                quoted("ROCR_VISIBLE_DEVICES", env.rocr) + " leaves (HIP numbers them from 0 after ROCr's filter)"
          : node_gpus;
  apply(s, env.visible_var, env.visible, below, node, pci_number);
  return s;
}

const char* kFix = "; srun --gpus-per-task=1 --gpu-bind=single:1 gives each rank its own";

DeviceChoice launcher_choice(const NodeTopology& node, int local_rank, const Shown& s) {
  DeviceChoice c;
  if (!s.filtered) {
    const int g = static_cast<int>(node.gpus.size());
    if (g == 0) return c;  // a CPU node, or one whose GPUs hwloc cannot see: Kokkos decides
    c.device_id = local_rank % g;
    c.note = "no CUDA/ROCR/HIP_VISIBLE_DEVICES: all " + std::to_string(g) +
             " GPUs visible though the launcher binds: device local rank mod " + std::to_string(g) + " = " +
             std::to_string(c.device_id) + kFix;
    return c;
  }
  const int n = static_cast<int>(s.pci.size());
  if (n == 0) {
    c.note = "no GPU visible to this rank (" + s.lists + ")";
  } else if (n == 1) {
    c.device_id = 0;
  } else {
    c.device_id = local_rank % n;
    c.note = std::to_string(n) + " GPUs visible (" + s.lists + ") though the launcher binds: device local rank mod " +
             std::to_string(n) + " = " + std::to_string(c.device_id) + kFix;
  }
  return c;
}

DeviceChoice own_choice(const NodeTopology& node, int gpu, const GpuEnv& env, const Shown& s,
                        const std::vector<int>& pci_number) {
  DeviceChoice c;
  if (gpu < 0 || gpu >= static_cast<int>(node.gpus.size())) {
    if (s.filtered && !s.pci.empty()) c.note = "hwloc sees no GPU on this node: device left to Kokkos";
    return c;
  }
  // This GPU's position in PCI bus order: the runtime's number for it when all are visible.
  const int pos = pci_number[static_cast<std::size_t>(gpu)];
  const std::string& mine = node.gpus[static_cast<std::size_t>(gpu)].pci;
  if (!env.rocm) {
    if (env.order_set && env.order != "PCI_BUS_ID") {
      c.note = "CUDA_DEVICE_ORDER=" + env.order + " numbers GPUs out of PCI bus order: device left to Kokkos "
               "(set CUDA_DEVICE_ORDER=PCI_BUS_ID, or unset it)";
      return c;
    }
    c.set_pci_order = !env.order_set;
  }
  if (!s.filtered) {
    c.device_id = pos;
    return c;
  }
  if (s.pci.empty()) {
    c.note = "no GPU visible to this rank (" + s.lists + ")";
    return c;
  }
  const auto it = std::find(s.pci.begin(), s.pci.end(), pos);
  if (it != s.pci.end()) {
    c.device_id = static_cast<int>(it - s.pci.begin());
  } else if (std::find(s.pci.begin(), s.pci.end(), -1) != s.pci.end()) {
    c.note = s.lists + " names GPUs by a UUID hwloc does not report, not by PCI order: device left to Kokkos";
  } else {
    c.note = "the GPU nearest this rank's cores (pci " + mine + ", number " + std::to_string(pos) +
             " in PCI order) is not in " + s.lists + ": device left to Kokkos";
  }
  return c;
}

}  // namespace

GpuEnv read_gpu_env() {
  GpuEnv env;
  const char* rocr = std::getenv("ROCR_VISIBLE_DEVICES");
  const char* hip = std::getenv("HIP_VISIBLE_DEVICES");
  const char* cuda = std::getenv("CUDA_VISIBLE_DEVICES");
  // The runtime this build starts decides which lists count; a host-only build (the
  // device id is then unused) follows whichever vendor's variables the launcher set.
#if defined(KOKKOS_ENABLE_HIP)
  env.rocm = true;
#elif defined(KOKKOS_ENABLE_CUDA)
  env.rocm = false;
#else
  env.rocm = rocr != nullptr || hip != nullptr;
#endif
  if (env.rocm && rocr) {
    env.rocr_set = true;
    env.rocr = rocr;
  }
  // HIP reads HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES (ROCm's GPU isolation docs).
  const char* app = env.rocm && hip ? hip : cuda;
  if (app) {
    env.visible_var = app == hip ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
    env.visible_set = true;
    env.visible = app;
  }
  if (const char* o = std::getenv("CUDA_DEVICE_ORDER")) {
    env.order_set = true;
    env.order = o;
  }
  return env;
}

DeviceChoice choose_device(const NodeTopology& node, int gpu, int local_rank, bool launcher_binds,
                           const GpuEnv& env) {
  // Each GPU's number in PCI bus order: the runtimes' physical numbering (CUDA with
  // CUDA_DEVICE_ORDER=PCI_BUS_ID; ROCm's own order, taken as PCI order).
  std::vector<std::string> sorted;
  for (const auto& g : node.gpus) sorted.push_back(g.pci);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> pci_number;
  for (const auto& g : node.gpus)
    pci_number.push_back(static_cast<int>(std::lower_bound(sorted.begin(), sorted.end(), g.pci) - sorted.begin()));
  const Shown s = resolve(node, env, pci_number);
  if (!s.error.empty()) {
    DeviceChoice c;
    c.error = s.error;
    return c;
  }
  return launcher_binds ? launcher_choice(node, local_rank, s) : own_choice(node, gpu, env, s, pci_number);
}

}  // namespace mini5d::topology
