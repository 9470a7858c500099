// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/output/goodput_plan.hpp"

#include <cmath>
#include <cstdio>

#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/output/json.hpp"

namespace mini5d::plan {

PlanGoodput plan_goodput(const ModelDesc& m, const ClusterDesc& cl, const Plan& p) {
  PlanGoodput g;
  const long long nodes = (p.layout.ranks() + cl.devices_per_node - 1) / cl.devices_per_node;
  g.io = checkpoint_io(m, cl, nodes);
  if (cl.node_mtbf_hours <= 0) {
    g.why_not = "no reliability.node_mtbf_hours in " + cl.source;
    return g;
  }
  if (g.io.write_bytes_per_s <= 0) {
    g.why_not = "no filesystem.write_gbs or write_gbs_per_node in " + cl.source + " to size the save";
    return g;
  }
  g.requeue_s = cl.requeue_s;
  g.startup_s = cl.startup_s;
  g.in.step_s = p.time.step;
  g.in.save_s = g.io.save_s;  // synchronous: the whole write blocks
  g.in.restart_s = cl.requeue_s + cl.startup_s + g.io.load_s + p.time.step;
  g.in.node_mtbf_s = cl.node_mtbf_hours * 3600;
  g.in.nodes = nodes;
  g.available = true;
  g.young_s = goodput::young_interval_s(g.in);
  g.interval_steps = goodput::young_interval_steps(g.in);
  g.ettr = goodput::ettr(g.in, g.interval_steps);
  return g;
}

namespace {
std::string hours(double s) { return fixed(s / 3600, s < 36000 ? 2 : 0) + " h"; }
std::string secs(double s) { return fixed(s, s < 10 ? 2 : 0) + " s"; }
std::string gbs(double bytes_per_s) { return fixed(bytes_per_s / 1e9, 0) + " GB/s"; }
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
}  // namespace

std::string goodput_text(const PlanGoodput& g) {
  if (!g.available) return "goodput: not predicted (" + g.why_not + ").\n";
  const goodput::Inputs& in = g.in;
  return "goodput: ETTR " + pct(g.ettr) + " with a checkpoint every " + std::to_string(g.interval_steps) +
         " steps (" + secs(double(g.interval_steps) * in.step_s) + "; Young's sqrt(2 C M) = " + secs(g.young_s) +
         "), from a job MTBF M of " + hours(in.job_mtbf_s()) + " (node MTBF " + hours(in.node_mtbf_s) + " / " +
         std::to_string(in.nodes) + " nodes), a blocking save C of " + secs(in.save_s) + " (" +
         human_bytes(g.io.bytes) + " at " + gbs(g.io.write_bytes_per_s) + ") and a restart R of " +
         secs(in.restart_s) + " (requeue " + secs(g.requeue_s) + " + start-up " + secs(g.startup_s) + " + load " +
         secs(g.io.load_s) + " at " + gbs(g.io.read_bytes_per_s) + " + a step " + ms(in.step_s) + ").\n";
}

std::string goodput_json(const PlanGoodput& g) {
  if (!g.available) return "{\"available\": false, \"why\": \"" + json_escape(g.why_not) + "\"}";
  const goodput::Inputs& in = g.in;
  return "{\"available\": true, \"ettr\": " + num(g.ettr) + ", \"interval_steps\": " +
         std::to_string(g.interval_steps) + ", \"young_daly_s\": " + num(g.young_s) + ", \"job_mtbf_s\": " +
         num(in.job_mtbf_s()) + ", \"node_mtbf_s\": " + num(in.node_mtbf_s) + ", \"nodes\": " +
         std::to_string(in.nodes) + ", \"checkpoint_bytes\": " + num(g.io.bytes) + ", \"write_bytes_per_s\": " +
         num(g.io.write_bytes_per_s) + ", \"read_bytes_per_s\": " + num(g.io.read_bytes_per_s) +
         ", \"save_s\": " + num(in.save_s) + ", \"write_s\": " + num(in.write_s) + ", \"restart_s\": " +
         num(in.restart_s) + ", \"requeue_s\": " + num(g.requeue_s) + ", \"startup_s\": " + num(g.startup_s) +
         ", \"load_s\": " + num(g.io.load_s) + ", \"step_s\": " + num(in.step_s) + "}";
}

}  // namespace mini5d::plan
