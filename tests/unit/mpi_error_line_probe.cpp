// SPDX-License-Identifier: BSD-3-Clause
// Probe for comm/mpi_error_line: a failed MPI call on a communicator duplicated from the
// world after the handler was installed (as the app's are) must end the job with the
// handler's one line, not return and not end with MPICH's own message. Each rank sends
// to a rank that does not exist (MPI_ERR_RANK), the one MPI failure a test can cause on
// purpose without killing a process. The test's PASS_REGULAR_EXPRESSION is the line.
#include <mpi.h>

#include <cstdio>

#include "mini5d/comm/mpi_error_line.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mini5d::comm::install_mpi_error_line(rank);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);  // inherits the handler
  int x = 0;
  MPI_Send(&x, 1, MPI_INT, size + 3, 0, comm);
  std::printf("FAIL: rank %d: MPI_Send to rank %d returned instead of ending the job\n", rank, size + 3);
  MPI_Finalize();
  return 0;
}
