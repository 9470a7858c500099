// SPDX-License-Identifier: BSD-3-Clause
// Helpers shared by the MPI tests: the world's rank and size, a value agreed over the
// world (so every rank asserts the same thing and none is left in a collective by a
// failed check), the world split into groups of d consecutive ranks, and a layout run
// on the first such group alone (on_first_group).
#pragma once
#include <mpi.h>

#include <chrono>
#include <thread>

namespace mini5d::test {

// The ranks the helpers below agree over: MPI_COMM_WORLD, or inside on_first_group the
// group that runs (its first rank is world rank 0, which prints).
inline MPI_Comm& checked_world() {
  static MPI_Comm comm = MPI_COMM_WORLD;
  return comm;
}

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
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, checked_world());
  return v;
}

// True on every rank only if `ok` holds on every rank.
inline bool all_ranks(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, checked_world());
  return v == 1;
}

// A barrier that sleeps while it waits: ranks idle while a few others work (many
// ranks oversubscribing few cores) would otherwise spin inside MPI and take the cores
// the working ranks need.
inline void idle_barrier() {
  MPI_Request req;
  MPI_Ibarrier(checked_world(), &req);
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

// Runs body(comm) on the world's first `ranks` ranks only, comm being theirs, while the
// other ranks sleep (idle_barrier); world_max, all_ranks and idle_barrier agree over
// those ranks meanwhile. A layout on fewer ranks than the world used to run on every
// group at once: identical runs that checked nothing more and, ranks oversubscribing
// the cores, took the CPU the first group needed. Collective over the world.
template <class Body>
void on_first_group(int ranks, Body&& body) {
  Group g(ranks);
  if (g.index == 0) {
    struct Narrowed {  // the world's agreements over the group until the body returns or throws
      MPI_Comm outer;
      explicit Narrowed(MPI_Comm group) : outer(checked_world()) { checked_world() = group; }
      ~Narrowed() { checked_world() = outer; }
    } narrowed(g.comm);
    body(g.comm);
  }
  idle_barrier();
}

}  // namespace mini5d::test
