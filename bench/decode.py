"""bench/: decode-step latency of gpt2-small (examples/gpt2-small.json).

Run through bench/run.sh (all of bench, this included) or
`bench/run.sh --only decode` (this alone); bench.py calls run().

At cache lengths of about 128 and 1024, batch 1, for each thread count:
  * tfm: gpt2-small compiled once per weight format of --weight-dtypes
    (`tfm-compile ... --weight-dtype=f32|bf16|f16|int8`, default f32, bf16
    and int8), each executable's `--generate N` on a prompt of P tokens: its
    decode_tok_s line gives the mean time of its N - 1 decode steps, which
    run at cache lengths P + 1 .. P + N - 1;
  * torch: bench/decode_worker.py, GPT-2-small written by hand with a
    preallocated key/value cache, fp32, the same prompt and the same N;
  * the memory-bandwidth bound of each format: the bytes one step must read
    (the GEMM weights in that format, the other parameters fp32, the cache)
    / the read bandwidth that bench/bandwidth.cpp measures.
Every run goes over all rows and, within a row, all formats and torch, so
the ratios between formats are from the same run.
Results: tables on stdout, bench/results/decode.md and decode.json.
"""

import datetime
import json
import os
import statistics
import sys
import time

import numpy as np

import bench
from bench import HERE, ROOT, log

MODEL = os.path.join(ROOT, "examples", "gpt2-small.json")
CACHE_LENGTHS = (128, 1024)
COLUMNS = ["cache", "thr", "tfm med ms", "tfm min ms", "torch med ms", "torch min ms", "torch/tfm",
           "bound ms", "bound/tfm", "bound/torch"]
FORMAT_COLUMNS = ["cache", "thr", "weights", "MB/step", "med ms", "min ms", "bound ms", "bound/med",
                  "bound goal", "f32/this med", "f32/this min", "speed-up goal"]
CACHE_COLUMNS = ["thr", "weights", "cache 128 med ms", "cache 1024 med ms", "1024/128 med", "1024/128 min",
                 "goal"]
# Bytes per GEMM weight value: int8 keeps one f32 scale per 32 input columns.
VALUE_BYTES = {"f32": 4.0, "bf16": 2.0, "f16": 2.0, "int8": 1.0 + 4.0 / 32}
# Issue 25's goals. bound: the fraction of the format's own bandwidth bound a
# step's median reaches (f32 85 %; bf16, int8 within 1.25x: 80 %); speed-up:
# tfm f32's median / the format's; cache: tfm f32's median at cache 1024 /
# at cache 128.
BOUND_GOAL = {"f32": 0.85, "bf16": 1 / 1.25, "int8": 1 / 1.25}
SPEEDUP_GOAL = {"bf16": 1.7, "int8": 3.0}
CACHE_GOAL = {"f32": 1.15}


def step_bytes(desc, fmt="f32"):
    """What one decode step reads: dict(gemm_values: the GEMM weights (every
    layer's attention in/out projections and FFN linears, and the LM head:
    the tied embedding, read once), other_values: every other parameter a
    step reads (biases, norms, the final norm, one row each of the token and
    position embeddings), both counts of values; weight_bytes: the GEMM
    weights at `fmt`'s bytes a value, the rest fp32; kv_bytes_per_position:
    each layer's fp32 k and v of one cached position)."""
    d, f, layers, vocab = desc["d_model"], desc["d_ff"], desc["num_layers"], desc["vocab_size"]
    gemm = layers * (3 * d * d + d * d + d * f + f * d) + vocab * d
    other = layers * (3 * d + d + f + d + 2 * 2 * d) + 2 * d + d + d
    return dict(gemm_values=gemm, other_values=other, bytes_per_gemm_value=VALUE_BYTES[fmt],
                weight_bytes=VALUE_BYTES[fmt] * gemm + 4 * other, kv_bytes_per_position=4 * layers * 2 * d)


def prompt_length(target, steps, max_len):
    """The prompt length P whose decode steps (cache lengths P+1 .. P+steps)
    are centred on `target`, within the compiled maximum (P + steps + 1
    tokens in all)."""
    return max(1, min(target - (steps + 1) // 2, max_len - steps - 1))


def measure_bandwidth(exe, threads):
    rc, so, se = bench.run([exe, "--threads", str(threads), "--mib", "1024", "--reps", "5"])
    kv = bench.last_line(so, "bandwidth: ")
    if rc or kv is None:
        sys.exit("bench: bandwidth failed: %s%s" % (so, se))
    return float(kv["gbytes_s"])


def median_min(values):
    return dict(median_ms=statistics.median(values), min_ms=min(values), runs=len(values))


def dirty_outside_bench(src):
    """Tracked files of the source tree with uncommitted changes outside
    bench/ (what "+dirty" is, beyond this benchmark's own files)."""
    rc, so, _ = bench.run(["git", "-C", src, "status", "--porcelain", "--untracked-files=no"])
    if rc:
        return []
    return [l[3:] for l in so.splitlines() if l[3:] and not l[3:].startswith("bench/")]


def met(ok):
    return "met" if ok else "NOT met"


def run(a):
    """Measures, prints the tables, writes decode.md and decode.json; returns
    the exit status (1 when something went wrong)."""
    t_start = time.time()
    work = os.path.join(os.path.abspath(a.work_dir), "decode")
    os.makedirs(work, exist_ok=True)
    with open(MODEL) as f:
        desc = json.load(f)
    steps = a.decode_steps
    formats = list(getattr(a, "weight_dtypes", None) or ["f32"])
    blas_dir = getattr(a, "blas_dir", None)
    load = [open("/proc/loadavg").read().split()[0], "?"]
    errors = []

    bw_exe = os.path.join(work, "bandwidth")
    bench.build_cxx(os.path.join(HERE, "bandwidth.cpp"), bw_exe, ["-O3", "-pthread"])
    log("bench decode: read bandwidth")
    bw_runs = {t: [measure_bandwidth(bw_exe, t)] for t in a.threads}

    # One executable per weight format, compiled afresh by this run (an
    # earlier run's executable is removed first, never reused).
    exes, compiled = {}, {}
    def mtime(path):
        return datetime.datetime.fromtimestamp(os.path.getmtime(path)).strftime("%Y-%m-%d %H:%M:%S")

    tfm_compile_mtime = mtime(a.tfm_compile)
    # The runtime library the executables link (the GEMM kernels): rebuilt
    # apart from tfm-compile, so its time is reported too.
    runtime_lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.tfm_compile))),
                               "runtime", "libtfm_runtime.a")
    runtime_mtime = mtime(runtime_lib) if os.path.exists(runtime_lib) else None
    for fmt in formats:
        exe = os.path.join(work, "gpt2_small_%s.exe" % fmt)
        if os.path.exists(exe):
            os.remove(exe)
        log("bench decode: tfm-compile --weight-dtype=%s" % fmt)
        t0 = time.time()
        rc, so, se = bench.run([a.tfm_compile, MODEL, "-o", exe, "--weight-dtype=" + fmt])
        if rc or not os.path.exists(exe):
            errors.append("COMPILE FAILURE %s --weight-dtype=%s (exit %d): %s"
                          % (os.path.relpath(MODEL, ROOT), fmt, rc, se.strip()[-500:]))
            continue
        exes[fmt] = exe
        compiled[fmt] = dict(at=datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
                             seconds=time.time() - t0, bytes=os.path.getsize(exe))
    configs, prompts = [], {}
    for c in CACHE_LENGTHS:
        p = prompt_length(c, steps, desc["max_seq_len"])
        prompts[c] = os.path.join(work, "prompt_%d.npy" % p)
        ids = np.random.default_rng(p).integers(0, desc["vocab_size"], size=(1, p), dtype=np.int64)
        np.save(prompts[c], ids)
        configs += [(c, p, t) for t in a.threads]

    log("bench decode: starting the torch workers")
    policy = None if a.omp_wait_policy == "default" else a.omp_wait_policy
    workers = {t: bench.TorchWorker(t, policy, script="decode_worker.py", blas_dir=blas_dir) for t in a.threads}
    tools = ["tfm-" + fmt for fmt in formats] + ["torch"]
    tfm_runs = {(k, fmt): [] for k in configs for fmt in formats}
    torch_runs = {k: [] for k in configs}
    try:
        torch_info = workers[a.threads[0]].call(op="info")
        for w in workers.values():
            w.call(op="load", model=MODEL)
        for rnd in range(a.decode_runs):
            log("bench decode: run %d of %d" % (rnd + 1, a.decode_runs))
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
            # Every row runs all its tools back to back; which goes first rotates.
            tool_order = tools[rnd % len(tools):] + tools[:rnd % len(tools)]
            for c, p, t in order:
                for tool in tool_order:
                    if tool == "torch":
                        ans = workers[t].call(op="run", prompt=prompts[c], new_tokens=steps + 1)
                        torch_runs[(c, p, t)].append(dict(
                            ms=statistics.mean(ans["step_ms"]), step_ms=ans["step_ms"],
                            prefill_tok_s=p / ans["prefill_ms"] * 1e3))
                        log("  cache %4d t=%d  torch       %7.2f ms/step" % (c, t, torch_runs[(c, p, t)][-1]["ms"]))
                        continue
                    fmt = tool[4:]
                    key = ((c, p, t), fmt)
                    if fmt not in exes or tfm_runs[key] is None:
                        continue
                    cmd = [exes[fmt], "--generate", str(steps + 1), "--input", "input=" + prompts[c],
                           "--threads", str(t), "--output", os.path.join(work, "ids_%s_%d_t%d.npy" % (fmt, c, t))]
                    rc, so, se = bench.run(cmd)
                    kv = bench.last_line(so, "generate: ")
                    if (rc or kv is None or int(kv["new_tokens"]) != steps + 1 or int(kv["threads"]) != t
                            or not float(kv["decode_tok_s"]) > 0):
                        errors.append("tfm --generate failed or misreported (exit %d): %s: %s %s"
                                      % (rc, " ".join(cmd), (kv or so.strip()[-300:]), se.strip()[-300:]))
                        tfm_runs[key] = None
                        continue
                    tfm_runs[key].append(dict(ms=1e3 / float(kv["decode_tok_s"]),
                                              prefill_tok_s=float(kv["prefill_tok_s"])))
                    log("  cache %4d t=%d  tfm %-7s %7.2f ms/step" % (c, t, fmt, tfm_runs[key][-1]["ms"]))
            # The bandwidth again after every run: the best is the machine's.
            for t in a.threads:
                bw_runs[t].append(measure_bandwidth(bw_exe, t))
    finally:
        for w in workers.values():
            w.close()
    load[1] = open("/proc/loadavg").read().split()[0]

    sizes = {fmt: step_bytes(desc, fmt) for fmt in set(formats) | {"f32"}}
    kv_bytes_per_pos = sizes["f32"]["kv_bytes_per_position"]
    rows = []
    for c, p, t in configs:
        bw = max(bw_runs[t])
        mean_cache = p + (steps + 1) / 2.0

        def bound(fmt):
            b = sizes[fmt]["weight_bytes"] + kv_bytes_per_pos * mean_cache
            return b, b / (bw * 1e9) * 1e3

        step_b, bound_ms = bound("f32")
        row = dict(cache=c, prompt=p, cache_lengths=[p + 1, p + steps], threads=t, steps=steps,
                   bandwidth_gbytes_s=bw, bytes_per_step=step_b, bound_ms=bound_ms,
                   tfm=None, torch=None, formats={})
        for fmt in formats:
            b, bms = bound(fmt)
            e = dict(bytes_per_step=b, bound_ms=bms, tfm=None)
            rs = tfm_runs[((c, p, t), fmt)]
            if rs:
                e["tfm"] = dict(median_min([r["ms"] for r in rs]), per_run=rs)
                e["bound_over_tfm"] = bms / e["tfm"]["median_ms"]
                if fmt in BOUND_GOAL:
                    e["bound_goal"] = BOUND_GOAL[fmt]
                    e["bound_goal_met"] = e["bound_over_tfm"] >= BOUND_GOAL[fmt]
            row["formats"][fmt] = e
        f32 = row["formats"].get("f32", {}).get("tfm")
        for fmt, e in row["formats"].items():
            if f32 and e["tfm"] and fmt != "f32":
                e["speedup_vs_f32"] = f32["median_ms"] / e["tfm"]["median_ms"]
                e["speedup_vs_f32_min"] = f32["min_ms"] / e["tfm"]["min_ms"]
                # Paired within each run: f32's time / this format's in the same run.
                e["speedup_vs_f32_per_run"] = [x["ms"] / y["ms"] for x, y in zip(f32["per_run"], e["tfm"]["per_run"])]
                if fmt in SPEEDUP_GOAL:
                    e["speedup_goal"] = SPEEDUP_GOAL[fmt]
                    e["speedup_goal_met"] = e["speedup_vs_f32"] >= SPEEDUP_GOAL[fmt]
        if f32:
            row["tfm"] = f32
            row["bound_over_tfm"] = bound_ms / f32["median_ms"]
        rs = torch_runs[(c, p, t)]
        if rs:
            every = [s for r in rs for s in r["step_ms"]]
            row["torch"] = dict(median_min([r["ms"] for r in rs]), per_run=rs,
                                step_median_ms=statistics.median(every), step_min_ms=min(every))
            row["bound_over_torch"] = bound_ms / row["torch"]["median_ms"]
            if row["tfm"]:
                row["ratio_torch_tfm"] = row["torch"]["median_ms"] / row["tfm"]["median_ms"]
        rows.append(row)

    # cache 1024 against cache 128, per thread count and format.
    by = {(r["cache"], r["threads"]): r for r in rows}
    cache_rows = []
    for t in a.threads:
        for fmt in formats:
            lo = by.get((CACHE_LENGTHS[0], t), {}).get("formats", {}).get(fmt, {}).get("tfm")
            hi = by.get((CACHE_LENGTHS[-1], t), {}).get("formats", {}).get(fmt, {}).get("tfm")
            if not (lo and hi):
                continue
            cr = dict(threads=t, format=fmt, cache128_median_ms=lo["median_ms"], cache1024_median_ms=hi["median_ms"],
                      ratio=hi["median_ms"] / lo["median_ms"], ratio_min=hi["min_ms"] / lo["min_ms"])
            if fmt in CACHE_GOAL:
                cr["goal"] = CACHE_GOAL[fmt]
                cr["goal_met"] = cr["ratio"] <= CACHE_GOAL[fmt]
            cache_rows.append(cr)

    # -- the report ------------------------------------------------------------
    def ms(r, key):  # median and best
        return [bench.fmt_ms(r[key] and r[key]["median_ms"]), bench.fmt_ms(r[key] and r[key]["min_ms"])]

    def ratio(r, key, percent=False, digits=0):
        # The goal tables get a digit more, so that a figure printed at the
        # goal is not read as meeting it.
        return ("-" if key not in r else "%.*f%%" % (digits, 100 * r[key]) if percent
                else "%.*f" % (digits or 2, r[key]))

    def cache_cell(r):
        return "%d (%d-%d)" % (r["cache"], *r["cache_lengths"])

    cells = [[cache_cell(r), str(r["threads"]), *ms(r, "tfm"), *ms(r, "torch"),
              ratio(r, "ratio_torch_tfm"), "%.2f" % r["bound_ms"],
              ratio(r, "bound_over_tfm", True), ratio(r, "bound_over_torch", True)] for r in rows]
    fcells = []
    for r in rows:
        for fmt, e in r["formats"].items():
            bg = ("-" if "bound_goal" not in e else
                  ">= %.0f%%: %s" % (100 * e["bound_goal"], met(e["bound_goal_met"])))
            sg = ("-" if "speedup_goal" not in e else
                  ">= %.1fx: %s" % (e["speedup_goal"], met(e["speedup_goal_met"])))
            fcells.append([cache_cell(r), str(r["threads"]), fmt, "%.1f" % (e["bytes_per_step"] * 1e-6),
                           *ms(e, "tfm"), "%.2f" % e["bound_ms"], ratio(e, "bound_over_tfm", True, 1), bg,
                           "1" if fmt == "f32" and e["tfm"] else ratio(e, "speedup_vs_f32", digits=3),
                           "1" if fmt == "f32" and e["tfm"] else ratio(e, "speedup_vs_f32_min", digits=3), sg])
    ccells = [[str(cr["threads"]), cr["format"], bench.fmt_ms(cr["cache128_median_ms"]),
               bench.fmt_ms(cr["cache1024_median_ms"]), "%.3f" % cr["ratio"], "%.3f" % cr["ratio_min"],
               "-" if "goal" not in cr else "<= %.2f: %s" % (cr["goal"], met(cr["goal_met"]))]
              for cr in cache_rows]

    src, commit = bench.tfm_source(a.tfm_compile)
    dirty = dirty_outside_bench(src) if commit.endswith("+dirty") else []
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    elapsed = time.time() - t_start
    gemm, other = sizes["f32"]["gemm_values"], sizes["f32"]["other_values"]
    header = [
        "Measured %s on %s (%s; %d CPUs, load average %s at the start, %s at the end), tfm %s (%s, built %s%s, "
        "from %s%s); gpt2-small (examples/gpt2-small.json), batch 1, %d runs of %d decode steps per row, "
        "%.0f s in all."
        % (now, bench.cpu_model(), bench.cpu_isa(), os.cpu_count(), load[0], load[1], commit, a.tfm_compile,
           tfm_compile_mtime, ", its runtime library %s" % runtime_mtime if runtime_mtime else "", src,
           "; uncommitted changes outside bench/: " + ", ".join(dirty) if dirty else "",
           a.decode_runs, steps, elapsed),
        "tfm weight formats (`tfm-compile --weight-dtype=`, compiled by this run): %s; within each run every row "
        "runs each format and torch back to back (which goes first rotates)."
        % ", ".join("%s (at %s)" % (fmt, compiled[fmt]["at"][11:]) if fmt in compiled else "%s (FAILED)" % fmt
                    for fmt in formats),
        "Read bandwidth (bandwidth.cpp, sum over a 1 GiB buffer, best of 5 reps, measured before the first run "
        "and after each; the best is used): %s."
        % ", ".join("%d thread%s %.2f GB/s (%s)" % (t, "s" if t > 1 else "", max(b), ", ".join("%.2f" % x for x in b))
                    for t, b in bw_runs.items()),
        "Bytes per step: the weights, %s (%.2f M GEMM weight values: every layer's attention in/out projections "
        "and FFN linears and the tied LM head's %dx%d embedding read once, at 4 / 2 / 1 + 4/32 bytes a value; "
        "%.1f K other values, fp32: biases, norms, one token and one position row; tfm's packed panels are "
        "assumed to hold the same bytes), + %.1f KB of fp32 k/v cache per cached position (at the mean cache "
        "length of the row)."
        % (", ".join("%s %.1f MB" % (fmt, sizes[fmt]["weight_bytes"] * 1e-6) for fmt in formats),
           gemm * 1e-6, desc["vocab_size"], desc["d_model"], other * 1e-3, kv_bytes_per_pos * 1e-3),
        "PyTorch %s (ATen CPU capability %s, OpenBLAS kernels %s%s, OMP_WAIT_POLICY %s): bench/decode_worker.py, "
        "fp32, a preallocated k/v cache, torch.no_grad()."
        % (torch_info["torch"], torch_info["cpu_capability"], torch_info.get("openblas_core"),
           " from --blas-dir " + blas_dir if blas_dir else "",
           torch_info["env"].get("OMP_WAIT_POLICY") or "unset"),
    ]
    goals = []
    for r in rows:
        for fmt, e in r["formats"].items():
            where = "cache %d, %d thread%s, %s" % (r["cache"], r["threads"], "s" if r["threads"] > 1 else "", fmt)
            if "bound_goal" in e:
                goals.append((e["bound_goal_met"], "%s: bound/step %.1f%% (goal >= %.0f%%)"
                              % (where, 100 * e["bound_over_tfm"], 100 * e["bound_goal"])))
            if "speedup_goal" in e:
                goals.append((e["speedup_goal_met"], "%s: %.3fx tfm f32 (goal >= %.1fx)"
                              % (where, e["speedup_vs_f32"], e["speedup_goal"])))
    for cr in cache_rows:
        if "goal" in cr:
            goals.append((cr["goal_met"], "%d thread%s, %s: cache 1024 / cache 128 = %.3f (goal <= %.2f)"
                          % (cr["threads"], "s" if cr["threads"] > 1 else "", cr["format"], cr["ratio"], cr["goal"])))
    goal_lines = ["%s: %s" % (met(ok), text) for ok, text in goals]
    notes = list(errors)
    if not torch_info.get("openblas_core"):
        notes.append("PyTorch's BLAS is not OpenBLAS (%s): its matrix-vector products run at reference-BLAS "
                     "speed; pass --blas-dir (bench/README.md)" % ", ".join(torch_info.get("blas", [])))
    fast = ["tfm %s %d t=%d" % (fmt, r["cache"], r["threads"]) for r in rows for fmt, e in r["formats"].items()
            if e["tfm"] and e["tfm"]["min_ms"] < e["bound_ms"]]
    fast += ["torch %d t=%d" % (r["cache"], r["threads"]) for r in rows
             if r["torch"] and r["torch"]["min_ms"] < r["bound_ms"]]
    if fast:
        notes.append("faster than the bound (%s): the bandwidth measurements all ran while the machine was "
                     "busier than during those runs (or part of the bytes stayed in a cache)" % ", ".join(fast))
    for t, b in bw_runs.items():
        if min(b) < 0.85 * max(b):
            notes.append("the read bandwidth at %d thread%s ranged from %.1f to %.1f GB/s over the run: the "
                         "machine's load changed while it ran" % (t, "s" if t > 1 else "", min(b), max(b)))
    print()
    print("\n".join(header))
    print()
    print("tfm f32 and PyTorch:")
    print(bench.render_text(COLUMNS, cells, left=1))
    print()
    print("tfm weight formats:")
    print(bench.render_text(FORMAT_COLUMNS, fcells, left=3))
    if ccells:
        print()
        print("cache 1024 against cache 128:")
        print(bench.render_text(CACHE_COLUMNS, ccells, left=2))
    if goal_lines:
        print()
        print("\n".join("goal " + g for g in goal_lines))
    if notes:
        print()
        print("\n".join("note: " + n for n in notes))
    os.makedirs(a.out_dir, exist_ok=True)
    md = ["# tfm benchmark: decode-step latency, gpt2-small", "",
          "Written by `bench/run.sh --only decode` (or the full `bench/run.sh`); see bench/README.md, "
          "\"Decode latency\", for what the columns mean. Times are per decode step, in ms.", ""]
    md += ["- " + h for h in header]
    md += ["", "tfm f32 against PyTorch (fp32) and the f32 bound:", "", bench.render_md(COLUMNS, cells, left=1), ""]
    md += ["tfm's weight formats, each against its own bound and tfm f32 in the same run:", "",
           bench.render_md(FORMAT_COLUMNS, fcells, left=3), ""]
    if ccells:
        md += ["Cache 1024 against cache 128 (medians; min: the best runs):", "",
               bench.render_md(CACHE_COLUMNS, ccells, left=2), ""]
    if goal_lines:
        md += ["Goals (issue 25; medians):", ""] + ["- " + g for g in goal_lines] + [""]
    if notes:
        md += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    with open(os.path.join(a.out_dir, "decode.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(a.out_dir, "decode.json"), "w") as f:
        json.dump(dict(date=now, cpu=bench.cpu_model(), cpu_isa=bench.cpu_isa(), cpus=os.cpu_count(),
                       load_average=load, tfm_commit=commit, tfm_source=src, tfm_compile=a.tfm_compile,
                       tfm_compile_mtime=tfm_compile_mtime, runtime_library_mtime=runtime_mtime, uncommitted_outside_bench=dirty,
                       weight_dtypes=formats, compiled=compiled, model=desc, elapsed_s=elapsed,
                       weight_bytes_per_step=sizes["f32"]["weight_bytes"],
                       step_bytes={fmt: sizes[fmt] for fmt in formats},
                       kv_bytes_per_cached_position=kv_bytes_per_pos,
                       bandwidth_gbytes_s={str(t): b for t, b in bw_runs.items()}, blas_dir=blas_dir,
                       torch=torch_info, goals=[dict(met=ok, goal=text) for ok, text in goals],
                       notes=notes, rows=rows, cache_ratios=cache_rows), f, indent=1)
    print()
    print("bench: wrote %s/decode.md, decode.json" % a.out_dir)
    return 1 if errors else 0
