// SPDX-License-Identifier: BSD-3-Clause
// The root attributes as one checked record (private to checkpoint/). Resume trusts
// them as much as the tensors, so they carry a checksum of their own ("meta_checksum",
// FNV-1a 64 over a canonical text of every field resume reads, the manifest
// included), and the ones that follow from each other are cross-checked: data_cursor
// is the step, tokens_seen is step x tokens per step, a step-NNNNNNNN.h5 file is at step
// NNNNNNNN. The manifest lists every dataset the save wrote, with its shape, so a file
// missing one is found by `ckpt verify` as well as by the load.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mini5d/checkpoint/checkpoint.hpp"

namespace mini5d::checkpoint::detail {

// The canonical text the checksum covers: "name=length:value\n" per field, in a fixed
// order (extra.* by key, the manifest last), so no two records share a text.
std::string canonical_meta(const CheckpointMeta& m);
// FNV-1a 64 of canonical_meta(m).
std::uint64_t meta_checksum(const CheckpointMeta& m);

// "path\tfloat32\td0,d1,...\n" per dataset, and back (false on a malformed line).
std::string manifest_text(const std::vector<ManifestEntry>& manifest);
bool parse_manifest(const std::string& text, std::vector<ManifestEntry>& out);

// Writes every field of `m` (its manifest included) and meta_checksum over them.
void write_root_attributes(hid_t file, const CheckpointMeta& m);
// Reads them back into `m`; adds one line per problem (naming `path` and the
// attribute): a missing attribute, a checksum mismatch, counters that disagree.
void read_root_attributes(hid_t file, const std::string& path, CheckpointMeta& m, std::vector<std::string>& problems);

}  // namespace mini5d::checkpoint::detail
