#!/usr/bin/env python3
"""bench/: a Hugging Face GPT-2-small folder through tfm-compile, against
transformers' own decode step on the same weights (issue 26).

Needs transformers (4.46.3) over Debian's torch 1.13; run it with a venv's
python, not /usr/bin/python3:

  /usr/bin/python3 -m venv --system-site-packages /tmp/hfbench-venv
  /tmp/hfbench-venv/bin/pip install transformers==4.46.3
  /tmp/hfbench-venv/bin/python bench/hf_decode.py [--runs 5] [--threads 1,2] [--contexts 16,128,512]

What it does:
  1. builds GPT2LMHeadModel at GPT-2-small's shape (n_embd 768, n_head 12,
     n_layer 12, n_positions 1024, vocab 50257) with seeded random weights and
     save_pretrained()s it (safetensors) into two folders under
     bench/work/hf_decode/: "default", transformers' own initialisation
     (initializer_range 0.02, LayerNorms 1/0, biases 0), and "spread",
     initializer_range 0.1 with the LayerNorm and bias parameters perturbed
     (the default one's greedy output is one token repeated, a weak check);
  2. `tfm-compile DIR -o DIR.exe` (Highway, the default backend) for each;
  3. checks that `EXE --input input_ids=P.npy --generate 32` (weights from
     DIR/model.safetensors, its default) prints the ids that transformers'
     greedy generate() gives for a fixed 16-token prompt;
  4. times the decode step on the "spread" folder, for each thread count and
     context length P (the prompt; its decode steps run at cache lengths
     P+1 .. P+N-1), interleaving the tools, --runs times:
       * tfm: `EXE --generate N --threads T`; its `generate:` line's
         decode_tok_s is the mean over its N - 1 decode steps;
       * transformers: a worker process per thread count (this script with
         --worker T; OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = T,
         torch.set_num_threads(T), OMP_WAIT_POLICY=PASSIVE, as bench.py's
         baselines), GPT2LMHeadModel.from_pretrained(DIR): one prefill call
         over the prompt, then N - 1 calls model(input_ids=token,
         past_key_values=..., use_cache=True), each timed with its argmax;
       * the memory-bandwidth bound: the bytes one step reads (weights +
         k/v cache) / bench/bandwidth.cpp's read bandwidth (best seen).
     Each run's figure is its mean ms per decode step; a row gives the median
     and min over runs.  The ids of every run are compared too.
Results: a table on stdout and bench/results/hf-decode.md (--out).
"""

import argparse
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

import bench  # noqa: E402  (helpers only: run, last_line, build_cxx, baseline_env, render_*)
import decode  # noqa: E402  (step_bytes, measure_bandwidth)

# bench.py puts test/e2e first on sys.path, and its safetensors.py would hide
# the safetensors package that transformers imports.
sys.path[:] = [p for p in sys.path if os.path.abspath(p) != os.path.join(ROOT, "test", "e2e")]

SHAPE = dict(n_embd=768, n_head=12, n_layer=12, n_positions=1024, vocab_size=50257)
DESC = dict(d_model=768, d_ff=3072, num_layers=12, vocab_size=50257)  # for decode.step_bytes
CHECK_PROMPT, CHECK_NEW = 16, 32


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The transformers worker (this script with --worker T)
# ---------------------------------------------------------------------------

def worker(threads):
    import torch
    from transformers import GPT2LMHeadModel
    # After transformers (which has imported the safetensors package):
    # torch_worker puts test/e2e back on sys.path.
    import torch_worker  # info(): torch version, ATen capability, OpenBLAS kernels
    torch.set_num_threads(threads)
    model = None

    def reply(obj):
        sys.stdout.write("@@ " + json.dumps(obj) + "\n")
        sys.stdout.flush()

    def generate(prompt, new_tokens):
        t0 = time.perf_counter()
        out = model(input_ids=prompt, use_cache=True)
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        ids, past = [int(token)], out.past_key_values
        prefill = time.perf_counter() - t0
        steps = []
        for _ in range(1, new_tokens):
            t0 = time.perf_counter()
            out = model(input_ids=token, past_key_values=past, use_cache=True)
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            past = out.past_key_values
            ids.append(int(token))
            steps.append(time.perf_counter() - t0)
        return ids, prefill, steps

    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        try:
            if op == "quit":
                reply({"ok": True})
                return
            with torch.no_grad():
                if op == "info":
                    import transformers
                    ans = torch_worker.info()
                    ans["transformers"] = transformers.__version__
                    reply(ans)
                elif op == "load":
                    model = GPT2LMHeadModel.from_pretrained(req["dir"], torch_dtype=torch.float32).eval()
                    for p in req.get("warmup", [16]):  # the allocator, the thread pools
                        generate(torch.zeros(1, p, dtype=torch.long), 4)
                    reply({"ok": True, "threads": torch.get_num_threads()})
                elif op == "run":
                    prompt = torch.from_numpy(np.load(req["prompt"]).astype(np.int64)).view(1, -1)
                    ids, prefill, steps = generate(prompt, int(req["new_tokens"]))
                    reply({"ok": True, "ids": ids, "prefill_ms": prefill * 1e3,
                           "step_ms": [s * 1e3 for s in steps], "threads": torch.get_num_threads()})
                else:
                    raise ValueError("unknown op %r" % op)
        except Exception as e:
            reply({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})


class Worker:
    def __init__(self, threads, blas_dir=None, coretype=None):
        self.threads = threads
        env = bench.baseline_env(threads, "PASSIVE")
        if coretype:
            env["OPENBLAS_CORETYPE"] = coretype
        env["PYTHONWARNINGS"] = "ignore"
        if blas_dir:  # a libblas.so.3 for torch, ahead of the system's
            env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [blas_dir, env.get("LD_LIBRARY_PATH")]))
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def call(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit("hf_decode: the transformers worker (%d threads) died" % self.threads)
            if line.startswith("@@ "):
                ans = json.loads(line[3:])
                if not ans.get("ok"):
                    sys.exit("hf_decode: transformers worker: %s" % ans.get("error"))
                return ans

    def close(self):
        try:
            self.call(op="quit")
        except SystemExit:
            pass
        self.proc.wait(timeout=60)


# ---------------------------------------------------------------------------
# The model folders and the ids check
# ---------------------------------------------------------------------------

def make_folder(path, variant, seed):
    """save_pretrained()s a seeded random GPT-2-small into `path` (safetensors)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    cfg = GPT2Config(**SHAPE, initializer_range=0.02 if variant == "default" else 0.1)
    model = GPT2LMHeadModel(cfg).eval()
    if variant == "spread":
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if ".ln_" in name or name.startswith("transformer.ln_f"):
                    p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn(p.shape, generator=g))
                elif name.endswith(".bias"):
                    p.copy_(0.02 * torch.randn(p.shape, generator=g))
    model.save_pretrained(path, safe_serialization=True)
    return model


def transformers_greedy(model, prompt, new_tokens):
    """transformers' own greedy generate(): the new ids, and the smallest gap
    between the best and second-best logit over the steps."""
    import torch
    import transformers.generation.utils as U
    U.is_fsdp_managed_module = lambda m: False  # its torch.distributed.fsdp import crashes on torch 1.13 + 3.11
    ids = torch.from_numpy(prompt)
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                             do_sample=False, num_beams=1, pad_token_id=50256,
                             output_scores=True, return_dict_in_generate=True)
    top2 = torch.stack(out.scores)[:, 0].topk(2, dim=-1).values
    return out.sequences[0, prompt.shape[1]:].tolist(), float((top2[:, 0] - top2[:, 1]).min())


def tfm_generate(exe, prompt_path, new_tokens, threads, output=None):
    """Runs `exe --generate`; (generate: line as a dict, ids, error or None)."""
    cmd = [exe, "--input", "input_ids=" + prompt_path, "--generate", str(new_tokens), "--threads", str(threads)]
    if output:
        cmd += ["--output", output]
    rc, so, se = bench.run(cmd)
    kv = bench.last_line(so, "generate: ")
    ids = None
    for line in so.splitlines():
        if line.startswith("ids:"):
            ids = [int(x) for x in line[4:].split()]
    if output and rc == 0:
        ids = np.load(output).reshape(-1).astype(int).tolist()
    if (rc or kv is None or int(kv["new_tokens"]) != new_tokens or int(kv["threads"]) != threads
            or not float(kv["decode_tok_s"]) > 0):
        return kv, ids, "%s (exit %d): %s %s" % (" ".join(cmd), rc, so.strip()[-300:], se.strip()[-300:])
    return kv, ids, None


# ---------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------

def machine():
    rc, so, _ = bench.run(["lscpu"])
    fields = {}
    for line in so.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    flags = set(fields.get("Flags", "").split())
    avx512 = sorted(f for f in flags if f.startswith("avx512"))
    isa = ", ".join(["AVX2" if "avx2" in flags else "no AVX2",
                     ("AVX-512 (%s)" % " ".join(f[6:].lstrip("_") for f in avx512)) if avx512 else "no AVX-512"])
    return dict(model=fields.get("Model name", bench.cpu_model()), cpus=os.cpu_count(), isa=isa,
                l2=fields.get("L2 cache", "?"), l3=fields.get("L3 cache", "?"))


def commit():
    rc, so, _ = bench.run(["git", "-C", ROOT, "rev-parse", "HEAD"])
    if rc:
        return "not a git checkout"
    _, st, _ = bench.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    return so.strip() + (" (+ uncommitted changes in the tree)" if st.strip() else "")


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def add_run_arguments(ap, work, out):
    """The flags every stand-alone bench script shares: the compiler, its
    work folder (bench/work/WORK), the report (bench/results/OUT) and the
    thread counts."""
    ap.add_argument("--tfm-compile", default=os.path.join(ROOT, "build", "bin", "tfm-compile"))
    ap.add_argument("--work-dir", default=os.path.join(HERE, "work", work))
    ap.add_argument("--out", default=os.path.join(HERE, "results", out))
    ap.add_argument("--threads", default="1,2")


def start_run(a):
    """(thread counts, start time, [load average now, at the end], the
    machine, the work folder made) of a run with add_run_arguments' flags."""
    work = os.path.abspath(a.work_dir)
    os.makedirs(work, exist_ok=True)
    return [int(t) for t in a.threads.split(",")], time.time(), [loadavg(), "?"], machine(), work


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_run_arguments(ap, "hf_decode", "hf-decode.md")
    ap.add_argument("--contexts", default="16,128,512", help="prompt lengths (the cache at the first decode step)")
    ap.add_argument("--new-tokens", type=int, default=32, help="N: --generate N, N - 1 timed decode steps")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-bandwidth", action="store_true")
    ap.add_argument("--blas-dir", help="a folder with a libblas.so.3 (e.g. OpenBLAS's openblas-pthread/) that the "
                    "transformers workers load ahead of the system's (LD_LIBRARY_PATH)")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker)
    try:
        import transformers  # noqa: F401
    except ImportError:
        sys.exit("hf_decode: needs transformers; run it with a venv's python (see bench/README.md, "
                 "\"Hugging Face GPT-2 decode\")")
    threads, t_start, load, mach, a.work_dir = start_run(a)
    contexts = [int(c) for c in a.contexts.split(",")]
    N = a.new_tokens
    errors, notes = [], []

    # 1-3: folders, compiles, the ids check.
    rng = np.random.default_rng(a.seed)
    check_prompt = rng.integers(0, SHAPE["vocab_size"], size=(1, CHECK_PROMPT), dtype=np.int64)
    check_path = os.path.join(a.work_dir, "check_prompt.npy")
    np.save(check_path, check_prompt)
    import torch
    torch.set_num_threads(max(threads))
    exes, checks = {}, []
    for variant in ("default", "spread"):
        folder = os.path.join(a.work_dir, variant)
        log("hf_decode: %s: save_pretrained, tfm-compile" % variant)
        model = make_folder(folder, variant, a.seed)
        exe = folder + ".exe"
        t0 = time.time()
        rc, so, se = bench.run([a.tfm_compile, folder, "-o", exe])
        compile_s = time.time() - t0
        if rc:
            errors.append("COMPILE FAILURE tfm-compile %s (exit %d): %s" % (folder, rc, se.strip()[-500:]))
            continue
        exes[variant] = exe
        want, margin = transformers_greedy(model, check_prompt, CHECK_NEW)
        kv, got, err = tfm_generate(exe, check_path, CHECK_NEW, 1)
        ok = err is None and got == want
        if err:
            errors.append("tfm --generate failed: " + err)
        elif not ok:
            first = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
            errors.append("IDS MISMATCH (%s): tfm %s, transformers %s (first difference at new token %d; "
                          "smallest top-2 logit gap %.4g)" % (variant, got, want, first, margin))
        checks.append(dict(variant=variant, ok=ok, ids=want, tfm_ids=got, margin=margin,
                           distinct=len(set(want)), compile_s=compile_s))
        log("hf_decode: %s: %s (%d distinct ids, smallest top-2 gap %.3g)"
            % (variant, "ids match" if ok else "IDS DIFFER", len(set(want)), margin))
        del model
    weights_file = os.path.join(a.work_dir, "spread", "model.safetensors")

    # 4: timing.
    bw_exe, bw_runs = None, {t: [] for t in threads}
    if not a.no_bandwidth:
        bw_exe = os.path.join(a.work_dir, "bandwidth")
        bench.build_cxx(os.path.join(HERE, "bandwidth.cpp"), bw_exe, ["-O3", "-pthread"])

    def measure_bandwidth():
        if bw_exe:
            for t in threads:
                bw_runs[t].append(decode.measure_bandwidth(bw_exe, t))

    measure_bandwidth()
    prompts = {}
    for p in contexts:
        if p + N > SHAPE["n_positions"]:
            sys.exit("hf_decode: context %d + %d new tokens > n_positions" % (p, N))
        prompts[p] = os.path.join(a.work_dir, "prompt_%d.npy" % p)
        np.save(prompts[p], np.random.default_rng(1000 + p).integers(0, SHAPE["vocab_size"], size=(1, p),
                                                                      dtype=np.int64))
    configs = [(p, t) for p in contexts for t in threads]
    tfm_runs = {k: [] for k in configs}
    hf_runs = {k: [] for k in configs}
    id_mismatch = set()
    exe = exes.get("spread")
    workers = {}
    try:
        log("hf_decode: starting the transformers workers")
        workers = {t: Worker(t, a.blas_dir) for t in threads}
        info = workers[threads[0]].call(op="info")
        # OpenBLAS 0.3.21 does not know every CPU: on this machine's Xeon
        # (a VM's "Intel Xeon Processor", AVX-512) it falls back to its
        # SSE3 "Prescott" kernels. Then the workers get the kernels the ISA
        # allows, named by OPENBLAS_CORETYPE.
        want = ("Cooperlake" if "bf16" in mach["isa"] else "SkylakeX") if "AVX-512" in mach["isa"] else \
            "Haswell" if "no AVX2" not in mach["isa"] else None
        core = (info.get("openblas_core") or "").lower()
        if core and want and core in ("prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai",
                                      "coppermine", "northwood", "barcelona", "bobcat", "opteron"):
            notes.append("OpenBLAS picked its %s kernels by itself, below what the CPU has; the workers ran with "
                         "OPENBLAS_CORETYPE=%s" % (info["openblas_core"], want))
            for w in workers.values():
                w.close()
            workers = {t: Worker(t, a.blas_dir, want) for t in threads}
            info = workers[threads[0]].call(op="info")
        for w in workers.values():
            w.call(op="load", dir=os.path.join(a.work_dir, "spread"), warmup=contexts)
        if exe:  # page cache, the first process start
            tfm_generate(exe, prompts[contexts[0]], 4, 1)
        for rnd in range(a.runs):
            log("hf_decode: run %d of %d (load %s)" % (rnd + 1, a.runs, loadavg()))
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
            for p, t in order:
                ids = {}
                for tool in (("tfm", "hf") if rnd % 2 == 0 else ("hf", "tfm")):
                    if tool == "hf":
                        ans = workers[t].call(op="run", prompt=prompts[p], new_tokens=N)
                        hf_runs[(p, t)].append(dict(ms=statistics.mean(ans["step_ms"]),
                                                    step_min_ms=min(ans["step_ms"]),
                                                    prefill_tok_s=p / ans["prefill_ms"] * 1e3))
                        ids["hf"] = ans["ids"]
                        log("  ctx %4d t=%d  transformers %7.2f ms/step" % (p, t, hf_runs[(p, t)][-1]["ms"]))
                    elif exe and tfm_runs[(p, t)] is not None:
                        kv, got, err = tfm_generate(exe, prompts[p], N, t,
                                                    output=os.path.join(a.work_dir, "ids_%d_t%d.npy" % (p, t)))
                        if err:
                            errors.append("tfm --generate failed: " + err)
                            tfm_runs[(p, t)] = None
                            continue
                        tfm_runs[(p, t)].append(dict(ms=1e3 / float(kv["decode_tok_s"]),
                                                     prefill_tok_s=float(kv["prefill_tok_s"])))
                        ids["tfm"] = got
                        log("  ctx %4d t=%d  tfm          %7.2f ms/step" % (p, t, tfm_runs[(p, t)][-1]["ms"]))
                if len(ids) == 2 and ids["tfm"] != ids["hf"] and (p, t) not in id_mismatch:
                    id_mismatch.add((p, t))
                    errors.append("IDS MISMATCH in the timed runs, context %d, %d thread(s): tfm %s, "
                                  "transformers %s" % (p, t, ids["tfm"], ids["hf"]))
            measure_bandwidth()
    finally:
        for w in workers.values():
            w.close()
    load[1] = loadavg()

    sizes = decode.step_bytes(DESC)
    weight_bytes, kv_per_pos = sizes["weight_bytes"], sizes["kv_bytes_per_position"]
    rows = []
    for p, t in configs:
        row = dict(ctx=p, threads=t, tfm=None, hf=None)
        mean_cache = p + N / 2.0
        row["bytes"] = weight_bytes + kv_per_pos * mean_cache
        row["bound"] = row["bytes"] / (max(bw_runs[t]) * 1e9) * 1e3 if bw_runs[t] else None
        for tool, runs in (("tfm", tfm_runs[(p, t)]), ("hf", hf_runs[(p, t)])):
            if runs:
                ms = [r["ms"] for r in runs]
                row[tool] = dict(med=statistics.median(ms), min=min(ms), runs=ms,
                                 prefill=statistics.median([r["prefill_tok_s"] for r in runs]))
        rows.append(row)

    def f(x, fmt="%.2f"):
        return "-" if x is None else fmt % x

    columns = ["context (cache)", "thr", "tfm med ms", "tfm min ms", "transformers med ms", "transformers min ms",
               "transformers/tfm (med)", "(min)", "bound ms", "bound/tfm", "tfm prefill tok/s",
               "transformers prefill tok/s"]
    cells = []
    for r in rows:
        tf, hf = r["tfm"], r["hf"]
        cells.append(["%d (%d-%d)" % (r["ctx"], r["ctx"] + 1, r["ctx"] + N - 1), str(r["threads"]),
                      f(tf and tf["med"]), f(tf and tf["min"]), f(hf and hf["med"]), f(hf and hf["min"]),
                      f(hf["med"] / tf["med"]) if tf and hf else "-", f(hf["min"] / tf["min"]) if tf and hf else "-",
                      f(r["bound"]),
                      "%.0f%%" % (100 * r["bound"] / tf["med"]) if tf and r["bound"] else "-",
                      f(tf and tf["prefill"], "%.0f"), f(hf and hf["prefill"], "%.0f")])
    elapsed = time.time() - t_start
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    check_lines = []
    for c in checks:
        check_lines.append("`%s` folder: `tfm-compile DIR -o EXE` in %.0f s; `EXE --input input_ids=PROMPT.npy "
                           "--generate %d` %s transformers' greedy generate() (%d distinct ids, smallest top-2 "
                           "logit gap %.3g): %s"
                           % (c["variant"], c["compile_s"], CHECK_NEW,
                              "prints the same ids as" if c["ok"] else "DIFFERS FROM", c["distinct"], c["margin"],
                              " ".join(map(str, c["ids"]))))
    header = [
        "Measured %s on %s (%d CPUs; %s; L2 %s, L3 %s), load average %s at the start and %s at the end; "
        "%.0f s in all." % (now, mach["model"], mach["cpus"], mach["isa"], mach["l2"], mach["l3"],
                            load[0], load[1], elapsed),
        "tfm commit %s (%s, Highway backend, the default)." % (commit(), os.path.relpath(a.tfm_compile, ROOT)),
        "Model: GPT2LMHeadModel, n_embd 768, n_head 12, n_layer 12, n_positions 1024, vocab 50257, fp32, "
        "seeded random weights (seed %d), save_pretrained(safe_serialization=True): %.1f MB of model.safetensors. "
        "Prompts of random ids, batch 1." % (a.seed, os.path.getsize(weights_file) * 1e-6),
        "Ids check (a %d-token prompt, %d new tokens): " % (CHECK_PROMPT, CHECK_NEW) + " / ".join(check_lines),
        "transformers %s on PyTorch %s (ATen CPU capability %s, BLAS %s, OpenBLAS kernels %s), OMP_WAIT_POLICY=PASSIVE, "
        "OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = torch.set_num_threads = thr; one model(input_ids=token, "
        "past_key_values=..., use_cache=True) call per step, its argmax included; GPT-2's legacy tuple cache, "
        "concatenated each step." % (info["transformers"], info["torch"], info["cpu_capability"],
                                    " ".join(info.get("blas", [])) or "?", info.get("openblas_core")),
        "Timing: `spread` folder; %d interleaved runs per row (tool order alternating), each a prefill over the "
        "context and %d decode steps at cache lengths context+1 .. context+%d; a run's figure is its mean ms per "
        "decode step (tfm: 1000 / decode_tok_s), the row shows the median and the min over runs."
        % (a.runs, N - 1, N - 1),
    ]
    if bw_exe:
        header.append(
            "Bound: bytes per step (%.1f MB of fp32 weights: every layer, ln_f, the tied LM head read once, one "
            "token and one position row; + %.1f KB of k/v per cached position, at the mean cache length) / the "
            "best read bandwidth of bench/bandwidth.cpp (1 GiB, best of 5 reps, measured before the first run and "
            "after each): %s." % (weight_bytes * 1e-6, kv_per_pos * 1e-3, ", ".join(
                "%d thread%s %.1f GB/s (%s)" % (t, "s" if t > 1 else "", max(b), ", ".join("%.1f" % x for x in b))
                for t, b in bw_runs.items())))
    fast = ["%s ctx %d t=%d" % (tool, r["ctx"], r["threads"]) for r in rows for tool in ("tfm", "hf")
            if r[tool] and r["bound"] and r[tool]["min"] < r["bound"]]
    if fast:
        notes.append("faster than the bound (%s): the bandwidth was measured while the machine was busier "
                     "(or part of the bytes stayed in a cache)" % ", ".join(fast))
    for t, b in bw_runs.items():
        if b and min(b) < 0.85 * max(b):
            notes.append("the read bandwidth at %d thread%s ranged from %.1f to %.1f GB/s over the run: the "
                         "machine's load changed while it ran" % (t, "s" if t > 1 else "", min(b), max(b)))
    if not info.get("openblas_core"):
        notes.append("torch's BLAS is not OpenBLAS (%s): with Debian's reference libblas3, transformers' matmuls "
                     "run at a few GFLOP/s; install libopenblas0-pthread (scripts/install-deps.sh --bench) or pass "
                     "--blas-dir" % (", ".join(info.get("blas", [])) or "none found"))
    notes = errors + notes
    print()
    print("\n".join(header))
    print()
    print(bench.render_text(columns, cells, left=1))
    if notes:
        print()
        print("\n".join("note: " + n for n in notes))
    md = ["# tfm benchmark: a Hugging Face GPT-2-small folder, decode step against transformers", "",
          "Written by `bench/hf_decode.py` (see bench/README.md, \"Hugging Face GPT-2 decode\"). "
          "Times are per decode step, in ms.", ""]
    md += ["- " + h for h in header] + ["", bench.render_md(columns, cells, left=1), ""]
    md += ["Per-run figures (ms per decode step, in run order):", ""]
    for r in rows:
        md.append("- context %d, %d thread%s: tfm %s; transformers %s" % (
            r["ctx"], r["threads"], "s" if r["threads"] > 1 else "",
            " ".join("%.2f" % x for x in r["tfm"]["runs"]) if r["tfm"] else "-",
            " ".join("%.2f" % x for x in r["hf"]["runs"]) if r["hf"] else "-"))
    md.append("")
    if notes:
        md += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        fh.write("\n".join(md))
    print()
    print("hf_decode: wrote %s" % os.path.relpath(a.out, os.getcwd()))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
