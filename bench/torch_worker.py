#!/usr/bin/python3
"""The PyTorch side of bench/: a long-lived worker, one per thread count.

bench.py starts it as `torch_worker.py THREADS` with OPENBLAS_NUM_THREADS and
OMP_NUM_THREADS set to THREADS and OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset
(so OpenBLAS picks its AVX-512 kernels), then sends one JSON request per line
on stdin; each answer is one stdout line starting with "@@ " and a JSON object.

  {"op": "info"}
  {"op": "load", "key": K, "model": DESC.json, "weights": W.safetensors, "input": X.npy}
  {"op": "run", "key": K, "runs": N, "warmup": W, "output": OUT.npy or null}
  {"op": "quit"}

The model is test/e2e/reference.py's build_torch_model: for every bench
workload its implementation (a), PyTorch's own nn.TransformerEncoderLayer
stack (batch_first, dropout 0, norm_first for pre-norm, a causal attn_mask
for decoders; a sliding window (contract section 7) as a dense float
[seq, seq] attn_mask, 0 where a pair is attended and -inf elsewhere), in
eval mode, fp32, run under torch.no_grad() -- what a user of PyTorch 1.13
would write.  For a windowed model that (a) cannot express, build_torch_model
returns another implementation (the formula model in its banded form, or the
Hugging Face style one); those take their inputs by name, so the model is
always called as model(input=x), which (a) takes too.  "load" answers with
the model's class and the mask it is given ("model", "mask").
"""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import reference  # noqa: E402
import safetensors  # noqa: E402


def blas_libraries():
    """The BLAS/oneDNN shared objects mapped into this process."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if any(s in base for s in ("blas", "dnnl", "mkl", "gomp")):
                libs.add(os.path.realpath(path))
    return sorted(libs)


def openblas_core():
    """OpenBLAS's kernel choice (openblas_get_corename), if it is loaded."""
    import ctypes
    for path in blas_libraries():
        if "openblas" in os.path.basename(path):
            try:
                lib = ctypes.CDLL(path)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                return lib.openblas_get_corename().decode()
            except (OSError, AttributeError):
                pass
    return None


def cpu_capability():
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "?"


def info():
    """The answer to {"op": "info"} (decode_worker.py answers with it too)."""
    return {"ok": True, "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpu_capability": cpu_capability(),
            "blas": blas_libraries(),
            "openblas_core": openblas_core(),
            "env": {k: os.environ.get(k) for k in (
                "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}}


def describe(cfg, model):
    """The model's class and the attention mask PyTorch gets, for the results."""
    cls = type(model).__name__
    n = cfg.max_seq_len
    if cls != "TorchSingleStack":
        return cls, "%s's own (not an nn.TransformerEncoder attn_mask)" % cls
    cls = "TorchSingleStack (nn.TransformerEncoder)"
    if cfg.sliding_window:
        return cls, ("a dense float [%d, %d] (0 / -inf): window %d, %d global tokens%s"
                     % (n, n, cfg.window, cfg.global_tokens, ", causal" if cfg.causal else ""))
    if cfg.causal:
        return cls, "a dense float [%d, %d] causal mask (generate_square_subsequent_mask)" % (n, n)
    return cls, "none"


def main():
    threads = int(sys.argv[1])
    torch.set_num_threads(threads)
    models = {}
    out = sys.stdout

    def reply(obj):
        out.write("@@ " + json.dumps(obj) + "\n")
        out.flush()

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        op = req.get("op")
        try:
            if op == "quit":
                reply({"ok": True})
                return
            if op == "info":
                reply(info())
            elif op == "load":
                with open(req["model"]) as f:
                    cfg = reference.Config(json.load(f))
                model = reference.build_torch_model(cfg)
                if model is None:
                    raise ValueError("PyTorch's modules cannot express this model")
                reference.load_weights(model, safetensors.load_file(req["weights"]))
                model.eval()
                dtype = next(model.parameters()).dtype
                x = torch.from_numpy(np.load(req["input"]).astype(np.float32)).to(dtype)
                # By name: (a) takes `input` positionally or by name, the
                # formula and Hugging Face style models by name only.
                models[req["key"]] = (model, {cfg.input_names[0]: x})
                cls, mask = describe(cfg, model)
                reply({"ok": True, "model": cls, "mask": mask})
            elif op == "run":
                model, x = models[req["key"]]
                times = []
                with torch.no_grad():
                    for _ in range(int(req["warmup"])):
                        y = model(**x)
                    for _ in range(int(req["runs"])):
                        t0 = time.perf_counter()
                        y = model(**x)
                        times.append(time.perf_counter() - t0)
                if req.get("output"):
                    np.save(req["output"], y.float().numpy())
                times_ms = [t * 1e3 for t in times]
                reply({"ok": True, "median_ms": statistics.median(times_ms),
                       "min_ms": min(times_ms), "runs": len(times_ms),
                       "threads": torch.get_num_threads()})
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # reported to bench.py, which stops
            reply({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})


if __name__ == "__main__":
    main()
