#!/usr/bin/python3
"""Heatmaps of the attention weights `./model --dump-attention DIR` wrote.

  scripts/plot-attention.py DIR [--out OUTDIR] [--tokens ids.npy] [--src-tokens ids.npy]

Reads every *.npy in DIR (contract section 9: float32 [batch, heads, q, k],
named layer{L}.self.npy, layer{L}.cross.npy, or encoder./decoder. before
them for encoder_decoder) and writes one PNG per file, head and batch item
to OUTDIR (default: DIR), named STEM.b{B}.h{H}.png, e.g.
decoder.layer1.cross.b0.h3.png. Each is titled with the layer name, the head
and the batch item. The axes are query position (rows) and key position
(columns). The colour scale runs from 0 to the largest weight of that map.

--tokens ids.npy ([seq] or [batch, seq] integer ids, the --input the model
ran on) labels the axes with token ids instead of positions. For
encoder_decoder, --tokens is the target (tgt): it labels the decoder's
self-attention and the query axis of cross-attention. --src-tokens labels
the encoder's self-attention and the key axis of cross-attention. An axis
without ids keeps positions. A [seq] file labels every batch item.

Exit status 1, with a message, for a missing DIR, a DIR without *.npy
files, a file that is not a 4-D float32 .npy array, token ids that do not
fit the axes they label, or no matplotlib (Debian: python3-matplotlib).
"""

import argparse
import os
import sys

import numpy as np

PROG = "plot-attention"
MAX_TICK_LABELS = 48


class UserError(Exception):
    pass


def load_dump(dump_dir):
    """[(stem, array)] of DIR's *.npy files, sorted by name; each checked to
    be a 4-D float32 array."""
    if not os.path.exists(dump_dir):
        raise UserError("%s: no such directory" % dump_dir)
    if not os.path.isdir(dump_dir):
        raise UserError("%s: not a directory" % dump_dir)
    names = sorted(f for f in os.listdir(dump_dir) if f.endswith(".npy")
                   and os.path.isfile(os.path.join(dump_dir, f)))
    if not names:
        raise UserError("%s: no .npy files (a model without full-attention layers writes none)" % dump_dir)
    out = []
    for f in names:
        path = os.path.join(dump_dir, f)
        try:
            with open(path, "rb") as fh:
                magic = fh.read(6)
        except OSError as e:
            raise UserError("%s: cannot read: %s" % (path, e))
        if magic != b"\x93NUMPY":
            raise UserError("%s: not a .npy file" % path)
        try:
            a = np.load(path, allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - any unreadable file is the user's to fix
            raise UserError("%s: not a readable .npy array: %s" % (path, e))
        if a.ndim != 4 or a.dtype != np.float32:
            raise UserError("%s: %s %s, expected a 4-D float32 array [batch, heads, q, k]"
                            % (path, a.dtype, list(a.shape)))
        out.append((f[:-len(".npy")], a))
    return out


def load_tokens(path, option):
    """The ids of --tokens / --src-tokens, and "OPTION PATH" for messages."""
    if path is None:
        return None
    try:
        t = np.load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001
        raise UserError("%s %s: not a readable .npy array: %s" % (option, path, e))
    if t.ndim not in (1, 2) or not np.issubdtype(t.dtype, np.integer):
        raise UserError("%s %s: %s %s, expected integer token ids [seq] or [batch, seq]"
                        % (option, path, t.dtype, list(t.shape)))
    return t, "%s %s" % (option, path)


def axis_tokens(stem, tokens, src_tokens):
    """(query ids, key ids) for a file, each None or load_tokens()'s pair:
    encoder.* -> src tokens on both axes; *.cross -> tokens on the query
    axis, src tokens on the key axis; anything else -> tokens on both."""
    if stem.startswith("encoder."):
        return src_tokens, src_tokens
    if stem.endswith(".cross"):
        return tokens, src_tokens
    return tokens, tokens


def check_tokens(stem, a, q_tok, k_tok):
    """Raises UserError when given ids do not fit the axes they label."""
    batch, _, sq, sk = a.shape
    for tok, n, axis in ((q_tok, sq, "query"), (k_tok, sk, "key")):
        if tok is None:
            continue
        t, opt = tok
        if t.shape[-1] != n:
            raise UserError("%s has %d positions, but %s.npy's %s axis has %d"
                            % (opt, t.shape[-1], stem, axis, n))
        if t.ndim == 2 and t.shape[0] != batch:
            raise UserError("%s has batch %d, but %s.npy has batch %d" % (opt, t.shape[0], stem, batch))


def _ids_for(tok, b):
    if tok is None:
        return None
    t = tok[0]
    return t if t.ndim == 1 else t[b]


def _ticks(ax, n, ids, which):
    step = max(1, -(-n // MAX_TICK_LABELS))
    pos = list(range(0, n, step))
    labels = [str(int(ids[p])) if ids is not None else str(p) for p in pos]
    if which == "x":
        ax.set_xticks(pos)
        ax.set_xticklabels(labels, rotation=90 if ids is not None else 0)
    else:
        ax.set_yticks(pos)
        ax.set_yticklabels(labels)


def plot(dump, out_dir, tokens, src_tokens):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("matplotlib is not installed for %s (Debian: apt-get install python3-matplotlib)"
                        % sys.executable)
    os.makedirs(out_dir, exist_ok=True)
    written = 0
    for stem, a in dump:
        q_ids, k_ids = axis_tokens(stem, tokens, src_tokens)
        batch, heads, sq, sk = a.shape
        for b in range(batch):
            qi, ki = _ids_for(q_ids, b), _ids_for(k_ids, b)
            for h in range(heads):
                w = a[b, h]
                side = min(14.0, 3.0 + 0.25 * max(sq, sk))
                fig, ax = plt.subplots(figsize=(side + 1.2, side))
                finite = w[np.isfinite(w)]
                vmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
                im = ax.imshow(w, cmap="viridis", vmin=0.0, vmax=vmax, interpolation="nearest", aspect="auto")
                fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
                ax.set_title("%s  head %d  batch %d" % (stem, h, b))
                ax.set_xlabel("key token id" if ki is not None else "key position")
                ax.set_ylabel("query token id" if qi is not None else "query position")
                _ticks(ax, sk, ki, "x")
                _ticks(ax, sq, qi, "y")
                fig.tight_layout()
                fig.savefig(os.path.join(out_dir, "%s.b%d.h%d.png" % (stem, b, h)))
                plt.close(fig)
                written += 1
    return written


def main(argv=None):
    ap = argparse.ArgumentParser(prog="plot-attention.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("dir", metavar="DIR", help="the directory ./model --dump-attention DIR wrote")
    ap.add_argument("--out", metavar="OUTDIR", default=None, help="where the PNGs go (default: DIR; made if missing)")
    ap.add_argument("--tokens", metavar="IDS.npy", default=None,
                    help="token ids [seq] or [batch, seq] for the axes (encoder_decoder: the target's)")
    ap.add_argument("--src-tokens", metavar="IDS.npy", default=None,
                    help="encoder_decoder: the source's ids (encoder self-attention, cross-attention keys)")
    args = ap.parse_args(argv)
    try:
        dump = load_dump(args.dir)
        tokens = load_tokens(args.tokens, "--tokens")
        src_tokens = load_tokens(args.src_tokens, "--src-tokens")
        for stem, a in dump:
            q_tok, k_tok = axis_tokens(stem, tokens, src_tokens)
            check_tokens(stem, a, q_tok, k_tok)
        out_dir = args.out if args.out is not None else args.dir
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise UserError("--out %s: not a directory" % out_dir)
        n = plot(dump, out_dir, tokens, src_tokens)
    except UserError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 1
    print("%s: wrote %d images (%d files) to %s" % (PROG, n, len(dump), out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
