// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/validation/tune.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>

#include "mini5d/core/regular_file.hpp"
#include "mini5d/plan/output/emit_deck.hpp"
#include "mini5d/plan/output/format.hpp"

namespace mini5d::plan {

namespace fs = std::filesystem;

namespace {

// A shell word: single-quoted, inner quotes escaped.
std::string shell_word(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string with_ranks(std::string launcher, long long ranks) {
  const std::string key = "{ranks}";
  for (auto at = launcher.find(key); at != std::string::npos; at = launcher.find(key))
    launcher.replace(at, key.size(), std::to_string(ranks));
  return launcher;
}

// A run's log as text, through the one reader (core/regular_file.hpp); "" when it is
// missing or not a regular file: the run is then reported without a figure.
std::string log_text(const std::string& path) {
  return read_regular_file(path, std::size_t{64} << 20).text;
}

// The run's figure of merit: "FOM mini5d tokens_per_s=X ..." (steps 2..n).
double tokens_per_s_from_log(const std::string& path) {
  std::istringstream in(log_text(path));
  const std::string key = "FOM mini5d tokens_per_s=";
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::atof(line.c_str() + key.size());
  return 0;
}

std::string last_line(const std::string& path) {
  std::istringstream in(log_text(path));
  std::string last, line;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

void write_file(const std::string& path, const std::function<void(std::ostream&)>& body) {
  std::ostringstream out;
  body(out);
  if (const std::string why = write_regular_file(path, out.str()); !why.empty())
    throw InputError("--tune: cannot write " + path + " (" + why + ")");
}

// DIR/plan-N: the stem of plan N's deck, log, report and checkpoint folder.
std::string plan_stem(const std::string& dir, int position) {
  return (fs::path(dir) / ("plan-" + std::to_string(position))).string();
}

}  // namespace

std::string default_mini5d_path(const std::string& self) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) exe = fs::absolute(self, ec);
  const fs::path dir = exe.parent_path();
  for (const fs::path& p : {dir / "mini5d", dir / ".." / ".." / ".." / "apps" / "mini5d"})
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  return "mini5d";  // on PATH
}

std::vector<TuneRow> tune(const ModelInput& in, const ClusterDesc& cl, const SearchResult& r,
                          const TuneOptions& o) {
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) throw InputError("--tune-dir " + o.dir + ": cannot create it: " + ec.message());
  std::vector<TuneRow> rows;
  const std::size_t n = std::min<std::size_t>(std::size_t(o.plans), r.top.size());
  for (std::size_t i = 0; i < n; ++i) {
    TuneRow row;
    row.position = int(i) + 1;
    row.plan = r.top[i];
    const std::string stem = plan_stem(o.dir, row.position);
    row.deck = stem + ".yaml";
    write_file(row.deck, [&](std::ostream& os) { write_deck(os, in, cl, row.plan, false); });
    if (o.scale_down) {
      row.scaled_deck = stem + "-scaled.yaml";
      write_file(row.scaled_deck, [&](std::ostream& os) { write_deck(os, in, cl, row.plan, true); });
    }
    rows.push_back(row);
  }
  if (!o.run) return rows;
  for (TuneRow& row : rows) {
    const std::string stem = plan_stem(o.dir, row.position);
    row.log = stem + ".log";
    const long long ranks = row.plan.layout.ranks();
    const std::string cmd = with_ranks(o.launcher, ranks) + " " + shell_word(o.mini5d) + " train " + shell_word(row.deck) +
                            " train.steps=" + std::to_string(o.steps) + " output.log_every=" +
                            std::to_string(o.steps) + " output.report=" + shell_word(stem + "-report.json") +
                            " checkpoint.every=0 checkpoint.dir=" + shell_word(stem + "-checkpoints") + " > " +
                            shell_word(row.log) + " 2>&1";
    std::cerr << "mini5d-plan: tuning #" << row.position << " (" << describe(row.plan.layout) << ", " << ranks
              << " ranks)\n";
    const int raw = std::system(cmd.c_str());
    const int status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : raw;
    const double tps = tokens_per_s_from_log(row.log);
    if (status != 0 || !(tps > 0)) {
      row.problem = "did not run (exit " + std::to_string(status) + "): " + last_line(row.log);
      continue;
    }
    row.ran = true;
    // The plan's tokens per step over the measured rate.
    row.measured_step = row.plan.time.tokens_per_s * row.plan.time.step / tps;
  }
  return rows;
}

bool print_tune(std::ostream& os, const std::vector<TuneRow>& rows, const TuneOptions& o) {
  os << "\ntuning: the top " << rows.size() << " plans as decks in " << o.dir << "/"
     << (o.run ? ", each trained for " + std::to_string(o.steps) + " steps (the first untimed)" : "") << "\n";
  os << "  #   layout                                              predicted     measured  measured/predicted\n";
  const TuneRow* fastest = nullptr;
  for (const TuneRow& row : rows) {
    char line[256];
    std::snprintf(line, sizeof(line), "  %-3d %-50s %10s", row.position, describe(row.plan.layout).c_str(),
                  ms(row.plan.time.step).c_str());
    os << line;
    if (row.ran) {
      std::snprintf(line, sizeof(line), "   %10s  %8.3f", ms(row.measured_step).c_str(),
                    row.measured_step / row.plan.time.step);
      os << line;
      if (!fastest || row.measured_step < fastest->measured_step) fastest = &row;
    } else if (o.run) {
      os << "   " << row.problem;
    } else {
      os << "   " << row.deck << (row.scaled_deck.empty() ? "" : " (scaled down: " + row.scaled_deck + ")");
    }
    os << "\n";
  }
  if (!o.run) {
    os << "run them with: " << with_ranks(o.launcher, rows.empty() ? 1 : rows.front().plan.layout.ranks())
       << " mini5d train " << (rows.empty() ? "DECK" : rows.front().deck) << " (or mini5d-plan --tune "
       << rows.size() << " --run)\n";
    return true;
  }
  if (!fastest) {
    os << "no plan ran: see the logs in " << o.dir << "/\n";
    return false;
  }
  os << "fastest measured: #" << fastest->position << " (" << describe(fastest->plan.layout) << "), "
     << ms(fastest->measured_step) << " per step";
  if (fastest->position == 1)
    os << ": the planner's #1 is also the fastest measured\n";
  else
    os << "; the planner's #1 measured " << (rows.front().ran ? ms(rows.front().measured_step) : "nothing")
       << ": a search, not a formula, picks #" << fastest->position << "\n";
  return true;
}

}  // namespace mini5d::plan
