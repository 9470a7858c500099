// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/param_checksum.hpp"

#include <set>
#include <vector>

#include "mini5d/comm/agreement.hpp"
#include "mini5d/train/training_state.hpp"

namespace mini5d::train {

std::map<std::string, TensorChecksum> parameter_checksums(const Trainer& tr) {
  const MPI_Comm comm = tr.grid().cart().get();
  const WrittenPart model = written_model(tr.optimizer());
  // Every tensor any rank writes (a pipeline stage holds only some), in one order.
  std::vector<std::string> mine;
  for (const auto& s : model.shards) mine.push_back(s.tensor);
  const auto gathered = comm::allgather_strings(comm, mine);
  const std::set<std::string> names_set(gathered.begin(), gathered.end());
  const std::vector<std::string> names(names_set.begin(), names_set.end());
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < names.size(); ++i) index[names[i]] = i;
  // [sum, sum of squares, elements] per tensor, this rank's blocks only.
  std::vector<double> v(3 * names.size(), 0.0);
  for (const auto& s : model.shards) {
    double* t = &v[3 * index.at(s.tensor)];
    for (const auto& b : s.desc.blocks) {
      const float* x = s.data + b.local_offset;
      for (std::int64_t i = 0; i < b.size(); ++i) {
        t[0] += double(x[i]);
        t[1] += double(x[i]) * double(x[i]);
      }
      t[2] += double(b.size());
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_DOUBLE, MPI_SUM, comm);
  std::map<std::string, TensorChecksum> out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out[names[i]] = {v[3 * i], v[3 * i + 1], std::int64_t(v[3 * i + 2])};
  return out;
}

}  // namespace mini5d::train
