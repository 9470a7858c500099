// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/param_checksum.hpp"

#include <set>
#include <vector>

#include "mini5d/checkpoint/runs.hpp"
#include "mini5d/comm/agreement.hpp"
#include "mini5d/train/training_state.hpp"

namespace mini5d::train {

namespace {
std::map<std::string, TensorChecksum> checksums_of(MPI_Comm comm, const WrittenPart& part) {
  // Every tensor any rank writes (a pipeline stage holds only some), in one order.
  std::vector<std::string> mine;
  for (const auto& s : part.shards) mine.push_back(s.tensor);
  const auto gathered = comm::allgather_strings(comm, mine);
  const std::set<std::string> names_set(gathered.begin(), gathered.end());
  const std::vector<std::string> names(names_set.begin(), names_set.end());
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < names.size(); ++i) index[names[i]] = i;
  // [sum, sum of squares, weighted sum, elements] per tensor, this rank's blocks only.
  constexpr std::size_t kFields = 4;
  std::vector<double> v(kFields * names.size(), 0.0);
  for (const auto& s : part.shards) {
    double* t = &v[kFields * index.at(s.tensor)];
    // The runs carry each element's logical (global) index, whatever block it lies in.
    for (const checkpoint::Run& r : checkpoint::shard_runs(s.desc)) {
      const float* x = s.data + r.local;
      for (std::int64_t i = 0; i < r.length; ++i) {
        const double xi = double(x[i]);
        t[0] += xi;
        t[1] += xi * xi;
        t[2] += double(r.global + i + 1) * xi;
      }
      t[3] += double(r.length);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_DOUBLE, MPI_SUM, comm);
  std::map<std::string, TensorChecksum> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double* t = &v[kFields * i];
    out[names[i]] = {t[0], t[1], t[2], std::int64_t(t[3])};
  }
  return out;
}
}  // namespace

std::map<std::string, TensorChecksum> parameter_checksums(const Trainer& tr) {
  return checksums_of(tr.grid().cart().get(), written_model(tr.optimizer()));
}

std::map<std::string, std::map<std::string, TensorChecksum>> state_checksums(const Trainer& tr) {
  std::map<std::string, std::map<std::string, TensorChecksum>> out;
  for (const WrittenPart& p : written_parts(tr.optimizer())) out[p.root] = checksums_of(tr.grid().cart().get(), p);
  return out;
}

}  // namespace mini5d::train
