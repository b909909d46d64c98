"""The table of end-to-end cases: a model description (contract section 2)
plus the inputs to run it on and how to compile it.

Every model is tiny (compile + run in a few seconds).  Sizes are chosen to
stay off the 16-lane vector width: odd sequence lengths (1, 5, 7, 13), head
sizes 7, 8, 12, 24, 32, 80, d_model 21/48/96/160, d_ff 50 (45, 44, 25 for
gated FFNs, whose linear1 has 2 d_ff rows).

The section 11 cases (contract: norm_type, silu, ffn_gated, num_kv_heads,
bias) are checked against reference.py's Hugging Face style form (c)
instead of nn.Transformer (a).

The section 7 cases (`win_*`: `attention` of kind sliding_window) are
checked against (a) with the window as a float attn_mask where nn.Transformer
expresses the model (scaled_dot, no rope), (c) with its additive mask for
section 11 models, and otherwise against (b)'s banded form (each query row
gathers only its keys) instead of its dense mask.

The `lin_*` cases (`attention` of kind linformer: K' = E_n K, V' = F_n V
along the sequence, with each self-attention's proj_e / proj_f
[k, max_seq_len]; never causal, so a decoder or an encoder_decoder says
`"causal": false`) are checked against (b)'s factored form ((q K^T) E_n^T
and (P F_n) V) instead of projecting K and V first; neither nn.Transformer
nor (c) expresses them.

The `perf_*` cases (`attention` of kind performer, FAVOR+: per head h,
phi(x) = exp(x W_h^T - |x|^2 / 2) / sqrt(M) of q / dk^(1/4) and
k / dk^(1/4), with each self-attention's `features` [num_heads, M, dk];
out = D^-1 phi(Q) (phi(K)^T V), causal or not) are checked against (b)'s
linear form (the summaries phi(K)^T V and phi(K)^T 1, or their running
sums when causal) instead of the [q, k] matrix phi(Q) phi(K)^T; neither
nn.Transformer nor (c) expresses them.  `perf_err_mask*` are error cases
(a mask on a performer model, refused at run time); COMPILE_ERRORS lists
the descriptions tfm-compile must refuse (performer's key and score), each
with the compiler's message, which the reference refuses too.

The `bs_*` cases (`attention` of kind block_sparse, BigBird: blocks of B
tokens; query block qb = i // B attends key block kb when |qb - kb| <=
window_blocks, or qb < global_blocks, or kb < global_blocks, or kb is in
row qb of the layer's block_pattern [ceil(max_seq_len / B), R], ids
outside [0, ceil(n / B)) ignored; causal per token on top) are checked
against (b)'s block form (each query block gathers its key blocks) instead
of its dense mask; neither nn.Transformer nor (c) expresses them.  Their
block_pattern ids are the case's own (block_patterns(): mostly valid
run-time ids, plus duplicates, -1 and other negatives, the run-time block
count, the compiled one, ids only the compiled length has, and int32 /
int64 extremes), written as I32 or I64 (`Case.pattern_dtype`).  The
`bs_load_*` cases write a weights file the executable must refuse
(`Case.weight_fault`: block_pattern as F32, transposed, present with
random_blocks 0, a float weight as I32): exit 1 naming the tensor.

The `mask_*` cases (contract section 8) give the executable a padding
mask as well (`--input mask=FILE`; encoder_decoder: `src_mask`,
`tgt_mask`, either alone or both), made from the case's seed (Mask.make):
right and left padding, holes inside the sequence, all ones, as int32,
int64, bool or float32.  They are checked against (a) with PyTorch's
key_padding_mask (or one float attn_mask where a row is left with no key),
(c) with its additive mask, (b)'s banded form, or else (b) with one dense
additive mask instead of leaving the padded keys out.  Output rows whose
query has no key to attend (a padded row whose allowed keys are all
padding, e.g. left padding in a causal model) have unspecified values and
are left out of the comparison (reference.attended_rows).  The
`mask_err_*` cases expect the executable to refuse its input: exit status
1 and the name of the input (`expect_error`) on stderr.

The `emb_*` cases: `embedding_norm` (the model's norm on the summed
embeddings, before the first layer: embed_norm.*, or src_embed_norm.* and
tgt_embed_norm.*) on every architecture, with float inputs too, and BERT's
token types (`type_vocab_size`, encoder only: type_embed.weight and the
optional input `token_type_ids`, shaped as `input`, zeros when left out),
given (`Case.token_types`: TokenTypes, `--input token_type_ids=FILE`) or
not, with and without padding masks.  They are checked against (a) and
(c), which add the same embeddings around their layers.  The `tt_err_*`
cases give token_type_ids the executable must refuse (an id out of range,
a shape other than the ids'): exit 1, the input named (its file
input_token_type_ids.npy) on the line that also says what is wrong in the
executable's words (`expect_detail`); COMPILE_ERRORS holds the descriptions
refused for these keys (type_vocab_size on a decoder or an
encoder_decoder, without vocab_size; embedding_norm not a bool).

The `moe_*` cases (`ffn` of kind moe, Mixtral routing, in every layer of
every stack: moe.gate.weight [E, d_model] and moe.experts.{e}.linear1 /
linear2 for linear1 / linear2) are checked against (c), whose MoE block
runs every expert on every token through a dense [tokens, E] routing
matrix (a linformer one against (b)'s factored form with that routing),
against (b)'s Mixtral loop; the oracle's self-test checks each case's
routing margin on the harness's weights and inputs.  `Case.moe_gate`
makes one expert every token's first choice, or nobody's
(moe_gate_rows()); the `moe_load_*` cases write a weights file without an
expert tensor or with a transposed gate (MOE_WEIGHT_FAULTS): exit 1 naming
the tensor.  COMPILE_ERRORS holds the `ffn` values tfm-compile must refuse
(`moe_err_*`).

The `layers_*` cases (a decoder's per-layer kinds, `layers`: each entry
"attention" or {"kind": "attention", "attention": {...}, "ffn": {...}},
whose own kind objects replace the model-level ones for that layer) mix
full, sliding-window, block_sparse and performer layers with dense and MoE
FFNs, override model-level kinds, and pass a mask through window and
block_sparse layers or (layers_mask_refused_performer) to a model with a
performer layer, which refuses it.  They are checked against (a) when
every layer comes to one kind, (c) when every layer is full or a window,
else (b) with each layer in its kind's second form.  COMPILE_ERRORS holds
the `layers` values tfm-compile must refuse (`layers_err_*`; one of them
as JSON text, a duplicated key: CompileError.text).

The `mamba_*` cases (contract section 7's mamba layers: `layers` entries
"mamba" / {"kind": "mamba"} sized by the `mamba` key) are pure stacks
(no num_heads / d_ff, or given and unused) and Jamba-like hybrids with
full, sliding-window, performer, block_sparse attention and MoE FFN layers:
d_state 4, 8, 16, d_conv 1 to 4, expand 1 to 3, dt_rank explicit, "auto"
and left out, ids and float inputs, batched and not, pre and post norm,
rms_norm, sequences 1, 5, 13, 17, 33 and 64.  They are checked against (b)
in its second form (each mixer's scan in closed form, its convolution as
F.conv1d).  mamba_mask_refused / mamba_hybrid_mask_refused give a mask the
executable must refuse, mamba_load_* weights files it must refuse
(MAMBA_WEIGHT_FAULTS).  ctest runs them as e2e-mamba (-k mamba); the
sharded e2e suite leaves them out (--exclude mamba).

`wdtype_f16_range` (contract section 10, run_e2e.py --weight-dtype) has
weights at f16's edge (`Case.weight_edit`, weight_edit_rows()): 65519 in
layers.0.linear1.weight (rounds to 65504, the largest finite f16: no
error), 65520 in layers.1.linear1.weight (rounds beyond it: with
--weight-dtype=f16 a load error naming that tensor) and 1e6 in a
pos_embed.weight row no input reaches (a positional table is never
converted: no error); each linear1 row's hidden unit has a zero linear2
column, so none of these values reaches the output in any format.

`check_coverage()` asserts that every option of the contract is exercised.
"""

import itertools
import json
import zlib
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

import numpy as np


@dataclass(frozen=True)
class Input:
    seq: int
    batch: Optional[int] = 1      # None: no batch dimension in the .npy file
    dtype: str = "int64"          # int32 / int64 for token ids, float32 for embeddings

    def shape(self, d_model):
        s = () if self.batch is None else (self.batch,)
        s += (self.seq,)
        if self.dtype == "float32":
            s += (d_model,)
        return s


# Padding-mask contents (Mask.pattern).  Valid masks: every value 1, right
# padding (real tokens first), left padding (real tokens last), holes
# (padding inside, the first and last tokens real).  Masks the contract
# refuses, each from a right-padded mask: a 2, a 0.5 (float32), the last
# batch row all 0, one position short, the batch dimension added or left
# out against the input's.
MASK_PATTERNS = ("ones", "right", "left", "holes")
MASK_ERROR_PATTERNS = ("value2", "fraction", "empty_row", "short", "rank")
MASK_DTYPES = ("int32", "int64", "bool", "float32")


@dataclass(frozen=True)
class Mask:
    """A padding-mask input (contract section 8), shaped as the ids of the
    input it marks ([batch, seq], or [seq] without a batch dimension; the
    [batch, seq] of float embeddings [batch, seq, d_model])."""
    pattern: str = "right"        # MASK_PATTERNS, or one of MASK_ERROR_PATTERNS in a mask_err_ case
    dtype: str = "int64"          # MASK_DTYPES
    lengths: Optional[Tuple[int, int]] = None   # right/left: real tokens per row, lo..hi

    def make(self, rng, batch, seq):
        """The mask, from numpy Generator `rng`.  right/left: each row has
        lo..hi real tokens (`lengths`, default lo = max(1, seq // 3), hi =
        seq - 1); with batch 2 the two lengths differ, with 3 or more the
        last row has no padding.  holes: 1 to (seq - 2) // 2 padded
        positions among 1..seq-2 per row."""
        b, p = batch or 1, self.pattern
        m = np.ones((b, seq), dtype=np.int64)
        if p in ("right", "left") or p in MASK_ERROR_PATTERNS:
            lo, hi = self.lengths or (max(1, seq // 3), seq - 1)
            lens = rng.integers(lo, hi + 1, size=b)
            if b >= 3:
                lens[-1] = seq
            elif b == 2 and lens[0] == lens[1]:
                lens[1] = lo if lens[0] != lo else hi
            for r, n in enumerate(lens):
                m[r] = 0
                if p == "left":
                    m[r, seq - n:] = 1
                else:
                    m[r, :n] = 1
        elif p == "holes":
            for r in range(b):
                k = int(rng.integers(1, max(1, (seq - 2) // 2) + 1))
                m[r, rng.choice(np.arange(1, seq - 1), size=k, replace=False)] = 0
        if p == "value2":
            m[0, 0] = 2
        elif p == "empty_row":
            m[-1] = 0
        elif p == "short":
            m = m[:, :-1]
        elif p == "fraction":
            m = m.astype(np.float32)
            m[0, 0] = 0.5
        if (batch is None) != (p == "rank"):
            m = m[0]
        return np.ascontiguousarray(m.astype(self.dtype))


# Token type ids (TokenTypes.pattern): "segments" (BERT's sentence pairs:
# 0 up to a split point, 1 after it), "random" (uniform over the types).
# Refused ones (tt_err_ cases), each from "random": "range" (the id
# type_vocab_size at position [0, 1]), "short" (one position less than the
# ids).
TYPE_PATTERNS = ("segments", "random")
TYPE_ERROR_PATTERNS = ("range", "short")


@dataclass(frozen=True)
class TokenTypes:
    """The optional token_type_ids input of a model with type_vocab_size,
    shaped as its ids ([batch, seq] or [seq])."""
    pattern: str = "segments"     # TYPE_PATTERNS, or one of TYPE_ERROR_PATTERNS in a tt_err_ case
    dtype: str = "int64"          # int32 / int64

    def make(self, rng, batch, seq, n_types):
        """The ids, from numpy Generator `rng`: segments split each row at
        a point drawn from 1..seq-1 (every row has both types where seq >=
        2); random draws each id from 0..n_types-1."""
        b = batch or 1
        if self.pattern == "segments":
            t = np.zeros((b, seq), dtype=np.int64)
            for r in range(b):
                t[r, int(rng.integers(1, max(2, seq))):] = 1
        else:
            t = rng.integers(0, n_types, size=(b, seq)).astype(np.int64)
        if self.pattern == "range":
            t.flat[min(1, t.size - 1)] = n_types
        elif self.pattern == "short":
            t = t[:, :-1]
        if batch is None:
            t = t[0]
        return np.ascontiguousarray(t.astype(self.dtype))


@dataclass
class Case:
    name: str
    model: Dict
    inputs: Dict[str, Input]
    max_batch: Optional[int] = None     # --max-batch (default: the largest input batch, if > 1)
    max_seq_len: Optional[int] = None   # --max-seq-len (default: none passed, the model's max_seq_len)
    weight_dtype: str = "F32"           # dtype of every tensor in the weights file
    shared_embeddings: bool = False     # encoder_decoder: one `embed.weight` instead of src_/tgt_embed
    cache_bytes: Optional[tuple] = None  # (L1, L2) for --l1-cache-bytes / --l2-cache-bytes
    masks: Dict[str, Mask] = field(default_factory=dict)  # padding masks: mask / src_mask / tgt_mask
    # An error case: the executable must exit 1 with this string (the name
    # of the input it refuses) on stderr; run_args are added to its command.
    expect_error: Optional[str] = None
    run_args: Tuple[str, ...] = ()
    # With expect_error: what the stderr line naming the input must say as
    # well (each string), in the executable's words, and what the
    # reference's refusal says.
    expect_detail: Tuple[str, ...] = ()
    # block_sparse: the file dtype of every block_pattern (PATTERN_DTYPES).
    pattern_dtype: str = "I32"
    # A weights file the executable must refuse (WEIGHT_FAULTS; with
    # expect_error, the tensor's name on stderr).
    weight_fault: Optional[str] = None
    # token_type_ids (a model with type_vocab_size): None, not given (the
    # executable's default zeros).
    token_types: Optional[TokenTypes] = None
    # A mixture-of-experts model's gate rows made for the case (MOE_GATES,
    # moe_gate_rows()): ("dominant", e), expert e chosen by every token of
    # every layer, or ("starved", e), expert e chosen by none; None: the
    # gates as reference.make_weights draws them.
    moe_gate: Optional[Tuple[str, int]] = None
    # Weights edited for contract section 10's edges (WEIGHT_EDITS,
    # weight_edit_rows()): "f16_range", values at f16's largest finite
    # value and beyond; None: the weights as reference.make_weights draws them.
    weight_edit: Optional[str] = None
    note: str = ""

    def compile_args(self):
        args = []
        mb = self.effective_max_batch()
        if mb != 1:
            args += ["--max-batch", str(mb)]
        if self.max_seq_len is not None:
            args += ["--max-seq-len", str(self.max_seq_len)]
        if self.cache_bytes is not None:
            args += ["--l1-cache-bytes=%d" % self.cache_bytes[0],
                     "--l2-cache-bytes=%d" % self.cache_bytes[1]]
        return args

    def effective_max_batch(self):
        if self.max_batch is not None:
            return self.max_batch
        return max([i.batch or 1 for i in self.inputs.values()] + [1])

    def effective_max_seq_len(self):
        return self.max_seq_len if self.max_seq_len is not None else self.model["max_seq_len"]


def case_seed(name):
    """The case's seed: crc32 of its name (weights, inputs, masks)."""
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def case_inputs(case, cfg, seed):
    """The case's inputs, name -> np.ndarray: ids uniform over the
    vocabulary or float32 N(0, 1) embeddings from numpy's
    default_rng(seed), then its padding masks (cfg.mask_names' order) from
    default_rng([seed, 8]), so that a case without masks has the inputs it
    always had, then its token_type_ids (Case.token_types) from
    default_rng([seed, 9])."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in cfg.input_names:
        spec = case.inputs[name]
        shape = spec.shape(cfg.d_model)
        if spec.dtype == "float32":
            out[name] = rng.standard_normal(shape).astype(np.float32)
        else:
            out[name] = rng.integers(0, cfg.vocab_size, size=shape).astype(spec.dtype)
    mask_rng = np.random.default_rng([seed, 8])
    for name in cfg.mask_names:
        if name in case.masks:
            spec = case.inputs[cfg.mask_of[name]]
            out[name] = case.masks[name].make(mask_rng, spec.batch, spec.seq)
    if case.token_types is not None:
        spec = case.inputs[cfg.input_names[0]]
        out["token_type_ids"] = case.token_types.make(np.random.default_rng([seed, 9]), spec.batch, spec.seq,
                                                      cfg.type_vocab_size or 1)
    return out


def _model(name, arch, **kw):
    m = dict(name=name, architecture=arch, d_model=32, num_heads=4, d_ff=64, max_seq_len=16)
    if arch == "encoder_decoder":
        if not ({"num_layers", "num_encoder_layers", "num_decoder_layers"} & set(kw)):
            m["num_layers"] = 2
    else:
        m["num_layers"] = 2
    m.update(kw)
    return m


def enc(name, inputs, model=None, **case_kw):
    return Case(name, _model(name, "encoder", **(model or {})), inputs, **case_kw)


def dec(name, inputs, model=None, **case_kw):
    return Case(name, _model(name, "decoder", **(model or {})), inputs, **case_kw)


def encdec(name, inputs, model=None, **case_kw):
    return Case(name, _model(name, "encoder_decoder", **(model or {})), inputs, **case_kw)


def ids(seq, batch=1, dtype="int64"):
    return {"input": Input(seq, batch, dtype)}


def floats(seq, batch=1):
    return {"input": Input(seq, batch, "float32")}


def src_tgt(src, tgt, batch=1, dtype="int64", tgt_dtype=None):
    return {"src": Input(src, batch, dtype), "tgt": Input(tgt, batch, tgt_dtype or dtype)}



LLAMA = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu", ffn_gated=True,
             bias=False)   # + num_kv_heads; final norm by default (pre)


# The mask_err_ cases' model: as small as it gets (1 layer, d_model 16).
_TINY_FLOAT = dict(d_model=16, num_heads=2, d_ff=32, num_layers=1)
_TINY = dict(_TINY_FLOAT, vocab_size=20)

# BERT's embeddings and layers (+ type_vocab_size): post norm (the
# default), learned positions, gelu, the embedding LayerNorm.
_BERT = dict(vocab_size=50, positional="learned", activation="gelu", embedding_norm=True)


def window(w, g=None, **kw):
    """Contract section 7's sliding window (Longformer) on every
    self-attention: `attention: {kind: sliding_window, window: w,
    global_tokens: g}` (g None: the key left out, its default 0)."""
    a = dict(kind="sliding_window", window=w)
    if g is not None:
        a["global_tokens"] = g
    return dict(kw, attention=a)


def linformer(k, **kw):
    """Contract section 7's Linformer on every self-attention: `attention:
    {kind: linformer, k: k}`; the model needs `causal` false (a decoder's
    and an encoder_decoder's default is true)."""
    return dict(kw, attention=dict(kind="linformer", k=k))


def performer(m, **kw):
    """Contract section 7's Performer (FAVOR+) on every self-attention:
    `attention: {kind: performer, features: m}` (scaled_dot scores only;
    causal or not)."""
    return dict(kw, attention=dict(kind="performer", features=m))


def block_sparse(b, wb=None, gb=None, r=None, **kw):
    """Contract section 7's block_sparse (BigBird) on every self-attention:
    `attention: {kind: block_sparse, block: b, window_blocks: wb,
    global_blocks: gb, random_blocks: r}` (None: the key left out, its
    default 1, 1, 0)."""
    a = dict(kind="block_sparse", block=b)
    for k, v in (("window_blocks", wb), ("global_blocks", gb), ("random_blocks", r)):
        if v is not None:
            a[k] = v
    return dict(kw, attention=a)


def moe(e, k, **kw):
    """Contract section 7's mixture of experts in every layer of every
    stack: `ffn: {kind: moe, experts: e, top_k: k}`."""
    return dict(kw, ffn=dict(kind="moe", experts=e, top_k=k))


def layer(attention=None, ffn=None):
    """A `layers` entry (contract section 7, a decoder's per-layer kinds):
    {"kind": "attention"} with the layer's own `attention` and `ffn` kind
    objects where given (each replaces the model-level one for this layer;
    left out: the model-level kind)."""
    e = {"kind": "attention"}
    if attention is not None:
        e["attention"] = attention
    if ffn is not None:
        e["ffn"] = ffn
    return e


def att_window(w, g=None):
    return window(w, g)["attention"]


def att_block_sparse(b, wb=None, gb=None, r=None):
    return block_sparse(b, wb, gb, r)["attention"]


def att_performer(m):
    return performer(m)["attention"]


FULL = {"kind": "full"}
DENSE = {"kind": "dense"}


def ffn_moe(e, k):
    return moe(e, k)["ffn"]


# Case.moe_gate's kinds (moe_gate_rows()).
MOE_GATES = ("dominant", "starved")


def moe_gate_rows(cfg, arrays, how, expert):
    """The weights `arrays` (name -> numpy array) with row `expert` of
    every layer's moe.gate.weight replaced so that its logit is the same
    constant for every input: the FFN reads a LayerNorm's output y = n * w
    + b (w, b the norm's weight and bias: norm2 of an encoder layer or
    norm3 of a cross-attention layer with pre norm, norm1 / norm2 with
    post norm), whose n sums to 0 and has norm at most sqrt(d_model), so
    the row c / w gives every token the logit c * sum(b / w), and any
    other row g_o a logit of at most |g_o| (sqrt(d_model) max|w| + |b|) in
    size.  c is chosen for a logit 1 above ("dominant": the expert is
    every token's first choice) or 1 below ("starved": never chosen, as
    top_k < experts) every other logit any input can give."""
    out = dict(arrays)
    d = cfg.d_model
    for name in [k for k in arrays if k.endswith("moe.gate.weight")]:
        prefix = name[: -len("moe.gate.weight")]
        cross = cfg.is_encdec and prefix.startswith("decoder.")
        norm = ("norm3." if cross else "norm2.") if cfg.norm == "pre" else ("norm2." if cross else "norm1.")
        w = np.asarray(arrays[prefix + norm + "weight"], np.float64)
        b = np.asarray(arrays[prefix + norm + "bias"], np.float64)
        g = np.array(arrays[name], np.float64)
        bound = max(np.linalg.norm(g[o]) for o in range(g.shape[0]) if o != expert) * (
            np.sqrt(d) * np.max(np.abs(w)) + np.linalg.norm(b))
        target = (bound + 1.0) * (1.0 if how == "dominant" else -1.0)
        g[expert] = target / np.sum(b / w) / w
        out[name] = g.astype(np.float32)
    return out


def moe_gate_constant(cfg, arrays):
    """The smallest |sum(b / w)| over the layers (moe_gate_rows()' constant
    before scaling): near 0, the row c / w would need a huge c."""
    out = []
    for name in [k for k in arrays if k.endswith("moe.gate.weight")]:
        prefix = name[: -len("moe.gate.weight")]
        cross = cfg.is_encdec and prefix.startswith("decoder.")
        norm = ("norm3." if cross else "norm2.") if cfg.norm == "pre" else ("norm2." if cross else "norm1.")
        out.append(abs(float(np.sum(np.asarray(arrays[prefix + norm + "bias"], np.float64)
                                    / np.asarray(arrays[prefix + norm + "weight"], np.float64)))))
    return min(out) if out else 0.0


# block_sparse's block_pattern in the weights file: int32 or int64 ids.
# Case.weight_edit's kinds (weight_edit_rows()).
WEIGHT_EDITS = ("f16_range",)
F16_EDGE_OK = 65519.0       # rounds to 65504, f16's largest finite value
F16_EDGE_OVER = 65520.0     # rounds beyond it (to inf): an f16 load error
F16_EDGE_TABLE = 1.0e6      # in a positional table, which no format converts


def weight_edit_rows(cfg, arrays, how):
    """Case.weight_edit "f16_range" (contract section 10): in a decoder or
    encoder of 2 dense layers or more with learned positions,
    layers.0.linear1.weight[5, 3] = 65519 and layers.1.linear1.weight[7, 10]
    = 65520, each with its hidden unit's linear2 column (5, 7) zero, so that
    neither reaches the output, whatever the weight format; and
    pos_embed.weight[max_seq_len - 1, 0] = 1e6, a position no input reaches
    (every input is shorter than max_seq_len).  With --weight-dtype=f16
    layers.1.linear1.weight must be refused at load (and only it: 65519
    rounds to 65504, and positional tables are never converted)."""
    if how != "f16_range":
        raise ValueError("weight edit %r" % how)
    arrays = dict(arrays)

    def edit(name, fn):
        a = np.array(arrays[name], dtype=np.float32, copy=True)
        fn(a)
        arrays[name] = a
    edit("layers.0.linear1.weight", lambda a: a.__setitem__((5, 3), F16_EDGE_OK))
    edit("layers.0.linear2.weight", lambda a: a.__setitem__((slice(None), 5), 0.0))
    edit("layers.1.linear1.weight", lambda a: a.__setitem__((7, 10), F16_EDGE_OVER))
    edit("layers.1.linear2.weight", lambda a: a.__setitem__((slice(None), 7), 0.0))
    edit("pos_embed.weight", lambda a: a.__setitem__((cfg.max_seq_len - 1, 0), F16_EDGE_TABLE))
    return arrays


PATTERN_DTYPES = ("I32", "I64")
# Weights files the executable must refuse (Case.weight_fault): every
# block_pattern stored as F32 (ids as floats); every block_pattern
# transposed ([R, rows]: the same element count, rows != R); a
# block_pattern tensor [rows, 1] in the file of a model with random_blocks
# 0 (an unexpected tensor); the first linear2.bias stored as I32 (a float
# weight as integers).
WEIGHT_FAULTS = ("pattern_f32", "pattern_transposed", "pattern_unexpected", "float_as_i32")
# Mixture-of-experts weights files the executable must refuse: the first
# layer's moe.experts.1.linear2.weight left out (a missing expert tensor);
# the first layer's moe.gate.weight transposed ([d_model, E] for [E,
# d_model]).
MOE_WEIGHT_FAULTS = ("moe_missing_expert", "moe_gate_transposed")
# Mamba weights files the executable must refuse: the first mamba layer's
# mixer.conv1d.weight stored as [d_inner, d_conv] (the singleton axis of
# [d_inner, 1, d_conv] dropped: the same values); its mixer.A_log left out.
MAMBA_WEIGHT_FAULTS = ("mamba_conv_2d", "mamba_missing_a_log")


def stack_lengths(cfg, case_inputs_spec):
    """Run-time length of each stack's self-attention, by the first part of
    its weights' names: {"layers": seq} or {"encoder": src, "decoder":
    tgt}."""
    if cfg.is_encdec:
        return {"encoder": case_inputs_spec["src"].seq, "decoder": case_inputs_spec["tgt"].seq}
    return {"layers": case_inputs_spec["input"].seq}


# The planted ids of block_patterns(), row qb's by (qb + layer) % 8.
_PLANTS = ("dup", "neg1", "past_run", "self", "big", "past_file", "neg_small", "valid")


def block_patterns(cfg, seed, lengths, dtype="I32"):
    """The block_pattern of every self-attention (name -> int32 / int64
    numpy array [ceil(max_seq_len / B), R], in the listing's order) for a
    case: numpy default_rng([seed, 11, layer]) draws ids uniform over the
    run-time block count nb = ceil(n / B) of the layer's stack (`lengths`,
    stack_lengths()), so most are read, then row qb's last column (with R
    = 1, odd rows only) gets, by
    _PLANTS[(qb + layer) % 8]: a duplicate of the row's first id (R >= 2),
    -1, nb (the first id past the run-time blocks), qb itself (its own
    block, already in its window: counted once), an extreme (I32: 2^31 - 1
    or -2^31; I64: 2^32 + a valid id or -2^32 + a valid id, which read as
    int32 would be v), rows - 1 when nb < rows (a block that only the
    compiled length has: ignored at run time) or else rows + 3, -2 or -3,
    or nothing.  (v, the extremes' valid id, is a block the row reads by
    no other rule where there is one.)  {} without random blocks.  With
    section 7's `layers`, each block_sparse layer by its own rule (li
    counts the layers that have a pattern)."""
    import reference
    npdt = np.int32 if dtype == "I32" else np.int64
    out = {}
    names = [k for k in reference.expected_weights(cfg) if k.endswith("self_attn.block_pattern")]
    for li, name in enumerate(names):
        lc = cfg.kinds_of(name)
        rows, r = reference.expected_weights(cfg)[name]
        nb = -(-lengths[name.split(".")[0]] // lc.block)
        rng = np.random.default_rng([seed, 11, li])
        ids = rng.integers(0, nb, size=(rows, r)).astype(np.int64)
        for qb in range(rows):
            if r == 1 and qb % 2 == 0:
                continue        # one column: every other row keeps its drawn id
            kind, c = _PLANTS[(qb + li) % len(_PLANTS)], r - 1
            if kind == "dup" and r >= 2:
                ids[qb, c] = ids[qb, 0]
            elif kind == "neg1":
                ids[qb, c] = -1
            elif kind == "past_run":
                ids[qb, c] = nb
            elif kind == "self":
                ids[qb, c] = qb
            elif kind == "big":
                # v: a block the row would not read otherwise, so that
                # reading the id as int32 (v) shows.
                others = [kb for kb in range(nb) if abs(kb - qb) > lc.window_blocks
                          and kb >= lc.global_blocks and kb not in ids[qb, :c].tolist()]
                v = others[0] if others else 0
                if dtype == "I32":
                    ids[qb, c] = 2 ** 31 - 1 if qb % 2 else -2 ** 31
                else:
                    ids[qb, c] = (2 ** 32 + v) if qb % 2 else (-2 ** 32 + v)
            elif kind == "past_file":
                ids[qb, c] = rows - 1 if nb < rows else rows + 3
            elif kind == "neg_small":
                ids[qb, c] = -2 - qb % 2
        out[name] = ids.astype(npdt)
    return out


def case_block_patterns(case, cfg):
    """The case's block_patterns() (its seed, lengths and pattern dtype)."""
    return block_patterns(cfg, case_seed(case.name), stack_lengths(cfg, case.inputs), case.pattern_dtype)


def output_stack_patterns(cfg, patterns):
    """The block_pattern of each self-attention of the output's stack (the
    decoder's of an encoder_decoder), in layer order (None for a layer
    without one), for reference.attended_rows; None without random
    blocks."""
    import reference
    return reference.output_stack_patterns(cfg, patterns)


def pattern_facts(cfg, patterns, lengths):
    """What the case's patterns hold, on the rows its run-time query blocks
    read: a set of "id<0", "id=run-time blocks", "id>=rows", "id in
    [run-time blocks, rows)", "id duplicate", "id beyond int32" (I64),
    "id int32 extreme", and "random blocks matter" (some valid id adds a
    key block that neither the window nor the global blocks give its row,
    an earlier one in a causal stack)."""
    facts = set()
    for name, p in patterns.items():
        lc = cfg.kinds_of(name)     # the layer's own rule (section 7's `layers`)
        rows = p.shape[0]
        nb = -(-lengths[name.split(".")[0]] // lc.block)
        for qb in range(min(nb, rows)):
            row = [int(v) for v in p[qb]]
            if len(set(row)) < len(row):
                facts.add("id duplicate")
            for v in row:
                if v < 0:
                    facts.add("id<0")
                if v == nb:
                    facts.add("id=run-time blocks")
                if v >= rows:
                    facts.add("id>=rows")
                if nb <= v < rows:
                    facts.add("id in [run-time blocks, rows)")
                if not -2 ** 31 <= v < 2 ** 31:
                    facts.add("id beyond int32")
                if v in (2 ** 31 - 1, -2 ** 31):
                    facts.add("id int32 extreme")
                causal = cfg.causal and not name.startswith("encoder.")
                if 0 <= v < nb and abs(v - qb) > lc.window_blocks and v >= lc.global_blocks \
                        and qb >= lc.global_blocks and (v < qb or not causal):
                    facts.add("random blocks matter")
    return facts


CASES = [
    # ---- encoder (BERT-like) ------------------------------------------------
    enc("enc_defaults_float", floats(7),
        note="all defaults: post, sinusoidal, relu, scaled_dot, no final norm, float inputs"),
    enc("enc_pre_learned_gelu_ids64", ids(13, dtype="int64"),
        dict(vocab_size=50, positional="learned", norm="pre", activation="gelu"),
        note="pre-norm (final norm by default), learned positions, tied LM head"),
    enc("enc_post_final_norm_unbatched", floats(7, batch=None),
        dict(final_norm=True, activation="gelu_tanh")),
    enc("enc_pre_no_final_norm_eps", floats(13, batch=2),
        dict(norm="pre", final_norm=False, norm_eps=1e-6, activation="gelu"),
        note="final_norm override for pre, non-default norm_eps, batch 2"),
    enc("enc_causal_hidden_ids32", ids(7, dtype="int32"),
        dict(vocab_size=40, causal=True, lm_head=False),
        note="explicitly causal encoder; vocab without LM head gives hidden states"),
    enc("enc_score_dot", floats(13), dict(attention_score="dot", num_heads=2),
        note="dk 16, unscaled scores"),
    enc("enc_score_bilinear_ids", ids(7), dict(vocab_size=50, attention_score="bilinear")),
    enc("enc_score_additive", floats(7), dict(attention_score="additive", norm="pre"),
        note="additive_dim defaults to dk = 8"),
    enc("enc_score_additive_dim12", ids(13, batch=None), dict(
        vocab_size=33, attention_score="additive", additive_dim=12, activation="gelu")),
    enc("enc_positional_none", floats(7), dict(positional="none", norm="pre")),
    enc("enc_embedding_scale_ids_unbatched", ids(13, batch=None), dict(
        vocab_size=50, embedding_scale="sqrt_d_model")),
    enc("enc_dk24_dff50", floats(13), dict(d_model=48, num_heads=2, d_ff=50)),
    enc("enc_d96_h3", ids(7), dict(d_model=96, num_heads=3, d_ff=50, vocab_size=70,
                                   norm="pre", activation="gelu")),
    enc("enc_dk80", floats(5), dict(d_model=160, num_heads=2, d_ff=50, num_layers=1)),
    enc("enc_odd_d_model21", floats(7), dict(d_model=21, num_heads=3, d_ff=50),
        note="odd d_model (sinusoidal table's last column is a sin) and dk 7"),
    enc("enc_seq1", floats(1), dict(norm="pre")),
    enc("enc_max_seq_len_flag", floats(13), dict(max_seq_len=8), max_seq_len=16,
        note="--max-seq-len above the model's max_seq_len (sinusoidal positions allow it)"),
    enc("enc_gemm_l2_blocks", floats(13, batch=2), dict(
        d_model=96, num_heads=3, d_ff=50, max_seq_len=64, norm="pre"),
        cache_bytes=(32 * 1024, 48 * 1024),
        note="a 48 KiB L2: the Highway backend's GEMMs go in L2 blocks of 2 panels "
             "(9 panels of Q/K/V: 2+2+2+2+1); 26 rows, a partial last row block"),

    # ---- decoder (GPT-like) ----------------------------------------------------
    dec("dec_pre_rope_half_gelu_tanh", ids(13, dtype="int32"), dict(
        vocab_size=64, positional="rope", norm="pre", activation="gelu_tanh")),
    # d_ff 1: the second linear's K is 1, an outer product (no register
    # tile's k loop on the LLVM backend).
    dec("dec_dff1", ids(6, batch=2), dict(vocab_size=64, d_ff=1, norm="pre")),
    dec("dec_rope_interleaved_base500", ids(7), dict(
        vocab_size=64, positional="rope", rope_style="interleaved", rope_base=500.0)),
    dec("dec_rope_half_bilinear_dk24", ids(13), dict(
        d_model=48, num_heads=2, d_ff=50, vocab_size=64, positional="rope",
        rope_base=1000000.0, attention_score="bilinear", norm="pre")),
    dec("dec_rope_interleaved_additive", floats(7), dict(
        positional="rope", rope_style="interleaved", attention_score="additive",
        additive_dim=20)),
    dec("dec_rope_dot_dk80", ids(7), dict(
        d_model=80, num_heads=1, d_ff=50, num_layers=1, vocab_size=40,
        positional="rope", attention_score="dot")),
    dec("dec_not_causal_learned", ids(7), dict(vocab_size=64, positional="learned", causal=False)),
    dec("dec_untied_head", ids(13), dict(
        vocab_size=64, positional="learned", norm="pre", tie_embeddings=False)),
    dec("dec_no_lm_head", ids(7), dict(vocab_size=64, norm="pre", lm_head=False)),
    dec("dec_batch2", ids(7, batch=2, dtype="int32"), dict(vocab_size=64, norm="pre", positional="rope")),
    dec("dec_batch3_of_max4", ids(5, batch=3), dict(vocab_size=64, activation="gelu"), max_batch=4,
        note="run-time batch below the compiled maximum"),
    dec("dec_seq1_unbatched", ids(1, batch=None), dict(vocab_size=64, norm="pre", positional="rope")),
    dec("dec_post_final_norm_float", floats(13), dict(final_norm=True, activation="gelu")),
    dec("dec_weights_f16", ids(13), dict(vocab_size=64, norm="pre", positional="rope"),
        weight_dtype="F16"),
    dec("dec_weights_bf16", ids(7), dict(vocab_size=64, positional="learned",
                                         tie_embeddings=False), weight_dtype="BF16"),

    # ---- encoder_decoder (nn.Transformer-like) --------------------------------
    encdec("encdec_defaults", src_tgt(7, 5), dict(
        vocab_size=64, num_encoder_layers=2, num_decoder_layers=1),
        note="post, sinusoidal, causal decoder, separate src/tgt embeddings, head tied to tgt"),
    encdec("encdec_shared_embed_scale", src_tgt(13, 7, dtype="int32"), dict(
        vocab_size=64, embedding_scale="sqrt_d_model", activation="gelu"),
        shared_embeddings=True, note="one embed.weight for src, tgt and the tied head"),
    encdec("encdec_pre_learned_untied", src_tgt(7, 13, tgt_dtype="int32"), dict(
        vocab_size=64, positional="learned", norm="pre", tie_embeddings=False,
        activation="gelu_tanh")),
    encdec("encdec_float_batch2_final_norm", src_tgt(7, 5, batch=2, dtype="float32"), dict(
        final_norm=True), note="like nn.Transformer's defaults: final norm on both stacks"),
    encdec("encdec_not_causal_unbatched_hidden", src_tgt(7, 13, batch=None), dict(
        vocab_size=64, causal=False, lm_head=False)),
    encdec("encdec_rope_additive", src_tgt(13, 7), dict(
        vocab_size=64, positional="rope", attention_score="additive", additive_dim=16,
        num_encoder_layers=2, num_decoder_layers=1),
        note="rope on both self-attentions, never on cross-attention"),
    encdec("encdec_bilinear_pre_no_final_norm", src_tgt(5, 7, dtype="float32"), dict(
        attention_score="bilinear", norm="pre", final_norm=False, positional="none")),
    encdec("encdec_dot_rope_interleaved_dk24", src_tgt(13, 5), dict(
        d_model=48, num_heads=2, d_ff=50, vocab_size=50, attention_score="dot",
        positional="rope", rope_style="interleaved", rope_base=2000.0)),
    encdec("encdec_tgt_seq1", src_tgt(13, 1), dict(vocab_size=64, norm="pre")),
    encdec("encdec_d96_h3_weights_bf16", src_tgt(7, 5), dict(
        d_model=96, num_heads=3, d_ff=50, num_layers=1, vocab_size=70),
        weight_dtype="BF16", shared_embeddings=True),
    encdec("encdec_gemm_tiling_small_caches", src_tgt(13, 7, batch=2), dict(
        d_model=96, num_heads=3, d_ff=50, vocab_size=64, max_seq_len=64),
        cache_bytes=(1024, 48 * 1024),
        note="a 48 KiB L2 and a 1 KiB L1: L2 blocks in the GEMMs inside the "
             "cross-attention (K and V of the memory: in_proj's 2nd and 3rd "
             "segments), no prefetch"),
    encdec("encdec_gemm_prefetch", src_tgt(13, 7), dict(
        d_model=64, num_heads=2, d_ff=96, vocab_size=64),
        cache_bytes=(1 << 20, 1 << 20),
        note="a 1 MiB L1: every GEMM of several panels prefetches the next one, "
             "the cross-attention's K and V of the memory too"),
    encdec("encdec_gemm_l2_prefetch", src_tgt(13, 7, batch=2), dict(
        d_model=96, num_heads=3, d_ff=50, vocab_size=64),
        cache_bytes=(1024, 1 << 20),
        note="a 1 KiB L1 and 1 MiB L2: panel by panel, every row block of a "
             "GEMM of several panels prefetches its share of the next panel "
             "into L2, in the cross-attention's K and V of the memory too"),
    encdec("encdec_weights_f16_batch3", src_tgt(5, 7, batch=3), dict(
        vocab_size=64, positional="learned", norm="pre"), max_batch=3, weight_dtype="F16"),

    # ---- contract section 11: norm_type, silu, ffn_gated, num_kv_heads, bias ----
    dec("dec_llama_gqa_untied", ids(7, batch=2), dict(
        LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44, tie_embeddings=False),
        note="llama-like: pre rms norms (and the final one), gated silu (linear1 88 rows), rope, "
             "2 kv heads of 4 (in_proj 64 rows), no biases, untied head"),
    dec("dec_llama_gqa_dk12_tied_unbatched", ids(13, batch=None, dtype="int32"), dict(
        LLAMA, d_model=48, num_heads=4, num_kv_heads=2, d_ff=45, vocab_size=50),
        note="dk 12, d_ff 45, tied head, no batch dimension"),
    dec("dec_mqa_interleaved_eps", ids(5), dict(
        LLAMA, vocab_size=64, num_kv_heads=1, rope_style="interleaved", norm_eps=1e-6),
        note="multi-query (one kv head), interleaved rope"),
    dec("dec_mqa_seq1_unbatched", ids(1, batch=None), dict(
        LLAMA, vocab_size=64, num_kv_heads=1, tie_embeddings=False)),
    dec("dec_gqa_bias_post_learned", ids(7, batch=3), dict(
        vocab_size=64, num_kv_heads=2, activation="gelu", positional="learned"), max_batch=4,
        note="GQA with biases (in_proj_bias 64), post layer norms"),
    dec("dec_gqa_rope_bilinear_float", floats(13), dict(
        positional="rope", attention_score="bilinear", num_kv_heads=2, norm="pre",
        norm_type="rms_norm"), note="score.weight stays per query head [4, 8, 8]"),
    dec("dec_llama_gemm_l2_blocks", ids(13, batch=2), dict(
        LLAMA, d_model=96, num_heads=6, num_kv_heads=2, d_ff=50, vocab_size=64, max_seq_len=64),
        cache_bytes=(32 * 1024, 48 * 1024),
        note="small caches as enc_gemm_l2_blocks: in_proj (6+2*2)*16 = 160 rows, gated linear1 100 rows"),
    dec("dec_llama_weights_bf16", ids(7), dict(LLAMA, vocab_size=64, num_kv_heads=2),
        weight_dtype="BF16"),
    enc("enc_rms_post_final_norm", floats(13, batch=2), dict(
        norm_type="rms_norm", final_norm=True, activation="gelu"),
        note="rms norms after each sublayer, and a final one"),
    enc("enc_geglu_pre", floats(7, batch=2), dict(norm="pre", ffn_gated=True, activation="gelu", d_ff=40),
        note="GeGLU: gated exact gelu, layer norms, biases"),
    enc("enc_silu_learned_ids", ids(13), dict(
        vocab_size=50, positional="learned", activation="silu", lm_head=False),
        note="silu, not gated"),
    enc("enc_mqa_additive_nobias", floats(5), dict(
        attention_score="additive", additive_dim=12, num_kv_heads=1, bias=False, norm="pre")),
    enc("enc_gated_silu_d21_unbatched", ids(7, batch=None), dict(
        d_model=21, num_heads=3, num_kv_heads=1, d_ff=25, vocab_size=33, ffn_gated=True,
        activation="silu"), note="dk 7, gated d_ff 25, one kv head, biases"),
    encdec("encdec_llama_gqa_nobias", src_tgt(7, 5, batch=2), dict(
        LLAMA, vocab_size=64, num_kv_heads=2, num_encoder_layers=2, num_decoder_layers=1),
        note="2 kv heads in self- and cross-attention, no biases anywhere"),
    encdec("encdec_mqa_nobias_shared_unbatched", src_tgt(13, 1, batch=None), dict(
        vocab_size=64, num_kv_heads=1, bias=False, final_norm=True, activation="silu"),
        shared_embeddings=True, note="post layer norms, tgt of length 1"),
    encdec("encdec_gqa_rms_dot_dk12_float", src_tgt(5, 7, dtype="float32"), dict(
        d_model=48, num_heads=4, num_kv_heads=2, d_ff=45, norm_type="rms_norm", norm="post",
        attention_score="dot", ffn_gated=True, activation="gelu_tanh", positional="none")),

    # ---- contract section 7: sliding-window attention (Longformer) ------------
    # Every self-attention of every stack (the encoder's of an encoder_decoder
    # too); cross-attention stays full; rope rotates q and k first.  Query i
    # attends key j when |i - j| <= W, or i < G, or j < G (and j <= i when
    # causal).  They run on both backends like every case (ctest e2e and
    # e2e-llvm).
    enc("win_enc_w2", floats(12), window(2),
        note="encoder, not causal, W 2 (G left out: 0), seq 12"),
    dec("win_dec_w3", ids(13, batch=None), window(3, vocab_size=64),
        note="causal decoder, W 3, ids without a batch dimension, tied LM head"),
    enc("win_enc_w0", floats(7, batch=2), window(0, 0, d_model=48, num_heads=2, d_ff=50),
        note="W 0: each token attends itself only; dk 24, batch 2"),
    enc("win_enc_wbig", ids(13), window(20, vocab_size=50, lm_head=False),
        note="W 20 >= seq 13: the same as full attention"),
    dec("win_dec_wseq", ids(13), window(12, vocab_size=64, norm="pre"),
        note="W 12 = seq - 1, the smallest window that reaches every key: full (causal) attention"),
    enc("win_enc_g1", floats(13), window(2, 1, d_model=21, num_heads=3, d_ff=50, norm="pre",
                                         activation="gelu"),
        note="G 1: token 0 global both ways; d_model 21, dk 7"),
    dec("win_dec_g1", ids(13, batch=2, dtype="int32"), window(3, 1, vocab_size=64, positional="rope"),
        note="causal, G 1, rope half, batch 2"),
    enc("win_enc_g3", floats(13, batch=2), window(1, 3, d_model=96, num_heads=3, d_ff=50),
        note="G 3 (more than the window), d_model 96, 3 heads, batch 2"),
    dec("win_dec_g3", ids(13), window(2, 3, vocab_size=64, positional="learned", tie_embeddings=False),
        note="causal, G 3, learned positions, untied head"),
    dec("win_dec_gbig", floats(13), window(1, 16, final_norm=True),
        note="G 16 >= seq 13: every token global, full causal attention; float inputs"),
    enc("win_enc_dot", floats(12), window(2, 2, attention_score="dot", num_heads=2),
        note="unscaled dot scores, dk 16"),
    dec("win_dec_bilinear", ids(13), window(2, vocab_size=64, positional="rope", rope_style="interleaved",
                                            attention_score="bilinear", norm="pre"),
        note="bilinear scores over interleaved-rope q and k, W 2"),
    enc("win_enc_additive", ids(13, batch=None), window(1, 1, vocab_size=33, positional="rope",
                                                         attention_score="additive", additive_dim=12),
        note="additive scores over rotated q and k, tied LM head, no batch dimension"),
    encdec("win_encdec", src_tgt(13, 11, batch=2), window(2, 1, vocab_size=64),
           note="both self-attentions windowed (the encoder's not causal, the decoder's causal), "
                "cross-attention full"),
    encdec("win_encdec_rope_add", src_tgt(12, 7, batch=None, dtype="float32"), window(
        1, None, positional="rope", attention_score="additive", norm="pre",
        num_encoder_layers=2, num_decoder_layers=1),
        note="float src/tgt without a batch dimension, rope on both self-attentions"),
    dec("win_dec_gqa", ids(13, batch=2), window(3, 1, **dict(LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44)),
        note="llama-like, 2 kv heads of 4, W 3, G 1"),
    enc("win_enc_long", floats(100), window(7, 2, max_seq_len=128),
        note="seq 100: key blocks of 16..64 keys with a partial last one; W 7, G 2"),
    dec("win_dec_long", ids(100, batch=2), window(7, 2, vocab_size=64, max_seq_len=128, positional="rope",
                                                   norm="pre"),
        note="causal, seq 100, W 7, G 2, rope, batch 2"),
    dec("win_kind_full", ids(7), dict(vocab_size=64, attention={"kind": "full"}),
        note="attention {kind: full} written out: the same as no key"),

    # ---- contract section 7: Linformer -----------------------------------------
    # Every self-attention of every stack (the decoder's of an encoder_decoder
    # too: the `attention` key is for all of them, and so `causal` must be
    # false); cross-attention stays full.  K' = E_n K and V' = F_n V, E_n the
    # first n columns of the layer's proj_e [k, max_seq_len] (n the run-time
    # length), after the in-projection, its bias and rope; each layer has its
    # own E and F, shared by its heads.
    enc("lin_enc_k4", floats(12), linformer(4),
        note="encoder, k 4, seq 12 of max_seq_len 16 (E_n: the first 12 of 16 columns), 2 layers"),
    enc("lin_enc_k20", ids(12, batch=2, dtype="int32"), linformer(20, vocab_size=50),
        note="k 20 > seq 12: K' and V' have more rows than there are keys; ids, tied LM head"),
    enc("lin_enc_k70", floats(40, batch=2), linformer(70, max_seq_len=48),
        note="k 70: more than two of the Highway projection's blocks of 32 rows"),
    enc("lin_enc_k1", floats(7, batch=None), linformer(1, norm="pre"),
        note="k 1: one projected row, every query's output is F_n V's row; no batch dimension"),
    enc("lin_enc_seq_max", floats(16, batch=2), linformer(8, activation="gelu"),
        note="seq 16 = max_seq_len: every column of E and F; batch 2"),
    enc("lin_enc_seq1", floats(1), linformer(4, norm="pre"),
        note="seq 1: E_1 is E's first column"),
    enc("lin_enc_k_eq_seq", floats(13), linformer(13, final_norm=True),
        note="k 13 = seq 13 (E_n square, not the identity)"),
    enc("lin_enc_rope_half", ids(13), linformer(6, vocab_size=50, positional="rope", norm="pre",
                                                 tie_embeddings=False),
        note="rope half: k rotated before the projection (K' rows have no position); untied head"),
    enc("lin_enc_rope_interleaved", floats(12, batch=None), linformer(
        5, positional="rope", rope_style="interleaved", rope_base=500.0, num_layers=3),
        note="interleaved rope, 3 layers (each its own E and F), no batch dimension"),
    enc("lin_enc_mqa_dk12", floats(12, batch=2), linformer(4, d_model=48, num_heads=4, num_kv_heads=1,
                                                            d_ff=50),
        note="one kv head for 4 query heads (E and F shared by all), dk 12, biases"),
    enc("lin_enc_d96_bf16", ids(13, batch=None), linformer(10, d_model=96, num_heads=3, d_ff=50,
                                                            vocab_size=70, positional="learned"),
        weight_dtype="BF16", note="BF16 weights (proj_e / proj_f too), dk 32, learned positions"),
    dec("lin_dec_not_causal", ids(13, batch=2), linformer(8, vocab_size=64, causal=False, norm="pre",
                                                          positional="learned"),
        note="a decoder with causal false (linformer is never causal), learned positions, batch 2"),
    dec("lin_dec_llama_gqa", ids(13, batch=2), linformer(
        6, **dict(LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44, causal=False)),
        note="llama-like, not causal: 2 kv heads of 4, rope, rms norms, gated silu, no biases"),
    encdec("lin_encdec_not_causal", src_tgt(13, 9, batch=2), linformer(9, vocab_size=64, causal=False),
           note="both self-attentions linformer (encoder n 13, decoder n 9 = k), cross-attention full; "
                "the description needs causal false"),
    encdec("lin_encdec_rope_float", src_tgt(12, 7, batch=None, dtype="float32"), linformer(
        3, causal=False, positional="rope", norm="pre", num_encoder_layers=2, num_decoder_layers=1),
        note="float src/tgt without a batch dimension, rope on both self-attentions"),
    enc("lin_enc_long", floats(100), linformer(32, max_seq_len=128),
        note="seq 100 of max_seq_len 128, k 32"),
    dec("lin_dec_long", ids(100, batch=2), linformer(32, vocab_size=64, max_seq_len=128, causal=False,
                                                     positional="rope", norm="pre"),
        note="not causal, seq 100 of 128, k 32, rope, batch 2"),

    # ---- contract section 7: Performer (FAVOR+) -----------------------------------
    # Every self-attention of every stack (an encoder_decoder's encoder never
    # causal, its decoder causal by default); cross-attention stays full.
    # phi(x) = exp(x W_h^T - |x|^2 / 2) / sqrt(M) per query head h (W_h =
    # features[h], [M, dk]) of q / dk^(1/4) and k / dk^(1/4), after the
    # in-projection, its bias and rope; grouped-query: kv head h // group,
    # mapped with the query head's W_h.  out = D^-1 phi(Q) (phi(K)^T V),
    # sums over j <= i when causal.  Each layer has its own W.
    enc("perf_enc_m16", floats(12), performer(16),
        note="encoder, not causal, M 16 > dk 8, seq 12, 2 layers, post norm"),
    enc("perf_enc_m1_unbatched", floats(7, batch=None), performer(1, norm="pre"),
        note="M 1: A_ij = phi(q_i) phi(k_j) is the same for every query up to a factor, so every row is "
             "one weighting of V; no batch dimension"),
    enc("perf_enc_ids_m8", ids(13, batch=2, dtype="int32"), performer(8, vocab_size=50),
        note="M 8 = dk, int32 ids, tied LM head, batch 2"),
    enc("perf_enc_causal_learned", ids(13), performer(6, vocab_size=50, causal=True, positional="learned",
                                                      tie_embeddings=False),
        note="an explicitly causal encoder (the running sums), learned positions, untied head"),
    enc("perf_enc_seq_max", floats(16, batch=2), performer(12, activation="gelu"),
        note="seq 16 = max_seq_len, batch 2"),
    enc("perf_enc_seq_flag", floats(13), performer(8, max_seq_len=8), max_seq_len=16,
        note="--max-seq-len 16 above max_seq_len 8: performer's weights do not depend on the length"),
    enc("perf_enc_rope_interleaved", floats(12, batch=None), performer(
        5, positional="rope", rope_style="interleaved", rope_base=500.0, num_layers=3),
        note="interleaved rope rotates q and k before phi; 3 layers (each its own W), no batch dimension"),
    enc("perf_enc_dk4", floats(13, batch=2), performer(8, d_model=16, num_heads=4, d_ff=32),
        note="dk 4 (dk^(1/4) = sqrt 2), M 8, batch 2"),
    enc("perf_enc_mqa_dk12", floats(12, batch=2), performer(10, d_model=48, num_heads=4, num_kv_heads=1,
                                                             d_ff=50),
        note="one kv head for 4 query heads: phi(K) of the one K with each query head's W_h; dk 12, biases"),
    enc("perf_enc_d96_bf16", ids(13, batch=None), performer(24, d_model=96, num_heads=3, d_ff=50,
                                                             vocab_size=70, positional="learned"),
        weight_dtype="BF16", note="BF16 weights (features too), dk 32, learned positions"),
    dec("perf_dec_rope_half", ids(13, batch=None), performer(8, vocab_size=64, positional="rope", norm="pre"),
        note="causal decoder (the running sums), rope half, ids without a batch dimension, tied head"),
    dec("perf_dec_not_causal", ids(13, batch=2), performer(8, vocab_size=64, causal=False, positional="learned"),
        note="a decoder with causal false: the summaries over every key; learned positions, batch 2"),
    dec("perf_dec_m64", ids(13, batch=2), performer(64, vocab_size=64, norm="pre", tie_embeddings=False),
        note="M 64 (8 dk), causal, untied head"),
    dec("perf_dec_dk16", floats(13), performer(16, num_heads=2, final_norm=True, activation="gelu_tanh"),
        note="dk 16 (dk^(1/4) = 2), M 16, float inputs, post norm with a final norm"),
    dec("perf_dec_seq1", ids(1, batch=None), performer(4, vocab_size=64, positional="rope", norm="pre"),
        note="seq 1: one key, out = v_0"),
    dec("perf_dec_llama_gqa", ids(13, batch=2), performer(
        6, **dict(LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44)),
        note="llama-like, causal: 2 kv heads of 4 (query head h reads kv head h // 2, mapped with W_h), "
             "rope, rms norms, gated silu, no biases"),
    encdec("perf_encdec", src_tgt(13, 9, batch=2), performer(8, vocab_size=64),
           note="both self-attentions performer (the encoder's not causal, the decoder's causal), "
                "cross-attention full"),
    encdec("perf_encdec_rope_float", src_tgt(12, 7, batch=None, dtype="float32"), performer(
        3, positional="rope", norm="pre", num_encoder_layers=2, num_decoder_layers=1),
        note="float src/tgt without a batch dimension, rope on both self-attentions, M 3 < dk"),
    encdec("perf_encdec_not_causal_shared", src_tgt(7, 13), performer(
        16, vocab_size=64, causal=False, positional="learned", activation="gelu"),
        shared_embeddings=True, note="decoder not causal, one shared embedding table, learned positions"),
    enc("perf_enc_long", floats(100), performer(32, max_seq_len=128),
        note="seq 100 of max_seq_len 128, M 32"),
    dec("perf_dec_long", ids(100, batch=2), performer(32, vocab_size=64, max_seq_len=128, positional="rope",
                                                      norm="pre"),
        note="causal, seq 100, M 32, rope, batch 2: the running sums over 100 positions"),
    enc("perf_enc_long_mqa_dk12", floats(150, batch=2), performer(10, d_model=48, num_heads=4, num_kv_heads=1,
                                                                   d_ff=50, max_seq_len=160),
        note="300 rows a call: the feature maps through W_h transposed (M 10 and dk 12, neither a whole "
             "vector), one kv head for 4 query heads; 150 keys, more than one block of 128 added to the sums"),
    dec("perf_dec_long_gqa", ids(70, batch=2), performer(
        6, **dict(LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44, max_seq_len=96)),
        note="llama-like, causal, 2 kv heads of 4, seq 70: blocks of 16 query rows (the last of 6), the "
             "feature maps through W_h transposed"),

    # ---- contract section 7: block_sparse (BigBird) -----------------------------
    # Every self-attention of every stack (an encoder_decoder's encoder not
    # causal, its decoder causal by default); cross-attention stays full;
    # rope rotates q and k first.  Blocks of B tokens (the last may be
    # partial): query block qb = i // B attends key block kb when |qb - kb|
    # <= window_blocks (W, default 1), or qb < global_blocks (G, default 1),
    # or kb < G, or kb is in row qb of the layer's block_pattern
    # [ceil(max_seq_len / B), R] (R = random_blocks, default 0: no tensor);
    # ids outside [0, ceil(n / B)) are ignored; causal masks j > i per token.
    # Each layer has its own pattern (block_patterns(): valid ids plus
    # duplicates, negatives, past the run-time and the compiled block
    # counts, int32/int64 extremes), as I32 or I64 (pattern_dtype).
    enc("bs_enc_b2", floats(12), block_sparse(2),
        note="defaults (W 1, G 1, R 0: no block_pattern tensor); B 2 divides seq 12: 6 blocks, block 4 "
             "attends 0, 3, 4, 5"),
    enc("bs_enc_b3_r2_batch2", ids(13, batch=2, dtype="int32"), block_sparse(3, 1, 1, 2, vocab_size=50),
        note="B 3, seq 13: 5 blocks, the last of 1 token; R 2 of 6 compiled rows (I32), row 5 never read; "
             "tied LM head, batch 2"),
    enc("bs_enc_b2_w0_r3_i64_unbatched", ids(13, batch=None), block_sparse(2, 0, 1, 3, vocab_size=50, norm="pre"),
        pattern_dtype="I64",
        note="W 0 (own block only), G 1, R 3 as I64 (ids beyond int32 that would read as valid ones if "
             "truncated); ids without a batch dimension"),
    enc("bs_enc_dot_w0_g0_left", floats(16, batch=2), block_sparse(4, 0, 0, 1, attention_score="dot", num_heads=2),
        masks={"mask": Mask("left", "int64", lengths=(6, 12))},
        note="dot scores (dk 16), W 0, G 0, R 1, seq 16 = max_seq_len (every pattern row read); left padding: "
             "rows whose own and random blocks are all padding have no key (skipped)"),
    enc("bs_enc_additive_rope", ids(13), block_sparse(2, 1, 0, 2, positional="rope", attention_score="additive",
                                                       additive_dim=12, vocab_size=33),
        pattern_dtype="I64", note="additive scores over rotated q and k, G 0, R 2 (I64)"),
    enc("bs_enc_b1_mqa", floats(13), block_sparse(1, 1, 0, 3, d_model=48, num_heads=4, num_kv_heads=1, d_ff=50),
        note="B 1: every token a block (window of 1 token each side, 3 random tokens per query, 16 rows); "
             "one kv head of 4, dk 12"),
    enc("bs_enc_b40_batch2", floats(13, batch=2), block_sparse(40, 0, 0, 1),
        note="B 40 > seq 13 and > max_seq_len 16: one block, full attention; block_pattern [1, 1]"),
    enc("bs_enc_wbig", ids(13), block_sparse(2, 100, 0, vocab_size=50, lm_head=False),
        note="W 100 covers the 7 blocks: full attention; hidden states"),
    dec("bs_dec_gbig", floats(13), block_sparse(3, 0, 9, final_norm=True),
        note="G 9 > the 5 blocks: every block global, full causal attention; float inputs"),
    dec("bs_dec_causal_r2", ids(13, batch=2), block_sparse(2, 1, 1, 2, vocab_size=64),
        note="causal decoder, B 2, W 1, G 1, R 2 (I32): random blocks past the query's masked by causal"),
    dec("bs_dec_rope_half_b4", ids(13, batch=None, dtype="int32"), block_sparse(
        4, 0, 1, 2, vocab_size=64, positional="rope", norm="pre", max_seq_len=32),
        pattern_dtype="I64",
        note="rope half, B 4, W 0, G 1, R 2 (I64) of 8 compiled rows, 4 run-time blocks: ids 4..7 valid in "
             "the file, ignored at run time; unbatched"),
    dec("bs_dec_bilinear_interleaved_bf16", ids(13), block_sparse(
        3, 1, 0, 1, vocab_size=64, positional="rope", rope_style="interleaved", attention_score="bilinear",
        tie_embeddings=False), weight_dtype="BF16",
        note="bilinear scores, interleaved rope, B 3 (partial last block), G 0, R 1; BF16 weights with an "
             "I32 block_pattern in the same file; untied head"),
    dec("bs_dec_llama_gqa", ids(13, batch=2), block_sparse(
        2, 1, 0, 2, **dict(LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44)), pattern_dtype="I64",
        note="llama-like (rms norms, gated silu, rope, no biases), 2 kv heads of 4; B 2, W 1, G 0, R 2 (I64)"),
    encdec("bs_encdec", src_tgt(13, 9, batch=2), block_sparse(2, 1, 1, 2, vocab_size=64),
           note="both self-attentions block_sparse (the encoder's 7 blocks not causal, the decoder's 5 "
                "causal), each layer its own pattern; cross-attention full"),
    encdec("bs_encdec_rope_float_unbatched", src_tgt(12, 7, batch=None, dtype="float32"), block_sparse(
        3, 0, 1, 1, positional="rope", norm="pre", num_encoder_layers=2, num_decoder_layers=1),
        pattern_dtype="I64", note="float src/tgt without a batch dimension, rope on both self-attentions, "
                                  "B 3, W 0, G 1, R 1 (I64)"),
    enc("bs_mask_enc_right", ids(13, batch=3), block_sparse(2, 1, 1, 2, vocab_size=50),
        masks={"mask": Mask("right", "int64")},
        note="right padding, batch 3 (the last row unpadded): padded keys left out of every block"),
    dec("bs_mask_dec_left", ids(13, batch=2, dtype="int32"), block_sparse(2, 1, 1, 2, vocab_size=64,
                                                                          positional="rope"),
        masks={"mask": Mask("left", "bool")},
        note="causal, left padding (leading rows without a key skipped), rope, bool mask"),
    encdec("bs_mask_encdec", src_tgt(13, 9, batch=2), block_sparse(3, 1, 0, 2, vocab_size=64),
           masks={"src_mask": Mask("holes", "bool"), "tgt_mask": Mask("right", "float32")},
           note="src holes (the encoder's blocks and cross-attention), tgt right padding (float32)"),
    enc("bs_enc_long", floats(100, batch=2), block_sparse(16, 1, 1, 2, max_seq_len=128),
        note="seq 100 of 128: 7 blocks of 16, the last of 4; R 2 of 8 rows; batch 2"),
    # Longer than the LLVM backend's blocks of 64 query rows: each block
    # gathers its query blocks' pattern blocks after the band (B 8 aligned
    # with them, B 6 and 5 straddling them).
    dec("bs_dec_long_llama_gqa", ids(90, batch=2), block_sparse(
        8, 1, 1, 3, **dict(LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44, max_seq_len=96)),
        pattern_dtype="I64",
        note="causal, seq 90 of 96: 12 blocks of 8, the last of 2; W 1, G 1, R 3 (I64); llama-like, "
             "2 kv heads of 4; batch 2"),
    enc("bs_mask_enc_long_left", ids(80, batch=2), block_sparse(6, 0, 0, 2, vocab_size=50, max_seq_len=96),
        masks={"mask": Mask("left", "int64", lengths=(50, 79))},
        note="seq 80: 14 blocks of 6, the last of 2; W 0, G 0, R 2; left padding (30 and 1 padded)"),
    encdec("bs_encdec_long", src_tgt(70, 66, batch=2), block_sparse(5, 1, 1, 2, vocab_size=64, max_seq_len=80),
           note="src 70, tgt 66: blocks of 5 both self-attentions (the decoder's causal); R 2 of 16 rows"),
    enc("bs_enc_r0_seq_flag", floats(20), block_sparse(4, 1, 1, max_seq_len=16), max_seq_len=32,
        note="R 0: --max-seq-len 32 above max_seq_len 16 is allowed (no block_pattern); seq 20, 5 blocks"),

    # ---- contract section 8: padding masks --------------------------------------
    # A padded key is never attended (self-attention; src_mask in
    # cross-attention too), with the causal and window rules on top; padded
    # query rows are computed like any other.  A row with no key to attend
    # (left padding in a causal model; a window whose keys are all padding)
    # is left out of the comparison.
    enc("mask_enc_right", ids(13, batch=3), dict(vocab_size=50), masks={"mask": Mask("right", "int64")},
        note="right padding, int64 mask, batch 3 (the last row unpadded); (a) with key_padding_mask, "
             "torch's fast path"),
    enc("mask_enc_left_unbatched", ids(13, batch=None, dtype="int32"), dict(
        vocab_size=50, positional="learned", norm="pre"), masks={"mask": Mask("left", "int32")},
        note="left padding, int32 ids and mask without a batch dimension"),
    enc("mask_enc_holes_float", floats(12, batch=2), dict(activation="gelu"),
        masks={"mask": Mask("holes", "bool")},
        note="float embeddings [2, 12, 32] with a bool mask [2, 12], padding inside the sequence"),
    enc("mask_enc_rope_bilinear", ids(13, batch=2), dict(
        vocab_size=50, positional="rope", attention_score="bilinear", lm_head=False),
        masks={"mask": Mask("holes", "float32")},
        note="float32 mask, rope half, bilinear scores; second form (b) with the additive mask"),
    enc("mask_enc_additive", ids(11, batch=2), dict(
        vocab_size=40, positional="rope", rope_style="interleaved", attention_score="additive",
        additive_dim=12, norm="pre"), masks={"mask": Mask("left", "bool")},
        note="additive scores over interleaved-rope q and k, left padding"),
    dec("mask_dec_right", ids(13, batch=2), dict(vocab_size=64), masks={"mask": Mask("right", "int64")},
        note="causal, right padding: the real rows see no padding anyway, the padded rows do"),
    dec("mask_dec_left_llama", ids(13, batch=2, dtype="int32"), dict(
        LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44), masks={"mask": Mask("left", "int32")},
        note="causal llama-like (GQA 2 of 4), left padding: the leading padded rows have no key and are "
             "skipped; (c) with its additive mask"),
    dec("mask_dec_left_unbatched", ids(13, batch=None), dict(vocab_size=64, positional="learned", norm="pre"),
        masks={"mask": Mask("left", "float32")},
        note="causal, left padding, unbatched, float32 mask; (a) with one finfo.min attn_mask"),
    enc("mask_win_enc_left", ids(13, batch=2), window(1, 2, vocab_size=50, lm_head=False),
        masks={"mask": Mask("left", "int64", lengths=(3, 8))},
        note="window W 1 with 2 global tokens, left padding: padded global tokens, and padded rows "
             "whose window and global keys are all padding (skipped) in an encoder"),
    dec("mask_win_dec_rope", ids(13, batch=2), window(2, 1, vocab_size=64, positional="rope"),
        masks={"mask": Mask("holes", "int64")},
        note="causal window W 2, G 1, rope, holes; (b) banded with the padded keys masked in its rows"),
    encdec("mask_encdec_src", src_tgt(13, 7, batch=2), dict(vocab_size=64),
           masks={"src_mask": Mask("right", "int64")},
           note="src_mask alone: the encoder's self-attention and the cross-attention's keys"),
    encdec("mask_encdec_tgt_left", src_tgt(11, 9, batch=None), dict(vocab_size=64, norm="pre"),
           masks={"tgt_mask": Mask("left", "int32")},
           note="tgt_mask alone, left padding in the causal decoder (rows skipped), unbatched"),
    encdec("mask_encdec_both_rope_add", src_tgt(12, 7, batch=2), dict(
        vocab_size=64, positional="rope", attention_score="additive", additive_dim=12,
        num_encoder_layers=2, num_decoder_layers=1),
        masks={"src_mask": Mask("holes", "bool"), "tgt_mask": Mask("right", "float32")},
        note="both masks (bool src holes, float32 tgt right padding), rope, additive scores"),
    dec("mask_all_ones", ids(7, batch=2), dict(vocab_size=64, positional="rope", norm="pre"),
        masks={"mask": Mask("ones", "int64")},
        note="every token real: the same as no mask"),

    # ---- the embeddings: embedding_norm, BERT's token types --------------------
    # The norm (norm_type, norm_eps) of token embeddings (x embedding_scale)
    # + token types + absolute positions, before the first layer; token
    # types: type_embed[token_type_ids], type 0 where the input is left out.
    enc("emb_bert_t2_segments_mask", ids(13, batch=2), dict(_BERT, type_vocab_size=2),
        masks={"mask": Mask("right", "int64")}, token_types=TokenTypes("segments", "int64"),
        note="BERT-like: post norm, learned positions, gelu, embedding LayerNorm; sentence-pair token types "
             "(int64) and right padding, batch 2"),
    enc("emb_bert_t2_default_types", ids(7, dtype="int32"), dict(_BERT, type_vocab_size=2),
        note="token_type_ids left out: type_embed row 0 at every position"),
    enc("emb_bert_t3_random_unbatched", ids(13, batch=None, dtype="int32"), dict(
        _BERT, type_vocab_size=3, lm_head=False, norm_eps=1e-12), token_types=TokenTypes("random", "int32"),
        note="3 token types drawn at random (int32), ids without a batch dimension, hidden states, eps 1e-12"),
    enc("emb_bert_t3_mask_no_types", ids(11, batch=2), dict(_BERT, type_vocab_size=3, tie_embeddings=False),
        masks={"mask": Mask("holes", "bool")},
        note="a bool padding mask but no token_type_ids (zeros); untied head"),
    dec("emb_norm_dec_rms_rope", ids(7, batch=2), dict(LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44,
                                                        embedding_norm=True),
        note="an RMS embedding norm (weight only) on a llama-like pre-norm decoder with rope (no absolute "
             "positions: the norm of the token embeddings alone)"),
    encdec("emb_norm_encdec_shared", src_tgt(7, 5, batch=2), dict(
        vocab_size=64, embedding_norm=True, embedding_scale="sqrt_d_model", positional="learned",
        num_layers=1), shared_embeddings=True, masks={"src_mask": Mask("right", "int32")},
        note="src_embed_norm and tgt_embed_norm over one shared embed.weight (x sqrt(d_model)), learned "
             "positions, src padding"),
    enc("emb_norm_enc_float", floats(7, batch=2), dict(embedding_norm=True, norm="pre", norm_eps=1e-6),
        note="float inputs: the norm of input + sinusoidal positions"),

    # Inputs the executable must refuse: exit 1, naming the input.
    enc("tt_err_range", ids(5, batch=2), dict(_TINY, type_vocab_size=3), token_types=TokenTypes("range", "int32"),
        expect_error="token_type_ids", expect_detail=("token type id 3 at position [0, 1] is out of range [0, 3)",),
        note="a token type id equal to type_vocab_size"),
    enc("tt_err_shape", ids(5, batch=2), dict(_TINY, type_vocab_size=2, embedding_norm=True),
        token_types=TokenTypes("short"), expect_error="token_type_ids",
        expect_detail=("shape [2, 4] does not match", "(expected [2, 5])"),
        note="token_type_ids [2, 4] for ids [2, 5]"),
    enc("mask_err_shape", ids(7, batch=2), _TINY, masks={"mask": Mask("short")}, expect_error="mask",
        note="a mask [2, 6] for ids [2, 7]"),
    enc("mask_err_value2", ids(7, batch=2), _TINY, masks={"mask": Mask("value2", "int32")},
        expect_error="mask", note="a 2 in an int32 mask"),
    dec("mask_err_fraction", ids(7), _TINY, masks={"mask": Mask("fraction", "float32")},
        expect_error="mask", note="a 0.5 in a float32 mask"),
    enc("mask_err_empty_row", floats(7, batch=2), _TINY_FLOAT, masks={"mask": Mask("empty_row", "bool")},
        expect_error="mask", note="the second batch row all padding"),
    encdec("mask_err_src_rank", src_tgt(7, 5, batch=None), _TINY, masks={"src_mask": Mask("rank")},
           expect_error="src_mask", note="src_mask [1, 7] for an unbatched src [7]"),
    enc("mask_err_linformer", floats(7, batch=2), linformer(4, **_TINY_FLOAT),
        masks={"mask": Mask("right")}, expect_error="mask",
        note="a linformer model refuses a mask input"),
    enc("perf_err_mask", floats(7, batch=2), performer(4, **_TINY_FLOAT),
        masks={"mask": Mask("right")}, expect_error="mask",
        note="a performer model refuses a mask input"),
    dec("perf_err_mask_causal", ids(7), performer(4, **_TINY), masks={"mask": Mask("left", "int32")},
        expect_error="mask", note="a causal performer decoder refuses a mask input"),
    encdec("perf_err_src_mask", src_tgt(7, 5, batch=2), performer(4, **_TINY),
           masks={"src_mask": Mask("right")}, expect_error="src_mask",
           note="a performer encoder_decoder refuses src_mask (its cross-attention is full, but the "
                "encoder's self-attention is performer)"),
    dec("mask_err_generate", ids(5), _TINY, masks={"mask": Mask("right")}, run_args=("--generate", "3"),
        expect_error="mask", note="--generate with a mask (refused for now)"),
    # Weights files the executable must refuse (block_sparse): exit 1 naming
    # the tensor.
    enc("bs_load_pattern_f32", floats(7, batch=2), block_sparse(2, 1, 1, 1, **_TINY_FLOAT),
        weight_fault="pattern_f32", expect_error="block_pattern",
        note="block_pattern stored as F32 (whole numbers): ids must be I32 or I64"),
    enc("bs_load_pattern_transposed", floats(7), block_sparse(2, 1, 1, 2, **_TINY_FLOAT),
        weight_fault="pattern_transposed", expect_error="block_pattern",
        note="block_pattern [2, 8] for [8, 2]: the same element count, the wrong shape"),
    dec("bs_load_pattern_unexpected", ids(7), block_sparse(2, **_TINY), weight_fault="pattern_unexpected",
        expect_error="block_pattern",
        note="random_blocks 0 (no block_pattern), but the file holds layers.0.self_attn.block_pattern"),
    dec("bs_load_float_as_i32", ids(7), block_sparse(2, 1, 1, 1, **_TINY), weight_fault="float_as_i32",
        expect_error="linear2.bias", note="layers.0.linear2.bias stored as I32: a float weight as integers"),
]


# ---- contract section 7: mixture-of-experts FFNs (Mixtral routing) ------------
# Every layer of every stack: logits = x G^T (moe.gate.weight [E, d_model],
# no bias), the top_k experts with the largest logits (ties: the lower
# index), weights = the softmax over those K logits, out = the weighted sum
# of their FFNs (linear1 -> activation -> linear2, ffn_gated and bias as
# the dense FFN).  Checked against (c) (every expert on every token, a
# dense [tokens, E] routing matrix) or, for linformer, (b)'s factored form
# with the dense routing too, against (b)'s Mixtral loop; the oracle's
# self-test checks each case's routing margin (reference.MOE_MIN_GAP).
CASES += [
    enc("moe_enc_e4k2_post", floats(7, batch=2), moe(4, 2, d_ff=50),
        note="encoder, post norm, relu, E 4, K 2, float inputs, batch 2"),
    enc("moe_enc_e8k2_pre_gelu", ids(13), moe(8, 2, vocab_size=50, norm="pre", activation="gelu", d_ff=50,
                                               lm_head=False),
        note="E 8, K 2, pre norm, exact gelu, ids, hidden states"),
    dec("moe_dec_e8k1_rope_gelu_tanh", ids(13, batch=2, dtype="int32"), moe(
        8, 1, vocab_size=64, positional="rope", norm="pre", activation="gelu_tanh", d_ff=50),
        note="causal decoder, E 8, K 1 (each token's weight 1), rope, gelu_tanh, int32 ids, batch 2"),
    dec("moe_dec_e3k3_every_expert", ids(7), moe(3, 3, vocab_size=64, positional="learned", d_ff=50),
        note="K = E = 3: every expert on every token, weighted by the softmax of all 3 logits; post norm"),
    dec("moe_dec_e5k3_llama_gqa", ids(7, batch=2), moe(5, 3, **dict(LLAMA, vocab_size=64, num_kv_heads=2, d_ff=45,
                                                                    tie_embeddings=False)),
        note="llama-like: rms norms, gated silu experts (linear1 [90, 32]), rope, 2 kv heads of 4, no biases, "
             "untied head; E 5, K 3"),
    enc("moe_enc_silu_nobias_unbatched", floats(13, batch=None), moe(
        4, 2, d_model=21, num_heads=3, d_ff=25, activation="silu", bias=False),
        note="silu experts, not gated, no biases; d_model 21, d_ff 25; no batch dimension"),
    dec("moe_dec_weights_bf16", ids(7), moe(4, 2, vocab_size=64, norm="pre", positional="rope", d_ff=50),
        weight_dtype="BF16", note="BF16 weights: the gate and the experts rounded in the file"),
    encdec("moe_encdec_e4k2", src_tgt(7, 5, batch=2), moe(4, 2, vocab_size=64, d_ff=50),
           note="both stacks MoE (the encoder's 2 layers, the decoder's 2 after their cross-attention), post "
                "norm, batch 2"),
    encdec("moe_encdec_geglu_pre_shared_unbatched", src_tgt(13, 7, batch=None), moe(
        5, 3, vocab_size=64, norm="pre", ffn_gated=True, activation="gelu", d_ff=25,
        num_encoder_layers=1, num_decoder_layers=2), shared_embeddings=True,
        note="gated gelu experts (GeGLU, biases), pre norm, shared embeddings, no batch dimension; E 5, K 3"),
    dec("moe_win_dec_e4k2", ids(13, batch=2), moe(4, 2, **window(2, 1, vocab_size=64, positional="rope", d_ff=50)),
        note="a sliding window (W 2, G 1) with MoE FFNs: the attention kind and the FFN kind together"),
    enc("moe_lin_enc_e8k2", floats(12, batch=2), moe(8, 2, **linformer(4, d_ff=50)),
        note="linformer attention (k 4) with MoE FFNs; second form (b) factored with the dense routing"),
    enc("moe_enc_long_e8k2", floats(100, batch=2), moe(8, 2, max_seq_len=128, norm="pre", d_ff=50),
        note="seq 100, batch 2: 200 tokens a layer, about 50 per expert"),
    enc("moe_mask_enc_right", ids(13, batch=3), moe(4, 2, vocab_size=50, d_ff=50),
        masks={"mask": Mask("right", "int64")},
        note="right padding, batch 3: padded tokens are routed like any other token"),
    enc("moe_enc_same_expert", floats(13, batch=2), moe(4, 1, norm="pre", d_ff=50), moe_gate=("dominant", 2),
        note="every token of every layer picks expert 2 (its gate row c / w of the norm weight: one constant "
             "logit above any other), weight 1; the other experts get no token"),
    dec("moe_dec_starved_expert", ids(13, batch=2), moe(5, 2, vocab_size=64, d_ff=50), moe_gate=("starved", 3),
        note="expert 3 gets no token in any layer (its gate row a constant logit below any other); post norm"),
    dec("moe_dec_e8_seq1_unbatched", ids(1, batch=None), moe(8, 2, vocab_size=64, norm="pre", d_ff=50),
        note="one token: 2 experts of 8 get it, 6 get none, in each layer"),
    # Weights files the executable must refuse: exit 1 naming the tensor.
    enc("moe_load_missing_expert", floats(7, batch=2), moe(4, 2, **_TINY_FLOAT), weight_fault="moe_missing_expert",
        expect_error="moe.experts.1.linear2.weight",
        note="layers.0.moe.experts.1.linear2.weight left out of the file"),
    dec("moe_load_gate_transposed", ids(7), moe(4, 2, **_TINY), weight_fault="moe_gate_transposed",
        expect_error="moe.gate.weight", note="layers.0.moe.gate.weight [16, 4] for [4, 16]"),
]


# ---- contract section 7: a decoder's per-layer kinds (`layers`) -----------------
# A list of num_layers entries: "attention" (the model-level `attention` and
# `ffn`), or {"kind": "attention", "attention": {...}, "ffn": {...}}, whose
# own kind objects replace the model-level ones for that layer (each whole,
# not merged key by key).  Weights keep their names per layer, each layer
# exactly its own kinds' (layers.{i}.self_attn.features of a performer
# layer, block_pattern of a block_sparse one with random blocks, moe.* of an
# MoE one, linear1 / linear2 of a dense one).  Checked against (c) (each
# layer its own window and FFN) when every layer is full or sliding_window,
# (a) when every layer comes to the same kinds, else against (b) with each
# layer in its own kind's second form (banded, blocks, linear) and the MoE
# FFNs in the dense form.  Every case has some layer whose kinds differ from
# the model-level ones (fake_tfm_compile.py's no_layers, which ignores
# `layers`, fails each).
CASES += [
    dec("layers_full_window_moe", ids(13, batch=2), dict(
        vocab_size=64, num_layers=3, d_ff=50,
        layers=["attention", layer(att_window(2, 1)), layer(ffn=ffn_moe(4, 2))]),
        note="model-level full attention and dense FFN; layer 1 a sliding window (W 2, G 1), layer 2 an MoE "
             "FFN (E 4, K 2) with full attention; (c) with each layer its own window and FFN"),
    dec("layers_override_window_float", floats(13, batch=None), dict(
        positional="rope", norm="pre", num_layers=3, attention=att_window(3),
        layers=[layer(FULL), "attention", layer(att_block_sparse(2, 1, 1, 2))]),
        note="model-level sliding window (W 3) overridden: layer 0 full, layer 1 the model's window, layer 2 "
             "block_sparse (B 2, R 2: layers.2.self_attn.block_pattern only); rope, float inputs, unbatched"),
    dec("layers_moe_model_dense_layer", ids(13, batch=2), dict(
        LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44, num_layers=3, ffn=ffn_moe(4, 2),
        layers=[layer(ffn=DENSE), {"kind": "attention"}, layer(ffn=ffn_moe(8, 1))]),
        note="model-level MoE (E 4, K 2): layer 0 dense (layers.0.linear1), layer 1 the model's MoE "
             "({kind: attention} alone), layer 2 E 8, K 1; llama-like, 2 kv heads of 4"),
    dec("layers_hybrid_four_kinds", ids(13, batch=2), dict(
        vocab_size=64, num_layers=4, d_ff=50, positional="learned",
        layers=[layer(att_performer(8)), layer(att_window(2, 2), ffn_moe(4, 2)),
                layer(att_block_sparse(2, 1, 1, 2)), "attention"]),
        note="a performer layer (causal running sums), a sliding window with 2 global tokens and an MoE FFN, "
             "block_sparse with random blocks, and a full layer; learned positions, post norm"),
    dec("layers_two_block_sparse_i64", ids(13), dict(
        vocab_size=64, num_layers=3, norm="pre", tie_embeddings=False,
        attention=att_block_sparse(2, 1, 1, 2),
        layers=["attention", layer(att_block_sparse(3, 0, 1, 1)), layer(FULL, ffn_moe(5, 3))]),
        pattern_dtype="I64", weight_dtype="BF16",
        note="two block_sparse layers of their own rules: layer 0 the model's B 2, R 2 (block_pattern [8, 2]), "
             "layer 1 B 3, W 0, R 1 ([6, 1]), both I64; layer 2 full with E 5, K 3; BF16 weights, untied head"),
    dec("layers_perf_llama_gqa_unbatched", ids(13, batch=None, dtype="int32"), dict(
        LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44, num_layers=3,
        layers=[layer(att_performer(8)), "attention", layer(att_performer(16), ffn_moe(3, 3))]),
        note="performer layers of M 8 and M 16 (each its own features) around a full one, the last with an "
             "MoE FFN of gated silu experts (E = K = 3); llama-like, rope, 2 kv heads of 4, unbatched int32 ids"),
    dec("layers_uniform_window", ids(13), dict(
        vocab_size=64, num_layers=2, layers=[layer(att_window(2)), layer(att_window(2))]),
        note="every layer the same sliding window (W 2) over model-level full attention: the model-level "
             "window model, checked against (a)"),
    dec("layers_long_mixed", ids(70, batch=2), dict(
        vocab_size=64, num_layers=3, max_seq_len=80, positional="rope", norm="pre",
        layers=[layer(att_window(5, 2)), layer(att_block_sparse(8, 1, 1, 2)), layer(att_performer(16))]),
        note="seq 70 (past 64 query rows): a window (W 5, G 2), block_sparse (B 8, R 2) and performer layer; "
             "rope, batch 2"),
    dec("layers_mask_window_bs", ids(13, batch=2), dict(
        vocab_size=64, num_layers=3, positional="rope",
        layers=[layer(att_window(2, 1)), layer(att_block_sparse(2, 1, 0, 1)), layer(ffn=ffn_moe(4, 2))]),
        masks={"mask": Mask("left", "int64", lengths=(7, 12))},
        note="left padding through a window (W 2, G 1), a block_sparse (B 2, G 0, R 1) and a full MoE layer: "
             "each layer's rule masks the padded keys; rows without a key in some layer skipped"),
    dec("layers_mask_refused_performer", ids(7, batch=2), dict(
        _TINY, num_layers=2, layers=["attention", layer(att_performer(4))]),
        masks={"mask": Mask("right")}, expect_error="mask",
        note="one performer layer is enough: the model refuses a mask input"),
]


# ---- contract section 7: mamba layers (pure and hybrid stacks) -----------------------
# `layers` entries "mamba" / {"kind": "mamba"}: x + Mixer(Norm(x)) (the model's
# norm_type, pre-norm whatever `norm` says, no FFN), the mixer Hugging Face's
# MambaMixer (Mamba-1, its sequential slow path); `mamba` {d_state, d_conv,
# expand, dt_rank} (defaults 16, 4, 2, "auto" = ceil(d_model / 16)).  Weights
# layers.{i}.norm.* and layers.{i}.mixer.{in_proj.weight, conv1d.weight,
# conv1d.bias, x_proj.weight, dt_proj.weight, dt_proj.bias, A_log, D,
# out_proj.weight}.  A stack of mamba layers only needs no num_heads / d_ff
# (mamba_dec()).  Checked against (b) in its second form "mamba": each mixer
# in the closed form of its scan (cumulative sums of delta A) with the
# convolution as PyTorch's grouped conv1d, attention layers in their kinds'
# second forms, MoE FFNs in the dense form; the oracle's self-test checks the
# mixer against per-element loops, and mamba_reference.py (ctest
# harness-mamba-hf) against transformers' MambaMixer and MambaForCausalLM.
# The self-test also requires the scan to move every case's output by more
# than reference.MAMBA_SHOWN tolerances (the weights' x_proj is
# reference.MAMBA_X_PROJ_GAIN times a Linear's init: B and C of order 1).
# Every case's name has "mamba" in it: ctest's e2e-mamba (-k mamba) runs
# them, the sharded e2e suite leaves them out (--exclude mamba).
def mamba_dec(name, inputs, model=None, **case_kw):
    """A decoder with mamba layers and no num_heads / d_ff (unless `model`
    gives them): d_model 32, 2 layers, max_seq_len 64."""
    m = dict(name=name, architecture="decoder", d_model=32, num_layers=2, max_seq_len=64)
    m.update(model or {})
    return Case(name, m, inputs, **case_kw)


def mamba_sizes(d_state=None, d_conv=None, expand=None, dt_rank=None):
    """The `mamba` key with the sizes given (None: the key left out)."""
    return {k: v for k, v in (("d_state", d_state), ("d_conv", d_conv), ("expand", expand), ("dt_rank", dt_rank))
            if v is not None}


MAMBA2 = ["mamba", "mamba"]

CASES += [
    # Pure stacks.
    mamba_dec("mamba_pure_ids_pre", ids(17, batch=2), dict(vocab_size=64, norm="pre", layers=MAMBA2),
              note="two mamba layers, every size its default (no `mamba` key: d_state 16, d_conv 4, expand 2, "
                   "dt_rank ceil(32/16) = 2); pre norm, final norm, tied head; no num_heads / d_ff"),
    mamba_dec("mamba_pure_float_post_unbatched", floats(17, batch=None), dict(
        d_model=16, num_layers=3, layers=["mamba", {"kind": "mamba"}, "mamba"],
        mamba=mamba_sizes(8, 3, 1, 3)), note="float inputs, hidden states, no batch dimension; post norm (a mamba "
                                               "layer is pre-norm whatever `norm` says), no final norm; d_state 8, "
                                               "d_conv 3, expand 1, dt_rank 3"),
    mamba_dec("mamba_pure_rms_untied_seq64", ids(64, batch=2), dict(
        vocab_size=64, norm="pre", norm_type="rms_norm", positional="none", tie_embeddings=False, layers=MAMBA2,
        mamba=mamba_sizes(4, 2, dt_rank="auto")),
        note="seq 64 = max_seq_len; rms norms (norm.weight only), no positions, untied head; d_state 4, d_conv 2, "
             "dt_rank \"auto\" given"),
    mamba_dec("mamba_pure_seq1_unbatched", ids(1, batch=None), dict(
        d_model=16, vocab_size=64, norm="pre", layers=MAMBA2, mamba=mamba_sizes(8)),
        note="one token: the convolution reads only its last tap, h_0 = delta B u"),
    mamba_dec("mamba_pure_seq5_int32_learned", ids(5, batch=3, dtype="int32"), dict(
        d_model=24, vocab_size=64, positional="learned", final_norm=True, layers=MAMBA2,
        mamba=mamba_sizes(16, 4, 2, 4)), max_batch=4,
        note="seq 5, batch 3 of --max-batch 4, int32 ids, learned positions, post norm with a final norm; "
             "d_model 24, dt_rank 4"),
    mamba_dec("mamba_pure_dconv1_expand3", floats(13, batch=2), dict(
        d_model=16, norm="pre", layers=MAMBA2, mamba=mamba_sizes(16, 1, 3, 1)),
        note="d_conv 1 (a pointwise conv: no state of past inputs), expand 3 (d_inner 48), dt_rank 1"),
    mamba_dec("mamba_pure_heads_given_hidden", ids(17), dict(
        num_heads=4, d_ff=64, vocab_size=64, lm_head=False, positional="rope", norm="pre", layers=MAMBA2,
        mamba=mamba_sizes(8, 2, 1)),
        note="num_heads and d_ff given (accepted, unused), rope (nothing to rotate), token ids to hidden states "
             "(lm_head false)"),
    mamba_dec("mamba_pure_weights_bf16", ids(17, batch=2), dict(vocab_size=64, norm="pre", layers=MAMBA2),
              weight_dtype="BF16", note="BF16 weights file: every mixer tensor rounded in the file"),
    mamba_dec("mamba_pure_max_seq_len_above", ids(33, batch=2), dict(
        max_seq_len=16, vocab_size=64, norm="pre", layers=MAMBA2, mamba=mamba_sizes(4, 3)), max_seq_len=40,
        note="--max-seq-len 40 above the model's 16 (sinusoidal positions; a mamba layer's state does not "
             "depend on it); seq 33"),
    mamba_dec("mamba_pure_float_seq64_post", floats(64, batch=2), dict(
        layers=MAMBA2, final_norm=True, mamba=mamba_sizes(16, 4, 2, 8)),
        note="float inputs, seq 64, batch 2, post norm with a final norm; dt_rank 8"),
    # Hybrid (Jamba-like) stacks.
    dec("mamba_jamba_window_moe", ids(17, batch=2), dict(
        vocab_size=64, num_layers=4, d_ff=50, max_seq_len=64, positional="rope", norm="pre",
        layers=["mamba", layer(att_window(3, 1), ffn_moe(4, 2)), "mamba", "attention"], mamba=mamba_sizes(8)),
        note="Jamba-like: mamba, a sliding window (W 3, G 1) with an MoE FFN (E 4, K 2), mamba, full attention; "
             "rope, pre norm; d_state 8"),
    dec("mamba_jamba_llama_moe", ids(17, batch=2), dict(
        LLAMA, vocab_size=64, num_kv_heads=2, d_ff=44, num_layers=4, max_seq_len=32, tie_embeddings=False,
        layers=["mamba", "mamba", layer(FULL, ffn_moe(4, 2)), "mamba"], mamba=mamba_sizes(16, 4, 2, "auto")),
        note="llama-like (rms norms, gated silu experts, rope, no biases: the mixers have none anyway), 2 kv "
             "heads of 4, untied head; three mamba layers around a full attention layer with an MoE FFN"),
    dec("mamba_hybrid_post_float_unbatched", floats(17, batch=None), dict(
        num_layers=2, max_seq_len=32, attention=att_window(2), layers=["attention", "mamba"],
        mamba=mamba_sizes(4, 2, 1)),
        note="post norm (the attention layer post-norm, the mamba layer pre-norm), model-level sliding window "
             "(W 2), float inputs, unbatched; d_state 4, d_conv 2, expand 1"),
    dec("mamba_hybrid_seq64_window", ids(64, batch=2), dict(
        vocab_size=64, num_layers=3, max_seq_len=64, positional="learned", norm="pre",
        layers=["mamba", layer(att_window(8, 2)), "mamba"], mamba=mamba_sizes(16, 3)),
        note="seq 64: two mamba layers around a sliding window (W 8, G 2); learned positions"),
    dec("mamba_hybrid_performer_bs", ids(13, batch=2), dict(
        vocab_size=64, num_layers=3, norm="pre",
        layers=[layer(att_performer(8)), "mamba", layer(att_block_sparse(2, 1, 1, 2))],
        mamba=mamba_sizes(8, expand=1)),
        note="a performer layer (causal running sums), a mamba layer, block_sparse with random blocks "
             "(layers.2.self_attn.block_pattern); expand 1"),
    dec("mamba_hybrid_seq1_rms", ids(1, batch=2), dict(
        vocab_size=64, norm="pre", norm_type="rms_norm", layers=["attention", "mamba"]),
        note="one token, batch 2: a full attention layer then a mamba layer with its default sizes; rms norms"),
    dec("mamba_hybrid_seq5_rms_post", ids(5, batch=None, dtype="int32"), dict(
        vocab_size=64, num_layers=3, norm_type="rms_norm", tie_embeddings=False,
        layers=["mamba", "attention", {"kind": "mamba"}], mamba=mamba_sizes(4, 4, 2, 1)),
        note="rms norms with post norm (the attention layer post, the mamba layers pre), no final norm, untied "
             "head, unbatched int32 ids of 5"),
    # A mask is refused (contract section 8), and misshapen weights files.
    mamba_dec("mamba_mask_refused", ids(7, batch=2), dict(vocab_size=64, layers=MAMBA2),
              masks={"mask": Mask("right")}, expect_error="mask",
              note="a model with a mamba layer refuses a mask input"),
    dec("mamba_hybrid_mask_refused", ids(7, batch=2), dict(_TINY, num_layers=2, layers=["attention", "mamba"]),
        masks={"mask": Mask("left")}, expect_error="mask",
        note="one mamba layer is enough: the hybrid refuses a mask input"),
    mamba_dec("mamba_load_conv_2d", ids(7), dict(d_model=16, vocab_size=20, layers=MAMBA2),
              weight_fault="mamba_conv_2d", expect_error="conv1d.weight",
              note="layers.0.mixer.conv1d.weight stored as [32, 4] (its singleton axis dropped) for [32, 1, 4]"),
    dec("mamba_load_missing_a_log", ids(7), dict(_TINY, num_layers=2, layers=["attention", "mamba"]),
        weight_fault="mamba_missing_a_log", expect_error="A_log",
        note="layers.1.mixer.A_log left out of the file"),
]


# ---- contract section 10: weight formats at f16's edge (run_e2e.py --weight-dtype) ----
# weight_edit_rows(): 65519 (rounds to f16's 65504) and 65520 (rounds beyond
# it) in two layers' linear1, neither reaching the output; 1e6 in a
# pos_embed row no input reaches.  With --weight-dtype=f16 the executable
# must refuse layers.1.linear1.weight (exit 1 naming it); in every other
# format (f32 included) it is an ordinary case.
CASES += [
    dec("wdtype_f16_range", ids(13, batch=2), dict(vocab_size=64, positional="learned", norm="pre",
                                                   tie_embeddings=False),
        weight_edit="f16_range",
        note="65519 in layers.0.linear1 (f16: 65504), 65520 in layers.1.linear1 (f16: a load error naming it), "
             "1e6 in an unread pos_embed row (never converted); untied head"),
]


@dataclass(frozen=True)
class CompileError:
    """A model description tfm-compile must refuse (contract section 7:
    "a bad value, a kind's key on another kind ... are errors at their line
    and column"): `tfm-compile NAME.json --emit=mlir` (and `-o EXE`) exits
    1, writes nothing, and prints one stderr line `NAME.json:LINE:COL:
    error: MESSAGE`.  `message` is the compiler's text after "error: "
    (frontend/ModelConfig.cpp's wording, as for linformer); `reference` is
    what reference.Config's ConfigError must contain (the oracle refuses
    the description too), or, for a description refused only with
    `args` (tfm-compile flags such as --max-seq-len), what the oracle's
    refusal to run that length says (reference_refusal()).  run_e2e.py
    runs them with --compile-errors (not by default: the frontend's lit
    tests hold the same checks)."""
    name: str
    model: Dict
    message: str
    reference: str
    note: str = ""
    args: Tuple[str, ...] = ()
    # The description's JSON text, written as it is (a duplicated key,
    # which a dict cannot hold); model is then json.loads(text).
    text: Optional[str] = None


def _perf_error(name, attention=None, **kw):
    m = _model(name, "encoder", **dict(_TINY_FLOAT, **kw))
    m["attention"] = attention
    return m


COMPILE_ERRORS = [
    CompileError("perf_err_features_missing", _perf_error("perf_err_features_missing", {"kind": "performer"}),
                 "attention kind 'performer' needs 'features'", "needs \"features\"",
                 note="at the attention object's opening brace"),
    CompileError("perf_err_features_zero", _perf_error("perf_err_features_zero",
                                                       {"kind": "performer", "features": 0}),
                 "'features' must be at least 1 (the random features performer maps each query and key to), "
                 "got 0", "'features'", note="at the value"),
    CompileError("perf_err_features_fraction", _perf_error("perf_err_features_fraction",
                                                           {"kind": "performer", "features": 2.5}),
                 "'features' must be an integer from 0 to 16777216, got 2.5", "'features'",
                 note="not an integer (the count keys' message, as linformer's 'k'), at the value"),
    CompileError("perf_err_features_string", _perf_error("perf_err_features_string",
                                                         {"kind": "performer", "features": "8"}),
                 "'features' must be an integer from 0 to 16777216, got \"8\"", "'features'",
                 note="a string, at the value"),
    CompileError("perf_err_features_huge", _perf_error("perf_err_features_huge",
                                                       {"kind": "performer", "features": 16777217}),
                 "'features' must be an integer from 0 to 16777216, got 16777217", "'features'",
                 note="above 2^24, at the value"),
    CompileError("perf_err_linformer_key", _perf_error("perf_err_linformer_key",
                                                       {"kind": "performer", "features": 8, "k": 4}),
                 "'k' is a key of attention kind 'linformer', not of 'performer'", "linformer",
                 note="at the key 'k'"),
    CompileError("perf_err_score_dot", _perf_error("perf_err_score_dot", {"kind": "performer", "features": 8},
                                                   attention_score="dot"),
                 "attention kind 'performer' takes scaled_dot scores, got 'dot'", "scaled_dot",
                 note="at attention_score's value"),
    CompileError("perf_err_score_additive", _perf_error("perf_err_score_additive",
                                                        {"kind": "performer", "features": 8},
                                                        architecture="decoder", attention_score="additive"),
                 "attention kind 'performer' takes scaled_dot scores, got 'additive'", "scaled_dot",
                 note="a causal decoder: the score is the only problem"),
]


def _bs_error(name, attention, **kw):
    m = _model(name, "encoder", **dict(_TINY_FLOAT, **kw))
    m["attention"] = attention
    return m


COMPILE_ERRORS += [
    CompileError("bs_err_block_missing", _bs_error("bs_err_block_missing", {"kind": "block_sparse"}),
                 "attention kind 'block_sparse' needs 'block'", "needs \"block\"",
                 note="at the attention object's opening brace"),
    CompileError("bs_err_block_zero", _bs_error("bs_err_block_zero", {"kind": "block_sparse", "block": 0}),
                 "'block' must be at least 1 (the positions of a block), got 0", "'block'", note="at the value"),
    CompileError("bs_err_block_huge", _bs_error("bs_err_block_huge", {"kind": "block_sparse", "block": 16777217}),
                 "'block' must be an integer from 0 to 16777216, got 16777217", "'block'",
                 note="above 2^24, at the value"),
    CompileError("bs_err_random_negative", _bs_error("bs_err_random_negative",
                                                     {"kind": "block_sparse", "block": 2, "random_blocks": -1}),
                 "'random_blocks' must be an integer from 0 to 16777216, got -1", "'random_blocks'",
                 note="at the value"),
    CompileError("bs_err_window_key", _bs_error("bs_err_window_key",
                                                {"kind": "block_sparse", "block": 2, "window": 2}),
                 "'window' is a key of attention kind 'sliding_window', not of 'block_sparse'", "sliding_window",
                 note="sliding_window's key on block_sparse, at the key 'window'"),
    CompileError("bs_err_window_blocks_on_window", _bs_error("bs_err_window_blocks_on_window",
                                                             {"kind": "sliding_window", "window": 2,
                                                              "window_blocks": 1}),
                 "'window_blocks' is a key of attention kind 'block_sparse', not of 'sliding_window'",
                 "block_sparse", note="block_sparse's key on sliding_window, at the key"),
    CompileError("bs_err_max_seq_len", _bs_error("bs_err_max_seq_len",
                                                 {"kind": "block_sparse", "block": 4, "random_blocks": 2}),
                 "--max-seq-len 32 exceeds max_seq_len 16: block_sparse's block_pattern has no rows for the "
                 "query blocks beyond it", "block_pattern", args=("--max-seq-len", "32"),
                 note="random_blocks 2: block_pattern has ceil(16 / 4) = 4 rows, 32 positions need 8; at "
                      "max_seq_len"),
]


def _emb_error(name, arch="encoder", **kw):
    return _model(name, arch, **dict(_TINY_FLOAT, **kw))


COMPILE_ERRORS += [
    CompileError("tt_err_decoder", _emb_error("tt_err_decoder", "decoder", vocab_size=20, type_vocab_size=2),
                 "'type_vocab_size' needs architecture 'encoder' (BERT's token types), not 'decoder'",
                 "needs architecture 'encoder'", note="at type_vocab_size's value"),
    CompileError("tt_err_encdec", _emb_error("tt_err_encdec", "encoder_decoder", vocab_size=20, type_vocab_size=2),
                 "'type_vocab_size' needs architecture 'encoder' (BERT's token types), not 'encoder_decoder'",
                 "needs architecture 'encoder'", note="at type_vocab_size's value"),
    CompileError("tt_err_no_vocab", _emb_error("tt_err_no_vocab", type_vocab_size=2),
                 "'type_vocab_size' needs 'vocab_size': token types are added to token embeddings",
                 "needs 'vocab_size'", note="float inputs have no token embeddings"),
    CompileError("emb_err_norm_not_bool", _emb_error("emb_err_norm_not_bool", vocab_size=20, embedding_norm=1),
                 "'embedding_norm' must be true or false, got 1", "'embedding_norm'", note="at the value"),
]


def _moe_error(name, ffn, arch="encoder", **kw):
    m = _model(name, arch, **dict(_TINY_FLOAT, **kw))
    m["ffn"] = ffn
    return m


# The `ffn` key's errors (contract section 7), each at its line and column;
# the messages are frontend/ModelConfig.cpp's wording for `ffn` (its kind
# objects' messages, as for `attention`).
COMPILE_ERRORS += [
    CompileError("moe_err_not_object", _moe_error("moe_err_not_object", "moe"),
                 "'ffn' must be an object such as {\"kind\": \"moe\", \"experts\": 8, \"top_k\": 2}, got \"moe\"",
                 "'ffn' must be an object", note="at the value"),
    CompileError("moe_err_kind_missing", _moe_error("moe_err_kind_missing", {"experts": 4, "top_k": 2}),
                 "'ffn' needs a 'kind': one of dense, moe", "'ffn' needs a", note="at the object's opening brace"),
    CompileError("moe_err_kind_unknown", _moe_error("moe_err_kind_unknown", {"kind": "sparse"}),
                 "'ffn' kind must be one of dense, moe; got \"sparse\"", "'ffn' kind", note="at the kind's value"),
    CompileError("moe_err_experts_missing", _moe_error("moe_err_experts_missing", {"kind": "moe", "top_k": 2}),
                 "ffn kind 'moe' needs 'experts'", "needs \"experts\"", note="at the object's opening brace"),
    CompileError("moe_err_top_k_missing", _moe_error("moe_err_top_k_missing", {"kind": "moe", "experts": 4},
                                                     arch="decoder"),
                 "ffn kind 'moe' needs 'top_k'", "needs \"top_k\"", note="a decoder; at the opening brace"),
    CompileError("moe_err_experts_zero", _moe_error("moe_err_experts_zero",
                                                    {"kind": "moe", "experts": 0, "top_k": 1}),
                 "'experts' must be at least 1 (the FFNs a token is routed to), got 0", "'experts'",
                 note="at the value"),
    CompileError("moe_err_top_k_zero", _moe_error("moe_err_top_k_zero", {"kind": "moe", "experts": 4, "top_k": 0}),
                 "'top_k' must be at least 1 (the experts each token is routed to), got 0", "'top_k'",
                 note="at the value"),
    CompileError("moe_err_top_k_negative", _moe_error("moe_err_top_k_negative",
                                                      {"kind": "moe", "experts": 4, "top_k": -1}),
                 "'top_k' must be an integer from 0 to 16777216, got -1", "'top_k'", note="at the value"),
    CompileError("moe_err_top_k_above_experts", _moe_error("moe_err_top_k_above_experts",
                                                           {"kind": "moe", "experts": 2, "top_k": 3},
                                                           arch="encoder_decoder"),
                 "'top_k' 3 is more than 'experts' 2: each token picks top_k distinct experts",
                 "'top_k' 3 is more than 'experts' 2", note="an encoder_decoder; at top_k's value"),
    CompileError("moe_err_experts_fraction", _moe_error("moe_err_experts_fraction",
                                                        {"kind": "moe", "experts": 2.5, "top_k": 1}),
                 "'experts' must be an integer from 0 to 16777216, got 2.5", "'experts'", note="at the value"),
    CompileError("moe_err_experts_bool", _moe_error("moe_err_experts_bool",
                                                    {"kind": "moe", "experts": True, "top_k": 1}),
                 "'experts' must be an integer from 0 to 16777216, got true", "'experts'", note="at the value"),
    CompileError("moe_err_top_k_string", _moe_error("moe_err_top_k_string",
                                                    {"kind": "moe", "experts": 4, "top_k": "2"}),
                 "'top_k' must be an integer from 0 to 16777216, got \"2\"", "'top_k'", note="at the value"),
    CompileError("moe_err_unknown_key", _moe_error("moe_err_unknown_key",
                                                   {"kind": "moe", "experts": 4, "top_k": 2, "capacity_factor": 1.25}),
                 "unknown key 'capacity_factor' in 'ffn' (kind 'moe' takes experts, top_k)",
                 "unknown keys in 'ffn'", note="at the key"),
    CompileError("moe_err_dense_key", _moe_error("moe_err_dense_key", {"kind": "dense", "experts": 4}),
                 "'experts' is a key of ffn kind 'moe', not of 'dense'", "a key of kind 'moe'", note="at the key"),
]


def _layers_error(name, layers, arch="decoder", **kw):
    m = _model(name, arch, **dict(_TINY, **kw))
    m["layers"] = layers
    return m


def _layers_error_text(name, entry_text):
    """A one-layer decoder whose `layers` entry is `entry_text` verbatim."""
    m = _model(name, "decoder", **_TINY)
    text = json.dumps(m, indent=2)[:-2] + ',\n  "layers": [%s]\n}\n' % entry_text
    return json.loads(text), text


_DUP_MODEL, _DUP_TEXT = _layers_error_text(
    "layers_err_duplicate_key", '{"kind": "attention", "ffn": {"kind": "dense"}, "ffn": {"kind": "dense"}}')
_LIN = {"kind": "linformer", "k": 4}

# The `layers` key's errors (contract section 7: `layers` of the wrong
# length or outside `decoder`), each at its line and column: the layers
# value, an entry, or a key (its value) inside an entry; inside an entry's
# `attention` and `ffn`, the model-level keys' own messages.
COMPILE_ERRORS += [
    CompileError("layers_err_encoder", _layers_error("layers_err_encoder", ["attention"], "encoder"),
                 "'layers' applies to architecture 'decoder' only, not 'encoder'", "'layers' applies to",
                 note="at the layers value"),
    CompileError("layers_err_encdec", _layers_error("layers_err_encdec", ["attention"], "encoder_decoder"),
                 "'layers' applies to architecture 'decoder' only, not 'encoder_decoder'", "'layers' applies to",
                 note="at the layers value"),
    CompileError("layers_err_not_list", _layers_error("layers_err_not_list", 3),
                 "'layers' must be a list of 'num_layers' entries such as [\"attention\", {\"kind\": "
                 "\"attention\", \"ffn\": {\"kind\": \"moe\", \"experts\": 8, \"top_k\": 2}}], got 3",
                 "'layers' must be a list", note="at the value"),
    CompileError("layers_err_not_list_string", _layers_error("layers_err_not_list_string", "attention"),
                 "'layers' must be a list of 'num_layers' entries such as [\"attention\", {\"kind\": "
                 "\"attention\", \"ffn\": {\"kind\": \"moe\", \"experts\": 8, \"top_k\": 2}}], "
                 "got \"attention\"", "'layers' must be a list", note="a string, at the value"),
    CompileError("layers_err_length", _layers_error("layers_err_length", ["attention"] * 3, num_layers=4),
                 "'layers' has 3 entries, but 'num_layers' is 4", "'layers' has 3 entries",
                 note="at the layers value"),
    CompileError("layers_err_empty", _layers_error("layers_err_empty", [], num_layers=2),
                 "'layers' has 0 entries, but 'num_layers' is 2", "'layers' has 0 entries",
                 note="at the layers value"),
    CompileError("layers_err_entry_number", _layers_error("layers_err_entry_number", ["attention", "attention", 5],
                                                          num_layers=3),
                 "'layers[2]' must be \"attention\", \"mamba\" or an object such as {\"kind\": \"attention\", "
                 "\"attention\": {\"kind\": \"sliding_window\", \"window\": 256}}, got 5", "'layers[2]' must be",
                 note="at the entry"),
    CompileError("layers_err_entry_string", _layers_error("layers_err_entry_string", ["attention", "full"],
                                                          num_layers=2),
                 "'layers[1]' kind must be one of attention, mamba; got \"full\"", "'layers[1]' kind must be",
                 note="an attention kind where a layer kind goes, at the entry"),
    CompileError("layers_err_kind_missing", _layers_error("layers_err_kind_missing",
                                                          [{"attention": att_window(2)}]),
                 "'layers[0]' needs a 'kind': one of attention, mamba", "'layers[0]' needs a 'kind'",
                 note="at the entry's opening brace"),
    CompileError("layers_err_kind_unknown", _layers_error("layers_err_kind_unknown", [{"kind": "transformer"}]),
                 "'layers[0]' kind must be one of attention, mamba; got \"transformer\"", "'layers[0]' kind must be",
                 note="at the kind's value"),
    CompileError("layers_err_unknown_key", _layers_error("layers_err_unknown_key",
                                                         [{"kind": "attention", "norm": "pre"}]),
                 "unknown key 'norm' in 'layers[0]' (kind 'attention' takes attention, ffn)",
                 "unknown key 'norm' in 'layers[0]'", note="a model-level key inside an entry, at the key"),
    CompileError("layers_err_duplicate_key", _DUP_MODEL, "duplicate key 'ffn' in 'layers[0]'",
                 "duplicate key 'ffn' in 'layers[0]'", text=_DUP_TEXT, note="at the second key"),
    CompileError("layers_err_attention_not_object", _layers_error("layers_err_attention_not_object",
                                                                  [layer("performer")]),
                 "'attention' must be an object such as {\"kind\": \"sliding_window\", \"window\": 256}, "
                 "got \"performer\"", "'attention' must be an object", note="the entry's attention value"),
    CompileError("layers_err_block_missing", _layers_error("layers_err_block_missing", ["attention", layer(
        {"kind": "block_sparse", "random_blocks": 1})], num_layers=2),
                 "attention kind 'block_sparse' needs 'block'", "needs \"block\"",
                 note="at the entry's attention object's opening brace"),
    CompileError("layers_err_window_key", _layers_error("layers_err_window_key", [layer(
        {"kind": "block_sparse", "block": 2, "window": 2})]),
                 "'window' is a key of attention kind 'sliding_window', not of 'block_sparse'", "sliding_window",
                 note="at the key inside the entry's attention"),
    CompileError("layers_err_features_zero", _layers_error("layers_err_features_zero", [layer(
        {"kind": "performer", "features": 0})]),
                 "'features' must be at least 1 (the random features performer maps each query and key to), "
                 "got 0", "'features'", note="at the value"),
    CompileError("layers_err_ffn_kind_unknown", _layers_error("layers_err_ffn_kind_unknown", [layer(
        ffn={"kind": "sparse"})]),
                 "'ffn' kind must be one of dense, moe; got \"sparse\"", "'ffn' kind", note="at the kind's value"),
    CompileError("layers_err_experts_missing", _layers_error("layers_err_experts_missing", [layer(
        ffn={"kind": "moe", "top_k": 2})]),
                 "ffn kind 'moe' needs 'experts'", "needs \"experts\"", note="at the entry's ffn object's brace"),
    CompileError("layers_err_top_k_above_experts", _layers_error("layers_err_top_k_above_experts",
                                                                 ["attention", layer(ffn=ffn_moe(4, 5))],
                                                                 num_layers=2),
                 "'top_k' 5 is more than 'experts' 4: each token picks top_k distinct experts",
                 "'top_k' 5 is more than 'experts' 4", note="at top_k's value"),
    CompileError("layers_err_linformer", _layers_error("layers_err_linformer", ["attention", layer(_LIN)],
                                                       num_layers=2),
                 "attention kind 'linformer' is never causal, but this decoder is causal by default (set "
                 "\"causal\": false): linformer's projection mixes every position into each key",
                 "never causal", note="a linformer layer in a (causal by default) decoder, at the entry's attention "
                                      "value"),
    CompileError("layers_err_linformer_causal", _layers_error("layers_err_linformer_causal", [layer(_LIN)],
                                                              causal=True),
                 "attention kind 'linformer' is never causal, but this decoder is causal: linformer's projection "
                 "mixes every position into each key", "never causal", note="causal given: true"),
    CompileError("layers_err_performer_score", _layers_error("layers_err_performer_score", [
        "attention", layer(att_performer(4))], num_layers=2, attention_score="dot"),
                 "attention kind 'performer' takes scaled_dot scores, got 'dot'", "scaled_dot",
                 note="one performer layer: the model's attention_score, at its value"),
    CompileError("layers_err_max_seq_len", _layers_error("layers_err_max_seq_len", [
        "attention", layer(att_block_sparse(4, r=2))], num_layers=2),
                 "--max-seq-len 32 exceeds max_seq_len 16: block_sparse's block_pattern has no rows for the "
                 "query blocks beyond it", "block_pattern", args=("--max-seq-len", "32"),
                 note="a block_sparse layer with random blocks: block_pattern has ceil(16 / 4) = 4 rows; at "
                      "max_seq_len"),
]


def reference_refusal(e):
    """The oracle's refusal of CompileError e, or None if it takes it: the
    description's ConfigError; with `--max-seq-len N` in e.args, a
    block_sparse model with random blocks whose pattern (of max_seq_len's
    rows) cannot serve N positions, or a linformer one (E and F have
    max_seq_len columns)."""
    import reference
    if e.text is not None:
        dup = reference.find_duplicate_key(e.text)
        if dup:
            return dup
    try:
        cfg = reference.Config(e.model)
    except reference.ConfigError as err:
        return str(err)
    if "--max-seq-len" in e.args:
        n = int(e.args[list(e.args).index("--max-seq-len") + 1])
        for lc in cfg.layer_configs():      # each layer's kind (section 7's `layers`)
            if lc.block_sparse and lc.random_blocks:
                import torch
                rows = reference.n_blocks(cfg.max_seq_len, lc.block)
                try:
                    reference.block_sparse_allowed(range(n), range(n), lc.block, lc.window_blocks,
                                                   lc.global_blocks, torch.zeros(rows, lc.random_blocks,
                                                                                 dtype=torch.long))
                except ValueError as err:
                    return str(err)
        if cfg.linformer and n > cfg.max_seq_len:
            return "linformer: %d positions, proj_e has %d columns" % (n, cfg.max_seq_len)
    return None


def by_name():
    return {c.name: c for c in CASES}


def validate():
    """Structural checks of the table; returns a list of problems."""
    import reference
    problems = []
    seen = set()
    for c in CASES:
        if c.name in seen:
            problems.append("%s: duplicate name" % c.name)
        seen.add(c.name)
        if c.model.get("name") != c.name:
            problems.append("%s: model name %r" % (c.name, c.model.get("name")))
        try:
            cfg = reference.Config(c.model)
        except reference.ConfigError as e:
            problems.append("%s: %s" % (c.name, e))
            continue
        if tuple(sorted(c.inputs)) != tuple(sorted(cfg.input_names)):
            problems.append("%s: inputs %s, model takes %s" % (c.name, sorted(c.inputs), cfg.input_names))
        batches = {i.batch for i in c.inputs.values()}
        if len(batches) != 1:
            problems.append("%s: inputs disagree on the batch dimension" % c.name)
        for n, i in c.inputs.items():
            want = ("int32", "int64") if cfg.tokens else ("float32",)
            if i.dtype not in want:
                problems.append("%s: input %s dtype %s, model wants %s" % (c.name, n, i.dtype, want))
            if i.seq > c.effective_max_seq_len():
                problems.append("%s: input %s seq %d > max %d" % (c.name, n, i.seq, c.effective_max_seq_len()))
            if cfg.positional == "learned" and i.seq > cfg.max_seq_len:
                problems.append("%s: learned positions and seq %d > max_seq_len" % (c.name, i.seq))
            if (i.batch or 1) > c.effective_max_batch():
                problems.append("%s: batch %d > --max-batch %d" % (c.name, i.batch, c.effective_max_batch()))
        if cfg.positional == "learned" and c.max_seq_len and c.max_seq_len > cfg.max_seq_len:
            problems.append("%s: --max-seq-len above max_seq_len with learned positions" % c.name)
        if c.shared_embeddings and not (cfg.is_encdec and cfg.tokens):
            problems.append("%s: shared embeddings need encoder_decoder with vocab_size" % c.name)
        if c.weight_dtype not in ("F32", "F16", "BF16"):
            problems.append("%s: weight dtype %s" % (c.name, c.weight_dtype))
        if cfg.linformer and c.max_seq_len and c.max_seq_len > cfg.max_seq_len:
            problems.append("%s: --max-seq-len above max_seq_len with linformer (E and F have "
                            "max_seq_len columns)" % c.name)
        problems += _validate_block_sparse(c, cfg)
        problems += _validate_moe(c, cfg)
        problems += _validate_weight_edit(c, cfg)
        problems += _validate_token_types(c, cfg)
        problems += _validate_masks(c, cfg)
    for e in COMPILE_ERRORS:
        if e.name in seen:
            problems.append("%s: duplicate name" % e.name)
        seen.add(e.name)
        if e.model.get("name") != e.name:
            problems.append("%s: model name %r" % (e.name, e.model.get("name")))
        err = reference_refusal(e)
        if err is None:
            problems.append("%s: the reference accepts a description tfm-compile must refuse" % e.name)
        elif e.reference not in err:
            problems.append("%s: the reference refuses it, but not naming %r: %s" % (e.name, e.reference, err))
        if any(a not in ("--max-seq-len",) and not a.isdigit() for a in e.args):
            problems.append("%s: args %s: only --max-seq-len N is understood" % (e.name, e.args))
    return problems


def _validate_block_sparse(c, cfg):
    """block_sparse's pattern dtype, its random blocks mattering, the
    compiled length, and the weight faults."""
    problems = []
    if c.pattern_dtype not in PATTERN_DTYPES:
        problems.append("%s: pattern dtype %r" % (c.name, c.pattern_dtype))
    # The layers with random blocks (every layer's kind, section 7's `layers`).
    random = [lc for lc in cfg.layer_configs() if lc.block_sparse and lc.random_blocks]
    if c.pattern_dtype != "I32" and not random:
        problems.append("%s: pattern_dtype without a block_pattern" % c.name)
    if random:
        if c.max_seq_len and c.max_seq_len > cfg.max_seq_len:
            problems.append("%s: --max-seq-len above max_seq_len with random blocks (block_pattern has "
                            "ceil(max_seq_len / block) rows)" % c.name)
        lengths = stack_lengths(cfg, c.inputs)
        facts = pattern_facts(cfg, block_patterns(cfg, case_seed(c.name), lengths, c.pattern_dtype), lengths)
        sparse = False
        for lc in random:
            nb = max(-(-n // lc.block) for n in lengths.values())
            sparse = sparse or (nb > 1 and lc.window_blocks < nb - 1 and lc.global_blocks < nb)
        if sparse and c.weight_fault is None and "random blocks matter" not in facts:
            problems.append("%s: no pattern id adds a key block to its row: the random blocks do not matter"
                            % c.name)
    if c.weight_fault is not None:
        if c.weight_fault not in WEIGHT_FAULTS + MOE_WEIGHT_FAULTS + MAMBA_WEIGHT_FAULTS:
            problems.append("%s: weight fault %r" % (c.name, c.weight_fault))
        elif c.expect_error is None or c.masks:
            problems.append("%s: a weight fault needs expect_error (the tensor's name) and no masks" % c.name)
        else:
            import reference
            lengths = stack_lengths(cfg, c.inputs)
            names = weight_file(c, cfg, {k: np.zeros(v, np.float32) for k, v in reference.expected_weights(
                cfg, c.shared_embeddings).items()},
                block_patterns(cfg, case_seed(c.name), lengths, c.pattern_dtype))[1]
            found = reference.weights_problems(cfg, names, c.shared_embeddings)
            if not any(c.expect_error in msg for msg in found):
                problems.append("%s: the reference does not refuse its weights naming %r (%s)"
                                % (c.name, c.expect_error, found or "accepted"))
    return problems


def weight_file(case, cfg, arrays, patterns):
    """What the case writes: (name -> numpy array, name -> (shape, file
    dtype)), in the listing's order: the float weights in the case's
    weight_dtype, each block_pattern as `patterns` has it (block_patterns())
    in pattern_dtype, the case's MoE gate rows (moe_gate_rows()) and
    weight_edit (weight_edit_rows()), then the case's weight_fault applied (WEIGHT_FAULTS, MOE_WEIGHT_FAULTS)."""
    arrays = dict(arrays)
    if case.moe_gate is not None:
        arrays = moe_gate_rows(cfg, arrays, *case.moe_gate)
    if case.weight_edit is not None:
        arrays = weight_edit_rows(cfg, arrays, case.weight_edit)
    dtypes = {}
    for k in arrays:
        if k in patterns:
            arrays[k] = patterns[k]
            dtypes[k] = case.pattern_dtype
        else:
            dtypes[k] = case.weight_dtype
    fault = case.weight_fault
    pats = [k for k in arrays if k.endswith("self_attn.block_pattern")]
    if fault == "pattern_f32":
        for k in pats:
            arrays[k], dtypes[k] = np.asarray(arrays[k]).astype(np.float32), "F32"
    elif fault == "pattern_transposed":
        for k in pats:
            arrays[k] = np.ascontiguousarray(np.asarray(arrays[k]).T)
    elif fault == "pattern_unexpected":
        import reference
        prefix = "encoder.layers.0." if cfg.is_encdec else "layers.0."
        name = prefix + "self_attn.block_pattern"
        rows = reference.n_blocks(cfg.max_seq_len, cfg.kinds_of(prefix).block or 1)
        out = {}
        for k, v in arrays.items():
            out[k] = v
            if k == prefix + "self_attn.in_proj_weight":
                out[name] = np.zeros((rows, 1), dtype=np.int32)
        arrays = out
        dtypes = {k: dtypes.get(k, "I32") for k in arrays}
    elif fault == "float_as_i32":
        k = next(k for k in arrays if k.endswith("linear2.bias"))
        arrays[k] = np.rint(np.asarray(arrays[k]) * 100).astype(np.int32)
        dtypes[k] = "I32"
    elif fault == "moe_missing_expert":
        k = next(k for k in arrays if k.endswith("moe.experts.1.linear2.weight"))
        del arrays[k]
        del dtypes[k]
    elif fault == "moe_gate_transposed":
        k = next(k for k in arrays if k.endswith("moe.gate.weight"))
        arrays[k] = np.ascontiguousarray(np.asarray(arrays[k]).T)
    elif fault == "mamba_conv_2d":
        k = next(k for k in arrays if k.endswith("mixer.conv1d.weight"))
        arrays[k] = np.ascontiguousarray(np.asarray(arrays[k])[:, 0, :])
    elif fault == "mamba_missing_a_log":
        k = next(k for k in arrays if k.endswith("mixer.A_log"))
        del arrays[k]
        del dtypes[k]
    return arrays, {k: (tuple(np.asarray(v).shape), dtypes[k]) for k, v in arrays.items()}


def case_weights(case, cfg):
    """The case's weights as its file holds them, name -> numpy array:
    reference.make_weights with the case's seed, its block patterns, MoE
    gate rows and weight fault (weight_file()), each rounded to its file
    dtype as the harness reads them back."""
    import reference
    import safetensors as st
    made = reference.make_weights(reference.Config(case.model), case_seed(case.name), case.shared_embeddings)
    arrays, tensors = weight_file(case, cfg, {k: v.numpy() for k, v in made.items()}, case_block_patterns(case, cfg))
    return {k: st.round_to_dtype(a, tensors[k][1]) for k, a in arrays.items()}


def _validate_weight_edit(c, cfg):
    """Case.weight_edit: the model weight_edit_rows() needs."""
    if c.weight_edit is None:
        return []
    if c.weight_edit not in WEIGHT_EDITS:
        return ["%s: weight edit %r (%s)" % (c.name, c.weight_edit, ", ".join(WEIGHT_EDITS))]
    problems = []
    if (cfg.is_encdec or cfg.num_layers < 2 or any(lc.moe for lc in cfg.layer_configs()) or cfg.ffn_gated
            or cfg.d_ff < 8 or cfg.d_model < 11):
        problems.append("%s: f16_range needs an encoder or decoder of 2 dense, not gated layers or more "
                        "(d_ff >= 8, d_model >= 11)" % c.name)
    if cfg.positional != "learned" or any(i.seq >= cfg.max_seq_len for i in c.inputs.values()):
        problems.append("%s: f16_range needs learned positions and inputs shorter than max_seq_len" % c.name)
    if c.weight_dtype != "F32" or c.weight_fault is not None or c.expect_error is not None:
        problems.append("%s: f16_range needs F32 weights, no weight fault and no expected error" % c.name)
    return problems


def _validate_moe(c, cfg):
    """A mixture-of-experts case's gate rows (Case.moe_gate) and weight
    faults.  (Its routing margin, reference.MOE_MIN_GAP, is the oracle's
    self-test's, on the weights and inputs the harness makes.)"""
    problems = []
    if c.weight_fault in MOE_WEIGHT_FAULTS and not cfg.moe:
        problems.append("%s: weight fault %r needs a mixture-of-experts model" % (c.name, c.weight_fault))
    if c.weight_fault == "moe_missing_expert" and cfg.moe and cfg.moe_experts < 2:
        problems.append("%s: moe_missing_expert needs 2 experts or more" % c.name)
    if c.weight_fault == "moe_gate_transposed" and cfg.moe and cfg.moe_experts == cfg.d_model:
        problems.append("%s: moe_gate_transposed of a square gate is no fault" % c.name)
    if c.moe_gate is None:
        return problems
    how, expert = c.moe_gate
    if not cfg.moe:
        problems.append("%s: moe_gate for a model without a mixture of experts" % c.name)
        return problems
    if how not in MOE_GATES or not 0 <= expert < cfg.moe_experts:
        problems.append("%s: moe_gate %s (kinds %s, experts 0..%d)" % (c.name, c.moe_gate, MOE_GATES,
                                                                       cfg.moe_experts - 1))
    if cfg.rms:
        problems.append("%s: moe_gate needs layer_norm (a norm bias to make a constant logit of)" % c.name)
    if how == "starved" and cfg.moe_top_k >= cfg.moe_experts:
        problems.append("%s: a starved expert needs top_k < experts" % c.name)
    if c.weight_fault is not None or c.weight_dtype != "F32":
        problems.append("%s: moe_gate with a weight fault or rounded weights" % c.name)
    if not problems:
        import reference
        made = reference.make_weights(cfg, case_seed(c.name), c.shared_embeddings)
        if moe_gate_constant(cfg, {k: v.numpy() for k, v in made.items()}) < 0.05:
            problems.append("%s: a norm's sum(bias / weight) is below 0.05: moe_gate_rows() would need a huge "
                            "gate row (pick another case)" % c.name)
    return problems


def _validate_token_types(c, cfg):
    """The token_type_ids of case c (Case.token_types) and their error cases."""
    problems = []
    tt = c.token_types
    if tt is None:
        if c.expect_detail and not c.masks:
            problems.append("%s: expect_detail without an input it is about" % c.name)
        return problems
    if not cfg.type_vocab_size:
        problems.append("%s: token_types for a model without type_vocab_size" % c.name)
    if tt.pattern not in TYPE_PATTERNS + TYPE_ERROR_PATTERNS:
        problems.append("%s: token type pattern %r" % (c.name, tt.pattern))
    if tt.dtype not in ("int32", "int64"):
        problems.append("%s: token type dtype %r" % (c.name, tt.dtype))
    if (tt.pattern in TYPE_ERROR_PATTERNS) != (c.expect_error is not None):
        problems.append("%s: token type pattern %r %s an error case" % (
            c.name, tt.pattern, "needs" if tt.pattern in TYPE_ERROR_PATTERNS else "in"))
    if tt.pattern in TYPE_ERROR_PATTERNS and c.masks:
        problems.append("%s: a token type error case with masks (one refused input at a time)" % c.name)
    if tt.pattern == "segments" and c.inputs[cfg.input_names[0]].seq < 2:
        problems.append("%s: segments need seq >= 2" % c.name)
    if tt.pattern == "random" and cfg.type_vocab_size and cfg.type_vocab_size < 2:
        problems.append("%s: random token types of one type are all zeros" % c.name)
    return problems


def _validate_masks(c, cfg):
    """The padding masks (section 8) and error cases of case c."""
    import reference
    problems = []
    for n, mk in c.masks.items():
        if n not in cfg.mask_names:
            problems.append("%s: mask input %r, the model takes %s" % (c.name, n, cfg.mask_names))
            continue
        if mk.pattern not in MASK_PATTERNS + MASK_ERROR_PATTERNS:
            problems.append("%s: %s pattern %r" % (c.name, n, mk.pattern))
        if mk.dtype not in MASK_DTYPES:
            problems.append("%s: %s dtype %r" % (c.name, n, mk.dtype))
        if mk.pattern in MASK_ERROR_PATTERNS and c.expect_error is None:
            problems.append("%s: %s pattern %r is an error, but the case expects none" % (c.name, n, mk.pattern))
        if mk.pattern == "value2" and mk.dtype == "bool":
            problems.append("%s: %s: a bool mask cannot hold a 2" % (c.name, n))
        if mk.pattern == "fraction" and mk.dtype != "float32":
            problems.append("%s: %s: a 0.5 needs a float32 mask" % (c.name, n))
        seq = c.inputs[cfg.mask_of[n]].seq
        if mk.pattern != "ones" and seq < 3:
            problems.append("%s: %s pattern %r needs seq >= 3" % (c.name, n, mk.pattern))
        if mk.lengths is not None and not (1 <= mk.lengths[0] < mk.lengths[1] < seq):
            problems.append("%s: %s lengths %s: 1 <= lo < hi < seq %d" % (c.name, n, mk.lengths, seq))
    if c.expect_error is not None and c.weight_fault is not None:
        return problems     # _validate_block_sparse's
    if c.expect_error is not None:
        refused_types = c.token_types is not None and c.token_types.pattern in TYPE_ERROR_PATTERNS
        if not (c.masks or refused_types) or not c.expect_error:
            problems.append("%s: an error case needs masks (or refused token_type_ids) and the input name "
                            "stderr must show" % c.name)
            return problems
        # The oracle must agree that it is an error: the reference refuses
        # the masks naming the input, or (--generate) they are good masks
        # and the option is what is refused.
        found = reference.mask_problems(cfg, case_inputs(c, cfg, case_seed(c.name)))
        if "--generate" in c.run_args:
            if found or not cfg.lm_head:
                problems.append("%s: --generate error case with bad masks %s or no LM head" % (c.name, found))
        elif not any(c.expect_error in msg and all(d in msg for d in c.expect_detail) for _, msg in found):
            problems.append("%s: the reference does not refuse its inputs naming %r%s (%s)"
                            % (c.name, c.expect_error, " and saying %s" % (c.expect_detail,)
                               if c.expect_detail else "", found or "accepted"))
    elif c.masks:
        if cfg.linformer or cfg.performer or cfg.mamba:
            problems.append("%s: %s refuses a mask input: an error case" % (
                c.name, "/".join([k for k in cfg.attention_kinds if k in ("linformer", "performer")]
                                 + (["mamba"] if cfg.mamba else []))))
        if c.run_args:
            problems.append("%s: run_args are for error cases" % c.name)
    return problems


def coverage():
    """feature -> list of case names exercising it."""
    import reference
    feats = {}

    def add(f, n):
        feats.setdefault(f, []).append(n)
    for c in CASES:
        cfg = reference.Config(c.model)
        n = c.name
        if c.expect_error is not None and cfg.mamba:
            for name in c.masks:
                add("mamba mask error names " + name, n)
                add("mamba mask error " + ("pure" if cfg.only_mamba else "hybrid"), n)
            if c.weight_fault is not None:
                add("mamba load error=" + c.weight_fault, n)
            continue
        if c.expect_error is not None:
            # Refused inputs: what is refused; they compare no output.
            for name, mk in c.masks.items():
                if mk.pattern in MASK_ERROR_PATTERNS:
                    add("mask error=" + mk.pattern, n)
                add("mask error names " + name, n)
            if cfg.linformer or cfg.performer:
                for k in sorted(set(cfg.attention_kinds) & {"linformer", "performer"}):
                    add("mask error=" + k, n)
            if cfg.performer:
                add("performer mask error names " + ",".join(sorted(c.masks)), n)
            if cfg.has_layers:
                add("layers mask error=" + "/".join(sorted(set(cfg.attention_kinds) & {"linformer", "performer"})),
                    n)
            if "--generate" in c.run_args:
                add("mask error=--generate", n)
            if c.weight_fault in MOE_WEIGHT_FAULTS:
                add("moe load error=" + c.weight_fault, n)
            elif c.weight_fault is not None:
                add("block_sparse load error=" + c.weight_fault, n)
            if c.token_types is not None and c.token_types.pattern in TYPE_ERROR_PATTERNS:
                add("token_type_ids error=" + c.token_types.pattern, n)
            continue
        if cfg.mamba:
            # Mamba layers (pure and hybrid stacks): their own features, not
            # the attention models' (which they would count without
            # exercising).
            _mamba_coverage(c, cfg, add, next(iter(c.inputs.values())).batch)
            continue
        if c.masks:
            _mask_coverage(c, cfg, add)
        if c.weight_edit is not None:
            add("weight edit=" + c.weight_edit, n)
        _embedding_coverage(c, cfg, add)
        add("architecture=" + cfg.architecture, n)
        add("positional=" + cfg.positional, n)
        if cfg.positional == "rope":
            add("rope_style=" + cfg.rope_style, n)
            if cfg.rope_base != 10000.0:
                add("rope_base!=default", n)
            add("rope+score=" + cfg.attention_score, n)
        add("score=" + cfg.attention_score, n)
        if cfg.attention_score == "additive":
            add("additive_dim=" + ("explicit" if "additive_dim" in c.model else "default"), n)
        add("norm=" + cfg.norm, n)
        add("final_norm=%s(%s)" % (cfg.final_norm, cfg.norm), n)
        if "final_norm" in c.model:
            add("final_norm override", n)
        if "norm_eps" in c.model:
            add("norm_eps!=default", n)
        add("activation=" + cfg.activation, n)
        add("causal=%s(%s%s)" % (cfg.causal, cfg.architecture, ",explicit" if "causal" in c.model else ""), n)
        add("inputs=" + "/".join(sorted({i.dtype for i in c.inputs.values()})), n)
        b = next(iter(c.inputs.values())).batch
        add("batch=" + ("none" if b is None else str(b)), n)
        if c.effective_max_batch() > 1:
            add("--max-batch", n)
        if c.max_seq_len:
            add("--max-seq-len", n)
        if cfg.lm_head:
            add("lm_head tied" if cfg.tie_embeddings else "lm_head untied", n)
        elif cfg.tokens:
            add("vocab without lm_head", n)
        if cfg.is_encdec and cfg.tokens:
            add("encdec embeddings " + ("shared" if c.shared_embeddings else "separate"), n)
        if cfg.embedding_scale != "none":
            add("embedding_scale", n)
        add("weights " + c.weight_dtype, n)
        for i in c.inputs.values():
            add("seq=%d" % i.seq, n)
        add("dk=%d" % cfg.head_dim, n)
        add("d_model=%d,heads=%d" % (cfg.d_model, cfg.num_heads), n)
        add("d_ff=%d" % cfg.d_ff, n)
        # Section 11.
        add("norm_type=%s(%s)" % (cfg.norm_type, cfg.norm), n)
        if cfg.rms and cfg.final_norm:
            add("rms_norm final norm", n)
        if cfg.ffn_gated:
            add("ffn_gated(%s)" % cfg.activation, n)
            add("ffn_gated bias=%s" % cfg.bias, n)
            if cfg.d_ff % 8:
                add("ffn_gated d_ff%8!=0", n)
        if cfg.num_kv_heads != cfg.num_heads:
            kv = "num_kv_heads=1" if cfg.num_kv_heads == 1 else "num_kv_heads grouped"
            add(kv, n)
            add("gqa(%s)" % cfg.architecture, n)
            add("gqa bias=%s" % cfg.bias, n)
            add("gqa+score=" + cfg.attention_score, n)
            if cfg.positional == "rope":
                add("gqa+rope", n)
        if not cfg.bias:
            add("bias=false(%s)" % cfg.architecture, n)
        # Section 7: a decoder's per-layer kinds (the kinds' own features
        # below are for the model-level `attention` and `ffn`).
        if cfg.has_layers:
            _layers_coverage(c, cfg, add, b)
        # Section 7: sliding windows.
        elif cfg.sliding_window:
            seq = max(i.seq for i in c.inputs.values())
            w, g = cfg.window, cfg.global_tokens
            arch = cfg.architecture + (",causal" if cfg.causal else "")
            add("window(%s)" % arch, n)
            if w == 0:
                add("window W=0", n)
            if w >= seq:
                add("window W>=seq", n)
            elif w == seq - 1:
                add("window W=seq-1", n)
            if g == 0:
                add("window G=0" + ("" if "global_tokens" in c.model["attention"] else " (default)"), n)
            elif g >= seq:
                add("window G>=seq", n)
            else:
                add("window G=%d(%s)" % (g, arch), n)
                if g > w:
                    add("window G>W", n)
            add("window+score=" + cfg.attention_score, n)
            if cfg.positional == "rope":
                add("window+rope_style=" + cfg.rope_style, n)
            add("window batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
            add("window inputs=" + ("ids" if cfg.tokens else "float32"), n)
            if cfg.lm_head:
                add("window lm_head", n)
            if cfg.num_kv_heads != cfg.num_heads:
                add("window gqa", n)
            if seq > 64 and seq % 16 and seq % 64:
                add("window seq>64, partial key blocks", n)
            add("window dk=%d" % cfg.head_dim, n)
        elif cfg.linformer:
            seqs = [i.seq for i in c.inputs.values()]
            kk = cfg.linformer_k
            add("linformer(%s%s)" % (cfg.architecture, "" if cfg.architecture == "encoder" else ",causal=False"),
                n)
            if kk == 1:
                add("linformer k=1", n)
            for sq in seqs:
                add("linformer k%sseq" % ("<" if kk < sq else "=" if kk == sq else ">"), n)
                add("linformer seq%smax_seq_len" % ("<" if sq < cfg.max_seq_len else "="), n)
                if sq == 1:
                    add("linformer seq=1", n)
                if sq > 64:
                    add("linformer seq>64", n)
            if cfg.positional == "rope":
                add("linformer+rope_style=" + cfg.rope_style, n)
            add("linformer positional=" + cfg.positional, n)
            add("linformer batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
            add("linformer inputs=" + ("ids" if cfg.tokens else "float32"), n)
            if cfg.lm_head:
                add("linformer lm_head " + ("tied" if cfg.tie_embeddings else "untied"), n)
            if cfg.num_kv_heads != cfg.num_heads:
                add("linformer " + ("num_kv_heads=1" if cfg.num_kv_heads == 1 else "gqa"), n)
            if cfg.uses_section11():
                add("linformer section 11", n)
            layers = [cfg.num_layers] if cfg.num_layers else [cfg.num_encoder_layers, cfg.num_decoder_layers]
            if sum(layers) >= 2:
                add("linformer layers>=2", n)
            add("linformer weights " + c.weight_dtype, n)
            add("linformer norm=" + cfg.norm, n)
        elif cfg.performer:
            seqs = [i.seq for i in c.inputs.values()]
            m, dk = cfg.performer_m, cfg.head_dim
            add("performer(%s%s)" % (cfg.architecture, ",causal" if cfg.causal else ""), n)
            add("performer M%sdk" % ("<" if m < dk else "=" if m == dk else ">"), n)
            if m in (1, 64):
                add("performer M=%d" % m, n)
            for sq in seqs:
                if sq == 1:
                    add("performer seq=1", n)
                if sq == cfg.max_seq_len:
                    add("performer seq=max_seq_len", n)
                if sq > cfg.max_seq_len:
                    add("performer seq>max_seq_len", n)
                if sq > 64:
                    add("performer seq>64", n)
            if cfg.positional == "rope":
                add("performer+rope_style=" + cfg.rope_style, n)
            add("performer positional=" + cfg.positional, n)
            add("performer batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
            add("performer inputs=" + ("ids" if cfg.tokens else "float32"), n)
            if cfg.lm_head:
                add("performer lm_head " + ("tied" if cfg.tie_embeddings else "untied"), n)
            if cfg.num_kv_heads != cfg.num_heads:
                add("performer " + ("num_kv_heads=1" if cfg.num_kv_heads == 1 else "gqa"), n)
            if cfg.uses_section11():
                add("performer section 11", n)
            layers = [cfg.num_layers] if cfg.num_layers else [cfg.num_encoder_layers, cfg.num_decoder_layers]
            if sum(layers) >= 2:
                add("performer layers>=2", n)
            add("performer weights " + c.weight_dtype, n)
            add("performer norm=" + cfg.norm, n)
            add("performer dk=%d" % dk, n)
            if c.shared_embeddings:
                add("performer encdec shared embeddings", n)
        elif cfg.block_sparse:
            _block_sparse_coverage(c, cfg, add, b)
        elif "attention" in c.model:
            add("attention kind=full explicit", n)
        if cfg.has_layers:
            pass
        elif cfg.moe:
            _moe_coverage(c, cfg, add, b)
        elif "ffn" in c.model:
            add("ffn kind=dense explicit", n)
        if cfg.uses_section11():
            add("section 11 batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
            add("section 11 weights " + c.weight_dtype, n)
            if c.cache_bytes:
                add("section 11 cache sizes", n)
            if min(i.seq for i in c.inputs.values()) == 1:
                add("section 11 seq=1", n)
            if cfg.lm_head:
                add("section 11 lm_head " + ("tied" if cfg.tie_embeddings else "untied"), n)
            if (cfg.rms and cfg.activation == "silu" and cfg.ffn_gated and cfg.positional == "rope"
                    and cfg.num_kv_heads < cfg.num_heads and not cfg.bias and cfg.norm == "pre"):
                add("llama-like" + (" encdec" if cfg.is_encdec else ""), n)
    for e in COMPILE_ERRORS:
        add("compile error " + e.name, e.name)
    return feats


def _mamba_coverage(c, cfg, add, b):
    """Section 7's mamba layers: the sizes, how the key and the entries say
    them, the inputs, norms, positions and heads they meet, the layer kinds
    beside them in a hybrid stack."""
    n, m = c.name, c.model.get("mamba", {})
    add("mamba(%s%s)" % (cfg.architecture, ",causal" if cfg.causal else ""), n)
    add("mamba stack " + ("pure" if cfg.only_mamba else "hybrid"), n)
    add("mamba d_state=%d" % cfg.mamba_d_state, n)
    add("mamba d_conv=%d" % cfg.mamba_d_conv, n)
    add("mamba expand=%d" % cfg.mamba_expand, n)
    r = m.get("dt_rank")
    add("mamba dt_rank " + ("default" if r is None else "auto" if r == "auto" else "explicit"), n)
    if "mamba" not in c.model:
        add("mamba key left out", n)
    for k in ("d_state", "d_conv", "expand"):
        if k not in m:
            add("mamba %s default" % k, n)
    spec = c.inputs["input"]
    add("mamba inputs=" + ("ids" if cfg.tokens else "float32"), n)
    if cfg.tokens:
        add("mamba ids " + spec.dtype, n)
    add("mamba batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
    add("mamba seq=%d" % spec.seq, n)
    if spec.seq > cfg.max_seq_len:
        add("mamba seq>max_seq_len", n)
    add("mamba norm=" + cfg.norm, n)
    add("mamba norm_type=" + cfg.norm_type, n)
    add("mamba final_norm=%s" % cfg.final_norm, n)
    add("mamba positional=" + cfg.positional, n)
    if cfg.lm_head:
        add("mamba lm_head " + ("tied" if cfg.tie_embeddings else "untied"), n)
    else:
        add("mamba hidden states", n)
    add("mamba weights " + c.weight_dtype, n)
    if c.max_seq_len and c.max_seq_len > cfg.max_seq_len:
        add("mamba --max-seq-len above max_seq_len", n)
    if c.effective_max_batch() > (b or 1):
        add("mamba batch < --max-batch", n)
    if cfg.only_mamba:
        add("mamba num_heads,d_ff " + ("given" if "num_heads" in c.model else "left out"), n)
    for entry, lc in zip(c.model["layers"], cfg.layer_configs()):
        if entry == "mamba":
            add("mamba entry \"mamba\"", n)
        elif lc.layer_kind == "mamba":
            add("mamba entry {kind: mamba}", n)
        else:
            add("mamba hybrid attention=" + lc.attention_kind, n)
            add("mamba hybrid ffn=" + lc.ffn_kind, n)
    if not cfg.only_mamba:
        if cfg.uses_section11():
            add("mamba hybrid section 11", n)
        if cfg.num_kv_heads != cfg.num_heads:
            add("mamba hybrid gqa", n)
        if cfg.layer_kinds[0] == "attention":
            add("mamba hybrid attention first", n)
    if cfg.num_layers >= 3:
        add("mamba layers>=3", n)


def _layers_coverage(c, cfg, add, b):
    """Section 7's `layers`: the kinds each layer takes, how its entry
    says it, what it overrides, and the options and inputs they meet."""
    import reference
    n = c.name
    model_kinds = reference.Config({k: v for k, v in c.model.items() if k != "layers"})
    views = cfg.layer_configs()
    add("layers(%s%s)" % (cfg.architecture, ",causal" if cfg.causal else ""), n)
    for entry, lc in zip(c.model["layers"], views):
        add("layers attention=" + lc.attention_kind, n)
        add("layers ffn=" + lc.ffn_kind, n)
        if isinstance(entry, str):
            add("layers entry \"%s\"" % entry, n)
        elif set(entry) == {"kind"}:
            add("layers entry {kind} alone", n)
        else:
            for key in ("attention", "ffn"):
                if key in entry:
                    add("layers entry own " + key, n)
        if lc.sliding_window and lc.global_tokens:
            add("layers window G>0", n)
        if lc.block_sparse:
            add("layers block_sparse R%s" % ("=0" if lc.random_blocks == 0 else ">=1"), n)
        if lc.moe:
            add("layers moe " + ("K=1" if lc.moe_top_k == 1 else "1<K<E" if lc.moe_top_k < lc.moe_experts else "K=E"),
                n)
        if isinstance(entry, dict) and "attention" in entry and model_kinds.attention_kind != "full" \
                and lc.attention_kind != model_kinds.attention_kind:
            add("layers model-level attention overridden", n)
        if isinstance(entry, dict) and "ffn" in entry and model_kinds.moe and not lc.moe:
            add("layers model-level moe, a dense layer", n)
    if cfg.uniform() is not None:
        add("layers every layer the same kinds", n)
    patterns = reference.expected_weights(cfg)
    shapes = {v for k, v in patterns.items() if k.endswith("self_attn.block_pattern")}
    if len(shapes) >= 2:
        add("layers block_patterns of different shapes", n)
    moes = {(lc.moe_experts, lc.moe_top_k) for lc in views if lc.moe}
    if len(moes) >= 2:
        add("layers MoE layers of different E/K", n)
    feats = {lc.performer_m for lc in views if lc.performer}
    if len(feats) >= 2:
        add("layers performer layers of different M", n)
    add("layers kinds=%d" % len(set(cfg.attention_kinds)), n)
    add("layers second form=" + cfg.second_form(), n)
    add("layers batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
    add("layers inputs=" + ("ids" if cfg.tokens else "float32"), n)
    add("layers norm=" + cfg.norm, n)
    add("layers positional=" + cfg.positional, n)
    add("layers weights " + c.weight_dtype, n)
    if cfg.num_kv_heads != cfg.num_heads:
        add("layers gqa", n)
    if cfg.uses_section11():
        add("layers section 11", n)
    if cfg.lm_head:
        add("layers lm_head " + ("tied" if cfg.tie_embeddings else "untied"), n)
    if any(i.seq > 64 for i in c.inputs.values()):
        add("layers seq>64", n)
    if c.masks:
        add("layers mask", n)
    if any(lc.block_sparse and lc.random_blocks for lc in views):
        add("layers block_sparse pattern " + c.pattern_dtype, n)


def _moe_coverage(c, cfg, add, b):
    """Mixture-of-experts FFNs: E/K, the FFN's options, the architectures,
    attention kinds and inputs they meet, and the routing extremes."""
    n, e, k = c.name, cfg.moe_experts, cfg.moe_top_k
    add("moe(%s%s)" % (cfg.architecture, ",causal" if cfg.causal else ""), n)
    add("moe E=%d K=%d" % (e, k), n)
    add("moe " + ("K=1" if k == 1 else "K=E" if k == e else "1<K<E"), n)
    add("moe norm=" + cfg.norm, n)
    add("moe norm_type=" + cfg.norm_type, n)
    add("moe activation=" + cfg.activation, n)
    if cfg.ffn_gated:
        add("moe ffn_gated(%s)" % cfg.activation, n)
    add("moe bias=%s" % cfg.bias, n)
    add("moe attention=" + cfg.attention_kind, n)
    add("moe batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
    add("moe inputs=" + ("ids" if cfg.tokens else "float32"), n)
    if cfg.lm_head:
        add("moe lm_head " + ("tied" if cfg.tie_embeddings else "untied"), n)
    if cfg.num_kv_heads != cfg.num_heads:
        add("moe gqa", n)
    if c.masks:
        add("moe mask", n)
    if c.shared_embeddings:
        add("moe encdec shared embeddings", n)
    add("moe weights " + c.weight_dtype, n)
    if cfg.d_model % 2 or cfg.d_ff % 2:
        add("moe odd sizes", n)
    tokens = max((i.batch or 1) * i.seq for i in c.inputs.values())
    if tokens == 1:
        add("moe one token (experts without a token)", n)
    if tokens > 64:
        add("moe tokens>64", n)
    if c.moe_gate is not None:
        add("moe gate " + c.moe_gate[0], n)


def _block_sparse_coverage(c, cfg, add, b):
    n, a = c.name, c.model["attention"]
    lengths = stack_lengths(cfg, c.inputs)
    arch = cfg.architecture + (",causal" if cfg.causal else "")
    bb, wb, gb, r = cfg.block, cfg.window_blocks, cfg.global_blocks, cfg.random_blocks
    add("block_sparse(%s)" % arch, n)
    for seq in lengths.values():
        nb = -(-seq // bb)
        add("block_sparse " + ("B=1" if bb == 1 else "B>seq" if bb > seq else
                               "B divides seq" if seq % bb == 0 else "partial last block"), n)
        if bb > cfg.max_seq_len:
            add("block_sparse B>max_seq_len", n)
        if wb >= nb - 1 and nb > 1:
            add("block_sparse window covers every block", n)
        if gb >= nb and nb > 1:
            add("block_sparse global_blocks>=blocks", n)
        if seq > 64:
            add("block_sparse seq>64", n)
        if r and seq < cfg.max_seq_len:
            add("block_sparse seq<max_seq_len", n)
        if r and nb == reference_rows(cfg):
            add("block_sparse every pattern row read", n)
    if wb == 0:
        add("block_sparse window_blocks=0", n)
    if gb == 0:
        add("block_sparse global_blocks=0", n)
    for k, v in (("window_blocks", wb), ("global_blocks", gb), ("random_blocks", r)):
        if k not in a:
            add("block_sparse %s default" % k, n)
    add("block_sparse R%s" % ("=0" if r == 0 else ">=1"), n)
    if r:
        add("block_sparse pattern " + c.pattern_dtype, n)
        for f in pattern_facts(cfg, block_patterns(cfg, case_seed(n), lengths, c.pattern_dtype), lengths):
            add("block_sparse pattern " + f, n)
    elif c.max_seq_len and c.max_seq_len > cfg.max_seq_len:
        add("block_sparse R=0 --max-seq-len above max_seq_len", n)
    add("block_sparse+score=" + cfg.attention_score, n)
    if cfg.positional == "rope":
        add("block_sparse+rope_style=" + cfg.rope_style, n)
    add("block_sparse batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
    add("block_sparse inputs=" + ("ids" if cfg.tokens else "float32"), n)
    if cfg.lm_head:
        add("block_sparse lm_head " + ("tied" if cfg.tie_embeddings else "untied"), n)
    if cfg.num_kv_heads != cfg.num_heads:
        add("block_sparse " + ("num_kv_heads=1" if cfg.num_kv_heads == 1 else "gqa"), n)
    if cfg.uses_section11():
        add("block_sparse section 11", n)
    add("block_sparse weights " + c.weight_dtype, n)
    for name, mk in c.masks.items():
        add("block_sparse mask %s %s" % (name, mk.pattern), n)


def _embedding_coverage(c, cfg, add):
    """embedding_norm and the token types (type_vocab_size, token_type_ids)."""
    n = c.name
    b = next(iter(c.inputs.values())).batch
    batch = "=none" if b is None else "=1" if b == 1 else ">1"
    if cfg.embedding_norm:
        add("embedding_norm(%s)" % cfg.architecture, n)
        add("embedding_norm norm_type=%s(%s)" % (cfg.norm_type, cfg.norm), n)
        add("embedding_norm positional=" + cfg.positional, n)
        add("embedding_norm inputs=" + ("ids" if cfg.tokens else "float32"), n)
        if cfg.embedding_scale != "none":
            add("embedding_norm+embedding_scale", n)
        if c.shared_embeddings:
            add("embedding_norm encdec shared embeddings", n)
        if c.masks:
            add("embedding_norm+mask", n)
        if cfg.uses_section11():
            add("embedding_norm section 11", n)
    if cfg.type_vocab_size:
        add("type_vocab_size=%d" % cfg.type_vocab_size, n)
        tt = c.token_types
        add("token_type_ids " + ("given " + tt.dtype if tt else "left out"), n)
        if tt:
            add("token_type_ids pattern=" + tt.pattern, n)
        add("token types %s mask" % ("with" if c.masks else "without"), n)
        add("token types batch" + batch, n)
        add("token types " + ("lm_head" if cfg.lm_head else "hidden states"), n)
        if cfg.embedding_norm:
            add("token types+embedding_norm", n)


def reference_rows(cfg):
    """Rows of block_pattern: ceil(max_seq_len / block)."""
    return -(-cfg.max_seq_len // cfg.block)


def _mask_coverage(c, cfg, add):
    import reference
    n = c.name
    b = next(iter(c.inputs.values())).batch
    add("mask(%s%s)" % (cfg.architecture, ",causal" if cfg.causal else ""), n)
    if cfg.is_encdec:
        add("mask encdec " + "+".join(k for k in cfg.mask_names if k in c.masks), n)
    for mk in c.masks.values():
        add("mask pattern=" + mk.pattern, n)
        add("mask dtype=" + mk.dtype, n)
    add("mask batch" + ("=none" if b is None else "=1" if b == 1 else ">1"), n)
    add("mask inputs=" + ("ids" if cfg.tokens else "float32"), n)
    add("mask+positional=" + cfg.positional, n)
    add("mask+score=" + cfg.attention_score, n)
    if cfg.sliding_window:
        add("mask+window" + (" G>0" if any(lc.global_tokens for lc in cfg.layer_configs() if lc.sliding_window)
                             else ""), n)
    if cfg.uses_section11():
        add("mask section 11", n)
    pats = output_stack_patterns(cfg, case_block_patterns(c, cfg))
    if not reference.attended_rows(cfg, case_inputs(c, cfg, case_seed(n)), pats).all():
        add("mask unattended rows(%s)" % cfg.architecture, n)


REQUIRED = (
    ["architecture=" + a for a in ("encoder", "decoder", "encoder_decoder")]
    + ["positional=" + p for p in ("sinusoidal", "learned", "rope", "none")]
    + ["rope_style=half", "rope_style=interleaved", "rope_base!=default"]
    + ["score=" + s for s in ("scaled_dot", "dot", "bilinear", "additive")]
    + ["rope+score=" + s for s in ("scaled_dot", "dot", "bilinear", "additive")]
    + ["additive_dim=explicit", "additive_dim=default"]
    + ["norm=post", "norm=pre", "final_norm override", "norm_eps!=default"]
    + ["final_norm=%s(%s)" % x for x in itertools.product((True, False), ("post", "pre"))]
    + ["activation=" + a for a in ("relu", "gelu", "gelu_tanh")]
    + ["causal=True(decoder)", "causal=False(decoder,explicit)", "causal=False(encoder)",
       "causal=True(encoder,explicit)", "causal=True(encoder_decoder)",
       "causal=False(encoder_decoder,explicit)"]
    + ["inputs=int32", "inputs=int64", "inputs=float32"]
    + ["batch=none", "batch=1", "batch=2", "--max-batch", "--max-seq-len"]
    + ["lm_head tied", "lm_head untied", "vocab without lm_head"]
    + ["encdec embeddings shared", "encdec embeddings separate", "embedding_scale"]
    + ["weights F32", "weights F16", "weights BF16"]
    + ["seq=1", "seq=7", "seq=13"]
    + ["dk=8", "dk=24", "dk=80", "d_model=96,heads=3", "d_ff=50"]
    # section 11
    + ["norm_type=%s(%s)" % x for x in itertools.product(("layer_norm", "rms_norm"), ("pre", "post"))]
    + ["rms_norm final norm", "activation=silu", "ffn_gated(silu)", "ffn_gated(gelu)",
       "ffn_gated bias=True", "ffn_gated bias=False", "ffn_gated d_ff%8!=0"]
    + ["num_kv_heads=1", "num_kv_heads grouped", "gqa(encoder)", "gqa(decoder)", "gqa(encoder_decoder)",
       "gqa bias=True", "gqa bias=False", "gqa+rope", "gqa+score=scaled_dot", "gqa+score=dot",
       "gqa+score=bilinear", "gqa+score=additive"]
    + ["bias=false(encoder)", "bias=false(decoder)", "bias=false(encoder_decoder)"]
    + ["section 11 batch=none", "section 11 batch=1", "section 11 batch>1", "section 11 seq=1",
       "section 11 weights BF16", "section 11 cache sizes", "section 11 lm_head tied",
       "section 11 lm_head untied", "llama-like", "llama-like encdec", "dk=12"]
    # section 7: sliding-window attention
    + ["window(encoder)", "window(decoder,causal)", "window(encoder_decoder,causal)",
       "window W=0", "window W>=seq", "window W=seq-1", "window G=0", "window G=0 (default)",
       "window G=1(encoder)", "window G=1(decoder,causal)", "window G=3(encoder)",
       "window G=3(decoder,causal)", "window G>=seq", "window G>W"]
    + ["window+score=" + s for s in ("scaled_dot", "dot", "bilinear", "additive")]
    + ["window+rope_style=half", "window+rope_style=interleaved", "window batch=none", "window batch=1",
       "window batch>1", "window inputs=ids", "window inputs=float32", "window lm_head", "window gqa",
       "window seq>64, partial key blocks", "window dk=7", "window dk=24", "window dk=32",
       "attention kind=full explicit"]
    # section 7: Linformer
    + ["linformer(encoder)", "linformer(decoder,causal=False)", "linformer(encoder_decoder,causal=False)",
       "linformer k=1", "linformer k<seq", "linformer k=seq", "linformer k>seq",
       "linformer seq<max_seq_len", "linformer seq=max_seq_len", "linformer seq=1", "linformer seq>64",
       "linformer+rope_style=half", "linformer+rope_style=interleaved", "linformer positional=sinusoidal",
       "linformer positional=learned", "linformer batch=none", "linformer batch=1", "linformer batch>1",
       "linformer inputs=ids", "linformer inputs=float32", "linformer lm_head tied",
       "linformer lm_head untied", "linformer gqa", "linformer num_kv_heads=1", "linformer section 11",
       "linformer layers>=2", "linformer weights F32", "linformer weights BF16", "linformer norm=post",
       "linformer norm=pre"]
    # section 7: Performer
    + ["performer(encoder)", "performer(encoder,causal)", "performer(decoder,causal)", "performer(decoder)",
       "performer(encoder_decoder,causal)", "performer(encoder_decoder)", "performer M<dk", "performer M=dk",
       "performer M>dk", "performer M=1", "performer M=64", "performer seq=1", "performer seq=max_seq_len",
       "performer seq>max_seq_len", "performer seq>64", "performer+rope_style=half",
       "performer+rope_style=interleaved", "performer positional=sinusoidal", "performer positional=learned",
       "performer batch=none", "performer batch=1", "performer batch>1", "performer inputs=ids",
       "performer inputs=float32", "performer lm_head tied", "performer lm_head untied", "performer gqa",
       "performer num_kv_heads=1", "performer section 11", "performer layers>=2", "performer weights F32",
       "performer weights BF16", "performer norm=post", "performer norm=pre", "performer dk=4",
       "performer dk=8", "performer dk=16", "performer encdec shared embeddings",
       "mask error=performer", "performer mask error names mask", "performer mask error names src_mask"]
    + ["compile error " + e for e in ("perf_err_features_missing", "perf_err_features_zero",
                                      "perf_err_features_fraction", "perf_err_linformer_key", "perf_err_score_dot")]
    # section 7: block_sparse (BigBird)
    + ["block_sparse(encoder)", "block_sparse(decoder,causal)", "block_sparse(encoder_decoder,causal)",
       "block_sparse B=1", "block_sparse B>seq", "block_sparse B>max_seq_len", "block_sparse B divides seq",
       "block_sparse partial last block", "block_sparse window covers every block",
       "block_sparse global_blocks>=blocks", "block_sparse seq>64", "block_sparse seq<max_seq_len",
       "block_sparse every pattern row read", "block_sparse window_blocks=0", "block_sparse global_blocks=0",
       "block_sparse window_blocks default", "block_sparse global_blocks default",
       "block_sparse random_blocks default", "block_sparse R=0", "block_sparse R>=1",
       "block_sparse pattern I32", "block_sparse pattern I64", "block_sparse pattern id<0",
       "block_sparse pattern id=run-time blocks", "block_sparse pattern id>=rows",
       "block_sparse pattern id in [run-time blocks, rows)", "block_sparse pattern id duplicate",
       "block_sparse pattern id beyond int32", "block_sparse pattern id int32 extreme",
       "block_sparse pattern random blocks matter", "block_sparse R=0 --max-seq-len above max_seq_len"]
    + ["block_sparse+score=" + s for s in ("scaled_dot", "dot", "bilinear", "additive")]
    + ["block_sparse+rope_style=half", "block_sparse+rope_style=interleaved", "block_sparse batch=none",
       "block_sparse batch=1", "block_sparse batch>1", "block_sparse inputs=ids", "block_sparse inputs=float32",
       "block_sparse lm_head tied", "block_sparse lm_head untied", "block_sparse gqa",
       "block_sparse num_kv_heads=1", "block_sparse section 11", "block_sparse weights F32",
       "block_sparse weights BF16", "block_sparse mask mask right", "block_sparse mask mask left",
       "block_sparse mask src_mask holes", "block_sparse mask tgt_mask right"]
    + ["block_sparse load error=" + f for f in WEIGHT_FAULTS]
    # section 7: mixture-of-experts FFNs
    + ["moe(encoder)", "moe(decoder,causal)", "moe(encoder_decoder,causal)"]
    + ["moe E=%d K=%d" % ek for ek in ((4, 2), (8, 2), (8, 1), (3, 3), (5, 3))]
    + ["moe K=1", "moe K=E", "moe 1<K<E", "moe norm=pre", "moe norm=post", "moe norm_type=layer_norm",
       "moe norm_type=rms_norm"]
    + ["moe activation=" + a for a in ("relu", "gelu", "gelu_tanh", "silu")]
    + ["moe ffn_gated(silu)", "moe ffn_gated(gelu)", "moe bias=True", "moe bias=False",
       "moe attention=full", "moe attention=sliding_window", "moe attention=linformer", "moe batch=none",
       "moe batch=1", "moe batch>1", "moe inputs=ids", "moe inputs=float32", "moe lm_head tied",
       "moe lm_head untied", "moe gqa", "moe mask", "moe encdec shared embeddings", "moe weights F32",
       "moe weights BF16", "moe odd sizes", "moe one token (experts without a token)", "moe tokens>64",
       "moe gate dominant", "moe gate starved"]
    + ["moe load error=" + f for f in MOE_WEIGHT_FAULTS]
    + ["compile error " + e.name for e in COMPILE_ERRORS if e.name.startswith("moe_err_")]
    + ["compile error " + e for e in ("bs_err_block_missing", "bs_err_block_zero", "bs_err_window_key",
                                      "bs_err_max_seq_len")]
    # section 8: padding masks
    + ["mask(encoder)", "mask(decoder,causal)", "mask(encoder_decoder,causal)", "mask encdec src_mask",
       "mask encdec tgt_mask", "mask encdec src_mask+tgt_mask"]
    + ["mask pattern=" + p for p in MASK_PATTERNS] + ["mask dtype=" + d for d in MASK_DTYPES]
    + ["mask batch=none", "mask batch>1", "mask inputs=ids", "mask inputs=float32", "mask+positional=rope",
       "mask+positional=learned", "mask+positional=sinusoidal", "mask+score=scaled_dot",
       "mask+score=bilinear", "mask+score=additive", "mask+window G>0", "mask section 11",
       "mask unattended rows(encoder)", "mask unattended rows(decoder)", "mask unattended rows(encoder_decoder)"]
    + ["mask error=" + p for p in MASK_ERROR_PATTERNS]
    + ["mask error=linformer", "mask error=--generate", "mask error names mask", "mask error names src_mask"]
    # the embeddings: embedding_norm, type_vocab_size and token_type_ids
    + ["embedding_norm(%s)" % a for a in ("encoder", "decoder", "encoder_decoder")]
    + ["embedding_norm norm_type=layer_norm(post)", "embedding_norm norm_type=layer_norm(pre)",
       "embedding_norm norm_type=rms_norm(pre)", "embedding_norm positional=learned",
       "embedding_norm positional=sinusoidal", "embedding_norm positional=rope", "embedding_norm inputs=ids",
       "embedding_norm inputs=float32", "embedding_norm+embedding_scale", "embedding_norm encdec shared embeddings",
       "embedding_norm+mask", "embedding_norm section 11"]
    + ["type_vocab_size=2", "type_vocab_size=3", "token_type_ids given int32", "token_type_ids given int64",
       "token_type_ids left out", "token_type_ids pattern=segments", "token_type_ids pattern=random",
       "token types with mask", "token types without mask", "token types batch=none", "token types batch=1",
       "token types batch>1", "token types lm_head", "token types hidden states", "token types+embedding_norm"]
    + ["token_type_ids error=" + p for p in TYPE_ERROR_PATTERNS]
    # section 7: a decoder's per-layer kinds (`layers`)
    + ["layers(decoder,causal)", "layers attention=full", "layers attention=sliding_window",
       "layers attention=block_sparse", "layers attention=performer", "layers ffn=dense", "layers ffn=moe",
       "layers entry \"attention\"", "layers entry {kind} alone", "layers entry own attention",
       "layers entry own ffn", "layers window G>0", "layers block_sparse R>=1", "layers moe K=1",
       "layers moe 1<K<E", "layers moe K=E", "layers model-level attention overridden",
       "layers model-level moe, a dense layer", "layers every layer the same kinds",
       "layers block_patterns of different shapes", "layers MoE layers of different E/K",
       "layers performer layers of different M", "layers kinds=4", "layers second form=hf",
       "layers second form=mixed", "layers second form=torch", "layers batch=none", "layers batch=1",
       "layers batch>1", "layers inputs=ids", "layers inputs=float32", "layers norm=pre", "layers norm=post",
       "layers positional=rope", "layers positional=learned", "layers positional=sinusoidal",
       "layers weights F32", "layers weights BF16", "layers gqa", "layers section 11", "layers lm_head tied",
       "layers lm_head untied", "layers seq>64", "layers mask", "layers block_sparse pattern I32",
       "layers block_sparse pattern I64", "layers mask error=performer"]
    + ["compile error " + e.name for e in COMPILE_ERRORS if e.name.startswith("layers_err_")]
    # section 7: mamba layers (pure and hybrid stacks)
    + ["mamba(decoder,causal)", "mamba stack pure", "mamba stack hybrid"]
    + ["mamba d_state=%d" % v for v in (4, 8, 16)] + ["mamba d_conv=%d" % v for v in (1, 2, 3, 4)]
    + ["mamba expand=%d" % v for v in (1, 2, 3)]
    + ["mamba dt_rank explicit", "mamba dt_rank auto", "mamba dt_rank default", "mamba key left out",
       "mamba d_state default", "mamba d_conv default", "mamba expand default"]
    + ["mamba inputs=ids", "mamba inputs=float32", "mamba ids int32", "mamba ids int64", "mamba batch=none",
       "mamba batch=1", "mamba batch>1", "mamba batch < --max-batch"]
    + ["mamba seq=%d" % v for v in (1, 5, 17, 64)] + ["mamba seq>max_seq_len", "mamba --max-seq-len above max_seq_len"]
    + ["mamba norm=pre", "mamba norm=post", "mamba norm_type=layer_norm", "mamba norm_type=rms_norm",
       "mamba final_norm=True", "mamba final_norm=False"]
    + ["mamba positional=" + p for p in ("sinusoidal", "learned", "rope", "none")]
    + ["mamba lm_head tied", "mamba lm_head untied", "mamba hidden states", "mamba weights F32", "mamba weights BF16",
       "mamba num_heads,d_ff left out", "mamba num_heads,d_ff given", "mamba entry \"mamba\"",
       "mamba entry {kind: mamba}", "mamba layers>=3"]
    + ["mamba hybrid attention=" + k for k in ("full", "sliding_window", "performer", "block_sparse")]
    + ["mamba hybrid ffn=dense", "mamba hybrid ffn=moe", "mamba hybrid section 11", "mamba hybrid gqa",
       "mamba hybrid attention first"]
    + ["mamba mask error names mask", "mamba mask error pure", "mamba mask error hybrid"]
    + ["mamba load error=" + f for f in MAMBA_WEIGHT_FAULTS]
    + ["compile error " + e for e in ("tt_err_decoder", "tt_err_encdec", "tt_err_no_vocab",
                                      "emb_err_norm_not_bool")]
)


def check_coverage():
    feats = coverage()
    return [f for f in REQUIRED if f not in feats]


if __name__ == "__main__":
    import sys
    probs = validate()
    missing = check_coverage()
    for p in probs:
        print("problem:", p)
    for m in missing:
        print("not covered:", m)
    if "-v" in sys.argv:
        for f, names in sorted(coverage().items()):
            print("%-40s %d  %s" % (f, len(names), ", ".join(names[:4]) + (" ..." if len(names) > 4 else "")))
        for e in COMPILE_ERRORS:
            print("compile error %-28s error: %s" % (e.name, e.message))
    print("%d cases, %d compile errors, %d problems, %d features not covered"
          % (len(CASES), len(COMPILE_ERRORS), len(probs), len(missing)))
    sys.exit(1 if probs or missing else 0)
