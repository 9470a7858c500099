// SPDX-License-Identifier: BSD-3-Clause
// See collective.hpp.
#include "mini5d/checkpoint/collective.hpp"

#include <set>
#include <stdexcept>

#include "mini5d/core/error.hpp"

namespace mini5d::checkpoint::detail {

std::vector<std::string> allgather_strings(MPI_Comm comm, const std::vector<std::string>& mine) {
  // NUL-separated: names and messages never contain NUL.
  std::string packed;
  for (const auto& s : mine) packed += s + '\0';
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  int len = static_cast<int>(packed.size());
  std::vector<int> lens(ranks), displs(ranks, 0);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm);
  for (int r = 1; r < ranks; ++r) displs[r] = displs[r - 1] + lens[r - 1];
  std::string all(static_cast<std::size_t>(displs[ranks - 1] + lens[ranks - 1]), '\0');
  MPI_Allgatherv(packed.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, comm);
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i] == '\0') {
      out.push_back(all.substr(begin, i - begin));
      begin = i + 1;
    }
  return out;
}

std::string bcast_string(MPI_Comm comm, std::string s, int root) {
  unsigned long long len = s.size();
  MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, root, comm);
  s.resize(len);
  MPI_Bcast(s.data(), static_cast<int>(len), MPI_CHAR, root, comm);
  return s;
}

void raise_if_any(MPI_Comm comm, const std::vector<std::string>& problems, ProblemKind kind) {
  int any = problems.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm);
  if (!any) return;
  constexpr std::size_t kMaxLines = 12;
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const auto& p : allgather_strings(comm, problems))
    if (seen.insert(p).second) unique.push_back(p);
  if (unique.size() > kMaxLines) {
    const std::size_t more = unique.size() - (kMaxLines - 1);
    unique.resize(kMaxLines - 1);
    unique.push_back("... and " + std::to_string(more) + " more");
  }
  if (kind == ProblemKind::Input) throw InputError::from_list(unique);
  // Agreed over the whole job: every rank throws this together and can end cleanly.
  // Over part of it, the others may wait for these ranks: a plain failure, which the
  // app turns into an abort of the job.
  int size = 0, world = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (size == world) throw AgreedError(InputError::from_list(unique).what());
  throw std::runtime_error(InputError::from_list(unique).what());
}

bool any_rank(MPI_Comm comm, bool mine) {
  int any = mine ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm);
  return any != 0;
}

double slowest_seconds(MPI_Comm comm, double start) {
  double s = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, comm);
  return s;
}

}  // namespace mini5d::checkpoint::detail
