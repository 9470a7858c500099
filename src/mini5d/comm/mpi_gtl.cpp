// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/mpi_gtl.hpp"

#include <link.h>

namespace mini5d::comm {

namespace {
struct Search {
  const std::string* stem;
  std::string found;
};

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Search*>(data);
  const std::string path = info->dlpi_name ? info->dlpi_name : "";
  const std::string name = path.substr(path.rfind('/') + 1);  // npos + 1 == 0: no slash
  if (!name.empty() && name.compare(0, s->stem->size(), *s->stem) == 0) {
    s->found = path;
    return 1;  // stops the walk
  }
  return 0;
}
}  // namespace

std::string loaded_library(const std::string& stem) {
  Search s{&stem, {}};
  dl_iterate_phdr(visit, &s);
  return s.found;
}

std::string loaded_mpi_gtl() { return loaded_library("libmpi_gtl_"); }

}  // namespace mini5d::comm
