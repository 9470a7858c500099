// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/tp/tp_comm.hpp"


namespace mini5d::tp {

namespace {
template <class S>
VecU<S> flat(MatU<S> m) {
  return VecU<S>(m.data(), m.extent(0) * m.extent(1));
}
}  // namespace

template <class S>
void TpComm::allreduce(MatU<S> x) {
  if (size() > 1) group_->allreduce(flat(x), comm::Traffic::activations);
}

template <class S>
void TpComm::allreduce(VecU<S> x, comm::Traffic t) {
  if (size() > 1) group_->allreduce(x, t);
}

template <class S>
void TpComm::allgather_rows(MatU<S> full, CMatU<S> part) {
  const std::int64_t rows = std::int64_t(part.extent(0)), begin = rows * rank();
  // Queued on the rank's instance (no global fence); the instance fence below is what
  // MPI needs, and at size 1 the next kernel on the instance runs after the copy anyway.
  Kokkos::deep_copy(ExecSpace(), Kokkos::subview(full, std::make_pair(begin, begin + rows), Kokkos::ALL()), part);
  if (size() == 1) return;
  fence("mini5d::tp::rows_ready");  // MPI reads them next
  group_->allgather(flat(full), comm::Traffic::activations);
}

template <class S>
void TpComm::reduce_scatter_rows(MatU<S> part, MatU<S> full) {
  if (size() == 1) {
    Kokkos::deep_copy(ExecSpace(), part, full);  // ordered before the next kernel on the instance
    return;
  }
  fence("mini5d::tp::partial_sums_ready");  // MPI reads them next
  group_->reduce_scatter_block(flat(full), flat(part), comm::Traffic::activations);
}

template <class S>
void TpComm::allgather(VecU<S> all, CVecU<S> mine) {
  const std::int64_t n = std::int64_t(mine.extent(0)), begin = n * rank();
  Kokkos::deep_copy(ExecSpace(), Kokkos::subview(all, std::make_pair(begin, begin + n)), mine);
  if (size() == 1) return;
  fence("mini5d::tp::part_ready");  // MPI reads it next
  group_->allgather(all, comm::Traffic::activations);
}

#define MINI5D_TP_COMM(S)                                            \
  template void TpComm::allreduce<S>(MatU<S>);                       \
  template void TpComm::allreduce<S>(VecU<S>, comm::Traffic);        \
  template void TpComm::allgather_rows<S>(MatU<S>, CMatU<S>);        \
  template void TpComm::reduce_scatter_rows<S>(MatU<S>, MatU<S>);    \
  template void TpComm::allgather<S>(VecU<S>, CVecU<S>);
MINI5D_TP_COMM(float)
MINI5D_TP_COMM(double)
MINI5D_TP_COMM(bf16)
#undef MINI5D_TP_COMM

}  // namespace mini5d::tp
