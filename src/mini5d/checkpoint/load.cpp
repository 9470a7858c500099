// SPDX-License-Identifier: BSD-3-Clause
// Reading checkpoints: metadata, requested blocks, checksum verification, listing.
//
// A load reads each byte of the file once. The checksum of a dataset is a sum over its
// elements, so it is verified from what the ranks read for their state, each element
// counted by the one reader that owns it (read_owners.hpp: replicas share the work), whatever blocks the ranks
// asked for: they may overlap (replicas) or leave gaps, and only the gaps are read
// for the checksum alone. The sums meet in one allreduce, so every rank reaches the
// same verdict, and a corrupted byte anywhere in a used dataset is caught.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "mini5d/checkpoint/agreement_names.hpp"
#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/checkpoint/h5.hpp"
#include "mini5d/checkpoint/meta.hpp"
#include "mini5d/checkpoint/read_checksums.hpp"
#include "mini5d/comm/watchdog.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::checkpoint {

using namespace detail;

namespace {

struct Opened {
  std::string path;  // the resolved file, as messages name it
  H5Handle file;
  CheckpointMeta meta;  // checked: its checksum and cross-checks passed
};

// Resolves on rank 0 (one view of `latest` for all), opens collectively, checks the
// format version and the root attributes. Throws InputError on every rank (every rank
// reads the same attributes, so every rank finds the same problems).
Opened open_checkpoint(MPI_Comm comm, const std::string& path) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::string> problems;
  std::string file;
  if (rank == 0) try {
      file = resolve_checkpoint(path);
    } catch (const InputError& e) {
      problems.push_back(e.what());
    }
  raise_if_any(comm, problems, ProblemKind::Input);
  file = bcast_string(comm, file, 0);
  std::string detail;
  Opened o{file, open_file(comm, file, false, detail), {}};
  if (!o.file.valid()) problems.push_back(printable_path(file) + ": not a readable HDF5 file (" + detail + ")");
  raise_if_any(comm, problems, ProblemKind::Input);
  std::int64_t version = 0;
  std::string why;
  if (!read_attr(o.file.get(), "format_version", version, &why))
    problems.push_back(printable_path(file) + (why.empty() ? ": not a mini5d checkpoint (no format_version attribute)"
                                           : ": root attribute format_version " + why + " (changed after the save)"));
  else if (version == 1)
    problems.push_back(printable_path(file) + ": checkpoint format version 1 predates the metadata checksum and the dataset "
                       "manifest, so its step, deck and completeness cannot be checked; this build reads version " +
                       std::to_string(kFormatVersion) + " (resume it with the mini5d that wrote it, or start afresh)");
  else if (version != kFormatVersion)
    problems.push_back(printable_path(file) + ": checkpoint format version " + std::to_string(version) +
                       ", this build reads version " + std::to_string(kFormatVersion));
  raise_if_any(comm, problems, ProblemKind::Input);
  read_root_attributes(o.file.get(), file, o.meta, problems);
  raise_if_any(comm, problems, ProblemKind::Input);
  return o;
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

// Recomputed checksums of `paths` (which exist) over an even cover, each byte read
// once; adds the bytes read; with `nonfinite`, also counts each dataset's NaN and
// infinite elements.
std::vector<std::uint64_t> compute_checksums(MPI_Comm comm, const Opened& o, const std::vector<std::string>& paths,
                                             double& bytes, std::vector<std::uint64_t>* nonfinite = nullptr) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  H5Handle dxpl = transfer_for(true);  // an even part is one range of the file
  std::vector<std::uint64_t> sums(paths.size(), 0);
  std::vector<std::string> problems;
  std::vector<float> scratch;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    H5Handle dset(H5Dopen2(o.file.get(), paths[i].c_str(), H5P_DEFAULT), H5Dclose);
    const auto shape = dataset_shape(dset.get());
    const Span part = even_part(element_count(shape), ranks, rank);
    const ShardDescriptor cover = flat_range_shard(shape, part.begin, part.end, 0);
    const auto runs = shard_runs(cover);
    scratch.resize(static_cast<std::size_t>(part.size()));
    if (!transfer(dset.get(), dxpl.get(), Direction::read, &cover, runs, nullptr, scratch.data()))
      problems.push_back(printable_path(o.path) + ": cannot read dataset " + paths[i] + " (" + h5_error_detail() + ")");
    else
      sums[i] = partial_checksum(runs, scratch.data());
    bytes += 4.0 * static_cast<double>(part.size());
    comm::watchdog::progress();
    if (nonfinite) {
      std::uint64_t bad = 0;
      for (float x : scratch) bad += std::isfinite(x) ? 0 : 1;
      nonfinite->push_back(bad);
    }
  }
  raise_if_any(comm, problems, ProblemKind::Input);
  MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_UINT64_T, MPI_SUM, comm);
  if (nonfinite)
    MPI_Allreduce(MPI_IN_PLACE, nonfinite->data(), static_cast<int>(nonfinite->size()), MPI_UINT64_T, MPI_SUM, comm);
  return sums;
}

double summed(MPI_Comm comm, double x) {
  MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, comm);
  return x;
}

// The caller's blocks by dataset, and the datasets any rank asked for.
struct Requests {
  std::map<std::string, std::vector<std::size_t>> mine;  // dataset -> indices into shards
  std::vector<std::vector<Run>> runs;                    // per shard
  std::vector<std::string> paths;                        // every rank's datasets, sorted
};

// The caller's blocks first (its mistakes are not the file's), then what any rank asked for.
Requests gather_requests(MPI_Comm comm, const std::vector<TensorShardOut>& shards) {
  Requests q;
  q.runs.resize(shards.size());
  std::vector<std::string> problems, names;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    if (auto p = descriptor_problem(shards[s].desc); !p.empty())
      problems.push_back("checkpoint load: " + shards[s].dataset + ": " + p);
    else
      q.runs[s] = shard_runs(shards[s].desc);
    for (std::size_t k = 1; k < q.runs[s].size(); ++k)
      if (q.runs[s][k].global < q.runs[s][k - 1].global + q.runs[s][k - 1].length)
        problems.push_back("checkpoint load: " + shards[s].dataset + ": a rank's blocks overlap");
    q.mine[shards[s].dataset].push_back(s);
    names.push_back(shards[s].dataset);
  }
  raise_if_any(comm, problems, ProblemKind::Runtime);
  const auto gathered = allgather_strings(comm, names);
  const std::set<std::string> wanted(gathered.begin(), gathered.end());
  q.paths.assign(wanted.begin(), wanted.end());
  return q;
}

// Every dataset exists, with the shape each rank expects and a checksum; all
// problems are reported together. Returns the stored checksums.
std::vector<std::uint64_t> stored_checksums(MPI_Comm comm, const Opened& o, Requests& q,
                                            const std::vector<TensorShardOut>& shards) {
  const auto& paths = q.paths;
  std::vector<std::string> problems;
  std::vector<std::uint64_t> stored(paths.size(), 0);
  std::set<std::string> listed;
  for (const auto& e : o.meta.manifest) listed.insert(e.path);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!path_exists(o.file.get(), paths[i])) {
      problems.push_back(printable_path(o.path) + ": missing dataset " + paths[i]);
      continue;
    }
    if (!listed.count(paths[i])) problems.push_back(printable_path(o.path) + ": dataset " + paths[i] + " is not in the manifest");
    H5Handle dset(H5Dopen2(o.file.get(), paths[i].c_str(), H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) {
      problems.push_back(printable_path(o.path) + ": " + paths[i] + " is not a dataset");
      continue;
    }
    const auto shape = dataset_shape(dset.get());
    for (std::size_t s : q.mine[paths[i]])
      if (shards[s].desc.global_shape != shape)
        problems.push_back(printable_path(o.path) + ": " + paths[i] + " has shape " + shape_string(shape) + ", the deck needs " +
                           shape_string(shards[s].desc.global_shape));
    std::string why;
    if (!read_attr(dset.get(), "checksum", stored[i], &why))
      problems.push_back(printable_path(o.path) + ": dataset " + paths[i] +
                         (why.empty() ? " has no checksum attribute" : ": its checksum attribute " + why));
  }
  raise_if_any(comm, problems, ProblemKind::Input);
  return stored;
}

// The requested blocks: one read per dataset and round, collective unless every rank's
// part is one range of the file (transfer_for). Returns, per dataset, the sums of the
// elements this rank owns among those it read (read_owners.hpp).
std::vector<OwnedSums> read_requested(MPI_Comm comm, const Opened& o, Requests& q, const ReadPlan& plan,
                                      const std::vector<TensorShardOut>& shards, double& bytes) {
  const auto& paths = q.paths;
  const std::size_t n = paths.size();
  std::vector<int> rounds(2 * n, 0);  // per dataset the most shards one rank reads, then 1 if strided
  for (std::size_t i = 0; i < n; ++i) {
    rounds[i] = static_cast<int>(q.mine[paths[i]].size());
    for (std::size_t s : q.mine[paths[i]]) rounds[n + i] |= runs_are_one_range(q.runs[s]) ? 0 : 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, rounds.data(), static_cast<int>(rounds.size()), MPI_INT, MPI_MAX, comm);
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  H5Handle collective = transfer_for(false), independent = transfer_for(true);
  std::vector<std::string> problems;
  std::vector<OwnedSums> sums(n);
  for (std::size_t i = 0; i < n; ++i) {
    H5Handle dset(H5Dopen2(o.file.get(), paths[i].c_str(), H5P_DEFAULT), H5Dclose);
    const auto shape = dataset_shape(dset.get());
    const auto& idx = q.mine[paths[i]];
    for (int r = 0; r < rounds[i]; ++r) {
      static const std::vector<Run> none;
      const std::size_t k = r < static_cast<int>(idx.size()) ? idx[static_cast<std::size_t>(r)] : shards.size();
      const TensorShardOut* s = k < shards.size() ? &shards[k] : nullptr;
      const hid_t dxpl = rounds[n + i] ? collective.get() : independent.get();
      if (!transfer(dset.get(), dxpl, Direction::read, s ? &s->desc : nullptr, s ? q.runs[k] : none, nullptr,
                    s ? s->data : nullptr))
        problems.push_back(printable_path(o.path) + ": cannot read dataset " + paths[i] + " (" + h5_error_detail() + ")");
      else if (s)
        add_owned_sums(owned_runs(shape, plan.readers[i], plan.my_reader[k], s->desc, ranks), s->data, sums[i]);
      if (s) bytes += 4.0 * static_cast<double>(s->desc.local_elements());
      comm::watchdog::progress();  // a read done: the load's phase clock restarts
    }
  }
  raise_if_any(comm, problems, ProblemKind::Input);
  return sums;
}

// Each dataset's checksum against the stored one, then its NaN and infinite elements.
void check_sums(MPI_Comm comm, const Opened& o, const std::vector<std::string>& paths,
                const std::vector<OwnedSums>& sums, const std::vector<std::uint64_t>& stored) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    H5Handle dset(H5Dopen2(o.file.get(), paths[i].c_str(), H5P_DEFAULT), H5Dclose);
    const auto n = static_cast<std::uint64_t>(element_count(dataset_shape(dset.get())));
    if (sums[i].count != n)  // every element has exactly one owner: a broken rule, not a broken file
      throw std::runtime_error("checkpoint load: " + paths[i] + ": " + std::to_string(sums[i].count) +
                             " elements verified of " + std::to_string(n));
    if (sums[i].checksum != stored[i])
      problems.push_back(printable_path(o.path) + ": checksum mismatch in dataset " + paths[i] + " (stored " + hex(stored[i]) +
                         ", computed " + hex(sums[i].checksum) + ")");
  }
  raise_if_any(comm, problems, ProblemKind::Input);
  // A checksum covers what was written, not whether it can train: a NaN or an infinity
  // in the state would surface steps later as a diverging loss. Named here instead.
  for (std::size_t i = 0; i < paths.size(); ++i)
    if (sums[i].nonfinite > 0)
      problems.push_back(printable_path(o.path) + ": dataset " + paths[i] + " holds " + std::to_string(sums[i].nonfinite) +
                         " NaN or infinite value(s): this checkpoint cannot be resumed");
  raise_if_any(comm, problems, ProblemKind::Input);
}

// Every dataset of the manifest is there as the save wrote it, and nothing else is:
// what a resume of the stored deck would find. All problems at once. Verify and load
// both apply it, so a file one refuses the other refuses too (a stray dataset, one
// rewritten as float64).
void check_manifest(MPI_Comm comm, const Opened& o, const std::vector<std::string>& present) {
  std::vector<std::string> problems;
  std::set<std::string> listed;
  for (const auto& e : o.meta.manifest) {
    listed.insert(e.path);
    if (!path_exists(o.file.get(), e.path)) {
      problems.push_back(printable_path(o.path) + ": missing dataset " + e.path + " (the manifest lists it)");
      continue;
    }
    H5Handle dset(H5Dopen2(o.file.get(), e.path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dset.valid()) {
      problems.push_back(printable_path(o.path) + ": " + e.path + " is not a dataset");
      continue;
    }
    const auto shape = dataset_shape(dset.get());
    if (shape != e.shape)
      problems.push_back(printable_path(o.path) + ": " + e.path + " has shape " + shape_string(shape) + ", the manifest says " +
                         shape_string(e.shape));
    H5Handle type(H5Dget_type(dset.get()), H5Tclose);
    if (H5Tequal(type.get(), H5T_IEEE_F32LE) <= 0)
      problems.push_back(printable_path(o.path) + ": " + e.path + " is not float32 little-endian");
    std::uint64_t sum = 0;
    std::string why;
    if (!read_attr(dset.get(), "checksum", sum, &why))
      problems.push_back(printable_path(o.path) + ": dataset " + e.path +
                         (why.empty() ? " has no checksum attribute" : ": its checksum attribute " + why));
  }
  for (const auto& p : present)
    if (!listed.count(p)) problems.push_back(printable_path(o.path) + ": dataset " + p + " is not in the manifest");
  raise_if_any(comm, problems, ProblemKind::Input);
}

}  // namespace

CheckpointMeta read_checkpoint_meta(MPI_Comm comm, const std::string& path) {
  QuietH5Errors quiet;
  return open_checkpoint(comm, path).meta;
}

IoStats load_checkpoint(MPI_Comm comm, const std::string& path, const std::vector<TensorShardOut>& shards) {
  QuietH5Errors quiet;
  const double t0 = MPI_Wtime();
  const Opened o = open_checkpoint(comm, path);
  check_manifest(comm, o, dataset_paths(o.file.get()));
  Requests q = gather_requests(comm, shards);
  const std::vector<std::uint64_t> stored = stored_checksums(comm, o, q, shards);
  const ReadPlan plan = gather_readers(comm, q.paths, q.mine, shards);
  double bytes = 0;
  auto sums = read_requested(comm, o, q, plan, shards, bytes);
  sums = whole_dataset_sums(comm, o.file.get(), o.path, q.paths, plan, std::move(sums), bytes);
  check_sums(comm, o, q.paths, sums, stored);
  return {summed(comm, bytes), slowest_seconds(comm, t0)};
}

std::vector<DatasetInfo> list_datasets(MPI_Comm comm, const std::string& path) {
  QuietH5Errors quiet;
  const Opened o = open_checkpoint(comm, path);
  std::vector<DatasetInfo> out;
  for (const auto& p : dataset_paths(o.file.get())) {
    H5Handle dset(H5Dopen2(o.file.get(), p.c_str(), H5P_DEFAULT), H5Dclose);
    DatasetInfo d;
    d.path = p;
    d.shape = dataset_shape(dset.get());
    H5Handle type(H5Dget_type(dset.get()), H5Tclose);
    d.bytes = element_count(d.shape) * static_cast<std::int64_t>(H5Tget_size(type.get()));
    read_attr(dset.get(), "checksum", d.checksum);
    out.push_back(d);
  }
  return out;
}

std::vector<VerifyResult> verify_checkpoint(MPI_Comm comm, const std::string& path) {
  QuietH5Errors quiet;
  const Opened o = open_checkpoint(comm, path);
  const auto paths = dataset_paths(o.file.get());
  check_manifest(comm, o, paths);
  std::vector<VerifyResult> out(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    H5Handle dset(H5Dopen2(o.file.get(), paths[i].c_str(), H5P_DEFAULT), H5Dclose);
    out[i].path = paths[i];
    read_attr(dset.get(), "checksum", out[i].stored);  // a missing checksum stays 0: a mismatch
  }
  double bytes = 0;
  std::vector<std::uint64_t> nonfinite;
  const auto computed = compute_checksums(comm, o, paths, bytes, &nonfinite);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    out[i].computed = computed[i];
    out[i].nonfinite = nonfinite[i];
  }
  return out;
}

}  // namespace mini5d::checkpoint
