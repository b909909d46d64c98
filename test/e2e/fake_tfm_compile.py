#!/usr/bin/python3
"""A stand-in for tfm-compile, to test run_e2e.py itself (not the compiler).

`fake_tfm_compile.py MODEL.json -o EXE [--max-batch N] [--max-seq-len N]`
writes EXE, a Python script that behaves like the contract's section 4
executable: --weights W.safetensors --input NAME=X.npy --output OUT.npy
--threads N.  It reads the weights with test/e2e/safetensors.py (checking
names and shapes like the real loader), infers shared enc-dec embeddings
from the file (`embed.weight` alone), checks input dtypes and the compiled
limits, and computes with reference.py's formula model (b).  Padding masks
(contract section 8: `--input mask=M.npy`, or src_mask / tgt_mask) are
checked as the contract says (reference.mask_problems: dtype, shape, values
0 and 1, a real token in every row, none on a linformer, performer or mamba model), each
refusal an exit 1 naming the input, and the output computed with them;
`--generate N` with a mask is refused the same way (exit 1), and without one
exits 2 (generation is fake_generate_compile.py's).

`--emit=mlir -o OUT.mlir` writes what run_e2e.py's IR check reads of the
real frontend's output: the module's tfm.max_batch / tfm.max_seq_len and
one `tfm.param @NAME : tensor<...xf32>` per tensor of the contract's
listing (reference.expected_weights), an encoder_decoder's token tables with
`{alias = "embed.weight"}` as the real frontend prints them.

TFM_FAKE_MODE (read when compiling) selects a behaviour:
  exact         correct output (default)
  unavailable   --emit=exe exits 1 with "--emit=exe is not available yet" (--emit=mlir
                works, as in a frontend-only build)
  noisy         adds 1e-3 * (1 + max|out|) to one element (must FAIL: tolerance)
  threads       --threads 2 perturbs the last bit of one element (must FAIL: bit-identity)
  float64       writes a float64 output (must FAIL: dtype)
  nobatch       drops the batch dimension (must FAIL: shape)
  crash         the executable aborts with a message on stderr (must FAIL: exit status)
  hang          the executable sleeps past the run timeout (must FAIL: timeout)
  noexe         compile exits 0 but writes nothing (must FAIL)
  ir_warning    --emit=mlir succeeds but prints a warning on stderr (must FAIL: IR check)
  ir_drop_param --emit=mlir leaves out the last tfm.param (must FAIL: IR check, a weights
                file tensor the IR does not use)
  ir_extra_param --emit=mlir adds a tfm.param the weights file lacks (must FAIL: IR check)
  ir_shape      --emit=mlir makes the first tfm.param's first dimension one longer (must FAIL)
  no_window     computes every attention as full, ignoring the model's `attention` (a
                sliding window): must FAIL on the win_* cases whose window does not cover
                the sequence (tolerance)
  no_linformer  reads (and checks) a linformer model's proj_e / proj_f but computes full
                attention without them: must FAIL on every lin_* case (tolerance)
  no_performer  reads (and checks) a performer model's features but computes ordinary
                softmax attention (softmax(q k^T / sqrt(dk)), causal as the model says)
                without them: must FAIL on every perf_* case (tolerance; the perf_err_*
                mask cases still pass: the mask is refused before any attention)
  no_mask       ignores padding masks (reads and checks nothing of them, computes as without
                them): must FAIL on every mask_* case with padding (tolerance; mask_all_ones
                passes, and the mask_err_* cases fail by exiting 0 or 2, not 1)
  no_block_sparse reads (and checks) a block_sparse model's block_pattern but computes full
                attention: must FAIL on the bs_* cases whose blocks do not cover the sequence
                (tolerance)
  ids_wrap      block_sparse: reads block_pattern ids as int32 (an I64 id truncated) and a
                negative id -m as block nb - m (Python's indexing) instead of ignoring them:
                must FAIL on the bs_* cases whose planted ids then add a key block (tolerance)
  no_moe        a mixture-of-experts model: ignores the routing, every token through expert 0
                alone (weight 1), reading (and checking) neither the gate nor the other experts'
                tensors: must FAIL on every moe_* case (tolerance; the moe_load_* cases, a missing
                moe.experts.1.linear2.weight and a transposed moe.gate.weight, by exiting 0)
  no_layers     ignores section 7's `layers` (a decoder's per-layer kinds): builds every layer
                with the model-level `attention` and `ffn`, so its IR lists the model-level
                weight names and its executable expects them: must FAIL on every layers_* case
                (the IR check where a layer's kind has other weights, else tolerance; the
                layers_err_mask_performer case at the IR check too, and its executable would
                not refuse the mask)
  no_mamba_scan a model with mamba layers (contract section 7): reads and checks every mixer
                tensor but drops the scan, each mixer's y = D u alone (reference.MAMBA_MISTAKES'
                no_ssm): must FAIL on every mamba_* case that compares an output (tolerance; the
                self-test requires each to see the scan by more than reference.MAMBA_SHOWN tol)

`--weight-dtype=f32|bf16|f16|int8` (contract section 10; another value is
an exit 1): its IR marks the GEMM weights (weight_formats.gemm_weights of
the IR's own names: a tied encoder_decoder head's tgt_embed.weight)
`{format = #tfm.weight_format<X>}`, and its executable converts the file's
GEMM weights as weight_formats.convert does (an f16 overflow: exit 1
naming the tensor) and computes in f32.  The modes for it:
  wdtype_ignored   accepts --weight-dtype and ignores it: no format in the IR, the f32
                   weights computed with (must FAIL: IR check, a GEMM weight without format)
  wdtype_unconverted marks the IR as the contract says but computes with the unconverted
                   weights (must FAIL with int8: the output matches the f32 weights'
                   reference, "--weight-dtype=int8 ignored")
  wdtype_all_rank2 marks and converts every rank-2 float weight (untied embedding tables,
                   positions, the MoE gate, ...) (must FAIL: IR check, a format on a weight
                   that is not a GEMM weight)
  wdtype_row_scale int8 with one scale per row instead of per block of 32 columns (must
                   FAIL: tolerance, on models whose GEMMs have more than 32 input columns)
  wdtype_f16_inf   f16 without the overflow check: a value beyond 65504 becomes inf and the
                   executable runs (must FAIL on wdtype_f16_range: exit 0, not 1 naming the
                   tensor)

`--compute=f32|bf16` (contract section 10; another value is an exit 1):
--emit=mlir is unchanged by it (as the real frontend's), and with bf16 the
executable rounds both inputs of every GEMM but the MoE router's to bf16
(reference.py's `linear`, which (b) calls for every projection, FFN and
expert linear and the LM head, patched while it runs; the gate's own
forward left unrounded), products summed in f32.  The modes for it:
  compute_ignored  accepts --compute=bf16 and computes in f32 (must FAIL: "--compute=bf16
                   ignored", the output equal to the build without --compute bit for bit)
  compute_noisy    computes as bf16 should, then adds 2e-2 * (1 + max|out|) to one element
                   (must FAIL: tolerance, 1e-2 * (1 + max|ref|) with --compute=bf16)

Cost (nothing the harness sees): `import reference` (torch) is most of
each call's time, so a call reuses what an earlier one of the same run
computed.  --emit=exe after an --emit=mlir of the same model file (its
contents and mtime: written by this run) with the same --max-batch,
--max-seq-len and TFM_FAKE_MODE skips the model's checks that call passed
(a file .fake_tfm_compile-KEY.ok next to OUT; a call that failed them
leaves none, and every --emit=mlir checks afresh).  An executable stores a
successful run's output before the mode's changes (EXE.run-KEY, an .npz),
KEY a hash of the executable file (path, inode, size, mtime: this
compile's), what it was compiled with, these scripts' sources and its
arguments but --output and --threads, with the contents of --weights and
every --input file; a run with the same KEY (--threads 2 after --threads 1)
loads it instead of computing with reference.py, then applies the mode as
ever (crash and hang before any of this, threads after).

Like tfm-compile, it refuses a linformer model, or a block_sparse one with
random blocks, with --max-seq-len above the model's max_seq_len (E and F
have max_seq_len columns, block_pattern ceil(max_seq_len / block) rows;
contract section 7); its IR marks block_pattern `{block_ids}`, and its
executable refuses a weights file with an integer dtype for a float weight
or a float one for block_pattern (exit 1 naming the tensor).
"""

import argparse
import glob
import hashlib
import json
import os
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

MODES = ("exact", "unavailable", "noisy", "threads", "float64", "nobatch", "crash", "hang", "noexe",
         "ir_warning", "ir_drop_param", "ir_extra_param", "ir_shape", "no_window", "no_linformer",
         "no_performer", "no_mask", "no_block_sparse", "ids_wrap", "no_moe", "no_layers", "no_mamba_scan",
         "wdtype_ignored", "wdtype_unconverted", "wdtype_all_rank2", "wdtype_row_scale", "wdtype_f16_inf",
         "compute_ignored", "compute_noisy")
WEIGHT_DTYPES = ("f32", "bf16", "f16", "int8")
COMPUTES = ("f32", "bf16")
EMITS = ("exe", "mlir")


def _hash_file(h, path):
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)


def _sources_key(h):
    """The sources the fakes compute with (every .py here): a change to
    them is a change of KEY."""
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".py"):
            h.update(name.encode() + b"\0")
            _hash_file(h, os.path.join(HERE, name))


def _verdict_path(model, out, argv_key):
    """The file by which an --emit=mlir call tells the --emit=exe one of the
    same model file and options that the model's checks passed (in OUT's
    directory); None where the model file cannot be read."""
    try:
        st = os.stat(model)
        h = hashlib.sha256()
        h.update(json.dumps([os.path.abspath(model), st.st_ino, st.st_size, st.st_mtime_ns, argv_key]).encode())
        _hash_file(h, model)
        _sources_key(h)
    except OSError:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(out)), ".fake_tfm_compile-%s.ok" % h.hexdigest()[:32])


def _read_verdict(path):
    """The max seq len the model's checks gave, or None."""
    if path is None:
        return None
    try:
        with open(path) as f:
            return int(json.load(f)["max_seq"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _remove_stale(pattern, keep, before_ns):
    """Removes the files matching pattern but keep that are older than
    before_ns (an earlier run's)."""
    pattern = os.path.join(glob.escape(os.path.dirname(pattern)), os.path.basename(pattern))
    for path in glob.glob(pattern):
        try:
            if path != keep and os.stat(path).st_mtime_ns < before_ns:
                os.remove(path)
        except OSError:
            pass


def _write_atomic(path, write):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass


def compile_main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("-o", dest="out", required=True)
    ap.add_argument("--max-batch", type=int, default=1)
    ap.add_argument("--max-seq-len", type=int, default=0)
    ap.add_argument("--emit", default="exe")
    # Code generation settings (cases.py's cache sizes, run_e2e.py --backend):
    # accepted and ignored, the fake computes with the reference either way.
    ap.add_argument("--l1-cache-bytes")
    ap.add_argument("--l2-cache-bytes")
    ap.add_argument("--backend")
    ap.add_argument("--weight-dtype", default="f32")
    ap.add_argument("--compute", default="f32")
    args = ap.parse_args(argv)
    mode = os.environ.get("TFM_FAKE_MODE", "exact")
    if args.weight_dtype not in WEIGHT_DTYPES:
        print("tfm-compile: error: --weight-dtype=%s: expected one of %s" % (args.weight_dtype, ", ".join(WEIGHT_DTYPES)),
              file=sys.stderr)
        return 1
    if args.compute not in COMPUTES:
        print("tfm-compile: error: --compute=%s: expected one of %s" % (args.compute, ", ".join(COMPUTES)),
              file=sys.stderr)
        return 1
    wdtype = "f32" if mode == "wdtype_ignored" else args.weight_dtype
    compute = "f32" if mode == "compute_ignored" else args.compute
    if mode not in MODES:
        print("fake tfm-compile: unknown TFM_FAKE_MODE %r" % mode, file=sys.stderr)
        return 2
    if args.emit not in EMITS:
        print("fake tfm-compile: error: --emit=%s is not faked (only %s)" % (args.emit, ", ".join(EMITS)),
              file=sys.stderr)
        return 1
    if mode == "unavailable" and args.emit == "exe":
        print("tfm-compile: error: --emit=exe is not available yet: this build has the frontend "
              "only; use --emit=mlir", file=sys.stderr)
        return 1
    sys.path.insert(0, HERE)
    # The model's checks below depend on the model file, TFM_FAKE_MODE,
    # --max-batch and --max-seq-len alone (not --emit, -o, the code
    # generation settings):
    # an --emit=exe after an --emit=mlir that passed them need not repeat
    # them (nor import torch for them).
    verdict = _verdict_path(args.model, args.out, [mode, args.max_batch, args.max_seq_len])
    with open(args.model) as f:
        desc = json.load(f)
    if mode == "no_layers":
        desc.pop("layers", None)    # every layer the model-level kinds
    cfg = None
    max_seq = _read_verdict(verdict) if args.emit == "exe" else None
    if max_seq is None:
        checked = _check_model(args, desc)
        if checked is None:
            return 1
        cfg, max_seq = checked
        if verdict is not None and args.emit == "mlir":
            def write(tmp):
                with open(tmp, "w") as f:
                    json.dump({"max_seq": max_seq}, f)
            _write_atomic(verdict, write)
            try:
                _remove_stale(os.path.join(os.path.dirname(verdict), ".fake_tfm_compile-*.ok"), verdict,
                              os.stat(args.model).st_mtime_ns)
            except OSError:
                pass
    if args.emit == "mlir":
        return emit_mlir(cfg, args.max_batch, max_seq, mode, args.out, wdtype)
    if mode == "noexe":
        return 0
    script = "#!%s\nimport sys\nsys.path.insert(0, %r)\nimport fake_tfm_compile\n" \
             "sys.exit(fake_tfm_compile.exe_main(%r, %d, %d, %r, sys.argv[1:], %r, %r, exe=__file__))\n" % (
                 sys.executable, HERE, json.dumps(desc), args.max_batch, max_seq, mode, wdtype, compute)
    with open(args.out, "w") as f:
        f.write(script)
    os.chmod(args.out, os.stat(args.out).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return 0


def _check_model(args, desc):
    """The model's checks (reference.Config, the seq len limits); returns
    (the Config, the max seq len), or None after printing the error."""
    import reference
    try:
        cfg = reference.Config(desc)
    except reference.ConfigError as e:
        print("%s: error: %s" % (args.model, e), file=sys.stderr)
        return None
    max_seq = args.max_seq_len or cfg.max_seq_len
    if cfg.positional == "learned" and max_seq > cfg.max_seq_len:
        print("%s: error: --max-seq-len %d exceeds max_seq_len" % (args.model, max_seq), file=sys.stderr)
        return None
    if cfg.linformer and max_seq > cfg.max_seq_len:
        print("%s: error: --max-seq-len %d exceeds max_seq_len %d: linformer's proj_e and proj_f have "
              "max_seq_len columns" % (args.model, max_seq, cfg.max_seq_len), file=sys.stderr)
        return None
    if any(lc.block_sparse and lc.random_blocks for lc in cfg.layer_configs()) and max_seq > cfg.max_seq_len:
        print("%s: error: --max-seq-len %d exceeds max_seq_len %d: block_sparse's block_pattern has no rows "
              "for the query blocks beyond it" % (args.model, max_seq, cfg.max_seq_len), file=sys.stderr)
        return None
    return cfg, max_seq


def _formatted(cfg, names, mode, wdtype):
    """The weights that get a format: the GEMM weights among `names`
    (weight_formats.gemm_weights), or with wdtype_all_rank2 every rank-2
    float weight."""
    import weight_formats
    if wdtype == "f32":
        return set()
    if mode == "wdtype_all_rank2":
        return {n for n, v in names.items() if len(getattr(v, "shape", v)) == 2
                and not n.endswith("self_attn.block_pattern")}
    return weight_formats.gemm_weights(cfg, names)


def emit_mlir(cfg, max_batch, max_seq, mode, out, wdtype="f32"):
    """The parts of the frontend's IR that run_e2e.check_ir reads."""
    import reference
    params = list(reference.expected_weights(cfg, False).items())
    formatted = _formatted(cfg, dict(params), mode, wdtype)
    if mode == "ir_drop_param":
        params = params[:-1]
    if mode == "ir_extra_param":
        params.append(("layers.99.extra.weight", (cfg.d_model,)))
    if mode == "ir_shape":
        name, shape = params[0]
        params[0] = (name, (shape[0] + 1,) + tuple(shape[1:]))
    lines = ["module attributes {tfm.max_batch = %d : i64, tfm.max_seq_len = %d : i64} {"
             % (max_batch, max_seq)]
    for name, shape in params:
        attrs = []
        if cfg.is_encdec and name in ("src_embed.weight", "tgt_embed.weight"):
            attrs.append('alias = "embed.weight"')
        if name.endswith("self_attn.block_pattern"):
            attrs.append("block_ids")
        if name in formatted:
            attrs.append("format = #tfm.weight_format<%s>" % wdtype)
        alias = " {%s}" % ", ".join(attrs) if attrs else ""
        lines.append("  tfm.param @%s%s : tensor<%sxf32>" % (name, alias, "x".join(str(d) for d in shape)))
    lines.append("}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if mode == "ir_warning":
        print("%s: warning: simulated frontend warning" % out, file=sys.stderr)
    return 0


def convert_weights(cfg, weights, mode, wdtype):
    """The file's weights as --weight-dtype converts them (mode's mistakes
    included); raises weight_formats.F16Overflow."""
    import numpy as np
    import weight_formats as wf
    if wdtype == "f32" or mode == "wdtype_unconverted":
        return weights
    out = dict(weights)
    for name in _formatted(cfg, weights, mode, wdtype):
        w = np.asarray(weights[name], dtype=np.float32)
        if mode == "wdtype_row_scale" and wdtype == "int8":
            s = (np.max(np.abs(w), axis=1, keepdims=True) / np.float32(127)).astype(np.float32)
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.where(s > 0, np.rint(w / s), np.float32(0)).astype(np.float32)
            out[name] = (q * s).astype(np.float32)
        elif mode == "wdtype_f16_inf" and wdtype == "f16":
            with np.errstate(over="ignore"):
                out[name] = w.astype(np.float16).astype(np.float32)
        else:
            out[name] = wf.convert(w, wdtype, name)
    return out


class _Bf16Gemms:
    """--compute=bf16 while (b) runs: reference.linear (every GEMM of (b):
    projections, FFN and expert linears, the LM head) with both inputs
    rounded to bf16; each MoE gate's forward computes its logits from the
    unrounded values."""

    def __init__(self, model):
        import reference
        self.ref = reference
        self.gates = [m.gate for m in reference.moe_modules(model) if isinstance(m, reference.FormulaMoE)]

    def __enter__(self):
        import torch
        plain = self.plain = self.ref.linear

        def bf16(t):
            return t.to(torch.bfloat16).to(t.dtype)

        self.ref.linear = lambda x, w, b=None: plain(bf16(x), bf16(w), b)
        for g in self.gates:
            g.forward = (lambda x, g=g: plain(x, g.weight, g.bias))
        return self

    def __exit__(self, *exc):
        self.ref.linear = self.plain
        for g in self.gates:
            del g.forward
        return False


def _run_key(exe, params, files, rest):
    """The path under which the executable exe (None: none) stores the
    output of a successful run (see the module's doc): a hash of exe's
    file (path, inode, size, mtime), params (what it was compiled with),
    the sources, rest (the arguments but the files, --output and --threads)
    and the contents of files ([(name, path)]); None where one cannot be
    read (no cache: the run reports it as ever)."""
    if exe is None:
        return None
    try:
        exe = os.path.abspath(exe)
        st = os.stat(exe)
        h = hashlib.sha256()
        h.update(json.dumps([exe, st.st_ino, st.st_size, st.st_mtime_ns, params, rest,
                             [name for name, _ in files]]).encode())
        for _, path in files:
            h.update(b"\0file\0")
            _hash_file(h, path)
        _sources_key(h)
    except (OSError, TypeError, ValueError):
        return None
    return "%s.run-%s" % (exe, h.hexdigest()[:32])


def _load_cached(path):
    """The arrays stored at path (np.savez), or None."""
    if path is None or not os.path.isfile(path):
        return None
    import numpy as np
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception:  # noqa: BLE001 - an unreadable cache is no cache
        return None


def _store_cached(path, exe, **arrays):
    """Stores arrays at path (np.savez, atomically), removing the files
    an earlier compile of exe left."""
    if path is None:
        return
    import numpy as np

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
    _write_atomic(path, write)
    try:
        _remove_stale(os.path.abspath(exe) + ".run-*", path, os.stat(exe).st_mtime_ns)
    except OSError:
        pass


def exe_main(desc_json, max_batch, max_seq, mode, argv, wdtype="f32", compute="f32", exe=None):
    import numpy as np
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--output", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--generate", type=int, default=None)
    args = ap.parse_args(argv)
    if mode == "crash":
        print("model: fatal: simulated crash", file=sys.stderr)
        os.abort()
    if mode == "hang":
        import time
        time.sleep(3600)
    # A run like an earlier successful one of this executable (--threads 2
    # after 1): its output, then the mode's changes as below.
    cache = None
    if args.generate is None:
        inputs = [s.partition("=")[::2] for s in args.input]
        cache = _run_key(exe, [desc_json, max_batch, max_seq, mode, wdtype, compute],
                         [("--weights", args.weights)] + [("--input " + n, p) for n, p in inputs], [])
        hit = _load_cached(cache)
        if hit is not None:
            return _finish_output(hit["out"], mode, args)
    import reference
    import safetensors as st
    cfg = reference.Config(json.loads(desc_json))
    weights, dtypes = st.load_file(args.weights, with_dtypes=True)
    shared = cfg.is_encdec and "embed.weight" in weights
    expected = reference.expected_weights(cfg, shared)
    if mode == "no_moe" and cfg.moe:
        # Expert 0 alone: the gate and the other experts are neither read
        # nor checked (zeros stand in for them).
        unread = [k for k in expected if ".moe.gate." in k or (".moe.experts." in k and ".moe.experts.0." not in k)]
        for k in unread:
            weights[k], dtypes[k] = np.zeros(expected[k], np.float32), "F32"
    for name, shape in expected.items():
        if name not in weights:
            print("model: error: %s: missing tensor %s" % (args.weights, name), file=sys.stderr)
            return 1
        if tuple(weights[name].shape) != shape:
            print("model: error: %s: tensor %s is %s, expected %s"
                  % (args.weights, name, list(weights[name].shape), list(shape)), file=sys.stderr)
            return 1
    extra = sorted(set(weights) - set(expected))
    if extra:
        print("model: error: %s: unexpected tensors %s" % (args.weights, extra), file=sys.stderr)
        return 1
    for name in expected:
        ids = name.endswith("self_attn.block_pattern")
        if (dtypes[name] in ("I32", "I64")) != ids:
            print("model: error: %s: tensor '%s' has dtype %s, expected %s" % (
                args.weights, name, dtypes[name], "I32 or I64" if ids else "F32, F16 or BF16"), file=sys.stderr)
            return 1
    # Contract section 10: the GEMM weights converted at load.
    import weight_formats
    try:
        weights = convert_weights(cfg, weights, mode, wdtype)
    except weight_formats.F16Overflow as e:
        print("model: error: %s: %s" % (args.weights, e), file=sys.stderr)
        return 1
    inputs, masks = {}, {}
    for spec in args.input:
        name, _, path = spec.partition("=")
        a = np.load(path)
        if name in cfg.mask_names:
            if mode != "no_mask":       # no_mask: ignored, not even checked
                masks[name] = a
            continue
        if cfg.tokens and a.dtype not in (np.int32, np.int64):
            print("model: error: %s: dtype %s, expected int32 or int64" % (path, a.dtype), file=sys.stderr)
            return 1
        if not cfg.tokens and a.dtype != np.float32:
            print("model: error: %s: dtype %s, expected float32" % (path, a.dtype), file=sys.stderr)
            return 1
        batched = a.ndim == (2 if cfg.tokens else 3)
        if (a.shape[0] if batched else 1) > max_batch or a.shape[-2 if not cfg.tokens else -1] > max_seq:
            print("model: error: %s: shape %s exceeds the compiled limits (batch %d, seq %d)"
                  % (path, list(a.shape), max_batch, max_seq), file=sys.stderr)
            return 1
        if cfg.tokens and (a.min() < 0 or a.max() >= cfg.vocab_size):
            print("model: error: %s: token id out of range" % path, file=sys.stderr)
            return 1
        inputs[name] = a
    if sorted(inputs) != sorted(cfg.input_names):
        print("model: error: inputs %s, expected %s" % (sorted(inputs), list(cfg.input_names)), file=sys.stderr)
        return 1
    problems = reference.mask_problems(cfg, dict(inputs, **masks))
    if problems:
        print("model: error: %s" % problems[0][1], file=sys.stderr)
        return 1
    if args.generate is not None:
        if masks:
            print("model: error: --generate with a mask input (%s) is not supported yet"
                  % ", ".join(sorted(masks)), file=sys.stderr)
            return 1
        print("fake model: --generate is faked by fake_generate_compile.py, not here", file=sys.stderr)
        return 2
    inputs.update(masks)
    if mode == "no_window":
        cfg = reference.Config(dict(json.loads(desc_json), attention={"kind": "full"}))
    if mode == "no_linformer" and cfg.linformer:
        cfg = reference.Config(dict(json.loads(desc_json), attention={"kind": "full"}))
        weights = {k: v for k, v in weights.items() if not k.endswith(("self_attn.proj_e", "self_attn.proj_f"))}
    if mode == "no_performer" and cfg.performer:
        cfg = reference.Config(dict(json.loads(desc_json), attention={"kind": "full"}))
        weights = {k: v for k, v in weights.items() if not k.endswith("self_attn.features")}
    if mode == "no_block_sparse" and cfg.block_sparse:
        cfg = reference.Config(dict(json.loads(desc_json), attention={"kind": "full"}))
        weights = {k: v for k, v in weights.items() if not k.endswith("self_attn.block_pattern")}
    if mode == "ids_wrap" and cfg.block_sparse:
        lengths = {"layers": None, "encoder": None, "decoder": None}
        for name, a in inputs.items():
            if name in cfg.input_names:
                n = a.shape[-2] if not cfg.tokens else a.shape[-1]
                lengths[{"input": "layers", "src": "encoder", "tgt": "decoder"}[name]] = n
        for k in [k for k in weights if k.endswith("self_attn.block_pattern")]:
            nb = -(-lengths[k.split(".")[0]] // cfg.kinds_of(k).block)
            p = weights[k].astype(np.int32).astype(np.int64)
            weights[k] = np.where((p < 0) & (p >= -nb), p + nb, p)
    model = reference.load_weights(reference.build_formula_model(cfg, shared), weights)
    if mode == "no_moe":
        for m in reference.moe_modules(model):
            m.mistake = "expert0"
    if mode == "no_mamba_scan":
        for m in reference.mamba_mixers(model):
            m.mistake = "no_ssm"
    if compute == "bf16":
        with _Bf16Gemms(model):
            out = reference.run_model(model, cfg, inputs).numpy().astype(np.float32)
    else:
        out = reference.run_model(model, cfg, inputs).numpy().astype(np.float32)
    _store_cached(cache, exe, out=out)
    return _finish_output(out, mode, args)


def _finish_output(out, mode, args):
    """The mode's changes to the computed output out, which is saved to
    --output; returns the exit status."""
    import numpy as np
    flat = out.reshape(-1)
    if mode == "compute_noisy" and flat.size:
        flat[flat.size // 2] += 2e-2 * (1.0 + float(np.max(np.abs(out))))
    if mode == "noisy" and flat.size:
        flat[flat.size // 2] += 1e-3 * (1.0 + float(np.max(np.abs(out))))
    if mode == "threads" and args.threads == 2 and flat.size:
        flat.view(np.uint32)[0] ^= 1
    if mode == "float64":
        out = out.astype(np.float64)
    if mode == "nobatch":
        out = out.reshape((-1,) + out.shape[-1:])
    np.save(args.output, out)
    return 0


if __name__ == "__main__":
    sys.exit(compile_main(sys.argv[1:]))
