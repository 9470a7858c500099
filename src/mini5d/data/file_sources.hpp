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
#include <vector>

#include "mini5d/data/source.hpp"

namespace mini5d::data {

class WindowSource : public Source {
 public:
  WindowSource(std::vector<int> tokens, int vocab, std::uint64_t seed, std::string what);
  void sequence(std::uint64_t step, std::uint64_t index, int length, int* out) const override;
  std::string describe() const override { return what_; }
  int vocab() const override { return vocab_; }
  std::int64_t memory_bytes() const override { return std::int64_t(tokens_.size() * sizeof(int)); }
  std::size_t size() const { return tokens_.size(); }

 private:
  std::vector<int> tokens_;
  int vocab_;
  std::uint64_t seed_;
  std::string what_;
};

// Throws InputError naming the file for a missing, empty or too short file.
std::unique_ptr<WindowSource> load_text_file(const std::string& path, int seq, std::uint64_t seed);
// Throws InputError naming the file and the problem (magic, version, width, size,
// token out of range, vocab larger than the model's).
std::unique_ptr<WindowSource> load_token_file(const std::string& path, int seq, int model_vocab,
                                              std::uint64_t seed);
// Writes a token file (used by tests and the converter script's C++ twin).
void write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens, int vocab,
                      int bytes_per_token);

}  // namespace mini5d::data
