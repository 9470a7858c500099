// SPDX-License-Identifier: BSD-3-Clause
// Table and detail printing. Columns are fixed-width so the table diffs cleanly.
#include "mini5d/plan/output/report.hpp"

#include <cstdio>
#include <string>

#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/output/format.hpp"

namespace mini5d::plan {

void print_header(std::ostream& os, const ModelDesc& m, const TrainDesc& tr,
                  const ClusterDesc& cl) {
  const ParamCounts pc = count_params(m);
  os << "model   " << m.name << ": " << fixed(pc.total / 1e9, 2) << " B params, layers=" << m.layers
     << " d_model=" << m.d_model << " heads=" << m.heads << " ffn=" << m.ffn
     << " vocab=" << m.vocab << " seq=" << m.seq;
  if (m.moe()) os << " experts=" << m.experts << " top_k=" << m.top_k;
  if (m.kv() != m.heads) os << " kv_heads=" << m.kv();  // grouped-query attention
  // The block's parts, where they are not GPT-2's (model.norm, model.mlp, model.bias).
  if (m.norm != Norm::layernorm) os << " norm=" << to_string(m.norm);
  if (m.mlp != Mlp::gelu) os << " mlp=" << to_string(m.mlp);
  if (!m.bias) os << " bias=false";
  os << "\n";
  const StateBytesPerParam b = state_bytes_per_param(tr.precision, tr.fp32_grad_accum);
  os << "state   " << to_string(tr.precision) << " AdamW " << fixed(b.total(), 0)
     << " B/param (weight " << fixed(b.weight, 0) << " + grad " << fixed(b.grad, 0)
     << " + master " << fixed(b.master, 0) << " + moments " << fixed(b.moments, 0)
     << ") = " << human_bytes(pc.total * b.total()) << " of training state\n";
  os << "cluster " << cl.name << ": " << cl.nodes << " nodes x " << cl.devices_per_node << " "
     << cl.device.name << " (" << gib(cl.device.memory, 0) << ", "
     << fixed(cl.device.sustained[precision_index(tr.precision)] / 1e12, 1)
     << " TFLOP/s sustained " << to_string(tr.precision) << ") = " << cl.devices()
     << " devices; links:";
  const char* sep = " ";
  for (const auto& t : cl.tiers) {
    os << sep << t.name << " " << fixed(t.bandwidth / 1e9, 1) << " GB/s";
    sep = ", ";
  }
  os << "\n";
  os << "batch   " << tr.global_batch << " sequences x " << m.seq << " tokens = "
     << tr.global_batch * m.seq << " tokens per step\n";
}

void print_table(std::ostream& os, const SearchResult& r, const ClusterDesc& cl) {
  os << "\n" << r.candidates << " candidate layouts, " << r.valid << " valid, " << r.fitting
     << " fit in " << gib(cl.device.memory, 0) << "; top " << r.top.size()
     << " by predicted step time:\n\n";
  char line[512];
  std::snprintf(line, sizeof line,
                "%3s %5s %3s %4s %3s %3s %3s %5s %2s %2s %-9s %3s %9s %9s %9s %8s %8s %8s %8s "
                "%8s %8s %9s %11s %6s\n",
                "#", "d", "t", "p", "c", "e", "mb", "accum", "v", "Z", "recompute", "SP",
                "mem/dev", "step", "compute", "tp", "pp", "cp", "ep", "dp", "bubble", "tokens/s",
                "model FLOP/s", "MFU");
  os << line;
  int i = 0;
  for (const Plan& p : r.top) {
    const Layout& l = p.layout;
    const TimeBreakdown& t = p.time;
    auto m = [](double s) { return ms(s, 1); };
    std::snprintf(line, sizeof line,
                  "%3d %5d %3d %4d %3d %3d %3d %5d %2d %2d %-9s %3s %9s %9s %9s %8s %8s %8s %8s "
                  "%8s %8s %9s %11s %6s\n",
                  ++i, l.d, l.t, l.p, l.c, l.e, l.micro_batch, l.accumulation, l.virtual_stages,
                  l.zero, to_string(l.recompute), l.sp ? "on" : "-", gib(p.memory.total()).c_str(),
                  m(t.step).c_str(), m(t.compute).c_str(), m(t.tp).c_str(), m(t.pp).c_str(),
                  m(t.cp).c_str(), m(t.ep).c_str(), m(t.dp + t.zero3).c_str(),
                  m(t.bubble).c_str(), si(t.tokens_per_s, "").c_str(),
                  si(t.model_flops_rate, "FLOP/s").c_str(), pct(t.mfu).c_str());
    os << line;
  }
  os << "\n(time columns are per step on the slowest stage; communication columns are the "
        "exposed part; dp includes ZeRO gathers)\n";
}

void print_plan_detail(std::ostream& os, const Plan& p, const ClusterDesc& cl) {
  print_plan_detail(os, p, cl, "best plan");
}

void print_plan_detail(std::ostream& os, const Plan& p, const ClusterDesc& cl,
                       const std::string& label) {
  const MemoryBreakdown& m = p.memory;
  const TimeBreakdown& t = p.time;
  os << label << ": " << describe(p.layout) << "\n";
  os << "  memory/device " << gib(m.total()) << " of " << gib(cl.device.memory)
     << " (stage " << m.stage << "): weights " << gib(m.weights) << ", grads " << gib(m.grads)
     << ", optimizer " << gib(m.optimizer) << ", activations " << gib(m.activations)
     << ", workspace " << gib(m.workspace) << ", comm buffers " << gib(m.comm_buffers)
     << ", reserved " << gib(m.reserved) << "\n";
  os << "  step " << ms(t.step) << ": compute " << ms(t.compute);
  if (t.recompute > 0) os << " (recompute " << ms(t.recompute) << ")";
  os << ", bubble " << ms(t.bubble) << ", exposed comm tp " << ms(t.tp) << " pp " << ms(t.pp)
     << " cp " << ms(t.cp) << " ep " << ms(t.ep) << " dp " << ms(t.dp + t.zero3)
     << ", optimizer " << ms(t.optimizer) << "\n";
  os << "  " << si(t.tokens_per_s, "tokens/s") << ", " << si(t.model_flops_rate, "FLOP/s")
     << " model FLOP/s, MFU " << pct(t.mfu) << " (PaLM: model FLOPs, no recomputation); "
     << si(t.hardware_flops_rate / double(p.layout.ranks()), "FLOP/s")
     << " per device = " << pct(t.hfu) << " of peak (Megatron-LM: recomputation counted)\n";
}

void print_does_not_fit(std::ostream& os, const SearchResult& r, const ClusterDesc& cl) {
  if (!r.least_memory) {
    os << "no valid layout: no (d,t,p,c,e) with product " << cl.devices()
       << " satisfies the divisibility and placement rules (try another device count)\n";
    return;
  }
  const Plan& p = *r.least_memory;
  os << "model does not fit: the smallest footprint, " << describe(p.layout) << ", needs "
     << gib(p.memory.total()) << " per device but a device has " << gib(cl.device.memory)
     << ": short by " << gib(p.memory.total() - cl.device.memory) << " per device (weights "
     << gib(p.memory.weights) << ", grads " << gib(p.memory.grads) << ", optimizer "
     << gib(p.memory.optimizer) << ", activations " << gib(p.memory.activations) << ")\n";
}

}  // namespace mini5d::plan
