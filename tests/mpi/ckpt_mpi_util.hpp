// SPDX-License-Identifier: BSD-3-Clause
// What the MPI checkpoint tests share: rank helpers, a verdict agreed over the ranks
// (so a failure on one rank never leaves another in a collective), a fresh directory
// per case and rank count, an InputError's message checked to be the same on every
// rank, and saving and reading back the synthetic model of ckpt_test_util.hpp.
#pragma once
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ckpt_test_util.hpp"
#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/core/error.hpp"

namespace ckpt_mpi {

namespace fs = std::filesystem;
using namespace mini5d;
using namespace mini5d::checkpoint;

inline int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
inline int size_of(MPI_Comm c) {
  int n = 1;
  MPI_Comm_size(c, &n);
  return n;
}

inline bool everywhere(bool ok, MPI_Comm comm = MPI_COMM_WORLD) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, comm);
  return v == 1;
}

// A fresh directory per test case, per rank count (the np 2 and np 4 runs may overlap).
inline std::string fresh_dir(const std::string& name) {
  const std::string dir = "ckpt_np" + std::to_string(size_of(MPI_COMM_WORLD)) + "/" + name;
  if (rank_of(MPI_COMM_WORLD) == 0) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

// The InputError message `f` throws ("" if none); true in `same` if every rank got the same.
inline std::string input_error_of(const std::function<void()>& f, bool& same) {
  std::string msg;
  try {
    f();
  } catch (const InputError& e) {
    msg = e.what();
  }
  std::vector<char> buf(msg.begin(), msg.end());
  int len = static_cast<int>(buf.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  buf.resize(static_cast<std::size_t>(len));
  MPI_Bcast(buf.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  same = everywhere(std::string(buf.begin(), buf.end()) == msg);
  return msg;
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Full tensors of every root on the calling rank.
struct Full {
  std::vector<std::vector<float>> data;
  std::vector<TensorShardOut> outs;
  std::vector<std::string> paths;
};
inline Full full_requests() {
  Full f;
  for (const auto& r : ckpt_test::roots())
    for (const auto& t : ckpt_test::tensors()) {
      f.paths.push_back(dataset_path(r, t.name));
      f.data.emplace_back(static_cast<std::size_t>(t.size()), -999.0f);
    }
  const auto ts = ckpt_test::tensors();
  for (std::size_t i = 0; i < f.paths.size(); ++i) {
    const auto& t = ts[i % ts.size()];
    f.outs.push_back({f.paths[i], flat_range_shard(t.shape, 0, t.size(), 0), f.data[i].data()});
  }
  return f;
}
inline bool full_matches(const Full& f, std::uint64_t seed) {
  for (std::size_t i = 0; i < f.paths.size(); ++i)
    for (std::size_t k = 0; k < f.data[i].size(); ++k)
      if (f.data[i][k] != ckpt_test::value(seed, f.paths[i], static_cast<std::int64_t>(k))) return false;
  return true;
}

inline std::string save_zero(MPI_Comm comm, const std::string& dir, long step, std::uint64_t seed, int keep = 0) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08ld", step);
  auto part = ckpt_test::zero_part(seed, size_of(comm), rank_of(comm));
  save_checkpoint(comm, dir, name, ckpt_test::meta_for(step, seed, size_of(comm)), part.shards, keep);
  return dir + "/" + name + ".h5";
}

}  // namespace ckpt_mpi
