// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/ep/ep_comm.hpp"

#include <stdexcept>

namespace mini5d::ep {

void EpComm::exchange_counts(const std::vector<double>& mine, std::vector<double>& all) {
  all.assign(mine.size() * std::size_t(size()), 0.0);
  if (size() == 1) {
    all = mine;
    return;
  }
  group_->allgather_host(mine.data(), int(mine.size()), all.data());
}

template <class S>
void EpComm::alltoallv_rows(CMatU<S> send, const std::vector<int>& send_rows, MatU<S> recv,
                            const std::vector<int>& recv_rows) {
  const int width = int(send.extent(1));
  if (size() == 1) {
    if (send_rows[0] != recv_rows[0]) throw std::logic_error("mini5d: ep: a group of one sends to itself");
    if (send_rows[0] > 0)
      Kokkos::deep_copy(ExecSpace(), Kokkos::subview(recv, std::make_pair(0, send_rows[0]), Kokkos::ALL()),
                        Kokkos::subview(send, std::make_pair(0, send_rows[0]), Kokkos::ALL()));
    return;
  }
  const std::size_t n = std::size_t(size());
  std::vector<int> sc(n), sd(n), rc(n), rd(n);
  int s_at = 0, r_at = 0;
  for (std::size_t q = 0; q < sc.size(); ++q) {
    sc[q] = send_rows[q] * width;
    sd[q] = s_at;
    s_at += sc[q];
    rc[q] = recv_rows[q] * width;
    rd[q] = r_at;
    r_at += rc[q];
  }
  // (MPI reads `send` next: the kernels that wrote it must be done.)
  fence("mini5d::ep::alltoallv_ready");
  // The communicator takes mutable views; MPI only reads the send side.
  VecU<S> sflat(const_cast<S*>(send.data()), std::size_t(s_at));
  VecU<S> rflat(recv.data(), std::size_t(r_at));
  group_->alltoallv(sflat, sc, sd, rflat, rc, rd, comm::Traffic::activations);
}

template void EpComm::alltoallv_rows<float>(CMatU<float>, const std::vector<int>&, MatU<float>, const std::vector<int>&);
template void EpComm::alltoallv_rows<double>(CMatU<double>, const std::vector<int>&, MatU<double>,
                                             const std::vector<int>&);
template void EpComm::alltoallv_rows<bf16>(CMatU<bf16>, const std::vector<int>&, MatU<bf16>, const std::vector<int>&);

}  // namespace mini5d::ep
