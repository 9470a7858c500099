// SPDX-License-Identifier: BSD-3-Clause
// See agreement.hpp.
#include "mini5d/comm/agreement.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "mini5d/core/error.hpp"

namespace mini5d::comm {

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

namespace {
// "rank 1" or "ranks 1, 3, 5".
std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}
}  // namespace

void agreed(MPI_Comm comm, const std::function<void()>& check) {
  // This rank's outcome: "" (fine), or 'I' / 'R' (input or run-time) and the message.
  std::string mine;
  try {
    check();
  } catch (const InputError& e) {
    mine = std::string("I") + e.what();
  } catch (const std::exception& e) {
    mine = std::string("R") + e.what();
  }
  const auto all = allgather_strings(comm, {mine});
  bool any = false, input = false;
  std::vector<std::pair<std::string, std::vector<int>>> messages;  // in order of first rank
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    any = true;
    input = input || all[r][0] == 'I';
    const std::string text = all[r].substr(1);
    auto it = std::find_if(messages.begin(), messages.end(), [&](const auto& m) { return m.first == text; });
    if (it == messages.end()) messages.push_back({text, {int(r)}});
    else it->second.push_back(int(r));
  }
  if (!any) return;
  std::vector<std::string> lines;
  for (const auto& [text, ranks] : messages) {
    if (ranks.size() == all.size()) {
      lines.push_back(text);
      continue;
    }
    // Every line of a multi-line message says whose it is.
    std::size_t begin = 0;
    while (begin <= text.size()) {
      const auto end = std::min(text.find('\n', begin), text.size());
      lines.push_back(rank_list(ranks) + ": " + text.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  // Every rank has the same lines: raise_if_any's agreement costs one more allreduce,
  // which start-up can afford, and keeps one way of throwing.
  raise_if_any(comm, lines, input ? ProblemKind::Input : ProblemKind::Runtime);
}

double slowest_seconds(MPI_Comm comm, double start) {
  double s = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, comm);
  return s;
}

}  // namespace mini5d::comm
