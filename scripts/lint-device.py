#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Flags, without a GPU compiler, device code that g++ accepts and nvcc (CUDA) or hipcc
(HIP, AMD) rejects or gets wrong: the lint both vendors' builds rely on.

nvcc rejects an extended __host__ __device__ lambda (KOKKOS_LAMBDA, KOKKOS_CLASS_LAMBDA)
  1. inside a member function that is private or protected, and
  2. inside a function whose signature names a private or protected nested type of
     its class (the kernel stub nvcc generates cannot name it), or that captures a
     variable of such a type.
g++ and clang accept both, so a host-only CI would not notice. Nor does g++ (even with
-pedantic-errors) notice
  3. a lambda that captures a structured binding, which is C++20 (nvcc's front end and
     clang refuse it in C++17), or
  4. device code (a KOKKOS_FUNCTION / KOKKOS_INLINE_FUNCTION body, a KOKKOS_LAMBDA, or a
     __device__ / __global__ function, the marks CUDA and HIP share) calling a member
     function of the project's own that is host-only (defined without a KOKKOS_*FUNCTION
     or __device__ mark, or constexpr): nvcc only warns (#20011, #20014), hipcc (clang)
     refuses it once the code is emitted for the GPU ("reference to __host__ function in
     __host__ __device__ function"), and on a GPU the call is undefined. Matched by
     name, so a name that also has a device-callable definition anywhere, or that
     Kokkos' own types use, is not flagged.
What AMD exposes and NVIDIA hides (lint_device_rules.py):
  5. a hard-coded warp width: warp intrinsics (__shfl*, __ballot*, __activemask, ...,
     Kokkos::Impl shuffles), Kokkos' Impl CudaTraits/HIPTraits::WarpSize, a warp or wave
     constant of 32 or 64, 32 or 64 as a team policy's team or vector size, compared
     with a lane query (vector_length_max, team_size_recommended, ... or a variable set
     from one) or as a scratch size's lane count (32). AMD's wavefront is 64 lanes on
     MI100-MI300 (CDNA) and 32 on RDNA; Kokkos
     has no public warp-size constant, TeamPolicy<...>::vector_length_max() is it.
  6. std:: math in device code (std::exp, std::sqrt, std::abs, std::isfinite,
     std::min/max, ...): unsupported on the GPU by NVIDIA's own account and not
     promised by Kokkos; std::min/max are constexpr, which hipcc takes and nvcc only with
     --expt-relaxed-constexpr (Kokkos_ENABLE_CUDA_CONSTEXPR, off by default). Kernels
     call mini5d::kmath (kernels/math.hpp) or write the comparison.
  7. atomics that are wrong or serialised on a GPU: on long double, on 16-bit floats,
     on float/double in fine-grained memory (managed, host-pinned, shared spaces; HIP's
     hardware float atomics have no effect there), and CUDA/HIP atomic intrinsics.
     Atomics on int, int64, uint64, float and double in device memory are fine on both.
This script finds them in C++ sources by a light parse (comments and strings stripped,
braces matched): class bodies with their access sections, member functions defined
inline or out of line (`Class::name(...) {` or `Class<T>::name(...) {`), structured
bindings and the lambdas in their scope, device bodies and the statements in them.

usage: lint-device.py [--expect-marked] PATH...   (files or directories)
  exit 0: nothing found; 1: findings (file:line: message); 2: usage error.
  A directory's files and folders named *_bad (the known-bad snippets of tests/lint/)
  are skipped, except with
  --expect-marked: the files are test snippets; every line that holds something the
  lint must flag carries the comment `LINT-EXPECT`, and the findings must be exactly
  those lines (so the lint's own test fails if it misses one or flags a good one).
"""
import re
import sys

from lint_common import lint_main
from lint_device_rules import device_bodies, match_close, strip, vendor_findings

LAMBDA = re.compile(r"\bKOKKOS_(?:CLASS_)?LAMBDA\b")
EXTS = (".cpp", ".hpp", ".h", ".cc", ".cxx", ".hh", ".inl", ".cu", ".cuh", ".hip")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "catch", "decltype", "alignof",
            "static_assert", "noexcept", "requires", "operator"}


class ClassInfo:
    def __init__(self, name):
        self.name = name
        self.access = {}            # member function name -> "public"/"private"/"protected"
        self.hidden_types = set()   # nested types declared private or protected


CLASS_HEAD = re.compile(r"\b(class|struct)\s+(?:\[\[[^\]]*\]\]\s*)?(?:alignas\s*\([^)]*\)\s*)?(\w+)\s*(?:final\s*)?(?::[^;{()]*)?\{")
MEMBER_CALL = re.compile(r"(~?\w+)\s*\(")
TYPE_DECL = re.compile(r"^(?:template\s*<[^{;]*>\s*)?(?:struct|class|union|enum(?:\s+class|\s+struct)?)\s+(\w+)|^using\s+(\w+)\s*=|^typedef\b.*?(\w+)\s*$")


def parse_classes(s, classes, defs):
    """Fills classes (name -> ClassInfo) and defs with the member functions defined
    inside class bodies: (class, function, access, signature and body, body offset)."""
    for m in CLASS_HEAD.finditer(s):
        kind, name = m.group(1), m.group(2)
        open_at = m.end() - 1
        close_at = match_close(s, open_at, "{", "}")
        info = classes.setdefault(name, ClassInfo(name))
        access = "private" if kind == "class" else "public"
        i = stmt_start = open_at + 1
        while i < close_at - 1:
            c = s[i]
            label = re.match(r"(public|private|protected)\s*:(?!:)", s[i:])
            if label and not s[stmt_start:i].strip():
                access = label.group(1)
                i = stmt_start = i + label.end()
                continue
            if c == "(":
                i = match_close(s, i, "(", ")")
                continue
            if c not in "{;":
                i += 1
                continue
            stmt = re.sub(r"\s+", " ", s[stmt_start:i].strip())
            body_end = match_close(s, i, "{", "}") if c == "{" else i + 1
            td = TYPE_DECL.match(stmt)
            if td and "(" not in stmt.split("=")[0]:
                tname = td.group(1) or td.group(2) or td.group(3)
                if tname and access != "public":
                    info.hidden_types.add(tname)
                i = body_end
                if c == "{":  # a nested type's body: on to its ';'
                    j = s.find(";", i)
                    i = j + 1 if j >= 0 else i
                stmt_start = i
                continue
            paren = stmt.find("(")
            calls = MEMBER_CALL.findall(stmt[:paren + 1]) if paren > 0 else []
            if calls and calls[-1] not in KEYWORDS and "=" not in stmt[:paren]:
                fn = calls[-1]
                if access == "public" or fn not in info.access:  # an overload public anywhere counts as public
                    info.access[fn] = access
                if c == "{":
                    defs.append((name, fn, access, s[stmt_start:body_end], i))
            i = stmt_start = body_end


OUT_OF_LINE = re.compile(r"\b(\w+)\s*(?:<[^<>;{}()]*>)?\s*::\s*(~?\w+)\s*\(")


def out_of_line_defs(s, classes):
    defs = []
    for m in OUT_OF_LINE.finditer(s):
        cls, fn = m.group(1), m.group(2)
        if cls not in classes:
            continue
        close_paren = match_close(s, m.end() - 1, "(", ")")
        tail = re.match(r"[\s\w&]*(?:->\s*[\w:<>,\s*&]+)?\s*(?::[^{;]*)?\{", s[close_paren:])
        if not tail:
            continue
        open_at = close_paren + tail.end() - 1
        end = match_close(s, open_at, "{", "}")
        sig_start = s.rfind("\n", 0, m.start()) + 1
        defs.append((cls, fn, None, s[sig_start:end], sig_start))
    return defs


def scan(files):
    stripped = {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            stripped[f] = strip(fh.read())
    # Class declarations from every file first: a .cpp defines what a .hpp declares.
    classes, defs = {}, []
    for f, s in stripped.items():
        found = []
        parse_classes(s, classes, found)
        defs += [(f,) + d for d in found]
    for f, s in stripped.items():
        defs += [(f,) + d for d in out_of_line_defs(s, classes)]
    findings = []
    for f, cls, fn, access, text, at in defs:
        lam = LAMBDA.search(text)
        if not lam:
            continue
        line = stripped[f].count("\n", 0, at + lam.start()) + 1
        access = access or classes[cls].access.get(fn, "public")
        if access != "public":
            findings.append((f, line, f"device lambda in {access} member function {cls}::{fn}: nvcc rejects "
                                      f"it; move the kernel to a namespace-scope function or functor"))
        brace = text.find("{", text.find(")", lam.end()))
        sig = text[:text.find("{")] if "{" in text else text
        lam_body = text[lam.start():match_close(text, brace, "{", "}")] if brace >= 0 else ""
        for t in sorted(classes[cls].hidden_types):
            tre = r"\b%s\b" % re.escape(t)
            if re.search(tre, sig):
                findings.append((f, line, f"device lambda in {cls}::{fn}, whose signature names the non-public "
                                          f"nested type {cls}::{t}: nvcc rejects it; make the kernel a "
                                          f"namespace-scope function that takes no such type"))
            for v in re.finditer(tre + r"(?:\s*<[^;{}()]*>)?\s*[&*]*\s*(\w+)\s*[=;({]", text):
                if re.search(r"\b%s\b" % re.escape(v.group(1)), lam_body[len("KOKKOS_LAMBDA"):]):
                    findings.append((f, line, f"device lambda in {cls}::{fn} captures {v.group(1)}, of the "
                                              f"non-public nested type {cls}::{t}: nvcc rejects it; capture its "
                                              f"fields (Views, scalars) instead"))
    for f, s in stripped.items():
        findings += binding_captures(f, s)
    host_only = host_only_members(defs)
    for f, s in stripped.items():
        findings += host_calls_in_device_code(f, s, host_only)
    findings += vendor_findings(stripped)
    return sorted(set(findings))


DEVICE_MARK = re.compile(r"\b(?:KOKKOS_(?:INLINE_|FORCEINLINE_|DEFAULTED_)?FUNCTION|constexpr|__device__)\b")
# Member names Kokkos' own types (View, team members, policies) define for device code.
KOKKOS_MEMBERS = {"size", "extent", "extent_int", "data", "span", "stride", "rank", "league_rank", "team_rank",
                  "team_size", "league_size", "team_barrier", "team_scratch", "thread_scratch", "team_shmem",
                  "team_broadcast", "team_reduce", "team_scan", "operator", "access", "get", "value", "first", "second"}
CALL = re.compile(r"(?:\.|->)\s*(\w+)\s*\(")


def host_only_members(defs):
    """Member function name -> "Class::name" for the project's member functions that are
    host-only wherever they are defined (rule 4)."""
    host, device = {}, set()
    for f, cls, fn, access, text, at in defs:
        head = text[:text.find("(")] if "(" in text else text
        if DEVICE_MARK.search(head):
            device.add(fn)
        elif fn != cls and not fn.startswith("~"):
            host.setdefault(fn, f"{cls}::{fn}")
    return {fn: q for fn, q in host.items() if fn not in device and fn not in KOKKOS_MEMBERS}


def host_calls_in_device_code(f, s, host_only):
    """Calls of host-only member functions inside device code (rule 4)."""
    out = []
    for brace, end in device_bodies(s):
        body = s[brace:end]
        for c in CALL.finditer(body):
            q = host_only.get(c.group(1))
            if q:
                out.append((f, s.count("\n", 0, brace + c.start()) + 1,
                            f"device code calls the host-only member function {q}: nvcc warns (#20011/#20014), hipcc "
                            f"refuses it (reference to __host__ function in __host__ __device__ function) and "
                            f"the call is undefined on a GPU; mark {q} KOKKOS_INLINE_FUNCTION (or constexpr)"))
    return out


BINDING = re.compile(r"\bauto\s*(?:&&|&)?\s*\[\s*(\w+(?:\s*,\s*\w+)*)\s*\]")
LAMBDA_INTRO = re.compile(r"(?:^|(?<=[(,=;{}]))\s*(?:return\s+)?\[([^\[\]]*)\]\s*(\([^{};]*?\))?\s*(?:mutable\s*)?"
                          r"(?:noexcept\s*)?(?:->\s*[^{;]+)?\{")


def binding_captures(f, s):
    """Lambdas that capture a structured binding declared around them (rule 3)."""
    out = []
    for b in BINDING.finditer(s):
        names = [n.strip() for n in b.group(1).split(",")]
        # The binding's scope: to the end of the block that holds it (a range-for's
        # binding: to the end of the loop's body, which that block contains).
        depth, end = 0, len(s)
        for j in range(b.end(), len(s)):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth < 0:
                    end = j
                    break
        for lam in LAMBDA_INTRO.finditer(s, b.end(), end):
            if not lam.group(1).strip():
                continue  # captures nothing
            body = s[lam.end() - 1:match_close(s, lam.end() - 1, "{", "}")]
            params = lam.group(2) or ""
            used = [n for n in names
                    if re.search(r"(?<![.\w>])%s\b" % re.escape(n), body) and not re.search(r"\b%s\b" % re.escape(n), params)]
            if used:
                out.append((f, s.count("\n", 0, lam.start(1)) + 1,
                            f"lambda captures the structured binding {', '.join(used)}: C++20, rejected by nvcc "
                            f"and clang in C++17; copy it into a variable first"))
    return out


def main(argv):
    return lint_main(argv, __doc__, "lint-device", "LINT-EXPECT", EXTS, scan)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
