#!/usr/bin/env python3
"""Regenerates the seed corpora in fuzz/corpus/ from the examples and tests:

    /usr/bin/python3 fuzz/seeds/make_seeds.py

model-config: examples/*.json, every description of test/lit/frontend and of
the e2e table. tfm-ir: examples/*.mlir and each split of test/lit/dialect.
safetensors: files for the fixed model of fuzz/safetensors.cpp in every
dtype, with and without the alias, aligned and not, and broken variants.
npy: every dtype, rank, version and the rejected forms. Files are named by
content hash, as libFuzzer names them.
"""

import hashlib
import json
import os
import re
import struct
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
MAX_SEED = 8192  # libFuzzer's -max_len follows the largest seed


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_SEED:
        return
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def split_file(path):
    """The //--- sections of a lit test (split-file)."""
    parts, name, lines = {}, None, []
    for line in open(path):
        m = re.match(r"^//--- (\S+)", line)
        if m:
            if name:
                parts[name] = "".join(lines)
            name, lines = m.group(1), []
        elif name:
            lines.append(line)
    if name:
        parts[name] = "".join(lines)
    return parts


def model_config():
    for f in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if f.endswith(".json"):
            put("model-config", open(os.path.join(ROOT, "examples", f)).read())
    lit = os.path.join(ROOT, "test", "lit", "frontend")
    for f in sorted(os.listdir(lit)):
        if not f.endswith(".test"):
            continue  # Inputs/: helper scripts
        for name, text in split_file(os.path.join(lit, f)).items():
            if name.endswith(".json"):
                put("model-config", text)
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    import cases
    for case in cases.CASES:
        put("model-config", json.dumps(case.model, indent=1))


def tfm_ir():
    for f in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if f.endswith(".mlir"):
            put("tfm-ir", open(os.path.join(ROOT, "examples", f)).read())
    lit = os.path.join(ROOT, "test", "lit", "dialect")
    for f in sorted(os.listdir(lit)):
        if not f.endswith(".mlir"):
            continue
        text = open(os.path.join(lit, f)).read()
        for chunk in re.split(r"^// -----\s*$", text, flags=re.M):
            # Comments (RUN and CHECK lines) only cost the fuzzer time.
            body = "\n".join(l for l in chunk.splitlines()
                             if not l.lstrip().startswith("//"))
            if body.strip():
                put("tfm-ir", body.strip() + "\n")


# The fixed model of fuzz/safetensors.cpp.
PARAMS = [("src_embed.weight", (5, 4)), ("tgt_embed.weight", (5, 4)),
          ("layers.0.norm1.weight", (4,)), ("layers.0.score.w_key", (2, 3, 2)),
          ("x", (1, 2, 1, 3))]


def safetensors(tensors, pad=0, metadata=None, header_extra=b""):
    """tensors: list of (name, dtype, shape, bytes)."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode() + header_extra
    text += b" " * pad
    return struct.pack("<Q", len(text)) + text + data


def raw(shape, dtype):
    n = int(np.prod(shape)) if shape else 1
    values = (np.arange(n, dtype=np.float32) / 7 - 1).reshape(shape)
    if dtype == "F32":
        return values.astype("<f4").tobytes()
    if dtype == "F16":
        return values.astype("<f2").tobytes()
    return (values.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()


def safetensors_seeds():
    for dtype in ["F32", "F16", "BF16"]:
        full = [(n, dtype, s, raw(s, dtype)) for n, s in PARAMS]
        put("safetensors", safetensors(full))
        for pad in [1, 2, 3]:  # data not 4-byte aligned
            put("safetensors", safetensors(full, pad=pad))
        shared = [("embed.weight", dtype, (5, 4), raw((5, 4), dtype))] + full[2:]
        put("safetensors", safetensors(shared, metadata={"format": "pt"}))
    full = [(n, "F32", s, raw(s, "F32")) for n, s in PARAMS]
    put("safetensors", safetensors(full[1:]))  # missing tensor
    put("safetensors", safetensors(full + [("extra", "F32", (2,), raw((2,), "F32"))]))
    put("safetensors", safetensors([(full[0][0], "F32", (4, 5), full[0][3])] + full[1:]))
    put("safetensors", safetensors(full)[:-7])  # truncated data
    put("safetensors", safetensors([(n, "I64", s, r + r) for n, _, s, r in full]))
    put("safetensors", safetensors([]))
    put("safetensors", b"")
    put("safetensors", struct.pack("<Q", 2) + b"{}")
    put("safetensors", struct.pack("<Q", 1 << 40) + b"{}")


def npy_bytes(array, version=(1, 0), fortran=False, descr=None, extra=""):
    descr = descr or np.lib.format.dtype_to_descr(array.dtype)
    shape = array.shape
    header = "{'descr': %r, 'fortran_order': %s, 'shape': %r, %s}" % (
        descr, fortran, shape, extra)
    pre = 10 if version[0] == 1 else 12
    total = (pre + len(header) + 1 + 63) // 64 * 64
    header = header + " " * (total - pre - len(header) - 1) + "\n"
    size = struct.pack("<H", len(header)) if version[0] == 1 else struct.pack("<I", len(header))
    data = array.tobytes(order="F" if fortran else "C")
    return b"\x93NUMPY" + bytes(version) + size + header.encode("latin1") + data


def npy_seeds():
    rng = np.random.default_rng(0)
    arrays = [
        rng.integers(0, 50, (2, 5)).astype("<i4"),
        rng.integers(0, 50, (7,)).astype("<i8"),
        rng.integers(0, 1000, (3, 8)).astype("<i8"),
        rng.standard_normal((2, 3, 4)).astype("<f4"),
        rng.standard_normal((5, 4)).astype("<f4"),
        np.zeros((0, 4), "<f4"),
        np.zeros((), "<f4"),
        np.array([-1, 60], "<i4"),
    ]
    for a in arrays:
        put("npy", npy_bytes(a))
    put("npy", npy_bytes(arrays[3], version=(2, 0)))
    put("npy", npy_bytes(arrays[0], version=(3, 0)))
    put("npy", npy_bytes(arrays[3], fortran=True))
    put("npy", npy_bytes(arrays[3].astype(">f4"), descr=">f4"))
    put("npy", npy_bytes(arrays[3].astype("<f8")))
    put("npy", npy_bytes(arrays[0])[:-3])
    put("npy", b"\x93NUMPY\x01\x00")
    # Padding masks (contract section 8): every dtype, a bad value, a row of
    # padding only.
    put("npy", npy_bytes(np.array([[1, 1, 0], [1, 0, 0]], "|b1")))
    put("npy", npy_bytes(np.array([1, 1, 1, 0], "<i4")))
    put("npy", npy_bytes(np.array([[1, 0], [1, 1]], "<i8")))
    put("npy", npy_bytes(np.array([[1.0, 0.0, 1.0]], "<f4")))
    put("npy", npy_bytes(np.array([[1, 2, 0]], "<i4")))
    put("npy", npy_bytes(np.array([[0.5, 1.0]], "<f4")))
    put("npy", npy_bytes(np.array([[1, 1], [0, 0]], "<i4")))


def main():
    model_config()
    tfm_ir()
    safetensors_seeds()
    npy_seeds()
    for t in sorted(os.listdir(CORPUS)):
        print(t, len(os.listdir(os.path.join(CORPUS, t))), "files")


if __name__ == "__main__":
    main()
