#!/usr/bin/python3
"""Weight precision (contract section 10), the oracle's side: which of a
model's weights are GEMM weights, and the values `tfm-compile
--weight-dtype=FMT` computes with once it has converted them at load.

  gemm_weights(cfg, names)      the GEMM weights among `names` (a weights
                                dict or listing), from the contract's rules
  convert(array, fmt, name)     one tensor's values after the conversion, as
                                float32 (f32: unchanged)
  convert_weights(weights, cfg, fmt)
                                a weights dict with its GEMM weights converted

The formats, written from the contract:

* bf16, f16: each value rounded to nearest, ties to even: torch's
  `.to(torch.bfloat16).float()` and `.half().float()`.  f16: a finite value
  that rounds beyond the largest finite f16 (65504, so |w| >= 65520) is an
  error naming the tensor (F16Overflow; the executable's load error).
* int8: each row of [out, in] in blocks of 32 consecutive columns (the last
  block may be shorter); s = max|w| / 127 over the block, q = w / s rounded
  to nearest, ties to even (0 where s = 0), both divisions in f32; the value
  used is q * s in f32.  Vectorised in numpy float32 (int8_quantize).  The
  contract stores q in 8 bits but does not say what happens when
  |w / s| rounds above 127, which only a block of subnormal values can do
  (s = max|w| / 127 then loses precision); convert() refuses such a tensor
  (Int8Range) rather than guess, and no case's weights come near it.

GEMM weights (contract section 10): every rank-2 weight read as a matrix
product's second operand: each attention block's `in_proj_weight` and
`out_proj.weight` (`self_attn.`, `multihead_attn.`), the FFN's
`linear1.weight` and `linear2.weight` (a mixture of experts' per expert:
`moe.experts.{e}.linear1.weight`, ...), a mamba mixer's
`mixer.in_proj.weight`, `mixer.x_proj.weight`, `mixer.dt_proj.weight` and
`mixer.out_proj.weight`, `lm_head.weight`, and with a tied
LM head the table the head reads (reference.py's _head / _lm_head: the
decoder's token table, `tgt_embed.weight` of an encoder_decoder, or
`embed.weight` when the file has one table for both; its token lookups
then read the converted rows, which using the converted table everywhere
gives).  Everything else stays f32: biases, norms, untied embedding
tables (an encoder_decoder's `src_embed.weight`), positional and token-type
tables, score parameters, the MoE gate, linformer's proj_e / proj_f,
performer's features, block_pattern, a mamba mixer's conv1d weight and
bias, dt_proj.bias, A_log and D.

`weight_formats.py --self-test` checks the conversions against second
forms: int8 against a per-block Python loop (float64 divisions and
products rounded once to float32, which is the f32 operation exactly, and
Python's own round-half-even), bf16 against round-to-nearest-even on the
float32 bits, f16 against numpy's float16; on ties, negative values,
subnormals, zeros, a last partial block, an all-zero block and blocks
whose largest magnitude is tied; and the GEMM-weight listing on every case
of cases.py against the contract's rules spelt out per architecture.
"""

import re
import sys

import numpy as np

FORMATS = ("f32", "bf16", "f16", "int8")
F16_MAX = 65504.0
INT8_BLOCK = 32
INT8_MAX = 127

# A GEMM weight's name (the last part: the layer and stack prefixes vary).
_GEMM_SUFFIX_RE = re.compile(
    r"(^|\.)(self_attn|multihead_attn)\.(in_proj_weight|out_proj\.weight)$"
    r"|(^|\.)(moe\.experts\.\d+\.)?linear[12]\.weight$"
    r"|(^|\.)mixer\.(in_proj|x_proj|dt_proj|out_proj)\.weight$"
    r"|^lm_head\.weight$")


class F16Overflow(ValueError):
    """A value rounds beyond the largest finite f16 (contract section 10:
    a load error naming the tensor)."""

    def __init__(self, name, index, value):
        self.name, self.index, self.value = name, index, value
        super().__init__("tensor %s: value %r at %s rounds beyond the largest finite f16 (%g)"
                         % (name, value, list(index), F16_MAX))


class Int8Range(ValueError):
    """w / s rounds above 127 in magnitude (subnormal blocks only): the
    contract does not say what the 8-bit q is then."""


def _as_config(cfg):
    if isinstance(cfg, dict):
        import reference
        return reference.Config(cfg)
    return cfg


def tied_table(cfg, names):
    """The token table a tied LM head reads (None: no tied head)."""
    cfg = _as_config(cfg)
    if not (cfg.lm_head and not cfg.untied_head):
        return None
    if cfg.is_encdec and "embed.weight" not in names:
        return "tgt_embed.weight"
    return "embed.weight"


def gemm_weights(cfg, names):
    """The GEMM weights among `names` (a weights dict, name -> array, or a
    listing, name -> shape), as a set of names.  cfg: a reference.Config
    or a model description dict.  Each must be rank 2 where shapes are
    given."""
    cfg = _as_config(cfg)
    out = {n for n in names if _GEMM_SUFFIX_RE.search(n)}
    tied = tied_table(cfg, names)
    if tied is not None:
        if tied not in names:
            raise ValueError("a tied LM head reads %s, which is not among the weights" % tied)
        out.add(tied)
    if isinstance(names, dict):
        for n in out:
            v = names[n]
            shape = tuple(v.shape) if hasattr(v, "shape") else tuple(v)
            if len(shape) != 2:
                raise ValueError("GEMM weight %s is not rank 2: %s" % (n, list(shape)))
    return out


# ---------------------------------------------------------------------------
# The conversions.
# ---------------------------------------------------------------------------

def _f32(a):
    a = np.asarray(a)
    if a.dtype != np.float32:
        raise TypeError("expected float32 values, got %s" % a.dtype)
    return np.ascontiguousarray(a)


def to_bf16(a):
    import torch
    return torch.from_numpy(_f32(a).copy()).to(torch.bfloat16).float().numpy()


def to_f16(a, name="?"):
    import torch
    a = _f32(a)
    r = torch.from_numpy(a.copy()).half().float().numpy()
    bad = np.isfinite(a) & ~np.isfinite(r)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise F16Overflow(name, idx, float(a[idx]))
    return r


def int8_quantize(w):
    """(values, q, s) of a rank-2 float32 w: s [rows, blocks] float32, q and
    the values float32 of w's shape.  Vectorised over the blocks."""
    w = _f32(w)
    if w.ndim != 2:
        raise ValueError("int8 needs a rank-2 weight, got %s" % list(w.shape))
    rows, cols = w.shape
    nb = -(-cols // INT8_BLOCK)
    padded = np.zeros((rows, nb * INT8_BLOCK), dtype=np.float32)   # zeros change no max
    padded[:, :cols] = w
    blocks = padded.reshape(rows, nb, INT8_BLOCK)
    s = (np.max(np.abs(blocks), axis=2) / np.float32(INT8_MAX)).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.rint(blocks / s[:, :, None]).astype(np.float32)
    q = np.where(s[:, :, None] > 0, q, np.float32(0)) + np.float32(0)   # +0.0, never -0.0
    vals = (q * s[:, :, None]).astype(np.float32)
    return (vals.reshape(rows, -1)[:, :cols].copy(), q.reshape(rows, -1)[:, :cols].copy(), s)


def int8_quantize_loop(w):
    """The second form: per row, per block, per value, in Python floats.
    A float32 division or product is the float64 one rounded once to
    float32 (exact: 53 >= 2 * 24 + 2 bits); round() is half-to-even."""
    w = _f32(w)
    rows, cols = w.shape
    vals = np.zeros(w.shape, dtype=np.float32)
    qs = np.zeros(w.shape, dtype=np.float32)
    for r in range(rows):
        for b0 in range(0, cols, INT8_BLOCK):
            block = [float(x) for x in w[r, b0:b0 + INT8_BLOCK]]
            m = 0.0
            for x in block:
                m = max(m, abs(x))
            s = float(np.float32(m / 127.0))
            for j, x in enumerate(block):
                if s == 0.0:
                    q = 0
                else:
                    q = round(float(np.float32(x / s)))
                qs[r, b0 + j] = q
                vals[r, b0 + j] = np.float32(float(q) * s)
    return vals, qs


def convert(a, fmt, name="?"):
    """The float32 values a GEMM weight holds after --weight-dtype=fmt."""
    if fmt not in FORMATS:
        raise ValueError("unknown weight format %r (%s)" % (fmt, ", ".join(FORMATS)))
    a = _f32(a)
    if fmt == "f32":
        return a.copy()
    if fmt == "bf16":
        return to_bf16(a)
    if fmt == "f16":
        return to_f16(a, name)
    vals, q, _ = int8_quantize(a)
    if q.size and float(np.max(np.abs(q))) > INT8_MAX:
        raise Int8Range("tensor %s: a block's w / s rounds to %d, beyond int8 (subnormal values)"
                        % (name, int(np.max(np.abs(q)))))
    return vals


def convert_weights(weights, cfg, fmt):
    """A copy of `weights` (name -> float32 numpy array or torch tensor) with
    every GEMM weight converted (the others as they are).  Raises
    F16Overflow naming the first tensor (in the dict's order) that
    overflows f16."""
    out = dict(weights)
    if fmt == "f32":
        return out
    gemm = gemm_weights(cfg, weights)
    for name in weights:
        if name in gemm:
            v = weights[name]
            if hasattr(v, "numpy"):
                import torch
                out[name] = torch.from_numpy(convert(v.detach().cpu().numpy(), fmt, name))
            else:
                out[name] = convert(v, fmt, name)
    return out


# ---------------------------------------------------------------------------
# Self-test.
# ---------------------------------------------------------------------------

def _bits(u):
    return np.array(u, dtype=np.uint32).view(np.float32)


def bf16_by_bits(a):
    """Round to nearest even on the float32 bits: add 0x7FFF plus the kept
    part's lowest bit, clear the low 16 bits (finite values)."""
    u = _f32(a).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return (u & 0xFFFFFFFF).astype(np.uint32).view(np.float32).reshape(np.shape(a))


def _same_bits(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def _special_floats():
    """Ties, near-ties, negatives, subnormals, zeros, extremes (float32)."""
    bits = [0x00000000, 0x80000000,                       # +0, -0
            0x00000001, 0x80000001, 0x00008000, 0x00018000, 0x00017FFF, 0x00008001,   # subnormals
            0x007FFFFF, 0x00800000,                       # largest subnormal, smallest normal
            0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001,   # 1 + ties / near ties at bf16
            0xBF808000, 0xBF818000, 0xBF807FFF, 0xBF808001,   # their negatives
            0x3F800000, 0x3F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x7F7FFFFF]
    return _bits(bits)


def _self_test_bf16(rng, check):
    import torch
    a = np.concatenate([_special_floats(),
                        rng.standard_normal(4000).astype(np.float32),
                        (rng.standard_normal(1000) * 1e-39).astype(np.float32),   # subnormals
                        # every tie and near tie of random mantissas, both signs
                        (rng.integers(0, 2 ** 31, 2000, dtype=np.uint64).astype(np.uint32) & np.uint32(0xFFFF0000)
                         | np.uint32(0x8000)).view(np.float32)])
    a = a[np.isfinite(a)]
    got = to_bf16(a)
    want = bf16_by_bits(a)
    finite = np.isfinite(want)
    check("bf16: torch's rounding == round-to-nearest-even on the bits (%d values)" % a.size,
          _same_bits(got[finite], want[finite]) and np.array_equal(~np.isfinite(got), ~finite))
    check("bf16: ties go to even (1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6, and negated)",
          list(to_bf16(np.float32([1 + 2 ** -8, 1 + 3 * 2 ** -8, -1 - 2 ** -8, -1 - 3 * 2 ** -8])))
          == [1.0, 1 + 2 ** -6, -1.0, -1 - 2 ** -6])
    check("bf16: -0.0 keeps its sign", _same_bits(to_bf16(np.float32([-0.0])), np.float32([-0.0])))
    check("bf16: torch's tensor dtype is bfloat16", torch.zeros(1).to(torch.bfloat16).dtype == torch.bfloat16)
    check("bf16 of a bf16 value is itself", _same_bits(to_bf16(want[finite]), want[finite]))


def _self_test_f16(rng, check):
    a = np.concatenate([_special_floats()[:-3],
                        rng.standard_normal(4000).astype(np.float32),
                        (rng.standard_normal(1000) * 1e-6).astype(np.float32),   # f16 subnormals
                        np.float32([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 2 ** -25, 3 * 2 ** -25,
                                    -(2 ** -25), 2 ** -26, 65504, -65504, 65519, -65519, 65519.996])])
    got = to_f16(a, "t")
    want = a.astype(np.float16).astype(np.float32)
    check("f16: torch's rounding == numpy's float16 (%d values)" % a.size, _same_bits(got, want))
    check("f16: ties to even (1 + 2^-11 -> 1, 1 + 3 * 2^-11 -> 1 + 2^-9, 2^-25 -> 0, 3 * 2^-25 -> 2^-23)",
          list(to_f16(np.float32([1 + 2 ** -11, 1 + 3 * 2 ** -11, 2 ** -25, 3 * 2 ** -25]), "t"))
          == [1.0, 1 + 2 ** -9, 0.0, 2 ** -23])
    check("f16: 65519 rounds to 65504 (no overflow)",
          list(to_f16(np.float32([65519, -65519, 65519.996]), "t")) == [65504.0, -65504.0, 65504.0])
    for v in (65520.0, -65520.0, 1e6, 3e38):
        try:
            to_f16(np.float32([[0.5, v]]), "layers.0.linear1.weight")
            ok = False
        except F16Overflow as e:
            ok = e.name == "layers.0.linear1.weight" and e.index == (0, 1) and "layers.0.linear1.weight" in str(e)
        check("f16: %g overflows, naming the tensor and the element" % v, ok)


def _int8_blocks():
    """Rows of interesting blocks (each row's columns, float32)."""
    rows = []
    # Ties: s = 1 exactly (max 127), w / s = k + 0.5.
    t = np.float32([127, 0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, -3.5, 126.5, -126.5, 4.5] + [0] * 20)
    rows.append(t)
    # The largest magnitude tied between +m and -m (q = 127 and -127), and
    # the same block with m at many columns.
    rows.append(np.float32([0.3, -0.7, 0.7, 0.1] * 8))
    rows.append(np.float32([-2.0] * 16 + [2.0] * 16))
    # Negative values only.
    rows.append(-np.abs(np.float32(np.linspace(0.01, 3.0, 32))))
    # An all-zero block between two others, and -0.0.
    return rows


def _self_test_int8(rng, check):
    # Blocks: ties, tied maxima, negatives, a partial last block (70 = 32 +
    # 32 + 6 columns), an all-zero block, -0.0, subnormals (s subnormal, and
    # s underflowing to 0 with nonzero w).
    specials = _int8_blocks()
    w = np.zeros((len(specials) + 8, 70), dtype=np.float32)
    for i, r in enumerate(specials):
        w[i, :32] = r
        w[i, 32:64] = r[::-1]
        w[i, 64:] = r[:6]
    k = len(specials)
    w[k] = rng.standard_normal(70).astype(np.float32)
    w[k, 32:64] = 0.0                                   # an all-zero middle block
    w[k + 1] = rng.standard_normal(70).astype(np.float32)
    w[k + 1, 64:] = -0.0                                # an all -0.0 last block
    w[k + 1, 3] = -0.0
    w[k + 2] = rng.standard_normal(70).astype(np.float32) * np.float32(1e3)
    w[k + 3] = (rng.standard_normal(70) * 0.02).astype(np.float32)
    w[k + 4, :] = _bits([1, 0x80000001, 2, 0, 3] * 14)  # s underflows to 0: every value 0
    w[k + 5, :] = _bits(list(range(0x7FFF00, 0x7FFF00 + 70)))  # largest subnormals: s subnormal
    w[k + 6, :] = (rng.standard_normal(70) * 1e-40).astype(np.float32)   # subnormal w, subnormal s
    w[k + 6, 32:64] = 0.0
    w[k + 6, 40:42] = _bits([190, 0x80000001])          # s = 190 / 127 of the least subnormal, rounded to 1: q 190
    w[k + 7, :] = rng.standard_normal(70).astype(np.float32)
    w[k + 7, 64:] = np.float32([5, -5, 5, 1, 2.5, -2.5])   # partial last block: tied max, s = 5/127
    vals, q, s = int8_quantize(w)
    lvals, lq = int8_quantize_loop(w)
    check("int8: vectorised == per-block loop, bit for bit (values and q), %d x %d" % w.shape,
          _same_bits(vals, lvals) and np.array_equal(q, lq))
    check("int8: 3 blocks per row of 70 columns (32, 32, 6)", s.shape == (w.shape[0], 3))
    check("int8: ties to even (q of 0.5, 1.5, 2.5, 3.5 with s = 1: 0, 2, 2, 4; negated likewise; 126.5 -> 126)",
          list(q[0, :12]) == [127, 0, 2, 2, 4, 0, -2, -2, -4, 126, -126, 4] and s[0, 0] == 1.0)
    check("int8: a tied largest magnitude gives q = 127 and -127",
          set(np.unique(q[1, :32])) >= {127.0, -127.0} and set(np.unique(q[2])) == {127.0, -127.0})
    check("int8: an all-zero block and -0.0 give +0.0 (s 0)", s[k, 1] == 0 and
          _same_bits(vals[k, 32:64], np.zeros(32, np.float32)) and
          _same_bits(vals[k + 1, 64:], np.zeros(6, np.float32)) and vals[k + 1, 3] == 0)
    check("int8: the partial last block has its own scale (5 / 127)",
          s[k + 7, 2] == np.float32(5) / np.float32(127) and list(q[k + 7, 64:]) == [127, -127, 127, 25, 64, -64])
    check("int8: subnormal w with s underflowing to 0 gives 0", np.all(s[k + 4] == 0) and
          _same_bits(vals[k + 4], np.zeros(70, np.float32)))
    check("int8: subnormal blocks (s subnormal) agree too", _same_bits(vals[k + 5:k + 7], lvals[k + 5:k + 7]))
    normal = np.ones(w.shape[0], bool)
    normal[k + 4:k + 7] = False
    check("int8: |q| <= 127 and |w - q s| <= s / 2 on normal blocks",
          float(np.max(np.abs(q[normal]))) <= 127 and
          bool(np.all(np.abs(w[normal].astype(np.float64) - vals[normal]) <=
                      np.repeat(s[normal].astype(np.float64), 32, axis=1)[:, :70] * 0.5 * (1 + 1e-6))))
    try:
        convert(w[k + 6:k + 7], "int8", "sub")
        raised = "no error"
    except Int8Range:
        raised = "Int8Range"
    check("int8: a subnormal block whose w / s rounds to 190 (q %d): convert refuses it (%s)"
          % (q[k + 6, 40], raised), q[k + 6, 40] == 190 and raised == "Int8Range")
    # Random shapes: widths 1, 31, 32, 33, 64, 100 and larger values.
    ok = True
    for cols in (1, 31, 32, 33, 64, 100):
        r = (rng.standard_normal((5, cols)) * rng.choice([1e-3, 1, 50], size=(5, 1))).astype(np.float32)
        v1, q1, _ = int8_quantize(r)
        v2, q2 = int8_quantize_loop(r)
        ok = ok and _same_bits(v1, v2) and np.array_equal(q1, q2)
    check("int8: vectorised == loop on random [5, cols], cols 1, 31, 32, 33, 64, 100", ok)
    check("int8: convert == int8_quantize's values on normal weights",
          _same_bits(convert(w[normal], "int8", "t"), vals[normal]))


def _gemm_by_architecture(cfg, listing):
    """The contract's GEMM-weight rules spelt out per architecture, from
    the model's structure (not from name patterns): the second form of
    gemm_weights() in the self-test."""
    want = set()

    def attn(p):
        want.update({p + "in_proj_weight", p + "out_proj.weight"})

    def ffn(p, lc):
        if lc.moe:
            for e in range(lc.moe_experts):
                want.update({p + "moe.experts.%d.linear1.weight" % e, p + "moe.experts.%d.linear2.weight" % e})
        else:
            want.update({p + "linear1.weight", p + "linear2.weight"})

    if cfg.is_encdec:
        for i in range(cfg.num_encoder_layers):
            attn("encoder.layers.%d.self_attn." % i)
            ffn("encoder.layers.%d." % i, cfg)
        for i in range(cfg.num_decoder_layers):
            attn("decoder.layers.%d.self_attn." % i)
            attn("decoder.layers.%d.multihead_attn." % i)
            ffn("decoder.layers.%d." % i, cfg)
    else:
        for i in range(cfg.num_layers):
            if cfg.layer_config(i).layer_kind == "mamba":
                want.update({"layers.%d.mixer.%s.weight" % (i, p)
                             for p in ("in_proj", "x_proj", "dt_proj", "out_proj")})
                continue
            attn("layers.%d.self_attn." % i)
            ffn("layers.%d." % i, cfg.layer_config(i))
    if cfg.lm_head:
        if cfg.untied_head:
            want.add("lm_head.weight")
        elif cfg.is_encdec and "src_embed.weight" in listing:
            want.add("tgt_embed.weight")
        else:
            want.add("embed.weight")
    return want


def self_test():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(20240610)
    failures = []

    def check(what, ok):
        print("%s %s" % ("ok  " if ok else "FAIL", what))
        if not ok:
            failures.append(what)

    _self_test_bf16(rng, check)
    _self_test_f16(rng, check)
    _self_test_int8(rng, check)

    # The GEMM-weight listing on every case, against the rules per
    # architecture; and what stays f32 on purpose.
    import cases
    import reference
    bad, seen = [], set()
    for c in cases.CASES:
        cfg = reference.Config(c.model)
        listing = reference.expected_weights(cfg, c.shared_embeddings)
        try:
            got = gemm_weights(cfg, listing)
        except ValueError as e:
            bad.append("%s: %s" % (c.name, e))
            continue
        want = _gemm_by_architecture(cfg, listing)
        if got != want:
            bad.append("%s: extra %s, missing %s" % (c.name, sorted(got - want)[:3], sorted(want - got)[:3]))
        for n in set(listing) - got:
            seen.add(re.sub(r"(^|\.)\d+(\.|$)", r"\1N\2", n))
    check("gemm_weights == the rules per architecture on all %d cases%s"
          % (len(cases.CASES), ": " + "; ".join(bad[:3]) if bad else ""), not bad)
    for kept in ("layers.N.moe.gate.weight", "layers.N.self_attn.proj_e", "layers.N.self_attn.features",
                 "layers.N.self_attn.block_pattern", "layers.N.self_attn.score.v", "pos_embed.weight",
                 "src_embed.weight", "layers.N.linear1.bias", "layers.N.self_attn.in_proj_bias",
                 "layers.N.norm1.weight", "type_embed.weight", "layers.N.mixer.conv1d.weight",
                 "layers.N.mixer.conv1d.bias", "layers.N.mixer.dt_proj.bias", "layers.N.mixer.A_log",
                 "layers.N.mixer.D", "layers.N.norm.weight"):
        check("stays f32 in some case: %s" % kept, kept in seen)
    tied = dict(name="t", architecture="decoder", d_model=32, num_heads=4, d_ff=64, max_seq_len=8,
                vocab_size=20, num_layers=1)
    check("a tied decoder head converts embed.weight",
          "embed.weight" in gemm_weights(tied, reference.expected_weights(reference.Config(tied))))
    untied = dict(tied, tie_embeddings=False)
    g = gemm_weights(untied, reference.expected_weights(reference.Config(untied)))
    check("an untied head converts lm_head.weight, not embed.weight",
          "lm_head.weight" in g and "embed.weight" not in g)
    nohead = dict(tied, lm_head=False)
    check("no LM head: embed.weight stays f32",
          "embed.weight" not in gemm_weights(nohead, reference.expected_weights(reference.Config(nohead))))
    ed = dict(tied, architecture="encoder_decoder", num_layers=1)
    g = gemm_weights(ed, reference.expected_weights(reference.Config(ed)))
    check("encoder_decoder, tied: tgt_embed.weight converted, src_embed.weight not",
          "tgt_embed.weight" in g and "src_embed.weight" not in g
          and "decoder.layers.0.multihead_attn.in_proj_weight" in g)
    g = gemm_weights(ed, reference.expected_weights(reference.Config(ed), True))
    check("encoder_decoder, one shared table: embed.weight converted", "embed.weight" in g)

    # convert_weights: only the GEMM weights change.
    cfg = reference.Config(untied)
    w = {k: v.numpy() for k, v in reference.make_weights(cfg, 1).items()}
    cw = convert_weights(w, cfg, "int8")
    g = gemm_weights(cfg, w)
    check("convert_weights(int8) changes every GEMM weight and nothing else",
          all((not np.array_equal(cw[k], w[k])) == (k in g) for k in w))
    cw = convert_weights({k: torch.from_numpy(v) for k, v in w.items()}, cfg, "bf16")
    check("convert_weights takes torch tensors too",
          all(isinstance(v, torch.Tensor) for v in cw.values()) and
          _same_bits(cw["lm_head.weight"].numpy(), bf16_by_bits(w["lm_head.weight"])))
    w2 = dict(w)
    w2["lm_head.weight"] = w["lm_head.weight"].copy()
    w2["lm_head.weight"][3, 5] = 65520.0
    w2["embed.weight"] = w["embed.weight"].copy()
    w2["embed.weight"][2, 2] = 1e6           # not a GEMM weight: never converted
    try:
        convert_weights(w2, cfg, "f16")
        ok = False
    except F16Overflow as e:
        ok = e.name == "lm_head.weight"
    check("convert_weights(f16) names the tensor that overflows, not the untied table", ok)

    print("%d checks failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    print("usage: weight_formats.py --self-test", file=sys.stderr)
    sys.exit(2)
