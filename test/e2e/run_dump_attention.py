#!/usr/bin/python3
"""`./model --dump-attention DIR` (contract section 9) against PyTorch.

For each case of CASES below (tiny models, sequences of at most 12):
  1. write NAME.json; make the weights as run_e2e.py does (reference.py's
     make_weights with the seed crc32(NAME), PyTorch-like init, norms and
     zero biases perturbed), save them as F32 safetensors and read them
     back; make the inputs (ids or float embeddings from numpy's
     default_rng(seed), right-padded masks from the case's lengths) and
     check they read back;
  2. the expected attention weights, two ways, which must agree (max abs
     difference below 1e-5 on every row that has a key to attend):
       (A) the reference model's own weights, captured per attention block
           while it runs: for a model that PyTorch's modules express
           (reference.py (a): scaled_dot, no rope, no section 11 key),
           every nn.MultiheadAttention called with need_weights=True,
           average_attn_weights=False (with grad enabled, so that no fused
           fast path skips the module); otherwise reference.py's formula
           model (b) (mask_form "additive"), whose softmax over its own
           scores (its own q and k, rope and grouped-query heads applied)
           is recorded;
       (B) from each block's input as (A) received it and the weights
           file: Q and K projected again, rope (as a complex rotation),
           K/V head h // group, the score kind, plus a 0 / -inf mask of the
           causal rule and the padded keys, and a dense softmax, in
           float64.
     (A) itself must have its masked entries exactly 0 and its rows sum to
     1 (what is asked of tfm), and the hooked model's output must agree with
     the unhooked formula model (b) (1e-5, relative above magnitude 1);
  3. tfm-compile NAME.json -o CASE_DIR/model [--max-batch N] [--backend B];
  4. CASE_DIR/model --weights ... --input NAME=FILE ... --output OUT
     --threads T --dump-attention DUMP_T, T = 1 and 2, DUMP_T an empty
     directory; then:
       * the files in DUMP_T are exactly the expected set (layer{L}.self.npy,
         encoder.layer{L}.self.npy, decoder.layer{L}.self.npy,
         decoder.layer{L}.cross.npy; none for a model whose self-attention
         is not full);
       * each is float32 [batch, heads, q, k] (batch 1 for an unbatched
         input), finite, within 1e-4 * (1 + max|ref|) of (A) (contract
         section 6's tolerance), each row sums to 1 within 1e-5, and every
         masked entry (causal, padding) is exactly 0.0; rows with no key to
         attend are left out of these checks (none with right padding);
       * the output is within the same tolerance of the reference's;
       * the dumps (and outputs) of --threads 1 and 2 are bit-identical;
     a `missing_dir` case instead expects exit status 1 and DIR named on
     stderr for a DIR that does not exist (and for one that is a file),
     and DIR not created.

With --backend llvm every check is the same: the LLVM backend computes the
weights apart from the attention (its softmax over every key, masked) while
the executable collects them.

One line per case (PASS/FAIL), the last line `N passed, M failed`; exit 1
if any case failed, 2 for a bad case table or no case matched.

--self-test checks the reference side only, without tfm-compile: (A)
against (B) on every case, planted mistakes in (B) (causal rule or padding
dropped, no 1/sqrt(dk), K/V head h % kv, the other rope style, no rope)
that must differ from (A), and the dump checks themselves against planted
faults (noise above the tolerance, a masked entry of 1e-30, rows scaled by
1 + 1e-4, float64, 3-D, heads swapped, a missing and an extra file, one ulp
between the thread counts), each of which must be caught for its reason.

Run with Debian's /usr/bin/python3 (python3-torch 1.13).
"""

import argparse
import inspect
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import case_pool  # noqa: E402
import safetensors as st  # noqa: E402  (our own, test/e2e/safetensors.py)

FORMS_BOUND = 1e-5      # (A) vs (B), absolute (weights are at most 1)
AB_BOUND = 1e-5         # hooked model output vs (b), normalised by max(1, max|ref|)
ROW_SUM_BOUND = 1e-5    # |sum of a row - 1|
MISTAKE_BOUND = 1e-3    # a planted mistake in (B) must move some weight by more
MAX_SEQ = 12


class CaseFailure(Exception):
    pass


def tolerance(ref):
    """Contract section 6: 1e-4 * (1 + max|ref|)."""
    return 1e-4 * (1.0 + float(np.max(np.abs(ref)))) if ref.size else 1e-4


def case_seed(name):
    """crc32 of the name, as run_e2e.py's cases."""
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


# ---------------------------------------------------------------------------
# The cases.
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Inp:
    seq: int
    batch: Optional[int] = 1      # None: no batch dimension
    dtype: str = "int64"          # int32 / int64 ids, float32 embeddings [.., seq, d_model]


@dataclass(frozen=True)
class RightPad:
    """A right-padded mask (contract section 8): row r has lengths[r] real
    tokens first, then padding (one length for an unbatched input)."""
    lengths: Tuple[int, ...]
    dtype: str = "int64"          # int32, int64, bool, float32


@dataclass
class DumpCase:
    name: str
    model: Dict
    inputs: Dict[str, Inp]
    masks: Dict[str, RightPad] = field(default_factory=dict)
    expect: str = "weights"       # "weights", "none" (no file at all) or "missing_dir"
    note: str = ""

    def max_batch(self):
        return max([i.batch or 1 for i in self.inputs.values()] + [1])

    def compile_args(self):
        mb = self.max_batch()
        return ["--max-batch", str(mb)] if mb != 1 else []


def _model(name, arch, **kw):
    m = dict(name=name, architecture=arch, d_model=24, num_heads=4, d_ff=40, max_seq_len=16)
    if arch == "encoder_decoder":
        if not ({"num_layers", "num_encoder_layers", "num_decoder_layers"} & set(kw)):
            m["num_layers"] = 2
    else:
        m["num_layers"] = 2
    m.update(kw)
    return m


def _case(name, arch, inputs, masks=None, expect="weights", note="", **kw):
    return DumpCase(name, _model(name, arch, **kw), inputs, dict(masks or {}), expect, note)


CASES = [
    _case("enc_post_mask_b3", "encoder", {"input": Inp(8, 3)},
          masks={"mask": RightPad((5, 8, 3))}, vocab_size=50, norm="post",
          note="post-norm encoder, batch 3, right padding (int64 mask): nn.MultiheadAttention"),
    _case("enc_pre_dot_float_unbatched", "encoder", {"input": Inp(5, None, "float32")},
          d_model=21, num_heads=3, norm="pre", attention_score="dot",
          note="pre-norm, float input without batch (dump [1, H, q, k]), dot scores: formula model"),
    _case("dec_causal_b2", "decoder", {"input": Inp(9, 2, "int32")},
          d_model=21, num_heads=3, vocab_size=40, activation="gelu", norm="pre",
          note="causal decoder, batch 2, int32 ids, 3 heads: nn.MultiheadAttention"),
    _case("encdec_unbatched_src_mask", "encoder_decoder",
          {"src": Inp(7, None), "tgt": Inp(5, None)}, masks={"src_mask": RightPad((5,), "bool")},
          vocab_size=30, num_encoder_layers=2, num_decoder_layers=2,
          note="encoder_decoder 2+2 layers, unbatched, src_mask [seq]: self and cross of both stacks"),
    _case("encdec_masks_b2", "encoder_decoder", {"src": Inp(6, 2), "tgt": Inp(7, 2)},
          masks={"src_mask": RightPad((4, 6), "int32"), "tgt_mask": RightPad((7, 3), "float32")},
          vocab_size=30, num_encoder_layers=1, num_decoder_layers=2, norm="pre", positional="learned",
          note="encoder_decoder 1+2 layers, batch 2, src_mask and tgt_mask (cross keys padded too)"),
    _case("dec_rope_gqa_mask_b2", "decoder", {"input": Inp(7, 2)},
          masks={"mask": RightPad((7, 4), "bool")}, vocab_size=40, positional="rope",
          num_kv_heads=2, norm="pre",
          note="rope (half), grouped-query 4 heads / 2 kv heads, causal + padding: formula model"),
    _case("enc_bilinear_rope_interleaved_b2", "encoder", {"input": Inp(6, 2)},
          vocab_size=40, positional="rope", rope_style="interleaved", attention_score="bilinear",
          note="bilinear scores, interleaved rope: formula model"),
    _case("encdec_additive_b2", "encoder_decoder", {"src": Inp(5, 2), "tgt": Inp(4, 2)},
          masks={"src_mask": RightPad((3, 5))}, vocab_size=30, num_layers=1,
          attention_score="additive", additive_dim=5,
          note="additive scores (self and cross), src_mask: formula model"),
    _case("win_enc_no_files", "encoder", {"input": Inp(7, 1)}, vocab_size=40,
          attention={"kind": "sliding_window", "window": 1, "global_tokens": 1}, expect="none",
          note="sliding_window self-attention: the dump directory stays empty"),
    _case("bs_dec_no_files", "decoder", {"input": Inp(9, 2)}, vocab_size=40,
          attention={"kind": "block_sparse", "block": 2, "window_blocks": 0, "global_blocks": 1,
                     "random_blocks": 1}, expect="none",
          note="block_sparse self-attention (random blocks: an I32 block_pattern): the dump directory stays "
               "empty"),
    _case("layers_dec_full_layers_only", "decoder", {"input": Inp(9, 2)},
          masks={"mask": RightPad((9, 6))}, vocab_size=40, num_layers=3,
          layers=["attention", {"kind": "attention", "attention": {"kind": "sliding_window", "window": 1,
                                                                   "global_tokens": 1}},
                  {"kind": "attention", "attention": {"kind": "block_sparse", "block": 2, "window_blocks": 0,
                                                      "global_blocks": 1, "random_blocks": 1}}],
          note="section 7's `layers`: a full, a sliding-window and a block_sparse layer (its own block_pattern); "
               "only layer0.self.npy is written; right padding"),
    _case("missing_dir", "encoder", {"input": Inp(4, 1)}, vocab_size=20, num_layers=1,
          expect="missing_dir", note="--dump-attention of a missing DIR (and of a file): exit 1 naming it"),
]


def by_name():
    return {c.name: c for c in CASES}


def validate():
    """Problems of the case table (an empty list when it is good)."""
    import reference as R
    out = []
    seen = set()
    for c in CASES:
        if c.name in seen:
            out.append("%s: duplicate name" % c.name)
        seen.add(c.name)
        try:
            cfg = R.Config(c.model)
        except R.ConfigError as e:
            out.append("%s: %s" % (c.name, e))
            continue
        if set(c.inputs) != set(cfg.input_names):
            out.append("%s: inputs %s, the model takes %s" % (c.name, sorted(c.inputs), cfg.input_names))
            continue
        for n, i in c.inputs.items():
            if not 1 <= i.seq <= MAX_SEQ:
                out.append("%s: %s seq %d outside 1..%d" % (c.name, n, i.seq, MAX_SEQ))
            if (i.dtype == "float32") == cfg.tokens:
                out.append("%s: %s dtype %s for a model %s vocab_size" % (c.name, n, i.dtype,
                                                                         "with" if cfg.tokens else "without"))
        batches = {i.batch for i in c.inputs.values()}
        if len(batches) != 1:
            out.append("%s: inputs of different batch %s" % (c.name, batches))
        for m, spec in c.masks.items():
            if m not in cfg.mask_names:
                out.append("%s: mask %s, the model takes %s" % (c.name, m, cfg.mask_names))
                continue
            i = c.inputs[cfg.mask_of[m]]
            if len(spec.lengths) != (i.batch or 1):
                out.append("%s: %s has %d lengths for batch %s" % (c.name, m, len(spec.lengths), i.batch))
            if not all(1 <= n <= i.seq for n in spec.lengths):
                out.append("%s: %s lengths %s outside 1..%d" % (c.name, m, spec.lengths, i.seq))
        full = "full" in cfg.attention_kinds     # some layer's (section 7's `layers`)
        if c.expect not in ("weights", "none", "missing_dir"):
            out.append("%s: expect %r" % (c.name, c.expect))
        if c.expect == "none" and (full or cfg.is_encdec):
            out.append("%s: expect none needs a single stack whose self-attention is not full" % c.name)
        if c.expect == "weights" and not full:
            out.append("%s: expect weights needs full attention" % c.name)
    return out


# ---------------------------------------------------------------------------
# Which blocks write which file (contract section 9).
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Block:
    module: str        # the reference model's module name, the weights' prefix (layers.0.self_attn)
    stem: str          # the dump file without .npy (layer0.self)
    causal: bool
    keys_of: str       # the input whose tokens are its keys (input, src, tgt)
    self_attention: bool


def attention_blocks(cfg):
    """The blocks that write a file, in stack and layer order: every
    self-attention when the model's attention kind is full (none
    otherwise; with section 7's `layers`, each layer whose own kind is
    full), and every cross-attention (always full; only encoder_decoder
    has one).  L counts from 0 within its stack."""
    full = cfg.attention_kind == "full"
    out = []
    if cfg.is_encdec:
        if full:
            for i in range(cfg.num_encoder_layers):
                out.append(Block("encoder.layers.%d.self_attn" % i, "encoder.layer%d.self" % i, False, "src", True))
        for i in range(cfg.num_decoder_layers):
            if full:
                out.append(Block("decoder.layers.%d.self_attn" % i, "decoder.layer%d.self" % i, cfg.causal,
                                 "tgt", True))
            out.append(Block("decoder.layers.%d.multihead_attn" % i, "decoder.layer%d.cross" % i, False,
                             "src", False))
    else:
        for i in range(cfg.num_layers):
            if cfg.layer_config(i).attention_kind == "full":
                out.append(Block("layers.%d.self_attn" % i, "layer%d.self" % i, cfg.causal, "input", True))
    return out


# ---------------------------------------------------------------------------
# Inputs and weights.
# ---------------------------------------------------------------------------

def make_inputs(case, cfg, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for name in cfg.input_names:
        spec = case.inputs[name]
        shape = (() if spec.batch is None else (spec.batch,)) + (spec.seq,)
        if spec.dtype == "float32":
            out[name] = rng.standard_normal(shape + (cfg.d_model,)).astype(np.float32)
        else:
            out[name] = rng.integers(0, cfg.vocab_size, size=shape).astype(spec.dtype)
    for name in cfg.mask_names:
        if name in case.masks:
            spec, of = case.masks[name], case.inputs[cfg.mask_of[name]]
            m = np.zeros((len(spec.lengths), of.seq), dtype=np.int64)
            for r, n in enumerate(spec.lengths):
                m[r, :n] = 1
            if of.batch is None:
                m = m[0]
            out[name] = np.ascontiguousarray(m.astype(spec.dtype))
    return out


def key_real(cfg, inputs, which, batch):
    """bool [batch, seq] of input `which`'s tokens (True: real), from its mask, or None."""
    for m, of in cfg.mask_of.items():
        if of == which and m in inputs:
            return np.asarray(inputs[m]).reshape(batch, -1) != 0
    return None


def block_allowed(cfg, block, inputs, batch, sq, sk, drop=None):
    """bool [batch, sq, sk]: which keys query i may attend in this block
    (the causal rule, the padded keys).  `drop` (self-test's planted
    mistakes): "causal" or "padding" leaves that rule out."""
    ok = np.ones((batch, sq, sk), dtype=bool)
    if block.causal and drop != "causal":
        ok &= np.tril(np.ones((sq, sk), dtype=bool))[None]
    real = key_real(cfg, inputs, block.keys_of, batch)
    if real is not None and drop != "padding":
        ok &= real[:, None, :]
    return ok


# ---------------------------------------------------------------------------
# (A): the reference model's own attention weights, captured.
# ---------------------------------------------------------------------------

def _as3d(t):
    return t if t.dim() == 3 else t.unsqueeze(0)


def capture_reference(cfg, back, inputs, blocks):
    """Runs the reference model on `inputs` with every attention block of
    `blocks` hooked.  Returns (output float32 numpy, kind, {module name:
    dict(weights=float32 [B,H,q,k] numpy, x=tensor [B,q,D], kv=tensor
    [B,k,D])})."""
    import torch
    import torch.nn as nn
    import reference as R
    torch.set_num_threads(1)
    rec = {}
    wanted = {b.module for b in blocks}

    def record(name, w, x, kv):
        if name in rec:
            raise CaseFailure("internal: attention block %s ran twice" % name)
        w = w.detach()
        if w.dim() == 3:                   # unbatched: [H, q, k]
            w = w.unsqueeze(0)
        rec[name] = dict(weights=w.to(torch.float32).numpy().copy(), x=_as3d(x.detach()),
                         kv=_as3d(kv.detach()))

    if cfg.torch_supported():
        kind = "torch nn.MultiheadAttention(need_weights=True, average_attn_weights=False)"
        model = R.load_weights(R.build_torch_model(cfg, masked=any(m in inputs for m in cfg.mask_names)), back)
        if not isinstance(model, (R.TorchSingleStack, R.TorchEncoderDecoder)):
            raise CaseFailure("internal: build_torch_model gave %s for a torch-supported model"
                              % type(model).__name__)
        for name, mod in model.named_modules():
            if name in wanted:
                if not isinstance(mod, nn.MultiheadAttention):
                    raise CaseFailure("internal: %s is %s" % (name, type(mod).__name__))
                orig = mod.forward
                sig = inspect.signature(orig)

                def fwd(*args, _orig=orig, _sig=sig, _name=name, **kwargs):
                    a = _sig.bind(*args, **kwargs).arguments
                    a["need_weights"] = True
                    a["average_attn_weights"] = False
                    out, w = _orig(**a)
                    record(_name, w, a["query"], a["key"])
                    return out, w
                mod.forward = fwd
        # Grad enabled: PyTorch's fused encoder-layer / MHA fast paths (taken
        # under no_grad in eval mode) would not call the modules' forward.
        with torch.enable_grad():
            out = model(**R.to_torch_inputs(cfg, inputs))
    else:
        kind = "formula model (b): its softmax over its own scores"
        model = R.load_weights(R.build_formula_model(cfg, mask_form="additive"), back)
        for name, mod in model.named_modules():
            if name in wanted:
                if not isinstance(mod, R.FormulaAttention):
                    raise CaseFailure("internal: %s is %s" % (name, type(mod).__name__))
                orig = mod.forward

                def fwd(x, mem=None, causal=False, rope=None, key_mask=None, _orig=orig, _name=name):
                    seen = []
                    real_softmax = R.softmax_last

                    def softmax_last(s):
                        p = real_softmax(s)
                        seen.append(p)
                        return p
                    R.softmax_last = softmax_last
                    try:
                        out = _orig(x, mem=mem, causal=causal, rope=rope, key_mask=key_mask)
                    finally:
                        R.softmax_last = real_softmax
                    if len(seen) != 1:
                        raise CaseFailure("internal: %s took %d softmaxes, expected one" % (_name, len(seen)))
                    record(_name, seen[0], x, x if mem is None else mem)
                    return out
                mod.forward = fwd
        with torch.no_grad():
            out = model(**R.to_torch_inputs(cfg, inputs))
    missing = sorted(wanted - set(rec))
    if missing:
        raise CaseFailure("internal: attention blocks never called (a fused path?): %s" % missing)
    return out.detach().to(torch.float32).numpy().copy(), kind, rec


# ---------------------------------------------------------------------------
# (B): the dense softmax(score + mask) from the block's input, in float64.
# ---------------------------------------------------------------------------

FORM_B_MISTAKES = ("no_causal", "no_padding", "unscaled", "dot_scaled", "bilinear_transposed",
                   "additive_swapped", "gqa_modulo", "rope_style", "no_rope")


def _rope_complex(t, style, base, mistake):
    """t [B, H, S, dk] rotated by position as complex numbers: (t_i, t_{i+dk/2})
    (half) or (t_2i, t_2i+1) (interleaved) times exp(1j * pos * base^(-2i/dk))."""
    import torch
    if mistake == "rope_style":
        style = "interleaved" if style == "half" else "half"
    s, dk = t.shape[2], t.shape[3]
    theta = base ** (-2.0 * torch.arange(dk // 2, dtype=torch.float64) / dk)
    rot = torch.polar(torch.ones(s, dk // 2, dtype=torch.float64),
                      torch.arange(s, dtype=torch.float64)[:, None] * theta[None, :])
    if style == "half":
        z = torch.complex(t[..., :dk // 2], t[..., dk // 2:]) * rot
        return torch.cat((z.real, z.imag), dim=-1)
    z = torch.complex(t[..., 0::2], t[..., 1::2]) * rot
    return torch.stack((z.real, z.imag), dim=-1).flatten(-2)


def dense_form(cfg, weights, block, x, kv, allowed, mistake=None):
    """float64 [B, H, q, k]: softmax(score(Q, K) + M), M = 0 where `allowed`
    (bool [B, q, k]) and -inf elsewhere; Q and K projected from x, kv
    ([B, q, D], [B, k, D]) with the block's in_proj rows (and bias), rope
    on self-attention, query head h reading K head h // group.  `mistake`
    (self-test only): "unscaled" (scaled_dot without 1/sqrt(dk)),
    "dot_scaled" (dot with it), "bilinear_transposed" (q W_h^T k),
    "additive_swapped" (w_key on q, w_query on k), "gqa_modulo" (K head
    h % kv), "rope_style" (the other style), "no_rope"."""
    import torch
    h, hkv, dk = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
    p = block.module + "."
    w = weights[p + "in_proj_weight"].double()
    bias = weights.get(p + "in_proj_bias")
    x, kv = x.double(), kv.double()

    def proj(t, lo, n):
        y = t @ w[lo:lo + n * dk].T
        if bias is not None:
            y = y + bias[lo:lo + n * dk].double()
        return y.reshape(t.shape[0], t.shape[1], n, dk).permute(0, 2, 1, 3)
    q, k = proj(x, 0, h), proj(kv, h * dk, hkv)
    if block.self_attention and cfg.positional == "rope" and mistake != "no_rope":
        q = _rope_complex(q, cfg.rope_style, cfg.rope_base, mistake)
        k = _rope_complex(k, cfg.rope_style, cfg.rope_base, mistake)
    group = h // hkv
    k = k[:, [(i % hkv) if mistake == "gqa_modulo" else (i // group) for i in range(h)]]
    score = cfg.attention_score
    if score in ("scaled_dot", "dot"):
        s = torch.einsum("bhid,bhjd->bhij", q, k)
        if (score == "scaled_dot") != (mistake in ("unscaled", "dot_scaled")):
            s = s / math.sqrt(dk)
    elif score == "bilinear":
        wb = weights[p + "score.weight"].double()
        if mistake == "bilinear_transposed":
            wb = wb.transpose(1, 2)
        s = torch.einsum("bhid,hde,bhje->bhij", q, wb, k)
    else:
        wk, wq = weights[p + "score.w_key"].double(), weights[p + "score.w_query"].double()
        if mistake == "additive_swapped":
            wk, wq = wq, wk
        kp = torch.einsum("bhjd,had->bhja", k, wk)
        qp = torch.einsum("bhid,had->bhia", q, wq)
        s = torch.einsum("bhija,ha->bhij", torch.tanh(qp[:, :, :, None] + kp[:, :, None]),
                         weights[p + "score.v"].double())
    ok = torch.from_numpy(np.ascontiguousarray(allowed))
    m = torch.zeros(ok.shape, dtype=torch.float64).masked_fill(~ok, float("-inf"))
    return torch.softmax(s + m[:, None], dim=-1).numpy()


def applicable_mistakes(cfg, blocks, inputs):
    out = []
    if any(b.causal for b in blocks):
        out.append("no_causal")
    if any(m in inputs for m in cfg.mask_names):
        out.append("no_padding")
    out.append({"scaled_dot": "unscaled", "dot": "dot_scaled", "bilinear": "bilinear_transposed",
                "additive": "additive_swapped"}[cfg.attention_score])
    if 1 < cfg.num_kv_heads < cfg.num_heads:
        out.append("gqa_modulo")
    if cfg.positional == "rope":
        out += ["rope_style", "no_rope"]
    return out


# ---------------------------------------------------------------------------
# The reference side of a case.
# ---------------------------------------------------------------------------

def _save_npy(path, a, what):
    np.save(path, a)
    b = np.load(path, allow_pickle=False)
    if b.dtype != a.dtype or b.shape != a.shape or not np.array_equal(a, b, equal_nan=True):
        raise CaseFailure("npy read-back of %s differs" % what)


def _masked_diff(a, b, rows):
    """max |a - b| over the rows `rows` (bool [B, H, q]); NaN counts as inf."""
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    d = np.where(np.isnan(d), np.inf, d)
    d = d[rows]
    return float(d.max()) if d.size else 0.0


def prepare_reference(case, case_dir, with_mistakes=False):
    """Steps 1 and 2.  Returns a dict; raises CaseFailure."""
    import torch
    import reference as R
    torch.set_num_threads(1)
    os.makedirs(case_dir, exist_ok=True)
    cfg = R.Config(case.model)
    seed = case_seed(case.name)
    info = dict(cfg=cfg)

    info["model"] = os.path.join(case_dir, case.name + ".json")
    with open(info["model"], "w") as f:
        json.dump(case.model, f, indent=2)
        f.write("\n")

    weights = R.make_weights(cfg, seed)
    if {k: tuple(v.shape) for k, v in weights.items()} != R.expected_weights(cfg):
        raise CaseFailure("internal: generated weights do not match the contract listing")
    arrays = {k: v.numpy() for k, v in weights.items()}
    info["weights"] = os.path.join(case_dir, "weights.safetensors")
    # Floats as F32; block_sparse's block_pattern ids (integers) as I32.
    dtypes = {k: "F32" if a.dtype.kind == "f" else "I32" for k, a in arrays.items()}
    st.save_file(arrays, info["weights"], dtype=dtypes, metadata={"format": "pt", "case": case.name})
    back = st.load_file(info["weights"])
    if list(back) != list(arrays) or any(not np.array_equal(back[k], a) for k, a in arrays.items()):
        raise CaseFailure("safetensors read-back differs")

    inputs = make_inputs(case, cfg, seed)
    info["inputs"] = {}
    for name, a in inputs.items():
        p = os.path.join(case_dir, "input_%s.npy" % name)
        _save_npy(p, a, name)
        info["inputs"][name] = p
    problems = R.mask_problems(cfg, inputs)
    if problems:
        raise CaseFailure("case table: the reference refuses the masks: %s" % problems)

    # The output: (b), and the hooked model's against it.
    ref_b = R.run_model(R.load_weights(R.build_formula_model(cfg), back), cfg, inputs).numpy()
    rows_out = (R.attended_rows(cfg, inputs, R.output_stack_patterns(cfg, back))
                if any(m in inputs for m in cfg.mask_names) else None)
    blocks = attention_blocks(cfg)
    info["blocks"] = blocks
    first = case.inputs[cfg.input_names[0]]
    batch = first.batch or 1
    info["batched"] = first.batch is not None
    expected = {}
    if case.expect == "weights":
        out, kind, rec = capture_reference(cfg, back, inputs, blocks)
        if out.shape != ref_b.shape:
            raise CaseFailure("hooked reference output %s vs (b) %s" % (out.shape, ref_b.shape))
        keep = np.ones(out.shape[:-1], dtype=bool) if rows_out is None else rows_out
        d = float(np.max(np.abs(out[keep].astype(np.float64) - ref_b[keep])))
        if d / max(1.0, float(np.max(np.abs(ref_b[keep])))) >= AB_BOUND:
            raise CaseFailure("hooked reference (%s) vs (b) formulas: output differs by %.3g" % (kind, d))
        info["kind"] = kind
        wt = {k: torch.from_numpy(v) for k, v in back.items()}
        forms = 0.0
        mistakes = {m: 0.0 for m in (applicable_mistakes(cfg, blocks, inputs) if with_mistakes else ())}
        os.makedirs(os.path.join(case_dir, "ref"), exist_ok=True)
        for b in blocks:
            r = rec[b.module]
            a = r["weights"]
            sq, sk = r["x"].shape[1], r["kv"].shape[1]
            want_shape = (batch, cfg.num_heads, sq, sk)
            if a.shape != want_shape:
                raise CaseFailure("reference %s weights %s, expected %s" % (b.stem, a.shape, want_shape))
            allowed = block_allowed(cfg, b, inputs, batch, sq, sk)
            allowed4 = np.broadcast_to(allowed[:, None], a.shape)
            rows = np.broadcast_to(allowed.any(-1)[:, None], a.shape[:3])
            bad = check_weights(b.stem, a, a, allowed4, rows, tol=FORMS_BOUND, dtype_check=False)
            if bad:
                raise CaseFailure("reference (A) itself: %s" % bad)
            dense = dense_form(cfg, wt, b, r["x"], r["kv"], allowed)
            dab = _masked_diff(a, dense, rows)
            if not dab < FORMS_BOUND:
                raise CaseFailure("%s: (A) %s and (B) the dense softmax differ by %.3g" % (b.stem, kind, dab))
            forms = max(forms, dab)
            for m in mistakes:
                drop = {"no_causal": "causal", "no_padding": "padding"}.get(m)
                am = block_allowed(cfg, b, inputs, batch, sq, sk, drop=drop) if drop else allowed
                mistakes[m] = max(mistakes[m], _masked_diff(
                    a, dense_form(cfg, wt, b, r["x"], r["kv"], am, mistake=None if drop else m), rows))
            p = os.path.join(case_dir, "ref", b.stem + ".npy")
            np.save(p, a)
            expected[b.stem] = dict(ref=a, allowed=allowed4, rows=rows, tol=tolerance(a[rows]))
        caught = [m for m, v in mistakes.items() if v > MISTAKE_BOUND]
        missed = sorted(set(mistakes) - set(caught))
        if missed:
            raise CaseFailure("planted mistakes in (B) not seen against (A) (max diff <= %g): %s"
                              % (MISTAKE_BOUND, ", ".join("%s %.3g" % (m, mistakes[m]) for m in missed)))
        info["forms"] = forms
        info["mistakes"] = caught
        ref_out = out
    else:
        if case.expect == "none" and blocks:
            raise CaseFailure("case table: %s expects no file but has full-attention blocks" % case.name)
        ref_out = ref_b.astype(np.float32)
    info["expected"] = expected
    info["ref_out"] = ref_out
    info["rows_out"] = rows_out
    np.save(os.path.join(case_dir, "reference.npy"), ref_out)
    return info


# ---------------------------------------------------------------------------
# Checking a dump.
# ---------------------------------------------------------------------------

def check_weights(stem, a, ref, allowed, rows, tol, dtype_check=True):
    """What is wrong with one dumped array `a` against `ref` (None: nothing):
    dtype float32, ref's shape, finite, within tol, masked entries exactly
    0.0, rows summing to 1, on the rows `rows` (bool [B, H, q])."""
    f = stem + ".npy"
    if dtype_check and a.dtype != np.float32:
        return "%s: dtype %s, expected float32" % (f, a.dtype)
    if a.shape != ref.shape:
        return "%s: shape %s, expected %s [batch, heads, q, k]" % (f, list(a.shape), list(ref.shape))
    kept = a[rows]
    if not np.all(np.isfinite(kept)):
        return "%s: %d non-finite values in rows with keys" % (f, int(np.sum(~np.isfinite(kept))))
    err = np.abs(a.astype(np.float64) - ref.astype(np.float64))
    err[~np.broadcast_to(rows[..., None], err.shape)] = 0.0
    e = float(err.max()) if err.size else 0.0
    if not e <= tol:
        idx = np.unravel_index(int(np.argmax(err)), err.shape)
        return "%s: max_err=%.3g > tol=%.3g at %s (got %.6g, ref %.6g)" % (f, e, tol, list(idx), a[idx], ref[idx])
    masked = ~allowed & np.broadcast_to(rows[..., None], a.shape)
    nz = masked & (a != 0.0)
    if nz.any():
        idx = tuple(int(i) for i in np.argwhere(nz)[0])
        return ("%s: %d masked entries not exactly 0, e.g. %s = %.3g" % (f, int(nz.sum()), list(idx), a[idx]))
    sums = a.astype(np.float64).sum(-1)
    off = np.abs(sums - 1.0)
    off[~rows] = 0.0
    if off.size and off.max() > ROW_SUM_BOUND:
        idx = np.unravel_index(int(np.argmax(off)), off.shape)
        return "%s: row %s sums to %.9g, not 1 (within %g)" % (f, list(idx), sums[idx], ROW_SUM_BOUND)
    return None


def check_dump(dump_dir, expected):
    """(max_err, files) of a dump against expected {stem: dict(ref, allowed,
    rows, tol)}; raises CaseFailure."""
    got = sorted(os.listdir(dump_dir))
    want = sorted(s + ".npy" for s in expected)
    if got != want:
        missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
        raise CaseFailure("dump files differ from the expected set: missing %s, unexpected %s"
                          % (missing or "none", extra or "none"))
    worst = 0.0
    for stem, e in expected.items():
        path = os.path.join(dump_dir, stem + ".npy")
        try:
            a = np.load(path, allow_pickle=False)
        except Exception as ex:  # noqa: BLE001 - any unreadable file is a failure
            raise CaseFailure("%s.npy unreadable: %s" % (stem, ex))
        bad = check_weights(stem, a, e["ref"], e["allowed"], e["rows"], e["tol"])
        if bad:
            raise CaseFailure(bad)
        d = np.abs(a.astype(np.float64) - e["ref"])[e["rows"]]
        worst = max(worst, float(d.max()) if d.size else 0.0)
    return worst, len(want)


def compare_dumps(d1, d2):
    """--threads 1 and 2 must write the same files, bit for bit."""
    f1, f2 = sorted(os.listdir(d1)), sorted(os.listdir(d2))
    if f1 != f2:
        raise CaseFailure("--threads 1 wrote %s, --threads 2 %s" % (f1, f2))
    for f in f1:
        try:
            a = np.load(os.path.join(d1, f), allow_pickle=False)
            b = np.load(os.path.join(d2, f), allow_pickle=False)
        except Exception as ex:  # noqa: BLE001 - any unreadable file is a failure
            raise CaseFailure("%s unreadable: %s" % (f, ex))
        if a.dtype != b.dtype or a.shape != b.shape:
            raise CaseFailure("--threads 1 and 2: %s is %s %s vs %s %s" % (f, a.dtype, list(a.shape), b.dtype,
                                                                           list(b.shape)))
        if a.tobytes() != b.tobytes():
            n = int(np.sum(a.view(np.uint32) != b.view(np.uint32))) if a.dtype == np.float32 else -1
            d = float(np.nanmax(np.abs(a.astype(np.float64) - b.astype(np.float64))))
            raise CaseFailure("--threads 1 and 2 dumps differ in %s (%d elements, max %.3g): not bit-identical"
                              % (f, n, d))


# ---------------------------------------------------------------------------
# Compile and run.
# ---------------------------------------------------------------------------

def _clip(line, n):
    return line if len(line) <= n else line[: n - 3] + "..."


def _tail(text, lines=3, width=160):
    ls = [l.strip() for l in text.strip().splitlines() if l.strip()]
    if not ls:
        return "(no stderr)"
    tail = ls[-lines:]
    first = next((l for l in ls if "error" in l.lower()), None)
    parts = [_clip(first, width), "..."] if first is not None and first not in tail else []
    return " | ".join(parts + [_clip(l, width) for l in tail])


def _write(case_dir, name, text):
    with open(os.path.join(case_dir, name), "w") as f:
        f.write(text)


def _fresh_dir(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)
    os.makedirs(path)


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def compile_case(case, info, tfm_compile, case_dir, timeout, backend):
    exe = os.path.join(case_dir, "model")
    _remove(exe)
    cmd = [tfm_compile, info["model"], "-o", exe] + case.compile_args()
    if backend:
        cmd += ["--backend=" + backend]
    _write(case_dir, "compile.cmd", " ".join(cmd) + "\n")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=case_dir)
    except subprocess.TimeoutExpired:
        raise CaseFailure("tfm-compile timed out after %ds" % timeout)
    except OSError as e:
        raise CaseFailure("cannot run tfm-compile: %s" % e)
    _write(case_dir, "compile.stderr", p.stderr)
    if p.returncode != 0:
        raise CaseFailure("tfm-compile exited %d: %s" % (p.returncode, _tail(p.stderr)))
    if not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        raise CaseFailure("tfm-compile succeeded but wrote no executable %s" % exe)
    return exe


def run_exe(exe, info, case_dir, tag, threads, dump_dir, timeout, output=None):
    cmd = [exe, "--weights", info["weights"]]
    for name, path in info["inputs"].items():
        cmd += ["--input", "%s=%s" % (name, path)]
    if output is not None:
        _remove(output)
        cmd += ["--output", output]
    cmd += ["--threads", str(threads), "--dump-attention", dump_dir]
    _write(case_dir, tag + ".cmd", " ".join(cmd) + "\n")
    env = dict(os.environ)
    env.pop("TFM_SIMD", None)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=case_dir, env=env)
    except subprocess.TimeoutExpired:
        raise CaseFailure("executable (%s) timed out after %ds" % (tag, timeout))
    except OSError as e:
        raise CaseFailure("cannot run the executable: %s" % e)
    _write(case_dir, tag + ".stderr", p.stderr)
    return p


def _what(rc):
    return ("killed by signal %d" % -rc) if rc < 0 else ("exited %d" % rc)


def run_weights_case(case, info, exe, case_dir, timeout):
    outs = {}
    for t in (1, 2):
        dump = os.path.join(case_dir, "dump_t%d" % t)
        _fresh_dir(dump)
        out = os.path.join(case_dir, "out_t%d.npy" % t)
        p = run_exe(exe, info, case_dir, "run_t%d" % t, t, dump, timeout, output=out)
        if p.returncode != 0:
            raise CaseFailure("executable --dump-attention (--threads %d) %s: %s"
                              % (t, _what(p.returncode), _tail(p.stderr)))
        try:
            outs[t] = np.load(out, allow_pickle=False)
        except Exception as e:  # noqa: BLE001
            raise CaseFailure("output of --threads %d unreadable: %s" % (t, e))
    d1, d2 = os.path.join(case_dir, "dump_t1"), os.path.join(case_dir, "dump_t2")
    err, n = check_dump(d1, info["expected"])
    compare_dumps(d1, d2)
    # The output, which --dump-attention must leave as it is.
    ref, o = info["ref_out"], outs[1]
    if o.dtype != np.float32 or o.shape != ref.shape:
        raise CaseFailure("output is %s %s, expected float32 %s" % (o.dtype, list(o.shape), list(ref.shape)))
    keep = np.ones(ref.shape[:-1], dtype=bool) if info["rows_out"] is None else info["rows_out"]
    otol = tolerance(ref[keep])
    oerr = float(np.max(np.abs(o[keep].astype(np.float64) - ref[keep]))) if keep.any() else 0.0
    if not oerr <= otol:
        raise CaseFailure("output with --dump-attention: max_err=%.3g > tol=%.3g" % (oerr, otol))
    if outs[2].tobytes() != o.tobytes() or outs[2].shape != o.shape:
        raise CaseFailure("--threads 1 and 2 outputs differ: not bit-identical")
    tol = max(e["tol"] for e in info["expected"].values()) if info["expected"] else 0.0
    return err, n, tol, oerr


def run_none_case(case, info, exe, case_dir, timeout):
    for t in (1, 2):
        dump = os.path.join(case_dir, "dump_t%d" % t)
        _fresh_dir(dump)
        p = run_exe(exe, info, case_dir, "run_t%d" % t, t, dump, timeout,
                    output=os.path.join(case_dir, "out_t%d.npy" % t))
        if p.returncode != 0:
            raise CaseFailure("executable --dump-attention (--threads %d) %s: %s"
                              % (t, _what(p.returncode), _tail(p.stderr)))
        got = sorted(os.listdir(dump))
        if got:
            raise CaseFailure("a model without full attention wrote %s (expected no file)" % got)


def run_missing_dir_case(case, info, exe, case_dir, timeout):
    missing = os.path.join(case_dir, "no_such_dir")
    _remove(missing)
    p = run_exe(exe, info, case_dir, "run_missing", 1, missing, timeout,
                output=os.path.join(case_dir, "out_missing.npy"))
    if p.returncode != 1:
        raise CaseFailure("--dump-attention of a missing DIR: executable %s, expected exit 1: %s"
                          % (_what(p.returncode), _tail(p.stderr)))
    if missing not in p.stderr:
        raise CaseFailure("--dump-attention of a missing DIR: exit 1 but stderr does not name %s: %s"
                          % (missing, _tail(p.stderr)))
    if os.path.lexists(missing):
        raise CaseFailure("--dump-attention of a missing DIR created it")
    a_file = os.path.join(case_dir, "not_a_dir")
    _remove(a_file)
    with open(a_file, "w") as f:
        f.write("a file, not a directory\n")
    p = run_exe(exe, info, case_dir, "run_file", 1, a_file, timeout,
                output=os.path.join(case_dir, "out_file.npy"))
    if p.returncode != 1:
        raise CaseFailure("--dump-attention of a file: executable %s, expected exit 1: %s"
                          % (_what(p.returncode), _tail(p.stderr)))
    if a_file not in p.stderr:
        raise CaseFailure("--dump-attention of a file: exit 1 but stderr does not name %s: %s"
                          % (a_file, _tail(p.stderr)))


# ---------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------

def run_one(case_name, opts):
    case = by_name()[case_name]
    case_dir = os.path.join(opts["work_dir"], case.name)
    t0 = time.time()
    try:
        info = prepare_reference(case, case_dir)
        exe = compile_case(case, info, opts["tfm_compile"], case_dir, opts["compile_timeout"], opts["backend"])
        if case.expect == "none":
            run_none_case(case, info, exe, case_dir, opts["run_timeout"])
            return True, "PASS %s (no files, as expected: %s attention)" % (
                case.name, "/".join(sorted(set(info["cfg"].attention_kinds))))
        if case.expect == "missing_dir":
            run_missing_dir_case(case, info, exe, case_dir, opts["run_timeout"])
            return True, "PASS %s (missing DIR and a file as DIR: exit 1 naming it)" % case.name
        err, n, tol, oerr = run_weights_case(case, info, exe, case_dir, opts["run_timeout"])
        return True, "PASS %s (files=%d, max_err=%.3g, tol=%.3g, output_err=%.3g, ref_forms=%.3g)" % (
            case.name, n, err, tol, oerr, info["forms"])
    except CaseFailure as e:
        return False, "FAIL %s: %s" % (case.name, e)
    except Exception as e:  # noqa: BLE001 - report, never crash the harness
        tb = traceback.format_exc()
        try:
            os.makedirs(case_dir, exist_ok=True)
            _write(case_dir, "harness.traceback", tb)
        except OSError:
            pass
        return False, "FAIL %s: harness error %s: %s" % (case.name, type(e).__name__, _tail(str(e), 2))
    finally:
        if opts.get("verbose"):
            sys.stderr.write("[%s: %.1fs]\n" % (case.name, time.time() - t0))


def _init_worker():
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass


def select(filters):
    return case_pool.select_names([c.name for c in CASES], filters)


# ---------------------------------------------------------------------------
# --self-test: the reference side and the checks, without tfm-compile.
# ---------------------------------------------------------------------------

def _planted_faults(info):
    """(name, reason regex, mutate(dump_dir)) for a case with masked
    entries; each mutation of an exact dump must be caught."""
    exp = info["expected"]
    stems = list(exp)
    s0 = stems[0]
    e0 = exp[s0]

    def path(stem):
        return lambda d: os.path.join(d, stem + ".npy")

    def rewrite(fn, stem=s0):
        def m(d):
            p = path(stem)(d)
            np.save(p, fn(np.load(p)))
        return m

    def first_defined(a):
        return tuple(int(i) for i in np.argwhere(np.broadcast_to(e0["rows"][..., None], a.shape)
                                                 & e0["allowed"])[0])

    def noisy(a):
        a = a.copy()
        a[first_defined(a)] += 3 * e0["tol"]
        return a

    def masked_tiny(a):
        a = a.copy()
        idx = np.argwhere(~e0["allowed"] & np.broadcast_to(e0["rows"][..., None], a.shape))
        a[tuple(idx[0])] = 1e-30
        return a

    def rows_scaled(a):
        return (a * np.float32(1 + 1e-4)).astype(np.float32)

    def heads_swapped(a):
        return np.ascontiguousarray(a[:, ::-1])

    def dropped_batch(a):
        return np.ascontiguousarray(a[0])

    def extra(d):
        np.save(os.path.join(d, "layer99.self.npy"), e0["ref"])

    def missing(d):
        os.remove(path(stems[-1])(d))

    faults = [
        ("noise", r"max_err=.* > tol=", rewrite(noisy)),
        ("masked_1e-30", r"masked entries not exactly 0", rewrite(masked_tiny)),
        ("rows_1e-4", r"sums to .*, not 1", rewrite(rows_scaled)),
        ("float64", r"dtype float64, expected float32", rewrite(lambda a: a.astype(np.float64))),
        ("heads_swapped", r"max_err=.* > tol=", rewrite(heads_swapped)),
        ("extra_file", r"unexpected \['layer99.self.npy'\]", extra),
        ("missing_file", r"missing \['%s'\]" % re.escape(stems[-1] + ".npy"), missing),
    ]
    if not info["batched"]:
        faults.append(("3d", r"shape \[.*\], expected \[1, ", rewrite(dropped_batch)))
    return faults


def self_test(work_dir, filters, verbose):
    results = []

    def item(name, fn):
        t0 = time.time()
        try:
            detail = fn()
            results.append((True, "PASS %s (%s)" % (name, detail)))
        except CaseFailure as e:
            results.append((False, "FAIL %s: %s" % (name, e)))
        except Exception as e:  # noqa: BLE001
            results.append((False, "FAIL %s: harness error %s: %s\n%s" % (name, type(e).__name__, e,
                                                                        traceback.format_exc())))
        print(results[-1][1], flush=True)
        if verbose:
            sys.stderr.write("[%s: %.1fs]\n" % (name, time.time() - t0))

    def table():
        problems = validate()
        if problems:
            raise CaseFailure("; ".join(problems))
        return "%d cases" % len(CASES)
    item("case-table", table)
    infos = {}
    for name in select(filters):
        case = by_name()[name]

        def ref(case=case):
            info = prepare_reference(case, os.path.join(work_dir, case.name), with_mistakes=True)
            infos[case.name] = info
            if case.expect != "weights":
                if info["expected"]:
                    raise CaseFailure("expected files %s" % sorted(info["expected"]))
                return "expect %s, no reference weights" % case.expect
            return "%d files, (A) %s vs (B) dense max diff %.3g; planted mistakes caught: %s" % (
                len(info["expected"]), info["kind"].split(":")[0].split("(")[0].strip(), info["forms"],
                ", ".join(info["mistakes"]) or "none applicable")
        item("reference " + case.name, ref)

    # The dump checks themselves, on exact copies of the reference with
    # planted faults: a batched masked case and an unbatched one.
    for name in ("enc_post_mask_b3", "encdec_unbatched_src_mask", "dec_causal_b2"):
        info = infos.get(name)
        if info is None:
            continue
        base = os.path.join(work_dir, name, "selftest_dump")

        def exact_copy(d, info=info):
            _fresh_dir(d)
            for stem, e in info["expected"].items():
                np.save(os.path.join(d, stem + ".npy"), e["ref"])

        def exact(info=info, base=base):
            exact_copy(base)
            err, n = check_dump(base, info["expected"])
            compare_dumps(base, base)
            return "an exact dump passes: %d files, max_err %.3g" % (n, err)
        item("checker %s exact" % name, exact)
        for fault, reason, mutate in _planted_faults(info):
            def planted(info=info, base=base, reason=reason, mutate=mutate):
                exact_copy(base)
                mutate(base)
                try:
                    check_dump(base, info["expected"])
                except CaseFailure as e:
                    if re.search(reason, str(e)):
                        return "caught: %s" % _clip(str(e), 100)
                    raise CaseFailure("caught for another reason: %s (expected /%s/)" % (e, reason))
                raise CaseFailure("not caught")
            item("checker %s %s" % (name, fault), planted)

        def threads_ulp(info=info, base=base):
            exact_copy(base)
            other = base + "_t2"
            exact_copy(other)
            stem = next(iter(info["expected"]))
            p = os.path.join(other, stem + ".npy")
            a = np.load(p)
            flat = a.reshape(-1).view(np.uint32).copy()
            k = int(np.argmax(a.reshape(-1)))
            flat[k] += 1
            np.save(p, flat.view(np.float32).reshape(a.shape))
            try:
                compare_dumps(base, other)
            except CaseFailure as e:
                if "not bit-identical" in str(e):
                    return "caught: %s" % _clip(str(e), 100)
                raise
            raise CaseFailure("one ulp between --threads 1 and 2 not caught")
        item("checker %s threads_ulp" % name, threads_ulp)

    passed = sum(ok for ok, _ in results)
    failed = len(results) - passed
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--tfm-compile", help="path to tfm-compile (required unless --self-test or --list)")
    ap.add_argument("--work-dir", default=None,
                    help="where each case's files go (default: ./dump-attention-work; --self-test: a temporary "
                         "directory, removed after)")
    ap.add_argument("-k", dest="filters", action="append", default=[],
                    help="run cases whose name contains FILTER (or matches it as a glob); repeatable")
    ap.add_argument("-j", dest="jobs", type=int, default=2, help="cases in parallel (default 2)")
    ap.add_argument("--backend", choices=["hwy", "llvm"], default=None,
                    help="passed to tfm-compile as --backend (every check is the same on both)")
    ap.add_argument("--compile-timeout", type=int, default=300)
    ap.add_argument("--run-timeout", type=int, default=120)
    ap.add_argument("--self-test", action="store_true",
                    help="the reference side only ((A) vs (B), planted mistakes, the dump checks), no compiler")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    if args.list:
        for c in CASES:
            print("%-36s %s" % (c.name, c.note))
        return 0
    names = select(args.filters)
    if not names:
        print("no case matches %s" % args.filters, file=sys.stderr)
        print("0 passed, 0 failed")
        return 2
    if args.self_test:
        _init_worker()
        if args.work_dir:
            wd = os.path.abspath(args.work_dir)
            os.makedirs(wd, exist_ok=True)
            return self_test(wd, args.filters, args.verbose)
        wd = tempfile.mkdtemp(prefix="dump-attention-selftest-")
        try:
            return self_test(wd, args.filters, args.verbose)
        finally:
            shutil.rmtree(wd, ignore_errors=True)
    problems = validate()
    if problems:
        for p in problems:
            print("case table: " + p, file=sys.stderr)
        return 2
    if not args.tfm_compile:
        ap.error("--tfm-compile is required (or use --self-test)")
    tfm_compile = os.path.abspath(args.tfm_compile)
    if not (os.path.isfile(tfm_compile) and os.access(tfm_compile, os.X_OK)):
        ap.error("--tfm-compile %s is not an executable file" % args.tfm_compile)
    work_dir = os.path.abspath(args.work_dir or "dump-attention-work")
    os.makedirs(work_dir, exist_ok=True)
    opts = dict(work_dir=work_dir, tfm_compile=tfm_compile, compile_timeout=args.compile_timeout,
                run_timeout=args.run_timeout, verbose=args.verbose, backend=args.backend)
    return case_pool.run_cases(names, run_one, opts, args.jobs, _init_worker)


if __name__ == "__main__":
    sys.exit(main())
