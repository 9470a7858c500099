// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer harness for the token-file and text-file readers. The
// input is written to a file and loaded both ways; a loaded source must give windows
// inside the file's vocabulary. Anything but success or InputError is a bug.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "mini5d/core/error.hpp"
#include "mini5d/data/file_sources.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    std::atexit([] { std::remove(("/tmp/mini5d-fuzz-" + std::to_string(::getpid()) + ".bin").c_str()); });
    return "/tmp/mini5d-fuzz-" + std::to_string(::getpid()) + ".bin";
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const int seq = 4;
  std::vector<int> window(seq + 1);
  try {
    auto src = mini5d::data::load_token_file(path, seq, 1 << 16, 1);
    for (std::uint64_t i = 0; i < 4; ++i) {
      src->sequence(0, i, seq + 1, window.data());
      for (int t : window)
        if (t < 0 || t >= src->vocab()) std::abort();
    }
  } catch (const mini5d::InputError&) {
  }
  try {
    auto src = mini5d::data::load_text_file(path, seq, 1);
    src->sequence(1, 2, seq + 1, window.data());
    for (int t : window)
      if (t < 0 || t > 255) std::abort();
  } catch (const mini5d::InputError&) {
  }
  return 0;
}
