// SPDX-License-Identifier: BSD-3-Clause
// Rank 0's console output (report.hpp): the start-up header, the progress lines, the
// checkpoint lines and the closing summary with the FOM line; and the FOM's two figures.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/rules/vocab_padding.hpp"
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/gemm_bf16_vendor.hpp"
#include "mini5d/parallel/cp/zigzag.hpp"
#include "mini5d/report/kernel_table.hpp"
#include "mini5d/report/memory_categories.hpp"
#include "mini5d/report/report.hpp"
#include "mini5d/report/step_events.hpp"
#include "mini5d/report/text_format.hpp"

namespace mini5d::report {

double median_tokens_per_s(const RunRecord& rec) {
  std::vector<double> v;
  const auto& h = rec.history;
  for (std::size_t i = h.size() > 1 ? 1 : 0; i < h.size(); ++i) v.push_back(h[i].tokens_per_s);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

bool fom_valid(const RunRecord& rec) {
  const auto& h = rec.history;
  if (h.empty() || rec.skipped_steps() > 0 || !rec.halted.empty()) return false;
  for (const auto& st : h)
    if (!std::isfinite(st.loss) || !std::isfinite(st.grad_norm)) return false;
  return h.back().loss < h.front().loss;
}

namespace {
// " (padded to 50304 rows for t=4)" where the vocabulary is padded, else nothing.
std::string padding_note(const RunRecord& rec) {
  const auto& d = rec.facts.deck;
  const int t = rec.facts.layout.t;
  const long long vp = padded_vocab(d.model.vocab, d.model.vocab_pad_to, t);
  if (vp == d.model.vocab) return "";
  return " (padded to " + std::to_string(vp) + " rows for t=" + std::to_string(t) + ")";
}
}  // namespace

void print_header(std::ostream& os, const Platform& pf, const RunRecord& rec) {
  const auto& d = rec.facts.deck;
  const auto& m = d.model;
  const auto& l = rec.facts.layout;
    os << "mini5d " << pf.mini5d_version << " (git " << pf.git_hash << ")\n"
     << "  Kokkos " << pf.kokkos << " [" << pf.backend << "], MPI: " << pf.mpi << "\n"
     << "  execution space " << pf.backend << " on " << pf.device << "\n"
     << "  MPI buffers: " << rec.facts.mpi_buffers << "\n"
     << "  HDF5 " << pf.hdf5 << ", hwloc " << pf.hwloc << ", " << pf.compiler << "\n"
     << "  ranks " << pf.ranks << ", layout DP(" << l.d << ")-PP(" << l.p << ")-CP(" << l.c << ")-EP(" << l.e
     << ")-TP(" << l.t << "), ZeRO " << l.zero
     << " over the dense-gradient group of " << rec.facts.zero_group << "\n"
     << "deck " << d.origin << "\n"
     << "  model: vocab " << m.vocab << padding_note(rec) << ", d_model " << m.d_model << ", layers " << m.layers
     << ", heads " << m.heads << (m.kv_head_count() != m.heads ? " (" + std::to_string(m.kv_heads) + " key/value)" : "")
     << ", seq " << m.seq << ", ffn " << m.ffn
     // The block's parts where they are not GPT-2's (LayerNorm, GELU, biases).
     << (m.norm != Norm::layernorm ? std::string(", ") + to_string(m.norm) : "")
     << (m.mlp != Mlp::gelu ? std::string(", ") + to_string(m.mlp) + " MLP" : "") << (!m.bias ? ", no biases" : "") << "\n"
     << "  parameters " << rec.facts.parameters << " (" << rec.facts.matmul_parameters << " in matrix products)\n"
     << "  train: " << d.train.steps << " steps x " << rec.facts.tokens_per_step << " tokens (micro_batch "
     << d.train.micro_batch << " x accumulation " << d.train.accumulation << " x seq " << m.seq
     << "), lr " << d.train.lr << " -> " << d.train.min_lr << ", warmup " << d.train.warmup << "\n"
     << "  data: " << rec.facts.data << "\n";
  if (d.train.precision == Precision::bf16)
    os << "  precision: bf16 (" << kBf16TypeName
       << ") weights, activations and messages; fp32 master weights, moments, main gradients and statistics;\n"
       << "    matrix products: "
       << (kernels::kHaveVendorBf16Gemm
               ? std::string(kernels::kVendorBf16GemmName ? kernels::kVendorBf16GemmName : "") +
                     " bf16 GEMM (bf16 operands, fp32 products and accumulation)\n"
               : std::string("bf16 operands widened to fp32 panels for the fp32 BLAS (no bf16 GEMM "
                             "is used in this build), fp32 accumulation\n"));
  if (const auto& floor = rec.facts.loss_floor)
    os << "  loss floor (exact, for this source and seq): " << fmt("%.6f", *floor) << " nats/token\n";
  os << "  model FLOPs/token = 6*N + 12*layers*d_model*seq = " << fmt("%.4g", rec.facts.flops_per_token)
     << " (N = " << rec.facts.matmul_parameters << " parameters in matrix products)\n";
  const auto want = rec.memory.predicted_state, got = rec.memory.measured_state;
  os << "  training state per rank (predicted / measured): weights " << mib(want.weights) << " / "
     << mib(got.weights) << ", gradients " << mib(want.gradients) << " / " << mib(got.gradients)
     << ", optimizer " << mib(want.optimizer) << " / " << mib(got.optimizer) << "\n";
  if (m.experts > 0) {
    const int P = l.e * l.t;
    os << "  mixture of experts: " << m.experts << " experts, top-" << m.top_k << ", every "
       << (m.moe_every == 1 ? std::string("block") : std::to_string(m.moe_every) + "th block") << ", "
       << (m.capacity_factor > 0 ? "capacity factor " + fmt("%g", m.capacity_factor) : std::string("dropless"))
       << ", aux loss coef " << fmt("%g", d.train.aux_loss_coef) << "; " << m.experts / P << " experts per rank over e x t = "
       << P << "; expert parameters per rank (predicted / measured) " << fmt("%.0f", rec.memory.predicted_expert_params)
       << " / " << fmt("%.0f", rec.memory.measured_expert_params) << " (" << mib(4 * rec.memory.measured_expert_params)
       << "), reduced over d x c = " << rec.facts.expert_zero_group << " ranks\n";
  }
  const auto acts_want = rec.memory.predicted_activations, acts_got = rec.memory.measured_activations;
  os << "  activations per rank (predicted / measured, TP " << l.t
     << (l.t > 1 ? (l.sp ? " with SP" : " without SP") : "")
     << (l.c > 1 ? ", CP " + std::to_string(l.c) + " ring attention" : std::string(", ") + to_string(d.model.attention) + " attention")
     << ", recompute "
     << to_string(d.train.recompute) << "): kept " << mib(acts_want.activations) << " / " << mib(acts_got.activations)
     << ", work buffers " << mib(acts_want.workspace) << " / " << mib(acts_got.workspace) << "\n";
  if (rec.facts.pipeline) {
    // Rank 0's stage: its chunks (virtual stages) and units.
    const auto& sp = *rec.facts.pipeline;
    os << "  pipeline: " << to_string(sp.kind) << ", p " << sp.p << " x " << sp.v << " chunks, m " << sp.m
       << " micro-batches, bubble formula " << fmt("%.3f", pp::formula_bubble(sp)) << "; blocks per virtual stage "
       << format_counts(rec.facts.split) << " (" << format_stage_layers(d.parallel.stage_layers)
       << "); stage 0 holds";
    for (const auto& c : rec.facts.chunks)
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

namespace {
// "dir/step-00000004.h5" -> "step-00000004".
std::string checkpoint_stem(const std::string& path) {
  std::string n = path.substr(path.find_last_of('/') + 1);
  if (n.size() > 3 && n.compare(n.size() - 3, 3, ".h5") == 0) n.resize(n.size() - 3);
  return printable(n);
}
}  // namespace

void print_checkpoint(std::ostream& os, const CheckpointEvent& e) {
  os << (e.kind == "save" ? "checkpoint saved: " : "resumed from ") << printable_path(e.path) << " at step " << e.step << " ("
     << e.reason << "), " << fmt("%.2f MB", e.bytes * 1e-6) << " in " << fmt("%.3f s", e.seconds) << ", "
     << fmt("%.1f MB/s", e.seconds > 0 ? e.bytes * 1e-6 / e.seconds : 0.0) << "\n";
  if (e.async) {
    os << "checkpoint " << checkpoint_stem(e.path) << ": snapshot " << fmt("%.3f s", e.snapshot_seconds)
       << " (blocking), written in " << fmt("%.3f s", e.seconds) << " in the background";
    if (!e.waited_at.empty()) os << "; waited " << fmt("%.3f s", e.wait_seconds) << " for it (" << e.waited_at << ")";
    os << "\n";
  }
  for (const auto& c : e.changes) os << c << "\n";
}

void print_restart(std::ostream& os, const RestartTimes& r) {
  os << "restart: start-up " << fmt("%.2f s", r.startup_s) << ", load " << fmt("%.2f s", r.load_s) << " ("
     << fmt("%.3f GB", r.load_bytes * 1e-9) << " at " << fmt("%.2f GB/s", r.load_s > 0 ? r.load_bytes * 1e-9 / r.load_s : 0.0)
     << "), first step " << fmt("%.2f s", r.first_step_s) << "\n";
}

namespace {
// The closing summary, one part per function, in the order it prints them.
void print_phases(std::ostream& os, const RunRecord& rec) {
  const auto& ph = rec.phases;
  const auto& sp = rec.spread;
  const double total = rec.total_seconds;
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
}

void print_communication(std::ostream& os, double total) {
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
}

void print_traffic(std::ostream& os, const RunRecord& rec) {
  if (const auto& traffic = rec.traffic; !traffic.empty()) {
    // The planner's bytes per axis (plan/cost/axis_traffic.hpp) beside the accounts' payloads.
    bool any = false;
    for (const auto& a : traffic) any = any || a.predicted > 0 || a.measured > 0 || a.mean_measured > 0;
    if (any) {
      os << "bytes per step by axis (planner / measured: rank 0, then the mean over ranks; worst rank's difference):\n";
      for (const auto& a : traffic) {
        if (a.mean_predicted == 0 && a.mean_measured == 0) continue;
        os << "  " << (a.axis + std::string(a.axis.size() < 12 ? 12 - a.axis.size() : 0, ' ')) << fmt("%12.0f", a.predicted) << " / " << fmt("%-12.0f", a.measured)
           << " mean " << fmt("%12.0f", a.mean_predicted) << " / " << fmt("%-12.0f", a.mean_measured) << " worst "
           << fmt("%.2g%%", 100 * a.worst)
           << (a.axis == "e" ? "  (a rank's share follows the router)" : "") << "\n";
      }
    }
  }
}

void print_memory(std::ostream& os, const RunRecord& rec) {
  os << "memory (rank 0, current / peak):";
  const auto& peaks = rec.peaks;
  // Checkpoint staging is listed only where some rank had any (checkpoint.async).
  auto listed = [&](mem::Category c) {
    if (c != mem::Category::checkpoint_staging) return true;
    for (const auto& r : peaks)
      if (r[int(c)] > 0) return true;
    return mem::ledger().of(c).peak > 0;
  };
  for (auto c : kCategories) {
    if (!listed(c)) continue;
    const auto& u = mem::ledger().of(c);
    os << " " << mem::to_string(c) << " " << mib(double(u.current)) << " / " << mib(double(u.peak)) << ";";
  }
  os << " total peak " << mib(double(mem::ledger().total().peak)) << "\n";
  if (peaks.size() > 1) {
    os << "memory peaks over " << peaks.size() << " ranks (min / max):";
    for (auto c : kCategories) {
      if (!listed(c)) continue;
      double lo = peaks[0][int(c)], hi = lo;
      for (const auto& r : peaks) lo = std::min(lo, r[int(c)]), hi = std::max(hi, r[int(c)]);
      os << " " << mem::to_string(c) << " " << mib(lo) << " / " << mib(hi) << ";";
    }
    os << "\n";
  }
}

void print_experts(std::ostream& os, const RunRecord& rec) {
  if (!rec.history.empty() && !rec.history.back().expert_load.empty()) {
    // Loads summed over the run; imbalance (max / mean load) per step.
    const auto& h = rec.history;
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
}

void print_pipeline(std::ostream& os, const RunRecord& rec) {
  if (const auto& ps = rec.pipeline_ranks; !ps.empty()) {
    // One line per pipeline stage (the ranks at d = c = e = t = 0).
    const auto& l = rec.facts.layout;
    os << "pipeline (" << to_string(l.schedule) << ", p=" << l.p << ", v=" << l.virtual_stages << ", m="
       << l.accumulation << "; measured / predicted): bubble = idle share of the step (mean after step 1) / "
       << "replay of the schedule with modelled stage costs (even-stage formula); micro-batches in flight / planner; "
       << "activations / planner\n";
    for (const auto& r : ps) {
      if (r.coords[0] || r.coords[2] || r.coords[3] || r.coords[4]) continue;
      os << "  stage " << r.coords[1] << " (rank " << r.rank << "): bubble " << fmt("%.3f", r.bubble) << " / "
         << fmt("%.3f", r.predicted) << " (" << fmt("%.3f", r.formula) << "), in flight " << fmt("%.2f", r.in_flight) << " / "
         << fmt("%.2f", r.predicted_in_flight) << ", activations " << mib(r.activations) << " / "
         << mib(r.predicted_activations) << "\n";
    }
  }
}

void print_ring(std::ostream& os, const RunRecord& rec) {
  if (const auto& ring = rec.ring; !ring.empty()) {
    // Ring attention's balance: blocks per layer and block compute time over the ranks.
    double blo = ring[0][0], bhi = blo, slo = ring[0][1], shi = slo, ssum = 0;
    for (const auto& r : ring) {
      blo = std::min(blo, r[0]), bhi = std::max(bhi, r[0]);
      slo = std::min(slo, r[1]), shi = std::max(shi, r[1]), ssum += r[1];
    }
    const double mean = ssum / double(ring.size());
    const int c = rec.facts.layout.c;
    os << "ring attention (c=" << c << ", " << cp::split_from_env(c).name()
       << " split): blocks per layer per rank " << fmt("%.0f", blo) << ".." << fmt("%.0f", bhi)
       << ", block compute per rank " << fmt("%.3f", slo) << ".." << fmt("%.3f s", shi) << " (max / mean - 1 = "
       << fmt("%.1f%%", mean > 0 ? 100.0 * (shi / mean - 1) : 0.0) << ")\n";
  }
}
}  // namespace

void print_summary(std::ostream& os, const RunRecord& rec) {
  print_phases(os, rec);
  print_communication(os, rec.total_seconds);
  print_traffic(os, rec);
  print_memory(os, rec);
  print_experts(os, rec);
  print_pipeline(os, rec);
  print_ring(os, rec);
  print_kernel_table(os, kernel_table(rec));
  print_step_events(os, step_events(rec));
  if (!rec.history.empty()) os << "final loss " << fmt("%.6f", rec.history.back().loss) << "\n";
  const double tps = median_tokens_per_s(rec);
  os << "FOM mini5d tokens_per_s=" << fmt("%.2f", tps) << " model_flops_per_s="
     << fmt("%.4e", tps * rec.facts.flops_per_token) << " valid=" << (fom_valid(rec) ? 1 : 0) << "\n";
}

}  // namespace mini5d::report
