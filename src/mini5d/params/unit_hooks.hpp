// SPDX-License-Identifier: BSD-3-Clause
// Hooks the model calls around each parameter unit (embeddings, each block, head;
// see ParamLayout::units) in forward and backward. Data parallelism uses them to
// start a unit's gradient reduction as soon as the unit's backward is done, and
// ZeRO-3 to gather a unit's weights just before it runs; progress() is called between
// the backward's kernels so non-blocking MPI advances while the model computes. The
// model itself stays free of communication (docs/architecture.md).
#pragma once

namespace mini5d::model {

struct UnitHooks {
  virtual ~UnitHooks() = default;
  virtual void before_forward(int /*unit*/) {}
  virtual void after_forward(int /*unit*/) {}
  virtual void before_backward(int /*unit*/) {}
  // The unit's gradient contributions of this micro-batch are all in place.
  virtual void after_backward(int /*unit*/) {}
  virtual void progress() {}
};

}  // namespace mini5d::model
