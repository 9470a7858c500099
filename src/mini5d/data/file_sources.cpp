// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/data/file_sources.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "mini5d/core/counter_rng.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/core/regular_file.hpp"

namespace mini5d::data {

namespace {
constexpr char kMagic[8] = {'M', 'I', 'N', 'I', '5', 'D', 'T', 'K'};
constexpr std::uint64_t kWindowStream = 0x77696e646f77ULL;  // "window"

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

MappedFile::MappedFile(const std::string& path) {
  const std::string shown = printable_path(path);
  // The one opener of input files (core/regular_file.hpp): a FIFO opens at once and is
  // refused instead of waiting for a writer; a device is refused too.
  FileRead r;
  const int fd = open_regular_file(path, r);
  if (r.status == FileRead::Status::cannot_open) throw InputError(shown + ": cannot open data file (" + r.why + ")");
  if (r.status == FileRead::Status::directory) throw InputError(shown + ": data.path is a directory, not a data file");
  if (fd < 0) throw InputError(shown + ": data.path is not a regular file (it is " + r.why + ")");
  struct stat st {};
  ::fstat(fd, &st);
  size_ = std::size_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw InputError(shown + ": cannot map data file (" + why + ")");
    }
    data_ = static_cast<const unsigned char*>(p);
  }
  ::close(fd);  // the mapping keeps the file
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
}

WindowSource::WindowSource(std::shared_ptr<const MappedFile> file, std::size_t offset, int width, std::uint64_t count,
                           int vocab, std::uint64_t seed, std::string what)
    : file_(std::move(file)), base_(file_->data() + offset), width_(width), count_(count), vocab_(vocab), seed_(seed),
      what_(std::move(what)) {}

int WindowSource::token(std::uint64_t i) const {
  const char* p = reinterpret_cast<const char*>(base_ + i * std::uint64_t(width_));
  if (width_ == 1) return int(static_cast<unsigned char>(*p));
  return width_ == 2 ? int(read_le<std::uint16_t>(p)) : int(read_le<std::uint32_t>(p));
}

void WindowSource::sequence(std::uint64_t step, std::uint64_t index, int length, int* out) const {
  const std::uint64_t starts = count_ - std::uint64_t(length) + 1;
  const std::uint64_t at = rng::key(rng::key(seed_, kWindowStream, step), index, 0) % starts;
  for (int i = 0; i < length; ++i) out[i] = token(at + std::uint64_t(i));
}

std::unique_ptr<WindowSource> load_text_file(const std::string& path, int seq, std::uint64_t seed) {
  auto file = std::make_shared<const MappedFile>(path);
  const std::size_t n = file->size();
  if (n == 0) throw InputError(printable_path(path) + ": data file is empty");
  if (n < std::size_t(seq) + 1)
    throw InputError(printable_path(path) + ": data file has " + std::to_string(n) + " bytes, fewer than model.seq + 1 = " +
                     std::to_string(seq + 1));
  return std::make_unique<WindowSource>(file, 0, 1, n, 256, seed,
                                        "text(" + printable_path(path) + ", " + std::to_string(n) + " bytes, mapped)");
}

std::unique_ptr<WindowSource> load_token_file(const std::string& path, int seq, int model_vocab,
                                              std::uint64_t seed) {
  auto file = std::make_shared<const MappedFile>(path);
  const std::size_t size = file->size();
  const char* bytes = reinterpret_cast<const char*>(file->data());
  if (size == 0) throw InputError(printable_path(path) + ": token file is empty");
  if (size < 32 || std::memcmp(bytes, kMagic, 8) != 0)
    throw InputError(printable_path(path) + ": not a mini5d token file (expected the 32-byte header starting \"MINI5DTK\")");
  const auto version = read_le<std::uint32_t>(bytes + 8);
  const auto width = read_le<std::uint32_t>(bytes + 12);
  const auto count = read_le<std::uint64_t>(bytes + 16);
  const auto vocab = read_le<std::uint32_t>(bytes + 24);
  if (version != 1)
    throw InputError(printable_path(path) + ": token file version " + std::to_string(version) + ", this build reads version 1");
  if (width != 2 && width != 4)
    throw InputError(printable_path(path) + ": bytes per token is " + std::to_string(width) + ", expected 2 or 4");
  if (count > (size - 32) / width || size != 32 + count * width)
    throw InputError(printable_path(path) + ": header says " + std::to_string(count) + " tokens of " + std::to_string(width) +
                     " bytes, but the file holds " + std::to_string(size - 32) +
                     " bytes of tokens (truncated or corrupt)");
  if (vocab == 0 || vocab > std::uint32_t(model_vocab))
    throw InputError(printable_path(path) + ": vocabulary size " + std::to_string(vocab) + " must be in [1, model.vocab=" +
                     std::to_string(model_vocab) + "]");
  if (count < std::uint64_t(seq) + 1)
    throw InputError(printable_path(path) + ": holds " + std::to_string(count) + " tokens, fewer than model.seq + 1 = " +
                     std::to_string(seq + 1));
  auto src = std::make_unique<WindowSource>(file, 32, int(width), count, int(vocab), seed,
                                            "tokens(" + path + ", " + std::to_string(count) + " tokens, mapped)");
  // One sequential pass over the map: every token in range (the file's vocabulary).
  for (std::uint64_t i = 0; i < count; ++i)
    if (std::uint32_t(src->token(i)) >= vocab)
      throw InputError(printable_path(path) + ": token " + std::to_string(i) + " is " + std::to_string(std::uint32_t(src->token(i))) +
                       ", outside the file's vocabulary [0, " + std::to_string(vocab - 1) + "]");
  return src;
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
  if (!os) throw InputError(printable_path(path) + ": cannot write token file");
}

}  // namespace mini5d::data
