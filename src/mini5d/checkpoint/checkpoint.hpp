// SPDX-License-Identifier: BSD-3-Clause
// Sharded checkpoints in one parallel-HDF5 file (docs/checkpoints.md). Every logical tensor is
// one float32 dataset in its full, unsharded shape ("/model/blocks/3/attn/qkv/weight",
// "/optimizer/exp_avg/wte", ...); each rank names the parts it holds with shard
// descriptors (core/shard.hpp), so any layout writes the same file and any layout can
// read it back (resharding is just reading other blocks). Metadata (step, deck, layout,
// seeds, data cursor, the manifest of datasets) are attributes on the root, covered by
// a checksum of their own; each dataset carries a checksum that does not depend on the
// layout. Saves are atomic: a crash leaves the previous
// checkpoint and the `latest` pointer intact.
//
// Every function taking an MPI_Comm is collective over it. Problems with the file (it
// is missing, truncated, not HDF5, lacks a dataset, has another shape, fails its
// checksum) throw InputError with the same message on every rank, so no rank is left
// waiting in a collective; anything else (an I/O failure while saving, a caller
// passing blocks outside the tensor) throws std::runtime_error, also on every rank.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mini5d/core/shard.hpp"

namespace mini5d::checkpoint {

// 2: root attributes covered by meta_checksum, and a manifest of the datasets. Files of
// version 1 are refused: nothing in them shows whether their step or deck was edited.
constexpr int kFormatVersion = 2;

// The part of one dataset this rank writes: `data` holds the elements the descriptor's
// blocks place at their local offsets. Over all ranks the blocks of a dataset must
// cover it exactly once.
struct TensorShard {
  std::string dataset;  // e.g. dataset_path("model", "wte") = "/model/wte"
  ShardDescriptor desc;
  const float* data = nullptr;
};

// The part of one dataset this rank reads; blocks may overlap other ranks' blocks.
struct TensorShardOut {
  std::string dataset;
  ShardDescriptor desc;
  float* data = nullptr;
};

// One dataset as the save wrote it (every dataset is float32).
struct ManifestEntry {
  std::string path;
  std::vector<std::int64_t> shape;
  bool operator==(const ManifestEntry& o) const { return path == o.path && shape == o.shape; }
};

// Root attributes. Must be the same on every rank when saving.
struct CheckpointMeta {
  int format_version = kFormatVersion;  // set by save; checked by load
  long step = 0;
  std::int64_t tokens_seen = 0;
  std::string deck_yaml;  // Deck::to_yaml(): resume re-parses it
  std::string layout;     // e.g. {"d":2,"t":1,"p":1,"c":1,"e":1,"zero":1}
  std::uint64_t train_seed = 0, data_seed = 0;  // the RNG state: all randomness is counter-based
  long data_cursor = 0;   // the next step whose sequences the sampler draws
  std::string run_id;     // the run that wrote it (checkpoint/run_identity.hpp); "" if none
  std::map<std::string, std::string> extra;  // free-form, stored as "extra.<key>" attributes
  std::vector<ManifestEntry> manifest;  // set by save (the datasets it writes); read back by load
};

// What one save or load moved: `bytes` summed over all ranks (a load counts what the
// ranks asked for and the elements nobody did, read once for their checksum),
// `seconds` the wall time of the slowest rank, so bytes / seconds is the aggregate
// bandwidth.
struct IoStats {
  double bytes = 0, seconds = 0;
};

// One dataset of a checkpoint as `ckpt info` lists it.
struct DatasetInfo {
  std::string path;
  std::vector<std::int64_t> shape;
  std::int64_t bytes = 0;
  std::uint64_t checksum = 0;  // stored attribute
};

// One dataset's checksum, recomputed, and its NaN and infinite elements counted.
struct VerifyResult {
  std::string path;
  std::uint64_t stored = 0, computed = 0;
  std::uint64_t nonfinite = 0;
  bool ok() const { return stored == computed && nonfinite == 0; }
};

// "model", "blocks.3.attn.qkv.weight" -> "/model/blocks/3/attn/qkv/weight".
std::string dataset_path(const std::string& root, const std::string& tensor_name);

// Writes "<dir>/<name>.h5" atomically (via "<name>.h5.tmp" and a rename), points
// "<dir>/latest" at it (second line: "run <meta.run_id>"), then deletes all but the
// newest `keep_last` checkpoints of the same run (meta.run_id; other runs' files are
// never deleted; 0 keeps all) and stale .tmp files. Creates `dir` if needed. A rank may
// leave out datasets it holds nothing of. Refuses (an error on every rank, nothing
// written) data holding NaN or infinite values. The temporary file is allocated at full
// size first, so a disk without room fails before any collective write, and stays
// allocated while HDF5 writes it, so a disk filling up meanwhile takes none of its room;
// any failure after that is agreed by every rank after each dataset and before the
// flush, the temporary is closed on every rank and removed, and the previous
// checkpoints and `latest` stay as they were. Inside a watchdog scope that measures
// progress, each dataset and agreement counts as progress. Failure injection for tests:
// the environment variable MINI5D_CKPT_FAIL (see commit.hpp), e.g. =mid_write or
// =after_write aborts the job half-way through the datasets or after the file is
// complete but before the rename.
IoStats save_checkpoint(MPI_Comm comm, const std::string& dir, const std::string& name,
                        const CheckpointMeta& meta, const std::vector<TensorShard>& shards,
                        int keep_last);

// A checkpoint directory (its `latest`), a `latest` pointer file, or a checkpoint file
// -> the checkpoint file's path. Throws InputError naming what is missing. Not collective.
std::string resolve_checkpoint(const std::string& path);

// `path` as resolve_checkpoint takes it. Throws InputError if the file cannot be read
// as a mini5d checkpoint of this format version, or its root attributes fail their
// checksum or disagree with each other (data_cursor and step, tokens_seen and
// extra.tokens_per_step, a step-NNNNNNNN.h5 name and step); every reader below checks
// the same.
CheckpointMeta read_checkpoint_meta(MPI_Comm comm, const std::string& path);

// Reads every requested block and verifies the checksum of every dataset any rank
// asked for, from what was read: each byte of the file is read once, whatever the
// blocks (read_owners.hpp). Checks every dataset exists with the descriptor's global shape and is in
// the file's manifest first and reports all problems at once.
IoStats load_checkpoint(MPI_Comm comm, const std::string& path,
                        const std::vector<TensorShardOut>& shards);

// Every dataset in the file, in natural order (blocks/2 before blocks/10).
std::vector<DatasetInfo> list_datasets(MPI_Comm comm, const std::string& path);

// Checks the file holds exactly the datasets of its manifest (each float32, of the
// manifest's shape, with a checksum attribute; InputError listing every problem), then
// recomputes the checksum of every dataset: what a resume of the stored deck reads.
std::vector<VerifyResult> verify_checkpoint(MPI_Comm comm, const std::string& path);

}  // namespace mini5d::checkpoint
