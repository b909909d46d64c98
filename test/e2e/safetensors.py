"""Hand-written safetensors writer/reader for the e2e tests (no dependencies
beyond numpy).

The format (Hugging Face safetensors):
  * 8 bytes: little-endian unsigned 64-bit N, the size of the JSON header;
  * N bytes: a UTF-8 JSON object mapping each tensor name to
    {"dtype": "F32"|"F16"|"BF16"|..., "shape": [...], "data_offsets": [begin, end]}
    (offsets relative to the first byte after the header), plus an optional
    "__metadata__" object of string -> string.  We pad the header with spaces
    to a multiple of 8 bytes, as the reference implementation does;
  * the raw little-endian, C-order tensor data.

Only the dtypes the tests need are written: F32, F16, BF16 for float
weights, I32 and I64 for integer ones (block_sparse's block_pattern ids).
A float dtype takes a float array and an integer dtype an integer array
whose values fit it; anything else is an error (convert first), so that
ids are never written as floats, or floats as ids, by accident.  The reader
also understands F64 and the other integer types, and checks the file's
structure strictly (offsets contiguous, in bounds, sized to shape x dtype),
so that it doubles as a check of what the writer produced.
"""

import json
import struct

import numpy as np

# dtype name -> (numpy dtype used for the raw bytes, element size)
_RAW = {
    "F64": (np.dtype("<f8"), 8),
    "F32": (np.dtype("<f4"), 4),
    "F16": (np.dtype("<f2"), 2),
    "BF16": (np.dtype("<u2"), 2),  # raw bits; converted below
    "I64": (np.dtype("<i8"), 8),
    "I32": (np.dtype("<i4"), 4),
    "I16": (np.dtype("<i2"), 2),
    "I8": (np.dtype("i1"), 1),
    "U8": (np.dtype("u1"), 1),
}

WRITABLE = ("F32", "F16", "BF16")          # float weights
WRITABLE_INT = ("I32", "I64")              # integer weights (ids)
_INT = {"I32": np.dtype("<i4"), "I64": np.dtype("<i8")}


def _int_array(a, dtype):
    """`a` as the integer dtype's array, refusing floats and values it
    cannot hold."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise ValueError("dtype %s needs an integer array, got %s (convert it first)" % (dtype, a.dtype))
    info = np.iinfo(_INT[dtype])
    if a.size and (int(a.min()) < info.min or int(a.max()) > info.max):
        raise ValueError("values %d..%d do not fit %s" % (int(a.min()), int(a.max()), dtype))
    return np.ascontiguousarray(a.astype(_INT[dtype]))


def _float_array(a, dtype):
    a = np.asarray(a)
    if a.dtype.kind not in "f":
        raise ValueError("dtype %s needs a float array, got %s (convert it first)" % (dtype, a.dtype))
    return np.ascontiguousarray(a, dtype=np.float32)


def float32_to_bf16_bits(a):
    """fp32 -> bf16 bit patterns (uint16), round to nearest even (NaN kept NaN)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounding = ((bits >> 16) & 1) + 0x7FFF
    out = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        out[nan] = 0x7FC0
    return out


def bf16_bits_to_float32(b):
    b = np.ascontiguousarray(b, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)


def round_to_dtype(a, dtype):
    """The values a reader gets back after storing `a` as `dtype`: float32
    for a float dtype, int32 / int64 for I32 / I64."""
    if dtype in WRITABLE_INT:
        return _int_array(a, dtype).astype(_INT[dtype].newbyteorder("="))
    a = _float_array(a, dtype)
    if dtype == "F32":
        return a.copy()
    if dtype == "F16":
        with np.errstate(over="ignore"):
            return a.astype(np.float16).astype(np.float32)
    if dtype == "BF16":
        return bf16_bits_to_float32(float32_to_bf16_bits(a)).reshape(a.shape)
    raise ValueError("unsupported dtype %r" % dtype)


def _encode(a, dtype):
    if dtype in WRITABLE_INT:
        return _int_array(a, dtype).tobytes()
    if dtype not in WRITABLE:
        raise ValueError("unsupported dtype %r (writable: %s)" % (dtype, WRITABLE + WRITABLE_INT))
    a = _float_array(a, dtype)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        with np.errstate(over="ignore"):
            return a.astype("<f2").tobytes()
    if dtype == "BF16":
        return float32_to_bf16_bits(a).astype("<u2").tobytes()
    raise ValueError("unsupported dtype %r (writable: %s)" % (dtype, WRITABLE + WRITABLE_INT))


def save_file(tensors, path, dtype="F32", metadata=None):
    """Writes `tensors` (name -> array) to `path`.

    `dtype` is one of F32/F16/BF16 (float arrays) or I32/I64 (integer
    arrays), or a dict name -> dtype for per-tensor dtypes.  Tensors are
    stored in the order given.
    """
    header = {}
    blobs = []
    offset = 0
    for name, a in tensors.items():
        dt = dtype[name] if isinstance(dtype, dict) else dtype
        a = np.asarray(a)
        data = _encode(a, dt)
        header[name] = {
            "dtype": dt,
            "shape": [int(s) for s in a.shape],
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((8 - len(hbytes) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for b in blobs:
            f.write(b)


class FormatError(Exception):
    pass


def load_file(path, with_dtypes=False):
    """Reads a safetensors file: name -> np.ndarray (floats converted to
    float32, integers kept), in file order.  With `with_dtypes`, also returns
    name -> stored dtype.  Raises FormatError on any structural problem."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise FormatError("%s: shorter than the 8-byte header length" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise FormatError("%s: header length %d exceeds the file" % (path, n))
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FormatError("%s: bad JSON header: %s" % (path, e))
    if not isinstance(header, dict):
        raise FormatError("%s: header is not a JSON object" % path)
    data = memoryview(raw)[8 + n:]
    header.pop("__metadata__", None)
    spans = []
    out, dtypes = {}, {}
    for name, info in header.items():
        if set(info) != {"dtype", "shape", "data_offsets"}:
            raise FormatError("%s: %s: bad entry keys %s" % (path, name, sorted(info)))
        dt = info["dtype"]
        if dt not in _RAW:
            raise FormatError("%s: %s: unknown dtype %r" % (path, name, dt))
        shape = tuple(int(s) for s in info["shape"])
        if any(s < 0 for s in shape):
            raise FormatError("%s: %s: negative dimension" % (path, name))
        begin, end = (int(x) for x in info["data_offsets"])
        npdt, size = _RAW[dt]
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * size or begin < 0 or end > len(data):
            raise FormatError("%s: %s: data_offsets [%d, %d) do not hold %s %s (data %d bytes)"
                              % (path, name, begin, end, dt, list(shape), len(data)))
        spans.append((begin, end, name))
        a = np.frombuffer(data[begin:end], dtype=npdt).reshape(shape)
        if dt == "BF16":
            a = bf16_bits_to_float32(a).reshape(shape)
        elif dt in ("F16", "F64"):
            a = a.astype(np.float32)
        else:
            a = a.astype(a.dtype.newbyteorder("="))
        out[name] = a
        dtypes[name] = dt
    # The data section must be covered exactly, without gaps or overlaps.
    pos = 0
    for begin, end, name in sorted(spans):
        if begin != pos:
            raise FormatError("%s: %s: data starts at %d, expected %d (gap or overlap)"
                              % (path, name, begin, pos))
        pos = end
    if pos != len(data):
        raise FormatError("%s: %d trailing bytes after the last tensor" % (path, len(data) - pos))
    return (out, dtypes) if with_dtypes else out


def _self_test():
    import os
    import tempfile
    rng = np.random.default_rng(0)
    t = {
        "a.weight": rng.standard_normal((3, 5)).astype(np.float32),
        "b": rng.standard_normal((7,)).astype(np.float32),
        "scalar_like": np.array([1.5], dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }
    special = np.array([0.0, -0.0, 1.0, 65504.0, 1e-8, 3.4e38, np.inf, -np.inf,
                        1.00390625, 1.01171875], dtype=np.float32)  # bf16 ties
    t["special"] = special
    with tempfile.TemporaryDirectory() as d:
        for dt in WRITABLE:
            p = os.path.join(d, "t_%s.safetensors" % dt)
            save_file(t, p, dtype=dt, metadata={"format": "pt"})
            back, dts = load_file(p, with_dtypes=True)
            assert list(back) == list(t), (list(back), list(t))
            for k, v in t.items():
                assert dts[k] == dt
                assert back[k].shape == v.shape and back[k].dtype == np.float32
                exp = round_to_dtype(v, dt)
                assert np.array_equal(back[k], exp, equal_nan=True), (dt, k, back[k], exp)
            with open(p, "rb") as f:
                raw = f.read()
            (n,) = struct.unpack("<Q", raw[:8])
            assert (8 + n) % 8 == 0
        # bf16 round-to-nearest-even on exact ties: 1 + 2^-8 -> 1.0, 1 + 3*2^-8 -> 1 + 2^-6.
        bits = float32_to_bf16_bits(np.array([1.00390625, 1.01171875], np.float32))
        assert list(bits) == [0x3F80, 0x3F82], [hex(b) for b in bits]
        # Agree with torch's own conversions where torch is available.
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            x = rng.standard_normal(10000).astype(np.float32) * 10.0 ** rng.integers(-6, 6, 10000)
            x = x.astype(np.float32)
            for dt, tdt in (("BF16", torch.bfloat16), ("F16", torch.float16)):
                exp = torch.from_numpy(x).to(tdt).to(torch.float32).numpy()
                assert np.array_equal(round_to_dtype(x, dt), exp), dt
        # Integer tensors: I32 / I64 round trips (extremes, negatives, an
        # I64 id beyond int32), mixed with floats in one file; floats for
        # an integer dtype, integers for a float one and values that do
        # not fit are refused.
        ints = {"ids32": np.array([[0, -1, 2 ** 31 - 1], [-2 ** 31, 7, 3]], dtype=np.int64),
                "w": rng.standard_normal((2, 3)).astype(np.float32),
                "ids64": np.array([2 ** 32 + 1, -2 ** 40, 2 ** 63 - 1, -2 ** 63, 5], dtype=np.int64),
                "empty_ids": np.zeros((4, 0), dtype=np.int32)}
        dts = {"ids32": "I32", "w": "BF16", "ids64": "I64", "empty_ids": "I32"}
        p = os.path.join(d, "ints.safetensors")
        save_file(ints, p, dtype=dts)
        back, got = load_file(p, with_dtypes=True)
        assert list(back) == list(ints) and got == dts, (list(back), got)
        for k, v in ints.items():
            want = round_to_dtype(v, dts[k])
            assert back[k].dtype == want.dtype and back[k].shape == v.shape, (k, back[k].dtype, want.dtype)
            assert np.array_equal(back[k], want), (k, back[k], want)
        assert back["ids32"].dtype == np.int32 and back["ids64"].dtype == np.int64
        assert np.array_equal(back["ids64"], ints["ids64"])
        for bad, dt in ((np.zeros(3, np.float32), "I32"), (np.arange(3), "F32"), (np.arange(3), "BF16"),
                        (np.array([2 ** 31]), "I32"), (np.array([-2 ** 31 - 1]), "I32"),
                        (np.arange(3), "I16")):
            try:
                save_file({"x": bad}, p, dtype=dt)
                raise AssertionError("%s %s accepted as %s" % (bad.dtype, bad.tolist(), dt))
            except ValueError:
                pass
        # Mixed per-tensor dtypes and a truncated file.
        p = os.path.join(d, "mixed.safetensors")
        save_file(t, p, dtype={k: WRITABLE[i % 3] for i, k in enumerate(t)})
        _, dts = load_file(p, with_dtypes=True)
        assert [dts[k] for k in t] == [WRITABLE[i % 3] for i in range(len(t))]
        with open(p, "rb") as f:
            raw = f.read()
        with open(p, "wb") as f:
            f.write(raw[:-2])
        try:
            load_file(p)
            raise AssertionError("truncated file accepted")
        except FormatError:
            pass
    print("safetensors self-test passed")


if __name__ == "__main__":
    _self_test()
