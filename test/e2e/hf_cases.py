#!/usr/bin/python3
"""The cases of run_hf.py: tiny Hugging Face checkpoints (config.json +
model.safetensors as `save_pretrained(..., safe_serialization=True)` writes
them) for `tfm-compile DIR` (contract section 11).

A case is one of three kinds:

* "model": a supported checkpoint. run_hf.py checks `--emit=model-json`
  against `expected_model_json`, the logits of every input against
  transformers (threads 1 and 2 bit-identical), `--weights` with a second
  checkpoint, and `--generate` against `model.generate`.
* "either": a config value that changes the maths, which tfm may support or
  not: tfm-compile either exits 1 with a message naming `reject_key`, or
  compiles and then passes every check of a "model" case (logits only).
* "error": something tfm must reject (see `check` below): an unsupported
  model_type, a config key it does not support, a sliding window shorter
  than the sequence, missing or mismatched weights.

Run `hf_cases.py` to check the table (exit 1 on problems), `-v` to list it.
This file does not import torch or transformers.
"""

import sys
from dataclasses import dataclass, field
from typing import Optional, Tuple

SUPPORTED = ("llama", "mistral", "gpt2")   # tfm-compile DIR, first step (contract section 11)
GEN_NEW_TOKENS = 16


@dataclass
class Case:
    name: str
    kind: str                         # "model", "either", "error"
    model_type: str
    config: dict                      # kwargs of transformers' config class
    note: str = ""
    # Forward inputs: shapes ([seq] or [batch, seq]), and their dtype.
    inputs: Tuple[tuple, ...] = ((1,), (2, 1), (9,), (2, 21))
    int32_input: tuple = (1, 5)       # one more input, written as int32
    # Prompts for --generate GEN_NEW_TOKENS ([seq] or [batch, seq]).
    prompts: Tuple[tuple, ...] = ((1, 6),)
    seed: Optional[int] = None        # default: crc32 of the name
    # "either": the key tfm-compile's message must name if it rejects the case
    reject_key: str = ""
    # "error": what is checked:
    #   "model_type"    tfm-compile exits 1 with one stderr line naming
    #                   model_type and every supported type
    #   "key"           tfm-compile exits 1 naming reject_key
    #   "sliding"       tfm-compile exits 1 naming sliding_window, or compiles
    #                   and then: an input no longer than the window matches
    #                   transformers, a longer one exits 1; and compiling
    #                   with --max-seq-len longer than the window exits 1
    #                   naming sliding_window, or its executable matches
    #                   transformers (the window applied) on a longer input
    #   "weights"       missing/mismatched weights: see run_hf.check_weights_errors
    check: str = ""
    # Applied to config.json after save_pretrained (hand edits transformers
    # would not save itself).
    edit_config: dict = field(default_factory=dict)
    # For "error" cases with a forward: the input lengths (sliding: within,
    # beyond the window).
    lengths: Tuple[int, ...] = ()

    @property
    def is_causal_lm(self):
        return self.model_type in SUPPORTED


def _llama(**kw):
    base = dict(vocab_size=128, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=64,
                rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                initializer_range=0.1)
    base.update(kw)
    return base


def _mistral(**kw):
    base = dict(vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                sliding_window=None, initializer_range=0.1)
    base.update(kw)
    return base


def _gpt2(**kw):
    base = dict(vocab_size=128, n_embd=64, n_head=4, n_layer=2, n_positions=64,
                activation_function="gelu_new", layer_norm_epsilon=1e-5, initializer_range=0.1)
    base.update(kw)
    return base


CASES = [
    # -- supported checkpoints ------------------------------------------------
    Case("llama_gqa", "model", "llama", _llama(),
         note="8 heads / 2 kv heads (grouped-query), untied head; batched and unbatched prompts",
         prompts=((2, 6), (5,))),
    Case("llama_mqa", "model", "llama", _llama(num_key_value_heads=1),
         note="multi-query: num_key_value_heads 1"),
    Case("llama_tied", "model", "llama", _llama(tie_word_embeddings=True, num_key_value_heads=4),
         note="tie_word_embeddings: the file has no lm_head.weight"),
    Case("llama_eps_theta", "model", "llama", _llama(rms_norm_eps=1e-6, rope_theta=500000.0),
         note="rms_norm_eps 1e-6, rope_theta 500000"),
    Case("llama_odd", "model", "llama",
         _llama(vocab_size=97, hidden_size=48, num_attention_heads=6, num_key_value_heads=3,
                intermediate_size=100, num_hidden_layers=3),
         note="odd sizes: vocab 97, d_ff 100 (not a multiple of 16), head dim 8 of 6 heads, 3 layers"),
    Case("mistral", "model", "mistral", _mistral(),
         note="sliding_window null"),
    Case("mistral_window_64", "model", "mistral", _mistral(sliding_window=64),
         note="sliding_window 64 = max_position_embeddings: no sequence is longer"),
    Case("gpt2", "model", "gpt2", _gpt2(),
         note="n_embd 64, 4 heads, 2 layers, learned positions, gelu_new, Conv1D weights, "
              "tied head, biases"),
    Case("gpt2_n_inner", "model", "gpt2", _gpt2(n_inner=96, layer_norm_epsilon=1e-6),
         note="n_inner 96 (not 4 n_embd), layer_norm_epsilon 1e-6", prompts=((2, 4),)),

    # -- maths-changing values: supported or rejected, never ignored ------------
    Case("either_llama_bias", "either", "llama", _llama(attention_bias=True, mlp_bias=True),
         reject_key="bias", note="attention_bias and mlp_bias true (every linear biased)"),
    Case("either_llama_attention_bias", "either", "llama", _llama(attention_bias=True),
         reject_key="attention_bias", note="attention_bias true, mlp_bias false"),
    Case("either_llama_head_dim", "either", "llama", _llama(head_dim=16),
         reject_key="head_dim", note="head_dim 16 != hidden_size / num_attention_heads = 8"),
    Case("either_gpt2_inverse_layer_idx", "either", "gpt2",
         _gpt2(scale_attn_by_inverse_layer_idx=True),
         reject_key="scale_attn_by_inverse_layer_idx",
         note="scores also divided by the layer number"),

    # -- what tfm must reject ------------------------------------------------------
    Case("unsupported_bert", "error", "bert",
         dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=128, max_position_embeddings=64),
         check="model_type", note="a BertModel folder (model_type bert: not in this step)"),
    Case("unsupported_t5", "error", "t5",
         dict(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4),
         check="model_type", note="a T5ForConditionalGeneration folder"),
    Case("unsupported_edited_mixtral", "error", "llama", _llama(),
         edit_config={"model_type": "mixtral"}, check="model_type",
         note="a llama folder whose config.json says model_type mixtral"),
    Case("llama_rope_scaling", "error", "llama",
         _llama(rope_scaling={"type": "linear", "factor": 2.0}),
         check="key", reject_key="rope_scaling", note="rope_scaling linear, factor 2"),
    Case("llama_hidden_act_swish2", "error", "llama", _llama(),
         edit_config={"hidden_act": "swish2"}, check="key", reject_key="hidden_act",
         note="hidden_act swish2 (hand-edited config.json)"),
    Case("mistral_window_8", "error", "mistral", _mistral(sliding_window=8),
         check="sliding", lengths=(8, 12),
         note="sliding_window 8: rejected, or 12 tokens rejected at run time and with "
              "--max-seq-len 12 rejected or windowed"),
    Case("missing_weights", "error", "llama", _llama(num_hidden_layers=1),
         check="weights",
         note="model.safetensors removed after compiling; a folder without it; --weights of "
              "another shape; --weights of a missing file"),
]


def by_name():
    return {c.name: c for c in CASES}


def validate():
    problems = []
    seen = set()
    for c in CASES:
        if c.name in seen:
            problems.append("duplicate case %s" % c.name)
        seen.add(c.name)
        if c.kind not in ("model", "either", "error"):
            problems.append("%s: kind %r" % (c.name, c.kind))
        if c.kind in ("model", "either") and c.model_type not in SUPPORTED:
            problems.append("%s: model_type %s is not supported" % (c.name, c.model_type))
        if c.kind == "either" and not c.reject_key:
            problems.append("%s: an either case needs reject_key" % c.name)
        if c.kind == "error" and c.check not in ("model_type", "key", "sliding", "weights"):
            problems.append("%s: check %r" % (c.name, c.check))
        if c.check == "key" and not c.reject_key:
            problems.append("%s: check key needs reject_key" % c.name)
        if c.check == "sliding" and len(c.lengths) != 2:
            problems.append("%s: sliding needs lengths (within, beyond)" % c.name)
        if c.kind == "model":
            maxlen = c.config.get("max_position_embeddings", c.config.get("n_positions"))
            for s in c.inputs + (c.int32_input,):
                if s[-1] > maxlen:
                    problems.append("%s: input %s longer than %d" % (c.name, s, maxlen))
            for s in c.prompts:
                if s[-1] + GEN_NEW_TOKENS > maxlen:
                    problems.append("%s: prompt %s + %d longer than %d"
                                    % (c.name, s, GEN_NEW_TOKENS, maxlen))
            if any(len(s) not in (1, 2) for s in c.inputs + c.prompts):
                problems.append("%s: an input is not [seq] or [batch, seq]" % c.name)
    for kind in ("model", "either", "error"):
        if not any(c.kind == kind for c in CASES):
            problems.append("no %s case" % kind)
    return problems


def main(argv):
    problems = validate()
    for p in problems:
        print("hf_cases.py: " + p, file=sys.stderr)
    if "-v" in argv:
        for c in CASES:
            print("%-32s %-6s %-8s %s" % (c.name, c.kind, c.model_type, c.note))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
