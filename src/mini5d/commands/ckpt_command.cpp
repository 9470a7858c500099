// SPDX-License-Identifier: BSD-3-Clause
// See ckpt_command.hpp. `info` shows what a checkpoint holds (metadata, the deck it was
// trained with, every dataset with its size); `verify` checks what a resume checks (the
// metadata checksum and cross-checks, every dataset of the manifest present with its
// shape) and recomputes every checksum, so a file can be checked before a long job bets
// on it.
#include "mini5d/commands/ckpt_command.hpp"

#include <cstdio>
#include <iomanip>

#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::commands {

using namespace checkpoint;  // the command presents what checkpoint/ reads

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void info(MPI_Comm comm, const std::string& path, bool print, std::ostream& out) {
  const CheckpointMeta m = read_checkpoint_meta(comm, path);
  const auto datasets = list_datasets(comm, path);
  if (!print) return;
  out << "checkpoint   " << resolve_checkpoint(path) << "\n"
      << "format       " << m.format_version << "\n"
      << "step         " << m.step << "\n"
      << "tokens seen  " << m.tokens_seen << "\n"
      << "layout       " << m.layout << "\n"
      << "seeds        train " << m.train_seed << ", data " << m.data_seed << "\n"
      << "data cursor  " << m.data_cursor << "\n"
      << "run          " << (m.run_id.empty() ? "(no identity)" : m.run_id) << "\n";
  for (const auto& [k, v] : m.extra) out << "extra        " << k << " = " << v << "\n";
  out << "deck:\n";
  std::size_t pos = 0;
  while (pos < m.deck_yaml.size()) {
    const auto nl = m.deck_yaml.find('\n', pos);
    out << "  " << m.deck_yaml.substr(pos, nl - pos) << "\n";
    pos = nl == std::string::npos ? nl : nl + 1;
  }
  std::size_t width = 0;
  for (const auto& d : datasets) width = std::max(width, d.path.size());
  std::int64_t total = 0;
  out << "datasets:\n";
  for (const auto& d : datasets) {
    out << "  " << std::left << std::setw(static_cast<int>(width)) << d.path << "  " << std::setw(16)
        << shape_text(d.shape) << std::right << std::setw(12) << d.bytes << " bytes\n";
    total += d.bytes;
  }
  out << "total        " << datasets.size() << " datasets, " << total << " bytes ("
      << std::fixed << std::setprecision(2) << static_cast<double>(total) / (1 << 20) << " MiB)\n";
}

void verify(MPI_Comm comm, const std::string& path, bool print, std::ostream& out) {
  const auto results = verify_checkpoint(comm, path);
  const std::string file = resolve_checkpoint(path);  // verify_checkpoint checked it resolves
  std::vector<std::string> bad;
  for (const auto& r : results) {
    if (r.stored != r.computed)
      bad.push_back(printable_path(file) + ": checksum mismatch in dataset " + r.path + " (stored " + hex(r.stored) +
                    ", computed " + hex(r.computed) + ")");
    if (r.nonfinite != 0)
      bad.push_back(printable_path(file) + ": dataset " + r.path + " holds " + std::to_string(r.nonfinite) +
                    " NaN or infinite values (a diverged state; resume from an earlier checkpoint)");
  }
  if (!bad.empty()) throw InputError::from_list(bad);
  if (print) out << file << ": OK, " << results.size() << " datasets verified\n";
}

}  // namespace

int ckpt_command(MPI_Comm comm, const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 2 || (args[0] != "info" && args[0] != "verify"))
    throw InputError(std::string("command line: ckpt needs info or verify and a path\n") +
                     "usage: mini5d ckpt info|verify PATH   (PATH: checkpoint directory or file)");
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (args[0] == "info")
    info(comm, args[1], rank == 0, out);
  else
    verify(comm, args[1], rank == 0, out);
  return 0;
}

}  // namespace mini5d::commands
