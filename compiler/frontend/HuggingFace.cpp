//===- HuggingFace.cpp - config.json -> model description + layout --------===//
//
// Each supported model_type maps its config to the model description keys
// (contract sections 2 and 11) and its tensor names to the model's
// parameters. A config value that changes the maths and has no mapping is
// an error at its position in config.json; a key that does not change it
// (dropout, token ids, storage dtype, ...) is read and ignored.
//
//===----------------------------------------------------------------------===//

#include "tfm/Frontend/HuggingFace.h"

#include "tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace llvm;

namespace tfm {

namespace {

/// Reads config.json's values, recording which keys it used and reporting
/// problems at their values.
class ConfigJson {
public:
  ConfigJson(const json::Object &object, ConfigPositions positions,
             std::vector<ConfigDiagnostic> &diags)
      : object(object), positions(std::move(positions)), diags(diags) {}

  void error(StringRef key, const Twine &message) {
    auto [line, column] = positions.of(key);
    diags.push_back(
        {ConfigDiagnostic::Kind::Error, line, column, message.str()});
    failed = true;
  }
  /// Marks `key` read; its value, or null when absent or JSON null.
  const json::Value *get(StringRef key) {
    used.insert(key);
    const json::Value *v = object.get(key);
    return v && v->kind() != json::Value::Null ? v : nullptr;
  }
  std::optional<int64_t> integer(StringRef key, bool required = true) {
    const json::Value *v = get(key);
    if (!v) {
      if (required)
        error(key, formatv("config.json has no '{0}'", key));
      return std::nullopt;
    }
    std::optional<int64_t> n = v->getAsInteger();
    if (!n || *n <= 0) {
      error(key, formatv("'{0}' must be a positive integer", key));
      return std::nullopt;
    }
    return n;
  }
  /// A layer count: a positive integer up to the description's limit,
  /// checked before a weight name is made for each layer.
  std::optional<int64_t> layerCount(StringRef key) {
    std::optional<int64_t> n = integer(key);
    if (n && *n > kMaxModelLayers) {
      error(key, formatv("'{0}' is {1}, above the supported maximum {2}", key,
                         *n, kMaxModelLayers));
      return std::nullopt;
    }
    return n;
  }
  std::optional<double> number(StringRef key) {
    const json::Value *v = get(key);
    if (!v)
      return std::nullopt;
    std::optional<double> x = v->getAsNumber();
    if (!x || !std::isfinite(*x) || *x <= 0) {
      error(key, formatv("'{0}' must be a positive number", key));
      return std::nullopt;
    }
    return x;
  }
  bool boolean(StringRef key, bool byDefault) {
    const json::Value *v = get(key);
    if (!v)
      return byDefault;
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      error(key, formatv("'{0}' must be true or false", key));
    return b.value_or(byDefault);
  }
  std::optional<StringRef> string(StringRef key) {
    const json::Value *v = get(key);
    if (!v)
      return std::nullopt;
    std::optional<StringRef> s = v->getAsString();
    if (!s)
      error(key, formatv("'{0}' must be a string", key));
    return s;
  }
  /// A key whose only supported value is absent or null.
  void mustBeNull(StringRef key, StringRef why) {
    if (get(key))
      error(key, formatv("'{0}' is not supported: {1}", key, why));
  }
  /// The keys present and never read.
  std::vector<std::string> unread() const {
    std::vector<std::string> keys;
    for (const auto &kv : object)
      if (!used.contains(kv.first.str()))
        keys.push_back(kv.first.str());
    llvm::sort(keys);
    return keys;
  }

  bool failed = false;

private:
  const json::Object &object;
  ConfigPositions positions;
  std::vector<ConfigDiagnostic> &diags;
  StringSet<> used;
};

/// Hugging Face's activation names, as the description spells them; absent,
/// the config class's default `byDefault`.
std::optional<StringRef> activationOf(ConfigJson &config, StringRef key,
                                      StringRef byDefault) {
  std::optional<StringRef> act = config.string(key);
  if (!act)
    act = byDefault;
  static const std::pair<const char *, const char *> names[] = {
      {"silu", "silu"},
      {"swish", "silu"},
      {"gelu", "gelu"},
      {"gelu_new", "gelu_tanh"},
      {"gelu_pytorch_tanh", "gelu_tanh"},
      {"relu", "relu"}};
  for (auto [hf, ours] : names)
    if (*act == hf)
      return StringRef(ours);
  config.error(key, formatv("'{0}' \"{1}\" is not supported (supported: "
                            "silu, swish, gelu, gelu_new, gelu_pytorch_tanh, "
                            "relu)",
                            key, *act));
  return std::nullopt;
}

std::string layerName(int64_t i, StringRef suffix) {
  return ("layers." + Twine(i) + "." + suffix).str();
}

/// The LLaMA family's model types: their layers differ in the sliding
/// window (mistral, mixtral) and the FFN (mixtral's experts).
enum class LlamaFamily { Llama, Mistral, Mixtral };

/// LLaMA, Mistral and Mixtral (`LlamaForCausalLM`, `MistralForCausalLM`,
/// `MixtralForCausalLM`): pre-norm RMS norms, rotary positions
/// (rotate_half), grouped-query attention, SwiGLU (Mixtral: a mixture of
/// SwiGLU experts, its router's softmax over the top-k logits, which is
/// what renormalising the top-k of the full softmax gives), no biases by
/// default.
bool mapLlama(ConfigJson &config, LlamaFamily family, json::Object &desc,
              HuggingFaceCheckpoint &ckpt) {
  bool mistral = family != LlamaFamily::Llama;
  bool mixtral = family == LlamaFamily::Mixtral;
  std::optional<int64_t> d = config.integer("hidden_size");
  std::optional<int64_t> heads = config.integer("num_attention_heads");
  std::optional<int64_t> kvHeads = config.integer("num_key_value_heads", false);
  std::optional<int64_t> layers = config.layerCount("num_hidden_layers");
  std::optional<int64_t> ff = config.integer("intermediate_size");
  std::optional<int64_t> vocab = config.integer("vocab_size");
  std::optional<int64_t> positions = config.integer("max_position_embeddings");
  std::optional<int64_t> headDim = config.integer("head_dim", false);
  std::optional<StringRef> act = activationOf(config, "hidden_act", "silu");
  std::optional<double> eps = config.number("rms_norm_eps");
  std::optional<double> theta = config.number("rope_theta");
  config.mustBeNull("rope_scaling", "scaled rotary positions change the "
                                    "angles, and tfm has only the plain ones");
  bool attentionBias = config.boolean("attention_bias", false);
  bool mlpBias = config.boolean("mlp_bias", false);
  bool tied = config.boolean("tie_word_embeddings", false);
  std::optional<int64_t> window;
  if (mistral)
    window = config.integer("sliding_window", false);
  std::optional<int64_t> experts, topK;
  if (mixtral) {
    experts = config.integer("num_local_experts");
    topK = config.integer("num_experts_per_tok");
    // Training only: the router's auxiliary loss and its input noise.
    config.get("router_aux_loss_coef");
    config.get("router_jitter_noise");
    config.get("output_router_logits");
  }
  // Same maths: tensor-parallel slicing, dropout in training.
  config.get("pretraining_tp");
  config.get("attention_dropout");
  if (config.failed || !d || !heads || !layers || !ff || !vocab || !positions ||
      !act || (mixtral && (!experts || !topK)))
    return false;
  if (mixtral && *experts > kMaxExperts) {
    config.error("num_local_experts",
                 formatv("'num_local_experts' is {0}, above the supported "
                         "maximum {1}",
                         *experts, kMaxExperts));
    return false;
  }
  if (mixtral && *topK > *experts) {
    config.error("num_experts_per_tok",
                 formatv("'num_experts_per_tok' {0} is more than "
                         "'num_local_experts' {1}",
                         *topK, *experts));
    return false;
  }
  if (attentionBias != mlpBias) {
    config.error("attention_bias",
                 "'attention_bias' and 'mlp_bias' differ; tfm's 'bias' "
                 "applies to every linear layer");
    return false;
  }
  if (headDim && *d % *heads == 0 && *headDim != *d / *heads) {
    config.error("head_dim", formatv("'head_dim' {0} is not hidden_size / "
                                     "num_attention_heads = {1}",
                                     *headDim, *d / *heads));
    return false;
  }
  int64_t maxSeq = *positions;
  if (window && *window < maxSeq) {
    // Within the window, sliding-window attention is full causal
    // attention: the model accepts sequences up to the window.
    maxSeq = *window;
    ckpt.slidingWindow = *window;
  }
  desc["architecture"] = "decoder";
  desc["d_model"] = *d;
  desc["num_heads"] = *heads;
  desc["num_kv_heads"] = kvHeads.value_or(*heads);
  desc["d_ff"] = *ff;
  desc["num_layers"] = *layers;
  desc["vocab_size"] = *vocab;
  desc["max_seq_len"] = maxSeq;
  desc["positional"] = "rope";
  desc["rope_style"] = "half";
  desc["rope_base"] = theta.value_or(10000.0);
  desc["norm"] = "pre";
  desc["norm_type"] = "rms_norm";
  desc["norm_eps"] = eps.value_or(1e-6);
  desc["final_norm"] = true;
  desc["activation"] = *act;
  desc["ffn_gated"] = true;
  desc["bias"] = attentionBias;
  desc["tie_embeddings"] = tied;
  if (mixtral)
    desc["ffn"] =
        json::Object{{"kind", "moe"}, {"experts", *experts}, {"top_k", *topK}};

  auto &w = ckpt.weights;
  w["embed.weight"] = {{"model.embed_tokens.weight"}};
  for (int64_t i = 0; i < *layers; ++i) {
    std::string hf = ("model.layers." + Twine(i) + ".").str();
    auto qkv = [&](StringRef what) {
      return WeightSource{{hf + "self_attn.q_proj." + what.str(),
                           hf + "self_attn.k_proj." + what.str(),
                           hf + "self_attn.v_proj." + what.str()}};
    };
    w[layerName(i, "self_attn.in_proj_weight")] = qkv("weight");
    w[layerName(i, "self_attn.out_proj.weight")] = {
        {hf + "self_attn.o_proj.weight"}};
    if (mixtral) {
      // Each expert's w1 (gate) rows, then its w3 (up) rows; w2 is down.
      std::string moe = hf + "block_sparse_moe.";
      w[layerName(i, "moe.gate.weight")] = {{moe + "gate.weight"}};
      for (int64_t e = 0; e < *experts; ++e) {
        std::string expert = (moe + "experts." + Twine(e) + ".").str();
        std::string ours = ("moe.experts." + Twine(e) + ".").str();
        w[layerName(i, ours + "linear1.weight")] = {
            {expert + "w1.weight", expert + "w3.weight"}};
        w[layerName(i, ours + "linear2.weight")] = {{expert + "w2.weight"}};
      }
    } else {
      // The gate's rows, then the up rows (ffn_gated's layout).
      w[layerName(i, "linear1.weight")] = {
          {hf + "mlp.gate_proj.weight", hf + "mlp.up_proj.weight"}};
      w[layerName(i, "linear2.weight")] = {{hf + "mlp.down_proj.weight"}};
    }
    if (attentionBias) {
      w[layerName(i, "self_attn.in_proj_bias")] = qkv("bias");
      w[layerName(i, "self_attn.out_proj.bias")] = {
          {hf + "self_attn.o_proj.bias"}};
      w[layerName(i, "linear1.bias")] = {
          {hf + "mlp.gate_proj.bias", hf + "mlp.up_proj.bias"}};
      w[layerName(i, "linear2.bias")] = {{hf + "mlp.down_proj.bias"}};
    }
    w[layerName(i, "norm1.weight")] = {{hf + "input_layernorm.weight"}};
    w[layerName(i, "norm2.weight")] = {
        {hf + "post_attention_layernorm.weight"}};
  }
  w["norm.weight"] = {{"model.norm.weight"}};
  if (!tied)
    w["lm_head.weight"] = {{"lm_head.weight"}};
  else
    ckpt.ignoredTensors.push_back("lm_head.weight"); // a copy of the table
  // Older checkpoints store each layer's rotary frequencies, which tfm
  // computes from rope_theta.
  for (int64_t i = 0; i < *layers; ++i)
    ckpt.ignoredTensors.push_back(
        ("model.layers." + Twine(i) + ".self_attn.rotary_emb.inv_freq").str());
  return true;
}

/// GPT-2 (`GPT2LMHeadModel`): learned positions, pre-norm layer norms, a
/// tied head; its Conv1D weights are stored [in, out]. Its tensors are
/// under `prefix` ("transformer.", or "" as the Hub's own gpt2 files and a
/// saved GPT2Model have them).
bool mapGpt2(ConfigJson &config, json::Object &desc,
             HuggingFaceCheckpoint &ckpt, StringRef prefix) {
  std::optional<int64_t> d = config.integer("n_embd");
  std::optional<int64_t> heads = config.integer("n_head");
  std::optional<int64_t> layers = config.layerCount("n_layer");
  std::optional<int64_t> positions = config.integer("n_positions");
  std::optional<int64_t> vocab = config.integer("vocab_size");
  std::optional<int64_t> inner = config.integer("n_inner", false);
  std::optional<StringRef> act =
      activationOf(config, "activation_function", "gelu_new");
  std::optional<double> eps = config.number("layer_norm_epsilon");
  bool scaled = config.boolean("scale_attn_weights", true);
  if (config.boolean("scale_attn_by_inverse_layer_idx", false))
    config.error("scale_attn_by_inverse_layer_idx",
                 "'scale_attn_by_inverse_layer_idx' is not supported: it "
                 "scales each layer's scores differently");
  if (config.boolean("add_cross_attention", false))
    config.error("add_cross_attention",
                 "'add_cross_attention' is not supported (GPT-2 as a "
                 "decoder over an encoder)");
  bool tied = config.boolean("tie_word_embeddings", true);
  // Same maths: the context size (n_positions holds the table), dropout,
  // the order of the scores' upcast (fp32 here anyway).
  for (StringRef key : {"n_ctx", "attn_pdrop", "embd_pdrop", "resid_pdrop",
                        "reorder_and_upcast_attn"})
    config.get(key);
  if (config.failed || !d || !heads || !layers || !positions || !vocab || !act)
    return false;
  desc["architecture"] = "decoder";
  desc["d_model"] = *d;
  desc["num_heads"] = *heads;
  desc["d_ff"] = inner.value_or(4 * *d);
  desc["num_layers"] = *layers;
  desc["vocab_size"] = *vocab;
  desc["max_seq_len"] = *positions;
  desc["positional"] = "learned";
  desc["norm"] = "pre";
  desc["norm_eps"] = eps.value_or(1e-5);
  desc["final_norm"] = true;
  desc["activation"] = *act;
  desc["attention_score"] = scaled ? "scaled_dot" : "dot";
  desc["tie_embeddings"] = tied;

  auto &w = ckpt.weights;
  w["embed.weight"] = {{(prefix + "wte.weight").str()}};
  w["pos_embed.weight"] = {{(prefix + "wpe.weight").str()}};
  for (int64_t i = 0; i < *layers; ++i) {
    std::string hf = (prefix + "h." + Twine(i) + ".").str();
    // The causal mask as a buffer, in files older transformers wrote.
    ckpt.ignoredTensors.push_back(hf + "attn.bias");
    ckpt.ignoredTensors.push_back(hf + "attn.masked_bias");
    auto conv = [&](StringRef name) {
      return WeightSource{{hf + name.str()}, /*transposed=*/true};
    };
    auto plain = [&](StringRef name) {
      return WeightSource{{hf + name.str()}};
    };
    w[layerName(i, "self_attn.in_proj_weight")] = conv("attn.c_attn.weight");
    w[layerName(i, "self_attn.in_proj_bias")] = plain("attn.c_attn.bias");
    w[layerName(i, "self_attn.out_proj.weight")] = conv("attn.c_proj.weight");
    w[layerName(i, "self_attn.out_proj.bias")] = plain("attn.c_proj.bias");
    w[layerName(i, "linear1.weight")] = conv("mlp.c_fc.weight");
    w[layerName(i, "linear1.bias")] = plain("mlp.c_fc.bias");
    w[layerName(i, "linear2.weight")] = conv("mlp.c_proj.weight");
    w[layerName(i, "linear2.bias")] = plain("mlp.c_proj.bias");
    w[layerName(i, "norm1.weight")] = plain("ln_1.weight");
    w[layerName(i, "norm1.bias")] = plain("ln_1.bias");
    w[layerName(i, "norm2.weight")] = plain("ln_2.weight");
    w[layerName(i, "norm2.bias")] = plain("ln_2.bias");
  }
  w["norm.weight"] = {{(prefix + "ln_f.weight").str()}};
  w["norm.bias"] = {{(prefix + "ln_f.bias").str()}};
  if (!tied)
    w["lm_head.weight"] = {{"lm_head.weight"}};
  else
    ckpt.ignoredTensors.push_back("lm_head.weight"); // a copy of wte
  return true;
}

/// BERT as `BertModel` (the last hidden state, without the pooler): post-norm
/// layer norms, learned positions, token types, a layer norm of the
/// embeddings. Its tensors are under `prefix` ("" as BertModel saves them,
/// "bert." from a class with a head, whose head is not read).
bool mapBert(ConfigJson &config, json::Object &desc,
             HuggingFaceCheckpoint &ckpt, StringRef prefix) {
  std::optional<int64_t> d = config.integer("hidden_size");
  std::optional<int64_t> heads = config.integer("num_attention_heads");
  std::optional<int64_t> layers = config.layerCount("num_hidden_layers");
  std::optional<int64_t> ff = config.integer("intermediate_size");
  std::optional<int64_t> vocab = config.integer("vocab_size");
  std::optional<int64_t> positions =
      config.integer("max_position_embeddings", false);
  std::optional<int64_t> types = config.integer("type_vocab_size", false);
  std::optional<StringRef> act = activationOf(config, "hidden_act", "gelu");
  std::optional<double> eps = config.number("layer_norm_eps");
  if (std::optional<StringRef> kind = config.string("position_embedding_type");
      kind && *kind != "absolute")
    config.error("position_embedding_type",
                 formatv("'position_embedding_type' \"{0}\" is not supported "
                         "(supported: absolute)",
                         *kind));
  if (config.boolean("is_decoder", false))
    config.error("is_decoder", "'is_decoder' is not supported: BERT as a "
                               "causal decoder (supported: the encoder, "
                               "BertModel)");
  if (config.boolean("add_cross_attention", false))
    config.error("add_cross_attention",
                 "'add_cross_attention' is not supported (BERT as a decoder "
                 "over an encoder)");
  // Same maths: dropout in training, the FFN computed in chunks, the
  // classifier heads tfm does not build.
  for (StringRef key : {"hidden_dropout_prob", "attention_probs_dropout_prob",
                        "classifier_dropout", "chunk_size_feed_forward",
                        "gradient_checkpointing", "output_past"})
    config.get(key);
  if (config.failed || !d || !heads || !layers || !ff || !vocab || !act)
    return false;
  desc["architecture"] = "encoder";
  desc["d_model"] = *d;
  desc["num_heads"] = *heads;
  desc["d_ff"] = *ff;
  desc["num_layers"] = *layers;
  desc["vocab_size"] = *vocab;
  desc["type_vocab_size"] = types.value_or(2);
  desc["max_seq_len"] = positions.value_or(512);
  desc["positional"] = "learned";
  desc["norm"] = "post";
  desc["norm_eps"] = eps.value_or(1e-12);
  desc["final_norm"] = false;
  desc["embedding_norm"] = true;
  desc["activation"] = *act;
  desc["lm_head"] = false;

  auto &w = ckpt.weights;
  std::string e = (prefix + "embeddings.").str();
  w["embed.weight"] = {{e + "word_embeddings.weight"}};
  w["pos_embed.weight"] = {{e + "position_embeddings.weight"}};
  w["type_embed.weight"] = {{e + "token_type_embeddings.weight"}};
  w["embed_norm.weight"] = {{e + "LayerNorm.weight"}};
  w["embed_norm.bias"] = {{e + "LayerNorm.bias"}};
  for (int64_t i = 0; i < *layers; ++i) {
    std::string hf = (prefix + "encoder.layer." + Twine(i) + ".").str();
    auto qkv = [&](StringRef what) {
      return WeightSource{{hf + "attention.self.query." + what.str(),
                           hf + "attention.self.key." + what.str(),
                           hf + "attention.self.value." + what.str()}};
    };
    auto one = [&](StringRef name) { return WeightSource{{hf + name.str()}}; };
    w[layerName(i, "self_attn.in_proj_weight")] = qkv("weight");
    w[layerName(i, "self_attn.in_proj_bias")] = qkv("bias");
    w[layerName(i, "self_attn.out_proj.weight")] =
        one("attention.output.dense.weight");
    w[layerName(i, "self_attn.out_proj.bias")] =
        one("attention.output.dense.bias");
    w[layerName(i, "norm1.weight")] = one("attention.output.LayerNorm.weight");
    w[layerName(i, "norm1.bias")] = one("attention.output.LayerNorm.bias");
    w[layerName(i, "linear1.weight")] = one("intermediate.dense.weight");
    w[layerName(i, "linear1.bias")] = one("intermediate.dense.bias");
    w[layerName(i, "linear2.weight")] = one("output.dense.weight");
    w[layerName(i, "linear2.bias")] = one("output.dense.bias");
    w[layerName(i, "norm2.weight")] = one("output.LayerNorm.weight");
    w[layerName(i, "norm2.bias")] = one("output.LayerNorm.bias");
  }
  // The pooler and the heads of the classes that have them; the position
  // ids buffer older transformers saved.
  ckpt.ignoredTensors.push_back((prefix + "pooler.").str());
  ckpt.ignoredTensors.push_back(e + "position_ids");
  // The heads of BertForPreTraining and BertForMaskedLM (cls.),
  // BertFor{Sequence,Token,MultipleChoice}Classification (classifier.) and
  // BertForQuestionAnswering (qa_outputs.): tfm computes BertModel's output.
  if (!prefix.empty())
    for (const char *head : {"cls.", "classifier.", "qa_outputs."})
      ckpt.ignoredTensors.push_back(head);
  return true;
}

/// The sequences a Mamba checkpoint's description accepts by default: its
/// config has no limit (no positions), `--max-seq-len` raises it.
constexpr int64_t kMambaDefaultMaxSeqLen = 2048;

/// Mamba (`MambaForCausalLM`): a stack of Mamba-1 mixers, each behind a
/// pre-norm RMS norm, a final RMS norm and a tied head by default.
bool mapMamba(ConfigJson &config, json::Object &desc,
              HuggingFaceCheckpoint &ckpt) {
  std::optional<int64_t> d = config.integer("hidden_size");
  std::optional<int64_t> layers = config.layerCount("num_hidden_layers");
  std::optional<int64_t> vocab = config.integer("vocab_size");
  std::optional<int64_t> state = config.integer("state_size", false);
  std::optional<int64_t> conv = config.integer("conv_kernel", false);
  std::optional<int64_t> expand = config.integer("expand", false);
  std::optional<int64_t> inner = config.integer("intermediate_size", false);
  std::optional<double> eps = config.number("layer_norm_epsilon");
  std::optional<StringRef> act = config.string("hidden_act");
  bool bias = config.boolean("use_bias", false);
  bool convBias = config.boolean("use_conv_bias", true);
  bool tied = config.boolean("tie_word_embeddings", true);
  // dt_rank: an integer or "auto" (ceil(hidden_size / 16)).
  json::Value rank("auto");
  if (const json::Value *r = config.get("time_step_rank")) {
    if (r->getAsInteger() && *r->getAsInteger() > 0)
      rank = *r->getAsInteger();
    else if (r->getAsString() != std::optional<StringRef>("auto"))
      config.error("time_step_rank", "'time_step_rank' must be a positive "
                                     "integer or \"auto\"");
  }
  // Same maths: the initialisation of dt_proj and the residuals, the
  // residual's dtype (f32 here anyway), the CPU path's choice.
  for (StringRef key :
       {"time_step_scale", "time_step_min", "time_step_max",
        "time_step_init_scheme", "time_step_floor", "rescale_prenorm_residual",
        "residual_in_fp32", "use_mambapy"})
    config.get(key);
  if (act && *act != "silu")
    config.error("hidden_act",
                 formatv("'hidden_act' '{0}' is not supported: tfm's mamba "
                         "mixers use silu",
                         *act));
  if (bias)
    config.error("use_bias", "'use_bias' true is not supported: tfm's mamba "
                             "in_proj and out_proj have no bias");
  if (!convBias)
    config.error("use_conv_bias", "'use_conv_bias' false is not supported: "
                                  "tfm's mamba conv1d has a bias");
  if (config.failed || !d || !layers || !vocab)
    return false;
  int64_t x = expand.value_or(2);
  if (inner && *inner != x * *d) {
    config.error("intermediate_size",
                 formatv("'intermediate_size' {0} is not expand {1} x "
                         "hidden_size {2}",
                         *inner, x, *d));
    return false;
  }
  desc["architecture"] = "decoder";
  desc["d_model"] = *d;
  desc["num_layers"] = *layers;
  desc["vocab_size"] = *vocab;
  desc["max_seq_len"] = kMambaDefaultMaxSeqLen;
  desc["positional"] = "none";
  desc["norm"] = "pre";
  desc["norm_type"] = "rms_norm";
  desc["norm_eps"] = eps.value_or(1e-5);
  desc["final_norm"] = true;
  desc["tie_embeddings"] = tied;
  desc["layers"] = json::Array(std::vector<json::Value>(*layers, "mamba"));
  desc["mamba"] = json::Object{{"d_state", state.value_or(16)},
                               {"d_conv", conv.value_or(4)},
                               {"expand", x},
                               {"dt_rank", std::move(rank)}};

  auto &w = ckpt.weights;
  w["embed.weight"] = {{"backbone.embeddings.weight"}};
  for (int64_t i = 0; i < *layers; ++i) {
    std::string hf = ("backbone.layers." + Twine(i) + ".").str();
    w[layerName(i, "norm.weight")] = {{hf + "norm.weight"}};
    for (const char *mixer :
         {"mixer.in_proj.weight", "mixer.conv1d.weight", "mixer.conv1d.bias",
          "mixer.x_proj.weight", "mixer.dt_proj.weight", "mixer.dt_proj.bias",
          "mixer.A_log", "mixer.D", "mixer.out_proj.weight"})
      w[layerName(i, mixer)] = {{hf + mixer}};
  }
  w["norm.weight"] = {{"backbone.norm_f.weight"}};
  if (!tied)
    w["lm_head.weight"] = {{"lm_head.weight"}};
  else
    ckpt.ignoredTensors.push_back("lm_head.weight"); // a copy of the table
  return true;
}

/// Keys every config.json may have that do not change the maths.
constexpr const char *kCommonKeys[] = {
    "architectures",        "model_type",
    "transformers_version", "torch_dtype",
    "_name_or_path",        "bos_token_id",
    "eos_token_id",         "pad_token_id",
    "initializer_range",    "use_cache",
    "tokenizer_class",      "task_specific_params",
    "summary_type",         "summary_use_proj",
    "summary_activation",   "summary_proj_to_labels",
    "summary_first_dropout"};

/// llvm::json parses recursively: deep nesting would overflow the stack.
Expected<json::Value> parseShallowJson(StringRef text) {
  if (findDeepJsonNesting(text, 64) != StringRef::npos)
    return createStringError(inconvertibleErrorCode(),
                             "JSON nested deeper than 64 levels");
  return json::parse(text);
}

/// A name the description accepts: letters, digits, '_', '-', '.'.
std::string modelName(StringRef dir) {
  std::string name =
      sys::path::filename(sys::path::remove_leading_dotslash(dir.rtrim("/")))
          .str();
  for (char &c : name)
    if (!isAlnum(c) && c != '_' && c != '-' && c != '.')
      c = '_';
  return name.empty() || name == "." ? std::string("model") : name;
}

} // namespace

StringRef supportedHuggingFaceModelTypes() {
  return "bert, gpt2, llama, mamba, mistral, mixtral";
}

bool readCheckpointTensorNames(StringRef dir, StringSet<> &names,
                               std::string &weightsFile, std::string &error) {
  auto absolute = [&](StringRef name) {
    SmallString<256> path(dir);
    sys::fs::make_absolute(path);
    sys::path::append(path, name);
    sys::path::remove_dots(path, /*remove_dot_dot=*/true);
    return path.str().str();
  };
  weightsFile = absolute("model.safetensors");
  std::string index = absolute("model.safetensors.index.json");
  if (!sys::fs::exists(weightsFile) && sys::fs::exists(index)) {
    weightsFile = index;
    ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(index);
    if (!file) {
      error = "cannot read it: " + file.getError().message();
      return false;
    }
    StringRef text = (*file)->getBuffer();
    Expected<json::Value> root = parseShallowJson(text);
    const json::Object *map = nullptr;
    if (root)
      if (const json::Object *object = root->getAsObject())
        map = object->getObject("weight_map");
    if (!map) {
      error = root ? std::string("no \"weight_map\" object (a safetensors "
                                 "index maps each tensor to its shard)")
                   : "invalid JSON: " + toString(root.takeError());
      return false;
    }
    for (const auto &kv : *map)
      names.insert(kv.first.str());
    return true;
  }
  if (!sys::fs::exists(weightsFile))
    return true;
  // The header: its length (8 bytes, little-endian), then JSON.
  ErrorOr<std::unique_ptr<MemoryBuffer>> file =
      MemoryBuffer::getFileSlice(weightsFile, 8, 0, /*IsVolatile=*/false);
  uint64_t length = 0;
  if (file && (*file)->getBufferSize() == 8)
    for (int i = 7; i >= 0; --i)
      length = length << 8 | uint8_t((*file)->getBufferStart()[i]);
  uint64_t size = 0;
  sys::fs::file_size(weightsFile, size);
  // safetensors' own limit on the header (100 MB).
  if (!file || length == 0 || length > 100'000'000 || length + 8 > size) {
    error = "not a safetensors file (its header length does not fit the "
            "file)";
    return false;
  }
  file = MemoryBuffer::getFileSlice(weightsFile, length, 8,
                                    /*IsVolatile=*/false);
  StringRef text = file ? (*file)->getBuffer() : StringRef();
  Expected<json::Value> root = parseShallowJson(text);
  const json::Object *object = root ? root->getAsObject() : nullptr;
  if (!object) {
    error = "its header is not a JSON object" +
            (root ? std::string() : ": " + toString(root.takeError()));
    return false;
  }
  for (const auto &kv : *object)
    if (kv.first != "__metadata__")
      names.insert(kv.first.str());
  return true;
}

std::optional<HuggingFaceCheckpoint>
readHuggingFaceFolder(StringRef dir, std::string &configPath,
                      std::vector<ConfigDiagnostic> &diags) {
  SmallString<256> path(dir);
  sys::path::append(path, "config.json");
  configPath = path.str().str();
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file) {
    diags.push_back({ConfigDiagnostic::Kind::Error, 1, 1,
                     formatv("cannot read it: {0} (a Hugging Face folder "
                             "holds config.json and model.safetensors)",
                             file.getError().message())
                         .str()});
    return std::nullopt;
  }
  StringSet<> names;
  std::string weightsFile, error;
  if (!readCheckpointTensorNames(dir, names, weightsFile, error)) {
    configPath = weightsFile;
    diags.push_back({ConfigDiagnostic::Kind::Error, 1, 1, error});
    return std::nullopt;
  }
  std::optional<HuggingFaceCheckpoint> ckpt =
      mapHuggingFaceConfig((*file)->getBuffer(), dir, diags, names);
  if (ckpt)
    ckpt->weightsFile = weightsFile;
  return ckpt;
}

std::optional<HuggingFaceCheckpoint>
mapHuggingFaceConfig(StringRef text, StringRef dir,
                     std::vector<ConfigDiagnostic> &diags,
                     const StringSet<> &tensorNames) {
  // llvm::json parses recursively: deep nesting would overflow the stack.
  if (size_t deep = findDeepJsonNesting(text, 64); deep != StringRef::npos) {
    auto [line, column] = jsonPositionOf(text, deep);
    diags.push_back({ConfigDiagnostic::Kind::Error, line, column,
                     "JSON nested deeper than 64 levels"});
    return std::nullopt;
  }
  Expected<json::Value> root = json::parse(text);
  if (!root) {
    diags.push_back({ConfigDiagnostic::Kind::Error, 1, 1,
                     "invalid JSON: " + toString(root.takeError())});
    return std::nullopt;
  }
  const json::Object *object = root->getAsObject();
  if (!object) {
    diags.push_back(
        {ConfigDiagnostic::Kind::Error, 1, 1, "config.json is not an object"});
    return std::nullopt;
  }
  ConfigJson config(*object, jsonValuePositions(text), diags);
  HuggingFaceCheckpoint ckpt;
  std::optional<StringRef> type = config.string("model_type");
  if (!type) {
    if (!config.failed)
      config.error("model_type",
                   formatv("config.json has no 'model_type' (supported: {0})",
                           supportedHuggingFaceModelTypes()));
    return std::nullopt;
  }
  ckpt.modelType = type->str();
  json::Object desc;
  desc["name"] = modelName(dir);
  bool mapped = false;
  if (*type == "llama" || *type == "mistral" || *type == "mixtral") {
    LlamaFamily family = *type == "llama"     ? LlamaFamily::Llama
                         : *type == "mistral" ? LlamaFamily::Mistral
                                              : LlamaFamily::Mixtral;
    mapped = mapLlama(config, family, desc, ckpt);
  } else if (*type == "mamba") {
    mapped = mapMamba(config, desc, ckpt);
  } else if (*type == "gpt2") {
    bool bare = tensorNames.contains("wte.weight") &&
                !tensorNames.contains("transformer.wte.weight");
    mapped = mapGpt2(config, desc, ckpt, bare ? "" : "transformer.");
  } else if (*type == "bert") {
    bool headed =
        tensorNames.contains("bert.embeddings.word_embeddings.weight");
    mapped = mapBert(config, desc, ckpt, headed ? "bert." : "");
  } else {
    config.error("model_type",
                 formatv("model_type '{0}' is not supported (supported: {1})",
                         *type, supportedHuggingFaceModelTypes()));
    return std::nullopt;
  }
  if (!mapped || config.failed)
    return std::nullopt;
  for (const char *key : kCommonKeys)
    config.get(key);
  ckpt.ignoredKeys = config.unread();

  raw_string_ostream os(ckpt.description);
  os << formatv("{0:2}", json::Value(std::move(desc))) << "\n";

  SmallString<256> weights(dir);
  sys::fs::make_absolute(weights);
  sys::path::append(weights, "model.safetensors");
  sys::path::remove_dots(weights, /*remove_dot_dot=*/true);
  ckpt.weightsFile = weights.str().str();
  return ckpt;
}

mlir::LogicalResult applyCheckpointLayout(mlir::ModuleOp module,
                                          const HuggingFaceCheckpoint &ckpt,
                                          std::string &error) {
  mlir::Builder b(module.getContext());
  for (mlir::tfm::ParamOp param : module.getOps<mlir::tfm::ParamOp>()) {
    auto it = ckpt.weights.find(param.getSymName());
    if (it == ckpt.weights.end()) {
      error =
          ("internal error: the " + ckpt.modelType +
           " mapping has no source for parameter '" + param.getSymName() + "'")
              .str();
      return mlir::failure();
    }
    SmallVector<StringRef> names(it->second.tensors.begin(),
                                 it->second.tensors.end());
    param.setSourcesAttr(b.getStrArrayAttr(names));
    if (it->second.transposed)
      param.setTransposed(true);
  }
  // Inputs under Hugging Face's names: the ids and their padding mask.
  for (auto func : module.getOps<mlir::func::FuncOp>())
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto name = func.getArgAttrOfType<mlir::StringAttr>(i, "tfm.input");
      if (name && name.getValue() == "input")
        func.setArgAttr(i, "tfm.input", b.getStringAttr("input_ids"));
      if (name && name.getValue() == "mask" &&
          func.getArgAttr(i, "tfm.mask_of"))
        func.setArgAttr(i, "tfm.input", b.getStringAttr("attention_mask"));
    }
  module->setAttr("tfm.weights_file", b.getStringAttr(ckpt.weightsFile));
  SmallVector<StringRef> ignored(ckpt.ignoredTensors.begin(),
                                 ckpt.ignoredTensors.end());
  if (!ignored.empty())
    module->setAttr("tfm.ignored_tensors", b.getStrArrayAttr(ignored));
  return mlir::success();
}

} // namespace tfm
