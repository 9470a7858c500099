// SPDX-License-Identifier: BSD-3-Clause
// save_checkpoint: every rank writes its blocks of every dataset into one file.
//
// Before the file is touched the ranks agree on the set of datasets (the union of what
// they hold, so a pipeline stage may leave out layers it does not own), check the
// blocks, and reduce element counts and checksums in one allreduce: a dataset the
// ranks do not cover exactly once is refused before any byte is written. Then each
// dataset is created collectively and written with one H5Dwrite per "round" (one round
// unless a rank passes several shards of the same dataset): independent where every
// rank's part is one range of the file, collective where some rank's part is strided.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>
#include <thread>

#include "mini5d/checkpoint/agreement_names.hpp"
#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/checkpoint/commit.hpp"
#include "mini5d/checkpoint/h5.hpp"
#include "mini5d/checkpoint/meta.hpp"
#include "mini5d/comm/watchdog.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::checkpoint {

using namespace detail;

std::string dataset_path(const std::string& root, const std::string& tensor_name) {
  std::string r = root;
  while (!r.empty() && r.front() == '/') r.erase(r.begin());
  while (!r.empty() && r.back() == '/') r.pop_back();
  std::string name = tensor_name;
  for (auto& ch : name)
    if (ch == '.') ch = '/';
  return "/" + (r.empty() ? "" : r + "/") + name;
}

namespace {

// One dataset of the file being written and this rank's shards of it.
struct Target {
  std::vector<std::int64_t> shape;
  std::vector<const TensorShard*> mine;
  std::vector<std::vector<Run>> runs;  // per shard in `mine`
};

std::map<std::string, Target> agree_on_datasets(MPI_Comm comm, const std::vector<TensorShard>& shards) {
  // Each rank's datasets as "path\td0,d1,...": the union, with shapes, on every rank.
  std::vector<std::string> mine, problems;
  for (const auto& s : shards) {
    std::string e = s.dataset + '\t';
    for (auto d : s.desc.global_shape) e += std::to_string(d) + ',';
    mine.push_back(e);
  }
  std::map<std::string, Target> targets;
  for (const auto& entry : allgather_strings(comm, mine)) {
    const auto tab = entry.find('\t');
    const std::string path = entry.substr(0, tab);
    std::vector<std::int64_t> shape;
    for (std::size_t pos = tab + 1; pos < entry.size();) {
      const auto comma = entry.find(',', pos);
      shape.push_back(std::stoll(entry.substr(pos, comma - pos)));
      pos = comma + 1;
    }
    auto [it, fresh] = targets.try_emplace(path);
    if (fresh)
      it->second.shape = shape;
    else if (it->second.shape != shape)
      problems.push_back("checkpoint save: ranks disagree on the shape of " + path + ": " +
                         shape_string(it->second.shape) + " and " + shape_string(shape));
  }
  for (const auto& s : shards) {
    if (s.dataset.empty() || s.dataset.front() != '/')
      problems.push_back("checkpoint save: dataset path \"" + s.dataset + "\" is not absolute");
    if (auto p = descriptor_problem(s.desc); !p.empty())
      problems.push_back("checkpoint save: " + s.dataset + ": " + p);
    if (!s.data && s.desc.local_elements() > 0)
      problems.push_back("checkpoint save: " + s.dataset + ": no data pointer");
  }
  raise_if_any(comm, problems, ProblemKind::Runtime);
  for (const auto& s : shards) {
    auto& t = targets[s.dataset];
    t.mine.push_back(&s);
    t.runs.push_back(shard_runs(s.desc));
    const auto& r = t.runs.back();
    for (std::size_t i = 1; i < r.size(); ++i)
      if (r[i].global < r[i - 1].global + r[i - 1].length)
        problems.push_back("checkpoint save: " + s.dataset + ": a rank's blocks overlap");
  }
  raise_if_any(comm, problems, ProblemKind::Runtime);
  return targets;
}

// The caller's metadata, stamped with this format version and the manifest of what
// is written: the datasets all ranks agreed on, with their shapes.
void write_meta(hid_t file, const CheckpointMeta& meta, const std::map<std::string, Target>& targets) {
  CheckpointMeta m = meta;
  m.format_version = kFormatVersion;
  m.manifest.clear();
  for (const auto& [path, t] : targets) m.manifest.push_back({path, t.shape});
  write_root_attributes(file, m);
}

// An upper bound on the file's size: the data, and for the metadata (object headers,
// B-trees, the attributes, the deck text) a generous allowance per dataset and per file,
// with room for the slack cover_layout allocates beyond the last dataset.
std::int64_t file_size_bound(const CheckpointMeta& meta, const std::map<std::string, Target>& targets,
                             double data_bytes) {
  std::int64_t extra = 0;
  for (const auto& [k, v] : meta.extra) extra += static_cast<std::int64_t>(k.size() + v.size());
  // The manifest attributes, a line per dataset (path, dtype, shape), bounded generously:
  // with thousands of datasets they outgrow the fixed allowance.
  for (const auto& [path, t] : targets) extra += static_cast<std::int64_t>(2 * path.size() + 32 + 21 * t.shape.size());
  return static_cast<std::int64_t>(data_bytes) + 1024 * static_cast<std::int64_t>(targets.size() + 1) + 65536 +
         static_cast<std::int64_t>(meta.deck_yaml.size() + meta.layout.size()) + extra;
}

// Per dataset, in the order of `targets`, summed over ranks: [count, checksum,
// non-finite] in `sums`; the most shards one rank holds in `rounds`; and in `strided`,
// 1 if some rank's part of it is not one range of the file (see transfer_for).
struct Coverage {
  std::vector<std::uint64_t> sums;
  std::vector<int> rounds, strided;
};

// Coverage, checksums and non-finite elements, all datasets in one allreduce; rounds
// and strided parts in another.
Coverage reduce_coverage(MPI_Comm comm, const std::map<std::string, Target>& targets) {
  const std::size_t n = targets.size();
  Coverage cov{std::vector<std::uint64_t>(3 * n, 0), {}, {}};
  std::vector<int> most(2 * n, 0);  // rounds, then strided
  std::vector<std::uint64_t>& sums = cov.sums;
  std::size_t i = 0;
  for (const auto& [path, t] : targets) {
    for (std::size_t s = 0; s < t.mine.size(); ++s) {
      sums[3 * i] += static_cast<std::uint64_t>(t.mine[s]->desc.local_elements());
      sums[3 * i + 1] += partial_checksum(t.runs[s], t.mine[s]->data);
      for (const auto& r : t.runs[s])
        for (std::int64_t k = 0; k < r.length; ++k)
          sums[3 * i + 2] += std::isfinite(t.mine[s]->data[r.local + k]) ? 0 : 1;
    }
    most[i] = static_cast<int>(t.mine.size());
    for (const auto& runs : t.runs) most[n + i] |= runs_are_one_range(runs) ? 0 : 1;
    ++i;
  }
  MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, most.data(), static_cast<int>(most.size()), MPI_INT, MPI_MAX, comm);
  cov.rounds.assign(most.begin(), most.begin() + static_cast<std::ptrdiff_t>(n));
  cov.strided.assign(most.begin() + static_cast<std::ptrdiff_t>(n), most.end());
  return cov;
}

// Refuses, on every rank, a dataset the ranks do not cover exactly once or one holding
// NaN or infinite values. Returns the bytes of data the file will hold.
double check_coverage(MPI_Comm comm, const std::string& dir, const std::string& name,
                      const std::map<std::string, Target>& targets, const Coverage& cov) {
  const std::vector<std::uint64_t>& sums = cov.sums;
  std::vector<std::string> problems;
  double bytes = 0;
  std::size_t i = 0;
  for (const auto& [path, t] : targets) {
    const auto want = static_cast<std::uint64_t>(element_count(t.shape));
    if (sums[3 * i] != want)
      problems.push_back("checkpoint save: " + path + ": the ranks' blocks hold " + std::to_string(sums[3 * i]) +
                         " elements, the tensor " + std::to_string(want) + " (they must cover it exactly once)");
    if (sums[3 * i + 2] != 0)
      problems.push_back("checkpoint save: refusing to write " + final_file(dir, name) + ": " + path + " holds " +
                         std::to_string(sums[3 * i + 2]) + " NaN or infinite values (the previous checkpoints are kept)");
    bytes += 4.0 * static_cast<double>(want);
    ++i;
  }
  raise_if_any(comm, problems, ProblemKind::Runtime);
  return bytes;
}

// The open temporary file and the property lists every dataset is created and
// written with; `allocated`: how much of the file rank 0 has allocated (fallocate).
// (H5Fget_eoa and H5Fget_filesize fail on an MPI-IO file being written: HDF5 1.10.)
struct FileWriter {
  MPI_Comm comm;
  std::string tmp;
  hid_t file, lcpl, dcpl;
  hid_t collective, independent;  // transfer_for(false), transfer_for(true)
  std::int64_t* allocated;
  std::int64_t* laid_out;  // the end of the last dataset's data
};

// Room for metadata HDF5 places beside a dataset's data or at the end of the file
// (object headers, the last blocks of its 2 KiB metadata and small-data aggregators).
constexpr std::int64_t kLayoutSlack = 8192;

// Allocates the file up to `end` (where HDF5 has laid it out: a dataset's data, placed
// when the dataset is created, and the metadata beside it), so that no write inside
// HDF5 can fail for want of room. A write that fails on one rank inside a collective
// H5Dwrite or H5Fflush leaves that rank in another of HDF5's and ROMIO's collectives than
// the others: the ranks cannot agree there, so they agree here, before. `end` is the
// same on every rank (allocation in the file is collective), and a reservation that
// covers it makes this a no-op without communication. False once the ranks agree that
// something failed.
bool cover_layout(const FileWriter& w, std::int64_t end, std::vector<std::string>& problems) {
  if (end <= *w.allocated) return true;
  int rank = 0;
  MPI_Comm_rank(w.comm, &rank);
  if (rank == 0 && problems.empty()) {  // one line for a disk that is full, not one per try
    auto p = reserve_space(w.tmp, end, false);
    problems.insert(problems.end(), p.begin(), p.end());
  }
  if (any_rank(w.comm, !problems.empty())) return false;
  *w.allocated = end;
  return true;
}

// Creates one dataset collectively and writes every rank's blocks of it, one write per
// round: collective unless every rank's part is one range of the file. False when the dataset could not be created (creation is collective
// and deterministic, so every rank fails here together and none waits in the writes) or
// its room could not be allocated (agreed by every rank).
bool write_dataset(const FileWriter& w, const std::string& path, const Target& t, std::uint64_t checksum, int rounds,
                   bool strided, std::vector<std::string>& problems) {
  const std::vector<hsize_t> dims(t.shape.begin(), t.shape.end());
  H5Handle space(t.shape.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                 H5Sclose);
  H5Handle dset(H5Dcreate2(w.file, path.c_str(), H5T_IEEE_F32LE, space.get(), w.lcpl, w.dcpl, H5P_DEFAULT), H5Dclose);
  if (!dset.valid()) {
    problems.push_back(printable_path(w.tmp) + ": cannot create dataset " + path + ": " + h5_error_detail());
    return false;
  }
  try {
    write_attr(dset.get(), "checksum", checksum);
  } catch (const std::exception& e) {
    problems.push_back(printable_path(w.tmp) + ": " + path + ": " + e.what());
  }
  // Contiguous and allocated at creation: the data's place in the file is known now.
  const haddr_t offset = H5Dget_offset(dset.get());
  if (offset != HADDR_UNDEF)
    *w.laid_out = std::max<std::int64_t>(*w.laid_out, static_cast<std::int64_t>(offset + H5Dget_storage_size(dset.get())));
  if (!cover_layout(w, *w.laid_out + kLayoutSlack, problems)) return false;
  for (int r = 0; r < rounds; ++r) {
    const bool have = r < static_cast<int>(t.mine.size());
    static const std::vector<Run> none;
    std::string why;
    if (!transfer(dset.get(), strided ? w.collective : w.independent, Direction::write, have ? &t.mine[r]->desc : nullptr, have ? t.runs[r] : none,
                  have ? t.mine[r]->data : nullptr, nullptr, &why))
      problems.push_back(printable_path(w.tmp) + ": writing " + path + " failed: " + why);
  }
  return true;
}

// Writes the metadata and every dataset into the open file, of which rank 0 has
// allocated `allocated` bytes; what went wrong on this rank is added to `problems`.
// False once the ranks agree that something failed (on any rank).
bool write_contents(MPI_Comm comm, const std::string& tmp, hid_t file, std::int64_t allocated,
                    const CheckpointMeta& meta, const std::map<std::string, Target>& targets, const Coverage& cov,
                    FailPoints fail, std::vector<std::string>& problems) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::size_t n = targets.size();
  try {
    write_meta(file, meta, targets);
  } catch (const std::exception& e) {
    problems.push_back(printable_path(tmp) + ": " + e.what());
  }
  H5Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose), dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  // Every element is written once: skip the fill pass. Early allocation is what
  // parallel HDF5 needs for contiguous datasets anyway.
  H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);
  H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY);
  H5Handle collective = transfer_for(false), independent = transfer_for(true);
  std::int64_t laid_out = 0;
  const FileWriter w{comm, tmp, file, lcpl.get(), dcpl.get(), collective.get(), independent.get(), &allocated, &laid_out};
  std::size_t i = 0;
  for (const auto& [path, t] : targets) {
    if (fail.has(FailPoint::SlowWrite)) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const bool strided = cov.strided[i] != 0;
    if (!write_dataset(w, path, t, cov.sums[3 * i + 1], cov.rounds[i], strided, problems)) break;
    ++i;
    if (fail.has(FailPoint::StallWrite) && i == (n + 1) / 2 && rank == size - 1)
      std::this_thread::sleep_for(std::chrono::seconds(120));
    if (fail.has(FailPoint::WriteError) && i == (n + 1) / 2 && rank == size - 1)
      problems.push_back(printable_path(tmp) + ": writing " + path + " failed on rank " + std::to_string(rank) +
                         ": MINI5D_CKPT_FAIL=write_error (injected)");
    // The ranks agree after every collective write: one that failed on one rank only (an
    // I/O error; not for want of room, see cover_layout) stops them all here together.
    // An independent write waits in nobody's collective: its failure is agreed on at the
    // next collective write, or once all are written.
    if (strided && any_rank(comm, !problems.empty())) return false;
    comm::watchdog::progress();
    if (fail.has(FailPoint::MidWrite) && i == (n + 1) / 2) inject_failure(comm, "in the middle of writing datasets");
    if (fail.has(FailPoint::PauseMidWrite) && i == (n + 1) / 2) {
      pause_for_test(comm, tmp + ".paused");
      comm::watchdog::progress();
    }
  }
  if (fail.has(FailPoint::FlushError) && rank == size - 1)
    problems.push_back(printable_path(tmp) + ": flushing failed on rank " + std::to_string(rank) +
                       ": MINI5D_CKPT_FAIL=flush_error (injected)");
  // The flush writes the metadata: its room too, and every problem so far, agreed before it.
  return cover_layout(w, laid_out + 2 * kLayoutSlack, problems) && !any_rank(comm, !problems.empty());
}

// Writes the temporary file `tmp` (reserved with `reservation` bytes) and closes it on
// every rank, also when something failed; what went wrong on this rank is added to
// `problems`.
void write_file(MPI_Comm comm, const std::string& tmp, std::int64_t reservation, const CheckpointMeta& meta,
                const std::map<std::string, Target>& targets, const Coverage& cov, FailPoints fail,
                std::vector<std::string>& problems) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string detail;
  H5Handle file = open_file(comm, tmp, true, detail);
  if (!file.valid()) problems.push_back(printable_path(tmp) + ": cannot create checkpoint file: " + detail);
  raise_if_any(comm, problems, ProblemKind::Runtime);
  // H5Fcreate truncated the file, which freed the room reserved before it: reserve it
  // again, in the file HDF5 now writes to (see reserve_space).
  if (rank == 0) problems = reserve_space(tmp, reservation, false);
  bool ok = !any_rank(comm, !problems.empty()) &&
            write_contents(comm, tmp, file.get(), reservation, meta, targets, cov, fail, problems);
  comm::watchdog::progress();
  if (ok) {
    // Flushing makes every rank's data durable (MPI_File_sync) before the rename.
    if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) problems.push_back(printable_path(tmp) + ": cannot flush: " + h5_error_detail());
    ok = !any_rank(comm, !problems.empty());
    comm::watchdog::progress();
  }
  if (!ok) {
    // The file is discarded: empty it first, so that the close, which writes what the
    // flush did not, finds room on a full disk and ends the same way on every rank.
    // A file left open would be closed by HDF5 inside MPI_Finalize, which crashes.
    if (rank == 0) release_space(tmp);
    MPI_Barrier(comm);
  }
  if (file.close() < 0) problems.push_back(printable_path(tmp) + ": cannot close: " + h5_error_detail());
}

}  // namespace

IoStats save_checkpoint(MPI_Comm comm, const std::string& dir, const std::string& name,
                        const CheckpointMeta& meta, const std::vector<TensorShard>& shards,
                        int keep_last) {
  QuietH5Errors quiet;
  const double t0 = MPI_Wtime();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (auto p = name_problem(name); !p.empty()) throw std::invalid_argument("checkpoint save: " + p);
  const auto targets = agree_on_datasets(comm, shards);
  const Coverage cov = reduce_coverage(comm, targets);
  const double bytes = check_coverage(comm, dir, name, targets, cov);
  comm::watchdog::progress();

  std::vector<std::string> problems;
  const std::string tmp = temp_file(dir, name);
  const FailPoints fail = fail_points_from_env();
  const std::int64_t bound = file_size_bound(meta, targets, bytes);
  const std::int64_t reservation = fail.has(FailPoint::SmallReserve) ? bound / 4 : bound;
  if (rank == 0) {
    problems = ensure_directory(dir);
    if (problems.empty()) problems = reserve_space(tmp, reservation, true);
  }
  raise_if_any(comm, problems, ProblemKind::Runtime);
  comm::watchdog::progress();
  write_file(comm, tmp, reservation, meta, targets, cov, fail, problems);
  // Every rank has closed the file (the handles above): a failed save leaves no
  // temporary behind, and the previous checkpoint and `latest` untouched.
  if (any_rank(comm, !problems.empty()) && rank == 0) discard_temp(tmp);
  raise_if_any(comm, problems, ProblemKind::Runtime);
  MPI_Barrier(comm);  // every rank has closed the file
  if (fail.has(FailPoint::AfterWrite)) inject_failure(comm, "after writing, before the rename");
  comm::watchdog::progress();
  if (rank == 0) problems = commit(dir, name, keep_last, meta.run_id);
  raise_if_any(comm, problems, ProblemKind::Runtime);
  return {bytes, slowest_seconds(comm, t0)};
}

}  // namespace mini5d::checkpoint
