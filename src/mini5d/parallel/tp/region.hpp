// SPDX-License-Identifier: BSD-3-Clause
// How a tensor-parallel layer meets the rest of the model: the communicator, whether
// sequence parallelism is on, and the [N, C] buffer a sequence-parallel region gathers
// token rows into (one buffer, shared by every layer: a gathered input is used and
// released before the next layer gathers). Without sequence parallelism every rank
// holds all N token rows and the buffer is empty.
#pragma once
#include "mini5d/kernels/views.hpp"
#include "mini5d/parallel/tp/tp_comm.hpp"

namespace mini5d::tp {

template <class S>
struct Region {
  TpComm* comm = nullptr;
  bool sp = false;   // sequence parallelism: LayerNorms, residuals see N/t rows
  MatU<S> gathered;  // [N, C] (C = d_model), SP only
  // Rows this rank holds outside the tensor-parallel regions.
  bool sequence_split() const { return sp && comm->size() > 1; }
};

}  // namespace mini5d::tp
