"""bench/: decode-step latency of gpt2-small (examples/gpt2-small.json).

Run through bench/run.sh (all of bench, this included) or
`bench/run.sh --only decode` (this alone); bench.py calls run().

At cache lengths of about 128 and 1024, batch 1, for each thread count:
  * tfm: the compiled gpt2-small executable's `--generate N` on a prompt of
    P tokens: its decode_tok_s line gives the mean time of its N - 1 decode
    steps, which run at cache lengths P + 1 .. P + N - 1;
  * torch: bench/decode_worker.py, GPT-2-small written by hand with a
    preallocated key/value cache, the same prompt and the same N;
  * the memory-bandwidth bound: the bytes one step must read (the weights
    and the cache) / the read bandwidth that bench/bandwidth.cpp measures.
Results: a table on stdout, bench/results/decode.md and decode.json.
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


def step_bytes(desc):
    """(weight bytes, cache bytes per cached position) that one decode step
    reads, fp32: every layer's parameters, the final norm, the LM head (the
    tied embedding, read once) and one row each of the token and position
    embeddings; each layer's k and v of every cached position."""
    d, f, layers, vocab = desc["d_model"], desc["d_ff"], desc["num_layers"], desc["vocab_size"]
    layer = (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d
    weights = layers * layer + 2 * d + vocab * d + 2 * d
    return 4 * weights, 4 * layers * 2 * d


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


def run(a):
    """Measures, prints the table, writes decode.md and decode.json; returns
    the exit status (1 when something went wrong)."""
    t_start = time.time()
    work = os.path.join(os.path.abspath(a.work_dir), "decode")
    os.makedirs(work, exist_ok=True)
    with open(MODEL) as f:
        desc = json.load(f)
    steps = a.decode_steps
    load = [open("/proc/loadavg").read().split()[0], "?"]
    errors = []

    bw_exe = os.path.join(work, "bandwidth")
    bench.build_cxx(os.path.join(HERE, "bandwidth.cpp"), bw_exe, ["-O3", "-pthread"])
    log("bench decode: read bandwidth")
    bw_runs = {t: [measure_bandwidth(bw_exe, t)] for t in a.threads}

    exe = os.path.join(work, "gpt2_small.exe")
    rc, so, se = bench.run([a.tfm_compile, MODEL, "-o", exe])
    if rc:
        errors.append("COMPILE FAILURE %s (exit %d): %s" % (os.path.relpath(MODEL, ROOT), rc, se.strip()[-500:]))
        exe = None
    configs, prompts = [], {}
    for c in CACHE_LENGTHS:
        p = prompt_length(c, steps, desc["max_seq_len"])
        prompts[c] = os.path.join(work, "prompt_%d.npy" % p)
        ids = np.random.default_rng(p).integers(0, desc["vocab_size"], size=(1, p), dtype=np.int64)
        np.save(prompts[c], ids)
        configs += [(c, p, t) for t in a.threads]

    log("bench decode: starting the torch workers")
    policy = None if a.omp_wait_policy == "default" else a.omp_wait_policy
    workers = {t: bench.TorchWorker(t, policy, script="decode_worker.py") for t in a.threads}
    tfm_runs = {k: [] for k in configs}
    torch_runs = {k: [] for k in configs}
    try:
        torch_info = workers[a.threads[0]].call(op="info")
        for w in workers.values():
            w.call(op="load", model=MODEL)
        for rnd in range(a.decode_runs):
            log("bench decode: run %d of %d" % (rnd + 1, a.decode_runs))
            order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
            for c, p, t in order:
                for tool in (("tfm", "torch") if rnd % 2 == 0 else ("torch", "tfm")):
                    if tool == "torch":
                        ans = workers[t].call(op="run", prompt=prompts[c], new_tokens=steps + 1)
                        torch_runs[(c, p, t)].append(dict(
                            ms=statistics.mean(ans["step_ms"]), step_ms=ans["step_ms"],
                            prefill_tok_s=p / ans["prefill_ms"] * 1e3))
                        log("  cache %4d t=%d  torch  %7.2f ms/step" % (c, t, torch_runs[(c, p, t)][-1]["ms"]))
                        continue
                    if exe is None or tfm_runs[(c, p, t)] is None:
                        continue
                    cmd = [exe, "--generate", str(steps + 1), "--input", "input=" + prompts[c],
                           "--threads", str(t), "--output", os.path.join(work, "ids_%d_t%d.npy" % (c, t))]
                    rc, so, se = bench.run(cmd)
                    kv = bench.last_line(so, "generate: ")
                    if (rc or kv is None or int(kv["new_tokens"]) != steps + 1 or int(kv["threads"]) != t
                            or not float(kv["decode_tok_s"]) > 0):
                        errors.append("tfm --generate failed or misreported (exit %d): %s: %s %s"
                                      % (rc, " ".join(cmd), (kv or so.strip()[-300:]), se.strip()[-300:]))
                        tfm_runs[(c, p, t)] = None
                        continue
                    tfm_runs[(c, p, t)].append(dict(ms=1e3 / float(kv["decode_tok_s"]),
                                                    prefill_tok_s=float(kv["prefill_tok_s"])))
                    log("  cache %4d t=%d  tfm    %7.2f ms/step" % (c, t, tfm_runs[(c, p, t)][-1]["ms"]))
            # The bandwidth again after every run: the best is the machine's.
            for t in a.threads:
                bw_runs[t].append(measure_bandwidth(bw_exe, t))
    finally:
        for w in workers.values():
            w.close()
    load[1] = open("/proc/loadavg").read().split()[0]

    weight_bytes, kv_bytes_per_pos = step_bytes(desc)
    rows = []
    for c, p, t in configs:
        bw = max(bw_runs[t])
        mean_cache = p + (steps + 1) / 2.0
        step_b = weight_bytes + kv_bytes_per_pos * mean_cache
        row = dict(cache=c, prompt=p, cache_lengths=[p + 1, p + steps], threads=t, steps=steps,
                   bandwidth_gbytes_s=bw, bytes_per_step=step_b, bound_ms=step_b / (bw * 1e9) * 1e3,
                   tfm=None, torch=None)
        if tfm_runs[(c, p, t)]:
            rs = tfm_runs[(c, p, t)]
            row["tfm"] = dict(median_min([r["ms"] for r in rs]), per_run=rs)
            row["bound_over_tfm"] = row["bound_ms"] / row["tfm"]["median_ms"]
        rs = torch_runs[(c, p, t)]
        if rs:
            every = [s for r in rs for s in r["step_ms"]]
            row["torch"] = dict(median_min([r["ms"] for r in rs]), per_run=rs,
                                step_median_ms=statistics.median(every), step_min_ms=min(every))
            row["bound_over_torch"] = row["bound_ms"] / row["torch"]["median_ms"]
            if row["tfm"]:
                row["ratio_torch_tfm"] = row["torch"]["median_ms"] / row["tfm"]["median_ms"]
        rows.append(row)

    # -- the report ------------------------------------------------------------
    def ms(r, key):  # median and best
        return [bench.fmt_ms(r[key] and r[key]["median_ms"]), bench.fmt_ms(r[key] and r[key]["min_ms"])]

    def ratio(r, key, percent=False):
        return "-" if key not in r else "%.0f%%" % (100 * r[key]) if percent else "%.2f" % r[key]

    cells = [["%d (%d-%d)" % (r["cache"], *r["cache_lengths"]), str(r["threads"]), *ms(r, "tfm"), *ms(r, "torch"),
              ratio(r, "ratio_torch_tfm"), "%.2f" % r["bound_ms"],
              ratio(r, "bound_over_tfm", True), ratio(r, "bound_over_torch", True)] for r in rows]
    src, commit = bench.tfm_source(a.tfm_compile)
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    elapsed = time.time() - t_start
    header = [
        "Measured %s on %s (%d CPUs, load average %s at the start, %s at the end), tfm %s (%s, built from %s); "
        "gpt2-small (examples/gpt2-small.json), batch 1, fp32, %d runs of %d decode steps per row, %.0f s in all."
        % (now, bench.cpu_model(), os.cpu_count(), load[0], load[1], commit, a.tfm_compile, src,
           a.decode_runs, steps, elapsed),
        "Read bandwidth (bandwidth.cpp, sum over a 1 GiB buffer, best of 5 reps, measured before the first run "
        "and after each; the best is used): %s."
        % ", ".join("%d thread%s %.2f GB/s (%s)" % (t, "s" if t > 1 else "", max(b), ", ".join("%.2f" % x for x in b))
                    for t, b in bw_runs.items()),
        "Bytes per step: %.1f MB of fp32 weights (every layer, the final norm, the tied LM head's %dx%d "
        "embedding read once, one token and one position row; tfm keeps its weights packed, the bytes are "
        "assumed the same) + %.1f KB of k/v cache per cached position (at the mean cache length of the row)."
        % (weight_bytes * 1e-6, desc["vocab_size"], desc["d_model"], kv_bytes_per_pos * 1e-3),
        "PyTorch %s (ATen CPU capability %s, OpenBLAS kernels %s, OMP_WAIT_POLICY %s): bench/decode_worker.py, "
        "a preallocated k/v cache, torch.no_grad()."
        % (torch_info["torch"], torch_info["cpu_capability"], torch_info.get("openblas_core"),
           torch_info["env"].get("OMP_WAIT_POLICY") or "unset"),
    ]
    notes = list(errors)
    fast = ["%s %d t=%d" % (tool, r["cache"], r["threads"]) for r in rows for tool in ("tfm", "torch")
            if r[tool] and r[tool]["min_ms"] < r["bound_ms"]]
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
    print(bench.render_text(COLUMNS, cells, left=1))
    if notes:
        print()
        print("\n".join("note: " + n for n in notes))
    os.makedirs(a.out_dir, exist_ok=True)
    md = ["# tfm benchmark: decode-step latency, gpt2-small", "",
          "Written by `bench/run.sh --only decode` (or the full `bench/run.sh`); see bench/README.md, "
          "\"Decode latency\", for what the columns mean. Times are per decode step, in ms.", ""]
    md += ["- " + h for h in header] + ["", bench.render_md(COLUMNS, cells, left=1), ""]
    if notes:
        md += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    with open(os.path.join(a.out_dir, "decode.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(a.out_dir, "decode.json"), "w") as f:
        json.dump(dict(date=now, cpu=bench.cpu_model(), cpus=os.cpu_count(), load_average=load,
                       tfm_commit=commit, tfm_source=src, model=desc, elapsed_s=elapsed,
                       weight_bytes_per_step=weight_bytes, kv_bytes_per_cached_position=kv_bytes_per_pos,
                       bandwidth_gbytes_s={str(t): b for t, b in bw_runs.items()},
                       torch=torch_info, notes=notes, rows=rows), f, indent=1)
    print()
    print("bench: wrote %s/decode.md, decode.json" % a.out_dir)
    return 1 if errors else 0
