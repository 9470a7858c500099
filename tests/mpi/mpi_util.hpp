// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the MPI tests: the world's rank and size, a value agreed over the
// world (so every rank asserts the same thing and none is left in a collective by a
// failed check), and the world split into groups of d consecutive ranks.
#pragma once
#include <mpi.h>

#include <chrono>
#include <thread>

namespace mini5d::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}
inline double world_max(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

// True on every rank only if `ok` holds on every rank.
inline bool all_ranks(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v == 1;
}

// A barrier that sleeps while it waits: ranks idle while a few others work (many
// ranks oversubscribing few cores) would otherwise spin inside MPI and take the cores
// the working ranks need.
inline void idle_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  for (int done = 0;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// The ranks of the world in groups of d consecutive ranks; `index` numbers the group.
struct Group {
  MPI_Comm comm;
  int index;
  explicit Group(int d) : index(world_rank() / d) { MPI_Comm_split(MPI_COMM_WORLD, index, world_rank(), &comm); }
  ~Group() { MPI_Comm_free(&comm); }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
};

}  // namespace mini5d::test
