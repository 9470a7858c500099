// SPDX-License-Identifier: BSD-3-Clause
// A small MPI program the checkpoint CLI tests drive: it saves the test tensors as a
// job of any size would (so a save can be crashed with MINI5D_CKPT_FAIL in a child
// process), checks a checkpoint holds exactly the values of a given seed, and flips a
// byte of a dataset.
//   ckpt_tool write DIR NAME STEP SEED KEEP
//   ckpt_tool check PATH STEP SEED
//   ckpt_tool flip FILE DATASET ELEMENT
//   ckpt_tool poison FILE DATASET ELEMENT   (a NaN there, checksum updated to match)
//   ckpt_tool setattr FILE NAME INTEGER     (overwrites an integer root attribute)
//   ckpt_tool unlink FILE DATASET           (removes a dataset, as a careless edit would)
#include <cstdio>
#include <functional>
#include <iostream>

#include "ckpt_test_util.hpp"
#include "mini5d/core/error.hpp"

using namespace mini5d::checkpoint;

namespace {

int write(MPI_Comm comm, const std::vector<std::string>& a, int rank, int ranks) {
  const long step = std::stol(a[2]);
  const auto seed = std::stoull(a[3]);
  auto part = ckpt_test::zero_part(seed, ranks, rank);
  const IoStats s = save_checkpoint(comm, a[0], a[1], ckpt_test::meta_for(step, seed, ranks), part.shards, std::stoi(a[4]));
  if (rank == 0) std::printf("saved %s/%s.h5: %.0f bytes in %.4f s\n", a[0].c_str(), a[1].c_str(), s.bytes, s.seconds);
  return 0;
}

int check(MPI_Comm comm, const std::vector<std::string>& a, int rank, int ranks) {
  const long step = std::stol(a[1]);
  const auto seed = std::stoull(a[2]);
  auto part = ckpt_test::zero_part(seed, ranks, rank);
  std::vector<float> back;
  ckpt_test::read_into(part, back);
  load_checkpoint(comm, a[0], part.outs);
  const CheckpointMeta m = read_checkpoint_meta(comm, a[0]);
  int ok = back == part.data && m.step == step && m.train_seed == seed;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (rank == 0) std::printf("%s: step %ld, values %s\n", a[0].c_str(), m.step, ok ? "exact" : "WRONG");
  return ok ? 0 : 1;
}

// Edits with the serial HDF5 API, on one rank: the checkpoint code is not involved.
void edit(const std::string& file, const std::function<herr_t(hid_t)>& change) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("cannot open " + file + " for writing");
  const herr_t s = change(f);
  H5Fclose(f);
  if (s < 0) throw std::runtime_error("cannot edit " + file);
}

void set_int_attr(const std::string& file, const std::string& name, long long value) {
  edit(file, [&](hid_t f) -> herr_t {
    const hid_t a = H5Aopen(f, name.c_str(), H5P_DEFAULT);
    if (a < 0) return -1;
    const std::int64_t v = value;
    const herr_t s = H5Awrite(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
    return s;
  });
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1, status = 0;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::vector<std::string> a(argv + std::min(argc, 2), argv + argc);
  try {
    if (mode == "write" && a.size() == 5)
      status = write(comm, a, rank, ranks);
    else if (mode == "check" && a.size() == 3)
      status = check(comm, a, rank, ranks);
    else if (mode == "flip" && a.size() == 3) {
      if (rank == 0) ckpt_test::flip_byte(a[0], a[1], std::stoll(a[2]));
    } else if (mode == "setattr" && a.size() == 3) {
      if (rank == 0) set_int_attr(a[0], a[1], std::stoll(a[2]));
    } else if (mode == "unlink" && a.size() == 2) {
      if (rank == 0) edit(a[0], [&](hid_t f) { return H5Ldelete(f, a[1].c_str(), H5P_DEFAULT); });
    } else if (mode == "poison" && a.size() == 3) {
      if (rank == 0) ckpt_test::poison_element(a[0], a[1], std::stoll(a[2]));
    } else {
      if (rank == 0) std::cerr << "usage: ckpt_tool write DIR NAME STEP SEED KEEP | check PATH STEP SEED | flip FILE DATASET ELEMENT"
                                 " | poison FILE DATASET ELEMENT | setattr FILE NAME INTEGER | unlink FILE DATASET\n";
      status = 2;
    }
  } catch (const std::exception& e) {
    if (rank == 0) std::cerr << "ckpt_tool: " << e.what() << "\n";
    status = 1;
  }
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return status;
}
