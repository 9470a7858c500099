// SPDX-License-Identifier: BSD-3-Clause
// FNV-1a, 64-bit: a hash that is the same on every rank, build and platform (std::hash
// is not promised to be) and simple enough to recompute outside mini5d (the checkpoint
// metadata checksum is checked that way with h5py). Not cryptographic: it detects
// corruption and accidental edits, not forgery.
#pragma once
#include <cstdint>
#include <string>

namespace mini5d {

inline std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;  // the offset basis
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;  // the prime
  }
  return h;
}

}  // namespace mini5d
