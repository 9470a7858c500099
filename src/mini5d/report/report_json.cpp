// SPDX-License-Identifier: BSD-3-Clause
// The versioned JSON record of a run (report.hpp), one function per part of the
// document, in the document's order; and its atomic write.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/core/fresh_file.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/core/replace_target.hpp"
#include "mini5d/parallel/cp/zigzag.hpp"
#include "mini5d/report/kernel_table.hpp"
#include "mini5d/report/memory_categories.hpp"
#include "mini5d/report/report.hpp"
#include "mini5d/report/step_events.hpp"
#include "mini5d/report/text_format.hpp"

namespace mini5d::report {

namespace {
// Build, platform, deck, model, data, FOM, timings, grid and kernels.
void json_run_facts(std::ostream& o, const Platform& pf, const RunRecord& rec) {
  const auto& ph = rec.phases;
    const double tps = median_tokens_per_s(rec);
  o << "{\n  \"schema_version\": " << kReportSchemaVersion << ",\n  \"app\": \"mini5d\",\n"
    << "  \"build\": {\"version\": " << jstr(pf.mini5d_version) << ", \"git\": " << jstr(pf.git_hash)
    << ", \"compiler\": " << jstr(pf.compiler) << "},\n"
    << "  \"platform\": {\"kokkos\": " << jstr(pf.kokkos) << ", \"backend\": " << jstr(pf.backend)
    << ", \"mpi\": " << jstr(pf.mpi) << ", \"hdf5\": " << jstr(pf.hdf5) << ", \"hwloc\": " << jstr(pf.hwloc)
    << ", \"ranks\": " << pf.ranks << "},\n"
    << "  \"deck\": " << rec.facts.deck.to_json() << ",\n"
    << "  \"model\": {\"parameters\": " << rec.facts.parameters << ", \"matmul_parameters\": " << rec.facts.matmul_parameters
    << ", \"flops_per_token\": " << jnum(rec.facts.flops_per_token)
    << ", \"flops_formula\": \"6*N + 12*layers*d_model*seq, N = parameters in matrix products\"},\n"
    << "  \"data\": {\"source\": " << jstr(rec.facts.data) << ", \"loss_floor\": ";
  if (const auto& f = rec.facts.loss_floor) o << jnum(*f); else o << "null";
  o << "},\n  \"fom\": {\"tokens_per_s\": " << jnum(tps) << ", \"model_flops_per_s\": "
    << jnum(tps * rec.facts.flops_per_token) << ", \"statistic\": \"median over steps 2..n\", \"valid\": "
    << (fom_valid(rec) ? "true" : "false") << "},\n"
    << "  \"timings_s\": {\"total\": " << jnum(rec.total_seconds) << ", \"data\": " << jnum(ph.data)
    << ", \"forward\": " << jnum(ph.forward) << ", \"backward\": " << jnum(ph.backward)
    << ", \"reduce\": " << jnum(ph.reduce) << ", \"optimizer\": " << jnum(ph.optimizer) << "},\n"
    << "  \"grid\": " << jstr(rec.facts.grid) << ",\n"
    << "  \"kernels\": " << kernel_table_json(kernel_table(rec)) << ",\n"
    << "  \"step_events\": " << step_events_json(step_events(rec)) << ",\n";
}

// Ring attention's balance per rank (c > 1 only).
void json_context(std::ostream& o, const RunRecord& rec) {
  if (const auto& ring = rec.ring; !ring.empty()) {
    const int c = rec.facts.layout.c;
    o << "  \"context\": {\"c\": " << c << ", \"split\": " << jstr(cp::split_from_env(c).name())
      << ", \"blocks_per_layer_by_rank\": [";
    for (std::size_t r = 0; r < ring.size(); ++r) o << (r ? ", " : "") << jnum(ring[r][0]);
    o << "], \"block_compute_seconds_by_rank\": [";
    for (std::size_t r = 0; r < ring.size(); ++r) o << (r ? ", " : "") << jnum(ring[r][1]);
    o << "]},\n";
  }
}

// Every account's totals, by kind of traffic.
void json_communication(std::ostream& o) {
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
  o << "},\n";
}

// Payload bytes per step per axis, predicted beside measured.
void json_bytes_per_step(std::ostream& o, const RunRecord& rec) {
  o << "  \"bytes_per_step\": {";
  for (std::size_t i = 0; i < rec.traffic.size(); ++i) {
    const auto& a = rec.traffic[i];
    o << (i ? ", " : "") << jstr(a.axis) << ": {\"predicted\": " << jnum(a.predicted) << ", \"measured\": "
      << jnum(a.measured) << ", \"mean_predicted\": " << jnum(a.mean_predicted) << ", \"mean_measured\": "
      << jnum(a.mean_measured) << ", \"worst_relative_difference\": " << jnum(a.worst) << "}";
  }
  o << "},\n";
}

// The ledger's categories, every rank's peaks, and state and activations predicted
// beside measured.
void json_memory(std::ostream& o, const RunRecord& rec) {
  const auto want = rec.memory.predicted_state, got = rec.memory.measured_state;
  o << "  \"memory_bytes\": {";
  for (auto c : kCategories) {
    const auto& u = mem::ledger().of(c);
    o << jstr(mem::to_string(c)) << ": {\"current\": " << u.current << ", \"peak\": " << u.peak << "}, ";
  }
  o << "\"total_peak\": " << mem::ledger().total().peak << ",\n    \"peak_by_rank\": [";
  for (std::size_t r = 0; r < rec.peaks.size(); ++r) {
    o << (r ? ", " : "") << "{";
    for (int c = 0; c < mem::kCategories; ++c)
      o << (c ? ", " : "") << jstr(mem::to_string(mem::Category(c))) << ": " << jnum(rec.peaks[r][c]);
    o << "}";
  }
  o << "],\n    \"state_predicted\": {\"weights\": "
    << jnum(want.weights) << ", \"gradients\": " << jnum(want.gradients) << ", \"optimizer\": " << jnum(want.optimizer)
    << "}, \"state_measured\": {\"weights\": " << jnum(got.weights) << ", \"gradients\": " << jnum(got.gradients)
    << ", \"optimizer\": " << jnum(got.optimizer) << "},\n    \"activations_predicted\": {\"kept\": "
    << jnum(rec.memory.predicted_activations.activations) << ", \"workspace\": "
    << jnum(rec.memory.predicted_activations.workspace) << "}, \"activations_measured\": {\"kept\": "
    << jnum(rec.memory.measured_activations.activations) << ", \"workspace\": "
    << jnum(rec.memory.measured_activations.workspace) << "}, \"expert_params_predicted\": "
    << jnum(rec.memory.predicted_expert_params) << ", \"expert_params_measured\": " << jnum(rec.memory.measured_expert_params)
    << "},\n";
}

// Every rank's pipeline figures (empty without a reported pipeline).
void json_pipeline(std::ostream& o, const RunRecord& rec) {
  o << "  \"pipeline\": [";
  for (std::size_t i = 0; i < rec.pipeline_ranks.size(); ++i) {
    const auto& r = rec.pipeline_ranks[i];
    o << (i ? ", " : "") << "{\"rank\": " << r.rank << ", \"stage\": " << r.coords[1] << ", \"bubble\": "
      << jnum(r.bubble) << ", \"bubble_predicted\": " << jnum(r.predicted) << ", \"bubble_formula\": " << jnum(r.formula) << ", \"in_flight\": " << jnum(r.in_flight)
      << ", \"in_flight_predicted\": " << jnum(r.predicted_in_flight) << ", \"activations\": "
      << jnum(r.activations) << ", \"activations_predicted\": " << jnum(r.predicted_activations) << "}";
  }
  o << "],\n";
}

// How the run ended, and its checkpoints.
void json_outcome(std::ostream& o, const RunRecord& rec) {
  o << "  \"tokens_per_step\": " << rec.facts.tokens_per_step << ",\n  \"run_id\": " << jstr(rec.run_id)
    << ",\n  \"valid\": " << (fom_valid(rec) ? "true" : "false") << ", \"skipped_steps\": " << rec.skipped_steps()
    << ", \"halted\": " << (rec.halted.empty() ? std::string("null") : jstr(rec.halted))
    << ",\n  \"stopped_by_signal\": " << rec.stopped_by
    << ",\n  \"checkpoints\": [";
  for (std::size_t i = 0; i < rec.checkpoints.size(); ++i) {
    const auto& e = rec.checkpoints[i];
    o << (i ? ", " : "") << "{\"kind\": " << jstr(e.kind) << ", \"path\": " << jstr(e.path) << ", \"reason\": "
      << jstr(e.reason) << ", \"step\": " << e.step << ", \"bytes\": " << jnum(e.bytes) << ", \"seconds\": "
      << jnum(e.seconds);
    // An asynchronous save: the blocking snapshot and the wait for the background write.
    if (e.async)
      o << ", \"async\": true, \"snapshot_seconds\": " << jnum(e.snapshot_seconds) << ", \"wait_seconds\": "
        << jnum(e.wait_seconds) << ", \"waited_at\": " << jstr(e.waited_at);
    // A resume's allowed changes (learning rate, steps, layout, ...), as the console printed them.
    if (e.kind == "load") {
      o << ", \"changes\": [";
      for (std::size_t c = 0; c < e.changes.size(); ++c) o << (c ? ", " : "") << jstr(e.changes[c]);
      o << "]";
    }
    o << "}";
  }
  o << "],\n";
}

// A resume's restart, in parts (null on a fresh run).
void json_restart(std::ostream& o, const RestartTimes& r) {
  o << "  \"restart\": ";
  if (!r.resumed)
    o << "null";
  else
    o << "{\"startup_seconds\": " << jnum(r.startup_s) << ", \"load_seconds\": " << jnum(r.load_s)
      << ", \"load_bytes\": " << jnum(r.load_bytes) << ", \"first_step_seconds\": " << jnum(r.first_step_s) << "}";
  o << ",\n";
}

// One record per step.
void json_steps(std::ostream& o, const RunRecord& rec) {
  o << "  \"steps\": [";
  const auto& h = rec.history;
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
}
}  // namespace

std::string report_json(const Platform& pf, const RunRecord& rec, const RestartTimes& restart) {
  std::ostringstream o;
  json_run_facts(o, pf, rec);
  json_context(o, rec);
  json_communication(o);
  json_bytes_per_step(o, rec);
  json_memory(o, rec);
  json_pipeline(o, rec);
  json_outcome(o, rec);
  json_restart(o, restart);
  json_steps(o, rec);
  o << "\n  ]\n}\n";
  return o.str();
}

void write_report(const std::string& path, const Platform& pf, const RunRecord& rec, const RestartTimes& restart) {
  // Through "<path>.tmp" and a rename, every write and the close checked: a full disk
  // leaves the previous report as it was, never a truncated one.
  // A link is written through to its target (the link stays); anything but a regular
  // file is refused, never replaced (checked at start-up too; checked again because it
  // may have changed during the run).
  const ReplaceTarget target = replace_target(path, "output.report");
  if (!target.problem.empty()) throw std::runtime_error(target.problem);
  const std::string text = report_json(pf, rec, restart), tmp = target.path + ".tmp";
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": cannot write the report (output.report): " + what + ": " + std::strerror(err));
  };
  // New, never opened as found: a stale "<report>.tmp" that is a link would have its
  // target truncated (core/fresh_file.hpp).
  const int fd = create_fresh(tmp);
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
  if (::rename(tmp.c_str(), target.path.c_str()) != 0) fail("renaming " + tmp, errno);
}

}  // namespace mini5d::report
