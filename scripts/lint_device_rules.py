# SPDX-License-Identifier: BSD-3-Clause
"""The text helpers of scripts/lint-device.py, and its rules 5-7: what one GPU vendor's
compiler accepts and the other's exposes (a 32-lane warp, std:: math, atomics neither
vendor does natively). See lint-device.py for the rules; a finding is (file, line,
message)."""
import re


def strip(text):
    """Comments and string/char literals blanked out; newlines and offsets kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def match_close(s, i, open_ch, close_ch):
    """Index just past the bracket that closes the one at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == open_ch:
            depth += 1
        elif s[j] == close_ch:
            depth -= 1
            if depth == 0:
                return j + 1
    return len(s)


def line_of(s, at):
    return s.count("\n", 0, at) + 1


# Device code: a function marked for the device (Kokkos' marks, or CUDA's and HIP's own
# __device__ / __global__, which both vendors spell the same) and a device lambda.
DEVICE_CODE = re.compile(r"\bKOKKOS_(?:INLINE_|FORCEINLINE_)?FUNCTION\b|\bKOKKOS_(?:CLASS_)?LAMBDA\b"
                         r"|\b__device__\b|\b__global__\b")


def device_bodies(s):
    """(start, end) of each device body, its braces included, in order."""
    spans = {}
    for m in DEVICE_CODE.finditer(s):
        if s[s.rfind("\n", 0, m.start()) + 1:m.start()].lstrip().startswith("#"):
            continue  # a macro's definition
        if "LAMBDA" in m.group(0):
            brace = s.find("{", m.end())
        else:
            paren = s.find("(", m.end())
            if paren < 0:
                continue
            brace = s.find("{", match_close(s, paren, "(", ")"))
            if brace < 0 or s.find(";", m.end(), brace) >= 0:
                continue  # a declaration, not a definition
        if brace >= 0:
            spans.setdefault(brace, match_close(s, brace, "{", "}"))
    return sorted(spans.items())


# Rule 5: the warp is 32 lanes on NVIDIA; AMD's wavefront is 64 on its data-centre GPUs
# (MI100-MI300, CDNA) and 32 on RDNA (Kokkos' HIPTraits::WarpSize follows the arch).
# Kokkos has no public warp-size constant; the portable query is
# TeamPolicy<...>::vector_length_max() (CudaTraits::WarpSize on CUDA, HIPTraits::WarpSize
# on HIP, both Impl), or Kokkos::AUTO and team_size_recommended.
PORTABLE_WIDTH = ("query it: TeamPolicy<...>::vector_length_max() is the warp width (32 on CUDA, 64 on an MI GPU), "
                  "and Kokkos::AUTO / team_size_recommended(f, Kokkos::ParallelForTag()) size a team; "
                  "Kokkos' CudaTraits/HIPTraits::WarpSize are Impl")
WARP_INTRINSIC = re.compile(r"\b(__shfl(?:_up|_down|_xor)?(?:_sync)?|__ballot(?:_sync)?|__activemask|__syncwarp"
                            r"|__any(?:_sync)?|__all(?:_sync)?|__match_(?:any|all)_sync|__reduce_\w+_sync"
                            r"|(?:Impl\s*::\s*)(?:in_place_)?shfl(?:_up|_down|_xor)?)\s*\(")
IMPL_WARP = re.compile(r"\b(?:Cuda|HIP)Traits\s*::\s*WarpSize\b")
WARP_CONSTANT = re.compile(r"(?i)^\s*(?:#\s*define\s+|(?:static\s+)?(?:inline\s+)?(?:constexpr|const)\s+[\w:]+\s+)"
                           r"(\w*(?:warp|wave)\w*)\s*[={]?\s*(32|64)\b", re.M)
WIDTH = re.compile(r"(?<![\w.])(32|64)(?![\w.])")
LANE_QUERY = re.compile(r"\b(?:vector_length_max|vector_length|impl_vector_length|team_size_max|"
                        r"team_size_recommended|team_size|warpSize)\b")
SCRATCH = re.compile(r"\b(?:PerTeam|PerThread|set_scratch_size|scratch_size|team_shmem_size|shmem_size|"
                     r"ScratchRequest)\b")
POLICY_CALL = re.compile(r"\b(TeamPolicy\s*(?:<[^;{}()]*>)?|teams)\s*\(")


def top_level_args(s, open_paren):
    """The comma-separated arguments of the call whose '(' is at open_paren, with offsets."""
    end = match_close(s, open_paren, "(", ")") - 1
    args, depth, start = [], 0, open_paren + 1
    for j in range(open_paren + 1, end):
        if s[j] in "([{<":
            depth += 1
        elif s[j] in ")]}>":
            depth -= 1
        elif s[j] == "," and depth == 0:
            args.append((start, s[start:j]))
            start = j + 1
    args.append((start, s[start:end]))
    return args


def enclosing_block(s, at):
    """(start, end) of the innermost brace block around offset at (the file if none)."""
    depth = 0
    for j in range(at - 1, -1, -1):
        if s[j] == "}":
            depth += 1
        elif s[j] == "{":
            if depth == 0:
                return j, match_close(s, j, "{", "}")
            depth -= 1
    return 0, len(s)


def wavefront(f, s, policy_aliases):
    out = []
    width = f"a warp is 32 lanes on NVIDIA, a wavefront 64 on AMD MI100-MI300 (32 on RDNA); {PORTABLE_WIDTH}"
    for m in WARP_INTRINSIC.finditer(s):
        name = re.sub(r"[(\s]", "", m.group(0))
        out.append((f, line_of(s, m.start()), f"warp intrinsic {name}: its mask and width "
                                              f"assume 32 lanes (0xffffffff is half a wavefront) and it is no Kokkos API; "
                                              f"use Kokkos' team and vector reductions (parallel_reduce over "
                                              f"ThreadVectorRange/TeamThreadRange, team_broadcast, team_reduce)"))
    for m in IMPL_WARP.finditer(s):
        out.append((f, line_of(s, m.start()), f"Kokkos Impl warp size {m.group(0)}: {width}"))
    for m in WARP_CONSTANT.finditer(s):
        out.append((f, line_of(s, m.start(2)), f"warp-size constant {m.group(1)} = {m.group(2)}: {width}"))
    calls = POLICY_CALL.pattern.replace("teams", "|".join(["teams"] + sorted(policy_aliases)))
    for m in re.finditer(calls, s):
        for at, arg in top_level_args(s, m.end() - 1)[1:]:
            for w in WIDTH.finditer(arg):
                out.append((f, line_of(s, at + w.start()), f"team or vector size {w.group(1)} hard-coded in a "
                                                           f"team policy: {width}"))
    lane_vars = set()
    for m in re.finditer(r"\b(\w+)\s*=[^;=][^;]*?" + LANE_QUERY.pattern, s):
        lane_vars.add((m.group(1), enclosing_block(s, m.start())))
    for start, text in statements(s):
        lanes = LANE_QUERY.search(text) or any(
            b0 <= start < b1 and re.search(r"\b%s\b" % v, text) for v, (b0, b1) in lane_vars)
        scratch = SCRATCH.search(text)
        for w in WIDTH.finditer(text):
            if lanes:
                what = f"lane count {w.group(1)} hard-coded next to a lane query"
            elif scratch and w.group(1) == "32":
                what = "scratch sized per 32 lanes (size it from team_size() and the vector length)"
            else:
                continue
            out.append((f, line_of(s, start + w.start()), f"{what}: {width}"))
    return out


def statements(s):
    """(offset, text) of each statement: the text between ; { and }."""
    start = 0
    for m in re.finditer(r"[;{}]", s):
        yield start, s[start:m.start()]
        start = m.end()


# Rule 6: std:: math in device code. NVIDIA's math API calls std:: names in device code
# "unsupported, unverified, undocumented, not portable"; nvcc compiles std::min/max
# (constexpr) for the device only with --expt-relaxed-constexpr, which Kokkos turns on
# only with Kokkos_ENABLE_CUDA_CONSTEXPR (default OFF with nvcc); hipcc (clang) takes
# both. mini5d's sanctioned functions are in kernels/math.hpp.
KMATH = ("exp", "log", "sqrt", "tanh", "cos", "sin")
STD_MATH = re.compile(r"\bstd\s*::\s*(abs|fabs|exp|exp2|expm1|log|log2|log10|log1p|sqrt|cbrt|pow|hypot|sin|cos|tan|"
                      r"asin|acos|atan|atan2|sinh|cosh|tanh|asinh|acosh|atanh|erf|erfc|tgamma|lgamma|ceil|floor|"
                      r"trunc|round|lround|llround|nearbyint|rint|fmod|remainder|fma|fmax|fmin|fdim|copysign|"
                      r"isfinite|isnan|isinf|signbit|nextafter|ldexp|frexp|modf|min|max|clamp)\s*(?:<[^;{}()]*>)?\s*\(")


def std_math(f, s, bodies):
    out = []
    for b0, b1 in bodies:
        for m in STD_MATH.finditer(s, b0, b1):
            fn, line = m.group(1), line_of(s, m.start())
            if fn in ("min", "max", "clamp"):
                out.append((f, line, f"std::{fn} in device code: constexpr, so hipcc (clang) takes it but nvcc only "
                                     f"with --expt-relaxed-constexpr (Kokkos_ENABLE_CUDA_CONSTEXPR, off by default) "
                                     f"and Kokkos 3.4 has no Kokkos::{fn}; write the comparison (a < b ? a : b), as the "
                                     f"kernels do"))
                continue
            if fn in KMATH:
                use = f"call mini5d::kmath::{fn} (kernels/math.hpp: Kokkos::{fn} on Kokkos >= 4, " \
                      f"Kokkos::Experimental::{fn} on 3.4)"
            else:
                use = (f"add {fn} to mini5d::kmath (kernels/math.hpp), from Kokkos::{fn} on Kokkos >= 4 and "
                       f"Kokkos::Experimental::{fn} on 3.4 where it has one, and call that")
            out.append((f, line, f"std::{fn} in device code: NVIDIA documents std:: math on the GPU as unsupported "
                                 f"and not portable (it compiles through overloads the CUDA and HIP headers happen to "
                                 f"declare) and Kokkos does not promise it; {use}"))
    return out


# Rule 7: atomics that are wrong or serialised on a GPU, not merely slower. Not flagged:
# atomics on int, int64, uint64, float and double in device memory (native, or a CAS
# loop that is exact, e.g. 64-bit float min/max before gfx90a).
ATOMIC_CALL = re.compile(r"\b(?:Kokkos|desul)\s*::\s*(atomic_\w+)\s*(?:<([^;{}()]*)>)?\s*\(")
RAW_ATOMIC = re.compile(r"\b(atomic(?:Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)(?:_system|_block)?|"
                        r"(?:un)?safeAtomic(?:Add|Min|Max)|atomicAddNoRet)\s*\(")
LONG_DOUBLE = re.compile(r"\blong\s+double\b")
HALF = re.compile(r"\b(?:half_t|bhalf_t|bf16|BFloat16|__half|__nv_bfloat16|__hip_bfloat16|__bf16|_Float16)\b")
FINE_GRAINED = re.compile(r"\b(?:HIPManagedSpace|HIPHostPinnedSpace|CudaUVMSpace|CudaHostPinnedSpace|SharedSpace|"
                          r"SharedHostPinnedSpace)\b")
NOT_VIEW = r"(?:(?!\bView\b)[^;{}()])*?"  # within one View's template arguments
ATOMIC_VIEW = re.compile(r"\bView\s*<(%sMemoryTraits\s*<%s\bAtomic\b%s)>\s*&?\s*(\w+)" % (NOT_VIEW, NOT_VIEW, NOT_VIEW))
WHY_LONG_DOUBLE = ("long double has no GPU atomic and no GPU layout of its own: CUDA device code does not support it, "
                   "and AMD GPUs make it a 64-bit double where the x86 host has 80 bits, so host and device disagree "
                   "on its bytes (HIP programming guide); accumulate in double")
WHY_HALF = ("no portable native 16-bit float atomic (HIP's atomicAdd has __half/bf16 overloads only since ROCm 6.3), so "
            "Kokkos (desul) falls back to its lock table and serialises contended updates; accumulate in float "
            "(Precision<S>::Acc) and narrow once")
WHY_FINE = ("an MI200/MI300 hardware float atomic (what -munsafe-fp-atomics, common in Kokkos HIP builds, emits) is done "
            "in the L2 cache and has no effect on fine-grained memory (hipMallocManaged, hipHostMalloc: Kokkos' "
            "HIPManagedSpace, HIPHostPinnedSpace, SharedSpace); keep atomic targets in the default device memory space")


def declared_type(s, name, before):
    """The element type and declaration of name, from its last declaration before offset before."""
    view = re.compile(r"\bView\s*<\s*(?:const\s+)?((?:long\s+)?[\w:]+)\s*\*%s>\s*&?\s*%s\b" % (NOT_VIEW, re.escape(name)))
    plain = re.compile(r"((?:long\s+)?[\w:]+)\s*(?:const\s*)?[*&]+\s*(?:const\s*)?(?:__restrict__\s*)?%s\b"
                       % re.escape(name))
    best = None
    for rx in (view, plain):
        for m in rx.finditer(s, 0, before):
            if best is None or m.start() > best.start():
                best = m
    return (best.group(1), best.group(0)) if best else (None, "")


def atomics(f, s, bodies):
    out = []
    for m in RAW_ATOMIC.finditer(s):
        if not re.search(r"(?:\.|->|::)\s*$", s[max(0, m.start() - 3):m.start()]):
            out.append((f, line_of(s, m.start()), f"vendor atomic {m.group(1)}: CUDA/HIP only, and on HIP a float "
                                                  f"one may be the hardware atomic that fine-grained memory drops; use "
                                                  f"Kokkos::atomic_* on device memory"))
    for b0, b1 in bodies:
        for m in ATOMIC_CALL.finditer(s, b0, b1):
            args = top_level_args(s, m.end() - 1)
            head = re.split(r"[(\[]", args[0][1].strip().lstrip("&*( "), maxsplit=1)[0]
            names = re.findall(r"\w+", head)
            elem, decl = m.group(2), ""
            if names:
                t, decl = declared_type(s, names[-1], m.start())
                elem = elem or t
            elem = elem or ""
            line = line_of(s, m.start())
            if LONG_DOUBLE.search(elem):
                out.append((f, line, f"Kokkos::{m.group(1)} on long double: {WHY_LONG_DOUBLE}"))
            elif HALF.search(elem):
                out.append((f, line, f"Kokkos::{m.group(1)} on the 16-bit float {elem}: {WHY_HALF}"))
            elif re.fullmatch(r"float|double", elem) and FINE_GRAINED.search(decl):
                out.append((f, line, f"Kokkos::{m.group(1)} on {elem} in fine-grained memory: {WHY_FINE}"))
    for m in ATOMIC_VIEW.finditer(s):
        targs, line = m.group(1), line_of(s, m.start())
        if LONG_DOUBLE.search(targs):
            out.append((f, line, f"atomic View {m.group(2)} of long double: {WHY_LONG_DOUBLE}"))
        elif HALF.search(targs.split(",")[0]):
            out.append((f, line, f"atomic View {m.group(2)} of 16-bit floats: {WHY_HALF}"))
        elif re.match(r"\s*(?:const\s+)?(?:float|double)\b", targs) and FINE_GRAINED.search(targs):
            out.append((f, line, f"atomic View {m.group(2)} of floats in fine-grained memory: {WHY_FINE}"))
    return out


def vendor_findings(stripped):
    """Rules 5-7 over {file: stripped text}."""
    aliases = set()
    for s in stripped.values():
        aliases.update(re.findall(r"\busing\s+(\w+)\s*=\s*(?:Kokkos\s*::\s*)?TeamPolicy\b", s))
    out = []
    for f, s in stripped.items():
        bodies = device_bodies(s)
        out += wavefront(f, s, aliases) + std_math(f, s, bodies) + atomics(f, s, bodies)
    return out
