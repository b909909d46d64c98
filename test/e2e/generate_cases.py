"""The table of `--generate` (incremental decoding, KV cache) cases for
run_generate.py: a model description (contract section 2), the prompt, how
many tokens to generate, how to compile, and which extra runs to make
(sampling, too-long prompt).

Decoder models (`architecture: decoder`): the prompt is the `input` ids.
Issue 8 acceptance: every positional kind (sinusoidal, learned, rope half,
rope interleaved, none) with both norms (pre, post): ten models, which also
carry the other features (score kinds, batch 2, prompt length 1, unbatched
prompt, tied/untied heads, int32/int64 ids, --max-seq-len, sampling, the
too-long check), so that the whole run needs only a dozen compiles.

Encoder-decoder models (`architecture: encoder_decoder`, generating the
target): the prompt is `src` (fixed, `GenCase.src`) and the decoder's start
`tgt` (`GenCase.prompt`, continued by the new tokens).  Six models cover
every positional kind, both norms, every score kind, batch 1, batch 2 and no
batch dimension, a tgt start of length 1 and longer, src longer and shorter
than tgt, separate src/tgt embeddings and one shared `embed.weight`, a head
tied to the target embedding and an untied one, different encoder and
decoder depths, int32/int64 ids (also mixed), --max-seq-len with
tgt + N == the limit (and src above the model's max_seq_len), sampling,
and the too-long checks (tgt + N, and src, above the limit).

Section 7 (`attention` of kind sliding_window): causal decoders with W 3,
G 0 and W 4, G 2, prompts shorter and longer than the window (and than
W + G), batch 1, 2 and none, rope, learned positions, bilinear scores, 2 kv
heads of 4, sampled and too_long runs; 20 new tokens each, so the window
slides over absolute positions well past the prompt.  run_generate's
KVCacheDecoder has to mask its cache by the same rule.

Section 7 (`attention` of kind performer, FAVOR+): causal decoders with
rope half (M 8, batch 2, sampled), learned positions (M 1, unbatched,
too_long), llama-like with 2 kv heads of 4 (M 32, untied) and a prompt of 1
token whose 23 new tokens reach max_seq_len 24 (M 4, interleaved rope,
too_long); two encoder_decoders, whose encoder self-attention is performer
too (not causal) and cross-attention full: rope, batch 2, too_long, and
M 32 with 2 kv heads, no biases, an unbatched tgt start of 1.
run_generate's KVCacheDecoder keeps the running sums (no keys) per head.

Section 7 (`attention` of kind block_sparse, BigBird): causal decoders
(`gen_bs_*`) whose 20 new tokens cross several block boundaries, the query
block of a decode step being its position // B: B 4 with W 1, G 1, R 2
(I32, batch 2, sampled), B 3 with W 0, G 1, R 3 (I64, rope, an unbatched
prompt of 2, too_long), llama-like with 2 kv heads of 4 (B 2, W 1, G 0, R
1), and R 0 with B 1 and --max-seq-len 27 above the model's 16 (allowed
without random blocks).  Their block_pattern ids are cases.py's
block_patterns() for the final length (prompt + N), so ids past a step's
block count exist in every step.  run_generate's KVCacheDecoder masks its
cache by the rule at absolute positions.

Section 7 (`attention` of kind linformer, never causal: `"causal": false`):
no cache can serve it (E_n mixes every position, n grows each step, and
earlier positions' outputs change with each token), so the compiled model
regenerates (a full forward over the sequence so far at each step) and the
`gen_lin_*` cases check it against the reference's full forward over each
prefix: a decoder with learned positions (k 6, batch 2, sampled), one with
rope half and k 10 above its unbatched prompt of 4, llama-like with 2 kv
heads of 4 (k 5, too_long), a prompt of 1 token whose 11 new tokens reach
max_seq_len 12 (k 4, interleaved rope, too_long), and an encoder_decoder
with both self-attentions linformer (src fixed, tgt growing; batch 2,
too_long).  At most 12 new tokens each, 2 decoder layers or more (with one,
a cache of its keys would be exact).  run_generate's KVCacheDecoder refuses
them; its RegenerateDecoder (on the factored second form) stands in, and
each case must show that a cache would be far off (check_regeneration).

Section 11 (norm_type, silu, ffn_gated, num_kv_heads, bias): llama-like
decoders (pre rms norms, gated silu, rope, no biases) with 2 kv heads of 4
(batch 2, sampled too), one kv head (multi-query, unbatched, interleaved
rope, too_long) and dk 12 with a prompt of length 1; an encoder_decoder
with 2 kv heads in self- and cross-attention and no biases.  Their
reference checks include run_generate's KV cache, which keeps num_kv_heads
heads per layer like the compiled model.

Section 7 (`ffn` of kind moe, Mixtral routing, every layer of every stack):
decoders with E 4, K 2 (rope, batch 2, sampled), E 8, K 1 (learned
positions, an unbatched prompt, too_long) and llama-like with gated silu
experts, E 5, K 3 and 2 kv heads of 4, and an encoder_decoder with E 4,
K 2 in both stacks (too_long); pre norm.  A decode step routes its new
token alone; the oracle's self-test checks the routing margin of every
token of each greedy path (moe_case_sequence()).

Section 7's `layers` (a decoder's per-layer kinds): a performer, a window
and a full MoE layer (rope, batch 2, sampled); llama-like with block_sparse,
window + gated MoE and performer layers (unbatched, too_long); model-level
window and MoE overridden by a dense and a performer layer (learned
positions).  run_generate's KVCacheDecoder keeps per layer what its kind
needs.

Section 7's mamba layers (`gen_mamba_*`): pure stacks (default sizes,
batch 2, sampled; a prompt of 1 token, unbatched, d_conv 3, too_long;
d_conv 1, expand 3, rms norms, untied) and hybrids (Jamba-like: mamba, a
window with an MoE FFN, mamba, full attention; llama-like with 2 kv heads
of 4), 20 new tokens each.  A mamba layer decodes from its fixed-size state
(its last d_conv - 1 convolution inputs and h), which run_generate's
KVCacheDecoder keeps too.

embedding_norm (the model's norm on the summed embeddings): a decoder with
learned positions, so that every decode step's row is normed after its
offset position is added (run_generate's KVCacheDecoder norms each new
row the same way).

`check_coverage()` asserts that every required feature is exercised, for
both architectures (encoder_decoder features are prefixed `encdec `);
`/usr/bin/python3 generate_cases.py -v` prints the map.
"""

import itertools
import os
import sys
import zlib
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cases import Input  # noqa: E402  (seq, batch (None: no batch dim), dtype)
from cases import PATTERN_DTYPES, block_patterns, pattern_facts  # noqa: E402  (block_sparse ids)
from cases import layer  # noqa: E402  (a `layers` entry)


@dataclass
class GenCase:
    name: str
    model: Dict
    prompt: Input                        # decoder: `input`; encoder_decoder: the `tgt` start
    new_tokens: int = 20
    src: Optional[Input] = None          # encoder_decoder: the `src` ids (same batch as prompt)
    shared_embeddings: bool = False      # encoder_decoder: one `embed.weight` (tied head uses it)
    max_batch: Optional[int] = None      # --max-batch (default: the prompt's batch, if > 1)
    max_seq_len: Optional[int] = None    # --max-seq-len (default: none passed, the model's)
    weight_dtype: str = "F32"
    seed: Optional[int] = None           # weights/prompt seed (default: crc32 of the name)
    # Multiplies every in_proj/out_proj/linear1/linear2 weight (a mamba
    # mixer's in_proj and out_proj too: run_generate.GAINED) after
    # reference.make_weights: at PyTorch's init scale the residual stream is
    # dominated by the current token's embedding and a tied-head model just
    # repeats its last token; stronger layers make the context decide, so the
    # greedy paths are varied (the seeds below were picked for that, with a
    # top-2 logit gap of at least 10*tol at every step).  Stronger layers
    # also amplify rounding: run_generate.py requires the fp32 rounding noise
    # (emulated in float64, machine-independent) to stay below a quarter of
    # the tolerance; `run_generate.py --reference-only` prints it per case.
    weight_gain: float = 3.0
    # Extra runs: "sample" (--temperature/--top-k/--seed: determinism, the
    # top-k, and that the flags change the ids), "too_long" (prompt + N >
    # compiled max seq len must exit 1).
    extras: Tuple[str, ...] = ()
    # temperature, top_k, seed, other seed.  The weight gain spreads the
    # logits widely (the top two often 5-8 apart): at T=0.8 sampling is
    # nearly greedy (a correct sampler drew the greedy ids of
    # gen_rope_interleaved_pre_additive with probability 0.004, and repeated
    # its own sampled path with probability up to 0.3), so run_generate.py
    # could not tell it from an executable that ignores the flags.  At T=8
    # the top 5 are nearly even: the greedy ids have probability 1e-10.8
    # there (1e-22.9 and 1e-24.8 for the two batch-2 cases; run_generate.py
    # requires at most 1e-6), sampled paths at most ~1e-10.9 (20 draws), and
    # a sampler ignoring --top-k left the top 5 in 20 of 20 draws.
    sample: Tuple[float, int, int, int] = (8.0, 5, 1, 2)
    # block_sparse: the file dtype of every block_pattern (I32 or I64).
    pattern_dtype: str = "I32"
    note: str = ""

    def compile_args(self):
        args = []
        if self.effective_max_batch() != 1:
            args += ["--max-batch", str(self.effective_max_batch())]
        if self.max_seq_len is not None:
            args += ["--max-seq-len", str(self.max_seq_len)]
        return args

    def effective_max_batch(self):
        return self.max_batch if self.max_batch is not None else (self.prompt.batch or 1)

    def effective_max_seq_len(self):
        return self.max_seq_len if self.max_seq_len is not None else self.model["max_seq_len"]

    def effective_seed(self):
        if self.seed is not None:
            return self.seed
        return zlib.crc32(self.name.encode("utf-8")) & 0x7FFFFFFF


def _model(name, **kw):
    m = dict(name=name, architecture="decoder", d_model=32, num_heads=4, d_ff=64, num_layers=2,
             max_seq_len=32, vocab_size=64)
    m.update(kw)
    return {k: v for k, v in m.items() if v is not None}   # num_layers=None: drop the key


# Contract section 11, the Llama recipe (+ num_kv_heads).
LLAMA = dict(positional="rope", norm="pre", norm_type="rms_norm", activation="silu", ffn_gated=True,
             bias=False)


def window(w, g=None):
    """Contract section 7's sliding window (g None: global_tokens left out, 0)."""
    a = dict(kind="sliding_window", window=w)
    if g is not None:
        a["global_tokens"] = g
    return a


def performer(m):
    """Contract section 7's performer (FAVOR+) with M random features."""
    return dict(kind="performer", features=m)


def block_sparse(b, wb=None, gb=None, r=None):
    """Contract section 7's block_sparse (BigBird); None: the key left out."""
    a = dict(kind="block_sparse", block=b)
    for k, v in (("window_blocks", wb), ("global_blocks", gb), ("random_blocks", r)):
        if v is not None:
            a[k] = v
    return a




def linformer(k):
    """Contract section 7's Linformer with K projected rows (the model needs
    "causal": false: linformer is never causal)."""
    return dict(kind="linformer", k=k)


def moe(e, k):
    return dict(kind="moe", experts=e, top_k=k)


def stack_lengths(case, cfg):
    """The longest run-time length of each stack's self-attention: the
    prompt (tgt) plus the new tokens; an encoder_decoder's encoder, src."""
    total = case.prompt.seq + case.new_tokens
    return {"encoder": case.src.seq, "decoder": total} if cfg.is_encdec else {"layers": total}


def case_block_patterns(case, cfg):
    """The case's block_pattern ids (cases.block_patterns for the final
    length, its seed and pattern_dtype): name -> int array; {} without
    random blocks."""
    return block_patterns(cfg, case.effective_seed(), stack_lengths(case, cfg), case.pattern_dtype)


# Seeds of the gen_bs_* cases, picked (of 1..59) for varied greedy paths
# (6 to 10 distinct ids a row) and top-2 gaps of 31-173 tol, with fp32
# noise of 0.01-0.04 tol (run_generate.py --reference-only prints them).
SEED_BS_1, SEED_BS_2, SEED_BS_3, SEED_BS_4 = 52, 5, 3, 1
# gen_embnorm_learned_post's seed, picked (of 1..40) for varied greedy paths
# (10 and 6 distinct ids), a top-2 gap of 95 tol and fp32 noise of 0.034 tol.
SEED_EMBNORM = 27
# The gen_moe_* cases' seeds, picked (of 1..40) for varied greedy paths (6
# to 18 distinct ids a row), top-2 gaps of 73-87 tol, fp32 noise of
# 0.015-0.047 tol and routing margins of 0.0034-0.0086 (the top_k-th gate
# logit minus the next, every token of the greedy path).
SEED_MOE_1, SEED_MOE_2, SEED_MOE_3, SEED_MOE_4 = 18, 20, 11, 29
# The gen_layers_* cases' seeds and weight gains (performer layers: phi has
# no stabiliser, so the gains stay at 2 to 5), picked (of 1..40, gains 3
# and 4) for varied greedy paths (5 to 8 distinct ids a row), top-2 gaps of
# 38-98 tol, fp32 noise of 0.014-0.027 tol and routing margins of
# 0.018-0.033 (the top_k-th gate logit minus the next, every MoE layer,
# every token of the greedy path).
SEED_LAYERS_1, SEED_LAYERS_2, SEED_LAYERS_3 = 5, 10, 4
GAIN_LAYERS_1, GAIN_LAYERS_2, GAIN_LAYERS_3 = 4.0, 3.0, 3.0


def gen(name, prompt, model=None, **kw):
    return GenCase(name, _model(name, **(model or {})), prompt, **kw)


def gen_ed(name, src, tgt, model=None, **kw):
    """An encoder_decoder case: src fixed, tgt the decoder's start."""
    return GenCase(name, _model(name, architecture="encoder_decoder", **(model or {})), tgt,
                   src=src, **kw)


def prompt(seq, batch=1, dtype="int64"):
    return Input(seq, batch, dtype)


CASES = [
    # ---- sinusoidal -----------------------------------------------------------
    gen("gen_sinusoidal_post", prompt(7, dtype="int32"), dict(max_seq_len=16), max_seq_len=27,
        extras=("too_long",), seed=7,
        note="tied head; --max-seq-len 27 above the model's 16, prompt 7 + 20 = exactly the limit"),
    gen("gen_sinusoidal_pre_untied", prompt(5), dict(norm="pre", activation="gelu",
                                                     tie_embeddings=False), seed=7),
    # ---- learned --------------------------------------------------------------
    gen("gen_learned_post_bilinear", prompt(6), dict(positional="learned",
                                                     attention_score="bilinear"), seed=4),
    gen("gen_learned_pre_untied_unbatched", prompt(5, batch=None, dtype="int32"), dict(
        positional="learned", norm="pre", tie_embeddings=False),
        extras=("too_long",), note="prompt without a batch dimension: ids [N], step logits [N,1,V]"),
    # ---- rope, half -----------------------------------------------------------
    gen("gen_rope_half_post_batch2", prompt(7, batch=2, dtype="int32"), dict(positional="rope"),
        extras=("sample",), seed=6, note="two prompts; greedy and sampled"),
    # seed 40: with the name's crc32 seed, fp32 rounding could move one logit
    # (step 12) by 0.41*tol, and this case's fp32 reference was 0.107*tol
    # from float64 with netlib BLAS but 0.057*tol with OpenBLAS (Haswell).
    gen("gen_rope_half_pre_dot_dk24", prompt(5), dict(
        d_model=48, num_heads=2, d_ff=50, positional="rope", norm="pre", attention_score="dot",
        activation="gelu_tanh", rope_base=1000.0), seed=40, note="dk 24, unscaled dot scores"),
    # ---- rope, interleaved ----------------------------------------------------
    gen("gen_rope_interleaved_post_base500", prompt(6), dict(
        positional="rope", rope_style="interleaved", rope_base=500.0), seed=1),
    gen("gen_rope_interleaved_pre_additive", prompt(1), dict(
        positional="rope", rope_style="interleaved", norm="pre", attention_score="additive",
        additive_dim=12), extras=("sample",), seed=4, note="prompt of length 1; additive scores"),
    # ---- none -----------------------------------------------------------------
    gen("gen_none_post_scale", prompt(5), dict(positional="none", embedding_scale="sqrt_d_model",
                                               final_norm=True)),
    gen("gen_none_pre_seq1_unbatched", prompt(1, batch=None), dict(positional="none", norm="pre"), seed=5,
        note="length-1 prompt without a batch dimension"),
    # ---- weights in bf16 (rounded values are what both sides use) ---------------
    gen("gen_pre_rope_weights_bf16", prompt(4), dict(positional="rope", norm="pre",
                                                     num_layers=1), weight_dtype="BF16", seed=2),
    # ---- encoder_decoder: src fixed, tgt continued -----------------------------
    # seed 67, gain 10: seed 33 with gain 8 had fp32 noise 0.425*tol (its fp32
    # reference 0.150*tol from float64 with netlib BLAS, 0.065*tol with
    # OpenBLAS); the well-conditioned seeds at lower gains mostly repeat one
    # token, this one alternates two with a top-2 gap of 341*tol.
    gen_ed("gen_ed_sinusoidal_post_tgt1", prompt(9), prompt(1), extras=("too_long",), seed=67,
           weight_gain=10.0,
           note="defaults; src 9, tgt start of length 1; separate src/tgt embeddings, head tied to "
                "tgt_embed"),
    gen_ed("gen_ed_learned_pre_untied_unbatched", prompt(7, batch=None, dtype="int32"),
           prompt(4, batch=None, dtype="int32"),
           dict(positional="learned", norm="pre", attention_score="bilinear", activation="gelu",
                tie_embeddings=False), extras=("too_long",), seed=26,
           note="no batch dimension: ids [N], step logits [N,1,V]; untied lm_head"),
    gen_ed("gen_ed_rope_half_post_batch2_dot", prompt(9, batch=2), prompt(4, batch=2, dtype="int32"),
           dict(positional="rope", attention_score="dot"), extras=("sample",), seed=53, weight_gain=2.0,
           note="two src/tgt pairs (src int64, tgt int32); greedy and sampled"),
    gen_ed("gen_ed_rope_interleaved_pre_additive_shared", prompt(5), prompt(1),
           dict(positional="rope", rope_style="interleaved", norm="pre", attention_score="additive",
                additive_dim=12, num_encoder_layers=1, num_decoder_layers=2, num_layers=None),
           shared_embeddings=True, seed=25, weight_gain=5.0,
           note="one embed.weight for src, tgt and the tied head; 1 encoder, 2 decoder layers"),
    gen_ed("gen_ed_none_post_shared_untied", prompt(5, dtype="int32"), prompt(6),
           dict(positional="none", embedding_scale="sqrt_d_model", final_norm=True,
                tie_embeddings=False), shared_embeddings=True, seed=16, weight_gain=5.0,
           note="src shorter than tgt; shared embeddings with an untied head"),
    gen_ed("gen_ed_sinusoidal_pre_maxseq", prompt(19), prompt(7),
           dict(max_seq_len=16, norm="pre", activation="gelu_tanh", num_encoder_layers=2,
                num_decoder_layers=1, num_layers=None), max_seq_len=27, seed=9, weight_gain=5.0,
           note="--max-seq-len 27 above the model's 16: src 19, tgt 7 + 20 = exactly the limit"),
    # ---- section 11: llama-like decoders, and an encoder_decoder ----------------
    gen("gen_llama_gqa_batch2", prompt(6, batch=2), dict(LLAMA, num_kv_heads=2, tie_embeddings=False),
        extras=("sample",), seed=6,
        note="pre rms norms, gated silu, rope, 2 kv heads of 4, no biases, untied head; greedy and sampled"),
    gen("gen_llama_mqa_interleaved_unbatched", prompt(5, batch=None, dtype="int32"), dict(
        LLAMA, num_kv_heads=1, rope_style="interleaved"), extras=("too_long",), seed=1,
        note="multi-query (one kv head), tied head, no batch dimension"),
    gen("gen_llama_gqa_dk12_seq1", prompt(1), dict(
        LLAMA, d_model=48, num_heads=4, num_kv_heads=2, d_ff=45, rope_base=500000.0), seed=6,
        note="dk 12, gated d_ff 45, a prompt of length 1"),
    gen_ed("gen_ed_gqa_nobias", prompt(7), prompt(3), dict(
        num_kv_heads=2, bias=False, norm="pre", norm_type="rms_norm", activation="silu",
        ffn_gated=True, positional="rope"), seed=9,
        note="2 kv heads in self- and cross-attention, no biases; rms norms, gated silu"),
    # ---- section 7: sliding-window attention (causal decoders) ------------------
    # Positions are absolute: decode step t's query (position prompt + t)
    # attends the keys within W of it and the first G; the 20 new tokens take
    # every case well past W + G, so the window slides over the cache.  The
    # seeds give varied greedy paths (6-12 distinct ids a row), top-2 gaps of
    # 30-70 tol and fp32 noise of 0.01-0.04 tol; the step logits of a model
    # without the window are thousands of tol away on the same prefixes.
    gen("gen_win_w3_short", prompt(2), dict(attention=window(3)), seed=5,
        note="W 3, G 0 (left out); a prompt of 2, shorter than the window"),
    gen("gen_win_w3_long", prompt(9, batch=2), dict(positional="rope", norm="pre", attention=window(3, 0)),
        extras=("sample",), seed=28,
        note="W 3, G 0, rope; two prompts of 9, longer than the window; greedy and sampled"),
    gen("gen_win_w4_g2_short", prompt(3, batch=None, dtype="int32"), dict(
        positional="learned", attention_score="bilinear", attention=window(4, 2)),
        extras=("too_long",), seed=2,
        note="W 4, G 2, learned positions, bilinear scores; an unbatched prompt of 3, inside W + G"),
    gen("gen_win_w4_g2_long", prompt(8, batch=2), dict(LLAMA, num_kv_heads=2, attention=window(4, 2)),
        seed=1,
        note="W 4, G 2, llama-like with 2 kv heads of 4; two prompts of 8, longer than W + G"),
    # The cache keeps G + W slots (a ring) when that is below max_seq_len:
    # global rows in decode steps, a window of 0, a prompt several rings
    # long, and a window too wide for a ring (every position kept).
    gen("gen_win_w2_g5_globals_decode", prompt(3, batch=2), dict(attention=window(2, 5)), seed=3,
        note="W 2, G 5 > the prompt of 3: the first decode steps are global rows (they see every key)"),
    gen("gen_win_w0_g2", prompt(4), dict(positional="rope", attention=window(0, 2)), seed=4,
        note="W 0, G 2: each token attends itself and the 2 globals; the ring holds none"),
    gen("gen_win_w5_g1_ring_prompt", prompt(29, batch=2), dict(
        LLAMA, num_kv_heads=2, max_seq_len=64, attention=window(5, 1)), seed=6,
        note="W 5, G 1, 2 kv heads: a prompt of 29 wraps the ring of 6 slots four times before decoding"),
    gen("gen_win_wide_no_ring", prompt(6), dict(attention=window(30, 2)), seed=8,
        note="W 30 + G 2 >= max_seq_len 32: the cache keeps every position (no ring)"),
    # ---- section 7: block_sparse (BigBird, causal decoders) ---------------------
    # Query block qb = position // B, in a decode step too; W, G in blocks;
    # each layer's block_pattern row qb (ids outside [0, ceil(keys / B))
    # ignored).  20 new tokens cross several block boundaries.
    gen("gen_bs_b4_r2_batch2", prompt(5, batch=2), dict(attention=block_sparse(4, 1, 1, 2)),
        extras=("sample",), seed=SEED_BS_1,
        note="B 4, W 1, G 1, R 2 (I32); prompts of 5, 25 positions: 7 blocks; greedy and sampled"),
    gen("gen_bs_b3_rope_i64_unbatched", prompt(2, batch=None, dtype="int32"), dict(
        positional="rope", norm="pre", attention=block_sparse(3, 0, 1, 3)), pattern_dtype="I64",
        extras=("too_long",), seed=SEED_BS_2,
        note="B 3, W 0, G 1, R 3 (I64), rope half; an unbatched prompt of 2 inside the first block, 22 "
             "positions: 8 blocks"),
    gen("gen_bs_llama_gqa", prompt(7, batch=2), dict(LLAMA, num_kv_heads=2, attention=block_sparse(2, 1, 0, 1)),
        seed=SEED_BS_3,
        note="llama-like, 2 kv heads of 4; B 2, W 1, G 0, R 1; 27 positions: 14 blocks"),
    gen("gen_bs_long_prompt", prompt(70, batch=2), dict(max_seq_len=96, attention=block_sparse(8, 1, 1, 2)),
        seed=1,
        note="prompts of 70: the prefill's rows past 64 (the LLVM backend's second block of query rows) "
             "gather their pattern blocks; 90 positions: 12 blocks of 8, R 2"),
    gen("gen_bs_b1_r0_maxseq", prompt(7), dict(max_seq_len=16, positional="sinusoidal",
                                               attention=block_sparse(1, 2, 1)),
        max_seq_len=27, seed=SEED_BS_4,
        note="B 1, W 2, G 1, R 0 (no block_pattern): --max-seq-len 27 above the model's 16 is allowed; "
             "7 + 20 = the limit"),
    # ---- section 7: performer (FAVOR+) ------------------------------------------
    # A causal performer layer keeps only its running sums S = sum_j
    # phi(k_j)^T v_j [M, dv] and z = sum_j phi(k_j) [M] per head (no keys);
    # run_generate's KVCacheDecoder carries them from step to step, each new
    # token adding its key before its query reads them.  phi has no
    # stabiliser (contract), so a high weight_gain overflows fp32's exp (the
    # encoder_decoders' fp32 logits were NaN at gain 8, and at gain 5 with
    # M 32): the gains are 2 to 5, the seeds picked for varied greedy paths
    # (5 to 14 distinct ids a row), top-2 gaps of 14-72 tol and fp32 noise of
    # 0.01-0.05 tol.
    gen("gen_perf_rope_half_batch2", prompt(7, batch=2), dict(positional="rope", norm="pre",
                                                              attention=performer(8)),
        extras=("sample",), seed=29, weight_gain=5.0,
        note="M 8 = dk, rope half, pre norm; two prompts; greedy and sampled"),
    gen("gen_perf_learned_m1_unbatched", prompt(5, batch=None, dtype="int32"), dict(
        positional="learned", attention=performer(1)), extras=("too_long",), seed=5,
        note="M 1 (every row one weighting of the values so far), learned positions, post norm; "
             "an unbatched prompt"),
    gen("gen_perf_llama_gqa_m32", prompt(6, batch=2), dict(
        LLAMA, num_kv_heads=2, tie_embeddings=False, attention=performer(32)), seed=18,
        note="M 32 (4 dk), llama-like: rms norms, gated silu, rope, no biases, 2 kv heads of 4 "
             "(phi(K) with each query head's W_h), untied head; batch 2"),
    gen("gen_perf_seq1_to_max", prompt(1), dict(max_seq_len=24, positional="rope",
                                                 rope_style="interleaved", attention=performer(4)),
        new_tokens=23, extras=("too_long",), seed=27, weight_gain=5.0,
        note="a prompt of 1 token, 23 new tokens: 1 + 23 = max_seq_len 24; M 4, interleaved rope"),
    gen("gen_perf_long_prompt_batch2", prompt(20, batch=2), dict(max_seq_len=48, positional="rope",
                                                                 norm="pre", attention=performer(8)),
        seed=29, weight_gain=4.0,
        note="a prompt of 2 x 20 rows: the prefill's feature maps through W_h transposed and its rows in "
             "causal blocks of 16, the steps' one row each"),
    gen_ed("gen_perf_ed", prompt(9, batch=2), prompt(3, batch=2), dict(
        positional="rope", norm="pre", attention=performer(8)), extras=("too_long",), seed=43,
        weight_gain=4.0, note="encoder_decoder: the encoder's performer not causal, the decoder's causal (running "
             "sums), cross-attention full softmax; batch 2"),
    gen_ed("gen_perf_ed_gqa_unbatched", prompt(6, batch=None, dtype="int32"), prompt(1, batch=None),
           dict(positional="learned", num_kv_heads=2, bias=False, attention=performer(32)), seed=3,
           weight_gain=2.0, note="encoder_decoder, M 32, 2 kv heads of 4, no biases, learned positions; tgt start of 1, "
                "no batch dimension"),
]


# ---- the embeddings: embedding_norm ------------------------------------------------
CASES += [
    gen("gen_embnorm_learned_post", prompt(5, batch=2), dict(positional="learned", embedding_norm=True,
                                                            activation="gelu"), seed=SEED_EMBNORM,
        extras=("too_long",),
        note="embedding LayerNorm after token + learned position rows: the decode steps' offset "
             "positions are normed too; post norm, batch 2"),
]


# ---- section 7: mixture-of-experts FFNs ----------------------------------------------
# Every decoder layer (and the encoder's of an encoder_decoder) routes each
# token to its top_k experts; a decode step routes its one new token, the
# prefill the prompt's.  The oracle's self-test checks the routing margin
# of every token on the greedy path (moe_case_sequence()).
CASES += [
    gen("gen_moe_e4k2_pre", prompt(6, batch=2), dict(norm="pre", positional="rope", d_ff=50,
                                                    ffn=dict(kind="moe", experts=4, top_k=2)),
        extras=("sample",), seed=SEED_MOE_1,
        note="E 4, K 2, pre norm, rope; two prompts; greedy and sampled"),
    gen("gen_moe_e8k1_pre_unbatched", prompt(5, batch=None, dtype="int32"), dict(
        norm="pre", positional="learned", activation="gelu", d_ff=50, ffn=dict(kind="moe", experts=8, top_k=1)),
        extras=("too_long",), seed=SEED_MOE_2,
        note="E 8, K 1, learned positions, gelu; an unbatched prompt"),
    gen("gen_moe_llama_e5k3", prompt(4, batch=2), dict(LLAMA, num_kv_heads=2, d_ff=45, tie_embeddings=False,
                                                      ffn=dict(kind="moe", experts=5, top_k=3)), seed=SEED_MOE_3,
        note="llama-like (gated silu experts, rms norms, no biases), 2 kv heads of 4, untied head; E 5, K 3"),
    gen_ed("gen_moe_ed_e4k2", prompt(7), prompt(3), dict(norm="pre", d_ff=50, ffn=dict(kind="moe", experts=4, top_k=2)),
           extras=("too_long",), seed=SEED_MOE_4,
           note="encoder_decoder: both stacks MoE (the encoder's routing once, the decoder's per step); E 4, K 2"),
]


# ---- section 7: a decoder's per-layer kinds (`layers`) --------------------------------
# Each layer decodes by its own kind: a performer layer carries its running
# sums, a sliding-window layer its window and global tokens over absolute
# positions, a block_sparse layer its blocks' rule, a full layer its whole
# cache; an MoE layer routes each new token with its own gate.
# run_generate's KVCacheDecoder keeps per layer what that layer's kind needs.
CASES += [
    gen("gen_layers_perf_window_moe", prompt(6, batch=2), dict(
        positional="rope", norm="pre", num_layers=3, d_ff=50,
        layers=[layer(performer(8)), layer(window(3, 1)), layer(ffn=moe(4, 2))]),
        extras=("sample",), seed=SEED_LAYERS_1, weight_gain=GAIN_LAYERS_1,
        note="a performer layer (M 8), a sliding window (W 3, G 1) and a full layer with an MoE FFN (E 4, K 2) "
             "over model-level full attention and dense FFNs; rope, pre norm, batch 2; greedy and sampled"),
    gen("gen_layers_llama_bs_window_perf", prompt(5, batch=None, dtype="int32"), dict(
        LLAMA, num_kv_heads=2, d_ff=45, num_layers=3, tie_embeddings=False,
        layers=[layer(block_sparse(4, 1, 1, 2)), layer(window(4, 2), moe(5, 3)), layer(performer(16))]),
        extras=("too_long",), seed=SEED_LAYERS_2, weight_gain=GAIN_LAYERS_2,
        note="llama-like, 2 kv heads of 4, untied head: block_sparse (B 4, R 2: its block_pattern alone), a "
             "window (W 4, G 2) with gated MoE experts (E 5, K 3), a performer layer (M 16); unbatched"),
    gen("gen_layers_override_learned", prompt(4), dict(
        positional="learned", num_layers=3, d_ff=50, attention=window(2), ffn=moe(4, 1),
        layers=[layer(ffn=dict(kind="dense")), "attention", layer(performer(4))]),
        seed=SEED_LAYERS_3, weight_gain=GAIN_LAYERS_3,
        note="model-level window (W 2) and MoE (E 4, K 1): layer 0 dense, layer 1 both the model's, layer 2 "
             "performer (M 4) with the model's MoE; learned positions, post norm"),
]


# ---- section 7: linformer (never causal: the model regenerates) ----------------------
# No cache can serve a linformer model: its projected keys E_n K and values
# F_n V mix every position with weights that change as n grows, and the
# model is never causal, so each earlier position's outputs change with
# every new token.  The compiled model runs its whole forward pass over the
# sequence so far at each step (tfm.regenerates), and the oracle is the
# reference's full forward over each prefix (the step-logit check's for
# every model); run_generate's KVCacheDecoder refuses the model, its
# RegenerateDecoder (on the factored second form) stands in for it, and
# each case must show that a cache of every layer's keys would be far off
# (run_generate.check_regeneration).  2 layers or more (with one, a cache of
# the raw keys is exact), at most 12 new tokens (a full forward per step).
# Seeds and gains picked (of 1..40; gains 3, and 6 or 10 for the pre-norm
# rope case, 5 or 8 for the encoder_decoder, whose greedy paths repeat one
# token at gain 3) for varied greedy paths (3 to 10 distinct ids a row), top-2
# gaps of 86-211 tol and fp32 noise of 0.010-0.035 tol; a cache of every
# layer's keys is 4700-9400 tol off on each (run_generate.py --reference-only
# prints them).
SEED_LIN_1, SEED_LIN_2, SEED_LIN_3, SEED_LIN_4, SEED_LIN_5 = 1, 1, 34, 15, 16
GAIN_LIN_2, GAIN_LIN_5 = 6.0, 5.0
CASES += [
    gen("gen_lin_learned_batch2", prompt(5, batch=2), dict(positional="learned", causal=False,
                                                           attention=linformer(6)),
        new_tokens=12, extras=("sample",), seed=SEED_LIN_1,
        note="k 6, learned positions, post norm; two prompts of 5, 17 positions; greedy and sampled"),
    gen("gen_lin_rope_k10_unbatched", prompt(4, batch=None, dtype="int32"), dict(
        positional="rope", norm="pre", causal=False, attention=linformer(10)),
        new_tokens=10, seed=SEED_LIN_2, weight_gain=GAIN_LIN_2,
        note="k 10 above the prompt's 4 (and below the final 14), rope half, pre norm; an unbatched prompt"),
    gen("gen_lin_llama_gqa", prompt(6, batch=2), dict(LLAMA, num_kv_heads=2, causal=False,
                                                      attention=linformer(5)),
        new_tokens=10, extras=("too_long",), seed=SEED_LIN_3,
        note="llama-like (rms norms, gated silu, rope, no biases), 2 kv heads of 4 (E and F shared by the "
             "heads); k 5; batch 2"),
    gen("gen_lin_seq1_to_max", prompt(1), dict(max_seq_len=12, positional="rope", rope_style="interleaved",
                                               causal=False, attention=linformer(4)),
        new_tokens=11, extras=("too_long",), seed=SEED_LIN_4,
        note="a prompt of 1 token, 11 new tokens: 1 + 11 = max_seq_len 12 (E and F whole at the last "
             "step); k 4, interleaved rope"),
    gen_ed("gen_lin_ed", prompt(9, batch=2), prompt(3, batch=2, dtype="int32"), dict(
        norm="pre", causal=False, attention=linformer(6)), new_tokens=10, extras=("too_long",),
        seed=SEED_LIN_5, weight_gain=GAIN_LIN_5,
        note="encoder_decoder, both self-attentions linformer (k 6): the encoder's over src 9 (fixed), the "
             "decoder's over tgt 3 + 10 (regenerated); cross-attention full; batch 2"),
]


# ---- section 7: mamba layers (pure and hybrid stacks) -----------------------------------
# A mamba layer decodes from a fixed-size state per sequence: its last
# d_conv - 1 convolution inputs and its h [d_inner, d_state], whatever the
# position (contract section 7); the prefill leaves them as the prompt's
# last positions made them.  run_generate's KVCacheDecoder keeps the same
# state (written from the contract, checked against the full forwards), and
# its self-test shows the check catches a state that is not carried or a
# convolution window in the wrong order (MAMBA_DECODE_MISTAKES).  Each
# case's name has "mamba" in it: ctest's generate-mamba (-k mamba) runs
# them, the generate suite leaves them out (--exclude mamba).  Seeds picked
# (of 1..24, weight_gain 3 on the mixers' in_proj and out_proj too) for
# varied greedy paths (10 to 19 distinct ids a row), top-2 gaps of 50-147
# tol and fp32 noise of 0.022-0.055 tol (run_generate.py --reference-only
# prints them).
SEED_MAMBA_1, SEED_MAMBA_2, SEED_MAMBA_3, SEED_MAMBA_4, SEED_MAMBA_5 = 9, 18, 2, 16, 5
CASES += [
    gen("gen_mamba_pure_batch2", prompt(6, batch=2), dict(num_heads=None, d_ff=None, norm="pre",
                                                          layers=["mamba", "mamba"]),
        extras=("sample",), seed=SEED_MAMBA_1,
        note="two mamba layers of the default sizes (d_state 16, d_conv 4, expand 2, dt_rank 2), no num_heads "
             "or d_ff, pre norm, tied head; two prompts of 6, 20 new tokens; greedy and sampled"),
    gen("gen_mamba_jamba_batch2", prompt(5, batch=2), dict(
        num_layers=4, d_ff=50, positional="rope", norm="pre",
        layers=["mamba", layer(window(3, 1), moe(4, 2)), "mamba", "attention"], mamba=dict(d_state=8)),
        seed=SEED_MAMBA_2,
        note="Jamba-like: mamba, a sliding window (W 3, G 1) with an MoE FFN (E 4, K 2), mamba, full attention; "
             "rope; two prompts of 5, 20 new tokens"),
    gen("gen_mamba_seq1_unbatched", prompt(1, batch=None, dtype="int32"), dict(
        num_heads=None, d_ff=None, d_model=24, positional="learned", layers=["mamba", "mamba"],
        mamba=dict(d_state=4, d_conv=3, expand=1)),
        extras=("too_long",), seed=SEED_MAMBA_3,
        note="a prompt of 1 token, shorter than the convolution's state of d_conv - 1 = 2 inputs (a zero before "
             "it after the prefill), unbatched; post norm, learned positions; d_state 4, d_conv 3, expand 1"),
    gen("gen_mamba_llama_hybrid", prompt(4, batch=2, dtype="int32"), dict(
        LLAMA, num_kv_heads=2, d_ff=44, num_layers=3, tie_embeddings=False,
        layers=["mamba", "attention", {"kind": "mamba"}], mamba=dict(d_state=8, d_conv=2, dt_rank=3)),
        seed=SEED_MAMBA_4,
        note="llama-like (rms norms, gated silu, rope, no biases), 2 kv heads of 4, untied head: mamba, full "
             "attention (its KV cache), mamba; d_state 8, d_conv 2, dt_rank 3"),
    gen("gen_mamba_dconv1_untied", prompt(3), dict(
        num_heads=None, d_ff=None, d_model=16, num_layers=3, norm="pre", norm_type="rms_norm", positional="none",
        tie_embeddings=False, layers=["mamba"] * 3, mamba=dict(d_state=16, d_conv=1, expand=3, dt_rank=2)),
        seed=SEED_MAMBA_5,
        note="d_conv 1 (no convolution state: h alone), expand 3, three layers, rms norms, no positions, untied"),
]


def case_weights(case, cfg):
    """The case's weights as run_generate.py writes them (its
    prepare_reference()): reference.make_weights with the case's seed,
    every in_proj / out_proj / linear1 / linear2 weight (the experts' too,
    a mamba mixer's in_proj and out_proj: run_generate.GAINED) times
    weight_gain, rounded to weight_dtype, and the case's own
    block_pattern ids (case_block_patterns()); name -> numpy array."""
    import reference
    import safetensors as st
    import run_generate
    w = reference.make_weights(reference.Config(case.model), case.effective_seed(), case.shared_embeddings)
    if case.weight_gain != 1.0:
        w = {k: (v * case.weight_gain if k.endswith(run_generate.GAINED) else v) for k, v in w.items()}
    patterns = case_block_patterns(case, cfg)
    return {k: patterns[k] if k in patterns else st.round_to_dtype(v.numpy(), case.weight_dtype)
            for k, v in w.items()}


def moe_case_sequence(case):
    """(weights, inputs) of a --generate case as one forward sees them: the
    prompt as run_generate.py draws it (numpy default_rng(seed): the
    decoder's prompt or the tgt start first, then src), followed by the
    reference's greedy ids but the last (no forward reads it), so that one
    forward routes every token the harness's forwards route (causal: a
    token's routing does not depend on later ones)."""
    import numpy as np
    import reference
    import run_generate
    cfg = reference.Config(case.model)
    w = case_weights(case, cfg)
    rng = np.random.default_rng(case.effective_seed())

    def draw(spec):
        shape = (spec.seq,) if spec.batch is None else (spec.batch, spec.seq)
        a = rng.integers(0, cfg.vocab_size, size=shape).astype(np.int64)
        return a if spec.batch is not None else a[None, :]
    prompt2d = draw(case.prompt)
    src2d = draw(case.src) if cfg.is_encdec else None
    fm = reference.load_weights(reference.build_formula_model(cfg, case.shared_embeddings), w)
    ids, _ = run_generate.greedy_full(fm, prompt2d, case.new_tokens, src2d)
    seq = np.concatenate([prompt2d, ids[:, :-1]], axis=1)
    if cfg.is_encdec:
        return w, {"src": src2d, "tgt": seq}
    return w, {"input": seq}


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
        if (cfg.architecture not in ("decoder", "encoder_decoder") or not cfg.tokens
                or not cfg.lm_head or not (cfg.causal or cfg.linformer)):
            problems.append("%s: --generate cases are causal decoders or encoder_decoders with "
                            "vocab_size and an LM head (not causal: linformer only, which regenerates)"
                            % c.name)
        if cfg.linformer:
            # The model regenerates (run_generate.regenerates): every step a
            # full forward over the prefix, with E_n and F_n of its length.
            if c.max_seq_len is not None and c.max_seq_len > cfg.max_seq_len:
                problems.append("%s: --max-seq-len above max_seq_len with linformer (E and F have "
                                "max_seq_len columns)" % c.name)
            layers = cfg.num_decoder_layers if cfg.is_encdec else cfg.num_layers
            if layers < 2:
                problems.append("%s: a linformer case needs 2 decoder layers or more: with one, a cache of "
                                "its keys is exact, so the case could not tell regeneration from a cache"
                                % c.name)
            if c.new_tokens > 12:
                problems.append("%s: a linformer case regenerates (a full forward per step): at most 12 "
                                "new tokens" % c.name)
        if c.prompt.dtype not in ("int32", "int64"):
            problems.append("%s: prompt dtype %s" % (c.name, c.prompt.dtype))
        if cfg.is_encdec:
            if c.src is None:
                problems.append("%s: an encoder_decoder case needs src" % c.name)
            else:
                if c.src.dtype not in ("int32", "int64"):
                    problems.append("%s: src dtype %s" % (c.name, c.src.dtype))
                if c.src.batch != c.prompt.batch:
                    problems.append("%s: src batch %s != tgt batch %s"
                                    % (c.name, c.src.batch, c.prompt.batch))
                if not 1 <= c.src.seq <= c.effective_max_seq_len():
                    problems.append("%s: src length %d not in [1, max seq len %d]"
                                    % (c.name, c.src.seq, c.effective_max_seq_len()))
        else:
            if c.src is not None:
                problems.append("%s: src is for encoder_decoder cases" % c.name)
            if c.shared_embeddings:
                problems.append("%s: shared embeddings are for encoder_decoder cases" % c.name)
        if c.prompt.seq < 1 or c.new_tokens < 1:
            problems.append("%s: empty prompt or no new tokens" % c.name)
        total = c.prompt.seq + c.new_tokens
        if total > c.effective_max_seq_len():
            problems.append("%s: prompt %d + %d new tokens > max seq len %d"
                            % (c.name, c.prompt.seq, c.new_tokens, c.effective_max_seq_len()))
        if cfg.positional == "learned" and c.effective_max_seq_len() > cfg.max_seq_len:
            problems.append("%s: --max-seq-len above max_seq_len with learned positions" % c.name)
        if (c.prompt.batch or 1) > c.effective_max_batch():
            problems.append("%s: batch %d > --max-batch" % (c.name, c.prompt.batch))
        for e in c.extras:
            if e not in ("sample", "too_long"):
                problems.append("%s: unknown extra %r" % (c.name, e))
        t, k, s1, s2 = c.sample
        if not (t > 0 and 1 <= k <= cfg.vocab_size and s1 != s2):
            problems.append("%s: bad sample settings %s" % (c.name, c.sample))
        if c.weight_dtype not in ("F32", "F16", "BF16"):
            problems.append("%s: weight dtype %s" % (c.name, c.weight_dtype))
        if c.pattern_dtype not in PATTERN_DTYPES:
            problems.append("%s: pattern dtype %s" % (c.name, c.pattern_dtype))
        if any(lc.block_sparse and lc.random_blocks for lc in cfg.layer_configs()):
            if c.effective_max_seq_len() > cfg.max_seq_len:
                problems.append("%s: --max-seq-len above max_seq_len with random blocks" % c.name)
            facts = pattern_facts(cfg, case_block_patterns(c, cfg), stack_lengths(c, cfg))
            if "random blocks matter" not in facts:
                problems.append("%s: no pattern id adds a key block: the random blocks do not matter" % c.name)
        elif c.pattern_dtype != "I32":
            problems.append("%s: pattern_dtype without a block_pattern" % c.name)
    return problems


def coverage():
    import reference
    feats = {}

    def add(f, n):
        feats.setdefault(f, []).append(n)
    for c in CASES:
        cfg = reference.Config(c.model)
        n = c.name
        if cfg.mamba:
            _mamba_coverage(c, cfg, add)     # their own features only
            continue
        a = "encdec " if cfg.is_encdec else ""   # decoder features unprefixed
        pos = cfg.positional + ("_" + cfg.rope_style if cfg.positional == "rope" else "")
        if cfg.is_encdec:
            add(a + "positional=" + pos, n)
            add(a + "norm=" + cfg.norm, n)
            add(a + "embeddings " + ("shared" if c.shared_embeddings else "separate"), n)
            if c.src is not None:
                add(a + "src seq%stgt seq" % ("<" if c.src.seq < c.prompt.seq else
                                               ">" if c.src.seq > c.prompt.seq else "=="), n)
                if c.src.dtype != c.prompt.dtype:
                    add(a + "src dtype!=tgt dtype", n)
                if c.src.seq > cfg.max_seq_len:
                    add(a + "src seq>model max_seq_len", n)
            if cfg.num_encoder_layers != cfg.num_decoder_layers:
                add(a + "encoder layers!=decoder layers", n)
        else:
            add("positional=%s,norm=%s" % (pos, cfg.norm), n)
        add(a + "score=" + cfg.attention_score, n)
        add(a + "lm_head " + ("untied" if cfg.untied_head else "tied"), n)
        add(a + "prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
        add(a + "prompt seq=%s" % ("1" if c.prompt.seq == 1 else ">1"), n)
        add(a + "prompt " + c.prompt.dtype, n)
        add(a + "activation=" + cfg.activation, n)
        if c.max_seq_len is not None:
            add(a + "--max-seq-len", n)
        if c.prompt.seq + c.new_tokens == c.effective_max_seq_len():
            add(a + "prompt + N == max seq len", n)
        if cfg.embedding_scale != "none":
            add(a + "embedding_scale", n)
        if cfg.embedding_norm:
            add(a + "embedding_norm positional=" + pos, n)
        if "final_norm" in c.model:
            add(a + "final_norm override", n)
        if "rope_base" in c.model:
            add(a + "rope_base!=default", n)
        add(a + "weights " + c.weight_dtype, n)
        for e in c.extras:
            add(a + "extra " + e, n)
        if "sample" in c.extras and (c.prompt.batch or 1) > 1:
            add(a + "sample batch>1", n)
        # Section 11.
        if cfg.num_kv_heads != cfg.num_heads:
            add(a + ("num_kv_heads=1" if cfg.num_kv_heads == 1 else "num_kv_heads grouped"), n)
        if cfg.rms:
            add(a + "norm_type=rms_norm", n)
        if cfg.ffn_gated:
            add(a + "ffn_gated(%s)" % cfg.activation, n)
        if not cfg.bias:
            add(a + "bias=false", n)
        # Section 7: a decoder's per-layer kinds (the kinds' features below
        # are the model-level keys').
        if cfg.has_layers:
            _layers_coverage(c, cfg, add, a)
            continue
        if cfg.sliding_window:
            w, g = cfg.window, cfg.global_tokens
            add(a + "window W=%d G=%d" % (w, g), n)
            add(a + "window prompt " + ("<= W + G" if c.prompt.seq <= w + g else "> W + G"), n)
            add(a + "window prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
            if c.new_tokens > w:   # the last query's window starts after the prompt
                add(a + "window slides past the prompt", n)
            add(a + "window score=" + cfg.attention_score, n)
            if cfg.positional == "rope":
                add(a + "window rope", n)
            if cfg.num_kv_heads != cfg.num_heads:
                add(a + "window gqa", n)
            for e in c.extras:
                add(a + "window extra " + e, n)
        if cfg.block_sparse:
            bb, total = cfg.block, c.prompt.seq + c.new_tokens
            add(a + "block_sparse R%s" % ("=0" if cfg.random_blocks == 0 else ">=1"), n)
            if bb == 1:
                add(a + "block_sparse B=1", n)
            if -(-total // bb) - -(-c.prompt.seq // bb) >= 2:
                add(a + "block_sparse decode crosses block boundaries", n)
            if c.prompt.seq % bb:
                add(a + "block_sparse prompt ends inside a block", n)
            add(a + "block_sparse prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
            if cfg.random_blocks:
                add(a + "block_sparse pattern " + c.pattern_dtype, n)
            elif c.effective_max_seq_len() > cfg.max_seq_len:
                add(a + "block_sparse R=0 --max-seq-len above max_seq_len", n)
            if cfg.window_blocks == 0:
                add(a + "block_sparse window_blocks=0", n)
            if cfg.global_blocks == 0:
                add(a + "block_sparse global_blocks=0", n)
            if cfg.positional == "rope":
                add(a + "block_sparse rope", n)
            if cfg.num_kv_heads != cfg.num_heads:
                add(a + "block_sparse gqa", n)
            for e in c.extras:
                add(a + "block_sparse extra " + e, n)
        if cfg.performer:
            add(a + "performer", n)
            add(a + "performer M=%d" % cfg.performer_m, n)
            add(a + "performer prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
            add(a + "performer prompt seq=%s" % ("1" if c.prompt.seq == 1 else ">1"), n)
            add(a + "performer positional=" + pos, n)
            if c.prompt.seq + c.new_tokens == c.effective_max_seq_len():
                add(a + "performer prompt + N == max seq len", n)
            if cfg.num_kv_heads != cfg.num_heads:
                add(a + "performer gqa", n)
            if cfg.uses_section11():
                add(a + "performer section 11", n)
            for e in c.extras:
                add(a + "performer extra " + e, n)
        if cfg.linformer:
            kk, total = cfg.linformer_k, c.prompt.seq + c.new_tokens
            add(a + "linformer", n)
            add(a + "linformer positional=" + pos, n)
            add(a + "linformer prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
            add(a + "linformer prompt seq=%s" % ("1" if c.prompt.seq == 1 else ">1"), n)
            add(a + "linformer k%sprompt" % (">" if kk > c.prompt.seq else "<="), n)
            if kk < total:   # at the last steps E_n projects more positions than k
                add(a + "linformer k<prompt + N", n)
            if total == c.effective_max_seq_len():
                add(a + "linformer prompt + N == max seq len", n)
            if cfg.num_kv_heads != cfg.num_heads:
                add(a + "linformer gqa", n)
            if cfg.uses_section11():
                add(a + "linformer section 11", n)
            for e in c.extras:
                add(a + "linformer extra " + e, n)
        if cfg.moe:
            add(a + "moe", n)
            add(a + "moe E=%d K=%d" % (cfg.moe_experts, cfg.moe_top_k), n)
            add(a + "moe norm=" + cfg.norm, n)
            add(a + "moe prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
            if cfg.ffn_gated:
                add(a + "moe ffn_gated(%s)" % cfg.activation, n)
            if cfg.uses_section11():
                add(a + "moe section 11", n)
            for e in c.extras:
                add(a + "moe extra " + e, n)
        if cfg.uses_section11():
            add(a + "section 11 prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
            if c.prompt.seq == 1:
                add(a + "section 11 prompt seq=1", n)
            for e in c.extras:
                add(a + "section 11 extra " + e, n)
    return feats


def _mamba_coverage(c, cfg, add):
    n = c.name
    add("mamba stack " + ("pure" if cfg.only_mamba else "hybrid"), n)
    add("mamba d_conv=%d" % cfg.mamba_d_conv, n)
    add("mamba prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
    add("mamba prompt seq=%s" % ("1" if c.prompt.seq == 1 else ">1"), n)
    if c.prompt.seq < cfg.mamba_d_conv - 1:
        add("mamba prompt shorter than the conv state", n)
    if c.new_tokens >= 20:
        add("mamba 20 new tokens", n)
    add("mamba positional=" + cfg.positional, n)
    add("mamba norm=" + cfg.norm, n)
    add("mamba lm_head " + ("untied" if cfg.untied_head else "tied"), n)
    for lc in cfg.layer_configs():
        if lc.layer_kind == "attention":
            add("mamba hybrid attention=" + lc.attention_kind, n)
            add("mamba hybrid ffn=" + lc.ffn_kind, n)
    if not cfg.only_mamba and cfg.uses_section11():
        add("mamba hybrid section 11", n)
    for e in c.extras:
        add("mamba extra " + e, n)


def _layers_coverage(c, cfg, add, a):
    n = c.name
    views = cfg.layer_configs()
    for lc in views:
        add(a + "layers attention=" + lc.attention_kind, n)
        add(a + "layers ffn=" + lc.ffn_kind, n)
        if lc.sliding_window and c.new_tokens > lc.window:
            add(a + "layers window slides past the prompt", n)
        if lc.block_sparse and lc.random_blocks:
            add(a + "layers block_sparse pattern " + c.pattern_dtype, n)
    for entry in c.model["layers"]:
        if isinstance(entry, str):
            add(a + "layers entry \"%s\"" % entry, n)
    if "attention" in c.model or "ffn" in c.model:
        add(a + "layers model-level kinds overridden", n)
    add(a + "layers prompt batch=" + ("none" if c.prompt.batch is None else str(c.prompt.batch)), n)
    add(a + "layers positional=" + cfg.positional, n)
    if cfg.num_kv_heads != cfg.num_heads:
        add(a + "layers gqa", n)
    if cfg.uses_section11():
        add(a + "layers section 11", n)
    for e in c.extras:
        add(a + "layers extra " + e, n)


REQUIRED = (
    ["positional=%s,norm=%s" % x for x in itertools.product(
        ("sinusoidal", "learned", "rope_half", "rope_interleaved", "none"), ("pre", "post"))]
    + ["score=" + s for s in ("scaled_dot", "dot", "bilinear", "additive")]
    + ["lm_head tied", "lm_head untied"]
    + ["prompt batch=none", "prompt batch=1", "prompt batch=2", "prompt seq=1", "prompt seq=>1",
       "prompt int32", "prompt int64", "--max-seq-len", "prompt + N == max seq len",
       "extra sample", "extra too_long", "sample batch>1"]
    # encoder_decoder (prompt = the tgt start; src fixed)
    + ["encdec positional=" + p for p in ("sinusoidal", "learned", "rope_half", "rope_interleaved", "none")]
    + ["encdec norm=pre", "encdec norm=post"]
    + ["encdec score=" + s for s in ("scaled_dot", "dot", "bilinear", "additive")]
    + ["encdec lm_head tied", "encdec lm_head untied", "encdec embeddings shared",
       "encdec embeddings separate"]
    + ["encdec prompt batch=none", "encdec prompt batch=1", "encdec prompt batch=2",
       "encdec prompt seq=1", "encdec prompt seq=>1", "encdec prompt int32", "encdec prompt int64",
       "encdec src seq>tgt seq", "encdec src seq<tgt seq", "encdec src dtype!=tgt dtype",
       "encdec encoder layers!=decoder layers", "encdec --max-seq-len",
       "encdec prompt + N == max seq len", "encdec src seq>model max_seq_len",
       "encdec extra sample", "encdec extra too_long"]
    # section 11
    + ["num_kv_heads grouped", "num_kv_heads=1", "norm_type=rms_norm", "ffn_gated(silu)", "bias=false",
       "section 11 prompt batch=none", "section 11 prompt batch=2", "section 11 prompt seq=1",
       "section 11 extra sample", "section 11 extra too_long"]
    + ["encdec num_kv_heads grouped", "encdec bias=false"]
    # section 7: sliding-window attention
    + ["window W=3 G=0", "window W=4 G=2", "window prompt <= W + G", "window prompt > W + G",
       "window prompt batch=1", "window prompt batch=2", "window prompt batch=none",
       "window slides past the prompt", "window rope", "window gqa", "window score=scaled_dot",
       "window score=bilinear", "window extra sample", "window extra too_long"]
    # section 7: performer (FAVOR+)
    + ["performer M=1", "performer M=32", "performer prompt batch=none", "performer prompt batch=1",
       "performer prompt batch=2", "performer prompt seq=1", "performer prompt seq=>1",
       "performer positional=rope_half", "performer positional=learned", "performer gqa",
       "performer section 11", "performer prompt + N == max seq len", "performer extra sample",
       "performer extra too_long", "encdec performer", "encdec performer gqa", "encdec performer M=32",
       "encdec performer prompt seq=1", "encdec performer extra too_long"]
    # section 7: block_sparse (BigBird)
    + ["block_sparse R=0", "block_sparse R>=1", "block_sparse B=1", "block_sparse decode crosses block boundaries",
       "block_sparse prompt ends inside a block", "block_sparse prompt batch=none", "block_sparse prompt batch=2",
       "block_sparse pattern I32", "block_sparse pattern I64", "block_sparse R=0 --max-seq-len above max_seq_len",
       "block_sparse window_blocks=0", "block_sparse global_blocks=0", "block_sparse rope", "block_sparse gqa",
       "block_sparse extra sample", "block_sparse extra too_long"]
    # the embeddings' norm, the decode steps' rows at offset positions
    + ["embedding_norm positional=learned"]
    # section 7: linformer (regenerated at every step)
    + ["linformer positional=learned", "linformer positional=rope_half", "linformer positional=rope_interleaved",
       "linformer prompt batch=none", "linformer prompt batch=2", "linformer prompt seq=1",
       "linformer prompt seq=>1", "linformer k>prompt", "linformer k<=prompt", "linformer k<prompt + N",
       "linformer prompt + N == max seq len", "linformer gqa", "linformer section 11", "linformer extra sample",
       "linformer extra too_long", "encdec linformer", "encdec linformer prompt batch=2",
       "encdec linformer extra too_long"]
    # section 7: mixture-of-experts FFNs
    + ["moe E=4 K=2", "moe E=8 K=1", "moe norm=pre", "moe prompt batch=none", "moe prompt batch=2",
       "moe ffn_gated(silu)", "moe section 11", "moe extra sample", "moe extra too_long", "encdec moe",
       "encdec moe E=4 K=2", "encdec moe extra too_long"]
    # section 7: a decoder's per-layer kinds (`layers`)
    + ["layers attention=" + k for k in ("full", "sliding_window", "block_sparse", "performer")]
    + ["layers ffn=dense", "layers ffn=moe", "layers window slides past the prompt", "layers block_sparse pattern I32",
       "layers entry \"attention\"", "layers model-level kinds overridden", "layers prompt batch=none",
       "layers prompt batch=1", "layers prompt batch=2", "layers positional=rope", "layers positional=learned",
       "layers gqa", "layers section 11", "layers extra sample", "layers extra too_long"]
    # section 7: mamba layers
    + ["mamba stack pure", "mamba stack hybrid", "mamba d_conv=1", "mamba d_conv=2", "mamba d_conv=3",
       "mamba d_conv=4", "mamba prompt batch=none", "mamba prompt batch=1", "mamba prompt batch=2",
       "mamba prompt seq=1", "mamba prompt seq=>1", "mamba prompt shorter than the conv state",
       "mamba 20 new tokens", "mamba norm=pre", "mamba norm=post", "mamba lm_head tied", "mamba lm_head untied",
       "mamba hybrid attention=full", "mamba hybrid attention=sliding_window", "mamba hybrid ffn=moe",
       "mamba hybrid section 11", "mamba extra sample", "mamba extra too_long"]
)


def check_coverage():
    feats = coverage()
    return [f for f in REQUIRED if f not in feats]


if __name__ == "__main__":
    probs = validate()
    missing = check_coverage()
    for p in probs:
        print("problem:", p)
    for m in missing:
        print("not covered:", m)
    if "-v" in sys.argv:
        for f, names in sorted(coverage().items()):
            print("%-40s %d  %s" % (f, len(names), ", ".join(names[:3]) + (" ..." if len(names) > 3 else "")))
    print("%d cases, %d problems, %d features not covered" % (len(CASES), len(probs), len(missing)))
    sys.exit(1 if probs or missing else 0)
