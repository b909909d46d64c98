#!/usr/bin/python3
"""PyTorch reference models for tfm model descriptions (contract sections 2
and 3, numerics of section 6: fp32, eval mode, batch_first).

Two independent implementations:

  (a) TorchSingleStack / TorchEncoderDecoder: built on PyTorch's own modules
      (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer,
      nn.TransformerEncoder, nn.Transformer), for the configurations they
      support: attention_score == "scaled_dot" and no rotary positions.
      This is literally "PyTorch 1.13 running the same weights".

  (b) FormulaModel: every option of the contract written out from the
      formulas in plain tensor ops (matmul, exp, tanh, erf, ...), no
      nn.MultiheadAttention / F.layer_norm / F.softmax / F.gelu.

  (c) HFStyleModel: the Hugging Face Llama way (separate q/k/v/o_proj and
      gate/up/down_proj nn.Linear layers cut from in_proj and linear1 at
      load, repeat_kv, RMSNorm with torch.rsqrt, F.silu, F.softmax, einsum
      scores, rotate_half / complex rope), for any model; the harnesses use
      it in (a)'s place for models with section 11's keys (norm_type,
      silu, ffn_gated, num_kv_heads, bias), which nn.Transformer cannot
      express (Config.second_form(), build_torch_model()).

All expose state_dict() with exactly the contract's section 3 names (with
section 11's shapes), so one set of weights loads into any of them, and a
weights file written from that state_dict is what the compiled executable
reads.

Section 7's `attention` (full, or sliding_window: query i attends key j
when |i - j| <= window, or i < global_tokens, or j < global_tokens; causal
also masks j > i; every self-attention of every stack, cross-attention
full): (a) takes it as a float attn_mask, (c) as an additive finfo.min mask,
and (b) computes it two ways, the dense [q, k] mask on the score matrix
(attention_allowed, dense_attention; the default) or the banded form, where
each query row gathers only its keys (banded_keys, banded_attention;
FormulaModel(attention_form="banded")), which is the second form of a
windowed model that (a) and (c) do not express.  Linformer (K' = E_n K,
V' = F_n V along the sequence, E_n and F_n the first n columns of the
layer's self_attn.proj_e / proj_f [k, max_seq_len], after the in-projection,
its bias and rope; softmax(q K'^T / sqrt(dk)) V'; never causal, scaled_dot
only) is (b) alone, in two forms: projecting K and V first (the default) or
by associativity, (q K^T) E_n^T and (P F_n) V (linformer_factored;
FormulaModel(attention_form="factored"), its second form).  Performer
(FAVOR+: per head h, phi(x) = exp(x W_h^T - |x|^2 / 2) / sqrt(M) of
q / dk^(1/4) and k / dk^(1/4), W_h the layer's self_attn.features[h]
[M, dk]; out = D^-1 phi(Q) (phi(K)^T V), sums over j <= i when causal;
scaled_dot only, no mask) is (b) alone too: the quadratic form, the [q, k]
matrix phi(Q) phi(K)^T row-normalised (performer_dense, the default), or the
linear one, through phi(K)^T V and phi(K)^T 1 or their running sums when
causal (performer_linear; FormulaModel(attention_form="linear"), its second
form).  block_sparse (BigBird: blocks of B tokens, window, global and random
key blocks from the layer's block_pattern) is computed as a dense mask
(block_sparse_allowed) or block by block (block_sparse_attention;
attention_form="blocks", its second form), padding masks included; the
layer's block_pattern [ceil(max_seq_len / block), R] holds integer ids
(int32 or int64 in the file), kept integers by load_weights.

Section 7's `ffn` (dense, or a mixture of experts with Mixtral routing in
every layer of every stack: logits = x G^T with the layer's
moe.gate.weight [E, d_model], the top_k largest (ties: the lower expert
index), their softmax the weights of the chosen experts' FFNs,
moe.experts.{e}.linear1 / linear2): (b) computes it as Mixtral's reference
loop (each expert on the tokens routed to it, index_add; FormulaMoE, the
default) or dense (every expert on every token, a [tokens, E] routing
matrix; FormulaModel(ffn_form="dense")); (c)'s HFSparseMoeBlock is
Mixtral's router (F.softmax, torch.topk, renormalised) in the dense form.
nn.Transformer has no MoE FFN: an MoE model's second form is (c), or (b)
in its attention kind's second form with the dense routing.

Section 7's `layers` (a decoder's per-layer kinds: each entry "attention",
the model-level kinds, or {"kind": "attention", "attention": {...}, "ffn":
{...}}, whose own kind objects replace the model-level ones for that
layer): Config.layer_config(i) is layer i's Config, from which (b), (c),
expected_weights, attended_rows and run_generate's KV cache build each
layer (weights keep their names, each layer exactly its own kinds').  A
stack of one kind throughout is the model-level model of that kind
(Config.uniform(), (a) where it applies); a hybrid stack's second form is
(c) when every layer is full or sliding_window, else (b) with each layer
in its own kind's second form (attention_form="second").

Section 7's mamba layers (`layers` entries "mamba" / {"kind": "mamba"},
sized by the `mamba` key: d_state N, d_conv C, expand X, dt_rank R or
"auto" = ceil(d_model / 16); a stack of them only needs no num_heads or
d_ff): x + Mixer(Norm(x)) with the model's norm_type whatever `norm` says,
no FFN; the mixer is Hugging Face's MambaMixer (Mamba-1, its sequential
slow path; layers.{i}.mixer.in_proj, conv1d, x_proj, dt_proj, A_log, D,
out_proj).  (b) computes it as the sequential scan with the convolution's
explicit taps (FormulaMambaMixer, the default) or in its second form, the
closed form of the scan (h_t = sum_{s<=t} exp(L_t - L_s) delta_s B_s u_s,
L the cumulative sums of delta A) with PyTorch's grouped F.conv1d
(attention_form="second"; a model with a mamba layer's second form,
"mamba", has its attention layers in their kinds' second forms too).
mamba_reference.py checks the mixer against transformers' MambaMixer and a
pure stack against MambaForCausalLM, in the hf venv (ctest
harness-mamba-hf); run_generate's KVCacheDecoder decodes it from its state.
A model with a mamba layer refuses padding masks.

Section 8's padding masks (optional inputs `mask`, or `src_mask` /
`tgt_mask`: int32, int64, bool or float32, shaped as the input's ids, 1 for
a real token; mask_problems() lists what the contract refuses, each
message naming the input): a padded key is never attended, in
self-attention and (src_mask) in cross-attention, causal and window rules
on top; padded query rows are computed like any other.  A row whose
allowed keys are all padding has unspecified values; attended_rows() says
which output rows are defined.  (b) computes masks two ways: padded keys
left out (per batch row only the real keys are gathered, the default;
banded rows mask them) or one dense additive [batch, q, k] mask of
finfo.min (FormulaModel(mask_form="additive")); (a) takes them as
PyTorch's key_padding_mask (one finfo.min attn_mask where a row has no
key), (c) in its additive mask.

Section 11 as read here: num_kv_heads applies to every attention block,
self and cross (multihead_attn.) alike; score parameters (bilinear,
additive) stay per query head, [num_heads, ...]; `bias: false` drops
in_proj_bias, out_proj.bias, linear1.bias and linear2.bias everywhere, and
rms_norm drops every norm's bias (layer_norm keeps weight and bias).

Fp32Rounding / fp32_rounding_noise: how much fp32 rounding moves a model's
outputs (its conditioning), estimated by running the float64 model with
fp32-sized random rounding errors injected at every op that rounds in fp32
(Monte Carlo arithmetic), so that the estimate does not depend on this
machine's fp32 kernels.

`/usr/bin/python3 reference.py --self-test` checks (b) against (a) on every
configuration (a) supports, (b) against (c) on a sample of section 11
models, (c) against (a) and (b) without section 11's keys, planted mistakes
in (c) (HF_MISTAKES) that must be caught, (b)'s dot and bilinear scores against (a) with
equivalently transformed weights, the attention function against a naive
per-element loop for every score kind/rope style/mask, rotary positions
against the complex-number (RoFormer/LLaMA) and rotate_half (NeoX/HF)
formulations, the fp32 rounding emulation (errors of fp32's size where fp32
rounds, none where it is exact), the weight names against a listing
written from the contract's tables, and sliding windows (the dense and
banded forms against each other and the per-element loop, decode steps at
absolute positions, W >= seq and G >= seq as full attention, planted
mistakes; see _window_self_test), Linformer (the two forms against each
other and the per-element loop, planted mistakes; see _linformer_self_test),
padding masks (the inputs' checks, the defined rows, the forms against
each other and the per-element loop, padded positions changing nothing,
planted mistakes; see _mask_self_test), Performer (phi against the softmax
kernel it estimates, many features against softmax attention, the two forms
against each other and the per-element loop, causality, planted mistakes;
see _performer_self_test) and block-sparse attention (the rule's two forms
against each other and the contract's words, the attention against the
per-element loop with and without padding masks, the kinds it reduces to,
planted mistakes; see _block_sparse_self_test) and mixture-of-experts FFNs
(the key, the listing, the block in both forms and (c)'s against a
per-token float64 loop, ties, the dense FFN as copies of one expert against
(a), whole models and the cases' routing margins, planted routing
mistakes; see _moe_self_test) and a decoder's per-layer kinds (the key,
the model without `layers` and with one kind in every layer, hybrid
stacks layer by layer against the model-level layers of their kinds,
their second forms and masks, planted mistakes; see _layers_self_test) and
mamba layers (the `mamba` key, the convolution and the mixer in both forms
against per-element loops, pure and hybrid stacks against their second form
and layer by layer, causality, masks refused, planted mistakes, and that
each case sees the scan; see _mamba_self_test).
"""

import argparse
import copy
import functools
import json
import itertools
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------------------
# The model description (contract section 2), normalised with its defaults.
# ---------------------------------------------------------------------------

KNOWN_KEYS = (
    "name", "architecture", "d_model", "num_heads", "d_ff", "num_layers",
    "num_encoder_layers", "num_decoder_layers", "vocab_size", "max_seq_len",
    "positional", "rope_style", "rope_base", "embedding_scale", "norm",
    "norm_eps", "final_norm", "activation", "attention_score", "additive_dim",
    "causal", "lm_head", "tie_embeddings",
    # contract section 11 (modern decoder keys)
    "norm_type", "ffn_gated", "num_kv_heads", "bias",
    # contract section 7 (attention kinds, mixture-of-experts FFNs, a
    # decoder's per-layer kinds, its mamba layers' sizes)
    "attention", "ffn", "layers", "mamba",
    # embeddings: a norm after the summed embeddings (any architecture);
    # BERT's token types (encoder only)
    "embedding_norm", "type_vocab_size",
)

_CHOICES = {
    "architecture": ("encoder", "decoder", "encoder_decoder"),
    "positional": ("sinusoidal", "learned", "rope", "none"),
    "rope_style": ("half", "interleaved"),
    "embedding_scale": ("none", "sqrt_d_model"),
    "norm": ("post", "pre"),
    "activation": ("relu", "gelu", "gelu_tanh", "silu"),
    "norm_type": ("layer_norm", "rms_norm"),
    "attention_score": ("scaled_dot", "dot", "bilinear", "additive"),
}


# Contract section 7's attention kinds: the keys each takes (besides "kind").
# The reference computes every one of them: "full", "sliding_window",
# "linformer", "performer" and "block_sparse".
ATTENTION_KINDS = {"full": (), "sliding_window": ("window", "global_tokens"), "linformer": ("k",),
                   "performer": ("features",),
                   "block_sparse": ("block", "window_blocks", "global_blocks", "random_blocks")}
# The largest count a kind's key takes (features, block, ...): tfm-compile's
# bound on every dimension, 2^24.
MAX_COUNT = 1 << 24
# Contract section 7's FFN kinds: the keys each takes (besides "kind").
FFN_KINDS = {"dense": (), "moe": ("experts", "top_k")}
# Contract section 7's `layers` entries (a decoder's): the keys an object
# entry of each kind takes (besides "kind"), and the kinds supported.
LAYER_KINDS = {"attention": ("attention", "ffn"), "mamba": ()}
LAYER_KINDS_SUPPORTED = ("attention", "mamba")
# Contract section 7's `mamba` key (the sizes of every mamba layer): its
# keys and their defaults (dt_rank "auto": ceil(d_model / 16)).
MAMBA_KEYS = ("d_state", "d_conv", "expand", "dt_rank")
MAMBA_DEFAULTS = {"d_state": 16, "d_conv": 4, "expand": 2, "dt_rank": "auto"}
# The Config attributes _parse_attention and _parse_ffn set: what a
# `layers` entry's own kinds replace (Config.layer_config()).
ATTENTION_ATTRS = ("attention_kind", "window", "global_tokens", "linformer_k", "performer_m", "block",
                   "window_blocks", "global_blocks", "random_blocks")
FFN_ATTRS = ("ffn_kind", "moe_experts", "moe_top_k")
# The Config attribute a `layers` entry's kind sets: "attention" or
# "mamba".  A mamba layer's view has every ATTENTION_ATTRS and FFN_ATTRS
# None (no attention, no FFN: Config.layer_config()).
LAYER_ATTRS = ("layer_kind",)
# The examples the messages about `layers` show (tfm-compile's wording).
_ATTENTION_EXAMPLE = '{"kind": "sliding_window", "window": 256}'
_FFN_EXAMPLE = '{"kind": "moe", "experts": 8, "top_k": 2}'


class ConfigError(ValueError):
    pass


def _parse_attention(a):
    """The model-level `attention` object -> a dict of the Config
    attributes it sets: attention_kind, window and global_tokens
    (sliding_window; window None otherwise), linformer_k (Linformer's
    projected length), performer_m (performer's feature count), and
    block, window_blocks, global_blocks, random_blocks (block_sparse);
    each None (global_tokens 0) unless the kind is its own."""
    if not isinstance(a, dict):
        raise ConfigError("'attention' must be an object {\"kind\": ...}, got %r" % (a,))
    if "kind" not in a:
        raise ConfigError("'attention' needs a \"kind\" (one of %s)" % ", ".join(ATTENTION_KINDS))
    kind = a["kind"]
    if not isinstance(kind, str) or kind not in ATTENTION_KINDS:
        raise ConfigError("attention kind must be one of %s, got %r" % (tuple(ATTENTION_KINDS), kind))
    unknown = sorted(set(a) - {"kind"} - set(ATTENTION_KINDS[kind]))
    if unknown:
        other = ["%r (a key of kind %r)" % (key, o) for key in unknown for o, keys in ATTENTION_KINDS.items()
                 if key in keys]
        raise ConfigError("unknown keys in 'attention' of kind %r: %s%s"
                          % (kind, unknown, "; " + ", ".join(other) if other else ""))

    def count(k, v, lo):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= MAX_COUNT:
            raise ConfigError("attention %r must be an integer from %d to %d, got %r" % (k, lo, MAX_COUNT, v))
        return v

    def non_neg_int(k, v):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ConfigError("attention %r must be an integer >= 0, got %r" % (k, v))
        return v
    out = dict(attention_kind=kind, window=None, global_tokens=0, linformer_k=None, performer_m=None,
               block=None, window_blocks=None, global_blocks=None, random_blocks=None)
    if kind == "linformer":
        if "k" not in a:
            raise ConfigError("attention kind 'linformer' needs \"k\" (an integer >= 1)")
        k = a["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError("attention 'k' must be an integer >= 1, got %r" % (k,))
        out["linformer_k"] = k
    elif kind == "performer":
        if "features" not in a:
            raise ConfigError("attention kind 'performer' needs \"features\" (an integer from 1 to %d)"
                              % MAX_COUNT)
        out["performer_m"] = count("features", a["features"], 1)
    elif kind == "block_sparse":
        if "block" not in a:
            raise ConfigError("attention kind 'block_sparse' needs \"block\" (an integer from 1 to %d)"
                              % MAX_COUNT)
        out.update(block=count("block", a["block"], 1),
                   window_blocks=count("window_blocks", a.get("window_blocks", 1), 0),
                   global_blocks=count("global_blocks", a.get("global_blocks", 1), 0),
                   random_blocks=count("random_blocks", a.get("random_blocks", 0), 0))
    elif kind == "sliding_window":
        if "window" not in a:
            raise ConfigError("attention kind 'sliding_window' needs \"window\" (an integer >= 0)")
        out.update(window=non_neg_int("window", a["window"]),
                   global_tokens=non_neg_int("global_tokens", a.get("global_tokens", 0)))
    return out


def _parse_ffn(f):
    """The model-level `ffn` object -> a dict of the Config attributes it
    sets: ffn_kind ("dense" or "moe"), moe_experts (E) and moe_top_k (K),
    None for a dense FFN.  moe: integers 1 <= K <= E (E up to MAX_COUNT)."""
    if not isinstance(f, dict):
        raise ConfigError("'ffn' must be an object {\"kind\": \"dense\"} or {\"kind\": \"moe\", \"experts\": E, "
                          "\"top_k\": K}, got %r" % (f,))
    if "kind" not in f:
        raise ConfigError("'ffn' needs a \"kind\" (one of %s)" % ", ".join(FFN_KINDS))
    kind = f["kind"]
    if not isinstance(kind, str) or kind not in FFN_KINDS:
        raise ConfigError("'ffn' kind must be one of %s, got %r" % (tuple(FFN_KINDS), kind))
    unknown = sorted(set(f) - {"kind"} - set(FFN_KINDS[kind]))
    if unknown:
        other = ["%r (a key of kind %r)" % (key, o) for key in unknown for o, keys in FFN_KINDS.items()
                 if key in keys]
        raise ConfigError("unknown keys in 'ffn' of kind %r: %s%s"
                          % (kind, unknown, "; " + ", ".join(other) if other else ""))
    out = dict(ffn_kind=kind, moe_experts=None, moe_top_k=None)
    if kind == "moe":
        for k in ("experts", "top_k"):
            if k not in f:
                raise ConfigError("ffn kind 'moe' needs \"%s\" (an integer from 1 to %d)" % (k, MAX_COUNT))
            v = f[k]
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_COUNT:
                raise ConfigError("ffn '%s' must be an integer from 1 to %d, got %r" % (k, MAX_COUNT, v))
        if f["top_k"] > f["experts"]:
            raise ConfigError("ffn 'top_k' %d is more than 'experts' %d (each token picks top_k distinct "
                              "experts)" % (f["top_k"], f["experts"]))
        out.update(moe_experts=f["experts"], moe_top_k=f["top_k"])
    return out


def _parse_mamba(m, d_model):
    """Section 7's `mamba` object (the sizes of every mamba layer) -> a
    dict of the Config attributes it sets: mamba_d_state (N), mamba_d_conv
    (C), mamba_expand (X), mamba_dt_rank (R, "auto" resolved to
    ceil(d_model / 16)), each its default where left out (MAMBA_DEFAULTS).
    d_state, d_conv and expand: integers from 1 to MAX_COUNT; dt_rank such
    an integer or "auto"; no other key; d_inner = expand x d_model at most
    MAX_COUNT.  The messages are tfm-compile's (test/lit/frontend/mamba.test),
    the first problem only."""
    if not isinstance(m, dict):
        raise ConfigError("'mamba' must be an object such as {\"d_state\": 16, \"d_conv\": 4, \"expand\": 2, "
                          "\"dt_rank\": \"auto\"}, got %s" % _describe(m))
    unknown = sorted(set(m) - set(MAMBA_KEYS))
    if unknown:
        raise ConfigError("unknown key '%s' in 'mamba' (it takes %s)" % (unknown[0], ", ".join(MAMBA_KEYS)))
    out = {}
    for k in ("d_state", "d_conv", "expand", "dt_rank"):
        v = m.get(k, MAMBA_DEFAULTS[k])
        if k == "dt_rank" and v == "auto":
            v = -(-d_model // 16)
        elif k == "dt_rank" and (isinstance(v, bool) or not isinstance(v, int)):
            raise ConfigError("'mamba' 'dt_rank' must be a positive integer or \"auto\" (ceil(d_model / 16)), got %s"
                              % _describe(v))
        elif isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_COUNT:
            raise ConfigError("'mamba' '%s' (%s) must be an integer from 1 to %d, got %s"
                              % (k, _MAMBA_KEY_WORDS[k], MAX_COUNT, _describe(v)))
        out["mamba_" + k] = v
    if out["mamba_expand"] * d_model > MAX_COUNT:
        raise ConfigError("'mamba' d_inner = expand %d x d_model %d is above the supported maximum %d"
                          % (out["mamba_expand"], d_model, MAX_COUNT))
    return out


# What each `mamba` key is, as tfm-compile's messages say it.
_MAMBA_KEY_WORDS = {"d_state": "the scan's state size per channel", "d_conv": "the causal conv's kernel width",
                    "expand": "d_inner = expand x d_model", "dt_rank": "the rank of the step-size projection"}


def _mamba_entry(entry):
    """Whether a `layers` entry says mamba ("mamba" or {"kind": "mamba", ...})."""
    return entry == "mamba" or (isinstance(entry, dict) and entry.get("kind") == "mamba")


def _describe(v):
    """A JSON value as tfm-compile's messages quote it ("got ..."): compact
    JSON, cut to 37 characters and "..." past 40."""
    s = json.dumps(v, separators=(",", ":"))
    return s if len(s) <= 40 else s[:37] + "..."


def _parse_layers(layers, architecture, num_layers, model_kinds):
    """Section 7's `layers` (a decoder's per-layer kinds) -> one dict per
    layer of the Config attributes ATTENTION_ATTRS and FFN_ATTRS: the
    model-level ones (`model_kinds`, what `attention` and `ffn` say), and
    for an object entry {"kind": "attention", "attention": {...}, "ffn":
    {...}} its own `attention` and `ffn`, each replacing the model's whole
    kind object (not merged key by key).  The entry "attention" (or an
    object without either key) is the model-level layer.  Refused
    (ConfigError, in tfm-compile's words): `layers` outside a decoder, not
    a list, another length than num_layers, an entry that is neither a
    string nor an object, a kind other than attention and mamba, a missing
    kind, unknown keys (a mamba entry takes none but "kind"); inside an
    entry, what the model-level keys refuse (prefixed by the entry's name).
    Each dict also says the layer's kind (LAYER_ATTRS: layer_kind
    "attention" or "mamba"); a mamba layer's ATTENTION_ATTRS and FFN_ATTRS
    are None (it has neither)."""
    if architecture != "decoder":
        raise ConfigError("'layers' applies to architecture 'decoder' only, not %r" % architecture)
    if not isinstance(layers, list):
        raise ConfigError("'layers' must be a list of 'num_layers' entries such as [\"attention\", "
                          "{\"kind\": \"attention\", \"ffn\": %s}], got %s" % (_FFN_EXAMPLE, _describe(layers)))
    if len(layers) != num_layers:
        raise ConfigError("'layers' has %d %s, but 'num_layers' is %d"
                          % (len(layers), "entry" if len(layers) == 1 else "entries", num_layers))
    kinds = ", ".join(LAYER_KINDS)
    out = []
    for i, entry in enumerate(layers):
        name = "layers[%d]" % i
        own = dict(model_kinds)
        if isinstance(entry, str):
            kind, keys = entry, {}
        elif isinstance(entry, dict):
            if "kind" not in entry:
                raise ConfigError("'%s' needs a 'kind': one of %s" % (name, kinds))
            kind, keys = entry["kind"], {k: v for k, v in entry.items() if k != "kind"}
        else:
            raise ConfigError("'%s' must be \"attention\", \"mamba\" or an object such as {\"kind\": "
                              "\"attention\", \"attention\": %s}, got %s" % (name, _ATTENTION_EXAMPLE, _describe(entry)))
        if not isinstance(kind, str) or kind not in LAYER_KINDS:
            raise ConfigError("'%s' kind must be one of %s; got %s" % (name, kinds, _describe(kind)))
        for key in keys:
            owner = next((k for k, ks in LAYER_KINDS.items() if key in ks), None)
            if owner is None:
                raise ConfigError("unknown key '%s' in '%s'%s" % (key, name, " (kind '%s' takes %s)" % (
                    kind, ", ".join(LAYER_KINDS[kind])) if LAYER_KINDS[kind] else ""))
            if owner != kind:
                raise ConfigError("'%s' is a key of %s kind '%s', not of '%s'" % (key, name, owner, kind))
        if kind not in LAYER_KINDS_SUPPORTED:
            raise ConfigError("%s kind '%s' is not supported yet; supported: %s"
                              % (name, kind, ", ".join(LAYER_KINDS_SUPPORTED)))
        own["layer_kind"] = kind
        if kind == "mamba":
            # No attention, no FFN: the model-level kinds do not apply.
            own.update({k: None for k in ATTENTION_ATTRS + FFN_ATTRS})
            out.append(own)
            continue
        try:
            if "attention" in keys:
                own.update(_parse_attention(keys["attention"]))
            if "ffn" in keys:
                own.update(_parse_ffn(keys["ffn"]))
        except ConfigError as e:
            raise ConfigError("%s: %s" % (name, e)) from None
        out.append(own)
    return out


def find_duplicate_key(text):
    """The first key given twice in one object of the JSON `text` (a model
    description), as tfm-compile names it: "duplicate key 'K'" at the top
    level, "duplicate key 'K' in 'attention'" inside a key's object, "...
    in 'layers[0]'" inside a `layers` entry (and "in 'layers[0].ffn'"
    below that); None when there is none.  (json.loads keeps the last
    value of a duplicated key, as llvm::json does; Config takes the
    parsed dict, so a duplicate shows only in the text.)"""
    class _Obj(dict):
        dups = ()

    def hook(pairs):
        o = _Obj(pairs)
        seen = set()
        o.dups = [k for k, _ in pairs if k in seen or seen.add(k)]
        return o

    def walk(v, path):
        if isinstance(v, _Obj):
            if v.dups:
                return "duplicate key '%s'%s" % (v.dups[0], " in '%s'" % path if path else "")
            for k, x in v.items():
                found = walk(x, "%s.%s" % (path, k) if path else k)
                if found:
                    return found
        elif isinstance(v, list):
            for i, x in enumerate(v):
                found = walk(x, "%s[%d]" % (path, i))
                if found:
                    return found
        return None
    return walk(json.loads(text, object_pairs_hook=hook), "")


class Config:
    """A model description with the contract's defaults applied."""

    def __init__(self, desc):
        if not isinstance(desc, dict):
            raise ConfigError("a model description is a JSON object")
        unknown = sorted(set(desc) - set(KNOWN_KEYS))
        if unknown:
            raise ConfigError("unknown keys: %s" % unknown)
        self.desc = dict(desc)

        def req(k):
            if k not in desc:
                raise ConfigError("missing required key %r" % k)
            return desc[k]

        def pos_int(k, v):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ConfigError("%r must be a positive integer, got %r" % (k, v))
            return v

        def choice(k, default):
            v = desc.get(k, default)
            if v not in _CHOICES[k]:
                raise ConfigError("%r must be one of %s, got %r" % (k, _CHOICES[k], v))
            return v

        def boolean(k, default):
            v = desc.get(k, default)
            if not isinstance(v, bool):
                raise ConfigError("%r must be a bool, got %r" % (k, v))
            return v

        self.name = desc.get("name", "model")
        self.architecture = choice("architecture", req("architecture"))
        self.d_model = pos_int("d_model", req("d_model"))
        # Section 7: a decoder whose `layers` are all mamba has no attention
        # and no FFN: num_heads and d_ff may be left out (None; given, they
        # are checked as always, and unused).
        layers = desc.get("layers")
        only_mamba = (self.architecture == "decoder" and isinstance(layers, list) and len(layers) > 0
                      and all(_mamba_entry(e) for e in layers))
        self.num_heads = pos_int("num_heads", req("num_heads")) if "num_heads" in desc or not only_mamba else None
        self.d_ff = pos_int("d_ff", req("d_ff")) if "d_ff" in desc or not only_mamba else None
        if self.num_heads is not None and self.d_model % self.num_heads:
            raise ConfigError("d_model %d is not a multiple of num_heads %d"
                              % (self.d_model, self.num_heads))
        self.head_dim = self.d_model // self.num_heads if self.num_heads is not None else None
        self.max_seq_len = pos_int("max_seq_len", req("max_seq_len"))

        if self.architecture == "encoder_decoder":
            n = desc.get("num_layers")
            ne = desc.get("num_encoder_layers", n)
            nd = desc.get("num_decoder_layers", n)
            if ne is None or nd is None:
                raise ConfigError("encoder_decoder needs num_layers or "
                                  "num_encoder_layers and num_decoder_layers")
            self.num_encoder_layers = pos_int("num_encoder_layers", ne)
            self.num_decoder_layers = pos_int("num_decoder_layers", nd)
            self.num_layers = None
        else:
            for k in ("num_encoder_layers", "num_decoder_layers"):
                if k in desc:
                    raise ConfigError("%r is for encoder_decoder only" % k)
            self.num_layers = pos_int("num_layers", req("num_layers"))

        self.vocab_size = desc.get("vocab_size")
        if self.vocab_size is not None:
            pos_int("vocab_size", self.vocab_size)

        self.positional = choice("positional", "sinusoidal")
        self.rope_style = choice("rope_style", "half")
        self.rope_base = float(desc.get("rope_base", 10000.0))
        if not self.rope_base > 0:
            raise ConfigError("rope_base must be positive")
        if self.positional == "rope" and self.head_dim is not None and self.head_dim % 2:
            raise ConfigError("rope needs an even head size, got %d" % self.head_dim)
        self.embedding_scale = choice("embedding_scale", "none")
        self.norm = choice("norm", "post")
        self.norm_eps = float(desc.get("norm_eps", 1e-5))
        self.final_norm = boolean("final_norm", self.norm == "pre")
        self.activation = choice("activation", "relu")
        self.attention_score = choice("attention_score", "scaled_dot")
        self.additive_dim = (pos_int("additive_dim", desc["additive_dim"]) if "additive_dim" in desc
                             else self.head_dim)     # (None without heads: a stack of mamba layers only)
        self.causal = boolean("causal", self.architecture in ("decoder", "encoder_decoder"))
        self.lm_head = boolean("lm_head", self.vocab_size is not None)
        if self.lm_head and self.vocab_size is None:
            raise ConfigError("lm_head needs vocab_size")
        self.tie_embeddings = boolean("tie_embeddings", True)
        # Section 11.  num_kv_heads and bias apply to every attention block,
        # self and cross (multihead_attn.) alike, and to every linear.
        self.norm_type = choice("norm_type", "layer_norm")
        self.ffn_gated = boolean("ffn_gated", False)
        self.num_kv_heads = (pos_int("num_kv_heads", desc["num_kv_heads"]) if "num_kv_heads" in desc
                             else self.num_heads)
        if self.num_heads is not None and self.num_heads % self.num_kv_heads:
            raise ConfigError("num_kv_heads %d does not divide num_heads %d"
                              % (self.num_kv_heads, self.num_heads))
        self.bias = boolean("bias", True)
        # The embeddings' norm (norm_type, norm_eps: embed_norm.*, or
        # src_embed_norm.* / tgt_embed_norm.*) after token embeddings (times
        # embedding_scale), token types and absolute positions are summed;
        # BERT's token types (type_embed.weight [type_vocab_size, d_model],
        # the optional input token_type_ids): an encoder with vocab_size only.
        self.embedding_norm = boolean("embedding_norm", False)
        self.type_vocab_size = desc.get("type_vocab_size")
        if self.type_vocab_size is not None:
            pos_int("type_vocab_size", self.type_vocab_size)
            if self.architecture != "encoder":
                raise ConfigError("'type_vocab_size' needs architecture 'encoder' (BERT's token types), not %r"
                                  % self.architecture)
            if self.vocab_size is None:
                raise ConfigError("'type_vocab_size' needs 'vocab_size': token types are added to token "
                                  "embeddings")
        # Section 7: the kind of every self-attention (of every stack; the
        # encoder's of an encoder_decoder too).  Cross-attention is full.
        self.__dict__.update(_parse_attention(desc.get("attention", {"kind": "full"})))
        never_causal = ("attention kind 'linformer' is never causal: %s; set \"causal\": false"
                        % ("'causal' is true" if "causal" in desc else "%s is causal by default" % self.architecture))
        if self.attention_kind == "linformer" and self.causal:
            # Linformer: never causal (the description's `causal`, which is
            # true by default for decoder and encoder_decoder), scaled_dot
            # only (below, whichever layers have it).
            raise ConfigError(never_causal)
        # Section 7: the FFN of every layer (of every stack): dense, or a
        # mixture of experts (Mixtral routing).
        self.__dict__.update(_parse_ffn(desc.get("ffn", {"kind": "dense"})))
        # Section 7's `layers` (decoder only): each layer's own kinds, the
        # model-level ones where an entry gives none (layer_config()).
        self._layer_kinds = None
        self.layer_kind = "attention"
        if "layers" in desc:
            model_kinds = {k: self.__dict__[k] for k in ATTENTION_ATTRS + FFN_ATTRS}
            self._layer_kinds = _parse_layers(desc["layers"], self.architecture, self.num_layers, model_kinds)
            for i, kinds in enumerate(self._layer_kinds):
                if kinds["attention_kind"] == "linformer" and self.causal:
                    raise ConfigError("layers[%d]: %s" % (i, never_causal))
        # Section 7's `mamba` (the sizes of every mamba layer; only with a
        # mamba layer): mamba_d_state N, mamba_d_conv C, mamba_expand X,
        # mamba_dt_rank R (resolved), d_inner = X d_model; None without a
        # mamba layer.
        self.mamba_d_state = self.mamba_d_conv = self.mamba_expand = self.mamba_dt_rank = None
        if self.mamba:
            self.__dict__.update(_parse_mamba(desc.get("mamba", {}), self.d_model))
        elif "mamba" in desc:
            raise ConfigError("'mamba' sizes the mixers of mamba layers, but no 'layers' entry is \"mamba\"")
        if self.linformer and self.attention_score != "scaled_dot":
            raise ConfigError("attention kind 'linformer' takes attention_score 'scaled_dot' only, got %r"
                              % self.attention_score)
        if self.performer and self.attention_score != "scaled_dot":
            # Performer: FAVOR+ approximates softmax(q k^T / sqrt(dk)) alone
            # (its dk^(1/4) scaling is scaled_dot's); causal is allowed.
            raise ConfigError("attention kind 'performer' takes attention_score 'scaled_dot' only, got %r"
                              % self.attention_score)

    # Derived facts -------------------------------------------------------
    @property
    def is_encdec(self):
        return self.architecture == "encoder_decoder"

    @property
    def tokens(self):
        return self.vocab_size is not None

    @property
    def untied_head(self):
        return self.lm_head and not self.tie_embeddings

    @property
    def input_names(self):
        return ("src", "tgt") if self.is_encdec else ("input",)

    @property
    def type_input(self):
        """The optional token-type input (BERT's token_type_ids: ids in
        [0, type_vocab_size), shaped as `input`, all zeros when not given),
        or None for a model without type_vocab_size."""
        return "token_type_ids" if self.type_vocab_size else None

    @property
    def optional_inputs(self):
        """Optional inputs that are not padding masks: token_type_ids."""
        return (self.type_input,) if self.type_input else ()

    @property
    def mask_names(self):
        """Contract section 8's optional padding-mask inputs."""
        return ("src_mask", "tgt_mask") if self.is_encdec else ("mask",)

    @property
    def mask_of(self):
        """Padding-mask input -> the input whose tokens it marks."""
        return {"src_mask": "src", "tgt_mask": "tgt"} if self.is_encdec else {"mask": "input"}

    @property
    def out_dim(self):
        return self.vocab_size if self.lm_head else self.d_model

    @property
    def kv_group(self):
        """Query heads per key/value head: query head h reads kv head h // kv_group."""
        return self.num_heads // self.num_kv_heads

    @property
    def rms(self):
        return self.norm_type == "rms_norm"

    # Section 7's `layers`: the kinds of each layer -------------------------
    def layer_config(self, i):
        """Layer i of the single stack (encoder, decoder): this Config with
        the layer's own attention and FFN kinds (ATTENTION_ATTRS,
        FFN_ATTRS: its `layers` entry's, or the model-level ones) and its
        layer_kind (a mamba layer's: layer_kind "mamba", the attention and
        FFN attributes None, the model's mamba_* sizes), a view
        without `layers` of its own; the model itself when it has no
        `layers` (every layer the model-level kinds; an encoder_decoder's
        stacks always)."""
        if self._layer_kinds is None:
            return self
        view = copy.copy(self)
        view.__dict__.update(self._layer_kinds[i])
        view._layer_kinds = None
        return view

    def layer_configs(self):
        """The kinds of every self-attention layer: layer_config(i) for
        each layer of the single stack; [self] for an encoder_decoder
        (both stacks take the model-level kinds)."""
        if self.is_encdec:
            return [self]
        return [self.layer_config(i) for i in range(self.num_layers)]

    def kinds_of(self, name):
        """The Config of the layer a weight `name` belongs to
        (layers.{i}.*: layer_config(i)); the model's for any other."""
        parts = name.split(".")
        if self._layer_kinds is not None and len(parts) > 2 and parts[0] == "layers" and parts[1].isdigit():
            return self.layer_config(int(parts[1]))
        return self

    @property
    def has_layers(self):
        """Whether the description gives `layers` (per-layer kinds)."""
        return self._layer_kinds is not None

    def uniform(self):
        """A Config whose model-level kinds are every layer's: self without
        `layers`, the first layer's view when every entry comes to the same
        kinds (the model is then exactly the model-level one of those
        kinds), None when the layers' kinds differ (a hybrid stack)."""
        if self._layer_kinds is None:
            return self
        if all(k == self._layer_kinds[0] for k in self._layer_kinds):
            return self.layer_config(0)
        return None

    def _kinds(self):
        return [self.__dict__] if self._layer_kinds is None else self._layer_kinds

    @property
    def attention_kinds(self):
        """Each self-attention layer's kind, in layer order (one entry, the
        model-level kind, without `layers`); mamba layers have none (and
        are left out)."""
        return tuple(k["attention_kind"] for k in self._kinds() if k.get("layer_kind", "attention") == "attention")

    @property
    def layer_kinds(self):
        """Each layer's kind, "attention" or "mamba", in layer order (one
        entry without `layers`)."""
        return tuple(k.get("layer_kind", "attention") for k in self._kinds())

    @property
    def mamba(self):
        """Whether some layer is section 7's mamba layer (a layer_config()
        view: whether it is one): x + Mixer(Norm(x)) (the model's norm_type,
        whatever `norm` says; no FFN), the mixer Hugging Face's MambaMixer
        (Mamba-1, its sequential slow path) with d_inner = expand d_model:
        xz = in_proj(x) (no bias); u, z = its two halves (u first); u =
        SiLU(causal depthwise conv1d(u) + bias), kernel d_conv; dt, B, C =
        split(x_proj(u), [dt_rank, d_state, d_state]); delta =
        softplus(dt_proj(dt)); A = -exp(A_log); h_t = exp(delta_t A) h_{t-1}
        + delta_t B_t u_t per channel; y_t = C_t . h_t + D u_t; out =
        out_proj(y * SiLU(z)) (no bias)."""
        return "mamba" in self.layer_kinds

    @property
    def only_mamba(self):
        """Whether every layer is a mamba layer (num_heads and d_ff may then
        be left out)."""
        return set(self.layer_kinds) == {"mamba"}

    @property
    def d_inner(self):
        """A mamba layer's inner width, expand x d_model (None without one)."""
        return self.mamba_expand * self.d_model if self.mamba_expand is not None else None

    @property
    def sliding_window(self):
        """Whether self-attention is section 7's sliding window (Longformer):
        query i attends key j when |i - j| <= window, or i < global_tokens,
        or j < global_tokens (and j <= i when causal).  With `layers`:
        whether some layer's is (so for linformer, performer, block_sparse
        and moe below); layer_config() has each layer's."""
        return "sliding_window" in self.attention_kinds

    @property
    def linformer(self):
        """Whether self-attention is section 7's Linformer: K' = E_n K and
        V' = F_n V along the sequence (E_n, F_n: the first n columns of
        the layer's proj_e, proj_f [k, max_seq_len]), after the in-projection,
        its bias and rope; softmax(q K'^T / sqrt(dk)) V'; never causal."""
        return "linformer" in self.attention_kinds

    @property
    def performer(self):
        """Whether self-attention is section 7's Performer (FAVOR+): per head
        h, phi(x) = exp(x W_h^T - |x|^2 / 2) / sqrt(M) of q / dk^(1/4) and
        k / dk^(1/4) (W_h: the layer's features[h], [M, dk]), after the
        in-projection, its bias and rope; out = D^-1 phi(Q) (phi(K)^T V),
        D = diag(phi(Q) phi(K)^T 1); causal: the sums over j <= i."""
        return "performer" in self.attention_kinds

    @property
    def block_sparse(self):
        """Whether self-attention is section 7's block_sparse (BigBird):
        blocks of `block` tokens; query block qb attends key block kb when
        |qb - kb| <= window_blocks, or qb < global_blocks, or kb <
        global_blocks, or kb is in row qb of the layer's block_pattern
        (ids outside [0, run-time block count) ignored); causal per token
        on top."""
        return "block_sparse" in self.attention_kinds

    @property
    def moe(self):
        """Whether every layer's FFN is section 7's mixture of experts
        (Mixtral routing): logits = x G^T (G: the layer's moe.gate.weight
        [E, d_model], no bias), the top_k experts with the largest logits
        (ties: the lower expert index first), their weights the softmax
        over those K logits; the output the weighted sum of the chosen
        experts' FFNs (linear1 -> activation -> linear2, ffn_gated and bias
        as for the dense FFN)."""
        return any(k["ffn_kind"] == "moe" for k in self._kinds())

    def uses_section11(self):
        """Whether a section 11 key changes the maths (a default value given
        explicitly does not): nn.Transformer cannot express such a model."""
        return (self.rms or self.activation == "silu" or self.ffn_gated
                or self.num_kv_heads != self.num_heads or not self.bias)

    def torch_supported(self):
        """Whether implementation (a), PyTorch's own modules, can express it
        (with `layers`: every layer of the same kinds, which (a) expresses,
        nn.TransformerEncoder running one mask through every layer)."""
        if self.mamba:
            return False
        u = self.uniform()
        if u is not self:
            return u is not None and u.torch_supported()
        return (self.attention_score == "scaled_dot" and self.positional != "rope"
                and not self.uses_section11() and not self.linformer and not self.performer
                and not self.block_sparse and not self.moe)

    def second_form(self):
        """The independent implementation the harnesses compare (b) with:
        "torch" ((a), nn.Transformer), "hf" ((c), the Hugging Face style
        modules, for models using section 11's keys), "banded" ((b) with
        its sliding-window attention computed in the banded form instead of
        the dense mask: a sliding-window model that neither (a) nor (c) is
        for, i.e. with rope or another score kind), "factored" ((b) with its
        Linformer attention computed as (q K^T) E_n^T and (P F_n) V instead
        of projecting K and V first: every linformer model, which neither
        nn.Transformer nor (c) expresses), "linear" ((b) with its Performer
        attention computed through the summaries phi(K)^T V and phi(K)^T 1,
        or their running sums when causal, instead of the [q, k] matrix
        phi(Q) phi(K)^T: every performer model), "blocks" ((b) with its
        block_sparse attention gathering each query block's key blocks
        instead of the dense mask), or None ((b) alone).  A mixture-of-experts
        model (nn.Transformer has no MoE FFN) is compared with (c), whose
        MoE block runs every expert on every token through a dense
        [tokens, E] routing matrix, against (b)'s Mixtral loop (each
        expert on the tokens routed to it); with linformer, performer or
        block_sparse attention, which (c) does not express, with (b) in
        that kind's second form and its MoE FFN in the dense form too.
        With `layers` of the same kinds in every layer: that kind's
        model-level second form; layers of different kinds (a hybrid
        stack): "hf" ((c), each layer with its own sliding window or none
        and its own FFN) when every layer is full or sliding_window, else
        "mixed" ((b) with each layer's attention in its kind's second form:
        banded, factored, linear, blocks, or dense for full; MoE FFNs in
        the dense form).  A model with a mamba layer (pure or hybrid):
        "mamba" ((b) with each mamba mixer in its second form, the closed
        form of its scan (cumulative sums of delta A, every h_t a weighted
        sum over s <= t) with the convolution as PyTorch's grouped conv1d,
        instead of the sequential scan and the explicit taps; attention
        layers as "mixed" has them; MoE FFNs in the dense form)."""
        if self.mamba:
            return "mamba"
        u = self.uniform()
        if u is None:
            return "hf" if set(self.attention_kinds) <= {"full", "sliding_window"} else "mixed"
        if u is not self:
            return u.second_form()
        if self.linformer:
            return "factored"
        if self.performer:
            return "linear"
        if self.block_sparse:
            return "blocks"
        if self.torch_supported():
            return "torch"
        if self.uses_section11() or self.moe:
            return "hf"
        if self.sliding_window:
            return "banded"
        return None


def as_config(c):
    return c if isinstance(c, Config) else Config(c)


# ---------------------------------------------------------------------------
# Contract section 3, written out from its tables: name -> shape.
# ---------------------------------------------------------------------------

def expected_weights(cfg, shared_embeddings=False):
    """Section 3, with section 11: in_proj has (num_heads + 2 num_kv_heads)
    dk rows (Q, K, V), linear1 2 d_ff rows when gated (gate, then up), no
    linear biases with `bias: false`, no norm biases with rms_norm; with
    section 7's linformer, every self-attention (`self_attn.`, of every
    stack) has proj_e and proj_f [k, max_seq_len] (cross-attention none);
    with performer, features [num_heads, M, dk] (the W_h, per query head
    with grouped-query attention too); with block_sparse and random_blocks
    R >= 1, block_pattern [ceil(max_seq_len / block), R] (integer key-block
    ids; none without random blocks: there is nothing to read).  The
    embeddings: type_embed.weight [type_vocab_size, d_model] with token
    types; with embedding_norm, the norm embed_norm.* (encoder_decoder:
    src_embed_norm.* and tgt_embed_norm.*, shared token embeddings or not;
    weight only with rms_norm).  With section 7's mixture of experts, each
    layer's linear1.* / linear2.* are replaced by moe.gate.weight
    [experts, d_model] (no bias) and, per expert e, moe.experts.{e}.linear1.*
    and moe.experts.{e}.linear2.* of the dense FFN's shapes (gated, biased
    or not as it is); the norms keep their names.  With section 7's
    `layers`, each layer has exactly its own kinds' weights (names
    unchanged: layers.{i}.self_attn.features of a performer layer,
    layers.{i}.moe.* of an MoE one, layers.{i}.linear1.* of a dense one).
    A mamba layer (section 7) has its norm, layers.{i}.norm.weight and
    .bias (weight only with rms_norm), and its mixer's
    layers.{i}.mixer.in_proj.weight [2 d_inner, d_model], conv1d.weight
    [d_inner, 1, d_conv], conv1d.bias [d_inner], x_proj.weight [dt_rank +
    2 d_state, d_inner], dt_proj.weight [d_inner, dt_rank], dt_proj.bias
    [d_inner], A_log [d_inner, d_state], D [d_inner], out_proj.weight
    [d_model, d_inner] (no in/out projection bias, whatever `bias` says)."""
    cfg = as_config(cfg)
    d, f, h, dk, a = cfg.d_model, cfg.d_ff, cfg.num_heads, cfg.head_dim, cfg.additive_dim
    out = {}

    def norm(prefix):
        out[prefix + "weight"] = (d,)
        if not cfg.rms:
            out[prefix + "bias"] = (d,)

    def attn(prefix, self_attention=True, lc=cfg):
        qkv = (h + 2 * cfg.num_kv_heads) * dk   # 3 d without grouped-query attention
        out[prefix + "in_proj_weight"] = (qkv, d)
        if cfg.bias:
            out[prefix + "in_proj_bias"] = (qkv,)
        out[prefix + "out_proj.weight"] = (d, d)
        if cfg.bias:
            out[prefix + "out_proj.bias"] = (d,)
        if cfg.attention_score == "bilinear":
            out[prefix + "score.weight"] = (h, dk, dk)
        elif cfg.attention_score == "additive":
            out[prefix + "score.w_key"] = (h, a, dk)
            out[prefix + "score.w_query"] = (h, a, dk)
            out[prefix + "score.v"] = (h, a)
        if self_attention and lc.linformer:
            out[prefix + "proj_e"] = (lc.linformer_k, cfg.max_seq_len)
            out[prefix + "proj_f"] = (lc.linformer_k, cfg.max_seq_len)
        if self_attention and lc.performer:
            out[prefix + "features"] = (h, lc.performer_m, dk)
        if self_attention and lc.block_sparse and lc.random_blocks:
            out[prefix + "block_pattern"] = (-(-cfg.max_seq_len // lc.block), lc.random_blocks)

    def ffn(prefix):
        f1 = 2 * f if cfg.ffn_gated else f
        out[prefix + "linear1.weight"] = (f1, d)
        if cfg.bias:
            out[prefix + "linear1.bias"] = (f1,)
        out[prefix + "linear2.weight"] = (d, f)
        if cfg.bias:
            out[prefix + "linear2.bias"] = (d,)

    def mamba_layer(prefix):
        di, n, c, r = cfg.d_inner, cfg.mamba_d_state, cfg.mamba_d_conv, cfg.mamba_dt_rank
        norm(prefix + "norm.")
        m = prefix + "mixer."
        out[m + "in_proj.weight"] = (2 * di, d)
        out[m + "conv1d.weight"] = (di, 1, c)
        out[m + "conv1d.bias"] = (di,)
        out[m + "x_proj.weight"] = (r + 2 * n, di)
        out[m + "dt_proj.weight"] = (di, r)
        out[m + "dt_proj.bias"] = (di,)
        out[m + "A_log"] = (di, n)
        out[m + "D"] = (di,)
        out[m + "out_proj.weight"] = (d, di)

    def layer(prefix, cross, lc=cfg):
        if lc.layer_kind == "mamba":
            mamba_layer(prefix)
            return
        attn(prefix + "self_attn.", lc=lc)
        if cross:
            attn(prefix + "multihead_attn.", self_attention=False)
        if lc.moe:
            out[prefix + "moe.gate.weight"] = (lc.moe_experts, d)
            for e in range(lc.moe_experts):
                ffn(prefix + "moe.experts.%d." % e)
        else:
            ffn(prefix)
        for i in range(1, 4 if cross else 3):
            norm(prefix + "norm%d." % i)

    if cfg.is_encdec:
        if cfg.tokens:
            if shared_embeddings:
                out["embed.weight"] = (cfg.vocab_size, d)
            else:
                out["src_embed.weight"] = (cfg.vocab_size, d)
                out["tgt_embed.weight"] = (cfg.vocab_size, d)
        if cfg.positional == "learned":
            out["src_pos_embed.weight"] = (cfg.max_seq_len, d)
            out["tgt_pos_embed.weight"] = (cfg.max_seq_len, d)
        if cfg.embedding_norm:
            norm("src_embed_norm.")
            norm("tgt_embed_norm.")
        for i in range(cfg.num_encoder_layers):
            layer("encoder.layers.%d." % i, cross=False)
        if cfg.final_norm:
            norm("encoder.norm.")
        for i in range(cfg.num_decoder_layers):
            layer("decoder.layers.%d." % i, cross=True)
        if cfg.final_norm:
            norm("decoder.norm.")
    else:
        if cfg.tokens:
            out["embed.weight"] = (cfg.vocab_size, d)
        if cfg.type_vocab_size:
            out["type_embed.weight"] = (cfg.type_vocab_size, d)
        if cfg.positional == "learned":
            out["pos_embed.weight"] = (cfg.max_seq_len, d)
        if cfg.embedding_norm:
            norm("embed_norm.")
        for i in range(cfg.num_layers):
            layer("layers.%d." % i, cross=False, lc=cfg.layer_config(i))
        if cfg.final_norm:
            norm("norm.")
    if cfg.untied_head:
        out["lm_head.weight"] = (cfg.vocab_size, d)
    return out


# ---------------------------------------------------------------------------
# Shared numeric helpers (the formulas).
# ---------------------------------------------------------------------------

_float64_tables = [0]   # > 0 while a float64 table of every model is computed


def _float64_table(fn):
    """Marks a helper that computes its table in float64 in every model (the
    caller casts the result): Fp32Rounding leaves its inside alone, since an
    fp32 model rounds only at that cast."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        _float64_tables[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _float64_tables[0] -= 1
    return wrapper


@_float64_table
def sinusoidal_table(seq_len, d_model):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same),
    computed in float64 (cast by the caller)."""
    pos = torch.arange(seq_len, dtype=torch.float64)[:, None]
    col = torch.arange(d_model, dtype=torch.float64)[None, :]
    two_i = 2.0 * torch.floor(col / 2.0)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d_model)
    even = (torch.arange(d_model) % 2 == 0)[None, :]
    return torch.where(even, torch.sin(angle), torch.cos(angle))


@_float64_table
def rope_cos_sin(seq_len, head_dim, base):
    """cos/sin of angle[pos, i] = pos * base^(-2i/dk), i < dk/2, in float64."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    inv_freq = 1.0 / torch.pow(torch.tensor(float(base), dtype=torch.float64), 2.0 * i / head_dim)
    pos = torch.arange(seq_len, dtype=torch.float64)
    angle = pos[:, None] * inv_freq[None, :]
    return torch.cos(angle), torch.sin(angle)


def apply_rope(x, cos, sin, style):
    """Rotates x [..., S, dk] by position.  half: pairs (i, i + dk/2);
    interleaved: pairs (2i, 2i + 1).  cos/sin: [S, dk/2] in x's dtype."""
    half = x.shape[-1] // 2
    if style == "half":
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)
    if style == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    raise ValueError(style)


def layer_norm(x, weight, bias, eps):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased, as nn.LayerNorm
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def rms_norm(x, weight, eps):
    """x / sqrt(mean(x^2) + eps) * weight (contract section 11)."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * weight


def activation_fn(name, x):
    if name == "relu":
        return torch.clamp(x, min=0.0)
    if name == "gelu":
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name == "gelu_tanh":
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "silu":
        return x / (1.0 + torch.exp(-x))   # x * sigmoid(x); exp overflow gives -0, not nan
    raise ValueError(name)


def softmax_last(s):
    m = s.amax(dim=-1, keepdim=True)
    e = torch.exp(s - m)
    return e / e.sum(dim=-1, keepdim=True)


def linear(x, weight, bias=None):
    y = torch.matmul(x, weight.transpose(0, 1))
    return y if bias is None else y + bias


# ---------------------------------------------------------------------------
# Which keys a query attends (contract section 7), two ways.
# ---------------------------------------------------------------------------

def attention_allowed(q_pos, k_pos, window=None, global_tokens=0, causal=False):
    """The dense form of the rule: a bool [len(q_pos), len(k_pos)] matrix,
    True where the query at absolute position q_pos[a] attends the key at
    absolute position k_pos[b].  window None: full attention (every key);
    else sliding window: |i - j| <= window, or i < global_tokens, or
    j < global_tokens.  causal: also j <= i.  Positions are absolute, so a
    decode step (one query at position p, keys 0..p of the cache) passes
    q_pos = [p]."""
    i = torch.as_tensor(q_pos, dtype=torch.long).reshape(-1, 1)
    j = torch.as_tensor(k_pos, dtype=torch.long).reshape(1, -1)
    ok = torch.ones(i.shape[0], j.shape[1], dtype=torch.bool)
    if window is not None:
        ok = ((i - j).abs() <= window) | (i < global_tokens) | (j < global_tokens)
    if causal:
        ok = ok & (j <= i)
    return ok


def attention_float_mask(allowed, dtype=torch.float32):
    """The additive mask PyTorch's modules take (attn_mask, mask, tgt_mask):
    0 where allowed, -inf elsewhere."""
    return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, float("-inf"))


# ---------------------------------------------------------------------------
# Padding masks (contract section 8): which keys are real.
# ---------------------------------------------------------------------------
#
# A mask input (`mask`; encoder_decoder: `src_mask`, `tgt_mask`) is int32,
# int64, bool or float32, shaped as its input's ids ([batch, seq] or [seq];
# [batch, seq] for float embeddings [batch, seq, d_model]), 1 for a real
# token and 0 for padding.  A padded key is never attended, in
# self-attention and (src_mask) in cross-attention, with the causal and
# window rules on top; padded query rows are computed like any other row.
# A query row left with no key (a padded row whose allowed keys are all
# padding: left padding in a causal model) has unspecified values; the
# forms below give it different ones (zeros, or the mean of every value
# row), and attended_rows() says which output rows are defined.

MASK_DTYPES = ("int32", "int64", "bool", "float32")
# Which mask forms FormulaModel computes: "keys", padded keys left out (per
# batch row, only the real keys are gathered; banded windows mask them in
# their rows), or "additive", one dense [batch, q, k] additive mask.
MASK_FORMS = ("keys", "additive")
# Deliberate mistakes FormulaModel(mask_mistake=...) plants (self-test only):
# the self-attentions ignore the mask, cross-attention ignores src_mask,
# only each stack's first layer masks, 0 read as the real token, the mask
# read one position late.
MASK_MISTAKES = ("self_ignored", "no_cross_mask", "first_layer_only", "inverted", "shifted")


class InputError(ValueError):
    """An input the contract refuses; the message names the input."""


class MaskError(InputError):
    """A padding mask the contract refuses; the message names the input."""


class TokenTypeError(InputError):
    """Token type ids (token_type_ids) refused; the message names the input."""


TYPE_ID_DTYPES = ("int32", "int64")


def token_type_problems(cfg, inputs):
    """What is refused in the token_type_ids of `inputs` (a model with
    type_vocab_size): a list of (name, message naming it), as the
    executables word them after the input's name: a dtype other than int32
    and int64, no `input` beside it, another shape than the ids' ("shape
    [1, 6] does not match input 'input' (expected [2, 3])"), an id outside
    [0, type_vocab_size) ("token type id 2 at position [0, 1] is out of
    range [0, 2)", the first one in row-major order)."""
    cfg = as_config(cfg)
    name = cfg.type_input
    if name is None or name not in inputs:
        return []
    t = _as_numpy(inputs[name])
    if t.dtype.name not in TYPE_ID_DTYPES:
        return [(name, "input '%s': dtype %s, token type ids are %s" % (name, t.dtype.name,
                                                                      " or ".join(TYPE_ID_DTYPES)))]
    of = cfg.input_names[0]
    if of not in inputs:
        return [(name, "input '%s' without input '%s'" % (name, of))]
    want = tuple(_as_numpy(inputs[of]).shape)
    bad = (t < 0) | (t >= cfg.type_vocab_size)
    if bad.any():
        at = [int(i) for i in np.argwhere(bad)[0]]
        return [(name, "input '%s': token type id %d at position %s is out of range [0, %d)"
                 % (name, int(t[tuple(at)]), at, cfg.type_vocab_size))]
    if tuple(t.shape) != want:
        return [(name, "input '%s': shape %s does not match input '%s' (expected %s)"
                 % (name, list(t.shape), of, list(want)))]
    return []


def _as_numpy(a):
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def mask_problems(cfg, inputs):
    """What contract section 8 refuses among the padding masks of `inputs`
    (name -> array or tensor: the model's inputs plus any of
    cfg.mask_names): a list of (input name, message naming it), empty when
    every mask is good.  Refused: an input name the model does not take,
    any mask on a linformer or performer model (one such layer is enough,
    section 7's `layers`) or on a model with a mamba layer, a dtype other than int32, int64, bool
    and float32, a shape other than its input's ids (an unbatched input's
    mask has no batch dimension either), a value other than 0 and 1, and a
    row with no real token.  The model's token_type_ids too
    (token_type_problems), which is no mask but an optional input."""
    cfg = as_config(cfg)
    out = []
    for name in inputs:
        if name in cfg.input_names:
            continue
        if name in cfg.optional_inputs:
            out += token_type_problems(cfg, inputs)
            continue
        if name not in cfg.mask_names:
            out.append((name, "unknown input '%s' (this model takes %s)"
                        % (name, ", ".join(cfg.input_names + cfg.optional_inputs + cfg.mask_names))))
            continue
        refusing = [k for k in cfg.attention_kinds if k in ("linformer", "performer")]
        if refusing:
            # Any layer of the kind (section 7's `layers`): the whole model.
            out.append((name, "input '%s': a model with %s attention refuses a mask input"
                        % (name, refusing[0])))
            continue
        if cfg.mamba:
            # Section 8: a model with a mamba layer refuses a mask input.
            out.append((name, "input '%s': a model with mamba layers refuses a mask input" % name))
            continue
        m = _as_numpy(inputs[name])
        if m.dtype.name not in MASK_DTYPES:
            out.append((name, "input '%s': dtype %s, a mask is %s" % (name, m.dtype.name, ", ".join(MASK_DTYPES))))
            continue
        of = cfg.mask_of[name]
        if of not in inputs:
            out.append((name, "input '%s' without input '%s'" % (name, of)))
            continue
        data = _as_numpy(inputs[of])
        want = tuple(data.shape) if cfg.tokens else tuple(data.shape[:-1])
        if tuple(m.shape) != want:
            out.append((name, "input '%s': shape %s, expected %s (input '%s' is %s%s)"
                        % (name, list(m.shape), list(want), of, list(data.shape),
                           "" if cfg.tokens else ", less its last axis")))
            continue
        bad = ~((m == 0) | (m == 1))
        if bad.any():
            at = [int(i) for i in np.argwhere(bad)[0]]
            out.append((name, "input '%s': value %r at %s; a mask holds 0 (padding) and 1 (a real token) only"
                        % (name, m[tuple(at)].item(), at)))
            continue
        rows = (m != 0).reshape(-1, m.shape[-1]) if m.ndim else (m != 0).reshape(1, 1)
        empty = [i for i, r in enumerate(rows) if not r.any()]
        if empty:
            out.append((name, "input '%s': %s has no real token (every value 0)"
                        % (name, "row %d" % empty[0] if m.ndim == 2 else "the mask")))
    return out


def padding_masks(cfg, inputs):
    """Splits `inputs` into the model's own inputs and its padding masks:
    (data, real), real = {input name ("input", "src", "tgt"): bool tensor
    shaped as that input's ids, True for a real token}.  A bad mask is a
    MaskError naming it (mask_problems)."""
    cfg = as_config(cfg)
    problems = mask_problems(cfg, inputs)
    if problems:
        raise (TokenTypeError if problems[0][0] in cfg.optional_inputs else MaskError)(problems[0][1])
    data = {k: v for k, v in inputs.items() if k in cfg.input_names}
    if set(data) != set(cfg.input_names):
        raise ValueError("inputs %s, expected %s" % (sorted(inputs), cfg.input_names))
    real = {}
    for name in cfg.mask_names:
        if name in inputs:
            m = inputs[name]
            m = m if isinstance(m, torch.Tensor) else torch.from_numpy(np.array(m))
            real[cfg.mask_of[name]] = m != 0
    return data, real


def token_types(cfg, inputs):
    """The token_type_ids of `inputs` as an int64 tensor shaped as the ids
    (checked: a bad one is a TokenTypeError naming it), or None where not
    given (the models then use zeros) or the model has no token types."""
    cfg = as_config(cfg)
    if cfg.type_input is None or cfg.type_input not in inputs:
        return None
    problems = token_type_problems(cfg, inputs)
    if problems:
        raise TokenTypeError(problems[0][1])
    t = inputs[cfg.type_input]
    t = t if isinstance(t, torch.Tensor) else torch.from_numpy(np.array(t))
    return t.long()


def attended_rows(cfg, inputs, block_patterns=None):
    """Which rows of the output have defined values (contract section 8):
    numpy bool, the output's shape less its last axis ([batch, seq] or
    [seq]).  A row is undefined when its query has no key to attend in the
    output's stack (the decoder stack of an encoder_decoder): every key
    the causal, window and block rules allow it (section 7) is padding.
    The mask is the same in every layer of a stack, and such a row is a
    padded row (a real row always has a key, itself: its own position is
    in its window, its own block in its blocks' window), a padded key
    wherever it is read, so it reaches no other row; but the rule is each
    layer's own (section 7's `layers`: each layer its own kind; block-sparse
    random blocks: each layer's own pattern, block_patterns: the
    block_pattern of each self-attention of the output's stack in layer
    order, None for a layer without one, needed when random_blocks > 0), so
    a row is defined when it has a key in every layer.  Cross-attention's
    keys are the memory's real tokens, at least one per row (a row
    without one is an error)."""
    cfg = as_config(cfg)
    data, real = padding_masks(cfg, inputs)
    name = "tgt" if cfg.is_encdec else "input"
    x = _as_numpy(data[name])
    shape = tuple(x.shape) if cfg.tokens else tuple(x.shape[:-1])
    batched = len(shape) == 2
    b, s = shape if batched else (1,) + shape
    keys = real[name].reshape(b, s) if name in real else torch.ones(b, s, dtype=torch.bool)
    views = [cfg] * cfg.num_decoder_layers if cfg.is_encdec else cfg.layer_configs()
    rules = []
    for li, lc in enumerate(views):
        if lc.layer_kind == "mamba":
            continue    # no attention (and a mamba model refuses masks)
        if lc.block_sparse:
            p = None
            if lc.random_blocks:
                if block_patterns is None or block_patterns[li] is None:
                    raise ValueError("attended_rows: a block_sparse layer with random blocks needs its "
                                     "block_pattern (block_patterns)")
                p = torch.as_tensor(block_patterns[li])
            rules.append(block_sparse_allowed(range(s), range(s), lc.block, lc.window_blocks, lc.global_blocks,
                                              p, cfg.causal))
        else:
            rules.append(attention_allowed(range(s), range(s), lc.window if lc.sliding_window else None,
                                           lc.global_tokens, cfg.causal))
    rows = torch.ones(b, s, dtype=torch.bool)
    for allowed in rules:
        rows = rows & (allowed[None] & keys[:, None, :]).any(-1)
    if cfg.is_encdec and "src" in real:
        rows = rows & real["src"].reshape(b, -1).any(-1, keepdim=True)
    rows = rows.numpy()
    return rows if batched else rows[0]


def softmax_allowed(s, allowed):
    """softmax over the entries of s where `allowed` (bool, broadcast to s)
    is True; a row with no such entry gets zeros (a query with no key)."""
    s = s.masked_fill(~allowed, float("-inf"))
    some = allowed.any(-1, keepdim=True)
    s = s.masked_fill(~some, 0.0)
    return softmax_last(s) * some


def padded_keys_attention(q, k, v, score_fn, key_real, window=None, global_tokens=0, causal=False,
                          rule=None):
    """The efficient form of a padding mask: per batch row, only its real
    keys are gathered (padded keys are simply not there), the causal and
    window rules apply on their absolute positions, and the softmax runs
    over what is left; a query row with no key left gets zeros.  q
    [B,H,Sq,dk], k and v [B,H,Sk,dk] (grouped-query heads expanded),
    key_real bool [B, Sk].  rule (bool [Sq, Sk] over every key, e.g.
    block_sparse's): the rule instead of the causal and window ones, read
    at the real keys' columns."""
    sq = q.shape[2]
    out = []
    for bb in range(q.shape[0]):
        idx = key_real[bb].nonzero().flatten()
        if idx.numel() == 0:   # only through a planted mistake (a row with no real token is refused)
            out.append(torch.zeros_like(q[bb:bb + 1, :, :, :1]).expand(-1, -1, -1, v.shape[-1]))
            continue
        s = score_fn(q[bb:bb + 1], k[bb:bb + 1, :, idx])
        if rule is not None:
            allowed = rule[:, idx]
        else:
            allowed = attention_allowed(torch.arange(sq), idx, window, global_tokens, causal)
        out.append(torch.matmul(softmax_allowed(s, allowed), v[bb:bb + 1, :, idx]))
    return torch.cat(out, dim=0)


def additive_padding_mask(allowed, key_real, dtype):
    """The dense form of a padding mask: one additive [B, 1, Sq, Sk] mask,
    0 where query i may attend key j (the rule `allowed` [Sq, Sk], None for
    every key, and key j real) and finfo(dtype).min elsewhere, as Hugging
    Face builds its 4-D attention mask.  Not -inf: a row with no key gets
    the mean of every value row (finite, and unspecified) instead of 0/0;
    where a row has a key, exp(min - max) is exactly 0."""
    ok = key_real[:, None, :]
    if allowed is not None:
        ok = ok & allowed[None]
    return torch.zeros(ok.shape, dtype=dtype).masked_fill(~ok, torch.finfo(dtype).min)[:, None]


def additive_mask_attention(q, k, v, score_fn, allowed, key_real):
    """Scores plus additive_padding_mask(), softmax, times v."""
    s = score_fn(q, k) + additive_padding_mask(allowed, key_real, q.dtype)
    return torch.matmul(softmax_last(s), v)


BANDED_MISTAKES = ("keys_twice", "no_global_rows", "no_global_keys", "window_minus_1")


def banded_keys(i, n_keys, window, global_tokens, causal, mistake=None):
    """The banded form, written from the definition: the positions of the
    keys (0 .. n_keys-1) that the query at absolute position i attends,
    ascending, each once.  A global query (i < G) reads every key (j <= i
    when causal); any other reads the global keys 0..G-1, then its window
    i-W .. i+W (i when causal) less the global keys it overlaps (a key
    reached by two rules counts once).  `mistake` (self-test only) plants
    one deliberate error."""
    w = window - 1 if mistake == "window_minus_1" else window
    g = 0 if mistake == "no_global_keys" else min(global_tokens, n_keys)
    last = min(n_keys - 1, i) if causal else n_keys - 1
    if i < global_tokens and mistake != "no_global_rows":
        return list(range(0, last + 1))
    lo, hi = max(0, i - w), min(last, i + w)
    band_from = lo if mistake == "keys_twice" else max(lo, g)
    return list(range(g)) + list(range(band_from, hi + 1))


def dense_attention(q, k, v, score_fn, allowed=None):
    """softmax over the score matrix with -inf where `allowed` (bool [Sq, Sk]
    or None: everything) is False, times v.  q [B,H,Sq,dk], k and v
    [B,H,Sk,dk] (grouped-query heads already expanded)."""
    s = score_fn(q, k)
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    return torch.matmul(softmax_last(s), v)


def banded_attention(q, k, v, score_fn, window, global_tokens, causal, q_pos0=0, mistake=None,
                     key_real=None):
    """Sliding-window attention row by row: query row a (absolute position
    q_pos0 + a) gathers only the keys banded_keys() lists, and its softmax
    runs over those alone.  Shapes as dense_attention.  key_real (bool
    [B, Sk], a padding mask): the padded keys among those a row gathers
    are masked out of its softmax; a row with none left gets zeros."""
    rows = []
    for a in range(q.shape[2]):
        idx = torch.tensor(banded_keys(q_pos0 + a, k.shape[2], window, global_tokens, causal, mistake),
                           dtype=torch.long)
        s = score_fn(q[:, :, a:a + 1], k[:, :, idx])         # [B,H,1,n]
        if key_real is None:
            p = softmax_last(s)
        else:
            p = softmax_allowed(s, key_real[:, idx][:, None, None, :])
        rows.append(torch.matmul(p, v[:, :, idx]))
    return torch.cat(rows, dim=2)


# ---------------------------------------------------------------------------
# Linformer (contract section 7), two ways.
# ---------------------------------------------------------------------------

def linformer_columns(proj, n):
    """E_n: the first n columns of a layer's proj_e / proj_f [k, max_seq_len]
    (n the run-time sequence length, at most max_seq_len)."""
    if n > proj.shape[1]:
        raise ValueError("linformer: sequence of %d positions, but E and F have %d columns (max_seq_len)"
                         % (n, proj.shape[1]))
    return proj[:, :n]


LINFORMER_MISTAKES = ("e_for_values", "f_for_keys", "e_f_swapped", "last_columns", "row_stride_n",
                      "unscaled")


def linformer_factored(q, k, v, e_n, f_n, head_dim, mistake=None):
    """The second form, by associativity and without K' or V': scores =
    (q K^T) E_n^T / sqrt(dk) ([B,H,Sq,n] @ [n,k]), P = softmax(scores),
    out = (P F_n) V ([B,H,Sq,k] @ [k,n] -> [B,H,Sq,n], @ [B,H,n,dk]).
    q [B,H,Sq,dk], k and v [B,H,n,dk] (grouped-query heads already
    expanded), e_n and f_n [k, n].  `mistake` (self-test only) plants one
    deliberate error of LINFORMER_MISTAKES: E for the values, F for the
    keys, both swapped, the last n columns of a longer E/F instead of the
    first, E/F read with a row stride of n instead of max_seq_len (pass the
    whole [k, max_seq_len] tensors then), no 1/sqrt(dk)."""
    n = k.shape[2]
    if mistake in ("last_columns", "row_stride_n"):
        whole_e, whole_f = e_n, f_n
        if mistake == "last_columns":
            e_n, f_n = whole_e[:, whole_e.shape[1] - n:], whole_f[:, whole_f.shape[1] - n:]
        else:
            rows = whole_e.shape[0]
            e_n = whole_e.reshape(-1)[:rows * n].reshape(rows, n)
            f_n = whole_f.reshape(-1)[:rows * n].reshape(rows, n)
    if mistake == "e_for_values":
        f_n = e_n
    elif mistake == "f_for_keys":
        e_n = f_n
    elif mistake == "e_f_swapped":
        e_n, f_n = f_n, e_n
    s = torch.matmul(torch.matmul(q, k.transpose(-1, -2)), e_n.transpose(0, 1))
    if mistake != "unscaled":
        s = s / math.sqrt(head_dim)
    return torch.matmul(torch.matmul(softmax_last(s), f_n), v)


# ---------------------------------------------------------------------------
# Performer (FAVOR+, contract section 7), two ways.
# ---------------------------------------------------------------------------
#
# phi(x) = exp(x W_h^T - |x|^2 / 2) / sqrt(M) per head h (W_h = features[h],
# [M, dk]), of x = q / dk^(1/4) and k / dk^(1/4), so that
# E_W[phi(q') . phi(k')] = exp(q' . k') = exp(q . k / sqrt(dk)), scaled_dot's
# softmax kernel.  out_i = sum_j A_ij v_j / sum_j A_ij with A = phi(Q) phi(K)^T
# (j <= i when causal).  No stabiliser (no max subtracted).  The 1/sqrt(M)
# cancels in D^-1 (it is in the formula all the same: a state the compiler
# keeps, phi(K)^T V, is of its size).

# Deliberate mistakes the self-test plants (FormulaAttention.performer_mistake):
# q and k not divided by dk^(1/4), divided by sqrt(dk) instead, no -|x|^2/2,
# |x|^2/2 of the unscaled x, W_0 for every head, causal sums over j <= i + 1
# (one key late), the causal rule left out, and with grouped-query heads:
# query head h reading kv head h % kv (instead of h // group), phi(K)
# computed per kv head g with W_g (instead of W_h for each query head).
PERFORMER_MISTAKES = ("no_scale", "sqrt_dk_scale", "no_norm", "norm_unscaled", "one_w", "causal_next",
                      "not_causal", "gqa_modulo", "gqa_kv_w")


def performer_features(x, w, mistake=None):
    """phi of x [B,H,S,dk] with w [H,M,dk] (head h of x uses W_h = w[h]):
    exp((x / dk^(1/4)) W_h^T - |x / dk^(1/4)|^2 / 2) / sqrt(M), [B,H,S,M].
    `mistake` (self-test only): one of PERFORMER_MISTAKES that concern phi."""
    dk, m = x.shape[-1], w.shape[1]
    scale = {"no_scale": 1.0, "sqrt_dk_scale": math.sqrt(dk)}.get(mistake, dk ** 0.25)
    xs = x / scale
    if mistake == "one_w":
        w = w[:1].expand_as(w)
    proj = torch.matmul(xs, w.transpose(-1, -2).unsqueeze(0))           # [B,H,S,M]
    if mistake == "no_norm":
        return torch.exp(proj) / math.sqrt(m)
    sq = x * x if mistake == "norm_unscaled" else xs * xs
    return torch.exp(proj - sq.sum(dim=-1, keepdim=True) / 2.0) / math.sqrt(m)


def performer_dense(qf, kf, v, causal, mistake=None):
    """The quadratic form: A = phi(Q) phi(K)^T ([B,H,Sq,Sk]; causal: zero
    where j > i), rows divided by their sums, times V.  qf [B,H,Sq,M], kf
    [B,H,Sk,M], v [B,H,Sk,dv]."""
    a = torch.matmul(qf, kf.transpose(-1, -2))
    if causal and mistake != "not_causal":
        i = torch.arange(qf.shape[2])[:, None]
        j = torch.arange(kf.shape[2])[None, :]
        a = a.masked_fill(j > i + (1 if mistake == "causal_next" else 0), 0.0)
    return torch.matmul(a / a.sum(dim=-1, keepdim=True), v)


def performer_linear(qf, kf, v, causal, mistake=None):
    """The linear form, never an [Sq, Sk] matrix: not causal, through the
    summaries S = phi(K)^T V [M, dv] and z = phi(K)^T 1 [M], out_i =
    phi(q_i) S / phi(q_i) z; causal, as the running sums a decode step
    keeps (a scan over j: S += phi(k_j)^T v_j, z += phi(k_j), then
    out_j = phi(q_j) S / phi(q_j) z).  Shapes as performer_dense; causal
    needs Sq == Sk (self-attention: query i is key i)."""
    if not causal or mistake == "not_causal":
        state = torch.matmul(kf.transpose(-1, -2), v)               # [B,H,M,dv]
        z = kf.sum(dim=-2)                                           # [B,H,M]
        return torch.matmul(qf, state) / torch.matmul(qf, z.unsqueeze(-1))
    n = kf.shape[2]
    assert qf.shape[2] == n, "causal performer: self-attention, Sq == Sk"
    state = torch.zeros(qf.shape[:2] + (qf.shape[-1], v.shape[-1]), dtype=qf.dtype)
    z = torch.zeros(qf.shape[:2] + (qf.shape[-1],), dtype=qf.dtype)
    lead = 1 if mistake == "causal_next" else 0     # the sums one key ahead
    rows = []
    for t in range(-lead, n):
        j = t + lead
        if j < n:
            kj = kf[:, :, j]                                         # [B,H,M]
            state = state + kj.unsqueeze(-1) * v[:, :, j].unsqueeze(-2)
            z = z + kj
        if t >= 0:
            qt = qf[:, :, t]
            num = torch.matmul(qt.unsqueeze(-2), state).squeeze(-2)  # [B,H,dv]
            rows.append(num / (qt * z).sum(dim=-1, keepdim=True))
    return torch.stack(rows, dim=2)


# ---------------------------------------------------------------------------
# Block-sparse attention (BigBird, contract section 7), two ways.
# ---------------------------------------------------------------------------

def n_blocks(n, block):
    """Blocks of `block` tokens covering n positions (the last may be partial)."""
    return -(-n // block)


def block_sparse_allowed(q_pos, k_pos, block, window_blocks, global_blocks, pattern=None, causal=False,
                         n_keys=None):
    """The dense form of the rule: bool [len(q_pos), len(k_pos)], True where
    the query at absolute position i attends the key at j: with qb = i //
    block, kb = j // block, |qb - kb| <= window_blocks, or qb <
    global_blocks, or kb < global_blocks, or kb in row qb of `pattern`
    (int [rows, R], None for no random blocks; ids outside [0, nb) are
    ignored, nb = ceil(n_keys / block) the run-time block count, n_keys
    default len(k_pos)); causal also j <= i, per token."""
    i = torch.as_tensor(q_pos, dtype=torch.long).reshape(-1, 1)
    j = torch.as_tensor(k_pos, dtype=torch.long).reshape(1, -1)
    nb = n_blocks(j.shape[1] if n_keys is None else n_keys, block)
    qb, kb = i // block, j // block
    ok = ((qb - kb).abs() <= window_blocks) | (qb < global_blocks) | (kb < global_blocks)
    if pattern is not None and pattern.shape[-1]:
        if qb.numel() and int(qb.max()) >= pattern.shape[0]:
            raise ValueError("block_sparse: query block %d, but block_pattern has %d rows"
                             % (int(qb.max()), pattern.shape[0]))
        rows = pattern.long()[qb[:, 0]]                              # [Sq, R]
        valid = (rows >= 0) & (rows < nb)
        ok = ok | ((rows[:, :, None] == kb[:, None, :]) & valid[:, :, None]).any(1)
    if causal:
        ok = ok & (j <= i)
    return ok


# Deliberate mistakes of the block form (self-test only): a key block
# reached by two rules gathered twice, global query blocks not global,
# global key blocks left out, the window one block narrower, pattern ids
# read with Python's negative indexing (-1: the last block) instead of
# ignored, row kb of the pattern read for query block qb (transposed), the
# causal rule per block (kb <= qb) instead of per token.
BLOCK_SPARSE_MISTAKES = ("blocks_twice", "no_global_rows", "no_global_keys", "window_minus_1",
                         "negative_ids_wrap", "pattern_transposed", "causal_per_block")


def block_sparse_key_blocks(qb, nb, window_blocks, global_blocks, pattern=None, mistake=None):
    """The block form, from the definition: the key blocks query block qb
    attends among nb (the run-time count), ascending, each once (a block
    reached by two rules counts once).  A global query block reads every
    block; any other the global blocks, its window qb - window_blocks ..
    qb + window_blocks, and the ids of its row of `pattern` (int [rows,
    R] or None) that are in [0, nb)."""
    if qb < global_blocks and mistake != "no_global_rows":
        return list(range(nb))
    w = window_blocks - 1 if mistake == "window_minus_1" else window_blocks
    out = [] if mistake == "no_global_keys" else list(range(min(global_blocks, nb)))
    out += range(max(0, qb - w), min(nb - 1, qb + w) + 1)
    if pattern is not None and pattern.shape[-1]:
        if mistake == "pattern_transposed":
            out += [kb for kb in range(min(nb, pattern.shape[0])) if qb in pattern[kb].tolist()]
        else:
            for r in pattern[qb].tolist():
                if 0 <= r < nb:
                    out.append(int(r))
                elif mistake == "negative_ids_wrap" and -nb <= r < 0:
                    out.append(int(r) % nb)
    return out if mistake == "blocks_twice" else sorted(set(out))


def block_sparse_attention(q, k, v, score_fn, block, window_blocks, global_blocks, pattern=None, causal=False,
                           key_real=None, mistake=None):
    """Block-sparse attention block by block: the rows of query block qb
    gather the keys of block_sparse_key_blocks() only (a partial last
    block has its n - (nb - 1) block keys), the causal rule masks j > i
    per token among them, and the softmax runs over what is left.  Shapes
    as dense_attention (self-attention: Sq == Sk == n).  key_real (bool
    [B, Sk], a padding mask): the padded keys among those gathered are
    masked out too; a row with none left gets zeros."""
    n = k.shape[2]
    nb = n_blocks(n, block)
    if pattern is not None and pattern.shape[-1] and nb > pattern.shape[0]:
        raise ValueError("block_sparse: %d positions make %d blocks, but block_pattern has %d rows"
                         % (n, nb, pattern.shape[0]))
    out = []
    for qb in range(n_blocks(q.shape[2], block)):
        lo, hi = qb * block, min((qb + 1) * block, q.shape[2])
        blocks = block_sparse_key_blocks(qb, nb, window_blocks, global_blocks, pattern, mistake)
        idx = torch.tensor([j for kb in blocks for j in range(kb * block, min((kb + 1) * block, n))],
                           dtype=torch.long)
        s = score_fn(q[:, :, lo:hi], k[:, :, idx])                  # [B,H,hi-lo,len(idx)]
        allowed = torch.ones(hi - lo, idx.numel(), dtype=torch.bool)
        if causal:
            if mistake == "causal_per_block":
                allowed = (idx // block <= qb)[None, :].expand(hi - lo, -1)
            else:
                allowed = idx[None, :] <= torch.arange(lo, hi)[:, None]
        allowed = allowed[None, None]
        if key_real is not None:
            allowed = allowed & key_real[:, idx][:, None, None, :]
        out.append(torch.matmul(softmax_allowed(s, allowed), v[:, :, idx]))
    return torch.cat(out, dim=2)


# ---------------------------------------------------------------------------
# (b) The from-the-formulas implementation.
# ---------------------------------------------------------------------------

class _Linear(nn.Module):
    def __init__(self, n_in, n_out, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_out, n_in))
        self.bias = nn.Parameter(torch.empty(n_out)) if bias else None

    def forward(self, x):
        return linear(x, self.weight, self.bias)


class _LayerNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(d))
        self.bias = nn.Parameter(torch.empty(d))

    def forward(self, x):
        return layer_norm(x, self.weight, self.bias, self.eps)


class _RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(d))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


def _norm(cfg):
    return (_RMSNorm if cfg.rms else _LayerNorm)(cfg.d_model, cfg.norm_eps)


class _Embedding(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n, d))

    def forward(self, ids):
        return self.weight[ids]


class _BilinearScore(nn.Module):
    def __init__(self, h, dk):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(h, dk, dk))

    def forward(self, q, k):
        # q [B,H,Sq,dk], k [B,H,Sk,dk]: s[b,h,i,j] = sum_de q[i,d] W_h[d,e] k[j,e]
        return torch.matmul(torch.matmul(q, self.weight.unsqueeze(0)), k.transpose(-1, -2))


class _AdditiveScore(nn.Module):
    def __init__(self, h, a, dk):
        super().__init__()
        self.w_key = nn.Parameter(torch.empty(h, a, dk))
        self.w_query = nn.Parameter(torch.empty(h, a, dk))
        self.v = nn.Parameter(torch.empty(h, a))

    def forward(self, q, k):
        # s[b,h,i,j] = v_h . tanh(w_key_h k_j + w_query_h q_i)
        kp = torch.matmul(k, self.w_key.transpose(-1, -2).unsqueeze(0))    # [B,H,Sk,A]
        qp = torch.matmul(q, self.w_query.transpose(-1, -2).unsqueeze(0))  # [B,H,Sq,A]
        t = torch.tanh(qp.unsqueeze(3) + kp.unsqueeze(2))                  # [B,H,Sq,Sk,A]
        return torch.matmul(t, self.v[None, :, None, :, None]).squeeze(-1)


# Each attention kind's second form in (b) (FormulaAttention's `form`).
SECOND_FORMS = {"sliding_window": "banded", "linformer": "factored", "performer": "linear",
                "block_sparse": "blocks"}


class FormulaAttention(nn.Module):
    """Multi-head attention with nn.MultiheadAttention's parameter layout;
    grouped-query (section 11): in_proj is (num_heads + 2 num_kv_heads) dk
    rows, Q then K then V, and query head h reads K/V head h // group;
    without `bias`, no in_proj_bias (None) and no out_proj.bias."""

    def __init__(self, cfg, self_attention=True, form="dense", mask_form="keys"):
        super().__init__()
        d = cfg.d_model
        self.num_heads = cfg.num_heads
        self.num_kv_heads = cfg.num_kv_heads
        self.head_dim = cfg.head_dim
        self.score_kind = cfg.attention_score
        # Section 7: the model's kind for self-attention; cross-attention
        # is always full.  form: "dense" (a window's mask on the score
        # matrix; Linformer's K and V projected first, linformer_attention),
        # "banded" (a window's rows gather their keys, banded_attention),
        # "factored" (Linformer by associativity, linformer_factored),
        # "linear" (Performer through phi(K)^T V and phi(K)^T 1 or their
        # running sums, performer_linear; dense: the [q, k] matrix
        # phi(Q) phi(K)^T, performer_dense) or "blocks" (block_sparse's
        # query blocks gather their key blocks, block_sparse_attention;
        # dense: block_sparse_allowed's mask on the scores); a form that
        # is not the kind's is dense.  "second": the kind's second form
        # (SECOND_FORMS: a hybrid stack's layers each in their own; full
        # attention dense).
        if form == "second":
            form = SECOND_FORMS.get(cfg.attention_kind, "dense") if self_attention else "dense"
        if form not in ("dense", "banded", "factored", "linear", "blocks"):
            raise ValueError(form)
        self.form = form
        # Section 8: how a padding mask is computed (MASK_FORMS): "keys"
        # (padded keys gathered out, or masked in a banded row) or
        # "additive" (one dense [B, q, k] additive mask).
        if mask_form not in MASK_FORMS:
            raise ValueError(mask_form)
        self.mask_form = mask_form
        windowed = self_attention and cfg.sliding_window
        self.window = cfg.window if windowed else None
        self.global_tokens = cfg.global_tokens if windowed else 0
        # Linformer: E and F [k, max_seq_len] of this self-attention.
        self.linformer_k = cfg.linformer_k if (self_attention and cfg.linformer) else None
        # Performer: the W_h, features [num_heads, M, dk], of this
        # self-attention; performer_mistake (self-test only) plants one of
        # PERFORMER_MISTAKES.
        self.performer_m = cfg.performer_m if (self_attention and cfg.performer) else None
        self.performer_mistake = None
        # Block-sparse: the block rule of this self-attention and its
        # block_pattern [ceil(max_seq_len / block), R] (an integer buffer:
        # in the state_dict, never trained, kept by .double()), None with
        # R = 0; block_mistake (self-test only) one of BLOCK_SPARSE_MISTAKES
        # in the block form.
        sparse = self_attention and cfg.block_sparse
        self.block = cfg.block if sparse else None
        self.window_blocks, self.global_blocks = (cfg.window_blocks, cfg.global_blocks) if sparse else (None, None)
        self.block_mistake = None
        rows = (cfg.num_heads + 2 * cfg.num_kv_heads) * cfg.head_dim
        self.in_proj_weight = nn.Parameter(torch.empty(rows, d))
        if cfg.bias:
            self.in_proj_bias = nn.Parameter(torch.empty(rows))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = _Linear(d, d, bias=cfg.bias)
        if self.score_kind == "bilinear":
            self.score = _BilinearScore(cfg.num_heads, cfg.head_dim)
        elif self.score_kind == "additive":
            self.score = _AdditiveScore(cfg.num_heads, cfg.additive_dim, cfg.head_dim)
        if self.linformer_k is not None:
            self.proj_e = nn.Parameter(torch.empty(cfg.linformer_k, cfg.max_seq_len))
            self.proj_f = nn.Parameter(torch.empty(cfg.linformer_k, cfg.max_seq_len))
        if self.performer_m is not None:
            self.features = nn.Parameter(torch.empty(cfg.num_heads, cfg.performer_m, cfg.head_dim))
        if sparse and cfg.random_blocks:
            self.register_buffer("block_pattern", torch.zeros(n_blocks(cfg.max_seq_len, cfg.block),
                                                              cfg.random_blocks, dtype=torch.long))
        else:
            self.block_pattern = None

    def forward(self, x, mem=None, causal=False, rope=None, key_mask=None):
        """x [B,Sq,D]; mem [B,Sk,D] (cross-attention) or None (self);
        rope: None or (cos, sin, style) for self-attention; key_mask: None
        or bool [B,Sk], True for a real key (section 8: a padded key is
        never attended)."""
        kv = x if mem is None else mem
        b, sq, d = x.shape
        sk = kv.shape[1]
        h, hkv, dk = self.num_heads, self.num_kv_heads, self.head_dim
        w, bias = self.in_proj_weight, self.in_proj_bias
        # Row ranges of Q, K, V in in_proj (3 equal blocks of d rows when hkv == h).
        qr, kr, vr = slice(0, h * dk), slice(h * dk, (h + hkv) * dk), slice((h + hkv) * dk, (h + 2 * hkv) * dk)
        q = linear(x, w[qr], None if bias is None else bias[qr])
        k = linear(kv, w[kr], None if bias is None else bias[kr])
        v = linear(kv, w[vr], None if bias is None else bias[vr])
        q = q.reshape(b, sq, h, dk).transpose(1, 2)  # [B,H,Sq,dk]; head h = features h*dk..
        k = k.reshape(b, sk, hkv, dk).transpose(1, 2)  # [B,KV,Sk,dk]
        v = v.reshape(b, sk, hkv, dk).transpose(1, 2)
        if rope is not None:
            cos, sin, style = rope
            q = apply_rope(q, cos[:sq], sin[:sq], style)
            k = apply_rope(k, cos[:sk], sin[:sk], style)
        if self.linformer_k is not None:
            if mem is not None:
                raise ValueError("cross-attention is always full")
            if causal:
                raise ValueError("linformer is never causal")
            if key_mask is not None:
                raise MaskError("a model with linformer attention refuses a mask input")
            e_n, f_n = linformer_columns(self.proj_e, sk), linformer_columns(self.proj_f, sk)
            if self.form != "factored":
                # The formula form: K' = E_n K and V' = F_n V along the
                # sequence ([k, n] @ [B,KV,n,dk] -> [B,KV,k,dk]; E and F
                # are shared by every head, so the KV heads are projected
                # first and each query head reads its group's rows), then
                # ordinary attention over those k rows, without a mask.
                kp, vp = torch.matmul(e_n, k), torch.matmul(f_n, v)
                if hkv != h:
                    kv_of = torch.tensor([i // (h // hkv) for i in range(h)])
                    kp, vp = kp[:, kv_of], vp[:, kv_of]
                o = dense_attention(q, kp, vp, self.scores)
            else:
                if hkv != h:
                    k = torch.repeat_interleave(k, h // hkv, dim=1)
                    v = torch.repeat_interleave(v, h // hkv, dim=1)
                o = linformer_factored(q, k, v, e_n, f_n, dk)
            return self.out_proj(o.transpose(1, 2).reshape(b, sq, d))
        if self.performer_m is not None:
            if mem is not None:
                raise ValueError("cross-attention is always full")
            if key_mask is not None:
                raise MaskError("a model with performer attention refuses a mask input")
            return self.out_proj(self._performer(q, k, v, causal).transpose(1, 2).reshape(b, sq, d))
        if hkv != h:
            # Query head i reads key/value head i // (h / hkv): gather those.
            kv_of = torch.tensor([i // (h // hkv) for i in range(h)])
            k, v = k[:, kv_of], v[:, kv_of]
        if (self.window is not None or self.block is not None) and mem is not None:
            raise ValueError("cross-attention is always full")
        blocks = self.block is not None and self.form == "blocks"
        if key_mask is not None:
            rule = None
            if causal or self.window is not None or self.block is not None:
                rule = self._rule(sq, sk, causal)
            if self.mask_form == "additive":
                o = additive_mask_attention(q, k, v, self.scores, rule, key_mask)
            elif self.window is not None and self.form == "banded":
                o = banded_attention(q, k, v, self.scores, self.window, self.global_tokens, causal,
                                     key_real=key_mask)
            elif blocks:
                o = block_sparse_attention(q, k, v, self.scores, self.block, self.window_blocks,
                                           self.global_blocks, self.block_pattern, causal, key_real=key_mask,
                                           mistake=self.block_mistake)
            else:
                o = padded_keys_attention(q, k, v, self.scores, key_mask, rule=rule)
        elif self.window is not None and self.form == "banded":
            o = banded_attention(q, k, v, self.scores, self.window, self.global_tokens, causal)
        elif blocks:
            o = block_sparse_attention(q, k, v, self.scores, self.block, self.window_blocks, self.global_blocks,
                                       self.block_pattern, causal, mistake=self.block_mistake)
        else:
            allowed = None
            if causal or self.window is not None or self.block is not None:
                allowed = self._rule(sq, sk, causal)
            o = dense_attention(q, k, v, self.scores, allowed)
        o = o.transpose(1, 2).reshape(b, sq, d)
        return self.out_proj(o)

    def _rule(self, sq, sk, causal):
        """The dense rule of this attention, bool [sq, sk]: the window's or
        the blocks' (with this layer's block_pattern), causal on top."""
        if self.block is not None:
            if self.block_pattern is not None and n_blocks(sk, self.block) > self.block_pattern.shape[0]:
                raise ValueError("block_sparse: %d positions make %d blocks, but block_pattern has %d rows"
                                 % (sk, n_blocks(sk, self.block), self.block_pattern.shape[0]))
            return block_sparse_allowed(torch.arange(sq), torch.arange(sk), self.block, self.window_blocks,
                                        self.global_blocks, self.block_pattern, causal)
        return attention_allowed(torch.arange(sq), torch.arange(sk), self.window, self.global_tokens, causal)

    def _performer(self, q, k, v, causal):
        """FAVOR+ on q [B,H,S,dk] and the kv heads' k, v [B,KV,S,dk]: K and
        V expanded to the query heads first (query head h reads kv head
        h // group), so that phi(K) for query head h is computed with W_h;
        then the dense or the linear form (self.form)."""
        h, hkv = self.num_heads, self.num_kv_heads
        mistake = self.performer_mistake
        w = self.features
        if mistake == "gqa_kv_w" and hkv != h:
            # phi(K) per kv head g with W_g, then expanded: wrong.
            kf = performer_features(k, w[:hkv])
            kv_of = torch.tensor([i // (h // hkv) for i in range(h)])
            kf, v = kf[:, kv_of], v[:, kv_of]
        else:
            if hkv != h:
                kv_of = torch.tensor([(i % hkv) if mistake == "gqa_modulo" else i // (h // hkv)
                                      for i in range(h)])
                k, v = k[:, kv_of], v[:, kv_of]
            kf = performer_features(k, w, mistake)
        qf = performer_features(q, w, mistake)
        if self.form == "linear":
            return performer_linear(qf, kf, v, causal, mistake)
        return performer_dense(qf, kf, v, causal, mistake)

    def scores(self, q, k):
        """The score kind: [B,H,Sq,dk] x [B,H,Sk,dk] -> [B,H,Sq,Sk]."""
        if self.score_kind == "scaled_dot":
            return torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if self.score_kind == "dot":
            return torch.matmul(q, k.transpose(-1, -2))
        return self.score(q, k)


def _ffn_inner(layer, x):
    """act(linear1(x)); gated (section 11): linear1's first d_ff outputs are
    the gate, the next d_ff the up projection: act(gate) * up."""
    y = layer.linear1(x)
    if not layer.gated:
        return activation_fn(layer.act, y)
    f = layer.d_ff
    return activation_fn(layer.act, y[..., :f]) * y[..., f:]


class _Expert(nn.Module):
    """One FFN: linear2(act(linear1(x))), gated or not, biased or not, as
    the dense FFN of the model (an MoE layer's expert)."""

    def __init__(self, cfg):
        super().__init__()
        self.act = cfg.activation
        self.d_ff, self.gated = cfg.d_ff, cfg.ffn_gated
        self.linear1 = _Linear(cfg.d_model, cfg.d_ff * (2 if cfg.ffn_gated else 1), bias=cfg.bias)
        self.linear2 = _Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)

    def forward(self, x):
        return self.linear2(_ffn_inner(self, x))


# How (b) computes a mixture-of-experts FFN: "loop", Mixtral's reference
# loop (Hugging Face's MixtralSparseMoeBlock: for each expert, the tokens
# routed to it, their expert outputs times their routing weights added into
# the output with index_add), or "dense" (every expert on every token,
# combined through a [tokens, E] routing matrix that is zero for the
# experts a token is not routed to).
MOE_FORMS = ("loop", "dense")
# Deliberate mistakes FormulaMoE.mistake plants in the loop form (the
# self-test's negative controls; "expert0" is also fake_tfm_compile.py's
# no_moe): top_k - 1 experts; the softmax over all E logits (not
# renormalised over the K chosen); the K smallest logits; weights 1/K (no
# softmax); ties to the higher expert index; expert 0 alone for every token
# (weight 1: routing ignored); the mean of every expert (routing ignored).
MOE_MISTAKES = ("top_k_minus_1", "softmax_all", "lowest_k", "uniform", "ties_high", "expert0", "average")


class FormulaMoE(nn.Module):
    """Section 7's mixture of experts (Mixtral routing), in plain ops:
    logits = x G^T (gate [E, d_model], no bias); each token's K experts
    with the largest logits, ties to the lower expert index; weights =
    softmax over those K logits; out = sum over them of weight * expert(x).
    form: MOE_FORMS.  While `record` is a list, every call appends its
    gate logits [tokens, E] (moe_routing())."""

    def __init__(self, cfg, form="loop", mistake=None):
        super().__init__()
        if form not in MOE_FORMS:
            raise ValueError(form)
        self.num_experts, self.top_k = cfg.moe_experts, cfg.moe_top_k
        self.gate = _Linear(cfg.d_model, cfg.moe_experts, bias=False)
        self.experts = nn.ModuleList([_Expert(cfg) for _ in range(cfg.moe_experts)])
        self.form = form
        self.mistake = mistake
        self.record = None

    def forward(self, x):
        if self.mistake is not None and self.mistake not in MOE_MISTAKES:
            raise ValueError(self.mistake)
        shape = x.shape
        h = x.reshape(-1, shape[-1])
        logits = self.gate(h)                    # [tokens, E]
        if self.record is not None:
            self.record.append(logits.detach().clone())
        if self.mistake == "expert0":
            out = self.experts[0](h)
        elif self.mistake == "average":
            out = sum(e(h) for e in self.experts) / self.num_experts
        elif self.form == "dense" and self.mistake is None:
            out = self._dense(h, logits)
        else:
            out = self._loop(h, logits)
        return out.reshape(shape)

    def route(self, logits):
        """(weights [tokens, K], experts [tokens, K]): each token's K largest
        logits (a stable descending sort: ties to the lower expert index),
        best first, and the softmax over them."""
        k, m = self.top_k, self.mistake
        if m == "ties_high":        # the higher index first among equals: wrong
            order = self.num_experts - 1 - torch.sort(logits.flip(-1), dim=-1, descending=True,
                                                      stable=True).indices
        else:
            order = torch.sort(logits, dim=-1, descending=m != "lowest_k", stable=True).indices
        if m == "top_k_minus_1":
            k = max(1, k - 1)
        chosen = order[:, :k]
        if m == "softmax_all":
            w = softmax_last(logits).gather(-1, chosen)
        elif m == "uniform":
            w = torch.full(chosen.shape, 1.0 / k, dtype=logits.dtype)
        else:
            w = softmax_last(logits.gather(-1, chosen))
        return w, chosen

    def _loop(self, h, logits):
        """Mixtral's loop: expert_mask [E, tokens, K] (one_hot of the chosen
        experts); per expert, the (token, slot) pairs routed to it, its
        output on those tokens times their weights, index_add'ed into the
        output rows."""
        w, chosen = self.route(logits)
        out = torch.zeros_like(h)
        expert_mask = chosen[None, :, :] == torch.arange(self.num_experts)[:, None, None]
        for e, expert in enumerate(self.experts):
            top_x, idx = torch.where(expert_mask[e])
            if top_x.numel() == 0:
                continue        # no token routed to this expert
            y = expert(h[top_x]) * w[top_x, idx, None]
            out.index_add_(0, top_x, y)
        return out

    def _dense(self, h, logits):
        """Every expert on every token: R [tokens, E], R[t, e] = the softmax
        of the chosen logits for the K experts ranked first (expert e's
        rank: the experts with a larger logit, or an equal one at a lower
        index), 0 for the others; out = sum_e R[:, e] * expert_e(h)."""
        n = self.num_experts
        e_idx = torch.arange(n)
        le, lj = logits[:, :, None], logits[:, None, :]          # [T, e, 1], [T, 1, j]
        before = (lj > le) | ((lj == le) & (e_idx[None, None, :] < e_idx[None, :, None]))
        chosen = before.sum(-1) < self.top_k                      # [T, E]
        z = torch.exp(logits - logits.amax(-1, keepdim=True)) * chosen
        r = z / z.sum(-1, keepdim=True)
        ys = torch.stack([expert(h) for expert in self.experts], dim=1)   # [T, E, d]
        return (r[..., None] * ys).sum(1)


def moe_modules(model):
    """The MoE FFN modules of a model of (b) (FormulaMoE) or (c)
    (HFSparseMoeBlock), in layer order."""
    return [m for m in model.modules() if isinstance(m, (FormulaMoE, HFSparseMoeBlock))]


@torch.no_grad()
def moe_routing(model, run):
    """The gate logits every MoE layer of (b) `model` saw while `run()`
    ran (a list, in call order, of [tokens, E] tensors), and run()'s
    result."""
    mods = [m for m in moe_modules(model) if isinstance(m, FormulaMoE)]
    for m in mods:
        m.record = []
    try:
        result = run()
        seen = [t for m in mods for t in m.record]
    finally:
        for m in mods:
            m.record = None
    return seen, result


def routing_gap(logits, k):
    """The smallest margin of a top-k choice over the rows of logits
    [tokens, E]: the k-th largest logit minus the (k+1)-th (inf when k = E:
    every expert is chosen)."""
    if k >= logits.shape[-1] or logits.numel() == 0:
        return math.inf
    s = torch.sort(logits.double(), dim=-1, descending=True).values
    return float((s[:, k - 1] - s[:, k]).min())


class FormulaEncoderLayer(nn.Module):
    def __init__(self, cfg, form="dense", mask_form="keys", ffn_form="loop"):
        super().__init__()
        self.pre = cfg.norm == "pre"
        self.act = cfg.activation
        self.self_attn = FormulaAttention(cfg, form=form, mask_form=mask_form)
        self.d_ff, self.gated = cfg.d_ff, cfg.ffn_gated
        if cfg.moe:
            self.moe = FormulaMoE(cfg, ffn_form)
        else:
            self.linear1 = _Linear(cfg.d_model, cfg.d_ff * (2 if cfg.ffn_gated else 1), bias=cfg.bias)
            self.linear2 = _Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)
        self.norm1 = _norm(cfg)
        self.norm2 = _norm(cfg)

    def ff(self, x):
        if hasattr(self, "moe"):
            return self.moe(x)
        return self.linear2(_ffn_inner(self, x))

    def forward(self, x, causal, rope, key_mask=None):
        if self.pre:
            x = x + self.self_attn(self.norm1(x), causal=causal, rope=rope, key_mask=key_mask)
            x = x + self.ff(self.norm2(x))
        else:
            x = self.norm1(x + self.self_attn(x, causal=causal, rope=rope, key_mask=key_mask))
            x = self.norm2(x + self.ff(x))
        return x


class FormulaDecoderLayer(nn.Module):
    def __init__(self, cfg, form="dense", mask_form="keys", ffn_form="loop"):
        super().__init__()
        self.pre = cfg.norm == "pre"
        self.act = cfg.activation
        self.self_attn = FormulaAttention(cfg, form=form, mask_form=mask_form)
        self.multihead_attn = FormulaAttention(cfg, self_attention=False, mask_form=mask_form)   # always full
        self.d_ff, self.gated = cfg.d_ff, cfg.ffn_gated
        if cfg.moe:
            self.moe = FormulaMoE(cfg, ffn_form)
        else:
            self.linear1 = _Linear(cfg.d_model, cfg.d_ff * (2 if cfg.ffn_gated else 1), bias=cfg.bias)
            self.linear2 = _Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)
        self.norm1 = _norm(cfg)
        self.norm2 = _norm(cfg)
        self.norm3 = _norm(cfg)

    def ff(self, x):
        if hasattr(self, "moe"):
            return self.moe(x)
        return self.linear2(_ffn_inner(self, x))

    def forward(self, x, mem, causal, rope, key_mask=None, mem_mask=None):
        # Cross-attention: never causal, never rotated; its keys are the
        # memory's (mem_mask: src_mask's real tokens).
        if self.pre:
            x = x + self.self_attn(self.norm1(x), causal=causal, rope=rope, key_mask=key_mask)
            x = x + self.multihead_attn(self.norm2(x), mem=mem, key_mask=mem_mask)
            x = x + self.ff(self.norm3(x))
        else:
            x = self.norm1(x + self.self_attn(x, causal=causal, rope=rope, key_mask=key_mask))
            x = self.norm2(x + self.multihead_attn(x, mem=mem, key_mask=mem_mask))
            x = self.norm3(x + self.ff(x))
        return x


# ---------------------------------------------------------------------------
# Section 7's mamba layers (Mamba-1, Hugging Face's MambaMixer slow path).
# ---------------------------------------------------------------------------

# How (b) computes a mamba mixer: "scan", the sequential recurrence h_t =
# exp(delta_t A) h_{t-1} + delta_t B_t u_t over t, with the causal
# depthwise convolution as its explicit taps (the output at t reads the
# inputs t - C + 1 .. t, zeros before the sequence); or "closed", the
# second form: every h_t at once, h_t = sum_{s<=t} exp(L_t - L_s) delta_s
# B_s u_s with L the cumulative sums of delta A (so exp(L_t - L_s) = the
# product of exp(delta_r A) over r = s+1..t), and the convolution as
# PyTorch's grouped F.conv1d with C - 1 zeros of padding each side, cut to
# the first S outputs (HF's conv1d(x)[..., :seq_len]).
MAMBA_FORMS = ("scan", "closed")
# Deliberate mistakes FormulaMambaMixer.mistake plants in the scan form
# (the self-test's negative controls, each of which the cases must see):
# u and z swapped (z the first half); the kernel read the other way round
# (weight[c, 0, k] times input t - k); the convolution centred, not causal
# (inputs after t read); conv1d.bias dropped; no SiLU after the
# convolution; x_proj's split read as [B, C, dt] instead of [dt, B, C]; B
# and C swapped; dt_proj.bias dropped; A = -A_log (no exp); h_t with B_t
# u_t not times delta_t; h not carried (h_t = delta_t B_t u_t); y_t read
# from h_{t-1} (C_t . h before the update); the D u term dropped; D u added
# after the gate; the gate z without its SiLU; no SSM at all (y = D u,
# the scan ignored).
MAMBA_MISTAKES = ("u_z_swapped", "conv_flipped", "conv_centred", "no_conv_bias", "no_conv_silu",
                  "split_bc_dt", "b_c_swapped", "no_dt_bias", "a_no_exp", "no_delta_b", "h_not_carried",
                  "c_before_update", "no_d", "d_after_gate", "gate_no_silu", "no_ssm")
# Mistakes of the layer around the mixer: the norm skipped (x + Mixer(x));
# post norm (Norm(x + Mixer(x)), what `norm: post` would mean for an
# attention layer, which a mamba layer ignores).
MAMBA_LAYER_MISTAKES = ("no_norm", "post_norm")


def _softplus(x):
    """log(1 + exp(x)), stable: the closed form's own (the scan uses
    F.softplus, whose threshold 20 returns x above it)."""
    return torch.clamp(x, min=0.0) + torch.log1p(torch.exp(-x.abs()))


class _DepthwiseConv(nn.Module):
    """A mamba mixer's conv1d, in PyTorch's nn.Conv1d(d_inner, d_inner,
    d_conv, groups=d_inner) layout: weight [d_inner, 1, d_conv], bias
    [d_inner]."""

    def __init__(self, channels, kernel):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel))
        self.bias = nn.Parameter(torch.empty(channels))


class FormulaMambaMixer(nn.Module):
    """Section 7's mamba mixer on x [B, S, d_model] (MambaMixer's names:
    in_proj, conv1d, x_proj, dt_proj, A_log, D, out_proj).  form:
    MAMBA_FORMS; mistake (self-test only): one of MAMBA_MISTAKES, in the
    scan form."""

    def __init__(self, cfg, form="scan", mistake=None):
        super().__init__()
        if form not in MAMBA_FORMS:
            raise ValueError(form)
        d, di = cfg.d_model, cfg.d_inner
        self.d_inner, self.d_state, self.d_conv, self.dt_rank = di, cfg.mamba_d_state, cfg.mamba_d_conv, \
            cfg.mamba_dt_rank
        self.in_proj = _Linear(d, 2 * di, bias=False)
        self.conv1d = _DepthwiseConv(di, self.d_conv)
        self.x_proj = _Linear(di, self.dt_rank + 2 * self.d_state, bias=False)
        self.dt_proj = _Linear(self.dt_rank, di, bias=True)
        self.A_log = nn.Parameter(torch.empty(di, self.d_state))
        self.D = nn.Parameter(torch.empty(di))
        self.out_proj = _Linear(di, d, bias=False)
        self.form = form
        self.mistake = mistake

    def conv(self, u):
        """The causal depthwise convolution plus its bias, u [B, S, di]."""
        w, b, c = self.conv1d.weight, self.conv1d.bias, self.d_conv
        m = self.mistake
        if m == "no_conv_bias":
            b = torch.zeros_like(b)
        s = u.shape[1]
        if self.form == "closed" and m is None:
            y = F.conv1d(u.transpose(1, 2), w, b, padding=c - 1, groups=self.d_inner)[..., :s]
            return y.transpose(1, 2)
        if m == "conv_centred":
            left = (c - 1) // 2
            padded = torch.cat([u.new_zeros(u.shape[0], left, u.shape[2]), u,
                                u.new_zeros(u.shape[0], c - 1 - left, u.shape[2])], dim=1)
        else:
            padded = torch.cat([u.new_zeros(u.shape[0], c - 1, u.shape[2]), u], dim=1)
        out = b.expand(u.shape).clone()
        for k in range(c):
            tap = c - 1 - k if m == "conv_flipped" else k
            # weight[:, 0, k] multiplies the input at t - (c - 1) + k
            out = out + w[:, 0, tap] * padded[:, k:k + s, :]
        return out

    def ssm(self, u, delta, A, Bm, Cm):
        """sum over the state of C_t . h_t per channel: [B, S, di]; u,
        delta [B, S, di]; A [di, N]; Bm, Cm [B, S, N]."""
        if self.form == "closed" and self.mistake is None:
            return self._closed(u, delta, A, Bm, Cm)
        m = self.mistake
        b, s, di = u.shape
        h = u.new_zeros(b, di, self.d_state)
        ys = []
        for t in range(s):
            dA = torch.exp(delta[:, t, :, None] * A)                     # [B, di, N]
            inp = (u[:, t] if m == "no_delta_b" else delta[:, t] * u[:, t])[:, :, None] * Bm[:, t, None, :]
            if m == "c_before_update":
                ys.append((h * Cm[:, t, None, :]).sum(-1))
            h = inp if m == "h_not_carried" else dA * h + inp
            if m != "c_before_update":
                ys.append((h * Cm[:, t, None, :]).sum(-1))
        return torch.stack(ys, dim=1)

    def _closed(self, u, delta, A, Bm, Cm):
        b, s, di = u.shape
        L = torch.cumsum(delta[..., None] * A, dim=1)                   # [B, S, di, N]: L_t
        du = delta * u
        tri = torch.ones(s, s, dtype=torch.bool).tril()                 # [t, s]: s <= t
        out = []
        for t0 in range(0, s, 16):      # blocks of 16 output steps: [B, 16, S, di, N] at most
            t1 = min(s, t0 + 16)
            diff = L[:, t0:t1, None] - L[:, None, :]                     # L_t - L_s
            diff = diff.masked_fill(~tri[t0:t1, :, None, None], float("-inf"))
            w = torch.exp(diff)
            out.append(torch.einsum("btscn,bsn,btn,bsc->btc", w, Bm, Cm[:, t0:t1], du))
        return torch.cat(out, dim=1)

    def forward(self, x):
        m = self.mistake
        if m is not None and m not in MAMBA_MISTAKES:
            raise ValueError(m)
        di, n, r = self.d_inner, self.d_state, self.dt_rank
        xz = self.in_proj(x)
        u, z = xz[..., :di], xz[..., di:]
        if m == "u_z_swapped":
            u, z = z, u
        u = self.conv(u)
        if m != "no_conv_silu":
            u = activation_fn("silu", u)
        dbc = self.x_proj(u)
        if m == "split_bc_dt":
            Bm, Cm, dt = dbc[..., :n], dbc[..., n:2 * n], dbc[..., 2 * n:]
        else:
            dt, Bm, Cm = dbc[..., :r], dbc[..., r:r + n], dbc[..., r + n:]
        if m == "b_c_swapped":
            Bm, Cm = Cm, Bm
        bias = self.dt_proj.bias if m != "no_dt_bias" else None
        pre = linear(dt, self.dt_proj.weight, bias)
        delta = _softplus(pre) if self.form == "closed" else F.softplus(pre)
        A = self.A_log if m == "a_no_exp" else torch.exp(self.A_log)
        A = -A
        y = u.new_zeros(u.shape) if m == "no_ssm" else self.ssm(u, delta, A, Bm, Cm)
        gate = z if m == "gate_no_silu" else activation_fn("silu", z)
        if m == "no_d":
            y = y * gate
        elif m == "d_after_gate":
            y = y * gate + self.D * u
        else:
            y = (y + self.D * u) * gate
        return self.out_proj(y)


class FormulaMambaLayer(nn.Module):
    """Section 7's mamba layer: x + Mixer(Norm(x)), the model's norm_type
    (norm.weight and .bias, weight only with rms_norm), whatever `norm`
    says, no FFN.  form: the attention forms of FormulaModel ("second":
    the mixer's closed form, anything else its scan); mistake (self-test
    only): one of MAMBA_LAYER_MISTAKES."""

    def __init__(self, cfg, form="dense", mistake=None):
        super().__init__()
        self.norm = _norm(cfg)
        self.mixer = FormulaMambaMixer(cfg, "closed" if form in ("second", "closed") else "scan")
        self.mistake = mistake

    def forward(self, x, causal=True, rope=None, key_mask=None):
        # Causal whatever `causal` says (a recurrence); no rope; a model with
        # a mamba layer refuses masks (mask_problems).
        if key_mask is not None:
            raise MaskError("a mamba layer takes no padding mask")
        if self.mistake == "no_norm":
            return x + self.mixer(x)
        if self.mistake == "post_norm":
            return self.norm(x + self.mixer(x))
        if self.mistake is not None:
            raise ValueError(self.mistake)
        return x + self.mixer(self.norm(x))


def mamba_mixers(model):
    """The mamba mixers of a model of (b), in layer order."""
    return [m for m in model.modules() if isinstance(m, FormulaMambaMixer)]


class _Stack(nn.Module):
    def __init__(self, cfg, n, cross, form="dense", mask_form="keys", ffn_form="loop"):
        super().__init__()
        make = FormulaDecoderLayer if cross else FormulaEncoderLayer
        self.layers = nn.ModuleList([make(cfg, form, mask_form, ffn_form) for _ in range(n)])
        self.norm = _norm(cfg) if cfg.final_norm else None


class FormulaModel(nn.Module):
    """(b): every option, from the formulas.  forward(**inputs) takes
    `input` (encoder/decoder) or `src`, `tgt` (encoder_decoder): int64 ids
    [S] / [B,S], or float [S,D] / [B,S,D].  attention_form: how a sliding
    window is computed, "dense" (the rule's [q, k] mask on the scores, -inf
    where not allowed) or "banded" (each query row gathers only its keys);
    and Linformer, "dense" (K' = E_n K, V' = F_n V, then attention) or
    "factored" ((q K^T) E_n^T and (P F_n) V); Performer, "dense" (the
    [q, k] matrix phi(Q) phi(K)^T, rows normalised) or "linear" (the
    summaries phi(K)^T V, phi(K)^T 1, or their running sums); block_sparse,
    "dense" (the rule's mask) or "blocks" (each query block gathers its key
    blocks); "second", each layer in its own kind's second form
    (SECOND_FORMS; a hybrid stack of section 7's `layers`; a mamba
    layer's mixer in its closed form, MAMBA_FORMS).  Padding masks
    (section 8: `mask`, or `src_mask` / `tgt_mask`, optional inputs):
    mask_form "keys"
    (padded keys left out: padded_keys_attention, or masked in the rows of
    the banded form) or "additive" (additive_padding_mask on the scores);
    mask_mistake (self-test only) plants one of MASK_MISTAKES.  ffn_form:
    how a mixture-of-experts FFN is computed (MOE_FORMS), Mixtral's loop
    ("loop", each expert on the tokens routed to it) or "dense" (every
    expert on every token, a [tokens, E] routing matrix)."""

    def __init__(self, cfg, shared_embeddings=False, attention_form="dense", mask_form="keys",
                 mask_mistake=None, ffn_form="loop"):
        super().__init__()
        cfg = as_config(cfg)
        self.cfg = cfg
        self.attention_form = attention_form
        self.ffn_form = ffn_form
        if mask_mistake is not None and mask_mistake not in MASK_MISTAKES:
            raise ValueError(mask_mistake)
        self.mask_mistake = mask_mistake
        d = cfg.d_model
        if shared_embeddings and not (cfg.is_encdec and cfg.tokens):
            raise ConfigError("shared embeddings are for encoder_decoder with vocab_size")
        self.shared_embeddings = shared_embeddings
        if cfg.is_encdec:
            if cfg.tokens:
                if shared_embeddings:
                    self.embed = _Embedding(cfg.vocab_size, d)
                else:
                    self.src_embed = _Embedding(cfg.vocab_size, d)
                    self.tgt_embed = _Embedding(cfg.vocab_size, d)
            if cfg.positional == "learned":
                self.src_pos_embed = _Embedding(cfg.max_seq_len, d)
                self.tgt_pos_embed = _Embedding(cfg.max_seq_len, d)
            if cfg.embedding_norm:
                self.src_embed_norm = _norm(cfg)
                self.tgt_embed_norm = _norm(cfg)
            self.encoder = _Stack(cfg, cfg.num_encoder_layers, cross=False, form=attention_form,
                                  mask_form=mask_form, ffn_form=ffn_form)
            self.decoder = _Stack(cfg, cfg.num_decoder_layers, cross=True, form=attention_form,
                                  mask_form=mask_form, ffn_form=ffn_form)
        else:
            if cfg.tokens:
                self.embed = _Embedding(cfg.vocab_size, d)
            if cfg.type_vocab_size:
                self.type_embed = _Embedding(cfg.type_vocab_size, d)
            if cfg.positional == "learned":
                self.pos_embed = _Embedding(cfg.max_seq_len, d)
            if cfg.embedding_norm:
                self.embed_norm = _norm(cfg)
            # Each layer with its own kinds (section 7's `layers`; a mamba
            # layer: FormulaMambaLayer, its mixer in the closed form when
            # attention_form is "second").
            self.layers = nn.ModuleList([
                FormulaMambaLayer(lc, attention_form) if lc.layer_kind == "mamba"
                else FormulaEncoderLayer(lc, attention_form, mask_form, ffn_form)
                for lc in (cfg.layer_config(i) for i in range(cfg.num_layers))])
            self.norm = _norm(cfg) if cfg.final_norm else None
        if cfg.untied_head:
            self.lm_head = _Linear(d, cfg.vocab_size, bias=False)

    # -- pieces ------------------------------------------------------------
    def _dtype(self):
        return next(self.parameters()).dtype

    def _tok_embed(self, which):
        if self.cfg.is_encdec and not self.shared_embeddings:
            return self.src_embed if which == "src" else self.tgt_embed
        return self.embed

    def _pos_embed(self, which):
        if self.cfg.is_encdec:
            return self.src_pos_embed if which == "src" else self.tgt_pos_embed
        return self.pos_embed

    def _embed_norm(self, which):
        if self.cfg.is_encdec:
            return self.src_embed_norm if which == "src" else self.tgt_embed_norm
        return self.embed_norm

    def _embed(self, x, which, types=None):
        """Token embeddings (times embedding_scale) or the float inputs,
        plus the token types' embeddings (`types` [B, S], None: type 0
        everywhere), plus absolute positions, then the embedding norm."""
        cfg = self.cfg
        dt = self._dtype()
        if cfg.tokens:
            ids = x.long()
            x = self._tok_embed(which)(ids)
            if cfg.embedding_scale == "sqrt_d_model":
                x = x * math.sqrt(cfg.d_model)
            if cfg.type_vocab_size:
                x = x + self.type_embed(types if types is not None else torch.zeros_like(ids))
        else:
            x = x.to(dt)
        s = x.shape[1]
        if cfg.positional == "sinusoidal":
            x = x + sinusoidal_table(s, cfg.d_model).to(dt)
        elif cfg.positional == "learned":
            if s > cfg.max_seq_len:
                raise ValueError("sequence %d longer than max_seq_len %d with learned positions"
                                 % (s, cfg.max_seq_len))
            x = x + self._pos_embed(which).weight[:s]
        if cfg.embedding_norm:
            x = self._embed_norm(which)(x)
        return x

    def _rope(self, s):
        cfg = self.cfg
        if cfg.positional != "rope" or cfg.head_dim is None:
            return None     # (no heads: a stack of mamba layers only, nothing to rotate)
        cos, sin = rope_cos_sin(s, cfg.head_dim, cfg.rope_base)
        dt = self._dtype()
        return cos.to(dt), sin.to(dt), cfg.rope_style

    def _head(self, h):
        cfg = self.cfg
        if not cfg.lm_head:
            return h
        if cfg.untied_head:
            return self.lm_head(h)
        w = self.embed.weight if (not cfg.is_encdec or self.shared_embeddings) else self.tgt_embed.weight
        return linear(h, w)

    def _key_masks(self, real, which, layer, cross=False):
        """The padding mask (bool [B, S], True = real) of input `which`'s
        keys in `layer` of its stack (None: no mask), with mask_mistake."""
        m, mistake = real.get(which), self.mask_mistake
        if m is None or (mistake == "first_layer_only" and layer > 0):
            return None
        if (mistake == "self_ignored" and not cross) or (mistake == "no_cross_mask" and cross):
            return None
        if mistake == "inverted":
            return ~m
        if mistake == "shifted":
            return torch.roll(m, 1, dims=-1)
        return m

    def forward(self, **inputs):
        cfg = self.cfg
        types = token_types(cfg, inputs)
        inputs, real = padding_masks(cfg, inputs)
        batched = inputs[cfg.input_names[0]].dim() == (2 if cfg.tokens else 3)
        if not batched:
            inputs = {k: v.unsqueeze(0) for k, v in inputs.items()}
            real = {k: v.unsqueeze(0) for k, v in real.items()}
            types = types.unsqueeze(0) if types is not None else None
        if cfg.is_encdec:
            src = self._embed(inputs["src"], "src")
            rope = self._rope(src.shape[1])
            for li, layer in enumerate(self.encoder.layers):
                # the encoder stack is never causal
                src = layer(src, causal=False, rope=rope, key_mask=self._key_masks(real, "src", li))
            if self.encoder.norm is not None:
                src = self.encoder.norm(src)
            x = self._embed(inputs["tgt"], "tgt")
            rope = self._rope(x.shape[1])
            for li, layer in enumerate(self.decoder.layers):
                x = layer(x, src, causal=cfg.causal, rope=rope, key_mask=self._key_masks(real, "tgt", li),
                          mem_mask=self._key_masks(real, "src", li, cross=True))
            if self.decoder.norm is not None:
                x = self.decoder.norm(x)
        else:
            x = self._embed(inputs["input"], "input", types)
            rope = self._rope(x.shape[1])
            for li, layer in enumerate(self.layers):
                x = layer(x, causal=cfg.causal, rope=rope, key_mask=self._key_masks(real, "input", li))
            if self.norm is not None:
                x = self.norm(x)
        out = self._head(x)
        return out if batched else out.squeeze(0)


# ---------------------------------------------------------------------------
# (a) PyTorch's own modules.
# ---------------------------------------------------------------------------

def _torch_activation(name):
    if name == "relu":
        return "relu"
    if name == "gelu":
        return "gelu"  # exact (erf)
    if name == "gelu_tanh":
        return functools.partial(F.gelu, approximate="tanh")
    raise ValueError(name)


def _tutorial_positional_encoding(seq_len, d_model):
    """The PyTorch tutorial's PositionalEncoding (an independent formulation
    of the same table), in float64, for odd d_model too."""
    position = torch.arange(seq_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe


class _TorchEmbedMixin:
    """The embeddings of (a) and (c), as a PyTorch user writes them around
    the layers: nn.Embedding tables (token types too, BERT's
    token_type_embeddings), the positional table, and with embedding_norm
    one norm module per stack (`make_norm`: nn.LayerNorm for (a), the
    Hugging Face style norm for (c))."""

    def _init_embeddings(self, cfg, shared_embeddings, make_norm=None):
        d = cfg.d_model
        if make_norm is None:
            def make_norm():
                return nn.LayerNorm(d, eps=cfg.norm_eps)
        if cfg.is_encdec:
            if cfg.tokens:
                if shared_embeddings:
                    self.embed = nn.Embedding(cfg.vocab_size, d)
                else:
                    self.src_embed = nn.Embedding(cfg.vocab_size, d)
                    self.tgt_embed = nn.Embedding(cfg.vocab_size, d)
            if cfg.positional == "learned":
                self.src_pos_embed = nn.Embedding(cfg.max_seq_len, d)
                self.tgt_pos_embed = nn.Embedding(cfg.max_seq_len, d)
            if cfg.embedding_norm:
                self.src_embed_norm = make_norm()
                self.tgt_embed_norm = make_norm()
        else:
            if cfg.tokens:
                self.embed = nn.Embedding(cfg.vocab_size, d)
            if cfg.type_vocab_size:
                self.type_embed = nn.Embedding(cfg.type_vocab_size, d)
            if cfg.positional == "learned":
                self.pos_embed = nn.Embedding(cfg.max_seq_len, d)
            if cfg.embedding_norm:
                self.embed_norm = make_norm()
        if cfg.untied_head:
            self.lm_head = nn.Linear(d, cfg.vocab_size, bias=False)

    def _embed_input(self, x, tok, pos, norm=None, types=None):
        """norm: the stack's embedding norm module (None: none); types: the
        token_type_ids (None: BERT's default, type 0 everywhere, added as
        the table's first row)."""
        cfg = self.cfg
        if cfg.tokens:
            ids = x
            x = tok(ids.long())
            if cfg.embedding_scale == "sqrt_d_model":
                x = x * math.sqrt(cfg.d_model)
            if cfg.type_vocab_size:
                x = x + (self.type_embed(types.long()) if types is not None else self.type_embed.weight[0])
        s = x.shape[-2]
        if cfg.positional == "sinusoidal":
            x = x + _tutorial_positional_encoding(s, cfg.d_model).to(x.dtype)
        elif cfg.positional == "learned":
            x = x + pos(torch.arange(s))
        if norm is not None:
            x = norm(x)
        return x

    def _lm_head(self, h, tied_weight):
        if not self.cfg.lm_head:
            return h
        if self.cfg.untied_head:
            return self.lm_head(h)
        return F.linear(h, tied_weight)


def _encoder_layer(cfg):
    return nn.TransformerEncoderLayer(
        cfg.d_model, cfg.num_heads, dim_feedforward=cfg.d_ff, dropout=0.0,
        activation=_torch_activation(cfg.activation), layer_norm_eps=cfg.norm_eps,
        batch_first=True, norm_first=(cfg.norm == "pre"))


def _decoder_layer(cfg):
    return nn.TransformerDecoderLayer(
        cfg.d_model, cfg.num_heads, dim_feedforward=cfg.d_ff, dropout=0.0,
        activation=_torch_activation(cfg.activation), layer_norm_eps=cfg.norm_eps,
        batch_first=True, norm_first=(cfg.norm == "pre"))


def _torch_window_mask(cfg, n, causal, dtype):
    """A sliding window as a PyTorch user passes it to nn.TransformerEncoder
    (`mask`) / nn.Transformer (`src_mask`, `tgt_mask`): a float [n, n]
    attn_mask, 0 where the query may attend the key and -inf elsewhere."""
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    keep = ((i - j).abs() <= cfg.window) | (i < cfg.global_tokens) | (j < cfg.global_tokens)
    if causal:
        keep &= j <= i
    return torch.zeros(n, n, dtype=dtype).masked_fill(~keep, float("-inf"))


def _torch_masks(cfg, n, causal, real, dtype):
    """A self-attention's masks as a PyTorch user passes them to
    nn.TransformerEncoder / nn.Transformer: (attn_mask, key_padding_mask).
    The rule (causal, sliding window) is the float [n, n] attn_mask as
    without a padding mask; the padding (`real`, bool [B, n] or [n], True
    for a real token) PyTorch's bool key_padding_mask (True for padding).
    Unless some query row is left with no key (left padding in a causal
    model): PyTorch's -inf there is a NaN row (softmax of nothing), which
    the next layer reads through its zero weights (0 * NaN); then both go
    into one float attn_mask, [B * num_heads, n, n] ([n, n] unbatched),
    with finfo.min where masked, so that such a row is the (finite) mean of
    every value row."""
    windowed = cfg.sliding_window
    if windowed:
        rule_mask = _torch_window_mask(cfg, n, causal, dtype)
    elif causal:
        rule_mask = nn.Transformer.generate_square_subsequent_mask(n)
    else:
        rule_mask = None
    if real is None:
        return rule_mask, None
    allowed = attention_allowed(range(n), range(n), cfg.window if windowed else None, cfg.global_tokens, causal)
    ok = allowed & real[..., None, :]
    if bool(ok.any(-1).all()):
        return rule_mask, ~real
    m = torch.zeros(ok.shape, dtype=dtype).masked_fill(~ok, torch.finfo(dtype).min)
    if m.dim() == 3:
        m = m.repeat_interleave(cfg.num_heads, dim=0)   # row b * num_heads + h
    return m, None


class TorchSingleStack(nn.TransformerEncoder, _TorchEmbedMixin):
    """(a) for `encoder` and `decoder`: nn.TransformerEncoder of
    nn.TransformerEncoderLayer (a GPT-style decoder is the same layers with
    a causal attn_mask).  Its own names are layers.{i}.*, norm.*."""

    def __init__(self, cfg):
        cfg = as_config(cfg)
        if cfg.linformer or cfg.performer or cfg.block_sparse:
            raise ConfigError("nn.Transformer does not express %s attention" % cfg.attention_kind)
        if cfg.moe:
            raise ConfigError("nn.Transformer does not express a mixture-of-experts FFN")
        norm = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps) if cfg.final_norm else None
        super().__init__(_encoder_layer(cfg), cfg.num_layers, norm=norm, enable_nested_tensor=False)
        self.cfg = cfg
        self._init_embeddings(cfg, False)

    def forward(self, input, mask=None, token_type_ids=None):  # noqa: A002 - the contract's input names
        cfg = self.cfg
        given = dict(input=input)
        given.update({k: v for k, v in (("mask", mask), ("token_type_ids", token_type_ids)) if v is not None})
        _, real = padding_masks(cfg, given)
        x = self._embed_input(input, getattr(self, "embed", None), getattr(self, "pos_embed", None),
                              getattr(self, "embed_norm", None), token_types(cfg, given))
        attn_mask, key_padding = _torch_masks(cfg, x.shape[-2], cfg.causal, real.get("input"), x.dtype)
        h = super().forward(x, mask=attn_mask, src_key_padding_mask=key_padding)
        return self._lm_head(h, self.embed.weight if cfg.tokens else None)


class TorchEncoderDecoder(nn.Transformer, _TorchEmbedMixin):
    """(a) for `encoder_decoder`: nn.Transformer (its encoder/decoder
    stacks given explicitly so that final_norm=false leaves them out)."""

    def __init__(self, cfg, shared_embeddings=False):
        cfg = as_config(cfg)
        if cfg.linformer or cfg.performer or cfg.block_sparse:
            raise ConfigError("nn.Transformer does not express %s attention" % cfg.attention_kind)
        if cfg.moe:
            raise ConfigError("nn.Transformer does not express a mixture-of-experts FFN")
        enc_norm = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps) if cfg.final_norm else None
        dec_norm = nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps) if cfg.final_norm else None
        encoder = nn.TransformerEncoder(_encoder_layer(cfg), cfg.num_encoder_layers, norm=enc_norm,
                                        enable_nested_tensor=False)
        decoder = nn.TransformerDecoder(_decoder_layer(cfg), cfg.num_decoder_layers, norm=dec_norm)
        super().__init__(d_model=cfg.d_model, nhead=cfg.num_heads,
                         num_encoder_layers=cfg.num_encoder_layers,
                         num_decoder_layers=cfg.num_decoder_layers,
                         dim_feedforward=cfg.d_ff, dropout=0.0,
                         activation=_torch_activation(cfg.activation),
                         custom_encoder=encoder, custom_decoder=decoder,
                         layer_norm_eps=cfg.norm_eps, batch_first=True,
                         norm_first=(cfg.norm == "pre"))
        self.cfg = cfg
        self.shared_embeddings = shared_embeddings
        self._init_embeddings(cfg, shared_embeddings)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        """src_mask, tgt_mask: the contract's padding masks (section 8), not
        nn.Transformer's attention masks of the same names."""
        cfg = self.cfg
        given = {"src": src, "tgt": tgt}
        given.update({k: v for k, v in (("src_mask", src_mask), ("tgt_mask", tgt_mask)) if v is not None})
        _, real = padding_masks(cfg, given)
        if cfg.tokens:
            se = self.embed if self.shared_embeddings else self.src_embed
            te = self.embed if self.shared_embeddings else self.tgt_embed
        else:
            se = te = None
        s = self._embed_input(src, se, getattr(self, "src_pos_embed", None), getattr(self, "src_embed_norm", None))
        t = self._embed_input(tgt, te, getattr(self, "tgt_pos_embed", None), getattr(self, "tgt_embed_norm", None))
        # A sliding window is on both self-attentions (the encoder's never
        # causal); the cross-attention stays full, masking only src's padding.
        s_attn, s_pad = _torch_masks(cfg, s.shape[-2], False, real.get("src"), s.dtype)
        t_attn, t_pad = _torch_masks(cfg, t.shape[-2], cfg.causal, real.get("tgt"), t.dtype)
        mem_pad = ~real["src"] if "src" in real else None
        h = super().forward(s, t, src_mask=s_attn, tgt_mask=t_attn, src_key_padding_mask=s_pad,
                            tgt_key_padding_mask=t_pad, memory_key_padding_mask=mem_pad)
        return self._lm_head(h, te.weight if cfg.tokens else None)


# ---------------------------------------------------------------------------
# (c) The Hugging Face style modules, for section 11's keys.
# ---------------------------------------------------------------------------
#
# nn.Transformer cannot express rms_norm, a gated FFN, grouped-query
# attention, silu or bias-free linears, so for those models (a)'s role is
# taken by a third implementation written the way Hugging Face's Llama
# modules are (modeling_llama.py): separate q_proj/k_proj/v_proj/o_proj
# nn.Linear layers, `repeat_kv` (torch.repeat_interleave on the head axis),
# an RMSNorm module with torch.rsqrt, separate gate_proj/up_proj/down_proj
# nn.Linear modules, F.silu, F.softmax, an additive causal mask of
# finfo.min, rope as rotate_half (half) or Meta's complex multiplication
# (interleaved), nn.LayerNorm for layer_norm.  Its own parameter names are
# Hugging Face-like; load_state_dict() takes the contract's names and slices
# in_proj into q/k/v and linear1 into gate/up, and state_dict() gives the
# contract's names back (concatenated), so one weights dict loads into (a),
# (b) or (c) alike.  `mistake` (self-test only) plants one deliberate error.

HF_MISTAKES = ("gqa_modulo", "gate_up_swapped", "rms_sum", "rms_centered", "silu_relu",
               "in_proj_bias_dropped", "linear2_bias_dropped", "kv_swapped", "cross_kv_from_query")


def repeat_kv(hidden_states, n_rep, mistake=None):
    """[B, KV, S, dk] -> [B, KV * n_rep, S, dk]: query head h reads KV head
    h // n_rep (Hugging Face's repeat_kv)."""
    if n_rep == 1:
        return hidden_states
    if mistake == "gqa_modulo":          # head h reads h % KV: wrong
        return hidden_states.repeat(1, n_rep, 1, 1)
    return torch.repeat_interleave(hidden_states, repeats=n_rep, dim=1)


class HFRMSNorm(nn.Module):
    """LlamaRMSNorm."""

    def __init__(self, hidden_size, eps, mistake=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps
        self.mistake = mistake

    def forward(self, hidden_states):
        if self.mistake == "rms_centered":
            hidden_states = hidden_states - hidden_states.mean(-1, keepdim=True)
        if self.mistake == "rms_sum":
            variance = hidden_states.pow(2).sum(-1, keepdim=True)
        else:
            variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


def _hf_norm(cfg, mistake):
    if cfg.rms:
        return HFRMSNorm(cfg.d_model, cfg.norm_eps, mistake)
    return nn.LayerNorm(cfg.d_model, eps=cfg.norm_eps)


def _hf_act(name, mistake):
    if name == "silu":
        return F.relu if mistake == "silu_relu" else F.silu
    if name == "gelu":
        return F.gelu
    if name == "gelu_tanh":
        return functools.partial(F.gelu, approximate="tanh")
    return F.relu


class HFMLP(nn.Module):
    """LlamaMLP: down_proj(act(gate_proj(x)) * up_proj(x)); not gated:
    down_proj(act(up_proj(x)))."""

    def __init__(self, cfg, mistake):
        super().__init__()
        d, f = cfg.d_model, cfg.d_ff
        self.gated = cfg.ffn_gated
        if self.gated:
            self.gate_proj = nn.Linear(d, f, bias=cfg.bias)
        self.up_proj = nn.Linear(d, f, bias=cfg.bias)
        self.down_proj = nn.Linear(f, d, bias=cfg.bias)
        self.act_fn = _hf_act(cfg.activation, mistake)

    def forward(self, x):
        if self.gated:
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return self.down_proj(self.act_fn(self.up_proj(x)))


class HFSparseMoeBlock(nn.Module):
    """A mixture-of-experts FFN with Mixtral's router (MixtralSparseMoeBlock:
    `gate` an nn.Linear without bias, F.softmax over the E logits,
    torch.topk of the probabilities, renormalised over the K chosen, which
    is the softmax of the K largest logits) and experts that are LlamaMLPs
    (HFMLP), written in the dense form: every expert runs on every token,
    and a [tokens, E] routing matrix (the renormalised weights scattered
    into zeros) combines them (einsum), where (b) loops over the experts."""

    def __init__(self, cfg, mistake):
        super().__init__()
        self.num_experts, self.top_k = cfg.moe_experts, cfg.moe_top_k
        self.gate = nn.Linear(cfg.d_model, cfg.moe_experts, bias=False)
        self.experts = nn.ModuleList([HFMLP(cfg, mistake) for _ in range(cfg.moe_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=router_logits.dtype)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
        routing = torch.zeros_like(router_logits).scatter(1, selected_experts, routing_weights)
        expert_states = torch.stack([expert(hidden_states) for expert in self.experts], dim=1)
        out = torch.einsum("te,ted->td", routing, expert_states)
        return out.reshape(batch_size, sequence_length, hidden_dim)


def _rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class HFRotary:
    """Rotary positions for positions 0..S-1: `half` as Hugging Face's
    LlamaRotaryEmbedding + apply_rotary_pos_emb (rotate_half), `interleaved`
    as Meta's llama apply_rotary_emb (view_as_complex times polar).  The
    angles in float64, then cast (the contract's choice)."""

    def __init__(self, cfg, seq_len, dtype):
        dim = cfg.head_dim
        inv_freq = 1.0 / (cfg.rope_base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        t = torch.arange(seq_len, dtype=torch.float64)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        self.style = cfg.rope_style
        if self.style == "half":
            emb = torch.cat((freqs, freqs), dim=-1)
            self.cos, self.sin = emb.cos().to(dtype), emb.sin().to(dtype)
        else:
            cdt = torch.complex64 if dtype == torch.float32 else torch.complex128
            self.freqs_cis = torch.polar(torch.ones_like(freqs), freqs).to(cdt)

    def __call__(self, x):
        """x [B, heads, S, dk]."""
        if self.style == "half":
            return x * self.cos + _rotate_half(x) * self.sin
        xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
        return torch.view_as_real(xc * self.freqs_cis).flatten(3)


class HFAttention(nn.Module):
    """LlamaAttention, with the contract's score kinds as einsums."""

    def __init__(self, cfg, mistake, cross=False):
        super().__init__()
        d = cfg.d_model
        self.num_heads, self.head_dim = cfg.num_heads, cfg.head_dim
        self.num_key_value_heads = cfg.num_kv_heads
        self.num_key_value_groups = cfg.num_heads // cfg.num_kv_heads
        self.score_kind = cfg.attention_score
        self.mistake = mistake
        self.cross = cross
        # Section 7's sliding window on self-attention (Mistral's sliding
        # window mask plus Longformer's global tokens); cross is full.
        self.sliding_window = cfg.window if (cfg.sliding_window and not cross) else None
        self.global_tokens = cfg.global_tokens
        self.q_proj = nn.Linear(d, self.num_heads * self.head_dim, bias=cfg.bias)
        self.k_proj = nn.Linear(d, self.num_key_value_heads * self.head_dim, bias=cfg.bias)
        self.v_proj = nn.Linear(d, self.num_key_value_heads * self.head_dim, bias=cfg.bias)
        self.o_proj = nn.Linear(d, d, bias=cfg.bias)
        h, a, dk = cfg.num_heads, cfg.additive_dim, cfg.head_dim
        if self.score_kind == "bilinear":
            self.bilinear = nn.Parameter(torch.empty(h, dk, dk))
        elif self.score_kind == "additive":
            self.additive_key = nn.Parameter(torch.empty(h, a, dk))
            self.additive_query = nn.Parameter(torch.empty(h, a, dk))
            self.additive_v = nn.Parameter(torch.empty(h, a))

    def forward(self, hidden_states, key_value_states=None, causal=False, rotary=None, attention_mask=None):
        """attention_mask: None or bool [B, kv_len], Hugging Face's
        attention_mask (True / 1 for a real token) of the keys."""
        bsz, q_len, _ = hidden_states.size()
        src = hidden_states if key_value_states is None else key_value_states
        if self.mistake == "cross_kv_from_query" and self.cross:
            src = hidden_states
        kv_len = src.shape[1]
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(src)
        value_states = self.v_proj(src)
        if self.mistake == "kv_swapped":
            key_states, value_states = value_states, key_states
        query_states = query_states.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, kv_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, kv_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        if rotary is not None:
            query_states, key_states = rotary(query_states), rotary(key_states)
        key_states = repeat_kv(key_states, self.num_key_value_groups, self.mistake)
        value_states = repeat_kv(value_states, self.num_key_value_groups, self.mistake)
        kind = self.score_kind
        if kind in ("scaled_dot", "dot"):
            attn_weights = torch.einsum("bhqd,bhkd->bhqk", query_states, key_states)
            if kind == "scaled_dot":
                attn_weights = attn_weights / math.sqrt(self.head_dim)
        elif kind == "bilinear":
            attn_weights = torch.einsum("bhqd,hde,bhke->bhqk", query_states, self.bilinear, key_states)
        else:
            kp = torch.einsum("bhkd,had->bhka", key_states, self.additive_key)
            qp = torch.einsum("bhqd,had->bhqa", query_states, self.additive_query)
            attn_weights = torch.einsum("bhqka,ha->bhqk", torch.tanh(qp[:, :, :, None] + kp[:, :, None]),
                                        self.additive_v)
        if causal or self.sliding_window is not None or attention_mask is not None:
            min_dtype = torch.finfo(attn_weights.dtype).min
            mask = torch.zeros((q_len, kv_len), dtype=attn_weights.dtype)
            if causal:
                mask = torch.full((q_len, kv_len), min_dtype, dtype=attn_weights.dtype).triu(1)
            if self.sliding_window is not None:
                # Masked out: farther than the window, and neither the query
                # nor the key among the first global_tokens positions.
                cache_position = torch.arange(q_len)[:, None]
                key_position = torch.arange(kv_len)[None, :]
                too_far = (cache_position - key_position).abs() > self.sliding_window
                local = (cache_position >= self.global_tokens) & (key_position >= self.global_tokens)
                mask = mask.masked_fill(too_far & local, min_dtype)
            if attention_mask is not None:
                # The 4-D mask of _prepare_4d_causal_attention_mask: the
                # padded keys masked in every query row, [B, 1, q, k].
                mask = mask[None, None].masked_fill(~attention_mask.bool()[:, None, None, :], min_dtype)
            attn_weights = attn_weights + mask
        attn_weights = F.softmax(attn_weights, dim=-1)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, self.num_heads * self.head_dim)
        return self.o_proj(attn_output)


class HFLayer(nn.Module):
    """One layer: self-attention, cross-attention (decoder stack of
    encoder_decoder), MLP; `pre`: h + f(norm(h)), `post`: norm(h + f(h))."""

    def __init__(self, cfg, cross, mistake):
        super().__init__()
        self.pre = cfg.norm == "pre"
        self.self_attn = HFAttention(cfg, mistake)
        self.attn_norm = _hf_norm(cfg, mistake)
        if cross:
            self.cross_attn = HFAttention(cfg, mistake, cross=True)
            self.cross_norm = _hf_norm(cfg, mistake)
        self.mlp = HFSparseMoeBlock(cfg, mistake) if cfg.moe else HFMLP(cfg, mistake)
        self.mlp_norm = _hf_norm(cfg, mistake)

    def _sub(self, norm, fn, h):
        return h + fn(norm(h)) if self.pre else norm(h + fn(h))

    def forward(self, hidden_states, memory=None, causal=False, rotary=None, attention_mask=None,
                memory_mask=None):
        h = self._sub(self.attn_norm, lambda t: self.self_attn(t, causal=causal, rotary=rotary,
                                                               attention_mask=attention_mask), hidden_states)
        if memory is not None:
            h = self._sub(self.cross_norm, lambda t: self.cross_attn(t, key_value_states=memory,
                                                                     attention_mask=memory_mask), h)
        return self._sub(self.mlp_norm, self.mlp, h)


class HFStack(nn.Module):
    def __init__(self, cfg, n, cross, mistake):
        super().__init__()
        # Each layer with its own kinds (section 7's `layers`).
        self.layers = nn.ModuleList([HFLayer(cfg.layer_config(i), cross, mistake) for i in range(n)])
        self.norm = _hf_norm(cfg, mistake) if cfg.final_norm else None

    def forward(self, h, memory=None, causal=False, rotary=None, attention_mask=None, memory_mask=None):
        for layer in self.layers:
            h = layer(h, memory, causal, rotary, attention_mask, memory_mask)
        return self.norm(h) if self.norm is not None else h


# Contract name (inside a layer) <-> (c)'s name.  in_proj_* and linear1.*
# split into several; the rest is a renaming.
_HF_ATTN = {"self_attn.": "self_attn.", "multihead_attn.": "cross_attn."}
_HF_SCORE = {"score.weight": "bilinear", "score.w_key": "additive_key",
             "score.w_query": "additive_query", "score.v": "additive_v"}


class HFStyleModel(nn.Module, _TorchEmbedMixin):
    """(c): forward(input=...) or forward(src=..., tgt=...), like (a) and (b);
    state_dict()/load_state_dict() in the contract's names."""

    def __init__(self, cfg, shared_embeddings=False, mistake=None):
        super().__init__()
        cfg = as_config(cfg)
        if mistake is not None and mistake not in HF_MISTAKES:
            raise ValueError(mistake)
        if cfg.mamba:
            raise ConfigError("(c) does not express mamba layers (their second form is (b) %s)" % cfg.second_form())
        if cfg.linformer or cfg.performer or cfg.block_sparse:
            raise ConfigError("(c) does not express %s attention (its second form is (b) %s)"
                              % ("/".join(sorted(set(cfg.attention_kinds) - {"full", "sliding_window"})),
                                 cfg.second_form()))
        self.cfg = cfg
        self.shared_embeddings = shared_embeddings
        self.mistake = mistake
        self._init_embeddings(cfg, shared_embeddings, lambda: _hf_norm(cfg, mistake))
        if cfg.is_encdec:
            self.encoder = HFStack(cfg, cfg.num_encoder_layers, False, mistake)
            self.decoder = HFStack(cfg, cfg.num_decoder_layers, True, mistake)
        else:
            self.model = HFStack(cfg, cfg.num_layers, False, mistake)

    # -- the contract's names ----------------------------------------------
    def _layer_prefixes(self):
        """(contract prefix, (c) prefix, cross) of every layer."""
        cfg = self.cfg
        if cfg.is_encdec:
            return ([("encoder.layers.%d." % i, "encoder.layers.%d." % i, False)
                     for i in range(cfg.num_encoder_layers)]
                    + [("decoder.layers.%d." % i, "decoder.layers.%d." % i, True)
                       for i in range(cfg.num_decoder_layers)])
        return [("layers.%d." % i, "model.layers.%d." % i, False) for i in range(cfg.num_layers)]

    def _ffn_prefixes(self, cp, hp):
        """A layer's FFNs: (contract prefix, (c) prefix) of its linear1 /
        linear2 and gate_proj / up_proj / down_proj: the layer's own, or
        each expert's of a mixture of experts (moe.experts.{e}. and
        mlp.experts.{e}.; the layer's own kind, section 7's `layers`)."""
        lc = self.cfg.kinds_of(cp)
        if lc.moe:
            return [("%smoe.experts.%d." % (cp, e), "%smlp.experts.%d." % (hp, e))
                    for e in range(lc.moe_experts)]
        return [(cp, hp + "mlp.")]

    def _renames(self):
        """Whole tensors: contract name -> (c) name."""
        cfg = self.cfg
        out = {}
        for cp, hp, cross in self._layer_prefixes():
            norms = ("attn_norm", "cross_norm", "mlp_norm") if cross else ("attn_norm", "mlp_norm")
            for i, n in enumerate(norms):
                for leaf in ("weight", "bias"):
                    out["%snorm%d.%s" % (cp, i + 1, leaf)] = "%s%s.%s" % (hp, n, leaf)
            for ca, ha in _HF_ATTN.items():
                if ca == "multihead_attn." and not cross:
                    continue
                for leaf in ("weight", "bias"):
                    out[cp + ca + "out_proj." + leaf] = hp + ha + "o_proj." + leaf
                for c, h in _HF_SCORE.items():
                    out[cp + ca + c] = hp + ha + h
            if cfg.kinds_of(cp).moe:
                out[cp + "moe.gate.weight"] = hp + "mlp.gate.weight"
            for fp, mp in self._ffn_prefixes(cp, hp):
                for leaf in ("weight", "bias"):
                    out[fp + "linear2." + leaf] = mp + "down_proj." + leaf
                    if not cfg.ffn_gated:
                        out[fp + "linear1." + leaf] = mp + "up_proj." + leaf
        for leaf in ("weight", "bias"):
            if cfg.is_encdec:
                out["encoder.norm." + leaf] = "encoder.norm." + leaf
                out["decoder.norm." + leaf] = "decoder.norm." + leaf
            else:
                out["norm." + leaf] = "model.norm." + leaf
        return out

    def _splits(self):
        """Tensors cut along their first axis: contract name -> [((c) name, rows)]."""
        cfg = self.cfg
        h, kv, dk, f = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim, cfg.d_ff
        out = {}
        for cp, hp, cross in self._layer_prefixes():
            for ca, ha in _HF_ATTN.items():
                if ca == "multihead_attn." and not cross:
                    continue
                for cl, hl in (("in_proj_weight", "weight"), ("in_proj_bias", "bias")):
                    out[cp + ca + cl] = [(hp + ha + p + "." + hl, n * dk) for p, n in
                                         (("q_proj", h), ("k_proj", kv), ("v_proj", kv))]
            if cfg.ffn_gated:
                for fp, mp in self._ffn_prefixes(cp, hp):
                    for leaf in ("weight", "bias"):
                        parts = [(mp + "gate_proj." + leaf, f), (mp + "up_proj." + leaf, f)]
                        if self.mistake == "gate_up_swapped":
                            parts = [(parts[1][0], f), (parts[0][0], f)]
                        out[fp + "linear1." + leaf] = parts
        return out

    def load_state_dict(self, state_dict, strict=True):
        renames, splits = self._renames(), self._splits()
        hf = {}
        for k, v in state_dict.items():
            if self.mistake == "in_proj_bias_dropped" and k.endswith("in_proj_bias"):
                v = torch.zeros_like(v)
            if self.mistake == "linear2_bias_dropped" and k.endswith("linear2.bias"):
                v = torch.zeros_like(v)
            if k in splits and v.dim() >= 1 and v.shape[0] == sum(n for _, n in splits[k]):
                at = 0
                for name, n in splits[k]:
                    hf[name] = v[at:at + n]
                    at += n
            elif k in splits:
                hf[k] = v   # misshapen: reported as unexpected
            else:
                hf[renames.get(k, k)] = v
        back = {}
        for k, parts in splits.items():
            for name, _ in parts:
                back[name] = k
        back.update({v: k for k, v in renames.items()})
        missing, unexpected = super().load_state_dict(hf, strict=False)
        missing = sorted({back.get(k, k) for k in missing})
        unexpected = sorted({back.get(k, k) if k not in state_dict else k for k in unexpected})
        if strict and (missing or unexpected):
            raise RuntimeError("HFStyleModel: missing %s, unexpected %s" % (missing, unexpected))
        return missing, unexpected

    def state_dict(self, *args, **kwargs):
        sd = super().state_dict(*args, **kwargs)
        renames, splits = self._renames(), self._splits()
        inv = {v: k for k, v in renames.items()}
        out = {}
        done = set()
        for k, v in sd.items():
            if k in done:
                continue
            owner = next((ck for ck, parts in splits.items() if k in dict(parts)), None)
            if owner is not None:
                names = [name for name, _ in splits[owner]]
                if self.mistake == "gate_up_swapped" and owner.endswith(("linear1.weight", "linear1.bias")):
                    names = names[::-1]
                if all(n in sd for n in names):
                    out[owner] = torch.cat([sd[n] for n in names], dim=0)
                    done.update(names)
                    continue
            out[inv.get(k, k)] = v
        return out

    # -- forward -----------------------------------------------------------
    def forward(self, **inputs):
        cfg = self.cfg
        types = token_types(cfg, inputs)
        inputs, real = padding_masks(cfg, inputs)
        batched = inputs[cfg.input_names[0]].dim() == (2 if cfg.tokens else 3)
        if not batched:
            inputs = {k: v.unsqueeze(0) for k, v in inputs.items()}
            real = {k: v.unsqueeze(0) for k, v in real.items()}
            types = types.unsqueeze(0) if types is not None else None
        dtype = self.o_dtype()

        def rotary(s):
            return HFRotary(cfg, s, dtype) if cfg.positional == "rope" else None
        if cfg.is_encdec:
            if cfg.tokens:
                se = self.embed if self.shared_embeddings else self.src_embed
                te = self.embed if self.shared_embeddings else self.tgt_embed
            else:
                se = te = None
            s = self._embed_input(inputs["src"].to(dtype) if not cfg.tokens else inputs["src"], se,
                                  getattr(self, "src_pos_embed", None), getattr(self, "src_embed_norm", None))
            t = self._embed_input(inputs["tgt"].to(dtype) if not cfg.tokens else inputs["tgt"], te,
                                  getattr(self, "tgt_pos_embed", None), getattr(self, "tgt_embed_norm", None))
            memory = self.encoder(s, rotary=rotary(s.shape[1]), attention_mask=real.get("src"))   # never causal
            h = self.decoder(t, memory, causal=cfg.causal, rotary=rotary(t.shape[1]),
                             attention_mask=real.get("tgt"), memory_mask=real.get("src"))
            out = self._lm_head(h, te.weight if cfg.tokens else None)
        else:
            x = inputs["input"]
            e = self._embed_input(x if cfg.tokens else x.to(dtype), getattr(self, "embed", None),
                                  getattr(self, "pos_embed", None), getattr(self, "embed_norm", None), types)
            h = self.model(e, causal=cfg.causal, rotary=rotary(e.shape[1]), attention_mask=real.get("input"))
            out = self._lm_head(h, self.embed.weight if cfg.tokens else None)
        return out if batched else out.squeeze(0)

    def o_dtype(self):
        return next(self.parameters()).dtype


def build_hf_model(cfg, shared_embeddings=False, mistake=None):
    """(c) for any model of sections 2 and 11 (harnesses use it through
    build_torch_model for the models that use section 11's keys)."""
    return HFStyleModel(as_config(cfg), shared_embeddings, mistake).eval()


# ---------------------------------------------------------------------------
# Building, initialising and running.
# ---------------------------------------------------------------------------

def build_formula_model(cfg, shared_embeddings=False, attention_form="dense", mask_form="keys",
                        mask_mistake=None, ffn_form="loop"):
    return FormulaModel(as_config(cfg), shared_embeddings, attention_form, mask_form, mask_mistake,
                        ffn_form).eval()


def build_torch_model(cfg, shared_embeddings=False, masked=False):
    """The second, independent implementation the harnesses compare (b)
    with (cfg.second_form()): (a), PyTorch's own modules, where they can
    express the model; (c), the Hugging Face style modules, for a model that
    uses section 11's keys; for another sliding-window model, (b) with the
    window's banded form (each query row gathers its keys) instead of the
    dense mask; for a linformer model, (b) in the factored form ((q K^T)
    E_n^T, (P F_n) V) instead of projecting K and V; for a performer
    model, (b) in the linear form (phi(K)^T V and phi(K)^T 1, the running
    sums when causal) instead of the [q, k] matrix; for a block_sparse one,
    (b) gathering each query block's key blocks; for a hybrid stack of
    section 7's `layers` ("mixed"), (b) with each layer in its own kind's
    second form (attention_form="second"); for a model with a mamba layer
    ("mamba"), the same, with each mamba mixer in its closed form; None
    otherwise ((b) alone).  A mixture-of-experts model: (c), whose MoE block
    is the dense form (every expert on every token), or (b) in its
    attention kind's second form with the MoE FFN in the dense form too
    (FormulaModel(ffn_form="dense")), against (b)'s Mixtral loop.
    `masked` (inputs with padding masks, section 8): (a) and (c)
    take the masks as PyTorch's key_padding_mask / Hugging Face's additive
    mask, the banded form masks the padded keys in its rows, and a model
    that none of those is for gets (b) with the dense additive mask
    instead of leaving padded keys out (mask_form "additive")."""
    cfg = as_config(cfg)
    form = cfg.second_form()
    if masked and form is None:
        return build_formula_model(cfg, shared_embeddings, mask_form="additive")
    if form == "hf":
        return build_hf_model(cfg, shared_embeddings)
    if form in ("banded", "factored", "linear", "blocks", "mixed", "mamba"):
        return build_formula_model(cfg, shared_embeddings,
                                   attention_form="second" if form in ("mixed", "mamba") else form,
                                   ffn_form="dense" if cfg.moe else "loop")
    if form is None:
        return None
    if cfg.is_encdec:
        m = TorchEncoderDecoder(cfg, shared_embeddings)
    else:
        # Section 7's `layers` of the same kinds in every layer: the
        # model-level model of those kinds (one mask for every layer).
        m = TorchSingleStack(cfg.uniform())
    return m.eval()


def make_weights(cfg, seed, shared_embeddings=False, perturb=True):
    """Deterministic weights, name -> float32 tensor, in the contract's names.

    Scaled like PyTorch's default init (xavier_uniform in_proj, Linear's
    U(+-1/sqrt(fan_in)), N(0,1) embeddings, LayerNorm 1/0, MHA biases 0),
    then, with `perturb`, LayerNorm weights/biases and the zero-initialised
    biases get small random values so that every tensor matters.  Score
    parameters: U(+-1/sqrt(dk)) for bilinear W and additive w_key/w_query,
    U(+-2/sqrt(additive_dim)) for additive v.  Linformer's proj_e / proj_f
    [k, max_seq_len]: like a Linear of fan_in max_seq_len,
    U(+-1/sqrt(max_seq_len)), so a projected row E_n K is about 0.5 |K| at
    n near max_seq_len (the self-test checks that E and F each matter).
    Performer's features [h, M, dk]: N(0, 1), the Gaussian draws of FAVOR+
    (its unbiased estimate of the softmax kernel needs W_h ~ N(0, I)); the
    cases' q / dk^(1/4) are of norm about 1, so exp stays far from
    overflow.  block_sparse's block_pattern [rows, R] (int32): key-block
    ids uniform in -1 .. rows, so some are outside [0, block count) and
    ignored (-1 always; rows and more at run time for a shorter input).
    A mixture of experts' moe.gate.weight [E, d_model]: like a Linear,
    U(+-1/sqrt(d_model)), so the logits of a normed input are about 0.6
    apart; its experts' linears like the dense FFN's.
    A mamba mixer (section 7) as Hugging Face's MambaMixer initialises it:
    in_proj, dt_proj and out_proj weights like a Linear
    (U(+-1/sqrt(fan_in)); dt_proj's is HF's U(+-dt_rank^-0.5) too),
    x_proj's MAMBA_X_PROJ_GAIN (8) times that (B and C of order 1),
    conv1d.weight and .bias like nn.Conv1d's (fan_in d_conv:
    U(+-1/sqrt(d_conv))), dt_proj.bias the inverse softplus of a dt drawn
    log-uniform in [1e-3, 1e-1] (so delta starts there), A_log row
    log(1 .. d_state) and D ones; with `perturb`, A_log and D (which HF
    leaves the same in every channel) get N(0, 0.1) added, so that a
    channel or state read from another shows.
    """
    cfg = as_config(cfg)
    g = torch.Generator().manual_seed(int(seed))

    def uniform(shape, bound):
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 2.0 - 1.0) * bound

    def normal(shape, std=1.0):
        return torch.randn(shape, generator=g, dtype=torch.float64) * std

    out = {}
    listing = expected_weights(cfg, shared_embeddings)
    for name, shape in listing.items():
        leaf = name.rsplit(".", 1)[-1]
        if ".mixer." in name:
            t = _mamba_init(name, shape, uniform, normal, perturb, listing)
        elif leaf == "in_proj_weight":
            bound = math.sqrt(6.0 / (shape[0] + shape[1]))  # xavier_uniform_
            t = uniform(shape, bound)
        elif leaf == "in_proj_bias" or name.endswith("out_proj.bias"):
            t = normal(shape, 0.1) if perturb else torch.zeros(shape, dtype=torch.float64)
        elif "norm" in name.split(".")[-2] and leaf == "weight":
            t = 1.0 + normal(shape, 0.1) if perturb else torch.ones(shape, dtype=torch.float64)
        elif "norm" in name.split(".")[-2] and leaf == "bias":
            t = normal(shape, 0.1) if perturb else torch.zeros(shape, dtype=torch.float64)
        elif "embed" in name:
            t = normal(shape)
        elif leaf in ("proj_e", "proj_f"):
            t = uniform(shape, 1.0 / math.sqrt(shape[1]))
        elif leaf == "features":
            t = normal(shape, 1.0)
        elif leaf == "block_pattern":
            out[name] = torch.randint(-1, shape[0] + 1, shape, generator=g, dtype=torch.int32)
            continue
        elif ".score." in name:
            if leaf == "v":
                t = uniform(shape, 2.0 / math.sqrt(shape[-1]))
            else:
                t = uniform(shape, 1.0 / math.sqrt(shape[-1]))
        elif leaf == "weight":  # Linear: kaiming_uniform(a=sqrt(5)) = U(+-1/sqrt(fan_in))
            t = uniform(shape, 1.0 / math.sqrt(shape[1]))
        elif leaf == "bias":  # Linear bias: U(+-1/sqrt(fan_in)); fan_in from the weight
            w_shape = expected_weights(cfg, shared_embeddings)[name[:-len("bias")] + "weight"]
            t = uniform(shape, 1.0 / math.sqrt(w_shape[1]))
        else:
            raise AssertionError("no init rule for " + name)
        out[name] = t.to(torch.float32).contiguous()
    return out


# x_proj's init bound times a Linear's: at a Linear's U(+-1/sqrt(d_inner)),
# B_t and C_t are about 0.1 and the scan's share of a layer's output
# (C_t . h_t, beside the D u skip term) moved the cases' outputs by 1 to 6
# tolerances only: an executable that dropped the scan would nearly pass.
# 8 gives B and C of order 1, as in trained Mamba models, and the scan
# 70 to 900 tolerances (the self-test requires every mamba case to see it,
# MAMBA_SHOWN); the fp32 references stay within 0.003 tol of float64.
MAMBA_X_PROJ_GAIN = 8.0


def _mamba_init(name, shape, uniform, normal, perturb, listing):
    """make_weights' values of a mamba mixer's tensor (float64); listing:
    expected_weights' (the conv1d kernel's size)."""
    part = name.split(".mixer.", 1)[1]
    if part == "x_proj.weight":
        return uniform(shape, MAMBA_X_PROJ_GAIN / math.sqrt(shape[1]))
    if part in ("in_proj.weight", "dt_proj.weight", "out_proj.weight"):
        return uniform(shape, 1.0 / math.sqrt(shape[1]))
    if part in ("conv1d.weight", "conv1d.bias"):
        # nn.Conv1d's: U(+-1/sqrt(fan_in)), fan_in = in_channels / groups * kernel = d_conv
        kernel = listing[name[:-len(part)] + "conv1d.weight"][-1]
        return uniform(shape, 1.0 / math.sqrt(kernel))
    if part == "dt_proj.bias":
        lo, hi = math.log(1e-3), math.log(1e-1)
        dt = torch.exp((uniform(shape, 0.5) + 0.5) * (hi - lo) + lo).clamp(min=1e-4)  # log-uniform
        return dt + torch.log(-torch.expm1(-dt))          # softplus^-1(dt)
    if part == "A_log":
        a = torch.log(torch.arange(1, shape[1] + 1, dtype=torch.float64)).expand(shape).clone()
        return a + normal(shape, 0.1) if perturb else a
    if part == "D":
        return 1.0 + normal(shape, 0.1) if perturb else torch.ones(shape, dtype=torch.float64)
    raise AssertionError("no init rule for " + name)


FLOAT_FILE_DTYPES = ("F32", "F16", "BF16")
INT_FILE_DTYPES = ("I32", "I64")


def weights_problems(cfg, tensors, shared_embeddings=False):
    """What the contract refuses in a weights file (sections 3 and 7):
    `tensors` name -> (shape, safetensors dtype).  A list of messages, each
    naming the tensor: a missing one, an unexpected one, another shape
    than the listing's (expected_weights), an integer dtype for a float
    weight, or a float (or other) dtype for block_sparse's block_pattern
    (key-block ids: I32 or I64)."""
    cfg = as_config(cfg)
    want = expected_weights(cfg, shared_embeddings)
    out = []
    for name, shape in want.items():
        if name not in tensors:
            out.append("missing tensor '%s'" % name)
            continue
        got, dtype = tensors[name]
        if tuple(got) != tuple(shape):
            out.append("tensor '%s' is %s, expected %s" % (name, list(got), list(shape)))
        ids = name.endswith("self_attn.block_pattern")
        if dtype not in (INT_FILE_DTYPES if ids else FLOAT_FILE_DTYPES):
            out.append("tensor '%s' has dtype %s, expected %s" % (name, dtype, " or ".join(
                INT_FILE_DTYPES if ids else FLOAT_FILE_DTYPES)))
    for name in tensors:
        if name not in want:
            out.append("unexpected tensor '%s'" % name)
    return out


def load_weights(model, weights):
    """Loads name -> tensor/ndarray into `model` (strict: same names/shapes),
    converting to the model's dtype."""
    dtype = next(model.parameters()).dtype
    sd = {}
    for k, v in weights.items():
        t = torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else torch.as_tensor(v)
        # Integer tensors (block_pattern) stay integers.
        sd[k] = t.to(dtype) if t.is_floating_point() else t.long()
    missing, unexpected = model.load_state_dict(sd, strict=False)
    if missing or unexpected:
        raise KeyError("weights do not match the model: missing %s, unexpected %s"
                       % (missing, unexpected))
    return model


def to_torch_inputs(cfg, inputs, dtype=torch.float32):
    """name -> np.ndarray (ids int32/int64, or float32) to torch tensors:
    ids as int64, floats as `dtype`; padding masks (section 8) and
    token_type_ids as they are (the models check and read them)."""
    out = {}
    for k, v in inputs.items():
        t = torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else torch.as_tensor(v)
        if k in cfg.mask_names or k in cfg.optional_inputs:
            out[k] = t   # checked, then read as integers, by the models
        else:
            out[k] = t.long() if cfg.tokens else t.to(dtype)
    return out


@torch.no_grad()
def run_model(model, cfg, inputs):
    """Runs `model` on numpy inputs in the model's own dtype; returns a tensor."""
    cfg = as_config(cfg)
    dtype = next(model.parameters()).dtype
    return model(**to_torch_inputs(cfg, inputs, dtype))


# ---------------------------------------------------------------------------
# fp32 rounding emulated in float64: how well-conditioned a computation is.
# ---------------------------------------------------------------------------

F32_UNIT_ROUNDOFF = 2.0 ** -24

# Ops whose fp32 result is exact (no rounding): data movement, indexing,
# masking, max, clamp, sign changes, constructors.  Results of other ops
# that produce float64 are rounded (see Fp32Rounding).
_EXACT_OPS = frozenset((
    "reshape", "view", "transpose", "permute", "t", "flatten", "squeeze", "unsqueeze", "expand",
    "expand_as", "contiguous", "clone", "detach", "__getitem__", "index_select", "gather", "narrow",
    "select", "split", "chunk", "unbind", "cat", "stack", "repeat", "roll", "masked_fill", "where",
    "amax", "amin", "max", "min", "clamp", "clamp_min", "clamp_max", "relu", "neg", "__neg__", "abs",
    "floor", "ceil", "round", "arange", "tensor", "as_tensor", "zeros", "ones", "full", "empty",
    "zeros_like", "ones_like", "full_like", "empty_like", "__get__", "__set__"))
_MATMUL_OPS = frozenset(("matmul", "__matmul__", "__rmatmul__", "mm", "bmm"))
_SUM_OPS = frozenset(("sum", "mean"))


class Fp32Rounding(torch.overrides.TorchFunctionMode):
    """Monte Carlo arithmetic (Parker, 1997): a float64 model run under this
    mode gets, at every op where fp32 arithmetic rounds, a random error of
    fp32's size, so the spread of its outputs around the plain float64 run
    is what fp32 rounding does to this computation -- without depending on
    this machine's fp32 kernels (BLAS, SIMD width, summation order).

      elementwise ops and casts:  y * (1 + u r)
      matmul (dot products):      y + u r (|A| @ |B|)
      sum / mean over n terms:    y + u r sum/mean(|x|)

    u = 2^-24, r uniform in [-1, 1] from `generator`, per element.  A dot
    product or sum of n terms rounds n partial sums, each bounded by the
    sum of magnitudes; with errors of random sign they add up to about u
    times that sum (the worst case, n u times it, does not happen in
    practice).  Ops in _EXACT_OPS pass through, as does the inside of the
    float64 tables (sinusoidal_table, rope_cos_sin); the cast of a table to
    the model's dtype (`to`) rounds."""

    def __init__(self, generator, u=F32_UNIT_ROUNDOFF):
        super().__init__()
        self.generator = generator
        self.u = u

    def _r(self, like):
        return torch.rand(like.shape, generator=self.generator, dtype=torch.float64) * 2.0 - 1.0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if (_float64_tables[0] or not isinstance(out, torch.Tensor) or out.dtype != torch.float64
                or out.numel() == 0):
            return out
        name = getattr(func, "__name__", "")
        if name in _EXACT_OPS:
            return out
        if name in _MATMUL_OPS:
            return out + self.u * self._r(out) * func(args[0].abs(), args[1].abs())
        if name in _SUM_OPS:
            return out + self.u * self._r(out) * func(args[0].abs(), *args[1:], **kwargs)
        return out * (1.0 + self.u * self._r(out))


def fp32_rounding_noise(run64, exact, trials=16, seed=0):
    """How far fp32 rounding moves the result of `run64` (a function that
    runs a float64 model and returns a numpy array; `exact`: its result
    without the mode): the largest max|run64() - exact| over `trials` runs
    under Fp32Rounding (a fixed generator seed, so the same on every
    machine)."""
    gen = torch.Generator().manual_seed(int(seed))
    exact = np.asarray(exact, dtype=np.float64)
    worst = 0.0
    for _ in range(trials):
        with Fp32Rounding(gen):
            y = np.asarray(run64(), dtype=np.float64)
        worst = max(worst, float(np.max(np.abs(y - exact))) if y.size else 0.0)
    return worst


# ---------------------------------------------------------------------------
# Self-test.
# ---------------------------------------------------------------------------

def _max_diff(a, b):
    assert a.shape == b.shape, (a.shape, b.shape)
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


def _random_inputs(cfg, gen, batch, seqs):
    out = {}
    for name, s in zip(cfg.input_names, seqs):
        shape = ((batch,) if batch else ()) + (s,)
        if cfg.tokens:
            out[name] = torch.randint(0, cfg.vocab_size, shape, generator=gen)
        else:
            out[name] = torch.randn(shape + (cfg.d_model,), generator=gen)
    return out


def _naive_attention(attn, x, mem, causal, rope, key_mask=None):
    """Per-element loops over batch, head, i, j in float64: a third
    formulation of FormulaAttention for the self-test (a sliding window as
    the contract words it, per (i, j); Linformer's rows K'_r = sum_j
    E[r, j] k_j and V'_r = sum_j F[r, j] v_j for j < n, after rope;
    Performer per query i: phi vectors exp(W_h x' - x'.x' / 2) / sqrt(M)
    of each x' = q_i / dk^(1/4) and k_j / dk^(1/4) (W_h the query head's,
    k_j its kv head's), a_j = phi(q_i) . phi(k_j) for j <= i when causal,
    out = sum_j a_j v_j / sum_j a_j; block_sparse per (i, j) from the
    block numbers i // B and j // B and the pattern's row; a padding mask
    key_mask [B, Sk] (True = real): key j of batch row b is not attended
    where it is False, and a row with no key left is 0)."""
    kv = x if mem is None else mem
    b, sq, d = x.shape
    sk = kv.shape[1]
    h, dk = attn.num_heads, attn.head_dim
    hkv = attn.num_kv_heads
    W = attn.in_proj_weight.double()
    Bi = (attn.in_proj_bias.double() if attn.in_proj_bias is not None
          else torch.zeros(W.shape[0], dtype=torch.float64))
    x = x.double()
    kv = kv.double()
    out = torch.zeros(b, sq, d, dtype=torch.float64)
    if rope is not None:
        cos64, sin64 = rope_cos_sin(max(sq, sk), dk, rope[3])
    for bb in range(b):
        for hh in range(h):
            rows = slice(hh * dk, (hh + 1) * dk)
            g = hh * hkv // h        # this query head's key/value head
            krows = slice((h + g) * dk, (h + g + 1) * dk)
            vrows = slice((h + hkv + g) * dk, (h + hkv + g + 1) * dk)
            Wq, Wk, Wv = W[rows], W[krows], W[vrows]
            bq, bk, bv = Bi[rows], Bi[krows], Bi[vrows]
            qs = [Wq @ x[bb, i] + bq for i in range(sq)]
            ks = [Wk @ kv[bb, j] + bk for j in range(sk)]
            vs = [Wv @ kv[bb, j] + bv for j in range(sk)]
            if rope is not None:
                style = rope[2]

                def rot(vec, pos):
                    r = vec.clone()
                    for i in range(dk // 2):
                        a, c = (i, i + dk // 2) if style == "half" else (2 * i, 2 * i + 1)
                        co, si = cos64[pos, i], sin64[pos, i]
                        r[a] = vec[a] * co - vec[c] * si
                        r[c] = vec[a] * si + vec[c] * co
                    return r
                qs = [rot(q, i) for i, q in enumerate(qs)]
                ks = [rot(k, j) for j, k in enumerate(ks)]
            if getattr(attn, "linformer_k", None) is not None:
                assert mem is None and not causal, "linformer: self-attention, never causal"
                E, Fp = attn.proj_e.double(), attn.proj_f.double()
                ks = [sum(E[r, j] * ks[j] for j in range(sk)) for r in range(E.shape[0])]
                vs = [sum(Fp[r, j] * vs[j] for j in range(sk)) for r in range(Fp.shape[0])]
            if getattr(attn, "performer_m", None) is not None:
                assert mem is None and key_mask is None, "performer: self-attention, no mask"
                Wf = attn.features[hh].double()
                M = Wf.shape[0]

                def phi(vec):
                    xs = vec / dk ** 0.25
                    return torch.exp(Wf @ xs - float(xs @ xs) / 2.0) / math.sqrt(M)
                pq, pk = [phi(q) for q in qs], [phi(k) for k in ks]
                for i in range(sq):
                    a = [float(pq[i] @ pk[j]) for j in range(sk) if not (causal and j > i)]
                    out[bb, i, rows] = sum(a[j] * vs[j] for j in range(len(a))) / sum(a)
                continue
            pattern = getattr(attn, "block_pattern", None)
            blk = getattr(attn, "block", None)
            nk = len(ks)
            for i in range(sq):
                scores = []
                for j in range(nk):
                    q, k = qs[i], ks[j]
                    if attn.score_kind == "scaled_dot":
                        s = float(q @ k) / math.sqrt(dk)
                    elif attn.score_kind == "dot":
                        s = float(q @ k)
                    elif attn.score_kind == "bilinear":
                        Wb = attn.score.weight[hh].double()
                        s = float(sum(q[p] * Wb[p, r] * k[r] for p in range(dk) for r in range(dk)))
                    else:
                        wk = attn.score.w_key[hh].double()
                        wq = attn.score.w_query[hh].double()
                        vv = attn.score.v[hh].double()
                        s = float(vv @ torch.tanh(wk @ k + wq @ q))
                    if causal and j > i:
                        s = -math.inf
                    win, glob = attn.window, attn.global_tokens
                    if win is not None and not (abs(i - j) <= win or i < glob or j < glob):
                        s = -math.inf
                    if blk is not None:
                        qb, kb, nb = i // blk, j // blk, -(-sk // blk)
                        rand = [] if pattern is None else [int(r) for r in pattern[qb] if 0 <= int(r) < nb]
                        if not (abs(qb - kb) <= attn.window_blocks or qb < attn.global_blocks
                                or kb < attn.global_blocks or kb in rand):
                            s = -math.inf
                    if key_mask is not None and not bool(key_mask[bb, j]):
                        s = -math.inf
                    scores.append(s)
                m = max(scores)
                if m == -math.inf:      # no key to attend: a zero row
                    out[bb, i, rows] = 0.0
                    continue
                e = [math.exp(s - m) for s in scores]
                z = sum(e)
                o = sum((e[j] / z) * vs[j] for j in range(nk))
                out[bb, i, rows] = o
    Wo = attn.out_proj.weight.double()
    bo = attn.out_proj.bias.double() if attn.out_proj.bias is not None else 0.0
    return out @ Wo.T + bo


def _transform_for_torch(cfg, weights):
    """Weights of an equivalent scaled_dot model for a dot/bilinear model:
    dot:      q.k = (sqrt(dk) q).k / sqrt(dk): Q rows (and bias) * sqrt(dk);
    bilinear: q^T W_h k = q.(sqrt(dk) W_h k) / sqrt(dk): K rows of head h
              -> sqrt(dk) W_h @ K_h, K bias -> sqrt(dk) W_h @ b_h.
    Computed in float64 and rounded once."""
    d, h, dk = cfg.d_model, cfg.num_heads, cfg.head_dim
    out = {}
    for name, t in weights.items():
        if ".score." in name:
            continue
        out[name] = t.double().clone()
    for name in list(out):
        if not name.endswith("in_proj_weight"):
            continue
        prefix = name[: -len("in_proj_weight")]
        w, b = out[name], out[prefix + "in_proj_bias"]
        if cfg.attention_score == "dot":
            w[:d] *= math.sqrt(dk)
            b[:d] *= math.sqrt(dk)
        elif cfg.attention_score == "bilinear":
            Wb = weights[prefix + "score.weight"].double()
            for hh in range(h):
                rows = slice(d + hh * dk, d + (hh + 1) * dk)
                w[rows] = math.sqrt(dk) * (Wb[hh] @ w[rows])
                b[rows] = math.sqrt(dk) * (Wb[hh] @ b[rows])
    return {k: v.float() for k, v in out.items()}


def _desc_variants():
    """A deterministic sample of configurations (a) supports, plus a few it
    doesn't (for the transformed-weight and naive checks)."""
    base = dict(d_model=32, num_heads=4, d_ff=48, max_seq_len=16)
    combos = itertools.product(
        ("encoder", "decoder", "encoder_decoder"),
        ("post", "pre"),
        ("relu", "gelu", "gelu_tanh"),
        ("sinusoidal", "learned", "none"),
        (None, 37),          # vocab
    )
    out = []
    for n, (arch, norm, act, pos, vocab) in enumerate(combos):
        d = dict(base, architecture=arch, norm=norm, activation=act, positional=pos)
        if arch == "encoder_decoder":
            d["num_encoder_layers"] = 1 + n % 2
            d["num_decoder_layers"] = 2 - n % 2
        else:
            d["num_layers"] = 2
        if vocab:
            d["vocab_size"] = vocab
            if n % 3 == 0:
                d["tie_embeddings"] = False
            if n % 4 == 1:
                d["embedding_scale"] = "sqrt_d_model"
            if n % 7 == 2:
                d["lm_head"] = False
        if n % 5 == 0:
            d["final_norm"] = norm == "post"   # the non-default value
        if n % 6 == 3:
            d["causal"] = arch == "encoder"    # the non-default value
        if n % 8 == 5:
            d["norm_eps"] = 1e-6
        if n % 9 == 4:
            d.update(d_model=30, num_heads=3, d_ff=50)  # odd sizes, odd heads (no fast path)
        out.append(d)
    # dot and bilinear scores, checked against (a) with transformed weights.
    for n, (arch, score, norm) in enumerate(itertools.product(
            ("encoder", "decoder", "encoder_decoder"), ("dot", "bilinear"), ("post", "pre"))):
        d = dict(base, architecture=arch, attention_score=score, norm=norm,
                 positional=("sinusoidal", "learned", "none")[n % 3])
        if arch == "encoder_decoder":
            d.update(num_encoder_layers=2, num_decoder_layers=2)
        else:
            d["num_layers"] = 2
        if n % 2:
            d["vocab_size"] = 29
        if n % 4 == 3:
            d.update(d_model=48, num_heads=2)   # dk 24
        out.append(d)
    return out


def _section11_variants():
    """A deterministic sample of models using section 11's keys (checked
    (c) against (b)): every architecture, norm type and placement,
    activation, gated and not, num_kv_heads = num_heads, a group of 2 and 1
    (multi-query), bias on and off, every positional and score kind, odd
    sizes (dk 12, d_ff 45)."""
    out = []
    archs = ("encoder", "decoder", "encoder_decoder")
    acts = ("silu", "gelu", "relu", "gelu_tanh")
    poss = ("rope", "sinusoidal", "learned", "none")
    scores = ("scaled_dot", "scaled_dot", "dot", "bilinear", "additive")
    for n in range(36):
        d = dict(architecture=archs[n % 3], d_model=32, num_heads=4, d_ff=48, max_seq_len=16,
                 norm=("pre", "post")[(n // 3) % 2], norm_type=("rms_norm", "layer_norm")[(n // 2) % 2],
                 activation=acts[n % 4], ffn_gated=(n % 5) < 3, num_kv_heads=(2, 1, 4)[n % 3 if n % 7 else 2],
                 bias=(n // 4) % 2 == 0, positional=poss[(n // 5) % 4], attention_score=scores[n % 5 if n % 6 else 0])
        if n % 9 == 1:
            d.update(d_model=48, d_ff=45)               # dk 12, d_ff not a multiple of 8
        if n % 4 == 1 or n % 8 == 6:
            d["rope_style"] = "interleaved"
        if d["architecture"] == "encoder_decoder":
            d.update(num_encoder_layers=1 + n % 2, num_decoder_layers=2 - n % 2)
        else:
            d["num_layers"] = 2
        if n % 2 == 0:
            d["vocab_size"] = 29
            if n % 4 == 0:
                d["tie_embeddings"] = False
        if n % 7 == 3:
            d["final_norm"] = d["norm"] == "post"
        if n % 11 == 5:
            d["norm_eps"] = 1e-6
        if not Config(d).uses_section11():
            d["bias"] = False
        out.append(d)
    return out


def _hf_negative_controls(check_differs):
    """The (c)-vs-(b) comparison is not vacuous: each of HF_MISTAKES planted
    in (c) must show up as a large difference from (b), on a model where
    it matters (grouped-query self and cross attention, rms norms, gated
    silu, biases)."""
    base = dict(d_model=32, num_heads=4, num_kv_heads=2, d_ff=40, max_seq_len=16, vocab_size=31,
                norm="pre", norm_type="rms_norm", activation="silu", ffn_gated=True, positional="rope")
    models = (dict(base, architecture="decoder", num_layers=2),
              dict(base, architecture="encoder_decoder", num_layers=1, norm="post", final_norm=True,
                   positional="learned"))
    which = {"cross_kv_from_query": (1,)}
    for mi, desc in enumerate(models):
        cfg = Config(desc)
        w = make_weights(cfg, seed=77 + mi)
        fm = load_weights(build_formula_model(cfg), w)
        gen = torch.Generator().manual_seed(8)
        inputs = _random_inputs(cfg, gen, 2, (7, 6) if cfg.is_encdec else (9,))
        with torch.no_grad():
            want = fm(**inputs)
            ok = _max_diff(load_weights(build_hf_model(cfg), w)(**inputs), want)
        check_differs.same("(c) without a mistake, %s" % cfg.architecture, ok, want)
        for mistake in HF_MISTAKES:
            if mi not in which.get(mistake, (0, 1)):
                continue
            hm = load_weights(build_hf_model(cfg, mistake=mistake), w)
            with torch.no_grad():
                check_differs("(c) %s, %s" % (mistake, cfg.architecture), _max_diff(hm(**inputs), want))
    # Wrong settings of the description itself.
    desc = models[0]
    cfg = Config(desc)
    w = make_weights(cfg, seed=79)
    inputs = _random_inputs(cfg, torch.Generator().manual_seed(9), 2, (9,))
    with torch.no_grad():
        want = load_weights(build_formula_model(cfg), w)(**inputs)
        for what, over in (("layer_norm weights read as rms", None),
                           ("rope interleaved instead of half", dict(rope_style="interleaved")),
                           ("gelu instead of silu", dict(activation="gelu"))):
            if over is None:   # rms norm weights, a zero bias: layer_norm centres x
                c2 = Config(dict(desc, norm_type="layer_norm"))
                w2 = dict(w)
                w2.update({k[:-len("weight")] + "bias": torch.zeros_like(v) for k, v in w.items()
                           if k.split(".")[-2].startswith("norm")})
            else:
                c2, w2 = Config(dict(desc, **over)), w
            check_differs("(c) with %s" % what,
                          _max_diff(load_weights(build_hf_model(c2), w2)(**inputs), want))


def _negative_controls(check_differs):
    """The comparison is not vacuous: deliberate mistakes in the weights
    handed to (a) must show up as large differences."""
    desc = dict(architecture="encoder_decoder", d_model=32, num_heads=4, d_ff=48, num_layers=2,
                max_seq_len=16, vocab_size=31, norm="post", final_norm=True)
    cfg = Config(desc)
    w = make_weights(cfg, seed=99)
    fm = load_weights(build_formula_model(cfg), w)
    gen = torch.Generator().manual_seed(5)
    inputs = _random_inputs(cfg, gen, 2, (7, 6))
    with torch.no_grad():
        want = fm(**inputs)

    def mutated(what, fn, desc_override=None):
        w2 = {k: v.clone() for k, v in w.items()}
        fn(w2)
        tm = load_weights(build_torch_model(dict(desc, **(desc_override or {}))), w2)
        with torch.no_grad():
            check_differs(what, _max_diff(tm(**inputs), want))

    d = cfg.d_model

    def swap_qk(w2):
        for k in [k for k in w2 if k.endswith("self_attn.in_proj_weight")]:
            q = w2[k][:d].clone()
            w2[k][:d] = w2[k][d:2 * d]
            w2[k][d:2 * d] = q

    def swap_norms(w2):
        for p in ("weight", "bias"):
            k1, k2 = "decoder.layers.0.norm1." + p, "decoder.layers.0.norm3." + p
            w2[k1], w2[k2] = w2[k2].clone(), w2[k1].clone()

    def swap_embeds(w2):
        w2["src_embed.weight"], w2["tgt_embed.weight"] = w2["tgt_embed.weight"], w2["src_embed.weight"]

    def transpose_out(w2):
        k = "encoder.layers.1.self_attn.out_proj.weight"
        w2[k] = w2[k].T.contiguous()

    mutated("Q/K blocks of in_proj swapped", swap_qk)
    mutated("norm1/norm3 swapped", swap_norms)
    mutated("src/tgt embeddings swapped", swap_embeds)
    mutated("out_proj transposed", transpose_out)
    mutated("decoder not causal", lambda w2: None, {"causal": False})
    mutated("pre instead of post", lambda w2: None, {"norm": "pre"})
    mutated("gelu instead of relu", lambda w2: None, {"activation": "gelu"})


def self_test(verbose=False, extra_descs=(), mask_cases=(), embed_cases=(), moe_cases=(), layers_cases=(),
              mamba_cases=()):
    torch.set_num_threads(1)
    failures = []
    worst = 0.0
    n_checks = 0

    def check(what, diff, tol=1e-5, scale=1.0):
        """diff < tol * max(1, scale): an absolute bound for outputs of
        magnitude <= 1, relative to max|output| above (fp32 itself rounds
        at ~6e-8 relative, so logits of magnitude 100+ cannot agree to an
        absolute 1e-5)."""
        nonlocal worst, n_checks
        n_checks += 1
        norm = diff / max(1.0, scale)
        worst = max(worst, norm)
        ok = norm < tol
        if verbose or not ok:
            print("%s %s: max abs diff %.3g (max|out| %.3g, normalised %.3g)"
                  % ("ok  " if ok else "FAIL", what, diff, scale, norm))
        if not ok:
            failures.append(what)

    gen = torch.Generator().manual_seed(1234)

    # 1. Building blocks against PyTorch's functional forms.
    x = torch.randn(5, 7, 33, generator=gen) * 3
    w = torch.randn(33, generator=gen)
    b = torch.randn(33, generator=gen)
    check("layer_norm", _max_diff(layer_norm(x, w, b, 1e-5), F.layer_norm(x, (33,), w, b, 1e-5)))
    check("gelu", _max_diff(activation_fn("gelu", x), F.gelu(x)))
    check("gelu_tanh", _max_diff(activation_fn("gelu_tanh", x), F.gelu(x, approximate="tanh")))
    check("relu", _max_diff(activation_fn("relu", x), F.relu(x)))
    check("silu", _max_diff(activation_fn("silu", x), F.silu(x)))
    check("silu at -1e4 (no nan)", _max_diff(activation_fn("silu", torch.tensor([-1e4, 1e4])),
                                            torch.tensor([0.0, 1e4])))
    x64 = x.double()
    rms64 = x64 / torch.sqrt((x64 ** 2).sum(-1, keepdim=True) / 33 + 1e-5) * w.double()
    check("rms_norm vs float64", _max_diff(rms_norm(x, w, 1e-5), rms64))
    hr = HFRMSNorm(33, 1e-5)
    with torch.no_grad():
        hr.weight.copy_(w)
    check("rms_norm vs HFRMSNorm", _max_diff(rms_norm(x, w, 1e-5), hr(x)))
    check("softmax", _max_diff(softmax_last(x), torch.softmax(x, -1)))
    for d in (32, 21, 2, 1):
        check("sinusoidal table d=%d" % d,
              _max_diff(sinusoidal_table(20, d), _tutorial_positional_encoding(20, d)), 1e-12)
    # Spot values of the interleaved table: PE(pos,2i)=sin(pos/10000^(2i/d)).
    pe = sinusoidal_table(9, 10)
    check("sinusoidal spot values", max(
        abs(pe[7, 4].item() - math.sin(7 / 10000 ** (4 / 10))),
        abs(pe[7, 5].item() - math.cos(7 / 10000 ** (4 / 10))),
        abs(pe[3, 0].item() - math.sin(3)), abs(pe[3, 1].item() - math.cos(3))), 1e-12)

    # 2. Rotary positions against the usual formulations.
    for dk, base in ((8, 10000.0), (24, 500.0), (80, 1e6)):
        S = 13
        q = torch.randn(2, 3, S, dk, generator=gen, dtype=torch.float64)
        cos, sin = rope_cos_sin(S, dk, base)
        # interleaved == RoFormer/LLaMA complex form: (x0 + i x1) * e^{i pos theta}
        inv = 1.0 / base ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk)
        freqs = torch.polar(torch.ones(S, dk // 2, dtype=torch.float64),
                            torch.outer(torch.arange(S, dtype=torch.float64), inv))
        qc = torch.view_as_complex(q.reshape(2, 3, S, dk // 2, 2).contiguous())
        ref_int = torch.view_as_real(qc * freqs).flatten(-2)
        check("rope interleaved vs complex dk=%d" % dk,
              _max_diff(apply_rope(q, cos, sin, "interleaved"), ref_int), 1e-12)
        # half == GPT-NeoX / HF rotate_half form
        emb = torch.cat((torch.outer(torch.arange(S, dtype=torch.float64), inv),) * 2, -1)

        def rotate_half(t):
            return torch.cat((-t[..., dk // 2:], t[..., : dk // 2]), -1)
        ref_half = q * emb.cos() + rotate_half(q) * emb.sin()
        check("rope half vs rotate_half dk=%d" % dk,
              _max_diff(apply_rope(q, cos, sin, "half"), ref_half), 1e-12)
        # half on a permuted vector == permuted interleaved
        perm = torch.cat((torch.arange(0, dk, 2), torch.arange(1, dk, 2)))
        check("rope half/interleaved permutation dk=%d" % dk,
              _max_diff(apply_rope(q[..., perm], cos, sin, "half"),
                        apply_rope(q, cos, sin, "interleaved")[..., perm]), 1e-12)
        # scores depend on relative position only
        for style in ("half", "interleaved"):
            a = torch.randn(dk, generator=gen, dtype=torch.float64).expand(S, dk)
            c = torch.randn(dk, generator=gen, dtype=torch.float64).expand(S, dk)
            ra, rc = apply_rope(a, cos, sin, style), apply_rope(c, cos, sin, style)
            s = ra @ rc.T
            rel = max(abs(s[i, j].item() - s[i + 1, j + 1].item())
                      for i in range(S - 1) for j in range(S - 1))
            check("rope %s relative-position invariance dk=%d" % (style, dk), rel, 1e-9)
            check("rope %s position 0 is identity dk=%d" % (style, dk),
                  _max_diff(ra[0], a[0]), 1e-15)

    # 3. The attention function against per-element loops (all score kinds).
    def check_attention(label, desc, cross, causal, rope_style, seq=5):
        cfg = Config(dict(architecture="encoder", d_ff=8, num_layers=1, max_seq_len=16, **desc))
        d, h = cfg.d_model, cfg.num_heads
        attn = FormulaAttention(cfg).double()
        with torch.no_grad():
            for p in attn.parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5)
            if getattr(attn, "block_pattern", None) is not None:
                rows = attn.block_pattern.shape[0]
                attn.block_pattern.copy_(torch.randint(-1, rows + 1, attn.block_pattern.shape, generator=gen))
        xq = torch.randn(2, seq, d, generator=gen, dtype=torch.float64)
        mem = torch.randn(2, 3, d, generator=gen, dtype=torch.float64) if cross else None
        rope = None
        if rope_style:
            cos, sin = rope_cos_sin(16, d // h, 777.0)
            rope = (cos, sin, rope_style, 777.0)
        want = _naive_attention(attn, xq, mem, causal, rope)
        forms = [("", attn)]
        if cfg.sliding_window:   # the banded form too, on the same parameters
            banded = FormulaAttention(cfg, form="banded").double()
            banded.load_state_dict(attn.state_dict())
            forms = [(" dense", attn), (" banded", banded)]
        for kind, second in (("linformer", "factored"), ("performer", "linear"), ("block_sparse", "blocks")):
            if cfg.attention_kind == kind:   # the second form too, on the same parameters
                other = FormulaAttention(cfg, form=second).double()
                other.load_state_dict(attn.state_dict())
                forms = [(" dense", attn), (" " + second, other)]
        for form, a in forms:
            with torch.no_grad():
                got = a(xq, mem=mem, causal=causal, rope=rope[:3] if rope else None)
            check("attention %s rope=%s causal=%s cross=%s %s%s"
                  % (desc["attention_score"], rope_style, causal, cross, label, form),
                  _max_diff(got, want), 1e-10)

    for score, rope_style, causal, cross, dims in itertools.product(
            ("scaled_dot", "dot", "bilinear", "additive"), (None, "half", "interleaved"),
            (False, True), (False, True), ((12, 3, None), (16, 2, 5))):
        if cross and (causal or rope_style):
            continue  # cross-attention is never causal nor rotated
        d, h, adim = dims
        desc = dict(d_model=d, num_heads=h, attention_score=score)
        if adim:
            desc["additive_dim"] = adim
        check_attention("dims=%s" % (dims,), desc, cross, causal, rope_style)
    # Grouped-query (num_kv_heads 2 of 4, 1 of 3) and bias-free attention.
    for score, rope_style, causal, cross, dims in itertools.product(
            ("scaled_dot", "bilinear", "additive"), (None, "half"), (False, True), (False, True),
            ((16, 4, 2, False), (12, 3, 1, True))):
        if cross and (causal or rope_style):
            continue
        d, h, kvh, bias = dims
        check_attention("heads=%d kv_heads=%d bias=%s" % (h, kvh, bias),
                        dict(d_model=d, num_heads=h, attention_score=score, num_kv_heads=kvh,
                             bias=bias), cross, causal, rope_style)

    # Sliding windows (section 7), dense mask and banded form each against
    # the loop: W 0, W inside the sequence, W >= seq, global tokens 1 and 3
    # and >= seq, causal or not, every score kind and rope style,
    # grouped-query heads.
    for n, (score, causal, (W, G)) in enumerate(itertools.product(
            ("scaled_dot", "dot", "bilinear", "additive"), (False, True),
            ((0, 0), (2, 0), (1, 1), (2, 3), (8, 0), (0, 9)))):
        d, h = ((12, 3), (16, 2))[n % 2]
        desc = dict(d_model=d, num_heads=h, attention_score=score,
                    attention=dict(kind="sliding_window", window=W, global_tokens=G))
        if n % 5 == 2:
            desc.update(d_model=16, num_heads=4, num_kv_heads=2)
        check_attention("window=%d global=%d%s" % (W, G, " kv_heads=2" if "num_kv_heads" in desc else ""),
                        desc, False, causal, (None, "half", "interleaved")[n % 3], seq=9)

    # 4. Negative controls: mistakes must be visible.
    def check_differs(what, diff):
        nonlocal n_checks
        n_checks += 1
        ok = diff > 1e-3
        if verbose or not ok:
            print("%s negative control (%s): max abs diff %.3g (must be > 1e-3)"
                  % ("ok  " if ok else "FAIL", what, diff))
        if not ok:
            failures.append("negative control: " + what)
    _negative_controls(check_differs)

    def check_same(what, diff, ref):
        check(what, diff, scale=ref.abs().max().item())
    check_differs.same = check_same
    _hf_negative_controls(check_differs)

    # 5. The fp32 rounding emulation: perturbations of fp32's size where
    #    fp32 rounds (and not zero), none where it doesn't, the float64
    #    tables left exact (only their cast rounds).
    u = F32_UNIT_ROUNDOFF
    a = torch.randn(4, 9, generator=gen, dtype=torch.float64)
    b = torch.randn(9, 5, generator=gen, dtype=torch.float64)
    with Fp32Rounding(torch.Generator().manual_seed(3)):
        mm = torch.matmul(a, b)
        ew = torch.exp(a)
        sm = a.sum(dim=-1)
        moved = (a.transpose(0, 1).reshape(36)[3:], a.amax(dim=-1), torch.clamp(a, min=0.0), a[1:3])
        tables = (sinusoidal_table(7, 10), rope_cos_sin(7, 8, 500.0)[1])
        cast = sinusoidal_table(7, 10).to(torch.float64)
    for what, got, want, room in (("matmul", mm, a @ b, u * (a.abs() @ b.abs())),
                                  ("exp", ew, torch.exp(a), u * torch.exp(a)),
                                  ("sum", sm, a.sum(dim=-1), u * a.abs().sum(dim=-1)),
                                  ("table cast", cast, sinusoidal_table(7, 10),
                                   u * sinusoidal_table(7, 10).abs())):
        # error / its fp32 size: in (0, 1] (not in check(): not a diff)
        ratio = ((got - want).abs() / room.clamp(min=1e-300)).max().item()
        n_checks += 1
        ok = 0.0 < ratio <= 1.0 + 1e-9
        if verbose or not ok:
            print("%s Fp32Rounding %s: largest error / its fp32 bound %.3g (must be in (0, 1])"
                  % ("ok  " if ok else "FAIL", what, ratio))
        if not ok:
            failures.append("Fp32Rounding " + what)
    exact = ((a.transpose(0, 1).reshape(36)[3:], a.amax(dim=-1), torch.clamp(a, min=0.0), a[1:3]),
             (sinusoidal_table(7, 10), rope_cos_sin(7, 8, 500.0)[1]))
    for what, got, want in zip(("transpose/reshape/slice", "amax", "clamp", "index", "sinusoidal table",
                                "rope table"), moved + tables, exact[0] + exact[1]):
        check("Fp32Rounding leaves %s exact" % what, _max_diff(got, want), 1e-300)

    # 6. Whole models: (b) vs (a) (vs (c) for section 11's keys), names
    #    against the contract's tables.
    # (Linformer cases are section 9's: their sequences stay within
    # max_seq_len, the columns of E and F; performer cases section 11's.)
    descs = (list(_desc_variants()) + _section11_variants()
             + [d for d in extra_descs if not (Config(d).linformer or Config(d).performer)])
    for idx, desc in enumerate(descs):
        shared_opts = (False, True) if (desc["architecture"] == "encoder_decoder" and "vocab_size" in desc) else (False,)
        for shared in shared_opts:
            cfg = Config(desc)
            label = "model %d %s%s" % (idx, _short(desc), " shared" if shared else "")
            fm = build_formula_model(cfg, shared)
            exp = expected_weights(cfg, shared)
            fnames = {k: tuple(v.shape) for k, v in fm.state_dict().items()}
            if fnames != exp:
                failures.append(label + ": formula names differ from the contract: %s"
                                % sorted(set(fnames.items()) ^ set(exp.items())))
                print("FAIL", failures[-1])
                continue
            weights = make_weights(cfg, seed=idx + 1, shared_embeddings=shared)
            load_weights(fm, weights)
            tm = build_torch_model(cfg, shared)
            alt = None
            if tm is None and cfg.positional != "rope" and cfg.attention_score in ("dot", "bilinear"):
                scaled = dict(desc, attention_score="scaled_dot")
                tm = build_torch_model(scaled, shared)
                alt = _transform_for_torch(cfg, weights)
            if tm is None:
                continue
            tnames = {k: tuple(v.shape) for k, v in tm.state_dict().items()}
            exp_t = expected_weights(Config(dict(desc, attention_score="scaled_dot")), shared) if alt else exp
            if tnames != exp_t:
                failures.append(label + ": torch names differ from the contract: %s"
                                % sorted(set(tnames.items()) ^ set(exp_t.items())))
                print("FAIL", failures[-1])
                continue
            load_weights(tm, alt if alt is not None else weights)
            for batch in (2, 0):
                seqs = (7, 5) if cfg.is_encdec else (7,)
                if batch == 0:
                    seqs = (1, 3) if cfg.is_encdec else (13,)
                inputs = _random_inputs(cfg, gen, batch, seqs)
                with torch.no_grad():
                    yb = fm(**inputs)
                    ya = tm(**inputs)
                want_shape = ((batch,) if batch else ()) + (seqs[-1], cfg.out_dim)
                if tuple(yb.shape) != want_shape or tuple(ya.shape) != want_shape:
                    failures.append("%s: shapes %s / %s, expected %s" % (label, tuple(yb.shape), tuple(ya.shape), want_shape))
                    print("FAIL", failures[-1])
                    continue
                check("%s batch=%d%s" % (label, batch, " (transformed weights)" if alt else ""),
                      _max_diff(ya, yb), scale=ya.abs().max().item())

    # 7. (c) itself against (a), PyTorch's own modules, on models both
    #    express (layer_norm, relu/gelu, no grouping, biases), and against
    #    (b) where (a) cannot go (rope, other score kinds) without section
    #    11's keys: the Hugging Face style modules are anchored to torch.
    anchors = _desc_variants()[::9] + [
        dict(architecture=a, d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
             vocab_size=29, positional="rope", rope_style=st, attention_score=sc, norm=nm)
        for a, st, sc, nm in (("decoder", "half", "scaled_dot", "pre"),
                              ("encoder", "interleaved", "bilinear", "post"),
                              ("encoder_decoder", "interleaved", "additive", "pre"),
                              ("encoder_decoder", "half", "dot", "post"))]
    for idx, desc in enumerate(anchors):
        cfg = Config(desc)
        shared = idx % 2 == 1 and cfg.is_encdec and cfg.tokens
        label = "(c) vs %s %d %s%s" % ("(a)" if cfg.torch_supported() else "(b)", idx, _short(desc),
                                        " shared" if shared else "")
        hm = build_hf_model(cfg, shared)
        exp = expected_weights(cfg, shared)
        hnames = {k: tuple(v.shape) for k, v in hm.state_dict().items()}
        if hnames != exp:
            failures.append(label + ": (c) names differ from the contract: %s"
                            % sorted(set(hnames.items()) ^ set(exp.items())))
            print("FAIL", failures[-1])
            continue
        weights = make_weights(cfg, seed=500 + idx, shared_embeddings=shared)
        load_weights(hm, weights)
        back = hm.state_dict()
        if any(not torch.equal(back[k], weights[k]) for k in weights):
            failures.append(label + ": (c) state_dict() does not give back the weights it loaded")
            print("FAIL", failures[-1])
        other = build_torch_model(cfg, shared) if cfg.torch_supported() else build_formula_model(cfg, shared)
        load_weights(other, weights)
        for batch in (2, 0):
            seqs = ((7, 5) if batch else (1, 3)) if cfg.is_encdec else ((7,) if batch else (13,))
            inputs = _random_inputs(cfg, gen, batch, seqs)
            with torch.no_grad():
                yc, yo = hm(**inputs), other(**inputs)
            check("%s batch=%d" % (label, batch), _max_diff(yc, yo), scale=yo.abs().max().item())

    # 8. Sliding-window attention (section 7): the rule's two forms against
    #    each other, whole models in them, W >= seq and G >= seq as full
    #    attention, decode steps at absolute positions, planted mistakes.
    _window_self_test(check, check_differs, gen, extra_descs)

    # 9. Linformer (section 7): the key's good and bad values, the weight
    #    listing, the formula and factored forms against the per-element
    #    loop and each other, whole models, E = F = a permutation as full
    #    attention (against (a)), planted mistakes.
    _linformer_self_test(check, check_differs, gen, extra_descs, check_attention)

    # 10. Padding masks (section 8): the inputs' checks, which rows are
    #     defined, the attention function against the per-element loop,
    #     the forms against each other on whole models, padded positions
    #     changing nothing, an all-ones mask as no mask, planted mistakes.
    _mask_self_test(check, check_differs, gen, mask_cases)

    # 11. Performer (section 7): the key's good and bad values, the weight
    #     listing, the mask refused, phi against the softmax kernel it
    #     estimates and many features against softmax attention, the dense
    #     and linear forms against the per-element loop and each other,
    #     whole models, causality, planted mistakes.
    _performer_self_test(check, check_differs, gen, extra_descs, check_attention)

    # 12. Block-sparse attention (section 7; the bs_* cases too): the key, the
    #     listing, the rule's two forms against each other and the contract's
    #     words, the attention against the per-element loop (with padding
    #     masks too), whole models in every form, the kinds it reduces to,
    #     planted mistakes.
    _block_sparse_self_test(check, check_differs, gen, check_attention, extra_descs)

    # 13. The embeddings (embedding_norm, type_vocab_size and the
    #     token_type_ids input): the keys, the listing, the input's checks,
    #     whole models in (b), (a) and (c) with token types given and not
    #     (and padding masks), left-out types as zeros, planted mistakes, the
    #     norm of the summed rows spot-checked.
    _embedding_self_test(check, check_differs, gen, embed_cases)

    # 14. Mixture-of-experts FFNs (section 7): the key, the listing, the
    #     block against a per-token float64 loop (ties too) and (c)'s, the
    #     dense FFN as one expert (against (a)), whole models in both forms
    #     and the second form, the cases' routing margins and gate rows,
    #     planted routing mistakes.
    _moe_self_test(check, check_differs, gen, moe_cases)

    # 15. A decoder's per-layer kinds (section 7's `layers`): the key, the
    #     model without them and with one kind everywhere, hybrid stacks
    #     layer by layer against the model-level layers of their kinds,
    #     their second forms, masks, planted mistakes.
    _layers_self_test(check, check_differs, gen, layers_cases)

    # 16. Mamba layers (section 7's `layers` entries "mamba" and the
    #     `mamba` key): the key, the convolution and the mixer in their
    #     two forms against per-element loops, whole models (pure and
    #     hybrid stacks) against their second form, layer by layer,
    #     causality, masks refused, planted mistakes, and what the cases
    #     can tell.
    _mamba_self_test(check, check_differs, gen, mamba_cases)

    print("reference self-test: %d checks, worst normalised diff %.3g (bound 1e-5), %d failed"
          % (n_checks, worst, len(failures)))
    return not failures


def _short(desc):
    keys = ("architecture", "norm", "activation", "positional", "attention_score",
            "vocab_size", "tie_embeddings", "lm_head", "final_norm", "causal", "embedding_scale", "d_model",
            "norm_type", "ffn_gated", "num_kv_heads", "bias", "embedding_norm", "type_vocab_size")
    out = ["%s=%s" % (k, desc[k]) for k in keys if k in desc]
    f = desc.get("ffn")
    if isinstance(f, dict):
        out.append("ffn=%s" % ":".join(str(f[k]) for k in ("kind", "experts", "top_k") if k in f))
    a = desc.get("attention")
    if isinstance(a, dict):
        keys = ("kind", "window", "global_tokens", "k", "features", "block", "window_blocks", "global_blocks",
                "random_blocks")
        out.append("attention=%s" % ":".join(str(a[k]) for k in keys if k in a))
    return ",".join(out)


def _window(w, g=0):
    return dict(kind="sliding_window", window=w, global_tokens=g)


def _window_variants():
    """Sliding-window models for the self-test: every architecture, score
    kind and positional kind, both norms, W 0, W inside the sequence, global
    tokens 0, 1, 2, 3, causal and not (the encoder's too), grouped-query
    heads and the other section 11 keys, odd head counts."""
    base = dict(d_model=32, num_heads=4, d_ff=48, max_seq_len=16)
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu",
                 ffn_gated=True, bias=False, num_kv_heads=2)
    out = [
        dict(base, architecture="encoder", num_layers=2, attention=_window(2)),
        dict(base, architecture="encoder", num_layers=2, norm="pre", positional="learned", vocab_size=29,
             tie_embeddings=False, attention=_window(1, 2)),
        dict(base, architecture="decoder", num_layers=2, norm="pre", positional="rope", vocab_size=29,
             attention=_window(3)),
        dict(base, architecture="decoder", num_layers=2, activation="gelu", attention=_window(2, 1)),
        dict(base, architecture="encoder", num_layers=2, attention_score="dot", positional="none",
             attention=_window(0)),
        dict(base, architecture="decoder", num_layers=2, attention_score="bilinear", positional="learned",
             vocab_size=29, attention=_window(1, 3)),
        dict(base, architecture="encoder", num_layers=1, attention_score="additive", positional="rope",
             rope_style="interleaved", additive_dim=12, attention=_window(2, 1)),
        dict(base, architecture="encoder_decoder", num_layers=2, vocab_size=29, attention=_window(2, 1)),
        dict(base, architecture="encoder_decoder", num_encoder_layers=1, num_decoder_layers=2, norm="pre",
             attention_score="additive", positional="rope", attention=_window(1)),
        dict(base, architecture="encoder_decoder", num_layers=1, attention_score="dot", positional="learned",
             vocab_size=29, attention=_window(2, 2)),
        dict(base, architecture="decoder", num_layers=2, vocab_size=29, attention=_window(2, 1), **llama),
        dict(base, architecture="encoder_decoder", num_layers=1, attention=_window(1, 1),
             **dict(llama, positional="sinusoidal", num_kv_heads=1)),
        dict(base, architecture="decoder", num_layers=2, causal=False, attention=_window(2)),
        dict(base, architecture="encoder", num_layers=2, causal=True, attention=_window(1, 1)),
        dict(base, architecture="encoder", num_layers=2, d_model=30, num_heads=3, d_ff=50,
             attention=_window(2)),
        dict(base, architecture="decoder", num_layers=1, vocab_size=29, attention=_window(0)),
    ]
    return out


def _window_self_test(check, check_differs, gen, extra_descs):
    """Section 8 of the self-test: sliding-window attention."""
    # The key: good values parse (every kind), bad ones are a ConfigError.
    base = dict(architecture="decoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=8)
    parsed = []
    for att, want in (({"kind": "full"}, ("full", None, 0)), (None, ("full", None, 0)),
                      (_window(0), ("sliding_window", 0, 0)), ({"kind": "sliding_window", "window": 3},
                                                              ("sliding_window", 3, 0)),
                      (_window(5, 2), ("sliding_window", 5, 2)),
                      ({"kind": "block_sparse", "block": 4}, ("block_sparse", None, 0))):
        cfg = Config(base if att is None else dict(base, attention=att))
        parsed.append((cfg.attention_kind, cfg.window, cfg.global_tokens) == want)
    refused = []
    for att in ([], "sliding_window", {}, {"window": 2}, {"kind": "nope"}, {"kind": ["full"]},
                {"kind": "sliding_window"}, {"kind": "sliding_window", "global_tokens": 1},
                _window(-1), _window(2, -1), _window(True), _window(2.0), _window(2, 1.5), _window("2"),
                dict(_window(2), block=4), {"kind": "full", "window": 2}, {"kind": "full", "extra": 1},
                {"kind": "block_sparse", "block": 4, "window": 1}, {"kind": "linformer", "window": 4},
                {"kind": "performer"}):
        try:
            Config(dict(base, attention=att))
            refused.append(False)
        except ConfigError:
            refused.append(True)
    check("attention key: %d of %d good values parse, %d of %d bad ones refused"
          % (sum(parsed), len(parsed), sum(refused), len(refused)),
          float(len(parsed) - sum(parsed) + len(refused) - sum(refused)), 0.5)
    # The rule's two forms agree key for key: the dense [q, k] matrix
    # (attention_allowed) and the banded key lists (banded_keys), for whole
    # sequences and for decode steps (one query at absolute position i, the
    # i + 1 keys of a cache), each key once.
    bad = []
    for n, w, g, causal in itertools.product((1, 5, 13, 100), (0, 1, 3, 7, 13, 200), (0, 1, 3, 13, 200),
                                             (False, True)):
        allowed = attention_allowed(range(n), range(n), w, g, causal)
        for i in range(n):
            keys = banded_keys(i, n, w, g, causal)
            if keys != allowed[i].nonzero().flatten().tolist():
                bad.append((n, w, g, causal, i))
            if causal:
                step = attention_allowed([i], range(i + 1), w, g, True)[0]
                if banded_keys(i, i + 1, w, g, True) != step.nonzero().flatten().tolist():
                    bad.append((n, w, g, "decode", i))
    check("window rule: banded key lists == dense mask rows (%d mismatches, first %s)"
          % (len(bad), bad[:1]), float(len(bad)), 0.5)
    # Spot values, as the contract words them (W 1, G 1, 5 tokens).
    want = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 0, 1, 1, 1],
                         [1, 0, 0, 1, 1]], dtype=torch.bool)
    check("window rule spot values W=1 G=1", float((attention_allowed(range(5), range(5), 1, 1) != want).sum()),
          0.5)
    check("window rule spot values W=1 G=1 causal",
          float((attention_allowed(range(5), range(5), 1, 1, True) != want.tril()).sum()), 0.5)
    check("window rule: full attention is every key",
          float((~attention_allowed(range(4), range(6))).sum()), 0.5)

    # Decode steps at absolute positions: the row of query p alone, against
    # the keys 0..p of a cache, equals row p of the whole sequence (both
    # forms), and chunks starting at p0 too; counting positions from the
    # chunk (relative) instead is wrong.
    for score in ("scaled_dot", "dot", "bilinear", "additive"):
        cfg = Config(dict(architecture="decoder", d_model=16, num_heads=2, d_ff=8, num_layers=1,
                          max_seq_len=32, attention_score=score, attention=_window(3, 2)))
        attn = FormulaAttention(cfg).double()
        with torch.no_grad():
            for p in attn.parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5)
        S = 19
        q, k, v = (torch.randn(2, 2, S, 8, generator=gen, dtype=torch.float64) for _ in range(3))
        with torch.no_grad():
            whole = dense_attention(q, k, v, attn.scores, attention_allowed(range(S), range(S), 3, 2, True))
            d_b = d_d = d_c = 0.0
            rel = 0.0
            for p in range(S):
                qp, kp, vp = q[:, :, p:p + 1], k[:, :, :p + 1], v[:, :, :p + 1]
                rb = banded_attention(qp, kp, vp, attn.scores, 3, 2, True, q_pos0=p)
                rd = dense_attention(qp, kp, vp, attn.scores, attention_allowed([p], range(p + 1), 3, 2, True))
                d_b = max(d_b, _max_diff(rb, whole[:, :, p:p + 1]))
                d_d = max(d_d, _max_diff(rd, whole[:, :, p:p + 1]))
                rel = max(rel, _max_diff(banded_attention(qp, kp, vp, attn.scores, 3, 2, True, q_pos0=0),
                                         whole[:, :, p:p + 1]))
            for p0, p1 in ((0, 7), (7, 8), (8, 19)):
                rc = banded_attention(q[:, :, p0:p1], k[:, :, :p1], v[:, :, :p1], attn.scores, 3, 2, True,
                                      q_pos0=p0)
                d_c = max(d_c, _max_diff(rc, whole[:, :, p0:p1]))
        check("window decode steps at absolute positions %s (banded)" % score, d_b, 1e-12)
        check("window decode steps at absolute positions %s (dense)" % score, d_d, 1e-12)
        check("window prefill chunks at absolute positions %s (banded)" % score, d_c, 1e-12)
        check_differs("window decode step with positions counted from the step, %s" % score, rel)

    # Whole models: (b) dense against (b) banded in float32 (1e-5) and in
    # float64 (1e-12), and against (a) (with its float attn_mask), (c) (its
    # additive finfo.min mask) or (a) with transformed weights (dot and
    # bilinear without rope), whichever applies; the window must matter
    # (differ from full attention) unless it covers the sequence.
    descs = _window_variants() + [d for d in extra_descs if Config(d).sliding_window]
    for idx, desc in enumerate(descs):
        cfg = Config(desc)
        shared = cfg.is_encdec and cfg.tokens and idx % 2 == 1
        label = "window model %d %s%s" % (idx, _short(desc), " shared" if shared else "")
        weights = make_weights(cfg, seed=900 + idx, shared_embeddings=shared)
        dense = load_weights(build_formula_model(cfg, shared), weights)
        banded = load_weights(build_formula_model(cfg, shared, attention_form="banded"), weights)
        dense64 = load_weights(build_formula_model(cfg, shared).double(), weights)
        banded64 = load_weights(build_formula_model(cfg, shared, attention_form="banded").double(), weights)
        others = []
        if cfg.torch_supported():
            others.append(("(a)", build_torch_model(cfg, shared), weights))
        elif cfg.uses_section11():
            others.append(("(c)", build_hf_model(cfg, shared), weights))
        elif cfg.positional != "rope" and cfg.attention_score in ("dot", "bilinear"):
            others.append(("(a) transformed weights",
                           build_torch_model(dict(desc, attention_score="scaled_dot"), shared),
                           _transform_for_torch(cfg, weights)))
        for _, m, w in others:
            load_weights(m, w)
        full = load_weights(build_formula_model(dict(desc, attention={"kind": "full"}), shared), weights)
        max_seq = max(desc.get("max_seq_len", 16), 16)
        for batch in (2, 0):
            seqs = ((11, 9) if batch else (13, 6)) if cfg.is_encdec else ((11,) if batch else (13,))
            seqs = tuple(min(x, max_seq) for x in seqs)
            inputs = _random_inputs(cfg, gen, batch, seqs)
            with torch.no_grad():
                yd, yb = dense(**inputs), banded(**inputs)
                sc = yd.abs().max().item()
                check("%s batch=%d dense vs banded" % (label, batch), _max_diff(yd, yb), scale=sc)
                in64 = {k: (v if cfg.tokens else v.double()) for k, v in inputs.items()}
                y64 = dense64(**in64)
                check("%s batch=%d dense vs banded, float64" % (label, batch),
                      _max_diff(y64, banded64(**in64)), 1e-12, scale=y64.abs().max().item())
                for what, m, _ in others:
                    check("%s batch=%d %s vs (b)" % (label, batch, what), _max_diff(m(**inputs), yd), scale=sc)
                covers = cfg.window >= max(seqs) - 1 or cfg.global_tokens >= max(seqs) - (
                    1 if cfg.causal else 0)
                if not covers:
                    check_differs("%s batch=%d: the window matters (vs full attention)" % (label, batch),
                                  _max_diff(full(**inputs), yd))

    # W >= seq (and W = seq - 1, the smallest that reaches every key) and
    # G >= seq are full attention: the same outputs as {"kind": "full"}.
    for arch, causal in (("encoder", False), ("decoder", True), ("encoder", True),
                         ("encoder_decoder", True)):
        base = dict(architecture=arch, d_model=32, num_heads=4, d_ff=48, max_seq_len=16, vocab_size=29,
                    norm="pre", num_layers=2, causal=causal, positional="rope")
        cfg_full = Config(dict(base, attention={"kind": "full"}))
        w = make_weights(cfg_full, seed=950)
        seqs = (13, 9) if arch == "encoder_decoder" else (13,)
        inputs = _random_inputs(cfg_full, gen, 2, seqs)
        with torch.no_grad():
            want = load_weights(build_formula_model(cfg_full), w)(**inputs)
            for what, att in (("W=seq-1", _window(12)), ("W=seq", _window(13)), ("W=1000", _window(1000)),
                              ("G=seq", _window(0, 13)), ("G=1000", _window(1, 1000))):
                cfg = Config(dict(base, attention=att))
                for form in ("dense", "banded"):
                    got = load_weights(build_formula_model(cfg, attention_form=form), w)(**inputs)
                    check("window %s is full attention, %s causal=%s (%s)" % (what, arch, causal, form),
                          _max_diff(got, want), 1e-6, scale=want.abs().max().item())
            # Torch's modules with the window's mask, on a scaled_dot model
            # without rope: also full attention.
            cfg_a = Config(dict(base, positional="sinusoidal", attention=_window(13, 0)))
            tm = load_weights(build_torch_model(cfg_a), w)
            fa = load_weights(build_formula_model(dict(base, positional="sinusoidal")), w)
            ref = fa(**inputs)
            check("window W=seq is full attention, %s causal=%s ((a) with its mask)" % (arch, causal),
                  _max_diff(tm(**inputs), ref), scale=ref.abs().max().item())

    # Planted mistakes in the banded form and in (a)'s mask must show.
    for desc in (dict(architecture="encoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16,
                      num_layers=2, attention=_window(2, 2)),
                 dict(architecture="decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16,
                      num_layers=2, vocab_size=29, positional="rope", attention=_window(2, 3))):
        cfg = Config(desc)
        w = make_weights(cfg, seed=960)
        inputs = _random_inputs(cfg, gen, 2, (13,))
        with torch.no_grad():
            want = load_weights(build_formula_model(cfg), w)(**inputs)
            for mistake in BANDED_MISTAKES:
                m = load_weights(build_formula_model(cfg, attention_form="banded"), w)
                for layer in m.layers:
                    layer.self_attn.forward = functools.partial(_banded_with_mistake, layer.self_attn, mistake)
                check_differs("banded form with %s, %s" % (mistake, cfg.architecture), _max_diff(m(**inputs), want))
            for what, att in (("window W-1", _window(1, cfg.global_tokens)),
                              ("window W+1", _window(3, cfg.global_tokens)),
                              ("no global tokens", _window(2, 0)),
                              ("global tokens G+1", _window(2, cfg.global_tokens + 1))):
                other = dict(desc, attention=att)
                m = build_torch_model(other) if Config(other).torch_supported() else build_formula_model(other)
                check_differs("%s instead of %s, %s" % (what, _short(dict(attention=desc["attention"])),
                                                        cfg.architecture),
                              _max_diff(load_weights(m, w)(**inputs), want))
            if not cfg.causal:
                # (a) given a causal mask instead of the window's.
                m = load_weights(build_torch_model(dict(desc, causal=True)), w)
                check_differs("(a) with a causal window, encoder", _max_diff(m(**inputs), want))


def _banded_with_mistake(attn, mistake, x, mem=None, causal=False, rope=None, key_mask=None):
    """FormulaAttention.forward in the banded form with one of
    BANDED_MISTAKES planted (self-test only; no padding mask)."""
    assert key_mask is None
    b, sq, d = x.shape
    h, hkv, dk = attn.num_heads, attn.num_kv_heads, attn.head_dim
    w, bias = attn.in_proj_weight, attn.in_proj_bias
    q = linear(x, w[:h * dk], bias[:h * dk]).reshape(b, sq, h, dk).transpose(1, 2)
    k = linear(x, w[h * dk:2 * h * dk], bias[h * dk:2 * h * dk]).reshape(b, sq, h, dk).transpose(1, 2)
    v = linear(x, w[2 * h * dk:], bias[2 * h * dk:]).reshape(b, sq, h, dk).transpose(1, 2)
    if rope is not None:
        cos, sin, style = rope
        q, k = apply_rope(q, cos[:sq], sin[:sq], style), apply_rope(k, cos[:sq], sin[:sq], style)
    o = banded_attention(q, k, v, attn.scores, attn.window, attn.global_tokens, causal, mistake=mistake)
    return attn.out_proj(o.transpose(1, 2).reshape(b, sq, d))


def _linformer(k):
    return dict(kind="linformer", k=k)


def _linformer_variants():
    """Linformer models for the self-test: every architecture (the decoder
    and encoder_decoder with causal false), k 1, k below, equal to and above
    the sequence, k = max_seq_len, rope half and interleaved, both norms,
    ids with a tied and an untied LM head and float inputs, 1 and 2 layers
    (each its own E and F), grouped-query heads and the other section 11
    keys, an odd head count."""
    base = dict(d_model=32, num_heads=4, d_ff=48, max_seq_len=16)
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu",
                 ffn_gated=True, bias=False, num_kv_heads=2)
    return [
        dict(base, architecture="encoder", num_layers=2, attention=_linformer(4)),
        dict(base, architecture="encoder", num_layers=2, norm="pre", positional="learned", vocab_size=29,
             tie_embeddings=False, attention=_linformer(20)),
        dict(base, architecture="encoder", num_layers=2, attention=_linformer(1)),
        dict(base, architecture="encoder", num_layers=2, norm="pre", positional="rope", vocab_size=29,
             attention=_linformer(4)),
        dict(base, architecture="encoder", num_layers=1, positional="rope", rope_style="interleaved",
             activation="gelu", attention=_linformer(6)),
        dict(base, architecture="decoder", num_layers=2, causal=False, norm="pre", positional="rope",
             vocab_size=29, attention=_linformer(5)),
        dict(base, architecture="encoder_decoder", num_layers=2, causal=False, vocab_size=29,
             attention=_linformer(4)),
        dict(base, architecture="encoder_decoder", num_encoder_layers=1, num_decoder_layers=2, causal=False,
             norm="pre", positional="rope", attention=_linformer(3)),
        dict(base, architecture="encoder", num_layers=2, vocab_size=29, attention=_linformer(4), **llama),
        dict(base, architecture="encoder_decoder", num_layers=1, causal=False, attention=_linformer(8),
             **dict(llama, positional="sinusoidal", num_kv_heads=1)),
        dict(base, architecture="encoder", num_layers=2, d_model=30, num_heads=3, d_ff=50,
             attention=_linformer(7)),
        dict(base, architecture="decoder", num_layers=2, causal=False, positional="none", vocab_size=29,
             lm_head=False, attention=_linformer(16)),
    ]


LINFORMER_MODEL_MISTAKES = LINFORMER_MISTAKES + ("bias_after_projection", "rope_after_projection",
                                                 "rope_not_on_k")


def _linformer_with_mistake(attn, mistake, x, mem=None, causal=False, rope=None, key_mask=None):
    """FormulaAttention.forward of a linformer self-attention with one of
    LINFORMER_MODEL_MISTAKES planted (self-test only): those of
    linformer_factored, or the projection made before the in-projection's
    K and V bias (E_n (x W^T) + b), or rope applied to the k projected rows
    (positions 0..k-1) instead of the keys, or k not rotated at all."""
    assert key_mask is None   # a linformer model refuses a mask
    b, sq, d = x.shape
    h, hkv, dk = attn.num_heads, attn.num_kv_heads, attn.head_dim
    w, bias = attn.in_proj_weight, attn.in_proj_bias
    rows = {"q": slice(0, h * dk), "k": slice(h * dk, (h + hkv) * dk), "v": slice((h + hkv) * dk, (h + 2 * hkv) * dk)}

    def heads(t, n):
        return t.reshape(b, t.shape[1], n, dk).transpose(1, 2)

    def proj(which, with_bias=True):
        r = rows[which]
        return heads(linear(x, w[r], bias[r] if (with_bias and bias is not None) else None),
                     h if which == "q" else hkv)
    e_n, f_n = attn.proj_e[:, :sq], attn.proj_f[:, :sq]
    q = proj("q")
    if rope is not None:
        cos, sin, style = rope
        q = apply_rope(q, cos[:sq], sin[:sq], style)
    if mistake in ("bias_after_projection", "rope_after_projection", "rope_not_on_k"):
        late_bias = mistake == "bias_after_projection"
        k, v = proj("k", not late_bias), proj("v", not late_bias)
        if rope is not None and mistake == "bias_after_projection":
            k = apply_rope(k, cos[:sq], sin[:sq], style)
        kp, vp = torch.matmul(e_n, k), torch.matmul(f_n, v)
        if late_bias and bias is not None:
            kp = kp + bias[rows["k"]].reshape(hkv, dk)[None, :, None, :]
            vp = vp + bias[rows["v"]].reshape(hkv, dk)[None, :, None, :]
        if mistake == "rope_after_projection":
            kp = apply_rope(kp, cos[:kp.shape[2]], sin[:kp.shape[2]], style)
        kp = torch.repeat_interleave(kp, h // hkv, dim=1)
        vp = torch.repeat_interleave(vp, h // hkv, dim=1)
        o = dense_attention(q, kp, vp, attn.scores)
    else:
        k, v = proj("k"), proj("v")
        if rope is not None:
            k = apply_rope(k, cos[:sq], sin[:sq], style)
        k = torch.repeat_interleave(k, h // hkv, dim=1)
        v = torch.repeat_interleave(v, h // hkv, dim=1)
        if mistake in ("last_columns", "row_stride_n"):
            e_n, f_n = attn.proj_e, attn.proj_f
        o = linformer_factored(q, k, v, e_n, f_n, dk, mistake=mistake)
    return attn.out_proj(o.transpose(1, 2).reshape(b, sq, d))


def _self_attentions(model):
    """The self-attention modules of a FormulaModel, in weight-name order."""
    if model.cfg.is_encdec:
        return [l.self_attn for l in model.encoder.layers] + [l.self_attn for l in model.decoder.layers]
    return [l.self_attn for l in model.layers]


def _linformer_self_test(check, check_differs, gen, extra_descs, check_attention):
    """Section 9 of the self-test: Linformer attention."""
    # The key: good values parse; a missing or bad k, another kind's key,
    # linformer with causal (by default too: decoder, encoder_decoder) or a
    # score other than scaled_dot are a ConfigError naming the problem.
    base = dict(architecture="encoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=8)
    parsed = []
    for desc, want in ((dict(base, attention=_linformer(4)), 4), (dict(base, attention=_linformer(1)), 1),
                       (dict(base, attention=_linformer(1000)), 1000),
                       (dict(base, architecture="decoder", causal=False, attention=_linformer(3)), 3),
                       (dict(base, architecture="encoder_decoder", causal=False, attention=_linformer(2)), 2),
                       (dict(base, causal=False, attention_score="scaled_dot", attention=_linformer(2)), 2)):
        cfg = Config(desc)
        parsed.append(cfg.linformer and cfg.linformer_k == want and cfg.window is None
                      and not cfg.sliding_window and not cfg.causal and cfg.second_form() == "factored")
    refused = []
    for over, needle in (({"attention": {"kind": "linformer"}}, "needs"),
                         ({"attention": _linformer(0)}, "'k'"), ({"attention": _linformer(-1)}, "'k'"),
                         ({"attention": _linformer(True)}, "'k'"), ({"attention": _linformer(2.0)}, "'k'"),
                         ({"attention": _linformer("4")}, "'k'"), ({"attention": _linformer(None)}, "'k'"),
                         ({"attention": _linformer([4])}, "'k'"),
                         ({"attention": dict(_linformer(4), window=2)}, "sliding_window"),
                         ({"attention": dict(_linformer(4), global_tokens=1)}, "sliding_window"),
                         ({"attention": dict(_linformer(4), features=8)}, "performer"),
                         ({"attention": dict(_linformer(4), block=4)}, "block_sparse"),
                         ({"attention": dict(_linformer(4), kk=4)}, "kk"),
                         ({"attention": {"kind": "sliding_window", "window": 2, "k": 4}}, "linformer"),
                         ({"attention": {"kind": "full", "k": 4}}, "linformer"),
                         ({"architecture": "decoder", "attention": _linformer(4)}, "causal"),
                         ({"architecture": "encoder_decoder", "attention": _linformer(4)}, "causal"),
                         ({"architecture": "decoder", "causal": True, "attention": _linformer(4)}, "causal"),
                         ({"causal": True, "attention": _linformer(4)}, "causal"),
                         ({"attention_score": "dot", "attention": _linformer(4)}, "scaled_dot"),
                         ({"attention_score": "bilinear", "attention": _linformer(4)}, "scaled_dot"),
                         ({"attention_score": "additive", "attention": _linformer(4)}, "scaled_dot")):
        try:
            Config(dict(base, **over))
            refused.append(False)
        except ConfigError as e:
            refused.append(needle in str(e))
    check("linformer key: %d of %d good values parse, %d of %d bad ones refused naming the problem"
          % (sum(parsed), len(parsed), sum(refused), len(refused)),
          float(len(parsed) - sum(parsed) + len(refused) - sum(refused)), 0.5)

    # The listing: proj_e and proj_f [k, max_seq_len] in every self-attention
    # of every stack, none in cross-attention, the rest as without the kind.
    desc = dict(architecture="encoder_decoder", d_model=16, num_heads=2, d_ff=8, num_encoder_layers=2,
                num_decoder_layers=1, max_seq_len=12, causal=False, vocab_size=11)
    got = expected_weights(Config(dict(desc, attention=_linformer(5))))
    plain = expected_weights(Config(desc))
    want = dict(plain)
    for prefix in ("encoder.layers.0.", "encoder.layers.1.", "decoder.layers.0."):
        want[prefix + "self_attn.proj_e"] = (5, 12)
        want[prefix + "self_attn.proj_f"] = (5, 12)
    single = expected_weights(Config(dict(base, num_layers=2, attention=_linformer(3))))
    single_plain = expected_weights(Config(dict(base, num_layers=2)))
    single_want = dict(single_plain, **{"layers.%d.self_attn.proj_%s" % (i, x): (3, 8)
                                        for i in range(2) for x in "ef"})
    check("linformer weights: proj_e/proj_f [k, max_seq_len] per self-attention (%d names off)"
          % (len(set(got.items()) ^ set(want.items())) + len(set(single.items()) ^ set(single_want.items()))),
          float(len(set(got.items()) ^ set(want.items())) + len(set(single.items()) ^ set(single_want.items()))),
          0.5)

    # The attention function, both forms, against the per-element float64
    # loop: k 1, below, equal to and above the sequence, n below and equal
    # to max_seq_len (16), rope styles, grouped-query heads, no biases.
    for n, (kk, seq, rope_style) in enumerate(itertools.product((1, 3, 9, 20), (5, 9, 16),
                                                               (None, "half", "interleaved"))):
        d, h = ((12, 3), (16, 2))[n % 2]
        desc = dict(d_model=d, num_heads=h, attention_score="scaled_dot", attention=_linformer(kk))
        extra = ""
        if n % 4 == 1:
            desc.update(d_model=16, num_heads=4, num_kv_heads=2)
            extra = " kv_heads=2"
        elif n % 4 == 3:
            desc.update(d_model=12, num_heads=3, num_kv_heads=1, bias=False)
            extra = " kv_heads=1 bias=False"
        check_attention("linformer k=%d seq=%d%s" % (kk, seq, extra), desc, False, False, rope_style, seq=seq)

    # Whole models: (b) formula against (b) factored in float32 (1e-5) and in
    # float64 (1e-10), batched and not, n below max_seq_len and equal to it,
    # and n = 1; the kind matters (vs full attention), E and F each matter,
    # and with two layers or more each layer's own E and F (swapping them
    # between layers changes the output).
    descs = _linformer_variants() + [d for d in extra_descs if Config(d).linformer]
    for idx, desc in enumerate(descs):
        cfg = Config(desc)
        shared = cfg.is_encdec and cfg.tokens and idx % 2 == 1
        label = "linformer model %d %s%s" % (idx, _short(desc), " shared" if shared else "")
        exp = expected_weights(cfg, shared)
        names_ok = True
        for form in ("dense", "factored"):
            names = {k: tuple(v.shape) for k, v in build_formula_model(cfg, shared, form).state_dict().items()}
            if names != exp:
                names_ok = False
        check("%s: (b) names == the contract's listing, both forms" % label, 0.0 if names_ok else 1.0, 0.5)
        weights = make_weights(cfg, seed=1300 + idx, shared_embeddings=shared)
        dense = load_weights(build_formula_model(cfg, shared), weights)
        factored = load_weights(build_torch_model(cfg, shared), weights)
        dense64 = load_weights(build_formula_model(cfg, shared).double(), weights)
        factored64 = load_weights(build_formula_model(cfg, shared, "factored").double(), weights)
        full_w = {k: v for k, v in weights.items() if not k.endswith(("proj_e", "proj_f"))}
        full = load_weights(build_formula_model(dict(desc, attention={"kind": "full"}), shared), full_w)
        N = cfg.max_seq_len
        for batch, seqs in ((2, (min(11, N), min(9, N))), (0, (N, N - 3)), (1, (1, 1))):
            seqs = seqs if cfg.is_encdec else seqs[:1]
            inputs = _random_inputs(cfg, gen, batch, seqs)
            tag = "%s batch=%d seq=%s" % (label, batch, "/".join(map(str, seqs)))
            with torch.no_grad():
                yd, yf = dense(**inputs), factored(**inputs)
                sc = yd.abs().max().item()
                want_shape = ((batch,) if batch else ()) + (seqs[-1], cfg.out_dim)
                check("%s: output shape %s" % (tag, tuple(yd.shape)),
                      0.0 if tuple(yd.shape) == want_shape == tuple(yf.shape) else 1.0, 0.5)
                check("%s formula vs factored" % tag, _max_diff(yd, yf), scale=sc)
                in64 = {k: (v if cfg.tokens else v.double()) for k, v in inputs.items()}
                y64 = dense64(**in64)
                check("%s formula vs factored, float64" % tag, _max_diff(y64, factored64(**in64)), 1e-10,
                      scale=y64.abs().max().item())
                if batch != 2:
                    continue
                check_differs("%s: linformer matters (vs full attention)" % tag, _max_diff(full(**inputs), yd))
                for which, what in (("proj_e", "E zeroed"), ("proj_f", "F halved")):
                    if which == "proj_e" and cfg.linformer_k == 1:
                        continue   # one projected row: softmax over it is 1, whatever E is
                    w2 = {k: (v * (0.0 if which == "proj_e" else 0.5) if k.endswith(which) else v)
                          for k, v in weights.items()}
                    m = load_weights(build_formula_model(cfg, shared), w2)
                    check_differs("%s: %s matters" % (tag, what), _max_diff(m(**inputs), yd))
                attns = _self_attentions(dense)
                if len(attns) >= 2:
                    # Layer 0's E and F swapped with the next self-attention's.
                    names = [k for k in weights if k.endswith(("proj_e", "proj_f"))]
                    first, second = names[:2], names[2:4]
                    w2 = dict(weights)
                    for a_, b_ in zip(first, second):
                        w2[a_], w2[b_] = weights[b_], weights[a_]
                    m = load_weights(build_formula_model(cfg, shared), w2)
                    check_differs("%s: each layer its own E and F (two swapped)" % tag,
                                  _max_diff(m(**inputs), yd))

    # Anchored to PyTorch's own modules: with k = n and E_n = F_n = the same
    # permutation matrix (columns n.. of E and F random, so they must be
    # cut off), K' and V' are K and V reordered alike, and the output is
    # full attention's, which (a) (nn.TransformerEncoder / nn.Transformer)
    # computes.  A permutation of F other than E's must differ.
    for arch, extra in (("encoder", {}), ("decoder", dict(vocab_size=29, norm="pre")),
                        ("encoder_decoder", dict(vocab_size=29))):
        n = 11
        desc = dict(architecture=arch, d_model=32, num_heads=4, d_ff=48, max_seq_len=16, causal=False,
                    attention=_linformer(n), **extra)
        if arch == "encoder_decoder":
            desc.update(num_encoder_layers=2, num_decoder_layers=1)
        else:
            desc["num_layers"] = 2
        cfg = Config(desc)
        weights = make_weights(cfg, seed=1400)
        w_perm, w_other = dict(weights), dict(weights)
        for name in [k for k in weights if k.endswith("proj_e")]:
            p = torch.randperm(n, generator=gen)
            mat = weights[name].clone()
            mat[:, :n] = torch.eye(n)[p]
            w_perm[name] = mat
            w_perm[name[:-1] + "f"] = mat.clone()
            w_other[name] = mat
            other = mat.clone()
            other[:, :n] = torch.eye(n)[torch.roll(p, 1)]
            w_other[name[:-1] + "f"] = other
        desc_full = dict(desc, attention={"kind": "full"})
        ta = load_weights(build_torch_model(desc_full), {k: v for k, v in weights.items()
                                                         if not k.endswith(("proj_e", "proj_f"))})
        for batch in (2, 0):
            seqs = (n, n) if cfg.is_encdec else (n,)
            inputs = _random_inputs(cfg, gen, batch, seqs)
            with torch.no_grad():
                want = ta(**inputs)
                sc = want.abs().max().item()
                for form in ("dense", "factored"):
                    got = load_weights(build_formula_model(cfg, attention_form=form), w_perm)(**inputs)
                    check("linformer E = F = a permutation (k = n = %d) is full attention, %s batch=%d, "
                          "(a) vs (b) %s" % (n, arch, batch, form), _max_diff(got, want), scale=sc)
                got = load_weights(build_formula_model(cfg), w_other)(**inputs)
                check_differs("linformer F a permutation other than E's, %s batch=%d" % (arch, batch),
                              _max_diff(got, want))

    # Planted mistakes must show: E for the values, F for the keys, both
    # swapped, the last n columns, a row stride of n, no 1/sqrt(dk), the
    # projection before the K/V bias, and with rope: rope on the projected
    # rows instead of the keys, k not rotated.  n = 12 of max_seq_len 16.
    for desc in (dict(architecture="encoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                      attention=_linformer(4)),
                 dict(architecture="encoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                      vocab_size=29, positional="rope", norm="pre", attention=_linformer(6))):
        cfg = Config(desc)
        w = make_weights(cfg, seed=1500)
        for batch in (2, 0):
            inputs = _random_inputs(cfg, gen, batch, (12,))
            with torch.no_grad():
                want = load_weights(build_formula_model(cfg), w)(**inputs)
                for mistake in LINFORMER_MODEL_MISTAKES:
                    if mistake.startswith("rope") and cfg.positional != "rope":
                        continue
                    m = load_weights(build_formula_model(cfg, attention_form="factored"), w)
                    for layer in m.layers:
                        layer.self_attn.forward = functools.partial(_linformer_with_mistake, layer.self_attn,
                                                                    mistake)
                    check_differs("linformer with %s, %s batch=%d" % (mistake, _short(desc), batch),
                                  _max_diff(m(**inputs), want))
                # The harness of the mistakes itself: without one, it is the model.
                m = load_weights(build_formula_model(cfg), w)
                for layer in m.layers:
                    layer.self_attn.forward = functools.partial(_linformer_with_mistake, layer.self_attn, None)
                check("linformer mistake harness without a mistake, %s batch=%d" % (_short(desc), batch),
                      _max_diff(m(**inputs), want), scale=want.abs().max().item())
                # A sequence longer than max_seq_len has no columns of E.
                long_inputs = _random_inputs(cfg, gen, batch, (17,))
                try:
                    load_weights(build_formula_model(cfg), w)(**long_inputs)
                    refused = False
                except ValueError:
                    refused = True
                check("linformer: a sequence of 17 > max_seq_len 16 is refused, %s batch=%d"
                      % (_short(desc), batch), 0.0 if refused else 1.0, 0.5)


# ---------------------------------------------------------------------------
# Self-test of Performer (FAVOR+, contract section 7).
# ---------------------------------------------------------------------------

def _performer(m):
    return dict(kind="performer", features=m)


def _performer_variants():
    """Performer models for the self-test: every architecture, causal and
    not (the encoder's too; an encoder_decoder's encoder never), M 1,
    below, equal to and above dk, 64, rope half and interleaved, learned
    and no positions, both norms, ids with a tied and an untied LM head and
    float inputs, 1 to 3 layers (each its own W), grouped-query heads and
    the other section 11 keys, dk 4, 10 and 16."""
    base = dict(d_model=32, num_heads=4, d_ff=48, max_seq_len=16)
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu",
                 ffn_gated=True, bias=False, num_kv_heads=2)
    return [
        dict(base, architecture="encoder", num_layers=2, attention=_performer(16)),
        dict(base, architecture="encoder", num_layers=2, causal=True, norm="pre", positional="learned",
             vocab_size=29, tie_embeddings=False, attention=_performer(4)),
        dict(base, architecture="encoder", num_layers=2, attention=_performer(1)),
        dict(base, architecture="encoder", num_layers=2, norm="pre", positional="rope", vocab_size=29,
             attention=_performer(64)),
        dict(base, architecture="encoder", num_layers=1, positional="rope", rope_style="interleaved",
             activation="gelu", attention=_performer(8)),
        dict(base, architecture="decoder", num_layers=2, norm="pre", positional="rope", vocab_size=29,
             attention=_performer(8)),
        dict(base, architecture="decoder", num_layers=2, causal=False, positional="learned", vocab_size=29,
             attention=_performer(5)),
        dict(base, architecture="decoder", num_layers=3, activation="gelu_tanh", attention=_performer(20)),
        dict(base, architecture="decoder", num_layers=2, vocab_size=29, attention=_performer(6), **llama),
        dict(base, architecture="decoder", num_layers=1, vocab_size=29, attention=_performer(1)),
        dict(base, architecture="encoder_decoder", num_layers=2, vocab_size=29, attention=_performer(8)),
        dict(base, architecture="encoder_decoder", num_encoder_layers=1, num_decoder_layers=2, norm="pre",
             positional="rope", attention=_performer(3)),
        dict(base, architecture="encoder_decoder", num_layers=1, causal=False, attention=_performer(8),
             **dict(llama, positional="sinusoidal", num_kv_heads=1)),
        dict(base, architecture="encoder", num_layers=2, d_model=30, num_heads=3, d_ff=50,
             attention=_performer(7)),
        dict(base, architecture="decoder", num_layers=2, d_model=64, positional="none", vocab_size=29,
             lm_head=False, attention=_performer(64)),
        dict(base, architecture="encoder", num_layers=2, d_model=16, positional="rope",
             attention=_performer(12)),
    ]


def _performer_self_test(check, check_differs, gen, extra_descs, check_attention):
    """Section 11 of the self-test: Performer attention."""
    def passes(what, ok):
        check(what, 0.0 if ok else 1.0, 0.5)

    # The key: good values parse (causal too); a missing or bad features,
    # another kind's key or a score other than scaled_dot is a ConfigError
    # naming the problem.
    base = dict(architecture="encoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=8)
    parsed = []
    for desc, want in ((dict(base, attention=_performer(4)), 4), (dict(base, attention=_performer(1)), 1),
                       (dict(base, attention=_performer(MAX_COUNT)), MAX_COUNT),
                       (dict(base, architecture="decoder", attention=_performer(3)), 3),
                       (dict(base, architecture="decoder", causal=False, attention=_performer(3)), 3),
                       (dict(base, architecture="encoder_decoder", attention=_performer(2)), 2),
                       (dict(base, causal=True, attention_score="scaled_dot", attention=_performer(2)), 2)):
        cfg = Config(desc)
        parsed.append(cfg.performer and cfg.performer_m == want and cfg.linformer_k is None
                      and cfg.window is None and cfg.second_form() == "linear"
                      and cfg.causal == desc.get("causal", desc["architecture"] != "encoder"))
    refused = []
    for over, needle in (({"attention": {"kind": "performer"}}, "needs"),
                         ({"attention": _performer(0)}, "'features'"), ({"attention": _performer(-1)}, "'features'"),
                         ({"attention": _performer(MAX_COUNT + 1)}, "'features'"),
                         ({"attention": _performer(True)}, "'features'"),
                         ({"attention": _performer(8.0)}, "'features'"),
                         ({"attention": _performer(2.5)}, "'features'"),
                         ({"attention": _performer("8")}, "'features'"),
                         ({"attention": _performer(None)}, "'features'"),
                         ({"attention": _performer([8])}, "'features'"),
                         ({"attention": dict(_performer(8), k=4)}, "linformer"),
                         ({"attention": dict(_performer(8), window=2)}, "sliding_window"),
                         ({"attention": dict(_performer(8), block=4)}, "block_sparse"),
                         ({"attention": dict(_performer(8), feature=8)}, "feature"),
                         ({"attention": {"kind": "linformer", "k": 4, "features": 8}}, "performer"),
                         ({"attention": {"kind": "full", "features": 8}}, "performer"),
                         ({"attention_score": "dot", "attention": _performer(4)}, "scaled_dot"),
                         ({"attention_score": "bilinear", "attention": _performer(4)}, "scaled_dot"),
                         ({"attention_score": "additive", "attention": _performer(4)}, "scaled_dot"),
                         ({"architecture": "decoder", "attention_score": "dot", "attention": _performer(4)},
                          "performer")):
        try:
            Config(dict(base, **over))
            refused.append(False)
        except ConfigError as e:
            refused.append(needle in str(e))
    check("performer key: %d of %d good values parse, %d of %d bad ones refused naming the problem"
          % (sum(parsed), len(parsed), sum(refused), len(refused)),
          float(len(parsed) - sum(parsed) + len(refused) - sum(refused)), 0.5)

    # The listing: features [num_heads, M, dk] in every self-attention of
    # every stack (per query head with grouped-query attention), none in
    # cross-attention, the rest as without the kind.
    desc = dict(architecture="encoder_decoder", d_model=16, num_heads=4, num_kv_heads=2, d_ff=8,
                num_encoder_layers=2, num_decoder_layers=1, max_seq_len=12, vocab_size=11)
    got = expected_weights(Config(dict(desc, attention=_performer(5))))
    want = dict(expected_weights(Config(desc)), **{p + "self_attn.features": (4, 5, 4) for p in
                                                 ("encoder.layers.0.", "encoder.layers.1.", "decoder.layers.0.")})
    single = expected_weights(Config(dict(base, num_layers=2, attention=_performer(3))))
    single_want = dict(expected_weights(Config(dict(base, num_layers=2))),
                       **{"layers.%d.self_attn.features" % i: (2, 3, 8) for i in range(2)})
    off = len(set(got.items()) ^ set(want.items())) + len(set(single.items()) ^ set(single_want.items()))
    check("performer weights: features [num_heads, M, dk] per self-attention (%d names off)" % off, float(off), 0.5)

    # A mask input is refused, by mask_problems and by the model, naming it.
    cfg = Config(dict(base, attention=_performer(4)))
    inputs = dict(input=np.zeros((2, 5, 16), np.float32), mask=np.ones((2, 5), np.int64))
    found = mask_problems(cfg, inputs)
    try:
        run_model(build_formula_model(cfg), cfg, inputs)
        model_refuses = False
    except MaskError as e:
        model_refuses = "'mask'" in str(e) and "performer" in str(e)
    passes("performer: a mask input is refused naming it (%s)" % (found[0][1] if found else "accepted"),
           bool(found) and "'mask'" in found[0][1] and "performer" in found[0][1] and model_refuses)

    # phi against the softmax kernel it estimates: with M = 100000 Gaussian
    # features, phi(q / dk^(1/4)) . phi(k / dk^(1/4)) is within 3% of
    # exp(q . k / sqrt(dk)) (measured: 1.4%); each planted mistake in phi
    # is 20% or more off (measured: 36% to 330%).
    # (Monte Carlo estimates: their own generator, so that other checks'
    # draws do not move them.)
    mc = torch.Generator().manual_seed(17)
    dk = 8
    q = torch.randn(1, 1, 6, dk, generator=mc, dtype=torch.float64) * 0.5
    k = torch.randn(1, 1, 7, dk, generator=mc, dtype=torch.float64) * 0.5
    w = torch.randn(1, 100000, dk, generator=mc, dtype=torch.float64)
    kernel = torch.exp(q[0, 0] @ k[0, 0].T / math.sqrt(dk))
    for mistake in (None, "no_scale", "sqrt_dk_scale", "no_norm", "norm_unscaled"):
        est = performer_features(q, w, mistake)[0, 0] @ performer_features(k, w, mistake)[0, 0].T
        rel = ((est - kernel).abs() / kernel).max().item()
        if mistake is None:
            passes("performer: phi . phi within 3%% of exp(q.k / sqrt(dk)), M 100000 (%.3g)" % rel, rel < 0.03)
        else:
            passes("performer: phi with %s is 20%% or more off the softmax kernel (%.3g)" % (mistake, rel),
                   rel > 0.2)

    # The attention with M = 20000 against full softmax attention (float64,
    # small q and k so that the estimate's variance is small): within 1.5%
    # of max(1, max|out|) (measured: 0.3% to 0.6%), causal or not, both
    # forms; the phi mistakes 3% or more off (measured: 4.5% to 23%).
    desc = dict(architecture="encoder", d_model=32, num_heads=4, d_ff=8, num_layers=1, max_seq_len=16)
    full = FormulaAttention(Config(desc)).double()
    with torch.no_grad():
        for p in full.parameters():
            p.copy_(torch.randn(p.shape, generator=mc, dtype=torch.float64) * 0.3)
        full.in_proj_weight[:64] *= 1.0 / 6.0     # Q and K rows: std 0.05
    x = torch.randn(2, 9, 32, generator=mc, dtype=torch.float64)
    sd = dict(full.state_dict(), features=torch.randn(4, 20000, 8, generator=mc, dtype=torch.float64))
    approx = {f: FormulaAttention(Config(dict(desc, attention=_performer(20000))), form=f).double()
              for f in ("dense", "linear")}
    for causal in (False, True):
        with torch.no_grad():
            want = full(x, causal=causal)
            sc = max(1.0, want.abs().max().item())
            for f, a in approx.items():
                a.load_state_dict(sd)
                for mistake in ((None, "no_scale", "sqrt_dk_scale", "no_norm", "norm_unscaled")
                                if f == "linear" else (None,)):
                    a.performer_mistake = mistake
                    err = _max_diff(a(x, causal=causal), want) / sc
                    if mistake is None:
                        passes("performer M 20000 approximates softmax attention, causal=%s %s (%.3g)"
                               % (causal, f, err), err < 0.015)
                    else:
                        passes("performer M 20000 with %s is off softmax attention, causal=%s (%.3g)"
                               % (mistake, causal, err), err > 0.03)
                a.performer_mistake = None

    # The attention function, both forms, against the per-element float64
    # loop: M 1, below, equal to and above dk, 64; seq 1, 5, 9, 16 (of
    # max_seq_len 16); causal or not; rope styles; grouped-query heads;
    # no biases.
    for n, (m, seq, causal) in enumerate(itertools.product((1, 3, 8, 20, 64), (1, 5, 9, 16), (False, True))):
        d, h = ((16, 2), (12, 3))[n % 2]
        desc = dict(d_model=d, num_heads=h, attention_score="scaled_dot", attention=_performer(m))
        extra = ""
        if n % 4 == 1:
            desc.update(d_model=16, num_heads=4, num_kv_heads=2)
            extra = " kv_heads=2"
        elif n % 4 == 3:
            desc.update(d_model=12, num_heads=3, num_kv_heads=1, bias=False)
            extra = " kv_heads=1 bias=False"
        check_attention("performer M=%d seq=%d%s" % (m, seq, extra), desc, False, causal,
                        (None, "half", "interleaved")[n % 3], seq=seq)

    # Whole models: (b) dense against (b) linear in float32 (1e-5) and in
    # float64 (1e-10), batched and not, n below max_seq_len and equal to
    # it, and n = 1; the kind matters (vs full attention), W matters (W
    # halved), each layer its own W (two swapped); causal: a change of the
    # last token leaves every earlier row as it was, and not causal it
    # moves the first row.
    descs = _performer_variants() + [d for d in extra_descs if Config(d).performer]
    for idx, desc in enumerate(descs):
        cfg = Config(desc)
        shared = cfg.is_encdec and cfg.tokens and idx % 2 == 1
        label = "performer model %d %s%s" % (idx, _short(desc), " shared" if shared else "")
        exp = expected_weights(cfg, shared)
        names_ok = all({k: tuple(v.shape) for k, v in build_formula_model(cfg, shared, f).state_dict().items()}
                       == exp for f in ("dense", "linear"))
        check("%s: (b) names == the contract's listing, both forms" % label, 0.0 if names_ok else 1.0, 0.5)
        weights = make_weights(cfg, seed=1700 + idx, shared_embeddings=shared)
        dense = load_weights(build_formula_model(cfg, shared), weights)
        linear = load_weights(build_torch_model(cfg, shared), weights)
        dense64 = load_weights(build_formula_model(cfg, shared).double(), weights)
        linear64 = load_weights(build_formula_model(cfg, shared, "linear").double(), weights)
        full_w = {k: v for k, v in weights.items() if not k.endswith("self_attn.features")}
        full = load_weights(build_formula_model(dict(desc, attention={"kind": "full"}), shared), full_w)
        N = cfg.max_seq_len
        for batch, seqs in ((2, (min(11, N), min(9, N))), (0, (N, N - 3)), (1, (1, 1))):
            seqs = seqs if cfg.is_encdec else seqs[:1]
            inputs = _random_inputs(cfg, gen, batch, seqs)
            tag = "%s batch=%d seq=%s" % (label, batch, "/".join(map(str, seqs)))
            with torch.no_grad():
                yd, yl = dense(**inputs), linear(**inputs)
                sc = yd.abs().max().item()
                want_shape = ((batch,) if batch else ()) + (seqs[-1], cfg.out_dim)
                check("%s: output shape %s" % (tag, tuple(yd.shape)),
                      0.0 if tuple(yd.shape) == want_shape == tuple(yl.shape) else 1.0, 0.5)
                check("%s dense vs linear" % tag, _max_diff(yd, yl), scale=sc)
                in64 = {k: (v if cfg.tokens else v.double()) for k, v in inputs.items()}
                y64 = dense64(**in64)
                check("%s dense vs linear, float64" % tag, _max_diff(y64, linear64(**in64)), 1e-10,
                      scale=y64.abs().max().item())
                if batch != 2:
                    continue
                check_differs("%s: performer matters (vs full attention)" % tag, _max_diff(full(**inputs), yd))
                w2 = {k: (v * 0.5 if k.endswith("self_attn.features") else v) for k, v in weights.items()}
                check_differs("%s: W matters (halved)" % tag,
                              _max_diff(load_weights(build_formula_model(cfg, shared), w2)(**inputs), yd))
                names = [k for k in weights if k.endswith("self_attn.features")]
                if len(names) >= 2:
                    w2 = dict(weights, **{names[0]: weights[names[1]], names[1]: weights[names[0]]})
                    check_differs("%s: each layer its own W (two swapped)" % tag,
                                  _max_diff(load_weights(build_formula_model(cfg, shared), w2)(**inputs), yd))
                # The last token changed (tgt's in an encoder_decoder).
                which = cfg.input_names[-1]
                other = _random_inputs(cfg, gen, batch, seqs)[which]
                moved = dict(inputs)
                moved[which] = inputs[which].clone()
                moved[which][:, -1] = other[:, -1]
                for f, m in (("dense", dense), ("linear", linear)):
                    ym = m(**moved)
                    if cfg.causal:
                        check("%s: causal, the last token changed leaves the earlier rows (%s)" % (tag, f),
                              _max_diff(ym[:, :-1], yd[:, :-1]), 1e-6, scale=sc)
                    elif seqs[-1] > 1:
                        check_differs("%s: not causal, the last token changed moves row 0 (%s)" % (tag, f),
                                      _max_diff(ym[:, :1], yd[:, :1]))

    # Planted mistakes must show, in both forms: q and k not divided by
    # dk^(1/4) or by sqrt(dk), no -|x|^2/2 or that of the unscaled x, W_0
    # for every head; causal: the sums one key late, no causal rule;
    # grouped-query: kv head h % kv, phi(K) with the kv head's W.
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu",
                 ffn_gated=True, bias=False, num_kv_heads=2)
    for desc in (dict(architecture="encoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                      attention=_performer(16)),
                 dict(architecture="decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                      vocab_size=29, attention=_performer(8), **llama),
                 dict(architecture="encoder_decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16,
                      num_layers=1, vocab_size=29, positional="learned", attention=_performer(6))):
        cfg = Config(desc)
        w = make_weights(cfg, seed=1800)
        for batch in (2, 0):
            inputs = _random_inputs(cfg, gen, batch, (12, 9) if cfg.is_encdec else (12,))
            with torch.no_grad():
                want = load_weights(build_formula_model(cfg), w)(**inputs)
                for form in ("dense", "linear"):
                    for mistake in PERFORMER_MISTAKES:
                        if mistake in ("causal_next", "not_causal") and not cfg.causal:
                            continue
                        if mistake.startswith("gqa") and cfg.num_kv_heads == cfg.num_heads:
                            continue
                        m = load_weights(build_formula_model(cfg, attention_form=form), w)
                        for attn in _self_attentions(m):
                            attn.performer_mistake = mistake
                        check_differs("performer with %s (%s), %s batch=%d" % (mistake, form, _short(desc), batch),
                                      _max_diff(m(**inputs), want))


# ---------------------------------------------------------------------------
# Self-test of block-sparse attention (BigBird, contract section 7).
# ---------------------------------------------------------------------------

def _block(b, wb=None, gb=None, r=None):
    a = dict(kind="block_sparse", block=b)
    for k, v in (("window_blocks", wb), ("global_blocks", gb), ("random_blocks", r)):
        if v is not None:
            a[k] = v
    return a


def _bs_config(desc):
    return Config(desc)


def _block_sparse_variants():
    """Block-sparse models for the self-test, each with its padding masks
    ({} for none): every architecture, causal and not, blocks of 1, 2, 3,
    4 and 16 (one block: full attention) with a partial last block,
    window_blocks 0 to 2, global_blocks 0 to 2, random blocks 0 to 3, every
    score kind, rope, grouped-query heads and the other section 11 keys."""
    base = dict(d_model=32, num_heads=4, d_ff=48, max_seq_len=16)
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu",
                 ffn_gated=True, bias=False, num_kv_heads=2)
    return [
        (dict(base, architecture="encoder", num_layers=2, attention=_block(2)), {}),
        (dict(base, architecture="encoder", num_layers=2, attention=_block(3, 0, 0, 2)), {"mask": "holes"}),
        (dict(base, architecture="encoder", num_layers=2, norm="pre", positional="rope", vocab_size=29,
              attention_score="bilinear", attention=_block(4, 1, 1, 1)), {"mask": "mixed"}),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29, attention=_block(2, 1, 1, 2)),
         {"mask": "left"}),
        (dict(base, architecture="decoder", num_layers=2, positional="rope", rope_style="interleaved",
              attention_score="additive", attention=_block(3, 0, 1, 3)), {}),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29, attention=_block(2, 0, 0, 1), **llama),
         {"mask": "left"}),
        (dict(base, architecture="encoder", num_layers=1, attention_score="dot", attention=_block(1, 2, 2, 2)),
         {"mask": "right"}),
        (dict(base, architecture="encoder", num_layers=2, attention=_block(16, 0, 0)), {}),
        (dict(base, architecture="encoder_decoder", num_layers=1, vocab_size=29, attention=_block(2, 1, 0, 2)),
         {"src_mask": "mixed", "tgt_mask": "holes"}),
        (dict(base, architecture="encoder_decoder", num_encoder_layers=2, num_decoder_layers=1, norm="pre",
              positional="learned", attention=_block(3, 2, 1)), {}),
        (dict(base, architecture="encoder", num_layers=2, d_model=30, num_heads=3, d_ff=50,
              attention=_block(4, 0, 1, 2)), {"mask": "left"}),
    ]


def _block_patterns(cfg, weights):
    """The block_pattern of each self-attention of the output's stack (the
    decoder's of an encoder_decoder), for attended_rows."""
    return output_stack_patterns(cfg, weights)


def output_stack_patterns(cfg, weights):
    """The block_pattern (weights: name -> tensor or array) of each
    self-attention of the output's stack (the decoder's of an
    encoder_decoder), in layer order, None for a layer without one (not
    block_sparse, or no random blocks: section 7's `layers` may mix them),
    for attended_rows; None when no layer has one."""
    prefix = "decoder.layers." if cfg.is_encdec else "layers."
    n = cfg.num_decoder_layers if cfg.is_encdec else cfg.num_layers
    out = [weights.get("%s%d.self_attn.block_pattern" % (prefix, i)) for i in range(n)]
    return out if any(p is not None for p in out) else None


def _pattern_adds_blocks(cfg, weights, inputs):
    """Whether some block_pattern id gives some query block of the input's
    lengths a key block the window and the global blocks do not (an
    earlier one when causal; else the random blocks cannot matter)."""
    seqs = {}
    for name in cfg.input_names:
        x = inputs[name]
        seqs[{"input": "layers", "src": "encoder", "tgt": "decoder"}[name]] = \
            x.shape[-1] if cfg.tokens else x.shape[-2]
    for k, p in weights.items():
        if not k.endswith("self_attn.block_pattern"):
            continue
        lc = cfg.kinds_of(k)
        nb = n_blocks(seqs[k.split(".")[0]], lc.block)
        causal = cfg.causal and not k.startswith("encoder.")
        for qb in range(min(nb, p.shape[0])):
            added = (set(block_sparse_key_blocks(qb, nb, lc.window_blocks, lc.global_blocks, torch.as_tensor(p)))
                     - set(block_sparse_key_blocks(qb, nb, lc.window_blocks, lc.global_blocks)))
            if any(kb < qb or not causal for kb in added):    # causal: a later block has no key to give
                return True
    return False


def _block_sparse_self_test(check, check_differs, gen, check_attention, extra_descs=()):
    """Section 12 of the self-test: block-sparse attention (extra_descs:
    the models of cases.py, whose block_sparse ones join the whole-model
    checks)."""
    def passes(what, ok):
        check(what, 0.0 if ok else 1.0, 0.5)

    # The key: good values parse with their defaults (window_blocks 1,
    # global_blocks 1, random_blocks 0); bad ones are a ConfigError naming
    # the problem.
    base = dict(architecture="encoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=8)
    parsed = []
    for att, want in ((_block(4), (4, 1, 1, 0)), (_block(3, 0, 0, 2), (3, 0, 0, 2)), (_block(1), (1, 1, 1, 0)),
                      (_block(MAX_COUNT, MAX_COUNT, 0, 5), (MAX_COUNT, MAX_COUNT, 0, 5)),
                      (_block(2, None, 3), (2, 1, 3, 0))):
        for arch in ("encoder", "decoder"):
            cfg = _bs_config(dict(base, architecture=arch, attention=att))
            parsed.append(cfg.block_sparse and (cfg.block, cfg.window_blocks, cfg.global_blocks,
                                                cfg.random_blocks) == want and cfg.window is None
                          and cfg.second_form() == "blocks" and cfg.causal == (arch == "decoder"))
    parsed.append(_bs_config(dict(base, attention_score="additive", attention=_block(2))).block == 2)
    refused = []
    for att, needle in (({"kind": "block_sparse"}, "needs"), (_block(0), "'block'"), (_block(-1), "'block'"),
                        (_block(2.0), "'block'"), (_block(True), "'block'"), (_block("4"), "'block'"),
                        (_block(None), "'block'"), (_block(MAX_COUNT + 1), "'block'"),
                        (_block(2, -1), "'window_blocks'"), (_block(2, 1.5), "'window_blocks'"),
                        (_block(2, 1, "1"), "'global_blocks'"), (_block(2, 1, -1), "'global_blocks'"),
                        (_block(2, 1, 1, -1), "'random_blocks'"), (_block(2, 1, 1, False), "'random_blocks'"),
                        (dict(_block(2), window=2), "sliding_window"), (dict(_block(2), features=4), "performer"),
                        (dict(_block(2), k=4), "linformer"), (dict(_block(2), blocks=2), "blocks"),
                        ({"kind": "sliding_window", "window": 1, "block": 2}, "block_sparse"),
                        ({"kind": "full", "random_blocks": 2}, "block_sparse")):
        try:
            _bs_config(dict(base, attention=att))
            refused.append(False)
        except ConfigError as e:
            refused.append(needle in str(e))
    check("block_sparse key: %d of %d good values parse, %d of %d bad ones refused naming the problem"
          % (sum(parsed), len(parsed), sum(refused), len(refused)),
          float(len(parsed) - sum(parsed) + len(refused) - sum(refused)), 0.5)

    # The listing: block_pattern [ceil(max_seq_len / block), R] in every
    # self-attention of every stack with R >= 1, none in cross-attention,
    # none with R = 0.
    desc = dict(architecture="encoder_decoder", d_model=16, num_heads=2, d_ff=8, num_encoder_layers=2,
                num_decoder_layers=1, max_seq_len=12, vocab_size=11)
    got = expected_weights(_bs_config(dict(desc, attention=_block(5, 1, 1, 2))))
    want = dict(expected_weights(Config(desc)), **{p + "self_attn.block_pattern": (3, 2) for p in
                                                 ("encoder.layers.0.", "encoder.layers.1.", "decoder.layers.0.")})
    none = expected_weights(_bs_config(dict(desc, attention=_block(5))))
    off = (len(set(got.items()) ^ set(want.items()))
           + len(set(none.items()) ^ set(expected_weights(Config(desc)).items())))
    check("block_sparse weights: block_pattern [ceil(max_seq_len / block), R] per self-attention, none "
          "with R = 0 (%d names off)" % off, float(off), 0.5)

    # The rule's two forms agree key for key: the dense matrix
    # (block_sparse_allowed) and the key positions of the block lists
    # (block_sparse_key_blocks), causal per token, for ids inside and
    # outside [0, block count); a partial last block; blocks longer than
    # the sequence.
    bad = []
    for n, b, wb, gb, r, causal in itertools.product((1, 5, 13, 40), (1, 3, 4, 16, 50), (0, 1, 2), (0, 1, 2),
                                                     (0, 2), (False, True)):
        rows = n_blocks(48, b)
        pattern = torch.randint(-2, rows + 2, (rows, r), generator=gen) if r else None
        allowed = block_sparse_allowed(range(n), range(n), b, wb, gb, pattern, causal)
        nb = n_blocks(n, b)
        for i in range(n):
            keys = [j for kb in block_sparse_key_blocks(i // b, nb, wb, gb, pattern)
                    for j in range(kb * b, min((kb + 1) * b, n)) if not (causal and j > i)]
            if keys != allowed[i].nonzero().flatten().tolist():
                bad.append((n, b, wb, gb, r, causal, i))
            if not allowed[i, i]:
                bad.append((n, b, wb, gb, r, causal, i, "no self"))
    check("block_sparse rule: block lists == dense mask rows, each token attends itself (%d mismatches, "
          "first %s)" % (len(bad), bad[:1]), float(len(bad)), 0.5)
    # Spot values, as the contract words them: 7 tokens, blocks of 2 (the
    # last one token), window_blocks 0, global_blocks 1, block_pattern
    # rows [3], [-1] (ignored), [0] (block 0, already global), [1].
    pattern = torch.tensor([[3], [-1], [0], [1]])
    want = torch.tensor([[1] * 7, [1] * 7, [1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 1, 1, 0],
                         [1, 1, 0, 0, 1, 1, 0], [1, 1, 1, 1, 0, 0, 1]], dtype=torch.bool)
    got = block_sparse_allowed(range(7), range(7), 2, 0, 1, pattern)
    check("block_sparse rule spot values B=2 window_blocks=0 global_blocks=1 R=1",
          float((got != want).sum()), 0.5)
    check("block_sparse rule spot values, causal",
          float((block_sparse_allowed(range(7), range(7), 2, 0, 1, pattern, True) != want.tril()).sum()), 0.5)
    # An id equal to the run-time block count (3 blocks of 2 for 6 tokens,
    # 4 rows of max_seq_len 8) is ignored, not read as the next block.
    got = block_sparse_allowed(range(6), range(6), 2, 0, 0, torch.tensor([[3], [3], [0], [0]]))
    want = torch.block_diag(*[torch.ones(2, 2, dtype=torch.bool)] * 3)
    want[4:, :2] = True     # block 2 reads block 0; blocks 0 and 1 read id 3, ignored
    check("block_sparse rule: an id >= the run-time block count is ignored", float((got != want).sum()), 0.5)

    # The attention function, both forms, against the per-element float64
    # loop: every score kind, rope style, causal or not, blocks of 2, 3, 4
    # and 16 (one block), window 0 and 1, global 0 and 1, random 0 to 3,
    # grouped-query heads.
    for n, ((b, wb, gb, r), causal, score) in enumerate(
            (blocks, causal, score) for m, (blocks, causal) in enumerate(itertools.product(
                ((2, 0, 0, 2), (3, 1, 1, 0), (4, 0, 1, 2), (16, 0, 0, 0), (2, 1, 0, 3)), (False, True)))
            for score in ("scaled_dot", ("dot", "bilinear", "additive")[m % 3])):
        d, h = ((12, 3), (16, 2))[n % 2]
        desc = dict(d_model=d, num_heads=h, attention_score=score, attention=_block(b, wb, gb, r))
        if n % 5 == 2:
            desc.update(d_model=16, num_heads=4, num_kv_heads=2)
        check_attention("block_sparse B=%d wb=%d gb=%d R=%d%s" % (b, wb, gb, r, " kv_heads=2" if "num_kv_heads"
                                                                  in desc else ""),
                        desc, False, causal, (None, "half", "interleaved")[n % 3], seq=(9, 13)[n % 2])

    # With a padding mask, every mask form against the loop (on the rows
    # with a key; the additive form gives the others the mean of every
    # value row instead of the loop's 0, and must differ there).
    self_mask = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1], [1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 1]],
                             dtype=torch.bool)
    for n, (score, causal, (b, wb, gb, r)) in enumerate(itertools.product(
            ("scaled_dot", "additive"), (False, True), ((2, 0, 0, 2), (3, 0, 1, 1), (2, 1, 0, 0)))):
        cfg = _bs_config(dict(architecture="encoder", d_model=16, num_heads=2, d_ff=8, num_layers=1,
                              max_seq_len=16, attention_score=score, attention=_block(b, wb, gb, r)))
        forms = {f: FormulaAttention(cfg, mask_form=f).double() for f in MASK_FORMS}
        forms["blocks"] = FormulaAttention(cfg, form="blocks").double()
        with torch.no_grad():
            for p in forms["keys"].parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5)
            if r:
                forms["keys"].block_pattern.copy_(torch.randint(-1, n_blocks(16, b) + 1, (n_blocks(16, b), r),
                                                                generator=gen))
        for f in ("additive", "blocks"):
            forms[f].load_state_dict(forms["keys"].state_dict())
        x = torch.randn(2, 11, 16, generator=gen, dtype=torch.float64)
        want = _naive_attention(forms["keys"], x, None, causal, None, key_mask=self_mask)
        rule = block_sparse_allowed(range(11), range(11), b, wb, gb, forms["keys"].block_pattern, causal)
        rows = (rule[None] & self_mask[:, None, :]).any(-1)
        label = "masked block_sparse attention %s causal=%s B=%d wb=%d gb=%d R=%d" % (score, causal, b, wb, gb, r)
        with torch.no_grad():
            for f, a in forms.items():
                got = a(x, causal=causal, key_mask=self_mask)
                if f == "additive":
                    check("%s (%s, rows with a key)" % (label, f), _max_diff(got[rows], want[rows]), 1e-10)
                    if not rows.all():
                        check_differs("%s: the additive form's rows without a key are not the loop's 0" % label,
                                      _max_diff(got[~rows], want[~rows]))
                else:
                    check("%s (%s)" % (label, f), _max_diff(got, want), 1e-10)

    # Whole models: (b) dense against (b) blocks in float32 (1e-5) and
    # float64 (1e-12), batched and not, a sequence of max_seq_len; with
    # padding masks also the additive form, on the rows with a key
    # (attended_rows with the layers' block patterns); the kind matters
    # (vs full attention) unless one block or the window covers the
    # sequence; the random blocks matter (every id -1: ignored).
    variants = _block_sparse_variants() + [(d, {}) for d in extra_descs if Config(d).block_sparse]
    for idx, (desc, pats) in enumerate(variants):
        cfg = _bs_config(desc)
        shared = cfg.is_encdec and cfg.tokens and idx % 2 == 1
        label = "block_sparse model %d %s%s%s" % (idx, _short(desc), " shared" if shared else "",
                                                  " %s" % pats if pats else "")
        exp = expected_weights(cfg, shared)
        names_ok = all({k: tuple(v.shape) for k, v in build_formula_model(cfg, shared, f).state_dict().items()}
                       == exp for f in ("dense", "blocks"))
        check("%s: (b) names == the contract's listing, both forms" % label, 0.0 if names_ok else 1.0, 0.5)
        weights = make_weights(cfg, seed=1900 + idx, shared_embeddings=shared)
        forms = [("dense", build_formula_model(cfg, shared), False),
                 ("blocks", build_torch_model(cfg, shared), False),
                 ("additive", build_formula_model(cfg, shared, mask_form="additive"), False),
                 ("dense", build_formula_model(cfg, shared).double(), True),
                 ("blocks", build_formula_model(cfg, shared, "blocks").double(), True)]
        for _, m, _ in forms:
            load_weights(m, weights)
        full_w = {k: v for k, v in weights.items() if not k.endswith("block_pattern")}
        full = load_weights(build_formula_model(dict(desc, attention={"kind": "full"}), shared), full_w)
        no_random = None
        if cfg.random_blocks:
            w2 = {k: (torch.full_like(v, -1) if k.endswith("block_pattern") else v) for k, v in weights.items()}
            no_random = load_weights(build_formula_model(cfg, shared), w2)
        N = cfg.max_seq_len
        for batch, seqs in ((2, (13, 11)), (0, (N, N - 5))):
            seqs = seqs if cfg.is_encdec else seqs[:1]
            inputs = _random_inputs(cfg, gen, batch, seqs)
            for name, p in pats.items():
                inputs[name] = _mask_rows(p, batch, seqs[cfg.input_names.index(cfg.mask_of[name])])
            rows = torch.from_numpy(attended_rows(cfg, inputs, _block_patterns(cfg, weights)))
            tag = "%s batch=%d seq=%s" % (label, batch, "/".join(map(str, seqs)))
            in64 = {k: (v.double() if (k in cfg.input_names and not cfg.tokens) else v) for k, v in inputs.items()}
            with torch.no_grad():
                outs = [(f, m(**(in64 if is64 else inputs)), is64) for f, m, is64 in forms]
                ref, ref64 = outs[0][1], outs[3][1]
                sc = ref[rows].abs().max().item()
                for f, y, is64 in outs[1:]:
                    if is64:
                        if f != "dense":
                            check("%s: dense vs %s, float64" % (tag, f), _max_diff(y[rows], ref64[rows]), 1e-12,
                                  scale=sc)
                    elif f != "additive" or pats:
                        check("%s: dense vs %s" % (tag, f), _max_diff(y[rows], ref[rows]), scale=sc)
                if batch != 2:
                    continue
                nb = n_blocks(max(seqs), cfg.block)
                # Every query block reaches every key block by the window
                # and the global blocks alone (e.g. 3 blocks, W 1, G 1):
                # the same as full attention, no negative control.
                covers = all(qb < cfg.global_blocks or kb < cfg.global_blocks or abs(qb - kb) <= cfg.window_blocks
                             for qb in range(nb) for kb in range(nb))
                if not covers:
                    bare = {k: v for k, v in inputs.items() if k in cfg.input_names}
                    check_differs("%s: block_sparse matters (vs full attention)" % tag,
                                  _max_diff(full(**bare)[rows], forms[0][1](**bare)[rows]))
                if no_random is not None and not covers and _pattern_adds_blocks(cfg, weights, inputs):
                    check_differs("%s: the random blocks matter (every id -1 instead)" % tag,
                                  _max_diff(no_random(**inputs)[rows], ref[rows]))

    # What it reduces to: blocks of 1 token without random blocks are the
    # sliding window W = window_blocks, G = global_blocks; a window or
    # global blocks that cover every block, and one block, are full
    # attention.  Encoder, causal decoder, encoder_decoder; both forms.
    for arch in ("encoder", "decoder", "encoder_decoder"):
        base = dict(architecture=arch, d_model=32, num_heads=4, d_ff=48, max_seq_len=16, vocab_size=29,
                    norm="pre", num_layers=2, positional="rope")
        seqs = (13, 9) if arch == "encoder_decoder" else (13,)
        cfg_full = Config(base)
        w = make_weights(cfg_full, seed=1950)
        inputs = _random_inputs(cfg_full, gen, 2, seqs)
        with torch.no_grad():
            want_full = load_weights(build_formula_model(cfg_full), w)(**inputs)
            for what, att, other in (("B=1 wb=2 gb=1 R=0 is window W=2 G=1", _block(1, 2, 1), _window(2, 1)),
                                     ("B=1 wb=0 gb=0 R=0 is window W=0", _block(1, 0, 0), _window(0)),
                                     ("B=3 wb=5 is full attention", _block(3, 5, 0), None),
                                     ("B=2 gb=7 is full attention", _block(2, 0, 7), None),
                                     ("B=16 is full attention", _block(16, 0, 0), None)):
                want = want_full if other is None else load_weights(
                    build_formula_model(dict(base, attention=other)), w)(**inputs)
                cfg = _bs_config(dict(base, attention=att))
                for form in ("dense", "blocks"):
                    got = load_weights(build_formula_model(cfg, attention_form=form), w)(**inputs)
                    check("block_sparse %s, %s (%s)" % (what, arch, form), _max_diff(got, want), 1e-6,
                          scale=want.abs().max().item())

    # Planted mistakes in the block form must show (each on at least one
    # of the models: a causal decoder, an encoder, both with a global block,
    # a window of 1, 2 random blocks, ids -1 and past the block count).
    worst = {m: 0.0 for m in BLOCK_SPARSE_MISTAKES}
    for desc in (dict(architecture="decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                      vocab_size=29, positional="rope", attention=_block(2, 1, 1, 2)),
                 dict(architecture="encoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                      attention=_block(2, 1, 1, 2))):
        cfg = _bs_config(desc)
        w = make_weights(cfg, seed=1990)
        for k in [k for k in w if k.endswith("block_pattern")]:
            p = torch.randint(0, 8, (8, 2), generator=gen, dtype=torch.int32)
            p[2, 0], p[4, 1], p[5, 0] = -1, 8, -2
            w[k] = p
        for batch in (2, 0):
            inputs = _random_inputs(cfg, gen, batch, (13,))
            with torch.no_grad():
                want = load_weights(build_formula_model(cfg), w)(**inputs)
                for mistake in BLOCK_SPARSE_MISTAKES:
                    m = load_weights(build_formula_model(cfg, attention_form="blocks"), w)
                    for attn in _self_attentions(m):
                        attn.block_mistake = mistake
                    worst[mistake] = max(worst[mistake], _max_diff(m(**inputs), want))
    for mistake, diff in worst.items():
        check_differs("block_sparse blocks form with %s" % mistake, diff)


# ---------------------------------------------------------------------------
# Self-test of padding masks (contract section 8).
# ---------------------------------------------------------------------------

def _mask_rows(pattern, batch, seq):
    """A deterministic padding mask for the self-test, bool [batch, seq]
    ([seq] for batch 0): "right", "left", "holes", "ones", or "mixed" (the
    rows left, holes, right, ones in turn)."""
    rows = []
    for r in range(max(batch, 1)):
        p = ("left", "holes", "right", "ones")[r % 4] if pattern == "mixed" else pattern
        m = torch.ones(seq, dtype=torch.bool)
        if p == "right":
            m[max(1, seq - 2 - 3 * r):] = False
        elif p == "left":
            m[:seq - max(1, seq - 4 - 2 * r)] = False
        elif p == "holes":
            for j in ((2 + r) % (seq - 2) + 1, (5 + 2 * r) % (seq - 2) + 1):
                m[j] = False
        rows.append(m)
    out = torch.stack(rows)
    return out if batch else out[0]


def _mask_variants():
    """Masked models for the self-test: (description, {mask name: pattern}):
    every architecture, score kind and positional kind, both norms, causal
    and not, windows with global tokens, grouped-query heads and the other
    section 11 keys, float inputs and ids, each mask of an encoder_decoder
    alone and both."""
    base = dict(d_model=32, num_heads=4, d_ff=48, max_seq_len=16)
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu",
                 ffn_gated=True, bias=False, num_kv_heads=2)
    return [
        (dict(base, architecture="encoder", num_layers=2, vocab_size=29), {"mask": "right"}),
        (dict(base, architecture="encoder", num_layers=2, norm="pre", positional="learned"), {"mask": "holes"}),
        (dict(base, architecture="encoder", num_layers=2, positional="rope", attention_score="bilinear",
              vocab_size=29), {"mask": "mixed"}),
        (dict(base, architecture="encoder", num_layers=1, positional="rope", rope_style="interleaved",
              attention_score="additive", additive_dim=12), {"mask": "left"}),
        (dict(base, architecture="encoder", num_layers=2, attention_score="dot", positional="none"),
         {"mask": "mixed"}),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29), {"mask": "left"}),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29, norm="pre", positional="rope"),
         {"mask": "mixed"}),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29, **llama), {"mask": "left"}),
        (dict(base, architecture="encoder", num_layers=2, attention=_window(1, 2)), {"mask": "left"}),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29, positional="rope",
              attention_score="additive", attention=_window(2, 1)), {"mask": "mixed"}),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29, attention=_window(1, 1), **llama),
         {"mask": "holes"}),
        (dict(base, architecture="encoder_decoder", num_layers=2, vocab_size=29), {"src_mask": "right"}),
        (dict(base, architecture="encoder_decoder", num_layers=2, vocab_size=29, norm="pre"),
         {"tgt_mask": "left"}),
        (dict(base, architecture="encoder_decoder", num_encoder_layers=1, num_decoder_layers=2,
              positional="rope", attention_score="bilinear"), {"src_mask": "holes", "tgt_mask": "mixed"}),
        (dict(base, architecture="encoder_decoder", num_layers=1, vocab_size=29, attention=_window(1, 1)),
         {"src_mask": "left", "tgt_mask": "left"}),
        (dict(base, architecture="encoder_decoder", num_layers=1, vocab_size=29,
              **dict(llama, num_kv_heads=1)), {"src_mask": "mixed", "tgt_mask": "holes"}),
    ]


def _masked_forms(cfg, shared, weights):
    """The forms a masked model is computed in, each (label, model, fp64):
    (b) with padded keys left out, (b) with the dense additive mask, both
    in float64, the banded form (windows) and (a) or (c) where they apply."""
    forms = [("keys", build_formula_model(cfg, shared), False),
             ("additive", build_formula_model(cfg, shared, mask_form="additive"), False),
             ("keys", build_formula_model(cfg, shared).double(), True),
             ("additive", build_formula_model(cfg, shared, mask_form="additive").double(), True)]
    if cfg.sliding_window:
        forms.append(("banded", build_formula_model(cfg, shared, attention_form="banded"), False))
    if cfg.block_sparse:
        forms.append(("blocks", build_formula_model(cfg, shared, attention_form="blocks"), False))
    form = cfg.second_form()
    if form in ("torch", "hf"):
        forms.append(("(a)" if form == "torch" else "(c)", build_torch_model(cfg, shared, masked=True), False))
    if form == "mixed":     # a hybrid stack: each layer in its kind's second form
        forms.append(("second", build_torch_model(cfg, shared, masked=True), False))
    for _, m, _ in forms:
        load_weights(m, weights)
    return forms


def _mask_self_test(check, check_differs, gen, mask_cases):
    """Section 10 of the self-test: padding masks.  mask_cases: (model
    description, numpy inputs with masks) of cases.py's mask_* cases."""
    # The inputs' checks: good masks accepted, bad ones refused naming the
    # input, by mask_problems and by the models.
    enc = Config(dict(architecture="encoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=16,
                      vocab_size=11))
    flt = Config(dict(architecture="encoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=16))
    ed = Config(dict(architecture="encoder_decoder", d_model=16, num_heads=2, d_ff=8, num_layers=1,
                     max_seq_len=16, vocab_size=11))
    lin = Config(dict(architecture="encoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=16,
                      attention=_linformer(4)))
    perf = Config(dict(architecture="decoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=16,
                       attention=dict(kind="performer", features=4)))
    ids, ones = np.zeros((2, 5), np.int64), np.ones((2, 5), np.int64)
    x16 = np.zeros((2, 5, 16), np.float32)
    good = [(enc, dict(input=ids, mask=ones.astype(dt))) for dt in MASK_DTYPES]
    good += [(enc, dict(input=ids[0], mask=np.array([0, 1, 1, 0, 1], np.int32))),
             (flt, dict(input=x16, mask=np.array([[1, 1, 0, 0, 0], [0, 0, 1, 1, 1]], bool))),
             (flt, dict(input=x16[0], mask=np.array([0, 0, 0, 0, 1.0], np.float32))),
             (ed, dict(src=ids, tgt=ids[:, :3], src_mask=ones)),
             (ed, dict(src=ids, tgt=ids[:, :3], tgt_mask=ones[:, :3])),
             (ed, dict(src=ids, tgt=ids[:, :3], src_mask=ones, tgt_mask=ones[:, :3].astype(bool)))]
    bad = [(enc, dict(input=ids, mask=ones[:, :4]), "mask", "shape"),
           (enc, dict(input=ids, mask=ones[0]), "mask", "shape"),
           (enc, dict(input=ids[0], mask=ones[:1]), "mask", "shape"),
           (flt, dict(input=x16, mask=np.ones((2, 5, 16), np.float32)), "mask", "shape"),
           (enc, dict(input=ids, mask=ones * 2), "mask", "value"),
           (enc, dict(input=ids, mask=-ones), "mask", "value"),
           (enc, dict(input=ids, mask=ones.astype(np.float32) * 0.5), "mask", "value"),
           (enc, dict(input=ids, mask=np.full((2, 5), np.nan, np.float32)), "mask", "value"),
           (enc, dict(input=ids, mask=np.array([[1, 0, 0, 0, 0], [0, 0, 0, 0, 0]])), "mask", "row 1"),
           (enc, dict(input=ids[0], mask=np.zeros(5, np.int32)), "mask", "no real token"),
           (enc, dict(input=ids, mask=ones.astype(np.float64)), "mask", "dtype"),
           (enc, dict(input=ids, mask=ones.astype(np.uint8)), "mask", "dtype"),
           (enc, dict(input=ids, mask=ones.astype(np.int16)), "mask", "dtype"),
           (enc, dict(input=ids, masks=ones), "masks", "unknown"),
           (enc, dict(input=ids, src_mask=ones), "src_mask", "unknown"),
           (lin, dict(input=x16, mask=ones), "mask", "linformer"),
           (perf, dict(input=x16, mask=ones), "mask", "performer"),
           (ed, dict(src=ids, tgt=ids[:, :3], src_mask=ones[:, :3]), "src_mask", "shape"),
           (ed, dict(src=ids, tgt=ids[:, :3], tgt_mask=ones), "tgt_mask", "shape"),
           (ed, dict(src=ids, tgt=ids[:, :3], tgt_mask=ones[:, :3] * 2), "tgt_mask", "value"),
           (ed, dict(src=ids, tgt=ids[:, :3], mask=ones), "mask", "unknown")]
    accepted = sum(not mask_problems(c, i) for c, i in good)
    refused = 0
    for c, i, name, needle in bad:
        p = mask_problems(c, i)
        refused += bool(p) and ("'%s'" % name) in p[0][1] and needle in p[0][1]
    models_refuse = 0
    for c, i, name, _ in bad:
        try:
            with torch.no_grad():
                run_model(build_formula_model(c), c, i)
        except MaskError as e:
            models_refuse += ("'%s'" % name) in str(e)
    check("masks: %d of %d good ones accepted, %d of %d bad ones refused naming the input (models: %d)"
          % (accepted, len(good), refused, len(bad), models_refuse),
          float(len(good) - accepted + 2 * len(bad) - refused - models_refuse), 0.5)

    # Which rows are defined: attended_rows against the rule written per
    # (row, key), and spot values.
    bad_rows = 0
    for arch, causal, att in itertools.product(("encoder", "decoder"), (False, True),
                                               (None, _window(1, 2), _window(0, 0))):
        desc = dict(architecture=arch, d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=16,
                    causal=causal, **({"attention": att} if att else {}))
        cfg = Config(desc)
        for pattern in ("right", "left", "holes", "mixed"):
            m = _mask_rows(pattern, 4, 13)
            x = torch.zeros(4, 13, 16)
            rows = attended_rows(cfg, dict(input=x, mask=m))
            for b, i in itertools.product(range(4), range(13)):
                want = any(bool(m[b, j]) and (j <= i or not causal) and (
                    att is None or abs(i - j) <= att["window"] or i < att["global_tokens"]
                    or j < att["global_tokens"]) for j in range(13))
                bad_rows += bool(rows[b, i]) != want
    m = torch.tensor([[0] * 6 + [1] * 7, [1] * 9 + [0] * 4])
    tiny = dict(d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=16)
    spot = [attended_rows(dict(tiny, architecture="decoder"), dict(input=torch.zeros(2, 13, 16), mask=m)).tolist(),
            attended_rows(dict(tiny, architecture="encoder", attention=_window(1, 2)),
                          dict(input=torch.zeros(2, 13, 16), mask=m)).tolist()]
    want = [[[False] * 6 + [True] * 7, [True] * 13], [[True, True, False, False, False] + [True] * 8, [True] * 13]]
    check("attended_rows: %d disagreements with the rule per (row, key); spot values (causal left padding, "
          "window W 1 G 2 with left padding) %s" % (bad_rows, "right" if spot == want else "WRONG: %s" % spot),
          float(bad_rows + (spot != want)), 0.5)

    # The attention function with a key mask against the per-element loop
    # (float64): every score kind, rope style, causal and not, a window with
    # global tokens, cross-attention with a memory mask, grouped-query
    # heads; padded keys left out (a row with none left is 0, as the loop
    # says), banded rows masking their padded keys, and the dense additive
    # mask (on the rows that have a key: elsewhere it averages every value
    # row, and must differ from 0 there: the rows it leaves out are real).
    self_mask = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 1], [1, 1, 0, 1, 1, 0, 1, 1, 0]], dtype=torch.bool)
    mem_mask = torch.tensor([[1, 1, 1, 0, 0, 0], [0, 1, 1, 0, 1, 1]], dtype=torch.bool)
    for n, (score, causal, cross, win) in enumerate(itertools.product(
            ("scaled_dot", "dot", "bilinear", "additive"), (False, True), (False, True), (None, (1, 2)))):
        if cross and (causal or win):
            continue
        d, h = ((12, 3), (16, 2))[n % 2]
        desc = dict(architecture="encoder", d_model=d, num_heads=h, d_ff=8, num_layers=1, max_seq_len=16,
                    attention_score=score)
        if win:
            desc["attention"] = _window(*win)
        if n % 3 == 1:
            desc.update(d_model=16, num_heads=4, num_kv_heads=2)
        rope_style = None if cross else (None, "half", "interleaved")[n % 3]
        cfg = Config(desc)
        forms = {f: FormulaAttention(cfg, self_attention=not cross, mask_form=f).double() for f in MASK_FORMS}
        with torch.no_grad():
            for p in forms["keys"].parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.5)
        forms["additive"].load_state_dict(forms["keys"].state_dict())
        if win and not cross:
            forms["banded"] = FormulaAttention(cfg, form="banded").double()
            forms["banded"].load_state_dict(forms["keys"].state_dict())
        x = torch.randn(2, 9, cfg.d_model, generator=gen, dtype=torch.float64)
        mem = torch.randn(2, 6, cfg.d_model, generator=gen, dtype=torch.float64) if cross else None
        km = mem_mask if cross else self_mask
        rope = None
        if rope_style:
            cos, sin = rope_cos_sin(16, cfg.head_dim, 777.0)
            rope = (cos, sin, rope_style, 777.0)
        want = _naive_attention(forms["keys"], x, mem, causal, rope, key_mask=km)
        sk = 6 if cross else 9
        rule = attention_allowed(range(9), range(sk), win[0] if win and not cross else None,
                                 win[1] if win and not cross else 0, causal)
        rows = (rule[None] & km[:, None, :]).any(-1)
        label = "masked attention %s causal=%s cross=%s window=%s rope=%s%s" % (
            score, causal, cross, win, rope_style, " kv_heads=2" if "num_kv_heads" in desc else "")
        with torch.no_grad():
            for f, a in forms.items():
                got = a(x, mem=mem, causal=causal, rope=rope[:3] if rope else None, key_mask=km)
                if f == "additive":
                    check("%s (%s, rows with a key)" % (label, f), _max_diff(got[rows], want[rows]), 1e-10)
                    if not rows.all():
                        check_differs("%s: the additive form's rows without a key are not the loop's 0"
                                      % label, _max_diff(got[~rows], want[~rows]))
                else:
                    check("%s (%s)" % (label, f), _max_diff(got, want), 1e-10)

    # Whole models: the forms against each other on the rows with a key
    # (fp32: 1e-5 relative; float64: 1e-12), batched and unbatched; the
    # mask must matter; an all-ones mask is no mask.
    items = []
    for idx, (desc, pats) in enumerate(_mask_variants()):
        cfg = Config(desc)
        for batch in ((2, 0) if idx % 2 == 0 else (2,)):   # unbatched: every other model
            seqs = ((13, 9) if batch else (11, 7)) if cfg.is_encdec else ((13,) if batch else (11,))
            inputs = _random_inputs(cfg, gen, batch, seqs)
            for name, p in pats.items():
                inputs[name] = _mask_rows(p, batch, seqs[cfg.input_names.index(cfg.mask_of[name])])
            items.append(("mask model %d %s %s batch=%d" % (idx, _short(desc), pats, batch), desc, inputs,
                          idx % 2 == 1 and cfg.is_encdec and cfg.tokens))
    for name, (desc, inputs) in mask_cases:
        items.append(("mask case %s" % name, desc, to_torch_inputs(Config(desc), inputs), False))
    for idx, (label, desc, inputs, shared) in enumerate(items):
        cfg = Config(desc)
        weights = make_weights(cfg, seed=1300 + idx, shared_embeddings=shared)
        forms = _masked_forms(cfg, shared, weights)
        rows = torch.from_numpy(attended_rows(cfg, inputs, _block_patterns(cfg, weights)))
        bare = {k: v for k, v in inputs.items() if k not in cfg.mask_names}   # token types kept
        in64 = {k: (v.double() if (k in cfg.input_names and not cfg.tokens) else v) for k, v in inputs.items()}
        with torch.no_grad():
            outs = [(f, m(**(in64 if is64 else inputs)), is64) for f, m, is64 in forms]
            ref = outs[0][1]
            sc = ref[rows].abs().max().item()
            for f, y, is64 in outs[1:]:
                if is64:
                    ref64 = outs[2][1]
                    if f != "keys":
                        check("%s: keys vs %s, float64" % (label, f), _max_diff(y[rows], ref64[rows]), 1e-12,
                              scale=sc)
                    continue
                check("%s: keys vs %s" % (label, f), _max_diff(y[rows], ref[rows]), scale=sc)
            masks = {k: v for k, v in inputs.items() if k in cfg.mask_names}
            if not all(bool(v.bool().all()) for v in masks.values()):
                check_differs("%s: the mask matters" % label, _max_diff(forms[0][1](**bare)[rows], ref[rows]))
            if not rows.all():
                check_differs("%s: the additive form's rows without a key differ (they are left out)" % label,
                              _max_diff(outs[1][1][~rows], ref[~rows]))
    # An all-ones mask is no mask, for every form.
    for idx, (desc, pats) in enumerate(_mask_variants()[::2]):
        cfg = Config(desc)
        weights = make_weights(cfg, seed=1400 + idx)
        seqs = (13, 9) if cfg.is_encdec else (13,)
        inputs = _random_inputs(cfg, gen, 2, seqs)
        with torch.no_grad():
            for f, m, is64 in _masked_forms(cfg, False, weights):
                if is64:
                    continue
                want = m(**inputs)
                ones = dict(inputs, **{k: torch.ones(2, seqs[cfg.input_names.index(cfg.mask_of[k])],
                                                     dtype=torch.int32) for k in cfg.mask_names})
                check("mask model %d %s: an all-ones mask is no mask (%s)" % (idx, _short(desc), f),
                      _max_diff(m(**ones), want), 1e-6, scale=want.abs().max().item())

    # Padded positions change nothing: new tokens (or embeddings) there
    # leave every real row of an encoder unchanged (exactly), and the rows
    # with a key of a causal decoder with left padding and an
    # encoder_decoder (padded src tokens: all of its rows); a real
    # position changed moves the other real rows.
    pert = [(dict(architecture="encoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                  vocab_size=29), {"mask": "mixed"}),
            (dict(architecture="encoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                  norm="pre", positional="rope", attention_score="additive"), {"mask": "holes"}),
            (dict(architecture="encoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                  attention=_window(1, 2)), {"mask": "left"}),
            (dict(architecture="decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                  vocab_size=29, positional="learned"), {"mask": "left"}),
            (dict(architecture="encoder_decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16,
                  num_layers=2, vocab_size=29, norm="pre"), {"src_mask": "mixed", "tgt_mask": "left"})]
    for idx, (desc, pats) in enumerate(pert):
        cfg = Config(desc)
        weights = make_weights(cfg, seed=1500 + idx)
        seqs = (13, 9) if cfg.is_encdec else (13,)
        inputs = _random_inputs(cfg, gen, 4, seqs)
        for name, p in pats.items():
            inputs[name] = _mask_rows(p, 4, seqs[cfg.input_names.index(cfg.mask_of[name])])
        rows = torch.from_numpy(attended_rows(cfg, inputs))
        for which in (["src", "tgt"] if cfg.is_encdec else ["input"]):
            mname = {"input": "mask", "src": "src_mask", "tgt": "tgt_mask"}[which]
            pad = ~inputs[mname]
            # Compared: the real rows with a key (src: every decoder row with one).
            keep = rows if which == "src" else rows & inputs[mname]
            other = _random_inputs(cfg, gen, 4, seqs)[which]
            moved = dict(inputs)
            sel = pad if cfg.tokens else pad[..., None]
            moved[which] = torch.where(sel, other, inputs[which])
            real_moved = dict(inputs)
            first_real = inputs[mname].float().argmax(-1)
            flip = torch.zeros_like(pad)
            flip[torch.arange(4), first_real] = True
            sel = flip if cfg.tokens else flip[..., None]
            real_moved[which] = torch.where(sel, other, inputs[which])
            with torch.no_grad():
                for f, m, is64 in _masked_forms(cfg, False, weights):
                    if is64:
                        continue
                    y = m(**inputs)
                    check("%s %s: padded %s tokens changed, real rows unchanged (%s)"
                          % (_short(desc), pats, which, f), _max_diff(m(**moved)[keep], y[keep]), 1e-300)
                    check_differs("%s %s: a real %s token changed moves real rows (%s)"
                                  % (_short(desc), pats, which, f), _max_diff(m(**real_moved)[keep], y[keep]))

    # Planted mistakes in (b) must show on the rows with a key.
    for desc, pats in (
            (dict(architecture="encoder_decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                  vocab_size=29), {"src_mask": "mixed", "tgt_mask": "holes"}),
            (dict(architecture="decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16, num_layers=2,
                  vocab_size=29, positional="rope"), {"mask": "mixed"})):
        cfg = Config(desc)
        weights = make_weights(cfg, seed=1600)
        seqs = (13, 9) if cfg.is_encdec else (13,)
        inputs = _random_inputs(cfg, gen, 4, seqs)
        for name, p in pats.items():
            inputs[name] = _mask_rows(p, 4, seqs[cfg.input_names.index(cfg.mask_of[name])])
        rows = torch.from_numpy(attended_rows(cfg, inputs))
        with torch.no_grad():
            want = load_weights(build_formula_model(cfg), weights)(**inputs)
            for mistake in MASK_MISTAKES:
                if mistake == "no_cross_mask" and not cfg.is_encdec:
                    continue
                m = load_weights(build_formula_model(cfg, mask_mistake=mistake), weights)
                check_differs("(b) with mask mistake %s, %s" % (mistake, cfg.architecture),
                              _max_diff(m(**inputs)[rows], want[rows]))


# ---------------------------------------------------------------------------
# The embeddings: embedding_norm and BERT's token types.
# ---------------------------------------------------------------------------

# Deliberate mistakes _EmbedMistakeModel plants (self-test only): the norm
# taken before the positions are added, token_type_ids ignored (type 0
# everywhere), the type embedding scaled by embedding_scale with the token
# embedding, no embedding norm, the source's norm on the target (an
# encoder_decoder), the norm's eps read as 1.
EMBED_MISTAKES = ("norm_before_positions", "types_ignored", "types_scaled", "no_norm", "src_norm_for_tgt",
                  "norm_eps")


class _EmbedMistakeModel(FormulaModel):
    """(b) with one of EMBED_MISTAKES in its embeddings."""

    def __init__(self, cfg, mistake, shared_embeddings=False):
        super().__init__(cfg, shared_embeddings)
        if mistake not in EMBED_MISTAKES:
            raise ValueError(mistake)
        self.mistake = mistake

    def _embed(self, x, which, types=None):
        cfg, m = self.cfg, self.mistake
        norm = self._embed_norm(which) if cfg.embedding_norm else None
        if m == "src_norm_for_tgt" and cfg.is_encdec:
            norm = self.src_embed_norm
        if cfg.tokens:
            ids = x.long()
            x = self._tok_embed(which)(ids)
            scale = math.sqrt(cfg.d_model) if cfg.embedding_scale == "sqrt_d_model" else 1.0
            if m != "types_scaled":
                x = x * scale
            if cfg.type_vocab_size:
                tt = types if (types is not None and m != "types_ignored") else torch.zeros_like(ids)
                x = x + self.type_embed(tt)
            if m == "types_scaled":
                x = x * scale
        else:
            x = x.to(self._dtype())
        if norm is not None and m == "norm_before_positions":
            x = norm(x)
        s = x.shape[1]
        if cfg.positional == "sinusoidal":
            x = x + sinusoidal_table(s, cfg.d_model).to(x.dtype)
        elif cfg.positional == "learned":
            x = x + self._pos_embed(which).weight[:s]
        if norm is not None and m not in ("norm_before_positions", "no_norm"):
            if m == "norm_eps":
                x = rms_norm(x, norm.weight, 1.0) if cfg.rms else layer_norm(x, norm.weight, norm.bias, 1.0)
            else:
                x = norm(x)
        return x


def _embedding_variants():
    """Models with embedding_norm and/or type_vocab_size for the self-test:
    (description, token-type pattern: None (not given), "segments" or
    "random", padding-mask pattern or None)."""
    base = dict(d_model=32, num_heads=4, d_ff=48, max_seq_len=16)
    bert = dict(base, architecture="encoder", num_layers=2, vocab_size=29, positional="learned",
                activation="gelu", embedding_norm=True)
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu", ffn_gated=True,
                 bias=False, num_kv_heads=2)
    return [
        (dict(bert, type_vocab_size=2), "segments", None),
        (dict(bert, type_vocab_size=2), None, None),
        (dict(bert, type_vocab_size=3, lm_head=False, norm_eps=1e-12), "random", "right"),
        (dict(bert, type_vocab_size=3, tie_embeddings=False), None, "holes"),
        (dict(base, architecture="encoder", num_layers=1, vocab_size=29, type_vocab_size=2,
              embedding_scale="sqrt_d_model"), "random", None),               # token types, no norm
        (dict(base, architecture="encoder", num_layers=2, vocab_size=29, type_vocab_size=4, **llama),
         "random", "left"),                                                   # (c): rms embedding norm
        (dict(base, architecture="encoder", num_layers=2, vocab_size=29, type_vocab_size=2, embedding_norm=True,
              norm_type="rms_norm", positional="sinusoidal"), "segments", None),
        (dict(base, architecture="encoder", num_layers=2, embedding_norm=True, norm="pre"), None, None),  # floats
        (dict(base, architecture="encoder", num_layers=1, embedding_norm=True, positional="none"), None, "holes"),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29, embedding_norm=True, **llama), None, None),
        (dict(base, architecture="decoder", num_layers=2, vocab_size=29, embedding_norm=True, positional="learned",
              norm="pre"), None, "left"),
        (dict(base, architecture="decoder", num_layers=1, vocab_size=29, embedding_norm=True,
              positional="rope", attention_score="bilinear", embedding_scale="sqrt_d_model"), None, None),
        (dict(base, architecture="encoder_decoder", num_layers=1, vocab_size=29, embedding_norm=True,
              positional="learned"), None, None),
        (dict(base, architecture="encoder_decoder", num_layers=1, embedding_norm=True, norm="pre"), None, None),
        (dict(base, architecture="encoder_decoder", num_encoder_layers=1, num_decoder_layers=2, vocab_size=29,
              embedding_norm=True, **dict(llama, num_kv_heads=1)), None, None),
    ]


def _type_ids(pattern, gen, batch, seq, n_types):
    """Token type ids [batch, seq] ([seq] for batch 0): "segments" (BERT's
    sentence pairs: 0 up to a split, 1 after), "random" (uniform over the
    types)."""
    rows = []
    for _ in range(max(batch, 1)):
        if pattern == "segments":
            split = int(torch.randint(1, seq, (1,), generator=gen))
            rows.append(torch.cat([torch.zeros(split, dtype=torch.long), torch.ones(seq - split, dtype=torch.long)]))
        else:
            rows.append(torch.randint(0, n_types, (seq,), generator=gen))
    out = torch.stack(rows)
    return out if batch else out[0]


def _embedding_self_test(check, check_differs, gen, embed_cases=()):
    """Section 13 of the self-test: embedding_norm and type_vocab_size.
    embed_cases: (name, description, numpy inputs) of cases.py's cases
    with either key."""
    # The keys: good values accepted, bad ones refused naming the key.
    tiny = dict(d_model=16, num_heads=2, d_ff=8, max_seq_len=16)
    good = [dict(tiny, architecture=a, embedding_norm=v, **({"num_layers": 1}))
            for a in ("encoder", "decoder", "encoder_decoder") for v in (True, False)]
    good += [dict(tiny, architecture="encoder", num_layers=1, vocab_size=11, type_vocab_size=t) for t in (1, 2, 7)]
    bad = [(dict(tiny, architecture="encoder", num_layers=1, embedding_norm=1), "'embedding_norm'"),
           (dict(tiny, architecture="encoder", num_layers=1, embedding_norm="true"), "'embedding_norm'"),
           (dict(tiny, architecture="decoder", num_layers=1, vocab_size=11, type_vocab_size=2),
            "'type_vocab_size' needs architecture 'encoder'"),
           (dict(tiny, architecture="encoder_decoder", num_layers=1, vocab_size=11, type_vocab_size=2),
            "'type_vocab_size' needs architecture 'encoder'"),
           (dict(tiny, architecture="encoder", num_layers=1, type_vocab_size=2), "needs 'vocab_size'"),
           (dict(tiny, architecture="encoder", num_layers=1, vocab_size=11, type_vocab_size=0), "'type_vocab_size'"),
           (dict(tiny, architecture="encoder", num_layers=1, vocab_size=11, type_vocab_size=-1), "'type_vocab_size'"),
           (dict(tiny, architecture="encoder", num_layers=1, vocab_size=11, type_vocab_size=2.5),
            "'type_vocab_size'"),
           (dict(tiny, architecture="encoder", num_layers=1, vocab_size=11, type_vocab_size=True),
            "'type_vocab_size'")]
    accepted = 0
    for d in good:
        try:
            Config(d)
            accepted += 1
        except ConfigError:
            pass
    refused = 0
    for d, needle in bad:
        try:
            Config(d)
        except ConfigError as e:
            refused += needle in str(e)
    check("embedding keys: %d of %d good descriptions accepted, %d of %d bad ones refused naming the key"
          % (accepted, len(good), refused, len(bad)), float(len(good) - accepted + len(bad) - refused), 0.5)

    # The listing, written out: what each key adds to the model without it.
    def added(desc, shared=False):
        without = {k: v for k, v in desc.items() if k not in ("embedding_norm", "type_vocab_size")}
        a, b = expected_weights(Config(desc), shared), expected_weights(Config(without), shared)
        return {k: v for k, v in a.items() if k not in b} if set(b) <= set(a) else None
    d, n = 16, dict(tiny, num_layers=1)
    listings = [
        (dict(n, architecture="encoder", vocab_size=11, type_vocab_size=3, embedding_norm=True), False,
         {"type_embed.weight": (3, d), "embed_norm.weight": (d,), "embed_norm.bias": (d,)}),
        (dict(n, architecture="encoder", vocab_size=11, type_vocab_size=2), False, {"type_embed.weight": (2, d)}),
        (dict(n, architecture="encoder", vocab_size=11, type_vocab_size=2, embedding_norm=True,
              norm_type="rms_norm"), False, {"type_embed.weight": (2, d), "embed_norm.weight": (d,)}),
        (dict(n, architecture="encoder", embedding_norm=True), False,
         {"embed_norm.weight": (d,), "embed_norm.bias": (d,)}),
        (dict(n, architecture="decoder", vocab_size=11, embedding_norm=True, norm_type="rms_norm"), False,
         {"embed_norm.weight": (d,)}),
        (dict(n, architecture="encoder_decoder", vocab_size=11, embedding_norm=True), False,
         {"src_embed_norm.weight": (d,), "src_embed_norm.bias": (d,), "tgt_embed_norm.weight": (d,),
          "tgt_embed_norm.bias": (d,)}),
        (dict(n, architecture="encoder_decoder", vocab_size=11, embedding_norm=True), True,
         {"src_embed_norm.weight": (d,), "src_embed_norm.bias": (d,), "tgt_embed_norm.weight": (d,),
          "tgt_embed_norm.bias": (d,)}),
        (dict(n, architecture="encoder_decoder", embedding_norm=True, norm_type="rms_norm"), False,
         {"src_embed_norm.weight": (d,), "tgt_embed_norm.weight": (d,)}),
        (dict(n, architecture="encoder", vocab_size=11, embedding_norm=False), False, {})]
    wrong = [i for i, (desc, shared, want) in enumerate(listings) if added(desc, shared) != want]
    check("embedding listing: the keys add exactly the tensors written out (%d of %d wrong%s)"
          % (len(wrong), len(listings), ": %s" % wrong if wrong else ""), float(len(wrong)), 0.5)

    # Token type inputs: good ones accepted, bad ones refused naming the
    # input (by token_type_problems and by every model), in the executables'
    # words.
    enc = Config(dict(n, architecture="encoder", vocab_size=11, type_vocab_size=2))
    plain = Config(dict(n, architecture="encoder", vocab_size=11))
    ids = np.zeros((2, 3), np.int64)
    good_in = [(enc, dict(input=ids, token_type_ids=np.array([[0, 1, 1], [1, 0, 0]], dt))) for dt in TYPE_ID_DTYPES]
    good_in += [(enc, dict(input=ids)), (enc, dict(input=ids[0], token_type_ids=np.array([1, 1, 0]))),
                (enc, dict(input=ids, token_type_ids=np.ones((2, 3), np.int32), mask=np.ones((2, 3), np.int32)))]
    bad_in = [(enc, dict(input=ids, token_type_ids=np.array([[0, 2, 1], [0, 0, 0]], np.int32)),
               "token type id 2 at position [0, 1] is out of range [0, 2)"),
              (enc, dict(input=ids, token_type_ids=np.array([[0, 1, 1], [0, -1, 0]], np.int64)),
               "token type id -1 at position [1, 1] is out of range [0, 2)"),
              (enc, dict(input=ids, token_type_ids=np.zeros((1, 6), np.int64)),
               "shape [1, 6] does not match input 'input' (expected [2, 3])"),
              (enc, dict(input=ids, token_type_ids=np.zeros(3, np.int64)),
               "shape [3] does not match input 'input' (expected [2, 3])"),
              (enc, dict(input=ids, token_type_ids=np.zeros((2, 3), np.float32)), "dtype float32"),
              (enc, dict(input=ids, token_type_ids=np.zeros((2, 3), np.int16)), "dtype int16"),
              (plain, dict(input=ids, token_type_ids=np.zeros((2, 3), np.int64)), "unknown input")]
    ok_in = sum(not mask_problems(c, i) for c, i in good_in)
    refused = sum(any(("'token_type_ids'" in m and needle in m) for _, m in mask_problems(c, i))
                  for c, i, needle in bad_in)
    models_refuse = 0
    for c, i, needle in bad_in:
        for build in ((build_formula_model, build_hf_model, lambda c: TorchSingleStack(c).eval())):
            try:
                with torch.no_grad():
                    run_model(build(c), c, i)
            except InputError as e:
                models_refuse += "'token_type_ids'" in str(e) and needle in str(e)
    check("token_type_ids: %d of %d good ones accepted, %d of %d bad ones refused in the executables' words "
          "(models: %d of %d)" % (ok_in, len(good_in), refused, len(bad_in), models_refuse, 3 * len(bad_in)),
          float(len(good_in) - ok_in + len(bad_in) - refused + 3 * len(bad_in) - models_refuse), 0.5)

    # Whole models: (b) against (a) where it applies and (c) always, with
    # token types given and not, batched and unbatched, with padding masks;
    # float64 (b) against fp32 (b).
    items = []
    for idx, (desc, tpat, mpat) in enumerate(_embedding_variants()):
        cfg = Config(desc)
        for batch in (3, 0):
            seqs = ((9, 7) if batch else (6, 5)) if cfg.is_encdec else ((11,) if batch else (6,))
            inputs = _random_inputs(cfg, gen, batch, seqs)
            if tpat:
                inputs["token_type_ids"] = _type_ids(tpat, gen, batch, seqs[0], cfg.type_vocab_size)
            if mpat:
                inputs[cfg.mask_names[-1]] = _mask_rows(mpat, batch, seqs[-1])
            items.append(("embedding model %d %s types=%s mask=%s batch=%d" % (
                idx, _short(desc), tpat, mpat, batch), desc, inputs, idx % 4 == 0 and cfg.is_encdec and cfg.tokens))
    for name, desc, inputs in embed_cases:
        items.append(("embedding case %s" % name, desc, to_torch_inputs(Config(desc), inputs), False))
    for idx, (label, desc, inputs, shared) in enumerate(items):
        cfg = Config(desc)
        weights = make_weights(cfg, seed=2100 + idx, shared_embeddings=shared)
        masked = any(k in inputs for k in cfg.mask_names)
        rows = torch.from_numpy(attended_rows(cfg, inputs))
        fm = load_weights(build_formula_model(cfg, shared), weights)
        others = [("(c)", build_hf_model(cfg, shared))]
        if cfg.torch_supported():
            others.append(("(a)", build_torch_model(cfg, shared, masked=masked)))
        names_ok = True
        for what, m in others:
            got = {k: tuple(v.shape) for k, v in m.state_dict().items()}
            if got != expected_weights(cfg, shared):
                check("%s: %s names differ from the listing: %s" % (label, what, sorted(
                    set(got.items()) ^ set(expected_weights(cfg, shared).items()))), 1.0, 0.5)
                names_ok = False
        if not names_ok:
            continue
        for _, m in others:
            load_weights(m, weights)
        in64 = {k: (v.double() if (k in cfg.input_names and not cfg.tokens) else v) for k, v in inputs.items()}
        with torch.no_grad():
            want = fm(**inputs)
            sc = want[rows].abs().max().item()
            for what, m in others:
                check("%s: (b) vs %s" % (label, what), _max_diff(m(**inputs)[rows], want[rows]), scale=sc)
            y64 = load_weights(build_formula_model(cfg, shared).double(), weights)(**in64)
            check("%s: (b) fp32 vs float64" % label, _max_diff(y64[rows], want[rows]), scale=sc)
            if cfg.type_input:
                given = cfg.type_input in inputs
                bare = {k: v for k, v in inputs.items() if k != cfg.type_input}
                shape = inputs[cfg.input_names[0]].shape
                zeros = dict(bare, token_type_ids=torch.zeros(shape, dtype=torch.int32))
                for what, m in [("(b)", fm)] + others:
                    # Left out is type 0 everywhere: exactly.
                    check("%s: %s token_type_ids left out == all zeros" % (label, what),
                          _max_diff(m(**bare), m(**zeros)), 1e-300)
                if given and bool((inputs[cfg.type_input] != 0).any()):
                    check_differs("%s: the token types matter" % label, _max_diff(fm(**bare)[rows], want[rows]))
                # Row 0 of type_embed is added where no types are given.
                w2 = dict(weights)
                w2["type_embed.weight"] = weights["type_embed.weight"].clone()
                w2["type_embed.weight"][0] += torch.randn(cfg.d_model, generator=gen) * 0.5   # not constant: a norm removes that
                check_differs("%s: type_embed row 0 matters without token_type_ids" % label,
                              _max_diff(load_weights(build_formula_model(cfg, shared), w2)(**bare)[rows],
                                        fm(**bare)[rows]))
            # The planted mistakes show, against (c).
            ref = others[0][1](**inputs)
            for mistake in EMBED_MISTAKES:
                if (mistake in ("types_ignored", "types_scaled") and not (
                        cfg.type_input in inputs and (mistake == "types_ignored"
                                                      or cfg.embedding_scale == "sqrt_d_model")))\
                        or (mistake in ("norm_before_positions", "no_norm", "norm_eps") and not cfg.embedding_norm)\
                        or (mistake == "norm_before_positions" and cfg.positional not in ("learned", "sinusoidal"))\
                        or (mistake == "src_norm_for_tgt" and not (cfg.is_encdec and cfg.embedding_norm)):
                    continue
                if mistake == "types_ignored" and not bool((inputs[cfg.type_input] != 0).any()):
                    continue
                bad_m = load_weights(_EmbedMistakeModel(cfg, mistake, shared).eval(), weights)
                check_differs("%s: (b) with embedding mistake %s" % (label, mistake),
                              _max_diff(bad_m(**inputs)[rows], ref[rows]))

    # The embedding norm, spot-checked: a one-layer encoder's embeddings
    # are F.layer_norm / an RMS norm of token + type + position rows.
    for rms in (False, True):
        desc = dict(tiny, architecture="encoder", num_layers=1, vocab_size=11, type_vocab_size=3, embedding_norm=True,
                    positional="learned", norm_eps=1e-6, **({"norm_type": "rms_norm"} if rms else {}))
        cfg = Config(desc)
        w = make_weights(cfg, seed=2099)
        fm = load_weights(build_formula_model(cfg), w)
        tok = torch.tensor([[3, 1, 4, 1, 5]])
        tt = torch.tensor([[0, 2, 1, 1, 2]])
        summed = (w["embed.weight"][tok] + w["type_embed.weight"][tt] + w["pos_embed.weight"][:5]).double()
        if rms:
            want = summed * torch.rsqrt(summed.pow(2).mean(-1, keepdim=True) + 1e-6) * w["embed_norm.weight"].double()
        else:
            want = F.layer_norm(summed, (16,), w["embed_norm.weight"].double(), w["embed_norm.bias"].double(), 1e-6)
        with torch.no_grad():
            got = fm._embed(tok, "input", tt)
        check("embedding norm (%s) of token + type + position rows" % ("rms_norm" if rms else "layer_norm"),
              _max_diff(got, want), 1e-5)


# ---------------------------------------------------------------------------
# Self-test: mixture-of-experts FFNs (contract section 7).
# ---------------------------------------------------------------------------

# The smallest routing margin (the top_k-th largest gate logit minus the
# next one, float64, over every token of every MoE layer) a case may have:
# an fp32 run (the reference's, the compiled model's) moves the logits by
# ~1e-6 here, so a margin of 1e-4 cannot flip a choice, and a flipped
# choice changes the output by far more than the tolerance.
MOE_MIN_GAP = 1e-4


def _moe(e, k):
    return dict(kind="moe", experts=e, top_k=k)


def _moe_variants():
    """MoE models for the self-test: every architecture (both stacks of an
    encoder_decoder), both norm placements and types, every activation,
    gated or not, biases on and off, E/K 4/2, 8/1, 3/3, 5/3, 8/2, 1/1, 8/8,
    2/1, grouped-query heads with rope, odd sizes, and every attention kind
    (sliding_window, linformer, performer, block_sparse)."""
    ek = ((4, 2), (8, 1), (3, 3), (5, 3), (8, 2), (1, 1), (8, 8), (2, 1))
    archs = ("encoder", "decoder", "encoder_decoder")
    acts = ("relu", "gelu", "gelu_tanh", "silu")
    out = []
    for n in range(16):
        e, k = ek[n % len(ek)]
        d = dict(architecture=archs[n % 3], d_model=32, num_heads=4, d_ff=48, max_seq_len=16,
                 norm=("post", "pre")[(n // 3) % 2], activation=acts[n % 4], ffn=_moe(e, k))
        if d["architecture"] == "encoder_decoder":
            d.update(num_encoder_layers=1 + n % 2, num_decoder_layers=2 - n % 2)
        else:
            d["num_layers"] = 2
        if n % 2 == 0:
            d["vocab_size"] = 29
        if n % 5 == 1:
            d.update(ffn_gated=True, d_ff=25)
        if n % 4 == 2:
            d["bias"] = False
        if n % 6 == 3:
            d["norm_type"] = "rms_norm"
        if n % 7 == 4:
            d.update(num_kv_heads=2, positional="rope")
        if n % 5 == 3:
            d.update(d_model=21, num_heads=3, d_ff=45)
        out.append(d)
    tiny = dict(d_model=32, num_heads=4, d_ff=40, max_seq_len=16, num_layers=2)
    out += [dict(tiny, architecture="decoder", vocab_size=29, positional="rope", ffn=_moe(4, 2),
                 attention=dict(kind="sliding_window", window=2, global_tokens=1)),
            dict(tiny, architecture="encoder", causal=False, ffn=_moe(5, 2), attention=dict(kind="linformer", k=4)),
            dict(tiny, architecture="decoder", vocab_size=29, norm="pre", ffn=_moe(3, 2),
                 attention=dict(kind="performer", features=8)),
            dict(tiny, architecture="encoder_decoder", vocab_size=29, ffn=_moe(4, 1),
                 attention=dict(kind="block_sparse", block=3, random_blocks=1))]
    return out


def _naive_expert(ex, x, gated, act, f):
    """One expert on one token x [d] (float64): W2 act(W1 x + b1) + b2, the
    gate rows first when gated (act(gate) * up); ex has linear1 / linear2
    (FormulaMoE's experts)."""
    y = torch.mv(ex.linear1.weight.double(), x)
    if ex.linear1.bias is not None:
        y = y + ex.linear1.bias.double()
    y = activation_fn(act, y[:f]) * y[f:] if gated else activation_fn(act, y)
    z = torch.mv(ex.linear2.weight.double(), y)
    return z + ex.linear2.bias.double() if ex.linear2.bias is not None else z


def _naive_moe(moe, h, gated, act, f):
    """A third formulation of FormulaMoE, per token in float64: the logits
    l_e = g_e . x one by one; the experts sorted by (-l_e, e) (ties: the
    lower index first), the first K; weights exp(l_e - l_max) over their
    sum; out = the weighted sum of those experts' outputs."""
    g = moe.gate.weight.double()
    out = torch.zeros(h.shape, dtype=torch.float64)
    for t in range(h.shape[0]):
        x = h[t].double()
        lg = [float(torch.dot(g[e], x)) for e in range(moe.num_experts)]
        order = sorted(range(moe.num_experts), key=lambda e: (-lg[e], e))[:moe.top_k]
        ws = [math.exp(lg[e] - lg[order[0]]) for e in order]
        for w, e in zip(ws, order):
            out[t] += w / sum(ws) * _naive_expert(moe.experts[e], x, gated, act, f)
    return out


def _hf_moe_from(moe, cfg):
    """(c)'s HFSparseMoeBlock (float64) with the parameters of FormulaMoE
    `moe`: gate; each expert's linear1 cut into gate_proj / up_proj (gated:
    gate rows first) or up_proj, linear2 as down_proj."""
    hm = HFSparseMoeBlock(cfg, None).double()
    f = cfg.d_ff
    with torch.no_grad():
        hm.gate.weight.copy_(moe.gate.weight)
        for ex, hx in zip(moe.experts, hm.experts):
            w1, b1 = ex.linear1.weight, ex.linear1.bias
            if cfg.ffn_gated:
                hx.gate_proj.weight.copy_(w1[:f])
                hx.up_proj.weight.copy_(w1[f:])
                if b1 is not None:
                    hx.gate_proj.bias.copy_(b1[:f])
                    hx.up_proj.bias.copy_(b1[f:])
            else:
                hx.up_proj.weight.copy_(w1)
                if b1 is not None:
                    hx.up_proj.bias.copy_(b1)
            hx.down_proj.weight.copy_(ex.linear2.weight)
            if ex.linear2.bias is not None:
                hx.down_proj.bias.copy_(ex.linear2.bias)
    return hm


def moe_choices(logits, k):
    """Each token's chosen experts [tokens, k] (the K largest logits, ties
    to the lower index), as FormulaMoE routes."""
    return torch.sort(logits, dim=-1, descending=True, stable=True).indices[:, :k]


def _moe_mistake_applies(mistake, e, k, tied=False):
    """Whether MOE_MISTAKES' `mistake` changes the output of a model with E
    experts and top_k K (ties_high: only where some logits tie)."""
    return {"top_k_minus_1": k >= 2, "softmax_all": k < e, "lowest_k": k < e, "uniform": k >= 2,
            "ties_high": tied and k < e, "expert0": e >= 2, "average": e >= 2}[mistake]


def _with_moe_mistake(model, mistake):
    for m in moe_modules(model):
        m.mistake = mistake
    return model


def _moe_self_test(check, check_differs, gen, moe_cases=()):
    """Section 14 of the self-test: mixture-of-experts FFNs.  moe_cases:
    (name, description, weights, numpy inputs, shared embeddings, gate)
    of cases.py's and generate_cases.py's MoE cases, on the weights and
    inputs their harnesses use (a --generate case: the prompt and its
    greedy ids as one sequence); gate: cases.py's Case.moe_gate or None."""
    # The key: good values parse, bad ones are refused naming the problem.
    base = dict(architecture="decoder", d_model=16, num_heads=2, d_ff=8, num_layers=1, max_seq_len=8)
    good = [(None, ("dense", None, None)), ({"kind": "dense"}, ("dense", None, None)),
            (_moe(1, 1), ("moe", 1, 1)), (_moe(8, 2), ("moe", 8, 2)), (_moe(3, 3), ("moe", 3, 3)),
            (_moe(5, 3), ("moe", 5, 3)), (_moe(MAX_COUNT, 1), ("moe", MAX_COUNT, 1))]
    parsed = 0
    for f, want in good:
        cfg = Config(base if f is None else dict(base, ffn=f))
        parsed += (cfg.ffn_kind, cfg.moe_experts, cfg.moe_top_k) == want
    bad = [([], "'ffn' must be an object"), ("moe", "'ffn' must be an object"), ({}, "'ffn' needs a"),
           ({"experts": 4, "top_k": 2}, "'ffn' needs a"), ({"kind": "sparse"}, "'ffn' kind"),
           ({"kind": ["moe"]}, "'ffn' kind"), ({"kind": "moe", "top_k": 2}, 'needs "experts"'),
           ({"kind": "moe", "experts": 4}, 'needs "top_k"'), (_moe(0, 1), "'experts'"), (_moe(4, 0), "'top_k'"),
           (_moe(-1, 1), "'experts'"), (_moe(4, -1), "'top_k'"), (_moe(True, 1), "'experts'"),
           (_moe(4, True), "'top_k'"), (_moe(4.0, 2), "'experts'"), (_moe(2.5, 1), "'experts'"),
           (_moe("4", 2), "'experts'"), (_moe(4, "2"), "'top_k'"), (_moe(None, 1), "'experts'"),
           (_moe(2, 3), "'top_k' 3 is more than 'experts' 2"), (_moe(MAX_COUNT + 1, 1), "'experts'"),
           (dict(_moe(4, 2), capacity_factor=1.25), "unknown keys in 'ffn'"),
           ({"kind": "dense", "experts": 4}, "a key of kind 'moe'"),
           ({"kind": "dense", "top_k": 2}, "a key of kind 'moe'"),
           (dict(_moe(4, 2), window=2), "unknown keys in 'ffn'")]
    refused = 0
    for f, needle in bad:
        try:
            Config(dict(base, ffn=f))
        except ConfigError as e:
            refused += needle in str(e)
    check("ffn key: %d of %d good values parse, %d of %d bad ones refused naming the problem"
          % (parsed, len(good), refused, len(bad)), float(len(good) - parsed + len(bad) - refused), 0.5)
    dense_cfg = Config(dict(base, ffn={"kind": "dense"}))
    check("ffn {kind: dense} is today's FFN (the listing, the second form)",
          0.0 if (expected_weights(dense_cfg) == expected_weights(Config(base))
                  and dense_cfg.second_form() == Config(base).second_form() == "torch") else 1.0, 0.5)

    # The listing, written out for one layer: the gate, then each expert's
    # linears in the dense FFN's shapes; no linear1 / linear2 of the layer.
    for arch, gated, bias in (("encoder", False, True), ("decoder", True, False), ("encoder_decoder", True, True)):
        desc = dict(architecture=arch, d_model=16, num_heads=2, d_ff=6, num_layers=1, max_seq_len=8,
                    ffn_gated=gated, bias=bias, ffn=_moe(3, 2))
        cfg = Config(desc)
        dense = expected_weights(Config(dict(desc, ffn={"kind": "dense"})))
        prefixes = ("encoder.layers.0.", "decoder.layers.0.") if cfg.is_encdec else ("layers.0.",)
        want = {}
        for k, v in dense.items():
            p = next((p for p in prefixes if k.startswith(p)), None)
            leaf = k[len(p):] if p else ""
            if leaf.startswith(("linear1.", "linear2.")):
                if leaf == "linear1.weight":
                    want[p + "moe.gate.weight"] = (3, 16)
                for e in range(3):
                    want["%smoe.experts.%d.%s" % (p, e, leaf)] = v
            else:
                want[k] = v
        got = expected_weights(cfg)
        spot = got.get(prefixes[-1] + "moe.experts.2.linear1.weight") == ((12 if gated else 6), 16)
        names = [{k: tuple(v.shape) for k, v in m.state_dict().items()}
                 for m in (build_formula_model(cfg), build_formula_model(cfg, ffn_form="dense"), build_hf_model(cfg))]
        check("moe listing %s gated=%s bias=%s: the dense listing with each layer's linears per expert and "
              "the gate; (b) in both forms and (c) name exactly it" % (arch, gated, bias),
              0.0 if got == want and spot and all(n == got for n in names) else 1.0, 0.5)

    # The block against the per-token float64 formulation, and (c)'s block
    # on the same parameters: E/K of every kind, gated or not, biases or
    # not, every activation; ties (zero gate rows: logits exactly 0) in
    # (b)'s two forms, which order them by the lower expert index.
    acts = ("relu", "gelu", "gelu_tanh", "silu")
    for n, (e, k) in enumerate(((1, 1), (4, 2), (8, 1), (3, 3), (5, 3), (8, 8), (6, 4), (8, 2))):
        for gated, bias in ((False, True), (True, False), (True, True)):
            act = acts[(n + gated + 2 * bias) % 4]
            cfg = Config(dict(base, d_model=12, d_ff=7, ffn_gated=gated, bias=bias, activation=act, ffn=_moe(e, k)))
            loop = FormulaMoE(cfg, "loop").double()
            with torch.no_grad():
                for prm in loop.parameters():
                    prm.copy_(torch.randn(prm.shape, generator=gen, dtype=torch.float64) * 0.5)
            dense = FormulaMoE(cfg, "dense").double()
            dense.load_state_dict(loop.state_dict())
            h = torch.randn(9, 12, generator=gen, dtype=torch.float64)
            label = "moe block E=%d K=%d gated=%s bias=%s %s" % (e, k, gated, bias, act)
            want = _naive_moe(loop, h, gated, act, 7)
            with torch.no_grad():
                for form, m in (("loop", loop), ("dense", dense), ("(c)", _hf_moe_from(loop, cfg))):
                    check("%s: %s vs per-token float64" % (label, form), _max_diff(m(h[None])[0], want), 1e-12)
                if e >= 3:
                    for zero in ((0, e - 1), (0, 1, e - 1)):
                        for m in (loop, dense):
                            m.gate.weight[list(zero)] = 0.0
                        want = _naive_moe(loop, h, gated, act, 7)
                        for form, m in (("loop", loop), ("dense", dense)):
                            check("%s: gate rows %s zero (tied logits), %s vs per-token float64"
                                  % (label, zero, form), _max_diff(m(h[None])[0], want), 1e-12)
    # Every logit equal (a zero gate): experts 0..K-1, weights 1/K.
    for e, k in ((4, 2), (8, 3), (3, 1)):
        cfg = Config(dict(base, d_model=12, d_ff=7, ffn=_moe(e, k)))
        for form in MOE_FORMS:
            m = FormulaMoE(cfg, form).double()
            with torch.no_grad():
                for prm in m.parameters():
                    prm.copy_(torch.randn(prm.shape, generator=gen, dtype=torch.float64))
                m.gate.weight.zero_()
                h = torch.randn(1, 5, 12, generator=gen, dtype=torch.float64)
                want = sum(m.experts[i](h) for i in range(k)) / k
                check("moe zero gate E=%d K=%d (%s): the mean of experts 0..%d" % (e, k, form, k - 1),
                      _max_diff(m(h), want), 1e-12)
                if form == "loop":
                    m.mistake = "ties_high"
                    check_differs("moe zero gate E=%d K=%d: ties to the higher index" % (e, k),
                                  _max_diff(m(h), want))

    # Anchors to the dense FFN: one expert (E = K = 1) is the dense FFN with
    # its weights, against (a) (nn.Transformer's own layers); and E copies
    # of one expert, whatever the routing, too (the weights sum to 1).
    for arch in ("encoder", "decoder", "encoder_decoder"):
        dense_desc = dict(architecture=arch, d_model=32, num_heads=4, d_ff=40, max_seq_len=16, num_layers=2,
                          vocab_size=29, norm=("post", "pre")[arch == "decoder"], activation="gelu")
        for e, k in ((1, 1), (4, 2), (3, 3)):
            cfg = Config(dict(dense_desc, ffn=_moe(e, k)))
            w = make_weights(cfg, seed=1700 + e)
            for key in list(w):
                if ".moe.experts." in key:
                    prefix, rest = key.split(".moe.experts.", 1)
                    w[key] = w["%s.moe.experts.0.%s" % (prefix, rest.split(".", 1)[1])].clone()
            dense_w = {key.replace("moe.experts.0.", ""): v for key, v in w.items()
                       if ".moe.experts.0." in key or ".moe." not in key}
            ref = load_weights(build_torch_model(dense_desc), dense_w)
            inputs = _random_inputs(cfg, gen, 2, (7, 5))
            with torch.no_grad():
                want = ref(**inputs)
                for form in MOE_FORMS:
                    got = load_weights(build_formula_model(cfg, ffn_form=form), w)(**inputs)
                    check("moe %s E=%d K=%d of one expert's copies (%s) vs the dense FFN in (a)"
                          % (arch, e, k, form), _max_diff(got, want), scale=want.abs().max().item())
                got = load_weights(build_hf_model(cfg), w)(**inputs)
                check("moe %s E=%d K=%d of one expert's copies ((c)) vs the dense FFN in (a)" % (arch, e, k),
                      _max_diff(got, want), scale=want.abs().max().item())

    # Whole models: the loop against the dense form in fp32 (1e-5) and
    # float64 (1e-12), against the second form (c) (or (b) in the
    # attention kind's second form with the dense FFN), batched and not;
    # the routing matters (planted mistakes) where it can.
    for idx, desc in enumerate(_moe_variants()):
        cfg = Config(desc)
        shared = cfg.is_encdec and cfg.tokens and idx % 3 == 1
        label = "moe model %d %s%s" % (idx, _short(desc), " shared" if shared else "")
        w = make_weights(cfg, seed=1800 + idx, shared_embeddings=shared)
        if cfg.linformer:
            seqs2 = (11,)
        else:
            seqs2 = (9, 7) if cfg.is_encdec else (11,)
        for batch, seqs in ((2, seqs2), (0, (5, 3) if cfg.is_encdec else (13,))):
            inputs = {k: v.numpy() for k, v in _random_inputs(cfg, gen, batch, seqs).items()}
            _check_moe_model(check, check_differs, "%s batch=%d" % (label, batch), cfg, shared, w, inputs,
                             mistakes=batch == 2)

    # The cases, on their own weights and inputs.
    for name, desc, w, inputs, shared, gate in moe_cases:
        cfg = Config(desc)
        logits = _check_moe_model(check, check_differs, "moe case %s" % name, cfg, shared, w, inputs,
                                  mistakes=True, min_gap=True)
        if gate is not None:
            how, expert = gate
            picked = [bool((moe_choices(t, cfg.moe_top_k) == expert).any(-1).all()) for t in logits]
            never = [not bool((moe_choices(t, cfg.moe_top_k) == expert).any()) for t in logits]
            ok = all(picked) if how == "dominant" else all(never)
            check("moe case %s: expert %d %s in every layer (%d layers)"
                  % (name, expert, "chosen by every token" if how == "dominant" else "chosen by no token",
                     len(logits)), 0.0 if ok else 1.0, 0.5)


def _check_moe_model(check, check_differs, label, cfg, shared, w, inputs, mistakes=False, min_gap=False):
    """One MoE model on numpy `inputs`: (b)'s loop against its dense form
    (fp32 1e-5, float64 1e-12) and against the second form; its routing
    margin at least MOE_MIN_GAP (min_gap); each of MOE_MISTAKES that
    applies must move the output by more than 1e-3 (mistakes).  Returns the
    gate logits of every layer (float64)."""
    loop = load_weights(build_formula_model(cfg, shared), w)
    dense = load_weights(build_formula_model(cfg, shared, ffn_form="dense"), w)
    second = load_weights(build_torch_model(cfg, shared), w)
    loop64 = load_weights(build_formula_model(cfg, shared).double(), w)
    dense64 = load_weights(build_formula_model(cfg, shared, ffn_form="dense").double(), w)
    yl = run_model(loop, cfg, inputs)
    sc = yl.abs().max().item()
    check("%s: loop vs dense" % label, _max_diff(yl, run_model(dense, cfg, inputs)), scale=sc)
    check("%s: loop vs second form %s" % (label, cfg.second_form()), _max_diff(yl, run_model(second, cfg, inputs)),
          scale=sc)
    logits, y64 = moe_routing(loop64, lambda: run_model(loop64, cfg, inputs))
    # Each MoE layer's E and K (section 7's `layers`: each layer its own),
    # in the order of the logits (one forward: one call per layer).
    eks = [(m.num_experts, m.top_k) for m in moe_modules(loop64) if isinstance(m, FormulaMoE)]
    if len(eks) != len(logits):
        raise AssertionError("%s: %d MoE layers recorded %d routings" % (label, len(eks), len(logits)))
    check("%s: loop vs dense, float64" % label, _max_diff(y64, run_model(dense64, cfg, inputs)), 1e-12,
          scale=y64.abs().max().item())
    if min_gap:
        gap = min(routing_gap(t, k) for t, (_, k) in zip(logits, eks))
        n_used = [len(set(moe_choices(t, k).flatten().tolist())) for t, (_, k) in zip(logits, eks)]
        ok = gap >= MOE_MIN_GAP
        check("%s: routing margin %.3g (at least %g), experts used per layer %s"
              % (label, gap, MOE_MIN_GAP, n_used), 0.0 if ok else 1.0, 0.5)
    if mistakes:
        tied = any(bool((torch.sort(t, dim=-1).values.diff(dim=-1) == 0).any()) for t in logits)
        for mistake in MOE_MISTAKES:
            if not any(_moe_mistake_applies(mistake, e, k, tied) for e, k in eks):
                continue
            m = _with_moe_mistake(load_weights(build_formula_model(cfg, shared), w), mistake)
            check_differs("%s: %s" % (label, mistake), _max_diff(run_model(m, cfg, inputs), yl))
    return logits


# ---------------------------------------------------------------------------
# Section 7's `layers`: a decoder's per-layer kinds.
# ---------------------------------------------------------------------------

def _layer_entry(attention=None, ffn=None):
    from cases import layer  # the cases' own helper: one definition
    return layer(attention, ffn)


def _layers_variants():
    """Hybrid decoders for the self-test, each with its padding masks ({}
    for none; none with a performer or linformer layer): full, sliding
    window (with global tokens), block_sparse (with random blocks),
    performer and linformer (a decoder with causal false) layers, dense and
    MoE FFNs per layer, model-level kinds overridden, rope, grouped-query
    heads, the other section 11 keys."""
    base = dict(architecture="decoder", d_model=32, num_heads=4, d_ff=48, max_seq_len=16)
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu",
                 ffn_gated=True, bias=False, num_kv_heads=2)
    return [
        (dict(base, num_layers=3, vocab_size=29,
              layers=["attention", _layer_entry(_window(2, 1)), _layer_entry(ffn=_moe(4, 2))]), {"mask": "left"}),
        (dict(base, num_layers=3, positional="rope", norm="pre", attention=_window(3),
              layers=[_layer_entry({"kind": "full"}), "attention", _layer_entry(_block(2, 1, 1, 2))]),
         {"mask": "mixed"}),
        (dict(base, num_layers=3, vocab_size=29, ffn=_moe(4, 2), d_ff=22,
              layers=[_layer_entry(ffn={"kind": "dense"}), {"kind": "attention"}, _layer_entry(ffn=_moe(8, 1))],
              **llama), {"mask": "right"}),
        (dict(base, num_layers=4, vocab_size=29, positional="learned",
              layers=[_layer_entry(_performer(8)), _layer_entry(_window(2, 2), _moe(4, 2)),
                      _layer_entry(_block(2, 1, 1, 2)), "attention"]), {}),
        (dict(base, num_layers=3, causal=False, attention_score="scaled_dot",
              layers=[_layer_entry(_linformer(4)), "attention", _layer_entry(_performer(6), _moe(3, 3))]), {}),
        (dict(base, num_layers=3, vocab_size=29, attention=_block(3, 0, 1, 1),
              layers=["attention", _layer_entry(_block(2, 1, 0, 2)), _layer_entry(_window(1), _moe(5, 3))],
              **llama), {"mask": "holes"}),
    ]


def _layer_desc(desc, i):
    """The model-level description of layer i's own kinds: desc without
    `layers` (and `mamba`), its `attention` and `ffn` those of entry i
    where it gives them (the model-level model whose layer i is the
    hybrid's layer i); for a mamba layer, desc with every layer mamba (a
    pure mamba stack of the same sizes)."""
    entry = desc["layers"][i]
    if _mamba_entry(entry):
        return dict(desc, layers=["mamba"] * len(desc["layers"]))
    out = {k: v for k, v in desc.items() if k not in ("layers", "mamba")}
    if isinstance(entry, dict):
        for key in ("attention", "ffn"):
            if key in entry:
                out[key] = entry[key]
    return out


def _compose_layers(desc, weights, inputs, swap=None):
    """A `layers` decoder computed layer by layer, layer i by layer i of
    the model-level model of its own kinds (_layer_desc), loaded with the
    hybrid's weights for that layer (and its own drawn ones elsewhere):
    float64, inputs batched (torch).  The listing of each layer i must be
    that model's layer i (else AssertionError).  swap (negative control):
    {i: j}, layer i computed as layer i of layer j's model-level model."""
    cfg = Config(desc)
    pre = "layers.%d."
    models = []
    for i in range(cfg.num_layers):
        ci = Config(_layer_desc(desc, (swap or {}).get(i, i)))
        w = make_weights(ci, seed=7)
        mine = {k for k in expected_weights(cfg) if k.startswith(pre % i)}
        theirs = {k for k in expected_weights(ci) if k.startswith(pre % i)}
        if not swap and (mine != theirs or any(expected_weights(cfg)[k] != expected_weights(ci)[k] for k in mine)):
            raise AssertionError("layer %d's listing is not the model-level listing of its kinds: %s"
                                 % (i, sorted(mine ^ theirs)))
        for k, shape in expected_weights(ci).items():
            if (k in weights and tuple(weights[k].shape) == tuple(shape)
                    and (not k.startswith("layers.") or k.startswith(pre % i))):
                w[k] = weights[k]
        models.append(load_weights(build_formula_model(ci).double(), w))
    m0 = models[0]
    data, real = padding_masks(cfg, inputs)
    with torch.no_grad():
        x = m0._embed(data["input"] if cfg.tokens else data["input"].double(), "input")
        rope = m0._rope(x.shape[1])
        for i, m in enumerate(models):
            x = m.layers[i](x, causal=cfg.causal, rope=rope, key_mask=real.get("input"))
        if m0.norm is not None:
            x = m0.norm(x)
        return m0._head(x)


def _layers_self_test(check, check_differs, gen, layers_cases=()):
    """Section 15 of the self-test: section 7's `layers`.  layers_cases:
    (name, description, weights, numpy inputs) of cases.py's and
    generate_cases.py's `layers` cases, on the weights their harnesses
    write."""
    base = dict(architecture="decoder", d_model=16, num_heads=2, d_ff=8, num_layers=2, max_seq_len=8)
    # The key: good values parse to each layer's kinds, bad ones are refused
    # naming the problem.
    e = _layer_entry
    good = [
        (["attention", "attention"], {}, [("full", "dense"), ("full", "dense")]),
        ([e(_window(2, 1)), "attention"], {}, [("sliding_window", "dense"), ("full", "dense")]),
        ([e(ffn=_moe(4, 2)), {"kind": "attention"}], dict(attention=_performer(4)),
         [("performer", "moe"), ("performer", "dense")]),
        ([e({"kind": "full"}, {"kind": "dense"}), "attention"], dict(attention=_block(2), ffn=_moe(3, 1)),
         [("full", "dense"), ("block_sparse", "moe")]),
        ([e(_linformer(3)), e()], dict(causal=False), [("linformer", "dense"), ("full", "dense")]),
        (["mamba", e(ffn=_moe(4, 2))], dict(attention=_window(1)), [(None, None), ("sliding_window", "moe")]),
        ([{"kind": "mamba"}, "attention"], dict(ffn=_moe(3, 1), mamba=dict(d_state=4)),
         [(None, None), ("full", "moe")]),
    ]
    parsed = 0
    for layers, extra, want in good:
        cfg = Config(dict(base, layers=layers, **extra))
        parsed += [(lc.attention_kind, lc.ffn_kind) for lc in cfg.layer_configs()] == want
    w2 = _window(2)
    bad = [
        (dict(base, architecture="encoder", layers=["attention"] * 2), "applies to architecture 'decoder' only"),
        (dict(base, architecture="encoder_decoder", layers=["attention"] * 2), "not 'encoder_decoder'"),
        (dict(base, layers="attention"), "'layers' must be a list"), (dict(base, layers={}), "'layers' must be a list"),
        (dict(base, layers=["attention"]), "'layers' has 1 entry, but 'num_layers' is 2"),
        (dict(base, layers=["attention"] * 3), "'layers' has 3 entries"),
        (dict(base, layers=["attention", 5]), "'layers[1]' must be \"attention\", \"mamba\" or an object"),
        (dict(base, layers=["attention", None]), "'layers[1]' must be"),
        (dict(base, layers=["full", "attention"]), "'layers[0]' kind must be one of attention, mamba"),
        (dict(base, layers=["mamba", "attention"], mamba=5), "'mamba' must be an object"),
        (dict(base, layers=["attention", "attention"], mamba={}), "'mamba' sizes the mixers of mamba layers, but no 'layers' entry is \"mamba\""),
        (dict(base, layers=[{"attention": w2}, "attention"]), "'layers[0]' needs a 'kind'"),
        (dict(base, layers=[{"kind": 1}, "attention"]), "'layers[0]' kind must be"),
        (dict(base, layers=[{"kind": "attention", "norm": "pre"}, "attention"]), "unknown key 'norm' in 'layers[0]'"),
        (dict(base, layers=[{"kind": "mamba", "ffn": {"kind": "dense"}}, "attention"]),
         "'ffn' is a key of layers[0] kind 'attention', not of 'mamba'"),
        (dict(base, layers=[e("performer"), "attention"]), "layers[0]: 'attention' must be an object"),
        (dict(base, layers=[e({"kind": "block_sparse"}), "attention"]), 'needs "block"'),
        (dict(base, layers=[e({"kind": "sliding_window", "window": 2, "block": 2}), "attention"]),
         "a key of kind 'block_sparse'"),
        (dict(base, layers=[e(ffn={"kind": "moe", "experts": 2, "top_k": 3}), "attention"]),
         "'top_k' 3 is more than 'experts' 2"),
        (dict(base, layers=[e(ffn="moe"), "attention"]), "layers[0]: 'ffn' must be an object"),
        (dict(base, layers=["attention", e(_linformer(2))]), "layers[1]: attention kind 'linformer' is never causal"),
        (dict(base, layers=["attention", e(_performer(2))], attention_score="dot"), "'performer' takes"),
        (dict(base, layers=["attention", e(_linformer(2))], causal=False, attention_score="bilinear"),
         "'linformer' takes"),
    ]
    refused = 0
    for desc, needle in bad:
        try:
            Config(desc)
            print("FAIL layers key accepted:", desc.get("layers"), "(wanted %r)" % needle)
        except ConfigError as err:
            refused += needle in str(err)
            if needle not in str(err):
                print("FAIL layers key refused, but not naming %r: %s" % (needle, err))
    check("layers key: %d of %d good values parse to their layers' kinds, %d of %d bad ones refused naming the "
          "problem" % (parsed, len(good), refused, len(bad)), float(len(good) - parsed + len(bad) - refused), 0.5)
    dups = [('{"a": 1, "a": 2}', "duplicate key 'a'"),
            ('{"layers": [{"kind": "attention", "ffn": {}, "ffn": {}}]}', "duplicate key 'ffn' in 'layers[0]'"),
            ('{"layers": ["attention", {"kind": "attention", "ffn": {"kind": "moe", "kind": "dense"}}]}',
             "duplicate key 'kind' in 'layers[1].ffn'"),
            ('{"attention": {"kind": "full"}, "layers": ["attention"]}', None)]
    check("find_duplicate_key: %d cases" % len(dups),
          float(sum(find_duplicate_key(t) != want for t, want in dups)), 0.5)

    # "attention" entries, and the model-level kinds given again in every
    # entry, are the model without `layers`: the listing, the second form,
    # the outputs (bit for bit, the same weights); and with the same own
    # kinds in every layer, the model-level model of those kinds.
    descs = [dict(base, num_layers=3, d_ff=20, vocab_size=29, d_model=32, num_heads=4, max_seq_len=16, **kw)
             for kw in (dict(), dict(attention=_window(2, 1), positional="rope"), dict(ffn=_moe(4, 2)),
                        dict(attention=_block(2, 1, 1, 2)), dict(attention=_performer(8), norm="pre"),
                        dict(attention=_window(3), ffn=_moe(3, 2), num_kv_heads=2))]
    for idx, desc in enumerate(descs):
        for how in ("attention strings", "kinds repeated", "own kinds, model-level full"):
            if how == "attention strings":
                layered, same = dict(desc, layers=["attention"] * 3), desc
            elif how == "kinds repeated":
                layered = dict(desc, layers=[e(desc.get("attention"), desc.get("ffn"))] * 3)
                same = desc
            else:
                if "attention" not in desc and "ffn" not in desc:
                    continue
                plain = {k: v for k, v in desc.items() if k not in ("attention", "ffn")}
                layered, same = dict(plain, layers=[e(desc.get("attention"), desc.get("ffn"))] * 3), desc
            cl, cs = Config(layered), Config(same)
            w = make_weights(cs, seed=1900 + idx)
            inputs = _random_inputs(cs, gen, 2, (13,))
            ok = (expected_weights(cl) == expected_weights(cs) and cl.second_form() == cs.second_form()
                  and cl.torch_supported() == cs.torch_supported() and cl.uniform() is not None)
            check("layers %s (model %d %s): the listing, second form %s" % (how, idx, _short(same), cs.second_form()),
                  0.0 if ok else 1.0, 0.5)
            with torch.no_grad():
                yl = load_weights(build_formula_model(cl), w)(**inputs)
                ys = load_weights(build_formula_model(cs), w)(**inputs)
                check("layers %s (model %d): (b) the same as without layers" % (how, idx), _max_diff(yl, ys), 1e-300)
                t = build_torch_model(cl)
                if t is not None:
                    check("layers %s (model %d): its second form %s against (b)" % (how, idx, cl.second_form()),
                          _max_diff(load_weights(t, w)(**inputs), ys), scale=ys.abs().max().item())

    # Hybrid stacks: the listing is each layer's model-level listing; (b)
    # is each layer i computed as layer i of the model-level model of its
    # own kinds (float64); the second form agrees; the defined rows of a
    # mask are those every layer's own rule defines; the mask is refused
    # with one performer or linformer layer; each layer's own kind matters
    # (planted: a layer computed with another layer's kinds, or its rule
    # dropped, or its experts ignored).
    items = []
    for idx, (desc, pats) in enumerate(_layers_variants()):
        cfg = Config(desc)
        w = make_weights(cfg, seed=2000 + idx)
        for batch in (2, 0):
            inputs = _random_inputs(cfg, gen, batch, (13,))
            if pats and batch:
                inputs["mask"] = _mask_rows(pats["mask"], batch, 13)
            items.append(("layers model %d %s batch=%d%s" % (idx, _short(desc), batch,
                                                            " mask=" + pats["mask"] if pats and batch else ""),
                          desc, w, inputs))
    for name, desc, w, inputs in layers_cases:
        items.append(("layers case %s" % name, desc, w, to_torch_inputs(Config(desc), inputs)))
    for label, desc, w, inputs in items:
        cfg = Config(desc)
        w = {k: torch.as_tensor(np.asarray(v)) for k, v in w.items()}
        batched = inputs["input"].dim() == (2 if cfg.tokens else 3)
        bin_ = inputs if batched else {k: v.unsqueeze(0) for k, v in inputs.items()}
        with torch.no_grad():
            y = load_weights(build_formula_model(cfg), w)(**inputs)
            y64 = load_weights(build_formula_model(cfg).double(), w)(**inputs)
            second = load_weights(build_torch_model(cfg, masked="mask" in inputs), w)
            y2 = second(**inputs)
        sc = y.abs().max().item()
        rows = None
        if "mask" in inputs:
            rows = torch.from_numpy(attended_rows(cfg, inputs, output_stack_patterns(cfg, w)))
            want = torch.ones_like(rows)
            for i in range(cfg.num_layers):
                ci = Config(_layer_desc(desc, i))
                want &= torch.from_numpy(attended_rows(ci, inputs, [w.get("layers.%d.self_attn.block_pattern" % i)]
                                                       * ci.num_layers))
            check("%s: defined rows (%d of %d) the AND of each layer's own rule's" % (
                label, int(rows.sum()), rows.numel()), 0.0 if torch.equal(rows, want) else 1.0, 0.5)
        keep = (lambda t: t[rows]) if rows is not None else (lambda t: t)
        composed = _compose_layers(desc, w, bin_)
        composed = composed if batched else composed[0]
        check("%s: (b) float64 vs each layer as its kinds' model-level layer" % label,
              _max_diff(keep(y64), keep(composed)), 1e-12, scale=sc)
        check("%s: (b) vs second form %s" % (label, cfg.second_form()), _max_diff(keep(y), keep(y2)), scale=sc)
        refuses = bool(set(cfg.attention_kinds) & {"linformer", "performer"})
        probe = {"input": bin_["input"], "mask": torch.ones(bin_["input"].shape[:2], dtype=torch.bool)}
        check("%s: a mask %s" % (label, "refused (a performer or linformer layer)" if refuses else "accepted"),
              0.0 if bool(mask_problems(cfg, probe)) == refuses else 1.0, 0.5)
        # Each layer's own kind matters.
        for i, lc in enumerate(cfg.layer_configs()):
            if lc.attention_kind != "full":
                m = load_weights(build_formula_model(cfg).double(), w)
                attn = m.layers[i].self_attn
                attn.window = attn.block = attn.performer_m = attn.linformer_k = None
                with torch.no_grad():
                    ym = m(**inputs)
                check_differs("%s: layer %d's %s computed as full attention" % (label, i, lc.attention_kind),
                              _max_diff(keep(ym), keep(y64)))
            if lc.moe:
                m = load_weights(build_formula_model(cfg).double(), w)
                m.layers[i].moe.mistake = "expert0"
                with torch.no_grad():
                    ym = m(**inputs)
                check_differs("%s: layer %d's experts ignored (expert 0 alone)" % (label, i),
                              _max_diff(keep(ym), keep(y64)))
        # A layer computed with another layer's kinds where the weights
        # allow it (the same listing: full, windows, block_sparse without
        # random blocks, or the other dense / MoE FFN of the same E).
        for i in range(cfg.num_layers):
            for j in range(cfg.num_layers):
                ci, cj = Config(_layer_desc(desc, i)), Config(_layer_desc(desc, j))
                li = {k[len("layers.0."):]: v for k, v in expected_weights(ci).items() if k.startswith("layers.0.")}
                lj = {k[len("layers.0."):]: v for k, v in expected_weights(cj).items() if k.startswith("layers.0.")}
                if i == j or li != lj or _layer_desc(desc, i) == _layer_desc(desc, j):
                    continue
                swapped = _compose_layers(desc, w, bin_, swap={i: j})
                swapped = swapped if batched else swapped[0]
                check_differs("%s: layer %d computed with layer %d's kinds" % (label, i, j),
                              _max_diff(keep(swapped), keep(y64)))
                break


# ---------------------------------------------------------------------------
# Section 7's mamba layers (pure and hybrid stacks).
# ---------------------------------------------------------------------------

# What a case must show (the self-test, on the cases' own weights and
# inputs): the scan (MAMBA_MISTAKES' "no_ssm": y = D u alone) moves the
# output of a case of 2 tokens or more by more than this many tolerances
# (contract section 6's 1e-4 (1 + max|ref|)); and each mistake of
# MAMBA_MISTAKES and MAMBA_LAYER_MISTAKES by that much in some case.
MAMBA_SHOWN = 5.0
# ... and a case of one token by more than this many: its scan is one step,
# C . (delta B u) with delta of 1e-3 to 1e-1 (4.3 and 4.5 tol in the seq 1
# cases).
MAMBA_SHOWN_ONE_STEP = 3.0


def _mamba_variants():
    """Models with mamba layers for the self-test: pure stacks (num_heads
    and d_ff left out, or given and unused) of every d_state, d_conv 1 to
    4, expand 1 to 3, dt_rank explicit and "auto"; token ids and float
    inputs, an LM head tied and untied or none, pre and post norm (a mamba
    layer is pre-norm either way), rms_norm, every positional kind (rope
    has nothing to rotate in a pure stack); hybrids with full, sliding
    window, performer and block_sparse attention layers and dense and MoE
    FFNs, llama-like keys."""
    pure = dict(architecture="decoder", d_model=16, max_seq_len=24)
    llama = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu", ffn_gated=True,
                 bias=False)
    return [
        dict(pure, num_layers=2, vocab_size=29, layers=["mamba", "mamba"]),
        dict(pure, num_layers=3, layers=["mamba", {"kind": "mamba"}, "mamba"], norm="pre",
             mamba=dict(d_state=4, d_conv=2, expand=1, dt_rank=3)),
        dict(pure, num_layers=2, vocab_size=29, norm="pre", norm_type="rms_norm", positional="none",
             tie_embeddings=False, layers=["mamba"] * 2, mamba=dict(d_state=8, d_conv=3)),
        dict(pure, d_model=24, num_heads=4, d_ff=40, num_layers=1, vocab_size=29, positional="learned",
             lm_head=False, layers=["mamba"], mamba=dict(d_state=5, d_conv=1, expand=3, dt_rank="auto")),
        dict(pure, d_model=20, num_layers=2, vocab_size=29, positional="rope", norm="pre", final_norm=False,
             layers=["mamba"] * 2, mamba=dict(d_conv=4, dt_rank=1)),
        dict(pure, d_model=32, num_heads=4, d_ff=40, num_layers=3, vocab_size=29, norm="pre",
             layers=["mamba", "attention", dict(kind="attention", ffn=_moe(4, 2))], mamba=dict(d_state=8)),
        dict(pure, d_model=32, num_heads=4, d_ff=40, num_layers=4, vocab_size=29, positional="rope",
             layers=[dict(kind="attention", attention=_window(2, 1)), "mamba",
                     dict(kind="attention", attention=_performer(8)), "mamba"]),
        dict(pure, d_model=32, num_heads=4, d_ff=22, num_layers=3, vocab_size=29, num_kv_heads=2,
             layers=[{"kind": "mamba"}, dict(kind="attention", attention=_block(2, 1, 1, 2), ffn=_moe(3, 3)),
                     "mamba"], mamba=dict(d_state=4, expand=1, d_conv=3), **llama),
    ]


def _naive_mamba_mixer(mixer, x):
    """A mamba mixer on x [S, d_model] (float64) by per-element Python
    loops, from the contract's words: a third formulation of
    FormulaMambaMixer for tiny sizes.  Returns [S, d_model]."""
    di, n, c, r = mixer.d_inner, mixer.d_state, mixer.d_conv, mixer.dt_rank
    s, d = x.shape
    W = mixer.in_proj.weight.tolist()
    cw, cb = mixer.conv1d.weight.tolist(), mixer.conv1d.bias.tolist()
    xw, dw, db = mixer.x_proj.weight.tolist(), mixer.dt_proj.weight.tolist(), mixer.dt_proj.bias.tolist()
    alog, dd, ow = mixer.A_log.tolist(), mixer.D.tolist(), mixer.out_proj.weight.tolist()
    xs = x.tolist()

    def silu(v):
        return v / (1.0 + math.exp(-v))
    u = [[sum(W[ch][k] * xs[t][k] for k in range(d)) for ch in range(di)] for t in range(s)]
    z = [[sum(W[di + ch][k] * xs[t][k] for k in range(d)) for ch in range(di)] for t in range(s)]
    uc = [[silu(cb[ch] + sum(cw[ch][0][k] * u[t - (c - 1) + k][ch] for k in range(c) if t - (c - 1) + k >= 0))
           for ch in range(di)] for t in range(s)]
    h = [[0.0] * n for _ in range(di)]
    out = []
    for t in range(s):
        p = [sum(xw[j][ch] * uc[t][ch] for ch in range(di)) for j in range(r + 2 * n)]
        dt, bb, cc = p[:r], p[r:r + n], p[r + n:]
        y = []
        for ch in range(di):
            pre = db[ch] + sum(dw[ch][j] * dt[j] for j in range(r))
            delta = math.log1p(math.exp(pre)) if pre < 30 else pre
            acc = 0.0
            for k in range(n):
                h[ch][k] = math.exp(delta * -math.exp(alog[ch][k])) * h[ch][k] + delta * bb[k] * uc[t][ch]
                acc += cc[k] * h[ch][k]
            y.append((acc + dd[ch] * uc[t][ch]) * silu(z[t][ch]))
        out.append([sum(ow[o][ch] * y[ch] for ch in range(di)) for o in range(d)])
    return torch.tensor(out, dtype=torch.float64)


def _with_mamba_mistake(model, mistake):
    """model ((b)) with `mistake` planted in every mamba layer (a mixer's,
    MAMBA_MISTAKES, or the layer's, MAMBA_LAYER_MISTAKES)."""
    for layer in model.modules():
        if isinstance(layer, FormulaMambaLayer):
            if mistake in MAMBA_LAYER_MISTAKES:
                layer.mistake = mistake
            else:
                layer.mixer.mistake = mistake
    return model


def _mamba_mistake_shows(mistake, seq, d_conv):
    """Whether `mistake` can change the output of a sequence of `seq`
    tokens with kernels of d_conv: with one token h_0 = delta B u (C . h_0
    symmetric in B and C; no earlier state to carry or decay); a kernel of
    1 is its own reverse, and centred."""
    if seq == 1 and mistake in ("b_c_swapped", "a_no_exp", "h_not_carried"):
        return False
    return d_conv > 1 or mistake not in ("conv_flipped", "conv_centred")


def _mamba_self_test(check, check_differs, gen, mamba_cases=()):
    """Section 16 of the self-test: section 7's mamba layers.  mamba_cases:
    (name, description, weights, numpy inputs) of cases.py's and
    generate_cases.py's models with a mamba layer, on the weights their
    harnesses write (a --generate case: its prompt and greedy ids)."""
    def passes(what, ok):
        check(what, 0.0 if ok else 1.0, 0.5)

    # The key.  Good values: each parses to its sizes (dt_rank "auto":
    # ceil(d_model / 16)); bad ones are refused naming the problem.
    base = dict(architecture="decoder", d_model=16, num_layers=2, max_seq_len=8)
    two = ["mamba", "mamba"]
    good = [
        (dict(base, layers=two), (16, 4, 2, 1, 32)),
        (dict(base, layers=["mamba", {"kind": "mamba"}], mamba={}), (16, 4, 2, 1, 32)),
        (dict(base, d_model=17, layers=two), (16, 4, 2, 2, 34)),
        (dict(base, d_model=32, layers=two, mamba=dict(dt_rank="auto")), (16, 4, 2, 2, 64)),
        (dict(base, d_model=33, layers=two), (16, 4, 2, 3, 66)),
        (dict(base, d_model=48, num_heads=4, d_ff=8, layers=two), (16, 4, 2, 3, 96)),
        (dict(base, layers=two, mamba=dict(d_state=4, d_conv=2, expand=1, dt_rank=5)), (4, 2, 1, 5, 16)),
        (dict(base, layers=two, mamba=dict(d_conv=1, expand=3)), (16, 1, 3, 1, 48)),
        (dict(base, num_heads=2, d_ff=8, layers=["mamba", "attention"], mamba=dict(d_state=8)), (8, 4, 2, 1, 32)),
    ]
    parsed = 0
    for desc, want in good:
        try:
            cfg = Config(desc)
            got = (cfg.mamba_d_state, cfg.mamba_d_conv, cfg.mamba_expand, cfg.mamba_dt_rank, cfg.d_inner)
            parsed += got == want
            if got != want:
                print("FAIL mamba key %s parsed to %s, wanted %s" % (desc.get("mamba"), got, want))
        except ConfigError as err:
            print("FAIL mamba key refused: %s: %s" % (desc, err))
    hyb = dict(base, num_heads=2, d_ff=8)
    bad = [
        (dict(base, layers=two, mamba=5), "'mamba' must be an object"),
        (dict(base, layers=two, mamba=["d_state", 4]), "'mamba' must be an object"),
        (dict(base, layers=two, mamba=dict(d_inner=32)), "unknown key 'd_inner' in 'mamba'"),
        (dict(base, layers=two, mamba=dict(d_state=0)),
         "'mamba' 'd_state' (the scan's state size per channel) must be an integer from 1 to 16777216, got 0"),
        (dict(base, layers=two, mamba=dict(d_state=-1)), "'mamba' 'd_state' ("),
        (dict(base, layers=two, mamba=dict(d_state=2.5)), "'mamba' 'd_state' ("),
        (dict(base, layers=two, mamba=dict(d_state="8")), "'mamba' 'd_state' ("),
        (dict(base, layers=two, mamba=dict(d_state=True)), "'mamba' 'd_state' ("),
        (dict(base, layers=two, mamba=dict(d_state=MAX_COUNT + 1)), "'mamba' 'd_state' ("),
        (dict(base, layers=two, mamba=dict(d_conv=0)), "'mamba' 'd_conv' (the causal conv's kernel width) must be"),
        (dict(base, layers=two, mamba=dict(expand=0)), "'mamba' 'expand' (d_inner = expand x d_model) must be"),
        (dict(base, layers=two, mamba=dict(expand=1.5)), "'mamba' 'expand' (d_inner = expand x d_model) must be"),
        (dict(base, layers=two, mamba=dict(dt_rank=0)),
         "'mamba' 'dt_rank' (the rank of the step-size projection) must be an integer from 1 to 16777216, got 0"),
        (dict(base, layers=two, mamba=dict(dt_rank=True)), "'mamba' 'dt_rank' must be a positive integer or \"auto\""),
        (dict(base, layers=two, mamba=dict(expand=MAX_COUNT)),
         "'mamba' d_inner = expand 16777216 x d_model 16 is above the supported maximum 16777216"),
        (dict(base, layers=two, mamba=dict(dt_rank="Auto")), "'mamba' 'dt_rank' must be a positive integer or \"auto\""),
        (dict(base, layers=two, mamba=dict(dt_rank=1.5)), "'mamba' 'dt_rank' must be a positive integer or \"auto\""),
        (dict(base, layers=two, mamba=dict(dt_rank=None)), "'mamba' 'dt_rank' must be a positive integer or \"auto\""),
        (dict(hyb, mamba={}), "'mamba' sizes the mixers of mamba layers, but no 'layers' entry is \"mamba\""),
        (dict(hyb, layers=["attention"] * 2, mamba=dict(d_state=4)), "'mamba' sizes the mixers of mamba layers"),
        (dict(hyb, architecture="encoder", mamba={}), "'mamba' sizes the mixers of mamba layers, but no 'layers' entry is \"mamba\""),
        (dict(hyb, architecture="encoder", layers=two), "'layers' applies to architecture 'decoder' only"),
        (dict(hyb, architecture="encoder_decoder", layers=two), "'layers' applies to architecture 'decoder'"),
        (dict(base, layers=[{"kind": "mamba", "d_state": 4}, "mamba"]), "unknown key 'd_state' in 'layers[0]'"),
        (dict(base, layers=["mamba", {"kind": "mamba", "attention": {"kind": "full"}}]),
         "'attention' is a key of layers[1] kind 'attention', not of 'mamba'"),
        (dict(hyb, layers=["mamba", "Mamba"]), "'layers[1]' kind must be one of attention, mamba"),
        (dict(base, d_ff=8, layers=["mamba", "attention"]), "missing required key 'num_heads'"),
        (dict(base, num_heads=2, layers=["attention", "mamba"]), "missing required key 'd_ff'"),
        (dict(base, layers=["mamba"]), "'layers' has 1 entry, but 'num_layers' is 2"),
        (dict(base, num_heads=5, layers=two), "not a multiple of num_heads 5"),
        (dict(base, num_heads=0, layers=two), "'num_heads' must be a positive integer"),
        (dict(base, d_ff=0, layers=two), "'d_ff' must be a positive integer"),
    ]
    refused = 0
    for desc, needle in bad:
        try:
            Config(desc)
            print("FAIL mamba description accepted: %s (wanted %r)" % (desc, needle))
        except ConfigError as err:
            refused += needle in str(err)
            if needle not in str(err):
                print("FAIL mamba description refused, but not naming %r: %s" % (needle, err))
    check("mamba key: %d of %d good values parse to their sizes, %d of %d bad descriptions refused naming the "
          "problem" % (parsed, len(good), refused, len(bad)), float(len(good) - parsed + len(bad) - refused), 0.5)
    cfg = Config(dict(base, layers=two))
    passes("a stack of mamba layers only: num_heads and d_ff absent (None), no rope table, second form mamba",
           cfg.num_heads is None and cfg.d_ff is None and cfg.only_mamba and cfg.second_form() == "mamba"
           and not cfg.torch_supported() and build_formula_model(dict(base, layers=two, positional="rope"))._rope(5)
           is None)
    cfg = Config(dict(hyb, layers=["mamba", "attention"]))
    views = cfg.layer_configs()
    passes("a hybrid's layer views: mamba (no attention, no FFN kind) and attention (the model-level kinds)",
           cfg.layer_kinds == ("mamba", "attention") and views[0].layer_kind == "mamba"
           and views[0].attention_kind is None and views[0].ffn_kind is None and views[0].mamba
           and views[1].attention_kind == "full" and not views[1].mamba and cfg.attention_kinds == ("full",))

    # The convolution's three forms: the explicit taps (scan form),
    # F.conv1d (closed form) and a per-element loop, kernels 1 to 5, with
    # sequences shorter and longer than the kernel.
    for c in (1, 2, 3, 4, 5):
        for s in (1, 3, 9):
            cfg = Config(dict(base, layers=two, mamba=dict(d_conv=c, expand=1)))
            mixers = [FormulaMambaMixer(cfg, f).double() for f in MAMBA_FORMS]
            with torch.no_grad():
                for p in mixers[0].parameters():
                    p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
                mixers[1].load_state_dict(mixers[0].state_dict())
                u = torch.randn(2, s, 16, generator=gen, dtype=torch.float64)
                w, b = mixers[0].conv1d.weight, mixers[0].conv1d.bias
                want = torch.zeros(2, s, 16, dtype=torch.float64)
                for bb, t, ch in itertools.product(range(2), range(s), range(16)):
                    want[bb, t, ch] = b[ch] + sum(w[ch, 0, k] * u[bb, t - (c - 1) + k, ch]
                                                  for k in range(c) if t - (c - 1) + k >= 0)
                for form, m in zip(MAMBA_FORMS, mixers):
                    check("mamba conv d_conv=%d seq=%d: %s form vs per-element loop" % (c, s, form),
                          _max_diff(m.conv(u), want), 1e-12)

    # The whole mixer: scan and closed forms against the per-element loop
    # (float64, tiny sizes), against each other on random values.
    for n, (dm, nst, c, x, r, s) in enumerate(((3, 3, 3, 2, 2, 6), (4, 2, 1, 1, 1, 4), (5, 4, 4, 1, 3, 7),
                                                (2, 1, 2, 3, 1, 5))):
        cfg = Config(dict(base, d_model=dm, layers=two, mamba=dict(d_state=nst, d_conv=c, expand=x, dt_rank=r)))
        mixers = [FormulaMambaMixer(cfg, f).double() for f in MAMBA_FORMS]
        with torch.no_grad():
            for p in mixers[0].parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.7)
            mixers[0].A_log.copy_(torch.randn(mixers[0].A_log.shape, generator=gen, dtype=torch.float64) * 0.5)
            mixers[1].load_state_dict(mixers[0].state_dict())
            xin = torch.randn(s, dm, generator=gen, dtype=torch.float64)
            want = _naive_mamba_mixer(mixers[0], xin)
            for form, m in zip(MAMBA_FORMS, mixers):
                check("mamba mixer %d (d_model %d, N %d, C %d, expand %d, R %d, seq %d): %s form vs per-element "
                      "loop" % (n, dm, nst, c, x, r, s, form), _max_diff(m(xin[None])[0], want), 1e-12)
    # The closed form's blocks of 16 output steps: sequences past them.
    cfg = Config(dict(base, layers=two, mamba=dict(d_state=3, expand=1)))
    mixers = [FormulaMambaMixer(cfg, f).double() for f in MAMBA_FORMS]
    with torch.no_grad():
        for p in mixers[0].parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.3)
        mixers[1].load_state_dict(mixers[0].state_dict())
        xin = torch.randn(2, 37, 16, generator=gen, dtype=torch.float64)
        check("mamba mixer seq 37 (three blocks of the closed form): scan vs closed", _max_diff(
            mixers[0](xin), mixers[1](xin)), 1e-12)

    # Whole models: the listing, (b) against its second form (fp32 and
    # float64), batched and not, causal (later tokens change no earlier
    # row), the hybrids layer by layer against the model-level layers of
    # their kinds, masks refused, planted mistakes.
    for idx, desc in enumerate(_mamba_variants()):
        cfg = Config(desc)
        label = "mamba model %d %s layers=%s" % (idx, _short(desc), ",".join(
            k if k == "mamba" else lc.attention_kind for k, lc in zip(cfg.layer_kinds, cfg.layer_configs())))
        w = make_weights(cfg, seed=2100 + idx)
        fm = build_formula_model(cfg)
        names = {k: tuple(v.shape) for k, v in fm.state_dict().items()}
        second = build_torch_model(cfg)
        snames = {k: tuple(v.shape) for k, v in second.state_dict().items()}
        exp = expected_weights(cfg)
        passes("%s: (b)'s and the second form's names are the contract's listing" % label,
               names == exp and snames == exp)
        load_weights(fm, w)
        load_weights(second, w)
        fm64 = load_weights(build_formula_model(cfg).double(), w)
        second64 = load_weights(build_torch_model(cfg).double(), w)
        for batch, s in ((2, 13), (0, 9), (3, 1)):
            inputs = _random_inputs(cfg, gen, batch, (s,))
            in64 = {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}
            with torch.no_grad():
                y, y2 = fm(**inputs), second(**inputs)
                y64, y264 = fm64(**in64), second64(**in64)
            sc = y.abs().max().item()
            check("%s batch=%d seq=%d: (b) vs second form mamba" % (label, batch, s), _max_diff(y, y2), scale=sc)
            check("%s batch=%d seq=%d: (b) vs second form, float64" % (label, batch, s), _max_diff(y64, y264), 1e-12,
                  scale=sc)
            check("%s batch=%d seq=%d: fp32 vs float64" % (label, batch, s), _max_diff(y, y64), scale=sc)
            if batch == 2:
                one = {k: v[1:2] for k, v in inputs.items()}
                unb = {k: v[1] for k, v in inputs.items()}
                with torch.no_grad():
                    check("%s: batch row 1 alone, and unbatched, as in the batch" % label,
                          max(_max_diff(fm(**one)[0], y[1]), _max_diff(fm(**unb), y[1])), scale=sc)
                    later = {k: v.clone() for k, v in inputs.items()}
                    if cfg.tokens:
                        later["input"][:, 7:] = (later["input"][:, 7:] + 1) % cfg.vocab_size
                    else:   # (not a constant: a layer norm would take it out)
                        later["input"][:, 7:] += torch.randn(later["input"][:, 7:].shape, generator=gen)
                    yl = fm(**later)
                check("%s: causal (tokens 7.. changed: rows 0..6 the same)" % label,
                      _max_diff(yl[:, :7], y[:, :7]), 1e-300)
                check_differs("%s: tokens 7.. changed change rows 7.." % label, _max_diff(yl[:, 7:], y[:, 7:]))
                # A prefix's forward is the first rows of the whole one (what
                # --generate's steps rely on).
                with torch.no_grad():
                    pre = fm64(**{k: v[:, :5] for k, v in in64.items()})
                check("%s: a forward over the first 5 tokens is rows 0..4 of the whole" % label,
                      _max_diff(pre, y64[:, :5]), 1e-12, scale=sc)
                probe = {"input": inputs["input"], "mask": torch.ones(inputs["input"].shape[:2], dtype=torch.bool)}
                problems = mask_problems(cfg, probe)
                passes("%s: a mask input refused (%s)" % (label, problems[0][1] if problems else "accepted"),
                       bool(problems) and problems[0][0] == "mask" and "refuses a mask" in problems[0][1])
                # Hybrids (and pure stacks): each layer as layer i of the
                # model-level model of its own kinds (a pure mamba stack for
                # a mamba layer).
                with torch.no_grad():
                    composed = _compose_layers(desc, w, in64)
                check("%s: (b) float64 vs each layer as its kinds' model-level layer" % label,
                      _max_diff(y64, composed), 1e-12, scale=sc)
                for mistake in MAMBA_MISTAKES + MAMBA_LAYER_MISTAKES:
                    if not _mamba_mistake_shows(mistake, 13, cfg.mamba_d_conv):
                        continue
                    m = _with_mamba_mistake(load_weights(build_formula_model(cfg).double(), w), mistake)
                    with torch.no_grad():
                        ym = m(**in64)
                    check_differs("%s: %s" % (label, mistake), _max_diff(ym, y64))

    # The cases, on their own weights and inputs: (b) vs its second form,
    # fp32 vs float64, and what they can tell: the scan (no_ssm) by more
    # than MAMBA_SHOWN tolerances in every case, and every planted mistake
    # by that much in some case.
    shown = {m: [] for m in MAMBA_MISTAKES + MAMBA_LAYER_MISTAKES}
    for name, desc, w, inputs in mamba_cases:
        cfg = Config(desc)
        w = {k: torch.as_tensor(np.asarray(v)) for k, v in w.items()}
        fm = load_weights(build_formula_model(cfg), w)
        fm64 = load_weights(build_formula_model(cfg).double(), w)
        second = load_weights(build_torch_model(cfg), w)
        y = run_model(fm, cfg, inputs)
        y64 = run_model(fm64, cfg, inputs)
        sc = y.abs().max().item()
        tol = 1e-4 * (1.0 + sc)
        check("mamba case %s: (b) vs second form mamba" % name, _max_diff(y, run_model(second, cfg, inputs)), scale=sc)
        check("mamba case %s: fp32 vs float64 (%.3g tol)" % (name, _max_diff(y, y64) / tol), _max_diff(y, y64),
              scale=sc)
        seq = np.asarray(inputs["input"]).shape[-1 if cfg.tokens else -2]
        moves = {}
        for mistake in shown:
            if not _mamba_mistake_shows(mistake, seq, cfg.mamba_d_conv):
                continue
            m = _with_mamba_mistake(load_weights(build_formula_model(cfg).double(), w), mistake)
            moves[mistake] = _max_diff(run_model(m, cfg, inputs), y64) / tol
            if moves[mistake] > MAMBA_SHOWN:
                shown[mistake].append(name)
        need = MAMBA_SHOWN if seq > 1 else MAMBA_SHOWN_ONE_STEP
        passes("mamba case %s: the scan moves the output by %.3g tol (> %g); the least visible mistake %s, %.3g tol"
               % (name, moves["no_ssm"], need, min(moves, key=moves.get), min(moves.values())),
               moves["no_ssm"] > need)
    if mamba_cases:
        missing = [m for m, names in shown.items() if not names]
        passes("mamba cases: each of %d planted mistakes moves some case's output by > %g tol%s"
               % (len(shown), MAMBA_SHOWN, " (not: %s)" % missing if missing else ""), not missing)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--self-test", action="store_true", help="run the self-test")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--no-cases", dest="with_cases", action="store_false",
                   help="skip the models of cases.py (checked by default)")
    args = p.parse_args(argv)
    if not args.self_test:
        p.print_help()
        return 0
    extra, masked, embedded, moe, layered, mambas = [], [], [], [], [], []
    if args.with_cases:
        try:
            import cases
            import generate_cases
            # Section 7's `layers` cases: their own section (15), not the
            # model-level kinds' (whose checks read the model-level keys).
            extra = [c.model for c in cases.CASES if "layers" not in c.model]
            # (cases.py's helpers take the imported module's Config: this
            # file runs as __main__.)
            import reference as imported
            # The mamba cases (pure and hybrid stacks): their own section
            # (16); a --generate case on its prompt and greedy ids.
            for c in cases.CASES:
                if "layers" in c.model and c.expect_error is None:
                    cfg = imported.Config(c.model)
                    (mambas if cfg.mamba else layered).append(
                        (c.name, c.model, cases.case_weights(c, cfg),
                         cases.case_inputs(c, cfg, cases.case_seed(c.name))))
            for c in generate_cases.CASES:
                if "layers" in c.model:
                    cfg = imported.Config(c.model)
                    if cfg.mamba:
                        w, inputs = generate_cases.moe_case_sequence(c)
                        mambas.append((c.name, c.model, w, inputs))
                        continue
                    layered.append((c.name, c.model, generate_cases.case_weights(c, cfg),
                                    {"input": np.random.default_rng(c.effective_seed()).integers(
                                        0, cfg.vocab_size, size=(2, c.prompt.seq + c.new_tokens))}))
            # The cases with embedding_norm or token types, on their own
            # inputs (token_type_ids given or not).
            embedded = [(c.name, c.model, cases.case_inputs(c, Config(c.model), cases.case_seed(c.name)))
                        for c in cases.CASES if c.expect_error is None
                        and ("embedding_norm" in c.model or "type_vocab_size" in c.model)]
            # The mask_* cases with their masks, as run_e2e.py makes them.
            masked = [(c.name, (c.model, cases.case_inputs(c, Config(c.model), cases.case_seed(c.name))))
                      for c in cases.CASES if c.masks and c.expect_error is None]
            # The MoE cases on the weights and inputs their harnesses use
            # (a --generate case: its prompt and greedy ids).
            for c in cases.CASES:
                if Config(c.model).moe and c.expect_error is None:
                    cfg = imported.Config(c.model)
                    moe.append((c.name, c.model, cases.case_weights(c, cfg),
                                cases.case_inputs(c, cfg, cases.case_seed(c.name)), c.shared_embeddings,
                                c.moe_gate))
            for c in generate_cases.CASES:
                if Config(c.model).moe:
                    w, inputs = generate_cases.moe_case_sequence(c)
                    moe.append((c.name, c.model, w, inputs, c.shared_embeddings, None))
        except ImportError:
            pass
    return 0 if self_test(args.verbose, extra, masked, embedded, moe, layered, mambas) else 1


if __name__ == "__main__":
    sys.exit(main())
