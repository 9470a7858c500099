// SPDX-License-Identifier: BSD-3-Clause
// `mini5d calibrate`'s output: the planner cluster file written from the measurements,
// and the one way it reaches disk (through a temporary, read back before it stays).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "mini5d/commands/calibrate_parts.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/core/fresh_file.hpp"
#include "mini5d/core/replace_target.hpp"
#include "mini5d/measure/platform.hpp"
#include "mini5d/plan/inputs/input_files.hpp"

namespace mini5d::commands::calibrate {

using measure::host_name;

std::string num(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*g", digits, v);
  return b;
}

namespace {

std::string today() {
  const std::time_t now = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof(b), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return b;
}

std::string curve_yaml(const std::vector<std::pair<double, double>>& c) {
  std::string s = "[";
  for (std::size_t i = 0; i < c.size(); ++i)
    s += (i ? ", [" : "[") + num(c[i].first, 10) + ", " + num(c[i].second * 1e-9, 4) + "]";
  return s + "]";
}

void write_tier(std::ostream& o, const std::string& key, const std::string& name, const TierFigures& tf) {
  o << "  " << key << ":\n"
    << "    name: \"" << name << "\"\n"
    << "    bandwidth_gbs: " << num(tf.allreduce.back().second * 1e-9) << "   # all-reduce at the largest size\n"
    << "    latency_us: " << num(tf.latency * 1e6) << "   # one small send/recv\n"
    << "    curve: " << curve_yaml(tf.allreduce) << "   # all-reduce, [bytes, GB/s]\n"
    << "    gather_curve: " << curve_yaml(tf.gather) << "   # " << tf.note << "\n"
    << "    send_curve: " << curve_yaml(tf.send) << "\n";
}

// A tier that no group of this allocation crosses (one rank per node, or one node):
// the planner never asks for it, but the file format wants intra_node.
void write_unused_tier(std::ostream& o, const std::string& key, const std::string& why) {
  o << "  " << key << ":   # not measured: " << why << "; no layout of this allocation uses it\n"
    << "    name: \"not measured\"\n"
    << "    bandwidth_gbs: 1\n"
    << "    latency_us: 1\n";
}

// The provenance comment and the top-level sizes.
void write_header(std::ostream& o, const Deck& deck, const CalibrateOptions& opt, const plan::ClusterDesc& base,
                  const Measured& m) {
  const topology::NodeMembership& nm = m.nm;
  const unsigned host_cores = std::max(1u, std::thread::hardware_concurrency());
  o << "# SPDX-License-Identifier: BSD-3-Clause\n"
    << "# Calibrated by `mini5d calibrate` on " << host_name() << ", " << today() << ": " << m.ranks << " rank(s), "
    << nm.nodes << " node(s) of " << nm.local_size << (nm.virtual_nodes ? " (virtual)" : "") << ", Kokkos "
    << ExecSpace::name() << ", deck " << deck.origin << ".\n"
    << "# Every figure is the mean over ranks of per-rank medians, all ranks measuring at once;\n"
    << "# what was not measured is marked" << (opt.base.empty() ? "" : " and comes from " + opt.base) << ".\n"
    << "name: calibrated-" << host_name() << "\n"
    << "nodes: " << nm.nodes << "\n"
    << "devices_per_node: " << nm.local_size << "\n"
    << "cores_per_node: "
    << (opt.base.empty() ? std::max<long long>(1, (long long)host_cores * nm.local_size / std::max(1, nm.host_local_size))
                         : base.cores_per_node)
    << "\n";
}

// device: what it is, its memory and the measured rates (memory_bound and gemm apart).
void write_device(std::ostream& o, const CalibrateOptions& opt, const plan::ClusterDesc& base, const Measured& m) {
  const topology::NodeMembership& nm = m.nm;
  const bool cpu = host_memory_space();
  const double host_mem = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  const double peak =
      std::max(opt.base.empty() ? m.best_rate : base.device.peak[0], std::max(m.best_rate, m.sustained));
  o << "device:\n"
    << "  kind: " << (cpu ? "cpu" : "gpu") << "\n"
    << "  name: \"" << (opt.base.empty() ? std::string(ExecSpace::name()) + " rank on " + host_name() : base.device.name)
    << "\"\n";
  if (opt.base.empty())
    o << "  memory_gib: " << num(host_mem / kGiB / std::max(1, nm.host_local_size)) << "   # the host's memory over its "
      << nm.host_local_size << " rank(s)\n"
      << "  reserved_gib: " << num(std::min(1.0, 0.25 * host_mem / kGiB / std::max(1, nm.host_local_size)))
      << "   # assumption: OS, MPI and runtime per rank\n";
  else
    o << "  memory_gib: " << num(base.device.memory / kGiB) << "   # from " << opt.base << "\n"
      << "  reserved_gib: " << num(base.device.reserved / kGiB) << "   # from " << opt.base << "\n";
  o << "  memory_bandwidth_gbs: " << num(m.triad * 1e-9) << "   # triad, all ranks at once\n"
    << "  kernel_overhead_us: " << num(m.launch * 1e6) << "   # a one-element kernel and its fence\n"
    << "  peak_tflops:\n"
    << "    fp32: " << num(peak * 1e-12, 6)
    << (opt.base.empty() ? "   # not measured: the best rate measured stands in" : "   # from " + opt.base) << "\n"
    << "  sustained_tflops:\n"
    << "    fp32: " << num(m.sustained * 1e-12, 6) << "   # sgemm 1024^3\n";
}

// device.memory_bound and device.gemm, the measured kernel rates.
void write_kernel_rates(std::ostream& o, const Deck& deck, const Measured& m) {
  const MemoryBoundRates& mbr = m.memory_bound;
  o << "  memory_bound:   # the runtime's own kernels in the deck's model, alone on each rank, at micro-batch "
    << mbr.micro_batches.front() << (mbr.micro_batches.size() > 1 ? " and " + std::to_string(mbr.micro_batches.back()) : "")
    << ", against the planner's byte counts\n"
    << "    elementwise_gbs: " << num(mbr.elementwise * 1e-9) << "   # LayerNorm, GELU, bias, residual, embedding, loss\n"
    << "    softmax_gbs: " << num(mbr.softmax * 1e-9) << "   # causal softmax and head permutes\n"
    << "    optimizer_gbs: " << num(mbr.optimizer * 1e-9) << "   # AdamW and the gradient norm\n"
    << "    fixed_us_per_block: " << num(mbr.fixed_per_block * 1e6)
    << "   # per block and micro-batch, not scaling with bytes (launches, per-row work)\n"
    << "    measured: true   # the rates and the fixed part replace kernel_overhead_us per kernel\n"
    << "    source: \"mini5d calibrate, " << host_name() << ", " << today() << ", deck " << deck.origin << "\"\n"
    << "  gemm:\n"
    << "    model: measured\n"
    << "    source: \"mini5d calibrate, " << host_name() << ", " << today() << "\"\n"
    << "    call_overhead_us: " << num(m.launch * 1e6) << "\n"
    << "    table:   # [op, m, n, k, GFLOP/s]: one call, KokkosBlas::gemm on fp32 LayoutRight Views\n";
  for (std::size_t i = 0; i < m.shapes.size(); ++i) {
    const plan::GemmCall& c = m.shapes[i];
    o << "      - [" << c.ta << c.tb << ", " << (long long)c.m << ", " << (long long)c.n << ", " << (long long)c.k
      << ", " << num(c.flops() / m.seconds[i] * 1e-9, 5) << "]\n";
  }
}

void write_links_and_software(std::ostream& o, const Measured& m) {
  o << "links:\n";
  if (m.nm.local_size > 1)
    write_tier(o, "intra_node", "measured inside a node", m.intra);
  else
    write_unused_tier(o, "intra_node", "one rank per node");
  if (m.nm.nodes > 1) write_tier(o, "inter_node", "measured across nodes", m.inter);
  o << "software:\n"
    << "  name: mini5d\n";
  if (m.overlap >= 0)
    o << "  overlap_efficiency: " << num(m.overlap, 3)
      << "   # an all-reduce of the deck's gradients beside GEMMs (MPI_Iallreduce, tested between them)\n";
  o << "  attention_block: " << kernels::kAttBlock << "   # kernels/attention.hpp\n";
}

}  // namespace

std::string cluster_yaml(const Deck& deck, const CalibrateOptions& opt, const plan::ClusterDesc& base,
                         const Measured& m) {
  std::ostringstream o;
  write_header(o, deck, opt, base, m);
  write_device(o, opt, base, m);
  write_kernel_rates(o, deck, m);
  write_links_and_software(o, m);
  return o.str();
}

std::string write_cluster_file(const std::string& text, const std::string& out_path, std::ostream& os) {
  // Through a temporary, so a failed write leaves no half file; and read back, so a
  // file the planner would refuse is never left behind.
  namespace fs = std::filesystem;
  const ReplaceTarget target = replace_target(out_path, "calibrate --out");  // a link: its target
  if (!target.problem.empty()) return target.problem;
  std::string problem;
  const std::string tmp = target.path + ".tmp";
  if (auto why = write_fresh(tmp, text); !why.empty()) problem = "calibrate: " + why;
  if (problem.empty()) try {
      (void)plan::parse_cluster_text(text, out_path);
      std::error_code ec;
      fs::rename(tmp, target.path, ec);
      if (ec) problem = "calibrate: cannot write " + out_path + ": " + ec.message();
    } catch (const std::exception& e) {
      problem = std::string("calibrate: the file written does not load: ") + e.what();
    }
  if (problem.empty()) os << "calibrate: wrote " << out_path << " (use it as mini5d-plan --cluster)\n";
  return problem;
}

}  // namespace mini5d::commands::calibrate
