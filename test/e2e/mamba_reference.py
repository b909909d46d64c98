#!/usr/bin/python3
"""The oracle's mamba layers (reference.py's FormulaMambaMixer, contract
section 7) against Hugging Face transformers' own Mamba-1 (MambaMixer's
sequential slow path, which the contract names), in the transformers venv
(ctest: harness-mamba-hf; the hf tests' venv, scripts/install-deps.sh):

  1. the mixer: reference.py's scan and closed forms against
     transformers.models.mamba.MambaMixer.slow_forward on the same weights
     (reference.make_weights' mixer tensors, whose names are MambaMixer's),
     d_state 1 to 16, d_conv 1 to 4, expand 1 to 3, dt_rank explicit and
     "auto", batch 1 to 3, sequences 1 to 40: within 2e-5 (relative
     above 1; F64_BOUND: MambaMixer rounds A, B and u to float32 even in
     float64) in float64 and 1e-5 in float32; MambaMixer's own A_log and D
     (its constructor's) equal reference.make_weights(perturb=False)'s;
  2. a whole model: a stack of mamba layers only with `positional: none`,
     pre-norm rms_norm, a final norm and a tied head is MambaForCausalLM
     (embeddings, MambaBlock = x + mixer(RMSNorm(x)), norm_f, the tied LM
     head): (b) and its second form against MambaForCausalLM's logits on
     the same weights (embed.weight <-> backbone.embeddings.weight,
     layers.{i}.* <-> backbone.layers.{i}.*, norm.weight <->
     backbone.norm_f.weight; the mixers' in_proj and out_proj times 4,
     WHOLE_MODEL_GAIN, so that greedy paths vary), batched and unbatched,
     2e-5 in float64;
  3. decoding: MambaForCausalLM.generate (greedy, its cache: each layer's
     last d_conv inputs and its state h, a decode step per token) against
     the reference's full-forward greedy loop, ids equal and every step's
     logits within 2e-5 (float64).

Planted mistakes (the closed form's conv kernel reversed, u and z swapped,
B and C swapped, no D, the weights read transposed) must each fail the
mixer check, so that it cannot pass by agreeing on nothing.

Run it with any python: without transformers it re-executes itself with
--python PY, $TFM_HF_PYTHON, $TFM_HF_VENV/bin/python or
~/.cache/tfm/hf-venv/bin/python (as run_hf.py), and fails (exit 1) when
none can import transformers.  One line per check (-v: every one; else the
failures), the last line `mamba hf check: N checks, M failed`.
"""

import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Not on sys.path: this directory's safetensors.py (the other harnesses'
# writer) would shadow the safetensors package transformers imports.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]


def _load(name):
    """This directory's module `name`, by its file (as run_hf.py does)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod

DEFAULT_VENV = os.path.join(os.path.expanduser("~"), ".cache", "tfm", "hf-venv")
# The float64 comparisons' bound (relative above 1): MambaMixer.slow_forward
# computes A = -exp(A_log.float()) and casts B and u with .float() even in a
# float64 module, so it rounds to float32 there (2e-9 to 6e-8 relative
# measured on the mixers; up to 4.3e-6 on the whole models' decode steps,
# whose stronger mixers amplify it); any mistake moves the outputs by 1e-2
# or more.
F64_BOUND = 2e-5
# The whole models' in_proj and out_proj weights times this (as
# run_generate.py's weight_gain), so that their greedy paths vary.
WHOLE_MODEL_GAIN = 4.0


def _candidates(python):
    if python:
        return [(python, "--python")]
    out = []
    if os.environ.get("TFM_HF_PYTHON"):
        out.append((os.environ["TFM_HF_PYTHON"], "$TFM_HF_PYTHON"))
    if os.environ.get("TFM_HF_VENV"):
        out.append((os.path.join(os.environ["TFM_HF_VENV"], "bin", "python"), "$TFM_HF_VENV"))
    out.append((os.path.join(DEFAULT_VENV, "bin", "python"), "the default venv"))
    return out


def bootstrap(python, argv):
    """None when this interpreter has transformers; else re-executes this
    script with the first candidate python that exists (once), or returns
    why there is none."""
    try:
        __import__("transformers")
        return None
    except ImportError:
        pass
    tried = []
    for path, where in _candidates(python):
        tried.append("%s (%s)" % (path, where))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            if os.environ.get("TFM_MAMBA_HF_REEXEC") == path:
                return "%s has no importable transformers (reexecuted once); run scripts/install-deps.sh" % path
            os.environ["TFM_MAMBA_HF_REEXEC"] = path
            sys.stdout.flush()
            sys.stderr.flush()
            os.execv(path, [path, os.path.abspath(__file__)] + list(argv))
    return ("no python with transformers: %s cannot import it, and none of %s exists; run "
            "scripts/install-deps.sh, or pass --python" % (sys.executable, ", ".join(tried)))


def _hf():
    for k, v in (("TRANSFORMERS_OFFLINE", "1"), ("HF_HUB_OFFLINE", "1"), ("HF_HUB_DISABLE_TELEMETRY", "1"),
                 ("TRANSFORMERS_VERBOSITY", "error"), ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")):
        os.environ.setdefault(k, v)
    import transformers
    import transformers.generation.utils as gen_utils
    # generate() asks is_fsdp_managed_module(model), whose import of
    # torch.distributed.fsdp fails with Debian's torch 1.13 under Python
    # 3.11 (as run_hf.py works around); nothing here is FSDP.
    if hasattr(gen_utils, "is_fsdp_managed_module"):
        gen_utils.is_fsdp_managed_module = lambda module: False
    transformers.logging.set_verbosity_error()
    # MambaCache marks its tensors static for torch.compile with
    # torch._dynamo.mark_static_address, which torch 1.13 does not have; the
    # mark changes nothing eager, so a stand-in that does nothing serves.
    import torch
    if not hasattr(torch, "_dynamo"):
        import types
        torch._dynamo = types.SimpleNamespace(mark_static_address=lambda t: None, is_compiling=lambda: False)
    from transformers.models.mamba import modeling_mamba
    return transformers, modeling_mamba


def _mamba_config(transformers, d_model, n, c, x, r, vocab=None, layers=1):
    kw = dict(hidden_size=d_model, state_size=n, conv_kernel=c, expand=x, time_step_rank=r,
              num_hidden_layers=layers, use_bias=False, use_conv_bias=True, hidden_act="silu",
              layer_norm_epsilon=1e-5, tie_word_embeddings=True, use_mambapy=False)
    if vocab is not None:
        kw["vocab_size"] = vocab
    return transformers.MambaConfig(**kw)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", help="a python with transformers (the hf venv's)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    why = bootstrap(args.python, argv)
    if why is not None:
        print("mamba hf check: " + why, file=sys.stderr)
        print("mamba hf check: 0 checks, 1 failed")
        return 1
    import numpy as np
    import torch
    transformers, mm = _hf()
    R = _load("reference")
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(4321)
    failures = []
    n_checks = [0]

    def check(what, ok, detail=""):
        n_checks[0] += 1
        if args.verbose or not ok:
            print("%s %s%s" % ("ok  " if ok else "FAIL", what, (": " + detail) if detail else ""))
        if not ok:
            failures.append(what)

    def close(what, a, b, bound):
        d = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
        scale = max(1.0, b.abs().max().item())
        check(what, d / scale < bound, "max abs diff %.3g (max|ref| %.3g, bound %g relative above 1)"
              % (d, scale, bound))
        return d

    print("transformers %s, torch %s" % (transformers.__version__, torch.__version__))

    # 1. The mixer against MambaMixer.slow_forward.
    sizes = ((16, 16, 4, 2, "auto", 2, 13), (16, 4, 2, 1, 3, 3, 7), (24, 8, 3, 3, "auto", 1, 1),
             (32, 16, 4, 2, 5, 2, 40), (20, 1, 1, 1, 1, 1, 9), (48, 5, 3, 2, "auto", 2, 17))
    for d_model, n, c, x, r, batch, seq in sizes:
        desc = dict(architecture="decoder", d_model=d_model, num_layers=1, max_seq_len=64, layers=["mamba"],
                    mamba=dict(d_state=n, d_conv=c, expand=x, dt_rank=r))
        cfg = R.Config(desc)
        label = "mixer d_model=%d N=%d C=%d expand=%d dt_rank=%s (%d) batch=%d seq=%d" % (
            d_model, n, c, x, r, cfg.mamba_dt_rank, batch, seq)
        w = R.make_weights(cfg, seed=d_model * 100 + n)
        mixer_w = {k.split(".mixer.", 1)[1]: v for k, v in w.items() if ".mixer." in k}
        hfm = mm.MambaMixer(_mamba_config(transformers, d_model, n, c, x, cfg.mamba_dt_rank), layer_idx=0)
        if x == 2 and r == "auto":
            plain = R.make_weights(cfg, seed=1, perturb=False)
            check("%s: MambaMixer's own A_log and D are make_weights(perturb=False)'s" % label,
                  torch.equal(hfm.A_log.detach().float(), plain["layers.0.mixer.A_log"])
                  and torch.equal(hfm.D.detach().float(), plain["layers.0.mixer.D"]))
        missing, unexpected = hfm.load_state_dict(mixer_w, strict=False)
        check("%s: the contract's mixer names are MambaMixer's" % label, not missing and not unexpected,
              "missing %s, unexpected %s" % (missing, unexpected))
        xin = torch.randn(batch, seq, d_model, generator=gen, dtype=torch.float64)
        for dtype, bound in ((torch.float64, F64_BOUND), (torch.float32, 1e-5)):
            hfm = hfm.to(dtype).eval()
            with torch.no_grad():
                want = hfm.slow_forward(xin.to(dtype))
                for form in R.MAMBA_FORMS:
                    ours = R.FormulaMambaMixer(cfg, form).to(dtype)
                    ours.load_state_dict(mixer_w)
                    close("%s %s: %s form vs MambaMixer.slow_forward" % (label, str(dtype)[6:], form),
                          ours(xin.to(dtype)), want, bound)
        # Planted mistakes must fail the check (float64).
        if seq > 1 and c > 1:
            hfm = hfm.double()
            with torch.no_grad():
                want = hfm.slow_forward(xin)
                bad = {"conv_flipped": None, "u_z_swapped": None, "b_c_swapped": None, "no_d": None}
                for mistake in bad:
                    ours = R.FormulaMambaMixer(cfg, "scan", mistake=mistake).double()
                    ours.load_state_dict(mixer_w)
                    bad[mistake] = (ours(xin) - want).abs().max().item()
                ours = R.FormulaMambaMixer(cfg, "scan").double()
                ours.load_state_dict({k: (v.transpose(0, 1).reshape(v.shape) if k == "x_proj.weight" else v)
                                      for k, v in mixer_w.items()})
                bad["x_proj read transposed"] = (ours(xin) - want).abs().max().item()
            for mistake, d in bad.items():
                check("%s: planted %s fails the comparison" % (label, mistake), d > 1e-3, "max abs diff %.3g" % d)

    # 2. Whole models: a pure mamba stack (positional none, pre rms norms,
    #    final norm, tied head) is MambaForCausalLM.
    for d_model, n, c, x, r, layers, vocab in ((16, 8, 4, 2, "auto", 2, 40), (32, 16, 3, 1, 4, 3, 57)):
        desc = dict(name="mamba_hf", architecture="decoder", d_model=d_model, num_layers=layers, max_seq_len=64,
                    vocab_size=vocab, positional="none", norm="pre", norm_type="rms_norm",
                    layers=["mamba"] * layers, mamba=dict(d_state=n, d_conv=c, expand=x, dt_rank=r))
        cfg = R.Config(desc)
        label = "MambaForCausalLM hidden=%d N=%d C=%d expand=%d layers=%d vocab=%d" % (d_model, n, c, x, layers, vocab)
        w = R.make_weights(cfg, seed=77 + d_model)
        # Stronger mixers (as run_generate.py's weight_gain): at the init
        # scale each greedy path repeats its prompt's last token.
        w = {k: (v * WHOLE_MODEL_GAIN if k.endswith(("mixer.in_proj.weight", "mixer.out_proj.weight")) else v)
             for k, v in w.items()}
        hf_w = {}
        for k, v in w.items():
            if k == "embed.weight":
                hf_w["backbone.embeddings.weight"] = v
            elif k == "norm.weight":
                hf_w["backbone.norm_f.weight"] = v
            else:
                hf_w["backbone." + k] = v
        model = transformers.MambaForCausalLM(_mamba_config(transformers, d_model, n, c, x, cfg.mamba_dt_rank,
                                                            vocab, layers))
        missing, unexpected = model.load_state_dict(hf_w, strict=False)
        check("%s: every tensor of the contract's listing is one of its own, and no other but the tied "
              "lm_head" % label, set(missing) <= {"lm_head.weight"} and not unexpected,
              "missing %s, unexpected %s" % (missing, unexpected))
        model = model.double().eval()
        check("%s: its head is tied to the embeddings" % label,
              model.lm_head.weight.data_ptr() == model.backbone.embeddings.weight.data_ptr())
        fm64 = R.load_weights(R.build_formula_model(cfg).double(), w)
        second64 = R.load_weights(R.build_torch_model(cfg).double(), w)
        ids = torch.randint(0, vocab, (2, 13), generator=gen)
        with torch.no_grad():
            want = model(input_ids=ids, use_cache=False).logits
            close("%s: (b) vs its logits, batch 2 seq 13, float64" % label, fm64(input=ids), want, F64_BOUND)
            close("%s: (b)'s second form vs its logits" % label, second64(input=ids), want, F64_BOUND)
            close("%s: (b) unbatched vs its logits" % label, fm64(input=ids[1]), want[1], F64_BOUND)
        # 3. Decoding: its greedy generate (its conv and ssm cache) against
        #    the reference's full forward over each prefix.
        prompt = ids[:, :5]
        steps = 12
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=steps, min_new_tokens=steps, do_sample=False,
                                 use_cache=True, output_scores=True, return_dict_in_generate=True)
        hf_ids = out.sequences[:, prompt.shape[1]:]
        seq = prompt.clone()
        worst, same = 0.0, True
        with torch.no_grad():
            for t in range(steps):
                row = fm64(input=seq)[:, -1, :]
                worst = max(worst, (row - out.scores[t].double()).abs().max().item() / max(1.0, row.abs().max().item()))
                nxt = torch.argmax(row, dim=-1)
                same = same and bool(torch.equal(nxt, hf_ids[:, t]))
                seq = torch.cat([seq, hf_ids[:, t:t + 1]], dim=1)
        check("%s: generate's %d greedy ids (its cache) are the full-forward loop's" % (label, steps), same,
              "%s vs the loop's" % hf_ids.tolist())
        check("%s: generate's step logits (its cache) vs (b)'s full forward on the prefix" % label, worst < F64_BOUND,
              "max relative diff %.3g" % worst)
        check("%s: the greedy path is not one id repeated" % label,
              all(len(set(r)) > 2 for r in np.asarray(hf_ids).tolist()), "%s" % hf_ids.tolist())

    print("mamba hf check: %d checks, %d failed" % (n_checks[0], len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
