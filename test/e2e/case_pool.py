"""Runs a harness's cases, one line of verdict each, in a pool of workers.

Shared by run_e2e.py, run_generate.py and run_hf.py: `run_one(name, opts)`
returns (ok, line); the last line printed is exactly "N passed, M failed";
the result is the harness's exit status (1 if any case failed). A worker that
dies fails its case instead of the run.
"""

import argparse
import concurrent.futures
import fnmatch
import multiprocessing


def select_names(names, filters, shard=None, excludes=()):
    """The names that match one of `filters` (a glob where it has one of
    `*?[`, else a substring; none: every name) and none of `excludes`
    (the same way), then, with shard (K, N), the K-th of every N of them
    (1-based, round robin: ctest runs a long suite as N tests that each
    take about its N-th part, and no one of them reaches the test time
    limit)."""
    def match(n, f):
        return fnmatch.fnmatchcase(n, f) if any(ch in f for ch in "*?[") else f in n
    picked = [n for n in names if (not filters or any(match(n, f) for f in filters))
              and not any(match(n, f) for f in excludes)]
    if shard is not None:
        k, n = shard
        picked = picked[k - 1::n]
    return picked


def shard_arg(text):
    """argparse type of --shard K/N (1 <= K <= N)."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected K/N (two integers), not %r" % text)
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError("K/N needs 1 <= K <= N, not %r" % text)
    return k, n


def add_shard_argument(ap):
    ap.add_argument("--shard", type=shard_arg, default=None, metavar="K/N",
                    help="run the K-th of every N selected cases (round robin; 1-based)")


def add_exclude_argument(ap):
    ap.add_argument("--exclude", dest="excludes", action="append", default=[], metavar="FILTER",
                    help="leave out the cases whose name contains FILTER (or matches it as a glob); "
                         "repeatable, applied before --shard")


def run_cases(names, run_one, opts, jobs, init_worker):
    passed = failed = 0
    jobs = max(1, jobs)
    pool = None
    if jobs == 1:
        init_worker()
        results = (run_one(n, opts) for n in names)
    else:
        # spawn, not fork: forking after torch/OpenMP initialised can hang.
        ctx = multiprocessing.get_context("spawn")
        pool = concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                                                      initializer=init_worker)
        futures = [pool.submit(run_one, n, opts) for n in names]

        def gen():
            for n, f in zip(names, futures):
                try:
                    yield f.result()
                except Exception as e:  # noqa: BLE001 - a dead worker is a failed case
                    yield False, "FAIL %s: harness worker died: %s" % (n, e)
        results = gen()
    try:
        for ok, line in results:
            passed += ok
            failed += not ok
            print(line, flush=True)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0
