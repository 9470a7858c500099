// SPDX-License-Identifier: BSD-3-Clause
// Sources backed by a file: the bytes of any text file (vocab 256), and the mini5d
// pre-tokenised format. Each sequence is a window at an offset that is a pure function
// of (seed, step, index).
//
// Token file format (little-endian), 32-byte header then the tokens:
//   0  char[8]  magic "MINI5DTK"
//   8  uint32   format version (1)
//   12 uint32   bytes per token (2 for uint16, 4 for uint32)
//   16 uint64   number of tokens
//   24 uint32   vocabulary size (every token is below it)
//   28 uint32   reserved, 0
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "mini5d/data/source.hpp"

namespace mini5d::data {

// A read-only, shared memory map of a whole file. The pages are the page cache's: a
// 2 GB corpus costs each rank no private memory, and the ranks of a node share one
// copy, read lazily (only the windows sampled are ever touched).
class MappedFile {
 public:
  // Throws InputError naming the file: missing, a directory, unreadable, empty.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

// Windows of a run of tokens stored in a mapped file: `count` tokens of `width` bytes
// (1: text bytes; 2 or 4: little-endian token ids) from byte `offset`.
class WindowSource : public Source {
 public:
  WindowSource(std::shared_ptr<const MappedFile> file, std::size_t offset, int width, std::uint64_t count, int vocab,
               std::uint64_t seed, std::string what);
  void sequence(std::uint64_t step, std::uint64_t index, int length, int* out) const override;
  std::string describe() const override { return what_; }
  int vocab() const override { return vocab_; }
  // The map is shared, evictable page cache, not this rank's memory.
  std::int64_t memory_bytes() const override { return 0; }
  std::size_t size() const { return std::size_t(count_); }
  int token(std::uint64_t i) const;

 private:
  std::shared_ptr<const MappedFile> file_;
  const unsigned char* base_;
  int width_;
  std::uint64_t count_;
  int vocab_;
  std::uint64_t seed_;
  std::string what_;
};

// Throws InputError naming the file for a missing, empty or too short file, or a path
// that is a directory.
std::unique_ptr<WindowSource> load_text_file(const std::string& path, int seq, std::uint64_t seed);
// Throws InputError naming the file and the problem (magic, version, width, size,
// token out of range, vocab larger than the model's).
std::unique_ptr<WindowSource> load_token_file(const std::string& path, int seq, int model_vocab,
                                              std::uint64_t seed);
// Writes a token file (used by tests and the converter script's C++ twin).
void write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens, int vocab,
                      int bytes_per_token);

}  // namespace mini5d::data
