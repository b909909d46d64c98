#!/usr/bin/python3
"""bench/: Mamba layers (contract section 7, `layers` entries "mamba", the
`mamba` key) -- a stack of mamba-130m's mixers in prefill beside PyTorch
running the reference's sequential scan, where a mixer's time goes (its
GEMMs against the rest), and the decode step at two positions beside the
weight-read time.

  /usr/bin/python3 bench/mamba_bench.py [--quick] [--rounds 4] [--threads 1,2] [--backends hwy,llvm]
                                        [--blas-dir DIR] [--no-perf] [--no-prefill] [--no-decode]
                                        [--layers 4,24] [--hybrid-layers 8] [--attention-every 4] [--deep-passes 1]

Shapes (mamba-130m's mixer): d_model 768, d_state 16, d_conv 4, expand 2
(d_inner 1536), dt_rank auto (48), RMS norms (mamba-130m's), fp32, batch 1.

Prefill: float inputs [1, --seq (2048), 768], no vocabulary, positional
none, final_norm false, weights from test/e2e/reference.py's make_weights
(Hugging Face's MambaMixer initialisation), three models by default:
  * "the stack": --layers' first entry (4) mamba layers (the perf split
    and the HF form below are this one's);
  * each further --layers entry (24: a mamba-130m-shaped stack) the same
    way, its own rows;
  * "the hybrid": --hybrid-layers (8) layers, every --attention-every-th
    (4th: layers 3 and 7, 0-based) an attention layer, the others mamba
    layers (a `layers` list): full causal attention, GPT-2-style (12
    heads, d_ff 3072, gelu_tanh FFN, pre-norm, biases) with the model's
    RMS norms and no positional encoding (Jamba's attention layers have
    none: the mamba layers carry position); 0 leaves it out;
compiled by each of tfm's backends (`--backends`: Highway, the default and
the one the goals are about; LLVM, `--backend=llvm`, for comparison; a
backend that fails to compile is left out with a note).  A model of more
than DEEP (8) layers (the 24-layer stack: PyTorch's scan takes about 7 s a
pass there) runs --deep-passes (1) timed passes on each side and the
Highway backend only:
  * tfm: `EXE --weights W --input input=X --bench P --warmup 1 --threads T`,
    the median of its `bench:` line;
  * PyTorch (Debian's 1.13, /usr/bin/python3; this script with --worker T,
    bench.py's baseline environment: OPENBLAS_NUM_THREADS = OMP_NUM_THREADS
    = T, torch.set_num_threads(T), OMP_WAIT_POLICY=PASSIVE; --blas-dir puts
    OpenBLAS ahead of Debian's reference BLAS, whose GEMMs would otherwise
    dominate the baseline), the same stack, weights and input, under
    torch.inference_mode(), P timed passes (a warm-up pass at load), in two
    forms (both checked, on the stack; the second timed only once, in the
    check, unless --with-hf: it takes about 2.5x the first's time; the
    other models run the first only, the hybrid's attention layers as
    reference.py computes them: softmax(q k^T / sqrt(dk)) v with the causal
    mask on the [heads, seq, seq] scores):
      - "reference scan" (the goal's baseline): reference.py's
        FormulaModel, its mixers FormulaMambaMixer in the "scan" form, the
        Mamba paper's sequential recurrence, a Python loop over the
        positions doing exp(delta_t A), the update of h and C_t . h_t on
        [batch, d_inner, d_state] tensors at each step;
      - "HF slow_forward": the same layers with each mixer's forward
        replaced by Hugging Face's MambaMixer.slow_forward (transformers
        4.46, no cache): exp(delta A) and delta B u for every position at
        once ([1, d_inner, seq, d_state] each), then a Python loop over the
        positions for h and a matmul with C_t;
    and one pass of the reference scan under torch.autograd.profiler: how
    much of PyTorch's time its GEMMs (aten::mm/addmm) take, and so what the
    2.5x goal asks of tfm (a note);
    the check, before any timing, for every model: each backend's output
    (`--output`) and the HF form's against the reference scan's, within
    1e-4 (1 + max|ref|) (contract section 6), and the Highway output at
    every thread count bit-identical to its 1-thread output (the scan
    splits channels, never positions, across threads).

The split of a mixer's time (Highway): tfm compiles whole layers, and no
model description leaves the scan out, so the GEMMs cannot be isolated by
difference between compiled models as moe_bench.py isolates its FFN (a
mamba layer without its scan or conv is not expressible; changing d_state
or d_conv moves GEMM shapes too).  Instead the executable is sampled:
`perf record -e cpu-clock -F 1999 -g` on a separate `--bench P --warmup 1`
run of the same executable (not on the timed runs), then `perf script`.
Each sample is given to the innermost frame of its call chain that names
an op: a kernel (GemmTile*: GEMM; SelectiveScanGated, CausalConv1dSilu,
*NormRow when not inlined), else the generated layer's parallelFor lambda
it ran in (`decoder_layer(...)::$_N`; the emitted C++ (`--emit=cpp`) says
which op each lambda is: clang numbers a function's lambdas in the order
they appear, nested ones aside, which the script checks against the
executable's symbols), else startup (weight packing, random fills) or
unknown.  Page faults and libm calls under a lambda count for its op.  A
GEMM's lambda also holds its epilogue (dt_proj's bias; out_proj's residual
add, which is the layer's rather than the mixer's: it is counted on the GEMM
side, as the dense layer's epilogues are).  An op's time per pass = the
median pass of the timed (unsampled) run of the same model in the same
round x the op's share of the perf run's forward-pass samples (the samples
that reached an op; the sampled run is a few per cent slower, a note says
how much, and the shares are what it contributes); its GFLOP/s = its FLOPs
/ that.
cpu-clock samples the CPU time the process gets, so a share is of the
work done; "coverage" = forward samples / (rate x passes x median pass x
threads) says how much of the threads' wall time that was: about 1.0 on a
quiet machine; below it, the process was held back by other jobs or a
thread waited for the other (time no op is charged with; the op times
spread it in proportion).  Sampling costs about 1 % and is the same for
both models compared.  Why not by difference: see above; and why not the
timed runs themselves: perf's own cost stays out of the speed-up rows.
  * the mixer = every op of the layer but its norm; "the rest" = the conv
    (depthwise conv, bias, SiLU) and the scan (softplus, exp(delta A), the
    recurrence, C . h, the D skip and the SiLU(z) gate, one fused pass),
    as a share of the mixer;
  * "the project's dense GEMM efficiency": the same measurement on a dense
    GPT-2-style layer (d_model 768, 12 heads, d_ff 3072, causal, pre-norm,
    gelu_tanh) at the same seq: its four GEMMs' GFLOP/s (QKV, out
    projection, FFN1 with its gelu, FFN2 with its residual); the goal is the
    mixer's GEMM GFLOP/s over that, per round, median over rounds;
  * a cross-check of the sampling against a timed difference: the dense
    FFN's GFLOP/s by difference between that layer (a) and the same layer
    with d_ff 1 (c), moe_bench.py's method: time(a) - time(c) per round.

Decode (Highway): a mamba-130m-shaped model: --decode-layers (24) mamba
layers, vocab --vocab (50280), tied LM head, final RMS norm, positional
none, make_weights' weights (a safetensors file cached in the work folder;
its random weights would cost seconds of start-up a run), `EXE --weights W
--generate N --input input=PROMPT --threads T`; the step time = 1000 /
decode_tok_s (the mean of its N - 1 decode steps); prompts of lengths whose
steps centre on --positions (100 and 4000: decode.prompt_length); the
bound: the weight bytes one step must read (every layer's mixer and norm,
the final norm, the tied table once, a token's row) over the read
bandwidth bench/bandwidth.cpp measures at that thread count, twice: the
bandwidth measured just before each decode run (per-run ratio, median
over rounds: what a shared machine left the step) and the best of the run
(the strict bound); the goal is judged on each.  The state a step reads
and writes (the conv window and h, a fixed size) is printed beside it.

Rounds: --rounds (default 4, quick 2); each measures every (thread count,
tool) of prefill, the perf runs and the decode rows in an order rotated
from round to round (reversed every other round), then the FMA peak
(bench/fma_peak.cpp, best of 3 x 0.2 s) and the read bandwidth
(bench/bandwidth.cpp, 1 GiB, best of 5) at each thread count, as before the
first round; the best of each is the figure.  Rows give the median over
rounds of the per-round figures and the min; ratios are per-round pairs
where both sides ran in the round, median over rounds.
Results: tables on stdout (progress on stderr), bench/results/mamba.md and
mamba.json (--out).  Exit status 1 when a check fails or a tool fails.
"""

import argparse
import datetime
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
E2E = os.path.join(ROOT, "test", "e2e")
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import bench  # noqa: E402  (run, last_line, build_cxx, baseline_env, TorchWorker, render_*, fma_peak, ...)
import decode  # noqa: E402  (measure_bandwidth, prompt_length)
import hf_decode  # noqa: E402  (machine, commit, loadavg, add_run_arguments, start_run)

# hf_decode takes test/e2e off sys.path; this script needs its reference.py
# and safetensors.py.
if E2E not in sys.path:
    sys.path.insert(0, E2E)

D_MODEL = 768
MAMBA = dict(d_state=16, d_conv=4, expand=2, dt_rank="auto")
DENSE = dict(num_heads=12, d_ff=3072, activation="gelu_tanh", norm="pre")
TOL = 1e-4   # contract section 6: max|tfm - ref| <= TOL * (1 + max|ref|)
# Goals (issue 24): the stack >= 2.5x faster than PyTorch running the
# reference's sequential scan; the mixer's GEMMs at >= 80 % of the dense GEMM
# efficiency; the rest of the mixer <= 25 % of its time; the decode step at
# position 4000 within 1.05x of the step at 100, and within 1.3x of the
# weight-read time.
GOAL_VS_TORCH = 2.5
# A prefill model of more than DEEP layers runs --deep-passes timed passes
# and the Highway backend only (PyTorch's scan: about 0.28 s a layer).
DEEP = 8
GOAL_GEMM_EFF = 0.80
GOAL_REST = 0.25
GOAL_FLAT = 1.05
GOAL_BOUND = 1.3
BACKENDS = {"hwy": "Highway", "llvm": "LLVM"}
LOW_OPENBLAS_CORES = ("prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai",
                      "coppermine", "northwood", "barcelona", "bobcat", "opteron")
PERF_FREQ = 1999
# The generated code's ops (the `// tfm.X at loc(...)` comment before each)
# -> the split's categories.
OP_CATEGORY = {"tfm.linear": "gemm", "tfm.causal_conv1d": "conv", "tfm.selective_scan": "scan",
               "tfm.layer_norm": "norm", "tfm.rms_norm": "norm", "tfm.add_layer_norm": "norm",
               "tfm.add_rms_norm": "norm", "tfm.attention": "attention"}
# Kernels that may show as their own frames (not inlined into a lambda).
KERNEL_CATEGORY = (("GemmTile", "gemm"), ("SelectiveScan", "scan"), ("CausalConv1d", "conv"),
                   ("NormRow", "norm"))
STARTUP = ("packWeights", "packPanels", "fillUniform", "normalPairs", "loadWeights", "Safetensors",
           "safetensors", "readNpy", "_dl_", "do_lookup")
# The mixer's GEMMs in the order the generated layer runs them, when it runs 7.
MAMBA_GEMMS = ("in_proj (u half)", "in_proj (z half)", "x_proj (dt rows)", "x_proj (B rows)",
               "x_proj (C rows)", "dt_proj (+ bias)", "out_proj (+ residual)")
DENSE_GEMMS = ("QKV", "out projection", "FFN1 (+ gelu)", "FFN2 (+ residual)")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def plural(t):
    return "%d thread%s" % (t, "s" if t > 1 else "")


# ---------------------------------------------------------------------------
# The model descriptions and what they cost
# ---------------------------------------------------------------------------

def mamba_sizes(desc):
    """(d_model, d_inner, d_state N, d_conv C, dt_rank R) of a description."""
    m = dict(MAMBA, **desc.get("mamba", {}))
    d = desc["d_model"]
    r = math.ceil(d / 16) if m["dt_rank"] == "auto" else m["dt_rank"]
    return d, m["expand"] * d, m["d_state"], m["d_conv"], r


def stack_desc(a, layers):
    return dict(name="mamba_prefill_%dl" % layers, architecture="decoder", d_model=D_MODEL,
                num_layers=layers, max_seq_len=a.seq, positional="none", final_norm=False,
                norm_type="rms_norm", layers=["mamba"] * layers, mamba=dict(MAMBA))


def hybrid_desc(a):
    """--hybrid-layers layers, every --attention-every-th one a GPT-2-style
    attention layer (DENSE: full causal attention, gelu_tanh FFN, pre-norm,
    biases; the model's RMS norms, no positions), the others mamba layers."""
    n, k = a.hybrid_layers, a.attention_every
    return dict(DENSE, name="mamba_hybrid_%dl_every%d" % (n, k), architecture="decoder", d_model=D_MODEL,
                num_layers=n, max_seq_len=a.seq, positional="none", final_norm=False, norm_type="rms_norm",
                layers=["attention" if (i + 1) % k == 0 else "mamba" for i in range(n)], mamba=dict(MAMBA))


def model_label(desc):
    """A prefill model in a table: "4 mamba layers", "hybrid, 8 layers,
    attention at 3, 7"."""
    kinds = desc["layers"]
    att = [str(i) for i, k in enumerate(kinds) if k != "mamba"]
    if not att:
        return "%d mamba layers" % len(kinds)
    return "hybrid, %d layers, attention at %s" % (len(kinds), ", ".join(att))


def dense_desc(a, d_ff):
    return dict(DENSE, name="mamba_dense_ff%d" % d_ff, architecture="decoder", d_model=D_MODEL, d_ff=d_ff,
                num_layers=1, max_seq_len=a.seq, positional="none", final_norm=False)


def decode_desc(a, max_len):
    return dict(name="mamba_decode_%dl_v%d" % (a.decode_layers, a.vocab), architecture="decoder",
                d_model=D_MODEL, num_layers=a.decode_layers, vocab_size=a.vocab, max_seq_len=max_len,
                positional="none", norm_type="rms_norm", layers=["mamba"] * a.decode_layers, mamba=dict(MAMBA))


def mamba_gemms(desc, seq):
    """[(name, FLOPs of every layer)] of the mixer's GEMMs, in run order:
    in_proj's halves, x_proj's dt, B and C rows, dt_proj, out_proj."""
    d, di, n, c, r = mamba_sizes(desc)
    L = desc["num_layers"]
    shapes = ((di, d), (di, d), (r, di), (n, di), (n, di), (di, r), (d, di))
    return [(name, L * 2.0 * seq * rows * k) for name, (rows, k) in zip(MAMBA_GEMMS, shapes)]


def mamba_flops(desc, seq):
    """The mixer's GEMM FLOPs of a pass (tfm's --bench count for a stack of
    mamba layers: its GEMMs only)."""
    return sum(f for _, f in mamba_gemms(desc, seq))


def prefill_flops(desc, seq):
    """tfm's --bench FLOP count of a prefill model: its mamba layers'
    GEMMs, its attention layers' linears and QK^T, PV (bench.matmul_flops)."""
    nm = sum(k == "mamba" for k in desc["layers"])
    na = desc["num_layers"] - nm
    return (mamba_flops(dict(desc, num_layers=nm), seq) if nm else 0.0) + \
        (bench.matmul_flops(dict(desc, num_layers=na), seq) if na else 0.0)


def dense_gemm_flops(desc, seq):
    """The four GEMMs of a dense layer: QKV, out projection, FFN1, FFN2."""
    d, f = desc["d_model"], desc["d_ff"]
    return desc["num_layers"] * 2.0 * seq * (3 * d * d + d * d + 2 * d * f)


def step_bytes(desc):
    """(weight bytes, state bytes) one decode step of a mamba stack reads,
    fp32: every layer's RMS norm and mixer (in_proj, conv1d weight and bias,
    x_proj, dt_proj weight and bias, A_log, D, out_proj), the final norm,
    the tied table once (the LM head) and a token's row; the state: each
    layer's last C - 1 conv inputs and h [d_inner, N]."""
    d, di, n, c, r = mamba_sizes(desc)
    layer = d + 2 * di * d + di * c + di + (r + 2 * n) * di + di * r + di + di * n + di + d * di
    weights = desc["num_layers"] * layer + d + desc["vocab_size"] * d + d
    state = desc["num_layers"] * ((c - 1) * di + di * n)
    return 4 * weights, 4 * state


# ---------------------------------------------------------------------------
# The PyTorch worker (this script with --worker T, run by /usr/bin/python3)
# ---------------------------------------------------------------------------

def worker(threads):
    import functools
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    import torch_worker  # noqa: E402  (info: torch, BLAS, OpenBLAS kernels, environment)
    import reference
    import safetensors

    state = {}

    def hf_slow_forward(m, input_states):
        """Hugging Face's MambaMixer.slow_forward (transformers 4.46), no
        cache and no mask, on a FormulaMambaMixer's parameters (the same
        names: in_proj, conv1d, x_proj, dt_proj, A_log, D, out_proj; SiLU)."""
        batch_size, seq_len, _ = input_states.shape
        dtype = input_states.dtype
        di, n, r = m.d_inner, m.d_state, m.dt_rank
        projected_states = F.linear(input_states, m.in_proj.weight).transpose(1, 2)
        hidden_states, gate = projected_states.chunk(2, dim=1)
        ssm_state = torch.zeros((batch_size, di, n), dtype=dtype)
        hidden_states = F.silu(F.conv1d(hidden_states, m.conv1d.weight, m.conv1d.bias, padding=m.d_conv - 1,
                                        groups=di)[..., :seq_len])
        ssm_parameters = F.linear(hidden_states.transpose(1, 2), m.x_proj.weight)
        time_step, B, C = torch.split(ssm_parameters, [r, n, n], dim=-1)
        discrete_time_step = F.linear(time_step, m.dt_proj.weight, m.dt_proj.bias)
        discrete_time_step = F.softplus(discrete_time_step).transpose(1, 2)
        A = -torch.exp(m.A_log.float())
        discrete_A = torch.exp(A[None, :, None, :] * discrete_time_step[:, :, :, None])
        discrete_B = discrete_time_step[:, :, :, None] * B[:, None, :, :].float()
        deltaB_u = discrete_B * hidden_states[:, :, :, None].float()
        scan_outputs = []
        for i in range(seq_len):
            ssm_state = discrete_A[:, :, i, :] * ssm_state + deltaB_u[:, :, i, :]
            scan_output = torch.matmul(ssm_state.to(dtype), C[:, i, :].unsqueeze(-1))
            scan_outputs.append(scan_output[:, :, 0])
        scan_output = torch.stack(scan_outputs, dim=-1)
        scan_output = scan_output + (hidden_states * m.D[None, :, None])
        scan_output = scan_output * F.silu(gate)
        return F.linear(scan_output.transpose(1, 2), m.out_proj.weight)

    def load(req):
        """A prefill model (req["kind"]) in req["forms"] ("ref": the scan
        form; "hf": its mixers HF's slow_forward) on the weights, the input;
        one warm-up pass of each (the check's, on the first worker)."""
        with open(req["desc"]) as f:
            desc = json.load(f)
        cfg = reference.Config(desc)
        w = safetensors.load_file(req["weights"])
        models = {}
        for form in req["forms"]:
            model = reference.build_formula_model(cfg)     # mamba mixers in the scan form
            reference.load_weights(model, w)
            model.eval()
            if form == "hf":
                for m in reference.mamba_mixers(model):
                    m.forward = functools.partial(hf_slow_forward, m)
            models[form] = model
        del w
        inputs = reference.to_torch_inputs(cfg, {"input": np.load(req["input"])})
        state[req["kind"]] = dict(models=models, inputs=inputs)
        outs = {}
        with torch.inference_mode():
            for form, model in models.items():
                if form == "hf" and not (req.get("check") or req.get("hf")):
                    continue
                t0 = time.perf_counter()
                y = model(**inputs)
                outs[form] = (y, (time.perf_counter() - t0) * 1e3)
        ans = dict(ok=True, warmup_ms={k: v[1] for k, v in outs.items()})
        if req.get("check"):
            ref = outs["ref"][0].double().numpy()
            tol = TOL * (1 + float(np.max(np.abs(ref))))
            got = {"hf": outs["hf"][0].double().numpy()} if "hf" in outs else {}
            for b, path in req["check"].items():
                got[b] = np.load(path).astype(np.float64)
            ans["check"] = dict(tol=tol, max_ref=float(np.max(np.abs(ref))), shape=list(ref.shape), errs={
                k: dict(shape=list(v.shape), max_err=float(np.max(np.abs(v - ref))) if v.shape == ref.shape
                        else float("inf")) for k, v in got.items()})
        return ans

    def run(req):
        st = state[req["kind"]]
        model, times = st["models"][req["which"]], []
        with torch.inference_mode():
            for _ in range(req["passes"]):
                t0 = time.perf_counter()
                model(**st["inputs"])
                times.append((time.perf_counter() - t0) * 1e3)
        return dict(ok=True, median_ms=statistics.median(times), min_ms=min(times), times=times)

    def profile(req):
        """One pass of the reference scan under torch.autograd.profiler: its
        GEMMs' self CPU time (aten::mm/addmm/bmm), the busiest ops."""
        st = state[req["kind"]]
        with torch.inference_mode(), torch.autograd.profiler.profile() as prof:
            t0 = time.perf_counter()
            st["models"]["ref"](**st["inputs"])
            wall = (time.perf_counter() - t0) * 1e3
        ev = prof.key_averages()
        gemm = sum(e.self_cpu_time_total for e in ev if e.key in ("aten::mm", "aten::addmm", "aten::bmm")) / 1e3
        top = sorted(ev, key=lambda e: -e.self_cpu_time_total)[:6]
        return dict(ok=True, gemm_ms=gemm, wall_ms=wall, ops=sum(e.count for e in ev),
                    top=[[e.key, e.self_cpu_time_total / 1e3, e.count] for e in top])

    ops = dict(info=lambda r: torch_worker.info(), load=load, run=run, profile=profile)
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "quit":
            print("@@ " + json.dumps(dict(ok=True)), flush=True)
            return 0
        try:
            ans = ops[req["op"]](req)
        except Exception as e:  # the answer says what went wrong
            import traceback
            ans = dict(ok=False, error="%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
        print("@@ " + json.dumps(ans), flush=True)
    return 0


class Worker(bench.TorchWorker):
    """bench.py's torch-worker protocol (call, close), with this script as
    the worker and an optional BLAS folder ahead of the system's."""

    def __init__(self, threads, blas_dir=None, coretype=None):
        self.threads = threads
        env = bench.baseline_env(threads, "PASSIVE")
        if blas_dir:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [blas_dir, env.get("LD_LIBRARY_PATH")]))
        if coretype:
            env["OPENBLAS_CORETYPE"] = coretype
        self.proc = subprocess.Popen(["/usr/bin/python3", os.path.abspath(__file__), "--worker", str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


# ---------------------------------------------------------------------------
# Where the time goes: the generated layer's lambdas, perf's samples
# ---------------------------------------------------------------------------

_MARK = re.compile(r"^\s*// (tfm\.\w+) at loc")
_LINEAR = re.compile(r"// (linear[^:]*): \[.*?\] x \[(\d+), (\d+)\]\^T")
_FUNC = re.compile(r"^(?:static )?void (\w+)\(.*\)\s*\{\s*$")
_LAMBDA = re.compile(r"\[[^\[\]\n]*\]\s*\([^()]*\)\s*(?:mutable\s*)?(?:->\s*[\w:<>]+\s*)?\{")


def lambda_map(cpp_text):
    """{function: [dict(op, category, linear=(label, N, K) or None)]} of the
    emitted C++: each function's top-level lambdas in order (clang's $_0,
    $_1, ...; a lambda inside a lambda is numbered in its own scope), with
    the op of the `// tfm.X at loc` comment before it."""
    out, fn, depth, op, linear, inside = {}, None, 0, None, None, None
    for line in cpp_text.splitlines():
        if fn is None:
            m = _FUNC.match(line)
            if m:
                fn, depth, op, linear, inside = m.group(1), 1, None, None, None
                out[fn] = []
            continue
        m = _MARK.match(line)
        if m:
            op, linear = m.group(1), None
        m = _LINEAR.search(line)
        if m:
            linear = (m.group(1), int(m.group(2)), int(m.group(3)))
        code = line.split("//", 1)[0]
        if inside is None:
            for lm in _LAMBDA.finditer(code):
                out[fn].append(dict(op=op, category=OP_CATEGORY.get(op, op or "?"), linear=linear))
                inside = depth + code[:lm.end()].count("{") - code[:lm.end()].count("}") - 1
                break
        depth += code.count("{") - code.count("}")
        if inside is not None and depth <= inside:
            inside = None
        if depth <= 0:
            fn = None
    return out


_SYM_LAMBDA = re.compile(r"tfm_generated::\w+::(\w+)\([^()]*\)::\$_(\d+)\b")


def lambda_symbols(exe):
    """{function: set of lambda numbers} among the executable's symbols."""
    rc, so, se = bench.run(["nm", "-C", exe])
    found = {}
    for m in _SYM_LAMBDA.finditer(so):
        found.setdefault(m.group(1), set()).add(int(m.group(2)))
    return found


def check_lambda_map(lmap, syms):
    """'' when every function's lambdas in the C++ are the executable's
    $_0..$_{n-1}, else what differs."""
    bad = []
    for fn, nums in syms.items():
        want = set(range(len(lmap.get(fn, []))))
        if nums != want:
            bad.append("%s: symbols $_%s, the C++ has %d lambdas" % (fn, ",".join(map(str, sorted(nums))),
                                                                    len(lmap.get(fn, []))))
    return "; ".join(bad)


def perf_samples(script_text, lmap):
    """perf script's samples (-F tid,period,ip,sym, with call chains) ->
    {key: samples}: key ("lambda", function, N) for a sample whose innermost
    known frame is a generated lambda; ("kernel", category) for a kernel's
    own frame (GemmTile etc., its caller not unwound); "startup"; "unknown"."""
    counts = {}
    for block in script_text.split("\n\n"):
        lines = [l.strip() for l in block.strip().splitlines()]
        if not lines:
            continue
        syms = [f.split(None, 1)[1] if " " in f else "" for f in lines[1:]]
        key = "unknown"
        for i, sym in enumerate(syms):
            m = _SYM_LAMBDA.search(sym)
            if m and m.group(1) in lmap:
                key = ("lambda", m.group(1), int(m.group(2)))
                break
            kern = next((c for pat, c in KERNEL_CATEGORY if pat in sym), None)
            if kern:
                key = ("kernel", kern)
                # an outer lambda, when unwound, says which op
                for outer in syms[i + 1:]:
                    mo = _SYM_LAMBDA.search(outer)
                    if mo and mo.group(1) in lmap:
                        key = ("lambda", mo.group(1), int(mo.group(2)))
                        break
                break
            if any(s in sym for s in STARTUP):
                key = "startup"
                break
        counts[key] = counts.get(key, 0) + 1
    return counts


def perf_run(exe, args, threads, data, lmap):
    """`perf record` of one `--bench` run: (dict(median_ms, samples by key),
    None) or (None, what failed)."""
    cmd = ["perf", "record", "-e", "cpu-clock", "-F", str(PERF_FREQ), "-g", "-q", "-o", data, "--", exe] + args + \
        ["--threads", str(threads)]
    rc, so, se = bench.run(cmd)
    kv = bench.last_line(so, "bench: ")
    if rc or kv is None:
        return None, "perf record failed (exit %d): %s %s" % (rc, so.strip()[-200:], se.strip()[-300:])
    rc, sc, se = bench.run(["perf", "script", "-i", data, "-F", "tid,period,ip,sym"])
    if rc:
        return None, "perf script failed (exit %d): %s" % (rc, se.strip()[-300:])
    os.remove(data)
    return dict(median_ms=float(kv["median_ms"]), runs=int(kv["runs"]), samples=perf_samples(sc, lmap)), None


def split(result, lmap, fn, names, threads, flops_of, warmup=1):
    """One perf run's figures: {op label: ms per pass}, category ms, the
    GEMMs' [(label, ms, FLOPs)], coverage, unattributed share."""
    samples = result["samples"]
    ops = lmap[fn]
    per_lambda = {i: samples.get(("lambda", fn, i), 0) for i in range(len(ops))}
    loose = {k[1]: v for k, v in samples.items() if isinstance(k, tuple) and k[0] == "kernel"}
    forward = sum(per_lambda.values()) + sum(loose.values())
    if not forward:
        return None
    ms = result["median_ms"]
    cat = {}
    for i, n in per_lambda.items():
        cat[ops[i]["category"]] = cat.get(ops[i]["category"], 0) + n
    for c, n in loose.items():
        cat[c] = cat.get(c, 0) + n
    cat_ms = {c: ms * n / forward for c, n in cat.items()}
    # the same from the samples alone: CPU ms a pass over the threads
    cat_cpu_ms = {c: n / PERF_FREQ / (result["runs"] + warmup) * 1e3 / threads for c, n in cat.items()}
    gemms, k = [], 0
    loose_gemm = loose.get("gemm", 0)
    gemm_lambdas = [i for i, o in enumerate(ops) if o["category"] == "gemm"]
    gsum = sum(per_lambda[i] for i in gemm_lambdas) or 1
    for i in gemm_lambdas:
        lab, nn, kk = ops[i]["linear"] or ("linear", 0, 0)
        name = names[k] if len(gemm_lambdas) == len(names) else "%s %dx%d" % (lab, nn, kk)
        # GemmTile samples whose caller was not unwound: spread over the
        # GEMMs in proportion to their own samples
        n = per_lambda[i] * (1 + loose_gemm / gsum)
        gemms.append((name, ms * n / forward, flops_of(nn, kk)))
        k += 1
    other = {c: n for c, n in cat.items() if c not in ("gemm", "conv", "scan", "norm", "attention")}
    total = sum(samples.values())
    cover = forward / (PERF_FREQ * (result["runs"] + warmup) * ms * 1e-3 * threads)
    return dict(cat_ms=cat_ms, cat_cpu_ms=cat_cpu_ms, gemms=gemms, coverage=cover, forward=forward, total=total,
                startup=samples.get("startup", 0), unknown=samples.get("unknown", 0), other=other,
                loose_gemm=loose_gemm)


# ---------------------------------------------------------------------------
# Setup
# ---------------------------------------------------------------------------

def dirty_outside_bench(src):
    """The tracked files of the source tree with uncommitted changes,
    outside bench/ (the generated code includes runtime/include's kernels)."""
    rc, st, _ = bench.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no"])
    return sorted(l[3:] for l in st.splitlines() if len(l) > 3 and not l[3:].startswith("bench/")) if not rc else []


def write_model(work, desc, weights=True):
    """Writes DESC.json (and, with `weights`, reference.make_weights saved as
    safetensors, cached by description and seed); returns (json, weights)."""
    name = desc["name"]
    path = os.path.join(work, name + ".json")
    text = json.dumps(desc, indent=2, sort_keys=True) + "\n"
    with open(path, "w") as f:
        f.write(text)
    if not weights:
        return path, None
    import reference
    import safetensors
    seed = zlib.crc32(name.encode())
    wpath = os.path.join(work, name + ".safetensors")
    stamp = os.path.join(work, name + ".stamp")
    if not (os.path.exists(wpath) and os.path.exists(stamp) and open(stamp).read() == text + "seed %d\n" % seed):
        log("mamba_bench: writing weights for %s" % name)
        w = reference.make_weights(reference.Config(desc), seed=seed)
        safetensors.save_file({k: v.numpy() for k, v in w.items()}, wpath)
        del w
        with open(stamp, "w") as f:
            f.write(text + "seed %d\n" % seed)
    return path, wpath


def compile_model(tfm_compile, path, out, backend="hwy", emit=None):
    """`tfm-compile PATH --backend=B [--emit=E] -o OUT`: (OUT, None), or
    (None, what it said) when it fails."""
    cmd = [tfm_compile, path, "--backend=" + backend, "-o", out] + (["--emit=" + emit] if emit else [])
    rc, so, se = bench.run(cmd)
    if rc:
        return None, "%s --backend=%s%s exited %d: %s" % (os.path.basename(path), backend,
                                                          " --emit=" + emit if emit else "", rc,
                                                          " / ".join(se.strip().splitlines()[-3:]))
    return out, None


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    hf_decode.add_run_arguments(ap, "mamba", "mamba.md")
    ap.add_argument("--quick", action="store_true", help="2 rounds, 2 passes, 9 decode tokens (about 5 minutes)")
    ap.add_argument("--rounds", type=int, help="rounds (default 4, quick 2)")
    ap.add_argument("--passes", type=int, help="timed passes of a prefill measurement, tfm and PyTorch "
                    "(default 3, quick 2)")
    ap.add_argument("--backends", default="hwy,llvm", help="tfm's backends in prefill (default hwy,llvm)")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--layers", default="4,24", help="mamba layers of the prefill stacks, comma-separated (default "
                    "4,24: the first is the stack of the perf split and the HF form; 24 is mamba-130m-shaped)")
    ap.add_argument("--hybrid-layers", type=int, default=8, help="layers of the prefill hybrid (default 8; 0 leaves "
                    "it out)")
    ap.add_argument("--attention-every", type=int, default=4, help="every N-th layer of the hybrid is an attention "
                    "layer (default 4: layers 3 and 7 of 8)")
    ap.add_argument("--deep-passes", type=int, default=1, help="timed passes of a prefill model of more than %d "
                    "layers, tfm and PyTorch (default 1; such a model runs the Highway backend only)" % DEEP)
    ap.add_argument("--decode-layers", type=int, default=24)
    ap.add_argument("--vocab", type=int, default=50280)
    ap.add_argument("--positions", default="100,4000", help="decode positions, the steps centred on each "
                    "(default 100,4000)")
    ap.add_argument("--new-tokens", type=int, help="--generate N (N - 1 timed decode steps; default 17, quick 9)")
    ap.add_argument("--peak-trials", type=int, default=3)
    ap.add_argument("--no-prefill", action="store_true")
    ap.add_argument("--no-decode", action="store_true")
    ap.add_argument("--no-perf", action="store_true", help="leave out the perf split and the dense models")
    ap.add_argument("--with-hf", action="store_true", help="time the PyTorch HF slow_forward form in the rounds too "
                    "(about 3x the reference scan's time; by default it runs once, in the check)")
    ap.add_argument("--blas-dir", help="a folder with a libblas.so.3 (e.g. OpenBLAS's openblas-pthread/) that the "
                    "PyTorch workers load ahead of the system's (LD_LIBRARY_PATH)")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.worker)
    a.rounds = a.rounds or (2 if a.quick else 4)
    a.passes = a.passes or (2 if a.quick else 3)
    a.new_tokens = a.new_tokens or (9 if a.quick else 17)
    backends = [b for b in a.backends.split(",") if b]
    if not backends or any(b not in BACKENDS for b in backends):
        ap.error("--backends: a comma-separated list of %s" % ", ".join(BACKENDS))
    positions = [int(p) for p in a.positions.split(",") if p]
    stacks = [int(n) for n in a.layers.split(",") if n]
    if not stacks or min(stacks) < 1 or len(set(stacks)) < len(stacks) or a.hybrid_layers < 0 or \
            a.attention_every < 1:
        ap.error("--layers: distinct positive layer counts; --hybrid-layers >= 0, --attention-every >= 1")
    threads, t_start, load, mach, work = hf_decode.start_run(a)
    dirty = [dirty_outside_bench(bench.tfm_source(a.tfm_compile)[0])]

    def passes_of(kind):
        return a.deep_passes if descs[kind]["num_layers"] > DEEP else a.passes

    def backends_of(kind):
        return [b for b in backends if b == "hwy" or descs[kind]["num_layers"] <= DEEP]
    errors, notes = [], []
    S = a.seq
    perf_ok = not a.no_perf and not a.no_prefill and shutil.which("perf") is not None
    if not a.no_perf and not a.no_prefill and not perf_ok:
        notes.append("perf is not installed: the split of the mixer's time is left out")

    # 1. Models, weights, inputs, compiles.
    log("mamba_bench: models and compiles (%s)" % ", ".join(backends))
    exes, descs, wfiles, lmaps = {}, {}, {}, {}
    pkinds = []      # the prefill models: "stack" (--layers' first), "hybrid", "stack24" (each further --layers)
    if not a.no_prefill:
        descs["stack"] = stack_desc(a, stacks[0])
        if a.hybrid_layers:
            descs["hybrid"] = hybrid_desc(a)
        for n in stacks[1:]:
            descs["stack%d" % n] = stack_desc(a, n)
        pkinds = list(descs)
        x_path = os.path.join(work, "input_s%d.npy" % S)
        np.save(x_path, np.random.default_rng(S).standard_normal((1, S, D_MODEL)).astype(np.float32))
        for kind in pkinds:
            sd = descs[kind]
            path, wfiles[kind] = write_model(work, sd)
            for b in backends_of(kind):
                exe, why = compile_model(a.tfm_compile, path, os.path.join(work, "%s.%s.exe" % (sd["name"], b)), b)
                if exe:
                    exes[(kind, b)] = exe
                elif b == "hwy":
                    errors.append("COMPILE FAILURE " + why)
                else:
                    notes.append("the %s backend does not compile the %s yet (%s): its rows are left out"
                                 % (BACKENDS[b], model_label(sd), why))
        deep = [model_label(descs[k]) for k in pkinds if backends_of(k) != backends]
        if deep:
            notes.append("%s: more than %d layers, so %d timed pass%s a round on each side (--deep-passes) and %s "
                         "only" % (" and ".join(deep), DEEP, a.deep_passes, "es" if a.deep_passes > 1 else "",
                                   " and ".join(BACKENDS[b] for b in backends if b == "hwy") or "no backend"))
        if perf_ok and ("stack", "hwy") in exes:
            for kind, d_ff in (("dense", DENSE["d_ff"]), ("noffn", 1)):
                dd = descs[kind] = dense_desc(a, d_ff)
                dpath, _ = write_model(work, dd, weights=False)
                exe, why = compile_model(a.tfm_compile, dpath, os.path.join(work, dd["name"] + ".hwy.exe"))
                if exe:
                    exes[(kind, "hwy")] = exe
                else:
                    errors.append("COMPILE FAILURE " + why)
            for kind in ("stack", "dense"):
                if (kind, "hwy") not in exes:
                    continue
                cpp = os.path.join(work, descs[kind]["name"] + ".cpp")
                got, why = compile_model(a.tfm_compile, os.path.join(work, descs[kind]["name"] + ".json"), cpp,
                                         emit="cpp")
                if not got:
                    errors.append("--emit=cpp failed: " + why)
                    continue
                with open(cpp) as f:
                    lmap = lambda_map(f.read())
                bad = check_lambda_map(lmap, lambda_symbols(exes[(kind, "hwy")]))
                if bad or "decoder_layer" not in lmap:
                    errors.append("the generated C++'s lambdas do not match the executable's symbols (%s): no "
                                  "split for %s" % (bad or "no decoder_layer", kind))
                    continue
                lmaps[kind] = lmap
    steps = a.new_tokens - 1
    max_len = max(positions) + a.new_tokens + 8
    prompts = {}
    if not a.no_decode:
        dd = descs["decode"] = decode_desc(a, max_len)
        path, wfiles["decode"] = write_model(work, dd)
        exe, why = compile_model(a.tfm_compile, path, os.path.join(work, dd["name"] + ".hwy.exe"))
        if exe:
            exes[("decode", "hwy")] = exe
        else:
            errors.append("COMPILE FAILURE " + why)
        for pos in positions:
            p = decode.prompt_length(pos, steps, max_len)
            prompts[pos] = (p, os.path.join(work, "prompt_%d.npy" % p))
            np.save(prompts[pos][1], np.random.default_rng(p).integers(0, a.vocab, size=(1, p), dtype=np.int64))

    # Helpers: the FMA peak and the read bandwidth.
    fma = os.path.join(work, "fma_peak")
    bench.build_cxx(os.path.join(HERE, "fma_peak.cpp"), fma, ["-pthread"])
    bw_exe = os.path.join(work, "bandwidth")
    bench.build_cxx(os.path.join(HERE, "bandwidth.cpp"), bw_exe, ["-O3", "-pthread"])
    peaks, peak_isa, bws = {t: [] for t in threads}, ["?"], {t: [] for t in threads}

    def measure_limits():
        for t in threads:
            gflops, peak_isa[0] = bench.fma_peak(fma, t, a.peak_trials, who="mamba_bench")
            peaks[t].append(gflops)
        if not a.no_decode:
            for t in threads:
                bws[t].append(decode.measure_bandwidth(bw_exe, t))

    # 2. The check (tfm's outputs against the PyTorch reference scan), the
    # workers.
    workers, torch_info, checks, bitwise, round_loads, hf_once, torch_prof = {}, None, {}, {}, [], {}, None
    runs = {}        # (tool "KIND.hwy" / "KIND.llvm" / "KIND.torch_ref" / "KIND.torch_hf", t) -> [dict(median_ms,
    #                  min_ms)] per round, None once it failed
    perfs = {}       # (kind, t) -> [split dict] per round
    dec = {}         # (pos, t) -> [ms per step] per round
    dec_bw = {}      # (pos, t) -> [GB/s measured just before that run] per round
    flop_check = {}

    def tfm_bench(exe, args, t, passes):
        cmd = [exe] + args + ["--bench", str(passes), "--warmup", "1", "--threads", str(t)]
        rc, so, se = bench.run(cmd)
        kv = bench.last_line(so, "bench: ")
        if rc or kv is None or int(kv["threads"]) != t:
            errors.append("tfm --bench failed or misreported (exit %d): %s: %s %s"
                          % (rc, " ".join(cmd), kv or so.strip()[-300:], se.strip()[-300:]))
            return None
        return dict(median_ms=float(kv["median_ms"]), min_ms=float(kv["min_ms"]), gflops=float(kv["gflops"]))

    def model_args(kind):
        """A prefill model's weights and input (the dense layers: none, their own random ones)."""
        return ["--weights", wfiles[kind], "--input", "input=" + x_path] if kind in pkinds else []

    def measure(cfg):
        phase, tool, t = cfg
        if phase == "prefill":
            if runs.get((tool, t), []) is None:
                return
            kind, b = tool.split(".")
            if b.startswith("torch"):
                if t not in workers:
                    runs[(tool, t)] = None
                    return
                ans = workers[t].call(op="run", kind=kind, which=b[6:], passes=passes_of(kind))
                r = dict(median_ms=ans["median_ms"], min_ms=ans["min_ms"])
            else:
                r = tfm_bench(exes[(kind, b)], model_args(kind), t, passes_of(kind))
                if r is None:
                    runs[(tool, t)] = None
                    return
                flop_check.setdefault(tool, r["gflops"] * r["median_ms"] * 1e6)
            runs.setdefault((tool, t), []).append(r)
            log("  t=%d  prefill %-18s %9.2f ms" % (t, tool, r["median_ms"]))
        elif phase == "perf":
            if perfs.get((tool, t), []) is None:
                return
            args = model_args(tool) + ["--bench", str(passes_of(tool)), "--warmup", "1"]
            res, why = perf_run(exes[(tool, "hwy")], args, t, os.path.join(work, "perf_%s_t%d.data" % (tool, t)),
                                lmaps[tool])
            if res is None:
                errors.append("perf, %s, %s: %s" % (tool, plural(t), why))
                perfs[(tool, t)] = None
                return
            res["split"] = split(res, lmaps[tool], "decoder_layer", MAMBA_GEMMS if tool == "stack" else DENSE_GEMMS,
                                 t, lambda n, k, L=descs[tool]["num_layers"]: L * 2.0 * S * n * k)
            perfs.setdefault((tool, t), []).append(res)
            sp = res["split"]
            log("  t=%d  perf    %-18s %9.2f ms  %s" % (t, tool, res["median_ms"], " ".join(
                "%s %.0f%%" % (c, 100 * v / res["median_ms"]) for c, v in sorted(sp["cat_ms"].items())) if sp else "?"))
        else:
            if dec.get((tool, t), []) is None:
                return
            p, ppath = prompts[tool]
            bw_now = decode.measure_bandwidth(bw_exe, t)
            cmd = [exes[("decode", "hwy")], "--weights", wfiles["decode"], "--generate", str(a.new_tokens),
                   "--input", "input=" + ppath, "--threads", str(t)]
            rc, so, se = bench.run(cmd)
            kv = bench.last_line(so, "generate: ")
            if (rc or kv is None or int(kv["new_tokens"]) != a.new_tokens or int(kv["threads"]) != t
                    or not float(kv["decode_tok_s"]) > 0):
                errors.append("tfm --generate failed or misreported (exit %d): %s: %s %s"
                              % (rc, " ".join(cmd), kv or so.strip()[-300:], se.strip()[-300:]))
                dec[(tool, t)] = None
                return
            dec.setdefault((tool, t), []).append(1e3 / float(kv["decode_tok_s"]))
            dec_bw.setdefault((tool, t), []).append(bw_now)
            log("  t=%d  decode  position %-9d %9.2f ms/step (read bandwidth just before: %.1f GB/s)"
                % (t, tool, dec[(tool, t)][-1], bw_now))

    def tfm_outputs(kind):
        """Each backend's output of a prefill model at each thread count:
        {backend: the first thread count's .npy}; bitwise[(kind, b, t)]."""
        outs = {}
        for b in backends:
            if (kind, b) not in exes:
                continue
            for t in threads:
                out = os.path.join(work, "tfm_out.%s.%s.t%d.npy" % (kind, b, t))
                if os.path.exists(out):
                    os.remove(out)
                rc, so, se = bench.run([exes[(kind, b)]] + model_args(kind) + ["--output", out, "--threads", str(t)])
                if rc:
                    errors.append("tfm %s, %s, failed (exit %d): %s" % (BACKENDS[b], model_label(descs[kind]), rc,
                                                                       se.strip()[-300:]))
                    continue
                if t == threads[0]:
                    outs[b] = out
                else:
                    same = np.array_equal(np.load(out), np.load(outs[b])) if b in outs else False
                    bitwise[(kind, b, t)] = same
                    if not same and b == "hwy":
                        errors.append("MISMATCH: the Highway %s output at %s is not bit-identical to its %s output"
                                      % (model_label(descs[kind]), plural(t), plural(threads[0])))
        return outs

    checked = [k for k in pkinds if (k, "hwy") in exes]
    try:
        if checked:
            outs = {k: tfm_outputs(k) for k in checked}
            log("mamba_bench: starting the PyTorch workers and checking against reference.py's scan")
            for t in threads:
                workers[t] = Worker(t, a.blas_dir)
            torch_info = workers[threads[0]].call(op="info")
            core = (torch_info.get("openblas_core") or "").lower()
            if core in LOW_OPENBLAS_CORES:
                want = ("Cooperlake" if "bf16" in mach["isa"] else "SkylakeX") if "AVX-512" in mach["isa"] else \
                    "Haswell"
                notes.append("OpenBLAS picked its %s kernels by itself, below what the CPU has; the PyTorch "
                             "workers ran with OPENBLAS_CORETYPE=%s" % (torch_info["openblas_core"], want))
                for t in threads:
                    workers[t].close()
                    workers[t] = Worker(t, a.blas_dir, want)
                torch_info = workers[threads[0]].call(op="info")
            if not torch_info.get("openblas_core"):
                notes.append("PyTorch did not load OpenBLAS (BLAS: %s): its GEMMs ran on that BLAS (Debian's "
                             "reference BLAS is a few GFLOP/s), which flatters tfm; pass --blas-dir "
                             "(bench/README.md, \"Mamba layers\")" % (" ".join(torch_info.get("blas", [])) or "?"))
            for kind in checked:
                for t in threads:
                    ans = workers[t].call(op="load", kind=kind, desc=os.path.join(work, descs[kind]["name"] + ".json"),
                                          weights=wfiles[kind], input=x_path,
                                          forms=["ref", "hf"] if kind == "stack" else ["ref"],
                                          check=outs[kind] if t == threads[0] else None, hf=a.with_hf)
                    if kind == "stack":
                        hf_once[t] = ans["warmup_ms"]
                    if t == threads[0]:
                        check = checks[kind] = ans["check"]
                for k, e in check["errs"].items():
                    e["ok"] = e["shape"] == check["shape"] and e["max_err"] <= check["tol"]
                    if not e["ok"]:
                        errors.append("MISMATCH: %s, %s, against reference.py's scan: max|d| %.3g > tol %.3g "
                                      "(shapes %s, %s)" % ("PyTorch HF slow_forward" if k == "hf" else
                                                           "tfm " + BACKENDS[k], model_label(descs[kind]),
                                                           e["max_err"], check["tol"], e["shape"], check["shape"]))
                log("mamba_bench: check, %s: %s (tol %.2g)" % (model_label(descs[kind]), ", ".join(
                    "%s max|d| %.2g" % (k, e["max_err"]) for k, e in check["errs"].items()), check["tol"]))
            if "stack" in checked:
                torch_prof = workers[threads[0]].call(op="profile", kind="stack")

        # 3. The rounds.
        configs = []
        if not a.no_prefill:
            tools = []
            for kind in pkinds:
                tools += ["%s.%s" % (kind, b) for b in backends if (kind, b) in exes]
                if kind in checked:
                    tools += [kind + ".torch_ref"] + ([kind + ".torch_hf"] if a.with_hf and kind == "stack" else [])
            tools += [k + ".hwy" for k in ("dense", "noffn") if (k, "hwy") in exes]
            configs += [("prefill", tool, t) for t in threads for tool in tools]
            configs += [("perf", k, t) for t in threads for k in ("stack", "dense") if k in lmaps]
        if not a.no_decode and ("decode", "hwy") in exes:
            configs += [("decode", pos, t) for t in threads for pos in positions]
        measure_limits()
        for rnd in range(a.rounds):
            round_loads.append(hf_decode.loadavg())
            log("mamba_bench: round %d of %d (load %s, %.0f s in)" % (rnd + 1, a.rounds, round_loads[-1],
                                                                      time.time() - t_start))
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)] if configs else []
            if rnd % 2:
                order = order[::-1]
            for cfg in order:
                measure(cfg)
            measure_limits()
    finally:
        for w in workers.values():
            w.close()
    load[1] = hf_decode.loadavg()
    elapsed = time.time() - t_start
    dirty.append(dirty_outside_bench(bench.tfm_source(a.tfm_compile)[0]))
    if dirty[0] or dirty[1]:
        notes.append("uncommitted changes to tracked files outside bench/ (the executables are compiled at the start of "
                     "the run, their generated code including runtime/include as it was then): %s at the start%s"
                     % (", ".join(dirty[0]) or "none", "" if dirty[1] == dirty[0] else
                        ", %s at the end" % (", ".join(dirty[1]) or "none")))

    # The perf runs' op times, scaled to the timed run of the same round (the
    # sampling slows a run down by a few per cent; the shares stay).
    for (kind, t), rs in perfs.items():
        timed = runs.get((kind + ".hwy", t)) or []
        for i, r in enumerate(rs or []):
            f = timed[i]["median_ms"] / r["median_ms"] if len(timed) == len(rs) else 1.0
            r["pass_ms"], r["perf_overhead"] = r["median_ms"] * f, 1.0 / f
            if r["split"]:
                r["split"]["cat_ms"] = {c: v * f for c, v in r["split"]["cat_ms"].items()}
                r["split"]["gemms"] = [(n, ms * f, fl) for n, ms, fl in r["split"]["gemms"]]

    # -- the figures -------------------------------------------------------------
    def med(rs, key="median_ms"):
        return statistics.median(r[key] for r in rs)

    def best(rs):
        return min(r["min_ms"] for r in rs)

    def paired(x, y, f):
        """median over rounds of f(x_r, y_r) (the rounds pair them)."""
        return statistics.median(f(p, q) for p, q in zip(x, y))

    def pct(gf, t):
        return "%.0f%%" % (100 * gf / max(peaks[t])) if peaks[t] else "-"

    res = dict(threads=threads, rounds=a.rounds, passes=a.passes, seq=S, peaks=peaks, bandwidth=bws,
               machine=mach, errors=errors, notes=notes)
    goals, text, md = [], [], []
    gfl = mamba_flops(descs["stack"], S) if "stack" in descs else None
    for tool, fl in flop_check.items():
        kind = tool.split(".")[0]
        want = prefill_flops(descs[kind], S) if kind in pkinds else (bench.matmul_flops(descs[kind], S)
                                                                      if kind in descs else None)
        if want and abs(fl - want) > 2e-3 * want:
            notes.append("FLOP COUNT: tfm's --bench implies %.4g GFLOP for %s, this script counts %.4g"
                         % (fl * 1e-9, tool, want * 1e-9))
    pcells, scells, gcells, xcells, dcells = [], [], [], [], []
    summary = res["summary"] = {}
    if not a.no_prefill and runs:
        names = {"torch_ref": "PyTorch, reference.py scan", "torch_hf": "PyTorch, HF slow_forward"}
        for b in backends:
            names[b] = "tfm %s" % BACKENDS[b]
        for kind in pkinds:
            label, kfl = model_label(descs[kind]), prefill_flops(descs[kind], S)
            for t in threads:
                s = summary.setdefault(t, {})
                ref = runs.get((kind + ".torch_ref", t))
                hf = runs.get((kind + ".torch_hf", t))
                for b in backends + ["torch_ref", "torch_hf"]:
                    tool = "%s.%s" % (kind, b)
                    r = runs.get((tool, t))
                    if not r:
                        continue
                    m, lo = med(r), best(r)
                    gf = kfl / (m * 1e6)
                    vs_ref = paired(ref, r, lambda p, q: p["median_ms"] / q["median_ms"]) if ref and b != "torch_ref" \
                        else None
                    vs_hf = paired(hf, r, lambda p, q: p["median_ms"] / q["median_ms"]) if hf and b != "torch_hf" \
                        else None
                    s[tool] = dict(med=m, min=lo, gflops=gf, vs_ref=vs_ref, vs_hf=vs_hf,
                                   vs_ref_min=best(ref) / lo if ref and b != "torch_ref" else None)
                    pcells.append([str(t), label, names[b], bench.fmt_ms(m), bench.fmt_ms(lo), "%.1f" % gf,
                                   pct(gf, t), "%.2fx (%.2fx)" % (vs_ref, best(ref) / lo) if vs_ref else "-",
                                   "%.2fx" % vs_hf if vs_hf else "-"])
                v = s.get(kind + ".hwy")
                if v and v["vs_ref"]:
                    goals.append("prefill, %s, %s: PyTorch reference scan / tfm Highway = %.2fx (min-based %.2fx), "
                                 "goal >= %.1fx: %s%s" % (label, plural(t), v["vs_ref"], v["vs_ref_min"],
                                                          GOAL_VS_TORCH,
                                                          "met" if v["vs_ref"] >= GOAL_VS_TORCH else "NOT met",
                                                          "; against HF's slow_forward %.2fx" % v["vs_hf"]
                                                          if v["vs_hf"] else ""))
                w = s.get(kind + ".llvm")
                if v and w and w["vs_ref"]:
                    goals.append("(for comparison) prefill, %s, %s: PyTorch reference scan / tfm LLVM = %.2fx; LLVM "
                                 "/ Highway time = %.2f"
                                 % (label, plural(t), w["vs_ref"],
                                    paired(runs[(kind + ".llvm", t)], runs[(kind + ".hwy", t)],
                                           lambda p, q: p["median_ms"] / q["median_ms"])))
        for t in threads:
            s = summary.setdefault(t, {})
            # The split (perf) and the dense GEMMs.
            st, dn = perfs.get(("stack", t)), perfs.get(("dense", t))
            st = [r for r in st or [] if r["split"]]
            dn = [r for r in dn or [] if r["split"]]
            if st:
                def per_round(f, rs=st):
                    return statistics.median(f(r["split"], r) for r in rs)
                mixer = lambda sp: sum(v for c, v in sp["cat_ms"].items() if c != "norm")  # noqa: E731
                gemm_ms = per_round(lambda sp, r: sp["cat_ms"].get("gemm", 0))
                gemm_gf = per_round(lambda sp, r: gfl / (sp["cat_ms"]["gemm"] * 1e6))
                rest = per_round(lambda sp, r: (mixer(sp) - sp["cat_ms"].get("gemm", 0)) / mixer(sp))
                conv = per_round(lambda sp, r: sp["cat_ms"].get("conv", 0) / mixer(sp))
                scan = per_round(lambda sp, r: sp["cat_ms"].get("scan", 0) / mixer(sp))
                norm = per_round(lambda sp, r: sp["cat_ms"].get("norm", 0) / r["pass_ms"])
                cover = per_round(lambda sp, r: sp["coverage"])
                pm = per_round(lambda sp, r: r["pass_ms"])
                over = per_round(lambda sp, r: r["perf_overhead"])
                dover = statistics.median(r["perf_overhead"] for r in dn) if dn else None
                mix = per_round(lambda sp, r: mixer(sp))
                gemm_cpu = per_round(lambda sp, r: gfl / (sp["cat_cpu_ms"]["gemm"] * 1e6))
                dgf = eff = dcpu = eff_cpu = dffn = None
                if dn:
                    dfl = dense_gemm_flops(descs["dense"], S)
                    dgf = statistics.median(dfl / (r["split"]["cat_ms"]["gemm"] * 1e6) for r in dn)
                    dcpu = statistics.median(dfl / (r["split"]["cat_cpu_ms"]["gemm"] * 1e6) for r in dn)
                    eff = paired(st, dn, lambda p, q: (gfl / (p["split"]["cat_ms"]["gemm"] * 1e6))
                                 / (dfl / (q["split"]["cat_ms"]["gemm"] * 1e6)))
                    eff_cpu = paired(st, dn, lambda p, q: (gfl / (p["split"]["cat_cpu_ms"]["gemm"] * 1e6))
                                     / (dfl / (q["split"]["cat_cpu_ms"]["gemm"] * 1e6)))
                    # the dense layer's FFN1 + FFN2 alone (the cross-check's FFN)
                    if len(dn[0]["split"]["gemms"]) == len(DENSE_GEMMS):
                        dffn = statistics.median(sum(g[2] for g in r["split"]["gemms"][2:]) /
                                                 (sum(g[1] for g in r["split"]["gemms"][2:]) * 1e6) for r in dn)
                s["split"] = dict(pass_ms=pm, mixer_ms=mix, gemm_ms=gemm_ms, gemm_gflops=gemm_gf, rest=rest, conv=conv,
                                  scan=scan, norm=norm, coverage=cover, dense_gemm_gflops=dgf, eff=eff,
                                  gemm_gflops_cpu=gemm_cpu, dense_gemm_gflops_cpu=dcpu, eff_cpu=eff_cpu,
                                  dense_ffn_gflops=dffn, perf_overhead=over, dense_perf_overhead=dover)
                scells.append([str(t), bench.fmt_ms(pm), bench.fmt_ms(mix), "%.1f" % gemm_ms, "%.1f" % gemm_gf,
                               pct(gemm_gf, t), "%.1f" % dgf if dgf else "-", "%.2f" % eff if eff else "-",
                               "%.1f / %.1f / %.2f" % (gemm_cpu, dcpu, eff_cpu) if eff_cpu else "-",
                               "%.1f%%" % (100 * conv), "%.1f%%" % (100 * scan), "%.1f%%" % (100 * rest),
                               "%.1f%%" % (100 * norm), "%.2f" % cover])
                if eff:
                    goals.append("prefill split, %s: the mixer's GEMMs at %.1f GFLOP/s, %.2f of the dense layer's "
                                 "GEMMs' %.1f (on CPU time, perf's own cost in: %.1f and %.1f, %.2f), goal >= %.2f: %s"
                                 % (plural(t), gemm_gf, eff, dgf, gemm_cpu, dcpu, eff_cpu, GOAL_GEMM_EFF,
                                    "met" if eff >= GOAL_GEMM_EFF else "NOT met"))
                goals.append("prefill split, %s: conv + scan = %.1f%% of the mixer's time (conv %.1f%%, scan "
                             "%.1f%%), goal <= %.0f%%: %s" % (plural(t), 100 * rest, 100 * conv, 100 * scan,
                                                            100 * GOAL_REST, "met" if rest <= GOAL_REST else "NOT met"))
                # Each GEMM of the mixer, and the dense layer's.
                for kind, rs in (("stack", st), ("dense", dn)):
                    if not rs:
                        continue
                    n = len(rs[0]["split"]["gemms"])
                    for i in range(n):
                        name = rs[0]["split"]["gemms"][i][0]
                        ms = statistics.median(r["split"]["gemms"][i][1] for r in rs)
                        fl = rs[0]["split"]["gemms"][i][2]
                        gfs = [r["split"]["gemms"][i][2] / (r["split"]["gemms"][i][1] * 1e6)
                               for r in rs if r["split"]["gemms"][i][1] > 0]
                        gf = statistics.median(gfs) if gfs else None
                        gcells.append([str(t), "mamba stack" if kind == "stack" else "dense layer", name,
                                       "%.2f" % ms, "%.3f" % (fl * 1e-9), "%.1f" % gf if gf else "-",
                                       pct(gf, t) if gf else "-"])
                    for c in ("conv", "scan", "norm", "attention"):
                        v = [r["split"]["cat_ms"].get(c) for r in rs]
                        if all(x is not None for x in v):
                            gcells.append([str(t), "mamba stack" if kind == "stack" else "dense layer",
                                           dict(conv="causal conv + bias + SiLU", scan="selective scan (fused)",
                                                norm="norms", attention="attention core")[c],
                                           "%.2f" % statistics.median(v), "-", "-", "-"])
            # The dense cross-check: FFN by difference, (a) - (c).
            ra, rc_ = runs.get(("dense.hwy", t)), runs.get(("noffn.hwy", t))
            if ra and rc_:
                ffl = 4.0 * S * D_MODEL * DENSE["d_ff"] - 4.0 * S * D_MODEL * 1
                ffn = paired(ra, rc_, lambda p, q: p["median_ms"] - q["median_ms"])
                ffn_gf = ffl / (ffn * 1e6)
                s["ffn_diff"] = dict(ms=ffn, gflops=ffn_gf)
                xcells.append([str(t), bench.fmt_ms(med(ra)), bench.fmt_ms(med(rc_)), "%.2f" % ffn, "%.1f" % ffn_gf,
                               pct(ffn_gf, t),
                               "%.1f" % s["split"]["dense_ffn_gflops"] if s.get("split") and
                               s["split"]["dense_ffn_gflops"] else "-",
                               "%.1f" % s["split"]["dense_gemm_gflops"] if s.get("split") and
                               s["split"]["dense_gemm_gflops"] else "-"])
    if not a.no_decode and dec:
        wb, sb = step_bytes(descs["decode"])
        res["decode_bytes"] = dict(weights=wb, state=sb)
        for t in threads:
            bw = max(bws[t]) if bws[t] else None
            base = dec.get((positions[0], t))
            for pos in positions:
                r = dec.get((pos, t))
                if not r:
                    continue
                m, lo = statistics.median(r), min(r)
                bound = wb / (bw * 1e9) * 1e3 if bw else None
                # each run against the weight-read time at the bandwidth measured just before it
                near = statistics.median(ms / (wb / (g * 1e9) * 1e3) for ms, g in zip(r, dec_bw[(pos, t)]))
                flat = paired(r, base, lambda p, q: p / q) if base and pos != positions[0] else None
                summary.setdefault(t, {})[("decode", pos)] = dict(med=m, min=lo, bound=bound, flat=flat, near=near,
                                                                  bw_near=statistics.median(dec_bw[(pos, t)]))
                p = prompts[pos][0]
                dcells.append([str(t), "%d (prompt %d, steps at %d-%d)" % (pos, p, p + 1, p + steps), "%.2f" % m,
                               "%.2f" % lo, "%.2f" % flat if flat else "-",
                               "%.1f" % statistics.median(dec_bw[(pos, t)]), "%.2f" % near,
                               "%.2f" % bound if bound else "-",
                               "%.2f (%.2f)" % (m / bound, lo / bound) if bound else "-",
                               "%.1f" % (wb / (m * 1e6))])
                if flat:
                    goals.append("decode, %s: step at position %d / step at %d = %.2f (per-round pairs, median), "
                                 "goal <= %.2f: %s" % (plural(t), pos, positions[0], flat, GOAL_FLAT,
                                                        "met" if flat <= GOAL_FLAT else "NOT met"))
            for pos in positions:
                v = summary.get(t, {}).get(("decode", pos))
                if v and v["bound"]:
                    goals.append("decode, %s, position %d: step / weight-read time = %.2fx at the read bandwidth "
                                 "measured just before each run (median %.1f GB/s; per-run ratios, median): %s; "
                                 "%.2fx (min %.2fx) at the run's best bandwidth (%.1f GB/s: %.2f ms): %s; goal "
                                 "<= %.1fx" % (plural(t), pos, v["near"], v["bw_near"],
                                               "met" if v["near"] <= GOAL_BOUND else "NOT met",
                                               v["med"] / v["bound"], v["min"] / v["bound"], max(bws[t]), v["bound"],
                                               "met" if v["med"] / v["bound"] <= GOAL_BOUND else "NOT met",
                                               GOAL_BOUND))

    # Notes on the machine and the measurements.
    for t in threads:
        if t > 1 and peaks[t] and peaks.get(1):
            busy = [i for i, p in enumerate(peaks[t]) if p < 0.75 * t * max(peaks[1])]
            if busy:
                notes.append("the %d-thread FMA peak was below 0.75 x %d x the 1-thread peak at %d of its %d "
                             "measurements (%s GFLOP/s): another job had a core then, and the %d-thread rows mix "
                             "quiet and busy rounds" % (t, t, len(busy), len(peaks[t]),
                                                        "/".join("%.0f" % peaks[t][i] for i in busy), t))
        for name, vals in (("FMA peak", peaks[t]), ("read bandwidth", bws[t])):
            if vals and min(vals) < 0.85 * max(vals):
                notes.append("the %s at %s ranged from %.1f to %.1f over the run (%s): the machine's load changed "
                             "while it ran" % (name, plural(t), min(vals), max(vals),
                                               ", ".join("%.0f" % v for v in vals)))
    if len(threads) > 1:
        t1 = threads[0]
        for t in threads[1:]:
            sp = ["%s %.2fx" % (tool, med(runs[(tool, t1)]) / med(runs[(tool, t)])) for tool in
                  ["%s.%s" % (k, b) for k in pkinds for b in backends + ["torch_ref", "torch_hf"]]
                  + ["dense.hwy", "noffn.hwy"] if runs.get((tool, t1)) and runs.get((tool, t))]
            sp += ["decode position %d %.2fx" % (pos, statistics.median(dec[(pos, t1)])
                                                  / statistics.median(dec[(pos, t)]))
                   for pos in positions if dec.get((pos, t1)) and dec.get((pos, t))]
            if sp:
                notes.append("%s over %s (medians): %s" % (plural(t), plural(t1), ", ".join(sp)))
    for (kind, b, t), same in sorted(bitwise.items(), key=lambda kv: (pkinds.index(kv[0][0]),) + kv[0][1:]):
        notes.append("the %s %s output at %s is %sbit-identical to its %s output"
                     % (BACKENDS[b], model_label(descs[kind]), plural(t), "" if same else "NOT ", plural(threads[0])))
    for kind in reversed([k for k in pkinds if k in checks]):
        check = checks[kind]
        notes.insert(0, "check, %s (before timing; reference.py's FormulaModel, its mixers in the scan form, fp32, "
                        "same weights and input; max|ref| %.3g): %s (tol %.2g)"
                     % (model_label(descs[kind]), check["max_ref"], ", ".join("%s max|d| %.2g %s" % (
                         "PyTorch HF slow_forward" if k == "hf" else "tfm " + BACKENDS[k], e["max_err"],
                         "ok" if e["ok"] else "MISMATCH") for k, e in check["errs"].items()), check["tol"]))
    t0 = threads[0] if threads else None
    for t in threads:
        sp = summary.get(t, {}).get("split")
        if sp:
            notes.append("perf, %s: the sampled runs' median pass was %.3fx the timed run's (mamba stack) and %.3fx "
                         "(dense layer), medians over rounds; the op times are scaled to the timed runs"
                         % (plural(t), sp["perf_overhead"], sp["dense_perf_overhead"] or float("nan")))
    if torch_prof and summary.get(t0, {}).get("stack.torch_ref"):
        ref_ms = summary[t0]["stack.torch_ref"]["med"]
        g = torch_prof["gemm_ms"]
        notes.append("PyTorch reference scan, %s, one pass under torch.autograd.profiler at %s (%d op calls; the "
                     "profiler slows the small ops, %.0f ms against the %.0f ms median): its GEMMs (aten::mm/addmm) "
                     "%.0f ms, %.0f GFLOP/s, %.0f%% of the median pass; the rest is the per-position loop's small "
                     "ops (busiest, self ms / calls: %s)"
                     % (model_label(descs["stack"]), plural(t0), torch_prof["ops"], torch_prof["wall_ms"], ref_ms, g,
                        gfl / (g * 1e6),
                        100 * g / ref_ms, ", ".join("%s %.0f/%d" % (k, v, n) for k, v, n in torch_prof["top"])))
        sp, st = summary[t0].get("split"), summary[t0].get("stack.hwy")
        if sp and st:
            need = ref_ms / GOAL_VS_TORCH
            notes.append("reach of the %.1fx goal, %s, at %s: it needs the Highway stack at <= %.0f ms a pass (it "
                         "takes "
                         "%.0f); its GEMMs alone take %.0f ms (%.0f GFLOP/s, %.0f%% of the FMA peak, at %.2f of the "
                         "dense layer's GEMM efficiency), its conv and scan %.0f ms, its norms %.0f ms; PyTorch's "
                         "GEMMs run at %.0f GFLOP/s"
                         % (GOAL_VS_TORCH, model_label(descs["stack"]), plural(t0), need, st["med"], sp["gemm_ms"],
                            sp["gemm_gflops"],
                            100 * sp["gemm_gflops"] / max(peaks[t0]) if peaks[t0] else float("nan"),
                            sp["eff"] or float("nan"), sp["mixer_ms"] - sp["gemm_ms"], sp["norm"] * sp["pass_ms"],
                            gfl / (g * 1e6)))
    if not a.with_hf and hf_once.get(t0, {}).get("hf"):
        w = hf_once[t0]
        notes.append("PyTorch, HF slow_forward, %s (not in the rounds; --with-hf times it there): its one pass, the "
                     "check's first, at %s: %.0f ms, %.2fx the reference scan's first pass (%.0f ms) and %.2fx the "
                     "Highway stack's median; it materialises exp(delta A) and delta B u for every position "
                     "([1, d_inner, seq, d_state] each) before its loop"
                     % (model_label(descs["stack"]), plural(t0), w["hf"], w["hf"] / w["ref"], w["ref"],
                        w["hf"] / summary[t0]["stack.hwy"]["med"] if summary.get(t0, {}).get("stack.hwy") else
                        float("nan")))
    for t in threads:
        for kind in ("stack", "dense"):
            rs = [r for r in perfs.get((kind, t)) or [] if r["split"]]
            if rs:
                sp = rs[-1]["split"]
                notes.append("perf, %s, %s (last round): %d samples, %d in the forward pass (%d GemmTile samples "
                             "without an unwound caller, spread over the GEMMs), %d startup, %d unknown%s"
                             % ("mamba stack" if kind == "stack" else "dense layer", plural(t), sp["total"],
                                sp["forward"], sp["loose_gemm"], sp["startup"], sp["unknown"],
                                "; other ops: " + ", ".join("%s %d" % kv for kv in sp["other"].items())
                                if sp["other"] else ""))

    # -- the report -------------------------------------------------------------
    src, tfm_commit = bench.tfm_source(a.tfm_compile)
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    header = [
        "Measured %s on %s (lscpu's model name; %d CPUs; %s; L2 %s, L3 %s), load average %s at the start, %s at "
        "the end (at the start of each round: %s); tfm %s (%s, built from %s); this tree at %s; %s run, %.0f s."
        % (now, mach["model"], mach["cpus"], mach["isa"], mach["l2"], mach["l3"], load[0], load[1],
           " ".join(round_loads) or "-", tfm_commit, a.tfm_compile, src, hf_decode.commit(),
           "--quick" if a.quick else "a default", elapsed),
        "FMA peak (bench/fma_peak.cpp, %s, best of %d x 0.2 s, before the first round and after each): %s."
        % (peak_isa[0], a.peak_trials, ", ".join("%s %.1f GFLOP/s (%s)" % (plural(t), max(p), " ".join(
            "%.0f" % x for x in p)) for t, p in peaks.items() if p)),
    ]
    if "stack" in descs:
        sd = descs["stack"]
        d, di, n, c, r = mamba_sizes(sd)
        models = []
        for kind in pkinds:
            kd = descs[kind]
            models.append("%s (%s%.2f GFLOP a pass; %s)" % (
                model_label(kd), "its attention layers GPT-2-style: full causal attention, %d heads, d_ff %d, %s "
                "FFN, pre-norm, biases, the model's RMS norms, no positional encoding; " % (
                    kd["num_heads"], kd["d_ff"], kd["activation"]) if kind == "hybrid" else "",
                prefill_flops(kd, S) * 1e-9, "%d timed pass%s, %s" % (
                    passes_of(kind), "es" if passes_of(kind) > 1 else "",
                    " and ".join(BACKENDS[b] for b in backends_of(kind)))))
        header.append(
            "Prefill, mamba-130m's mixer in every mamba layer (d_model %d, d_inner %d, d_state %d, d_conv %d, "
            "dt_rank %d; RMS norms), float input [1, %d, %d], batch 1, fp32, make_weights' weights: %s; %d rounds; "
            "tfm `--bench P --warmup 1` (median of the passes), PyTorch P timed passes (after a warm-up at load); "
            "rows: median over rounds (min: the best pass); GFLOP/s on tfm's own --bench count (the mixers' "
            "GEMMs; an attention layer's linears, QK^T and PV), %% of the FMA peak; speed-ups: per-round PyTorch "
            "/ tfm, median (min-based in brackets)." % (d, di, n, c, r, S, d, "; ".join(models), a.rounds))
        if torch_info:
            header.append("PyTorch %s (ATen CPU capability %s; BLAS %s, OpenBLAS kernels %s; OMP_WAIT_POLICY %s%s), "
                          "under torch.inference_mode()."
                          % (torch_info["torch"], torch_info["cpu_capability"], " ".join(
                              os.path.basename(x) for x in torch_info.get("blas", []) if "blas" in os.path.basename(x))
                              or "?", torch_info.get("openblas_core"),
                              torch_info["env"].get("OMP_WAIT_POLICY") or "unset",
                              ", --blas-dir " + a.blas_dir if a.blas_dir else ""))
    if lmaps:
        header.append("Split (Highway, %s; `perf record -e cpu-clock -F %d -g` of a separate `--bench %d --warmup 1` "
                      "run a "
                      "round; each sample to the op of the generated lambda or kernel it ran in; an op's ms = the "
                      "timed run's median pass of the same round x its share of the forward pass's samples; "
                      "medians over rounds): the mixer = the layer less its norm; the dense layer: GPT-2-style, "
                      "d_model 768, 12 heads, d_ff 3072, causal, pre-norm, gelu_tanh, at seq %d, its QKV, "
                      "out-projection, FFN1 and FFN2 GEMMs (%.2f GFLOP); the mixer's GEMM efficiency / the dense "
                      "layer's is per round, median."
                      % (model_label(descs["stack"]), PERF_FREQ, passes_of("stack"), S, dense_gemm_flops(descs["dense"], S) * 1e-9
                         if "dense" in descs else 0))
    if "decode" in descs:
        wb, sb = step_bytes(descs["decode"])
        header.append(
            "Decode (Highway): %d mamba layers, vocab %d (tied LM head), final RMS norm, make_weights' weights, "
            "`--generate %d` (%d decode steps), step = 1000 / decode_tok_s; %d rounds, median and min. Bytes a step "
            "reads: %.1f MB of weights (the bound's), + %.2f MB of state (conv windows and h, read and written). "
            "Read bandwidth (bench/bandwidth.cpp, 1 GiB, best of 5, before the first round and after each): %s."
            % (descs["decode"]["num_layers"], a.vocab, a.new_tokens, steps, a.rounds, wb * 1e-6, sb * 1e-6,
               ", ".join("%s %.2f GB/s (%s)" % (plural(t), max(b), " ".join("%.1f" % x for x in b))
                         for t, b in bws.items() if b)))
    pcols = ["thr", "model", "what", "med ms", "min ms", "GF/s", "% FMA peak", "ref scan / it (goal >= %.1f)"
             % GOAL_VS_TORCH, "HF slow_forward / it"]
    scols = ["thr", "pass ms (timed run)", "mixers ms", "GEMM ms", "GEMM GF/s", "% FMA peak", "dense GEMM GF/s",
             "GEMM eff / dense (goal >= %.2f)" % GOAL_GEMM_EFF, "on CPU time (perf's cost in): GEMM / dense GF/s / eff",
             "conv % of mixer", "scan % of mixer",
             "rest %% of mixer (goal <= %.0f%%)" % (100 * GOAL_REST), "norm % of pass", "coverage"]
    gcols = ["thr", "model", "op", "ms a pass", "GFLOP", "GF/s", "% FMA peak"]
    xcols = ["thr", "dense layer (a) ms", "d_ff 1 (c) ms", "FFN = a - c ms", "FFN GF/s", "% FMA peak",
             "FFN1 + FFN2 GF/s (perf)", "4 GEMMs GF/s (perf)"]
    dcols = ["thr", "position", "step med ms", "step min ms", "/ first position (goal <= %.2f)" % GOAL_FLAT,
             "GB/s just before (med)", "step / its weight-read time (goal <= %.1f)" % GOAL_BOUND,
             "weight-read ms at best GB/s", "med / that (min)", "weight GB/s (med)"]
    md += ["# tfm benchmark: Mamba layers", "", "Written by `bench/mamba_bench.py` (see bench/README.md, "
           "\"Mamba layers\").", ""] + ["- " + h for h in header] + [""]
    text += ["", "\n".join(header), ""]
    for title, cols, cells, left in (("Prefill, seq %d" % S, pcols, pcells, 3),
                                     ("Where a mixer's time goes (Highway, perf)", scols, scells, 1),
                                     ("Each op (Highway, perf; all layers, per pass)", gcols, gcells, 3),
                                     ("Cross-check: the dense FFN by difference (moe_bench.py's method)", xcols,
                                      xcells, 1),
                                     ("Decode, batch 1", dcols, dcells, 2)):
        if cells:
            text += [title + ":", bench.render_text(cols, cells, left=left), ""]
            md += ["## " + title, "", bench.render_md(cols, cells, left=left), ""]
    errs = list(errors)
    if goals:
        text += ["Goals:"] + ["  " + g for g in goals] + [""]
        md += ["## Goals", ""] + ["- " + g for g in goals] + [""]
    if errs + notes:
        text += ["note: " + n for n in errs + notes]
        md += ["## Notes", ""] + ["- " + n for n in errs + notes] + [""]
    per_round = []
    for (tool, t), rs in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if rs:
            per_round.append("- prefill %s, %s (ms): %s" % (tool, plural(t), " ".join("%.1f" % r["median_ms"]
                                                                                     for r in rs)))
    for (kind, t), rs in sorted(perfs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if rs:
            per_round.append("- perf %s, %s (sampled run's pass ms -> the timed run's; gemm/conv/scan/norm/attention "
                             "ms scaled to the timed run): %s" % (
                kind, plural(t), "; ".join("%.1f -> %.1f (%s)" % (r["median_ms"], r["pass_ms"], "/".join(
                    "%.1f" % r["split"]["cat_ms"].get(c, 0) for c in ("gemm", "conv", "scan", "norm", "attention")))
                    for r in rs if r["split"])))
    for (pos, t), rs in sorted(dec.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if rs:
            per_round.append("- decode position %d, %s (ms/step): %s" % (pos, plural(t), " ".join("%.2f" % r
                                                                                               for r in rs)))
    if per_round:
        md += ["Per-round figures, in round order:", ""] + per_round + [""]
    print("\n".join(text))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        fh.write("\n".join(md))
    res.update(header=header, goals=goals, prefill_runs={"%s/t%d" % k: v for k, v in runs.items() if v},
               perf={"%s/t%d" % k: [dict(median_ms=r["median_ms"], split={kk: vv for kk, vv in r["split"].items()
                                                                          if kk != "other"} if r["split"] else None)
                                    for r in v] for k, v in perfs.items() if v},
               decode={"%d/t%d" % k: v for k, v in dec.items() if v},
               decode_bandwidth_before={"%d/t%d" % k: v for k, v in dec_bw.items() if v},
               summary={str(t): {(k if isinstance(k, str) else "%s_%s" % k): v for k, v in s.items()}
                        for t, s in summary.items()},
               check=checks, bitwise={"%s/%s/t%d" % k: v for k, v in bitwise.items()},
               models={k: dict(label=model_label(descs[k]), layers=descs[k]["layers"],
                               gflop=prefill_flops(descs[k], S) * 1e-9, passes=passes_of(k)) for k in pkinds})
    jpath = os.path.splitext(a.out)[0] + ".json"
    with open(jpath, "w") as fh:
        json.dump(res, fh, indent=1, sort_keys=True, default=str)
    print("mamba_bench: wrote %s and %s" % (os.path.relpath(a.out, os.getcwd()), os.path.relpath(jpath, os.getcwd())))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
