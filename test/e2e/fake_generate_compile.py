#!/usr/bin/python3
"""A stand-in for tfm-compile, to test run_generate.py itself (not the compiler).

`fake_generate_compile.py MODEL.json -o EXE [--max-batch N] [--max-seq-len N]`
writes EXE, a Python script answering the contract's `--generate N` interface
(--weights, --input input=PROMPT.npy for a decoder or --input src=SRC.npy
--input tgt=TGT.npy for an encoder_decoder (tgt continued), --output IDS.npy,
--threads T, --temperature T --top-k K --seed S, --step-logits LOGITS.npy),
computed with run_generate.KVCacheDecoder (the torch KV cache) on the weights
file (an encoder_decoder's `embed.weight` alone means shared embeddings), or,
for a model that regenerates (run_generate.regenerates: linformer, which no
cache can serve), with run_generate.RegenerateDecoder: a full forward of the
reference over the sequence so far at every step, as tfm's executables do.

TFM_FAKE_GEN_MODE (read when compiling) selects a behaviour:
  exact        correct (default): every case must PASS
  unsupported  exits 1 with "--generate is not supported by this model yet"
               (what tfm-compile's executables answer before issue 8)
  noisy        step logits of step 3 off by 1e-3*(1+max) (must FAIL: tolerance)
  flip         takes the second-best id at step 4 (must FAIL: argmax/greedy)
  threads      --threads 2 flips the last bit of one step logit (must FAIL)
  sample_nondet  sampling ignores --seed (must FAIL on sample cases)
  fixed_seed   sampling ignores --seed, drawing from one fixed stream: deterministic,
               but every seed gives the same ids (must FAIL on sample cases)
  greedy_sample  ignores --temperature and --top-k: always argmax (must FAIL on sample
               cases: the sampled ids are the greedy ones)
  topk         sampling ignores --top-k (must FAIL on sample cases, almost surely)
  no_line      no `generate:` stdout line (must FAIL)
  int64        writes int64 ids (must FAIL: dtype)
  no_limit     accepts prompt + N > max seq len (must FAIL on too_long cases)
  crash        aborts (must FAIL: signal)
  no_src_limit encoder_decoder: accepts a src longer than the max seq len
               (must FAIL on encoder_decoder too_long cases)
  src_short    encoder_decoder: the encoder sees src without its last token
               (the first token changed for a src of length 1): must FAIL on
               encoder_decoder cases (step logits, or greedy ids); decoders
               are unaffected
  no_window    ignores the model's `attention` (a sliding window): full
               attention over the whole cache (must FAIL on gen_win_* cases:
               step logits)
  no_performer reads (and checks) a performer model's self_attn.features but
               computes ordinary softmax attention (softmax(q k^T / sqrt(dk)),
               causal, with a KV cache) instead of performer's running sums
               (must FAIL on gen_perf_* cases: step logits)
  no_block_sparse reads (and checks: I32 or I64, the contract's shape) a
               block_sparse model's block_pattern but computes full causal
               attention (must FAIL on gen_bs_* cases: step logits)
  bs_step_row  block_sparse: a decode step's query block from its row in the
               step (0) instead of its position (must FAIL on gen_bs_* cases)
  no_moe       a mixture-of-experts model: ignores the routing, every token
               through expert 0 alone (weight 1), the gate and the other
               experts' tensors unread (must FAIL on gen_moe_* cases: step
               logits)
  no_layers    ignores section 7's `layers` (a decoder's per-layer kinds): every
               layer with the model-level `attention` and `ffn`, so it expects
               the model-level weight names and refuses a file with a layer's
               own (exit 1 naming the tensor), or computes the model-level
               kinds (must FAIL on gen_layers_* cases)
  lin_cached   linformer: decodes with a cache instead of regenerating
               (KVCacheDecoder's linformer_mistake "cached": each layer's
               keys and values of earlier positions kept as computed when
               they were new, projected by E_n, F_n of the current n); exact
               for the prefill and a one-layer model, wrong from the second
               layer on, since the model is never causal (must FAIL on
               gen_lin_* cases: step logits)
  mamba_state_reset  mamba layers: each step() starts its state h from zero
               (KVCacheDecoder's mamba_mistake "h_not_carried"): exact for the
               prefill, wrong from the first decode step (must FAIL on gen_mamba_*
               cases: step logits)

Cost (nothing the harness sees): as fake_tfm_compile.py's executables, a
successful run stores its ids and step logits before the mode's changes
(EXE.run-KEY, KEY a hash of the executable file, what it was compiled
with, these scripts' sources, its arguments but --output, --threads and
--step-logits' path, and the contents of --weights and the --input files),
and a run with the same KEY (--threads 2 after 1, the same --seed again)
loads them instead of importing torch and decoding; never in sample_nondet,
whose runs must differ.  unsupported and crash answer before any of this,
noisy, int64, threads and no_line after.
"""

import argparse
import json
import os
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

MODES = ("exact", "unsupported", "noisy", "flip", "threads", "sample_nondet", "fixed_seed",
         "greedy_sample", "topk",
         "no_line", "int64", "no_limit", "crash", "no_src_limit", "src_short", "no_window",
         "no_performer", "no_block_sparse", "bs_step_row", "no_moe", "no_layers", "lin_cached",
         "mamba_state_reset")


def compile_main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("-o", dest="out", required=True)
    ap.add_argument("--max-batch", type=int, default=1)
    ap.add_argument("--max-seq-len", type=int, default=0)
    args = ap.parse_args(argv)
    mode = os.environ.get("TFM_FAKE_GEN_MODE", "exact")
    if mode not in MODES:
        print("fake tfm-compile: unknown TFM_FAKE_GEN_MODE %r" % mode, file=sys.stderr)
        return 2
    with open(args.model) as f:
        desc = json.load(f)
    if mode == "no_layers":
        desc.pop("layers", None)    # every layer the model-level kinds
    max_seq = args.max_seq_len or desc["max_seq_len"]
    script = ("#!%s\nimport sys\nsys.path.insert(0, %r)\nimport fake_generate_compile\n"
              "sys.exit(fake_generate_compile.exe_main(%r, %d, %d, %r, sys.argv[1:], exe=__file__))\n"
              % (sys.executable, HERE, json.dumps(desc), args.max_batch, max_seq, mode))
    with open(args.out, "w") as f:
        f.write(script)
    os.chmod(args.out, os.stat(args.out).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return 0


def exe_main(desc_json, max_batch, max_seq, mode, argv, exe=None):
    import numpy as np
    ap = argparse.ArgumentParser()
    ap.add_argument("--generate", type=int, required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--output", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--step-logits")
    args = ap.parse_args(argv)
    if mode == "unsupported":
        print("model: error: --generate is not supported by this model yet", file=sys.stderr)
        return 1
    if mode == "crash":
        print("model: fatal: simulated crash", file=sys.stderr)
        os.abort()
    # A run like an earlier successful one of this executable (--threads 2
    # after 1, a --seed again): its ids and step logits, then the mode's
    # changes as below.  Not where sampling ignores the seed.
    cache = None
    if mode != "sample_nondet":
        import fake_tfm_compile as ftc
        cache = ftc._run_key(exe, [desc_json, max_batch, max_seq, mode],
                             [("--weights", args.weights)]
                             + [("--input " + s.partition("=")[0], s.partition("=")[2]) for s in args.input],
                             [args.generate, args.temperature, args.top_k, args.seed, args.step_logits is not None])
        hit = ftc._load_cached(cache)
        if hit is not None:
            return _finish_output(hit["ids"], hit["rows"], bool(hit["batched"]), mode, args)
    import reference
    import run_generate
    import safetensors as st
    import torch
    torch.set_num_threads(1)
    cfg = reference.Config(json.loads(desc_json))
    if mode == "no_window":
        cfg = reference.Config(dict(json.loads(desc_json), attention={"kind": "full"}))
    n = args.generate
    inputs = dict(s.partition("=")[::2] for s in args.input)
    want = ["src", "tgt"] if cfg.is_encdec else ["input"]
    if sorted(inputs) != want:
        print("model: error: inputs %s, expected %s" % (sorted(inputs), want), file=sys.stderr)
        return 1
    grow = "tgt" if cfg.is_encdec else "input"
    path = inputs[grow]
    prompt = np.load(path)
    batched = prompt.ndim == 2
    p2 = prompt if batched else prompt[None, :]
    if p2.shape[0] > max_batch:
        print("model: error: %s: batch %d > %d" % (path, p2.shape[0], max_batch), file=sys.stderr)
        return 1
    if p2.shape[1] + n > max_seq and mode != "no_limit":
        print("model: error: %s %d + --generate %d exceeds the compiled max seq len %d"
              % (grow, p2.shape[1], n, max_seq), file=sys.stderr)
        return 1
    src = None
    if cfg.is_encdec:
        src = np.load(inputs["src"])
        src = (src if src.ndim == 2 else src[None, :]).astype(np.int64)
        if src.shape[0] != p2.shape[0]:
            print("model: error: src batch %d != tgt batch %d" % (src.shape[0], p2.shape[0]),
                  file=sys.stderr)
            return 1
        if src.shape[1] > max_seq and mode != "no_src_limit":
            print("model: error: %s: src length %d > the compiled max seq len %d"
                  % (inputs["src"], src.shape[1], max_seq), file=sys.stderr)
            return 1
        if mode == "src_short":
            src = src[:, :-1] if src.shape[1] > 1 else (src + 1) % cfg.vocab_size
    weights, dtypes = st.load_file(args.weights, with_dtypes=True)
    if mode == "no_layers":
        # The listing of the model-level kinds, checked like the real loader.
        expected = reference.expected_weights(cfg, cfg.is_encdec and "embed.weight" in weights)
        missing = [k for k in expected if k not in weights]
        extra = [k for k in weights if k not in expected]
        if missing or extra:
            print("model: error: %s: %s" % (args.weights, "missing tensor %s" % missing[0] if missing
                                            else "unexpected tensor %s" % extra[0]), file=sys.stderr)
            return 1
    for k in [k for k in weights if k.endswith("self_attn.block_pattern")]:
        lc = cfg.kinds_of(k)
        want = (-(-cfg.max_seq_len // lc.block), lc.random_blocks) if lc.block_sparse else None
        if dtypes[k] not in ("I32", "I64") or tuple(weights[k].shape) != want:
            print("model: error: %s: %s %s, expected I32 or I64 %s" % (k, dtypes[k], list(weights[k].shape),
                                                                     want), file=sys.stderr)
            return 1
    if mode == "no_block_sparse" and cfg.block_sparse:
        cfg = reference.Config(dict(json.loads(desc_json), attention={"kind": "full"}))
        weights = {k: v for k, v in weights.items() if not k.endswith("self_attn.block_pattern")}
    if mode == "no_performer" and cfg.performer:
        # The features must be there, of the contract's shape; then unused.
        want = (cfg.num_heads, cfg.performer_m, cfg.head_dim)
        names = [k for k in reference.expected_weights(cfg, cfg.is_encdec and "embed.weight" in weights)
                 if k.endswith("self_attn.features")]
        bad = [k for k in names if k not in weights or tuple(weights[k].shape) != want]
        if bad:
            print("model: error: %s: missing or not of shape %s" % (bad[0], list(want)), file=sys.stderr)
            return 1
        cfg = reference.Config(dict(json.loads(desc_json), attention={"kind": "full"}))
        weights = {k: v for k, v in weights.items() if not k.endswith("self_attn.features")}
    shared = cfg.is_encdec and "embed.weight" in weights
    if mode == "no_moe" and cfg.moe:
        # Expert 0 alone: the gate and the other experts unread (zeros).
        for k, shape in reference.expected_weights(cfg, shared).items():
            if ".moe.gate." in k or (".moe.experts." in k and ".moe.experts.0." not in k):
                weights[k] = np.zeros(shape, np.float32)
    fm = reference.load_weights(reference.build_formula_model(cfg, shared), weights)
    if mode == "no_moe":
        for m in reference.moe_modules(fm):
            m.mistake = "expert0"
    if mode in ("no_limit", "no_src_limit") and cfg.positional == "learned":
        with torch.no_grad():  # let the fake run past its table
            for name in (("src_pos_embed", "tgt_pos_embed") if cfg.is_encdec else ("pos_embed",)):
                pe = getattr(fm, name)
                pe.weight = torch.nn.Parameter(torch.cat(
                    [pe.weight, torch.zeros(max(p2.shape[1] + n, max_seq + 1), cfg.d_model)]))
    if run_generate.regenerates(cfg):
        # linformer: a full forward over the sequence so far at every step
        # (lin_cached: a cache, which cannot serve it).
        dec = (run_generate.KVCacheDecoder(fm, src, linformer_mistake="cached") if mode == "lin_cached"
               else run_generate.RegenerateDecoder(fm, src))
    else:
        dec = run_generate.KVCacheDecoder(fm, src, block_mistake="step_row" if mode == "bs_step_row" else None,
                                          mamba_mistake="h_not_carried" if mode == "mamba_state_reset" else None)
    seed = None if mode == "sample_nondet" else 12345 if mode == "fixed_seed" else args.seed
    rng = np.random.default_rng(seed)
    r = dec.step(p2.astype(np.int64))[:, -1, :].numpy()
    ids, rows = [], []
    for t in range(n):
        if args.temperature > 0 and mode != "greedy_sample":
            z = r.astype(np.float64) / args.temperature
            k = args.top_k if (args.top_k > 0 and mode != "topk") else z.shape[-1]
            nxt = []
            for row in z:
                keep = np.argsort(-row, kind="stable")[:k]
                pr = np.exp(row[keep] - row[keep].max())
                nxt.append(keep[rng.choice(len(keep), p=pr / pr.sum())])
            nxt = np.array(nxt, dtype=np.int64)
        else:
            nxt = run_generate.argmax_lowest(r)
            if mode == "flip" and t == 4:
                nxt = np.argsort(-r, axis=-1, kind="stable")[:, 1]
        ids.append(nxt)
        rows.append(r.copy())
        if t + 1 < n:
            r = dec.step(nxt[:, None])[:, -1, :].numpy()
    ids = np.stack(ids, axis=1)
    rows = np.stack(rows)
    if cache is not None:
        ftc._store_cached(cache, exe, ids=ids, rows=rows, batched=np.array(batched))
    return _finish_output(ids, rows, batched, mode, args)


def _finish_output(ids, rows, batched, mode, args):
    """The mode's changes to the decoded ids [B, N] and step logits
    [N, B, V], which are saved (and the stdout line printed); returns the
    exit status."""
    import numpy as np
    n = args.generate
    ids = ids.astype(np.int64 if mode == "int64" else np.int32)
    rows = rows.astype(np.float32)
    if mode == "noisy" and n > 3:
        rows[3, 0, 0] += 1e-3 * (1.0 + float(np.max(np.abs(rows))))
    if mode == "threads" and args.threads == 2:
        rows.view(np.uint32)[0, 0, 0] ^= 1
    np.save(args.output, ids if batched else ids[0])
    if args.step_logits:
        np.save(args.step_logits, rows)
    if mode != "no_line":
        print("generate: prefill_tok_s=812.5 decode_tok_s=95.1 new_tokens=%d threads=%d" % (n, args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(compile_main(sys.argv[1:]))
