// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/bf16_mpi.hpp"

#include "mini5d/kernels/bf16.hpp"

namespace mini5d::comm {

namespace {
void add_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  const bf16* a = static_cast<const bf16*>(in);
  bf16* b = static_cast<bf16*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = to_bf16(to_float(a[i]) + to_float(b[i]));
}
}  // namespace

MPI_Datatype bf16_datatype() {
  static MPI_Datatype type = [] {
    MPI_Datatype t;
    MPI_Type_contiguous(int(sizeof(bf16)), MPI_BYTE, &t);
    MPI_Type_commit(&t);
    return t;
  }();
  return type;
}

MPI_Op bf16_sum() {
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(&add_bf16, /*commute=*/1, &o);
    return o;
  }();
  return op;
}

}  // namespace mini5d::comm
