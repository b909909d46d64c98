#!/usr/bin/python3
"""End-to-end tests: tfm-compile'd executables against the PyTorch reference.

For each case of cases.py:
  1. write CASE.json, make weights with a fixed seed (PyTorch-like init,
     LayerNorm and zero biases perturbed), save them as safetensors (F32 or
     the case's F16/BF16) and read the file back to check it;
  2. make the inputs (.npy) and check they read back;
  3. compute the reference: PyTorch's own modules (reference.py (a)) where
     they can express the model, else the from-the-formulas model (b); where
     both apply they must agree (max abs diff < 1e-5, relative above
     magnitude 1), and the fp32 reference must be within a tenth of the
     tolerance of a float64 run of (b) (the case is well-conditioned);
  4. the frontend: tfm-compile CASE.json --emit=mlir [--max-batch N]
     [--max-seq-len N] must succeed without a word on stderr (no warnings),
     and the IR's tfm.param symbols (or their `alias`) must be exactly the
     weights file's tensors with their shapes, in f32, and its
     tfm.max_batch / tfm.max_seq_len the compiled limits (--no-check-ir
     leaves this out);
     then tfm-compile CASE.json -o CASE.exe [--max-batch N] [--max-seq-len N]
     [--backend B] (--backend llvm: the same cases through the LLVM backend)
     [--target=generic with --simd S, which runs it with TFM_SIMD=S: the
     Highway code on that SIMD target whatever the CPU would pick];
  5. run it with --threads 1 and --threads 2; the outputs must have the
     reference's shape and dtype (float32), satisfy contract section 6,
     max|out - ref| <= 1e-4 * (1 + max|ref|), and be bit-identical.

A case with padding masks (contract section 8: `--input mask=FILE`, or
src_mask / tgt_mask) compares the rows whose query has a key to attend
(reference.attended_rows): a row whose allowed keys are all padding (left
padding in a causal model) has unspecified values, left out of the
tolerance, the finiteness check and the comparison, but not of the
bit-identity of --threads 1 and 2.  A model with type_vocab_size takes
the optional input token_type_ids (cases.py `token_types`; left out, the
executable uses zeros), passed like the others as --input
token_type_ids=FILE.  An error case (cases.py `expect_error`: a mask the
contract refuses, token_type_ids it refuses, or an option refused with
a mask) does steps 1, 2 and 4, then runs the executable once with
--threads 1 (and the case's run_args): it must exit with status 1 and
name the input (expect_error) on stderr, on a line that also says each of
the case's expect_detail (the error in the executable's words, which the
reference's refusal says too).

--weight-dtype {f32,bf16,f16,int8} (contract section 10): both tfm-compile
calls get --weight-dtype=X; the IR check requires `format =
#tfm.weight_format<X>` on exactly the GEMM weights' tfm.param
(weight_formats.gemm_weights; f32: on none); the weights file is written
as always (the executable converts at load) and the reference runs on the
GEMM weights converted as weight_formats.convert does.  Where the
conversion moves the reference by more than 2 tol from the one on the
unconverted weights, the output must be more than tol from the latter
(the option not ignored); int8 requires that move of every case it
computes (the weights of every case are big enough).  A case whose GEMM
weight overflows f16 (`wdtype_f16_range`) is, with f16, an error case:
the executable must exit 1 naming the tensor.  Error cases (expect_error,
weight_fault) and --compile-errors run with the option too: what they
refuse does not depend on it.

--compute {f32,bf16} (contract section 10; combinable with --weight-dtype):
both tfm-compile calls get --compute=X (the --emit=mlir check unchanged:
it must still succeed without a word on stderr).  With bf16 the output is
compared with the same f32 reference (on the weights --weight-dtype
converts) within 1e-2 * (1 + max|ref|) instead of 1e-4 * (...); --threads 1
and 2 must still be bit-identical.  The option not ignored: the case is
also compiled without --compute (CASE.f32.exe, run with --threads 1), and
where the emulated bf16 reference (model (b) with both inputs of every
GEMM but the MoE router's rounded to bf16, bf16_gemm_inputs) is more than
the f32 tolerance from the f32 one, at least one compared element must
differ from that build's output.  A MoE model's routing margin at each
token must be more than ROUTING_SHIFTS times the largest move of that
token's gate logits under that rounding, else the case is ill-conditioned
for bf16 (a top-k choice could flip).

One line per case (PASS/FAIL), the last line `N passed, M failed`; the exit
status is 1 if any case failed.  -k FILTER selects cases, --exclude FILTER
leaves some out (ctest's e2e-K shards run --exclude mamba, and e2e-mamba
-k mamba: the mamba cases of contract section 7).

--reference-only does steps 1-3 only, and the IR check of step 4 when given
--tfm-compile.

A weight_fault case (cases.py, the bs_load_* cases) writes a weights file
the contract refuses (block_pattern as F32 or transposed, a block_pattern
the model does not have, a float weight as I32), checks that the oracle
refuses it too (reference.weights_problems names the tensor), runs the IR
check against the contract's listing and tfm-compile, then the executable
once: it must exit 1 naming the tensor (expect_error).

--compile-errors runs cases.py's COMPILE_ERRORS instead of the cases
(-k selects among them too): NAME.json, then `tfm-compile NAME.json
--emit=mlir -o NAME.mlir [ARGS]` and `tfm-compile NAME.json -o NAME.exe
[ARGS]`, each of which must exit 1, write no output file, and print exactly
one stderr line `NAME.json:LINE:COL: error: MESSAGE`.  An entry with `text`
(a duplicated key, which a dict cannot hold) has NAME.json written as that
text.

Run with Debian's /usr/bin/python3 (it has python3-torch 1.13).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import cases as cases_mod  # noqa: E402
import case_pool  # noqa: E402
import safetensors as st  # noqa: E402  (our own, test/e2e/safetensors.py)
import weight_formats as wf  # noqa: E402

AB_BOUND = 1e-5            # (a) vs (b), normalised by max(1, max|ref|)
CONDITIONING_FRACTION = 0.1  # |ref32 - ref64| must stay below this share of the tolerance
# --weight-dtype: the output must be more than tol from the reference on the
# unconverted weights where the conversion moves the reference by more than
# SHIFT_SHOWN tol (then an output within tol of the converted reference is
# at least (SHIFT_SHOWN - 1) tol from it: the check cannot fail a correct
# executable); int8 requires every case to move that much.
SHIFT_SHOWN = 2.0
# --compute (contract section 10): the relative tolerance of each, and the
# MoE routing margin a bf16 case needs at each token, in units of the
# largest move of that token's gate logits under the emulated bf16 rounding.
# A difference of two logits moves at most twice as far, and a correct
# executable's logits are near, not equal to, the emulation's: an f32-sized
# difference before a GEMM can flip some bf16 roundings, and flips cascade
# (the emulation with its GEMMs summed in float64 instead was up to 0.67
# of the rounding's whole move from it, on the suite's cases), so up to
# about 2 x 1.7 = 3.4 moves; 5 leaves room.
COMPUTE_TOL = {"f32": 1e-4, "bf16": 1e-2}
ROUTING_SHIFTS = 5.0


class CaseFailure(Exception):
    pass


def tolerance(ref, compute="f32"):
    r = COMPUTE_TOL[compute]
    return r * (1.0 + float(np.max(np.abs(ref)))) if ref.size else r


def _bf16(t):
    """t's values rounded to bfloat16 (nearest, ties to even), in t's dtype."""
    import torch
    return t.to(torch.bfloat16).to(t.dtype)


class bf16_gemm_inputs:
    """Contract section 10's --compute=bf16 on a model of (b), as a context:
    both inputs of every GEMM (reference.linear: the attention in/out
    projections, FFN and expert linears, the LM head, a tied head's table;
    the token lookups still read the table as it is) rounded to bf16, the
    products summed in f32 (torch.matmul of the rounded values, whose
    products are exact in f32); the MoE gate's GEMM left as it is.  The
    attention cores, norms, softmax, linformer's and performer's products
    are not reference.linear and stay f32.  `calls` counts the rounded
    GEMMs (the harness requires some: a reference that stopped calling
    reference.linear would emulate nothing)."""

    def __init__(self, model):
        import reference as R
        self.R = R
        self.gates = [m.gate for m in R.moe_modules(model) if isinstance(m, R.FormulaMoE)]
        self.calls = 0

    def __enter__(self):
        R, plain = self.R, self.R.linear
        self.plain = plain

        def rounded(x, weight, bias=None):
            self.calls += 1
            return plain(_bf16(x), _bf16(weight), bias)

        R.linear = rounded
        for g in self.gates:
            g.forward = (lambda x, g=g: plain(x, g.weight, g.bias))
        return self

    def __exit__(self, *exc):
        self.R.linear = self.plain
        for g in self.gates:
            del g.forward
        return False


case_seed = cases_mod.case_seed   # crc32 of the case name


def _clip(line, n):
    return line if len(line) <= n else line[: n - 3] + "..."


def _tail(text, lines=3, width=160):
    """One line for a report: the first line mentioning an error (where the
    cause usually is) and the last `lines` lines, each clipped; the full
    text is in the case directory."""
    ls = [l.strip() for l in text.strip().splitlines() if l.strip()]
    if not ls:
        return "(no stderr)"
    tail = ls[-lines:]
    first = next((l for l in ls if "error" in l.lower()), None)
    parts = []
    if first is not None and first not in tail:
        parts = [_clip(first, width), "..."]
    return " | ".join(parts + [_clip(l, width) for l in tail])


# ---------------------------------------------------------------------------
# Reference side.
# ---------------------------------------------------------------------------

def make_inputs(case, cfg, seed):
    """The ids or embeddings, then the padding masks (cases.case_inputs)."""
    return cases_mod.case_inputs(case, cfg, seed)


def expected_refusal(case, info):
    """(the name stderr must say, the details its line must say too, extra
    run arguments) of an error case, or None: the case's expect_error, or
    a tensor that overflows f16 with --weight-dtype=f16."""
    if info.get("overflow") is not None:
        return info["overflow"], (), ()
    if case.expect_error is not None:
        return case.expect_error, tuple(case.expect_detail), tuple(case.run_args)
    return None


def prepare_reference(case, case_dir, weight_dtype="f32", compute="f32"):
    """Steps 1-3.  Returns a dict of paths and facts; raises CaseFailure.
    weight_dtype (contract section 10): the reference reads the GEMM
    weights converted to it (the file is written as always).  compute
    (section 10): the tolerance (COMPUTE_TOL); with bf16 also the emulated
    bf16 reference (bf16_gemm_inputs), how far it is from the f32 one, and
    a MoE model's routing margin against its gate logits' move."""
    import torch
    import reference as R
    torch.set_num_threads(1)
    os.makedirs(case_dir, exist_ok=True)
    cfg = R.Config(case.model)
    seed = case_seed(case.name)
    info = {"cfg": cfg, "weight_dtype": weight_dtype, "compute": compute}

    model_path = os.path.join(case_dir, case.name + ".json")
    with open(model_path, "w") as f:
        json.dump(case.model, f, indent=2)
        f.write("\n")
    info["model"] = model_path

    # Weights: make, round to the file's dtype, write, read back, compare.
    # block_sparse's block_pattern ids are the case's own
    # (cases.block_patterns), in its pattern_dtype (I32 or I64); a
    # weight_fault case writes the file its executable must refuse.
    weights = R.make_weights(cfg, seed, case.shared_embeddings)
    expected = R.expected_weights(cfg, case.shared_embeddings)
    if {k: tuple(v.shape) for k, v in weights.items()} != expected:
        raise CaseFailure("internal: generated weights do not match the contract listing")
    patterns = cases_mod.case_block_patterns(case, cfg)
    arrays, file_tensors = cases_mod.weight_file(case, cfg, {k: v.numpy() for k, v in weights.items()}, patterns)
    if case.weight_fault is None and {k: v[0] for k, v in file_tensors.items()} != expected:
        raise CaseFailure("internal: the weights file does not match the contract listing")
    file_dtypes = {k: v[1] for k, v in file_tensors.items()}
    wpath = os.path.join(case_dir, "weights.safetensors")
    st.save_file(arrays, wpath, dtype=file_dtypes, metadata={"format": "pt", "case": case.name})
    back, dtypes = st.load_file(wpath, with_dtypes=True)
    if list(back) != list(arrays):
        raise CaseFailure("safetensors read-back: names/order differ")
    for k, a in arrays.items():
        if dtypes[k] != file_dtypes[k]:
            raise CaseFailure("safetensors read-back: %s stored as %s" % (k, dtypes[k]))
        want = st.round_to_dtype(a, file_dtypes[k])
        if back[k].shape != a.shape or back[k].dtype != want.dtype or not np.array_equal(back[k], want):
            raise CaseFailure("safetensors read-back: %s differs" % k)
    info["weights"] = wpath
    # What the IR must declare: the contract's listing (the file's own
    # tensors but for a weight_fault case), and which of them are ids.
    info["weight_names"] = dict(expected)
    info["weight_ids"] = {k for k in expected if k.endswith("self_attn.block_pattern")}

    # Inputs (padding masks too: input_mask.npy, input_src_mask.npy, ...).
    inputs = make_inputs(case, cfg, seed)
    info["inputs"] = {}
    for name, a in inputs.items():
        p = os.path.join(case_dir, "input_%s.npy" % name)
        np.save(p, a)
        b = np.load(p)
        if b.dtype != a.dtype or b.shape != a.shape or not np.array_equal(a, b):
            raise CaseFailure("npy read-back of %s differs" % name)
        info["inputs"][name] = p
    if case.weight_fault is not None:
        # A weights file the executable must refuse: no reference.  The
        # oracle must refuse it too, naming the tensor.
        problems = R.weights_problems(cfg, {k: (tuple(v.shape), dtypes[k]) for k, v in back.items()},
                                      case.shared_embeddings)
        if not any(case.expect_error in msg for msg in problems):
            raise CaseFailure("case table: the reference does not refuse the weights naming %r: %s"
                              % (case.expect_error, problems or "accepted"))
        info.update(ref=None, problems=[("weights", m) for m in problems])
        return info
    if case.expect_error is not None:
        # An input the executable must refuse: no reference.  The oracle
        # must agree that the masks are refused naming the input (or, for
        # an option refused with a mask, that they are good masks).
        problems = R.mask_problems(cfg, inputs)
        if "--generate" in case.run_args:
            if problems:
                raise CaseFailure("case table: %s with bad masks: %s" % (" ".join(case.run_args), problems))
        elif not any(case.expect_error in msg and all(d in msg for d in case.expect_detail)
                     for _, msg in problems):
            raise CaseFailure("case table: the reference does not refuse the inputs naming %r%s: %s"
                              % (case.expect_error, " and saying %s" % (case.expect_detail,)
                                 if case.expect_detail else "", problems or "accepted"))
        info.update(ref=None, problems=problems)
        return info

    # --weight-dtype: the GEMM weights as the executable converts them at
    # load; a tensor that overflows f16 must be refused, naming it.
    file_back = back
    if weight_dtype != "f32":
        try:
            back = wf.convert_weights(file_back, cfg, weight_dtype)
        except wf.F16Overflow as e:
            info.update(ref=None, overflow=e.name, problems=[("weights", str(e))])
            return info
        except wf.Int8Range as e:
            raise CaseFailure("case table: %s (the contract leaves it open)" % e)

    # The rows compared: all of them, or with padding masks those whose
    # query has a key to attend (the others have unspecified values).
    rows = R.attended_rows(cfg, inputs, cases_mod.output_stack_patterns(cfg, patterns)) if case.masks else None
    info["rows"] = rows
    if rows is not None:
        np.save(os.path.join(case_dir, "rows.npy"), rows)
        if not rows.any():
            raise CaseFailure("case table: no output row has a key to attend")

    # Reference outputs, from the weights as read back from the file.
    fm = R.load_weights(R.build_formula_model(cfg, case.shared_embeddings), back)
    ref_b = R.run_model(fm, cfg, inputs)
    tm = R.build_torch_model(cfg, case.shared_embeddings, masked=bool(case.masks))
    ab = None
    if tm is not None:
        R.load_weights(tm, back)
        ref_a = R.run_model(tm, cfg, inputs)
        if tuple(ref_a.shape) != tuple(ref_b.shape):
            raise CaseFailure("reference (a) shape %s vs (b) %s" % (tuple(ref_a.shape), tuple(ref_b.shape)))
        d_ab, ref_a_kept = (ref_a.double() - ref_b.double()).abs(), ref_a
        if rows is not None:
            # The forms give a row without a key different (unspecified)
            # values: compare the defined rows.
            keep = torch.from_numpy(rows)
            d_ab, ref_a_kept = d_ab[keep], ref_a[keep]
        ab = d_ab.max().item()
        scale = max(1.0, ref_a_kept.abs().max().item())
        if ab / scale >= AB_BOUND:
            raise CaseFailure("reference (a) torch modules vs (b) formulas differ: max abs diff %.3g "
                              "(max|ref| %.3g)" % (ab, scale))
        ref = ref_a
    else:
        ref = ref_b
    fm64 = R.load_weights(R.build_formula_model(cfg, case.shared_embeddings).double(), back)
    if weight_dtype != "f32" and any(lc.moe for lc in cfg.layer_configs()):
        # The routing margin on the converted weights (the oracle's
        # self-test checks it on the file's): the k-th largest gate logit
        # minus the next, float64, every token of every MoE layer.
        logits, ref64 = R.moe_routing(fm64, lambda: R.run_model(fm64, cfg, inputs))
        eks = [m.top_k for m in R.moe_modules(fm64) if isinstance(m, R.FormulaMoE)]
        gap = min([R.routing_gap(t, k) for t, k in zip(logits, eks)] + [float("inf")])
        info["routing_gap"] = gap
        if gap < R.MOE_MIN_GAP:
            raise CaseFailure("ill-conditioned case: with --weight-dtype=%s the routing margin is %.3g (< %g): "
                              "a top-k choice may flip" % (weight_dtype, gap, R.MOE_MIN_GAP))
    else:
        ref64 = R.run_model(fm64, cfg, inputs)
    ref = ref.numpy().astype(np.float32)
    ref64 = ref64.numpy()

    want_shape = []
    first = case.inputs[cfg.input_names[0]]
    if first.batch is not None:
        want_shape.append(first.batch)
    want_shape += [case.inputs[cfg.input_names[-1]].seq, cfg.out_dim]
    if list(ref.shape) != want_shape:
        raise CaseFailure("reference shape %s, expected %s" % (list(ref.shape), want_shape))
    if not np.all(np.isfinite(ref)):
        raise CaseFailure("reference has non-finite values")
    kept, kept64 = (ref, ref64) if rows is None else (ref[rows], ref64[rows])
    # The conditioning is judged against the f32 tolerance whatever
    # --compute says (the reference is the same f32 computation).
    tol32 = tolerance(kept)
    tol = tolerance(kept, compute)
    cond = float(np.max(np.abs(kept.astype(np.float64) - kept64)))
    if cond > CONDITIONING_FRACTION * tol32:
        raise CaseFailure("ill-conditioned case: fp32 reference is %.3g from float64 (tolerance %.3g)"
                          % (cond, tol32))
    rpath = os.path.join(case_dir, "reference.npy")
    np.save(rpath, ref)
    np.save(os.path.join(case_dir, "reference_f64.npy"), ref64)
    info.update(ref=ref, ref64=ref64, ref_path=rpath, tol=tol, tol32=tol32, ab=ab, cond=cond)
    if compute == "bf16":
        # The emulated --compute=bf16 reference: (b) on the same (converted)
        # weights with every GEMM's inputs but the router's rounded to bf16.
        fm_bf = R.load_weights(R.build_formula_model(cfg, case.shared_embeddings), back)
        with bf16_gemm_inputs(fm_bf) as hook:
            logits_bf, ref_bf = R.moe_routing(fm_bf, lambda: R.run_model(fm_bf, cfg, inputs))
        if hook.calls == 0:
            raise CaseFailure("internal: the bf16 emulation rounded no GEMM (reference.linear not called)")
        ref_bf = ref_bf.numpy().astype(np.float32)
        if ref_bf.shape != ref.shape or not np.all(np.isfinite(ref_bf if rows is None else ref_bf[rows])):
            raise CaseFailure("internal: the emulated bf16 reference is %s, not finite or not shaped %s"
                              % (list(ref_bf.shape), list(ref.shape)))
        kept_bf = ref_bf if rows is None else ref_bf[rows]
        cshift = float(np.max(np.abs(kept.astype(np.float64) - kept_bf))) if kept.size else 0.0
        np.save(os.path.join(case_dir, "reference_bf16_emulated.npy"), ref_bf)
        info.update(ref_bf16=ref_bf, compute_shift=cshift)
        if logits_bf:
            # MoE: the router stays f32, but its input moves with the
            # rounding upstream; the top-k choices must be far from a flip.
            logits_32, _ = R.moe_routing(fm, lambda: R.run_model(fm, cfg, inputs))
            eks = [m.top_k for m in R.moe_modules(fm) if isinstance(m, R.FormulaMoE)]
            if len(logits_32) != len(logits_bf) or len(eks) != len(logits_32):
                raise CaseFailure("internal: the emulated bf16 run saw %d gate calls, the f32 one %d (%d MoE "
                                  "layers)" % (len(logits_bf), len(logits_32), len(eks)))
            # Per token: the margin of its top-k choice (the k-th largest
            # f32 logit minus the next) against the largest move of its
            # logits under the emulated rounding.
            worst = (float("inf"), 0.0, 0.0)     # (margin / move, margin, move)
            for a, b, k in zip(logits_32, logits_bf, eks):
                if k >= a.shape[-1] or a.numel() == 0:
                    continue        # every expert chosen: nothing to flip
                srt = torch.sort(a.double(), dim=-1, descending=True).values
                margin = srt[:, k - 1] - srt[:, k]
                move = (a.double() - b.double()).abs().amax(dim=-1)
                ratio = torch.where(move > 0, margin / move.clamp_min(1e-300), torch.full_like(margin, float("inf")))
                i = int(torch.argmin(ratio))
                if float(ratio[i]) < worst[0]:
                    worst = (float(ratio[i]), float(margin[i]), float(move[i]))
            info.update(compute_routing=worst)
            if not worst[0] > ROUTING_SHIFTS:
                raise CaseFailure("ill-conditioned case: with --compute=bf16 a token's gate logits move by up to "
                                  "%.3g (emulated) and its routing margin is %.3g (%.3g x, needs > %g x): a top-k "
                                  "choice may flip" % (worst[2], worst[1], worst[0], ROUTING_SHIFTS))
    if weight_dtype != "f32":
        # The reference on the file's unconverted weights ((b)), and how far
        # the conversion moves it: what an executable ignoring the option
        # would match.
        ref_w32 = R.run_model(R.load_weights(R.build_formula_model(cfg, case.shared_embeddings), file_back),
                              cfg, inputs).numpy().astype(np.float32)
        kept_w32 = ref_w32 if rows is None else ref_w32[rows]
        shift = float(np.max(np.abs(kept.astype(np.float64) - kept_w32))) if kept.size else 0.0
        np.save(os.path.join(case_dir, "reference_f32_weights.npy"), ref_w32)
        info.update(ref_w32=ref_w32, shift=shift)
        if weight_dtype == "int8" and compute == "f32" and not shift > SHIFT_SHOWN * tol:
            raise CaseFailure("case table: int8 moves the reference by only %.3g (%.2g tol, needs > %g tol): "
                              "an executable ignoring --weight-dtype would pass" % (shift, shift / tol, SHIFT_SHOWN))
    return info


# ---------------------------------------------------------------------------
# Frontend (IR) check: every case, before the executable is compiled (a
# tfm-compile --emit=mlir is the frontend only, a small share of a case's
# time), so that ctest's normal runs check it too.
# ---------------------------------------------------------------------------

_PARAM_RE = re.compile(r'^\s*tfm\.param\s+@"?([^\s"{:]+)"?\s*(\{[^}]*\})?\s*:\s*tensor<([^>]*)>')
_ALIAS_RE = re.compile(r'alias\s*=\s*"([^"]+)"')
_ATTR_RE = re.compile(r'tfm\.(max_batch|max_seq_len)\s*=\s*(\d+)')


def parse_ir_params(text):
    params = []
    for line in text.splitlines():
        m = _PARAM_RE.match(line)
        if not m:
            continue
        name, attrs, ty = m.group(1), m.group(2) or "", m.group(3)
        alias = _ALIAS_RE.search(attrs)
        dims = ty.split("x")
        elem = dims.pop()
        shape = tuple(int(d) for d in dims)
        params.append((name, alias.group(1) if alias else None, shape, elem, attrs))
    attrs = {k: int(v) for k, v in _ATTR_RE.findall(text)}
    return params, attrs


_FORMAT_RE = re.compile(r'\bformat\s*=\s*#tfm\.weight_format<\s*([A-Za-z0-9_]+)\s*>')


def weight_dtype_args(weight_dtype):
    """tfm-compile's arguments for run_e2e.py --weight-dtype (None: not
    given, nothing passed: the compiler's default f32)."""
    return [] if weight_dtype is None else ["--weight-dtype=" + weight_dtype]


def compute_args(compute):
    """tfm-compile's arguments for run_e2e.py --compute (None: not given,
    nothing passed: the compiler's default f32)."""
    return [] if compute is None else ["--compute=" + compute]


def check_ir(case, info, tfm_compile, case_dir, timeout, weight_dtype=None, compute=None):
    """The --emit=mlir check (step 4).  --compute does not change that IR
    (section 10 rounds in the backends): it is passed so that the call
    with it must succeed without a word on stderr."""
    mlir = os.path.join(case_dir, case.name + ".mlir")
    cmd = [tfm_compile, info["model"], "--emit=mlir", "-o", mlir] + case.compile_args() + \
        weight_dtype_args(weight_dtype) + compute_args(compute)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CaseFailure("tfm-compile --emit=mlir timed out after %ds" % timeout)
    if p.returncode != 0:
        raise CaseFailure("tfm-compile --emit=mlir exited %d: %s" % (p.returncode, _tail(p.stderr)))
    if p.stderr.strip():
        raise CaseFailure("tfm-compile --emit=mlir warned: %s" % _tail(p.stderr))
    with open(mlir) as f:
        text = f.read()
    params, attrs = parse_ir_params(text)
    if not params:
        raise CaseFailure("no tfm.param in the IR")
    names = info["weight_names"]
    # Contract section 10: `format` on exactly the GEMM weights, f32 on
    # none.  The IR does not depend on the weights file: a param is judged
    # by its own name where it is one of the contract's names with separate
    # tables (an encoder_decoder's src_embed.weight / tgt_embed.weight, both
    # aliased to embed.weight: a tied head's table is tgt_embed.weight, the
    # one the head reads), else by the file tensor it reads.
    import reference as R
    fmt = weight_dtype or "f32"
    ir_names = R.expected_weights(info["cfg"], False)
    gemm_ir = wf.gemm_weights(info["cfg"], ir_names)
    gemm_file = wf.gemm_weights(info["cfg"], names)
    used = set()
    for name, alias, shape, elem, attrs_text in params:
        key = name if name in names else alias if alias in names else None
        if key is None:
            raise CaseFailure("IR param %s%s is not in the weights file"
                              % (name, " (alias %s)" % alias if alias else ""))
        if names[key] != shape:
            raise CaseFailure("IR param %s is %s, weights file %s is %s" % (name, shape, key, names[key]))
        if elem != "f32":
            raise CaseFailure("IR param %s has element type %s" % (name, elem))
        # block_sparse's key-block ids are integers in the file: the IR
        # says so (`{block_ids}`), and of no other weight.
        formats = _FORMAT_RE.findall(attrs_text)
        is_gemm = name in gemm_ir if name in ir_names else key in gemm_file
        want = fmt if fmt != "f32" and is_gemm else None
        if formats != ([want] if want else []) or (not formats and re.search(r"\bformat\b", attrs_text)):
            got = "format %s" % ", ".join(formats) if formats else (
                "%r" % attrs_text if re.search(r"\bformat\b", attrs_text) else "no format")
            raise CaseFailure("IR param %s has %s, expected %s (%s, --weight-dtype=%s)" % (
                name, got, "format = #tfm.weight_format<%s>" % want if want else "no format",
                "a GEMM weight" if is_gemm else "not a GEMM weight", fmt))
        ids = bool(re.search(r"\bblock_ids\b", attrs_text))
        if ids != (key in info.get("weight_ids", ())):
            raise CaseFailure("IR param %s %s block_ids, the weights file holds %s" % (
                name, "has" if ids else "lacks", "integer ids" if not ids else "floats"))
        used.add(key)
    unused = sorted(set(names) - used)
    if unused:
        raise CaseFailure("weights file tensors the IR does not use: %s" % unused)
    want = {"max_batch": case.effective_max_batch(), "max_seq_len": case.effective_max_seq_len()}
    for k, v in want.items():
        if attrs.get(k) != v:
            raise CaseFailure("IR tfm.%s = %s, expected %d" % (k, attrs.get(k), v))
    return len(params)


# ---------------------------------------------------------------------------
# Compile and run.
# ---------------------------------------------------------------------------

def compile_exe(case, info, tfm_compile, case_dir, timeout, backend, simd=None, weight_dtype=None, compute=None,
                tag=""):
    """tfm-compile CASE.json -o CASE.exe (tag "f32": CASE.f32.exe, with its
    own f32_compile.cmd / .stderr); returns (exe, the environment to run it
    in)."""
    exe = os.path.join(case_dir, case.name + (".%s" % tag if tag else "") + ".exe")
    if os.path.exists(exe):
        os.remove(exe)
    cmd = [tfm_compile, info["model"], "-o", exe] + case.compile_args() + weight_dtype_args(weight_dtype) + \
        compute_args(compute)
    if backend:
        cmd += ["--backend=" + backend]
    run_env = dict(os.environ)
    run_env.pop("TFM_SIMD", None)
    if simd:
        # Every target compiled in; the executable dispatches to `simd` or
        # exits with an error (the model's limitSimd), never silently to
        # another.
        cmd += ["--target=generic"]
        run_env["TFM_SIMD"] = simd
    pre = tag + "_" if tag else ""
    what = "tfm-compile (without --compute)" if tag else "tfm-compile"
    _write(case_dir, pre + "compile.cmd", " ".join(cmd) + "\n")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=case_dir)
    except subprocess.TimeoutExpired:
        raise CaseFailure("%s timed out after %ds" % (what, timeout))
    except OSError as e:
        raise CaseFailure("cannot run tfm-compile: %s" % e)
    _write(case_dir, pre + "compile.stderr", p.stderr)
    if p.returncode != 0:
        raise CaseFailure("%s exited %d: %s" % (what, p.returncode, _tail(p.stderr)))
    if not os.path.isfile(exe) or not os.access(exe, os.X_OK):
        raise CaseFailure("tfm-compile succeeded but wrote no executable %s" % exe)
    return exe, run_env


def _run_command(exe, info, out, threads, extra=()):
    """The executable's command line: the weights, every input (padding
    masks and token_type_ids too) as --input NAME=FILE, the output, the
    threads."""
    cmd = [exe, "--weights", info["weights"]]
    for name, path in info["inputs"].items():
        cmd += ["--input", "%s=%s" % (name, path)]
    return cmd + ["--output", out, "--threads", str(threads)] + list(extra)


def expect_refusal(case, info, exe, case_dir, timeout, run_env):
    """An error case: the executable, run once with --threads 1 and the
    case's run_args, must exit with status 1 (a user error, contract
    section 4: not 0, not 2, not a signal) and name the refused input
    (case.expect_error, or the tensor that overflows f16) on stderr.
    Returns the stderr line naming it."""
    expect_error, expect_detail, run_args = expected_refusal(case, info)
    out = os.path.join(case_dir, "out_t1.npy")
    if os.path.exists(out):
        os.remove(out)
    cmd = _run_command(exe, info, out, 1, run_args)
    _write(case_dir, "run_t1.cmd", " ".join(cmd) + "\n")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=case_dir, env=run_env)
    except subprocess.TimeoutExpired:
        raise CaseFailure("executable (--threads 1) timed out after %ds" % timeout)
    except OSError as e:
        raise CaseFailure("cannot run the executable: %s" % e)
    _write(case_dir, "run_t1.stderr", p.stderr)
    want = "expected exit 1 naming %r" % expect_error
    if p.returncode < 0:
        raise CaseFailure("executable (--threads 1) killed by signal %d, %s: %s"
                          % (-p.returncode, want, _tail(p.stderr)))
    if p.returncode != 1:
        raise CaseFailure("executable exited %d, %s: %s" % (p.returncode, want, _tail(p.stderr)))
    line = next((l.strip() for l in p.stderr.splitlines() if expect_error in l), None)
    if line is None:
        raise CaseFailure("executable exited 1, but its stderr does not name %r: %s"
                          % (expect_error, _tail(p.stderr)))
    missing = [d for d in expect_detail if d not in line]
    if missing:
        raise CaseFailure("executable exited 1 naming %r, but its line does not say %s: %s"
                          % (expect_error, " and ".join(repr(d) for d in missing), _clip(line, 200)))
    return line


def _run_exe(exe, info, case_dir, threads, timeout, run_env, tag=""):
    """Runs the executable with --threads N into out_tN.npy (tag "f32":
    f32_out_tN.npy, the build without --compute); returns the output."""
    pre = tag + "_" if tag else ""
    what = "executable%s (--threads %d)" % (" without --compute" if tag else "", threads)
    out = os.path.join(case_dir, "%sout_t%d.npy" % (pre, threads))
    if os.path.exists(out):
        os.remove(out)
    cmd = _run_command(exe, info, out, threads)
    _write(case_dir, "%srun_t%d.cmd" % (pre, threads), " ".join(cmd) + "\n")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=case_dir, env=run_env)
    except subprocess.TimeoutExpired:
        raise CaseFailure("%s timed out after %ds" % (what, timeout))
    except OSError as e:
        raise CaseFailure("cannot run the executable: %s" % e)
    _write(case_dir, "%srun_t%d.stderr" % (pre, threads), p.stderr)
    if p.returncode != 0:
        how = ("killed by signal %d" % -p.returncode) if p.returncode < 0 else ("exited %d" % p.returncode)
        raise CaseFailure("%s %s: %s" % (what, how, _tail(p.stderr)))
    try:
        return np.load(out, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - any unreadable output is a failure
        raise CaseFailure("output of %s unreadable: %s" % (what, e))


def check_compute_used(case, info, tfm_compile, case_dir, timeouts, backend, simd, weight_dtype, o, defined):
    """--compute=bf16 not ignored: the case compiled without --compute
    (CASE.f32.exe, the same other options) and run with --threads 1; where
    the emulated bf16 reference is more than the f32 tolerance from the f32
    one, some compared element of `o` must differ from that output.  (A
    correct bf16 build rounds GEMM inputs that are not bf16 values: the
    reference shows the rounding moves the result, so its output equals
    the f32 build's bit for bit only if every rounding was a no-op.)
    Returns (elements that differ, of how many, max |difference|), or None
    where the check does not apply (nothing compiled)."""
    if not info["compute_shift"] > info["tol32"]:
        return None
    exe, run_env = compile_exe(case, info, tfm_compile, case_dir, timeouts[0], backend, simd, weight_dtype,
                               None, tag="f32")
    p = _run_exe(exe, info, case_dir, 1, timeouts[1], run_env, tag="f32")
    if p.dtype != o.dtype or p.shape != o.shape:
        raise CaseFailure("the build without --compute gives %s %s, the --compute=bf16 one %s %s"
                          % (p.dtype, list(p.shape), o.dtype, list(o.shape)))
    mask = np.broadcast_to(defined[..., None], o.shape)
    diff = (o.view(np.uint32) != p.view(np.uint32)) & mask
    n = int(np.sum(diff))
    with np.errstate(invalid="ignore"):
        d = np.where(mask, np.abs(o.astype(np.float64) - p.astype(np.float64)), 0.0)
    dmax = float(np.nanmax(d)) if d.size else 0.0
    if n == 0:
        raise CaseFailure("--compute=bf16 ignored: the output equals the build without --compute bit for bit "
                          "in every compared element (the emulated bf16 rounding moves the reference by %.3g, "
                          "%.3g f32 tol)" % (info["compute_shift"], info["compute_shift"] / info["tol32"]))
    return n, int(np.sum(mask)), dmax


def compile_and_run(case, info, tfm_compile, case_dir, timeouts, backend, simd=None, weight_dtype=None,
                    compute=None):
    """Steps 4 (the executable) and 5; returns (max_err, a note for the
    PASS line) (an error case: the stderr line naming the refused input)."""
    exe, run_env = compile_exe(case, info, tfm_compile, case_dir, timeouts[0], backend, simd, weight_dtype,
                               compute)
    if expected_refusal(case, info) is not None:
        return expect_refusal(case, info, exe, case_dir, timeouts[1], run_env), ""

    outs = {}
    for threads in (1, 2):
        outs[threads] = _run_exe(exe, info, case_dir, threads, timeouts[1], run_env)

    ref, tol, rows = info["ref"], info["tol"], info["rows"]
    o = outs[1]
    if o.dtype != np.float32:
        raise CaseFailure("output dtype %s, expected float32" % o.dtype)
    if o.shape != ref.shape:
        raise CaseFailure("output shape %s, expected %s" % (list(o.shape), list(ref.shape)))
    # With padding masks, the rows whose query has no key (unspecified
    # values, contract section 8) are left out of these two checks.
    defined = np.ones(o.shape[:-1], dtype=bool) if rows is None else rows
    bad = ~np.isfinite(o) & defined[..., None]
    if bad.any():
        raise CaseFailure("output has %d non-finite values%s" % (int(np.sum(bad)), "" if rows is None else
                                                                 " in the rows compared"))
    if info.get("shift") is not None and info["shift"] > SHIFT_SHOWN * tol:
        # --weight-dtype not ignored: the conversion moves the reference by
        # more than SHIFT_SHOWN tol, so the output must not match the
        # reference on the unconverted weights.
        with np.errstate(invalid="ignore"):
            d32 = np.where(defined[..., None], np.abs(o.astype(np.float64) - info["ref_w32"].astype(np.float64)),
                           0.0)
        d32 = float(np.max(d32)) if d32.size else 0.0
        if not d32 > tol:
            raise CaseFailure("--weight-dtype=%s ignored: the output is within tol of the reference on the "
                              "unconverted f32 weights (max diff %.3g <= tol=%.3g; the conversion moves the "
                              "reference by %.3g)" % (info["weight_dtype"], d32, tol, info["shift"]))
    note = ""
    if compute == "bf16":
        used = check_compute_used(case, info, tfm_compile, case_dir, timeouts, backend, simd, weight_dtype,
                                  o, defined)
        kept_o = o if rows is None else o[rows]
        kept_bf = info["ref_bf16"] if rows is None else info["ref_bf16"][rows]
        emu = float(np.max(np.abs(kept_o.astype(np.float64) - kept_bf))) if kept_o.size else 0.0
        note = ", compute=bf16: the emulated bf16 reference %.3g f32 tol from the f32 one, the output %.3g from " \
            "it" % (info["compute_shift"] / info["tol32"], emu / info["tol32"])
        if used is None:
            note += ", not checked against a build without --compute (the rounding moves the reference by " \
                "less than the f32 tol)"
        else:
            note += ", %d of %d elements differ from the build without --compute (max %.3g f32 tol)" % (
                used[0], used[1], used[2] / info["tol32"])
    with np.errstate(invalid="ignore"):   # inf - inf in a row left out
        err_arr = np.where(defined[..., None], np.abs(o.astype(np.float64) - ref.astype(np.float64)), 0.0)
    err = float(np.max(err_arr)) if err_arr.size else 0.0
    if not err <= tol:
        idx = np.unravel_index(int(np.argmax(err_arr)), err_arr.shape)
        raise CaseFailure("max_err=%.3g > tol=%.3g at %s (got %.6g, ref %.6g)"
                          % (err, tol, list(idx), o[idx], ref[idx]))
    o2 = outs[2]
    if o2.dtype != o.dtype or o2.shape != o.shape:
        raise CaseFailure("--threads 2 output is %s %s, --threads 1 %s %s"
                          % (o2.dtype, list(o2.shape), o.dtype, list(o.shape)))
    if o2.tobytes() != o.tobytes():
        n = int(np.sum(o2.view(np.uint32) != o.view(np.uint32)))
        d = float(np.max(np.abs(o2.astype(np.float64) - o.astype(np.float64))))
        raise CaseFailure("--threads 1 and 2 differ in %d elements (max %.3g): not bit-identical" % (n, d))
    return err, note


def _write(case_dir, name, text):
    with open(os.path.join(case_dir, name), "w") as f:
        f.write(text)


# ---------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


def run_compile_error(name, opts):
    """In a worker: one of cases.COMPILE_ERRORS; returns (passed, line)."""
    e = next(e for e in cases_mod.COMPILE_ERRORS if e.name == name)
    case_dir = os.path.join(opts["work_dir"], "compile_errors", e.name)
    os.makedirs(case_dir, exist_ok=True)
    try:
        desc = e.name + ".json"
        with open(os.path.join(case_dir, desc), "w") as f:
            if e.text is not None:
                f.write(e.text)     # as written (a duplicated key)
            else:
                json.dump(e.model, f, indent=2)
                f.write("\n")
        want = re.compile(r"^%s:\d+:\d+: error: %s$" % (re.escape(desc), re.escape(e.message)))
        for tag, out, extra in (("mlir", e.name + ".mlir", ["--emit=mlir"]), ("exe", e.name + ".exe", [])):
            path = os.path.join(case_dir, out)
            if os.path.exists(path):
                os.remove(path)
            cmd = [opts["tfm_compile"], desc] + extra + ["-o", out] + list(e.args) + \
                weight_dtype_args(opts.get("weight_dtype")) + compute_args(opts.get("compute"))
            _write(case_dir, tag + ".cmd", " ".join(cmd) + "\n")
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=opts["compile_timeout"],
                                   cwd=case_dir)
            except subprocess.TimeoutExpired:
                raise CaseFailure("tfm-compile (%s) timed out" % tag)
            _write(case_dir, tag + ".stderr", p.stderr)
            lines = [_ANSI_RE.sub("", l) for l in p.stderr.splitlines() if l.strip()]
            if p.returncode != 1:
                raise CaseFailure("tfm-compile (%s) exited %d, expected 1: %s" % (tag, p.returncode, _tail(p.stderr)))
            if os.path.exists(path):
                raise CaseFailure("tfm-compile (%s) exited 1 but wrote %s" % (tag, out))
            if len(lines) != 1 or not want.match(lines[0]):
                raise CaseFailure("tfm-compile (%s) stderr is not the one line '%s:LINE:COL: error: %s': %s"
                                  % (tag, desc, e.message, " | ".join(_clip(l, 200) for l in lines[:3])
                                     or "(empty)"))
        return True, "PASS %s (%s)" % (e.name, _clip(lines[0], 160))
    except CaseFailure as err:
        return False, "FAIL %s: %s" % (e.name, err)
    except Exception as err:  # noqa: BLE001 - report, never crash the harness
        return False, "FAIL %s: harness error %s: %s" % (e.name, type(err).__name__, _tail(str(err), 2))


def run_one(case_name, opts):
    """In a worker: returns (passed, line)."""
    case = cases_mod.by_name()[case_name]
    case_dir = os.path.join(opts["work_dir"], case.name)
    t0 = time.time()
    try:
        wdt, comp = opts.get("weight_dtype"), opts.get("compute")
        info = prepare_reference(case, case_dir, wdt or "f32", comp or "f32")
        refusal = expected_refusal(case, info)
        if info.get("shift") is not None:
            wextra = ", weight_dtype=%s moves the reference %.3g tol" % (wdt, info["shift"] / info["tol"])
        elif wdt is not None:
            wextra = ", weight_dtype=%s" % wdt
        else:
            wextra = ""
        if info.get("routing_gap") is not None:
            wextra += ", routing margin %.3g" % info["routing_gap"]
        if info.get("compute_routing") is not None:
            wextra += ", bf16 routing margin >= %.3g x its gate logits' move" % info["compute_routing"][0]
        rows = info.get("rows")
        if rows is not None and not rows.all():
            skipped = ", rows without a key skipped: %d of %d" % (int(np.sum(~rows)), rows.size)
        else:
            skipped = ""
        if opts["reference_only"]:
            extra = ""
            if opts["tfm_compile"] and opts["check_ir"]:
                n = check_ir(case, info, opts["tfm_compile"], case_dir, opts["compile_timeout"], wdt, comp)
                extra = ", ir_params=%d" % n
            if info.get("compute_shift") is not None:
                extra += ", compute=bf16: the emulated bf16 reference %.3g f32 tol from the f32 one" % (
                    info["compute_shift"] / info["tol32"])
            if refusal is not None:
                return True, "PASS %s (reference only: an error case, the reference refuses it: %s%s%s)" % (
                    case.name, _clip(info["problems"][0][1] if info["problems"] else
                                     " ".join(case.run_args) + " with a mask", 120), extra, wextra)
            ab = "n/a" if info["ab"] is None else "%.3g" % info["ab"]
            return True, "PASS %s (max_err=%.3g, tol=%.3g, torch_vs_formula=%s%s%s%s; reference only: "\
                "max_err is fp32 vs float64)" % (case.name, info["cond"], info["tol"], ab, extra, skipped, wextra)
        extra = ""
        if opts["check_ir"]:
            n = check_ir(case, info, opts["tfm_compile"], case_dir, opts["compile_timeout"], wdt, comp)
            extra = ", ir_params=%d" % n
        res, note = compile_and_run(case, info, opts["tfm_compile"], case_dir,
                                    (opts["compile_timeout"], opts["run_timeout"]), opts["backend"],
                                    opts.get("simd"), wdt, comp)
        if refusal is not None:
            return True, "PASS %s (refused with exit 1: %s%s%s)" % (case.name, _clip(res, 140), extra, wextra)
        return True, "PASS %s (max_err=%.3g, tol=%.3g%s%s%s%s)" % (case.name, res, info["tol"], extra, skipped,
                                                                  wextra, note)
    except CaseFailure as e:
        return False, "FAIL %s: %s" % (case.name, e)
    except Exception as e:  # noqa: BLE001 - report, never crash the harness
        tb = traceback.format_exc()
        try:
            os.makedirs(case_dir, exist_ok=True)
            _write(case_dir, "harness.traceback", tb)
        except OSError:
            pass
        return False, "FAIL %s: harness error %s: %s" % (case.name, type(e).__name__, _tail(str(e), 2))
    finally:
        if opts["verbose"]:
            sys.stderr.write("[%s: %.1fs]\n" % (case.name, time.time() - t0))


def _init_worker():
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass


def select(filters, compile_errors=False, shard=None, excludes=()):
    names = [c.name for c in (cases_mod.COMPILE_ERRORS if compile_errors else cases_mod.CASES)]
    return case_pool.select_names(names, filters, shard, excludes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--tfm-compile", help="path to tfm-compile (required unless --reference-only)")
    ap.add_argument("--work-dir", required=False, default=None,
                    help="where each case's files go (default: ./e2e-work)")
    ap.add_argument("-k", dest="filters", action="append", default=[],
                    help="run cases whose name contains FILTER (or matches it as a glob); repeatable")
    case_pool.add_shard_argument(ap)
    case_pool.add_exclude_argument(ap)
    ap.add_argument("-j", dest="jobs", type=int, default=2, help="cases in parallel (default 2)")
    ap.add_argument("--reference-only", action="store_true",
                    help="reference side only (weights, inputs, (a)-vs-(b), fp64 check; "
                         "with --tfm-compile, also the --emit=mlir check)")
    ap.add_argument("--no-check-ir", dest="check_ir", action="store_false", default=True,
                    help="leave out the --emit=mlir check (no warnings; tfm.param symbols and "
                         "shapes equal to the weights file; the compiled limits), which is on "
                         "whenever --tfm-compile is given")
    ap.add_argument("--compile-timeout", type=int, default=300)
    ap.add_argument("--run-timeout", type=int, default=120)
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--compile-errors", action="store_true",
                    help="run cases.py's COMPILE_ERRORS (descriptions tfm-compile must refuse, with their "
                         "messages) instead of the cases")
    ap.add_argument("--backend", choices=["hwy", "llvm"], default=None,
                    help="passed to tfm-compile as --backend (default: tfm-compile's own, hwy)")
    ap.add_argument("--simd", choices=["avx512", "avx2", "sse4"], default=None,
                    help="compile with --target=generic and run with TFM_SIMD=SIMD: the "
                         "Highway code on that target whatever the CPU would pick")
    ap.add_argument("--weight-dtype", choices=list(wf.FORMATS), default=None,
                    help="contract section 10: passed to tfm-compile as --weight-dtype=X (both calls); the "
                         "IR's GEMM weights must carry format X and the reference converts them (default: "
                         "not passed, f32)")
    ap.add_argument("--compute", choices=list(COMPUTE_TOL), default=None,
                    help="contract section 10: passed to tfm-compile as --compute=X (both calls); with bf16 the "
                         "tolerance is 1e-2 * (1 + max|ref|) and the output must differ from a build without "
                         "--compute (default: not passed, f32)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)

    if args.list:
        for c in (cases_mod.COMPILE_ERRORS if args.compile_errors else cases_mod.CASES):
            print("%-40s %s" % (c.name, c.note))
        return 0
    problems = cases_mod.validate() + ["not covered: " + m for m in cases_mod.check_coverage()]
    if problems:
        for p in problems:
            print("cases.py: " + p, file=sys.stderr)
        return 2
    if not args.reference_only and not args.tfm_compile:
        ap.error("--tfm-compile is required (or use --reference-only)")
    tfm_compile = os.path.abspath(args.tfm_compile) if args.tfm_compile else None
    if tfm_compile and not (os.path.isfile(tfm_compile) and os.access(tfm_compile, os.X_OK)):
        ap.error("--tfm-compile %s is not an executable file" % args.tfm_compile)
    # The IR check needs a compiler; with one, it runs in every mode.
    check_ir = args.check_ir and tfm_compile is not None
    work_dir = os.path.abspath(args.work_dir or "e2e-work")
    os.makedirs(work_dir, exist_ok=True)

    if args.compile_errors and not tfm_compile:
        ap.error("--compile-errors needs --tfm-compile")
    names = select(args.filters, args.compile_errors, args.shard, args.excludes)
    if not names:
        print("no case matches %s%s" % (args.filters, " less %s" % args.excludes if args.excludes else ""),
              file=sys.stderr)
        print("0 passed, 0 failed")
        return 2
    opts = dict(work_dir=work_dir, tfm_compile=tfm_compile, reference_only=args.reference_only,
                check_ir=check_ir, compile_timeout=args.compile_timeout,
                run_timeout=args.run_timeout, verbose=args.verbose, backend=args.backend,
                simd=args.simd, weight_dtype=args.weight_dtype, compute=args.compute)

    return case_pool.run_cases(names, run_compile_error if args.compile_errors else run_one, opts, args.jobs,
                               _init_worker)


if __name__ == "__main__":
    sys.exit(main())
