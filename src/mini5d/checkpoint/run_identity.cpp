// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/checkpoint/run_identity.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "mini5d/checkpoint/commit.hpp"
#include "mini5d/checkpoint/h5.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/counter_rng.hpp"
#include "mini5d/core/regular_file.hpp"

namespace fs = std::filesystem;

namespace mini5d::checkpoint {

using namespace detail;

namespace {
// `latest` of `dir` as text; "" when it is missing or not a regular file of its own.
std::string latest_text(const std::string& dir) {
  try {
    return read_latest((fs::path(dir) / "latest").string());
  } catch (const InputError&) {
    return {};
  }
}
}  // namespace

std::string new_run_id() {
  std::random_device rd;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::uint64_t h = std::uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  h = rng::mix64(h ^ (std::uint64_t(rd()) << 32 | rd()));
  for (const char* c = host; *c; ++c) h = rng::mix64(h ^ std::uint64_t(static_cast<unsigned char>(*c)));
  h = rng::mix64(h ^ std::uint64_t(::getpid()));
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string run_id_of(const std::string& file) {
  // Only a regular file: HDF5's own open of a FIFO would block (core/regular_file.hpp).
  if (!regular_file_problem(file).empty()) return {};
  QuietH5Errors quiet;
  H5Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  std::string id;
  if (f.valid()) read_attr(f.get(), "run_id", id);
  return id;
}

std::string run_id_of_latest(const std::string& dir) {
  std::istringstream in(latest_text(dir));
  std::string line;
  std::getline(in, line);  // the checkpoint's file name
  std::getline(in, line);
  const std::string tag = "run ";
  return line.compare(0, tag.size(), tag) == 0 ? line.substr(tag.size()) : std::string();
}

std::string other_run_problem(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0 && e.is_regular_file(ec))
      files.push_back(name);
  }
  const fs::path latest_path = fs::path(dir) / "latest";
  const bool has_latest = fs::exists(fs::symlink_status(latest_path, ec));
  if (files.empty() && !has_latest) return {};
  // A `latest` that is a link, FIFO or device is named as such, never opened blocking.
  try {
    (void)read_latest(latest_path.string());
  } catch (const InputError& e) {
    return std::string(e.what()) + ": remove it, or choose another checkpoint.dir";
  }
  std::sort(files.begin(), files.end(), natural_less);
  std::string latest;
  {
    std::istringstream in(latest_text(dir));
    std::getline(in, latest);
  }
  std::string id = run_id_of_latest(dir);
  if (id.empty() && !files.empty()) id = run_id_of((fs::path(dir) / (latest.empty() ? files.back() : latest)).string());
  std::string what = files.empty() ? "a latest pointer" : std::to_string(files.size()) + " checkpoint" +
                                                             (files.size() > 1 ? "s" : "") + " (" + files.front() +
                                                             (files.size() > 1 ? " .. " + files.back() : "") + ")";
  return dir + ": holds " + what + " of another run (run " + (id.empty() ? "without an identity" : id) +
         (latest.empty() ? "" : ", latest " + latest) +
         "): resume it with resume=latest, set checkpoint.overwrite=true to start a new run beside it, or choose "
         "another checkpoint.dir";
}

}  // namespace mini5d::checkpoint
