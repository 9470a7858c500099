#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# The batch templates in slurm/ and the planner's --emit-slurm must have the same shape:
# the same #SBATCH options, variables, exports, srun options and mini5d arguments, in
# the same order; only values differ (node counts, site values, paths). Comments and
# blank lines are not compared.
# usage: template_shape.py TEMPLATE EMITTED
import re
import sys

# Exports compared by name; any other export is the site's GPU-aware MPI switch.
KNOWN_EXPORTS = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_PLACES", "OMP_PROC_BIND", "MINI5D_NO_BIND"}


def shape(path):
    lines, text = [], open(path).read().replace("\\\n", " ")
    for raw in text.splitlines():
        line = re.sub(r"\s{2,}# .*$", "", raw).strip()  # trailing comment
        if not line or (line.startswith("#") and not line.startswith(("#!", "#SBATCH"))):
            continue
        line = re.sub(r"\s+", " ", line)
        m = re.match(r"export (\w+)=", line)
        if m:
            lines.append("export " + (m.group(1) if m.group(1) in KNOWN_EXPORTS else "<GPU-aware MPI switch>"))
            continue
        m = re.match(r"(\w+)=\$\{\1:?[-?]", line)
        if m:
            lines.append(m.group(1) + "=<default>")
            continue
        line = re.sub(r"(--[a-z-]+)=\S+", r"\1=V", line)           # srun/#SBATCH option values
        line = re.sub(r"(\b[a-z_]+\.[a-z_]+)=\S+", r"\1=V", line)  # deck overrides
        lines.append(line)
    return lines


template, emitted = shape(sys.argv[1]), shape(sys.argv[2])
for i, (a, b) in enumerate(zip(template, emitted)):
    if a != b:
        print(f"FAIL: {sys.argv[1]} and {sys.argv[2]} differ at shaped line {i + 1}:\n  template: {a}\n  emitted:  {b}")
        sys.exit(1)
if len(template) != len(emitted):
    longer = template if len(template) > len(emitted) else emitted
    print(f"FAIL: {len(template)} shaped lines in {sys.argv[1]}, {len(emitted)} in {sys.argv[2]}; "
          f"first extra: {longer[min(len(template), len(emitted))]}")
    sys.exit(1)
print(f"ok: {sys.argv[1]}: same shape as the planner's script ({len(template)} lines)")
