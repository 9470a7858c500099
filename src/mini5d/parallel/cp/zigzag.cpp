// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/cp/zigzag.hpp"

#include <cstdlib>
#include <cstring>

namespace mini5d::cp {

Split split_from_env(int c) {
  Split s;
  s.c = c;
  const char* e = std::getenv("MINI5D_CP_SPLIT");
  s.zigzag = !(e && std::strcmp(e, "contiguous") == 0);
  return s;
}

}  // namespace mini5d::cp
