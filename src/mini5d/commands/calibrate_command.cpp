// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/calibrate_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "mini5d/core/diag.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/plan/input_files.hpp"
#include "mini5d/topology/membership.hpp"
#include "mini5d/measure/sweeps.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/measure/platform.hpp"
#include "mini5d/train/trainer.hpp"
#include "mini5d/plan/memory_model.hpp"
#include "mini5d/plan/time_model.hpp"
#include "mini5d/kernels/profile.hpp"

namespace mini5d::commands {

namespace cal = measure;
using measure::host_name;
using train::Trainer;
using train::plan_layout;
using train::plan_model;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string num(double v, int digits = 4) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*g", digits, v);
  return b;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof(b), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return b;
}

// One measured link tier: the three curves (bus bandwidth in the planner's convention,
// comm_model.hpp) and the latency per message step.
struct TierFigures {
  double latency = 0;
  std::vector<std::pair<double, double>> allreduce, gather, send;  // (bytes, bytes/s)
  std::string note;
};

TierFigures measure_tier(MPI_Comm world, MPI_Comm group, bool quick) {
  TierFigures tf;
  int n = 1;
  MPI_Comm_size(group, &n);
  const double top = quick ? 4.0 * (1 << 20) : 64.0 * (1 << 20);
  const double min_s = quick ? 0.005 : 0.05;
  // From 64 KiB: below that the latency rules and there is no bandwidth to read off.
  std::vector<double> sizes;
  for (double b = 65536; b <= top; b *= 4) sizes.push_back(b);
  // Latency: a small send's time is one message step.
  tf.latency = cal::over_ranks(world, cal::time_collective(group, cal::Collective::sendrecv, 8, min_s)).mean;
  std::vector<double> ag_bw, rs_bw;
  for (const double s : sizes) {
    auto bus = [&](cal::Collective op, double steps, double factor) {
      const double t = cal::over_ranks(world, cal::time_collective(group, op, s, min_s)).mean;
      // What is left after the latency steps moves the bytes (never below 5% of it).
      return factor * s / std::max(t - steps * tf.latency, 0.05 * t);
    };
    const double ar = bus(cal::Collective::allreduce, 2.0 * (n - 1), 2.0 * (n - 1) / n);
    const double ag = bus(cal::Collective::allgather, n - 1.0, (n - 1.0) / n);
    const double rs = bus(cal::Collective::reduce_scatter, n - 1.0, (n - 1.0) / n);
    const double sr = bus(cal::Collective::sendrecv, 1, 1);
    tf.allreduce.emplace_back(s, ar);
    // One curve serves all-gather, reduce-scatter and all-to-all: the slower of the two.
    tf.gather.emplace_back(s, std::min(ag, rs));
    tf.send.emplace_back(s, sr);
    ag_bw.push_back(ag), rs_bw.push_back(rs);
  }
  tf.note = "all-gather " + num(ag_bw.back() * 1e-9, 3) + " GB/s and reduce-scatter " +
            num(rs_bw.back() * 1e-9, 3) + " GB/s at " + num(sizes.back() / (1 << 20), 3) + " MiB";
  return tf;
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

// The memory-bound kernels in the planner's byte counts (plan/time_model.hpp): every
// rank trains the deck's model alone (one rank, no communication, no recomputation) for
// about a second, all ranks at once, and its kernel profile's per-family seconds are set
// against the bytes the planner counts for that run. At two micro-batch sizes (the
// deck's and a quarter of it), time = fixed + bytes / rate is solved per kind, so that
// smaller micro-batches pay their per-launch and per-row costs.
struct MemoryBoundRates {
  double elementwise = 0, softmax = 0, optimizer = 0;  // bytes/s
  double fixed_per_block = 0;  // seconds per block and micro-batch
  std::vector<int> micro_batches;
};

// One probe: seconds and planner bytes per micro-batch, by kind.
struct KernelProbe {
  double elem_s = 0, soft_s = 0, opt_s = 0;  // opt: per step
  double elem_b = 0, soft_b = 0, opt_b = 0;
};

KernelProbe probe_kernels(MPI_Comm world, const Deck& deck, int micro_batch, bool quick, std::ostream& os) {
  Deck probe = deck;
  probe.parallel.d = probe.parallel.t = probe.parallel.p = probe.parallel.c = probe.parallel.e = 1;
  probe.parallel.zero = 0;
  probe.parallel.virtual_stages = 1;
  probe.train.micro_batch = micro_batch;
  probe.train.accumulation = 1;
  probe.train.recompute = "none";
  probe.checkpoint.every = 0;
  probe.checkpoint.resume.clear();
  probe.output.report.clear();
  probe.output.trace.clear();
  const plan::ModelDesc md = plan_model(probe);
  const plan::Layout pl = plan_layout(probe);
  const plan::TrainDesc td{};
  // Steps for about a second (0.2 s quick) at a rough 50 GFLOP/s; two at least, since
  // the first step is not profiled (page faults, BLAS set-up).
  const double guess = plan::model_flops_per_step(md, double(micro_batch) * double(md.seq)) / 50e9;
  probe.train.steps = std::clamp(long((quick ? 0.2 : 1.0) / std::max(guess, 1e-6)), 2L, 400L);
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  if (rank == 0)
    os << "calibrate: timing the memory-bound kernels at micro-batch " << micro_batch << ": " << probe.train.steps
       << " steps of the deck's model on each rank (about " << num(guess * double(probe.train.steps), 2)
       << " s at 50 GFLOP/s)\n"
       << std::flush;
  MPI_Barrier(world);
  Trainer tr(probe, MPI_COMM_SELF);
  tr.run();
  const prof::Profile& profile = prof::profile();  // over the steps after the first
  auto per_step = [&](std::initializer_list<prof::Family> fs) {
    double s = 0;
    for (const prof::Family f : fs) s += profile.tally[std::size_t(f)].seconds;
    return cal::over_ranks(world, s / double(std::max(1L, tr.profiled_steps()))).mean;
  };
  using F = prof::Family;
  KernelProbe r;
  r.elem_s = per_step({F::layernorm, F::gelu, F::bias, F::residual, F::embedding, F::cross_entropy});
  r.soft_s = per_step({F::attention});
  r.opt_s = per_step({F::optimizer, F::norm});
  plan::ClusterDesc cl;
  cl.software.attention_block = kernels::kAttBlock;
  const plan::TimeOptions o;
  const plan::MemoryBoundBytes b = plan::block_memory_bytes(md, td, cl, pl, o);
  const double L = double(md.layers);
  r.elem_b = L * (b.elementwise_fwd + b.elementwise_bwd) + plan::head_memory_bytes(md, td, pl, o);
  r.soft_b = L * (b.softmax_fwd + b.softmax_bwd);
  r.opt_b = plan::optimizer_bytes(md, td, pl, 0);
  return r;
}

// time = fixed + bytes / rate through two points (a at the larger size); one point, or
// a fit that makes no sense (no growth, negative fixed part), gives the plain rate.
std::pair<double, double> fixed_and_rate(double ta, double ba, double tb, double bb) {
  const double plain = ba / std::max(ta, 1e-12);
  if (!(ba > bb) || !(ta > tb)) return {0.0, plain};
  const double rate = (ba - bb) / (ta - tb);
  const double fixed = ta - ba / rate;
  if (!(fixed >= 0) || !(rate > 0)) return {0.0, plain};
  return {fixed, rate};
}

MemoryBoundRates measure_memory_bound(MPI_Comm world, const Deck& deck, bool quick, std::ostream& os) {
  const int mb = deck.train.micro_batch, small = std::max(1, mb / 4);
  const KernelProbe a = probe_kernels(world, deck, mb, quick, os);
  MemoryBoundRates r;
  r.micro_batches = {mb};
  r.optimizer = a.opt_b / std::max(a.opt_s, 1e-12);
  KernelProbe b = a;
  if (small < mb) {
    b = probe_kernels(world, deck, small, quick, os);
    r.micro_batches.push_back(small);
  }
  const auto [fe, re] = fixed_and_rate(a.elem_s, a.elem_b, b.elem_s, b.elem_b);
  const auto [fs, rs] = fixed_and_rate(a.soft_s, a.soft_b, b.soft_s, b.soft_b);
  r.elementwise = re, r.softmax = rs;
  r.fixed_per_block = (fe + fs) / double(std::max(1, deck.model.layers));
  return r;
}

bool host_memory_space() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
}

}  // namespace

std::vector<plan::GemmCall> calibration_shapes(const Deck& deck, int ranks, double max_bytes) {
  const plan::ModelDesc md = plan_model(deck);
  const plan::Layout own = plan_layout(deck);
  plan::SoftwareDesc sw;
  sw.attention_block = kernels::kAttBlock;
  std::vector<plan::Layout> layouts = {own};
  for (int t = 1; t <= ranks; t *= 2) {
    if (md.heads % t || md.ffn % t || md.vocab % t || md.d_model % t) continue;
    // The deck's micro-batch and the powers of two below it (what the search offers).
    std::vector<int> micro_batches = {own.micro_batch};
    for (int mb = 1; mb < own.micro_batch; mb *= 2) micro_batches.push_back(mb);
    for (const int mb : micro_batches) {
      plan::Layout l = own;
      l.t = t, l.c = 1, l.micro_batch = mb, l.e = std::min(own.e, std::max(1, ranks / t));
      layouts.push_back(l);
    }
  }
  std::set<std::tuple<char, char, long long, long long, long long>> seen;
  std::vector<plan::GemmCall> out;
  auto add = [&](const std::vector<plan::GemmCall>& calls) {
    for (plan::GemmCall c : calls) {
      c.m = std::max(1.0, std::round(c.m)), c.n = std::max(1.0, std::round(c.n)), c.k = std::max(1.0, std::round(c.k));
      c.count = 1;
      if (4.0 * (c.m * c.k + c.k * c.n + c.m * c.n) > max_bytes) continue;
      if (seen.insert({c.ta, c.tb, (long long)c.m, (long long)c.n, (long long)c.k}).second) out.push_back(c);
    }
  };
  for (const plan::Layout& l : layouts) {
    const plan::BlockGemmCalls b = plan::block_gemm_calls(md, l, sw, 1.0);
    for (const auto* v : {&b.linear_fwd, &b.linear_bwd, &b.expert_fwd, &b.expert_bwd, &b.attention_fwd,
                          &b.attention_bwd})
      add(*v);
    add(plan::head_gemm_calls(md, l, false));
    add(plan::head_gemm_calls(md, l, true));
  }
  return out;
}

int calibrate_command(MPI_Comm world, const Deck& deck, const CalibrateOptions& opt, std::ostream& os) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &ranks);
  plan::ClusterDesc base;
  if (!opt.base.empty()) base = plan::load_cluster_file(opt.base);  // every rank: same error
  if (!host_memory_space() && opt.base.empty())
    throw InputError("calibrate: --base CLUSTER.yaml is needed on a device backend (" +
                     std::string(ExecSpace::name()) + "): it gives the device memory, which is not measured");
  auto say = [&](const std::string& line) {
    if (rank == 0) os << "calibrate: " << line << "\n" << std::flush;
  };

  const topology::NodeMembership nm = topology::node_membership(world, deck.parallel.ranks_per_node);
  MPI_Comm node_comm, cross_comm;
  MPI_Comm_split(world, nm.node, nm.local_rank, &node_comm);
  MPI_Comm_split(world, nm.local_rank, nm.node, &cross_comm);
  say(std::to_string(ranks) + " rank(s), " + std::to_string(nm.nodes) + " node(s) of " +
      std::to_string(nm.local_size) + (nm.virtual_nodes ? " (virtual nodes, parallel.ranks_per_node)" : "") +
      ", backend " + ExecSpace::name());

  // GEMMs: the deck's shapes, all ranks at once.
  const double min_s = opt.quick ? 0.003 : 0.04;
  const double cap = std::min(1.0 * kGiB, 4.0 * kGiB / std::max(1, nm.host_local_size));
  const std::vector<plan::GemmCall> shapes = calibration_shapes(deck, ranks, cap);
  const cal::GemmTimer gemm(world);
  std::vector<double> seconds;
  double best_rate = 0;
  for (const plan::GemmCall& c : shapes) {
    seconds.push_back(cal::over_ranks(world, gemm.seconds(c, min_s)).mean);
    best_rate = std::max(best_rate, c.flops() / seconds.back());
  }
  say(std::to_string(shapes.size()) + " GEMM shapes of " + deck.origin + " measured (best " +
      num(best_rate * 1e-9) + " GFLOP/s)");
  const cal::OverRanks big = cal::over_ranks(world, gemm.seconds({'N', 'T', 1024, 1024, 1024, 1}, min_s));
  const double sustained = 2.0 * 1024 * 1024 * 1024 / big.mean;
  const double triad = cal::over_ranks(world, cal::triad_bandwidth(world, opt.quick ? 32e6 : 128e6)).mean;
  const double launch = cal::over_ranks(world, cal::time_launch(world)).mean;
  say("sgemm 1024^3 " + num(sustained * 1e-9) + " GFLOP/s, triad " + num(triad * 1e-9) + " GB/s, launch " +
      num(launch * 1e6) + " us (means over ranks)");

  const MemoryBoundRates mbr = measure_memory_bound(world, deck, opt.quick, os);
  say("memory-bound kernels: elementwise " + num(mbr.elementwise * 1e-9) + " GB/s, softmax " +
      num(mbr.softmax * 1e-9) + " GB/s, optimizer " + num(mbr.optimizer * 1e-9) + " GB/s (planner byte counts), " +
      num(mbr.fixed_per_block * 1e6) + " us per block and micro-batch besides");

  // Links: inside a node, then across nodes (collective over world even when unused).
  TierFigures intra, inter;
  if (nm.local_size > 1) {
    intra = measure_tier(world, node_comm, opt.quick);
    say("inside a node (" + std::to_string(nm.local_size) + " ranks): all-reduce " +
        num(intra.allreduce.back().second * 1e-9) + " GB/s, latency " + num(intra.latency * 1e6) + " us");
  }
  if (nm.nodes > 1) {
    inter = measure_tier(world, cross_comm, opt.quick);
    say("across nodes (" + std::to_string(nm.nodes) + " ranks per group): all-reduce " +
        num(inter.allreduce.back().second * 1e-9) + " GB/s, latency " + num(inter.latency * 1e6) + " us");
  }
  // Overlap of the gradient all-reduce with compute, at the deck's gradient size
  // (capped at 64 MiB), over all ranks as a data-parallel run's group.
  double overlap = -1;
  if (ranks > 1) {
    const plan::ShardParams sp = plan::stage_params(plan_model(deck), plan::Layout{}, 0);
    overlap = cal::overlap_efficiency(world, std::min(4.0 * sp.total(), opt.quick ? 4.0 * (1 << 20) : 64.0 * (1 << 20)));
    say("all-reduce hidden behind GEMMs: " + num(100 * overlap, 3) + "% (the planner's overlap efficiency)");
  }
  MPI_Comm_free(&node_comm);
  MPI_Comm_free(&cross_comm);

  std::string problem;
  if (rank == 0) {
    const bool cpu = host_memory_space();
    const unsigned host_cores = std::max(1u, std::thread::hardware_concurrency());
    const double host_mem = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    const double peak = std::max(opt.base.empty() ? best_rate : base.device.peak[0], std::max(best_rate, sustained));
    std::ostringstream o;
    o << "# SPDX-License-Identifier: BSD-3-Clause\n"
      << "# Calibrated by `mini5d calibrate` on " << host_name() << ", " << today() << ": " << ranks << " rank(s), "
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
      << "\n"
      << "device:\n"
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
    o << "  memory_bandwidth_gbs: " << num(triad * 1e-9) << "   # triad, all ranks at once\n"
      << "  kernel_overhead_us: " << num(launch * 1e6) << "   # a one-element kernel and its fence\n"
      << "  peak_tflops:\n"
      << "    fp32: " << num(peak * 1e-12, 6)
      << (opt.base.empty() ? "   # not measured: the best rate measured stands in" : "   # from " + opt.base) << "\n"
      << "  sustained_tflops:\n"
      << "    fp32: " << num(sustained * 1e-12, 6) << "   # sgemm 1024^3\n"
      << "  memory_bound:   # the runtime's own kernels in the deck's model, alone on each rank, at micro-batch "
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
      << "    call_overhead_us: " << num(launch * 1e6) << "\n"
      << "    table:   # [op, m, n, k, GFLOP/s]: one call, KokkosBlas::gemm on fp32 LayoutRight Views\n";
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const plan::GemmCall& c = shapes[i];
      o << "      - [" << c.ta << c.tb << ", " << (long long)c.m << ", " << (long long)c.n << ", " << (long long)c.k
        << ", " << num(c.flops() / seconds[i] * 1e-9, 5) << "]\n";
    }
    o << "links:\n";
    if (nm.local_size > 1)
      write_tier(o, "intra_node", "measured inside a node", intra);
    else
      write_unused_tier(o, "intra_node", "one rank per node");
    if (nm.nodes > 1) write_tier(o, "inter_node", "measured across nodes", inter);
    o << "software:\n"
      << "  name: mini5d\n";
    if (overlap >= 0)
      o << "  overlap_efficiency: " << num(overlap, 3)
        << "   # an all-reduce of the deck's gradients beside GEMMs (MPI_Iallreduce, tested between them)\n";
    o << "  attention_block: " << kernels::kAttBlock << "   # kernels/attention.hpp\n";
    // Through a temporary, so a failed write leaves no half file; and read back, so a
    // file the planner would refuse is never left behind.
    namespace fs = std::filesystem;
    const std::string tmp = opt.out + ".tmp";
    {
      std::ofstream out(tmp);
      out << o.str();
      if (!out) problem = "calibrate: cannot write " + tmp;
    }
    if (problem.empty()) try {
        (void)plan::parse_cluster_text(o.str(), opt.out);
        std::error_code ec;
        fs::rename(tmp, opt.out, ec);
        if (ec) problem = "calibrate: cannot write " + opt.out + ": " + ec.message();
      } catch (const std::exception& e) {
        problem = std::string("calibrate: the file written does not load: ") + e.what();
      }
    if (problem.empty()) os << "calibrate: wrote " << opt.out << " (use it as mini5d-plan --cluster)\n";
  }
  int failed = problem.empty() ? 0 : 1;
  MPI_Bcast(&failed, 1, MPI_INT, 0, world);
  if (failed && rank == 0) write_stderr("mini5d: error: " + problem);
  if (failed) return 1;
  return 0;
}

}  // namespace mini5d::commands
