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

A Linformer or Performer model (contract section 7), which nn.Transformer
cannot express, gets UserLinearKindModel instead: the layer as a PyTorch
user writes it (the way lucidrains' linformer and performer-pytorch do),
with plain torch 1.13 ops (1.13 has no F.scaled_dot_product_attention) and
the contract's formulas: Linformer projects K and V along the sequence
(E_n K, F_n V) and runs softmax(q K'^T / sqrt(dk)) V' with matmuls;
Performer computes phi(Q), phi(K) and then its linear form, phi(K)^T V and
phi(K)^T 1 when not causal, performer-pytorch's chunked prefix sums
(causal_linear_attention_noncuda: 128 chunks, a cumsum within each and the
running sums carried across) when causal.  Like the contract, and unlike
performer-pytorch, no stabiliser (max) and no eps.

A block_sparse (BigBird) model, which nn.Transformer cannot express either,
gets TorchBlockSparseStack: the way a PyTorch user runs BigBird's rule on a
CPU today, nn.TransformerEncoder's own layers with the rule as a dense float
[seq, seq] attn_mask (0 / -inf), one per layer from that layer's
block_pattern (the weights file's, as tfm reads it), built by the same
helpers as the e2e reference's masks (reference.block_sparse_allowed, the
rule, and reference.attention_float_mask), once: the pattern is fixed, so a
user builds the mask once and passes it to every call.  Hugging Face's
BigBird (block-gathering, its own implementation and block layout) is not
run: it needs transformers, which /usr/bin/python3 does not have.
"""

import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

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


# ---------------------------------------------------------------------------
# Linformer and Performer as a PyTorch user writes them
# ---------------------------------------------------------------------------

def linformer_attention(q, k, v, proj_e, proj_f, heads):
    """Linformer (lucidrains' linformer LinformerSelfAttention, E and F as
    the contract's [k, max_seq_len]): q, k, v [B, n, d] after the
    in-projection; K' = E_n K, V' = F_n V along the sequence (one E and F
    for every head), then softmax(q K'^T / sqrt(dk)) V' per head."""
    b, n, d = q.shape
    dk = d // heads
    k = torch.matmul(proj_e[:, :n], k)                        # [B, K, d]
    v = torch.matmul(proj_f[:, :n], v)
    q = q.view(b, n, heads, dk).transpose(1, 2)               # [B, H, n, dk]
    k = k.view(b, -1, heads, dk).transpose(1, 2)              # [B, H, K, dk]
    v = v.view(b, -1, heads, dk).transpose(1, 2)
    att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * dk ** -0.5, dim=-1)
    return torch.matmul(att, v).transpose(1, 2).reshape(b, n, d)


def performer_features(x, w):
    """FAVOR+'s positive features (performer-pytorch's softmax_kernel with
    the contract's per-head W_h, no stabiliser): x [B, H, n, dk], w [H, M,
    dk] -> exp(x' W_h^T - |x'|^2 / 2) / sqrt(M), x' = x / dk^(1/4)."""
    xs = x * x.shape[-1] ** -0.25
    proj = torch.matmul(xs, w.transpose(-1, -2))              # [B, H, n, M]
    return torch.exp(proj - (xs * xs).sum(dim=-1, keepdim=True) / 2.0) * w.shape[1] ** -0.5


def linear_attention(q, k, v):
    """performer-pytorch's linear_attention (not causal)."""
    d_inv = 1.0 / torch.einsum("...nd,...d->...n", q, k.sum(dim=-2))
    context = torch.einsum("...nd,...ne->...de", k, v)
    return torch.einsum("...de,...nd,...n->...ne", context, q, d_inv)


def causal_linear_attention(q, k, v, chunks=128):
    """performer-pytorch's causal_linear_attention_noncuda (its CPU path):
    the sequence in `chunks` chunks; in each, the prefix sums of phi(k) and
    of phi(k)^T v (cumsum), plus the running sums of the chunks before.
    Without its eps (the contract has none)."""
    last_k, last_context = 0, 0
    outs = []
    for qc, kc, vc in zip(*(t.chunk(chunks, dim=-2) for t in (q, k, v))):
        k_cumsum = last_k + kc.cumsum(dim=-2)
        d_inv = 1.0 / torch.einsum("...nd,...nd->...n", qc, k_cumsum)
        context = torch.einsum("...nd,...ne->...nde", kc, vc)
        context_cumsum = last_context + context.cumsum(dim=-3)
        outs.append(torch.einsum("...nde,...nd,...n->...ne", context_cumsum, qc, d_inv))
        last_k, last_context = k_cumsum[:, :, -1:], context_cumsum[:, :, -1:]
    return torch.cat(outs, dim=-2)


class UserSelfAttention(nn.Module):
    """Self-attention with nn.MultiheadAttention's parameter names (so the
    contract's weights load as they are) and a Linformer or Performer
    core."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg.d_model
        self.heads, self.causal = cfg.num_heads, cfg.causal
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * d))
        self.out_proj = nn.Linear(d, d)
        self.kind = cfg.attention_kind
        if cfg.linformer:
            self.proj_e = nn.Parameter(torch.empty(cfg.linformer_k, cfg.max_seq_len))
            self.proj_f = nn.Parameter(torch.empty(cfg.linformer_k, cfg.max_seq_len))
        else:
            self.features = nn.Parameter(torch.empty(cfg.num_heads, cfg.performer_m, cfg.head_dim))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
        if self.kind == "linformer":
            return self.out_proj(linformer_attention(q, k, v, self.proj_e, self.proj_f, self.heads))
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        qf, kf = performer_features(q, self.features), performer_features(k, self.features)
        o = (causal_linear_attention if self.causal else linear_attention)(qf, kf, v)
        return self.out_proj(o.transpose(1, 2).reshape(b, n, d))


class UserLayer(nn.Module):
    """nn.TransformerEncoderLayer's sublayers (post-norm, or pre-norm as
    norm_first), with UserSelfAttention."""

    def __init__(self, cfg):
        super().__init__()
        d = cfg.d_model
        self.self_attn = UserSelfAttention(cfg)
        self.linear1 = nn.Linear(d, cfg.d_ff)
        self.linear2 = nn.Linear(cfg.d_ff, d)
        self.norm1 = nn.LayerNorm(d, eps=cfg.norm_eps)
        self.norm2 = nn.LayerNorm(d, eps=cfg.norm_eps)
        self.pre = cfg.norm == "pre"
        self.act = (lambda t: F.gelu(t, approximate="tanh")) if cfg.activation == "gelu_tanh" else \
            F.gelu if cfg.activation == "gelu" else F.relu

    def ff(self, x):
        return self.linear2(self.act(self.linear1(x)))

    def forward(self, x):
        if self.pre:
            x = x + self.self_attn(self.norm1(x))
            return x + self.ff(self.norm2(x))
        x = self.norm1(x + self.self_attn(x))
        return self.norm2(x + self.ff(x))


class UserLinearKindModel(nn.Module):
    """A stack of UserLayer (float inputs, no embeddings, no final norm: the
    bench's long Linformer and Performer workloads)."""

    def __init__(self, cfg):
        super().__init__()
        if (cfg.tokens or cfg.is_encdec or cfg.final_norm
                or cfg.positional != "none" or cfg.uses_section11()
                or cfg.attention_score != "scaled_dot"):
            raise ValueError("UserLinearKindModel: a float-input stack of plain layers only")
        self.layers = nn.ModuleList([UserLayer(cfg) for _ in range(cfg.num_layers)])

    def forward(self, input):  # noqa: A002 - the contract's input name
        x = input
        for layer in self.layers:
            x = layer(x)
        return x


# ---------------------------------------------------------------------------
# BigBird (block_sparse) as a PyTorch user runs it on a CPU: a dense mask
# ---------------------------------------------------------------------------

def block_sparse_attn_mask(cfg, n, pattern, dtype):
    """block_sparse's rule (contract section 7) as the float [n, n]
    attn_mask nn.TransformerEncoderLayer takes, 0 where the query attends
    the key and -inf elsewhere: reference.block_sparse_allowed (blocks of
    cfg.block; |qb - kb| <= window_blocks, qb < global_blocks, kb <
    global_blocks, or kb in row qb of `pattern` among [0, ceil(n / block));
    causal on top) through reference.attention_float_mask, the helpers the
    e2e reference builds its dense masks with."""
    allowed = reference.block_sparse_allowed(range(n), range(n), cfg.block, cfg.window_blocks,
                                             cfg.global_blocks, pattern, cfg.causal)
    return reference.attention_float_mask(allowed, dtype)


class TorchBlockSparseStack(nn.TransformerEncoder):
    """nn.TransformerEncoder of the e2e reference's nn.TransformerEncoderLayer
    (the same layers as its TorchSingleStack: batch_first, dropout 0,
    norm_first for pre-norm), each layer's self-attention given BigBird's
    rule as a dense float attn_mask from its own block_pattern (an integer
    buffer layers.{i}.self_attn.block_pattern [ceil(max_seq_len / block),
    R], loaded from the weights file; none without random blocks).  The
    masks are built on the first pass at a length (the warm-up) and kept
    while the patterns stay as loaded."""

    @staticmethod
    def expresses(cfg):
        """A float-input stack of plain layers (the bench's workloads)."""
        return not (cfg.tokens or cfg.is_encdec or cfg.final_norm or cfg.positional != "none"
                    or cfg.uses_section11() or cfg.attention_score != "scaled_dot")

    def __init__(self, cfg):
        if not self.expresses(cfg):
            raise ValueError("TorchBlockSparseStack: a float-input stack of plain layers only")
        super().__init__(reference._encoder_layer(cfg), cfg.num_layers, norm=None, enable_nested_tensor=False)
        self.cfg = cfg
        if cfg.random_blocks:
            rows = -(-cfg.max_seq_len // cfg.block)
            for layer in self.layers:
                layer.self_attn.register_buffer(
                    "block_pattern", torch.zeros(rows, cfg.random_blocks, dtype=torch.long))
        self._masks = {}

    def masks(self, n, dtype):
        patterns = [getattr(layer.self_attn, "block_pattern", None) for layer in self.layers]
        key = (n, dtype, tuple(None if p is None else (p.data_ptr(), p._version) for p in patterns))
        if key not in self._masks:
            self._masks = {key: [block_sparse_attn_mask(self.cfg, n, p, dtype) for p in patterns]}
        return self._masks[key]

    def forward(self, input):  # noqa: A002 - the contract's input name
        x = input
        for layer, mask in zip(self.layers, self.masks(x.shape[-2], x.dtype)):
            x = layer(x, src_mask=mask)
        return x


def build_model(cfg):
    """UserLinearKindModel for Linformer and Performer, TorchBlockSparseStack
    for block_sparse (a float-input stack of plain layers); otherwise
    test/e2e/reference.py's build_torch_model (for another block_sparse
    model its formula model gathering blocks: the results name the class)."""
    if cfg.linformer or cfg.performer:
        return UserLinearKindModel(cfg).eval()
    if cfg.block_sparse and TorchBlockSparseStack.expresses(cfg):
        return TorchBlockSparseStack(cfg).eval()
    return reference.build_torch_model(cfg)


def describe(cfg, model):
    """The model's class and the attention mask PyTorch gets, for the results."""
    cls = type(model).__name__
    n = cfg.max_seq_len
    if cls == "UserLinearKindModel":
        if cfg.linformer:
            return cls, ("none: Linformer k %d, K and V projected along the sequence, then matmul / softmax"
                         % cfg.linformer_k)
        return cls, ("none: Performer M %d, linear form (%s)"
                     % (cfg.performer_m, "performer-pytorch's chunked cumsum, 128 chunks" if cfg.causal
                        else "phi(K)^T V and phi(K)^T 1"))
    if cls == "TorchBlockSparseStack":
        return (cls + " (nn.TransformerEncoder)",
                "a dense float [%d, %d] (0 / -inf) per layer, built once: BigBird blocks of %d, %d window "
                "block%s each side, %d global block%s, %d random block%s from the layer's block_pattern%s"
                % (n, n, cfg.block, cfg.window_blocks, "" if cfg.window_blocks == 1 else "s",
                   cfg.global_blocks, "" if cfg.global_blocks == 1 else "s",
                   cfg.random_blocks, "" if cfg.random_blocks == 1 else "s", ", causal" if cfg.causal else ""))
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
                model = build_model(cfg)
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
