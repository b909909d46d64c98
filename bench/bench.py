#!/usr/bin/python3
"""bench/: tfm against PyTorch 1.13 and oneDNN on the same transformer shapes.

Run through bench/run.sh (which installs the packages and builds tfm first):

  bench/run.sh [--quick] [--threads 1,2] [--only NAME] [--budget S] [--rounds R]

For each workload (a model description, float inputs, no vocabulary) and each
thread count it measures:
  * tfm: `tfm-compile` the description, run the executable with --bench on
    the bench's weights and input (one row per backend that compiles);
  * torch: the same model from PyTorch modules on the same weights and input
    (bench/torch_worker.py, one worker per thread count, OpenBLAS with its
    AVX-512 kernels); its output must equal tfm's within the contract's
    tolerance or the row is flagged;
  * oneDNN: only the GEMMs of the workload (bench/onednn_bench.cpp), the "best
    achievable GEMM" reference;
  * the FMA peak for that thread count (bench/fma_peak.cpp).
Measurements are interleaved (round-robin over workloads and tools, several
rounds); each is a process run of N timed passes after a warm-up, N chosen to
fill a time budget.  Results: a table on stdout, bench/results/latest.md,
latest.json and latest.png.

`--only long` measures the long-sequence rows instead (seq 4096: full
attention, a Longformer sliding window, Linformer k 256, Performer M 256,
BigBird block-sparse attention (blocks of 64, 1 window block each side, 1
global block, 3 random blocks), and window 0 as the GEMMs' baseline;
encoder and causal; issue 22), with a
second table of the ratios issue 22's goals are stated in; results:
bench/results/long-seq.md and long-seq.json.

`bert_layer_s128_bf16` (in the default run) is the BERT-base layer at seq
128 compiled with `tfm-compile --compute=bf16`, timed back to back with the
f32 layer (bert_layer_s128's executable) in every round; a third table gives
f32 / bf16 and issue 25's goal (>= 1.7x), judged only where the bf16 GEMMs
run on the AVX512-BF16 dot products (bf16_gemm_path).

Then "decode" (bench/decode.py): gpt2-small's decode-step latency at cache
lengths 128 and 1024, tfm against PyTorch with a hand-kept key/value cache and
against the memory-bandwidth bound.  Results: bench/results/decode.{md,json}.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))

import numpy as np  # noqa: E402

# ---------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------

_BERT = dict(architecture="encoder", d_model=768, num_heads=12, d_ff=3072,
             activation="gelu", norm="post", positional="none")
_GPT2 = dict(architecture="decoder", d_model=768, num_heads=12, d_ff=3072,
             activation="gelu_tanh", norm="pre", final_norm=False, causal=True,
             positional="none")
_D256 = dict(architecture="encoder", d_model=256, num_heads=4, d_ff=1024,
             activation="relu", norm="post", positional="none")

# Long sequences (issue 22): a BERT-base encoder layer and a GPT-2-small
# causal block at seq 4096, with full attention (tfm's flash attention),
# with a Longformer sliding window, and with the linear-cost kinds of
# contract section 7: Linformer (k 256; never causal, so the encoder only)
# and Performer (M 256; encoder and causal), and with BigBird's block-sparse
# attention (blocks of 64 positions, 1 window block on each side, 1 global
# block, 3 random blocks a query block; encoder and causal).  The "diag" ones are
# the same layers with window 0 and no global tokens (each token attends only
# itself): the same GEMMs, LayerNorms and FFN with almost no attention, so
# that tfm(X) - tfm(diag) estimates X's attention core.  Not in the default
# run (a 4096-token full-attention pass takes about 2 s at 1 thread, PyTorch's
# dense-mask layer about 3 s): `--only long`.
_LONG_SEQ = 4096
_WINDOW = {"kind": "sliding_window", "window": 256, "global_tokens": 2}
_DIAG = {"kind": "sliding_window", "window": 0, "global_tokens": 0}
_LINFORMER = {"kind": "linformer", "k": 256}
_PERFORMER = {"kind": "performer", "features": 256}
_BIGBIRD = {"kind": "block_sparse", "block": 64, "window_blocks": 1, "global_blocks": 1, "random_blocks": 3}
LONG_WORKLOADS = {
    "long_full_s4096": (dict(_BERT, num_layers=1, max_seq_len=_LONG_SEQ),
                        "BERT-base layer, seq 4096, full attention"),
    "long_window_s4096": (dict(_BERT, num_layers=1, max_seq_len=_LONG_SEQ, attention=_WINDOW),
                          "BERT-base layer, seq 4096, sliding window W 256, G 2"),
    "long_diag_s4096": (dict(_BERT, num_layers=1, max_seq_len=_LONG_SEQ, attention=_DIAG),
                        "BERT-base layer, seq 4096, window 0 (self only): the GEMMs' baseline"),
    "long_linformer_s4096": (dict(_BERT, num_layers=1, max_seq_len=_LONG_SEQ, attention=_LINFORMER),
                             "BERT-base layer, seq 4096, Linformer k 256"),
    "long_performer_s4096": (dict(_BERT, num_layers=1, max_seq_len=_LONG_SEQ, attention=_PERFORMER),
                             "BERT-base layer, seq 4096, Performer (FAVOR+) M 256"),
    "long_bigbird_s4096": (dict(_BERT, num_layers=1, max_seq_len=_LONG_SEQ, attention=_BIGBIRD),
                           "BERT-base layer, seq 4096, BigBird block-sparse B 64, W 1, G 1, R 3"),
    "long_full_causal_s4096": (dict(_GPT2, num_layers=1, max_seq_len=_LONG_SEQ),
                               "GPT-2-small causal block, seq 4096, full attention"),
    "long_window_causal_s4096": (dict(_GPT2, num_layers=1, max_seq_len=_LONG_SEQ, attention=_WINDOW),
                                 "GPT-2-small causal block, seq 4096, sliding window W 256, G 2"),
    "long_diag_causal_s4096": (dict(_GPT2, num_layers=1, max_seq_len=_LONG_SEQ, attention=_DIAG),
                               "GPT-2-small causal block, seq 4096, window 0 (self only): the GEMMs' baseline"),
    "long_performer_causal_s4096": (dict(_GPT2, num_layers=1, max_seq_len=_LONG_SEQ, attention=_PERFORMER),
                                    "GPT-2-small causal block, seq 4096, causal Performer (FAVOR+) M 256"),
    "long_bigbird_causal_s4096": (dict(_GPT2, num_layers=1, max_seq_len=_LONG_SEQ, attention=_BIGBIRD),
                                  "GPT-2-small causal block, seq 4096, causal BigBird B 64, W 1, G 1, R 3"),
}

# Prefill with --compute=bf16 (issue 25): the BERT-base layer at seq 128
# compiled a second time with `tfm-compile --compute=bf16` (GEMM inputs
# rounded to bfloat16, sums in f32), on the f32 row's weights and input.
# Its f32 partner (the same layer's f32 executable) is timed beside it in
# its own configuration, back to back in every round (Bench.companion), so
# that f32 / bf16 is taken on the same machine state; torch is run once,
# for the output check (the same model as the f32 row's), and oneDNN not
# at all (its GEMMs are the f32 row's).  name -> the f32 workload.
BF16_WORKLOADS = {"bert_layer_s128_bf16": "bert_layer_s128"}
GOAL_BF16_VS_F32 = 1.7   # f32 layer / bf16 layer, on the AVX512-BF16 dot products only

# name -> (description, what it is)
WORKLOADS = {
    "bert_layer_s128": (dict(_BERT, num_layers=1, max_seq_len=128), "BERT-base layer, seq 128"),
    "bert_layer_s128_bf16": (dict(_BERT, num_layers=1, max_seq_len=128),
                             "BERT-base layer, seq 128, --compute=bf16"),
    "bert_layer_s512": (dict(_BERT, num_layers=1, max_seq_len=512), "BERT-base layer, seq 512"),
    "bert12_s128": (dict(_BERT, num_layers=12, max_seq_len=128), "BERT-base 12 layers, seq 128"),
    "gpt2_block_s128": (dict(_GPT2, num_layers=1, max_seq_len=128), "GPT-2-small causal block, seq 128"),
    "gpt2_block_s512": (dict(_GPT2, num_layers=1, max_seq_len=512), "GPT-2-small causal block, seq 512"),
    "d256_l4_s64": (dict(_D256, num_layers=4, max_seq_len=64), "d 256, 4 heads, d_ff 1024, 4 layers, seq 64"),
}
DEFAULT_WORKLOADS = list(WORKLOADS)   # what a plain run measures
WORKLOADS.update(LONG_WORKLOADS)
# --only long: the full, windowed, Linformer, Performer and BigBird rows; each brings its "diag" layer along
# as a companion (Bench.companion), measured within the row's own
# configuration so that the two times the core estimate subtracts are taken
# side by side.
GROUPS = {"long": [n for n in LONG_WORKLOADS if "_diag_" not in n]}

BACKENDS = ("hwy", "llvm")


# The long kinds measured against full attention (issue 22's goals).
LONG_SPARSE_KINDS = ("window", "linformer", "performer", "bigbird")
# Those among them that attend a subset of full attention's (query, key)
# pairs: their core is also judged against full attention's core scaled by
# the fraction of the pairs attended (the efficiency goal).
LONG_PAIR_KINDS = ("window", "bigbird")


def long_kind(name):
    """"full", "window", "linformer", "performer", "bigbird" or "diag" for a
    long workload, else None."""
    if name not in LONG_WORKLOADS:
        return None
    return name.split("_")[1]


def long_partner(name, kind):
    """The long workload of the same layer with another attention ("full",
    "window", "diag", ...): long_window_causal_s4096 -> long_full_causal_s4096,
    long_performer_s4096 -> long_diag_s4096."""
    parts = name.split("_")
    return "_".join(parts[:1] + [kind] + parts[2:])


def companion(name):
    """The diag layer measured beside a long full, windowed, Linformer,
    Performer or BigBird workload (its attention core = its time - the
    diag's), the f32 layer measured beside a --compute=bf16 one
    (BF16_WORKLOADS: f32 / bf16), else None."""
    if name in BF16_WORKLOADS:
        return BF16_WORKLOADS[name]
    return long_partner(name, "diag") if long_kind(name) in ("full",) + LONG_SPARSE_KINDS else None


def compile_flags(name):
    """tfm-compile's flags beyond the backend's for the workload."""
    return ["--compute=bf16"] if name in BF16_WORKLOADS else []


def weights_of(name):
    """The workload whose weights and input `name` runs on: its f32
    partner's for a --compute=bf16 row, else its own."""
    return BF16_WORKLOADS.get(name, name)


def output_tolerance(name, ref_max):
    """max |tfm - torch| allowed: contract section 6's 1e-4 x (1 + max
    |torch|); a --compute=bf16 row's GEMM inputs are rounded to bfloat16,
    for which docs/reference.md (Weight precision) gives 1e-2 x (1 + max
    |reference|)."""
    return (1e-2 if name in BF16_WORKLOADS else 1e-4) * (1.0 + ref_max)


def uses_onednn(name):
    """oneDNN's GEMM reference models full (or causal) attention only: a
    windowed (Linformer, Performer, block-sparse) workload gets no oneDNN
    figure; nor does a --compute=bf16 row (oneDNN's are f32 GEMMs: its f32
    row has them)."""
    return attention_of(WORKLOADS[name][0])[0] == "full" and name not in BF16_WORKLOADS


def torch_timed(name):
    """Whether torch is timed on the workload; the "diag" baselines and the
    --compute=bf16 rows (the same PyTorch model as their f32 row's) are
    only output-checked against it (one pass in the calibration round)."""
    return long_kind(name) != "diag" and name not in BF16_WORKLOADS


def cpu_vendor_flags():
    """(vendor_id, the set of flags) of /proc/cpuinfo's first processor."""
    vendor, flags = "?", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id") and vendor == "?":
                    vendor = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return vendor, flags


def bf16_gemm_path(backend, simd, env=None):
    """("dot" or "emulated", why): which loop a --compute=bf16 executable's
    GEMM tiles run on this machine.  The executable decides at run time;
    this mirrors its rule, PreferBf16Dot in
    runtime/include/tfm/runtime/kernels/gemm-bf16-inl.h: the AVX512-BF16
    dot products (VDPBF16PS) only where the CPU has them (/proc/cpuinfo's
    avx512_bf16 flag; CpuHasBf16Dot), never with TFM_BF16_DOT=0, always
    with TFM_BF16_DOT=1, else only on AMD (__builtin_cpu_is("amd"):
    vendor_id AuthenticAMD); elsewhere f32 FMAs over the bf16-rounded
    values ("emulated").  The loop exists only in the Highway backend's
    512-bit targets: the LLVM backend, and --simd avx2 (TFM_SIMD=avx2),
    always run the FMAs.  `env`: the executable's environment (default
    ours, which tfm_env passes on)."""
    env = os.environ if env is None else env
    if backend != "hwy":
        return "emulated", "the %s backend multiplies on f32 FMAs" % backend
    if simd == "avx2":
        return "emulated", "--simd avx2: the dot-product loop is in the 512-bit targets only"
    vendor, flags = cpu_vendor_flags()
    forced = env.get("TFM_BF16_DOT")
    if "avx512_bf16" not in flags:
        return "emulated", "no avx512_bf16 in /proc/cpuinfo"
    if forced == "0":
        return "emulated", "avx512_bf16, but TFM_BF16_DOT=0"
    if forced == "1":
        return "dot", "avx512_bf16, TFM_BF16_DOT=1"
    if vendor == "AuthenticAMD":
        return "dot", "avx512_bf16 on AuthenticAMD"
    return "emulated", ("avx512_bf16 on %s: the dot products are taken on AMD only, "
                        "TFM_BF16_DOT=1 forces them" % vendor)


def is_causal(desc):
    return desc.get("causal", desc["architecture"] == "decoder")


def attention_of(desc):
    """(kind, window, global_tokens) of the description's `attention`."""
    a = desc.get("attention", {"kind": "full"})
    return a["kind"], a.get("window"), a.get("global_tokens", 0)


def attended_pairs(desc, seq):
    """The (query, key) pairs one head attends: S*S for full attention,
    S*(S+1)/2 when causal; for a sliding window (contract section 7) the
    pairs the rule allows, each once: query i attends key j when
    |i - j| <= W, or i < G, or j < G (and j <= i when causal); for
    Linformer S*k (each query attends the k projected keys); None for
    Performer (no (query, key) pairs: its linear form never forms them);
    for block_sparse (BigBird) the nominal count of block_sparse_pairs()."""
    causal = is_causal(desc)
    kind, w, g = attention_of(desc)
    if kind == "full":
        return seq * (seq + 1) // 2 if causal else seq * seq
    if kind == "linformer":
        return seq * desc["attention"]["k"]
    if kind == "performer":
        return None
    if kind == "block_sparse":
        a = desc["attention"]
        block = a["block"]
        return block_sparse_pairs(seq, block, a.get("window_blocks", 1), a.get("global_blocks", 1),
                                  a.get("random_blocks", 0), causal,
                                  pattern_rows=-(-desc["max_seq_len"] // block))
    if kind != "sliding_window":
        raise ValueError("bench: no pair count for attention kind %r" % kind)
    total = 0
    for i in range(seq):
        last = i if causal else seq - 1
        if i < g:          # a global row: every key (up to i when causal)
            total += last + 1
            continue
        lo, hi = max(0, i - w), min(last, i + w)
        total += (hi - lo + 1) + min(g, lo)   # the band, and the global keys below it
    return total


def block_sparse_pairs(seq, block, window_blocks, global_blocks, random_blocks, causal, pattern_rows=None):
    """The (query, key) pairs one head of a block_sparse (BigBird, contract
    section 7) self-attention over `seq` positions attends, counted
    NOMINALLY, the way tfm's --bench counts them (KeyPairs in
    dialects/include/tfm/IR/TfmSizes.h, keyPairsCpp in
    compiler/lowering/KeySpanCpp.cpp), so that the two FLOP counts agree:
    query row i (query block qb = i // B) attends
      * its window and global keys exactly, each once: a row in a global
        block (qb < G) every key; any other the keys of the global blocks
        (kb < G) and of its window (|kb - qb| <= W), their union clamped to
        [0, S) (and to j <= i when causal);
      * plus, for a row past the global blocks (qb >= G) whose query block
        has a row of the block_pattern (qb < pattern_rows, default
        ceil(S / B)), R*B keys more: R whole blocks, as if each of its
        random ids named a distinct full block that no other rule reaches
        (the count does not read the pattern); the row's total capped at S
        (causal: at i + 1).
    With a pattern whose ids repeat, fall outside [0, ceil(S / B)), name a
    window or global block or (causal) a block past the row, or name the
    partial last block, the pairs really attended are fewer: this count is
    an upper bound, exact for a pattern without repeats or overlaps
    (check_block_sparse_pairs checks both against a dense mask)."""
    b, w, g, r = block, window_blocks, global_blocks, random_blocks
    rows = -(-seq // b) if pattern_rows is None else pattern_rows
    total = 0
    for i in range(seq):
        qb = i // b
        cap = i + 1 if causal else seq
        if qb < g:                      # a global row: every key (up to i when causal)
            total += cap
            continue
        prefix = min(g * b, cap)                                 # the global keys
        end = min(cap, (qb + w + 1) * b)                         # the window, after them
        first = max(prefix, (qb - w) * b)
        count = prefix + max(0, end - first)
        if r and qb < rows:
            count = min(cap, count + r * b)
        total += count
    return total


def check_block_sparse_pairs(seed=0, verbose=True):
    """By hand (`bench.py --check-pairs`; not a ctest): block_sparse_pairs
    against a dense [S, S] mask built with numpy from contract section 7's
    rule (query block qb attends key block kb when |kb - qb| <= W, or
    qb < G, or kb < G, or kb is one of the ids of row qb of the pattern in
    [0, nb); causal: key <= query), at small S and B (S = 40, B = 4; S = 42,
    B = 4 and S = 23, B = 5 with a partial last block), W 0-2, G 0-2, R 0-3,
    encoder and causal:
      * for random patterns without repeats or overlaps (each row past the
        global blocks names R distinct full blocks that neither its window,
        nor the global blocks, nor (causal) its own or later positions
        reach; a row with fewer such blocks names all of them, then the
        partial last block if no other rule reaches it, then ids out of
        range) the nominal count equals the mask's count;
      * for patterns as make_weights draws them (ids uniform in -1 .. rows:
        repeats, overlaps, ids out of range) it is at least the mask's;
      * where test/e2e/reference.py imports (torch), the numpy mask equals
        reference.block_sparse_allowed's, the rule torch_worker.py's
        dense-mask layer is built from.
    Raises AssertionError on a mismatch; returns the number of cases."""
    try:
        import reference
        import torch
    except ImportError:
        reference = None
    rng = np.random.default_rng(seed)
    cases = 0
    for seq, b in ((40, 4), (42, 4), (23, 5)):
        nb = -(-seq // b)
        full_blocks = seq // b
        i = np.arange(seq)[:, None]
        j = np.arange(seq)[None, :]
        qb, kb = i // b, j // b
        for w in (0, 1, 2):
            for g in (0, 1, 2):
                for r in (0, 1, 2, 3):
                    for causal in (False, True):
                        exact = np.full((nb, r), -1, dtype=np.int64)
                        drawn = rng.integers(-1, nb + 1, size=(nb, r))
                        for q in range(g, nb):
                            free = [k for k in range(full_blocks)
                                    if k >= g and abs(k - q) > w and (not causal or k < q)]
                            if len(free) >= r:
                                ids = list(rng.choice(free, size=r, replace=False)) if r else []
                            else:
                                ids = free + [k for k in range(full_blocks, nb)
                                              if k >= g and abs(k - q) > w and not causal]
                            exact[q, :len(ids[:r])] = ids[:r]
                        nominal = block_sparse_pairs(seq, b, w, g, r, causal)
                        for pattern, equal in ((exact, True), (drawn, False)):
                            ok = (np.abs(qb - kb) <= w) | (qb < g) | (kb < g)
                            if r:
                                rows = pattern[qb[:, 0]]                     # [S, R]
                                valid = (rows >= 0) & (rows < nb)
                                ok = ok | ((rows[:, :, None] == kb[:, None, :]) & valid[:, :, None]).any(1)
                            if causal:
                                ok = ok & (j <= i)
                            dense = int(ok.sum())
                            what = ("S %d B %d W %d G %d R %d%s, %s pattern: nominal %d, dense mask %d"
                                    % (seq, b, w, g, r, " causal" if causal else "",
                                       "exact" if equal else "drawn", nominal, dense))
                            assert (nominal == dense) if equal else (nominal >= dense), what
                            if reference is not None:
                                ref = reference.block_sparse_allowed(
                                    range(seq), range(seq), b, w, g,
                                    torch.from_numpy(pattern) if r else None, causal).numpy()
                                assert (ref == ok).all(), what + ": reference.block_sparse_allowed differs"
                            cases += 1
    if verbose:
        print("block_sparse_pairs: %d cases agree with the dense mask (%s)"
              % (cases, "numpy, and reference.block_sparse_allowed" if reference is not None
                 else "numpy only: test/e2e/reference.py did not import"))
    return cases


def block_sparse_attended(desc, weights_path):
    """The (query, key) pairs one head really attends in a block_sparse
    workload with the bench's weights file (its layers' block_pattern, as
    make_weights draws them: ids uniform in -1 .. rows, so some repeat, fall
    in a window or global block, or out of range), averaged over the
    layers: reference.block_sparse_allowed's mask, counted.  None for
    another kind.  Shown beside the nominal count (attended_pairs), which
    the FLOPs and the goals use."""
    if attention_of(desc)[0] != "block_sparse":
        return None
    import reference
    import safetensors
    import torch
    a, seq = desc["attention"], desc["max_seq_len"]
    tensors = safetensors.load_file(weights_path)
    patterns = [torch.from_numpy(np.array(v)) for k, v in sorted(tensors.items())
                if k.endswith("self_attn.block_pattern")] or [None]
    counts = [int(reference.block_sparse_allowed(range(seq), range(seq), a["block"], a.get("window_blocks", 1),
                                                 a.get("global_blocks", 1), p, is_causal(desc)).sum())
              for p in patterns]
    return statistics.mean(counts)


def attention_flops(desc, seq):
    """The matmul FLOPs of one self-attention (all heads, batch 1), as tfm's
    --bench counts them (each op's MatmulFlopsOpInterface, dialects/lib/IR/
    TfmOps.cpp), with d = heads * dk:
      full, sliding window, block_sparse: 2*pairs*dk per head for QK^T and
        again for PV: 4*pairs*d (block_sparse: the nominal pairs of
        block_sparse_pairs, as tfm counts them);
      linformer (k): E_n K and F_n V, 2*k*S*d each (SequenceProjectionOp),
        then attention over k keys, pairs = S*k: 4*S*k*d; 8*S*k*d in all;
      performer (M): phi(Q) and phi(K), 2*S*M*dk per head each
        (FeatureMapOp): 4*S*M*d; the linear form, each key row adding and
        each query row taking M*(dk+1) products per head, 2 FLOPs each
        (LinearAttentionOp; causal or not): 4*S*M*(d + heads)."""
    kind = attention_of(desc)[0]
    d = desc["d_model"]
    if kind == "linformer":
        k = desc["attention"]["k"]
        return 2.0 * 2.0 * k * seq * d + 2.0 * 2.0 * seq * k * d
    if kind == "performer":
        m = desc["attention"]["features"]
        return 2.0 * 2.0 * seq * m * d + 2.0 * 2.0 * seq * m * (d + desc["num_heads"])
    return 2.0 * 2.0 * attended_pairs(desc, seq) * d


def matmul_flops(desc, seq, batch=1):
    """The matmul FLOPs of one forward pass, as tfm's own --bench counts them:
    2*M*N*K per linear (QKV, out proj, FFN1, FFN2) and the self-attention's
    (attention_flops: for full attention, a sliding window and block_sparse,
    per head 2*pairs*dk for QK^T and again for PV, where pairs = S*S, or
    S*(S+1)/2 when causal, or the pairs a sliding window allows, or
    block_sparse's nominal pairs (attended_pairs); Linformer's and
    Performer's their own)."""
    d, f, n = desc["d_model"], desc["d_ff"], desc["num_layers"]
    linears = 2.0 * seq * (3 * d * d + d * d + d * f + f * d)
    return batch * n * (linears + attention_flops(desc, seq))


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def last_line(text, prefix):
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines or not lines[-1].startswith(prefix):
        return None
    return dict(kv.split("=", 1) for kv in lines[-1][len(prefix):].split())


def fma_peak(exe, threads, trials, isa=None, who="bench"):
    """One bench/fma_peak.cpp measurement (best of `trials` x 0.2 s) at
    `threads` threads: (GFLOP/s, the vector ISA it ran). Exits on failure."""
    cmd = [exe, "--threads", str(threads), "--seconds", "0.2", "--trials", str(trials)]
    if isa:
        cmd += ["--isa", isa]
    rc, so, se = run(cmd)
    kv = last_line(so, "peak: ")
    if rc or kv is None:
        sys.exit("%s: fma_peak failed: %s%s" % (who, so, se))
    return float(kv["gflops"]), kv.get("isa", "?")


def baseline_env(threads, omp_wait_policy=None, blas_dir=None):
    """The environment of the baseline runs: OpenBLAS free to use AVX-512
    (OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset) and bounded to `threads`;
    `blas_dir` (a folder with a libblas.so.3) goes ahead of the system's."""
    env = dict(os.environ)
    if blas_dir:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [blas_dir, env.get("LD_LIBRARY_PATH")]))
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    if omp_wait_policy:
        env["OMP_WAIT_POLICY"] = omp_wait_policy
    return env


def build_cxx(src, out, flags):
    """Builds a bench helper with clang++-22 when missing or older than its source."""
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(src):
        return
    cmd = ["clang++-22", "-O2", "-std=c++17", "-march=native", src, "-o", out] + flags
    rc, so, se = run(cmd)
    if rc:
        sys.exit("bench: building %s failed:\n%s%s" % (os.path.basename(src), so, se))


def cpu_isa():
    """The x86 vector extensions the CPU has, for the results' header."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "avx512f" in flags:
        ext = [n for n, flag in (("F", "avx512f"), ("BW", "avx512bw"), ("VL", "avx512vl"),
                                 ("VNNI", "avx512_vnni"), ("BF16", "avx512_bf16"))
               if flag in flags]
        return "AVX-512 (%s)" % ", ".join(ext)
    if "avx2" in flags:
        return "AVX2%s, no AVX-512" % (" + FMA" if "fma" in flags else "")
    return "no AVX2"


def tfm_env(simd):
    """The environment of a tfm executable: TFM_SIMD caps the Highway target
    it dispatches to (bench --simd)."""
    env = dict(os.environ)
    env.pop("TFM_SIMD", None)
    if simd:
        env["TFM_SIMD"] = simd
    return env


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def tfm_source(tfm_compile):
    """The source tree tfm-compile was built from (its build folder's
    CMakeCache.txt), and its git commit ("+dirty" with uncommitted changes to
    tracked files), or "not a git checkout"."""
    src = ROOT
    cache = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(tfm_compile))), "CMakeCache.txt")
    try:
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    src = line.split("=", 1)[1].strip()
    except OSError:
        pass
    rc, so, _ = run(["git", "-C", src, "rev-parse", "--short", "HEAD"])
    if rc:
        return src, "not a git checkout"
    _, st, _ = run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no"])
    return src, so.strip() + ("+dirty" if st.strip() else "")


# ---------------------------------------------------------------------------
# The torch workers
# ---------------------------------------------------------------------------

class TorchWorker:
    """A torch worker process (torch_worker.py, or decode_worker.py: the same
    protocol) with `threads` threads, in the baselines' environment."""

    def __init__(self, threads, omp_wait_policy, script="torch_worker.py", blas_dir=None):
        self.threads = threads
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, script), str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=baseline_env(threads, omp_wait_policy, blas_dir))

    def call(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit("bench: the torch worker (%d threads) died" % self.threads)
            if line.startswith("@@ "):
                ans = json.loads(line[3:])
                if not ans.get("ok"):
                    sys.exit("bench: torch worker: %s" % ans.get("error"))
                return ans

    def close(self):
        try:
            self.call(op="quit")
        except SystemExit:
            pass
        self.proc.wait(timeout=30)


# ---------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work_dir)
        os.makedirs(self.work, exist_ok=True)
        self.tfm_compile = args.tfm_compile
        self.records = []  # every measurement: dict(tool, workload, threads, round, median_ms, min_ms, runs)
        self.errors = []   # problems to report
        self.checks = {}   # (workload, threads, tool) -> dict
        self.flops_checks = {}
        self.exes = {}     # (workload, backend) -> path
        self.skipped_backends = {}
        self.estimates = {}  # (tool, workload, threads) -> ms per pass
        self.omp_wait_policy = None if args.omp_wait_policy == "default" else args.omp_wait_policy

    # -- setup ---------------------------------------------------------------
    def build_helpers(self):
        self.fma = os.path.join(self.work, "fma_peak")
        self.onednn = os.path.join(self.work, "onednn_bench")
        build_cxx(os.path.join(HERE, "fma_peak.cpp"), self.fma, ["-pthread"])
        build_cxx(os.path.join(HERE, "onednn_bench.cpp"), self.onednn, ["-ldnnl", "-lgomp"])

    def measure_peak(self, threads):
        gflops, self.peak_isa = fma_peak(self.fma, threads, self.args.peak_trials, self.args.simd)
        return gflops

    def prepare(self, name):
        """Writes the description, weights and input of `name` (weights cached
        by description) and compiles it with every backend that can."""
        import reference
        import safetensors
        desc, _ = WORKLOADS[name]
        d = os.path.join(self.work, name)
        os.makedirs(d, exist_ok=True)
        desc = dict(desc, name=name)
        model = os.path.join(d, name + ".json")
        with open(model, "w") as f:
            f.write(json.dumps(desc, indent=2, sort_keys=True) + "\n")
        # The weights and input: its own, or (a --compute=bf16 row) its f32
        # partner's, in that one's folder, seeded with its name.
        src = weights_of(name)
        wd = os.path.join(self.work, src)
        os.makedirs(wd, exist_ok=True)
        wdesc = dict(WORKLOADS[src][0], name=src)
        text = json.dumps(wdesc, indent=2, sort_keys=True) + "\n"
        seed = zlib.crc32(src.encode())
        weights = os.path.join(wd, "weights.safetensors")
        inp = os.path.join(wd, "input.npy")
        stamp = os.path.join(wd, "stamp.json")
        fresh = (os.path.exists(stamp) and os.path.exists(weights) and os.path.exists(inp)
                 and open(stamp).read() == text + "seed %d\n" % seed)
        if not fresh:
            log("  writing weights and input for %s" % src)
            w = reference.make_weights(reference.Config(wdesc), seed=seed)
            # F32, but block_sparse's block_pattern (integer key-block ids): I32.
            safetensors.save_file({k: v.numpy() for k, v in w.items()}, weights,
                                  dtype={k: "F32" if v.is_floating_point() else "I32" for k, v in w.items()})
            rng = np.random.default_rng(seed)
            x = rng.standard_normal((1, wdesc["max_seq_len"], wdesc["d_model"])).astype(np.float32)
            np.save(inp, x)
            with open(stamp, "w") as f:
                f.write(text + "seed %d\n" % seed)
        self.files = getattr(self, "files", {})
        self.files[name] = dict(model=model, weights=weights, input=inp, dir=d)
        self.pairs_attended = getattr(self, "pairs_attended", {})
        self.pairs_attended[name] = block_sparse_attended(desc, weights)
        for backend in self.args.backends:
            exe = os.path.join(d, "%s.%s.exe" % (name, backend))
            t0 = time.time()
            cmd = [self.tfm_compile, model, "-o", exe, "--backend=" + backend] + compile_flags(name)
            if self.args.simd:
                if backend != "hwy":
                    log("  %s: --simd %s measures the Highway backend only: --backend=%s left out"
                        % (name, self.args.simd, backend))
                    continue
                # Every target compiled in, the forced one chosen at run time.
                cmd.append("--target=generic")
            rc, so, se = run(cmd)
            if rc:
                lines = se.strip().splitlines() or ["exit %d" % rc]
                if rc == 1 and "not available" in se:  # a backend that does not exist yet
                    self.skipped_backends.setdefault(backend, lines[0])
                    log("  %s: --backend=%s not available: %s" % (name, backend, lines[0]))
                else:
                    msg = "COMPILE FAILURE %s --backend=%s (exit %d): %s" % (
                        name, backend, rc, " | ".join(lines[:3] + (["..."] + lines[-2:] if len(lines) > 5 else lines[3:])))
                    self.errors.append(msg)
                    log("  " + msg)
                continue
            log("  compiled %s --backend=%s%s (%.1f s)"
                % (name, backend, "".join(" " + f for f in compile_flags(name)), time.time() - t0))
            self.exes[(name, backend)] = exe

    # -- one measurement of each tool --------------------------------------
    def run_tfm(self, name, backend, threads, runs, warmup, output=None):
        cmd = [self.exes[(name, backend)], "--bench", str(runs), "--warmup", str(warmup),
               "--threads", str(threads), "--weights", self.files[name]["weights"],
               "--input", "input=" + self.files[name]["input"]]
        if output:
            cmd += ["--output", output]
        rc, so, se = run(cmd, env=tfm_env(self.args.simd))
        kv = last_line(so, "bench: ")
        if rc or kv is None:
            sys.exit("bench: %s failed (exit %d):\n%s\n%s" % (" ".join(cmd), rc, so[-2000:], se[-2000:]))
        return dict(median_ms=float(kv["median_ms"]), min_ms=float(kv["min_ms"]),
                    runs=int(kv["runs"]), gflops_reported=float(kv["gflops"]),
                    threads_reported=int(kv["threads"]))

    def run_torch(self, name, threads, runs, warmup, output=None):
        w = self.workers[threads]
        ans = w.call(op="run", key=name, runs=runs, warmup=warmup, output=output)
        return dict(median_ms=ans["median_ms"], min_ms=ans["min_ms"], runs=ans["runs"])

    def run_onednn(self, name, threads, runs, warmup):
        desc, _ = WORKLOADS[name]
        assert uses_onednn(name), name
        cmd = [self.onednn, "--layers", str(desc["num_layers"]), "--seq", str(desc["max_seq_len"]),
               "--d", str(desc["d_model"]), "--heads", str(desc["num_heads"]),
               "--dff", str(desc["d_ff"]), "--threads", str(threads), "--runs", str(runs),
               "--warmup", str(warmup)]
        if desc.get("causal"):
            cmd.append("--causal")
        rc, so, se = run(cmd, env=baseline_env(threads, self.omp_wait_policy))
        kv = last_line(so, "onednn: ")
        if rc or kv is None:
            sys.exit("bench: %s failed:\n%s%s" % (" ".join(cmd), so, se))
        info = last_line("\n".join(l for l in so.splitlines() if l.startswith("onednn-info: ")),
                         "onednn-info: ")
        if info:
            self.onednn_info = info
        return dict(median_ms=float(kv["median_ms"]), min_ms=float(kv["min_ms"]),
                    runs=int(kv["runs"]), linear_ms=float(kv["linear_ms"]),
                    attention_ms=float(kv["attention_ms"]))

    def measure(self, tool, name, threads, rnd, config=None):
        """One process run (or worker request) of `tool` on workload `name`,
        sized from the calibration estimate to fill the time budget; `config`
        is the configuration's workload it was measured within (`name`, or
        the long workload whose diag companion `name` is)."""
        calib = rnd == 0
        est = self.estimates.get((tool, name, threads))
        # A companion's torch run (measured in another row's configuration)
        # is its output check too.
        check_only = tool == "torch" and (not torch_timed(name) or (config or name) != name)
        if check_only:   # the output for the check, not a timing
            runs, warmup = 1, 0
        elif calib or est is None:
            runs, warmup = self.args.calib_runs, 1
        else:
            runs = int(max(self.args.min_runs, min(self.args.max_runs, self.args.budget * 1e3 / max(est, 1e-3))))
            warmup = 2 if est < 100 else 1
        out = None
        if calib and tool != "onednn":
            out = os.path.join(self.files[name]["dir"], "out_%s_t%d.npy" % (tool, threads))
        if tool.startswith("tfm-"):
            r = self.run_tfm(name, tool[4:], threads, runs, warmup, out)
        elif tool == "torch":
            r = self.run_torch(name, threads, runs, warmup, out)
        else:
            r = self.run_onednn(name, threads, runs, warmup)
        r.update(tool=tool, workload=name, threads=threads, round=rnd, warmup=warmup,
                 config=config or name)
        if check_only:
            r["check_only"] = True
        if out:
            r["output"] = out
        self.records.append(r)
        # The latest median sizes the next measurement: it follows the load.
        self.estimates[(tool, name, threads)] = r["median_ms"]
        log("  round %d  %-16s t=%d  %-9s median %9.2f ms  min %9.2f ms  (%d runs)%s%s"
            % (rnd, name, threads, tool, r["median_ms"], r["min_ms"], r["runs"],
               "  (output check only)" if check_only else "",
               "  (beside %s)" % config if config and config != name else ""))
        return r

    # -- checks -------------------------------------------------------------
    def check_outputs(self, name, threads, tools):
        ref_path = os.path.join(self.files[name]["dir"], "out_torch_t%d.npy" % threads)
        ref = np.load(ref_path).astype(np.float64)
        tol = output_tolerance(name, np.abs(ref).max())
        for tool in tools:
            if not tool.startswith("tfm-"):
                continue
            out = np.load(os.path.join(self.files[name]["dir"], "out_%s_t%d.npy" % (tool, threads)))
            c = dict(tol=float(tol), shape=list(out.shape), ref_shape=list(ref.shape))
            if out.shape != ref.shape:
                c.update(ok=False, max_err=None, why="shape %s vs torch %s" % (out.shape, ref.shape))
            elif not np.all(np.isfinite(out)):
                c.update(ok=False, max_err=None, why="non-finite values")
            else:
                err = np.abs(out.astype(np.float64) - ref)
                worst = np.unravel_index(int(np.argmax(err)), err.shape)
                c.update(ok=bool(err.max() <= tol), max_err=float(err.max()),
                         max_ref=float(np.abs(ref).max()), worst_index=[int(i) for i in worst],
                         worst_tfm=float(out[worst]), worst_torch=float(ref[worst]),
                         n_bad=int((err > tol).sum()))
            self.checks[(name, threads, tool)] = c
            if not c["ok"]:
                msg = "OUTPUT MISMATCH %s t=%d %s vs torch: %s" % (
                    name, threads, tool, c.get("why") or
                    "max |tfm-torch| = %.3g > tol %.3g at %s (tfm %.6g, torch %.6g), %d elements over"
                    % (c["max_err"], tol, tuple(c["worst_index"]), c["worst_tfm"], c["worst_torch"], c["n_bad"]))
                self.errors.append(msg)
                log("  " + msg)
            else:
                log("  output check %s t=%d %s: max err %.2e <= tol %.2e"
                    % (name, threads, tool, c["max_err"], tol))

    # -- the whole run -----------------------------------------------------
    def run_all(self):
        a = self.args
        self.build_helpers()
        tools_base = ["tfm-" + b for b in a.backends]
        self.load = [open("/proc/loadavg").read().split()[0], "?"]
        log("bench: peak FMA throughput")
        # 1 thread always: the busy-machine check compares against it.
        self.peak = {t: self.measure_peak(t) for t in sorted(set(a.threads) | {1})}
        self.peak_runs = {t: [p] for t, p in self.peak.items()}
        log("  " + ", ".join("%d thread(s): %.1f GFLOP/s" % (t, p) for t, p in self.peak.items()))
        log("bench: workloads")
        # The diag companions of the long rows (unless selected themselves),
        # and the f32 partners of the --compute=bf16 rows (always: f32 / bf16
        # is taken from the two timed back to back in the bf16 row's
        # configuration, even when the f32 row is measured on its own too).
        self.companions = {n: companion(n) for n in a.only
                           if companion(n) and (companion(n) not in a.only or n in BF16_WORKLOADS)}
        self.names = [n for n in WORKLOADS if n in a.only or n in self.companions.values()]
        for name in self.names:
            self.prepare(name)
        tools = [t for t in tools_base if any((n, t[4:]) in self.exes for n in self.names)]
        if not tools:
            sys.exit("bench: no tfm backend compiled any workload\n" + "\n".join(self.errors))
        tools += ["torch", "onednn"]
        self.tools = tools
        log("bench: starting the torch workers")
        self.workers = {t: TorchWorker(t, self.omp_wait_policy, blas_dir=a.blas_dir) for t in a.threads}
        self.torch_info = {}
        self.torch_models = {}  # workload -> what the worker built (class, mask)
        try:
            for t, w in self.workers.items():
                self.torch_info[t] = w.call(op="info")
                for name in self.names:
                    f = self.files[name]
                    ans = w.call(op="load", key=name, model=f["model"], weights=f["weights"], input=f["input"])
                    self.torch_models[name] = dict(model=ans.get("model"), mask=ans.get("mask"))
            configs = [(n, t) for n in a.only for t in a.threads]
            checked = set()
            for rnd in range(a.rounds + 1):
                log("bench: round %d of %d%s" % (rnd, a.rounds, " (calibration + output check)" if rnd == 0 else ""))
                order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
                for name, t in order:
                    # Groups of (tool, workload): the configuration's own
                    # tools; a long row's diag companion's (a bf16 row's f32
                    # partner's) tfm run goes in one group with the row's
                    # own run of the same backend, the two back to back
                    # (which one first alternates by round), since the core
                    # estimate subtracts them (f32 / bf16 divides them); the
                    # companion's torch run is its output check, once.
                    diag = self.companions.get(name)
                    groups = []
                    for x in tools:
                        if x.startswith("tfm-"):
                            g = [(x, wl) for wl in (name, diag) if wl and (wl, x[4:]) in self.exes]
                            groups.append(g if rnd % 2 == 0 else g[::-1])
                        elif x == "torch":
                            if rnd == 0 or torch_timed(name):
                                groups.append([(x, name)])
                            if diag and rnd == 0 and (diag, t) not in checked:
                                groups.append([(x, diag)])
                        elif uses_onednn(name):
                            groups.append([(x, name)])
                    groups = [g for g in groups if g]
                    k = rnd % len(groups)
                    ts = [m for g in groups[k:] + groups[:k] for m in g]
                    for tool, wl in ts:
                        self.measure(tool, wl, t, rnd, config=name)
                    if rnd == 0:
                        for wl in dict.fromkeys(w for _, w in ts):
                            if (wl, t) not in checked:
                                self.check_outputs(wl, t, [x for x, w in ts if w == wl])
                                checked.add((wl, t))
                # The peak again after every round: the best figure is the
                # machine's, the spread says how busy it was.
                for t in self.peak:
                    self.peak_runs[t].append(self.measure_peak(t))
                    self.peak[t] = max(self.peak_runs[t])
                log("  FMA peak: " + ", ".join("%d thread(s) %.1f" % (t, ps[-1]) for t, ps in self.peak_runs.items()))
            self.load[1] = open("/proc/loadavg").read().split()[0]
        finally:
            for w in self.workers.values():
                w.close()

    # -- results ------------------------------------------------------------
    def summarise(self):
        """One row per (workload, threads, tfm backend)."""
        a = self.args
        rows = []

        def agg(tool, name, t, config=None):
            rs = [r for r in self.records if r["tool"] == tool and r["workload"] == name and r["threads"] == t
                  and not r.get("check_only") and (config is None or r["config"] == config)]
            if not rs:
                return None
            timed = [r for r in rs if r["round"] > 0] or rs
            out = dict(median_ms=statistics.median(r["median_ms"] for r in timed),
                       min_ms=min(r["min_ms"] for r in rs),
                       runs=sum(r["runs"] for r in rs), invocations=len(rs))
            if tool == "onednn":
                out["linear_ms"] = statistics.median(r["linear_ms"] for r in timed)
                out["attention_ms"] = statistics.median(r["attention_ms"] for r in timed)
            if tool.startswith("tfm-"):
                # tfm's own FLOP count, recovered from gflops = flops / median.
                out["tfm_flops"] = [r["gflops_reported"] * r["median_ms"] * 1e6 for r in rs]
                out["threads_reported"] = sorted({r["threads_reported"] for r in rs})
            return out

        def side_by_side(tool, name, other, t):
            """The records of workloads `name` and `other` measured in the
            same rounds in `name`'s configuration, by round: (name's,
            other's, every shared round, the timed ones), or None."""
            def per_round(wl):
                return {r["round"]: r for r in self.records if r["tool"] == tool and r["workload"] == wl
                        and r["threads"] == t and r["config"] == name}
            xs, os_ = per_round(name), per_round(other)
            rounds = sorted(set(xs) & set(os_))
            if not rounds:
                return None
            return xs, os_, rounds, [r for r in rounds if r > 0] or rounds

        def paired(tool, name, diag, t):
            """X - diag, the two measured side by side in X's configuration:
            the median over the timed rounds of the differences of the two
            medians of a round, and the difference of the mins."""
            both = side_by_side(tool, name, diag, t)
            if both is None:
                return None
            xs, ds, rounds, timed = both
            return dict(diag_median_ms=statistics.median(ds[r]["median_ms"] for r in timed),
                        diag_min_ms=min(ds[r]["min_ms"] for r in rounds),
                        core_ms=statistics.median(xs[r]["median_ms"] - ds[r]["median_ms"] for r in timed),
                        core_min_ms=min(xs[r]["min_ms"] for r in rounds) - min(ds[r]["min_ms"] for r in rounds),
                        rounds=timed)

        def beside_f32(tool, name, f32, t):
            """f32 / bf16, the two measured back to back in the bf16 row's
            configuration: the median over the timed rounds of the ratio of
            the two medians of a round, and the ratio of the mins."""
            both = side_by_side(tool, name, f32, t)
            if both is None:
                return None
            bs, fs, rounds, timed = both
            return dict(f32_workload=f32,
                        f32_median_ms=statistics.median(fs[r]["median_ms"] for r in timed),
                        f32_min_ms=min(fs[r]["min_ms"] for r in rounds),
                        ratio=statistics.median(fs[r]["median_ms"] / bs[r]["median_ms"] for r in timed),
                        ratio_min=min(fs[r]["min_ms"] for r in rounds) / min(bs[r]["min_ms"] for r in rounds),
                        rounds=timed)

        for name in self.names:
            desc, what = WORKLOADS[name]
            flops = matmul_flops(desc, desc["max_seq_len"])
            # A selected workload's figures are from its own configuration
            # (an f32 row is also timed beside its bf16 row); a companion's
            # from the configurations it was measured in.
            own = name if name in a.only else None
            for t in a.threads:
                torch_r = agg("torch", name, t, own)
                onednn_r = agg("onednn", name, t, own)
                for tool in self.tools:
                    if not tool.startswith("tfm-") or (name, tool[4:]) not in self.exes:
                        continue
                    tr = agg(tool, name, t, own)
                    gf = flops / (tr["median_ms"] * 1e-3) * 1e-9
                    # tfm's reported FLOPs: gflops has 1 decimal, median 2 decimals.
                    rel = [abs(x - flops) / flops for x in tr["tfm_flops"]]
                    bound = max(0.05 / max(r["gflops_reported"], 1e-9) + 0.005 / max(r["median_ms"], 1e-9)
                                for r in self.records if r["tool"] == tool and r["workload"] == name and r["threads"] == t)
                    flops_ok = max(rel) <= bound + 1e-3
                    if not flops_ok:
                        self.errors.append("FLOP COUNT %s t=%d %s: tfm's gflops implies %.4g FLOPs, the bench counts %.4g"
                                           % (name, t, tool, statistics.median(tr["tfm_flops"]), flops))
                    row = dict(workload=name, description=what, threads=t, backend=tool[4:],
                               flops=flops, tfm=tr, tfm_gflops=gf,
                               peak_gflops=self.peak[t], tfm_pct_peak=100.0 * gf / self.peak[t],
                               flops_check=dict(ok=flops_ok, tfm_flops=statistics.median(tr["tfm_flops"]),
                                                max_rel_diff=max(rel)),
                               torch=torch_r, onednn=onednn_r,
                               output_check=self.checks.get((name, t, tool)))
                    if self.pairs_attended.get(name) is not None:
                        row["pairs_attended"] = self.pairs_attended[name]
                    if long_kind(name) and companion(name):
                        row["beside_diag"] = paired(tool, name, companion(name), t)
                    if name in BF16_WORKLOADS:
                        row["compute"] = "bf16"
                        row["beside_f32"] = beside_f32(tool, name, companion(name), t)
                    if torch_r:
                        row["torch_gflops"] = flops / (torch_r["median_ms"] * 1e-3) * 1e-9
                        row["torch_pct_peak"] = 100.0 * row["torch_gflops"] / self.peak[t]
                        row["ratio_torch_tfm"] = torch_r["median_ms"] / tr["median_ms"]
                    if onednn_r:
                        row["onednn_gflops"] = flops / (onednn_r["median_ms"] * 1e-3) * 1e-9
                        row["onednn_pct_peak"] = 100.0 * row["onednn_gflops"] / self.peak[t]
                        row["ratio_onednn_tfm"] = onednn_r["median_ms"] / tr["median_ms"]
                    if tr["threads_reported"] != [t]:
                        self.errors.append("%s t=%d %s: the executable reported threads=%s"
                                           % (name, t, tool, tr["threads_reported"]))
                    rows.append(row)
        return rows


# ---------------------------------------------------------------------------
# Output: table, markdown, json, chart
# ---------------------------------------------------------------------------

COLUMNS = ["workload", "thr", "backend", "tfm med ms", "tfm min ms", "tfm GF/s", "% peak",
           "torch med ms", "torch min ms", "torch GF/s", "oneDNN-gemm ms", "oneDNN min ms", "oneDNN GF/s",
           "torch/tfm", "oneDNN/tfm", "output vs torch"]


def fmt_ms(x):
    return "-" if x is None else ("%.2f" % x if x < 1000 else "%.0f" % x)


def table_rows(rows):
    out = []
    for r in rows:
        c = r["output_check"]
        if c is None:
            chk = "-"
        elif c["ok"]:
            chk = "ok (%.0e)" % c["max_err"]
        else:
            chk = "MISMATCH"
        out.append([
            r["workload"], str(r["threads"]), r["backend"],
            fmt_ms(r["tfm"]["median_ms"]), fmt_ms(r["tfm"]["min_ms"]),
            "%.1f" % r["tfm_gflops"], "%.1f%%" % r["tfm_pct_peak"],
            fmt_ms(r["torch"]["median_ms"]) if r["torch"] else "-",
            fmt_ms(r["torch"]["min_ms"]) if r["torch"] else "-",
            "%.1f" % r["torch_gflops"] if "torch_gflops" in r else "-",
            fmt_ms(r["onednn"]["median_ms"]) if r["onednn"] else "-",
            fmt_ms(r["onednn"]["min_ms"]) if r["onednn"] else "-",
            "%.1f" % r["onednn_gflops"] if "onednn_gflops" in r else "-",
            "%.2f" % r["ratio_torch_tfm"] if "ratio_torch_tfm" in r else "-",
            "%.2f" % r["ratio_onednn_tfm"] if "ratio_onednn_tfm" in r else "-",
            chk])
    return out


def render_text(columns, cells, left):
    """A plain-text table: the first `left` columns left-aligned, the others right."""
    cells = [columns] + cells
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = []
    for j, r in enumerate(cells):
        lines.append("  ".join(s.rjust(w) if i >= left else s.ljust(w) for i, (s, w) in enumerate(zip(r, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_md(columns, cells, left):
    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join("---" if i < left else "---:" for i in range(len(columns))) + "|"]
    for r in cells:
        lines.append("| " + " | ".join(r) + " |")
    return "\n".join(lines)


def text_table(rows):
    return render_text(COLUMNS, table_rows(rows), left=3)


def md_table(rows):
    return render_md(COLUMNS, table_rows(rows), left=3)


# ---------------------------------------------------------------------------
# The long-sequence table (issue 22's goals)
# ---------------------------------------------------------------------------

GOAL_LAYER_VS_FULL = 1.5    # whole layer, windowed (Linformer, Performer, BigBird) vs tfm's own full attention
GOAL_LAYER_VS_TORCH = 3.0   # whole layer, windowed (...) vs PyTorch's dense-mask layer
GOAL_CORE_VS_FULL = 5.0     # attention core, windowed (...) vs full
GOAL_CORE_EFFICIENCY = 1.25  # core time / (full core x pairs ratio); the window and BigBird (LONG_PAIR_KINDS)


def long_rows(rows):
    """One entry per long row (workload, threads, backend): the pairs
    attended, the ratios issue 22's goals are stated in, and the attention
    core estimated as tfm(X) - tfm(X's "diag" layer: window 0, the same
    GEMMs, measured beside X in X's configuration), all from the same run.
    PyTorch's dense-mask layer is, for a windowed or BigBird row, its own
    torch run (the window, or the block pattern, as a dense mask); for a
    Linformer or Performer row, which has no
    mask, the torch run of the full-attention row of the same layer (dense
    attention, the causal mask when causal: what users run today), and that
    row's own torch run (the kind in PyTorch, torch_worker.py's
    UserLinearKindModel) is the "torch kind" figure."""
    by = {(r["workload"], r["threads"], r["backend"]): r for r in rows}
    out = []
    for r in rows:
        name, t, b = r["workload"], r["threads"], r["backend"]
        kind = long_kind(name)
        if kind is None:
            continue
        desc = WORKLOADS[name][0]
        seq = desc["max_seq_len"]
        pairs = attended_pairs(desc, seq)
        full = by.get((long_partner(name, "full"), t, b))
        diag = r.get("beside_diag")
        full_diag = full.get("beside_diag") if full else None
        full_pairs = attended_pairs(WORKLOADS[long_partner(name, "full")][0], seq)
        med = r["tfm"]["median_ms"]
        linear_kind = kind in ("linformer", "performer")
        # PyTorch's dense-mask layer: a Linformer or Performer row's is
        # the full row's (any backend's row: the torch figure is the same).
        if linear_kind:
            dense = next((x["torch"] for x in rows if x["workload"] == long_partner(name, "full")
                          and x["threads"] == t and x["torch"]), None)
        else:
            dense = r["torch"]
        own = r["torch"] if linear_kind else None
        e = dict(workload=name, threads=t, backend=b, kind=kind, causal=is_causal(desc),
                 pairs=pairs, pair_fraction=None if pairs is None else pairs / float(seq * seq),
                 pairs_attended=r.get("pairs_attended"),
                 pairs_vs_full=None if pairs is None else pairs / float(full_pairs),
                 tfm_median_ms=med, tfm_min_ms=r["tfm"]["min_ms"],
                 full_median_ms=full["tfm"]["median_ms"] if full else None,
                 diag_median_ms=diag["diag_median_ms"] if diag else None,
                 torch_median_ms=dense["median_ms"] if dense else None,
                 torch_min_ms=dense["min_ms"] if dense else None,
                 torch_kind_median_ms=own["median_ms"] if own else None,
                 torch_kind_min_ms=own["min_ms"] if own else None,
                 output_check=r["output_check"])
        if full and kind != "diag":
            e["layer_vs_full"] = full["tfm"]["median_ms"] / med
            e["layer_vs_full_min"] = full["tfm"]["min_ms"] / r["tfm"]["min_ms"]
        if dense:
            e["torch_vs_tfm"] = dense["median_ms"] / med
            e["torch_vs_tfm_min"] = dense["min_ms"] / r["tfm"]["min_ms"]
        if own:
            e["torch_kind_vs_tfm"] = own["median_ms"] / med
            e["torch_kind_vs_tfm_min"] = own["min_ms"] / r["tfm"]["min_ms"]
        if diag:
            e["core_ms"] = diag["core_ms"]
            e["core_min_ms"] = diag["core_min_ms"]
            if full_diag:
                full_core = full_diag["core_ms"]
                e["full_core_ms"] = full_core
                full_core_min = full_diag["core_min_ms"]
                e["full_core_min_ms"] = full_core_min
                if kind in LONG_SPARSE_KINDS and e["core_ms"] > 0 and full_core > 0:
                    e["core_vs_full"] = full_core / e["core_ms"]
                    if kind in LONG_PAIR_KINDS:
                        e["core_efficiency"] = e["core_ms"] / (full_core * e["pairs_vs_full"])
                        if e["pairs_attended"]:   # BigBird: against the pairs its pattern really attends
                            e["core_efficiency_attended"] = e["core_ms"] / (
                                full_core * e["pairs_attended"] / float(full_pairs))
                if kind in LONG_SPARSE_KINDS and e["core_min_ms"] > 0 and full_core_min > 0:
                    e["core_vs_full_min"] = full_core_min / e["core_min_ms"]
                    if kind in LONG_PAIR_KINDS:
                        e["core_efficiency_min"] = e["core_min_ms"] / (full_core_min * e["pairs_vs_full"])
        if kind in LONG_SPARSE_KINDS:
            goals = [("layer>=%.1fx full" % GOAL_LAYER_VS_FULL, e.get("layer_vs_full"),
                      lambda v: v >= GOAL_LAYER_VS_FULL),
                     ("layer>=%.0fx torch" % GOAL_LAYER_VS_TORCH, e.get("torch_vs_tfm"),
                      lambda v: v >= GOAL_LAYER_VS_TORCH),
                     ("core>=%.0fx full" % GOAL_CORE_VS_FULL, e.get("core_vs_full"),
                      lambda v: v >= GOAL_CORE_VS_FULL)]
            if kind in LONG_PAIR_KINDS:   # a pair count to scale by: the window's and BigBird's
                goals.append(("core<=%.2fx scaled full" % GOAL_CORE_EFFICIENCY, e.get("core_efficiency"),
                              lambda v: v <= GOAL_CORE_EFFICIENCY))
            e["goals"] = {g: (None if v is None else bool(ok(v))) for g, v, ok in goals}
        out.append(e)
    return out


LONG_COLUMNS = ["workload", "thr", "backend", "pairs/S^2", "tfm med ms", "tfm min ms",
                "tfm full-attn ms", "full/this", "torch mask ms", "torch/tfm", "torch kind ms",
                "torch kind/tfm", "core ms", "core full/this", "core/(full core x pairs)", "goals",
                "output vs torch"]


def long_table_rows(entries):
    def f(x, fmt="%.2f", x_min=None):
        """A median figure, and the same from the mins in brackets."""
        if x is None:
            return "-"
        return fmt % x + ("" if x_min is None else " (" + fmt % x_min + ")")
    out = []
    for e in entries:
        c = e["output_check"]
        chk = "-" if c is None else ("ok (%.0e)" % c["max_err"] if c["ok"] else "MISMATCH")
        goals = e.get("goals")
        if goals is None:
            g = "-"
        else:
            missed = [k for k, v in goals.items() if v is False]
            unknown = [k for k, v in goals.items() if v is None]
            g = ("met" if not missed else "missed: " + ", ".join(missed)) if len(unknown) < len(goals) \
                else "not judged"
            g += "" if not unknown else " (%d not measured)" % len(unknown)
        pf = e["pair_fraction"]
        out.append([e["workload"], str(e["threads"]), e["backend"],
                    "-" if pf is None else "%.1f%%" % (100 * pf) if pf >= 0.001 else "%.3f%%" % (100 * pf),
                    fmt_ms(e["tfm_median_ms"]), fmt_ms(e["tfm_min_ms"]),
                    fmt_ms(e["full_median_ms"]), f(e.get("layer_vs_full"), x_min=e.get("layer_vs_full_min")),
                    fmt_ms(e["torch_median_ms"]), f(e.get("torch_vs_tfm"), x_min=e.get("torch_vs_tfm_min")),
                    fmt_ms(e["torch_kind_median_ms"]),
                    f(e.get("torch_kind_vs_tfm"), x_min=e.get("torch_kind_vs_tfm_min")),
                    f(e.get("core_ms"), "%.0f", e.get("core_min_ms")) +
                    (" noise" if e.get("core_ms") is not None and e["core_ms"] <= 0 else ""),
                    f(e.get("core_vs_full"), "%.1f", e.get("core_vs_full_min")),
                    f(e.get("core_efficiency"), x_min=e.get("core_efficiency_min")), g, chk])
    return out


def long_notes(bench, entries):
    """What the long table's columns are, in a few lines for the results."""
    lines = ["Ratios are of medians, and in brackets of the min columns (the best pass of each), "
             "the better guide on a busy machine; goals are judged on the medians.",
             "pairs/S^2: the (query, key) pairs attended per head, as a fraction of all S^2 = 4096^2 "
             "(full: 100%; causal full: S(S+1)/2; window 256 with 2 global tokens: the band of 2W+1 = 513 "
             "keys, the 2 global keys, the 2 global rows; diag: window 0, each token itself; Linformer: "
             "S x k, k = 256 projected keys; Performer: none, '-'; BigBird, blocks of 64, 1 window block "
             "each side, 1 global block, 3 random blocks: nominal, as tfm's --bench counts them, the global "
             "block's rows every key, any other row its window and global keys plus 3 x 64 random keys "
             "(as if each random id named a block no other rule reaches: an upper bound; the pairs the "
             "bench's block_pattern really attends are given below)).",
             "full/this: tfm's full-attention layer of the same shape (median) / this layer's median; "
             "goal for the windowed, Linformer, Performer and BigBird rows >= %.1f." % GOAL_LAYER_VS_FULL,
             "torch mask ms, torch/tfm: PyTorch 1.13's dense-mask layer: for a windowed or BigBird row the "
             "same layer, weights and input, the window (BigBird: the rule with the layer's block_pattern) "
             "as a dense attn_mask (below); for a Linformer or Performer row "
             "(nothing to mask) PyTorch's full-attention layer of the same shape (the full row's torch "
             "figure: dense attention, with the causal mask when causal); goal for the windowed, Linformer, "
             "Performer and BigBird rows >= %.0f." % GOAL_LAYER_VS_TORCH,
             "torch kind ms, torch kind/tfm: a Linformer or Performer row's own PyTorch layer (same weights "
             "and input, the kind written with torch ops as a user would: below; the output check is "
             "against it); no goal. None for BigBird (Hugging Face's block-gathering BigBird needs "
             "transformers, which the bench does not install, and has its own block layout).",
             "core ms: the attention core, estimated as this layer's time - the time of the same layer with "
             "window 0 (its diag row: the same GEMMs, LayerNorms and FFN, one key per query), the two measured "
             "side by side in this row's configuration (the median over the timed rounds of the difference of "
             "the two medians; in brackets, of the mins); "
             "core full/this: the full layer's core / this one's (goal >= %.0f); core/(full core x pairs): this "
             "core / (the full core x this layer's pairs / the full layer's pairs) (goal <= %.2f: skipping costs "
             "no efficiency; windowed and BigBird rows only, BigBird's with its nominal pairs). A Linformer "
             "or Performer core includes its projections (E_n K, F_n V) or feature maps."
             % (GOAL_CORE_VS_FULL, GOAL_CORE_EFFICIENCY)]
    for name in dict.fromkeys(e["workload"] for e in entries if e["pairs_attended"]):
        es = [e for e in entries if e["workload"] == name]
        seq = WORKLOADS[name][0]["max_seq_len"]
        eff = ["t=%d %s %.2f" % (e["threads"], e["backend"], e["core_efficiency_attended"])
               for e in es if e.get("core_efficiency_attended") is not None]
        lines.append("%s: the bench's block_pattern (make_weights: ids uniform in -1 .. rows, some repeated, "
                     "in a window or global block, out of range or, causal, past the row) attends %d pairs "
                     "(%.2f%% of S^2), the nominal count %d (%.2f%%)%s."
                     % (name, es[0]["pairs_attended"], 100.0 * es[0]["pairs_attended"] / seq / seq,
                        es[0]["pairs"], 100.0 * es[0]["pairs"] / seq / seq,
                        "; core/(full core x pairs) with the pairs attended (no goal): " + ", ".join(eff)
                        if eff else ""))
    for name in [e["workload"] for e in entries if e["threads"] == entries[0]["threads"]
                 and e["backend"] == entries[0]["backend"]]:
        tm = bench.torch_models.get(name) or {}
        lines.append("torch on %s: %s, attn_mask %s%s" % (
            name, tm.get("model"), tm.get("mask"),
            "" if torch_timed(name) else " (one pass, for the output check only; not timed)"))
    return lines


# ---------------------------------------------------------------------------
# The --compute=bf16 table (issue 25's goal)
# ---------------------------------------------------------------------------

def bf16_rows(rows, simd):
    """One entry per --compute=bf16 row (workload, threads, backend): its
    time, its f32 partner's measured beside it, f32 / bf16, the GEMM path
    the executable ran (bf16_gemm_path) and the goal: f32 / bf16 >=
    GOAL_BF16_VS_F32 on the medians, judged only on the dot-product path
    (None, "emulated: no speed claim", elsewhere)."""
    out = []
    for r in rows:
        if r["workload"] not in BF16_WORKLOADS:
            continue
        path, why = bf16_gemm_path(r["backend"], simd)
        f = r.get("beside_f32") or {}
        e = dict(workload=r["workload"], threads=r["threads"], backend=r["backend"],
                 f32_workload=BF16_WORKLOADS[r["workload"]],
                 bf16_median_ms=r["tfm"]["median_ms"], bf16_min_ms=r["tfm"]["min_ms"],
                 f32_median_ms=f.get("f32_median_ms"), f32_min_ms=f.get("f32_min_ms"),
                 ratio=f.get("ratio"), ratio_min=f.get("ratio_min"),
                 gemm_path=path, gemm_path_why=why, tfm_bf16_dot=os.environ.get("TFM_BF16_DOT"),
                 goal=">= %.1fx" % GOAL_BF16_VS_F32, output_check=r["output_check"])
        if path != "dot":
            e["goal_met"], e["verdict"] = None, "emulated: no speed claim"
        elif e["ratio"] is None:
            e["goal_met"], e["verdict"] = None, "not measured"
        else:
            e["goal_met"] = e["ratio"] >= GOAL_BF16_VS_F32
            e["verdict"] = "met" if e["goal_met"] else "missed"
        out.append(e)
    return out


BF16_COLUMNS = ["workload", "thr", "backend", "bf16 med ms", "bf16 min ms", "f32 med ms", "f32 min ms",
                "f32/bf16", "bf16 GEMMs", "goal >= %.1fx" % GOAL_BF16_VS_F32, "output vs torch"]


def bf16_table_rows(entries):
    out = []
    for e in entries:
        c = e["output_check"]
        chk = "-" if c is None else ("ok (%.0e)" % c["max_err"] if c["ok"] else "MISMATCH")
        ratio = "-" if e["ratio"] is None else "%.2fx (%.2fx)" % (e["ratio"], e["ratio_min"])
        out.append([e["workload"], str(e["threads"]), e["backend"],
                    fmt_ms(e["bf16_median_ms"]), fmt_ms(e["bf16_min_ms"]),
                    fmt_ms(e["f32_median_ms"]), fmt_ms(e["f32_min_ms"]),
                    ratio, e["gemm_path"], e["verdict"], chk])
    return out


def bf16_notes(entries):
    """What the bf16 table's columns are, and which path ran and why."""
    lines = ["bf16 med/min ms: the layer compiled with `tfm-compile --compute=bf16` (GEMM inputs rounded "
             "to bfloat16, sums in f32); f32 med/min ms: %s's executable (the same layer, weights and "
             "input, f32), timed back to back with it in every round (the order alternating); f32/bf16: "
             "the median over the timed rounds of the ratio of the two medians of a round, and in "
             "brackets the ratio of the mins." % ", ".join(sorted({e["f32_workload"] for e in entries})),
             "bf16 GEMMs: which loop the executable's GEMM tiles ran, by the rule of PreferBf16Dot "
             "(runtime/include/tfm/runtime/kernels/gemm-bf16-inl.h): `dot`, the AVX512-BF16 dot products "
             "(VDPBF16PS), where /proc/cpuinfo has avx512_bf16 and the CPU is AMD's, or with "
             "TFM_BF16_DOT=1; `emulated`, f32 FMAs over the bf16-rounded values, elsewhere (TFM_BF16_DOT=0, "
             "no avx512_bf16, an Intel CPU, the LLVM backend, --simd avx2).",
             "goal >= %.1fx: f32/bf16 (medians) on the dot products only; an emulated row is timed but "
             "makes no speed claim. The output check allows 1e-2 x (1 + max |torch|) (docs/reference.md, "
             "Weight precision) against PyTorch's f32 layer." % GOAL_BF16_VS_F32]
    for key in dict.fromkeys((e["backend"], e["gemm_path"], e["gemm_path_why"]) for e in entries):
        lines.append("%s backend: %s (%s)" % key)
    return lines


def write_chart(rows, peak, path, work):
    """Grouped bars of GFLOP/s (the same FLOP count for every tool) per
    workload and thread count, with the measured FMA peak; gnuplot, else
    matplotlib, else nothing."""
    backends = sorted({r["backend"] for r in rows})
    keys = []
    for r in rows:
        k = (r["workload"], r["threads"])
        if k not in keys:
            keys.append(k)
    series = ["tfm-" + b for b in backends] + ["PyTorch 1.13", "oneDNN (GEMMs only)", "FMA peak"]
    data = []
    for k in keys:
        rs = {r["backend"]: r for r in rows if (r["workload"], r["threads"]) == k}
        any_r = next(iter(rs.values()))
        vals = [rs[b]["tfm_gflops"] if b in rs else float("nan") for b in backends]
        vals += [any_r.get("torch_gflops", float("nan")), any_r.get("onednn_gflops", float("nan")),
                 peak[k[1]]]
        data.append(("%s t%d" % k, vals))
    title = "tfm vs PyTorch vs oneDNN GEMMs: matmul GFLOP/s (higher is better), batch 1, fp32"
    if any(r["workload"] in BF16_WORKLOADS for r in rows):
        title += " (_bf16: tfm --compute=bf16)"
    if shutil.which("gnuplot"):
        dat = os.path.join(work, "chart.dat")
        with open(dat, "w") as f:
            f.write("label " + " ".join('"%s"' % s for s in series) + "\n")
            for label, vals in data:
                f.write('"%s" ' % label + " ".join("nan" if v != v else "%.3f" % v for v in vals) + "\n")
        gp = os.path.join(work, "chart.gp")
        width = max(1000, 120 * len(data) + 200)
        with open(gp, "w") as f:
            f.write('set terminal pngcairo noenhanced size %d,560 font "sans,10"\n' % width)
            f.write('set output "%s"\n' % path)
            f.write('set title "%s"\n' % title)
            f.write('set ylabel "GFLOP/s"\nset yrange [0:*]\nset grid ytics\n')
            f.write('set style data histograms\nset style histogram clustered gap 1\n')
            f.write('set style fill solid 0.85 border -1\nset boxwidth 0.9\n')
            f.write('set xtics rotate by -30 scale 0\nset key top left\n')
            f.write('set datafile missing "nan"\n')
            f.write("plot " + ", ".join('"%s" using %d:xtic(1) title columnheader(%d)' % (dat, i + 2, i + 2)
                                        for i in range(len(series))) + "\n")
        rc, so, se = run(["gnuplot", gp])
        if rc == 0:
            return "gnuplot"
        log("bench: gnuplot failed: %s" % se.strip())
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("bench: no gnuplot or matplotlib: no chart (scripts/install-deps.sh --bench installs gnuplot)")
        return None
    fig, ax = plt.subplots(figsize=(max(10, 1.2 * len(data) + 2), 5.6))
    n = len(series)
    for i, s in enumerate(series):
        ax.bar([j + (i - (n - 1) / 2) * 0.8 / n for j in range(len(data))],
               [v[1][i] for v in data], 0.8 / n, label=s)
    ax.set_xticks(range(len(data)))
    ax.set_xticklabels([d[0] for d in data], rotation=30, ha="right")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    return "matplotlib"


def report(bench, rows, elapsed):
    a = bench.args
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    t_info = next(iter(bench.torch_info.values()))
    blas = [os.path.basename(p) for p in t_info["blas"] if "blas" in os.path.basename(p)]
    oi = getattr(bench, "onednn_info", {})
    src, commit = tfm_source(a.tfm_compile)

    def rel(path):
        return os.path.relpath(path, ROOT) if (path + os.sep).startswith(ROOT + os.sep) else path

    peak_line = ", ".join("%d thread%s %.1f GFLOP/s (%.1f per core)" % (t, "s" if t > 1 else "", p, p / t)
                          for t, p in bench.peak.items())
    header = [
        "Measured %s on %s (%d CPUs, load average %s at the start, %s at the end), tfm %s (%s, built from %s); "
        "%s run: %d timed round%s after a calibration round, budget %.1f s per measurement, %.0f s in all."
        % (now, cpu_model(), os.cpu_count(), bench.load[0], bench.load[1], commit,
           rel(os.path.abspath(a.tfm_compile)), rel(src) or ".",
           "quick" if a.quick else "full", a.rounds, "" if a.rounds == 1 else "s", a.budget, elapsed),
        "CPU vector extensions: %s; tfm's Highway code on %s."
        % (cpu_isa(), "the AVX2 target, forced (--simd avx2: --target=generic, TFM_SIMD=avx2)"
           if a.simd == "avx2" else "the target this CPU dispatches to" if a.simd is None
           else "the %s target, forced" % a.simd),
        "FMA peak (fma_peak.cpp, %s vectors, best of %d x 0.2 s, measured before the first round and after each): %s."
        % ({"avx512": "512-bit", "avx2": "256-bit"}.get(getattr(bench, "peak_isa", "?"), "?"),
           a.peak_trials, peak_line),
        "PyTorch %s (ATen CPU capability %s), BLAS %s (OpenBLAS kernels: %s); %s; "
        "both baselines with OMP_WAIT_POLICY %s."
        % (t_info["torch"], t_info["cpu_capability"],
           ", ".join(blas) or "?", t_info.get("openblas_core") or "not OpenBLAS",
           "oneDNN 2.6 matmul: ISA %s, linears %s, attention %s"
           % (oi.get("isa", "?"), oi.get("linear_impl", "?"), oi.get("attention_impl", "?"))
           if oi else "oneDNN not run (no workload with full attention)",
           t_info["env"].get("OMP_WAIT_POLICY") or "unset"),
    ]
    notes = []
    if 1 in bench.peak:
        for t, p in bench.peak.items():
            if t > 1 and p < 0.75 * t * bench.peak[1]:
                notes.append("the machine was busy: %d threads reached only %.2fx the 1-thread FMA peak; "
                             "%d-thread figures (tfm's and the baselines') are not meaningful"
                             % (t, p / bench.peak[1], t))
    for t, ps in bench.peak_runs.items():
        if min(ps) < 0.85 * max(ps):
            notes.append("the FMA peak at %d thread%s ranged from %.1f to %.1f GFLOP/s over the run (%s): "
                         "the machine's load changed while it ran"
                         % (t, "s" if t > 1 else "", min(ps), max(ps), ", ".join("%.0f" % p for p in ps)))
    if (cpu_isa().startswith("AVX-512")
            and str(t_info.get("openblas_core")).lower() not in ("skylakex", "cooperlake", "sapphirerapids")):
        notes.append("torch's BLAS does not run OpenBLAS's AVX-512 kernels (%s)" % t_info.get("openblas_core"))
    for b, why in bench.skipped_backends.items():
        notes.append("--backend=%s not measured: %s" % (b, why))
    notes += bench.errors
    for name, tm in sorted(bench.torch_models.items()):
        expected, what = {
            "linformer": ("UserLinearKindModel", "torch_worker.py's UserLinearKindModel"),
            "performer": ("UserLinearKindModel", "torch_worker.py's UserLinearKindModel"),
            "bigbird": ("TorchBlockSparseStack", "torch_worker.py's TorchBlockSparseStack "
                        "(nn.TransformerEncoder with a dense attn_mask)"),
        }.get(long_kind(name), ("TorchSingleStack", "nn.TransformerEncoder with a dense attn_mask"))
        if long_kind(name) and not str(tm.get("model")).startswith(expected):
            notes.append("torch on %s is %s, not %s" % (name, tm.get("model"), what))
    table = text_table(rows)
    longs = long_rows(rows)
    bf16s = bf16_rows(rows, a.simd)
    print()
    print("\n".join(header))
    print()
    print(table)
    if longs:
        print()
        print("Long sequences (seq 4096; issue 22's goals, medians):")
        print()
        print(render_text(LONG_COLUMNS, long_table_rows(longs), left=3))
        print()
        print("\n".join("  " + l for l in long_notes(bench, longs)))
    if bf16s:
        print()
        print("Prefill with --compute=bf16 (issue 25's goal, medians):")
        print()
        print(render_text(BF16_COLUMNS, bf16_table_rows(bf16s), left=3))
        print()
        print("\n".join("  " + l for l in bf16_notes(bf16s)))
    if notes:
        print()
        print("\n".join("note: " + n for n in notes))
    os.makedirs(a.out_dir, exist_ok=True)
    stem = a.out_stem
    png = os.path.join(a.out_dir, stem + ".png")
    # The chart is for the default workloads; a long-only run has none.
    chart = write_chart(rows, bench.peak, png, bench.work) if stem == "latest" else None
    title = "latest results" if stem == "latest" else "long-sequence rows (seq 4096)"
    md = ["# tfm benchmark: " + title, "",
          "Written by `%s`; see bench/README.md for what the columns mean."
          % " ".join(["bench/run.sh"] + ([a.command] if a.command else [])),
          ""] + ["- " + h for h in header] + ["", md_table(rows), ""]
    split = ["oneDNN GEMM time per pass, split (medians, ms; attention = QK^T and PV batched over heads, "
             "causal ones in 64-row blocks):", "",
             "| workload | thr | linears (QKV, out, FFN1, FFN2) | attention (QK^T, PV) |", "|---|---|---:|---:|"]
    seen = set()
    for r in rows:
        k = (r["workload"], r["threads"])
        if r["onednn"] and k not in seen:
            seen.add(k)
            split.append("| %s | %d | %s | %s |" % (k[0], k[1], fmt_ms(r["onednn"]["linear_ms"]),
                                                     fmt_ms(r["onednn"]["attention_ms"])))
    md += split + [""]
    if longs:
        md += ["## Long sequences (seq 4096; issue 22's goals, medians)", "",
               render_md(LONG_COLUMNS, long_table_rows(longs), left=3), ""]
        md += ["- " + l for l in long_notes(bench, longs)] + [""]
    if bf16s:
        md += ["## Prefill with --compute=bf16 (issue 25's goal, medians)", "",
               render_md(BF16_COLUMNS, bf16_table_rows(bf16s), left=3), ""]
        md += ["- " + l for l in bf16_notes(bf16s)] + [""]
    if notes:
        md += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    if chart:
        md += ["![GFLOP/s per workload](%s.png)" % stem, ""]
    with open(os.path.join(a.out_dir, stem + ".md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(a.out_dir, stem + ".json"), "w") as f:
        json.dump(dict(date=now, cpu=cpu_model(), cpu_isa=cpu_isa(), simd=a.simd, peak_isa=getattr(bench, "peak_isa", None), cpus=os.cpu_count(), tfm_commit=commit, tfm_source=src,
                       quick=a.quick, rounds=a.rounds, budget_s=a.budget, elapsed_s=elapsed,
                       peak_gflops={str(t): p for t, p in bench.peak.items()},
                       peak_each_measurement={str(t): ps for t, ps in bench.peak_runs.items()},
                       torch=bench.torch_info, onednn=oi,
                       skipped_backends=bench.skipped_backends, notes=notes,
                       workloads={n: dict(description=WORKLOADS[n][0], what=WORKLOADS[n][1],
                                          flops=matmul_flops(WORKLOADS[n][0], WORKLOADS[n][0]["max_seq_len"]))
                                  for n in bench.names},
                       torch_models=bench.torch_models, long_rows=longs, bf16_rows=bf16s,
                       rows=rows, measurements=bench.records), f, indent=1)
    print()
    print("bench: wrote %s/%s.md, %s.json%s" % (a.out_dir, stem, stem, ", %s.png" % stem if chart else ""))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a short run (about 2 minutes)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--only", action="append", default=[],
                   help="a workload (repeatable, or comma-separated); default: "
                        + ", ".join(DEFAULT_WORKLOADS) + ", decode; also the long-sequence rows "
                        "(not in the default run), one by one or all with `long`: "
                        + ", ".join(LONG_WORKLOADS))
    p.add_argument("--no-decode", action="store_true", help="leave out the decode benchmark")
    p.add_argument("--decode-runs", type=int, help="decode: runs per row (default 5, quick 2)")
    p.add_argument("--decode-steps", type=int, default=16, help="decode: timed steps per run (default 16)")
    p.add_argument("--weight-dtypes", default="f32,bf16,int8",
                   help="decode: tfm's --weight-dtype formats measured side by side (comma-separated, "
                        "of f32, bf16, f16, int8; default f32,bf16,int8)")
    p.add_argument("--blas-dir", help="a folder with a libblas.so.3 (e.g. OpenBLAS's openblas-pthread/) that the "
                        "PyTorch workers load ahead of the system's (LD_LIBRARY_PATH)")
    p.add_argument("--backends", default=",".join(BACKENDS),
                   help="tfm backends to try (those that do not compile are reported and skipped)")
    p.add_argument("--rounds", type=int, help="timed rounds after the calibration round (default 3, quick 1)")
    p.add_argument("--budget", type=float, help="seconds per measurement (default 2.0, quick 0.4)")
    p.add_argument("--omp-wait-policy", default="PASSIVE", choices=("PASSIVE", "ACTIVE", "default"),
                   help="OMP_WAIT_POLICY of the baselines (torch and oneDNN): PASSIVE (the default: "
                        "idle OpenMP threads sleep instead of spinning, see bench/README.md), ACTIVE, "
                        "or default (unset)")
    p.add_argument("--simd", choices=("avx512", "avx2"),
                   help="force tfm's Highway code onto this SIMD target (compiled with "
                        "--target=generic, run with TFM_SIMD) and measure the FMA peak with "
                        "its vector width; the LLVM backend is left out (default: the "
                        "widest the CPU has)")
    p.add_argument("--tfm-compile", default=os.path.join(ROOT, "build", "bin", "tfm-compile"))
    p.add_argument("--work-dir", default=os.path.join(HERE, "work"))
    p.add_argument("--out-dir", default=os.path.join(HERE, "results"),
                   help="where the results go: latest.{md,json,png}, or long-seq.{md,json} when "
                        "only long-sequence rows are measured")
    p.add_argument("--list", action="store_true", help="list the workloads and their FLOPs")
    p.add_argument("--check-pairs", action="store_true",
                   help="check block_sparse's nominal pair count (the FLOPs of the BigBird rows) against "
                        "a dense mask at small sizes, and exit (seconds; needs no build)")
    a = p.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    hidden = ("--tfm-compile", "--out-dir", "--work-dir")  # paths: not part of the command shown
    a.command = " ".join(x for i, x in enumerate(argv)
                         if not x.startswith(hidden) and (i == 0 or argv[i - 1] not in hidden))
    if a.list:
        for n, (d, what) in WORKLOADS.items():
            print("%-27s %-75s %8.3f GFLOP%s" % (n, what, matmul_flops(d, d["max_seq_len"]) * 1e-9,
                                                "  (beside %s)" % BF16_WORKLOADS[n] if n in BF16_WORKLOADS else
                                                "" if n not in LONG_WORKLOADS else
                                                "  (--only long)" if n in GROUPS["long"] else
                                                "  (--only long: beside the other rows of its layer)"))
        print("%-27s %s" % ("decode", "gpt2-small decode steps at cache lengths 128 and 1024 (bench/decode.py)"))
        return 0
    if a.check_pairs:
        check_block_sparse_pairs()
        return 0
    a.threads = [int(t) for t in a.threads.split(",") if t.strip()]
    if not a.threads or min(a.threads) < 1:
        p.error("--threads: positive integers, e.g. 1,2")
    only = []
    for o in a.only:
        for n in o.split(","):
            for m in GROUPS.get(n.strip(), [n.strip()]):
                if m and m not in only:
                    only.append(m)
    unknown = [n for n in only if n not in WORKLOADS and n != "decode"]
    if unknown:
        p.error("unknown workload %s; known: %s, decode, %s"
                % (unknown, ", ".join(WORKLOADS), ", ".join(GROUPS)))
    a.decode = ("decode" in only if only else not a.no_decode)
    a.only = [n for n in only if n != "decode"] if only else list(DEFAULT_WORKLOADS)
    # A run of long rows alone writes long-seq.*, leaving latest.* (the
    # default run's) as they are.
    a.out_stem = "long-seq" if a.only and all(n in LONG_WORKLOADS for n in a.only) else "latest"
    if a.decode_runs is None:
        a.decode_runs = 2 if a.quick else 5
    if a.decode_runs < 1 or a.decode_steps < 1:
        p.error("--decode-runs and --decode-steps: positive integers")
    a.weight_dtypes = [w.strip() for w in a.weight_dtypes.split(",") if w.strip()]
    if not a.weight_dtypes or any(w not in ("f32", "bf16", "f16", "int8") for w in a.weight_dtypes):
        p.error("--weight-dtypes: a comma-separated list of f32, bf16, f16, int8")
    if len(set(a.weight_dtypes)) != len(a.weight_dtypes):
        p.error("--weight-dtypes: each format once")
    a.backends = [b for b in a.backends.split(",") if b]
    if a.rounds is None:
        a.rounds = 1 if a.quick else 3
    if a.budget is None:
        a.budget = 0.4 if a.quick else 2.0
    a.calib_runs = 2 if a.quick else 3
    a.min_runs = 2 if a.quick else 3
    a.max_runs = 200
    a.peak_trials = 3
    if not os.access(a.tfm_compile, os.X_OK):
        sys.exit("bench: %s not found: build tfm first (bench/run.sh does)" % a.tfm_compile)
    status = 0
    if a.only:
        t0 = time.time()
        b = Bench(a)
        b.run_all()
        rows = b.summarise()
        report(b, rows, time.time() - t0)
        status = 1 if b.errors else 0
    if a.decode:
        import decode
        status |= decode.run(a)
    return status


if __name__ == "__main__":
    sys.exit(main())
