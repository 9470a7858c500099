// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/checkpoint/read_checksums.hpp"

#include "mini5d/checkpoint/agreement_names.hpp"
#include "mini5d/checkpoint/h5.hpp"
#include "mini5d/comm/watchdog.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::checkpoint::detail {

namespace {

// Each request as [dataset index, dimensions, blocks, then per block its offsets and
// extents]: a few numbers per request, whatever the tensor's size.
std::vector<std::int64_t> encode(const std::vector<std::string>& paths,
                                 const std::map<std::string, std::vector<std::size_t>>& mine,
                                 const std::vector<TensorShardOut>& shards) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const auto it = mine.find(paths[i]);
    if (it == mine.end()) continue;
    for (std::size_t s : it->second) {
      const auto& d = shards[s].desc;
      out.push_back(static_cast<std::int64_t>(i));
      out.push_back(static_cast<std::int64_t>(d.global_shape.size()));
      out.push_back(static_cast<std::int64_t>(d.blocks.size()));
      for (const auto& b : d.blocks) {
        out.insert(out.end(), b.offset.begin(), b.offset.end());
        out.insert(out.end(), b.extent.begin(), b.extent.end());
      }
    }
  }
  return out;
}

std::vector<std::int64_t> allgather(MPI_Comm comm, const std::vector<std::int64_t>& mine, std::vector<int>& counts) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  counts.assign(static_cast<std::size_t>(ranks), 0);
  int n = static_cast<int>(mine.size());
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  std::vector<int> displs(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<std::int64_t> all(static_cast<std::size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, comm);
  return all;
}

void add(OwnedSums& into, const OwnedSums& s) {
  into.count += s.count;
  into.checksum += s.checksum;
  into.nonfinite += s.nonfinite;
}

// Sums over the ranks, three numbers per dataset in one allreduce.
void sum_over_ranks(MPI_Comm comm, std::vector<OwnedSums>& sums) {
  std::vector<std::uint64_t> flat;
  for (const auto& s : sums) flat.insert(flat.end(), {s.count, s.checksum, s.nonfinite});
  MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(flat.size()), MPI_UINT64_T, MPI_SUM, comm);
  for (std::size_t i = 0; i < sums.size(); ++i) sums[i] = {flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]};
}

}  // namespace

ReadPlan gather_readers(MPI_Comm comm, const std::vector<std::string>& paths,
                        const std::map<std::string, std::vector<std::size_t>>& mine,
                        const std::vector<TensorShardOut>& shards) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<int> counts;
  const auto all = allgather(comm, encode(paths, mine, shards), counts);
  ReadPlan plan;
  plan.readers.resize(paths.size());
  std::vector<std::size_t> mine_in_order;  // the caller's shards in the order encode wrote them
  for (std::size_t i = 0; i < paths.size(); ++i)
    if (const auto it = mine.find(paths[i]); it != mine.end())
      mine_in_order.insert(mine_in_order.end(), it->second.begin(), it->second.end());
  plan.my_reader.assign(shards.size(), 0);
  std::size_t at = 0, own = 0;
  for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
    const std::size_t end = at + static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    while (at < end) {
      const auto i = static_cast<std::size_t>(all[at]);
      const auto dims = static_cast<std::size_t>(all[at + 1]);
      const auto blocks = static_cast<std::size_t>(all[at + 2]);
      at += 3;
      Reader reader{r, std::vector<ShardBlock>(blocks)};
      for (auto& b : reader.blocks) {
        b.offset.assign(all.begin() + static_cast<std::ptrdiff_t>(at), all.begin() + static_cast<std::ptrdiff_t>(at + dims));
        b.extent.assign(all.begin() + static_cast<std::ptrdiff_t>(at + dims),
                        all.begin() + static_cast<std::ptrdiff_t>(at + 2 * dims));
        at += 2 * dims;
      }
      if (r == rank) plan.my_reader[mine_in_order[own++]] = plan.readers[i].size();
      plan.readers[i].push_back(std::move(reader));
    }
  }
  return plan;
}

std::vector<OwnedSums> whole_dataset_sums(MPI_Comm comm, hid_t file, const std::string& file_name,
                                          const std::vector<std::string>& paths, const ReadPlan& plan,
                                          std::vector<OwnedSums> local, double& bytes) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  sum_over_ranks(comm, local);
  // Elements no rank asked for: every rank takes part in each such dataset's read (an
  // empty selection if its even part has none), independently, as a verify does.
  H5Handle dxpl = transfer_for(true);
  std::vector<std::string> problems;
  std::vector<std::size_t> unread;
  std::vector<OwnedSums> extra;
  std::vector<float> scratch;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    H5Handle dset(H5Dopen2(file, paths[i].c_str(), H5P_DEFAULT), H5Dclose);
    const auto shape = dataset_shape(dset.get());
    const std::int64_t n = element_count(shape);
    if (local[i].count == static_cast<std::uint64_t>(n)) continue;
    ShardDescriptor gaps{shape, {}};
    for (const auto& s : unread_spans(shape, plan.readers[i], even_part(n, ranks, rank)))
      append_flat_range_blocks(shape, s.begin, s.end, gaps.local_elements(), gaps.blocks);
    const auto runs = shard_runs(gaps);
    scratch.resize(static_cast<std::size_t>(gaps.local_elements()));
    OwnedSums s;
    if (!transfer(dset.get(), dxpl.get(), Direction::read, &gaps, runs, nullptr, scratch.data()))
      problems.push_back(printable_path(file_name) + ": cannot read dataset " + paths[i] + " (" + h5_error_detail() + ")");
    else
      add_owned_sums(runs, scratch.data(), s);
    bytes += 4.0 * static_cast<double>(gaps.local_elements());
    comm::watchdog::progress();
    unread.push_back(i);
    extra.push_back(s);
  }
  raise_if_any(comm, problems, ProblemKind::Input);
  if (!extra.empty()) sum_over_ranks(comm, extra);
  for (std::size_t k = 0; k < unread.size(); ++k) add(local[unread[k]], extra[k]);
  return local;
}

}  // namespace mini5d::checkpoint::detail
