# SPDX-License-Identifier: BSD-3-Clause
# Checks a checkpoint written by ckpt_tool with h5py alone: root attributes, the value
# formula of tests/support/ckpt_test_util.hpp, each dataset's checksum
#   sum_i mix64(mix64(i) ^ float32_bits(x_i)) mod 2^64   (mix64: SplitMix64's finaliser),
# the manifest, and meta_checksum as docs/checkpoints.md defines it.
# usage: ckpt_h5py.py FILE STEP SEED
import sys
import h5py
import numpy as np

path, step, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
M = (1 << 64) - 1


def mix64(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)  # uint64 arrays wrap mod 2^64, as in C++
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def fnv1a(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) & M
    return h


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def meta_checksum(a):
    fields = ["format_version", "step", "tokens_seen", "deck", "layout", "train_seed", "data_seed", "data_cursor"]
    pairs = [(k, text(a[k])) for k in fields]
    pairs.append(("run_id", text(a["run_id"]) if "run_id" in a else ""))
    pairs += sorted((k, text(a[k])) for k in a if k.startswith("extra."))
    parts = sorted((int(k.split(".")[1]), text(a[k])) for k in a if k.startswith("manifest."))
    pairs.append(("manifest", "".join(v for _, v in parts)))
    canon = "".join("%s=%d:%s\n" % (k, len(v.encode()), v) for k, v in pairs)
    return fnv1a(canon)


def expected(name, n):
    stream = fnv1a(name) % 65536
    k = (np.arange(n, dtype=np.uint64) * 7919 + seed * 104729 + stream * 31) % 65536
    return ((k.astype(np.float64) - 32768.0) / 256.0).astype(np.float32)


with np.errstate(over="ignore"), h5py.File(path, "r") as f:
    a = f.attrs
    assert int(a["format_version"]) == 2, a["format_version"]
    assert meta_checksum(a) == int(a["meta_checksum"]), "meta_checksum"
    assert int(a["step"]) == step and int(a["data_cursor"]) == step
    assert int(a["train_seed"]) == seed
    deck = a["deck"].decode() if isinstance(a["deck"], bytes) else a["deck"]
    assert "vocab: 37" in deck, deck
    names = []
    f.visititems(lambda n, o: names.append("/" + n) if isinstance(o, h5py.Dataset) else None)
    assert len(names) == 21, names
    manifest = [line.split("\t") for line in text(a["manifest.0"]).splitlines()]
    assert sorted(n for n, _, _ in manifest) == sorted(names), manifest
    for n, dtype, dims in manifest:
        assert dtype == "float32" and tuple(int(d) for d in dims.split(",") if d) == f[n].shape, (n, dims)
    for name in names:
        x = f[name][...]
        assert x.dtype == np.float32, (name, x.dtype)
        flat = x.reshape(-1)
        assert np.array_equal(flat, expected(name, flat.size)), name
        idx = np.arange(flat.size, dtype=np.uint64)
        terms = mix64(mix64(idx) ^ flat.view(np.uint32).astype(np.uint64))
        total = int(np.sum(terms, dtype=np.uint64))
        assert total == int(f[name].attrs["checksum"]), name
    assert f["/model/blocks/0/moe/experts/weight"].shape == (3, 24, 10)
print("h5py: %d datasets, values and checksums match" % len(names))
