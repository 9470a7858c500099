// SPDX-License-Identifier: BSD-3-Clause
// Sharded checkpoints under MPI (run at 2 and 4 ranks): ZeRO flat-range shards
// written and read back exactly with the same partition, with full tensors on every
// rank, and on fewer ranks (resharding); column-stripe shards that need staging; the
// checksum catching one flipped byte; clear errors for a wrong shape, a missing
// dataset, a truncated or foreign file and a missing path; retention of the last K;
// refusal of blocks that do not cover a tensor; the manifest, an edited root attribute
// named by its checksum, and counters that disagree named by the cross-checks.
// Pass/fail is reduced over the ranks before any assertion, so a failure on one rank
// never leaves another in a collective.
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <iostream>

#include "ckpt_mpi_util.hpp"
#include "ckpt_test_util.hpp"
#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/checkpoint/runs.hpp"
#include "mini5d/core/error.hpp"

namespace fs = std::filesystem;
using namespace mini5d;
using namespace mini5d::checkpoint;
using namespace ckpt_mpi;

TEST_CASE("dataset paths group tensors by module", "[checkpoint]") {
  CHECK(dataset_path("model", "blocks.3.attn.qkv.weight") == "/model/blocks/3/attn/qkv/weight");
  CHECK(dataset_path("/optimizer/exp_avg/", "wte") == "/optimizer/exp_avg/wte");
  CHECK(dataset_path("", "lm_head.weight") == "/lm_head/weight");
}

TEST_CASE("checksum: any partition of a tensor gives the same sum, one flipped bit changes it", "[checkpoint]") {
  const std::vector<std::int64_t> shape{3, 5, 7};
  std::vector<float> x(105);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = ckpt_test::value(3, "/t", static_cast<std::int64_t>(i));
  const auto whole = partial_checksum(shard_runs(flat_range_shard(shape, 0, 105, 0)), x.data());
  for (int parts = 2; parts <= 6; ++parts) {
    std::uint64_t sum = 0;
    for (int p = 0; p < parts; ++p) {
      const Span s = even_part(105, parts, p);
      const auto d = flat_range_shard(shape, s.begin, s.end, 0);
      // The part's elements sit at local 0.. in a buffer of its own.
      std::vector<float> local(x.begin() + s.begin, x.begin() + s.end);
      sum += partial_checksum(shard_runs(d), local.data());
    }
    CHECK(sum == whole);
  }
  // A box block's runs: one per (i, j) row of the last dimension, contiguous locally.
  ShardDescriptor box{shape, {{{1, 2, 3}, {2, 2, 4}, 0}}};
  const auto runs = shard_runs(box);
  REQUIRE(runs.size() == 4);
  CHECK(runs[1].global == 1 * 35 + 3 * 7 + 3);
  CHECK(runs_are_packed(runs));
  // Two column stripes stored one after the other are not in row-major order.
  ShardDescriptor stripes{{4, 6}, {{{0, 0}, {4, 2}, 0}, {{0, 4}, {4, 2}, 8}}};
  CHECK_FALSE(runs_are_packed(shard_runs(stripes)));
  x[50] = std::nextafter(x[50], 1e9f);
  CHECK(partial_checksum(shard_runs(flat_range_shard(shape, 0, 105, 0)), x.data()) != whole);
}

TEST_CASE("round trip of ZeRO flat shards: same partition, and full tensors on every rank", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("roundtrip");
  auto part = ckpt_test::zero_part(42, size_of(comm), rank_of(comm));
  const auto meta = ckpt_test::meta_for(5, 42, size_of(comm));
  const IoStats w = save_checkpoint(comm, dir, "step-00000005", meta, part.shards, 0);

  std::vector<float> back;
  ckpt_test::read_into(part, back);
  const IoStats r = load_checkpoint(comm, dir, part.outs);
  CHECK(everywhere(back == part.data));

  Full f = full_requests();
  const IoStats full = load_checkpoint(comm, dir + "/latest", f.outs);
  CHECK(everywhere(full_matches(f, 42)));

  const CheckpointMeta m = read_checkpoint_meta(comm, dir + "/step-00000005.h5");
  CHECK(m.step == 5);
  CHECK(m.tokens_seen == 5000);
  CHECK(m.deck_yaml == meta.deck_yaml);
  CHECK(m.layout == meta.layout);
  CHECK(m.train_seed == 42);
  CHECK(m.data_seed == 43);
  CHECK(m.data_cursor == 5);
  CHECK(m.extra == meta.extra);
  const auto list = list_datasets(comm, dir);
  CHECK(list.size() == 21);
  CHECK(list.front().path == "/model/blocks/0/attn/qkv/weight");
  CHECK(list[3].path == "/model/blocks/10/mlp/fc/bias");  // natural order: 0 before 10
  CHECK(list[3].bytes == 41 * 4);
  for (const auto& v : verify_checkpoint(comm, dir)) CHECK(v.ok());
  CHECK(w.bytes == 3 * 4745 * 4.0);
  CHECK(r.bytes == w.bytes);  // each byte read once, the checksums from what was read
  // Every rank reads every tensor: each element is checksummed by its first reader,
  // with no pass of its own.
  CHECK(full.bytes == size_of(comm) * w.bytes);
  if (rank_of(comm) == 0)
    std::cout << "checkpoint round trip on " << size_of(comm) << " ranks: write " << w.bytes / w.seconds / 1e6
              << " MB/s, read " << r.bytes / r.seconds / 1e6 << " MB/s (" << w.bytes << " bytes)\n";
}

TEST_CASE("resharding: written by all ranks, read back on 2 ranks and on 1", "[checkpoint][mpi]") {
  const MPI_Comm world = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("reshard");
  save_zero(world, dir, 7, 9);
  for (int readers : {2, 1}) {
    MPI_Comm sub;
    MPI_Comm_split(world, rank_of(world) < readers ? 0 : MPI_UNDEFINED, rank_of(world), &sub);
    bool ok = true;
    if (sub != MPI_COMM_NULL) {
      // ZeRO shards of a run with `readers` ranks, and whole tensors.
      auto part = ckpt_test::zero_part(9, size_of(sub), rank_of(sub));
      std::vector<float> back;
      ckpt_test::read_into(part, back);
      load_checkpoint(sub, dir, part.outs);
      ok = back == part.data;
      Full f = full_requests();
      load_checkpoint(sub, dir, f.outs);
      ok = ok && full_matches(f, 9);
      MPI_Comm_free(&sub);
    }
    INFO("readers " << readers);
    CHECK(everywhere(ok));
  }
}

TEST_CASE("column-stripe shards (not in row-major order locally) are staged on write and read", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("stripes");
  const int n = size_of(comm), r = rank_of(comm);
  // [5, 4n] with rank r owning columns 2r..2r+1 stored as stripe r then stripe 2n-1-r.
  const std::vector<std::int64_t> shape{5, 4 * n};
  const std::string path = "/model/stripes";
  ShardDescriptor d{shape, {{{0, 2 * r}, {5, 2}, 0}, {{0, 2 * (2 * n - 1 - r)}, {5, 2}, 10}}};
  std::vector<float> mine(20);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j) {
        const std::int64_t col = d.blocks[b].offset[1] + j;
        mine[static_cast<std::size_t>(b * 10 + i * 2 + j)] = ckpt_test::value(1, path, i * 4 * n + col);
      }
  save_checkpoint(comm, dir, "stripes", {}, {{path, d, mine.data()}}, 0);
  std::vector<float> back(20, -1.0f);
  load_checkpoint(comm, dir, {{path, d, back.data()}});
  CHECK(everywhere(back == mine));
  // The whole tensor, read as one block, is the row-major original.
  std::vector<float> all(static_cast<std::size_t>(5 * 4 * n));
  load_checkpoint(comm, dir, {{path, flat_range_shard(shape, 0, 5 * 4 * n, 0), all.data()}});
  bool ok = true;
  for (std::size_t i = 0; i < all.size(); ++i) ok = ok && all[i] == ckpt_test::value(1, path, static_cast<std::int64_t>(i));
  CHECK(everywhere(ok));
}

TEST_CASE("a flipped byte fails the load and verify, naming the dataset", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("flip");
  const std::string file = save_zero(comm, dir, 3, 5);
  if (rank_of(comm) == 0) ckpt_test::flip_byte(file, "/optimizer/exp_avg/wte", 123);
  MPI_Barrier(comm);
  Full f = full_requests();
  bool same = false;
  const auto msg = input_error_of([&] { load_checkpoint(comm, dir, f.outs); }, same);
  INFO(msg);
  CHECK(same);
  CHECK(contains(msg, file + ": checksum mismatch in dataset /optimizer/exp_avg/wte (stored 0x"));
  CHECK(msg.find('\n') == std::string::npos);  // only that dataset
  // The same layout reading its shards back checksums what it read: caught too.
  auto part = ckpt_test::zero_part(5, size_of(comm), rank_of(comm));
  std::vector<float> back;
  ckpt_test::read_into(part, back);
  CHECK(input_error_of([&] { load_checkpoint(comm, dir, part.outs); }, same) == msg);
  // Loading only other datasets still works: the check is per dataset.
  std::vector<TensorShardOut> model_only;
  for (const auto& o : part.outs)
    if (o.dataset.rfind("/model/", 0) == 0) model_only.push_back(o);
  CHECK(input_error_of([&] { load_checkpoint(comm, dir, model_only); }, same).empty());
  int bad = 0;
  for (const auto& v : verify_checkpoint(comm, file))
    if (!v.ok()) bad += v.path == "/optimizer/exp_avg/wte" ? 1 : 100;
  CHECK(bad == 1);
}

TEST_CASE("wrong shape and missing dataset: one line each, all reported at once", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("shape");
  const std::string file = save_zero(comm, dir, 1, 2);
  std::vector<float> buf(64 * 24);
  std::vector<TensorShardOut> req;
  if (rank_of(comm) == 0) req.push_back({"/model/wte", flat_range_shard({16, 24}, 0, 384, 0), buf.data()});
  req.push_back({"/model/blocks/7/attn/qkv/weight", flat_range_shard({24, 72}, 0, 24, 0), buf.data()});
  bool same = false;
  const auto msg = input_error_of([&] { load_checkpoint(comm, dir, req); }, same);
  INFO(msg);
  CHECK(same);
  CHECK(contains(msg, file + ": /model/wte has shape [37, 24], the deck needs [16, 24]"));
  CHECK(contains(msg, file + ": missing dataset /model/blocks/7/attn/qkv/weight"));
  CHECK(std::count(msg.begin(), msg.end(), '\n') == 1);  // two problems, each once
}

TEST_CASE("truncated, foreign and missing files are clear errors, not crashes", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("broken");
  const std::string file = save_zero(comm, dir, 1, 2);
  const std::string cut = dir + "/cut.h5", text = dir + "/text.h5", empty = dir + "/empty";
  if (rank_of(comm) == 0) {
    fs::copy_file(file, cut);
    fs::resize_file(cut, fs::file_size(cut) / 2);
    std::ofstream(text) << "model:\n  vocab: 16\n";
    fs::create_directories(empty);
  }
  MPI_Barrier(comm);
  Full f = full_requests();
  bool same = false;
  auto msg = input_error_of([&] { load_checkpoint(comm, cut, f.outs); }, same);
  UNSCOPED_INFO(msg);
  CHECK((same && contains(msg, cut + ": not a readable HDF5 file (")));
  msg = input_error_of([&] { read_checkpoint_meta(comm, text); }, same);
  UNSCOPED_INFO(msg);
  CHECK((same && contains(msg, text + ": not a readable HDF5 file (")));
  msg = input_error_of([&] { read_checkpoint_meta(comm, dir + "/nope"); }, same);
  CHECK((same && msg == dir + "/nope: no such checkpoint file or directory"));
  msg = input_error_of([&] { read_checkpoint_meta(comm, empty); }, same);
  CHECK((same && msg == empty + ": no checkpoint in this directory (no 'latest' file)"));
}

TEST_CASE("keep the last K: older checkpoints and stale temporaries go after the commit", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("retain");
  if (rank_of(comm) == 0) std::ofstream(dir + "/step-00000000.h5.tmp") << "stale";
  for (long s = 1; s <= 4; ++s) save_zero(comm, dir, s, 10 + static_cast<std::uint64_t>(s), 2);
  bool ok = true;
  if (rank_of(comm) == 0) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    ok = names == std::vector<std::string>{"latest", "step-00000003.h5", "step-00000004.h5"};
    std::ifstream in(dir + "/latest");
    std::string line;
    std::getline(in, line);
    ok = ok && line == "step-00000004.h5";
  }
  CHECK(everywhere(ok));
  CHECK(read_checkpoint_meta(comm, dir).step == 4);
  save_zero(comm, dir, 5, 15, 0);  // 0 keeps everything
  int count = 0;
  for (const auto& e : fs::directory_iterator(dir)) count += e.path().extension() == ".h5";
  CHECK(everywhere(count == 3));
}

TEST_CASE("blocks that do not cover a tensor exactly once are refused before writing", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("cover");
  const std::vector<std::int64_t> shape{10, 3};
  std::vector<float> x(30, 1.0f);
  // Every rank writes [0, 29): the last element is missing, the rest overlap.
  std::string msg;
  try {
    save_checkpoint(comm, dir, "bad", {}, {{"/model/x", flat_range_shard(shape, 0, 29, 0), x.data()}}, 0);
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(everywhere(contains(msg, "/model/x: the ranks' blocks hold " + std::to_string(29 * size_of(comm)) +
                                     " elements, the tensor 30")));
  CHECK(everywhere(!fs::exists(dir + "/bad.h5.tmp") && !fs::exists(dir + "/latest")));
}

// Hidden (run with "[.bandwidth]"): aggregate write/read bandwidth of a 96 MiB model
// state written as ZeRO flat shards; prints MB/s from the IoStats save and load return.
TEST_CASE("bandwidth of a 96 MiB checkpoint", "[.bandwidth]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("bandwidth");
  const std::vector<std::int64_t> shape{2048, 4096};  // 32 MiB per dataset
  const std::int64_t n = 2048 * 4096;
  const Span mine = even_part(n, size_of(comm), rank_of(comm));
  std::vector<float> x(static_cast<std::size_t>(mine.size()));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000) * 0.5f;
  std::vector<TensorShard> shards;
  for (const char* root : {"model", "optimizer/exp_avg", "optimizer/exp_avg_sq"})
    shards.push_back({dataset_path(root, "w"), flat_range_shard(shape, mine.begin, mine.end, 0), x.data()});
  const IoStats w = save_checkpoint(comm, dir, "big", {}, shards, 0);
  std::vector<float> y(x.size());
  std::vector<TensorShardOut> outs;
  for (const auto& s : shards) outs.push_back({s.dataset, s.desc, y.data()});
  const IoStats r = load_checkpoint(comm, dir, outs);
  CHECK(everywhere(y == x));
  if (rank_of(comm) == 0)
    std::cout << size_of(comm) << " ranks, " << w.bytes / (1 << 20) << " MiB: write " << w.bytes / w.seconds / 1e6
              << " MB/s (" << w.seconds << " s), load with checksums " << r.bytes / r.seconds / 1e6 << " MB/s ("
              << r.seconds << " s)\n";
}

TEST_CASE("root attributes: the manifest lists what was written; an edited step is named", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("meta");
  const std::string file = save_zero(comm, dir, 3, 5);
  const CheckpointMeta m = read_checkpoint_meta(comm, file);
  CHECK(m.format_version == kFormatVersion);
  CHECK(m.manifest.size() == list_datasets(comm, file).size());
  bool listed = false;
  for (const auto& e : m.manifest) listed |= e.path == "/model/blocks/0/moe/experts/weight" && e.shape == std::vector<std::int64_t>{3, 24, 10};
  CHECK(listed);
  if (rank_of(comm) == 0) {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t a = H5Aopen(f, "step", H5P_DEFAULT);
    const std::int64_t step = 2;
    H5Awrite(a, H5T_NATIVE_INT64, &step);
    H5Aclose(a);
    H5Fclose(f);
  }
  MPI_Barrier(comm);
  bool same = false;
  const auto msg = input_error_of([&] { read_checkpoint_meta(comm, file); }, same);
  INFO(msg);
  CHECK(same);
  CHECK(contains(msg, file + ": root attribute step fails its checksum (changed after the save)"));
  CHECK(input_error_of([&] { verify_checkpoint(comm, file); }, same) == msg);
}

TEST_CASE("root attributes that disagree with each other are named, even under a valid checksum", "[checkpoint][mpi]") {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const std::string dir = fresh_dir("cross");
  auto part = ckpt_test::zero_part(5, size_of(comm), rank_of(comm));
  CheckpointMeta meta = ckpt_test::meta_for(3, 5, size_of(comm));
  meta.data_cursor = 2;
  meta.extra["tokens_per_step"] = "999";
  save_checkpoint(comm, dir, "step-00000009", meta, part.shards, 0);
  const std::string file = dir + "/step-00000009.h5";
  bool same = false;
  const auto msg = input_error_of([&] { read_checkpoint_meta(comm, file); }, same);
  INFO(msg);
  CHECK(same);
  CHECK(contains(msg, file + ": data_cursor is 2, step 3"));
  CHECK(contains(msg, file + ": tokens_seen is 3000, step 3 x extra.tokens_per_step 999 is 2997"));
  CHECK(contains(msg, file + ": the file is named for step 9, its step attribute is 3"));
  CHECK(std::count(msg.begin(), msg.end(), '\n') == 2);
}
