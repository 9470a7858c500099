// SPDX-License-Identifier: BSD-3-Clause
// A load's checksums from the one read of each byte (private to checkpoint/): the
// ranks exchange the blocks they ask for, each adds up the elements it owns
// (read_owners.hpp) among those it read, and what nobody asked for is read once, for
// the checksum alone. Whatever the reading layout, no element is read for the
// checksum that a rank already read for the state.
#pragma once
#include <hdf5.h>
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/checkpoint/read_owners.hpp"

namespace mini5d::checkpoint::detail {

// Every rank's read requests of each dataset, in owner order, and where the caller's
// own requests stand among them.
struct ReadPlan {
  std::vector<std::vector<Reader>> readers;  // per dataset, in the order of `paths`
  std::vector<std::size_t> my_reader;        // per caller's shard: its index in readers[its dataset]
};

// Collective. `paths` are the same on every rank; `mine` maps each to the caller's
// shards of it, in the order it reads them.
ReadPlan gather_readers(MPI_Comm comm, const std::vector<std::string>& paths,
                        const std::map<std::string, std::vector<std::size_t>>& mine,
                        const std::vector<TensorShardOut>& shards);

// Collective. `local` holds, per dataset, the sums of the elements the caller owns
// among those it read. Sums them over the ranks, then reads the elements no rank asked
// for (each rank those in its even part of the flat dataset) and adds theirs; returns
// each whole dataset's sums, the same on every rank. Adds the bytes this read to
// `bytes`. Throws InputError (naming `file_name`) if a read fails.
std::vector<OwnedSums> whole_dataset_sums(MPI_Comm comm, hid_t file, const std::string& file_name,
                                          const std::vector<std::string>& paths, const ReadPlan& plan,
                                          std::vector<OwnedSums> local, double& bytes);

}  // namespace mini5d::checkpoint::detail
