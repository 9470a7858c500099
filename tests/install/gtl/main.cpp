// SPDX-License-Identifier: BSD-3-Clause
// Prints the GTL this process has loaded, or "none" (the answer `mini5d version` gives).
#include <iostream>

#include "mini5d/comm/mpi_gtl.hpp"

int main() {
  const std::string gtl = mini5d::comm::loaded_mpi_gtl();
  std::cout << (gtl.empty() ? "none" : gtl) << "\n";
  return 0;
}
