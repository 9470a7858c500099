// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/training_state.hpp"

#include "mini5d/core/memory_ledger.hpp"

namespace mini5d::train {

namespace {
using Buffer = dp::ZeroOptimizer::StateBuffer;
using HostVec = Kokkos::View<float*, Kokkos::LayoutRight, Kokkos::HostSpace>;

// The three datasets roots and the buffers they come from.
struct Part {
  const char* root;
  Buffer buf;
};
std::vector<Part> parts_of(const dp::ZeroOptimizer& opt) {
  return {{"model", opt.weights()}, {"optimizer/exp_avg", opt.exp_avg()}, {"optimizer/exp_avg_sq", opt.exp_avg_sq()}};
}

// All of this rank's part of tensor t (the whole tensor without tensor
// parallelism), placed at its flat offset. Padding rows are not read: they keep their
// zeros (the buffers they live in are initialised, and padding never changes).
ShardDescriptor whole(const model::TensorSpec& t) {
  ShardDescriptor d;
  d.global_shape = t.global_shape;
  model::append_part_blocks(t, 0, t.size(), t.offset, d.blocks);
  return model::stored_part(t, std::move(d));  // the file has no padding rows
}

// Whatever the stage, each rank writes only its ZeRO part of every tensor (and of a
// tensor replicated over the tensor-parallel group, only the group's first rank).
WrittenPart written(const Part& p, const dp::ZeroOptimizer& opt) {
  WrittenPart w;
  w.root = p.root;
  w.host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p.buf.data);
  for (const auto& ts : opt.partition().tensor_shards(p.buf.flat, true)) w.shards.push_back({ts.name, ts.desc, w.host.data()});
  return w;
}
}  // namespace

WrittenPart written_model(const dp::ZeroOptimizer& opt) { return written(parts_of(opt).front(), opt); }

std::vector<WrittenPart> written_parts(const dp::ZeroOptimizer& opt) {
  std::vector<WrittenPart> out;
  for (const auto& p : parts_of(opt)) out.push_back(written(p, opt));
  return out;
}

std::int64_t stage_parts(const dp::ZeroOptimizer& opt, std::vector<WrittenPart>& staged) {
  const auto parts = parts_of(opt);
  std::int64_t allocated = 0;
  if (staged.size() != parts.size()) staged.resize(parts.size());
  // The instance the step's kernels ran on: the copies follow them, and only it is fenced.
  const ExecSpace exec;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    WrittenPart& w = staged[i];
    const auto& src = parts[i].buf.data;
    if (w.host.extent(0) != src.extent(0)) {
      w.host = HostVec(Kokkos::view_alloc(Kokkos::WithoutInitializing, "mini5d::checkpoint_staging"), src.extent(0));
      allocated += mem::view_bytes(w.host);
    }
    Kokkos::deep_copy(exec, w.host, src);
    if (w.shards.empty()) {  // the descriptors depend on the layout only
      w.root = parts[i].root;
      for (const auto& ts : opt.partition().tensor_shards(parts[i].buf.flat, true))
        w.shards.push_back({ts.name, ts.desc, w.host.data()});
    }
  }
  exec.fence();
  return allocated;
}

std::vector<checkpoint::TensorShard> shards_of(const std::vector<WrittenPart>& parts) {
  std::vector<checkpoint::TensorShard> shards;
  for (const auto& p : parts)
    for (const auto& s : p.shards) shards.push_back({checkpoint::dataset_path(p.root, s.tensor), s.desc, s.data});
  return shards;
}

checkpoint::IoStats save_training_state(MPI_Comm comm, const dp::ZeroOptimizer& opt, const std::string& dir,
                                        const std::string& name, const checkpoint::CheckpointMeta& meta,
                                        int keep_last) {
  const auto parts = written_parts(opt);  // the host copies stay alive for the save
  return checkpoint::save_checkpoint(comm, dir, name, meta, shards_of(parts), keep_last);
}

checkpoint::IoStats load_training_state(MPI_Comm comm, dp::ZeroOptimizer& opt,
                                        const model::ParamLayout& layout, const std::string& path) {
  std::vector<checkpoint::TensorShardOut> shards;
  std::vector<std::pair<HostVec, VecU<float>>> host;
  for (const auto& p : parts_of(opt)) {
    host.emplace_back(Kokkos::create_mirror_view(Kokkos::HostSpace(), p.buf.data), p.buf.data);
    float* dst = host.back().first.data();
    if (p.buf.flat) {
      for (const auto& t : layout.tensors())
        shards.push_back({checkpoint::dataset_path(p.root, t.name), whole(t), dst});
    } else {
      for (const auto& ts : opt.partition().tensor_shards(false))
        shards.push_back({checkpoint::dataset_path(p.root, ts.name), ts.desc, dst});
    }
  }
  const auto io = checkpoint::load_checkpoint(comm, path, shards);
  for (auto& [h, d] : host) Kokkos::deep_copy(d, h);  // complete on return
  return io;
}

}  // namespace mini5d::train
