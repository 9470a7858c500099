// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/startup/same_deck.hpp"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "mini5d/comm/agreement.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/fnv1a.hpp"

namespace mini5d::train {

namespace {
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}
}  // namespace

void require_same_deck(MPI_Comm comm, const Deck& deck) {
  const std::string yaml = deck.to_yaml();
  std::uint64_t mine = fnv1a(yaml);
  int ranks = 1, rank = 0;
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);
  std::vector<std::uint64_t> all(static_cast<std::size_t>(ranks));
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm);
  std::vector<int> differ;
  for (int r = 1; r < ranks; ++r)
    if (all[r] != all[0]) differ.push_back(r);
  if (differ.empty()) return;
  // The first differing line of the first rank that differs, to say where.
  const std::string theirs = comm::bcast_string(comm, yaml, differ.front());
  const auto a = lines_of(comm::bcast_string(comm, yaml, 0)), b = lines_of(theirs);
  std::string where;
  for (std::size_t i = 0; i < a.size() || i < b.size(); ++i) {
    const std::string la = i < a.size() ? a[i] : "", lb = i < b.size() ? b[i] : "";
    if (la != lb) {
      where = "rank 0 has \"" + la + "\", rank " + std::to_string(differ.front()) + " \"" + lb + "\"";
      break;
    }
  }
  std::string list;
  for (std::size_t i = 0; i < differ.size() && i < 16; ++i) list += (i ? ", " : "") + std::to_string(differ[i]);
  if (differ.size() > 16) list += ", ... (" + std::to_string(differ.size()) + " in all)";
  throw InputError(deck.origin + ": the resolved deck differs between ranks (" + (differ.size() > 1 ? "ranks " : "rank ") + list +
                   (differ.size() > 1 ? " differ" : " differs") + " from rank 0: " + where +
                   "); every rank must read the same deck file with the same overrides");
}

}  // namespace mini5d::train
