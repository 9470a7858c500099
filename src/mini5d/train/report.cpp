// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/report.hpp"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "mini5d/core/error.hpp"

namespace mini5d::train {

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {  // control characters: \u00XX
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      o += buf;
      continue;
    }
    o += c;
  }
  return o + "\"";
}
std::string jnum(double v) { return std::isfinite(v) ? fmt("%.9g", v) : "null"; }
}  // namespace

double median_tokens_per_s(const Trainer& tr) {
  std::vector<double> v;
  const auto& h = tr.history();
  for (std::size_t i = h.size() > 1 ? 1 : 0; i < h.size(); ++i) v.push_back(h[i].tokens_per_s);
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void print_header(std::ostream& os, const Platform& pf, const Trainer& tr) {
  const auto& d = tr.deck();
  const auto& m = d.model;
  const auto& lay = tr.model().layout();
  os << "mini5d " << pf.mini5d_version << " (git " << pf.git_hash << ")\n"
     << "  Kokkos " << pf.kokkos << " [" << pf.backend << "], MPI: " << pf.mpi << "\n"
     << "  HDF5 " << pf.hdf5 << ", hwloc " << pf.hwloc << ", " << pf.compiler << "\n"
     << "  ranks " << pf.ranks << ", layout DP(" << d.parallel.d << ")-PP(" << d.parallel.p << ")-CP("
     << d.parallel.c << ")-EP(" << d.parallel.e << ")-TP(" << d.parallel.t << "), ZeRO " << d.parallel.zero << "\n"
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
}

void print_step(std::ostream& os, const StepStats& st, long total_steps) {
  os << "step " << st.step << "/" << total_steps << "  loss " << fmt("%.6f", st.loss) << "  lr "
     << fmt("%.3e", st.lr) << "  grad_norm " << fmt("%.4f", st.grad_norm) << "  "
     << fmt("%.1f", st.seconds * 1e3) << " ms  " << fmt("%.0f", st.tokens_per_s) << " tok/s  "
     << fmt("%.2f", st.flops_per_s * 1e-9) << " GFLOP/s\n";
}

void print_summary(std::ostream& os, const Trainer& tr) {
  const auto& ph = tr.phases();
  const double total = tr.total_seconds();
  auto line = [&](const char* name, double s) {
    os << "  " << name << fmt("%10.3f s", s) << fmt("  %5.1f%%", total > 0 ? 100.0 * s / total : 0.0) << "\n";
  };
  os << "phase breakdown (rank 0):\n";
  line("data     ", ph.data);
  line("forward  ", ph.forward);
  line("backward ", ph.backward);
  line("optimizer", ph.optimizer);
  line("total    ", total);
  if (!tr.history().empty()) os << "final loss " << fmt("%.6f", tr.history().back().loss) << "\n";
  const double tps = median_tokens_per_s(tr);
  os << "FOM mini5d tokens_per_s=" << fmt("%.2f", tps) << " model_flops_per_s="
     << fmt("%.4e", tps * tr.flops_per_token()) << " valid=" << (tr.history().empty() ? 0 : 1) << "\n";
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
    << jnum(tps * tr.flops_per_token()) << ", \"statistic\": \"median over steps 2..n\"},\n"
    << "  \"timings_s\": {\"total\": " << jnum(tr.total_seconds()) << ", \"data\": " << jnum(ph.data)
    << ", \"forward\": " << jnum(ph.forward) << ", \"backward\": " << jnum(ph.backward)
    << ", \"optimizer\": " << jnum(ph.optimizer) << "},\n"
    << "  \"tokens_per_step\": " << tr.tokens_per_step() << ",\n  \"steps\": [";
  const auto& h = tr.history();
  for (std::size_t i = 0; i < h.size(); ++i)
    o << (i ? ",\n    " : "\n    ") << "{\"step\": " << h[i].step << ", \"loss\": " << jnum(h[i].loss)
      << ", \"lr\": " << jnum(h[i].lr) << ", \"grad_norm\": " << jnum(h[i].grad_norm)
      << ", \"seconds\": " << jnum(h[i].seconds) << ", \"tokens_per_s\": " << jnum(h[i].tokens_per_s) << "}";
  o << "\n  ]\n}\n";
  return o.str();
}

void write_report(const std::string& path, const Platform& pf, const Trainer& tr) {
  std::ofstream out(path);
  if (!out) throw InputError(path + ": cannot write the report (output.report): " + std::strerror(errno));
  out << report_json(pf, tr);
}

}  // namespace mini5d::train
