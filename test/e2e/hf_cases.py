#!/usr/bin/python3
"""The cases of run_hf.py: tiny Hugging Face checkpoints (config.json +
model.safetensors as `save_pretrained(..., safe_serialization=True)` writes
them, or the shards of model.safetensors.index.json) for `tfm-compile DIR`
(contract section 11).

A case is one of three kinds:

* "model": a supported checkpoint. run_hf.py checks `--emit=model-json`
  against `expected_model_json`, the output of every input against
  transformers (threads 1 and 2 bit-identical): logits of a causal LM, the
  last hidden state of a bert (BertModel); inputs with token_type_ids
  (bert) and with an attention_mask (right and left padding; a mamba
  executable must refuse the mask instead, contract section 8);
  `--weights` with a second checkpoint; and, for a causal LM, `--generate`
  against `model.generate`.
* "either": a config value that changes the maths, which tfm may support or
  not: tfm-compile either exits 1 with a message naming `reject_key`, or
  compiles and then passes every check of a "model" case (outputs only).
* "error": something tfm must reject (see `check` below): an unsupported
  model_type, a config key it does not support, a sliding window shorter
  than the sequence, missing or mismatched weights.

Run `hf_cases.py` to check the table (exit 1 on problems), `-v` to list it.
This file does not import torch or transformers.
"""

import sys
from dataclasses import dataclass, field
from typing import Optional, Tuple

# tfm-compile DIR's model types (contract section 11), as its message lists them.
SUPPORTED = ("bert", "gpt2", "llama", "mamba", "mistral", "mixtral")
CAUSAL_LM = ("gpt2", "llama", "mamba", "mistral", "mixtral")   # an LM head: logits, --generate
# A model with a mamba layer refuses a padding mask (contract section 8): its
# executable exits 1 naming attention_mask instead of computing anything.
MASK_REFUSED = ("mamba",)
GEN_NEW_TOKENS = 16
LAYOUTS = ("", "gpt2_hub", "tied_lm_head")


@dataclass(frozen=True)
class Inp:
    """One more forward input: ids of `shape` ([seq] or [batch, seq]) and
    `dtype`; with `types`, random token_type_ids (bert, int64) in [0,
    type_vocab_size); with `mask` "right" or "left", an attention_mask of
    that padding (1 real, 0 padding; at least one real token a row, at
    least one row padded), "ones" one without padding, written as
    `mask_dtype`."""
    shape: tuple
    dtype: str = "int64"
    types: bool = False
    mask: str = ""                    # "", "right", "left", "ones"
    mask_dtype: str = "int64"         # int32, int64, bool, float32


# Every causal LM case: right padding (every position compared: a padded
# query row still has the real keys before it) and left padding (compared
# only where a real key is at or before the position: contract section 8
# leaves a row with no key to attend unspecified).
LM_MASKED = (Inp((2, 13), mask="right"),
             Inp((11,), mask="right", mask_dtype="float32"),
             Inp((2, 9), dtype="int32", mask="right", mask_dtype="int32"),
             Inp((2, 10), mask="left", mask_dtype="bool"))
# Every bert case: token types, padding masks (every position compared:
# padded query rows are computed like any other, and attend to the real
# keys), both together.
BERT_MORE = (Inp((2, 13), types=True),
             Inp((7,), dtype="int32", types=True),
             Inp((2, 13), mask="right"),
             Inp((11,), mask="right", mask_dtype="bool"),
             Inp((2, 17), dtype="int32", types=True, mask="right", mask_dtype="int32"),
             Inp((2, 9), mask="left", mask_dtype="float32"))
# Every mamba case: masks its executable must refuse (exit 1 naming
# attention_mask, no output), a mask without padding too.
MAMBA_REFUSED = (Inp((2, 9), mask="right"),
                 Inp((7,), mask="left", mask_dtype="float32"),
                 Inp((2, 5), dtype="int32", mask="ones", mask_dtype="int32"),
                 Inp((4,), mask="ones", mask_dtype="bool"))


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
    # Inputs with token types or a mask (Inp); None: LM_MASKED for a causal
    # LM, MAMBA_REFUSED for mamba, BERT_MORE for bert (see more_inputs).
    extra_inputs: Optional[Tuple[Inp, ...]] = None
    # Prompts for --generate GEN_NEW_TOKENS ([seq] or [batch, seq]); causal LMs only.
    prompts: Tuple[tuple, ...] = ((1, 6),)
    seed: Optional[int] = None        # default: crc32 of the name
    # The transformers class built and saved (default: AutoModelForCausalLM
    # for a causal LM, AutoModel otherwise); when set, the reference is its
    # base_model (BertForMaskedLM: its .bert, a BertModel without pooler).
    hf_class: str = ""
    # save_pretrained(..., max_shard_size=...): the folder then has
    # model.safetensors.index.json and its shards (at least 3), no
    # model.safetensors; --weights gets ALT/model.safetensors.index.json.
    max_shard_size: str = ""
    # model.safetensors rewritten after save_pretrained (and alt's too):
    #   "gpt2_hub"      the Hub's old gpt2 layout: no "transformer." prefix,
    #                   h.N.attn.bias [1, 1, n_pos, n_pos] and h.N.attn.masked_bias
    #                   [] buffers added
    #   "tied_lm_head"  a tied model's redundant lm_head.weight (a copy of the
    #                   embedding) added
    layout: str = ""
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
        return self.model_type in CAUSAL_LM

    @property
    def refuses_mask(self):
        return self.model_type in MASK_REFUSED

    @property
    def more_inputs(self):
        if self.extra_inputs is not None:
            return self.extra_inputs
        if self.refuses_mask:
            return MAMBA_REFUSED
        if self.is_causal_lm:
            return LM_MASKED
        return BERT_MORE if self.model_type == "bert" else ()


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


def _mixtral(**kw):
    base = dict(vocab_size=128, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
                sliding_window=None, num_local_experts=4, num_experts_per_tok=2,
                initializer_range=0.1)
    base.update(kw)
    return base


def _gpt2(**kw):
    base = dict(vocab_size=128, n_embd=64, n_head=4, n_layer=2, n_positions=64,
                activation_function="gelu_new", layer_norm_epsilon=1e-5, initializer_range=0.1)
    base.update(kw)
    return base


def _bert(**kw):
    base = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=128, max_position_embeddings=64, type_vocab_size=2,
                initializer_range=0.1)
    base.update(kw)
    return base


def _mamba(**kw):
    # transformers' defaults otherwise: state_size 16, conv_kernel 4,
    # expand 2, time_step_rank "auto" (saved as ceil(hidden / 16)), tied,
    # silu, use_bias false, use_conv_bias true, layer_norm_epsilon 1e-5.
    # time_step_min/max only set dt_proj.bias's init (tfm reads and ignores
    # them): dt in [0.05, 1] rather than [0.001, 0.1], so that A = -exp(A_log)
    # matters more: restoring A_log's rows moves a [2, 21] input's logits by
    # 200 to 370 tol (about 60 tol at the default range, with run_hf.py's
    # MAMBA_MIXER_GAIN; 1 to 3 tol without it).
    base = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, initializer_range=0.1,
                time_step_min=0.05, time_step_max=1.0)
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
    Case("mixtral", "model", "mixtral", _mixtral(),
         note="4 experts, top-2 (MixtralSparseMoeBlock: block_sparse_moe.gate, experts.{e}.w1/w3/w2), "
              "grouped-query attention; batched and unbatched prompts", prompts=((2, 6), (5,))),
    Case("mixtral_e3k1_tied", "model", "mixtral",
         _mixtral(num_local_experts=3, num_experts_per_tok=1, tie_word_embeddings=True,
                  num_hidden_layers=3, intermediate_size=80),
         note="3 experts, top-1, tied head, 3 layers, d_ff 80"),
    Case("gpt2", "model", "gpt2", _gpt2(),
         note="n_embd 64, 4 heads, 2 layers, learned positions, gelu_new, Conv1D weights, "
              "tied head, biases"),
    Case("gpt2_n_inner", "model", "gpt2", _gpt2(n_inner=96, layer_norm_epsilon=1e-6),
         note="n_inner 96 (not 4 n_embd), layer_norm_epsilon 1e-6", prompts=((2, 4),)),
    Case("gpt2_hub_layout", "model", "gpt2", _gpt2(n_layer=3),
         layout="gpt2_hub",
         note="model.safetensors in the Hub's old gpt2 layout: no transformer. prefix, "
              "per-layer attn.bias / attn.masked_bias buffers"),
    Case("llama_tied_lm_head", "model", "llama", _llama(tie_word_embeddings=True),
         layout="tied_lm_head",
         note="tied, and the file has a redundant lm_head.weight (the embedding's copy)"),
    Case("llama_sharded", "model", "llama", _llama(), max_shard_size="150KB",
         note="sharded: model.safetensors.index.json + shards, no model.safetensors; "
              "--weights ALT/model.safetensors.index.json"),
    Case("bert", "model", "bert", _bert(),
         note="BertModel (pooler ignored): last hidden state; token types, padding masks"),
    Case("bert_types3_eps", "model", "bert", _bert(type_vocab_size=3, layer_norm_eps=1e-5),
         note="type_vocab_size 3, layer_norm_eps 1e-5"),
    Case("bert_gelu_new", "model", "bert", _bert(hidden_act="gelu_new", intermediate_size=96),
         note="hidden_act gelu_new (tanh gelu), intermediate_size 96"),
    Case("bert_odd", "model", "bert",
         _bert(vocab_size=97, hidden_size=48, num_attention_heads=6, intermediate_size=100,
               num_hidden_layers=3, max_position_embeddings=40, hidden_act="relu"),
         note="odd sizes: vocab 97, hidden 48 of 6 heads (head dim 8), d_ff 100, 3 layers, "
              "max_position_embeddings 40, hidden_act relu"),
    Case("bert_mlm", "model", "bert", _bert(), hf_class="BertForMaskedLM",
         note="saved from BertForMaskedLM: bert. prefixes and the cls. head; the reference is "
              "model.bert (BertModel, no pooler)"),
    Case("bert_sharded", "model", "bert", _bert(hidden_act="gelu_pytorch_tanh"),
         max_shard_size="100KB",
         note="sharded BertModel folder; hidden_act gelu_pytorch_tanh; --weights "
              "ALT/model.safetensors.index.json"),
    Case("mamba", "model", "mamba", _mamba(),
         note="MambaForCausalLM, transformers' defaults: state 16, conv 4, expand 2, "
              "time_step_rank auto (2), tied head; hidden 32, 2 layers, vocab 100; masks refused; "
              "batched and unbatched prompts; also 100 tokens",
         inputs=((1,), (2, 1), (9,), (2, 21), (2, 100)), prompts=((2, 6), (5,)),
         seed=7),   # crc32's seed: a greedy step's top-2 gap is 2.2 tol; seed 7: >= 56 tol
    Case("mamba_small_state", "model", "mamba",
         _mamba(hidden_size=48, num_hidden_layers=3, vocab_size=97, state_size=4, conv_kernel=2,
                expand=1, time_step_rank=5, tie_word_embeddings=False, layer_norm_epsilon=1e-6),
         note="state_size 4, conv_kernel 2, expand 1, time_step_rank 5 (auto: 3), untied "
              "(lm_head.weight), layer_norm_epsilon 1e-6; hidden 48, 3 layers, vocab 97",
         prompts=((2, 4),)),
    Case("mamba_sharded", "model", "mamba", _mamba(hidden_size=64), max_shard_size="100KB",
         note="sharded MambaForCausalLM folder (hidden 64); --weights "
              "ALT/model.safetensors.index.json", prompts=((3,),)),

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
    Case("unsupported_roberta", "error", "roberta",
         dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=128, max_position_embeddings=66),
         check="model_type", note="a RobertaModel folder (model_type roberta)"),
    Case("unsupported_t5", "error", "t5",
         dict(vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4),
         check="model_type", note="a T5ForConditionalGeneration folder"),
    Case("unsupported_edited_qwen2_moe", "error", "llama", _llama(),
         edit_config={"model_type": "qwen2_moe"}, check="model_type",
         note="a llama folder whose config.json says model_type qwen2_moe"),
    Case("llama_rope_scaling", "error", "llama",
         _llama(rope_scaling={"type": "linear", "factor": 2.0}),
         check="key", reject_key="rope_scaling", note="rope_scaling linear, factor 2"),
    Case("llama_hidden_act_swish2", "error", "llama", _llama(),
         edit_config={"hidden_act": "swish2"}, check="key", reject_key="hidden_act",
         note="hidden_act swish2 (hand-edited config.json)"),
    Case("bert_relative_key", "error", "bert", _bert(position_embedding_type="relative_key"),
         check="key", reject_key="position_embedding_type",
         note="position_embedding_type relative_key"),
    Case("bert_is_decoder", "error", "bert", _bert(is_decoder=True),
         check="key", reject_key="is_decoder", note="is_decoder true (causal BertModel)"),
    Case("bert_cross_attention", "error", "bert", _bert(),
         edit_config={"add_cross_attention": True}, check="key", reject_key="add_cross_attention",
         note="add_cross_attention true (hand-edited config.json: transformers needs "
              "is_decoder for it)"),
    Case("mixtral_top_k_above", "error", "mixtral", _mixtral(),
         edit_config={"num_experts_per_tok": 5}, check="key", reject_key="num_experts_per_tok",
         note="num_experts_per_tok 5 of num_local_experts 4 (hand-edited config.json)"),
    Case("mixtral_no_experts", "error", "mixtral", _mixtral(),
         edit_config={"num_local_experts": None}, check="key", reject_key="num_local_experts",
         note="num_local_experts null (hand-edited config.json)"),
    Case("mamba_use_bias", "error", "mamba", _mamba(use_bias=True),
         check="key", reject_key="use_bias", note="use_bias true (in_proj and out_proj biases)"),
    Case("mamba_no_conv_bias", "error", "mamba", _mamba(use_conv_bias=False),
         check="key", reject_key="use_conv_bias", note="use_conv_bias false (conv1d without bias)"),
    Case("mamba_hidden_act_gelu", "error", "mamba", _mamba(),
         edit_config={"hidden_act": "gelu"}, check="key", reject_key="hidden_act",
         note="hidden_act gelu (hand-edited config.json)"),
    Case("mamba_time_step_rank_big", "error", "mamba", _mamba(),
         edit_config={"time_step_rank": "big"}, check="key", reject_key="time_step_rank",
         note='time_step_rank "big" (hand-edited config.json: neither an integer nor "auto")'),
    Case("mamba_intermediate_size", "error", "mamba", _mamba(),
         edit_config={"intermediate_size": 100}, check="key", reject_key="intermediate_size",
         note="intermediate_size 100, not expand 2 x hidden_size 32 (hand-edited config.json)"),
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
        if c.layout not in LAYOUTS:
            problems.append("%s: layout %r" % (c.name, c.layout))
        if c.layout == "gpt2_hub" and c.model_type != "gpt2":
            problems.append("%s: layout gpt2_hub needs model_type gpt2" % c.name)
        if c.layout == "tied_lm_head" and not c.config.get("tie_word_embeddings", c.model_type == "gpt2"):
            problems.append("%s: layout tied_lm_head needs tied embeddings" % c.name)
        if (c.layout or c.max_shard_size) and c.kind != "model":
            problems.append("%s: layout and max_shard_size are for model cases" % c.name)
        if c.layout and c.max_shard_size:
            problems.append("%s: a layout rewrites model.safetensors, not shards" % c.name)
        if c.hf_class and c.is_causal_lm:
            problems.append("%s: hf_class is for models without an LM head" % c.name)
        for x in c.more_inputs:
            if not isinstance(x, Inp) or x.mask not in ("", "right", "left", "ones") or \
                    x.mask_dtype not in ("int32", "int64", "bool", "float32") or \
                    x.dtype not in ("int32", "int64"):
                problems.append("%s: bad extra input %r" % (c.name, x))
            elif x.types and c.model_type != "bert":
                problems.append("%s: token_type_ids are bert's" % c.name)
            elif x.mask in ("right", "left") and x.shape[-1] < 2:
                problems.append("%s: a padded input needs 2 tokens or more" % c.name)
            elif c.refuses_mask and not x.mask:
                problems.append("%s: a mamba case's extra inputs are masks to refuse" % c.name)
        if c.check == "sliding" and len(c.lengths) != 2:
            problems.append("%s: sliding needs lengths (within, beyond)" % c.name)
        if c.kind == "model":
            # (mamba: no limit of its own; tfm's default max_seq_len 2048)
            maxlen = c.config.get("max_position_embeddings", c.config.get("n_positions", 2048))
            for s in c.inputs + (c.int32_input,) + tuple(x.shape for x in c.more_inputs):
                if s[-1] > maxlen:
                    problems.append("%s: input %s longer than %d" % (c.name, s, maxlen))
            for s in (c.prompts if c.is_causal_lm else ()):
                if s[-1] + GEN_NEW_TOKENS > maxlen:
                    problems.append("%s: prompt %s + %d longer than %d"
                                    % (c.name, s, GEN_NEW_TOKENS, maxlen))
            if any(len(s) not in (1, 2) for s in c.inputs + c.prompts +
                   tuple(x.shape for x in c.more_inputs)):
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
