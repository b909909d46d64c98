#!/usr/bin/python3
"""Compares two .npy outputs of a model for lit tests: `%{npy_close} A B
--atol X --rtol Y` exits 0 when A and B have the same dtype and shape, are
not empty, hold only finite values and |a - b| <= atol + rtol * |b| holds
everywhere; otherwise it says what differs (the worst element) and exits 1.
Bit-identical outputs are checked with `cmp`; this is for "the same within
rounding"."""

import argparse
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("a")
    p.add_argument("b", help="the reference: rtol scales |b|")
    p.add_argument("--atol", type=float, required=True)
    p.add_argument("--rtol", type=float, required=True)
    args = p.parse_args()

    a = np.load(args.a, allow_pickle=False)
    b = np.load(args.b, allow_pickle=False)
    fail = None
    if a.dtype != b.dtype:
        fail = "dtypes differ: %s and %s" % (a.dtype, b.dtype)
    elif a.shape != b.shape:
        fail = "shapes differ: %s and %s" % (list(a.shape), list(b.shape))
    elif a.size == 0:
        fail = "both are empty %s" % list(a.shape)
    elif not np.all(np.isfinite(a)) or not np.all(np.isfinite(b)):
        fail = "non-finite values: %d in %s, %d in %s" % (
            int(np.sum(~np.isfinite(a))), args.a, int(np.sum(~np.isfinite(b))), args.b)
    if fail:
        print("npy-close: FAIL: %s" % fail)
        return 1

    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    err = np.abs(a64 - b64)
    excess = err - (args.atol + args.rtol * np.abs(b64))
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    summary = "max_abs_err=%.3g over %d values (atol %g, rtol %g)" % (
        float(np.max(err)), a.size, args.atol, args.rtol)
    if excess[worst] > 0:
        print("npy-close: FAIL: %s; %d values out of tolerance, the worst at %s: %.9g vs %.9g"
              % (summary, int(np.sum(excess > 0)), list(worst), a64[worst], b64[worst]))
        return 1
    print("npy-close: ok: %s" % summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
