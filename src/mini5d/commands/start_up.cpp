// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/start_up.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "mini5d/comm/agreement.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/train/stop_signal.hpp"

namespace mini5d::commands {

void init_mpi(int& argc, char**& argv, bool training) {
  if (training) {
    train::install_stop_handlers();
    train::raise_stop_for_test("before_mpi_init");
  }
  if (training) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  if (training) {
    train::raise_stop_for_test("after_mpi_init");
    train::install_stop_handlers();
  }
}

void write_pid_for_tests(int rank) {
  if (const char* dir = std::getenv("MINI5D_PID_DIR"))
    std::ofstream(std::string(dir) + "/rank-" + std::to_string(rank) + ".pid") << getpid() << "\n";
}

Prepared prepare_calibrate(const CommandLine& a, MPI_Comm world, int ranks) {
  Prepared p;
  comm::agreed(world, [&] { p.deck = resolve_deck(a); });
  Deck as_run = p.deck;
  as_run.parallel.d = ranks;
  as_run.parallel.t = as_run.parallel.p = as_run.parallel.c = as_run.parallel.e = 1;
  p.placement = topology::place_this_rank(world, as_run);
  return p;
}

void start_kokkos(KokkosRun& kokkos, int argc, char** argv, const std::vector<std::string>& given,
                  const topology::Placement& pl) {
  std::vector<std::string>& kokkos_args = kokkos.args;
  kokkos_args.assign(argv, argv + argc);
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL)
  if (pl.device_id >= 0) kokkos_args.push_back("--kokkos-device-id=" + std::to_string(pl.device_id));
#endif
  // Kokkos >= 3.7 spells the host threads --kokkos-num-threads.
#if KOKKOS_VERSION >= 30700
  if (pl.host_threads > 0) kokkos_args.push_back("--kokkos-num-threads=" + std::to_string(pl.host_threads));
#else
  if (pl.host_threads > 0) kokkos_args.push_back("--kokkos-threads=" + std::to_string(pl.host_threads));
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  // A command that does not place the rank (version, check, ckpt, ...) leaves the OpenMP
  // runtime as it loaded: with neither OMP_PROC_BIND nor OMP_PLACES set, threads are not
  // bound. Saying so spares the command Kokkos's warning that the variable is unset,
  // printed above its output (`train` and `topo` set it with the rank's binding).
  if (!std::getenv("OMP_PROC_BIND") && !std::getenv("OMP_PLACES")) setenv("OMP_PROC_BIND", "false", 0);
#endif
  std::vector<char*> ptrs;
  for (auto& s : kokkos_args) ptrs.push_back(s.data());
  int n = int(ptrs.size());
  ptrs.push_back(nullptr);
  try {
    (void)kokkos.guard.emplace(n, ptrs.data());  // Kokkos 4's ScopeGuard is [[nodiscard]]; kept in `kokkos`
  } catch (const std::exception& e) {
    if (given.empty()) throw;
    std::string opts;
    for (const auto& o : given) opts += (opts.empty() ? "" : " ") + printable(o);
    const std::string why = e.what();
    throw InputError("command line: " + opts + ": Kokkos refused its options: " +
                     printable(why.substr(0, why.find('\n')), 200));
  }
}

void open_startup_phase(std::optional<comm::watchdog::Scope>& starting, int rank) {
  static const std::string kWorldAxis = "world";
  comm::watchdog::start(default_deck().parallel.collective_timeout_s, rank);
  starting.emplace(kWorldAxis, "start-up", true);
}

}  // namespace mini5d::commands
