#!/usr/bin/python3
"""End-to-end tests of `tfm-compile DIR` on Hugging Face checkpoint folders
against the `transformers` library (contract section 11).

For each case of hf_cases.py ("model" cases; "either" and "error" below):
  1. build the tiny config, torch.manual_seed(crc32 of the name), the
     model (the case's hf_class, else AutoModelForCausalLM for gpt2, llama,
     mamba, mistral and mixtral, AutoModel (BertModel) for bert; eager
     attention) in eval mode; every parameter that its init leaves constant
     (norm weights: ones; biases: zeros; mamba's D: ones) gets random
     values, so that a dropped norm weight or bias shows, and one whose rows
     are all equal (mamba's A_log) 0.1 N(0,1) added; a mamba model's
     in_proj and out_proj weights are scaled by MAMBA_MIXER_GAIN (else its
     greedy paths repeat the last token);
     save_pretrained(DIR, safe_serialization=True), with the case's
     max_shard_size (then DIR must hold model.safetensors.index.json
     and >= 3 shards, no model.safetensors), and its layout rewrite of
     model.safetensors with the safetensors package (gpt2_hub: the Hub's
     old gpt2 names, no "transformer." prefix, the h.N.attn.bias and
     h.N.attn.masked_bias buffers added; tied_lm_head: a tied model's
     redundant lm_head.weight added); then the oracle is transformers
     itself running that folder: from_pretrained(DIR) of the same class,
     whose parameters must equal the saved model's bit for bit; with
     hf_class (BertForMaskedLM: "bert."-prefixed names plus the "cls." head)
     the oracle is its base_model (model.bert, a BertModel);
  2. the reference: the output of every input, logits for a causal LM, the
     last hidden state [batch, seq, hidden] for bert (int64 ids, [seq] and
     [batch, seq], lengths 1 to 24, one int32 input; then the case's
     more_inputs: for bert random token_type_ids in [0, type_vocab_size),
     and for every case an attention_mask (int32, int64, bool or float32
     0/1) of right padding (some rows padded, at least one real token a
     row) and of left padding; none for mamba, whose masks are refused in
     step 5), and the float64 model's within a tenth of
     the tolerance (else the case is "ill-conditioned"; not done where a
     left-padded causal row has no key: transformers' float64 model is NaN
     there); for --generate (causal LMs only): model.generate(ids,
     max_new_tokens=16, do_sample=False) for each prompt, which must equal
     a full-forward greedy loop, and whose top-2 logit gap must be above 2
     tol at every step (else "ill-conditioned": choose another seed or
     config, never a flake);
  3. `tfm-compile DIR --emit=model-json` (stdout, and with -o FILE the same
     JSON): it parses, and the keys of expected_model_json (architecture,
     sizes, num_kv_heads, type_vocab_size, positional, rope_base, norm,
     norm_type, norm_eps, embedding_norm, activation, ffn_gated, bias,
     tie_embeddings, lm_head, ...) have their values, a key left out
     counting as its contract section 2 / 11 default;
  4. `tfm-compile DIR -o CASE.exe [--backend=B] [--max-batch 2]`;
  5. CASE.exe without --weights (it reads DIR/model.safetensors, or the
     shards of DIR/model.safetensors.index.json) on each input (--input
     input_ids=, and token_type_ids= and attention_mask= where the input
     has them), --threads 1 and 2: float32, the reference's shape (batch
     dimension iff the input had one), finite, max|out - ref| <= 1e-4 (1 +
     max|ref|) (contract section 6) at every position (padded query rows
     included: contract section 8), except, with left padding in a causal
     model, the positions before a row's first real token (no key to
     attend: unspecified), the two runs bit-identical (every position);
     a mamba executable must instead refuse each mask input (right, left
     and no padding; int32, int64, bool, float32), contract section 8: the
     forward and --generate exit 1 naming attention_mask and write no
     output;
  6. --weights ALT/model.safetensors (or ALT/model.safetensors.index.json
     for a sharded case; a second checkpoint saved as the first, another
     seed, same config) against that checkpoint's output (bert: with
     token_type_ids); for a sharded case, --weights of an index whose
     shard is missing exits 1 naming that shard;
  7. (causal LMs) --generate 16 --input input_ids=PROMPT --output IDS,
     --threads 1 and 2: int32 [batch, 16] (or [16] for an unbatched
     prompt), the last stdout line `generate: prefill_tok_s=...
     decode_tok_s=... new_tokens=16 threads=T`, the ids equal
     transformers' token for token, and the same for both thread counts.

"either" cases (a maths-changing value tfm may or may not support):
tfm-compile exits 1 with a message naming the key, or compiles and passes
step 5.  "error" cases: an unsupported model_type (a saved RobertaModel or
T5 folder, a config.json edited to mixtral) must exit exactly 1 with one
stderr line naming it and every supported type, for --emit=model-json and
for the executable; an unsupported key (rope_scaling, hidden_act swish2,
bert's position_embedding_type relative_key, is_decoder,
add_cross_attention; mamba's use_bias true, use_conv_bias false,
hidden_act gelu, time_step_rank "big", intermediate_size not expand x
hidden_size) exits 1 naming it; a mistral sliding_window shorter
than an input is rejected (at compile time, or the longer input at run
time, and a short one then matches); missing weights (model.safetensors
moved away after compiling, a folder without it, --weights of a missing
file or of another model's shapes) make the executable exit 1 naming the
file, never crash.

One line per case, `PASS name (...)` or `FAIL name: reason`; the last line
`N passed, M failed`; the exit status is 1 if a case failed, 2 on a harness
error (no transformers, bad case table, no case matched).

Run by the oracle's venv python (scripts/install-deps.sh makes it at
${TFM_HF_VENV:-$HOME/.cache/tfm/hf-venv}, with transformers 4.46.3 over
Debian's torch 1.13).  Started by another python (e.g. /usr/bin/python3) it
re-executes itself with --python PY, $TFM_HF_PYTHON, $TFM_HF_VENV/bin/python
or the default venv, whichever comes first.

  run_hf.py --tfm-compile build/bin/tfm-compile --work-dir /tmp/hf [--backend llvm] [-k F] [-j N]
  run_hf.py --reference-only --work-dir /tmp/hf-ref   # the transformers side only
  run_hf.py --self-test                               # the harness's own checks, no compiler
  run_hf.py --fake --work-dir /tmp/hf-fake [-k F]     # against a fake tfm-compile that runs
                                                      # transformers (TFM_HF_FAKE_MODE, below)
  run_hf.py --list

Each case's directory keeps hf/ (the checkpoint), alt/ (the --weights one;
alt_missing_shard/ for a sharded case), in_*.npy, tt_*.npy (token types),
mask_*.npy (attention masks), ref_*.npy, out_*.npy, prompt_*.npy, gen_*.npy,
model.json, CASE.exe, and per command TAG.cmd, TAG.stdout, TAG.stderr.

--fake: tfm-compile is this script (--fake-compile): it rejects what the
real one must (the model types and keys of the cases), prints
expected_model_json, and writes an executable that runs this script
(--fake-exe): transformers on DIR's model.safetensors or index, or on
--weights FILE (an index if it ends in .json), with --input input_ids=,
token_type_ids= (bert), attention_mask=.  TFM_HF_FAKE_MODE plants one bug
for the harness to catch: exact (none), noisy (one value off), threads
(--threads 2 one ulp off), flip (one generated id off), norm_ones (norm
weights ones), no_bias (biases zero), ignore_weights (--weights ignored),
json_kv (num_kv_heads left out of the description), accept_any (nothing
rejected), err_multiline (a second stderr line), err_rc2 (exit 2 for
exit 1), missing_crash (abort on a missing weights file or shard),
int64_ids (generated ids int64), no_mask (attention_mask ignored),
no_types (token_type_ids ignored).  For a mamba folder the fake executable
refuses attention_mask (naming it), except in accept_any.  A successful run
of the fake executable stores its output before the mode's changes
(CASE.exe.run-KEY, KEY a hash of the executable file (path, inode, size,
mtime: this compile's), TFM_HF_FAKE_MODE, DIR and its config.json, the
contents of the weights file (an index: and its shards) and of every
--input file, --generate, and this directory's sources); a run with the
same KEY (--threads 2 after 1) loads it instead of importing transformers,
then applies the mode's changes (noisy, threads, flip, int64_ids) as ever.
"""

import argparse
import copy
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
# Not on sys.path: this directory's safetensors.py (the other harnesses'
# writer) would shadow the safetensors package transformers imports.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]


def _load(name):
    """This directory's module `name`, by its file (the directory is off sys.path)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _load_cases():
    return _load("hf_cases")


cases_mod = _load_cases()

DEFAULT_VENV = os.path.join(os.path.expanduser("~"), ".cache", "tfm", "hf-venv")
TRANSFORMERS_VERSION = "4.46.3"
F64_FRACTION = 0.1     # |ref32 - ref64| must stay below this share of the tolerance
AMBIGUITY = 2.0        # generation: the top-2 gap must be above AMBIGUITY * tol at every step
GEN_LINE_RE = re.compile(r"^generate: prefill_tok_s=(\S+) decode_tok_s=(\S+) "
                         r"new_tokens=(\d+) threads=(\d+)$")
FAKE_MODES = ("exact", "noisy", "threads", "flip", "norm_ones", "no_bias", "ignore_weights",
              "json_kv", "accept_any", "err_multiline", "err_rc2", "missing_crash", "int64_ids",
              "no_mask", "no_types")


# A mamba model's in_proj and out_proj weights are scaled by this after
# transformers' init (as mamba_reference.py's WHOLE_MODEL_GAIN): at the init
# scale the residual stream is the token's embedding, and a tied model's
# greedy path repeats the prompt's last token whatever the mixers compute.
MAMBA_MIXER_GAIN = 4.0


class CaseFailure(Exception):
    pass


# ---------------------------------------------------------------------------
# Finding the oracle: a python with transformers.
# ---------------------------------------------------------------------------

def _argv_python(argv):
    for i, a in enumerate(argv):
        if a == "--python" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--python="):
            return a.split("=", 1)[1]
    return None


def oracle_candidates(argv):
    """(path, where it came from), in the order they are tried."""
    out = []
    p = _argv_python(argv)
    if p:
        return [(p, "--python")]
    if os.environ.get("TFM_HF_PYTHON"):
        out.append((os.environ["TFM_HF_PYTHON"], "$TFM_HF_PYTHON"))
    if os.environ.get("TFM_HF_VENV"):
        out.append((os.path.join(os.environ["TFM_HF_VENV"], "bin", "python"), "$TFM_HF_VENV"))
    out.append((os.path.join(DEFAULT_VENV, "bin", "python"), "the default venv"))
    return out


def bootstrap(argv):
    """Returns None when this interpreter has transformers, else re-executes
    this script with the oracle's python; returns an error message when
    there is none."""
    try:
        __import__("transformers")
        return None
    except ImportError:
        pass
    tried = []
    for path, where in oracle_candidates(argv):
        tried.append("%s (%s)" % (path, where))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            if os.environ.get("TFM_HF_REEXEC") == path:
                return ("%s has no importable transformers (reexecuted once); "
                        "run scripts/install-deps.sh" % path)
            os.environ["TFM_HF_REEXEC"] = path
            sys.stdout.flush()
            sys.stderr.flush()
            os.execv(path, [path, os.path.abspath(__file__)] + list(argv))
    return ("no python with transformers: %s cannot import it, and none of %s exists; "
            "run scripts/install-deps.sh (it makes the venv with transformers==%s), "
            "or pass --python" % (sys.executable, ", ".join(tried), TRANSFORMERS_VERSION))


_HF = None


def hf():
    """torch and transformers, imported once, offline, quiet; with the
    workarounds Debian's torch 1.13 on Python 3.11 needs."""
    global _HF
    if _HF is not None:
        return _HF
    for k, v in (("TRANSFORMERS_OFFLINE", "1"), ("HF_HUB_OFFLINE", "1"),
                 ("HF_HUB_DISABLE_TELEMETRY", "1"), ("TRANSFORMERS_VERBOSITY", "error"),
                 ("TOKENIZERS_PARALLELISM", "false"), ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")):
        os.environ.setdefault(k, v)
    import torch
    import transformers
    import transformers.generation.utils as gen_utils
    # generate() asks is_fsdp_managed_module(model), which imports
    # torch.distributed.fsdp: with torch 1.13 under Python 3.11 that import
    # fails (a dataclass with a mutable default). Nothing here is FSDP.
    if hasattr(gen_utils, "is_fsdp_managed_module"):
        gen_utils.is_fsdp_managed_module = lambda module: False
    # MambaCache (a mamba forward with use_cache, and generate) marks its
    # tensors static for torch.compile with torch._dynamo.mark_static_address,
    # which torch 1.13 does not have; the mark changes nothing eager, so a
    # stand-in that does nothing serves (as mamba_reference.py's). Only the
    # static caches call torch._dynamo without importing it.
    if not hasattr(torch, "_dynamo"):
        import types
        torch._dynamo = types.SimpleNamespace(mark_static_address=lambda t: None,
                                              is_compiling=lambda: False)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()   # "Loading checkpoint shards" bars
    _HF = (torch, transformers)
    return _HF


# ---------------------------------------------------------------------------
# Small helpers.
# ---------------------------------------------------------------------------

def np():
    import numpy
    return numpy


def tolerance(ref):
    n = np()
    return 1e-4 * (1.0 + float(n.max(n.abs(ref)))) if ref.size else 1e-4


def case_seed(case):
    if case.seed is not None:
        return case.seed
    return zlib.crc32(case.name.encode("utf-8")) & 0x7FFFFFFF


def _clip(line, n):
    return line if len(line) <= n else line[: n - 3] + "..."


def _lines(text):
    return [l.strip() for l in (text or "").strip().splitlines() if l.strip()]


def _tail(text, lines=3, width=160):
    ls = _lines(text)
    if not ls:
        return "(no stderr)"
    tail = ls[-lines:]
    first = next((l for l in ls if "error" in l.lower()), None)
    parts = []
    if first is not None and first not in tail:
        parts = [_clip(first, width), "..."]
    return " | ".join(parts + [_clip(l, width) for l in tail])


def _write(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def _shape_tag(shape):
    return "x".join(str(s) for s in shape)


# ---------------------------------------------------------------------------
# The transformers side.
# ---------------------------------------------------------------------------

def make_config(case):
    torch, tr = hf()
    return tr.AutoConfig.for_model(case.model_type, **case.config)


def build_model(case, seed):
    """The case's model (its hf_class, else AutoModelForCausalLM for a
    causal LM, else AutoModel; eager attention) with seeded random weights,
    in eval mode; every parameter the init leaves constant (ones or zeros:
    norm weights, biases) perturbed; a mamba model's in_proj and out_proj
    weights times MAMBA_MIXER_GAIN.  Returns (model, names perturbed)."""
    torch, tr = hf()
    cfg = make_config(case)
    torch.manual_seed(seed)
    if case.hf_class:
        model = getattr(tr, case.hf_class)._from_config(cfg, attn_implementation="eager")
    elif case.is_causal_lm:
        model = tr.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    elif case.model_type == "t5":
        model = tr.AutoModelForSeq2SeqLM.from_config(cfg)
    else:
        model = tr.AutoModel.from_config(cfg, attn_implementation="eager")
    model.eval()
    if case.model_type == "mamba":
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith(("mixer.in_proj.weight", "mixer.out_proj.weight")):
                    p.mul_(MAMBA_MIXER_GAIN)
    return model, perturb_constants(model, seed)


def reference_module(case, model):
    """What the executable computes: the model itself, or (hf_class set,
    e.g. BertForMaskedLM) its base model (BertModel)."""
    return model.base_model if case.hf_class else model


def perturb_constants(model, seed):
    """Random values for every parameter its init leaves constant (norm
    weights, biases, mamba's D: see build_model), and 0.1 N(0,1) added to
    one whose rows are all equal (mamba's A_log: log(1..N) for every
    channel), so that a channel's value read from the wrong channel shows."""
    torch, _ = hf()
    g = torch.Generator().manual_seed(seed ^ 0x5EED)
    changed = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.numel() < 2:
                continue
            flat = p.detach().reshape(-1)
            if p.dim() == 2 and p.shape[0] > 1 and p.shape[1] > 1 and \
                    bool(torch.all(p.detach() == p.detach()[:1])):
                p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
                changed.append(name)
            elif bool(torch.all(flat == flat[0])):
                c = float(flat[0])
                noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
                if c == 1.0:
                    p.copy_(1.0 + 0.2 * noise)
                else:
                    p.copy_(c + 0.1 * noise)
                changed.append(name)
    return changed


def save_checkpoint(model, d, edit_config=None, case=None):
    """save_pretrained(d, safe_serialization=True), with the case's
    max_shard_size (then checked: an index, >= 3 shards, no
    model.safetensors) and its layout rewrite; then edit_config."""
    if os.path.isdir(d):
        shutil.rmtree(d)
    kw = {"max_shard_size": case.max_shard_size} if case is not None and case.max_shard_size else {}
    model.save_pretrained(d, safe_serialization=True, **kw)
    if kw:
        shards = shard_files(d)
        if len(shards) < 3 or os.path.exists(os.path.join(d, "model.safetensors")):
            raise CaseFailure("harness: max_shard_size %s gave %d shards (and model.safetensors %s): "
                              "expected >= 3 shards and no model.safetensors"
                              % (case.max_shard_size, len(shards),
                                 os.path.exists(os.path.join(d, "model.safetensors"))))
    if case is not None and case.layout:
        rewrite_layout(case, model, os.path.join(d, "model.safetensors"))
    if edit_config:
        path = os.path.join(d, "config.json")
        with open(path) as f:
            cfg = json.load(f)
        cfg.update(edit_config)
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)


def shard_files(d):
    """The shard files d/model.safetensors.index.json lists (sorted), or []."""
    path = os.path.join(d, "model.safetensors.index.json")
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return sorted(set(json.load(f)["weight_map"].values()))


def weights_path(d):
    """The file --weights gets for checkpoint folder d: its model.safetensors,
    or its index."""
    w = os.path.join(d, "model.safetensors")
    return w if os.path.exists(w) else os.path.join(d, "model.safetensors.index.json")


def rewrite_layout(case, model, path):
    """Rewrites the saved model.safetensors in the case's layout (see
    hf_cases.Case.layout)."""
    torch, _ = hf()
    from safetensors.torch import load_file, save_file
    tensors = load_file(path)
    if case.layout == "gpt2_hub":
        out = {}
        for k, v in tensors.items():
            if not k.startswith("transformer."):
                raise CaseFailure("harness: gpt2 tensor %s has no transformer. prefix" % k)
            out[k[len("transformer."):]] = v
        n_pos = model.config.n_positions
        causal = torch.tril(torch.ones((n_pos, n_pos), dtype=torch.float32)).view(1, 1, n_pos, n_pos)
        for i in range(model.config.n_layer):
            out["h.%d.attn.bias" % i] = causal.clone()
            out["h.%d.attn.masked_bias" % i] = torch.tensor(-1e4, dtype=torch.float32)
    elif case.layout == "tied_lm_head":
        if "lm_head.weight" in tensors:
            raise CaseFailure("harness: a tied checkpoint already has lm_head.weight")
        out = dict(tensors)
        out["lm_head.weight"] = model.get_input_embeddings().weight.detach().clone().contiguous()
    else:
        raise CaseFailure("harness: layout %r" % case.layout)
    save_file(out, path, metadata={"format": "pt"})


def load_checkpoint(case, d):
    """transformers' from_pretrained(d) of the class the case saved, eager attention."""
    torch, tr = hf()
    if case.hf_class:
        cls = getattr(tr, case.hf_class)
    elif case.is_causal_lm:
        cls = tr.AutoModelForCausalLM
    else:
        cls = tr.AutoModel
    return cls.from_pretrained(d, attn_implementation="eager").eval()


def same_parameters(a, b):
    """None if b's parameters equal a's exactly (names and bits)."""
    torch, _ = hf()
    sa, sb = a.state_dict(), b.state_dict()
    if sorted(sa) != sorted(sb):
        return "names differ: %s" % sorted(set(sa) ^ set(sb))[:4]
    for k in sa:
        if sa[k].shape != sb[k].shape or not torch.equal(sa[k], sb[k]):
            return "%s differs" % k
    return None


def forward_logits(model, ids, token_types=None, mask=None):
    """numpy logits (a model without an LM head, e.g. BertModel: its last
    hidden state) of ids ([seq] or [batch, seq], any int dtype), with
    token_type_ids and an attention_mask (0/1, any dtype) of the same
    shape if given; float32 for a float32 model; batch dimension iff the
    input had one."""
    torch, _ = hf()
    n = np()

    def tensor(a):
        t = torch.from_numpy(n.ascontiguousarray(a, dtype=n.int64))
        return t[None] if t.dim() == 1 else t
    kw = {"input_ids": tensor(ids)}
    if token_types is not None:
        kw["token_type_ids"] = tensor(token_types)
    if mask is not None:
        kw["attention_mask"] = tensor(mask)
    with torch.no_grad():
        res = model(**kw)
    out = getattr(res, "logits", None)
    if out is None:
        out = res.last_hidden_state
    out = out.numpy()
    return out[0] if n.ndim(ids) == 1 else out


def greedy_loop(model, prompt2d, n_new):
    """Greedy decoding written out: a full forward over the growing sequence
    each step, argmax of the last row (lowest id on ties).  Returns ids
    [B, n] int64, and per step the smallest top-2 gap over the batch and
    the tolerance of that step's logits."""
    n = np()
    seq = n.array(prompt2d, dtype=n.int64)
    ids, gaps, tols = [], [], []
    for _ in range(n_new):
        rows = forward_logits(model, seq)[:, -1, :].astype(n.float64)
        nxt = n.argmax(rows, axis=-1)
        top2 = n.sort(rows, axis=-1)[:, -2:]
        gaps.append(float(n.min(top2[:, 1] - top2[:, 0])))
        tols.append(tolerance(rows))
        ids.append(nxt)
        seq = n.concatenate([seq, nxt[:, None]], axis=1)
    return n.stack(ids, axis=1), gaps, tols


def hf_generate(model, prompt2d, n_new):
    """transformers' own greedy generate (KV cache), ids [B, n] int64: no
    stop at an eos id (tfm writes exactly n new ids)."""
    torch, tr = hf()
    n = np()
    t = torch.from_numpy(n.ascontiguousarray(prompt2d, dtype=n.int64))
    gc = tr.GenerationConfig(max_new_tokens=n_new, min_new_tokens=0, do_sample=False, num_beams=1,
                             eos_token_id=None, bos_token_id=None, pad_token_id=0)
    # generate() fills the ids left None from the model's own generation
    # config (the saved eos_token_id 2 would stop it there): clear them.
    model.generation_config.eos_token_id = None
    model.generation_config.bos_token_id = None
    with torch.no_grad():
        out = model.generate(input_ids=t, attention_mask=torch.ones_like(t), generation_config=gc)
    out = out.numpy()
    if out.shape != (t.shape[0], t.shape[1] + n_new) or not n.array_equal(out[:, : t.shape[1]], t.numpy()):
        raise CaseFailure("harness: model.generate returned %s for a prompt %s"
                          % (list(out.shape), list(t.shape)))
    return out[:, t.shape[1]:]


def generation_reference(model, prompt, n_new):
    """transformers' ids for prompt ([seq] or [batch, seq]) in the shape the
    executable writes ([n] or [batch, n]); raises CaseFailure
    "ill-conditioned" when a step's top-2 gap is within AMBIGUITY * tol or
    generate and the full-forward loop disagree."""
    n = np()
    p2 = prompt[None] if prompt.ndim == 1 else prompt
    ids = hf_generate(model, p2, n_new)
    loop, gaps, tols = greedy_loop(model, p2, n_new)
    if not n.array_equal(ids, loop):
        t = int(n.argmax(n.any(ids != loop, axis=0)))
        raise CaseFailure("ill-conditioned: model.generate and the full-forward greedy loop differ "
                          "at step %d (gap %.3g)" % (t, gaps[t]))
    for t, (g, tol) in enumerate(zip(gaps, tols)):
        if not g > AMBIGUITY * tol:
            raise CaseFailure("ill-conditioned: prompt %s step %d top-2 gap %.3g <= %g*tol=%.3g "
                              "(choose another seed or config)"
                              % (list(prompt.shape), t, g, AMBIGUITY, AMBIGUITY * tol))
    min_ratio = min(g / tol for g, tol in zip(gaps, tols))
    return (ids[0] if prompt.ndim == 1 else ids), min_ratio


def f64_check(model, ids, ref, tol, token_types=None, mask=None, where=None):
    """The float32 reference must be within F64_FRACTION * tol of float64
    (at the positions where selects, [seq] or [batch, seq], if given)."""
    n = np()
    m64 = copy.deepcopy(model).double()
    r64 = forward_logits(m64, ids, token_types, mask)
    diff = n.abs(r64 - ref.astype(n.float64))
    if where is not None:
        diff = diff[where]
    err = float(n.max(diff)) if diff.size else 0.0
    if not err <= F64_FRACTION * tol:
        raise CaseFailure("ill-conditioned: float32 logits of %s are %.3g from float64 > %g*tol"
                          % (list(ids.shape), err, F64_FRACTION))
    return err


# ---------------------------------------------------------------------------
# What tfm-compile --emit=model-json must say (contract sections 2 and 11).
# ---------------------------------------------------------------------------

# Defaults of the model description, for keys a printed description leaves out.
JSON_DEFAULTS = {
    "positional": "sinusoidal", "rope_style": "half", "rope_base": 10000.0, "norm": "post",
    "norm_eps": 1e-5, "activation": "relu", "norm_type": "layer_norm", "ffn_gated": False,
    "bias": True, "tie_embeddings": True, "embedding_scale": "none",
    "attention_score": "scaled_dot",
}


# A mamba checkpoint's max_seq_len (its config has no limit; contract section 11).
MAMBA_MAX_SEQ_LEN = 2048

# bert's hidden_act -> the description's activation.
BERT_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                    "relu": "relu", "silu": "silu", "swish": "silu"}


def expected_model_json(cfg):
    """{key: value} for a config.json dict of a supported model_type."""
    mt = cfg["model_type"]
    if mt in ("llama", "mistral", "mixtral"):
        heads = cfg["num_attention_heads"]
        kv = cfg.get("num_key_value_heads") or heads
        moe = {"ffn": {"kind": "moe", "experts": cfg["num_local_experts"],
                       "top_k": cfg["num_experts_per_tok"]}} if mt == "mixtral" else {}
        return dict(moe, **{
            "architecture": "decoder", "d_model": cfg["hidden_size"], "num_heads": heads,
            "num_kv_heads": kv, "d_ff": cfg["intermediate_size"],
            "num_layers": cfg["num_hidden_layers"], "vocab_size": cfg["vocab_size"],
            "max_seq_len": cfg["max_position_embeddings"], "positional": "rope",
            "rope_style": "half", "rope_base": float(cfg.get("rope_theta", 10000.0)),
            "norm": "pre", "norm_type": "rms_norm", "norm_eps": float(cfg["rms_norm_eps"]),
            "final_norm": True, "activation": "silu", "ffn_gated": True, "bias": False,
            "tie_embeddings": bool(cfg.get("tie_word_embeddings", False)),
            "embedding_scale": "none", "attention_score": "scaled_dot",
        })
    if mt == "gpt2":
        d = cfg["n_embd"]
        return {
            "architecture": "decoder", "d_model": d, "num_heads": cfg["n_head"],
            "num_kv_heads": cfg["n_head"], "d_ff": cfg.get("n_inner") or 4 * d,
            "num_layers": cfg["n_layer"], "vocab_size": cfg["vocab_size"],
            "max_seq_len": cfg["n_positions"], "positional": "learned", "norm": "pre",
            "norm_type": "layer_norm", "norm_eps": float(cfg["layer_norm_epsilon"]),
            "final_norm": True, "activation": "gelu_tanh", "ffn_gated": False, "bias": True,
            "tie_embeddings": bool(cfg.get("tie_word_embeddings", True)),
            "embedding_scale": "none", "attention_score": "scaled_dot",
        }
    if mt == "bert":
        heads = cfg["num_attention_heads"]
        return {
            "architecture": "encoder", "d_model": cfg["hidden_size"], "num_heads": heads,
            "num_kv_heads": heads, "d_ff": cfg["intermediate_size"],
            "num_layers": cfg["num_hidden_layers"], "vocab_size": cfg["vocab_size"],
            "type_vocab_size": cfg.get("type_vocab_size", 2),
            "max_seq_len": cfg.get("max_position_embeddings", 512), "positional": "learned",
            "norm": "post", "norm_type": "layer_norm",
            "norm_eps": float(cfg.get("layer_norm_eps", 1e-12)), "final_norm": False,
            "embedding_norm": True, "activation": BERT_ACTIVATIONS[cfg.get("hidden_act", "gelu")],
            "ffn_gated": False, "bias": True, "lm_head": False, "embedding_scale": "none",
            "attention_score": "scaled_dot",
        }
    if mt == "mamba":
        d = cfg["hidden_size"]
        layers = cfg["num_hidden_layers"]
        rank = cfg.get("time_step_rank", "auto")
        return {
            "architecture": "decoder", "d_model": d, "num_layers": layers,
            "vocab_size": cfg["vocab_size"], "layers": ["mamba"] * layers,
            "mamba": {"d_state": cfg.get("state_size", 16), "d_conv": cfg.get("conv_kernel", 4),
                      "expand": cfg.get("expand", 2), "dt_rank": rank},
            "max_seq_len": MAMBA_MAX_SEQ_LEN, "positional": "none", "norm": "pre",
            "norm_type": "rms_norm", "norm_eps": float(cfg.get("layer_norm_epsilon", 1e-5)),
            "final_norm": True, "tie_embeddings": bool(cfg.get("tie_word_embeddings", True)),
        }
    raise ValueError("no expected model description for model_type %s" % mt)


def check_model_json(desc, expected):
    """None if desc (a parsed --emit=model-json) has the expected values,
    counting an absent key as its default; else what is wrong."""
    if not isinstance(desc, dict):
        return "model-json is a %s, not an object" % type(desc).__name__
    bad = []
    for k, want in expected.items():
        if k in desc:
            got = desc[k]
        elif k == "num_kv_heads":
            got = desc.get("num_heads")
        elif k == "final_norm":
            got = desc.get("norm", "post") == "pre"
        elif k in JSON_DEFAULTS:
            got = JSON_DEFAULTS[k]
        else:
            bad.append("%s missing (expected %r)" % (k, want))
            continue
        if isinstance(want, bool) or isinstance(got, bool):
            ok = got is want
        elif isinstance(want, float) or isinstance(got, float):
            ok = isinstance(got, (int, float)) and math.isclose(float(got), float(want), rel_tol=1e-9)
        else:
            ok = got == want
        if not ok:
            bad.append("%s=%r (expected %r%s)" % (k, got, want, "" if k in desc else ", key absent"))
    return ("model-json: " + "; ".join(bad)) if bad else None


# ---------------------------------------------------------------------------
# Checks of the executable's outputs (shared by the cases and the self-test).
# ---------------------------------------------------------------------------

def check_logits(tag, out, ref, tol, where=None):
    """Contract section 6; returns max_err.  where (bool, the output's
    shape without its last dimension): the positions compared (the others,
    e.g. a left-padded causal row with no real key, may hold anything)."""
    n = np()
    if out.dtype != n.float32:
        raise CaseFailure("%s: output dtype %s, expected float32" % (tag, out.dtype))
    if out.shape != ref.shape:
        raise CaseFailure("%s: output shape %s, expected %s" % (tag, list(out.shape), list(ref.shape)))
    sel = n.ones(out.shape, dtype=bool) if where is None else \
        n.broadcast_to(n.asarray(where, dtype=bool)[..., None], out.shape)
    bad = ~n.isfinite(out) & sel
    if n.any(bad):
        raise CaseFailure("%s: output has %d non-finite values" % (tag, int(n.sum(bad))))
    with n.errstate(invalid="ignore"):
        err_arr = n.where(sel, n.abs(out.astype(n.float64) - ref.astype(n.float64)), 0.0)
    err = float(n.max(err_arr)) if err_arr.size else 0.0
    if not err <= tol:
        idx = n.unravel_index(int(n.argmax(err_arr)), err_arr.shape)
        raise CaseFailure("%s: max_err=%.3g > tol=%.3g at %s (got %.6g, ref %.6g)"
                          % (tag, err, tol, list(idx), out[idx], ref[idx]))
    return err


def check_identical(tag, a, b):
    n = np()
    if a.dtype != b.dtype or a.shape != b.shape:
        raise CaseFailure("%s: --threads 2 output is %s %s, --threads 1 %s %s"
                          % (tag, b.dtype, list(b.shape), a.dtype, list(a.shape)))
    if a.tobytes() != b.tobytes():
        if a.dtype == n.float32:
            k = int(n.sum(a.view(n.uint32) != b.view(n.uint32)))
            d = float(n.max(n.abs(a.astype(n.float64) - b.astype(n.float64))))
            raise CaseFailure("%s: --threads 1 and 2 differ in %d elements (max %.3g): "
                              "not bit-identical" % (tag, k, d))
        k = int(n.sum(a != b))
        raise CaseFailure("%s: --threads 1 and 2 ids differ in %d places" % (tag, k))


def check_ids(tag, ids, ref):
    """The executable's greedy ids against transformers' (exact)."""
    n = np()
    if ids.dtype != n.int32:
        raise CaseFailure("%s: ids dtype %s, expected int32" % (tag, ids.dtype))
    if ids.shape != ref.shape:
        raise CaseFailure("%s: ids shape %s, expected %s" % (tag, list(ids.shape), list(ref.shape)))
    if not n.array_equal(ids.astype(n.int64), ref):
        diff = n.nonzero((ids.astype(n.int64) != ref).reshape(-1, ref.shape[-1]))
        step = int(n.min(diff[1]))
        raise CaseFailure("%s: greedy ids differ from transformers' at step %d: got %s, expected %s"
                          % (tag, step, ids.tolist(), ref.tolist()))


def check_rejected(tag, rc, stderr, names, one_line=False):
    """An exit-1 user error whose stderr names every string of names
    (case-insensitive); None if so, else why not."""
    if rc < 0:
        return "%s: killed by signal %d (expected exit 1): %s" % (tag, -rc, _tail(stderr))
    if rc != 1:
        return "%s: exited %d, expected 1: %s" % (tag, rc, _tail(stderr))
    lines = _lines(stderr)
    if not lines:
        return "%s: exited 1 with nothing on stderr" % tag
    if one_line and len(lines) != 1:
        return "%s: %d stderr lines, expected one: %s" % (tag, len(lines), _tail(stderr, 4))
    low = stderr.lower()
    missing = [s for s in names if s.lower() not in low]
    if missing:
        return "%s: the message does not name %s: %s" % (tag, ", ".join(missing), _tail(stderr))
    return None


# ---------------------------------------------------------------------------
# Running tools.
# ---------------------------------------------------------------------------

class Runner:
    def __init__(self, opts, case_dir):
        self.compiler = opts["compiler"]          # a command (list)
        self.backend = opts["backend"]
        self.timeouts = (opts["compile_timeout"], opts["run_timeout"])
        self.dir = case_dir

    def run(self, cmd, tag, timeout):
        _write(self.dir, tag + ".cmd", " ".join(cmd) + "\n")
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.dir)
        except subprocess.TimeoutExpired:
            raise CaseFailure("%s: timed out after %ds" % (tag, timeout))
        except OSError as e:
            raise CaseFailure("%s: cannot run %s: %s" % (tag, cmd[0], e))
        _write(self.dir, tag + ".stdout", p.stdout)
        _write(self.dir, tag + ".stderr", p.stderr)
        return p.returncode, p.stdout, p.stderr

    def compile(self, src, args, tag):
        return self.run(self.compiler + [src] + list(args), tag, self.timeouts[0])

    def compile_exe(self, src, exe, tag="compile", extra=()):
        if os.path.exists(exe):
            os.remove(exe)
        args = ["-o", exe] + list(extra)
        if self.backend:
            args.append("--backend=" + self.backend)
        rc, out, err = self.compile(src, args, tag)
        if rc != 0:
            what = ("killed by signal %d" % -rc) if rc < 0 else ("exited %d" % rc)
            raise CaseFailure("tfm-compile %s %s: %s" % (os.path.basename(src), what, _tail(err)))
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise CaseFailure("tfm-compile succeeded but wrote no executable %s" % exe)

    def exe(self, exe, args, tag):
        return self.run([exe] + list(args), tag, self.timeouts[1])

    def exe_ok(self, exe, args, tag):
        rc, out, err = self.exe(exe, args, tag)
        if rc != 0:
            what = ("killed by signal %d" % -rc) if rc < 0 else ("exited %d" % rc)
            raise CaseFailure("executable %s %s: %s" % (tag, what, _tail(err)))
        return out


def load_npy(path, tag):
    try:
        return np().load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - any unreadable output is a failure
        raise CaseFailure("%s: output unreadable: %s" % (tag, e))


def run_forward(r, exe, ids_path, out_path, threads, tag, weights=None, more=()):
    """The executable on --input input_ids=ids_path and the (name, path)
    pairs of more (token_type_ids, attention_mask)."""
    if os.path.exists(out_path):
        os.remove(out_path)
    args = [] if weights is None else ["--weights", weights]
    args += ["--input", "input_ids=" + ids_path]
    for name, path in more:
        args += ["--input", "%s=%s" % (name, path)]
    args += ["--output", out_path, "--threads", str(threads)]
    r.exe_ok(exe, args, tag)
    return load_npy(out_path, tag)


def input_plan(case):
    """The case's forward inputs (hf_cases.Inp): inputs (int64),
    int32_input, more_inputs; and the largest batch of them and the prompts."""
    Inp = cases_mod.Inp
    specs = [Inp(tuple(s)) for s in case.inputs] + [Inp(tuple(case.int32_input), "int32")]
    specs += list(case.more_inputs)
    shapes = [x.shape for x in specs] + (list(case.prompts) if case.is_causal_lm else [])
    batch = max([s[0] for s in shapes if len(s) == 2] + [1])
    return specs, batch


def make_mask(rng, shape, side):
    """A 0/1 int64 mask of shape ([seq] or [batch, seq]) padded on side
    ("right" or "left"): each row 1 to seq real tokens, at least one row
    padded; side "ones": no padding."""
    n = np()
    if side == "ones":
        return n.ones(shape, dtype=n.int64)
    rows = 1 if len(shape) == 1 else shape[0]
    seq = shape[-1]
    lens = rng.integers(1, seq + 1, size=rows)
    if n.all(lens == seq):
        lens[rng.integers(0, rows)] = rng.integers(1, seq)
    pos = n.arange(seq)[None, :]
    real = pos < lens[:, None] if side == "right" else pos >= (seq - lens)[:, None]
    m = real.astype(n.int64)
    return m[0] if len(shape) == 1 else m


def compared_positions(mask, causal):
    """The positions whose outputs are compared: every one, except, in a
    causal model, those with no real key at or before them (left padding:
    contract section 8 leaves them unspecified)."""
    n = np()
    if mask is None or not causal:
        return None
    return n.maximum.accumulate(n.asarray(mask) != 0, axis=-1)


def _input_name(x):
    name = "%s_%s" % (_shape_tag(x.shape), x.dtype)
    if x.types:
        name += "_tt"
    if x.mask:
        name += "_m%s_%s" % (x.mask, x.mask_dtype)
    return name


def refused_mask_check(r, exe, case_dir, name, x, more, path):
    """A mask input of a model that refuses one (contract section 8: a mamba
    layer): the forward, and --generate of that input, exit 1 naming
    attention_mask and write no output."""
    what = "input %s %s attention_mask %s %s" % (list(x.shape), x.dtype, x.mask, x.mask_dtype)
    for tag, args in (("run_%s" % name, ["--threads", "1"]),
                      ("gen_%s" % name, ["--generate", "2"])):
        out = os.path.join(case_dir, "out_%s.npy" % tag)
        if os.path.exists(out):
            os.remove(out)
        argv = args + ["--input", "input_ids=" + path]
        for k, p in more:
            argv += ["--input", "%s=%s" % (k, p)]
        rc, _, err = r.exe(exe, argv + ["--output", out], tag)
        why = check_rejected("executable %s%s (a mamba model takes no mask)"
                             % ("--generate, " if tag.startswith("gen") else "", what),
                             rc, err, ["attention_mask"])
        if why:
            raise CaseFailure(why)
        if os.path.exists(out):
            raise CaseFailure("executable %s: exited 1 but wrote %s" % (what, os.path.basename(out)))


def forward_checks(r, exe, model, case_dir, specs, seed, causal=True, refuse_mask=False):
    """Step 5 for each input spec (hf_cases.Inp); returns (worst err/tol,
    count compared).  With refuse_mask (a mamba model), an input with a
    mask must be refused instead (refused_mask_check)."""
    n = np()
    rng = n.random.default_rng(seed)
    vocab = model.config.vocab_size
    worst = 0.0
    compared = 0
    for x in specs:
        name = _input_name(x)
        ids = rng.integers(0, vocab, size=x.shape).astype(x.dtype)
        path = os.path.join(case_dir, "in_%s.npy" % name)
        n.save(path, ids)
        more, types, mask = [], None, None
        if x.types:
            types = rng.integers(0, model.config.type_vocab_size, size=x.shape).astype(n.int64)
            more.append(("token_type_ids", os.path.join(case_dir, "tt_%s.npy" % name)))
            n.save(more[-1][1], types)
        if x.mask:
            mask = make_mask(rng, x.shape, x.mask)
            more.append(("attention_mask", os.path.join(case_dir, "mask_%s.npy" % name)))
            n.save(more[-1][1], mask.astype(x.mask_dtype))
        if refuse_mask and x.mask:
            if r is not None:
                refused_mask_check(r, exe, case_dir, name, x, more, path)
            continue
        compared += 1
        where = compared_positions(mask, causal)
        ref = forward_logits(model, ids, types, mask)
        tol = tolerance(ref if where is None else ref[where])
        if where is None or n.all(where):
            # (Not with a position that has no key: transformers' eager
            # attention takes its softmax in float32, where the float64
            # mask value is -inf, so such a row is NaN in the float64 model
            # and spreads to the others through 0 * NaN.)
            f64_check(model, ids, ref, tol, types, mask, where)
        n.save(os.path.join(case_dir, "ref_%s.npy" % name), ref)
        if r is None:
            continue
        outs = {}
        for t in (1, 2):
            tag = "run_%s_t%d" % (name, t)
            outs[t] = run_forward(r, exe, path, os.path.join(case_dir, "out_%s_t%d.npy" % (name, t)),
                                  t, tag, more=more)
        what = "input %s %s%s%s" % (list(x.shape), x.dtype, " token_type_ids" if x.types else "",
                                    " attention_mask %s-padded %s" % (x.mask, x.mask_dtype)
                                    if x.mask else "")
        err = check_logits(what, outs[1], ref, tol, where)
        check_identical(what, outs[1], outs[2])
        worst = max(worst, err / tol)
    return worst, compared


def generate_checks(r, exe, model, case_dir, prompts, seed):
    """Step 7; returns the smallest top-2 gap / tol over the prompts' steps."""
    n = np()
    rng = n.random.default_rng(seed ^ 0x6E6)
    vocab = model.config.vocab_size
    nn = cases_mod.GEN_NEW_TOKENS
    margin = float("inf")
    for shape in prompts:
        name = _shape_tag(shape)
        prompt = rng.integers(0, vocab, size=shape).astype(n.int64)
        path = os.path.join(case_dir, "prompt_%s.npy" % name)
        n.save(path, prompt)
        ref, m = generation_reference(model, prompt, nn)
        margin = min(margin, m)
        n.save(os.path.join(case_dir, "gen_ref_%s.npy" % name), ref)
        if r is None:
            continue
        got = {}
        for t in (1, 2):
            tag = "gen_%s_t%d" % (name, t)
            out = os.path.join(case_dir, "gen_%s_t%d.npy" % (name, t))
            if os.path.exists(out):
                os.remove(out)
            stdout = r.exe_ok(exe, ["--generate", str(nn), "--input", "input_ids=" + path,
                                    "--output", out, "--threads", str(t)], tag)
            ls = _lines(stdout)
            m2 = GEN_LINE_RE.match(ls[-1]) if ls else None
            if not m2 or int(m2.group(3)) != nn or int(m2.group(4)) != t:
                raise CaseFailure("%s: last stdout line %r is not `generate: prefill_tok_s=... "
                                  "decode_tok_s=... new_tokens=%d threads=%d`"
                                  % (tag, ls[-1] if ls else "", nn, t))
            got[t] = load_npy(out, tag)
            check_ids("generate prompt %s --threads %d" % (list(shape), t), got[t], ref)
        check_identical("generate prompt %s" % list(shape), got[1], got[2])
    return margin


def model_json_checks(r, hf_dir, case_dir, expected):
    rc, out, err = r.compile(hf_dir, ["--emit=model-json"], "model_json")
    if rc != 0:
        raise CaseFailure("tfm-compile DIR --emit=model-json exited %d: %s" % (rc, _tail(err)))
    try:
        desc = json.loads(out)
    except ValueError as e:
        raise CaseFailure("--emit=model-json output is not JSON (%s): %s" % (e, _clip(out.strip(), 120)))
    why = check_model_json(desc, expected)
    if why:
        raise CaseFailure(why)
    path = os.path.join(case_dir, "model.json")
    if os.path.exists(path):
        os.remove(path)
    rc, _, err = r.compile(hf_dir, ["--emit=model-json", "-o", path], "model_json_o")
    if rc != 0:
        raise CaseFailure("tfm-compile DIR --emit=model-json -o FILE exited %d: %s" % (rc, _tail(err)))
    try:
        with open(path) as f:
            desc2 = json.load(f)
    except (OSError, ValueError) as e:
        raise CaseFailure("--emit=model-json -o %s: %s" % (path, e))
    if desc2 != desc:
        raise CaseFailure("--emit=model-json -o FILE differs from the stdout form")
    return len(desc)


# ---------------------------------------------------------------------------
# The cases.
# ---------------------------------------------------------------------------

def prepare_model(case, case_dir, seed, edit=None, sub="hf"):
    """Build, save (case_dir/sub), reload; returns (the reloaded model's
    reference module, hf dir, perturbed names)."""
    model, changed = build_model(case, seed)
    d = os.path.join(case_dir, sub)
    save_checkpoint(model, d, edit, case)
    ref = load_checkpoint(case, d)
    why = same_parameters(model, ref)
    if why:
        raise CaseFailure("harness: from_pretrained(DIR) is not the saved model: %s" % why)
    return reference_module(case, ref), d, changed


def run_model_case(case, case_dir, opts):
    seed = case_seed(case)
    model, d, changed = prepare_model(case, case_dir, seed)
    specs, batch = input_plan(case)
    causal = case.is_causal_lm
    refuse = case.refuses_mask
    gen = case.kind == "model" and causal
    if opts["reference_only"]:
        _, count = forward_checks(None, None, model, case_dir, specs, seed, causal, refuse)
        note = "reference only: %d perturbed tensors, %d inputs" % (len(changed), count)
        if gen:
            note += ", min gen gap/tol=%.3g" % generate_checks(None, None, model, case_dir,
                                                                case.prompts, seed)
        return note
    r = Runner(opts, case_dir)
    notes = []
    if case.kind == "model":
        with open(os.path.join(d, "config.json")) as f:
            keys = model_json_checks(r, d, case_dir, expected_model_json(json.load(f)))
        notes.append("json_keys=%d" % keys)
    exe = os.path.join(case_dir, case.name + ".exe")
    extra = ["--max-batch", str(batch)] if batch > 1 else []
    if case.kind == "either":
        if os.path.exists(exe):
            os.remove(exe)
        args = ["-o", exe] + extra + (["--backend=" + r.backend] if r.backend else [])
        rc, _, err = r.compile(d, args, "compile")
        if rc == 1:
            why = check_rejected("tfm-compile", rc, err, [case.reject_key])
            if why:
                raise CaseFailure(why)
            return "rejected: %s" % _clip(_lines(err)[0], 110)
        if rc != 0:
            what = ("killed by signal %d" % -rc) if rc < 0 else ("exited %d" % rc)
            raise CaseFailure("tfm-compile %s (expected 0, or 1 naming %s): %s"
                              % (what, case.reject_key, _tail(err)))
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise CaseFailure("tfm-compile succeeded but wrote no executable %s" % exe)
    else:
        r.compile_exe(d, exe, extra=extra)
    worst, count = forward_checks(r, exe, model, case_dir, specs, seed, causal, refuse)
    masked = sum(1 for x in specs if x.mask)
    notes.insert(0, "max_err/tol=%.3g over %d inputs (%d masked%s)"
                 % (worst, count, 0 if refuse else masked,
                    ", %d masks refused" % masked if refuse else ""))
    if case.max_shard_size:
        notes.append("%d shards" % len(shard_files(d)))
    if case.kind == "either":
        return "supported; " + ", ".join(notes)
    # --weights: another checkpoint of the same config (as the main one is
    # saved: sharded, rewritten).
    alt, alt_dir, _ = prepare_model(case, case_dir, seed + 1, sub="alt")
    alt_w = weights_path(alt_dir)
    alt_tag = "--weights alt/" + os.path.basename(alt_w)
    n = np()
    rng = n.random.default_rng(seed + 1)
    ids = rng.integers(0, alt.config.vocab_size, size=(batch, 11)).astype(n.int64)
    ids_path = os.path.join(case_dir, "in_alt.npy")
    n.save(ids_path, ids)
    more, types = [], None
    if case.model_type == "bert":
        types = rng.integers(0, alt.config.type_vocab_size, size=ids.shape).astype(n.int64)
        more.append(("token_type_ids", os.path.join(case_dir, "tt_alt.npy")))
        n.save(more[-1][1], types)
    ref_alt, ref_main = forward_logits(alt, ids, types), forward_logits(model, ids, types)
    tol = tolerance(ref_alt)
    if not float(n.max(n.abs(ref_alt - ref_main))) > 10 * tol:
        raise CaseFailure("harness: the --weights checkpoint is too close to the main one")
    out = run_forward(r, exe, ids_path, os.path.join(case_dir, "out_alt.npy"), 1, "run_weights",
                      weights=alt_w, more=more)
    err = check_logits(alt_tag, out, ref_alt, tol)
    notes.append("weights_err/tol=%.3g" % (err / tol))
    if case.max_shard_size:
        notes.append(missing_shard_check(r, exe, alt_dir, case_dir, ids_path, more))
    if gen:
        margin = generate_checks(r, exe, model, case_dir, case.prompts, seed)
        notes.append("generate %d prompts, min gap/tol=%.3g" % (len(case.prompts), margin))
    return ", ".join(notes)


def missing_shard_check(r, exe, alt_dir, case_dir, ids_path, more):
    """--weights of an index one of whose shards is missing: exit 1 naming
    that shard (contract section 4: bad input is exit 1, never a crash)."""
    shards = shard_files(alt_dir)
    part = os.path.join(case_dir, "alt_missing_shard")
    if os.path.isdir(part):
        shutil.rmtree(part)
    os.makedirs(part)
    gone = shards[len(shards) // 2]
    for f in ["config.json", "model.safetensors.index.json"] + shards:
        if f != gone:
            shutil.copy(os.path.join(alt_dir, f), os.path.join(part, f))
    args = ["--weights", os.path.join(part, "model.safetensors.index.json"),
            "--input", "input_ids=" + ids_path]
    for name, path in more:
        args += ["--input", "%s=%s" % (name, path)]
    rc, _, err = r.exe(exe, args + ["--output", os.path.join(case_dir, "out_missing_shard.npy")],
                       "run_missing_shard")
    why = check_rejected("executable --weights of an index without %s" % gone, rc, err, [gone])
    if why:
        raise CaseFailure(why)
    return "missing shard rejected"


def run_error_case(case, case_dir, opts):
    seed = case_seed(case)
    model, _ = build_model(case, seed)
    d = os.path.join(case_dir, "hf")
    save_checkpoint(model, d, case.edit_config, case)
    if opts["reference_only"]:
        return "reference only: folder written"
    r = Runner(opts, case_dir)
    exe = os.path.join(case_dir, case.name + ".exe")
    backend = ["--backend=" + r.backend] if r.backend else []
    if case.check in ("model_type", "key"):
        with open(os.path.join(d, "config.json")) as f:
            mt = json.load(f)["model_type"]
        names = [mt] + list(cases_mod.SUPPORTED) if case.check == "model_type" else [case.reject_key]
        if os.path.exists(exe):
            os.remove(exe)
        first = None
        for tag, args in (("model_json", ["--emit=model-json"]), ("compile", ["-o", exe] + backend)):
            rc, _, err = r.compile(d, args, tag)
            why = check_rejected("tfm-compile DIR " + " ".join(args[:1]), rc, err, names,
                                 one_line=case.check == "model_type")
            if why:
                raise CaseFailure(why)
            first = first or _lines(err)[0]
        if os.path.exists(exe):
            raise CaseFailure("tfm-compile exited 1 but wrote %s" % exe)
        return "rejected: %s" % _clip(first, 120)
    if case.check == "sliding":
        if os.path.exists(exe):
            os.remove(exe)
        rc, _, err = r.compile(d, ["-o", exe] + backend, "compile")
        if rc == 1:
            why = check_rejected("tfm-compile", rc, err, ["sliding_window"])
            if why:
                raise CaseFailure(why)
            return "rejected at compile time: %s" % _clip(_lines(err)[0], 100)
        if rc != 0:
            raise CaseFailure("tfm-compile exited %d (expected 0, or 1 naming sliding_window): %s"
                              % (rc, _tail(err)))
        ref_model = load_checkpoint(case, d)
        within, beyond = case.lengths
        worst, _ = forward_checks(r, exe, ref_model, case_dir, [cases_mod.Inp((within,))], seed)
        n = np()
        ids = n.random.default_rng(seed).integers(0, 100, size=(beyond,)).astype(n.int64)
        p = os.path.join(case_dir, "in_beyond.npy")
        n.save(p, ids)
        rc, _, err = r.exe(exe, ["--input", "input_ids=" + p, "--output",
                                 os.path.join(case_dir, "out_beyond.npy")], "run_beyond")
        why = check_rejected("executable, %d tokens > sliding_window %d" % (beyond, within), rc, err, [])
        if why:
            raise CaseFailure(why)
        # Asking for longer sequences than the window: rejected naming it,
        # or sliding-window attention that matches transformers.
        exe2 = os.path.join(case_dir, case.name + "_long.exe")
        if os.path.exists(exe2):
            os.remove(exe2)
        rc, _, err = r.compile(d, ["-o", exe2, "--max-seq-len", str(beyond)] + backend, "compile_long")
        if rc == 1:
            why = check_rejected("tfm-compile --max-seq-len %d" % beyond, rc, err, ["sliding_window"])
            if why:
                raise CaseFailure(why)
            long_note = "--max-seq-len %d rejected" % beyond
        elif rc == 0:
            ref = forward_logits(ref_model, ids)
            out = run_forward(r, exe2, p, os.path.join(case_dir, "out_long.npy"), 1, "run_long")
            try:
                e2 = check_logits("%d tokens, compiled with --max-seq-len %d (sliding_window %d)"
                                  % (beyond, beyond, within), out, ref, tolerance(ref))
            except CaseFailure as e:
                raise CaseFailure("%s; expected exit 1 naming sliding_window, or the window applied" % e)
            long_note = "--max-seq-len %d compiled, max_err/tol=%.3g" % (beyond, e2 / tolerance(ref))
        else:
            raise CaseFailure("tfm-compile --max-seq-len %d exited %d (expected 0, or 1 naming "
                              "sliding_window): %s" % (beyond, rc, _tail(err)))
        return "compiled; %d tokens max_err/tol=%.3g, %d tokens rejected, %s" % (
            within, worst, beyond, long_note)
    if case.check == "weights":
        return check_weights_errors(case, r, model, d, exe, seed)
    raise CaseFailure("harness: check %r" % case.check)


def check_weights_errors(case, r, model, d, exe, seed):
    """The executable reads the weights its DIR had at compile time, and
    fails with exit 1 naming the file when they are missing; --weights of a
    file that is not there or of another model's shapes too."""
    n = np()
    case_dir = r.dir
    r.compile_exe(d, exe)
    ids = n.random.default_rng(seed).integers(0, model.config.vocab_size, size=(5,)).astype(n.int64)
    ids_path = os.path.join(case_dir, "in_5.npy")
    n.save(ids_path, ids)
    out_path = os.path.join(case_dir, "out.npy")
    ref = forward_logits(model, ids)
    check_logits("with DIR/model.safetensors", run_forward(r, exe, ids_path, out_path, 1, "run_ok"),
                 ref, tolerance(ref))
    w = os.path.join(d, "model.safetensors")
    moved = os.path.join(case_dir, "moved.safetensors")
    shutil.move(w, moved)
    fwd = ["--input", "input_ids=" + ids_path, "--output", out_path]
    rc, _, err = r.exe(exe, fwd, "run_missing")
    why = check_rejected("executable without DIR/model.safetensors", rc, err, ["model.safetensors"])
    if why:
        raise CaseFailure(why)
    check_logits("--weights moved.safetensors", run_forward(r, exe, ids_path, out_path, 1, "run_moved",
                                                            weights=moved), ref, tolerance(ref))
    missing = os.path.join(case_dir, "no_such_file.safetensors")
    rc, _, err = r.exe(exe, ["--weights", missing] + fwd, "run_no_such_file")
    why = check_rejected("executable --weights no_such_file.safetensors", rc, err, ["no_such_file"])
    if why:
        raise CaseFailure(why)
    # Another model's weights (hidden size 32): names match, shapes do not.
    other_case = cases_mod.Case("other", "model", case.model_type,
                                dict(case.config, hidden_size=32, intermediate_size=64))
    other, _ = build_model(other_case, seed)
    other_dir = os.path.join(case_dir, "other")
    save_checkpoint(other, other_dir)
    rc, _, err = r.exe(exe, ["--weights", os.path.join(other_dir, "model.safetensors")] + fwd,
                       "run_other_shapes")
    why = check_rejected("executable --weights of hidden_size 32", rc, err, [])
    if why:
        raise CaseFailure(why)
    shape_msg = _clip(_lines(err)[0], 70)
    # A folder with config.json only: compiling may fail (naming the file)
    # or succeed; running it must then fail naming the file.
    bare = os.path.join(case_dir, "bare")
    os.makedirs(bare, exist_ok=True)
    shutil.copy(os.path.join(d, "config.json"), os.path.join(bare, "config.json"))
    bare_exe = os.path.join(case_dir, "bare.exe")
    if os.path.exists(bare_exe):
        os.remove(bare_exe)
    rc, _, err = r.compile(bare, ["-o", bare_exe] + (["--backend=" + r.backend] if r.backend else []),
                           "compile_bare")
    if rc == 0:
        rc, _, err = r.exe(bare_exe, fwd, "run_bare")
        why = check_rejected("executable of a folder without model.safetensors", rc, err,
                             ["model.safetensors"])
        bare_note = "bare folder compiles, run rejected"
    else:
        why = check_rejected("tfm-compile of a folder without model.safetensors", rc, err,
                             ["model.safetensors"])
        bare_note = "bare folder rejected at compile time"
    if why:
        raise CaseFailure(why)
    return "missing file rejected, --weights moved file ok, other shapes rejected (%s), %s" % (
        shape_msg, bare_note)


def run_one(case_name, opts):
    """In a worker: returns (passed, line)."""
    case = cases_mod.by_name()[case_name]
    case_dir = os.path.join(opts["work_dir"], case.name)
    os.makedirs(case_dir, exist_ok=True)
    t0 = time.time()
    try:
        if case.kind == "error":
            note = run_error_case(case, case_dir, opts)
        else:
            note = run_model_case(case, case_dir, opts)
        return True, "PASS %s (%s; %.1fs)" % (case.name, note, time.time() - t0)
    except CaseFailure as e:
        return False, "FAIL %s: %s" % (case.name, e)
    except Exception as e:  # noqa: BLE001 - report, never crash the harness
        tb = traceback.format_exc()
        try:
            _write(case_dir, "harness.traceback", tb)
        except OSError:
            pass
        return False, "FAIL %s: harness error %s: %s" % (case.name, type(e).__name__, _tail(str(e), 2))


def _init_worker():
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        torch, _ = hf()
        torch.set_num_threads(1)
    except ImportError:
        pass


def select(filters):
    return _load("case_pool").select_names([c.name for c in cases_mod.CASES], filters)


# ---------------------------------------------------------------------------
# A fake tfm-compile and executable that run transformers (--fake): they
# test the harness's plumbing and, in TFM_HF_FAKE_MODE other than exact,
# that it catches each kind of broken compiler.
# ---------------------------------------------------------------------------

def _fake_mode():
    m = os.environ.get("TFM_HF_FAKE_MODE", "exact")
    if m not in FAKE_MODES:
        sys.stderr.write("fake: TFM_HF_FAKE_MODE=%s is not one of %s\n" % (m, ", ".join(FAKE_MODES)))
        sys.exit(2)
    return m


def _fake_reject(msg, mode):
    if mode == "err_rc2":
        sys.stderr.write("tfm-compile: internal error: %s\n" % msg)
        return 2
    sys.stderr.write("tfm-compile: error: %s\n" % msg)
    if mode == "err_multiline":
        sys.stderr.write("note: see docs/hf.md\n")
    return 1


def fake_compile(argv):
    mode = _fake_mode()
    ap = argparse.ArgumentParser(prog="fake-tfm-compile")
    ap.add_argument("src")
    ap.add_argument("-o", dest="out")
    ap.add_argument("--emit", default="exe")
    ap.add_argument("--backend", default="hwy")
    ap.add_argument("--max-batch", type=int, default=1)
    ap.add_argument("--max-seq-len", type=int, default=None)
    a = ap.parse_args(argv)
    src = os.path.abspath(a.src)
    cfg_path = os.path.join(src, "config.json")
    try:
        with open(cfg_path) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        return _fake_reject("%s: %s" % (cfg_path, e), mode)
    mt = cfg.get("model_type")
    if mt not in cases_mod.SUPPORTED and mode != "accept_any":
        return _fake_reject("%s: model_type '%s' is not supported (supported: %s)"
                            % (cfg_path, mt, ", ".join(cases_mod.SUPPORTED)), mode)
    checks = []
    if mt in ("llama", "mistral"):
        heads = cfg["num_attention_heads"]
        checks = [("rope_scaling", cfg.get("rope_scaling") is not None),
                  ("hidden_act", cfg.get("hidden_act", "silu") != "silu"),
                  ("attention_bias", bool(cfg.get("attention_bias"))),
                  ("mlp_bias", bool(cfg.get("mlp_bias"))),
                  ("head_dim", cfg.get("head_dim") not in (None, cfg["hidden_size"] // heads)),
                  ("sliding_window", cfg.get("sliding_window") is not None and
                   cfg["sliding_window"] < cfg["max_position_embeddings"])]
    elif mt == "gpt2":
        checks = [("activation_function", cfg.get("activation_function") != "gelu_new"),
                  ("scale_attn_by_inverse_layer_idx", bool(cfg.get("scale_attn_by_inverse_layer_idx")))]
    elif mt == "bert":
        checks = [("position_embedding_type",
                   cfg.get("position_embedding_type", "absolute") != "absolute"),
                  ("is_decoder", bool(cfg.get("is_decoder"))),
                  ("add_cross_attention", bool(cfg.get("add_cross_attention"))),
                  ("hidden_act", cfg.get("hidden_act", "gelu") not in BERT_ACTIVATIONS)]
    elif mt == "mamba":
        rank = cfg.get("time_step_rank", "auto")
        checks = [("hidden_act", cfg.get("hidden_act", "silu") != "silu"),
                  ("use_bias", bool(cfg.get("use_bias"))),
                  ("use_conv_bias", not cfg.get("use_conv_bias", True)),
                  ("time_step_rank", rank != "auto" and not (isinstance(rank, int) and rank > 0)),
                  ("intermediate_size", cfg.get("intermediate_size") not in
                   (None, cfg.get("expand", 2) * cfg["hidden_size"]))]
    for key, bad in checks:
        if bad and mode != "accept_any":
            return _fake_reject("%s: %s=%s is not supported" % (cfg_path, key, json.dumps(cfg.get(key))),
                                mode)
    if a.emit == "model-json":
        desc = expected_model_json(cfg) if mt in cases_mod.SUPPORTED else {"architecture": "encoder"}
        if mode == "json_kv":
            desc.pop("num_kv_heads", None)
        text = json.dumps(desc, indent=2) + "\n"
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        return 0
    if a.emit != "exe" or not a.out:
        return _fake_reject("the fake compiles --emit=exe -o EXE or --emit=model-json only", "exact")
    with open(a.out, "w") as f:
        f.write("#!/bin/sh\nexec '%s' '%s' --fake-exe '%s' --fake-exe-file \"$0\" \"$@\"\n"
                % (sys.executable, os.path.abspath(__file__), src))
    os.chmod(a.out, 0o755)
    return 0


def _fake_run_key(exe, mode, src, weights, inputs, generate):
    """The path under which the fake executable exe (None: none) stores
    the output of a successful run (the module's doc): None where a file
    of the key cannot be read (no cache: the run reports it as ever)."""
    if exe is None:
        return None
    import hashlib

    def digest(h, path):
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    try:
        exe = os.path.abspath(exe)
        st = os.stat(exe)
        h = hashlib.sha256()
        h.update(json.dumps([exe, st.st_ino, st.st_size, st.st_mtime_ns, mode, os.path.abspath(src),
                             os.path.abspath(weights), [k for k, _ in inputs], generate]).encode())
        files = [os.path.join(src, "config.json"), weights]
        if weights.endswith(".json"):
            with open(weights) as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
            files += [os.path.join(os.path.dirname(os.path.abspath(weights)), sh) for sh in shards]
        files += [p for _, p in inputs]
        for path in files:
            h.update(b"\0file\0")
            digest(h, path)
        for name in sorted(os.listdir(HERE)):
            if name.endswith(".py"):
                h.update(name.encode() + b"\0")
                digest(h, os.path.join(HERE, name))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return "%s.run-%s" % (exe, h.hexdigest()[:32])


def _fake_cached(path):
    """The arrays stored at path, or None (fake_tfm_compile.py's reader of
    the same files)."""
    return _load("fake_tfm_compile")._load_cached(path)


def _fake_store(path, exe, **arrays):
    """Stores arrays at path (atomically), removing the files an earlier
    compile of exe left."""
    if path is None:
        return
    import glob
    n = np()
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            n.savez(f, **arrays)
        os.replace(tmp, path)
        before = os.stat(exe).st_mtime_ns
        for old in glob.glob(glob.escape(os.path.abspath(exe)) + ".run-*"):
            if old != path and os.stat(old).st_mtime_ns < before:
                os.remove(old)
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass


def fake_exe(argv):
    mode = _fake_mode()
    n = np()
    src, argv = argv[0], argv[1:]
    exe = None
    if argv[:1] == ["--fake-exe-file"] and len(argv) > 1:
        exe, argv = argv[1], argv[2:]     # the executable's own path, from its script
    ap = argparse.ArgumentParser(prog="fake-exe")
    ap.add_argument("--weights")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--output")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--generate", type=int, default=0)
    a = ap.parse_args(argv)
    # DIR's model.safetensors, else its index; --weights FILE (an index if it ends in .json).
    default = os.path.join(src, "model.safetensors")
    if not os.path.exists(default) and os.path.exists(os.path.join(src, "model.safetensors.index.json")):
        default = os.path.join(src, "model.safetensors.index.json")
    weights = a.weights or default
    if mode == "ignore_weights":
        weights = default
    if not os.path.isfile(weights):
        if mode == "missing_crash":
            os.abort()
        sys.stderr.write("error: cannot open weights file %s: No such file or directory\n" % weights)
        return 1
    # A run like an earlier successful one of this executable (--threads 2
    # after 1): its output, then the mode's changes as below.
    cache = _fake_run_key(exe, mode, src, weights, [s.split("=", 1) for s in a.input], a.generate)
    hit = _fake_cached(cache)
    if hit is not None:
        if a.generate:
            return _fake_finish_generate(hit["out"], int(hit["ndim"]), int(hit["vocab"]), mode, a)
        return _fake_finish_forward(hit["out"], mode, a)
    torch, tr = hf()
    with open(os.path.join(src, "config.json")) as f:
        model_type = json.load(f).get("model_type")
    causal = model_type in cases_mod.CAUSAL_LM
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(os.path.join(src, "config.json"), os.path.join(tmp, "config.json"))
        if weights.endswith(".json"):
            os.symlink(os.path.abspath(weights), os.path.join(tmp, "model.safetensors.index.json"))
            try:
                with open(weights) as f:
                    shards = sorted(set(json.load(f)["weight_map"].values()))
            except (OSError, ValueError, KeyError) as e:
                sys.stderr.write("error: %s: not an index: %s\n" % (weights, e))
                return 1
            for sh in shards:
                path = os.path.join(os.path.dirname(os.path.abspath(weights)), sh)
                if not os.path.isfile(path):
                    if mode == "missing_crash":
                        os.abort()
                    sys.stderr.write("error: %s: shard %s: No such file or directory\n" % (weights, path))
                    return 1
                os.symlink(path, os.path.join(tmp, sh))
        else:
            os.symlink(os.path.abspath(weights), os.path.join(tmp, "model.safetensors"))
        cls = tr.AutoModelForCausalLM if causal else tr.AutoModel
        try:
            model = cls.from_pretrained(tmp, attn_implementation="eager").eval()
        except Exception as e:  # noqa: BLE001
            sys.stderr.write("error: %s: %s\n" % (weights, _clip(str(e).splitlines()[0], 200)))
            return 1
    with torch.no_grad():
        for name, p in model.named_parameters():
            if mode == "norm_ones" and p.dim() == 1 and not name.endswith("bias"):
                p.fill_(1.0)
            if mode == "no_bias" and name.endswith("bias"):
                p.zero_()
    inputs = dict(s.split("=", 1) for s in a.input)
    if model_type in cases_mod.MASK_REFUSED and "attention_mask" in inputs and mode != "accept_any":
        sys.stderr.write("error: --input attention_mask=%s: a %s model takes no padding mask\n"
                         % (inputs["attention_mask"], model_type))
        return 1
    allowed = {"input_ids", "attention_mask"} | (set() if causal else {"token_type_ids"})
    if "input_ids" not in inputs or not set(inputs) <= allowed:
        sys.stderr.write("error: expected --input input_ids=FILE [%s], got %s\n"
                         % (" ".join(sorted(allowed - {"input_ids"})), sorted(inputs)))
        return 1
    ids = n.load(inputs["input_ids"])
    more = {}
    for k in ("token_type_ids", "attention_mask"):
        if k in inputs:
            more[k] = n.load(inputs[k])
            if more[k].shape != ids.shape:
                sys.stderr.write("error: %s: shape %s, input_ids %s\n"
                                 % (k, list(more[k].shape), list(ids.shape)))
                return 1
    if mode == "no_mask":
        more.pop("attention_mask", None)
    if mode == "no_types":
        more.pop("token_type_ids", None)
    if a.generate:
        if not causal or more:
            sys.stderr.write("error: --generate takes input_ids only, of a causal LM\n")
            return 1
        p2 = ids[None] if ids.ndim == 1 else ids
        out, _, _ = greedy_loop(model, p2, a.generate)
        _fake_store(cache, exe, out=out, ndim=n.array(ids.ndim), vocab=n.array(model.config.vocab_size))
        return _fake_finish_generate(out, ids.ndim, model.config.vocab_size, mode, a)
    out = forward_logits(model, ids, more.get("token_type_ids"),
                         more.get("attention_mask")).astype(n.float32)
    _fake_store(cache, exe, out=out)
    return _fake_finish_forward(out, mode, a)


def _fake_finish_generate(out, ndim, vocab, mode, a):
    """--generate: the mode's changes to the greedy ids out [B, N] of an
    input of ndim dimensions, saved; the stdout line."""
    n = np()
    out = out.astype(n.int64 if mode == "int64_ids" else n.int32)
    if mode == "flip":
        out[:, 5] = (out[:, 5] + 1) % vocab
    n.save(a.output, out[0] if ndim == 1 else out)
    print("generate: prefill_tok_s=1.0 decode_tok_s=1.0 new_tokens=%d threads=%d"
          % (a.generate, a.threads))
    return 0


def _fake_finish_forward(out, mode, a):
    """The forward: the mode's changes to the logits out, saved."""
    n = np()
    if mode == "noisy":
        out.reshape(-1)[out.size // 2] += 3e-3 * (1 + float(n.max(n.abs(out))))
    if mode == "threads" and a.threads == 2:
        out.view(n.uint32).reshape(-1)[0] ^= 1
    n.save(a.output, out)
    return 0


# ---------------------------------------------------------------------------
# --self-test: the checks above against transformers itself, no compiler.
# ---------------------------------------------------------------------------

def self_test():
    torch, tr = hf()
    n = np()
    torch.set_num_threads(1)
    fails = []

    def check(what, ok):
        print("%s %s" % ("ok  " if ok else "FAIL", what), flush=True)
        if not ok:
            fails.append(what)

    def raises(fn, pattern):
        try:
            fn()
        except CaseFailure as e:
            return re.search(pattern, str(e)) is not None
        return False

    def passes(fn):
        try:
            fn()
            return True
        except CaseFailure as e:
            print("     (%s)" % e)
            return False

    check("transformers %s is the pinned %s" % (tr.__version__, TRANSFORMERS_VERSION),
          tr.__version__ == TRANSFORMERS_VERSION)
    cases = cases_mod.by_name()
    check("hf_cases.py table valid", not cases_mod.validate())
    import tempfile
    tmp = tempfile.mkdtemp(prefix="tfm-hf-self-test-")
    try:
        for cname in ("llama_gqa", "gpt2", "llama_tied"):
            case = cases[cname]
            seed = case_seed(case)
            cdir = os.path.join(tmp, cname)
            os.makedirs(cdir)
            model, d, changed = prepare_model(case, cdir, seed)
            # The perturbation: nothing constant is left, and it matters.
            consts = [k for k, p in model.named_parameters()
                      if p.numel() > 1 and bool(torch.all(p == p.reshape(-1)[0]))]
            check("%s: no constant parameter left (%d perturbed)" % (cname, len(changed)),
                  not consts and changed)
            ids = n.random.default_rng(1).integers(0, model.config.vocab_size, size=(2, 9))
            ref = forward_logits(model, ids)
            tol = tolerance(ref)
            for what, pred in (("norm weights set to ones", lambda k, p: p.dim() == 1 and
                                not k.endswith("bias")),
                               ("biases zeroed", lambda k, p: k.endswith("bias"))):
                m2 = copy.deepcopy(model)
                hit = 0
                with torch.no_grad():
                    for k, p in m2.named_parameters():
                        if pred(k, p):
                            p.copy_(torch.ones_like(p) if what.startswith("norm") else torch.zeros_like(p))
                            hit += 1
                if hit:
                    d2 = float(n.max(n.abs(forward_logits(m2, ids) - ref)))
                    check("%s: %s moves the logits by %.3g > 10 tol" % (cname, what, d2), d2 > 10 * tol)
            # Round trip and file layout.
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            from safetensors import safe_open
            with safe_open(os.path.join(d, "model.safetensors"), "pt") as f:
                names = list(f.keys())
                shapes = {k: list(f.get_slice(k).get_shape()) for k in names}
            if cname == "llama_tied":
                check("llama_tied: the file has no lm_head.weight", "lm_head.weight" not in names)
            if cname == "llama_gqa":
                check("llama_gqa: k_proj is [kv*dk, d] = [16, 64]",
                      shapes.get("model.layers.0.self_attn.k_proj.weight") == [16, 64])
            if cname == "gpt2":
                check("gpt2: Conv1D c_attn.weight is [in, out] = [64, 192] and no lm_head.weight",
                      shapes.get("transformer.h.0.attn.c_attn.weight") == [64, 192]
                      and "lm_head.weight" not in names)
            # The logits checks.
            check("%s: ref passes against itself" % cname, passes(lambda: check_logits("t", ref, ref, tol)))
            bad = ref.copy()
            bad[1, 3, 5] += 1.5 * tol
            check("%s: +1.5 tol on one element FAILs" % cname,
                  raises(lambda: check_logits("t", bad, ref, tol), r"max_err=.* > tol=.* at \[1, 3, 5\]"))
            ok = ref.copy()
            ok[1, 3, 5] += 0.5 * tol
            check("%s: +0.5 tol passes" % cname, passes(lambda: check_logits("t", ok, ref, tol)))
            check("%s: float64 output FAILs" % cname,
                  raises(lambda: check_logits("t", ref.astype(n.float64), ref, tol), "dtype float64"))
            check("%s: missing batch dim FAILs" % cname,
                  raises(lambda: check_logits("t", ref[0], ref, tol), "output shape"))
            nan = ref.copy()
            nan[0, 0, 0] = n.nan
            check("%s: NaN FAILs" % cname, raises(lambda: check_logits("t", nan, ref, tol), "non-finite"))
            ulp = ref.copy()
            ulp.view(n.uint32).reshape(-1)[7] ^= 1
            check("%s: one ulp between threads FAILs" % cname,
                  raises(lambda: check_identical("t", ref, ulp), "not bit-identical"))
            check("%s: identical passes" % cname, passes(lambda: check_identical("t", ref, ref.copy())))
            check("%s: fp32 vs fp64 within %.1f tol" % (cname, F64_FRACTION),
                  passes(lambda: f64_check(model, ids, ref, tol)))
            # Padding masks: right padding (every position compared) moves
            # the padded rows (an executable that ignores the mask FAILs)
            # and leaves the real ones; left padding's rows without a key
            # are left out of the comparison, and only they.
            rm = make_mask(n.random.default_rng(3), (2, 9), "right")
            mref = forward_logits(model, ids, None, rm)
            pad_rows = rm == 0
            moved = float(n.max(n.abs(mref - ref)[pad_rows]))
            still = float(n.max(n.abs(mref - ref)[~pad_rows]))
            check("%s: right padding %s moves the padded rows by %.3g > 10 tol, the real ones by "
                  "%.3g <= tol" % (cname, rm.sum(axis=-1).tolist(), moved, still),
                  moved > 10 * tol and still <= tol and compared_positions(rm, True).all())
            lm = make_mask(n.random.default_rng(4), (2, 9), "left")
            where = compared_positions(lm, True)
            check("%s: left padding %s: compared positions are those from the first real token"
                  % (cname, lm.sum(axis=-1).tolist()),
                  n.array_equal(where, n.cumsum(lm, axis=-1) > 0) and not where.all())
            lref = forward_logits(model, ids, None, lm)
            junk = lref.copy()
            junk[~where] = n.nan
            check("%s: left padding: NaN at the positions without a key passes" % cname,
                  passes(lambda: check_logits("t", junk, lref, tolerance(lref[where]), where)))
            i, j = n.argwhere(where)[0]
            junk[i, j, 0] += 1.5 * tolerance(lref[where])
            check("%s: left padding: +1.5 tol at the first real position FAILs" % cname,
                  raises(lambda: check_logits("t", junk, lref, tolerance(lref[where]), where),
                         r"max_err=.* > tol=.* at \[%d, %d, 0\]" % (i, j)))
            # Generation: generate vs the loop, and the ids check.
            for shape in case.prompts:
                prompt = n.random.default_rng(2).integers(0, model.config.vocab_size, size=shape)
                try:
                    gref, margin = generation_reference(model, prompt, cases_mod.GEN_NEW_TOKENS)
                except CaseFailure as e:
                    check("%s: prompt %s generation reference: %s" % (cname, list(shape), e), False)
                    continue
                nn = cases_mod.GEN_NEW_TOKENS
                want = (nn,) if len(shape) == 1 else (shape[0], nn)
                check("%s: prompt %s generate == greedy loop, shape %s, min gap %.3g tol"
                      % (cname, list(shape), list(gref.shape), margin), gref.shape == want)
                good = gref.astype(n.int32)
                check("%s: the right ids pass" % cname, passes(lambda: check_ids("g", good, gref)))
                wrong = good.copy()
                wrong[..., 9] = (wrong[..., 9] + 1) % model.config.vocab_size
                check("%s: one wrong id FAILs at step 9" % cname,
                      raises(lambda: check_ids("g", wrong, gref), "differ from transformers' at step 9"))
                check("%s: int64 ids FAIL" % cname,
                      raises(lambda: check_ids("g", good.astype(n.int64), gref), "dtype int64"))
                other = good.reshape(1, -1) if good.ndim == 1 else good.reshape(-1)
                check("%s: ids of shape %s for %s FAIL" % (cname, list(other.shape), list(good.shape)),
                      raises(lambda: check_ids("g", other, gref), "ids shape"))
            # The model-json check.
            exp = expected_model_json(cfg)
            check("%s: expected model-json passes" % cname, check_model_json(dict(exp), exp) is None)
            trimmed = {k: v for k, v in exp.items() if JSON_DEFAULTS.get(k, object()) != v}
            trimmed.pop("final_norm")
            if exp["num_kv_heads"] == exp["num_heads"]:
                trimmed.pop("num_kv_heads")
            check("%s: defaults left out pass (%d keys)" % (cname, len(trimmed)),
                  check_model_json(trimmed, exp) is None)
            for k, v in (("norm_type", "layer_norm" if cfg["model_type"] != "gpt2" else "rms_norm"),
                         ("norm_eps", exp["norm_eps"] * 10), ("tie_embeddings", not exp["tie_embeddings"]),
                         ("num_kv_heads", exp["num_heads"] + 1)):
                w = dict(exp)
                w[k] = v
                check("%s: model-json %s=%r FAILs" % (cname, k, v), check_model_json(w, exp) is not None)
            if exp["num_kv_heads"] != exp["num_heads"]:
                w = dict(exp)
                w.pop("num_kv_heads")
                check("%s: model-json without num_kv_heads FAILs" % cname,
                      check_model_json(w, exp) is not None)
        bert_self_test(cases, tmp, check, raises, passes)
        layout_self_test(cases, tmp, check)
        mamba_self_test(cases, tmp, check, raises, passes)
        # Ill-conditioning is caught: a head of zeros ties every logit.
        case = cases["llama_gqa"]
        model, _ = build_model(case, 1)
        with torch.no_grad():
            model.lm_head.weight.zero_()
        prompt = n.zeros((1, 3), dtype=n.int64)
        check("a tied argmax is flagged ill-conditioned",
              raises(lambda: generation_reference(model, prompt, 4), "ill-conditioned: .*top-2 gap 0"))
        # The rejection check.
        one = ("tfm-compile: error: hf/config.json: model_type 'roberta' is not supported "
               "(supported: bert, gpt2, llama, mamba, mistral, mixtral)\n")
        names = ["roberta"] + list(cases_mod.SUPPORTED)
        check("rejection: one line naming roberta and the supported types passes",
              check_rejected("t", 1, one, names, one_line=True) is None)
        check("rejection: exit 2 FAILs", "exited 2" in (check_rejected("t", 2, one, names) or ""))
        check("rejection: exit 0 FAILs", "exited 0" in (check_rejected("t", 0, one, names) or ""))
        check("rejection: a signal FAILs", "signal 6" in (check_rejected("t", -6, one, names) or ""))
        check("rejection: two lines FAIL",
              "2 stderr lines" in (check_rejected("t", 1, one + "more\n", names, one_line=True) or ""))
        check("rejection: not naming mistral FAILs",
              "mistral" in (check_rejected("t", 1, one.replace(", mistral", ""), names) or ""))
        check("rejection: empty stderr FAILs",
              "nothing on stderr" in (check_rejected("t", 1, "", names) or ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("self-test: %d failed" % len(fails))
    return not fails


def bert_self_test(cases, tmp, check, raises, passes):
    """--self-test's bert part: the perturbation, token types and masks
    matter, BertForMaskedLM's reference is transformers' own BertModel of
    that folder, the model-json check."""
    torch, tr = hf()
    n = np()
    from safetensors import safe_open
    for cname in ("bert", "bert_mlm"):
        case = cases[cname]
        cdir = os.path.join(tmp, cname)
        os.makedirs(cdir)
        model, d, changed = prepare_model(case, cdir, case_seed(case))
        check("%s: the reference is a %s" % (cname, type(model).__name__),
              type(model).__name__ == "BertModel")
        consts = [k for k, p in model.named_parameters()
                  if p.numel() > 1 and bool(torch.all(p == p.reshape(-1)[0]))]
        check("%s: no constant parameter left (%d perturbed)" % (cname, len(changed)),
              not consts and changed)
        with safe_open(os.path.join(d, "model.safetensors"), "pt") as f:
            names = list(f.keys())
        if cname == "bert":
            check("bert: unprefixed names, a pooler",
                  "embeddings.word_embeddings.weight" in names and "pooler.dense.weight" in names)
            ids = n.random.default_rng(1).integers(0, model.config.vocab_size, size=(2, 9))
            ref = forward_logits(model, ids)
            tol = tolerance(ref)
            check("bert: output is the last hidden state [2, 9, %d]" % model.config.hidden_size,
                  ref.shape == (2, 9, model.config.hidden_size))
            types = n.random.default_rng(2).integers(0, 2, size=ids.shape)
            d_t = float(n.max(n.abs(forward_logits(model, ids, types) - ref)))
            check("bert: token_type_ids move the output by %.3g > 10 tol" % d_t, d_t > 10 * tol)
            check("bert: token_type_ids of zeros are the default",
                  n.array_equal(forward_logits(model, ids, n.zeros_like(ids)), ref))
            rm = make_mask(n.random.default_rng(3), (2, 9), "right")
            d_m = float(n.max(n.abs(forward_logits(model, ids, None, rm) - ref)[rm == 1]))
            check("bert: a right-padding mask moves the real positions by %.3g > 10 tol" % d_m,
                  d_m > 10 * tol and compared_positions(rm, False) is None)
            for what, pred in (("norm weights set to ones", lambda k, p: p.dim() == 1 and
                                "LayerNorm.weight" in k),
                               ("biases zeroed", lambda k, p: k.endswith("bias"))):
                m2 = copy.deepcopy(model)
                with torch.no_grad():
                    for k, p in m2.named_parameters():
                        if pred(k, p):
                            p.copy_(torch.ones_like(p) if what.startswith("norm") else torch.zeros_like(p))
                d2 = float(n.max(n.abs(forward_logits(m2, ids) - ref)))
                check("bert: %s moves the output by %.3g > 10 tol" % (what, d2), d2 > 10 * tol)
            tm_ref = forward_logits(model, ids, types, rm)
            check("bert: fp32 vs fp64 within %.1f tol (token types, a mask)" % F64_FRACTION,
                  passes(lambda: f64_check(model, ids, tm_ref, tolerance(tm_ref), types, rm)))
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            exp = expected_model_json(cfg)
            check("bert: expected model-json passes", check_model_json(dict(exp), exp) is None)
            trimmed = {k: v for k, v in exp.items() if JSON_DEFAULTS.get(k, object()) != v}
            trimmed.pop("final_norm")
            trimmed.pop("num_kv_heads")
            check("bert: defaults left out pass (%d keys)" % len(trimmed),
                  check_model_json(trimmed, exp) is None)
            for k, v in (("norm", "pre"), ("embedding_norm", False), ("type_vocab_size", 3),
                         ("activation", "gelu_tanh"), ("lm_head", True), ("norm_eps", 1e-5),
                         ("architecture", "decoder")):
                w = dict(exp)
                w[k] = v
                check("bert: model-json %s=%r FAILs" % (k, v), check_model_json(w, exp) is not None)
            w = dict(exp)
            w.pop("embedding_norm")
            check("bert: model-json without embedding_norm FAILs", check_model_json(w, exp) is not None)
            check("bert: gelu_new is gelu_tanh",
                  expected_model_json(dict(cfg, hidden_act="gelu_new"))["activation"] == "gelu_tanh")
        else:
            check("bert_mlm: bert.-prefixed names and the cls. head, no pooler",
                  "bert.embeddings.word_embeddings.weight" in names
                  and any(k.startswith("cls.") for k in names)
                  and not any("pooler" in k for k in names))
            base = tr.AutoModel.from_pretrained(d, attn_implementation="eager").eval()
            ids = n.random.default_rng(1).integers(0, model.config.vocab_size, size=(2, 9))
            check("bert_mlm: model.bert == AutoModel.from_pretrained(DIR) on an input",
                  n.array_equal(forward_logits(model, ids), forward_logits(base, ids)))


def mamba_self_test(cases, tmp, check, raises, passes):
    """--self-test's mamba part: the perturbation (norm weights, D, A_log's
    repeated rows) matters, the file layout (backbone.*, lm_head.weight iff
    untied), float32 against float64, generate (its MambaCache, through
    the torch._dynamo stand-in) equals the greedy loop, the model-json
    check, the masks are refused by the fake executable."""
    torch, _ = hf()
    n = np()
    from safetensors import safe_open
    for cname in ("mamba", "mamba_small_state"):
        case = cases[cname]
        cdir = os.path.join(tmp, cname)
        os.makedirs(cdir)
        model, d, changed = prepare_model(case, cdir, case_seed(case))
        cfg = model.config
        consts = [k for k, p in model.named_parameters()
                  if p.numel() > 1 and bool(torch.all(p == p.reshape(-1)[0]))]
        alog = model.backbone.layers[0].mixer.A_log
        check("%s: no constant parameter left, A_log's rows differ (%d perturbed)" % (cname, len(changed)),
              not consts and not bool(torch.all(alog == alog[:1]))
              and all(any(k.endswith(s) for k in changed) for s in ("A_log", "mixer.D", "norm.weight")))
        with safe_open(os.path.join(d, "model.safetensors"), "pt") as f:
            shapes = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
        inner = cfg.expand * cfg.hidden_size
        check("%s: backbone.* names, A_log [%d, %d], conv1d [%d, 1, %d], lm_head.weight iff untied"
              % (cname, inner, cfg.state_size, inner, cfg.conv_kernel),
              shapes.get("backbone.embeddings.weight") == [cfg.vocab_size, cfg.hidden_size]
              and shapes.get("backbone.layers.0.mixer.A_log") == [inner, cfg.state_size]
              and shapes.get("backbone.layers.0.mixer.conv1d.weight") == [inner, 1, cfg.conv_kernel]
              and "backbone.norm_f.weight" in shapes
              and ("lm_head.weight" in shapes) == (not cfg.tie_word_embeddings))
        ids = n.random.default_rng(1).integers(0, cfg.vocab_size, size=(2, 9))
        ref = forward_logits(model, ids)
        tol = tolerance(ref)
        check("%s: logits [2, 9, %d]; unbatched is batched's row" % (cname, cfg.vocab_size),
              ref.shape == (2, 9, cfg.vocab_size)
              and float(n.max(n.abs(forward_logits(model, ids[1]) - ref[1]))) <= 0.1 * tol)
        for what, pred, undo in (
                ("norm weights set to ones",
                 lambda k: k.endswith(("norm.weight", "norm_f.weight")), torch.ones_like),
                ("D set to ones", lambda k: k.endswith("mixer.D"), torch.ones_like),
                ("A_log's rows set to log(1..N)", lambda k: k.endswith("A_log"),
                 lambda p: torch.log(torch.arange(1, p.shape[1] + 1, dtype=p.dtype)).expand_as(p))):
            m2 = copy.deepcopy(model)
            with torch.no_grad():
                for k, p in m2.named_parameters():
                    if pred(k):
                        p.copy_(undo(p))
            d2 = float(n.max(n.abs(forward_logits(m2, ids) - ref)))
            check("%s: %s moves the logits by %.3g > 10 tol" % (cname, what, d2), d2 > 10 * tol)
        check("%s: fp32 vs fp64 within %.1f tol" % (cname, F64_FRACTION),
              passes(lambda: f64_check(model, ids, ref, tol)))
        for shape in case.prompts:
            prompt = n.random.default_rng(2).integers(0, cfg.vocab_size, size=shape)
            try:
                gref, margin = generation_reference(model, prompt, cases_mod.GEN_NEW_TOKENS)
            except CaseFailure as e:
                check("%s: prompt %s generation reference: %s" % (cname, list(shape), e), False)
                continue
            want = (cases_mod.GEN_NEW_TOKENS,) if len(shape) == 1 else (shape[0], cases_mod.GEN_NEW_TOKENS)
            check("%s: prompt %s generate (MambaCache) == greedy loop, shape %s, min gap %.3g tol, "
                  "not one id repeated" % (cname, list(shape), list(gref.shape), margin),
                  gref.shape == want and all(len(set(r)) > 2 for r in gref.reshape(-1, want[-1]).tolist()))
        with open(os.path.join(d, "config.json")) as f:
            jcfg = json.load(f)
        exp = expected_model_json(jcfg)
        check("%s: expected model-json passes" % cname, check_model_json(dict(exp), exp) is None)
        trimmed = {k: v for k, v in exp.items() if JSON_DEFAULTS.get(k, object()) != v}
        trimmed.pop("final_norm")
        check("%s: defaults left out pass (%d keys)" % (cname, len(trimmed)),
              check_model_json(trimmed, exp) is None)
        wrongs = [("layers", ["mamba"] * (cfg.num_hidden_layers - 1)),
                  ("layers", ["attention"] * cfg.num_hidden_layers),
                  ("mamba", dict(exp["mamba"], d_state=cfg.state_size + 1)),
                  ("mamba", dict(exp["mamba"], dt_rank="auto")),
                  ("norm_type", "layer_norm"), ("norm_eps", exp["norm_eps"] * 10),
                  ("tie_embeddings", not exp["tie_embeddings"]), ("positional", "rope")]
        for k, v in wrongs:
            w = dict(exp)
            w[k] = v
            check("%s: model-json %s=%s FAILs" % (cname, k, _clip(json.dumps(v), 60)),
                  check_model_json(w, exp) is not None)
        for k in ("layers", "mamba", "positional"):
            w = dict(exp)
            w.pop(k)
            check("%s: model-json without %s FAILs" % (cname, k), check_model_json(w, exp) is not None)
    check("mamba: a config.json with time_step_rank \"auto\" expects dt_rank \"auto\"",
          expected_model_json(dict(jcfg, time_step_rank="auto"))["mamba"]["dt_rank"] == "auto")
    # The mask refusal: the fake executable's message passes the check, an
    # executable that accepts the mask (exit 0) fails it.
    d = os.path.join(tmp, "mamba", "hf")
    ids_path = os.path.join(tmp, "mamba", "ids.npy")
    mask_path = os.path.join(tmp, "mamba", "mask.npy")
    n.save(ids_path, n.array([[1, 2, 3], [4, 5, 6]], dtype=n.int64))
    n.save(mask_path, n.array([[1, 1, 0], [1, 1, 1]], dtype=n.int64))
    base = [sys.executable, os.path.abspath(__file__), "--fake-exe", d, "--input",
            "input_ids=" + ids_path, "--input", "attention_mask=" + mask_path,
            "--output", os.path.join(tmp, "mamba", "out.npy")]
    for mode, ok in (("exact", True), ("accept_any", False)):
        p = subprocess.run(base, capture_output=True, text=True,
                           env=dict(os.environ, TFM_HF_FAKE_MODE=mode))
        why = check_rejected("t", p.returncode, p.stderr, ["attention_mask"])
        check("mamba: a mask %s by the fake executable (%s) %s the refusal check"
              % ("refused" if ok else "accepted", mode, "passes" if ok else "FAILs"),
              (why is None) == ok)


def layout_self_test(cases, tmp, check):
    """--self-test's file layouts: shards, the Hub's gpt2 layout, a tied
    checkpoint with lm_head.weight."""
    torch, _ = hf()
    from safetensors import safe_open

    def names_shapes(path):
        with safe_open(path, "pt") as f:
            return {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
    for cname in ("llama_sharded", "bert_sharded", "gpt2_hub_layout", "llama_tied_lm_head"):
        case = cases[cname]
        cdir = os.path.join(tmp, cname)
        os.makedirs(cdir)
        try:
            model, d, _ = prepare_model(case, cdir, case_seed(case))
        except CaseFailure as e:
            check("%s: %s" % (cname, e), False)
            continue
        if case.max_shard_size:
            shards = shard_files(d)
            stored = set()
            for sh in shards:
                stored |= set(names_shapes(os.path.join(d, sh)))
            with open(os.path.join(d, "model.safetensors.index.json")) as f:
                listed = set(json.load(f)["weight_map"])
            check("%s: %d shards, no model.safetensors, the index lists what they hold (%d tensors)"
                  % (cname, len(shards), len(stored)),
                  len(shards) >= 3 and not os.path.exists(os.path.join(d, "model.safetensors"))
                  and listed == stored and weights_path(d).endswith(".index.json"))
            continue
        ns = names_shapes(os.path.join(d, "model.safetensors"))
        if case.layout == "gpt2_hub":
            n_pos, n_layer = model.config.n_positions, model.config.n_layer
            check("gpt2_hub_layout: no transformer. prefix, wte.weight, h.N.attn.bias [1, 1, %d, %d] "
                  "and h.N.attn.masked_bias [] for %d layers" % (n_pos, n_pos, n_layer),
                  not any(k.startswith("transformer.") for k in ns) and "wte.weight" in ns
                  and all(ns.get("h.%d.attn.bias" % i) == [1, 1, n_pos, n_pos]
                          and ns.get("h.%d.attn.masked_bias" % i) == [] for i in range(n_layer)))
        else:
            with safe_open(os.path.join(d, "model.safetensors"), "pt") as f:
                same = torch.equal(f.get_tensor("lm_head.weight"),
                                   f.get_tensor("model.embed_tokens.weight"))
            check("llama_tied_lm_head: lm_head.weight is in the file, equal to the embedding",
                  same and model.config.tie_word_embeddings)


# ---------------------------------------------------------------------------
# Driver.
# ---------------------------------------------------------------------------

def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--fake-compile"]:
        return fake_compile(argv[1:])
    if argv[:1] == ["--fake-exe"]:
        return fake_exe(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--tfm-compile", help="path to tfm-compile")
    ap.add_argument("--fake", action="store_true",
                    help="use a fake tfm-compile that runs transformers (TFM_HF_FAKE_MODE=%s)"
                    % "|".join(FAKE_MODES))
    ap.add_argument("--python", help="the oracle's python (a venv with transformers)")
    ap.add_argument("--work-dir", default=None, help="where each case's files go (default ./hf-work)")
    ap.add_argument("-k", dest="filters", action="append", default=[],
                    help="cases whose name contains FILTER (or matches it as a glob); repeatable")
    ap.add_argument("-j", dest="jobs", type=int, default=2, help="cases in parallel (default 2)")
    ap.add_argument("--backend", choices=["hwy", "llvm"], default=None,
                    help="passed to tfm-compile as --backend (default: its own, hwy)")
    ap.add_argument("--reference-only", action="store_true", help="the transformers side only")
    ap.add_argument("--self-test", action="store_true", help="the harness's own checks, no compiler")
    ap.add_argument("--compile-timeout", type=int, default=300)
    ap.add_argument("--run-timeout", type=int, default=120)
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args(argv)

    if args.list:
        for c in cases_mod.CASES:
            print("%-32s %-6s %s" % (c.name, c.kind, c.note))
        return 0
    problems = cases_mod.validate()
    if problems:
        for p in problems:
            print("hf_cases.py: " + p, file=sys.stderr)
        return 2
    why = bootstrap(argv)
    if why:
        print("run_hf.py: error: " + why, file=sys.stderr)
        return 2
    if args.self_test:
        return 0 if self_test() else 1
    if args.fake:
        compiler = [sys.executable, os.path.abspath(__file__), "--fake-compile"]
    elif args.tfm_compile:
        tc = os.path.abspath(args.tfm_compile)
        if not (os.path.isfile(tc) and os.access(tc, os.X_OK)):
            ap.error("--tfm-compile %s is not an executable file" % args.tfm_compile)
        compiler = [tc]
    elif args.reference_only:
        compiler = None
    else:
        ap.error("--tfm-compile (or --fake, --reference-only, --self-test) is required")
    work_dir = os.path.abspath(args.work_dir or "hf-work")
    os.makedirs(work_dir, exist_ok=True)
    names = select(args.filters)
    if not names:
        print("no case matches %s" % args.filters, file=sys.stderr)
        print("0 passed, 0 failed")
        return 2
    opts = dict(work_dir=work_dir, compiler=compiler, backend=args.backend,
                reference_only=args.reference_only, compile_timeout=args.compile_timeout,
                run_timeout=args.run_timeout)
    case_pool = _load("case_pool")
    return case_pool.run_cases(names, run_one, opts, args.jobs, _init_worker)


if __name__ == "__main__":
    sys.exit(main())
