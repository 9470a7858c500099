// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/calibrate_command.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <tuple>

#include "mini5d/commands/calibrate_parts.hpp"
#include "mini5d/core/diag.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/replace_target.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/measure/sweeps.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/plan/cost/time_model.hpp"
#include "mini5d/topology/membership.hpp"
#include "mini5d/train/deck_plan.hpp"

namespace mini5d::commands {

namespace cal = measure;
using calibrate::Measured;
using calibrate::TierFigures;
using calibrate::kGiB;
using calibrate::num;
using train::plan_layout;
using train::plan_model;

bool calibrate::host_memory_space() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
}

namespace {

// Rank 0's progress lines.
class Say {
 public:
  Say(int rank, std::ostream& os) : rank_(rank), os_(os) {}
  void operator()(const std::string& line) const {
    if (rank_ == 0) os_ << "calibrate: " << line << "\n" << std::flush;
  }

 private:
  int rank_;
  std::ostream& os_;
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

// GEMMs: the deck's shapes, all ranks at once; then the sgemm, triad and launch
// figures.
void measure_compute(MPI_Comm world, const Deck& deck, bool quick, const Say& say, Measured& m) {
  const double min_s = quick ? 0.003 : 0.04;
  const double cap = std::min(1.0 * kGiB, 4.0 * kGiB / std::max(1, m.nm.host_local_size));
  m.shapes = calibration_shapes(deck, m.ranks, cap);
  const cal::GemmTimer gemm(world);
  for (const plan::GemmCall& c : m.shapes) {
    m.seconds.push_back(cal::over_ranks(world, gemm.seconds(c, min_s)).mean);
    m.best_rate = std::max(m.best_rate, c.flops() / m.seconds.back());
  }
  say(std::to_string(m.shapes.size()) + " GEMM shapes of " + deck.origin + " measured (best " +
      num(m.best_rate * 1e-9) + " GFLOP/s)");
  const cal::OverRanks big = cal::over_ranks(world, gemm.seconds({'N', 'T', 1024, 1024, 1024, 1}, min_s));
  m.sustained = 2.0 * 1024 * 1024 * 1024 / big.mean;
  m.triad = cal::over_ranks(world, cal::triad_bandwidth(world, quick ? 32e6 : 128e6)).mean;
  m.launch = cal::over_ranks(world, cal::time_launch(world)).mean;
  say("sgemm 1024^3 " + num(m.sustained * 1e-9) + " GFLOP/s, triad " + num(m.triad * 1e-9) + " GB/s, launch " +
      num(m.launch * 1e6) + " us (means over ranks)");
}

// Links: inside a node (node_comm), then across nodes (cross_comm; collective over
// world even when unused); then the overlap of the gradient all-reduce with compute,
// at the deck's gradient size (capped at 64 MiB), over all ranks as a data-parallel
// run's group.
void measure_links(MPI_Comm world, MPI_Comm node_comm, MPI_Comm cross_comm, const Deck& deck, bool quick,
                   const Say& say, Measured& m) {
  const topology::NodeMembership& nm = m.nm;
  if (nm.local_size > 1) {
    m.intra = measure_tier(world, node_comm, quick);
    say("inside a node (" + std::to_string(nm.local_size) + " ranks): all-reduce " +
        num(m.intra.allreduce.back().second * 1e-9) + " GB/s, latency " + num(m.intra.latency * 1e6) + " us");
  }
  if (nm.nodes > 1) {
    m.inter = measure_tier(world, cross_comm, quick);
    say("across nodes (" + std::to_string(nm.nodes) + " ranks per group): all-reduce " +
        num(m.inter.allreduce.back().second * 1e-9) + " GB/s, latency " + num(m.inter.latency * 1e6) + " us");
  }
  if (m.ranks > 1) {
    const plan::ShardParams sp = plan::stage_params(plan_model(deck), plan::Layout{}, 0);
    m.overlap = cal::overlap_efficiency(world, std::min(4.0 * sp.total(), quick ? 4.0 * (1 << 20) : 64.0 * (1 << 20)));
    say("all-reduce hidden behind GEMMs: " + num(100 * m.overlap, 3) + "% (the planner's overlap efficiency)");
  }
}

}  // namespace

std::vector<plan::GemmCall> calibration_shapes(const Deck& deck, int ranks, double max_bytes) {
  const plan::ModelDesc md = plan_model(deck);
  const plan::Layout own = plan_layout(deck);
  plan::SoftwareDesc sw;
  sw.attention_block = kernels::kAttBlock;
  std::vector<plan::Layout> layouts = {own};
  for (int t = 1; t <= ranks; t *= 2) {
    if (md.heads % t || md.ffn % t || md.d_model % t) continue;  // (the vocabulary is padded to fit)
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
  int rank = 0;
  Measured m;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &m.ranks);
  plan::ClusterDesc base;
  // Every rank reads it and finds the same error: an input error (exit 2), not a fatal one.
  if (!opt.base.empty()) try {
      base = plan::load_cluster_file(opt.base);
    } catch (const plan::InputError& e) {
      throw InputError(e.what());
    }
  // Before minutes of measurement: --out must be a file the result may replace.
  if (const ReplaceTarget t = replace_target(opt.out, "calibrate --out"); !t.problem.empty())
    throw InputError(t.problem);
  if (!calibrate::host_memory_space() && opt.base.empty())
    throw InputError("calibrate: --base CLUSTER.yaml is needed on a device backend (" +
                     std::string(ExecSpace::name()) + "): it gives the device memory, which is not measured");
  const Say say(rank, os);

  m.nm = topology::node_membership(world, deck.parallel.ranks_per_node);
  const topology::NodeMembership& nm = m.nm;
  MPI_Comm node_comm, cross_comm;
  MPI_Comm_split(world, nm.node, nm.local_rank, &node_comm);
  MPI_Comm_split(world, nm.local_rank, nm.node, &cross_comm);
  say(std::to_string(m.ranks) + " rank(s), " + std::to_string(nm.nodes) + " node(s) of " +
      std::to_string(nm.local_size) + (nm.virtual_nodes ? " (virtual nodes, parallel.ranks_per_node)" : "") +
      ", backend " + ExecSpace::name());
  measure_compute(world, deck, opt.quick, say, m);
  m.memory_bound = calibrate::measure_memory_bound(world, deck, opt.quick, os);
  const calibrate::MemoryBoundRates& mbr = m.memory_bound;
  say("memory-bound kernels: elementwise " + num(mbr.elementwise * 1e-9) + " GB/s, softmax " +
      num(mbr.softmax * 1e-9) + " GB/s, optimizer " + num(mbr.optimizer * 1e-9) + " GB/s (planner byte counts), " +
      num(mbr.fixed_per_block * 1e6) + " us per block and micro-batch besides");
  measure_links(world, node_comm, cross_comm, deck, opt.quick, say, m);
  MPI_Comm_free(&node_comm);
  MPI_Comm_free(&cross_comm);

  std::string problem;
  if (rank == 0) problem = calibrate::write_cluster_file(calibrate::cluster_yaml(deck, opt, base, m), opt.out, os);
  int failed = problem.empty() ? 0 : 1;
  MPI_Bcast(&failed, 1, MPI_INT, 0, world);
  if (failed && rank == 0) write_stderr("mini5d: error: " + problem);
  if (failed) return 1;
  return 0;
}

}  // namespace mini5d::commands
