// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/data/file_sources.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "mini5d/core/counter_rng.hpp"
#include "mini5d/core/error.hpp"

namespace mini5d::data {

namespace {
constexpr char kMagic[8] = {'M', 'I', 'N', 'I', '5', 'D', 'T', 'K'};
constexpr std::uint64_t kWindowStream = 0x77696e646f77ULL;  // "window"

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open data file (" + std::strerror(errno) + ")");
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <class T>
T read_le(const char* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= T(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
template <class T>
void put_le(std::ostream& os, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) os.put(char((v >> (8 * i)) & 0xff));
}
}  // namespace

WindowSource::WindowSource(std::vector<int> tokens, int vocab, std::uint64_t seed, std::string what)
    : tokens_(std::move(tokens)), vocab_(vocab), seed_(seed), what_(std::move(what)) {}

void WindowSource::sequence(std::uint64_t step, std::uint64_t index, int length, int* out) const {
  const std::uint64_t starts = tokens_.size() - std::size_t(length) + 1;
  const std::uint64_t at = rng::key(rng::key(seed_, kWindowStream, step), index, 0) % starts;
  for (int i = 0; i < length; ++i) out[i] = tokens_[at + std::size_t(i)];
}

std::unique_ptr<WindowSource> load_text_file(const std::string& path, int seq, std::uint64_t seed) {
  const auto bytes = read_all(path);
  if (bytes.empty()) throw InputError(path + ": data file is empty");
  if (bytes.size() < std::size_t(seq) + 1)
    throw InputError(path + ": data file has " + std::to_string(bytes.size()) +
                     " bytes, fewer than model.seq + 1 = " + std::to_string(seq + 1));
  std::vector<int> toks(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) toks[i] = static_cast<unsigned char>(bytes[i]);
  return std::make_unique<WindowSource>(std::move(toks), 256, seed,
                                        "text(" + path + ", " + std::to_string(bytes.size()) + " bytes)");
}

std::unique_ptr<WindowSource> load_token_file(const std::string& path, int seq, int model_vocab,
                                              std::uint64_t seed) {
  const auto bytes = read_all(path);
  if (bytes.empty()) throw InputError(path + ": token file is empty");
  if (bytes.size() < 32 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw InputError(path + ": not a mini5d token file (expected the 32-byte header starting \"MINI5DTK\")");
  const auto version = read_le<std::uint32_t>(&bytes[8]);
  const auto width = read_le<std::uint32_t>(&bytes[12]);
  const auto count = read_le<std::uint64_t>(&bytes[16]);
  const auto vocab = read_le<std::uint32_t>(&bytes[24]);
  if (version != 1)
    throw InputError(path + ": token file version " + std::to_string(version) + ", this build reads version 1");
  if (width != 2 && width != 4)
    throw InputError(path + ": bytes per token is " + std::to_string(width) + ", expected 2 or 4");
  if (count > (bytes.size() - 32) / width || bytes.size() != 32 + count * width)
    throw InputError(path + ": header says " + std::to_string(count) + " tokens of " +
                     std::to_string(width) + " bytes, but the file holds " +
                     std::to_string(bytes.size() - 32) + " bytes of tokens (truncated or corrupt)");
  if (vocab == 0 || vocab > std::uint32_t(model_vocab))
    throw InputError(path + ": vocabulary size " + std::to_string(vocab) +
                     " must be in [1, model.vocab=" + std::to_string(model_vocab) + "]");
  if (count < std::uint64_t(seq) + 1)
    throw InputError(path + ": holds " + std::to_string(count) + " tokens, fewer than model.seq + 1 = " +
                     std::to_string(seq + 1));
  std::vector<int> toks(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const char* p = &bytes[32 + i * width];
    const std::uint32_t t = width == 2 ? read_le<std::uint16_t>(p) : read_le<std::uint32_t>(p);
    if (t >= vocab)
      throw InputError(path + ": token " + std::to_string(i) + " is " + std::to_string(t) +
                       ", outside the file's vocabulary [0, " + std::to_string(vocab - 1) + "]");
    toks[i] = int(t);
  }
  return std::make_unique<WindowSource>(std::move(toks), int(vocab), seed,
                                        "tokens(" + path + ", " + std::to_string(count) + " tokens)");
}

void write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens, int vocab,
                      int bytes_per_token) {
  std::ofstream os(path, std::ios::binary);
  os.write(kMagic, 8);
  put_le<std::uint32_t>(os, 1);
  put_le<std::uint32_t>(os, std::uint32_t(bytes_per_token));
  put_le<std::uint64_t>(os, tokens.size());
  put_le<std::uint32_t>(os, std::uint32_t(vocab));
  put_le<std::uint32_t>(os, 0);
  for (auto t : tokens) {
    if (bytes_per_token == 2)
      put_le<std::uint16_t>(os, std::uint16_t(t));
    else
      put_le<std::uint32_t>(os, t);
  }
  if (!os) throw InputError(path + ": cannot write token file");
}

}  // namespace mini5d::data
