#!/usr/bin/python3
"""Runs a harness of test/e2e (run_e2e.py, run_generate.py) and checks its
verdict: for ctest, which runs the harnesses against the fake compilers
(fake_tfm_compile.py, fake_generate_compile.py) to test the harnesses
themselves.

  expect_harness.py fail --reason=REGEX [--reason=REGEX ...] [--env NAME=VALUE ...]
                    -- HARNESS.py ARGS...
  expect_harness.py pass [--env NAME=VALUE ...] -- HARNESS.py ARGS...

(--reason=REGEX with `=`: a regex may begin with `--`.)

`fail` passes only if the harness reported the failure it is there to
catch: it ran to its summary line `N passed, M failed` and exited 1, with
no case passing (choose the cases a fake mode applies to), every FAIL line
matching one of the --reason regexes (Python re.search), and none of them
a harness error (a traceback inside a case, a dead worker).  A harness that
crashes, exits 2 (a bad case table, no case matched), fails for another
reason or passes the broken executable does not count as the expected
failure, as ctest's WILL_FAIL would count it.

`pass` (the control: with a correct fake, the same harness must pass, or
the `fail` tests prove nothing) passes only if the harness exited 0 with at
least one case, every case line a PASS.

The harness runs under this interpreter (Debian's /usr/bin/python3, with
torch); --env sets variables for it (TFM_FAKE_MODE, TFM_FAKE_GEN_MODE).  The
harness's output is printed either way; the last line is this script's
verdict.
"""

import argparse
import os
import re
import subprocess
import sys

SUMMARY_RE = re.compile(r"^(\d+) passed, (\d+) failed$")
# A case line that reports the harness's own failure, not the executable's.
HARNESS_ERROR_RE = re.compile(r"harness error|harness worker died")


def verdict(args, rc, stdout):
    """None if the harness's outcome is the expected one, else why not."""
    lines = [l.rstrip() for l in stdout.splitlines() if l.strip()]
    if not lines or not SUMMARY_RE.match(lines[-1]):
        return "the harness's last stdout line %r is not its `N passed, M failed` summary (exit %d)" % (
            lines[-1] if lines else "", rc)
    passed, failed = (int(g) for g in SUMMARY_RE.match(lines[-1]).groups())
    passes = [l for l in lines if l.startswith("PASS ")]
    fails = [l for l in lines if l.startswith("FAIL ")]
    if len(passes) != passed or len(fails) != failed:
        return "the summary says %d passed, %d failed, but there are %d PASS and %d FAIL lines" % (
            passed, failed, len(passes), len(fails))
    if args.outcome == "pass":
        if rc != 0:
            return "the harness exited %d, expected 0" % rc
        if failed or not passed:
            return "expected every case to pass (and at least one case): %d passed, %d failed" % (
                passed, failed)
        return None
    if rc != 1:
        return "the harness exited %d, expected 1 (a case failed)" % rc
    if passed or not failed:
        return "expected every selected case to fail: %d passed, %d failed" % (passed, failed)
    for line in fails:
        if HARNESS_ERROR_RE.search(line):
            return "a harness error, not the expected failure: %s" % line
        if not any(re.search(r, line) for r in args.reason):
            return "a failure for another reason than %s: %s" % (" or ".join(map(repr, args.reason)), line)
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("outcome", choices=["pass", "fail"])
    ap.add_argument("--reason", action="append", default=[],
                    help="with fail: a regex every FAIL line must match (one of them; repeatable)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for the harness (repeatable)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds the harness may take")
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first `--` is the harness's command line, passed
    # on untouched (its own -k, --work-dir, ... are not ours to parse).
    if "--" not in argv:
        ap.error("no harness given: expected -- HARNESS.py ARGS...")
    cut = argv.index("--")
    args = ap.parse_args(argv[:cut])
    cmd = argv[cut + 1:]
    if not cmd:
        ap.error("no harness given (after --)")
    if args.outcome == "fail" and not args.reason:
        ap.error("fail needs at least one --reason")
    if args.outcome == "pass" and args.reason:
        ap.error("--reason goes with fail")
    env = dict(os.environ)
    for spec in args.env:
        name, eq, value = spec.partition("=")
        if not eq or not name:
            ap.error("--env %r is not NAME=VALUE" % spec)
        env[name] = value
    shown = " ".join(args.env + [sys.executable] + cmd)
    print("expect_harness: %s: %s" % (args.outcome, shown), flush=True)
    try:
        p = subprocess.run([sys.executable] + cmd, env=env, capture_output=True, text=True,
                           timeout=args.timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        sys.stdout.write(out)
        print("expect_harness: FAIL: the harness did not finish in %ds" % args.timeout)
        return 1
    sys.stdout.write(p.stdout)
    if p.stderr.strip():
        sys.stdout.write("--- harness stderr ---\n" + p.stderr)
    why = verdict(args, p.returncode, p.stdout)
    if why is not None:
        print("expect_harness: FAIL: " + why)
        return 1
    print("expect_harness: OK: the harness %s" % (
        "passed" if args.outcome == "pass" else "failed as expected"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
