#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Release metadata agrees with the CMake project's VERSION: LICENSE is the BSD 3-Clause
# text the sources' SPDX headers name, CITATION.cff is valid CFF 1.2.0 for this version,
# CHANGELOG.md has a section for it (and an Unreleased one), the Spack recipe knows it
# (version(<version>) fetched from tag v<version>, or from a commit while there is no
# tag), and `mini5d version` prints it.
# usage: check_release.py REPO_ROOT MINI5D_BINARY
import ast
import datetime
import os
import re
import subprocess
import sys

import yaml

root, binary = sys.argv[1], sys.argv[2]
errors = []
err = errors.append
cmake = open(os.path.join(root, "CMakeLists.txt")).read()
m = re.search(r"\bproject\(\s*mini5d\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", cmake)
if not m:
    sys.exit("FAIL: CMakeLists.txt: no project(mini5d VERSION X.Y.Z)")
version = m.group(1)

lic = open(os.path.join(root, "LICENSE")).read()
for phrase in ("BSD 3-Clause License", "the mini5d developers", "Redistributions of source code must retain",
               "Redistributions in binary form must reproduce",
               "Neither the name of the copyright holder nor the names of its"):
    if phrase not in lic:
        err(f"LICENSE: no '{phrase}' (BSD 3-Clause, copyright the mini5d developers)")

cff = yaml.safe_load(open(os.path.join(root, "CITATION.cff")))
if str(cff.get("cff-version")) != "1.2.0":
    err(f"CITATION.cff: cff-version {cff.get('cff-version')}, expected 1.2.0")
for key in ("message", "title", "authors"):
    if not cff.get(key):
        err(f"CITATION.cff: no {key} (required by CFF 1.2.0)")
if str(cff.get("version")) != version:
    err(f"CITATION.cff: version {cff.get('version')}, CMake says {version}")
if cff.get("license") != "BSD-3-Clause":
    err(f"CITATION.cff: license {cff.get('license')}, expected BSD-3-Clause")
if not isinstance(cff.get("date-released"), datetime.date):
    err("CITATION.cff: date-released is not a YYYY-MM-DD date")
for a in cff.get("authors") or []:
    if not isinstance(a, dict) or not (a.get("name") or a.get("family-names")):
        err(f"CITATION.cff: author {a} is neither an entity (name) nor a person (family-names)")

changelog = open(os.path.join(root, "CHANGELOG.md")).read()
if not re.search(rf"^## \[?{re.escape(version)}\]?\b", changelog, re.M):
    err(f"CHANGELOG.md: no '## {version}' section")
if not re.search(r"^## \[?Unreleased\]?", changelog, re.M):
    err("CHANGELOG.md: no '## Unreleased' section")

recipe = ast.parse(open(os.path.join(root, "spack", "packages", "mini5d", "package.py")).read())
# version -> its fetch keywords (tag=, commit=): the repository has no tags yet, so the
# recipe pins the version to a commit (tests/spack/check_spack.py checks which one).
sources = {}
for node in ast.walk(recipe):
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "version" and node.args \
            and isinstance(node.args[0], ast.Constant):
        sources[node.args[0].value] = {k.arg: k.value.value for k in node.keywords
                                       if isinstance(k.value, ast.Constant)}
src = sources.get(version, {})
if not (src.get("tag") == f"v{version}" or re.fullmatch(r"[0-9a-f]{40}", str(src.get("commit", "")))):
    err(f"spack recipe: no version('{version}', tag='v{version}') or version('{version}', commit=<40 hex>) "
        f"(has {sources})")

r = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=120)
if r.returncode != 0 or not r.stdout.startswith(f"mini5d {version} "):
    err(f"`mini5d version` printed '{r.stdout.strip()}' (rc {r.returncode}), expected 'mini5d {version} ...'")

if errors:
    for e in errors:
        print("FAIL: " + e)
    sys.exit(1)
print(f"ok: version {version} in CMake, CITATION.cff, CHANGELOG.md, the Spack recipe and `mini5d version`; LICENSE BSD-3-Clause")
