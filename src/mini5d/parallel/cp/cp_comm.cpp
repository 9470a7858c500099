// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/cp/cp_comm.hpp"

namespace mini5d::cp {

template <class S>
comm::Request CpComm::shift(VecU<S> out, VecU<S> in, int tag) {
  fence("mini5d::cp::ring_block_ready");  // the kernels that wrote `out` are done
  return ring_->isendrecv(out, next(), in, prev(), tag, comm::Traffic::activations);
}

template comm::Request CpComm::shift<float>(VecU<float>, VecU<float>, int);
template comm::Request CpComm::shift<double>(VecU<double>, VecU<double>, int);
template comm::Request CpComm::shift<bf16>(VecU<bf16>, VecU<bf16>, int);

}  // namespace mini5d::cp
