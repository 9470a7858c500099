// SPDX-License-Identifier: BSD-3-Clause
// hwloc discovery into plain data (node.hpp). The only other hwloc user in topology/
// is binding.cpp, which binds the process; everything else works on NodeTopology.
#include "mini5d/topology/node.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>

#include "mini5d/core/error.hpp"

namespace mini5d::topology {
namespace {

// Owns an hwloc topology for the length of one discovery.
struct Topo {
  hwloc_topology_t t = nullptr;
  Topo() { hwloc_topology_init(&t); }
  ~Topo() { hwloc_topology_destroy(t); }
  Topo(const Topo&) = delete;
  Topo& operator=(const Topo&) = delete;
};

std::string pci_id(hwloc_obj_t o) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", o->attr->pcidev.domain, o->attr->pcidev.bus,
                o->attr->pcidev.dev, o->attr->pcidev.func);
  return buf;
}

const char* osdev_kind(hwloc_obj_osdev_type_t type) {
  switch (type) {
    case HWLOC_OBJ_OSDEV_GPU: return "gpu";
    case HWLOC_OBJ_OSDEV_COPROC: return "coproc";
    case HWLOC_OBJ_OSDEV_NETWORK: return "network";
    case HWLOC_OBJ_OSDEV_OPENFABRICS: return "openfabrics";
    case HWLOC_OBJ_OSDEV_BLOCK: return "block";
    case HWLOC_OBJ_OSDEV_DMA: return "dma";
    default: return "other";
  }
}

// Cores whose PUs all lie in `set` (the locality of an I/O device).
std::vector<int> cores_in(hwloc_topology_t t, hwloc_const_cpuset_t set) {
  std::vector<int> out;
  if (!set) return out;
  const int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t c = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    if (hwloc_bitmap_isincluded(c->cpuset, set)) out.push_back(i);
  }
  return out;
}

// A PCI device counts as a compute GPU when its class says so (3D controller 0x0302,
// "other display" 0x0380 as AMD Instinct reports, processing accelerator 0x12xx), or when
// a compute runtime (CUDA, OpenCL, Level Zero) gave it a co-processor OS device. A
// plain VGA device without one is the baseboard's console, not a GPU to run on.
bool is_compute_gpu(hwloc_obj_t pci, bool has_coproc) {
  const unsigned cls = pci->attr->pcidev.class_id;
  return cls == 0x0302 || cls == 0x0380 || (cls >> 8) == 0x12 || has_coproc;
}

void read_devices(hwloc_topology_t t, NodeTopology& node) {
  struct GpuAcc {
    std::vector<std::string> names;
    std::string uuid;
    bool coproc = false;
    hwloc_obj_t pci = nullptr;
  };
  std::map<std::string, GpuAcc> by_pci;  // ordered by bus id, which is stable across runs
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o; o = hwloc_get_next_osdev(t, o)) {
    Device d;
    d.name = o->name ? o->name : "?";
    d.kind = osdev_kind(o->attr->osdev.type);
    if (o->subtype) d.subtype = o->subtype;
    hwloc_obj_t parent = o->parent;
    while (parent && parent->type != HWLOC_OBJ_PCI_DEVICE && hwloc_obj_type_is_io(parent->type))
      parent = parent->parent;
    if (parent && parent->type == HWLOC_OBJ_PCI_DEVICE) d.pci = pci_id(parent);
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
    d.near_cores = cores_in(t, anc ? anc->cpuset : nullptr);
    if (!d.pci.empty() && (d.kind == "gpu" || d.kind == "coproc")) {
      auto& g = by_pci[d.pci];
      g.names.push_back(d.name);
      g.coproc = g.coproc || d.kind == "coproc";
      g.pci = parent;
      for (const char* key : {"NVIDIAUUID", "AMDUUID"})
        if (const char* u = hwloc_obj_get_info_by_name(o, key)) g.uuid = u;
    }
    node.devices.push_back(std::move(d));
  }
  // Data-centre GPUs without a runtime plugin still show up as PCI devices.
  for (hwloc_obj_t p = hwloc_get_next_pcidev(t, nullptr); p; p = hwloc_get_next_pcidev(t, p)) {
    const std::string id = pci_id(p);
    if (!by_pci.count(id) && is_compute_gpu(p, false)) by_pci[id].pci = p;
  }
  for (auto& [id, g] : by_pci) {
    if (!is_compute_gpu(g.pci, g.coproc)) continue;
    Gpu gpu;
    gpu.pci = id;
    gpu.uuid = g.uuid;
    for (const auto& n : g.names) gpu.name += (gpu.name.empty() ? "" : "/") + n;
    if (gpu.name.empty()) gpu.name = "pci " + id;
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, g.pci);
    gpu.near_cores = cores_in(t, anc ? anc->cpuset : nullptr);
    if (static_cast<int>(gpu.near_cores.size()) == node.cores) gpu.near_cores.clear();  // no locality
    node.gpus.push_back(std::move(gpu));
  }
}

int logical_of(hwloc_obj_t o) { return o ? static_cast<int>(o->logical_index) : -1; }

}  // namespace

NodeTopology discover(const std::string& synthetic) {
  std::string desc = synthetic, origin = "synthetic topology";
  if (desc.empty()) {
    if (const char* env = std::getenv(kSyntheticEnv); env && *env) {
      desc = env;
      origin = kSyntheticEnv;
    }
  }
  Topo topo;
  hwloc_topology_t t = topo.t;
  NodeTopology node;
  if (!desc.empty()) {
    if (hwloc_topology_set_synthetic(t, desc.c_str()) != 0)
      throw InputError(origin + ": invalid hwloc synthetic topology \"" + desc +
                       "\" (e.g. \"pack:2 core:4 pu:1\")");
    node.synthetic = true;
    node.source = "synthetic \"" + desc + "\"";
  } else {
    // GPUs and NICs are what placement cares about; KEEP_IMPORTANT skips bridges and
    // minor PCI functions.
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    node.source = "this machine";
  }
  if (hwloc_topology_load(t) != 0) throw std::runtime_error("hwloc could not load the topology");

  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  node.hostname = node.synthetic ? "synthetic" : host;
  const unsigned v = hwloc_get_api_version();
  node.hwloc_version = std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." +
                       std::to_string(v & 0xff);
  node.packages = std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE));
  node.numa_nodes = std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE));
  node.l3_caches = std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_L3CACHE));
  node.cores = std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE));
  node.pus = std::max(0, hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU));
  node.memory_bytes = hwloc_get_root_obj(t)->total_memory;

  for (int i = 0; i < node.cores; ++i) {
    hwloc_obj_t c = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    Core core;
    core.index = i;
    core.package = logical_of(hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, c));
    core.l3 = logical_of(hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_L3CACHE, c));
    // In hwloc 2 NUMA nodes hang beside the tree, so go through the core's nodeset.
    const int numa_os = c->nodeset ? hwloc_bitmap_first(c->nodeset) : -1;
    if (numa_os >= 0) core.numa = logical_of(hwloc_get_numanode_obj_by_os_index(t, static_cast<unsigned>(numa_os)));
    for (hwloc_obj_t pu = hwloc_get_next_obj_inside_cpuset_by_type(t, c->cpuset, HWLOC_OBJ_PU, nullptr); pu;
         pu = hwloc_get_next_obj_inside_cpuset_by_type(t, c->cpuset, HWLOC_OBJ_PU, pu))
      core.pus.push_back(static_cast<int>(pu->os_index));
    node.core_list.push_back(std::move(core));
  }
  if (!node.synthetic) read_devices(t, node);
  return node;
}

std::string format_list(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(v[i]);
    if (j > i) out += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

std::string summary(const NodeTopology& n) {
  auto count = [](int k, const char* what) {
    return std::to_string(k) + " " + what + (k == 1 ? "" : "s");
  };
  std::ostringstream os;
  os << count(n.packages, "package") << ", " << count(n.numa_nodes, "NUMA node") << ", "
     << count(n.l3_caches, "L3 cache") << ", " << count(n.cores, "core") << ", " << count(n.pus, "PU");
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(n.memory_bytes) / (1ull << 30));
  os << ", " << mem << ", ";
  if (n.gpus.empty())
    os << "no GPU";
  else
    os << count(static_cast<int>(n.gpus.size()), "GPU");
  return os.str();
}

std::string describe(const NodeTopology& n) {
  std::ostringstream os;
  os << "node " << n.hostname << " (" << n.source << ", hwloc " << n.hwloc_version << "): " << summary(n) << "\n";
  for (std::size_t g = 0; g < n.gpus.size(); ++g)
    os << "  gpu " << g << ": " << n.gpus[g].name << " (pci " << n.gpus[g].pci << "), near cores "
       << (n.gpus[g].near_cores.empty() ? std::string("all") : format_list(n.gpus[g].near_cores)) << "\n";
  if (!n.devices.empty()) {
    os << "  os devices:";
    for (const auto& d : n.devices)
      os << " " << d.name << " (" << d.kind << (d.subtype.empty() ? "" : " " + d.subtype) << ")";
    os << "\n";
  }
  if (n.synthetic) os << "  (synthetic: no I/O devices, nothing is bound)\n";
  os << "  core  package  numa  l3  PUs (OS numbers)\n";
  char line[96];
  for (const auto& c : n.core_list) {
    std::snprintf(line, sizeof line, "  %4d  %7d  %4d  %2d  ", c.index, c.package, c.numa, c.l3);
    os << line << format_list(c.pus) << "\n";
  }
  return os.str();
}

}  // namespace mini5d::topology
