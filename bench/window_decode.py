#!/usr/bin/python3
"""bench/: the decode step of a sliding-window gpt2-small at position 4000
against the same model's step at position 300 (issue 22: "decode with a
sliding window at position 4000: within 1.1x of the step time at position
300"), beside the same model with full attention.

  /usr/bin/python3 bench/window_decode.py [--rounds 3] [--threads 1,2] [--steps 16]
                                          [--positions 300,4000] [--layers 12]
                                          [--tfm-compile PATH] [--work-dir DIR] [--out-dir DIR]

Models: examples/gpt2-small.json's keys (d_model 768, 12 heads, 12 layers,
d_ff 3072, vocabulary 50257, learned positions, pre-norm, gelu_tanh, causal,
tied LM head) with "max_seq_len": 4096 and --layers layers, twice:
  * "window": "attention": {"kind": "sliding_window", "window": 256,
    "global_tokens": 2} (contract section 7);
  * "full": full (causal) attention, for contrast.
Each is written to the work folder (default bench/work/window_decode/) and
compiled afresh by the run (`tfm-compile MODEL.json -o MODEL.exe`, the
Highway backend; no --weights: the executable makes its own deterministic
random weights).

A measurement: `EXE --generate N --input input=PROMPT.npy --output OUT.npy
--threads T` with N = --steps + 1 (default 17: 16 timed decode steps) on a
prompt of P random ids (int32, [1, P], in [0, vocab)), P chosen by
decode.prompt_length so that the steps (cache lengths P+1 .. P+steps) are
centred on each of --positions (default 300 and 4000; P + N <= 4096); the
step time = 1000 / decode_tok_s of its last line (the mean of its N - 1
decode steps), the prefill time = P / prefill_tok_s (information only).
Each run's ids are checked ([1, N] int32 in [0, vocab)).

Rounds (--rounds, default 3): every round measures every (model, position,
thread count) once; the positions of one model run back to back, and the
order of the thread counts, the models and the positions rotates from round
to round.  A row gives the median and the min over rounds; the ratio
step(last position) / step(first position) per model and thread count, of
the medians and of the mins; the goal (the window's median ratio <= 1.1).

Results: tables on stdout (progress on stderr), window-decode.md and
window-decode.json in --out-dir (default bench/results/ for a run at the
default --layers and --positions; any other run writes into its work folder
unless --out-dir names another folder: a quick check never overwrites
bench/results/).  Exit status 1, with a message, when a compile or a run
fails or its last line does not parse.
"""

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench.py, decode.py, hf_decode.py

import numpy as np

import bench  # (run, last_line, fmt_ms, render_text, render_md, tfm_source)
from bench import HERE, ROOT, log
import decode  # (prompt_length, step_bytes, dirty_outside_bench)
import hf_decode  # (machine: lscpu's model name, ISA flags and caches; loadavg)

BASE_MODEL = os.path.join(ROOT, "examples", "gpt2-small.json")
MAX_SEQ = 4096
WINDOW = {"kind": "sliding_window", "window": 256, "global_tokens": 2}
DEFAULT_POSITIONS = (300, 4000)
DEFAULT_LAYERS = 12
GOAL = 1.1   # issue 22: step(4000) / step(300) of the sliding window
MODELS = ("window", "full")
STEP_COLUMNS = ["model", "position (cache lengths)", "thr", "step med ms", "step min ms", "k/v MB/step",
                "prefill P", "prefill med ms", "prefill min ms"]


def model_desc(kind, layers):
    """gpt2-small's description with max_seq_len 4096, `layers` layers and
    the sliding window ("window") or full attention ("full")."""
    with open(BASE_MODEL) as f:
        desc = json.load(f)
    desc.update(max_seq_len=MAX_SEQ, num_layers=layers, causal=True)
    desc["name"] = "gpt2_small_%s_s%d%s" % ("window256_g2" if kind == "window" else "full", MAX_SEQ,
                                           "" if layers == DEFAULT_LAYERS else "_l%d" % layers)
    desc.pop("attention", None)
    if kind == "window":
        desc["attention"] = dict(WINDOW)
    return desc


def keys_attended(desc, query):
    """The keys the query at position `query` attends in a causal decode step
    (contract section 7): full attention all of 0 .. query; the sliding
    window those with query - j <= W, or j < G (every key when query < G)."""
    a = desc.get("attention", {"kind": "full"})
    if a["kind"] == "full":
        return query + 1
    w, g = a["window"], a.get("global_tokens", 0)
    if query < g:
        return query + 1
    lo = max(0, query - w)
    return (query - lo + 1) + min(g, lo)


def kv_bytes_per_step(desc, prompt, steps):
    """The mean fp32 k/v bytes a decode step reads over the steps of a run
    (queries at positions prompt .. prompt + steps - 1), all layers."""
    per_key = 4 * 2 * desc["d_model"] * desc["num_layers"]
    return per_key * statistics.mean(keys_attended(desc, prompt + s) for s in range(steps))


def fail(msg):
    sys.exit("window_decode: FAILED: " + msg)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tfm-compile", default=os.path.join(ROOT, "build", "bin", "tfm-compile"))
    ap.add_argument("--work-dir", default=os.path.join(HERE, "work", "window_decode"),
                    help="models, prompts, executables, outputs (default bench/work/window_decode)")
    ap.add_argument("--out-dir", help="where window-decode.md and .json go (default bench/results for a run at "
                    "the default --layers and --positions, else the work folder)")
    ap.add_argument("--steps", type=int, default=16, help="timed decode steps a run (--generate steps+1; default 16)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    ap.add_argument("--positions", default=",".join(map(str, DEFAULT_POSITIONS)),
                    help="positions the decode steps are centred on, comma-separated; the ratios are each "
                    "against the first (default 300,4000)")
    ap.add_argument("--layers", type=int, default=DEFAULT_LAYERS,
                    help="layers of both models (default 12; fewer for a quick check)")
    argv = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(argv)
    command = " ".join(["/usr/bin/python3", "bench/window_decode.py"] + [shlex.quote(x) for x in argv])
    try:
        threads = [int(t) for t in a.threads.split(",") if t.strip()]
        positions = [int(p) for p in a.positions.split(",") if p.strip()]
    except ValueError:
        ap.error("--threads and --positions: comma-separated integers")
    if not threads or min(threads) < 1 or len(set(threads)) != len(threads):
        ap.error("--threads: distinct positive integers, e.g. 1,2")
    if len(positions) < 2 or len(set(positions)) != len(positions) or min(positions) < 1:
        ap.error("--positions: at least two distinct positive positions, e.g. 300,4000")
    if a.steps < 2 or a.rounds < 1 or a.layers < 1:
        ap.error("--steps >= 2, --rounds >= 1, --layers >= 1")
    if a.steps + 2 > MAX_SEQ:
        ap.error("--steps: at most %d" % (MAX_SEQ - 2))
    steps = a.steps
    new_tokens = steps + 1
    # The prompt lengths: the steps (cache lengths P+1 .. P+steps) centred on
    # each position, P + steps + 1 <= MAX_SEQ.
    plens = {pos: decode.prompt_length(pos, steps, MAX_SEQ) for pos in positions}
    for pos, p in plens.items():
        if p + steps + 1 > MAX_SEQ or abs(p + (steps + 1) / 2.0 - pos) > 1:
            ap.error("--positions: %d steps cannot be centred on position %d (a prompt of %d tokens; the steps "
                     "must fit max_seq_len %d)" % (steps, pos, p, MAX_SEQ))
    work = os.path.abspath(a.work_dir)
    results = os.path.join(HERE, "results")
    default_run = a.layers == DEFAULT_LAYERS and tuple(positions) == DEFAULT_POSITIONS
    out_dir = os.path.abspath(a.out_dir) if a.out_dir else (results if default_run else work)
    if not default_run and os.path.realpath(out_dir) == os.path.realpath(results):
        ap.error("--out-dir: a run at other than --layers %d and --positions %s must not write into "
                 "bench/results/; name another folder (default: the work folder)"
                 % (DEFAULT_LAYERS, ",".join(map(str, DEFAULT_POSITIONS))))
    if not os.access(a.tfm_compile, os.X_OK):
        fail("%s not found or not executable: build tfm first (scripts/build.sh)" % a.tfm_compile)
    os.makedirs(work, exist_ok=True)

    t_start = time.time()
    load = [hf_decode.loadavg(), "?"]
    mach = hf_decode.machine()

    # 1. The two models, compiled afresh (an earlier run's executable is
    # removed first, never reused).
    descs, exes, compiled = {}, {}, {}
    for kind in MODELS:
        desc = descs[kind] = model_desc(kind, a.layers)
        path = os.path.join(work, desc["name"] + ".json")
        with open(path, "w") as f:
            json.dump(desc, f, indent=1)
        exe = os.path.join(work, desc["name"] + ".exe")
        if os.path.exists(exe):
            os.remove(exe)
        log("window_decode: tfm-compile %s" % os.path.basename(path))
        t0 = time.time()
        rc, so, se = bench.run([a.tfm_compile, path, "-o", exe])
        if rc or not os.path.exists(exe):
            fail("COMPILE FAILURE: %s %s -o %s (exit %d): %s"
                 % (a.tfm_compile, path, exe, rc, (se.strip() or so.strip())[-800:]))
        exes[kind] = exe
        compiled[kind] = dict(at=datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
                              seconds=round(time.time() - t0, 1), bytes=os.path.getsize(exe))

    # 2. The prompts: steps centred on each position.
    vocab = descs["window"]["vocab_size"]
    prompts = {}
    for pos in positions:
        p = plens[pos]
        path = os.path.join(work, "prompt_%d.npy" % p)
        ids = np.random.default_rng(p).integers(0, vocab, size=(1, p), dtype=np.int64).astype(np.int32)
        np.save(path, ids)
        prompts[pos] = (p, path)

    # 3. The rounds.
    runs = {(m, pos, t): [] for m in MODELS for pos in positions for t in threads}
    round_loads = []
    for rnd in range(a.rounds):
        round_loads.append(hf_decode.loadavg())
        log("window_decode: round %d of %d (load average %s)" % (rnd + 1, a.rounds, round_loads[-1]))
        t_order = threads[rnd % len(threads):] + threads[:rnd % len(threads)]
        m_order = list(MODELS[rnd % len(MODELS):] + MODELS[:rnd % len(MODELS)])
        p_order = positions if rnd % 2 == 0 else positions[::-1]
        for t in t_order:
            for m in m_order:
                for pos in p_order:    # a model's positions back to back
                    p, prompt = prompts[pos]
                    out = os.path.join(work, "ids_%s_p%d_t%d.npy" % (m, pos, t))
                    if os.path.exists(out):
                        os.remove(out)
                    cmd = [exes[m], "--generate", str(new_tokens), "--input", "input=" + prompt,
                           "--output", out, "--threads", str(t)]
                    try:
                        rc, so, se = bench.run(cmd, timeout=1200)
                    except subprocess.TimeoutExpired:
                        fail("timed out after 1200 s: %s" % " ".join(cmd))
                    try:
                        kv = bench.last_line(so, "generate: ")
                        step_ms = 1e3 / float(kv["decode_tok_s"])
                        prefill_tok_s = float(kv["prefill_tok_s"])
                        ok = (int(kv["new_tokens"]) == new_tokens and int(kv["threads"]) == t
                              and step_ms > 0 and prefill_tok_s > 0)
                    except (TypeError, KeyError, ValueError, ZeroDivisionError):
                        kv, ok = None, False
                    if rc or not ok:
                        fail("%s (exit %d): %s: the last line %s; stderr: %s"
                             % (" ".join(cmd), rc, "it failed" if rc else "no well-formed generate: line",
                                repr((so.strip().splitlines() or [""])[-1][-300:]), se.strip()[-500:]))
                    try:
                        got = np.load(out)
                    except (OSError, ValueError) as e:
                        fail("%s: its --output %s is unreadable: %s" % (" ".join(cmd), out, e))
                    if got.dtype != np.int32 or got.shape != (1, new_tokens) or got.min() < 0 or got.max() >= vocab:
                        fail("%s: its --output holds %s %s, not [1, %d] int32 ids in [0, %d)"
                             % (" ".join(cmd), got.dtype, list(got.shape), new_tokens, vocab))
                    runs[(m, pos, t)].append(dict(round=rnd + 1, step_ms=step_ms,
                                                  decode_tok_s=float(kv["decode_tok_s"]),
                                                  prefill_tok_s=prefill_tok_s, prefill_ms=p / prefill_tok_s * 1e3))
                    log("  t=%d  %-6s position %5d (P %4d)  %8.2f ms/step  prefill %8.1f ms"
                        % (t, m, pos, p, step_ms, p / prefill_tok_s * 1e3))
    load[1] = hf_decode.loadavg()
    elapsed = time.time() - t_start

    # 4. Summary.
    rows = []
    for m in MODELS:
        for pos in positions:
            for t in threads:
                rs = runs[(m, pos, t)]
                p = prompts[pos][0]
                st = [r["step_ms"] for r in rs]
                pf = [r["prefill_ms"] for r in rs]
                rows.append(dict(model=m, position=pos, prompt=p, cache_lengths=[p + 1, p + steps], threads=t,
                                 step_median_ms=statistics.median(st), step_min_ms=min(st),
                                 prefill_median_ms=statistics.median(pf), prefill_min_ms=min(pf),
                                 kv_bytes_per_step=kv_bytes_per_step(descs[m], p, steps),
                                 keys_attended_last=keys_attended(descs[m], p + steps - 1), runs=rs))
    by = {(r["model"], r["position"], r["threads"]): r for r in rows}
    first = positions[0]
    goal_positions = tuple(positions) == DEFAULT_POSITIONS
    ratios = []
    for m in MODELS:
        for pos in positions[1:]:
            for t in threads:
                lo, hi = by[(m, first, t)], by[(m, pos, t)]
                per_round = [h["step_ms"] / l["step_ms"] for l, h in zip(lo["runs"], hi["runs"])]
                r = dict(model=m, threads=t, position=pos, against=first,
                         ratio=hi["step_median_ms"] / lo["step_median_ms"],
                         ratio_min=hi["step_min_ms"] / lo["step_min_ms"],
                         ratio_per_round=per_round)
                if m == "window":
                    r["goal"] = GOAL
                    r["goal_met"] = r["ratio"] <= GOAL
                ratios.append(r)

    # 5. The report.
    def pos_cell(r):
        return "%d (%d-%d)" % (r["position"], *r["cache_lengths"])

    def plural(t):
        return "%d thread%s" % (t, "s" if t > 1 else "")

    def met(ok):
        return "met" if ok else "NOT met"

    step_cells = [[r["model"], pos_cell(r), str(r["threads"]), bench.fmt_ms(r["step_median_ms"]),
                   bench.fmt_ms(r["step_min_ms"]), "%.1f" % (r["kv_bytes_per_step"] * 1e-6), str(r["prompt"]),
                   bench.fmt_ms(r["prefill_median_ms"]), bench.fmt_ms(r["prefill_min_ms"])] for r in rows]
    ratio_cols = ["model", "thr", "step %d med ms" % first, "step %d min ms" % first, "position",
                  "step med ms", "step min ms", "ratio med", "ratio min", "goal (med)"]
    ratio_cells = []
    for r in ratios:
        lo, hi = by[(r["model"], first, r["threads"])], by[(r["model"], r["position"], r["threads"])]
        goal = ("-" if "goal" not in r else "<= %.2f: %s%s" % (GOAL, met(r["goal_met"]),
                                                               "" if goal_positions else " (not the goal's positions)"))
        ratio_cells.append([r["model"], str(r["threads"]), bench.fmt_ms(lo["step_median_ms"]),
                            bench.fmt_ms(lo["step_min_ms"]), str(r["position"]), bench.fmt_ms(hi["step_median_ms"]),
                            bench.fmt_ms(hi["step_min_ms"]), "%.3f" % r["ratio"], "%.3f" % r["ratio_min"], goal])

    src, commit = bench.tfm_source(a.tfm_compile)
    base_commit = commit.replace("+dirty", "")
    dirty = decode.dirty_outside_bench(src) if commit.endswith("+dirty") else []
    commit_shown = base_commit + ("+dirty" if dirty else "")
    bench_only = commit.endswith("+dirty") and not dirty

    def mtime(path):
        return datetime.datetime.fromtimestamp(os.path.getmtime(path)).strftime("%Y-%m-%d %H:%M:%S")

    runtime_lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(a.tfm_compile))),
                               "runtime", "libtfm_runtime.a")
    runtime_mtime = mtime(runtime_lib) if os.path.exists(runtime_lib) else None
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    wb = decode.step_bytes(descs["full"])["weight_bytes"]
    per_key = 4 * 2 * descs["full"]["d_model"] * a.layers
    header = [
        "Measured %s on %s (lscpu's model name; %d CPUs; %s; L2 %s, L3 %s), load average %s at the start, %s at "
        "the end (at the start of each round: %s); tfm %s (%s, built %s%s, from %s%s); %d round%s, %.0f s in all."
        % (now, mach["model"], mach["cpus"], mach["isa"], mach["l2"], mach["l3"], load[0], load[1],
           " ".join(round_loads), commit_shown, a.tfm_compile, mtime(a.tfm_compile),
           ", its runtime library %s" % runtime_mtime if runtime_mtime else "", src,
           "; uncommitted changes outside bench/: " + ", ".join(dirty) if dirty else
           "; uncommitted changes in bench/ only" if bench_only else "",
           a.rounds, "" if a.rounds == 1 else "s", elapsed),
        "Command: `%s`." % command,
        "Models: examples/gpt2-small.json's keys (d_model %d, %d heads, d_ff %d, vocabulary %d, %s positions, "
        "%s-norm, %s, causal, tied LM head) with max_seq_len %d and %d layer%s%s: \"window\", `\"attention\": %s`; "
        "\"full\", full attention. Compiled by this run (`tfm-compile MODEL.json -o MODEL.exe`, Highway): %s. "
        "No --weights: the executables' own deterministic random weights."
        % (descs["full"]["d_model"], descs["full"]["num_heads"], descs["full"]["d_ff"], vocab,
           descs["full"].get("positional", "?"), descs["full"].get("norm", "?"), descs["full"].get("activation", "?"),
           MAX_SEQ, a.layers, "" if a.layers == 1 else "s",
           "" if a.layers == DEFAULT_LAYERS else " (not gpt2-small's 12: a quick check)",
           json.dumps(WINDOW), ", ".join("%s %.1f s" % (m, compiled[m]["seconds"]) for m in MODELS)),
        "A run: `EXE --generate %d --input input=PROMPT.npy --output OUT.npy --threads T`, batch 1, fp32, a prompt "
        "of P random ids (int32) whose %d decode steps (cache lengths P+1 .. P+%d) are centred on the position; "
        "step = 1000 / decode_tok_s (the mean of the %d steps), prefill = P / prefill_tok_s. Every round runs every "
        "(model, position, thread count) once, a model's positions back to back, the order rotating by round; "
        "rows: median and min over the rounds."
        % (new_tokens, steps, steps, steps),
        "Bytes a step reads: %.1f MB of fp32 weights (decode.step_bytes), + %.1f KB of fp32 k/v per key attended "
        "(all layers); the window attends at most %d keys a step (W + 1 + G), full attention every cached one."
        % (wb * 1e-6, per_key * 1e-3, WINDOW["window"] + 1 + WINDOW["global_tokens"]),
    ]
    explain = (
        "Columns: *step med/min ms*, the decode step's time (median and best over the rounds); *k/v MB/step*, the "
        "mean k/v cache bytes a step's attention reads (keys and values of every layer, fp32); *prefill*, the "
        "prompt of P tokens (information only: it is not what the goal is about); *ratio med*, the step's median "
        "at the position / its median at position %d (*ratio min*: the same of the mins). The sliding window's "
        "cache keeps only its window and global tokens (a ring of W + G slots, not max_seq_len = %d positions "
        "like full attention's), and a decode step gathers and reads only the keys of its window (the last %d "
        "positions) and the %d global ones, so its cost should not grow with the position: issue 22's goal is step(4000) / step(300) <= %.1f. Full attention reads "
        "every cached key, so its step grows with the cache (about %.1f KB a position on top of the weights); it is "
        "here for contrast and has no goal."
        % (first, MAX_SEQ, WINDOW["window"] + 1, WINDOW["global_tokens"], GOAL, per_key * 1e-3))
    goals = []
    for r in ratios:
        if "goal" in r:
            goals.append((r["goal_met"], "sliding window, %s: step(%d) / step(%d) = %.3f (min-based %.3f; goal <= "
                          "%.2f%s)" % (plural(r["threads"]), r["position"], r["against"], r["ratio"], r["ratio_min"],
                                       GOAL, "" if goal_positions else ", stated for 4000 / 300")))
    notes = []
    if not goal_positions:
        notes.append("positions %s are not the goal's 300 and 4000: the goal lines are only indicative"
                     % ",".join(map(str, positions)))
    if a.layers != DEFAULT_LAYERS:
        notes.append("%d layer%s, not gpt2-small's 12: a quick check, not the measurement"
                     % (a.layers, "" if a.layers == 1 else "s"))
    for r in rows:
        if len(r["runs"]) > 1 and r["step_min_ms"] < 0.85 * r["step_median_ms"]:
            notes.append("%s, position %d, %s: the best round was %.0f%% faster than the median: the machine's "
                         "load changed while it ran" % (r["model"], r["position"], plural(r["threads"]),
                                                        100 * (1 - r["step_min_ms"] / r["step_median_ms"])))
    goal_lines = ["%s: %s" % (met(ok), text) for ok, text in goals]

    print()
    print("\n".join(header))
    print()
    print(bench.render_text(STEP_COLUMNS, step_cells, left=2))
    print()
    print("Against position %d:" % first)
    print(bench.render_text(ratio_cols, ratio_cells, left=1))
    if goal_lines:
        print()
        print("\n".join("goal " + g for g in goal_lines))
    if notes:
        print()
        print("\n".join("note: " + n for n in notes))

    os.makedirs(out_dir, exist_ok=True)
    md = ["# tfm benchmark: sliding-window decode, gpt2-small at max_seq_len %d" % MAX_SEQ, "",
          "Written by `bench/window_decode.py` (see bench/README.md, \"Sliding-window decode\"). Times are per "
          "decode step, in ms.", ""]
    md += ["- " + h for h in header]
    md += ["", explain, "", "Decode steps (and the prefill of the prompt, for information):", "",
           bench.render_md(STEP_COLUMNS, step_cells, left=2), "",
           "The step at each position against position %d (same model, same thread count):" % first, "",
           bench.render_md(ratio_cols, ratio_cells, left=1), ""]
    if goal_lines:
        md += ["Goal (issue 22; medians):", ""] + ["- " + g for g in goal_lines] + [""]
    if notes:
        md += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    md_path = os.path.join(out_dir, "window-decode.md")
    with open(md_path, "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(out_dir, "window-decode.json"), "w") as f:
        json.dump(dict(date=now, machine=mach, load_average=load, load_average_rounds=round_loads,
                       tfm_commit=commit_shown, tfm_source=src, uncommitted_outside_bench=dirty,
                       tfm_compile=a.tfm_compile, tfm_compile_mtime=mtime(a.tfm_compile),
                       runtime_library_mtime=runtime_mtime, command=command, elapsed_s=elapsed,
                       settings=dict(steps=steps, new_tokens=new_tokens, rounds=a.rounds, threads=threads,
                                     positions=positions, layers=a.layers),
                       models=descs, compiled=compiled, weight_bytes_per_step=wb,
                       kv_bytes_per_key=per_key, goal=GOAL,
                       goals=[dict(met=ok, goal=text) for ok, text in goals], notes=notes,
                       rows=rows, ratios=ratios), f, indent=1)
    print()
    print("window_decode: wrote %s, window-decode.json" % md_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
