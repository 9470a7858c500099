// SPDX-License-Identifier: BSD-3-Clause
// A small streaming JSON writer: the record is flat enough that a library would add
// a dependency for nothing.
#include "mini5d/plan/output/json.hpp"

#include <cmath>
#include <cstdio>

#include "mini5d/plan/output/goodput_plan.hpp"

namespace mini5d::plan {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') o += '\\', o += ch;
    else if (ch == '\n') o += "\\n";
    else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      o += buf;
    } else o += ch;
  }
  return o;
}

namespace {
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
std::string str(const std::string& s) { return "\"" + json_escape(s) + "\""; }
// Each pipeline rank's time per micro-batch (the replayed bubble's inputs).
std::string stage_times(const TimeBreakdown& t) {
  std::string o = "[";
  for (std::size_t i = 0; i < t.stage_mb.size(); ++i) o += (i ? ", " : "") + num(t.stage_mb[i]);
  return o + "]";
}

std::string stage_layers_json(const Plan& p) {
  std::string s = "[";
  for (std::size_t i = 0; i < p.split.size(); ++i) s += (i ? ", " : "") + std::to_string(p.split[i]);
  return s + "]";
}

void plan_json(std::ostream& os, const ModelDesc& md, const ClusterDesc& cl, const Plan& p, int rank,
               const std::string& ind) {
  const Layout& l = p.layout;
  const MemoryBreakdown& m = p.memory;
  const TimeBreakdown& t = p.time;
  os << ind << "{\"rank\": " << rank << ", \"fits\": " << (p.fits ? "true" : "false") << ",\n"
     << ind << " \"layout\": {\"d\": " << l.d << ", \"t\": " << l.t << ", \"p\": " << l.p
     << ", \"c\": " << l.c << ", \"e\": " << l.e << ", \"micro_batch\": " << l.micro_batch
     << ", \"accumulation\": " << l.accumulation << ", \"zero\": " << l.zero
     << ", \"recompute\": " << str(to_string(l.recompute))
     << ", \"virtual_stages\": " << l.virtual_stages << ", \"sequence_parallel\": "
     << (l.sp ? "true" : "false") << ", \"schedule\": " << str(to_string(l.schedule))
     << ", \"stage_layers\": " << stage_layers_json(p)
     << ", \"mapping\": " << str(to_string(l.mapping)) << "},\n"
     << ind << " \"memory_bytes\": {\"total\": " << num(m.total()) << ", \"stage\": " << m.stage
     << ", \"weights\": " << num(m.weights) << ", \"grads\": " << num(m.grads)
     << ", \"optimizer\": " << num(m.optimizer) << ", \"activations\": " << num(m.activations)
     << ", \"workspace\": " << num(m.workspace) << ", \"comm_buffers\": " << num(m.comm_buffers)
     << ", \"reserved\": " << num(m.reserved) << "},\n"
     << ind << " \"time_s\": {\"step\": " << num(t.step) << ", \"compute\": " << num(t.compute)
     << ", \"recompute\": " << num(t.recompute) << ", \"compute_parts\": {\"gemm\": " << num(t.compute_gemm)
     << ", \"attention_gemm\": " << num(t.compute_attention_gemm) << ", \"memory_bound\": "
     << num(t.compute_memory) << ", \"launch\": " << num(t.compute_launch) << "}"
     << ", \"bubble\": " << num(t.bubble) << ", \"stage_per_micro_batch\": " << stage_times(t)
     << ", \"optimizer\": " << num(t.optimizer) << ", \"exposed\": {\"tp\": " << num(t.tp)
     << ", \"pp\": " << num(t.pp) << ", \"cp\": " << num(t.cp) << ", \"ep\": " << num(t.ep)
     << ", \"dp\": " << num(t.dp) << ", \"zero3\": " << num(t.zero3) << "}, \"total\": {\"dp\": "
     << num(t.dp_total) << ", \"cp\": " << num(t.cp_total) << ", \"zero3\": "
     << num(t.zero3_total) << "}},\n"
     << ind << " \"model_flops_per_step\": " << num(t.model_flops)
     << ", \"model_flops_per_s\": " << num(t.model_flops_rate) << ", \"mfu\": " << num(t.mfu)
     << ", \"tokens_per_s\": " << num(t.tokens_per_s)
     << ", \"hardware_flops_per_step\": " << num(t.hardware_flops)
     << ", \"hardware_flops_per_s\": " << num(t.hardware_flops_rate)
     << ", \"hardware_flops_utilisation\": " << num(t.hfu) << ",\n"
     << ind << " \"goodput\": " << goodput_json(plan_goodput(md, cl, p)) << "}";
}
}  // namespace

void write_json(std::ostream& os, const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                const SearchResult& r, const Plan* given) {
  const ParamCounts pc = count_params(m);
  os << "{\n  \"schema\": \"mini5d-plan/1\",\n";
  os << "  \"model\": {\"name\": " << str(m.name) << ", \"source\": " << str(m.source)
     << ", \"params\": " << num(pc.total) << ", \"vocab\": " << m.vocab << ", \"d_model\": "
     << m.d_model << ", \"layers\": " << m.layers << ", \"heads\": " << m.heads
     << ", \"seq\": " << m.seq << ", \"ffn\": " << m.ffn << ", \"experts\": " << m.experts
     << ", \"top_k\": " << m.top_k << ", \"norm\": " << str(to_string(m.norm))
     << ", \"mlp\": " << str(to_string(m.mlp)) << ", \"bias\": " << (m.bias ? "true" : "false")
     << "},\n";
  os << "  \"train\": {\"global_batch\": " << tr.global_batch << ", \"precision\": "
     << str(to_string(tr.precision)) << ", \"state_bytes\": "
     << num(pc.total * state_bytes_per_param(tr.precision, tr.fp32_grad_accum).total()) << "},\n";
  os << "  \"cluster\": {\"name\": " << str(cl.name) << ", \"source\": " << str(cl.source)
     << ", \"nodes\": " << cl.nodes << ", \"devices_per_node\": " << cl.devices_per_node
     << ", \"device_memory_bytes\": " << num(cl.device.memory) << "},\n";
  os << "  \"search\": {\"candidates\": " << r.candidates << ", \"valid\": " << r.valid
     << ", \"fitting\": " << r.fitting << "},\n";
  if (r.top.empty() && r.least_memory) {
    os << "  \"does_not_fit\": {\"short_bytes\": "
       << num(r.least_memory->memory.total() - cl.device.memory) << ", \"least_memory_plan\":\n";
    plan_json(os, m, cl, *r.least_memory, 0, "    ");
    os << "},\n";
  }
  if (given) {
    const double slower =
        r.top.empty() ? 0.0 : given->time.step / r.top.front().time.step - 1.0;
    os << "  \"given\": {\"position\": " << (given->fits ? r.ahead_of_given + 1 : 0)
       << ", \"fitting\": " << r.fitting << ", \"slower_than_best\": " << num(slower)
       << ", \"plan\":\n";
    plan_json(os, m, cl, *given, 0, "    ");
    os << "},\n";
  }
  os << "  \"plans\": [";
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    os << (i ? ",\n" : "\n");
    plan_json(os, m, cl, r.top[i], int(i + 1), "    ");
  }
  os << (r.top.empty() ? "]\n" : "\n  ]\n") << "}\n";
}

}  // namespace mini5d::plan
