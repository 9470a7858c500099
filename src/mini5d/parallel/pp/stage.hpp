// SPDX-License-Identifier: BSD-3-Clause
// What a pipeline schedule drives (docs/architecture.md): the forward and backward of
// one micro-batch on one of this rank's chunks. The schedule and the executor know
// nothing of the model; the trainer ties the model's stage to this interface.
// Boundary tensors are flat buffers of bytes (a [rows, d_model] activation, or its
// gradient: with sequence parallelism the rank's rows), in the model's storage type,
// fp32 or bf16: only the stage reads them as numbers; the executor and MPI move bytes,
// so one executor serves every precision. What a stage returns is sent straight from
// the stage's own memory, with no copy into a send buffer.
#pragma once
#include <cstdint>

#include "mini5d/kernels/views.hpp"

namespace mini5d::pp {

using Byte = unsigned char;  // a boundary tensor's storage, as the executor sees it

class Stage {
 public:
  virtual ~Stage() = default;
  // Forward of micro-batch `mb` on local chunk `chunk`. `input`: the activation from
  // the previous virtual stage (empty on virtual stage 0); it stays untouched until
  // this micro-batch's backward on the chunk. Returns the activation for the next
  // virtual stage (empty on the last), which must stay unchanged until
  // backward(mb, chunk): the executor's send reads it until then.
  virtual CVecU<Byte> forward(int mb, int chunk, CVecU<Byte> input) = 0;
  // Backward of micro-batch `mb` on `chunk`. `grad_output`: dL/d(output) from the next
  // virtual stage (empty on the last). Returns dL/d(input) (empty on virtual stage 0),
  // which must stay unchanged until the next backward call.
  virtual CVecU<Byte> backward(int mb, int chunk, CVecU<Byte> grad_output) = 0;
};

}  // namespace mini5d::pp
