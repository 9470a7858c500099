// SPDX-License-Identifier: BSD-3-Clause
// `mini5d calibrate`'s memory-bound kernel rates: short single-rank training runs of the
// deck's model whose kernel profile is set against the planner's byte counts.
#include <algorithm>
#include <initializer_list>

#include "mini5d/commands/calibrate_parts.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/measure/sweeps.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/plan/cost/time_model.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/trainer.hpp"

namespace mini5d::commands::calibrate {

namespace cal = measure;
using train::Trainer;
using train::plan_layout;
using train::plan_model;

namespace {

// One probe: seconds and planner bytes per micro-batch, by kind.
struct KernelProbe {
  double elem_s = 0, soft_s = 0, opt_s = 0;  // opt: per step
  double elem_b = 0, soft_b = 0, opt_b = 0;
};

// The deck's model alone on one rank: no communication, recomputation, checkpoints or
// outputs, so that the profile holds the kernels and nothing else.
Deck probe_deck(const Deck& deck, int micro_batch) {
  Deck probe = deck;
  probe.parallel.d = probe.parallel.t = probe.parallel.p = probe.parallel.c = probe.parallel.e = 1;
  probe.parallel.zero = 0;
  probe.parallel.virtual_stages = 1;
  probe.train.micro_batch = micro_batch;
  probe.train.accumulation = 1;
  probe.train.recompute = Recompute::none;
  probe.checkpoint.every = 0;
  probe.checkpoint.resume.clear();
  probe.output.report.clear();
  probe.output.trace.clear();
  return probe;
}

// The bytes the planner counts for the probe's run, per micro-batch (optimizer: per step).
void planner_bytes(const plan::ModelDesc& md, const plan::Layout& pl, KernelProbe& r) {
  const plan::TrainDesc td{};
  plan::ClusterDesc cl;
  cl.software.attention_block = kernels::kAttBlock;
  const plan::TimeOptions o;
  const plan::MemoryBoundBytes b = plan::block_memory_bytes(md, td, cl, pl, o);
  const double L = double(md.layers);
  r.elem_b = L * (b.elementwise_fwd + b.elementwise_bwd) + plan::head_memory_bytes(md, td, pl, o);
  r.soft_b = L * (b.softmax_fwd + b.softmax_bwd);
  r.opt_b = plan::optimizer_bytes(md, td, pl, 0);
}

KernelProbe probe_kernels(MPI_Comm world, const Deck& deck, int micro_batch, bool quick, std::ostream& os) {
  Deck probe = probe_deck(deck, micro_batch);
  const plan::ModelDesc md = plan_model(probe);
  const plan::Layout pl = plan_layout(probe);
  // Steps for about a second (0.2 s quick) at a rough 50 GFLOP/s; two at least, since
  // the first step is not profiled (page faults, BLAS set-up).
  const double guess = plan::model_flops_per_step(md, double(micro_batch) * double(md.seq), pl.t) / 50e9;
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
    return cal::over_ranks(world, s / double(std::max(1L, tr.record().profiled_steps))).mean;
  };
  using F = prof::Family;
  KernelProbe r;
  r.elem_s = per_step({F::layernorm, F::gelu, F::bias, F::residual, F::embedding, F::cross_entropy});
  r.soft_s = per_step({F::attention});
  r.opt_s = per_step({F::optimizer, F::norm});
  planner_bytes(md, pl, r);
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

}  // namespace

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

}  // namespace mini5d::commands::calibrate
