"""Runs a harness's cases, one line of verdict each, in a pool of workers.

Shared by run_e2e.py, run_generate.py and run_hf.py: `run_one(name, opts)`
returns (ok, line); the last line printed is exactly "N passed, M failed";
the result is the harness's exit status (1 if any case failed). A worker that
dies fails its case instead of the run.
"""

import concurrent.futures
import multiprocessing


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
