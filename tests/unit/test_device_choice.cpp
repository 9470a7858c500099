// SPDX-License-Identifier: BSD-3-Clause
// The GPU each rank gives Kokkos, on fake nodes and fake environments: the launcher's one
// visible GPU when it binds; the GPU nearest the rank's cores, numbered in PCI bus order,
// when mini5d binds; a note whenever the choice is not the plain case. Built into the
// test_topology binary.
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
  hip.visible_var = "HIP_VISIBLE_DEVICES";
  const DeviceChoice h = choose_device(node, 2, 0, false, hip);
  CHECK(h.device_id == 1);
  CHECK_FALSE(h.set_pci_order);
}
