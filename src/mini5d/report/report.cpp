// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/report/report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/comm/device_mpi.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/json_text.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/report/kernel_table.hpp"
#include "mini5d/parallel/cp/zigzag.hpp"

namespace mini5d::report {

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string jstr(const std::string& s) { return json_quote(s); }
std::string jnum(double v) { return std::isfinite(v) ? fmt("%.9g", v) : "null"; }
std::string mib(double bytes) { return fmt("%.2f MiB", bytes / (1024.0 * 1024.0)); }

const mem::Category kCategories[] = {mem::Category::weights,      mem::Category::gradients,
                                     mem::Category::optimizer,    mem::Category::activations,
                                     mem::Category::comm_buffers, mem::Category::workspace};
}  // namespace

double median_tokens_per_s(const Trainer& tr) {
  std::vector<double> v;
  const auto& h = tr.history();
  for (std::size_t i = h.size() > 1 ? 1 : 0; i < h.size(); ++i) v.push_back(h[i].tokens_per_s);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

bool fom_valid(const Trainer& tr) {
  const auto& h = tr.history();
  if (h.empty() || tr.skipped_steps() > 0 || !tr.halt_reason().empty()) return false;
  for (const auto& st : h)
    if (!std::isfinite(st.loss) || !std::isfinite(st.grad_norm)) return false;
  return h.back().loss < h.front().loss;
}

void print_header(std::ostream& os, const Platform& pf, const Trainer& tr) {
  const auto& d = tr.deck();
  const auto& m = d.model;
  const auto& lay = tr.model().layout();
  os << "mini5d " << pf.mini5d_version << " (git " << pf.git_hash << ")\n"
     << "  Kokkos " << pf.kokkos << " [" << pf.backend << "], MPI: " << pf.mpi << "\n"
     << "  execution space " << pf.backend << " on " << pf.device << "\n"
     << "  MPI buffers: " << comm::describe_mpi_memory(tr.deck().parallel.gpu_aware_mpi) << "\n"
     << "  HDF5 " << pf.hdf5 << ", hwloc " << pf.hwloc << ", " << pf.compiler << "\n"
     << "  ranks " << pf.ranks << ", layout DP(" << d.parallel.d << ")-PP(" << d.parallel.p << ")-CP("
     << d.parallel.c << ")-EP(" << d.parallel.e << ")-TP(" << d.parallel.t << "), ZeRO " << d.parallel.zero
     << " over the dense-gradient group of " << tr.optimizer().partition().group_size() << "\n"
     << "deck " << d.origin << "\n"
     << "  model: vocab " << m.vocab << ", d_model " << m.d_model << ", layers " << m.layers << ", heads "
     << m.heads << ", seq " << m.seq << ", ffn " << m.ffn << "\n"
     << "  parameters " << lay.total() << " (" << lay.matmul_params() << " in matrix products)\n"
     << "  train: " << d.train.steps << " steps x " << tr.tokens_per_step() << " tokens (micro_batch "
     << d.train.micro_batch << " x accumulation " << d.train.accumulation << " x seq " << m.seq
     << "), lr " << d.train.lr << " -> " << d.train.min_lr << ", warmup " << d.train.warmup << "\n"
     << "  data: " << tr.source().describe() << "\n";
  if (auto floor = tr.source().loss_floor(m.seq))
    os << "  loss floor (exact, for this source and seq): " << fmt("%.6f", *floor) << " nats/token\n";
  os << "  model FLOPs/token = 6*N + 12*layers*d_model*seq = " << fmt("%.4g", tr.flops_per_token())
     << " (N = " << lay.matmul_params() << " parameters in matrix products)\n";
  const auto want = tr.predicted_state_memory(), got = tr.measured_state_memory();
  os << "  training state per rank (predicted / measured): weights " << mib(want.weights) << " / "
     << mib(got.weights) << ", gradients " << mib(want.gradients) << " / " << mib(got.gradients)
     << ", optimizer " << mib(want.optimizer) << " / " << mib(got.optimizer) << "\n";
  if (m.experts > 0) {
    const int P = d.parallel.e * d.parallel.t;
    os << "  mixture of experts: " << m.experts << " experts, top-" << m.top_k << ", every "
       << (m.moe_every == 1 ? std::string("block") : std::to_string(m.moe_every) + "th block") << ", "
       << (m.capacity_factor > 0 ? "capacity factor " + fmt("%g", m.capacity_factor) : std::string("dropless"))
       << ", aux loss coef " << fmt("%g", d.train.aux_loss_coef) << "; " << m.experts / P << " experts per rank over e x t = "
       << P << "; expert parameters per rank (predicted / measured) " << fmt("%.0f", tr.predicted_expert_params())
       << " / " << fmt("%.0f", tr.measured_expert_params()) << " (" << mib(4 * tr.measured_expert_params())
       << "), reduced over d x c = " << tr.optimizer().partition().expert_group_size() << " ranks\n";
  }
  const auto acts_want = tr.predicted_activation_memory(), acts_got = tr.measured_activation_memory();
  os << "  activations per rank (predicted / measured, TP " << d.parallel.t
     << (d.parallel.t > 1 ? (d.parallel.sp == "true" ? " with SP" : " without SP") : "")
     << (d.parallel.c > 1 ? ", CP " + std::to_string(d.parallel.c) + " ring attention" : "") << ", recompute "
     << d.train.recompute << "): kept " << mib(acts_want.activations) << " / " << mib(acts_got.activations)
     << ", work buffers " << mib(acts_want.workspace) << " / " << mib(acts_got.workspace) << "\n";
  if (const Pipeline* pl = tr.pipeline()) {
    // Rank 0's stage: its chunks (virtual stages) and units.
    const auto& sp = pl->spec();
    os << "  pipeline: " << pp::to_string(sp.kind) << ", p " << sp.p << " x " << sp.v << " chunks, m " << sp.m
       << " micro-batches, bubble formula " << fmt("%.3f", pp::formula_bubble(sp)) << "; stage 0 holds";
    for (const auto& c : tr.model().chunks())
      os << " [" << (c.embedding ? "embeddings, " : "") << "blocks " << c.first_block << ".."
         << c.first_block + c.blocks - 1 << (c.head ? ", head" : "") << "]";
    os << "\n";
  }
}

void print_step(std::ostream& os, const StepStats& st, long total_steps) {
  if (!st.note.empty()) {  // skipped, or the step that stopped the run
    os << "step " << st.step << "/" << total_steps << "  " << st.note << "\n";
    return;
  }
  os << "step " << st.step << "/" << total_steps << "  loss " << fmt("%.6f", st.loss) << "  lr "
     << fmt("%.3e", st.lr) << "  grad_norm " << fmt("%.4f", st.grad_norm) << "  "
     << fmt("%.1f", st.seconds * 1e3) << " ms  " << fmt("%.0f", st.tokens_per_s) << " tok/s  "
     << fmt("%.2f", st.flops_per_s * 1e-9) << " GFLOP/s  comm exposed "
     << fmt("%.1f%%", st.seconds > 0 ? 100.0 * st.comm_exposed / st.seconds : 0.0);
  // Per axis, when there is more than one to tell apart.
  if (st.exposed_by_axis.size() > 1) {
    os << " (";
    bool first = true;
    for (const auto& [axis, e] : st.exposed_by_axis) {
      os << (first ? "" : ", ") << axis << " " << fmt("%.1f%%", st.seconds > 0 ? 100.0 * e / st.seconds : 0.0);
      first = false;
    }
    os << ")";
  }
  if (!st.expert_load.empty())
    os << "  moe aux " << fmt("%.4f", st.aux_loss) << " imb " << fmt("%.2f", st.imbalance)
       << (st.dropped > 0 ? " drop " + fmt("%.0f", st.dropped) : std::string());
  os << "  mem "
     << fmt("%.1f MiB", double(mem::ledger().total().peak) / (1024.0 * 1024.0)) << "\n";
}

void print_checkpoint(std::ostream& os, const CheckpointEvent& e) {
  os << (e.kind == "save" ? "checkpoint saved: " : "resumed from ") << e.path << " at step " << e.step << " ("
     << e.reason << "), " << fmt("%.2f MB", e.bytes * 1e-6) << " in " << fmt("%.3f s", e.seconds) << ", "
     << fmt("%.1f MB/s", e.seconds > 0 ? e.bytes * 1e-6 / e.seconds : 0.0) << "\n";
}

void print_summary(std::ostream& os, const Trainer& tr) {
  const auto& ph = tr.phases();
  const auto& sp = tr.phase_spread();
  const double total = tr.total_seconds();
  auto line = [&](const char* name, double PhaseTimes::*f) {
    const double s = ph.*f;
    os << "  " << name << fmt("%10.3f s", s) << fmt("  %5.1f%%", total > 0 ? 100.0 * s / total : 0.0)
       << fmt("   %8.3f", sp.min.*f) << fmt(" %8.3f", sp.mean.*f) << fmt(" %8.3f", sp.max.*f) << "\n";
  };
  os << "phase breakdown (rank 0; then min / mean / max over ranks, s):\n";
  line("data     ", &PhaseTimes::data);
  line("forward  ", &PhaseTimes::forward);
  line("backward ", &PhaseTimes::backward);
  line("reduce   ", &PhaseTimes::reduce);
  line("optimizer", &PhaseTimes::optimizer);
  os << "  total    " << fmt("%10.3f s", total) << "  100.0%\n";
  const auto& axes = comm::accounts().axes();
  if (!axes.empty()) {
    // In flight: post to observed completion. Exposed: time inside MPI calls (post,
    // tests, wait) and staging; without asynchronous progress that is where MPI works.
    os << "communication (rank 0; in flight = post to completion, exposed = time in MPI calls and staging):\n";
    for (const auto& [name, a] : axes)
      os << "  " << name << ": " << a.total.calls << " calls, " << fmt("%.3f MB", a.total.bytes * 1e-6) << ", "
         << fmt("%.3f s", a.total.seconds) << " in flight, " << fmt("%.3f s", a.total.exposed) << " exposed ("
         << fmt("%.1f%%", total > 0 ? 100.0 * a.total.exposed / total : 0.0) << " of the run)\n";
  }
  if (const auto& traffic = tr.traffic_summary(); !traffic.empty()) {
    // The planner's bytes per axis (plan/axis_traffic.hpp) beside the accounts' payloads.
    bool any = false;
    for (const auto& a : traffic) any = any || a.predicted > 0 || a.measured > 0 || a.mean_measured > 0;
    if (any) {
      os << "bytes per step by axis (planner / measured: rank 0, then the mean over ranks; worst rank's difference):\n";
      for (const auto& a : traffic) {
        if (a.mean_predicted == 0 && a.mean_measured == 0) continue;
        os << "  " << (a.axis + std::string(a.axis.size() < 12 ? 12 - a.axis.size() : 0, ' ')) << fmt("%12.0f", a.predicted) << " / " << fmt("%-12.0f", a.measured)
           << " mean " << fmt("%12.0f", a.mean_predicted) << " / " << fmt("%-12.0f", a.mean_measured) << " worst "
           << fmt("%.2g%%", 100 * a.worst)
           << (a.axis == "e" ? "  (a rank's share follows the router)" : "")
           << (a.upper_bound ? "  (ZeRO 3 gathers: the planner's figure is a bound)" : "") << "\n";
      }
    }
  }
  os << "memory (rank 0, current / peak):";
  for (auto c : kCategories) {
    const auto& u = mem::ledger().of(c);
    os << " " << mem::to_string(c) << " " << mib(double(u.current)) << " / " << mib(double(u.peak)) << ";";
  }
  os << " total peak " << mib(double(mem::ledger().total().peak)) << "\n";
  const auto& peaks = tr.peak_memory_by_rank();
  if (peaks.size() > 1) {
    os << "memory peaks over " << peaks.size() << " ranks (min / max):";
    for (auto c : kCategories) {
      double lo = peaks[0][int(c)], hi = lo;
      for (const auto& r : peaks) lo = std::min(lo, r[int(c)]), hi = std::max(hi, r[int(c)]);
      os << " " << mem::to_string(c) << " " << mib(lo) << " / " << mib(hi) << ";";
    }
    os << "\n";
  }
  if (!tr.history().empty() && !tr.history().back().expert_load.empty()) {
    // Loads summed over the run; imbalance (max / mean load) per step.
    const auto& h = tr.history();
    std::vector<double> load(h.back().expert_load.size(), 0.0);
    double imb_sum = 0, imb_max = 0, dropped = 0;
    for (const auto& st : h) {
      for (std::size_t e = 0; e < load.size() && e < st.expert_load.size(); ++e) load[e] += st.expert_load[e];
      imb_sum += st.imbalance;
      imb_max = std::max(imb_max, st.imbalance);
      dropped += st.dropped;
    }
    os << "mixture of experts: tokens per expert over the run [";
    for (std::size_t e = 0; e < load.size(); ++e) os << (e ? " " : "") << fmt("%.0f", load[e]);
    os << "], imbalance (max/mean) mean " << fmt("%.3f", imb_sum / double(h.size())) << " worst " << fmt("%.3f", imb_max)
       << ", dropped " << fmt("%.0f", dropped) << ", final aux loss " << fmt("%.6f", h.back().aux_loss) << "\n";
  }
  if (const auto& ps = tr.pipeline_summary(); !ps.empty()) {
    // One line per pipeline stage (the ranks at d = c = e = t = 0).
    const auto& pl = tr.deck().parallel;
    os << "pipeline (" << pl.schedule << ", p=" << pl.p << ", v=" << pl.virtual_stages << ", m="
       << tr.deck().train.accumulation << "; measured / predicted): bubble = idle share of the step (mean after step 1) / "
       << "formula; micro-batches in flight / planner; activations / planner\n";
    for (const auto& r : ps) {
      if (r.coords[0] || r.coords[2] || r.coords[3] || r.coords[4]) continue;
      os << "  stage " << r.coords[1] << " (rank " << r.rank << "): bubble " << fmt("%.3f", r.bubble) << " / "
         << fmt("%.3f", r.formula) << ", in flight " << fmt("%.2f", r.in_flight) << " / "
         << fmt("%.2f", r.predicted_in_flight) << ", activations " << mib(r.activations) << " / "
         << mib(r.predicted_activations) << "\n";
    }
  }
  if (const auto& ring = tr.ring_by_rank(); !ring.empty()) {
    // Ring attention's balance: blocks per layer and block compute time over the ranks.
    double blo = ring[0][0], bhi = blo, slo = ring[0][1], shi = slo, ssum = 0;
    for (const auto& r : ring) {
      blo = std::min(blo, r[0]), bhi = std::max(bhi, r[0]);
      slo = std::min(slo, r[1]), shi = std::max(shi, r[1]), ssum += r[1];
    }
    const double mean = ssum / double(ring.size());
    os << "ring attention (c=" << tr.deck().parallel.c << ", " << cp::split_from_env(tr.deck().parallel.c).name()
       << " split): blocks per layer per rank " << fmt("%.0f", blo) << ".." << fmt("%.0f", bhi)
       << ", block compute per rank " << fmt("%.3f", slo) << ".." << fmt("%.3f s", shi) << " (max / mean - 1 = "
       << fmt("%.1f%%", mean > 0 ? 100.0 * (shi / mean - 1) : 0.0) << ")\n";
  }
  print_kernel_table(os, kernel_table(tr));
  if (!tr.history().empty()) os << "final loss " << fmt("%.6f", tr.history().back().loss) << "\n";
  const double tps = median_tokens_per_s(tr);
  os << "FOM mini5d tokens_per_s=" << fmt("%.2f", tps) << " model_flops_per_s="
     << fmt("%.4e", tps * tr.flops_per_token()) << " valid=" << (fom_valid(tr) ? 1 : 0) << "\n";
}

std::string report_json(const Platform& pf, const Trainer& tr) {
  const auto& ph = tr.phases();
  const auto& lay = tr.model().layout();
  const double tps = median_tokens_per_s(tr);
  std::ostringstream o;
  o << "{\n  \"schema_version\": " << kReportSchemaVersion << ",\n  \"app\": \"mini5d\",\n"
    << "  \"build\": {\"version\": " << jstr(pf.mini5d_version) << ", \"git\": " << jstr(pf.git_hash)
    << ", \"compiler\": " << jstr(pf.compiler) << "},\n"
    << "  \"platform\": {\"kokkos\": " << jstr(pf.kokkos) << ", \"backend\": " << jstr(pf.backend)
    << ", \"mpi\": " << jstr(pf.mpi) << ", \"hdf5\": " << jstr(pf.hdf5) << ", \"hwloc\": " << jstr(pf.hwloc)
    << ", \"ranks\": " << pf.ranks << "},\n"
    << "  \"deck\": " << tr.deck().to_json() << ",\n"
    << "  \"model\": {\"parameters\": " << lay.total() << ", \"matmul_parameters\": " << lay.matmul_params()
    << ", \"flops_per_token\": " << jnum(tr.flops_per_token())
    << ", \"flops_formula\": \"6*N + 12*layers*d_model*seq, N = parameters in matrix products\"},\n"
    << "  \"data\": {\"source\": " << jstr(tr.source().describe()) << ", \"loss_floor\": ";
  if (auto f = tr.source().loss_floor(tr.deck().model.seq)) o << jnum(*f); else o << "null";
  o << "},\n  \"fom\": {\"tokens_per_s\": " << jnum(tps) << ", \"model_flops_per_s\": "
    << jnum(tps * tr.flops_per_token()) << ", \"statistic\": \"median over steps 2..n\", \"valid\": "
    << (fom_valid(tr) ? "true" : "false") << "},\n"
    << "  \"timings_s\": {\"total\": " << jnum(tr.total_seconds()) << ", \"data\": " << jnum(ph.data)
    << ", \"forward\": " << jnum(ph.forward) << ", \"backward\": " << jnum(ph.backward)
    << ", \"reduce\": " << jnum(ph.reduce) << ", \"optimizer\": " << jnum(ph.optimizer) << "},\n"
    << "  \"grid\": " << jstr(tr.grid().describe()) << ",\n"
    << "  \"kernels\": " << kernel_table_json(kernel_table(tr)) << ",\n";
  if (const auto& ring = tr.ring_by_rank(); !ring.empty()) {
    o << "  \"context\": {\"c\": " << tr.deck().parallel.c << ", \"split\": "
      << jstr(cp::split_from_env(tr.deck().parallel.c).name()) << ", \"blocks_per_layer_by_rank\": [";
    for (std::size_t r = 0; r < ring.size(); ++r) o << (r ? ", " : "") << jnum(ring[r][0]);
    o << "], \"block_compute_seconds_by_rank\": [";
    for (std::size_t r = 0; r < ring.size(); ++r) o << (r ? ", " : "") << jnum(ring[r][1]);
    o << "]},\n";
  }
  o << "  \"communication\": {";
  bool first_axis = true;
  for (const auto& [name, a] : comm::accounts().axes()) {
    o << (first_axis ? "" : ", ") << jstr(name) << ": {\"calls\": " << a.total.calls << ", \"bytes\": "
      << jnum(a.total.bytes) << ", \"seconds\": " << jnum(a.total.seconds) << ", \"exposed_seconds\": "
      << jnum(a.total.exposed) << ", \"by_traffic\": {";
    bool first = true;
    for (const auto& [kind, t] : a.by_traffic) {
      o << (first ? "" : ", ") << jstr(kind) << ": {\"calls\": " << t.calls << ", \"bytes\": " << jnum(t.bytes)
        << ", \"seconds\": " << jnum(t.seconds) << ", \"exposed_seconds\": " << jnum(t.exposed) << "}";
      first = false;
    }
    o << "}}";
    first_axis = false;
  }
  o << "},\n  \"bytes_per_step\": {";
  for (std::size_t i = 0; i < tr.traffic_summary().size(); ++i) {
    const auto& a = tr.traffic_summary()[i];
    o << (i ? ", " : "") << jstr(a.axis) << ": {\"predicted\": " << jnum(a.predicted) << ", \"measured\": "
      << jnum(a.measured) << ", \"mean_predicted\": " << jnum(a.mean_predicted) << ", \"mean_measured\": "
      << jnum(a.mean_measured) << ", \"worst_relative_difference\": " << jnum(a.worst)
      << ", \"upper_bound\": " << (a.upper_bound ? "true" : "false") << "}";
  }
  const auto want = tr.predicted_state_memory(), got = tr.measured_state_memory();
  o << "},\n  \"memory_bytes\": {";
  for (auto c : kCategories) {
    const auto& u = mem::ledger().of(c);
    o << jstr(mem::to_string(c)) << ": {\"current\": " << u.current << ", \"peak\": " << u.peak << "}, ";
  }
  o << "\"total_peak\": " << mem::ledger().total().peak << ",\n    \"peak_by_rank\": [";
  for (std::size_t r = 0; r < tr.peak_memory_by_rank().size(); ++r) {
    o << (r ? ", " : "") << "{";
    for (int c = 0; c < mem::kCategories; ++c)
      o << (c ? ", " : "") << jstr(mem::to_string(mem::Category(c))) << ": " << jnum(tr.peak_memory_by_rank()[r][c]);
    o << "}";
  }
  o << "],\n    \"state_predicted\": {\"weights\": "
    << jnum(want.weights) << ", \"gradients\": " << jnum(want.gradients) << ", \"optimizer\": " << jnum(want.optimizer)
    << "}, \"state_measured\": {\"weights\": " << jnum(got.weights) << ", \"gradients\": " << jnum(got.gradients)
    << ", \"optimizer\": " << jnum(got.optimizer) << "},\n    \"activations_predicted\": {\"kept\": "
    << jnum(tr.predicted_activation_memory().activations) << ", \"workspace\": "
    << jnum(tr.predicted_activation_memory().workspace) << "}, \"activations_measured\": {\"kept\": "
    << jnum(tr.measured_activation_memory().activations) << ", \"workspace\": "
    << jnum(tr.measured_activation_memory().workspace) << "}, \"expert_params_predicted\": "
    << jnum(tr.predicted_expert_params()) << ", \"expert_params_measured\": " << jnum(tr.measured_expert_params())
    << "},\n"
    << "  \"pipeline\": [";
  // Every rank's pipeline figures (empty without a pipeline): measured beside predicted.
  for (std::size_t i = 0; i < tr.pipeline_summary().size(); ++i) {
    const auto& r = tr.pipeline_summary()[i];
    o << (i ? ", " : "") << "{\"rank\": " << r.rank << ", \"stage\": " << r.coords[1] << ", \"bubble\": "
      << jnum(r.bubble) << ", \"bubble_formula\": " << jnum(r.formula) << ", \"in_flight\": " << jnum(r.in_flight)
      << ", \"in_flight_predicted\": " << jnum(r.predicted_in_flight) << ", \"activations\": "
      << jnum(r.activations) << ", \"activations_predicted\": " << jnum(r.predicted_activations) << "}";
  }
  o << "],\n  \"tokens_per_step\": " << tr.tokens_per_step() << ",\n  \"run_id\": " << jstr(tr.run_id())
    << ",\n  \"valid\": " << (fom_valid(tr) ? "true" : "false") << ", \"skipped_steps\": " << tr.skipped_steps()
    << ", \"halted\": " << (tr.halt_reason().empty() ? std::string("null") : jstr(tr.halt_reason()))
    << ",\n  \"stopped_by_signal\": " << tr.stopped_by()
    << ",\n  \"checkpoints\": [";
  for (std::size_t i = 0; i < tr.checkpoints().size(); ++i) {
    const auto& e = tr.checkpoints()[i];
    o << (i ? ", " : "") << "{\"kind\": " << jstr(e.kind) << ", \"path\": " << jstr(e.path) << ", \"reason\": "
      << jstr(e.reason) << ", \"step\": " << e.step << ", \"bytes\": " << jnum(e.bytes) << ", \"seconds\": "
      << jnum(e.seconds) << "}";
  }
  o << "],\n  \"steps\": [";
  const auto& h = tr.history();
  for (std::size_t i = 0; i < h.size(); ++i) {
    o << (i ? ",\n    " : "\n    ") << "{\"step\": " << h[i].step << ", \"loss\": " << jnum(h[i].loss)
      << ", \"lr\": " << jnum(h[i].lr) << ", \"grad_norm\": " << jnum(h[i].grad_norm)
      << ", \"seconds\": " << jnum(h[i].seconds) << ", \"tokens_per_s\": " << jnum(h[i].tokens_per_s)
      << ", \"comm_seconds\": " << jnum(h[i].comm_seconds) << ", \"comm_exposed_seconds\": " << jnum(h[i].comm_exposed) << ", \"exposed_by_axis\": {";
    bool first_axis_of_step = true;
    for (const auto& [axis, e] : h[i].exposed_by_axis) {
      o << (first_axis_of_step ? "" : ", ") << jstr(axis) << ": " << jnum(e);
      first_axis_of_step = false;
    }
    o << "}, \"skipped\": " << (h[i].skipped ? "true" : "false");
    if (!h[i].expert_load.empty()) {
      o << ", \"moe\": {\"aux_loss\": " << jnum(h[i].aux_loss) << ", \"imbalance\": " << jnum(h[i].imbalance)
        << ", \"dropped\": " << jnum(h[i].dropped) << ", \"expert_load\": [";
      for (std::size_t e = 0; e < h[i].expert_load.size(); ++e) o << (e ? ", " : "") << jnum(h[i].expert_load[e]);
      o << "]}";
    }
    o << "}";
  }
  o << "\n  ]\n}\n";
  return o.str();
}

void write_report(const std::string& path, const Platform& pf, const Trainer& tr) {
  // Through "<path>.tmp" and a rename, every write and the close checked: a full disk
  // leaves the previous report as it was, never a truncated one.
  const std::string text = report_json(pf, tr), tmp = path + ".tmp";
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": cannot write the report (output.report): " + what + ": " + std::strerror(err));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create " + tmp, errno);
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      fail("writing " + tmp, err);
    }
    done += std::size_t(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("syncing " + tmp, err);
  }
  if (::close(fd) != 0) fail("closing " + tmp, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("renaming " + tmp, errno);
}

}  // namespace mini5d::report
