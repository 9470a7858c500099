// SPDX-License-Identifier: BSD-3-Clause
// The cluster file reader (inputs/clusters/*.yaml), section by section in file order,
// so that a file with several mistakes is refused for the same first one every time.
#include <cmath>
#include <string>
#include <vector>

#include "mini5d/plan/cost/oversubscription.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/inputs/input_schema.hpp"
#include "mini5d/plan/inputs/slurm_fields.hpp"
#include "mini5d/plan/inputs/yaml_fields.hpp"

namespace mini5d::plan {

namespace {

using namespace yaml_input;  // a reader is written in its checked accessors

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

// device.gemm.table: rows [op, m, n, k, GFLOP/s], op one of NN NT TN TT (the
// transposes of A and B), shapes positive integers.
std::vector<GemmPoint> read_gemm_table(const Fields& f, const std::string& key) {
  std::vector<GemmPoint> out;
  const YAML::Node t = f.at(key);
  if (!t) return out;
  if (!t.IsSequence()) f.fail(key, "expected a list of [op, m, n, k, GFLOP/s] rows");
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string fld = key + "[" + std::to_string(i) + "]";
    const YAML::Node r = t[i];
    if (!r.IsSequence() || r.size() != 5 || !r[0].IsScalar())
      f.fail(fld, "expected [op, m, n, k, GFLOP/s], e.g. [NT, 2048, 1536, 512, 98.5]");
    const std::string op = r[0].Scalar();
    if (op.size() != 2 || (op[0] != 'N' && op[0] != 'T') || (op[1] != 'N' && op[1] != 'T'))
      f.fail(fld, "op '" + op + "' is not valid (valid: NN, NT, TN, TT)");
    double v[4] = {};
    for (int j = 0; j < 4; ++j) {
      try {
        v[j] = r[j + 1].as<double>();
      } catch (const YAML::Exception&) {
        f.fail(fld, "'" + r[j + 1].Scalar() + "' is not a number");
      }
      const bool shape = j < 3;
      if (!std::isfinite(v[j]) || v[j] <= 0 || (shape && (v[j] != std::floor(v[j]) || v[j] > 1e9)) ||
          (!shape && v[j] > 1e7))
        f.fail(fld, fmt(v[j]) + " is out of range (m, n, k: integers in [1, 1e9]; GFLOP/s in (0, 1e7])");
    }
    out.push_back({op[0], op[1], v[0], v[1], v[2], 2 * v[0] * v[1] * v[2] / (v[3] * 1e9)});
  }
  return out;
}

// A tier's measured [bytes, GB/s] points, ascending in bytes (empty if absent).
BandwidthCurve read_curve(const Fields& f, const std::string& key) {
  BandwidthCurve out;
  const YAML::Node c = f.at(key);
  if (!c) return out;
  if (!c.IsSequence()) f.fail(key, "expected a list of [bytes, GB/s] pairs");
  double prev = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::string fld = key + "[" + std::to_string(i) + "]";
    if (!c[i].IsSequence() || c[i].size() != 2) f.fail(fld, "expected a [bytes, GB/s] pair");
    double b = 0, bw = 0;
    try {
      b = c[i][0].as<double>(), bw = c[i][1].as<double>();
    } catch (const YAML::Exception&) {
      f.fail(fld, "expected two numbers [bytes, GB/s]");
    }
    if (!(b > prev) || !(bw > 0)) f.fail(fld, "bytes must increase along the curve and GB/s must be > 0");
    prev = b;
    out.emplace_back(b, bw * 1e9);
  }
  return out;
}

LinkTier read_tier(const Fields& f, const std::string& key) {
  LinkTier t;
  t.name = f.text(key + ".name", key);
  t.bandwidth = 1e9 * f.number(key + ".bandwidth_gbs", 1e-6, 1e6,
                               "per-device, per-direction bandwidth in GB/s");
  t.latency = 1e-6 * f.number(key + ".latency_us", 0, 1e6, "latency per message in microseconds");
  t.curve = read_curve(f, key + ".curve");
  t.gather_curve = read_curve(f, key + ".gather_curve");
  t.send_curve = read_curve(f, key + ".send_curve");
  return t;
}

void read_device_basics(const Fields& f, DeviceDesc& d) {
  d.kind = f.one_of("device.kind", "gpu", {"gpu", "cpu"});
  d.name = f.text("device.name", d.kind);
  d.memory = GiB * f.number("device.memory_gib", 1e-3, 1e6, "memory per device in GiB");
  d.reserved = GiB * f.number("device.reserved_gib", 0, d.memory / GiB,
                              "GiB per device taken by runtime and allocator", false, 0);
  if (d.reserved >= d.memory)
    f.fail("device.reserved_gib", "must be smaller than device.memory_gib");
  d.hbm_bandwidth = 1e9 * f.number("device.memory_bandwidth_gbs", 1e-3, 1e6,
                                   "device memory bandwidth in GB/s");
  d.kernel_overhead = 1e-6 * f.number("device.kernel_overhead_us", 0, 1e5,
                                      "launch and synchronisation cost per kernel in microseconds",
                                      false, d.kind == "gpu" ? 5 : 1);
}

void read_kernel_rates(const Fields& f, DeviceDesc& d) {
  const std::string gm = f.text("device.gemm.model", "roofline");
  if (gm == "roofline") d.gemm_model = GemmModel::roofline;
  else if (gm == "flat") d.gemm_model = GemmModel::flat;
  else if (gm == "measured") d.gemm_model = GemmModel::measured;
  else f.fail("device.gemm.model", "'" + gm + "' is not valid (valid: roofline, flat, measured)");
  d.gemm_table = read_gemm_table(f, "device.gemm.table");
  const std::string mbk = "device.memory_bound.";
  d.elementwise_bandwidth = 1e9 * f.number(mbk + "elementwise_gbs", 1e-6, 1e6,
                                           "LayerNorm/GELU/residual rate in GB/s", false, 0);
  d.softmax_bandwidth = 1e9 * f.number(mbk + "softmax_gbs", 1e-6, 1e6, "softmax rate in GB/s", false, 0);
  d.optimizer_bandwidth = 1e9 * f.number(mbk + "optimizer_gbs", 1e-6, 1e6, "AdamW rate in GB/s", false, 0);
  d.memory_bound_source = f.text(mbk + "source", "");
  d.memory_bound_measured = f.flag(mbk + "measured", false);
  d.memory_bound_fixed = 1e-6 * f.number(mbk + "fixed_us_per_block", 0, 1e9,
                                         "seconds per block and micro-batch not scaling with bytes, in us",
                                         false, 0);
  if (d.memory_bound_fixed > 0 && !d.memory_bound_measured)
    f.fail(mbk + "fixed_us_per_block", "needs measured: true (it replaces kernel_overhead_us per kernel)");
  if (d.gemm_model == GemmModel::measured && d.gemm_table.empty())
    f.fail("device.gemm.table", "missing (model: measured needs [op, m, n, k, GFLOP/s] rows; "
                                "`mini5d calibrate` writes them)");
  d.gemm_call_overhead = 1e-6 * f.number("device.gemm.call_overhead_us", 0, 1e5,
                                         "fixed cost of one GEMM call in microseconds", false,
                                         d.kernel_overhead * 1e6);
  d.gemm_source = f.text("device.gemm.source", "");
}

void read_peaks(const Fields& f, DeviceDesc& d) {
  const char* precs[3] = {"fp32", "bf16", "fp64"};
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    const std::string p = std::string("device.peak_tflops.") + precs[i];
    const std::string s = std::string("device.sustained_tflops.") + precs[i];
    d.peak[i] = 1e12 * f.number(p, 0, 1e6, "peak dense TFLOP/s", false, 0);
    d.sustained[i] = 1e12 * f.number(s, 0, 1e6, "sustained GEMM TFLOP/s", false, 0);
    if (d.sustained[i] > 0 && d.peak[i] == 0) f.fail(p, "missing (needed since " + s + " is given)");
    if (d.sustained[i] > d.peak[i])
      f.fail(s, fmt(d.sustained[i] / 1e12) + " is out of range (valid: <= " + p + " = " +
                    fmt(d.peak[i] / 1e12) + ")");
    if (d.peak[i] > 0 && d.sustained[i] == 0) d.sustained[i] = d.peak[i];
    any = any || d.peak[i] > 0;
  }
  if (!any) f.fail("device.peak_tflops", "missing (give at least fp32: peak dense TFLOP/s)");
}

// links.inter_node.oversubscription R (default 1: none) over nodes_per_leaf nodes per
// leaf switch (oversubscription.hpp). A leaf holds whole middle-tier groups, so that the
// tiers nest (each span a multiple of the one inside it).
void read_oversubscription(const Fields& f, ClusterDesc& cl) {
  const double ratio = f.number("links.inter_node.oversubscription", 1, 1000,
                                "bandwidth under one leaf switch over that through the spine, "
                                "R of R:1; 1: none", false, 1);
  const bool has_leaf = f.has("links.inter_node.nodes_per_leaf");
  if (ratio > 1 && !has_leaf)
    f.fail("links.inter_node.nodes_per_leaf", "missing (nodes under one leaf switch; needed with oversubscription > 1)");
  if (!has_leaf) return;
  const long long leaf = f.integer("links.inter_node.nodes_per_leaf", 1, 1000000, "nodes under one leaf switch");
  if (cl.tiers.size() > 2) {
    const double mid = cl.tiers[1].span_devices / double(cl.devices_per_node);
    if (double(leaf) <= mid || leaf % static_cast<long long>(mid) != 0)
      f.fail("links.inter_node.nodes_per_leaf", std::to_string(leaf) + " must be a multiple of, and larger than, "
             "links.middle.nodes_per_group = " + std::to_string(static_cast<long long>(mid)));
  }
  add_oversubscribed_spine(cl, leaf, ratio);
}

// links.inter_node.rails R: the node's network interfaces, each on its own rail (the
// leaf switch of one local rank in a rail-optimised fabric). When given, bandwidth_gbs
// and the curves are one rail's, and the collectives that cross nodes, which every
// device of a node runs at once, share the node's R rails: each device gets R / D of a
// rail's rate (D devices per node; R > D gives a device more than one). Absent: the
// figures are per device already (one rail per device). Which rail a ring crosses on
// needs no cost of its own under block placement: every group that leaves its node
// holds the same local ranks on each node, so NCCL-style rings cross on their own
// rails and stay under one rail switch up to nodes_per_leaf nodes (give that as the
// nodes one rail switch reaches).
void read_rails(const Fields& f, const ClusterDesc& cl, LinkTier& inter) {
  if (!f.has("links.inter_node.rails")) return;
  const long long d = cl.devices_per_node;
  const long long rails = f.integer("links.inter_node.rails", 1, 8 * d, "network interfaces (rails) per node");
  inter.scale_bandwidth(double(rails) / double(d));
  inter.name += " (" + std::to_string(rails) + " rails for " + std::to_string(d) + " devices)";
}

void read_links(const Fields& f, ClusterDesc& cl) {
  if (!f.has("links.intra_node"))
    f.fail("links.intra_node", "missing (bandwidth_gbs, latency_us between devices of a node)");
  LinkTier intra = read_tier(f, "links.intra_node");
  intra.span_devices = double(cl.devices_per_node);
  cl.tiers.push_back(intra);
  if (f.has("links.middle")) {
    LinkTier mid = read_tier(f, "links.middle");
    mid.span_devices = double(cl.devices_per_node) *
                       double(f.integer("links.middle.nodes_per_group", 1, 1000000,
                                        "nodes sharing the middle tier"));
    cl.tiers.push_back(mid);
  }
  if (f.has("links.inter_node")) {
    LinkTier inter = read_tier(f, "links.inter_node");
    inter.span_devices = 0;
    read_rails(f, cl, inter);
    cl.tiers.push_back(inter);
    read_oversubscription(f, cl);
  } else if (cl.nodes > 1) {
    f.fail("links.inter_node", "missing (bandwidth_gbs, latency_us between nodes; needed for nodes > 1)");
  }
}

void read_software_and_slurm(const Fields& f, ClusterDesc& cl) {
  cl.software.name = f.text("software.name", cl.software.name);
  cl.software.tp_overlap = f.number("software.tp_overlap", 0, 1,
                                    "fraction of tensor-parallel communication hidden behind GEMMs",
                                    false, 0);
  cl.software.pp_scatter_gather = f.flag("software.pp_scatter_gather", false);
  cl.software.attention_dropout = f.flag("software.attention_dropout", false);
  cl.software.fused_attention = f.flag("software.fused_attention", false);
  cl.software.fused_attention_rate =
      1e12 * f.number("software.fused_attention_tflops", 0, 1e6,
                      "the fused attention kernel's sustained TFLOP/s (0: the sustained GEMM rate)", false, 0);
  cl.software.overlap_efficiency = f.number("software.overlap_efficiency", 0, 1,
                                            "fraction of overlappable communication compute hides", false, -1);
  cl.software.attention_block = int(f.integer("software.attention_block", 0, 1 << 20,
                                              "queries per causal attention block (0: the whole square)",
                                              false, cl.software.attention_block));
  cl.software.collectives = f.one_of("software.collectives", "ring", {"ring", "nccl"});
  cl.software.context_parallel = f.one_of("software.context_parallel", "ring", {"ring", "allgather"});
  // Every tier beyond the node's own may run its all-reduces as a tree (NCCL builds its
  // trees across nodes; inside one it chains the node's devices, no shorter than a ring).
  // NCCL also runs a channel per NIC there, so a group's members on one node cross
  // nodes through all their NICs at once (collective_link, comm_model.hpp).
  for (std::size_t i = 1; i < cl.tiers.size(); ++i)
    cl.tiers[i].tree_allreduce = cl.tiers[i].nic_channels = cl.software.collectives == "nccl";
  cl.software.grad_reduce_overlap = f.flag("software.grad_reduce_overlap", true);
  cl.slurm_partition = f.text("slurm.partition", "");
  cl.slurm_account = f.text("slurm.account", "");
  cl.slurm_qos = f.text("slurm.qos", "");
  cl.slurm_constraint = f.text("slurm.constraint", "");
  cl.slurm_gres = f.text("slurm.gres", "");
  cl.slurm_gpu_bind = f.text("slurm.gpu_bind", cl.slurm_gpu_bind);
  cl.slurm_mpi = f.text("slurm.mpi", "");
  cl.slurm_binding = f.text("slurm.binding", "srun");
  cl.slurm_gpu_aware_env = f.text("slurm.gpu_aware_env", "");
  cl.slurm_gpu_aware_lib = f.text("slurm.gpu_aware_lib", "");
  cl.slurm_time = f.text("slurm.time", "01:00:00");
  cl.slurm_reserved_cores = f.integer("slurm.reserved_cores", 0, 100000,
                                      "cores per node the site keeps from jobs, e.g. 8 with Frontier's -S 8",
                                      false, 0);
  cl.slurm_threads_per_core = f.integer("slurm.threads_per_core", 1, 8,
                                        "hardware threads per core a task asks for (--threads-per-core)", false, 0);
  cl.fs_write_gbs_per_node = f.number("filesystem.write_gbs_per_node", 0, 1e6,
                                      "checkpoint write rate one node reaches, GB/s", false, 0);
  cl.fs_write_gbs = f.number("filesystem.write_gbs", 0, 1e9, "the file system's total write rate, GB/s", false, 0);
  cl.fs_read_gbs_per_node = f.number("filesystem.read_gbs_per_node", 0, 1e6,
                                     "checkpoint read rate one node reaches, GB/s", false, 0);
  cl.fs_read_gbs = f.number("filesystem.read_gbs", 0, 1e9, "the file system's total read rate, GB/s", false, 0);
  cl.node_mtbf_hours = f.number("reliability.node_mtbf_hours", 1, 1e8,
                                "one node's mean time between job-stopping failures, hours", false, 0);
  cl.requeue_s = f.number("reliability.requeue_s", 0, 86400,
                          "seconds from a failure until the requeued job starts", false, cl.requeue_s);
  cl.startup_s = f.number("reliability.startup_s", 0, 86400,
                          "seconds from the job's start until it loads the checkpoint", false, cl.startup_s);
}

}  // namespace

ClusterDesc parse_cluster_text(const std::string& text, const std::string& source) {
  const Fields f(parse(text, source), source);
  f.check_keys(cluster_file_schema(), "cluster file");
  ClusterDesc cl;
  cl.source = source;
  cl.name = f.text("name", source);
  cl.nodes = f.integer("nodes", 1, 10000000, "number of nodes", false, 1);
  cl.devices_per_node = f.integer("devices_per_node", 1, 4096, "accelerators (or ranks) per node");
  cl.cores_per_node = f.integer("cores_per_node", 1, 100000, "CPU cores per node", false,
                                cl.devices_per_node);
  cl.threads_per_core = f.integer("threads_per_core", 1, 8, "hardware threads per core (SMT)", false, 1);
  if (!f.has("device")) f.fail("device", "missing section (memory_gib, peak_tflops, ...)");
  read_device_basics(f, cl.device);
  read_kernel_rates(f, cl.device);
  read_peaks(f, cl.device);
  read_links(f, cl);
  read_software_and_slurm(f, cl);
  validate_cluster(cl);
  return cl;
}

ClusterDesc load_cluster_file(const std::string& path) {
  return parse_cluster_text(read_file(path), path);
}

void validate_cluster(const ClusterDesc& cl) {
  validate_slurm(cl);
  if (cl.nodes < 1) throw InputError(cl.source + ": nodes: must be >= 1");
  if (cl.nodes > 1 && cl.tiers.size() < 2)
    throw InputError(cl.source + ": links.inter_node: missing (needed for nodes > 1, got nodes=" +
                     std::to_string(cl.nodes) + ")");
  // The last tier must span everything, whatever the file said.
}

}  // namespace mini5d::plan
