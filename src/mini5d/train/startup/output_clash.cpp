// SPDX-License-Identifier: BSD-3-Clause
// See output_clash.hpp.
#include "mini5d/train/startup/output_clash.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <utility>

#include "mini5d/core/printable.hpp"

namespace fs = std::filesystem;

namespace mini5d::train {

namespace {

// A file as the run names it: its identity if it exists (links followed), and its
// resolved absolute path either way.
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  fs::path resolved;
};

FileId id_of(const std::string& path) {
  FileId id;
  std::error_code ec;
  id.resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  return id;
}

bool same_file(const FileId& a, const FileId& b) {
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return a.resolved == b.resolved;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Names a save writes or replaces in checkpoint.dir, whether they exist yet or not.
bool checkpoint_name(const std::string& name) {
  return name == "latest" || name == "latest.tmp" || name == "mini5d.lock" || ends_with(name, ".h5") ||
         ends_with(name, ".h5.tmp");
}

}  // namespace

std::vector<std::string> output_clash_problems(const Deck& deck) {
  // The run's inputs, each with what to call it.
  std::vector<std::pair<FileId, std::string>> inputs;
  struct stat st {};
  if (::stat(deck.origin.c_str(), &st) == 0) inputs.push_back({id_of(deck.origin), "the deck file"});
  if (deck.data.source != DataSource::markov && !deck.data.path.empty())
    inputs.push_back({id_of(deck.data.path), "the data file (data.path)"});
  const std::string& resume = deck.checkpoint.resume;
  if (!resume.empty() && resume != "latest")
    inputs.push_back({id_of(resume), "the checkpoint resumed (checkpoint.resume)"});
  const FileId dir = id_of(deck.checkpoint.dir);

  std::vector<std::string> problems;
  std::vector<std::pair<FileId, std::string>> outputs;
  auto check = [&](const std::string& path, const std::string& field) {
    if (path.empty()) return;
    const FileId out = id_of(path);
    const std::string shown = printable_path(path) + ": " + field + " ";
    const std::string fix = "; an output must not replace an input of the run: give another path";
    for (const auto& [in, what] : inputs)
      if (same_file(out, in)) problems.push_back(shown + "is " + what + fix);
    const std::string name = out.resolved.filename().string();
    if (checkpoint_name(name) && id_of(out.resolved.parent_path().string()).exists &&
        same_file(id_of(out.resolved.parent_path().string()), dir))
      problems.push_back(shown + "is " + (name == "latest" ? "the checkpoint pointer 'latest'" : "'" + name + "'") +
                         " in checkpoint.dir=" + printable_path(deck.checkpoint.dir) +
                         ", which checkpoint saves write and replace" + fix);
    for (const auto& [other, what] : outputs)
      if (same_file(out, other)) problems.push_back(shown + "is also " + what + "; give each output its own path");
    outputs.push_back({out, field});
  };
  check(deck.output.report, "output.report");
  check(deck.output.trace, "output.trace");
  return problems;
}

}  // namespace mini5d::train
