#!/usr/bin/python3
"""End-to-end tests of `--generate` (incremental decoding with a KV cache)
against PyTorch, for decoder and encoder_decoder models.

The prompt: a decoder's `input` ids; for an encoder_decoder (generating the
target, contract section 4) `src`, fixed for the whole generation, and `tgt`,
the decoder's start, which the new tokens continue.  Below, "the sequence"
is what grows (input, or tgt); every forward of an encoder_decoder also gets
the case's src.

For each case of generate_cases.py:
  1. write CASE.json, make the weights (reference.make_weights, fixed seed,
     the layers' matrices times the case's weight_gain so that greedy paths
     vary; encoder_decoder: src_embed/tgt_embed, or one shared embed.weight;
     block_sparse: the case's own block_pattern ids, cases.block_patterns,
     as its pattern_dtype I32 or I64),
     save them as safetensors and read them back; write the prompt
     (prompt.npy; encoder_decoder: src.npy and tgt.npy);
  2. the reference, on the weights as read back: PyTorch's greedy loop, i.e.
     the from-the-formulas model (reference.py (b)) run as a full forward
     over the growing sequence (encoder_decoder: fm(src=SRC, tgt=growing),
     the encoder recomputed each time), taking the argmax of the last row
     (ties: the lowest id), in float32.  Checks of the reference itself: the
     loop is bit-reproducible; then, in float64 (where the same function
     agrees to ~1e-14 relative, so a bound of 1e-9 relative above 1 can
     fail on any real difference but never on rounding): the last row of a
     forward over each prefix equals the matching row of one forward over
     the whole sequence (causal); an independent KV-cache implementation in
     torch (KVCacheDecoder below; encoder_decoder: the encoder run once, the
     cross-attention keys/values projected from the memory once, a
     self-attention cache per decoder layer; a performer layer keeps its
     running sums phi(K)^T V and phi(K)^T 1 instead; a block_sparse layer
     masks its cache by the blocks at absolute positions) gives the same
     logits, and the
     same ids as the fp32 loop.  A model that regenerates (regenerates():
     linformer, never causal, no cache possible; the executable runs its
     whole forward over the sequence so far at each step) has no cache to
     check: there (ii) is the opposite (one forward over the whole sequence
     must differ from the per-prefix rows, which are the oracle and what
     rows below stand for), and (iii) is check_regeneration:
     RegenerateDecoder on the second form (linformer factored) gives (b)'s
     logits and the fp32 loop's ids, and a cache of every layer's keys
     (KVCacheDecoder's linformer_mistake "cached") is more than CACHE_SHOWN
     tol off, so the case can tell the two apart.  Where PyTorch's own
     modules (reference.py (a): nn.TransformerEncoder, nn.Transformer; a
     linformer model: (b)'s factored form) express the model they agree
     with (b).  Then fp32 against float64, scaled by the case's
     conditioning: the fp32 rounding noise N of the case is measured by
     emulating fp32's rounding errors in float64 (reference.Fp32Rounding,
     16 runs with a fixed seed: the same on every machine, whereas the fp32
     logits depend on the machine's BLAS and SIMD kernels); the fp32
     reference (and (a) in fp32) must be within 2*N of float64 (as accurate
     as fp32 allows: measured up to 0.99*N over the cases with netlib BLAS,
     OpenBLAS kernels and torch's AVX2/AVX512/scalar kernels, and the
     compiled executables up to 0.97*N), and N must stay below a quarter of
     the tolerance
     (well-conditioned: the reference's and an executable's rounding
     together then use at most half of it);
  3. tfm-compile CASE.json -o CASE.exe [--max-batch N] [--max-seq-len N];
  4. CASE.exe --generate N --weights W --input input=PROMPT (encoder_decoder:
     --input src=SRC --input tgt=TGT) --output IDS --step-logits LOGITS
     --threads 1, and again with --threads 2:
     * IDS int32 [N] or [batch, N] (batch dim iff the prompt had one), ids
       in range; LOGITS float32 [N, batch, vocab] (batch 1 for an unbatched
       prompt), finite; the last stdout line is
       `generate: prefill_tok_s=X decode_tok_s=Y new_tokens=N threads=T`;
     * greedy self-consistency: IDS[t] == argmax(LOGITS[t]) (lowest id on ties);
     * LOGITS[t] against the last row of the reference's full forward over
       the prefix the executable used (prompt + its own ids[:t]):
       max|err| <= 1e-4 * (1 + max|ref|) (contract section 6), so that one
       flipped token does not cascade;
     * IDS equal the reference greedy ids exactly.  If they differ where the
       reference's two candidates are within 2*tol of each other (a flip the
       tolerance allows), the case passes with a note `ambiguous at step t`
       and the ids are compared only up to there;
     * --threads 2 gives the same ids and bit-identical step logits.
  5. extras: "sample": --temperature T --top-k K --seed S twice (same ids),
     with --threads 2 (same ids), and with another seed S2; ids in range and
     within the top K of their step logits, step logits against the
     reference on the sampled prefix (raw logits, or divided by T); neither
     seed's ids equal the greedy ids, and the two seeds' ids differ (both
     fail a correct sampler with a probability computed from torch's logits,
     in the note; the case's settings keep the greedy one <= 1e-6, checked
     with the reference);
     "too_long": prompt (encoder_decoder: tgt) + N > the compiled max seq len
     must exit 1 with a message, and for encoder_decoder a src one token
     longer than the limit too (with --generate 1).

One line per case (PASS/FAIL), the last line `N passed, M failed`; the exit
status is 1 if any case failed, 2 if the case table is invalid or no case
matches.  An executable that does not support --generate yet fails its case
with its message, like any other failure.

--reference-only does steps 1-2 only, and also fails a case whose reference
greedy path has a step where the top two logits are within 2*tol (pick
another seed for it).  A case whose fp32 reference logits are not finite
fails (a performer model's phi has no stabiliser: too strong a weight_gain
overflows fp32).  --self-test checks the helpers, and the torch KV cache
(decoder and encoder_decoder, prefill in one chunk, in pieces and token by
token, several src lengths; full, sliding-window, performer and
block_sparse attention) against full forwards, and that the KV-cache check
catches each planted performer and block_sparse decode mistake
(PERFORMER_DECODE_MISTAKES, BLOCK_SPARSE_DECODE_MISTAKES); for linformer,
that KVCacheDecoder refuses it, RegenerateDecoder matches full forwards,
and check_regeneration passes it and catches the planted cache
(LINFORMER_DECODE_MISTAKES; exact with one layer, which the check then
refuses as unable to tell); -v prints every check.

Run with Debian's /usr/bin/python3 (it has python3-torch 1.13):

  run_generate.py --tfm-compile build/bin/tfm-compile --work-dir /tmp/gen [-k FILTER] [-j N]
  run_generate.py --reference-only --work-dir /tmp/gen-ref   # torch side only (~5 s)
  run_generate.py --self-test                                # the harness's helpers (~3 s)
  run_generate.py --list                                     # the cases
  # ctest: generate[-llvm] runs --exclude mamba, generate-mamba[-llvm] -k mamba
  generate_cases.py -v                                       # table problems, coverage map
  # the harness against a fake compiler (see fake_generate_compile.py for the modes)
  TFM_FAKE_GEN_MODE=flip run_generate.py --tfm-compile fake_generate_compile.py --work-dir /tmp/gf -k batch2
  TFM_FAKE_GEN_MODE=src_short run_generate.py --tfm-compile fake_generate_compile.py --work-dir /tmp/gf -k 'gen_ed_*'

Each case's directory keeps NAME.json, weights.safetensors, prompt.npy
(encoder_decoder: src.npy, tgt.npy), ref_ids.npy, ref_step_logits.npy,
NAME.exe, and per run TAG.cmd, TAG.stdout, TAG.stderr, ids_TAG.npy,
step_logits_TAG.npy (TAG: greedy_t1, greedy_t2, sample_a, sample_b,
sample_t2, sample_other_seed, too_long, too_long_src with src_too_long.npy).
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import generate_cases as cases_mod  # noqa: E402
import case_pool  # noqa: E402
import safetensors as st  # noqa: E402  (our own, test/e2e/safetensors.py)

# torch vs torch in float64 (causality, KV cache, (a) vs (b)), normalised by
# max(1, max|ref|): measured at most 2.5e-14 (17 cases, 11 BLAS/SIMD setups),
# while a real difference (reference.py's negative controls) is above 1e-3.
AB_BOUND_F64 = 1e-9
NOISE_TRIALS = 16             # runs of the fp32 rounding emulation (reference.fp32_rounding_noise)
FP32_NOISE_FACTOR = 2.0       # an fp32 run may be this many times the emulated noise N from float64
CONDITIONING_FRACTION = 0.25  # N must stay below this share of the tolerance
AMBIGUITY = 2.0               # a top-2 gap <= AMBIGUITY * tol may flip within the tolerance
# A "sample" case must be able to tell sampling from greedy decoding: a
# correct sampler reproduces the greedy ids with at most this probability
# (computed from torch's logits on the greedy path; see sampling_probs).
MAX_GREEDY_PATH_PROB = 1e-6

GEN_LINE_RE = re.compile(r"^generate: prefill_tok_s=(\S+) decode_tok_s=(\S+) "
                         r"new_tokens=(\d+) threads=(\d+)$")


class CaseFailure(Exception):
    pass


def tolerance(ref):
    return 1e-4 * (1.0 + float(np.max(np.abs(ref)))) if ref.size else 1e-4


def _clip(line, n):
    return line if len(line) <= n else line[: n - 3] + "..."


def _tail(text, lines=3, width=160):
    ls = [l.strip() for l in text.strip().splitlines() if l.strip()]
    if not ls:
        return "(no stderr)"
    tail = ls[-lines:]
    first = next((l for l in ls if "error" in l.lower()), None)
    parts = []
    if first is not None and first not in tail:
        parts = [_clip(first, width), "..."]
    return " | ".join(parts + [_clip(l, width) for l in tail])


def _write(case_dir, name, text):
    with open(os.path.join(case_dir, name), "w") as f:
        f.write(text)


def argmax_lowest(a):
    """argmax over the last axis, the lowest index on ties (np.argmax's rule)."""
    return np.argmax(a, axis=-1)


# ---------------------------------------------------------------------------
# The torch side: full-recompute greedy loop, and an independent KV cache.
# ---------------------------------------------------------------------------

def _torch():
    import torch
    return torch


def model_inputs(cfg, seqs, src=None):
    """The keyword inputs of a forward over the growing sequence seqs [B, L]
    (numpy ids): `input` for a decoder; `src` (fixed, [B, S]) and `tgt` for
    an encoder_decoder, whose target is what generation continues."""
    torch = _torch()

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))
    if cfg.is_encdec:
        if src is None:
            raise ValueError("an encoder_decoder forward needs src")
        return {"src": t(src), "tgt": t(seqs)}
    if src is not None:
        raise ValueError("src is for encoder_decoder models")
    return {"input": t(seqs)}


def full_rows(fm, seqs, src=None):
    """Logits of every position of a full forward over seqs [B, L] (numpy
    ids; encoder_decoder: the target, with the source src [B, S]) with the
    formula model fm: numpy [B, L, V] in fm's dtype."""
    torch = _torch()
    with torch.no_grad():
        return fm(**model_inputs(fm.cfg, seqs, src)).numpy()


def last_rows(fm, seqs, src=None):
    """The last position's logits of full_rows: numpy [B, V]."""
    return full_rows(fm, seqs, src)[:, -1, :]


def greedy_full(fm, prompt2d, n, src=None):
    """PyTorch's greedy loop: a full forward over the growing sequence each
    step (encoder_decoder: the target grows, src stays), argmax of the last
    row.  Returns ids [B, n] int64 and the logits each id was chosen from
    [n, B, V]."""
    seq = np.array(prompt2d, dtype=np.int64)
    ids, rows = [], []
    for _ in range(n):
        r = last_rows(fm, seq, src)
        nxt = argmax_lowest(r)
        rows.append(r)
        ids.append(nxt)
        seq = np.concatenate([seq, nxt[:, None]], axis=1)
    return np.stack(ids, axis=1), np.stack(rows, axis=0)


def logits_on_prefix(fm, prompt2d, ids, src=None):
    """Row t: the last row of a full forward over prompt + ids[:, :t]."""
    seq = np.concatenate([np.asarray(prompt2d, np.int64), np.asarray(ids, np.int64)], axis=1)
    L = prompt2d.shape[1]
    return np.stack([last_rows(fm, seq[:, : L + t], src) for t in range(ids.shape[1])], axis=0)


# Mistakes the self-test plants in KVCacheDecoder's performer decode (each
# must be caught by prepare_reference's KV-cache check): the running sums
# not carried from one step() to the next (each chunk starts from zero), a
# token's key and value added after its query has read the sums (from
# position 1 on: at position 0 that is 0/0), phi(K) per kv head g with W_g
# instead of W_h per query head (grouped-query only), q and k not divided by
# dk^(1/4).
PERFORMER_DECODE_MISTAKES = ("no_carry", "key_after_query", "kv_w", "no_scale")
# Mistakes the self-test plants in KVCacheDecoder's block_sparse decode:
# the query block counted from the query's row in the step (i // B) instead
# of its absolute position; the run-time block count taken from the step's
# queries (ceil(S / B): a decode step's 1 token) instead of its keys, so
# that valid pattern ids are dropped; the random blocks ignored.
BLOCK_SPARSE_DECODE_MISTAKES = ("step_row", "nb_from_queries", "no_pattern")
# The mistake the self-test (and fake_generate_compile's lin_cached) plants
# in a linformer model's decoding: KVCacheDecoder run on it as if a cache
# could serve it, each layer keeping its keys and values of earlier
# positions as they were computed when those positions were new, and a
# step projecting them with E_n, F_n of the current n.  Exact for one layer
# (its keys depend on their own token only), wrong from the second on: the
# model is never causal, so the earlier positions' outputs of a layer change
# with every new token, and with them the next layer's keys.
LINFORMER_DECODE_MISTAKES = ("cached",)
# Mistakes the self-test (and fake_generate_compile's mamba_state_reset)
# plants in KVCacheDecoder's mamba decode: a layer's state h not carried
# from one step() to the next (each chunk starts from zero); its last
# d_conv - 1 inputs not carried (zeros before each chunk); the new input
# put first in the convolution's window instead of last (the taps read
# the inputs in the other order).
MAMBA_DECODE_MISTAKES = ("h_not_carried", "conv_not_carried", "conv_window_order")
# A regenerating case must tell regeneration from that cache: the cached
# decoder's step logits must be at least this many tol from the full
# forwards' on its own prefix (prepare_reference), so an executable that
# caches fails the step-logit check by far.
CACHE_SHOWN = 10.0


# The weights a case's weight_gain multiplies (generate_cases.GenCase): every
# attention in/out projection, FFN and expert linear, and a mamba mixer's
# in_proj and out_proj (mixer.in_proj.weight; mixer.out_proj.weight ends
# like an attention block's out_proj.weight).
GAINED = ("in_proj_weight", "out_proj.weight", "linear1.weight", "linear2.weight", "mixer.in_proj.weight")


def regenerates(cfg):
    """Whether a model generates by running its whole forward pass again
    over the sequence so far at every step (the compiled module's
    `tfm.regenerates`, ModelInfo::regenerates), with no cache: a linformer
    model (contract section 7), whose projected keys E_n K and values F_n V
    mix every position (n grows with each token) and which is never causal
    (its earlier positions' outputs change with each token too).  The
    oracle of such a model is the reference's full forward over each
    prefix, which the step-logit check uses for every model anyway; the
    KV-cache oracle (KVCacheDecoder) does not apply, and prepare_reference
    checks RegenerateDecoder on the second form instead (step iii)."""
    return cfg.linformer


class RegenerateDecoder:
    """Decoding by regeneration (regenerates(cfg): linformer), with
    KVCacheDecoder's interface: the sequence so far is kept, and each
    step() appends its chunk and runs `model` (any full-forward model of
    the description: (b), or (b)'s second form) over the whole of it (an
    encoder_decoder: the target so far, with the fixed src), returning the
    new positions' rows.  Prefill is one chunk, each decode step a chunk of
    one, so a step costs a full forward over its prefix, as the executable's
    does."""

    def __init__(self, model, src=None):
        cfg = model.cfg
        if not cfg.tokens or cfg.architecture not in ("decoder", "encoder_decoder") or not cfg.lm_head:
            raise ValueError("RegenerateDecoder is for decoders and encoder_decoders with token inputs "
                             "and an LM head")
        if cfg.is_encdec and src is None:
            raise ValueError("an encoder_decoder RegenerateDecoder needs src")
        if not cfg.is_encdec and src is not None:
            raise ValueError("src is for encoder_decoder models")
        self.model, self.cfg = model, cfg
        self.src = None if src is None else np.asarray(src, dtype=np.int64)
        self.reset()

    def reset(self):
        self.seq = None
        self.pos = 0

    def step(self, ids):
        """ids [B, S] (numpy or tensor): the logits [B, S, V] of the new
        positions, from one forward over everything so far (a torch
        tensor, as KVCacheDecoder.step returns)."""
        torch = _torch()
        ids = np.asarray(ids, dtype=np.int64)
        self.seq = ids if self.seq is None else np.concatenate([self.seq, ids], axis=1)
        s = ids.shape[1]
        self.pos = self.seq.shape[1]
        return torch.from_numpy(full_rows(self.model, self.seq, self.src)[:, -s:, :])

    def greedy(self, prompt2d, n):
        return KVCacheDecoder.greedy(self, prompt2d, n)


def make_decoder(fm, src=None, **mistakes):
    """The torch decoder of fm's model: RegenerateDecoder where the model
    regenerates (linformer), else KVCacheDecoder (mistakes: its
    self-test ones)."""
    if regenerates(fm.cfg) and not mistakes.get("linformer_mistake"):
        return RegenerateDecoder(fm, src)
    return KVCacheDecoder(fm, src, **mistakes)


class KVCacheDecoder:
    """Incremental decoding written independently of FormulaModel.forward,
    from the same parameters (a causal decoder or encoder_decoder
    FormulaModel, token inputs).  Each (decoder-stack) layer keeps the
    self-attention keys (after rope) and values of every position so far; a
    call of step() processes a chunk of new tokens at positions
    pos..pos+S-1 attending to the cache and to themselves (causally).
    Prefill is one chunk, each decode step a chunk of one.

    encoder_decoder: construct with src [B, S] ids; reset() runs the encoder
    over src once (not causal, rope over src positions) and projects each
    decoder layer's cross-attention keys and values from the memory once;
    step() then attends to those (never causal, never rotated).  Target
    positions start at 0.

    Performer (contract section 7, FAVOR+): a decoder layer keeps no keys,
    only a fixed-size state per query head h: the running sums
    S = sum_j phi_h(k_j)^T v_j [M, dv] and z = sum_j phi_h(k_j) [M] over the
    positions so far, carried from step to step.  Each new token adds its
    own key and value to them, then its query reads them:
    out = phi_h(q) S / (phi_h(q) . z), phi_h(x) = exp(x' W_h^T - |x'|^2 / 2)
    / sqrt(M), x' = x / dk^(1/4) (after rope; W_h = self_attn.features[h]).
    Grouped-query: query head h reads kv head h // (H / KV), mapped with its
    own W_h.  The encoder's self-attention (encoder_decoder) is performer
    too, not causal (the sums over every src position); cross-attention
    stays full softmax.  `performer_mistake` (self-test only) plants one of
    PERFORMER_DECODE_MISTAKES.

    Block-sparse (contract section 7, BigBird): the cache keeps every key;
    the query at absolute position i (prefill row, or a decode step's
    position) is in block qb = i // B and attends key j (block kb = j // B)
    when |qb - kb| <= window_blocks, qb < global_blocks, kb < global_blocks
    or kb is in row qb of the layer's block_pattern with 0 <= kb < ceil(keys
    / B), the keys so far; causal on top (a decode step's own position is
    the last key, so the blocks past its query are masked anyway).  Written
    from the contract, not with reference.py's block_sparse_allowed.  The
    encoder's self-attention (encoder_decoder) is block_sparse too, not
    causal.  `block_mistake` (self-test only) plants one of
    BLOCK_SPARSE_DECODE_MISTAKES.

    Section 7's `layers` (a decoder's per-layer kinds): each layer keeps
    what its own kind needs (reference.Config.layer_config): a performer
    layer its running sums, a sliding-window, block_sparse or full layer
    its keys and values, masked by its own rule; an MoE layer routes each
    new token with its own gate.

    Mamba (contract section 7): a mamba layer keeps no keys, only a
    fixed-size state per sequence: its last d_conv - 1 inputs of the
    convolution (u before the convolution, zeros before the sequence) and
    its state h [d_inner, d_state], carried from step to step.  Each new
    token: window = those inputs then its own u; conv = bias + sum_k
    weight[:, 0, k] window[k]; u' = SiLU(conv); dt, B, C = split(x_proj u');
    delta = softplus(dt_proj dt); h = exp(delta A) h + delta B u' (A =
    -exp(A_log)); y = (C . h + D u') SiLU(z); out_proj y; the layer is
    x + that of Norm(x), pre-norm whatever `norm` says, no FFN.  Written
    from the contract, not with reference.py's mixer (whose parameters it
    reads).  `mamba_mistake` (self-test only) plants one of
    MAMBA_DECODE_MISTAKES.

    Linformer (contract section 7): no cache can serve it (regenerates():
    E_n mixes every position, the model is never causal), so a linformer
    model is refused, with the reason; RegenerateDecoder decodes it.  The
    self-test (and fake_generate_compile's lin_cached) construct one with
    `linformer_mistake` "cached" (LINFORMER_DECODE_MISTAKES) to show what
    a cache would get wrong: each decoder layer keeps its keys and values
    (after rope) of the positions so far as they were computed, and a
    step's queries attend K' = E_n K, V' = F_n V over them, n the
    positions so far, unmasked; the encoder's self-attention (an
    encoder_decoder's, over the fixed src) is linformer over src, correct."""

    def __init__(self, fm, src=None, performer_mistake=None, block_mistake=None, linformer_mistake=None,
                 mamba_mistake=None):
        import reference as R
        self.R = R
        self.fm = fm
        if mamba_mistake not in (None,) + MAMBA_DECODE_MISTAKES:
            raise ValueError(mamba_mistake)
        self.mamba_mistake = mamba_mistake
        if performer_mistake not in (None,) + PERFORMER_DECODE_MISTAKES:
            raise ValueError(performer_mistake)
        if block_mistake not in (None,) + BLOCK_SPARSE_DECODE_MISTAKES:
            raise ValueError(block_mistake)
        if linformer_mistake not in (None,) + LINFORMER_DECODE_MISTAKES:
            raise ValueError(linformer_mistake)
        self.performer_mistake = performer_mistake
        self.block_mistake = block_mistake
        self.linformer_mistake = linformer_mistake
        self.cfg = cfg = fm.cfg
        if regenerates(cfg) and linformer_mistake is None:
            raise ValueError("KVCacheDecoder: a linformer model has no cache (its projected keys E_n K mix "
                             "every position, n grows with each token, and it is never causal): it "
                             "regenerates (RegenerateDecoder)")
        if linformer_mistake is not None and not cfg.linformer:
            raise ValueError("linformer_mistake is for linformer models")
        causal = cfg.causal or linformer_mistake is not None
        if not cfg.tokens or not causal or cfg.architecture not in ("decoder", "encoder_decoder"):
            raise ValueError("KVCacheDecoder is for causal decoders and encoder_decoders with token inputs")
        if cfg.is_encdec:
            if src is None:
                raise ValueError("an encoder_decoder KVCacheDecoder needs src")
            self.src = torch_ids(src)
            self.layers, self.final_norm = fm.decoder.layers, fm.decoder.norm
        else:
            if src is not None:
                raise ValueError("src is for encoder_decoder models")
            self.src = None
            self.layers, self.final_norm = fm.layers, fm.norm
        self.dtype = next(fm.parameters()).dtype
        self.reset()

    def reset(self):
        self.cache = [None] * len(self.layers)
        self.pos = 0
        self.cross = None
        if self.src is not None:
            self.cross = self._encode(self.src)

    # -- pieces, from the formulas ---------------------------------------------
    def _embed(self, ids, which, p0, p1):
        cfg, fm, R = self.cfg, self.fm, self.R
        if not cfg.is_encdec or fm.shared_embeddings:
            table = fm.embed.weight
        else:
            table = fm.src_embed.weight if which == "src" else fm.tgt_embed.weight
        x = table[ids]
        if cfg.embedding_scale == "sqrt_d_model":
            x = x * math.sqrt(cfg.d_model)
        if cfg.positional == "sinusoidal":
            x = x + R.sinusoidal_table(p1, cfg.d_model)[p0:p1].to(self.dtype)
        elif cfg.positional == "learned":
            pe = fm.pos_embed if not cfg.is_encdec else (
                fm.src_pos_embed if which == "src" else fm.tgt_pos_embed)
            x = x + pe.weight[p0:p1]
        if cfg.embedding_norm:
            # The embedding norm of each new position, after its (absolute,
            # offset) position is added: a decode step's one row too.
            norm = fm.embed_norm if not cfg.is_encdec else (
                fm.src_embed_norm if which == "src" else fm.tgt_embed_norm)
            x = norm(x)
        return x

    def _rope(self, p0, p1):
        cfg = self.cfg
        if cfg.positional != "rope" or cfg.head_dim is None:
            return None     # (a stack of mamba layers only: no heads, nothing to rotate)
        cos, sin = self.R.rope_cos_sin(p1, cfg.head_dim, cfg.rope_base)
        return cos[p0:p1].to(self.dtype), sin[p0:p1].to(self.dtype), cfg.rope_style

    def _proj(self, attn, x, part):
        """Q (part 0) of x [B, S, D] as [B, H, S, dk], K (1) or V (2) as
        [B, KV, S, dk] (KV = num_kv_heads: the cache keeps those heads)."""
        b, s, d = x.shape
        h, kv, dk = attn.num_heads, attn.num_kv_heads, attn.head_dim
        n = (h, kv, kv)[part] * dk
        lo = (0, h * dk, (h + kv) * dk)[part]
        w, bias = attn.in_proj_weight, attn.in_proj_bias
        y = self.R.linear(x, w[lo:lo + n], None if bias is None else bias[lo:lo + n])
        return y.reshape(b, s, n // dk, dk).transpose(1, 2)

    def _kinds(self, li):
        """The kinds of decoder layer li (section 7's `layers`: each
        layer its own; reference.Config.layer_config); None, the encoder's
        self-attention, and an encoder_decoder's layers: the model's."""
        if li is None or self.cfg.is_encdec:
            return self.cfg
        return self.cfg.layer_config(li)

    def _attend(self, attn, q, k, v, causal_from=None, window=False, block=False, kinds=None):
        """Scores, mask (key position j > query position causal_from + i;
        with `window`, the layer's sliding window over absolute positions:
        also j with |i - j| > W unless i or j < global_tokens; with `block`,
        the block_sparse rule, _block_rule; `kinds`: the layer's Config,
        the model's by default), softmax, values, out_proj."""
        lc = kinds if kinds is not None else self.cfg
        torch, R = _torch(), self.R
        b, h, s, dk = q.shape
        if k.shape[1] != h:   # grouped-query: query head i reads K/V head i // (H / KV)
            k = k.repeat_interleave(h // k.shape[1], dim=1)
            v = v.repeat_interleave(h // v.shape[1], dim=1)
        kind = attn.score_kind
        if kind == "scaled_dot":
            sc = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dk)
        elif kind == "dot":
            sc = torch.matmul(q, k.transpose(-1, -2))
        else:
            sc = attn.score(q, k)
        qpos = torch.arange(causal_from or 0, (causal_from or 0) + s)[:, None]
        kpos = torch.arange(k.shape[2])[None, :]
        if block:
            sc = sc.masked_fill(~self._block_rule(attn, qpos, kpos, lc), float("-inf"))
        if causal_from is not None:
            sc = sc.masked_fill(kpos > qpos, float("-inf"))
        if window:
            g = lc.global_tokens
            far = ((qpos - kpos).abs() > lc.window) & (qpos >= g) & (kpos >= g)
            sc = sc.masked_fill(far, float("-inf"))
        p = R.softmax_last(sc)
        o = torch.matmul(p, v).transpose(1, 2).reshape(b, s, h * dk)
        return attn.out_proj(o)

    def _block_rule(self, attn, qpos, kpos, kinds=None):
        """block_sparse: bool [S, K], whether the query at absolute position
        qpos[i] attends the key at kpos[j] (the keys 0..K-1 so far), by the
        blocks' window, the global blocks and row qb of attn.block_pattern
        (ids in [0, ceil(K / B)) only); the layer's rule (`kinds`, the
        model's by default)."""
        cfg, mistake = kinds if kinds is not None else self.cfg, self.block_mistake
        b = cfg.block
        qb = (qpos - qpos[0]) // b if mistake == "step_row" else qpos // b      # [S, 1]
        kb = kpos // b                                                          # [1, K]
        ok = ((qb - kb).abs() <= cfg.window_blocks) | (qb < cfg.global_blocks) | (kb < cfg.global_blocks)
        pattern = attn.block_pattern
        if pattern is not None and mistake != "no_pattern":
            nb = -(-(qpos.shape[0] if mistake == "nb_from_queries" else kpos.shape[1]) // b)
            for col in range(pattern.shape[1]):
                ids = pattern[qb[:, 0], col].long()[:, None]                  # [S, 1]
                ok = ok | ((ids == kb) & (ids >= 0) & (ids < nb))
        return ok

    def _self_attn(self, attn, x, rope, li=None):
        """Self-attention of x; li: the cached decoder layer (causal), None:
        the encoder (no cache, not causal)."""
        torch, R = _torch(), self.R
        q, k, v = (self._proj(attn, x, i) for i in range(3))
        if rope is not None:
            cos, sin, style = rope
            q = R.apply_rope(q, cos, sin, style)
            k = R.apply_rope(k, cos, sin, style)
        # The layer's own kind (section 7's `layers`; without them, every
        # self-attention's); cross-attention is full.
        lc = self._kinds(li)
        if lc.performer:
            return self._performer(attn, q, k, v, li)
        if lc.linformer:
            return self._linformer(attn, q, k, v, li)
        window = lc.sliding_window
        block = lc.block_sparse
        if li is None:
            return self._attend(attn, q, k, v, window=window, block=block, kinds=lc)
        if self.cache[li] is not None:
            k = torch.cat([self.cache[li][0], k], dim=2)
            v = torch.cat([self.cache[li][1], v], dim=2)
        self.cache[li] = (k, v)
        return self._attend(attn, q, k, v, causal_from=self.pos, window=window, block=block, kinds=lc)

    def _linformer(self, attn, q, k, v, li):
        """Linformer self-attention of the new positions' q [B, H, S, dk]
        and k, v [B, KV, S, dk]: the encoder's (li None) over these keys;
        a decoder layer's (linformer_mistake "cached" only, see the class)
        over its cached keys and values of every position so far, which
        these extend.  K' = E_n K, V' = F_n V (E_n, F_n: the first n
        columns of proj_e, proj_f), then unmasked attention over the k
        projected rows."""
        torch = _torch()
        if li is not None:
            if self.cache[li] is not None:
                k = torch.cat([self.cache[li][0], k], dim=2)
                v = torch.cat([self.cache[li][1], v], dim=2)
            self.cache[li] = (k, v)
        n = k.shape[2]
        kp = torch.matmul(attn.proj_e[:, :n], k)     # [k, n] @ [B, KV, n, dk]
        vp = torch.matmul(attn.proj_f[:, :n], v)
        return self._attend(attn, q, kp, vp)

    def _phi(self, x, w):
        """FAVOR+'s features of x [B, H, S, dk] (head h mapped with w[h],
        w [H, M, dk]): exp(x' w[h]^T - |x'|^2 / 2) / sqrt(M), x' = x /
        dk^(1/4); [B, H, S, M]."""
        torch = _torch()
        dk, m = x.shape[-1], w.shape[1]
        xs = x * dk ** -0.25
        if self.performer_mistake == "no_scale":
            xs = x
        proj = torch.einsum("bhsd,hmd->bhsm", xs, w)
        return torch.exp(proj - 0.5 * (xs * xs).sum(dim=-1, keepdim=True)) / math.sqrt(m)

    def _performer(self, attn, q, k, v, li):
        """Performer self-attention of the new positions' q [B, H, S, dk]
        and k, v [B, KV, S, dk]; li: the decoder layer whose running sums
        (S [B, H, M, dv], z [B, H, M]) the new tokens extend, one by one
        (causal), or None: the encoder, not causal, over these keys only."""
        torch = _torch()
        b, h, s, dk = q.shape
        kv, mistake = k.shape[1], self.performer_mistake
        w = attn.features
        group = h // kv
        # Grouped-query: K, V expanded to the query heads (h reads h // group),
        # and phi(K) of query head h computed with its own W_h.
        idx = torch.tensor([i // group for i in range(h)])
        if mistake == "kv_w" and kv != h:
            kf = self._phi(k, w[:kv])[:, idx]          # per kv head with W_g: wrong
        else:
            kf = self._phi(k[:, idx], w)
        v = v[:, idx]
        qf = self._phi(q, w)
        if li is None:
            state = torch.einsum("bhsm,bhsd->bhmd", kf, v)
            z = kf.sum(dim=2)
            num = torch.einsum("bhsm,bhmd->bhsd", qf, state)
            den = torch.einsum("bhsm,bhm->bhs", qf, z)
            o = num / den.unsqueeze(-1)
        else:
            m = w.shape[1]
            if self.cache[li] is None or mistake == "no_carry":
                state = torch.zeros(b, h, m, v.shape[-1], dtype=q.dtype)
                z = torch.zeros(b, h, m, dtype=q.dtype)
            else:
                state, z = self.cache[li]
            rows = []
            for t in range(s):
                # A token's own key is in the sums its query reads (j <= i).
                late = mistake == "key_after_query" and self.pos + t > 0
                if late:
                    num = torch.einsum("bhm,bhmd->bhd", qf[:, :, t], state)
                    den = torch.einsum("bhm,bhm->bh", qf[:, :, t], z)
                state = state + kf[:, :, t, :, None] * v[:, :, t, None, :]
                z = z + kf[:, :, t]
                if not late:
                    num = torch.einsum("bhm,bhmd->bhd", qf[:, :, t], state)
                    den = torch.einsum("bhm,bhm->bh", qf[:, :, t], z)
                rows.append(num / den.unsqueeze(-1))
            self.cache[li] = (state, z)
            o = torch.stack(rows, dim=2)
        return attn.out_proj(o.transpose(1, 2).reshape(b, s, h * dk))

    def _mamba(self, mixer, x, li):
        """A mamba mixer on the new positions' x [B, S, d_model] (already
        normed), token by token from decoder layer li's state (its last
        d_conv - 1 inputs u, its h), which it leaves updated."""
        torch, R, mistake = _torch(), self.R, self.mamba_mistake
        b, s, _ = x.shape
        w = mixer.conv1d.weight[:, 0, :]                    # [di, C]: tap k reads position t - (C - 1) + k
        di, c = w.shape
        n = mixer.A_log.shape[1]
        r = mixer.dt_proj.weight.shape[1]
        if self.cache[li] is None:
            past, h = x.new_zeros(b, c - 1, di), x.new_zeros(b, di, n)
        else:
            past, h = self.cache[li]
        if mistake == "h_not_carried":
            h = torch.zeros_like(h)
        if mistake == "conv_not_carried":
            past = torch.zeros_like(past)
        xz = R.linear(x, mixer.in_proj.weight)
        us, zs = xz[..., :di], xz[..., di:]
        a = -torch.exp(mixer.A_log)                          # [di, N]

        def silu(v):
            return v * torch.sigmoid(v)
        rows = []
        for t in range(s):
            new = us[:, t:t + 1]
            window = torch.cat([new, past] if mistake == "conv_window_order" else [past, new], dim=1)   # [B, C, di]
            past = window[:, 1:]
            u = silu(mixer.conv1d.bias + (window * w.t()[None]).sum(dim=1))        # [B, di]
            dbc = R.linear(u, mixer.x_proj.weight)
            dt, bm, cm = dbc[:, :r], dbc[:, r:r + n], dbc[:, r + n:]
            pre = R.linear(dt, mixer.dt_proj.weight, mixer.dt_proj.bias)
            delta = torch.where(pre > 20, pre, torch.log1p(torch.exp(pre.clamp(max=20))))   # softplus
            h = torch.exp(delta[:, :, None] * a) * h + (delta * u)[:, :, None] * bm[:, None, :]
            y = (h * cm[:, None, :]).sum(dim=-1) + mixer.D * u
            rows.append(y * silu(zs[:, t]))
        self.cache[li] = (past, h)
        return R.linear(torch.stack(rows, dim=1), mixer.out_proj.weight)

    def _encode(self, src):
        """The encoder over src, once; returns each decoder layer's
        cross-attention (K, V) projected from the memory."""
        torch, fm = _torch(), self.fm
        with torch.no_grad():
            s = src.shape[1]
            x = self._embed(src, "src", 0, s)
            rope = self._rope(0, s)
            for layer in fm.encoder.layers:
                if self.cfg.norm == "pre":
                    x = x + self._self_attn(layer.self_attn, layer.norm1(x), rope)
                    x = x + layer.ff(layer.norm2(x))
                else:
                    x = layer.norm1(x + self._self_attn(layer.self_attn, x, rope))
                    x = layer.norm2(x + layer.ff(x))
            if fm.encoder.norm is not None:
                x = fm.encoder.norm(x)
            return [(self._proj(layer.multihead_attn, x, 1), self._proj(layer.multihead_attn, x, 2))
                    for layer in self.layers]

    def _cross(self, layer, li, x):
        k, v = self.cross[li]
        return self._attend(layer.multihead_attn, self._proj(layer.multihead_attn, x, 0), k, v)

    def step(self, ids):
        """ids [B, S] (numpy or tensor): the logits [B, S, V] of the new positions."""
        torch, fm, cfg = _torch(), self.fm, self.cfg
        with torch.no_grad():
            ids = torch_ids(ids)
            s = ids.shape[1]
            p0, p1 = self.pos, self.pos + s
            x = self._embed(ids, "tgt", p0, p1)
            rope = self._rope(p0, p1)
            for li, layer in enumerate(self.layers):
                if self._kinds(li).layer_kind == "mamba":
                    x = x + self._mamba(layer.mixer, layer.norm(x), li)
                    continue
                if cfg.norm == "pre":
                    x = x + self._self_attn(layer.self_attn, layer.norm1(x), rope, li)
                    if cfg.is_encdec:
                        x = x + self._cross(layer, li, layer.norm2(x))
                        x = x + layer.ff(layer.norm3(x))
                    else:
                        x = x + layer.ff(layer.norm2(x))
                else:
                    x = layer.norm1(x + self._self_attn(layer.self_attn, x, rope, li))
                    if cfg.is_encdec:
                        x = layer.norm2(x + self._cross(layer, li, x))
                        x = layer.norm3(x + layer.ff(x))
                    else:
                        x = layer.norm2(x + layer.ff(x))
            if self.final_norm is not None:
                x = self.final_norm(x)
            self.pos = p1
            return fm._head(x)

    def greedy(self, prompt2d, n):
        self.reset()
        r = self.step(prompt2d)[:, -1, :].numpy()
        ids, rows = [], []
        for t in range(n):
            nxt = argmax_lowest(r)
            ids.append(nxt)
            rows.append(r)
            if t + 1 < n:
                r = self.step(nxt[:, None])[:, -1, :].numpy()
        return np.stack(ids, axis=1), np.stack(rows, axis=0)


def torch_ids(a):
    return _torch().as_tensor(np.asarray(a, dtype=np.int64))


def min_gap(rows):
    """Smallest top-1 minus top-2 logit over all rows [.., V], and where."""
    s = np.sort(rows.astype(np.float64), axis=-1)
    gaps = s[..., -1] - s[..., -2]
    idx = np.unravel_index(int(np.argmin(gaps)), gaps.shape)
    return float(gaps[idx]), tuple(int(i) for i in idx)


def sampling_probs(rows, temperature, top_k):
    """The distribution the contract's sampler draws each id from, given the
    logits rows [.., V]: softmax(logits / T) over the top_k largest logits
    (all of them for top_k 0 or >= V; ties by the lower id, as the runtime
    orders them), zero elsewhere.  float64, the shape of rows."""
    r = np.asarray(rows, dtype=np.float64)
    k = top_k if 0 < top_k < r.shape[-1] else r.shape[-1]
    keep = np.argsort(-r, axis=-1, kind="stable")[..., :k]
    z = np.take_along_axis(r, keep, axis=-1) / temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    out = np.zeros_like(r)
    np.put_along_axis(out, keep, e / e.sum(axis=-1, keepdims=True), axis=-1)
    return out


def path_log10_prob(probs, ids):
    """log10 of the probability that a sampler drawing from probs [N, B, V]
    (step t's distribution on the path's own prefix) draws exactly ids
    [B, N]: the product over every step and row of the drawn id's
    probability (-inf if one has probability 0)."""
    n, b = probs.shape[0], probs.shape[1]
    p = probs[np.arange(n)[:, None], np.arange(b)[None, :], np.asarray(ids).T]
    with np.errstate(divide="ignore"):
        return float(np.sum(np.log10(p)))


# ---------------------------------------------------------------------------
# Reference side.
# ---------------------------------------------------------------------------

def prepare_reference(case, case_dir, strict_margin):
    """Steps 1-2.  Returns a dict of paths and facts; raises CaseFailure."""
    torch = _torch()
    import reference as R
    torch.set_num_threads(1)
    os.makedirs(case_dir, exist_ok=True)
    cfg = R.Config(case.model)
    seed = case.effective_seed()
    info = {"cfg": cfg}

    model_path = os.path.join(case_dir, case.name + ".json")
    with open(model_path, "w") as f:
        json.dump(case.model, f, indent=2)
        f.write("\n")
    info["model"] = model_path

    shared = case.shared_embeddings
    weights = R.make_weights(cfg, seed, shared)
    if case.weight_gain != 1.0:
        weights = {k: (v * case.weight_gain if k.endswith(GAINED) else v) for k, v in weights.items()}
    if {k: tuple(v.shape) for k, v in weights.items()} != R.expected_weights(cfg, shared):
        raise CaseFailure("internal: generated weights do not match the contract listing")
    arrays = {k: v.numpy() for k, v in weights.items()}
    # block_sparse: the case's own block_pattern ids (generate_cases'
    # case_block_patterns), in its pattern_dtype.
    dtypes_out = {k: case.weight_dtype for k in arrays}
    for k, p in cases_mod.case_block_patterns(case, cfg).items():
        arrays[k], dtypes_out[k] = p, case.pattern_dtype
    wpath = os.path.join(case_dir, "weights.safetensors")
    st.save_file(arrays, wpath, dtype=dtypes_out, metadata={"format": "pt", "case": case.name})
    back, dtypes = st.load_file(wpath, with_dtypes=True)
    if list(back) != list(arrays):
        raise CaseFailure("safetensors read-back: names/order differ")
    for k, a in arrays.items():
        want = st.round_to_dtype(a, dtypes_out[k])
        if (dtypes[k] != dtypes_out[k] or back[k].shape != a.shape or back[k].dtype != want.dtype
                or not np.array_equal(back[k], want)):
            raise CaseFailure("safetensors read-back: %s differs" % k)
    info["weights"] = wpath

    # The prompt: decoder `input` (prompt.npy); encoder_decoder `tgt` (the
    # decoder's start, tgt.npy) drawn first, then the fixed `src` (src.npy).
    rng = np.random.default_rng(seed)

    def write_ids(spec, fname, what):
        shape = (spec.seq,) if spec.batch is None else (spec.batch, spec.seq)
        a = rng.integers(0, cfg.vocab_size, size=shape).astype(spec.dtype)
        path = os.path.join(case_dir, fname)
        np.save(path, a)
        b = np.load(path)
        if b.dtype != a.dtype or b.shape != a.shape or not np.array_equal(b, a):
            raise CaseFailure("npy read-back of the %s differs" % what)
        return a, path, (a if spec.batch is not None else a[None, :]).astype(np.int64)
    p = case.prompt
    grow = "tgt" if cfg.is_encdec else "input"
    prompt, ppath, prompt2d = write_ids(p, "tgt.npy" if cfg.is_encdec else "prompt.npy",
                                        "tgt start" if cfg.is_encdec else "prompt")
    inputs = [(grow, ppath)]
    src2d = None
    if cfg.is_encdec:
        _, spath, src2d = write_ids(case.src, "src.npy", "src")
        inputs.insert(0, ("src", spath))
    info.update(prompt_path=ppath, prompt=prompt, batched=p.batch is not None, prompt2d=prompt2d,
                src2d=src2d, inputs=inputs)
    n = case.new_tokens

    fm = R.load_weights(R.build_formula_model(cfg, shared), back)
    info["fm"] = fm
    ref_ids, ref_rows = greedy_full(fm, prompt2d, n, src2d)
    if not np.all(np.isfinite(ref_rows)):
        t = int(np.argwhere(~np.isfinite(ref_rows))[0][0])
        raise CaseFailure("fp32 reference logits have %d non-finite values (the first at step %d): the "
                          "case overflows fp32 (a performer's phi has no stabiliser); lower its weight_gain"
                          % (int(np.sum(~np.isfinite(ref_rows))), t))
    tol = tolerance(ref_rows)
    info.update(ref_ids=ref_ids, ref_rows=ref_rows, tol=tol)
    np.save(os.path.join(case_dir, "ref_ids.npy"), ref_ids.astype(np.int32))
    np.save(os.path.join(case_dir, "ref_step_logits.npy"), ref_rows.astype(np.float32))

    # (i) The loop is reproducible bit for bit.
    ids2, rows2 = greedy_full(fm, prompt2d, n, src2d)
    if not np.array_equal(ids2, ref_ids) or rows2.tobytes() != ref_rows.tobytes():
        raise CaseFailure("reference greedy loop is not reproducible")
    # The checks below compare torch with torch in float64: two fp32
    # evaluations of the same function differ by fp32 rounding, which
    # depends on this machine's kernels (BLAS, SIMD width) and grows with
    # the case's conditioning, so no fixed fp32 bound can tell it from a
    # real mistake; in float64 the same function agrees to ~1e-14 relative
    # and any mistake shows at 1e-3 or more (AB_BOUND_F64 between them).
    L = prompt2d.shape[1]
    full_seq = np.concatenate([prompt2d, ref_ids[:, :-1]], axis=1)
    scale = max(1.0, float(np.max(np.abs(ref_rows))))
    fm64 = R.load_weights(R.build_formula_model(cfg, shared).double(), back)

    regen = regenerates(cfg)
    info["regenerates"] = regen

    def rows_of(model):
        """The greedy steps' rows, as [n, B, V] float64: rows L-1.. of one
        forward over the whole sequence (causal), or, for a model that
        regenerates (never causal), the last row of a forward over each
        prefix (what each step of the executable computes)."""
        if regen:
            return logits_on_prefix(model, prompt2d, ref_ids, src2d).astype(np.float64)
        return full_rows(model, full_seq, src2d)[:, L - 1:, :].transpose(1, 0, 2).astype(np.float64)
    ref64 = logits_on_prefix(fm64, prompt2d, ref_ids, src2d)     # the loop's rows, in float64
    d_cached = None
    if not regen:
        # (ii) Causality: one forward over the whole sequence, row L-1+t == step t.
        whole64 = rows_of(fm64)
        d_whole = float(np.max(np.abs(whole64 - ref64)))
        if not d_whole / scale < AB_BOUND_F64:   # (NaN fails too)
            raise CaseFailure("reference: rows of one full forward differ from per-prefix last rows "
                              "by %.3g in float64 (not causal?)" % d_whole)
        # (iii) The independent KV-cache implementation.
        d_kv = check_kv_cache(fm64, prompt2d, n, src2d, ref_ids, ref64, scale)
    else:
        # (ii) A regenerating model is never causal: a row of one forward
        # over the whole sequence has seen the later tokens, so it must
        # differ from the last row of the forward over its prefix (the
        # executable's step, the oracle here).
        whole64 = ref64
        d_whole = float(np.max(np.abs(
            full_rows(fm64, full_seq, src2d)[:, L - 1:, :].transpose(1, 0, 2) - ref64)))
        if not d_whole / scale > 1e-3:
            raise CaseFailure("reference: a regenerating (linformer) model's rows of one full forward are "
                              "within %.3g of the per-prefix last rows in float64: not the non-causal "
                              "model it should be" % d_whole)
        # (iii) No cache to check (regenerates()): RegenerateDecoder on the
        # second form instead, and the case must tell that from a cache.
        d_kv, d_cached = check_regeneration(fm64, R.load_weights(R.build_torch_model(cfg, shared).double(), back),
                                            prompt2d, n, src2d, ref_ids, ref64, scale, tol)
    # What fp32 rounding does to this case (its conditioning): the float64
    # model run under reference.Fp32Rounding, an emulation of fp32's rounding
    # errors with a fixed seed, so the same on every machine (the fp32 logits
    # themselves are not).
    noise = R.fp32_rounding_noise(lambda: rows_of(fm64), whole64, trials=NOISE_TRIALS)
    # An fp32 evaluation may be this far from float64: a few times the
    # emulated noise, and at least one rounding of the largest logit.
    fp32_bound = FP32_NOISE_FACTOR * noise + R.F32_UNIT_ROUNDOFF * scale
    # (iv) PyTorch's own modules, where they express the model: the same
    # function as (b) (compared in float64, where rounding cannot hide a
    # difference), and in fp32 as accurate as the case allows.
    d_ab = cond_a = None
    tm = R.build_torch_model(cfg, shared)
    if tm is not None:
        tm64 = R.load_weights(R.build_torch_model(cfg, shared).double(), back)
        d_ab = float(np.max(np.abs(rows_of(tm64) - ref64)))
        if not d_ab / scale < AB_BOUND_F64:
            raise CaseFailure("reference (a) torch modules vs (b) formulas differ by %.3g in float64 "
                              "(bound %.3g)" % (d_ab, AB_BOUND_F64 * scale))
        R.load_weights(tm, back)
        cond_a = float(np.max(np.abs(rows_of(tm) - ref64)))
        if cond_a > fp32_bound:
            raise CaseFailure("reference (a) torch modules in fp32 are %.3g from float64, more than "
                              "fp32 rounding allows here (%.3g: %g x the emulated noise %.3g)"
                              % (cond_a, fp32_bound, FP32_NOISE_FACTOR, noise))
    # (v) The fp32 reference (b) is as accurate as fp32 allows, and the case
    # is well-conditioned: fp32 rounding moves its logits by a small share
    # of the tolerance only.
    cond = float(np.max(np.abs(ref_rows.astype(np.float64) - ref64)))
    if cond > fp32_bound:
        raise CaseFailure("fp32 reference is %.3g from float64, more than fp32 rounding allows here "
                          "(%.3g: %g x the emulated noise %.3g)"
                          % (cond, fp32_bound, FP32_NOISE_FACTOR, noise))
    if noise > CONDITIONING_FRACTION * tol:
        raise CaseFailure("ill-conditioned case: fp32 rounding moves the logits by up to %.3g (float64 "
                          "emulation; this fp32 reference is %.3g from float64) > %g*tol = %.3g"
                          % (noise, cond, CONDITIONING_FRACTION, CONDITIONING_FRACTION * tol))
    # (vi) A sample case can fail an executable that ignores its sampling
    # flags: the probability that a correct sampler draws exactly the greedy
    # ids (the product of each greedy id's sampling probability along the
    # greedy path) is at most MAX_GREEDY_PATH_PROB.
    greedy_lp = None
    if "sample" in case.extras:
        temp, top_k = case.sample[:2]
        greedy_lp = path_log10_prob(sampling_probs(ref_rows, temp, top_k), ref_ids)
        if greedy_lp > math.log10(MAX_GREEDY_PATH_PROB):
            raise CaseFailure("sample settings T=%g top-k=%d cannot tell sampling from greedy decoding: "
                              "a correct sampler draws the %d greedy ids with probability %.3g > %g; "
                              "raise the temperature or the top-k, or generate more tokens"
                              % (temp, top_k, ref_ids.size, 10.0 ** greedy_lp, MAX_GREEDY_PATH_PROB))
    # (vii) Margins of the greedy choices.
    gap, where = min_gap(ref_rows)
    info.update(cond=cond, cond_a=cond_a, noise=noise, d_ab=d_ab, d_kv=d_kv, d_cached=d_cached,
                d_whole=d_whole, gap=gap,
                gap_at=where, greedy_log10_prob=greedy_lp)
    if strict_margin and gap <= AMBIGUITY * tol:
        raise CaseFailure("ambiguous reference: at step %d row %d the top two logits are %.3g apart "
                          "(<= %g*tol = %.3g); choose another seed for this case"
                          % (where[0], where[1], gap, AMBIGUITY, AMBIGUITY * tol))
    return info


def check_kv_cache(fm64, prompt2d, n, src2d, ref_ids, ref64, scale, performer_mistake=None, block_mistake=None,
                   mamba_mistake=None):
    """prepare_reference's step (iii): KVCacheDecoder (float64 fm64; prefill
    of the prompt in one chunk, then n - 1 decode steps) against the full
    forwards: its logits within AB_BOUND_F64 (relative to scale) of the full
    forward's last row on its own prefix (ref64: on the reference's greedy
    path ref_ids), and its greedy ids those of the fp32 loop.  Returns the
    difference; raises CaseFailure.  performer_mistake, block_mistake,
    mamba_mistake: the self-test's."""
    kv_ids, kv_rows = KVCacheDecoder(fm64, src2d, performer_mistake, block_mistake,
                                     mamba_mistake=mamba_mistake).greedy(prompt2d, n)
    on_kv = ref64 if np.array_equal(kv_ids, ref_ids) else logits_on_prefix(fm64, prompt2d, kv_ids, src2d)
    d_kv = float(np.max(np.abs(kv_rows - on_kv)))
    if not d_kv / scale < AB_BOUND_F64:      # NaN (0/0 in a performer row) fails too
        raise CaseFailure("reference: torch KV-cache logits differ from full recompute by %.3g in float64"
                          % d_kv)
    if not np.array_equal(kv_ids, ref_ids):
        t, bb = _first_mismatch(kv_ids, ref_ids)
        raise CaseFailure("reference: torch KV-cache greedy ids (float64) differ from the fp32 greedy "
                          "loop at step %d row %d (%d vs %d)" % (t, bb, kv_ids[bb, t], ref_ids[bb, t]))
    return d_kv


def check_regeneration(fm64, second64, prompt2d, n, src2d, ref_ids, ref64, scale, tol, decoder=None):
    """prepare_reference's step (iii) for a model that regenerates
    (regenerates(): linformer), which has no cache to check:
      * the decoder (default: RegenerateDecoder over second64, the float64
        second form, reference.build_torch_model: linformer factored, so
        the attention computed independently of (b)'s; prefill of the
        prompt, then n - 1 steps, each a full forward over the sequence so
        far) against (b)'s full forwards: its logits within AB_BOUND_F64
        (relative to scale) of the last row of (b)'s forward on its own
        prefix (ref64: on the reference's greedy path ref_ids), and its
        greedy ids those of the fp32 loop;
      * the case tells regeneration from a cache: KVCacheDecoder with
        linformer_mistake "cached" (LINFORMER_DECODE_MISTAKES), on (b) in
        float64, is more than CACHE_SHOWN * tol from (b)'s full forwards on
        its own prefix (else an executable that cached would pass it).
    Returns (the decoder's difference, the cached one's); raises
    CaseFailure.  decoder: the self-test's (a planted mistake)."""
    dec = decoder if decoder is not None else RegenerateDecoder(second64, src2d)
    ids, rows = dec.greedy(prompt2d, n)
    on = ref64 if np.array_equal(ids, ref_ids) else logits_on_prefix(fm64, prompt2d, ids, src2d)
    d = float(np.max(np.abs(rows - on)))
    if not d / scale < AB_BOUND_F64:
        raise CaseFailure("reference: regenerating decode (the second form, a full forward per step) differs "
                          "from (b)'s full forwards by %.3g in float64" % d)
    if not np.array_equal(ids, ref_ids):
        t, bb = _first_mismatch(ids, ref_ids)
        raise CaseFailure("reference: regenerating decode's greedy ids (float64) differ from the fp32 greedy "
                          "loop at step %d row %d (%d vs %d)" % (t, bb, ids[bb, t], ref_ids[bb, t]))
    c_ids, c_rows = KVCacheDecoder(fm64, src2d, linformer_mistake="cached").greedy(prompt2d, n)
    on_c = ref64 if np.array_equal(c_ids, ref_ids) else logits_on_prefix(fm64, prompt2d, c_ids, src2d)
    d_cached = float(np.max(np.abs(c_rows - on_c)))
    if not d_cached > CACHE_SHOWN * tol:
        raise CaseFailure("a cache of each layer's keys and values (linformer_mistake 'cached') is only %.3g = "
                          "%.2f*tol from the full forwards (<= %g*tol): the case cannot tell regeneration from "
                          "a cache; give it more decoder layers, another seed or more new tokens"
                          % (d_cached, d_cached / tol, CACHE_SHOWN))
    return d, d_cached


def _first_mismatch(a, b):
    """(step, row) of the earliest differing id of [B, N] arrays."""
    diff = np.argwhere(a != b)   # rows of (b, t)
    k = int(np.argmin(diff[:, 1]))
    return int(diff[k, 1]), int(diff[k, 0])


# ---------------------------------------------------------------------------
# Compile and run.
# ---------------------------------------------------------------------------

def compile_case(case, info, tfm_compile, case_dir, timeout, backend):
    exe = os.path.join(case_dir, case.name + ".exe")
    if os.path.exists(exe):
        os.remove(exe)
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


def run_exe(exe, info, case_dir, tag, n, threads, timeout, extra=(), step_logits=True, inputs=None):
    """Runs one --generate (inputs: [(name, path)], default the case's
    prompt); returns (returncode, stdout, stderr, ids_path, logits_path)."""
    ids_path = os.path.join(case_dir, "ids_%s.npy" % tag)
    lg_path = os.path.join(case_dir, "step_logits_%s.npy" % tag) if step_logits else None
    for pth in (ids_path, lg_path):
        if pth and os.path.exists(pth):
            os.remove(pth)
    cmd = [exe, "--generate", str(n), "--weights", info["weights"]]
    for name, path in (inputs if inputs is not None else info["inputs"]):
        cmd += ["--input", "%s=%s" % (name, path)]
    cmd += ["--output", ids_path, "--threads", str(threads)] + list(extra)
    if lg_path:
        cmd += ["--step-logits", lg_path]
    _write(case_dir, "%s.cmd" % tag, " ".join(cmd) + "\n")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=case_dir)
    except subprocess.TimeoutExpired:
        raise CaseFailure("executable (%s) timed out after %ds" % (tag, timeout))
    except OSError as e:
        raise CaseFailure("cannot run the executable: %s" % e)
    _write(case_dir, "%s.stdout" % tag, p.stdout)
    _write(case_dir, "%s.stderr" % tag, p.stderr)
    return p.returncode, p.stdout, p.stderr, ids_path, lg_path


def run_generate_ok(exe, info, case_dir, tag, n, threads, timeout, extra=()):
    """A --generate run that must succeed: returns (ids [B, n] int64 view,
    raw ids array, step logits [n, B, V])."""
    rc, out, err, ids_path, lg_path = run_exe(exe, info, case_dir, tag, n, threads, timeout, extra)
    if rc != 0:
        what = ("killed by signal %d" % -rc) if rc < 0 else ("exited %d" % rc)
        raise CaseFailure("executable --generate (%s) %s: %s" % (tag, what, _tail(err)))
    lines = [l.rstrip() for l in out.splitlines() if l.strip()]
    last = lines[-1] if lines else ""
    m = GEN_LINE_RE.match(last)
    if not m:
        raise CaseFailure("%s: last stdout line %r is not `generate: prefill_tok_s=X decode_tok_s=Y "
                          "new_tokens=N threads=T`" % (tag, _clip(last, 120)))
    try:
        rates = [float(m.group(1)), float(m.group(2))]
    except ValueError:
        raise CaseFailure("%s: tok/s values in %r are not numbers" % (tag, last))
    if any(not (r >= 0) for r in rates):
        raise CaseFailure("%s: tok/s values in %r are not non-negative" % (tag, last))
    if int(m.group(3)) != n or int(m.group(4)) != threads:
        raise CaseFailure("%s: %r, expected new_tokens=%d threads=%d" % (tag, last, n, threads))

    cfg = info["cfg"]
    B = info["prompt2d"].shape[0]
    try:
        ids = np.load(ids_path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001
        raise CaseFailure("%s: --output unreadable: %s" % (tag, e))
    want = (B, n) if info["batched"] else (n,)
    if ids.dtype != np.int32:
        raise CaseFailure("%s: ids dtype %s, expected int32" % (tag, ids.dtype))
    if ids.shape != want:
        raise CaseFailure("%s: ids shape %s, expected %s" % (tag, list(ids.shape), list(want)))
    if ids.size and (ids.min() < 0 or ids.max() >= cfg.vocab_size):
        raise CaseFailure("%s: ids out of range [0, %d): %s" % (tag, cfg.vocab_size, ids.tolist()))
    ids2d = ids.reshape(B, n).astype(np.int64)
    try:
        lg = np.load(lg_path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001
        raise CaseFailure("%s: --step-logits unreadable: %s" % (tag, e))
    if lg.dtype != np.float32:
        raise CaseFailure("%s: step logits dtype %s, expected float32" % (tag, lg.dtype))
    want_l = (n, B, cfg.vocab_size)
    if lg.shape != want_l:
        raise CaseFailure("%s: step logits shape %s, expected %s" % (tag, list(lg.shape), list(want_l)))
    if not np.all(np.isfinite(lg)):
        raise CaseFailure("%s: step logits have %d non-finite values" % (tag, int(np.sum(~np.isfinite(lg)))))
    return ids2d, ids, lg


def check_logits(tag, lg, ref, tol):
    err_arr = np.abs(lg.astype(np.float64) - ref.astype(np.float64))
    err = float(np.max(err_arr))
    if not err <= tol:
        t, b, v = np.unravel_index(int(np.argmax(err_arr)), err_arr.shape)
        raise CaseFailure("%s: step logits max_err=%.3g > tol=%.3g at step %d row %d id %d "
                          "(got %.6g, torch %.6g on the same prefix)"
                          % (tag, err, tol, t, b, v, lg[t, b, v], ref[t, b, v]))
    return err


def compare_greedy(ids, ref_ids, rows, tol):
    """ids, ref_ids [B, N]: the executable's and torch's greedy ids; rows
    [N, B, V]: torch's logits on the executable's prefix.  Raises at the
    first differing id of a row unless torch's own logits there put the two
    ids within AMBIGUITY*tol (a flip the tolerance allows); returns notes for
    such ambiguous steps (the row is compared only up to there)."""
    notes = []
    for b in range(ids.shape[0]):
        bad = np.nonzero(ids[b] != ref_ids[b])[0]
        if not bad.size:
            continue
        t = int(bad[0])
        r = rows[t, b].astype(np.float64)
        gap = r[ref_ids[b, t]] - r[ids[b, t]]
        if gap > AMBIGUITY * tol:
            raise CaseFailure("greedy ids differ from torch at step %d row %d: exe %d, torch %d "
                              "(torch logit gap %.3g > %g*tol = %.3g)"
                              % (t, b, ids[b, t], ref_ids[b, t], gap, AMBIGUITY, AMBIGUITY * tol))
        notes.append("ambiguous at step %d row %d (exe %d, torch %d, gap %.3g <= %g*tol): "
                     "ids compared up to there" % (t, b, ids[b, t], ref_ids[b, t], gap, AMBIGUITY))
    return notes


def compile_and_run(case, info, tfm_compile, case_dir, timeouts, backend):
    exe = compile_case(case, info, tfm_compile, case_dir, timeouts[0], backend)
    fm, prompt2d, src2d, n = info["fm"], info["prompt2d"], info["src2d"], case.new_tokens
    notes = []

    ids, raw1, lg = run_generate_ok(exe, info, case_dir, "greedy_t1", n, 1, timeouts[1])
    # Greedy: each id is the argmax of the logits it was chosen from.
    am = argmax_lowest(lg).T            # [B, n]
    if not np.array_equal(am, ids):
        t, b = _first_mismatch(ids, am)
        raise CaseFailure("greedy ids are not the argmax of their step logits: step %d row %d id %d, "
                          "argmax %d" % (t, b, ids[b, t], am[b, t]))
    # Step logits against torch on the executable's own prefix.
    ref_ids, ref_rows = info["ref_ids"], info["ref_rows"]
    rows = ref_rows if np.array_equal(ids, ref_ids) else logits_on_prefix(fm, prompt2d, ids, src2d)
    tol = tolerance(rows)
    err = check_logits("greedy_t1", lg, rows, tol)
    # Greedy ids against PyTorch's greedy loop.
    notes += compare_greedy(ids, ref_ids, rows, tol)
    # --threads 2: same ids, bit-identical step logits.
    ids2, raw2, lg2 = run_generate_ok(exe, info, case_dir, "greedy_t2", n, 2, timeouts[1])
    if raw2.tobytes() != raw1.tobytes():
        t, b = _first_mismatch(ids2, ids)
        raise CaseFailure("--threads 2 ids differ from --threads 1 at step %d row %d" % (t, b))
    if lg2.tobytes() != lg.tobytes():
        k = int(np.sum(lg2.view(np.uint32) != lg.view(np.uint32)))
        d = float(np.max(np.abs(lg2.astype(np.float64) - lg.astype(np.float64))))
        raise CaseFailure("--threads 1 and 2 step logits differ in %d elements (max %.3g): "
                          "not bit-identical" % (k, d))

    if "sample" in case.extras:
        notes.append(check_sampling(case, info, exe, case_dir, timeouts[1], ids, rows))
    if "too_long" in case.extras:
        notes.append(check_too_long(case, info, exe, case_dir, timeouts[1]))
    return err, tol, notes


def check_sampling(case, info, exe, case_dir, timeout, greedy_ids, greedy_rows):
    """--temperature T --top-k K --seed S: deterministic per seed (also at
    --threads 2); every id within the top K of its step's logits; the step
    logits right on the sampled prefix; and the flags must change the ids:
    neither seed's ids equal the greedy run's (greedy_ids [B, N], with torch's
    logits on that path greedy_rows [N, B, V]), and the two seeds' ids differ.

    The last two are probabilistic; their false alarms are bounded from
    torch's logits with sampling_probs (the executable's logits are within
    tol of those, which moves each probability by a factor of at most
    exp(2*tol/T), ~1): a correct sampler draws the greedy ids with
    probability P_greedy (at most MAX_GREEDY_PATH_PROB, checked for the
    case's settings by prepare_reference), and an independent second stream
    repeats the first seed's ids with the probability P_a of that path.
    Both are reported in the note; over the cases they are ~1e-10 or less.
    An executable that ignores --temperature (always argmax) fails the
    first, one that ignores --seed the second, one that ignores --top-k the
    rank check (its ids leave the top K at some step, near-certainly)."""
    temp, top_k, s1, s2 = case.sample
    n, fm, prompt2d, src2d = case.new_tokens, info["fm"], info["prompt2d"], info["src2d"]

    def flags(seed):
        return ["--temperature", repr(temp), "--top-k", str(top_k), "--seed", str(seed)]
    ids_a, raw_a, lg_a = run_generate_ok(exe, info, case_dir, "sample_a", n, 1, timeout, flags(s1))
    _, raw_b, lg_b = run_generate_ok(exe, info, case_dir, "sample_b", n, 1, timeout, flags(s1))
    if raw_b.tobytes() != raw_a.tobytes():
        raise CaseFailure("sampling is not deterministic: the same --seed %d gave different ids" % s1)
    if lg_b.tobytes() != lg_a.tobytes():
        raise CaseFailure("sampling: the same --seed gave different step logits")
    _, raw_c, _ = run_generate_ok(exe, info, case_dir, "sample_t2", n, 2, timeout, flags(s1))
    if raw_c.tobytes() != raw_a.tobytes():
        raise CaseFailure("sampling: --threads 2 gave other ids than --threads 1 for --seed %d" % s1)
    ids_d, raw_d, lg_d = run_generate_ok(exe, info, case_dir, "sample_other_seed", n, 1, timeout, flags(s2))

    def check_top_k(tag, seed, ids, lg):
        """Each sampled id is among the top K of the logits it was drawn from
        (rank-based, so raw or temperature-scaled logits alike)."""
        for t in range(n):
            for b in range(ids.shape[0]):
                row = lg[t, b]
                rank = int(np.sum(row > row[ids[b, t]]))
                if rank >= top_k:
                    raise CaseFailure("sampling (%s, --seed %d): step %d row %d drew id %d of rank %d, "
                                      "outside --top-k %d" % (tag, seed, t, b, ids[b, t], rank, top_k))
    check_top_k("sample_a", s1, ids_a, lg_a)
    check_top_k("sample_other_seed", s2, ids_d, lg_d)

    # The step logits on the sampled (non-greedy) prefix against torch.
    def check_prefix_logits(tag, ids, lg):
        rows = logits_on_prefix(fm, prompt2d, ids, src2d)
        tol = tolerance(rows)
        err = float(np.max(np.abs(lg.astype(np.float64) - rows)))
        if err <= tol:
            return rows, "raw", err
        err_s = float(np.max(np.abs(lg.astype(np.float64) - rows / temp)))
        if err_s <= tol / temp:
            return rows, "divided by T", err_s
        raise CaseFailure("sampling (%s): step logits on the sampled prefix max_err=%.3g > tol=%.3g "
                          "(and %.3g against torch/T)" % (tag, err, tol, err_s))
    rows_a, how, err = check_prefix_logits("sample_a", ids_a, lg_a)
    check_prefix_logits("sample_other_seed", ids_d, lg_d)

    # The flags must matter: not the greedy ids, and another seed, other ids.
    greedy_lp = path_log10_prob(sampling_probs(greedy_rows, temp, top_k), greedy_ids)
    for tag, seed, ids in (("sample_a", s1, ids_a), ("sample_other_seed", s2, ids_d)):
        if np.array_equal(ids, greedy_ids):
            raise CaseFailure("sampling ignored: --temperature %g --top-k %d --seed %d gave the greedy "
                              "ids, all %d of them (a correct sampler does that with probability "
                              "10^%.1f)" % (temp, top_k, seed, ids.size, greedy_lp))
    a_lp = path_log10_prob(sampling_probs(rows_a, temp, top_k), ids_a)
    if raw_d.tobytes() == raw_a.tobytes():
        raise CaseFailure("sampling ignores --seed: --seed %d and --seed %d gave the same %d ids (an "
                          "independent stream repeats this path with probability 10^%.1f)"
                          % (s1, s2, ids_a.size, a_lp))
    return ("sample T=%g k=%d: deterministic, top-k ok, logits %s err %.3g; not greedy "
            "(P_greedy=10^%.1f), seed %d differs from seed %d (P_a=10^%.1f)"
            % (temp, top_k, how, err, greedy_lp, s2, s1, a_lp))


def check_too_long(case, info, exe, case_dir, timeout):
    """prompt (encoder_decoder: the tgt start) + N > the compiled max seq len
    must exit 1 with a message; for encoder_decoder also a src one longer
    than the limit (with --generate 1)."""
    limit = case.effective_max_seq_len()
    L = info["prompt2d"].shape[1]
    what = "tgt" if info["cfg"].is_encdec else "prompt"
    n_bad = limit - L + 1

    def rejected(tag, n, inputs, desc):
        rc, _, err, _, _ = run_exe(exe, info, case_dir, tag, n, 1, timeout, step_logits=False,
                                   inputs=inputs)
        if rc != 1:
            how = ("killed by signal %d" % -rc) if rc < 0 else ("exited %d" % rc)
            raise CaseFailure("%s: executable %s, expected exit 1 with a message" % (desc, how))
        if not err.strip():
            raise CaseFailure("%s: exit 1 but no message on stderr" % desc)
        return _clip(err.strip().splitlines()[-1], 100)
    msg = rejected("too_long", n_bad, None,
                   "%s %d + --generate %d > max seq len %d" % (what, L, n_bad, limit))
    note = "too long (%s %d+%d > %d) rejected: %s" % (what, L, n_bad, limit, msg)
    if info["src2d"] is not None:
        src = np.load(dict(info["inputs"])["src"])
        shape = src.shape[:-1] + (limit + 1,)
        long_src = np.random.default_rng(0).integers(0, info["cfg"].vocab_size, size=shape).astype(src.dtype)
        spath = os.path.join(case_dir, "src_too_long.npy")
        np.save(spath, long_src)
        inputs = [("src", spath) if k == "src" else (k, v) for k, v in info["inputs"]]
        msg = rejected("too_long_src", 1, inputs, "src %d > max seq len %d" % (limit + 1, limit))
        note += "; src %d > %d rejected: %s" % (limit + 1, limit, msg)
    return note


# ---------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------

def run_one(case_name, opts):
    """In a worker: returns (passed, line)."""
    case = cases_mod.by_name()[case_name]
    case_dir = os.path.join(opts["work_dir"], case.name)
    t0 = time.time()
    try:
        info = prepare_reference(case, case_dir, strict_margin=opts["reference_only"])
        if opts["reference_only"]:
            ab = "n/a" if info["d_ab"] is None else "%.3g" % info["d_ab"]
            ab32 = "" if info["cond_a"] is None else ", torch_fp32_vs_fp64=%.3g" % info["cond_a"]
            if info["greedy_log10_prob"] is not None:
                ab32 += ", sampling_draws_greedy_ids_prob=10^%.1f" % info["greedy_log10_prob"]
            if info["regenerates"]:
                kv = ("regenerates (no cache): regenerate_vs_full=%.3g, cached_vs_full=%.3g=%.0f*tol, "
                      "whole_vs_prefix=%.3g" % (info["d_kv"], info["d_cached"], info["d_cached"] / info["tol"],
                                                info["d_whole"]))
            else:
                kv = "kv_cache_vs_full=%.3g" % info["d_kv"]
            return True, ("PASS %s (reference only: tol=%.3g, fp32_noise=%.3g=%.3f*tol, fp32_vs_fp64=%.3g%s, "
                          "%s, torch_vs_formula_fp64=%s, min_top2_gap=%.3g=%.0f*tol, "
                          "ids=%s)"
                          % (case.name, info["tol"], info["noise"], info["noise"] / info["tol"], info["cond"],
                             ab32, kv, ab, info["gap"], info["gap"] / info["tol"],
                             _short_ids(info["ref_ids"])))
        err, tol, notes = compile_and_run(case, info, opts["tfm_compile"], case_dir,
                                          (opts["compile_timeout"], opts["run_timeout"]),
                                          opts["backend"])
        extra = "".join("; " + s for s in notes)
        return True, "PASS %s (max_err=%.3g, tol=%.3g, %d tokens%s)" % (
            case.name, err, tol, case.new_tokens, extra)
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
        if opts["verbose"]:
            sys.stderr.write("[%s: %.1fs]\n" % (case.name, time.time() - t0))


def _short_ids(ids):
    rows = [" ".join(str(int(x)) for x in r) for r in ids]
    return "|".join(rows)


def _init_worker():
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass


def select(filters, shard=None, excludes=()):
    return case_pool.select_names([c.name for c in cases_mod.CASES], filters, shard, excludes)


def self_test(verbose=False):
    """Checks of the harness's own helpers (no compiler needed); verbose:
    print every check, not only the failures."""
    fails, count = [], [0]

    def check(what, ok):
        count[0] += 1
        if not ok:
            fails.append(what)
            print("FAIL self-test: " + what)
        elif verbose:
            print("ok   self-test: " + what)
    check("argmax ties -> lowest id", argmax_lowest(np.array([[1.0, 3.0, 3.0, 2.0]]))[0] == 1)
    g, at = min_gap(np.array([[[0.0, 5.0, 4.5]], [[1.0, 0.0, 0.9]]]))
    check("min_gap", abs(g - 0.1) < 1e-12 and at == (1, 0))
    rows = np.zeros((3, 2, 4))
    rows[:, :, 2] = 1.0
    rows[1, 1, 3] = 1.0 - 1e-6          # a near tie at step 1, row 1
    ref = np.full((2, 3), 2)
    check("greedy exact", compare_greedy(ref.copy(), ref, rows, 1e-4) == [])
    got = ref.copy()
    got[1, 1:] = 3
    notes = compare_greedy(got, ref, rows, 1e-4)
    check("greedy near tie is ambiguous", len(notes) == 1 and "step 1 row 1" in notes[0])
    got = ref.copy()
    got[0, 2] = 0
    try:
        compare_greedy(got, ref, rows, 1e-4)
        check("greedy real mismatch fails", False)
    except CaseFailure as e:
        check("greedy real mismatch message", "step 2 row 0" in str(e))
    # The sampling distribution: top-k by rank (ties: the lower id), then
    # softmax(logits / T) over those; a path's probability multiplies them.
    lg = np.array([[[1.0, 3.0, 3.0, 3.0 - math.log(2.0) * 0.5]]])   # [1 step, 1 row, 4 ids]
    pr = sampling_probs(lg, 0.5, 2)
    check("sampling_probs top-2 with a tie: %s" % pr[0, 0].tolist(),
          np.allclose(pr[0, 0], [0.0, 0.5, 0.5, 0.0], rtol=0, atol=1e-15))
    pr = sampling_probs(lg, 0.5, 3)
    check("sampling_probs top-3, T 0.5: %s" % pr[0, 0].tolist(),
          np.allclose(pr[0, 0], [0.0, 0.4, 0.4, 0.2], rtol=0, atol=1e-15))
    check("sampling_probs top-k 0 is every id",
          np.allclose(sampling_probs(lg, 1.0, 0), sampling_probs(lg, 1.0, 4), rtol=0, atol=0)
          and np.all(sampling_probs(lg, 1.0, 0) > 0))
    two = np.concatenate([sampling_probs(lg, 0.5, 3)] * 2, axis=0)  # 2 steps
    check("path_log10_prob", abs(path_log10_prob(two, np.array([[1, 3]])) - math.log10(0.4 * 0.2)) < 1e-12
          and path_log10_prob(two, np.array([[0, 1]])) == -math.inf)
    for line, ok in (("generate: prefill_tok_s=812.5 decode_tok_s=95.1 new_tokens=32 threads=1", True),
                     ("generate: prefill_tok_s=1e+04 decode_tok_s=inf new_tokens=3 threads=2", True),
                     ("generate: prefill_tok_s=812.5 decode_tok_s=95.1 new_tokens=32", False),
                     ("bench: median_ms=1 min_ms=1 gflops=1 runs=1 threads=1", False)):
        check("generate line %r" % line, bool(GEN_LINE_RE.match(line)) == ok)
    # The torch KV cache: prefill in one chunk, in pieces, or token by token
    # gives the same logits, and they match full forwards.
    torch = _torch()
    import reference as R
    torch.set_num_threads(1)
    for desc in (dict(positional="rope", rope_style="interleaved", norm="pre", attention_score="additive"),
                 dict(positional="learned", attention_score="bilinear"),
                 dict(positional="sinusoidal", attention_score="dot", embedding_scale="sqrt_d_model"),
                 dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu", ffn_gated=True,
                      num_kv_heads=1, bias=False),
                 # embedding_norm: each step's row normed after its offset position
                 dict(positional="learned", norm="pre", embedding_norm=True),
                 dict(positional="sinusoidal", embedding_norm=True, norm_type="rms_norm"),
                 dict(positional="rope", attention=dict(kind="sliding_window", window=2, global_tokens=1)),
                 dict(positional="learned", attention_score="additive", norm="pre",
                      attention=dict(kind="sliding_window", window=3)),
                 # Section 7's performer: the running sums instead of a cache.
                 dict(positional="rope", norm="pre", attention=dict(kind="performer", features=8)),
                 dict(positional="learned", attention=dict(kind="performer", features=1)),
                 dict(positional="rope", rope_style="interleaved", norm="pre", norm_type="rms_norm",
                      activation="silu", ffn_gated=True, num_kv_heads=1, bias=False,
                      attention=dict(kind="performer", features=5)),
                 # Section 7's block_sparse: the cache masked by blocks at
                 # absolute positions (random blocks, a partial last block).
                 dict(positional="rope", attention=dict(kind="block_sparse", block=3, window_blocks=0,
                                                        global_blocks=1, random_blocks=2)),
                 dict(positional="learned", num_kv_heads=1, attention=dict(
                     kind="block_sparse", block=2, window_blocks=1, global_blocks=0, random_blocks=1))):
        desc = dict(architecture="decoder", d_model=16, num_heads=2, d_ff=24, num_layers=2,
                    max_seq_len=12, vocab_size=23, **desc)
        cfg = R.Config(desc)
        fm = R.load_weights(R.build_formula_model(cfg), R.make_weights(cfg, 3))
        seq = np.random.default_rng(0).integers(0, 23, size=(2, 11))
        full = full_rows(fm, seq)
        label = desc["positional"] + (" performer M=%d" % cfg.performer_m if cfg.performer else "") + (
            " embedding_norm" if cfg.embedding_norm else "")
        for chunks in ((11,), (4, 1, 6), (1,) * 11):
            kv = KVCacheDecoder(fm)
            outs, at, shapes = [], 0, set()
            for c in chunks:
                outs.append(kv.step(seq[:, at:at + c]).numpy())
                at += c
                shapes.add(tuple(tuple(t.shape) for t in kv.cache[0]))
            d = float(np.max(np.abs(np.concatenate(outs, axis=1) - full)))
            check("kv cache %s chunks %s vs full forward: %.3g" % (label, chunks, d),
                  d < 1e-5 * max(1.0, float(np.max(np.abs(full)))))
            if cfg.performer:   # a fixed-size state: S [B, H, M, dk] and z [B, H, M], at any position
                want = {((2, 2, cfg.performer_m, 8), (2, 2, cfg.performer_m))}
                check("kv cache %s chunks %s: performer state %s, expected %s at every step"
                      % (label, chunks, sorted(shapes), sorted(want)), shapes == want)
    # encoder_decoder: the encoder once, cross K/V once, the target in chunks;
    # src lengths other than the target's; and src matters (not vacuous).
    for desc, shared in ((dict(positional="rope", rope_style="interleaved", norm="pre",
                               attention_score="additive", num_encoder_layers=1,
                               num_decoder_layers=2), True),
                         (dict(positional="rope", attention_score="dot", tie_embeddings=False), False),
                         (dict(positional="learned", attention_score="bilinear", norm="pre",
                               num_encoder_layers=2, num_decoder_layers=1), False),
                         (dict(positional="sinusoidal", embedding_scale="sqrt_d_model"), True),
                         (dict(positional="none", final_norm=True), False),
                         (dict(positional="learned", embedding_norm=True, norm="pre"), True),
                         (dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu",
                               ffn_gated=True, num_kv_heads=1, bias=False), False),
                         (dict(positional="rope", attention_score="bilinear",
                               attention=dict(kind="sliding_window", window=2, global_tokens=1)), True),
                         # performer in both self-attentions (the encoder's not
                         # causal), cross-attention full
                         (dict(positional="rope", norm="pre", num_encoder_layers=2, num_decoder_layers=1,
                               attention=dict(kind="performer", features=6)), False),
                         (dict(positional="learned", num_kv_heads=1, bias=False,
                               attention=dict(kind="performer", features=3)), True),
                         # block_sparse in both self-attentions (the encoder's
                         # not causal), cross-attention full
                         (dict(positional="rope", attention=dict(kind="block_sparse", block=2, window_blocks=0,
                                                                 global_blocks=1, random_blocks=2)), False)):
        desc = dict(dict(num_layers=2) if "num_encoder_layers" not in desc else {},
                    architecture="encoder_decoder", d_model=16, num_heads=2, d_ff=24,
                    max_seq_len=12, vocab_size=23, **desc)
        cfg = R.Config(desc)
        fm = R.load_weights(R.build_formula_model(cfg, shared), R.make_weights(cfg, 3, shared))
        rng = np.random.default_rng(1)
        tgt = rng.integers(0, 23, size=(2, 11))
        label = "encdec kv cache %s%s%s%s" % (desc["positional"], " shared" if shared else "",
                                              " performer M=%d" % cfg.performer_m if cfg.performer else "",
                                              " embedding_norm" if cfg.embedding_norm else "")
        for src_len in (7, 12, 1):
            src = rng.integers(0, 23, size=(2, src_len))
            full = full_rows(fm, tgt, src)
            scale = max(1.0, float(np.max(np.abs(full))))
            for chunks in ((11,), (1, 4, 6), (1,) * 11):
                kv = KVCacheDecoder(fm, src)
                outs, at = [], 0
                for c in chunks:
                    outs.append(kv.step(tgt[:, at:at + c]).numpy())
                    at += c
                d = float(np.max(np.abs(np.concatenate(outs, axis=1) - full)))
                check("%s src %d chunks %s vs full forward: %.3g" % (label, src_len, chunks, d),
                      d < 1e-5 * scale)
            other = src.copy()
            other[:, 0] = (other[:, 0] + 1) % 23
            d = float(np.max(np.abs(KVCacheDecoder(fm, other).step(tgt).numpy() - full)))
            check("%s src %d: another src changes the logits (%.3g)" % (label, src_len, d), d > 1e-3)
        ids_kv, rows_kv = KVCacheDecoder(fm, src).greedy(tgt[:, :1], 6)
        ids_f, rows_f = greedy_full(fm, tgt[:, :1], 6, src)
        d = float(np.max(np.abs(rows_kv - rows_f)))
        check("%s greedy: same ids, logits %.3g" % (label, d),
              np.array_equal(ids_kv, ids_f) and d < 1e-5 * max(1.0, float(np.max(np.abs(rows_f)))))
    # The KV-cache check sees a decode step whose embeddings are not normed
    # (the norm on the prefill only) or normed before its position is added.
    desc = dict(architecture="decoder", d_model=16, num_heads=2, d_ff=24, num_layers=2, max_seq_len=12,
                vocab_size=23, positional="learned", embedding_norm=True)
    cfg = R.Config(desc)
    fm_n = R.load_weights(R.build_formula_model(cfg), R.make_weights(cfg, 4))
    seq = np.random.default_rng(2).integers(0, 23, size=(2, 11))
    full = full_rows(fm_n, seq)
    for mistake in ("decode steps not normed", "norm before the position"):
        kv = KVCacheDecoder(fm_n)
        right = kv._embed

        def wrong(ids, which, p0, p1, right=right, mistake=mistake):
            if mistake == "decode steps not normed" and p0 > 0:
                return fm_n.embed.weight[torch_ids(ids)] + fm_n.pos_embed.weight[p0:p1]
            if mistake == "norm before the position":
                return fm_n.embed_norm(fm_n.embed.weight[torch_ids(ids)]) + fm_n.pos_embed.weight[p0:p1]
            return right(ids, which, p0, p1)
        kv._embed = wrong
        outs = [kv.step(seq[:, :4]).numpy()] + [kv.step(seq[:, t:t + 1]).numpy() for t in range(4, 11)]
        d = float(np.max(np.abs(np.concatenate(outs, axis=1) - full)))
        check("kv cache with embedding_norm mistake (%s) differs from full forwards: %.3g" % (mistake, d), d > 1e-3)
    try:
        KVCacheDecoder(fm)
        check("encdec KVCacheDecoder without src is refused", False)
    except ValueError:
        pass
    _performer_decode_self_test(check)
    _block_sparse_decode_self_test(check)
    _linformer_decode_self_test(check)
    _mamba_decode_self_test(check)
    # The reference's checks against float64 pass on a correct reference and
    # fail on wrong ones.
    desc = dict(architecture="decoder", d_model=16, num_heads=2, d_ff=24, num_layers=2,
                max_seq_len=12, vocab_size=23, positional="sinusoidal")
    cfg = R.Config(desc)
    w = R.make_weights(cfg, 3)
    seq = np.random.default_rng(0).integers(0, 23, size=(2, 11))
    fm64 = R.load_weights(R.build_formula_model(cfg).double(), w)
    exact = full_rows(fm64, seq)
    scale = max(1.0, float(np.max(np.abs(exact))))
    noise = R.fp32_rounding_noise(lambda: full_rows(fm64, seq), exact, trials=NOISE_TRIALS)
    bound = FP32_NOISE_FACTOR * noise + R.F32_UNIT_ROUNDOFF * scale
    d32 = float(np.max(np.abs(full_rows(R.load_weights(R.build_formula_model(cfg), w), seq) - exact)))
    check("fp32 rounding noise %.3g: positive, below 1e-5 relative" % noise, 0 < noise < 1e-5 * scale)
    check("fp32 rounding noise is reproducible",
          noise == R.fp32_rounding_noise(lambda: full_rows(fm64, seq), exact, trials=NOISE_TRIALS))
    check("fp32 reference within %g x noise of float64: %.3g <= %.3g" % (FP32_NOISE_FACTOR, d32, bound),
          d32 <= bound)
    # A reference that rounded the weights to bf16 (read them wrongly) is off
    # by far more than fp32 rounding: the accuracy check catches it.
    wb = {k: torch.from_numpy(st.round_to_dtype(v.numpy(), "BF16")) for k, v in w.items()}
    d_bf16 = float(np.max(np.abs(full_rows(R.load_weights(R.build_formula_model(cfg), wb), seq) - exact)))
    check("bf16-weight reference flagged: %.3g > %.3g" % (d_bf16, bound), d_bf16 > 10 * bound)
    # Ill-conditioning shows in the noise: stronger layers amplify rounding.
    gained = {k: v * 8.0 if k.endswith(("in_proj_weight", "out_proj.weight", "linear1.weight",
                                        "linear2.weight")) else v for k, v in w.items()}
    fm64g = R.load_weights(R.build_formula_model(cfg).double(), gained)
    exact_g = full_rows(fm64g, seq)
    noise_g = R.fp32_rounding_noise(lambda: full_rows(fm64g, seq), exact_g, trials=NOISE_TRIALS)
    check("fp32 noise relative to tolerance grows with the layers' gain: %.3g vs %.3g"
          % (noise_g / tolerance(exact_g), noise / tolerance(exact)),
          noise_g / tolerance(exact_g) > 2 * noise / tolerance(exact))
    # (a) vs (b) and the KV cache in float64: agree within AB_BOUND_F64, and
    # a mistake (Q and K blocks of one in_proj swapped) shows far above it.
    d_ab = float(np.max(np.abs(full_rows(R.load_weights(R.build_torch_model(cfg).double(), w), seq)
                               - exact))) / scale
    check("(a) vs (b) in float64: %.3g < %g" % (d_ab, AB_BOUND_F64), d_ab < AB_BOUND_F64)
    w_bad = dict(w)
    k = "layers.1.self_attn.in_proj_weight"
    w_bad[k] = torch.cat([w[k][16:32], w[k][:16], w[k][32:]])
    d_bad = float(np.max(np.abs(full_rows(R.load_weights(R.build_torch_model(cfg).double(), w_bad), seq)
                                - exact))) / scale
    check("(a) with Q/K swapped vs (b) in float64: %.3g > 1e6 x %g" % (d_bad, AB_BOUND_F64),
          d_bad > 1e6 * AB_BOUND_F64)
    kv_ids, kv_rows = KVCacheDecoder(fm64).greedy(seq[:, :4], 7)
    d_kv = float(np.max(np.abs(kv_rows - logits_on_prefix(fm64, seq[:, :4], kv_ids)))) / scale
    check("float64 KV cache vs full forwards: %.3g < %g" % (d_kv, AB_BOUND_F64), d_kv < AB_BOUND_F64)
    print("run_generate self-test: %d checks, %d failed" % (count[0], len(fails)))
    return not fails


def _performer_decode_self_test(check):
    """prepare_reference's KV-cache check (check_kv_cache) on performer
    models, in float64 as there: it passes with the correct running sums,
    and each of PERFORMER_DECODE_MISTAKES planted in KVCacheDecoder fails
    it, by far (its logits more than 1e-3 relative from the full forwards';
    kv_w on grouped-query models only): a grouped-query causal decoder with
    rope (a prompt of 4 and of 1, batch 2) and an encoder_decoder (its
    encoder performer too, not causal)."""
    import reference as R
    perf = dict(kind="performer", features=8)
    models = (
        ("decoder gqa", dict(architecture="decoder", num_layers=2, num_kv_heads=2, positional="rope",
                             norm="pre", attention=perf), 4),
        ("decoder gqa prompt 1", dict(architecture="decoder", num_layers=2, num_kv_heads=2, positional="rope",
                                      norm="pre", attention=perf), 1),
        ("encdec", dict(architecture="encoder_decoder", num_layers=2, positional="learned", num_kv_heads=2,
                        attention=perf), 3),
    )
    for label, desc, plen in models:
        desc = dict(d_model=16, num_heads=4, d_ff=24, max_seq_len=12, vocab_size=23, **desc)
        cfg = R.Config(desc)
        w = R.make_weights(cfg, 5)
        w = {k: (v * 3.0 if k.endswith(("in_proj_weight", "out_proj.weight", "linear1.weight",
                                         "linear2.weight")) else v) for k, v in w.items()}
        fm64 = R.load_weights(R.build_formula_model(cfg).double(), w)
        rng = np.random.default_rng(2)
        src = rng.integers(0, 23, size=(2, 7)) if cfg.is_encdec else None
        prompt2d = rng.integers(0, 23, size=(2, plen))
        n = 7
        ref_ids, _ = greedy_full(fm64, prompt2d, n, src)
        ref64 = logits_on_prefix(fm64, prompt2d, ref_ids, src)
        scale = max(1.0, float(np.max(np.abs(ref64))))
        try:
            d = check_kv_cache(fm64, prompt2d, n, src, ref_ids, ref64, scale)
            check("performer %s: KV-cache check passes (%.3g)" % (label, d), True)
        except CaseFailure as e:
            check("performer %s: KV-cache check passes: %s" % (label, e), False)
        for mistake in PERFORMER_DECODE_MISTAKES:
            try:
                check_kv_cache(fm64, prompt2d, n, src, ref_ids, ref64, scale, mistake)
                caught = "not caught"
            except CaseFailure as e:
                caught = str(e)
            ids_m, rows_m = KVCacheDecoder(fm64, src, mistake).greedy(prompt2d, n)
            d = float(np.max(np.abs(rows_m - logits_on_prefix(fm64, prompt2d, ids_m, src)))) / scale
            check("performer %s: planted %s caught by the KV-cache check (%s), logits off by %.3g "
                  "relative > 1e-3" % (label, mistake, _clip(caught, 90), d),
                  caught.startswith("reference: torch KV-cache") and not d <= 1e-3)


def _block_sparse_decode_self_test(check):
    """prepare_reference's KV-cache check on block_sparse models, in
    float64: it passes with the rule at absolute positions, and each of
    BLOCK_SPARSE_DECODE_MISTAKES planted in KVCacheDecoder fails it, by far
    (logits more than 1e-3 relative off): causal decoders with blocks of 2
    and 3 (no global block, so that a decode step's query block matters),
    patterns of valid ids with -1 and ids past the block count among them,
    prompts of 4 and 1, and an encoder_decoder (its encoder block_sparse
    too, not causal)."""
    import reference as R
    torch = _torch()
    models = (
        ("decoder B=2 wb=0 gb=0 R=2", dict(architecture="decoder", num_layers=2, positional="rope", norm="pre",
                                           attention=dict(kind="block_sparse", block=2, window_blocks=0,
                                                          global_blocks=0, random_blocks=2)), 4),
        ("decoder gqa B=3 wb=0 gb=0 R=3 prompt 1", dict(architecture="decoder", num_layers=2, num_kv_heads=2,
                                                        positional="learned",
                                                        attention=dict(kind="block_sparse", block=3,
                                                                       window_blocks=0, global_blocks=0,
                                                                       random_blocks=3)), 1),
        ("encdec B=2 wb=0 gb=0 R=2", dict(architecture="encoder_decoder", num_layers=2, positional="rope",
                                          attention=dict(kind="block_sparse", block=2, window_blocks=0,
                                                         global_blocks=0, random_blocks=2)), 3),
    )
    for label, desc, plen in models:
        desc = dict(d_model=16, num_heads=4, d_ff=24, max_seq_len=16, vocab_size=23, **desc)
        cfg = R.Config(desc)
        w = R.make_weights(cfg, 7)
        w = {k: (v * 3.0 if k.endswith(("in_proj_weight", "out_proj.weight", "linear1.weight",
                                         "linear2.weight")) else v) for k, v in w.items()}
        g = torch.Generator().manual_seed(11)
        for k in [k for k in w if k.endswith("block_pattern")]:
            p = torch.randint(0, w[k].shape[0], w[k].shape, generator=g, dtype=torch.int32)
            p[1::3, 0], p[2::4, -1] = -1, w[k].shape[0] + 1
            w[k] = p
        fm64 = R.load_weights(R.build_formula_model(cfg).double(), w)
        rng = np.random.default_rng(3)
        src = rng.integers(0, 23, size=(2, 9)) if cfg.is_encdec else None
        prompt2d = rng.integers(0, 23, size=(2, plen))
        n = 16 - plen
        ref_ids, _ = greedy_full(fm64, prompt2d, n, src)
        ref64 = logits_on_prefix(fm64, prompt2d, ref_ids, src)
        scale = max(1.0, float(np.max(np.abs(ref64))))
        try:
            d = check_kv_cache(fm64, prompt2d, n, src, ref_ids, ref64, scale)
            check("block_sparse %s: KV-cache check passes (%.3g)" % (label, d), True)
        except CaseFailure as e:
            check("block_sparse %s: KV-cache check passes: %s" % (label, e), False)
        for mistake in BLOCK_SPARSE_DECODE_MISTAKES:
            try:
                check_kv_cache(fm64, prompt2d, n, src, ref_ids, ref64, scale, block_mistake=mistake)
                caught = "not caught"
            except CaseFailure as e:
                caught = str(e)
            ids_m, rows_m = KVCacheDecoder(fm64, src, block_mistake=mistake).greedy(prompt2d, n)
            d = float(np.max(np.abs(rows_m - logits_on_prefix(fm64, prompt2d, ids_m, src)))) / scale
            check("block_sparse %s: planted %s caught by the KV-cache check (%s), logits off by %.3g "
                  "relative > 1e-3" % (label, mistake, _clip(caught, 90), d),
                  caught.startswith("reference: torch KV-cache") and not d <= 1e-3)


def _mamba_decode_self_test(check):
    """prepare_reference's KV-cache check on models with mamba layers, in
    float64: it passes with KVCacheDecoder's state (the last d_conv - 1
    convolution inputs and h, carried from step to step), prefilled in one
    chunk, in pieces and token by token, and each of MAMBA_DECODE_MISTAKES
    planted in it fails the check, by far (logits more than 1e-3 relative
    off; the convolution's mistakes need d_conv >= 2): a pure stack with a
    prompt of 2 (shorter than its 3 carried inputs) and of 6, batch 2; a
    hybrid with a sliding window, a full attention layer with 2 kv heads of
    4 and rope; a stack with d_conv 1 (no convolution state)."""
    import reference as R
    models = (
        ("pure d_conv 4 prompt 2", dict(layers=["mamba", "mamba"], norm="pre"), 2),
        ("pure d_conv 4 prompt 6", dict(layers=["mamba", "mamba"], mamba=dict(d_state=8)), 6),
        ("hybrid gqa rope", dict(num_heads=4, d_ff=24, num_kv_heads=2, positional="rope", num_layers=3,
                                 layers=["mamba", dict(kind="attention", attention=dict(kind="sliding_window",
                                                                                       window=2)), "attention"],
                                 mamba=dict(d_state=4, d_conv=3, expand=1)), 4),
        ("pure d_conv 1", dict(layers=["mamba", "mamba"], norm="pre", mamba=dict(d_conv=1, expand=3)), 3),
    )
    for label, desc, plen in models:
        desc = dict(dict(architecture="decoder", d_model=16, num_layers=2, max_seq_len=16, vocab_size=23), **desc)
        cfg = R.Config(desc)
        w = R.make_weights(cfg, 6)
        w = {k: (v * 3.0 if k.endswith(GAINED) else v) for k, v in w.items()}
        fm64 = R.load_weights(R.build_formula_model(cfg).double(), w)
        rng = np.random.default_rng(3)
        prompt2d = rng.integers(0, 23, size=(2, plen))
        n = 8
        ref_ids, _ = greedy_full(fm64, prompt2d, n)
        ref64 = logits_on_prefix(fm64, prompt2d, ref_ids)
        scale = max(1.0, float(np.max(np.abs(ref64))))
        try:
            d = check_kv_cache(fm64, prompt2d, n, None, ref_ids, ref64, scale)
            check("mamba %s: KV-cache check passes (%.3g)" % (label, d), True)
        except CaseFailure as e:
            check("mamba %s: KV-cache check passes: %s" % (label, e), False)
        # The prompt in pieces and token by token: the same logits.
        full = full_rows(fm64, prompt2d)
        for pieces in ([1] * plen, [plen // 2, plen - plen // 2]):
            dec = KVCacheDecoder(fm64)
            rows, at = [], 0
            for k in pieces:
                if k:
                    rows.append(dec.step(prompt2d[:, at:at + k]).numpy())
                    at += k
            got = np.concatenate(rows, axis=1)
            check("mamba %s: prefill in pieces %s = the full forward's rows (%.3g)" % (
                label, pieces, float(np.max(np.abs(got - full)))), float(np.max(np.abs(got - full))) / scale < 1e-12)
        for mistake in MAMBA_DECODE_MISTAKES:
            if mistake.startswith("conv") and cfg.mamba_d_conv == 1:
                continue
            try:
                check_kv_cache(fm64, prompt2d, n, None, ref_ids, ref64, scale, mamba_mistake=mistake)
                caught = "not caught"
            except CaseFailure as e:
                caught = str(e)
            ids_m, rows_m = KVCacheDecoder(fm64, mamba_mistake=mistake).greedy(prompt2d, n)
            d = float(np.max(np.abs(rows_m - logits_on_prefix(fm64, prompt2d, ids_m)))) / scale
            check("mamba %s: planted %s caught by the KV-cache check (%s), logits off by %.3g relative > 1e-3"
                  % (label, mistake, _clip(caught, 90), d),
                  caught.startswith("reference: torch KV-cache") and not d <= 1e-3)


def _linformer_decode_self_test(check):
    """A linformer model regenerates (regenerates()): KVCacheDecoder
    refuses it, saying why, and make_decoder gives RegenerateDecoder, whose
    logits (prefill in one chunk, in pieces, token by token) are the full
    forwards'; check_regeneration passes on the second form's regeneration,
    and fails the planted cache (LINFORMER_DECODE_MISTAKES: "cached") by
    far, on a decoder (learned positions, a prompt of 4, batch 2), a
    grouped-query decoder with rope (a prompt of 1) and an encoder_decoder
    (the encoder's self-attention linformer too), in float64 as in
    prepare_reference.  With one decoder layer that cache is exact (its
    keys depend on their own tokens alone; the planted decoder's linformer
    is right where a cache can serve), and check_regeneration then fails
    the case itself: it could not tell regeneration from a cache."""
    import reference as R
    lin = dict(kind="linformer", k=5)
    models = (
        ("decoder", dict(architecture="decoder", num_layers=2, positional="learned", causal=False,
                         attention=lin), 4),
        ("decoder gqa rope prompt 1", dict(architecture="decoder", num_layers=2, num_kv_heads=2,
                                           positional="rope", norm="pre", causal=False, attention=lin), 1),
        ("encdec", dict(architecture="encoder_decoder", num_layers=2, positional="sinusoidal", causal=False,
                        attention=lin), 3),
    )
    n = 7
    for label, desc, plen in models:
        for layers in (2, 1):
            d = dict(desc, d_model=16, num_heads=4, d_ff=24, max_seq_len=12, vocab_size=23)
            d["num_layers"] = layers
            cfg = R.Config(d)
            w = R.make_weights(cfg, 5)
            w = {k: (v * 3.0 if k.endswith(("in_proj_weight", "out_proj.weight", "linear1.weight",
                                             "linear2.weight")) else v) for k, v in w.items()}
            fm64 = R.load_weights(R.build_formula_model(cfg).double(), w)
            second64 = R.load_weights(R.build_torch_model(cfg).double(), w)
            rng = np.random.default_rng(2)
            src = rng.integers(0, 23, size=(2, 7)) if cfg.is_encdec else None
            prompt2d = rng.integers(0, 23, size=(2, plen))
            ref_ids, _ = greedy_full(fm64, prompt2d, n, src)
            ref64 = logits_on_prefix(fm64, prompt2d, ref_ids, src)
            scale = max(1.0, float(np.max(np.abs(ref64))))
            tol = tolerance(ref64)
            cached_ids, cached_rows = KVCacheDecoder(fm64, src, linformer_mistake="cached").greedy(prompt2d, n)
            d_c = float(np.max(np.abs(cached_rows - logits_on_prefix(fm64, prompt2d, cached_ids, src)))) / scale
            if layers == 1:
                check("linformer %s, 1 layer: a cache of its keys is exact (%.3g < %g)" % (label, d_c, AB_BOUND_F64),
                      d_c < AB_BOUND_F64)
                try:
                    check_regeneration(fm64, second64, prompt2d, n, src, ref_ids, ref64, scale, tol)
                    caught = "not caught"
                except CaseFailure as e:
                    caught = str(e)
                check("linformer %s, 1 layer: check_regeneration says it cannot tell regeneration from a cache "
                      "(%s)" % (label, _clip(caught, 80)), "cannot tell regeneration from a cache" in caught)
                continue
            try:
                KVCacheDecoder(fm64, src)
                refused = "not refused"
            except ValueError as e:
                refused = str(e)
            check("linformer %s: KVCacheDecoder refuses it (%s)" % (label, _clip(refused, 60)),
                  "linformer" in refused and "regenerates" in refused)
            dec = make_decoder(fm64, src)
            check("linformer %s: make_decoder regenerates" % label, isinstance(dec, RegenerateDecoder))
            seq = np.concatenate([prompt2d, ref_ids], axis=1)
            full = full_rows(fm64, seq, src)
            for chunks in ([seq.shape[1]], [plen] + [1] * n, [1] * seq.shape[1]):
                dec.reset()
                outs, p0 = [], 0
                for c in chunks:
                    outs.append(dec.step(seq[:, p0:p0 + c]).numpy())
                    p0 += c
                # Each chunk's rows are those of the forward over its prefix:
                # the last chunk's equal the whole forward's.
                last = outs[-1]
                d_last = float(np.max(np.abs(last - full[:, -last.shape[1]:]))) / scale
                prefix_ok = all(
                    float(np.max(np.abs(o[:, -1] - full_rows(fm64, seq[:, :sum(chunks[:i + 1])], src)[:, -1])))
                    / scale < AB_BOUND_F64 for i, o in enumerate(outs))
                check("linformer %s: RegenerateDecoder in chunks %s: each chunk the forward over its prefix "
                      "(%.3g)" % (label, chunks[:3] + (["..."] if len(chunks) > 3 else []), d_last),
                      d_last < AB_BOUND_F64 and prefix_ok)
            try:
                dr, dc = check_regeneration(fm64, second64, prompt2d, n, src, ref_ids, ref64, scale, tol)
                check("linformer %s: check_regeneration passes (%.3g; the cache %.0f*tol off)"
                      % (label, dr, dc / tol), True)
            except CaseFailure as e:
                check("linformer %s: check_regeneration passes: %s" % (label, e), False)
            for mistake in LINFORMER_DECODE_MISTAKES:
                try:
                    check_regeneration(fm64, second64, prompt2d, n, src, ref_ids, ref64, scale, tol,
                                       decoder=KVCacheDecoder(fm64, src, linformer_mistake=mistake))
                    caught = "not caught"
                except CaseFailure as e:
                    caught = str(e)
                check("linformer %s: planted %s caught by check_regeneration (%s), logits off by %.3g relative "
                      "> 1e-3" % (label, mistake, _clip(caught, 90), d_c),
                      caught.startswith("reference: regenerating decode") and not d_c <= 1e-3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--tfm-compile", help="path to tfm-compile (required unless --reference-only)")
    ap.add_argument("--work-dir", default=None, help="where each case's files go (default: ./generate-work)")
    ap.add_argument("-k", dest="filters", action="append", default=[],
                    help="run cases whose name contains FILTER (or matches it as a glob); repeatable")
    case_pool.add_shard_argument(ap)
    case_pool.add_exclude_argument(ap)
    ap.add_argument("-j", dest="jobs", type=int, default=2, help="cases in parallel (default 2)")
    ap.add_argument("--reference-only", action="store_true",
                    help="the PyTorch side only: greedy loop, its reproducibility, the torch KV cache "
                         "against full recompute, (a) vs (b), fp64 conditioning, greedy margins")
    ap.add_argument("--compile-timeout", type=int, default=300)
    ap.add_argument("--run-timeout", type=int, default=120)
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--backend", choices=["hwy", "llvm"], default=None,
                    help="passed to tfm-compile as --backend (default: tfm-compile's own, hwy)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--self-test", action="store_true", help="check the harness's own helpers and exit")
    args = ap.parse_args(argv)

    if args.self_test:
        return 0 if self_test(args.verbose) else 1

    if args.list:
        for c in cases_mod.CASES:
            print("%-40s %s" % (c.name, c.note))
        return 0
    problems = cases_mod.validate() + ["not covered: " + m for m in cases_mod.check_coverage()]
    if problems:
        for p in problems:
            print("generate_cases.py: " + p, file=sys.stderr)
        return 2
    if not args.reference_only and not args.tfm_compile:
        ap.error("--tfm-compile is required (or use --reference-only)")
    tfm_compile = os.path.abspath(args.tfm_compile) if args.tfm_compile else None
    if tfm_compile and not (os.path.isfile(tfm_compile) and os.access(tfm_compile, os.X_OK)):
        ap.error("--tfm-compile %s is not an executable file" % args.tfm_compile)
    work_dir = os.path.abspath(args.work_dir or "generate-work")
    os.makedirs(work_dir, exist_ok=True)

    names = select(args.filters, args.shard, args.excludes)
    if not names:
        print("no case matches %s%s" % (args.filters, " less %s" % args.excludes if args.excludes else ""),
              file=sys.stderr)
        print("0 passed, 0 failed")
        return 2
    opts = dict(work_dir=work_dir, tfm_compile=tfm_compile, reference_only=args.reference_only,
                compile_timeout=args.compile_timeout, run_timeout=args.run_timeout,
                verbose=args.verbose, backend=args.backend)

    return case_pool.run_cases(names, run_one, opts, args.jobs, _init_worker)


if __name__ == "__main__":
    sys.exit(main())
