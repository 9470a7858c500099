// SPDX-License-Identifier: BSD-3-Clause
// Uses both installed libraries: the runtime's deck parser (with Kokkos and MPI up, as
// a tool linking mini5d::mini5d would) and the planner's search.
// usage: downstream CLUSTER.yaml MODEL.yaml
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <iostream>

#include "mini5d/core/deck.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/search/search.hpp"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const mini5d::Deck deck = mini5d::load_deck(argv[2], {"parallel.d=2", "train.micro_batch=8"});
    const auto model = mini5d::plan::load_model_file(argv[2]);
    const auto cluster = mini5d::plan::load_cluster_file(argv[1]);
    const auto result = mini5d::plan::search(model.model, model.train, cluster, {});
    if (result.top.empty()) {
      rc = 1;
    } else {
      std::cout << "downstream: deck d_model " << deck.model.d_model << " d " << deck.parallel.d
                << "; best plan on " << cluster.name << ": " << mini5d::plan::describe(result.top.front().layout)
                << "\n";
    }
  }
  MPI_Finalize();
  return rc;
}
