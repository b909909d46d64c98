#!/usr/bin/python3
"""bench/: mixture-of-experts FFNs (contract section 7, `"ffn": {"kind":
"moe", "experts": E, "top_k": K}`) -- tfm's MoE FFN beside its dense FFN on
the same shapes, on both tfm backends, beside PyTorch's Mixtral loop and
ONNX Runtime, and its decode step beside the memory-bandwidth bound.

  /usr/bin/python3 bench/moe_bench.py [--quick] [--rounds 7] [--threads 1,2] [--backends hwy,llvm]
                                      [--no-ort] [--blas-dir DIR]

Shapes: d_model 768, 12 heads, d_ff 3072, E = 8 experts, top-2 (--experts,
--top-k), GPT-2-style blocks (decoder: causal, pre-norm, gelu_tanh), fp32,
batch 1; tfm's Highway backend (the issue's goals are its figures) and its
LLVM backend (`--backend=llvm`: each expert a packed GEMM over its group's
rows), --backends.

tfm compiles whole layers, not an FFN alone, so the FFN is isolated by
difference between three 1-layer models (float inputs [1, seq, 768], no
vocabulary, positional none, final_norm false), compiled by each backend:
  (a) the dense FFN (d_ff 3072), (b) the MoE FFN (E experts of d_ff 3072),
  (c) d_ff 1 (the same attention, norms and residuals; almost no FFN work;
  a backend that fails to compile d_ff 1 gets d_ff 2, and a note says so);
  FFN time = time(a or b) - time(c), per round (the rounds pair the runs in
  time), then the median over rounds; "min" = min(a or b) - min(c); its
  FLOPs are the FFN's of (a or b) less the (c) model's own small FFN's.

What it does:
  1. writes the three prefill models' weights (test/e2e/reference.py's
     make_weights, saved with test/e2e/safetensors.py) and one seeded input
     [1, --seq, 768], and compiles them and three decoders (below) with
     each backend;
  2. the check, before any timing (in the PyTorch worker): each backend's
     MoE model output (`EXE --weights --input --output`) against
     reference.py's FormulaModel (the contract's formulas, its MoE as
     Mixtral's loop) on the same weights and input, within 1e-4 (1 +
     max|ref|) (contract section 6), with the smallest top-k routing
     margin; the FFN's input (norm2 of the layer, captured there) is what
     the PyTorch blocks and ONNX Runtime time, so they route exactly the
     tokens tfm routes, and the PyTorch Mixtral loop's output on it is
     checked against the reference's MoE output;
  3. ONNX Runtime (unless --no-ort): minilm_bench.py's venv (bench/work/
     ort-venv, onnxruntime==minilm_bench.ORT_PIN from PyPI, made when it
     cannot import it) and its ORT worker (an InferenceSession on the CPU
     provider, intra_op_num_threads=T, inter_op_num_threads=1, sequential,
     ORT_ENABLE_ALL); the graphs, from torch.onnx.export in the PyTorch
     worker (opset minilm_bench.OPSET), on the captured FFN input: the
     dense FFN (MatMul -> Add -> gelu_tanh's formula -> MatMul -> Add) and,
     where the venv's onnxruntime registers com.microsoft MoE for the CPU
     provider, the router's MatMul and one MoE node (k, gelu,
     normalize_routing_weights 1; the experts stacked); each checked at
     every thread count (dense against the PyTorch dense FFN, MoE against
     the reference's MoE output), its kernels listed from a profiled run;
  4. --rounds rounds; each round measures every (thread count, tool) of
     the prefill and the decode rows, the order rotated from round to round
     (and reversed every other one), then the FMA peak and the read
     bandwidth.  Prefill:
       * tfm (a), (b), (c) of each backend: `EXE --weights W --input
         input=X --bench P --warmup 1 --threads T`, the median_ms of its
         `bench:` line;
       * PyTorch (Debian's 1.13, /usr/bin/python3; this script with
         --worker T, bench.py's baseline environment: OPENBLAS_NUM_THREADS =
         OMP_NUM_THREADS = T, torch.set_num_threads(T), OMP_WAIT_POLICY=
         PASSIVE; --blas-dir puts OpenBLAS ahead of Debian's reference BLAS),
         the FFN blocks alone on the captured FFN input, under
         torch.inference_mode(), each pass timed: the dense FFN
         (F.linear -> gelu_tanh -> F.linear) and Hugging Face's
         MixtralSparseMoeBlock loop (router F.linear, softmax, topk,
         renormalised over the top-k; per expert the routed tokens by
         torch.where on the one-hot mask, the expert FFN, times its weights,
         index_add_); the median of P passes;
       * ONNX Runtime: P + 1 timed session.run() calls in its worker, the
         first dropped (a warm-up, as the others have); the median;
       * bench/fma_peak.cpp (built as bench.py builds it) at each thread
         count, before the first round and after each; the best is the peak;
  5. decode, in the same rounds: three --decode-layers-layer decoders of
     each backend with vocab --vocab (learned positions, tied LM head, final
     norm), dense, MoE and d_ff 1, `EXE --generate N --input input=PROMPT
     --threads T` (their default deterministic random weights); the step
     time is 1000 / decode_tok_s (the mean of its N - 1 decode steps, cache
     lengths P+1 .. P+N-1); the bound is the bytes one step must read
     (decode.py's step_bytes for the dense decoder: every layer's weights,
     the final norm, the tied head once, a token and a position row, and
     the k/v cache at the mean cache length; the MoE decoder: its router and
     K experts a layer instead of the dense FFN) over the best read
     bandwidth that bench/bandwidth.cpp measures (before the first round and
     after each).
Results: tables on stdout (progress on stderr) and bench/results/moe.md
(--out).  Exit status 1 when a check fails or a tool fails to run.
"""

import argparse
import datetime
import json
import os
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

import bench  # noqa: E402  (run, last_line, build_cxx, baseline_env, TorchWorker, render_*, matmul_flops, ...)
import decode  # noqa: E402  (step_bytes, measure_bandwidth, median_min)
import hf_decode  # noqa: E402  (machine, commit, loadavg)
import minilm_bench  # noqa: E402  (ort_python, ORT_PIN, OPSET, Worker: the ONNX Runtime venv and worker)

# hf_decode and minilm_bench take test/e2e off sys.path (for transformers'
# safetensors); this script needs its reference.py and safetensors.py (no
# transformers here).
if E2E not in sys.path:
    sys.path.insert(0, E2E)

D_MODEL, HEADS, D_FF = 768, 12, 3072
TOL = 1e-4   # contract section 6: max|tfm - ref| <= TOL * (1 + max|ref|)
# Goals (the issue's, for the Highway backend): (1) prefill, the MoE FFN's
# GFLOP/s on the FLOPs it must do >= 80 % of the dense FFN's; (2) tfm's MoE FFN
# >= 1.5x faster than PyTorch's Mixtral loop; (3) the MoE decoder's step within
# 1.3x of the bound.
GOAL_MOE_VS_DENSE = 0.80
GOAL_VS_TORCH = 1.5
GOAL_DECODE_BOUND = 1.3
LOW_OPENBLAS_CORES = ("prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai",
                      "coppermine", "northwood", "barcelona", "bobcat", "opteron")
KINDS = ("dense", "moe", "noffn")
# tfm's backends: the tool prefix of their rows and their name in the tables.
BACKENDS = {"hwy": ("tfm", "Highway"), "llvm": ("llvm", "LLVM")}
NOFFN_D_FF = (1, 2)   # the (c) model's d_ff: the first that the backend compiles
# The venv's kernel registry: the com.microsoft MoE kernels, [provider, types].
ORT_MOE_PROBE = ("import json, onnxruntime.capi._pybind_state as C; print(json.dumps([[k.provider, "
                 "k.type_constraints.get('T', [])] for k in C.get_all_opkernel_def() "
                 "if k.op_name == 'MoE' and k.domain == 'com.microsoft']))")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def plural(t):
    return "%d thread%s" % (t, "s" if t > 1 else "")


# ---------------------------------------------------------------------------
# The model descriptions and the FLOPs / bytes they need
# ---------------------------------------------------------------------------

def block(kind, experts, top_k, d_ff=None, **kw):
    """A GPT-2-style decoder description with an FFN of `kind`: "dense"
    (d_ff 3072), "moe" (E experts of d_ff 3072, top-k) or "noffn" (d_ff
    `d_ff`, 1 unless given)."""
    desc = dict(architecture="decoder", d_model=D_MODEL, num_heads=HEADS,
                d_ff=(d_ff or 1) if kind == "noffn" else D_FF, activation="gelu_tanh", norm="pre", **kw)
    if kind == "moe":
        desc["ffn"] = dict(kind="moe", experts=experts, top_k=top_k)
    return desc


def suffix(d_ff):
    """The name suffix of a (c) model with another d_ff than 1."""
    return "" if not d_ff or d_ff == 1 else str(d_ff)


def prefill_desc(kind, a, d_ff=None):
    return dict(block(kind, a.experts, a.top_k, d_ff, num_layers=1, max_seq_len=a.seq, positional="none",
                      final_norm=False), name="moe_prefill_" + kind + suffix(d_ff))


def decode_desc(kind, a, d_ff=None):
    return dict(block(kind, a.experts, a.top_k, d_ff, num_layers=a.decode_layers, vocab_size=a.vocab,
                      max_seq_len=a.prompt + a.new_tokens + 1, positional="learned"),
                name="moe_decode_" + kind + suffix(d_ff))


def ffn_flops(desc, seq):
    """The FFN's matmul FLOPs that a pass must do (batch 1, every layer):
    dense 2 GEMMs, 2*S*d*f each; MoE top_k expert FFNs a token (the K/E of
    all the experts' work that the routing asks for) plus the router's
    2*S*d*E."""
    d, f, n = desc["d_model"], desc["d_ff"], desc["num_layers"]
    ffn = desc.get("ffn", {"kind": "dense"})
    if ffn["kind"] == "moe":
        return n * (ffn["top_k"] * 4.0 * seq * d * f + 2.0 * seq * d * ffn["experts"])
    return n * 4.0 * seq * d * f


def layer_flops(desc, seq):
    """tfm's --bench count of a pass: bench.matmul_flops without the FFN
    (QKV, out projection, the causal attention's pairs) plus ffn_flops."""
    return bench.matmul_flops(dict(desc, d_ff=0), seq) + ffn_flops(desc, seq)


def moe_step_bytes(desc):
    """(weight bytes, cache bytes per cached position) of one decode step,
    fp32: decode.step_bytes for the same decoder with a dense FFN (which
    counts linear1/linear2 and their biases once a layer), and for an MoE
    FFN its router [E, d] and top_k experts' linears and biases a layer
    instead of one."""
    sizes = decode.step_bytes(desc)
    w, kv = sizes["weight_bytes"], sizes["kv_bytes_per_position"]
    ffn = desc.get("ffn", {"kind": "dense"})
    if ffn["kind"] == "moe":
        d, f = desc["d_model"], desc["d_ff"]
        w += 4 * desc["num_layers"] * ((ffn["top_k"] - 1) * (2 * d * f + f + d) + ffn["experts"] * d)
    return w, kv


def ffn_step_bytes(desc):
    """The bytes a decode step reads for the FFNs alone (every layer)."""
    d, f, n = desc["d_model"], desc["d_ff"], desc["num_layers"]
    ffn = desc.get("ffn", {"kind": "dense"})
    k, router = (ffn["top_k"], ffn["experts"] * d) if ffn["kind"] == "moe" else (1, 0)
    return 4 * n * (k * (2 * d * f + f + d) + router)


# ---------------------------------------------------------------------------
# The PyTorch worker (this script with --worker T, run by /usr/bin/python3)
# ---------------------------------------------------------------------------

def worker(threads):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    import torch_worker  # noqa: E402  (info: torch, BLAS, OpenBLAS kernels, environment)
    import reference
    import safetensors

    state = {}

    def gelu(x):
        return F.gelu(x, approximate="tanh")

    def dense_ffn(h):
        w1, b1, w2, b2 = state["dense"]
        return F.linear(gelu(F.linear(h, w1, b1)), w2, b2)

    def mixtral_moe(h):
        """Hugging Face's MixtralSparseMoeBlock.forward (transformers 4.46),
        with linear1 -> gelu_tanh -> linear2 experts (the contract's) for its
        SwiGLU MLP."""
        gate, experts, top_k = state["gate"], state["experts"], state["top_k"]
        num_experts = len(experts)
        router_logits = F.linear(h, gate)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        final = torch.zeros_like(h)
        expert_mask = F.one_hot(selected_experts, num_classes=num_experts).permute(2, 1, 0)
        for e in range(num_experts):
            w1, b1, w2, b2 = experts[e]
            idx, top_x = torch.where(expert_mask[e])
            current = h[None, top_x].reshape(-1, h.shape[-1])
            y = F.linear(gelu(F.linear(current, w1, b1)), w2, b2) * routing_weights[top_x, idx, None]
            final.index_add_(0, top_x, y.to(h.dtype))
        return final

    def ffn_params(w, prefix):
        return tuple(torch.from_numpy(np.ascontiguousarray(w[prefix + s]))
                     for s in ("linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"))

    def check(req):
        """The MoE model's output from reference.py's FormulaModel (Mixtral
        loop) against each backend's (req["outputs"]: backend -> .npy);
        writes the FFN's input (captured) and the reference's MoE output."""
        with open(req["desc"]) as f:
            desc = json.load(f)
        cfg = reference.Config(desc)
        model = reference.build_formula_model(cfg)
        reference.load_weights(model, safetensors.load_file(req["weights"]))
        moe = reference.moe_modules(model)[0]
        seen = {}
        hook = moe.register_forward_hook(lambda m, i, o: seen.update(h=i[0].detach().clone(),
                                                                       y=o.detach().clone()))
        x = np.load(req["input"])
        with torch.no_grad():
            logits, ref = reference.moe_routing(model, lambda: reference.run_model(model, cfg, {"input": x}))
        hook.remove()
        ref = ref.numpy()
        tfm = {}
        for b, path in req["outputs"].items():
            got = np.load(path)
            tfm[b] = dict(shape=list(got.shape), max_err=float(np.max(np.abs(got.astype(np.float64) - ref)))
                          if got.shape == ref.shape else float("inf"))
        tol = TOL * (1 + float(np.max(np.abs(ref))))
        h = seen["h"].reshape(-1, desc["d_model"]).contiguous()
        np.save(req["h_out"], h.numpy())
        chosen = torch.topk(logits[0], cfg.moe_top_k, dim=-1).indices
        counts = torch.bincount(chosen.flatten(), minlength=cfg.moe_experts).tolist()
        # The Mixtral loop (the timed baseline) on the captured input against
        # the reference's MoE output.
        w = safetensors.load_file(req["weights"])
        state.update(gate=torch.from_numpy(w["layers.0.moe.gate.weight"]), top_k=cfg.moe_top_k,
                     experts=[ffn_params(w, "layers.0.moe.experts.%d." % e) for e in range(cfg.moe_experts)])
        with torch.inference_mode():
            loop = mixtral_moe(h)
        yref = seen["y"].reshape(loop.shape)
        np.save(req["y_out"], yref.numpy())
        loop_err = float((loop - yref).abs().max())
        return dict(ok=True, tfm=tfm, ref_shape=list(ref.shape), tol=tol,
                    routing_gap=reference.routing_gap(logits[0], cfg.moe_top_k), tokens_per_expert=counts,
                    loop_err=loop_err, loop_tol=TOL * (1 + float(yref.abs().max())))

    def load(req):
        dense = safetensors.load_file(req["dense_weights"])
        moe = safetensors.load_file(req["moe_weights"])
        state["dense"] = ffn_params(dense, "layers.0.")
        state["gate"] = torch.from_numpy(moe["layers.0.moe.gate.weight"])
        state["top_k"] = req["top_k"]
        state["experts"] = [ffn_params(moe, "layers.0.moe.experts.%d." % e) for e in range(req["experts"])]
        state["h"] = torch.from_numpy(np.load(req["h"]))
        with torch.inference_mode():   # one warm-up of each
            y = dense_ffn(state["h"])
            mixtral_moe(state["h"])
        if req.get("dense_out"):
            np.save(req["dense_out"], y.numpy())
        return dict(ok=True, tokens=int(state["h"].shape[0]))

    def export(req):
        """The ONNX graphs that ONNX Runtime times, on the loaded weights:
        req["dense"] the dense FFN as MatMul -> Add -> gelu_tanh (its
        formula) -> MatMul -> Add; req["moe"] (when given) the router's
        MatMul and one com.microsoft MoE node on the experts stacked
        ([E, f, d], [E, f], [E, d, f], [E, d]: each expert's linear1 and
        linear2 as they are)."""
        attrs = dict(k=state["top_k"], activation_type="gelu", normalize_routing_weights=1)

        class MoEOp(torch.autograd.Function):
            @staticmethod
            def forward(ctx, h, logits, w1, b1, w2, b2):
                return torch.zeros_like(h)   # the trace needs its shape only

            @staticmethod
            def symbolic(g, h, logits, w1, b1, w2, b2):
                return g.op("com.microsoft::MoE", h, logits, w1, b1, w2, b2, k_i=attrs["k"],
                            activation_type_s=attrs["activation_type"],
                            normalize_routing_weights_i=attrs["normalize_routing_weights"])

        class Graph(torch.nn.Module):
            def __init__(self, tensors, fn):
                super().__init__()
                self.fn = fn
                for name, t in tensors.items():
                    self.register_buffer(name, t.contiguous())

            def forward(self, h):
                return self.fn(self, h)

        w1, b1, w2, b2 = state["dense"]
        graphs = [(req["dense"], Graph(dict(w1=w1.t(), b1=b1, w2=w2.t(), b2=b2),
                                       lambda m, h: gelu(h @ m.w1 + m.b1) @ m.w2 + m.b2))]
        if req.get("moe"):
            stack = [torch.stack([ex[i] for ex in state["experts"]]) for i in range(4)]
            graphs.append((req["moe"], Graph(dict(gate=state["gate"].t(), w1=stack[0], b1=stack[1], w2=stack[2],
                                                  b2=stack[3]),
                                             lambda m, h: MoEOp.apply(h, h @ m.gate, m.w1, m.b1, m.w2, m.b2))))
        t0 = time.time()
        for path, graph in graphs:
            with torch.no_grad():
                torch.onnx.export(graph.eval(), (state["h"],), path + ".tmp", input_names=["h"], output_names=["y"],
                                  opset_version=req["opset"], custom_opsets={"com.microsoft": 1})
            os.replace(path + ".tmp", path)
        return dict(ok=True, seconds=time.time() - t0, attrs=attrs)

    def run(req):
        fn = dense_ffn if req["which"] == "dense" else mixtral_moe
        h, times = state["h"], []
        with torch.inference_mode():
            for _ in range(req["warmup"]):
                fn(h)
            for _ in range(req["passes"]):
                t0 = time.perf_counter()
                fn(h)
                times.append((time.perf_counter() - t0) * 1e3)
        return dict(ok=True, median_ms=statistics.median(times), min_ms=min(times), times=times)

    ops = dict(info=lambda r: torch_worker.info(), check=check, load=load, export=export, run=run)
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "quit":
            print("@@ " + json.dumps(dict(ok=True)), flush=True)
            return 0
        try:
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # torch.onnx.export's, on the custom op
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
# Setup
# ---------------------------------------------------------------------------

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
        log("moe_bench: writing weights for %s" % name)
        w = reference.make_weights(reference.Config(desc), seed=seed)
        safetensors.save_file({k: v.numpy() for k, v in w.items()}, wpath)
        with open(stamp, "w") as f:
            f.write(text + "seed %d\n" % seed)
    return path, wpath


def compile_model(tfm_compile, path, exe, backend):
    """`tfm-compile PATH --backend=B -o EXE`: (EXE, None), or (None, what it
    said) when it fails."""
    rc, so, se = bench.run([tfm_compile, path, "--backend=" + backend, "-o", exe])
    if rc:
        return None, "%s --backend=%s exited %d: %s" % (os.path.basename(path), backend, rc,
                                                         " / ".join(se.strip().splitlines()[-3:]))
    return exe, None


def l3_bytes(text):
    """lscpu's "32 MiB (1 instance)" -> bytes (the first figure), or None."""
    try:
        n, unit = text.split()[:2]
        return float(n) * {"KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30}[unit]
    except (ValueError, KeyError):
        return None


class OrtWorkers:
    """ONNX Runtime: minilm_bench's venv and its ORT worker (one a graph and
    thread count), on the captured FFN input; .rows() the graphs that loaded
    and passed their check."""

    def __init__(self, a, threads, work, torch_worker, refs, notes, errors):
        self.workers, self.info, self.ops, self.checks, self.moe_kernels = {}, None, {}, [], None
        self.export, self.threads, self.work = None, threads, work
        try:
            py = minilm_bench.ort_python(os.path.abspath(a.ort_venv))
        except SystemExit as e:
            notes.append("ONNX Runtime left out: %s" % e)
            return
        rc, so, se = bench.run([py, "-c", ORT_MOE_PROBE])
        self.moe_kernels = json.loads(so) if rc == 0 else []
        cpu_moe = any(p == "CPUExecutionProvider" and "tensor(float)" in ty for p, ty in self.moe_kernels)
        graphs = {g: os.path.join(work, "ort_%s.onnx" % g) for g in (("dense", "moe") if cpu_moe else ("dense",))}
        if not cpu_moe:
            notes.append("ONNX Runtime %s has no com.microsoft MoE kernel for the CPU provider (registered: %s): "
                         "its MoE row is left out" % (minilm_bench.ORT_PIN, self.moe_kernels or "none"))
        log("moe_bench: torch.onnx.export of the ONNX Runtime graphs")
        try:
            self.export = torch_worker.call(op="export", dense=graphs["dense"], moe=graphs.get("moe"),
                                            opset=minilm_bench.OPSET)
        except SystemExit as e:
            errors.append("ONNX Runtime left out: torch.onnx.export failed: %s" % e)
            return
        x = os.path.join(work, "ort_input.npz")
        np.savez(x, h=np.load(refs["h"]))
        for g, onnx in graphs.items():
            for t in threads:
                w = minilm_bench.Worker("ort", t, py, bench.baseline_env(t, "PASSIVE"))
                try:
                    self.info = w.call(op="info")
                    w.call(op="load", onnx=onnx, inputs=x, warmup=1)
                    out = os.path.join(work, "ort_%s_out_t%d.npy" % (g, t))
                    self.ops.setdefault(g, w.call(op="output", path=out, onnx=onnx).get("ops"))
                except SystemExit as e:
                    errors.append("ONNX Runtime, %s graph, %s: %s" % (g, plural(t), e))
                    w.close()
                    continue
                self.workers[(g, t)] = w
                ref = np.load(refs[g])
                got = np.load(out)
                err = float(np.max(np.abs(got.astype(np.float64) - ref))) if got.shape == ref.shape else float("inf")
                tol = TOL * (1 + float(np.max(np.abs(ref))))
                self.checks.append(dict(graph=g, threads=t, err=err, tol=tol, ok=err <= tol))
                if err > tol:
                    errors.append("MISMATCH: ONNX Runtime's %s graph, %s: max|d| %.3g > tol %.3g (shapes %s, %s)"
                                  % (g, plural(t), err, tol, list(got.shape), list(ref.shape)))

    def run(self, g, t, passes):
        """One measurement: passes + 1 session.run() calls, the first dropped."""
        ms = self.workers[(g, t)].call(op="run", passes=passes + 1)["ms"][1:]
        return dict(median_ms=statistics.median(ms), min_ms=min(ms))

    def close(self):
        for w in self.workers.values():
            w.close()


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    hf_decode.add_run_arguments(ap, "moe", "moe.md")
    ap.add_argument("--quick", action="store_true", help="3 rounds, 5 passes a prefill measurement (about 2 minutes)")
    ap.add_argument("--rounds", type=int, help="rounds, each of every prefill and decode measurement (default 7, "
                    "quick 3)")
    ap.add_argument("--passes", type=int, help="timed passes per prefill measurement (default 10, quick 5)")
    ap.add_argument("--backends", default="hwy,llvm", help="tfm's backends to measure (tfm-compile --backend; "
                    "default hwy,llvm)")
    ap.add_argument("--seq", type=int, default=512, help="prefill sequence length (default 512)")
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--decode-layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--prompt", type=int, default=16, help="decode prompt length (default 16)")
    ap.add_argument("--new-tokens", type=int, default=64, help="--generate N (N - 1 timed decode steps; default 64)")
    ap.add_argument("--peak-trials", type=int, default=3)
    ap.add_argument("--no-prefill", action="store_true")
    ap.add_argument("--no-decode", action="store_true")
    ap.add_argument("--ort-venv", default=os.path.join(HERE, "work", "ort-venv"),
                    help="ONNX Runtime's venv (minilm_bench.py's; made when it cannot import onnxruntime==%s)"
                    % minilm_bench.ORT_PIN)
    ap.add_argument("--no-ort", action="store_true", help="leave ONNX Runtime out")
    ap.add_argument("--blas-dir", help="a folder with a libblas.so.3 (e.g. OpenBLAS's openblas-pthread/) that the "
                    "PyTorch workers load ahead of the system's (LD_LIBRARY_PATH)")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.worker)
    a.rounds = a.rounds or (3 if a.quick else 7)
    a.passes = a.passes or (5 if a.quick else 10)
    backends = [b for b in a.backends.split(",") if b]
    if not backends or any(b not in BACKENDS for b in backends):
        ap.error("--backends: a comma-separated list of %s" % ", ".join(BACKENDS))
    threads, t_start, load, mach, work = hf_decode.start_run(a)
    errors, notes = [], []
    S, E, K = a.seq, a.experts, a.top_k
    tool_of = {(b, k): "%s_%s" % (BACKENDS[b][0], k) for b in backends for k in KINDS}

    # 1. Models, weights, the input; compiles (each backend's (c) model: the
    # first d_ff of NOFFN_D_FF that it compiles).
    phases = [p for p, skip in (("prefill", a.no_prefill), ("decode", a.no_decode)) if not skip]
    make = dict(prefill=prefill_desc, decode=decode_desc)
    descs, files, exes = {}, {}, {}   # (phase, backend, kind) -> description, (json, weights), executable
    if not a.no_prefill:
        x_path = os.path.join(work, "input_s%d.npy" % S)
        np.save(x_path, np.random.default_rng(S).standard_normal((1, S, D_MODEL)).astype(np.float32))
    prompt_path = os.path.join(work, "prompt_%d.npy" % a.prompt)
    np.save(prompt_path, np.random.default_rng(a.prompt).integers(0, a.vocab, size=(1, a.prompt), dtype=np.int64))
    log("moe_bench: compiling (%s)" % ", ".join(backends))
    refused = {}   # backend -> (d_ff, what tfm-compile said), the (c) model it fails to compile
    for b in backends:
        for phase in phases:
            for k in KINDS:
                for d_ff in (NOFFN_D_FF if k == "noffn" else (None,)):
                    desc = make[phase](k, a, d_ff)
                    path, wpath = write_model(work, desc, weights=phase == "prefill")
                    exe, why = compile_model(a.tfm_compile, path, os.path.join(work, "%s.%s.exe" % (desc["name"], b)),
                                             b)
                    if exe:
                        break
                    if d_ff != NOFFN_D_FF[-1] and k == "noffn":
                        refused.setdefault(b, (d_ff, why))
                    else:
                        errors.append("COMPILE FAILURE " + why)
                descs[(phase, b, k)], files[(phase, b, k)], exes[(phase, b, k)] = desc, (path, wpath), exe
    for b, (d_ff, why) in refused.items():
        notes.append("the %s backend fails to compile a d_ff %d model (%s): its (c) models are d_ff %s"
                     % (BACKENDS[b][1], d_ff, why, "/".join(sorted({str(descs[(p, b, "noffn")]["d_ff"])
                                                                     for p in phases}))))

    # Helpers: the FMA peak and the read bandwidth.
    fma = os.path.join(work, "fma_peak")
    bench.build_cxx(os.path.join(HERE, "fma_peak.cpp"), fma, ["-pthread"])
    bw_exe = os.path.join(work, "bandwidth")
    bench.build_cxx(os.path.join(HERE, "bandwidth.cpp"), bw_exe, ["-O3", "-pthread"])
    peaks, peak_isa = {t: [] for t in threads}, ["?"]
    bws = {t: [] for t in threads}

    def measure_peak():
        for t in threads:
            gflops, peak_isa[0] = bench.fma_peak(fma, t, a.peak_trials, who="moe_bench")
            peaks[t].append(gflops)

    def measure_bandwidth():
        for t in threads:
            bws[t].append(decode.measure_bandwidth(bw_exe, t))

    # 2. The workers and the check.
    workers, torch_info, check, ort, round_loads = {}, None, None, None, []
    pre_runs = {}   # (tool, t) -> [dict(median_ms, min_ms)] per round, None once it failed
    dec_runs = {}   # (backend, kind, t) -> [ms per step] per round, None once it failed
    flop_check = {}
    refs = {g: os.path.join(work, name) for g, name in (("h", "ffn_input_s%d.npy" % S), ("moe", "moe_ref_out.npy"),
                                                         ("dense", "dense_ref_out.npy"))}
    h_path = refs["h"]
    moe_w = files.get(("prefill", backends[0], "moe"), (None, None))[1]
    dense_w = files.get(("prefill", backends[0], "dense"), (None, None))[1]

    def prefill_one(tool, t):
        if pre_runs[(tool, t)] is None:
            return
        if tool.startswith("torch"):
            if not os.path.exists(h_path) or t not in workers:
                pre_runs[(tool, t)] = None
                return
            ans = workers[t].call(op="run", which=tool[6:], passes=a.passes, warmup=1)
            pre_runs[(tool, t)].append(dict(median_ms=ans["median_ms"], min_ms=ans["min_ms"]))
        elif tool.startswith("ort"):
            pre_runs[(tool, t)].append(ort.run(tool[4:], t, a.passes))
        else:
            b, kind = next(bk for bk, name in tool_of.items() if name == tool)
            exe = exes.get(("prefill", b, kind))
            if exe is None:
                pre_runs[(tool, t)] = None
                return
            cmd = [exe, "--weights", files[("prefill", b, kind)][1], "--input", "input=" + x_path,
                   "--bench", str(a.passes), "--warmup", "1", "--threads", str(t)]
            rc, so, se = bench.run(cmd)
            kv = bench.last_line(so, "bench: ")
            if rc or kv is None or int(kv["threads"]) != t:
                errors.append("tfm --bench failed or misreported (exit %d): %s: %s %s"
                              % (rc, " ".join(cmd), kv or so.strip()[-300:], se.strip()[-300:]))
                pre_runs[(tool, t)] = None
                return
            pre_runs[(tool, t)].append(dict(median_ms=float(kv["median_ms"]), min_ms=float(kv["min_ms"])))
            flop_check.setdefault(tool, float(kv["gflops"]) * float(kv["median_ms"]) * 1e6)
        log("  t=%d  prefill %-12s %8.2f ms" % (t, tool, pre_runs[(tool, t)][-1]["median_ms"]))

    def decode_one(bk, t):
        b, k = bk
        exe = exes.get(("decode", b, k))
        if exe is None or dec_runs[(b, k, t)] is None:
            dec_runs[(b, k, t)] = None
            return
        cmd = [exe, "--generate", str(a.new_tokens), "--input", "input=" + prompt_path, "--threads", str(t),
               "--output", os.path.join(work, "ids_%s_%s_t%d.npy" % (b, k, t))]
        rc, so, se = bench.run(cmd)
        kv = bench.last_line(so, "generate: ")
        if (rc or kv is None or int(kv["new_tokens"]) != a.new_tokens or int(kv["threads"]) != t
                or not float(kv["decode_tok_s"]) > 0):
            errors.append("tfm --generate failed or misreported (exit %d): %s: %s %s"
                          % (rc, " ".join(cmd), kv or so.strip()[-300:], se.strip()[-300:]))
            dec_runs[(b, k, t)] = None
            return
        dec_runs[(b, k, t)].append(1e3 / float(kv["decode_tok_s"]))
        log("  t=%d  decode  %-12s %8.2f ms/step" % (t, tool_of[bk], dec_runs[(b, k, t)][-1]))

    for path in refs.values():
        if os.path.exists(path):
            os.remove(path)   # only this run's check writes what the baselines time and check against
    try:
        if not a.no_prefill:
            log("moe_bench: starting the PyTorch workers")
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
                notes.append("PyTorch did not load OpenBLAS (BLAS: %s): its GEMMs ran on that BLAS, and goal (2) "
                             "compares tfm with it; pass --blas-dir (bench/README.md, \"Mixture of experts\")"
                             % (" ".join(torch_info.get("blas", [])) or "?"))
            outs = {}
            log("moe_bench: checking the MoE models against reference.py")
            for b in backends:
                exe = exes.get(("prefill", b, "moe"))
                out_path = os.path.join(work, "tfm_moe_out.%s.npy" % b)
                rc, so, se = bench.run([exe, "--weights", moe_w, "--input", "input=" + x_path, "--output",
                                        out_path]) if exe else (-1, "", "not compiled")
                if rc:
                    errors.append("tfm %s MoE model failed (exit %d): %s" % (BACKENDS[b][1], rc, se.strip()[-300:]))
                else:
                    outs[b] = out_path
            if outs:
                check = workers[threads[0]].call(op="check", desc=files[("prefill", backends[0], "moe")][0],
                                                 weights=moe_w, input=x_path, outputs=outs, h_out=h_path,
                                                 y_out=refs["moe"])
                for b, c in check["tfm"].items():
                    c["ok"] = c["shape"] == check["ref_shape"] and c["max_err"] <= check["tol"]
                    if not c["ok"]:
                        errors.append("MISMATCH: tfm's %s MoE model against reference.py: max|d| %.3g > tol %.3g "
                                      "(shapes %s, %s)" % (BACKENDS[b][1], c["max_err"], check["tol"], c["shape"],
                                                           check["ref_shape"]))
                check["loop_ok"] = check["loop_err"] <= check["loop_tol"]
                if not check["loop_ok"]:
                    errors.append("MISMATCH: the PyTorch Mixtral loop against reference.py's MoE: max|d| "
                                  "%.3g > tol %.3g" % (check["loop_err"], check["loop_tol"]))
                log("moe_bench: check: %s (tol %.2g), tokens per expert %s"
                    % (", ".join("%s max|d| %.2g" % (b, c["max_err"]) for b, c in check["tfm"].items()),
                       check["tol"], check["tokens_per_expert"]))
            if os.path.exists(h_path):
                for t in threads:
                    workers[t].call(op="load", dense_weights=dense_w, moe_weights=moe_w, h=h_path, experts=E,
                                    top_k=K, dense_out=refs["dense"] if t == threads[0] else None)
                if not a.no_ort:
                    ort = OrtWorkers(a, threads, work, workers[threads[0]], refs, notes, errors)

        # 3. The rounds: every (thread count, tool) of prefill and decode, the
        # order rotated (and reversed every other round), then the FMA peak
        # and the read bandwidth.
        tools = [tool_of[(b, k)] for b in backends for k in KINDS] + ["torch_dense", "torch_moe"]
        tools += ["ort_" + g for g in ("dense", "moe") if ort and any(gt[0] == g for gt in ort.workers)]
        configs = []
        if not a.no_prefill:
            configs += [("prefill", tool, t) for t in threads for tool in tools
                        if not tool.startswith("ort") or (tool[4:], t) in ort.workers]
            pre_runs = {(tool, t): [] for t in threads for tool in tools}
        if not a.no_decode:
            configs += [("decode", (b, k), t) for t in threads for b in backends for k in KINDS]
            dec_runs = {(b, k, t): [] for t in threads for b in backends for k in KINDS}
        measure_peak()
        measure_bandwidth()
        for rnd in range(a.rounds):
            round_loads.append(hf_decode.loadavg())
            log("moe_bench: round %d of %d (load %s, %.0f s in)" % (rnd + 1, a.rounds, round_loads[-1],
                                                                    time.time() - t_start))
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
            if rnd % 2:
                order = order[::-1]
            for phase, tool, t in order:
                if phase == "prefill":
                    prefill_one(tool, t)
                else:
                    decode_one(tool, t)
            measure_peak()
            measure_bandwidth()
    finally:
        for w in workers.values():
            w.close()
        if ort:
            ort.close()
    load[1] = hf_decode.loadavg()
    elapsed = time.time() - t_start

    # -- the figures -------------------------------------------------------------
    def med(runs):
        return statistics.median(r["median_ms"] for r in runs)

    def best(runs):
        return min(r["min_ms"] for r in runs)

    def diff(x, y):
        """Per-round x - y (the rounds pair them), median over rounds; and
        min(x) - min(y)."""
        return (statistics.median(p["median_ms"] - q["median_ms"] for p, q in zip(x, y)), best(x) - best(y))

    def two(s, key, fmt="%.2f"):
        return "-" if key not in s else "%s (%s)" % (fmt % s[key][0], fmt % s[key][1])

    pcells, rcells, ocells, goals = [], [], [], []
    pre = {b: {k: descs[("prefill", b, k)] for k in KINDS} for b in backends if not a.no_prefill}
    flops = {(b, k): layer_flops(d, S) for b, ds in pre.items() for k, d in ds.items()}
    # The FFN's FLOPs: what the PyTorch and ONNX Runtime blocks do, and (for
    # a backend's by-difference rows) less its (c) model's own FFN.
    fflops = {k: ffn_flops(prefill_desc(k, a), S) for k in ("dense", "moe")}
    dflops = {(b, k): fflops[k] - ffn_flops(ds["noffn"], S) for b, ds in pre.items() for k in ("dense", "moe")}
    for (b, k), d in ((bk, descs[("prefill",) + bk]) for bk in tool_of if ("prefill",) + bk in descs):
        got = flop_check.get(tool_of[(b, k)])
        if got and abs(got - flops[(b, k)]) > 2e-3 * flops[(b, k)]:
            notes.append("FLOP COUNT: tfm's --bench implies %.4g GFLOP for %s (%s), this script counts %.4g"
                         % (got * 1e-9, d["name"], BACKENDS[b][1], flops[(b, k)] * 1e-9))
    summary = {}
    names = dict(torch_dense="PyTorch dense FFN", torch_moe="PyTorch MoE, Mixtral loop",
                 ort_dense="ONNX Runtime dense FFN", ort_moe="ONNX Runtime MoE (com.microsoft MoE)")
    if not a.no_prefill:
        for t in threads:
            peak = max(peaks[t]) if peaks[t] else None
            r = {c: pre_runs.get((c, t)) for c in tools}
            rows, s = [], summary.setdefault(t, {})
            for b in backends:
                lab = BACKENDS[b][1]
                for k, label in (("dense", "dense FFN (a)"), ("moe", "MoE FFN (b)"),
                                 ("noffn", "d_ff %d (c)" % pre[b]["noffn"]["d_ff"])):
                    if r[tool_of[(b, k)]]:
                        rows.append(("tfm %s layer, %s" % (lab, label), med(r[tool_of[(b, k)]]),
                                     best(r[tool_of[(b, k)]]), flops[(b, k)]))
                ffn = s[("ffn", b)] = {}
                for c in ("dense", "moe"):
                    x, y = r[tool_of[(b, c)]], r[tool_of[(b, "noffn")]]
                    if x and y:
                        ffn[c] = diff(x, y)
                        rows.append(("tfm %s FFN, %s = %s - c" % (lab, "dense" if c == "dense" else "MoE",
                                                                  "a" if c == "dense" else "b"),
                                     ffn[c][0], ffn[c][1], dflops[(b, c)]))
                        # GFLOP/s of the FFN by difference: median-based, min-based
                        s[("gf", b, c)] = [dflops[(b, c)] / (v * 1e6) for v in ffn[c]]
                if ("gf", b, "dense") in s and ("gf", b, "moe") in s:
                    s[("eff", b)] = [m / d for m, d in zip(s[("gf", b, "moe")], s[("gf", b, "dense")])]
                if r[tool_of[(b, "moe")]] and r[tool_of[(b, "dense")]]:
                    s[("layer", b)] = [med(r[tool_of[(b, "moe")]]) / med(r[tool_of[(b, "dense")]]),
                                       best(r[tool_of[(b, "moe")]]) / best(r[tool_of[(b, "dense")]])]
                if "moe" in ffn and "dense" in ffn:
                    s[("ffn_time", b)] = [ffn["moe"][i] / ffn["dense"][i] for i in (0, 1)]
            for c in ("torch_dense", "torch_moe", "ort_dense", "ort_moe"):
                if r.get(c):
                    rows.append((names[c], med(r[c]), best(r[c]), fflops[c.split("_")[1]]))
            for label, m, lo, fl in rows:
                gf = fl / (m * 1e6) if m > 0 else float("nan")
                pcells.append([str(t), label, bench.fmt_ms(m), bench.fmt_ms(lo), "%.3f" % (fl * 1e-9), "%.1f" % gf,
                               "%.0f%%" % (100 * gf / peak) if peak else "-"])
            # Ratios of a baseline's time over a tfm FFN's (by difference).
            for base in ("torch", "ort"):
                for b in backends:
                    for c in ("dense", "moe"):
                        if r.get("%s_%s" % (base, c)) and c in s[("ffn", b)]:
                            s[(base, b, c)] = [med(r["%s_%s" % (base, c)]) / s[("ffn", b)][c][0],
                                               best(r["%s_%s" % (base, c)]) / s[("ffn", b)][c][1]]
            for base in ("torch", "ort"):
                if r.get(base + "_moe") and r.get(base + "_dense"):
                    s[(base, "ratio")] = med(r[base + "_moe"]) / med(r[base + "_dense"])
            if r.get("ort_moe") and r.get("torch_moe"):
                s["ort_vs_torch"] = [med(r["ort_moe"]) / med(r["torch_moe"]), best(r["ort_moe"]) / best(r["torch_moe"])]
            if "llvm" in backends and "hwy" in backends:
                for c in ("dense", "moe"):
                    if ("gf", "llvm", c) in s and ("gf", "hwy", c) in s:
                        s[("llvm_vs_hwy", c)] = [x / y for x, y in zip(s[("gf", "llvm", c)], s[("gf", "hwy", c)])]
            b0 = "hwy" if "hwy" in backends else backends[0]
            rcells.append([str(t), BACKENDS[b0][1], two(s, ("eff", b0)), two(s, ("torch", b0, "moe")),
                           two(s, ("torch", b0, "dense")), two(s, ("ffn_time", b0)), two(s, ("layer", b0)),
                           "%.2f" % s[("torch", "ratio")] if ("torch", "ratio") in s else "-"])
            for b in backends:
                if b != b0:
                    rcells.append([str(t), BACKENDS[b][1], two(s, ("eff", b)), two(s, ("torch", b, "moe")),
                                   two(s, ("torch", b, "dense")), two(s, ("ffn_time", b)), two(s, ("layer", b)), "-"])
            ocells.append([str(t), two(s, ("llvm_vs_hwy", "moe")), two(s, ("llvm_vs_hwy", "dense")),
                           two(s, ("ort", b0, "moe")), two(s, ("ort", b0, "dense")), two(s, "ort_vs_torch"),
                           "%.2f" % s[("ort", "ratio")] if ("ort", "ratio") in s else "-"])
            if ("eff", "hwy") in s:
                e = s[("eff", "hwy")]
                goals.append("(1) prefill, %s: MoE FFN GFLOP/s / dense FFN GFLOP/s = %.2f (min-based %.2f), "
                             "goal >= %.2f: %s" % (plural(t), e[0], e[1], GOAL_MOE_VS_DENSE,
                                                   "met" if e[0] >= GOAL_MOE_VS_DENSE else "NOT met"))
            if ("torch", "hwy", "moe") in s:
                v = s[("torch", "hwy", "moe")]
                reach = ""
                if peak:
                    # The goal in terms of the FMA peak: PyTorch's loop runs at
                    # some fraction of it, and 1.5x that may be out of reach.
                    torch_pct = fflops["moe"] / (med(r["torch_moe"]) * 1e6) / peak
                    tfm_pct = s[("gf", "hwy", "moe")][0] / peak
                    reach = ("; the loop runs at %.0f%% of the FMA peak, so %.1fx needs tfm's MoE FFN at %.0f%% "
                             "(it runs at %.0f%%)" % (100 * torch_pct, GOAL_VS_TORCH, 100 * GOAL_VS_TORCH * torch_pct,
                                                      100 * tfm_pct))
                goals.append("(2) prefill, %s: PyTorch Mixtral loop / tfm MoE FFN = %.2fx (min-based %.2fx), "
                             "goal >= %.1fx: %s%s" % (plural(t), v[0], v[1], GOAL_VS_TORCH,
                                                      "met" if v[0] >= GOAL_VS_TORCH else "NOT met", reach))
            if ("eff", "llvm") in s:
                extra = ["MoE FFN GFLOP/s / its dense FFN GFLOP/s = %.2f (min-based %.2f)" % tuple(s[("eff", "llvm")])]
                if ("llvm_vs_hwy", "moe") in s:
                    extra.append("its MoE FFN GFLOP/s / the Highway MoE FFN's = %.2f (min-based %.2f)"
                                 % tuple(s[("llvm_vs_hwy", "moe")]))
                if ("torch", "llvm", "moe") in s:
                    extra.append("PyTorch Mixtral loop / its MoE FFN = %.2fx" % s[("torch", "llvm", "moe")][0])
                goals.append("LLVM backend, prefill, %s (for comparison; the goals are the Highway backend's): %s"
                             % (plural(t), "; ".join(extra)))
    dcells, dsummary = [], {}
    mean_cache = a.prompt + a.new_tokens / 2.0
    if not a.no_decode:
        for t in threads:
            bw = max(bws[t]) if bws[t] else None
            for b in backends:
                step, lab = {}, BACKENDS[b][1]
                for k in KINDS:
                    runs = dec_runs.get((b, k, t))
                    if not runs:
                        continue
                    desc = descs[("decode", b, k)]
                    w, kvb = moe_step_bytes(desc)
                    by = w + kvb * mean_cache
                    m, lo = statistics.median(runs), min(runs)
                    step[k] = runs
                    bound = by / (bw * 1e9) * 1e3
                    label = dict(dense="dense FFN", moe="MoE FFN", noffn="d_ff %d" % desc["d_ff"])[k]
                    dcells.append([str(t), "%s decoder, %s" % (lab, label), "%.2f" % m, "%.2f" % lo,
                                   "%.1f" % (by * 1e-6), "%.2f" % bound, "%.2f" % (m / bound),
                                   "%.1f" % (by / (m * 1e6))])
                    dsummary[(b, k, t)] = dict(med=m, min=lo, bytes=by, bound=bound)
                for k in ("dense", "moe"):
                    if k in step and "noffn" in step:
                        x, y = step[k], step["noffn"]
                        m = statistics.median(p - q for p, q in zip(x, y))
                        lo = min(x) - min(y)
                        by = ffn_step_bytes(descs[("decode", b, k)]) - ffn_step_bytes(descs[("decode", b, "noffn")])
                        bound = by / (bw * 1e9) * 1e3
                        dcells.append([str(t), "%s FFN alone, %s (by difference)" % (lab, "dense" if k == "dense"
                                                                                     else "MoE"),
                                       "%.2f" % m, "%.2f" % lo, "%.1f" % (by * 1e-6), "%.2f" % bound,
                                       "%.2f" % (m / bound), "%.1f" % (by / (m * 1e6)) if m > 0 else "-"])
                        dsummary[(b, "ffn_" + k, t)] = dict(med=m, min=lo, bytes=by, bound=bound)
                if (b, "moe", t) in dsummary:
                    s = dsummary[(b, "moe", t)]
                    what = "MoE decoder step %.2f ms / bound %.2f ms = %.2fx (min %.2fx)" % (
                        s["med"], s["bound"], s["med"] / s["bound"], s["min"] / s["bound"])
                    if b == "hwy":
                        goals.append("(3) decode, %s: %s, goal <= %.1fx: %s" % (
                            plural(t), what, GOAL_DECODE_BOUND,
                            "met" if s["med"] / s["bound"] <= GOAL_DECODE_BOUND else "NOT met"))
                    else:
                        goals.append("%s backend, decode, %s (for comparison): %s" % (lab, plural(t), what))

    # Notes on the machine.
    for t in threads:
        if t > 1 and peaks.get(1) and len(peaks[t]) > 1:
            busy = [i for i, p in enumerate(peaks[t][1:], 1) if p < 0.75 * t * max(peaks[1])]
            if busy and max(peaks[t]) >= 0.75 * t * max(peaks[1]):
                notes.append("the other core was busy at the end of round%s %s of %d (the %d-thread FMA peak then "
                             "%s GFLOP/s, below 0.75 x %d x the 1-thread %.0f): the %d-thread medians mix quiet and "
                             "busy rounds (see the per-round figures)"
                             % ("s" if len(busy) > 1 else "", ", ".join(map(str, busy)), a.rounds, t,
                                "/".join("%.0f" % peaks[t][i] for i in busy), t, max(peaks[1]), t))
        if t > 1 and peaks[t] and peaks.get(1):
            if max(peaks[t]) < 0.75 * t * max(peaks[1]):
                notes.append("the machine was busy: %d threads reached only %.2fx the 1-thread FMA peak; the "
                             "%d-thread prefill figures mean little" % (t, max(peaks[t]) / max(peaks[1]), t))
        for name, vals in (("FMA peak", peaks[t]), ("read bandwidth", bws[t])):
            if vals and min(vals) < 0.85 * max(vals):
                notes.append("the %s at %s ranged from %.1f to %.1f over the run (%s): the machine's "
                             "load changed while it ran" % (name, plural(t), min(vals), max(vals),
                                                            ", ".join("%.0f" % v for v in vals)))
    whole = {key: s for key, s in dsummary.items() if not key[1].startswith("ffn_")}
    fast = ["%s %s t=%d" % (BACKENDS[b][1], k, t) for (b, k, t), s in whole.items() if s["min"] < s["bound"]]
    if fast:
        notes.append("faster than the bound (%s): the bandwidth measurements ran while the machine was busier "
                     "than during those steps, or part of the bytes stayed in a cache" % ", ".join(fast))
    l3 = l3_bytes(mach["l3"])
    cached = sorted({"%s (%.0f MB)" % (k, s["bytes"] * 1e-6) for (b, k, t), s in whole.items()
                     if l3 and s["bytes"] < 2 * l3})
    if cached:
        notes.append("the bytes a step reads of %s are less than twice the L3 (%s): part of them stays in the L3 "
                     "from step to step, so its bound is pessimistic, and the FFN-alone rows (which subtract the "
                     "(c) decoder's step) come out slower than the FFN's own bytes alone would make them"
                     % (", ".join(cached), mach["l3"]))
    if ort and ort.checks:
        notes.insert(0, "ONNX Runtime's check (before timing; the dense graph against the PyTorch dense FFN, the "
                        "MoE graph against the reference's MoE output, on the captured FFN input): %s"
                        % "; ".join("%s %s max|d| %.2g (tol %.2g) %s" % (c["graph"], plural(c["threads"]), c["err"],
                                                                         c["tol"], "ok" if c["ok"] else "MISMATCH")
                                    for c in ort.checks))
    if check:
        notes.insert(0, "check (before timing): tfm's MoE model against reference.py's FormulaModel (Mixtral loop), "
                        "same weights and input: %s (tol %.2g); smallest top-%d routing margin %.3g; "
                        "(token, slot) pairs per expert %s; the PyTorch Mixtral loop against the reference's MoE "
                        "output: max|d| %.2g (tol %.2g) %s"
                        % (", ".join("%s max|d| %.2g %s" % (BACKENDS[b][1], c["max_err"], "ok" if c["ok"] else
                                                             "MISMATCH") for b, c in check["tfm"].items()),
                           check["tol"], K, check["routing_gap"], check["tokens_per_expert"], check["loop_err"],
                           check["loop_tol"], "ok" if check["loop_ok"] else "MISMATCH"))

    # -- the report -------------------------------------------------------------
    src, tfm_commit = bench.tfm_source(a.tfm_compile)
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    about = dict(hwy="the Highway backend (its best SIMD target for this CPU, TFM_SIMD unset)",
                 llvm="the LLVM backend (--backend=llvm; its MoE FFN: each expert a packed GEMM over its group's rows)")
    header = [
        "Measured %s on %s (%d CPUs; %s; L2 %s, L3 %s), load average %s at the start, %s at the end (at the "
        "start of each round: %s); tfm %s (%s, built from %s); this tree at %s; %s run, %.0f s in all."
        % (now, mach["model"], mach["cpus"], mach["isa"], mach["l2"], mach["l3"], load[0], load[1],
           " ".join(round_loads) or "-", tfm_commit, a.tfm_compile, src, hf_decode.commit(),
           "--quick" if a.quick else "a default", elapsed),
        "Shapes: d_model %d, %d heads, d_ff %d, MoE %d experts top-%d (router [%d, %d], no bias; experts linear1 "
        "-> gelu_tanh -> linear2 with biases), GPT-2-style decoder blocks (causal, pre-norm), fp32, batch 1; "
        "tfm's backends: %s; the goals are the Highway backend's."
        % (D_MODEL, HEADS, D_FF, E, K, E, D_MODEL, " and ".join(about[b] for b in backends)),
    ]
    if not a.no_prefill:
        header += [
            "Prefill: seq %d, 1-layer models (a) dense FFN, (b) MoE FFN, (c) %s, float inputs, weights from "
            "reference.make_weights; %d rounds (each measures every prefill and decode (thread count, tool), the "
            "order rotated from round to round); tfm `--bench %d --warmup 1` (the "
            "median of its passes), PyTorch %d timed passes after one warm-up; a row gives the median over rounds "
            "(FFN rows: of the per-round differences) and the min (FFN rows: min - min). GFLOP: what the pass must "
            "do (tfm's own --bench count%s); the FFN's: dense 4*S*d*f, MoE top_k*4*S*d*f + 2*S*d*E (the router); "
            "tfm's FFN rows (by difference) less the (c) model's own FFN."
            % (S, ", ".join("d_ff %d (%s)" % (pre[b]["noffn"]["d_ff"], BACKENDS[b][1]) for b in backends), a.rounds,
               a.passes, a.passes, ", checked against its gflops= line" if flop_check else ""),
            "FMA peak (bench/fma_peak.cpp, %s, best of %d x 0.2 s, before the first round and after each): %s."
            % (peak_isa[0], a.peak_trials, ", ".join(
                "%s %.1f GFLOP/s (%s)" % (plural(t), max(p), " ".join("%.0f" % x for x in p))
                for t, p in peaks.items() if p)),
        ]
        if torch_info:
            header.append(
                "PyTorch %s (ATen CPU capability %s; BLAS %s, OpenBLAS kernels %s; OMP_WAIT_POLICY %s%s), the FFN "
                "blocks alone on the layer's captured FFN input (norm2's output, [%d, %d]), under "
                "torch.inference_mode(): dense F.linear -> gelu_tanh -> F.linear; MoE Hugging Face's "
                "MixtralSparseMoeBlock loop (router, softmax, topk, renormalised; per expert torch.where on the "
                "one-hot mask, the expert FFN on its tokens, times the weights, index_add_)."
                % (torch_info["torch"], torch_info["cpu_capability"], " ".join(
                    os.path.basename(b) for b in torch_info.get("blas", []) if "blas" in os.path.basename(b)) or "?",
                   torch_info.get("openblas_core"), torch_info["env"].get("OMP_WAIT_POLICY") or "unset",
                   ", --blas-dir " + a.blas_dir if a.blas_dir else "", S, D_MODEL))
        if ort and ort.info:
            ran = {g: ", ".join("%s x%d" % kv for kv in sorted(ops.items(), key=lambda kv: -kv[1]))
                   for g, ops in ort.ops.items() if ops}
            header.append(
                "ONNX Runtime %s (PyPI, in %s: minilm_bench.py's venv and ORT worker), CPUExecutionProvider, "
                "intra_op_num_threads = thr, inter_op_num_threads 1, sequential, ORT_ENABLE_ALL; on the same "
                "captured FFN input, %d + 1 session.run() calls a measurement (the first dropped); graphs from "
                "torch.onnx.export (PyTorch %s, opset %d, in %.1f s): the dense FFN as MatMul -> Add -> gelu_tanh's "
                "formula -> MatMul -> Add (its optimised graph ran: %s)%s."
                % (ort.info["onnxruntime"], os.path.relpath(os.path.abspath(a.ort_venv), ROOT), a.passes,
                   torch_info["torch"], minilm_bench.OPSET, ort.export["seconds"], ran.get("dense", "?"),
                   "; the MoE: the router's MatMul, then com.microsoft MoE (its kernels: %s) with %s, the experts "
                   "stacked as its fc1 [%d, %d, %d] / fc2 [%d, %d, %d] weights and biases (ran: %s); its gelu is "
                   "the tanh form (the check: it matches gelu_tanh's reference)"
                   % ("; ".join("%s %s" % (p, "/".join(ty)) for p, ty in ort.moe_kernels),
                      ", ".join("%s %s" % kv for kv in ort.export["attrs"].items()), E, D_FF, D_MODEL, E, D_MODEL,
                      D_FF, ran.get("moe", "?")) if "moe" in ran else ""))
    if not a.no_decode:
        b0 = backends[0]
        wd, kvb = moe_step_bytes(descs[("decode", b0, "dense")])
        wm, _ = moe_step_bytes(descs[("decode", b0, "moe")])
        header += [
            "Decode: %d-layer decoders, vocab %d (tied LM head, learned positions), dense / MoE / (c), their "
            "default random weights, prompt %d tokens, `--generate %d` (%d decode steps at cache lengths %d-%d); "
            "the step time is 1000 / decode_tok_s; in the same %d rounds; median and min "
            "over rounds. Bytes per step (fp32; decode.py's step_bytes, the MoE decoder's router and top-%d experts a "
            "layer in place of the dense FFN): dense %.1f MB, MoE %.1f MB of weights, + %.1f KB of k/v cache per "
            "cached position (at the mean cache length %.0f); the FFN-alone rows: the FFN weights of every layer "
            "(less the (c) decoder's)."
            % (a.decode_layers, a.vocab, a.prompt, a.new_tokens, a.new_tokens - 1, a.prompt + 1,
               a.prompt + a.new_tokens - 1, a.rounds, K, wd * 1e-6, wm * 1e-6, kvb * 1e-3, mean_cache),
            "Read bandwidth (bench/bandwidth.cpp, sum over a 1 GiB buffer, best of 5 reps, before the first round and "
            "after each; the best is the bound's): %s."
            % ", ".join("%s %.2f GB/s (%s)" % (plural(t), max(b), " ".join("%.1f" % x for x in b))
                        for t, b in bws.items() if b),
        ]
    pcols = ["thr", "what", "med ms", "min ms", "GFLOP", "GF/s (med)", "% FMA peak"]
    rcols = ["thr", "tfm backend", "MoE FFN GF/s / dense FFN GF/s (goal >= %.2f)" % GOAL_MOE_VS_DENSE,
             "PyTorch MoE loop / tfm MoE FFN (goal >= %.1f)" % GOAL_VS_TORCH, "PyTorch dense / tfm dense FFN",
             "tfm MoE FFN / dense FFN time (FLOPs %.2f)" % (fflops["moe"] / fflops["dense"]),
             "tfm MoE layer / dense layer time (FLOPs %.2f)" % (layer_flops(prefill_desc("moe", a), S)
                                                                 / layer_flops(prefill_desc("dense", a), S)),
             "PyTorch MoE loop / dense FFN time"]
    ocols = ["thr", "LLVM MoE FFN GF/s / Highway MoE FFN GF/s", "LLVM dense FFN GF/s / Highway dense FFN GF/s",
             "ONNX Runtime MoE / tfm MoE FFN time", "ONNX Runtime dense / tfm dense FFN time",
             "ONNX Runtime MoE / PyTorch MoE loop time", "ONNX Runtime MoE / dense FFN time"]
    dcols = ["thr", "what", "step med ms", "step min ms", "MB read", "bound ms", "med / bound", "GB/s (med)"]
    if 1 in threads:
        for t in threads:
            if t == 1:
                continue
            speedup = []
            for c in tools:
                x, y = pre_runs.get((c, 1)), pre_runs.get((c, t))
                if x and y:
                    speedup.append("%s %.2fx" % (c.replace("_", " "), med(x) / med(y)))
            for (b, k, t1), s in sorted(whole.items()):
                if t1 == 1 and (b, k, t) in whole:
                    speedup.append("decode %s %s %.2fx" % (BACKENDS[b][0], k, s["med"] / whole[(b, k, t)]["med"]))
            if speedup:
                notes.append("%d threads over 1 (medians): %s" % (t, ", ".join(speedup)))
    notes = errors + notes

    text = ["", "\n".join(header), ""]
    md = ["# tfm benchmark: mixture-of-experts FFNs", "",
          "Written by `bench/moe_bench.py` (see bench/README.md, \"Mixture of experts\").", ""]
    md += ["- " + h for h in header] + [""]
    if pcells:
        text += ["Prefill (seq %d):" % S, bench.render_text(pcols, pcells, left=2), "",
                 "Ratios (median; min-based in brackets):", bench.render_text(rcols, rcells, left=2), ""]
        md += ["## Prefill, seq %d" % S, "", bench.render_md(pcols, pcells, left=2), "",
               "Ratios (median; min-based in brackets):", "", bench.render_md(rcols, rcells, left=2), ""]
        if any(c != "-" for row in ocells for c in row[1:]):
            text += ["The LLVM backend and ONNX Runtime beside the Highway backend (tfm FFN: by difference; median; "
                     "min-based in brackets):", bench.render_text(ocols, ocells, left=1), ""]
            md += ["The LLVM backend and ONNX Runtime beside the Highway backend (tfm FFN: by difference; median; "
                   "min-based in brackets):", "", bench.render_md(ocols, ocells, left=1), ""]
    if dcells:
        text += ["Decode (batch 1):", bench.render_text(dcols, dcells, left=2), ""]
        md += ["## Decode, batch 1", "", bench.render_md(dcols, dcells, left=2), ""]
    if goals:
        text += ["Goals:"] + ["  " + g for g in goals] + [""]
        md += ["## Goals", ""] + ["- " + g for g in goals] + [""]
    if notes:
        text += ["note: " + n for n in notes]
        md += ["## Notes", ""] + ["- " + n for n in notes] + [""]
    per_round = []
    for (tool, t), runs in sorted(pre_runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if runs:
            per_round.append("- prefill %s, %s (ms): %s" % (tool, plural(t), " ".join("%.1f" % r["median_ms"]
                                                                                     for r in runs)))
    for (b, k, t), runs in sorted(dec_runs.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1])):
        if runs:
            per_round.append("- decode %s, %s (ms/step): %s" % (tool_of[(b, k)], plural(t),
                                                                " ".join("%.2f" % r for r in runs)))
    if per_round:
        md += ["Per-round medians, in round order:", ""] + per_round + [""]
    print("\n".join(text))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        fh.write("\n".join(md))
    print("moe_bench: wrote %s" % os.path.relpath(a.out, os.getcwd()))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
