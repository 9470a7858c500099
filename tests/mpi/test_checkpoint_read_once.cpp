// SPDX-License-Identifier: BSD-3-Clause
// A load reads each byte of a checkpoint once and still verifies every dataset whole
// (run at 1, 2 and 4 ranks). The owner rule first, on its own: over any set of
// requests (replicas, partial overlaps, strided boxes, gaps), the owned runs and the
// unread spans count every element exactly once. Then a file saved as ZeRO flat parts
// on all ranks, read back in another layout whose requests overlap, are strided and
// leave gaps: the values are right, the bytes are the requests plus the gaps only,
// and a flipped byte is caught wherever it lies: where one rank alone reads it (the
// last one too), where two ranks read it, where nobody asked for it. A NaN read by two
// ranks counts once.
#include <catch2/catch.hpp>

#include "ckpt_mpi_util.hpp"
#include "ckpt_test_util.hpp"
#include "mini5d/checkpoint/read_owners.hpp"

using namespace mini5d;
using namespace mini5d::checkpoint;
using namespace ckpt_mpi;

namespace {

ShardBlock box(std::vector<std::int64_t> offset, std::vector<std::int64_t> extent, std::int64_t local = 0) {
  return {std::move(offset), std::move(extent), local};
}

// How many times each element is counted: by its owner among the readers, or as unread
// by the even part (of `parts`) that holds it.
std::vector<int> counted(const std::vector<std::int64_t>& shape, const std::vector<Reader>& readers, int parts) {
  std::vector<int> seen(static_cast<std::size_t>(element_count(shape)), 0);
  for (std::size_t r = 0; r < readers.size(); ++r)
    for (const auto& run : owned_runs(shape, readers, r, ShardDescriptor{shape, readers[r].blocks}, parts))
      for (std::int64_t k = 0; k < run.length; ++k) ++seen[static_cast<std::size_t>(run.global + k)];
  for (int p = 0; p < parts; ++p)
    for (const auto& s : unread_spans(shape, readers, even_part(element_count(shape), parts, p)))
      for (std::int64_t i = s.begin; i < s.end; ++i) ++seen[static_cast<std::size_t>(i)];
  return seen;
}

}  // namespace

TEST_CASE("owner rule: every element counted once, whatever the requests", "[checkpoint]") {
  const std::vector<std::int64_t> shape{6, 7};
  const auto whole = box({0, 0}, {6, 7});
  const std::vector<std::vector<Reader>> cases{
      {{0, {whole}}, {1, {whole}}, {2, {whole}}},                            // replicas
      {{0, {box({0, 0}, {6, 3})}}, {1, {box({0, 3}, {6, 4})}}},              // column stripes
      {{0, {box({0, 0}, {4, 7})}}, {1, {box({2, 2}, {4, 3})}}},              // a partial overlap
      {{0, {box({1, 1}, {2, 2})}}, {1, {box({4, 0}, {1, 7}), box({5, 6}, {1, 1})}}},  // gaps
      {{0, {}}, {0, {box({3, 0}, {3, 7})}}, {2, {box({0, 0}, {6, 7})}}},     // an empty reader, two of one rank
      {}};                                                                   // nobody
  for (std::size_t c = 0; c < cases.size(); ++c)
    for (int parts : {3, 4, 7}) {
      const auto seen = counted(shape, cases[c], parts);
      INFO("case " << c << ", " << parts << " parts");
      CHECK(std::count(seen.begin(), seen.end(), 1) == 42);
    }
  // Replicas share the checksum's work: each of three owns its even part.
  for (std::size_t r = 0; r < 3; ++r) {
    const auto runs = owned_runs(shape, cases[0], r, ShardDescriptor{shape, {whole}}, 3);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].global == 14 * static_cast<std::int64_t>(r));
    CHECK(runs[0].length == 14);
  }
  // Owned runs keep the local positions of the request they come from: rows 1-3 read
  // into local 100.., rank 1 owns what rank 0 does not read (row 2 on) and, the row
  // both read being part 1 of six (elements 7-13), that row too.
  const std::vector<Reader> two{{0, {box({0, 0}, {2, 7})}}, {1, {box({1, 0}, {3, 7})}}};
  const auto runs = owned_runs(shape, two, 1, ShardDescriptor{shape, {box({1, 0}, {3, 7}, 100)}}, 6);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].global == 7);
  CHECK(runs[0].local == 100);
  CHECK(runs[0].length == 21);
}

namespace {

const std::string kPath = "/model/wte";  // [37, 24] in ckpt_test::tensors()
constexpr std::int64_t kRows = 37, kCols = 24;

// Another layout than the save's: rank r reads rows [3r, 3r + 5) whole (neighbours
// overlap by two rows), the last rank also a strided box of rows 20-24, columns 4-9;
// the rest of the tensor nobody asks for.
struct Layout {
  std::vector<std::vector<float>> data;
  std::vector<TensorShardOut> outs;
};
Layout reading_layout(MPI_Comm comm) {
  const int r = rank_of(comm), n = size_of(comm);
  Layout l;
  l.data.emplace_back(5 * kCols, -999.0f);
  l.outs.push_back({kPath, ShardDescriptor{{kRows, kCols}, {box({3 * r, 0}, {5, kCols})}}, l.data.back().data()});
  if (r == n - 1) {
    l.data.emplace_back(5 * 6, -999.0f);
    l.outs.push_back({kPath, ShardDescriptor{{kRows, kCols}, {box({20, 4}, {5, 6})}}, l.data.back().data()});
  }
  return l;
}

bool layout_matches(const Layout& l, std::uint64_t seed) {
  for (const auto& o : l.outs) {
    const auto& b = o.desc.blocks[0];
    for (std::int64_t i = 0; i < b.extent[0]; ++i)
      for (std::int64_t j = 0; j < b.extent[1]; ++j)
        if (o.data[i * b.extent[1] + j] != ckpt_test::value(seed, kPath, (b.offset[0] + i) * kCols + b.offset[1] + j))
          return false;
  }
  return true;
}

std::string flipped_load(MPI_Comm comm, const std::string& dir, const std::string& file, std::int64_t element) {
  if (rank_of(comm) == 0) ckpt_test::flip_byte(file, kPath, element);
  MPI_Barrier(comm);
  Layout l = reading_layout(comm);
  bool same = false;
  const auto msg = input_error_of([&] { load_checkpoint(comm, dir, l.outs); }, same);
  if (rank_of(comm) == 0) ckpt_test::flip_byte(file, kPath, element);  // flipped back
  MPI_Barrier(comm);
  return same ? msg : "not the same on every rank: " + msg;
}

}  // namespace

TEST_CASE("another layout reads each byte once and catches a flipped byte anywhere", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const int n = size_of(comm);
  const std::string dir = fresh_dir("read_once");
  const std::string file = save_zero(comm, dir, 3, 5);
  Layout l = reading_layout(comm);
  const IoStats r = load_checkpoint(comm, dir, l.outs);
  CHECK(everywhere(layout_matches(l, 5)));
  // Bytes: what the ranks asked for, and the elements nobody did, read once for the
  // checksum. The row bands cover rows [0, 3n + 2); the box lies below them for n < 6.
  const std::int64_t asked = n * 5 * kCols + 30, read_rows = 3 * (n - 1) + 5;
  const std::int64_t unread = kRows * kCols - read_rows * kCols - (read_rows <= 20 ? 30 : 0);
  CHECK(r.bytes == 4.0 * static_cast<double>(asked + unread));

  const std::string expected = file + ": checksum mismatch in dataset " + kPath + " (stored 0x";
  const std::int64_t first_only = 1 * kCols + 5;                  // row 1: rank 0 alone
  const std::int64_t last_only = (3 * (n - 1) + 4) * kCols + 17;  // the last band's last row: the last rank alone
  const std::int64_t in_box = 22 * kCols + 7;                     // the strided box: the last rank alone
  const std::int64_t unread_element = 35 * kCols + 2;             // nobody asked for row 35
  for (std::int64_t e : {first_only, last_only, in_box, unread_element}) {
    INFO("flipped element " << e);
    CHECK(contains(flipped_load(comm, dir, file, e), expected));
  }
  if (n > 1) {
    INFO("flipped element in the rows ranks 0 and 1 both read");
    CHECK(contains(flipped_load(comm, dir, file, 3 * kCols + 1), expected));
  }
  bool same = false;  // every flip undone: the file loads again
  CHECK(everywhere(input_error_of([&] { load_checkpoint(comm, dir, reading_layout(comm).outs); }, same).empty()));
}

TEST_CASE("a NaN that several ranks read counts once", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("read_once_nan");
  const std::string file = save_zero(comm, dir, 3, 5);
  if (rank_of(comm) == 0) ckpt_test::poison_element(file, kPath, 3 * kCols + 1);  // ranks 0 and 1 read row 3
  MPI_Barrier(comm);
  Layout l = reading_layout(comm);
  bool same = false;
  const auto msg = input_error_of([&] { load_checkpoint(comm, dir, l.outs); }, same);
  INFO(msg);
  CHECK(same);
  CHECK(contains(msg, file + ": dataset " + kPath + " holds 1 NaN or infinite value(s)"));
}
