#!/usr/bin/python3
"""The PyTorch side of bench/decode.py: greedy generation with a key/value
cache kept by hand, one long-lived worker per thread count.

decode.py starts it through bench.py's TorchWorker, in the same environment
as torch_worker.py (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS = THREADS,
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset), and speaks the same protocol:
one JSON request per stdin line, one "@@ " + JSON answer per stdout line.

  {"op": "info"}
  {"op": "load", "model": DESC.json}        builds the model, random weights
  {"op": "run", "prompt": IDS.npy, "new_tokens": N}
  {"op": "quit"}

The model is written out by hand the way a PyTorch user writes a fast GPT-2
decoder: the parameters as plain fp32 tensors, F.layer_norm / F.gelu, and a
preallocated cache [layers, 2 (k, v), heads, max_seq_len, dk] that each step
writes one position of and attends over up to that position.  The linears of
a decode step (one row) are matrix-vector products, torch.addmv: F.linear
(addmm, what nn.Linear does) is several times slower on one row with
Debian's OpenBLAS 0.3.21, which runs it as a GEMM and packs the weights.
"run" does what tfm's `--generate N` does: a prefill over the prompt, then
N - 1 decode steps (greedy, argmax), each step timed on its own.
"""

import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import torch_worker


def linear(x, weight_bias):
    """y = x W^T + b; one row as a matrix-vector product."""
    if x.shape[0] == 1:
        return torch.addmv(weight_bias[1], weight_bias[0], x[0]).unsqueeze(0)
    return F.linear(x, *weight_bias)


class Gpt2Decoder:
    """A pre-norm GPT-2-style decoder (learned positions, tied LM head) from
    a tfm model description, with random weights (values do not change the
    work of a step)."""

    def __init__(self, desc, seed=0):
        d, self.heads = desc["d_model"], desc["num_heads"]
        f, vocab, self.max_len = desc["d_ff"], desc["vocab_size"], desc["max_seq_len"]
        assert desc["architecture"] == "decoder" and desc.get("norm") == "pre"
        assert desc.get("positional") == "learned" and desc.get("tie_embeddings", True)
        self.d, self.dk = d, d // self.heads
        self.eps = desc.get("norm_eps", 1e-5)
        self.approx = "tanh" if desc.get("activation") == "gelu_tanh" else "none"
        g = torch.Generator().manual_seed(seed)

        def w(*shape):
            return torch.randn(*shape, generator=g) * 0.02

        def ln():
            return 1.0 + w(d), w(d)

        self.wte, self.wpe = w(vocab, d), w(self.max_len, d)
        self.layers = [dict(ln1=ln(), qkv=(w(3 * d, d), w(3 * d)), out=(w(d, d), w(d)),
                            ln2=ln(), fc1=(w(f, d), w(f)), fc2=(w(d, f), w(d)))
                       for _ in range(desc["num_layers"])]
        self.lnf = ln()
        self.cache = torch.zeros(len(self.layers), 2, self.heads, self.max_len, self.dk)

    def forward(self, ids, pos):
        """Runs tokens `ids` (1-D) at positions pos.. with the cache holding
        every earlier position; returns the logits of the last one."""
        n, end, d, h, dk = ids.numel(), pos + ids.numel(), self.d, self.heads, self.dk
        x = self.wte[ids] + self.wpe[pos:end]
        mask = None
        if n > 1:  # causal: query i (at pos + i) sees keys 0 .. pos + i
            mask = torch.full((n, end), float("-inf")).triu_(pos + 1)
        for cache, p in zip(self.cache, self.layers):
            a = F.layer_norm(x, (d,), *p["ln1"], self.eps)
            q, k, v = linear(a, p["qkv"]).view(n, 3, h, dk).permute(1, 2, 0, 3)
            cache[0, :, pos:end] = k
            cache[1, :, pos:end] = v
            s = torch.matmul(q, cache[0, :, :end].transpose(1, 2)) * (1.0 / math.sqrt(dk))
            if mask is not None:
                s += mask
            o = torch.matmul(torch.softmax(s, dim=-1), cache[1, :, :end])
            x = x + linear(o.transpose(0, 1).reshape(n, d), p["out"])
            a = F.layer_norm(x, (d,), *p["ln2"], self.eps)
            x = x + linear(F.gelu(linear(a, p["fc1"]), approximate=self.approx), p["fc2"])
        x = F.layer_norm(x[-1], (d,), *self.lnf, self.eps)
        return torch.mv(self.wte, x)

    def generate(self, prompt, new_tokens, chunk=128):
        """Greedy: a prefill, then new_tokens - 1 decode steps; the ids and
        the time of the prefill and of each step (each with its argmax).
        The prefill goes `chunk` tokens at a time: one pass over a long
        prompt allocates [heads, P, P] scores afresh, and fresh pages are
        slow on this VM (page faults cost ~10x more than the arithmetic)."""
        t0 = time.perf_counter()
        for start in range(0, prompt.numel(), chunk):
            logits = self.forward(prompt[start:start + chunk], start)
        token = int(torch.argmax(logits))
        prefill = time.perf_counter() - t0
        ids, steps = [token], []
        for t in range(1, new_tokens):
            t0 = time.perf_counter()
            token = int(torch.argmax(self.forward(torch.tensor([token]), prompt.numel() + t - 1)))
            steps.append(time.perf_counter() - t0)
            ids.append(token)
        return ids, prefill, steps


def main():
    torch.set_num_threads(int(sys.argv[1]))
    model = None

    def reply(obj):
        sys.stdout.write("@@ " + json.dumps(obj) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        try:
            if op == "quit":
                reply({"ok": True})
                return
            with torch.no_grad():
                if op == "info":
                    reply(torch_worker.info())
                elif op == "load":
                    with open(req["model"]) as f:
                        model = Gpt2Decoder(json.load(f))
                    model.generate(torch.arange(8), 4)  # warms up the allocator and the thread pools
                    reply({"ok": True})
                elif op == "run":
                    prompt = torch.from_numpy(np.load(req["prompt"]).astype(np.int64).reshape(-1))
                    ids, prefill, steps = model.generate(prompt, int(req["new_tokens"]))
                    reply({"ok": True, "ids": ids, "prefill_ms": prefill * 1e3,
                           "step_ms": [s * 1e3 for s in steps], "threads": torch.get_num_threads()})
                else:
                    raise ValueError("unknown op %r" % op)
        except Exception as e:  # reported to decode.py, which stops
            reply({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})


if __name__ == "__main__":
    main()
