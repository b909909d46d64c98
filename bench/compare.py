#!/usr/bin/python3
"""Side by side: the bench workloads compiled by two tfm-compile builds.

Compiles every workload of bench.py (or those named by --only) with a base
and a new tfm-compile, for each backend, then times the executables
interleaved in rounds: base, new, and base again (the same binary a second
time, which shows the machine's noise). Each round takes the three in a
different order, so a drift of the machine's speed does not favour one of
them. Prints a markdown table of medians over the rounds: new/base, and
base again/base; a row is marked `slower` where new/base exceeds the noise
(the larger of base again/base and its inverse).

  /usr/bin/python3 bench/compare.py OLD/bin/tfm-compile NEW/bin/tfm-compile
  /usr/bin/python3 bench/compare.py A B --rounds 5 --threads 1 --only bert12_s128

Timings come from each executable's own --bench (median ms of its
repetitions). Weights are not needed: --bench runs on the random weights
and inputs the executable makes itself.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the workloads)


def compile_all(args, work):
    exes = {}
    for name in args.only or bench.DEFAULT_WORKLOADS:
        desc, _ = bench.WORKLOADS[name]
        model = os.path.join(work, name + ".json")
        with open(model, "w") as f:
            json.dump(dict(desc, name=name), f)
        for backend in args.backends:
            for tag, compiler in (("base", args.base), ("new", args.new)):
                exe = os.path.join(work, "%s.%s.%s" % (name, backend, tag))
                bench.log("compiling %s (%s, %s)" % (name, backend, tag))
                subprocess.run([compiler, model, "-o", exe, "--backend=" + backend],
                               check=True)
                exes[(name, backend, tag)] = exe
    return exes


def time_once(exe, threads, reps, warmup):
    out = subprocess.run([exe, "--bench", str(reps), "--warmup", str(warmup),
                          "--threads", str(threads)],
                         capture_output=True, text=True, check=True).stdout
    fields = bench.last_line(out, "bench: ")
    if not fields:
        sys.exit("compare: %s printed no bench line:\n%s" % (exe, out))
    return float(fields["median_ms"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", help="the base tfm-compile")
    p.add_argument("new", help="the new tfm-compile")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=5, help="--bench repetitions per run")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, action="append",
                   help="thread counts (default 1 and 2)")
    p.add_argument("--backends", default="hwy,llvm")
    p.add_argument("--only", action="append", choices=sorted(bench.WORKLOADS))
    p.add_argument("--work", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "work", "compare"))
    args = p.parse_args(argv)
    args.backends = args.backends.split(",")
    threads = args.threads or [1, 2]
    os.makedirs(args.work, exist_ok=True)
    exes = compile_all(args, args.work)

    names = args.only or list(bench.DEFAULT_WORKLOADS)  # the long rows only when named
    orders = [("base", "new", "again"), ("new", "again", "base"),
              ("again", "base", "new")]
    times = {}
    for r in range(args.rounds):
        bench.log("round %d of %d" % (r + 1, args.rounds))
        for name in names:
            for backend in args.backends:
                for t in threads:
                    for tag in orders[r % len(orders)]:
                        exe = exes[(name, backend, "base" if tag == "again" else tag)]
                        times.setdefault((name, backend, t, tag), []).append(
                            time_once(exe, t, args.reps, args.warmup))

    print("CPU: %s; %d rounds of --bench %d" % (bench.cpu_model(), args.rounds, args.reps))
    print()
    print("| workload | backend | threads | base ms | new ms | new/base | base again/base | |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    slower = 0
    for name in names:
        for backend in args.backends:
            for t in threads:
                m = {tag: statistics.median(times[(name, backend, t, tag)])
                     for tag in ("base", "new", "again")}
                ratio, noise = m["new"] / m["base"], m["again"] / m["base"]
                beyond = ratio > max(noise, 1 / noise)
                slower += beyond
                print("| %s | %s | %d | %.2f | %.2f | %.3f | %.3f | %s |" % (
                    name, backend, t, m["base"], m["new"], ratio, noise,
                    "slower" if beyond else ""))
    print()
    print("%d rows slower than the noise" % slower)
    return 0


if __name__ == "__main__":
    sys.exit(main())
