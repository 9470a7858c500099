// SPDX-License-Identifier: BSD-3-Clause
// The GPU each rank gives Kokkos, on fake nodes and fake environments: the launcher's one
// visible GPU when it binds; the GPU nearest the rank's cores, numbered in PCI bus order,
// when mini5d binds; a note whenever the choice is not the plain case; ROCm's two lists
// (ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES over what it left) and UUIDs; one error
// line for a value the runtime would misread. Built into the test_topology binary.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "mini5d/topology/binding.hpp"
#include "mini5d/topology/device_choice.hpp"
#include "mini5d/topology/node.hpp"

using namespace mini5d::topology;

namespace {

// 4 packages of 4 cores, one GPU per package. hwloc lists the GPUs in topology order,
// which here is not PCI order: package 0's GPU has the highest bus id.
NodeTopology four_gpu_node() {
  NodeTopology node = discover("pack:4 core:4 pu:1");
  const char* pci[] = {"0000:c1:00.0", "0000:03:00.0", "0000:41:00.0", "0000:81:00.0"};
  for (int p = 0; p < 4; ++p) {
    Gpu g;
    g.name = "gpu" + std::to_string(p);
    g.pci = pci[p];
    for (int c = 0; c < 4; ++c) g.near_cores.push_back(4 * p + c);
    node.gpus.push_back(g);
  }
  return node;
}

// ROCm: ROCR_VISIBLE_DEVICES (unset when `rocr` is null), and HIP_VISIBLE_DEVICES when given.
GpuEnv rocm(const char* rocr, const char* hip = nullptr) {
  GpuEnv e;
  e.rocm = true;
  e.rocr_set = rocr != nullptr;
  e.rocr = rocr ? rocr : "";
  e.visible_set = hip != nullptr;
  e.visible_var = "HIP_VISIBLE_DEVICES";
  e.visible = hip ? hip : "";
  return e;
}

GpuEnv visible(const std::string& list, const std::string& order = "") {
  GpuEnv e;
  e.visible_var = "CUDA_VISIBLE_DEVICES";
  e.visible_set = true;
  e.visible = list;
  e.order_set = !order.empty();
  e.order = order;
  return e;
}

}  // namespace

TEST_CASE("device choice: the launcher binds, each rank sees one GPU: device 0", "[topology][gpu]") {
  const NodeTopology node = four_gpu_node();
  for (int local = 0; local < 4; ++local) {
    const DeviceChoice c = choose_device(node, local, local, true, visible(std::to_string(3 - local)));
    CHECK(c.device_id == 0);  // a physical index such as 3 is never passed on
    CHECK(c.note.empty());
    CHECK_FALSE(c.set_pci_order);
  }
}

TEST_CASE("device choice: the launcher binds but shows several GPUs: local rank mod N, said", "[topology][gpu]") {
  const NodeTopology node = four_gpu_node();
  const DeviceChoice c = choose_device(node, 1, 5, true, visible("0,1,2,3"));
  CHECK(c.device_id == 1);
  CHECK_THAT(c.note, Catch::Contains("4 GPUs visible (CUDA_VISIBLE_DEVICES=0,1,2,3)") &&
                         Catch::Contains("--gpu-bind=single:1"));
  // No visibility variable at all: every GPU of the node is visible.
  const DeviceChoice u = choose_device(node, 2, 6, true, GpuEnv{});
  CHECK(u.device_id == 2);
  CHECK_THAT(u.note, Catch::Contains("all 4 GPUs visible"));
  // Slurm's "no GPU given" and an empty list: no device, said.
  for (const char* none : {"", "NoDevFiles"}) {
    const DeviceChoice n = choose_device(node, 0, 0, true, visible(none));
    CHECK(n.device_id == -1);
    CHECK_THAT(n.note, Catch::Contains("no GPU visible"));
  }
  // A CPU node without any variable: nothing to choose, nothing to say.
  const DeviceChoice cpu = choose_device(discover("pack:1 core:2 pu:1"), -1, 0, true, GpuEnv{});
  CHECK(cpu.device_id == -1);
  CHECK(cpu.note.empty());
}

TEST_CASE("device choice: mini5d binds: the GPU nearest the rank's cores, in PCI bus order", "[topology][gpu]") {
  const NodeTopology node = four_gpu_node();
  // PCI order of the fake GPUs: gpu1 (03), gpu2 (41), gpu3 (81), gpu0 (c1).
  const int pci_number[] = {3, 0, 1, 2};
  const NodeBindings b = distribute(node, 8);
  std::set<int> used;
  for (const Binding& r : b.ranks) {
    REQUIRE(r.gpu >= 0);
    const auto& near = node.gpus[static_cast<std::size_t>(r.gpu)].near_cores;
    for (int core : r.cores) CHECK(std::find(near.begin(), near.end(), core) != near.end());
    const DeviceChoice c = choose_device(node, r.gpu, r.local_rank, false, GpuEnv{});
    CHECK(c.device_id == pci_number[r.gpu]);
    CHECK(c.set_pci_order);  // CUDA numbers fastest first unless told
    CHECK(c.note.empty());
    used.insert(c.device_id);
  }
  CHECK(used == std::set<int>{0, 1, 2, 3});
  // PCI order already asked for: kept, not set again.
  const DeviceChoice k = choose_device(node, 0, 0, false, visible("0,1,2,3", "PCI_BUS_ID"));
  CHECK(k.device_id == 3);
  CHECK_FALSE(k.set_pci_order);
}

TEST_CASE("device choice: mini5d binds under a restricted or reordered runtime: the right index or none, said",
          "[topology][gpu]") {
  const NodeTopology node = four_gpu_node();
  // Only PCI numbers 2 and 3 visible: gpu3 (number 2) is device 0, gpu0 (number 3) device 1.
  CHECK(choose_device(node, 3, 0, false, visible("2,3")).device_id == 0);
  CHECK(choose_device(node, 0, 1, false, visible("2,3")).device_id == 1);
  const DeviceChoice hidden = choose_device(node, 1, 0, false, visible("2,3"));
  CHECK(hidden.device_id == -1);
  CHECK_THAT(hidden.note, Catch::Contains("pci 0000:03:00.0") && Catch::Contains("not in CUDA_VISIBLE_DEVICES=2,3"));
  const DeviceChoice fastest = choose_device(node, 0, 0, false, visible("0,1,2,3", "FASTEST_FIRST"));
  CHECK(fastest.device_id == -1);
  CHECK_THAT(fastest.note, Catch::Contains("CUDA_DEVICE_ORDER=FASTEST_FIRST"));
  const DeviceChoice uuid = choose_device(node, 0, 0, false, visible("GPU-8f6c2a1e,GPU-11aa"));
  CHECK(uuid.device_id == -1);
  CHECK_THAT(uuid.note, Catch::Contains("UUID"));
  // HIP has no CUDA_DEVICE_ORDER: nothing to set (ROCm's own order is taken as PCI order).
  GpuEnv hip = visible("0,1,2,3");
  hip.rocm = true;
  hip.visible_var = "HIP_VISIBLE_DEVICES";
  const DeviceChoice h = choose_device(node, 2, 0, false, hip);
  CHECK(h.device_id == 1);
  CHECK_FALSE(h.set_pci_order);
}

TEST_CASE("device choice: ROCm, Slurm's ROCR_VISIBLE_DEVICES gives each rank one GCD: device 0", "[topology][gpu]") {
  const NodeTopology node = four_gpu_node();
  for (int local = 0; local < 4; ++local) {
    const DeviceChoice c = choose_device(node, local, local, true, rocm(std::to_string(3 - local).c_str()));
    CHECK(c.device_id == 0);
    CHECK(c.note.empty());
    CHECK(c.error.empty());
    CHECK_FALSE(c.set_pci_order);  // ROCm has no CUDA_DEVICE_ORDER
  }
  // Two visible (a binding by NUMA domain, which holds two GCDs): local rank mod 2, said.
  const DeviceChoice two = choose_device(node, 1, 3, true, rocm("2,3"));
  CHECK(two.device_id == 1);
  CHECK_THAT(two.note, Catch::Contains("2 GPUs visible (ROCR_VISIBLE_DEVICES=2,3)"));
  // HIP_VISIBLE_DEVICES picks among what ROCr left: one of two is one.
  const DeviceChoice one = choose_device(node, 1, 3, true, rocm("2,3", "1"));
  CHECK(one.device_id == 0);
  CHECK(one.note.empty());
}

TEST_CASE("device choice: ROCm, mini5d binds: ROCR_VISIBLE_DEVICES then HIP_VISIBLE_DEVICES, in their order",
          "[topology][gpu]") {
  const NodeTopology node = four_gpu_node();
  // PCI numbers: gpu0 3, gpu1 0, gpu2 1, gpu3 2. No list: the PCI number itself.
  const DeviceChoice all = choose_device(node, 0, 0, false, rocm(nullptr));
  CHECK(all.device_id == 3);
  CHECK_FALSE(all.set_pci_order);
  // ROCr numbers the GPUs in its list's order: "3,2" makes PCI number 3 (gpu0) device 0.
  CHECK(choose_device(node, 0, 0, false, rocm("3,2")).device_id == 0);
  CHECK(choose_device(node, 3, 1, false, rocm("3,2")).device_id == 1);
  // HIP numbers what ROCr left from 0: HIP_VISIBLE_DEVICES=1 over "3,2" is PCI number 2 (gpu3).
  CHECK(choose_device(node, 3, 0, false, rocm("3,2", "1")).device_id == 0);
  const DeviceChoice hidden = choose_device(node, 0, 0, false, rocm("3,2", "1"));
  CHECK(hidden.device_id == -1);
  CHECK(hidden.error.empty());
  CHECK_THAT(hidden.note, Catch::Contains("not in ROCR_VISIBLE_DEVICES=3,2, HIP_VISIBLE_DEVICES=1"));
  // HIP alone (no ROCr filter) indexes the node's GPUs, as CUDA_VISIBLE_DEVICES does.
  CHECK(choose_device(node, 2, 0, false, rocm(nullptr, "1")).device_id == 0);
  // A CUDA build ignores ROCR_VISIBLE_DEVICES.
  GpuEnv cuda = visible("0,1,2,3");
  cuda.rocr_set = true;
  cuda.rocr = "1";
  CHECK(choose_device(node, 0, 0, false, cuda).device_id == 3);
}

TEST_CASE("device choice: UUIDs in ROCR_ and CUDA_VISIBLE_DEVICES name GPUs by hwloc's UUID", "[topology][gpu]") {
  NodeTopology node = four_gpu_node();
  node.gpus[0].uuid = "8f6c2a1e00aa0001";                      // AMDUUID-like
  node.gpus[2].uuid = "GPU-11aa22bb-0000-1111-2222-333344445555";  // NVIDIAUUID-like
  CHECK(choose_device(node, 0, 0, false, rocm("GPU-8F6C2A1E00AA0001")).device_id == 0);
  CHECK(choose_device(node, 0, 0, false, rocm("1,GPU-8f6c2a1e00aa0001")).device_id == 1);
  // CUDA accepts a unique prefix of the UUID.
  CHECK(choose_device(node, 2, 0, false, visible("GPU-11aa22bb")).device_id == 0);
  // HIP_VISIBLE_DEVICES by UUID, among what ROCr left.
  CHECK(choose_device(node, 3, 0, false, rocm("3,2", "GPU-8f6c2a1e00aa0001")).device_id == -1);
  CHECK(choose_device(node, 0, 0, false, rocm("3,2", "GPU-8f6c2a1e00aa0001")).device_id == 0);
  // A UUID hwloc did not report: the GPU cannot be placed, said (launcher mode only counts).
  const DeviceChoice unknown = choose_device(node, 1, 0, false, rocm("GPU-ffff0000ffff0000"));
  CHECK(unknown.device_id == -1);
  CHECK_THAT(unknown.note, Catch::Contains("UUID hwloc does not report"));
  CHECK(choose_device(node, 1, 0, true, rocm("GPU-ffff0000ffff0000")).device_id == 0);
}

TEST_CASE("device choice: a visibility value the runtime would misread is one error line", "[topology][gpu]") {
  const NodeTopology node = four_gpu_node();
  struct Case {
    GpuEnv env;
    const char* says;
  };
  const Case cases[] = {
      {rocm("0,x"), "ROCR_VISIBLE_DEVICES='0,x': 'x' is neither a GPU index (0, 1, ...) nor a UUID (GPU-...)"},
      {visible("-1"), "CUDA_VISIBLE_DEVICES='-1': '-1' is neither a GPU index"},
      {rocm("4"), "ROCR_VISIBLE_DEVICES='4': index 4 is past this node's 4 GPUs (0-3, as hwloc sees them)"},
      // Slurm's ROCR_VISIBLE_DEVICES=3 and a leftover HIP list of physical numbers: HIP sees no GPU.
      {rocm("3", "3"), "HIP_VISIBLE_DEVICES='3': index 3 is past the 1 GPU that ROCR_VISIBLE_DEVICES='3' leaves "
                       "(HIP numbers them from 0 after ROCr's filter)"},
  };
  for (const auto& k : cases) {
    for (bool launcher : {true, false}) {
      const DeviceChoice c = choose_device(node, 0, 0, launcher, k.env);
      CHECK_THAT(c.error, Catch::StartsWith(k.says));
      CHECK(c.error.find('\n') == std::string::npos);
      CHECK(c.device_id == -1);
    }
  }
  // A UUID that ROCr's list hides (gpu0 is PCI number 3).
  NodeTopology named = node;
  named.gpus[0].uuid = "8f6c2a1e00aa0001";
  CHECK_THAT(choose_device(named, 0, 0, false, rocm("1,2", "GPU-8f6c2a1e00aa0001")).error,
             Catch::Contains("HIP_VISIBLE_DEVICES='GPU-8f6c2a1e00aa0001': GPU-8f6c2a1e00aa0001 is a GPU that "
                             "ROCR_VISIBLE_DEVICES=1,2 hides"));
}
