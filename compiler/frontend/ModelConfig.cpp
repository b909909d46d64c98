//===- ModelConfig.cpp - model description JSON -> ModelConfig ------------===//
//
// llvm::json parses the text; it keeps no source positions, so a small scan
// of the (already valid) top-level object records where each key and value
// starts, and every diagnostic points there.
//
//===----------------------------------------------------------------------===//

#include "tfm/Frontend/ModelConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <cmath>

using namespace llvm;
using namespace mlir::tfm;

namespace tfm {

namespace {

constexpr int64_t kMaxDim = int64_t(1) << 24;
constexpr int64_t kMaxLayers = kMaxModelLayers;
/// Experts of an MoE FFN (DeepSeek-V3 has 256).
/// llvm::json parses, prints and destroys values recursively: deep enough
/// nesting ([[[[...) overflows the stack. A description needs one level.
constexpr unsigned kMaxJsonDepth = 64;

/// Every key of contract section 2, in the order the docs list them.
const char *const kKnownKeys[] = {"name",
                                  "architecture",
                                  "d_model",
                                  "num_heads",
                                  "d_ff",
                                  "num_layers",
                                  "num_encoder_layers",
                                  "num_decoder_layers",
                                  "vocab_size",
                                  "max_seq_len",
                                  "positional",
                                  "rope_style",
                                  "rope_base",
                                  "embedding_scale",
                                  "norm",
                                  "norm_type",
                                  "norm_eps",
                                  "final_norm",
                                  "activation",
                                  "attention_score",
                                  "additive_dim",
                                  "causal",
                                  "lm_head",
                                  "tie_embeddings",
                                  "ffn_gated",
                                  "num_kv_heads",
                                  "bias",
                                  "attention",
                                  "type_vocab_size",
                                  "embedding_norm",
                                  "ffn",
                                  "layers",
                                  "mamba"};

/// A kind of a `{"kind": ..., ...}` key (`attention`, `ffn`: contract
/// section 7) and the keys it takes besides `kind`.
struct KindKeys {
  const char *kind;
  std::vector<const char *> keys;
  bool supported;
};
const KindKeys kAttentionKinds[] = {
    {"full", {}, true},
    {"sliding_window", {"window", "global_tokens"}, true},
    {"block_sparse",
     {"block", "window_blocks", "global_blocks", "random_blocks"},
     true},
    {"linformer", {"k"}, true},
    {"performer", {"features"}, true},
};
const KindKeys kFfnKinds[] = {
    {"dense", {}, true},
    {"moe", {"experts", "top_k"}, true},
};
/// A `layers` entry's kinds.
const KindKeys kLayerKinds[] = {
    {"attention", {"attention", "ffn"}, true},
    {"mamba", {}, true},
};
/// The keys of `mamba`, each a positive integer (dt_rank also "auto").
const StringRef kMambaKeys[] = {"d_state", "d_conv", "expand", "dt_rank"};
constexpr StringRef kAttentionExample =
    "{\"kind\": \"sliding_window\", \"window\": 256}";
constexpr StringRef kFfnExample =
    "{\"kind\": \"moe\", \"experts\": 8, \"top_k\": 2}";

struct Position {
  unsigned line = 1, column = 1;
};

Position positionOf(StringRef text, size_t offset) {
  offset = std::min(offset, text.size());
  StringRef before = text.take_front(offset);
  Position pos;
  pos.line = 1 + before.count('\n');
  size_t lineStart = before.rfind('\n');
  pos.column =
      1 + (lineStart == StringRef::npos ? offset : offset - lineStart - 1);
  return pos;
}

struct KeyLocation {
  std::string key;
  size_t keyOffset, valueOffset;
};

/// Skips a JSON string starting at text[i] == '"'; returns the index after
/// the closing quote.
size_t skipString(StringRef text, size_t i) {
  for (++i; i < text.size(); ++i) {
    if (text[i] == '\\')
      ++i;
    else if (text[i] == '"')
      return i + 1;
  }
  return text.size();
}

/// The offset of the first '[' or '{' (outside strings) nested deeper than
/// `maxDepth`, or npos.
size_t findDeepNesting(StringRef text, unsigned maxDepth) {
  unsigned depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      i = skipString(text, i) - 1;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return StringRef::npos;
}

/// Lists the keys of the first object or array of `text` from offset
/// `begin` (the top-level one from 0; a nested object from its '{'), which
/// json::parse has already accepted, with where each key and its value
/// start.
std::vector<KeyLocation> scanObjectKeys(StringRef text, size_t begin,
                                        size_t &objectOffset) {
  std::vector<KeyLocation> keys;
  int depth = 0;
  bool expectKey = false;
  objectOffset = begin;
  for (size_t i = begin; i < text.size();) {
    char c = text[i];
    if (c == '"') {
      size_t end = skipString(text, i);
      if (depth == 1 && expectKey) {
        // Decode the key with the same JSON parser (escapes included).
        std::string key;
        if (Expected<json::Value> v = json::parse(text.slice(i, end)))
          key = v->getAsString().value_or("").str();
        else
          consumeError(v.takeError());
        size_t colon = text.find(':', end);
        size_t value = text.find_first_not_of(" \t\r\n", colon + 1);
        keys.push_back({key, i, value});
        expectKey = false;
      }
      i = end;
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == 0)
        objectOffset = i;
      ++depth;
      expectKey = depth == 1 && c == '{';
    } else if (c == '}' || c == ']') {
      if (--depth == 0)
        break;
    } else if (c == ',' && depth == 1) {
      expectKey = true;
    }
    ++i;
  }
  return keys;
}

std::vector<KeyLocation> scanTopLevelKeys(StringRef text,
                                          size_t &objectOffset) {
  return scanObjectKeys(text, 0, objectOffset);
}

/// Where each element of the array that starts at text[begin] == '['
/// (accepted by json::parse) starts.
std::vector<size_t> scanArrayElements(StringRef text, size_t begin) {
  std::vector<size_t> elements;
  int depth = 0;
  auto next = [&](size_t from) {
    size_t at = text.find_first_not_of(" \t\r\n", from);
    if (at != StringRef::npos && text[at] != ']')
      elements.push_back(at);
  };
  for (size_t i = begin; i < text.size();) {
    char c = text[i];
    if (c == '"') {
      i = skipString(text, i);
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth == 1)
        next(i + 1);
    } else if (c == '}' || c == ']') {
      if (--depth == 0)
        break;
    } else if (c == ',' && depth == 1) {
      next(i + 1);
    }
    ++i;
  }
  return elements;
}

/// Hugging Face config.json names of keys the description spells its own
/// way: a user who writes one is pointed at ours.
const std::pair<const char *, const char *> kHuggingFaceNames[] = {
    {"hidden_size", "d_model"},
    {"num_attention_heads", "num_heads"},
    {"num_key_value_heads", "num_kv_heads"},
    {"intermediate_size", "d_ff"},
    {"num_hidden_layers", "num_layers"},
    {"max_position_embeddings", "max_seq_len"},
    {"hidden_act", "activation"},
    {"rms_norm_eps", "norm_eps"},
    {"layer_norm_eps", "norm_eps"},
    {"layer_norm_epsilon", "norm_eps"},
    {"rope_theta", "rope_base"},
    {"tie_word_embeddings", "tie_embeddings"},
};

/// The closest known key to `key`, if it is close enough to be a typo (or
/// Hugging Face's name for it).
std::optional<StringRef> closestKey(StringRef key) {
  for (auto [hfName, ours] : kHuggingFaceNames)
    if (key == hfName)
      return StringRef(ours);
  std::optional<StringRef> best;
  unsigned bestDistance = std::max<unsigned>(2, key.size() / 3) + 1;
  for (StringRef known : kKnownKeys) {
    unsigned d =
        key.edit_distance(known, /*AllowReplacements=*/true, bestDistance);
    if (d < bestDistance) {
      bestDistance = d;
      best = known;
    }
  }
  return best;
}

std::string describe(const json::Value &v) {
  std::string s;
  raw_string_ostream os(s);
  os << v;
  if (s.size() > 40)
    s = s.substr(0, 37) + "...";
  return s;
}

/// Reads the validated top-level object into a ModelConfig, collecting
/// diagnostics.
class ConfigReader {
public:
  ConfigReader(StringRef text, const json::Object &object,
               std::vector<KeyLocation> keys, Position objectPos,
               std::vector<ConfigDiagnostic> &diags)
      : text(text), object(object), keys(std::move(keys)), objectPos(objectPos),
        diags(diags) {}

  std::optional<ModelConfig> read(StringRef path);

private:
  /// Where `key`'s value starts; for a duplicated key, the last one, which
  /// is the value llvm::json keeps.
  Position valuePos(StringRef key) const {
    for (const KeyLocation &k : llvm::reverse(keys))
      if (k.key == key)
        return positionOf(text, k.valueOffset);
    return objectPos;
  }
  void error(Position pos, const Twine &message) {
    diags.push_back(
        {ConfigDiagnostic::Kind::Error, pos.line, pos.column, message.str()});
    failed = true;
  }
  void error(StringRef key, const Twine &message) {
    error(valuePos(key), message);
  }
  void warning(StringRef key, const Twine &message) {
    Position pos = valuePos(key);
    diags.push_back(
        {ConfigDiagnostic::Kind::Warning, pos.line, pos.column, message.str()});
  }
  bool has(StringRef key) const { return object.get(key) != nullptr; }
  /// A required key is absent: an error, unless a misspelt key already
  /// reported "did you mean" it.
  void missing(StringRef key) {
    if (!suggested.contains(key))
      error(objectPos, formatv("missing required key '{0}'", key));
    else
      failed = true;
  }

  void checkKeys();
  /// A `{"kind": ..., ...}` value: its kind and where its keys are.
  struct KindObject {
    StringRef key, kind;
    const json::Object *object = nullptr;
    std::vector<KeyLocation> inner;
    size_t objectOffset = 0;
    StringRef text;
    /// Where `name`'s key (or value) starts, or the object when absent.
    Position keyPos(StringRef name, bool value) const {
      for (const KeyLocation &k : llvm::reverse(inner))
        if (k.key == name)
          return positionOf(text, value ? k.valueOffset : k.keyOffset);
      return positionOf(text, objectOffset);
    }
  };
  /// Reads top-level `key`, an object whose `kind` is one of `kinds`, and
  /// checks its keys against the kind's (errors at each); nullopt when
  /// absent or in error. `example` shows a valid value.
  std::optional<KindObject>
  readKindObject(StringRef key, ArrayRef<KindKeys> kinds, StringRef example);
  /// The same for value `v` (called `name` in messages), which starts at
  /// `offset` in the text.
  std::optional<KindObject> readKindValue(StringRef name, const json::Value &v,
                                          size_t offset,
                                          ArrayRef<KindKeys> kinds,
                                          StringRef example);
  /// `key` of `kind`'s object: an integer from `min` (what the value
  /// counts, `meaning`, says why) to kMaxDim.
  std::optional<int64_t> readKindCount(const KindObject &kind, StringRef key,
                                       bool required, int64_t min,
                                       StringRef meaning);
  /// Reads an `attention` object into `k` (its kind and the kind's keys).
  void readAttention(const KindObject &kind, LayerKinds &k);
  /// Reads an `ffn` object into `k`.
  void readFeedForward(const KindObject &kind, LayerKinds &k);
  /// Reads `layers` into c.decoderLayerKinds (once the architecture and
  /// the layer counts are known).
  void readLayers(ModelConfig &c);
  /// Whether `layers` is a list whose every entry is a mamba layer (a stack
  /// that needs no num_heads or d_ff).
  bool onlyMambaLayers() const;
  /// Reads `mamba` into c.mamba when some layer is a mamba layer (an error
  /// when none is).
  void readMamba(ModelConfig &c);
  /// Checks that `k`'s attention kind suits the model's causality and score;
  /// `at` is where its `attention` value starts.
  void checkAttention(const ModelConfig &c, const LayerKinds &k, Position at,
                      bool causalGiven);
  /// Where top-level `key`'s value starts in the text (the last one given),
  /// or 0.
  size_t valueOffset(StringRef key) const {
    for (const KeyLocation &k : llvm::reverse(keys))
      if (k.key == key)
        return k.valueOffset;
    return 0;
  }
  std::optional<int64_t> readInt(StringRef key, bool required, int64_t max);
  std::optional<double> readPositiveFloat(StringRef key);
  std::optional<bool> readBool(StringRef key);
  std::optional<std::string> readString(StringRef key, bool required);
  /// Reads a string that must be one of `choices`; returns its index.
  std::optional<size_t> readChoice(StringRef key, ArrayRef<StringRef> choices,
                                   bool required);

  StringRef text;
  const json::Object &object;
  std::vector<KeyLocation> keys;
  Position objectPos;
  std::vector<ConfigDiagnostic> &diags;
  llvm::StringSet<> suggested;
  bool failed = false;
};

void ConfigReader::checkKeys() {
  for (auto [i, k] : llvm::enumerate(keys)) {
    Position keyPos = positionOf(text, k.keyOffset);
    for (size_t j = 0; j < i; ++j) {
      if (keys[j].key != k.key)
        continue;
      Position first = positionOf(text, keys[j].keyOffset);
      error(keyPos, formatv("duplicate key '{0}' (first given at {1}:{2})",
                            k.key, first.line, first.column));
      break;
    }
    if (llvm::is_contained(kKnownKeys, StringRef(k.key)))
      continue;
    std::string message = formatv("unknown key '{0}'", k.key).str();
    if (std::optional<StringRef> near = closestKey(k.key)) {
      message += formatv("; did you mean '{0}'?", *near).str();
      suggested.insert(*near);
    }
    error(keyPos, message);
  }
}

std::optional<ConfigReader::KindObject>
ConfigReader::readKindObject(StringRef key, ArrayRef<KindKeys> kinds,
                             StringRef example) {
  const json::Value *v = object.get(key);
  if (!v)
    return std::nullopt;
  return readKindValue(key, *v, valueOffset(key), kinds, example);
}

std::optional<ConfigReader::KindObject>
ConfigReader::readKindValue(StringRef key, const json::Value &v, size_t offset,
                            ArrayRef<KindKeys> kinds, StringRef example) {
  const json::Object *kindObject = v.getAsObject();
  std::vector<std::string> kindNames;
  for (const KindKeys &k : kinds)
    kindNames.push_back(k.kind);
  if (!kindObject) {
    error(positionOf(text, offset),
          formatv("'{0}' must be an object such as {1}, got {2}", key, example,
                  describe(v)));
    return std::nullopt;
  }
  KindObject result;
  result.key = key;
  result.object = kindObject;
  result.text = text;
  // Where each key of the object and its value start.
  result.inner = scanObjectKeys(text, offset, result.objectOffset);

  const KindKeys *kind = nullptr;
  const json::Value *kindValue = kindObject->get("kind");
  std::optional<StringRef> kindName =
      kindValue ? kindValue->getAsString() : std::nullopt;
  if (!kindValue) {
    error(positionOf(text, result.objectOffset),
          formatv("'{0}' needs a 'kind': one of {1}", key,
                  llvm::join(kindNames, ", ")));
  } else {
    for (const KindKeys &k : kinds)
      if (kindName && *kindName == k.kind)
        kind = &k;
    if (!kind)
      error(result.keyPos("kind", true),
            formatv("'{0}' kind must be one of {1}; got {2}", key,
                    llvm::join(kindNames, ", "), describe(*kindValue)));
  }
  // Every key: known, given once, and one of its kind's.
  for (auto [i, k] : llvm::enumerate(result.inner)) {
    Position at = positionOf(text, k.keyOffset);
    bool duplicate = false;
    for (size_t j = 0; j < i && !duplicate; ++j)
      duplicate = result.inner[j].key == k.key;
    if (duplicate) {
      error(at, formatv("duplicate key '{0}' in '{1}'", k.key, key));
      continue;
    }
    if (k.key == "kind")
      continue;
    const KindKeys *owner = nullptr;
    for (const KindKeys &candidate : kinds)
      if (llvm::is_contained(candidate.keys, StringRef(k.key)))
        owner = &candidate;
    if (!owner && kind && StringRef(kind->kind) == "mamba" &&
        llvm::is_contained(kMambaKeys, StringRef(k.key)))
      error(at, formatv("unknown key '{0}' in '{1}' (every mamba layer has "
                        "the sizes of the model-level 'mamba' key)",
                        k.key, key));
    else if (!owner)
      error(at, formatv("unknown key '{0}' in '{1}'{2}", k.key, key,
                        kind && !kind->keys.empty()
                            ? formatv(" (kind '{0}' takes {1})", kind->kind,
                                      llvm::join(kind->keys, ", "))
                                  .str()
                            : std::string()));
    else if (kind && owner != kind)
      error(at, formatv("'{0}' is a key of {1} kind '{2}', not of '{3}'", k.key,
                        key, owner->kind, kind->kind));
  }
  if (!kind)
    return std::nullopt;
  if (!kind->supported) {
    std::vector<std::string> supported;
    for (const KindKeys &k : kinds)
      if (k.supported)
        supported.push_back(k.kind);
    error(result.keyPos("kind", true),
          formatv("{0} kind '{1}' is not supported yet; supported: {2}", key,
                  kind->kind, llvm::join(supported, ", ")));
    return std::nullopt;
  }
  result.kind = kind->kind;
  return result;
}

std::optional<int64_t> ConfigReader::readKindCount(const KindObject &kind,
                                                   StringRef key, bool required,
                                                   int64_t min,
                                                   StringRef meaning) {
  const json::Value *value = kind.object->get(key);
  if (!value) {
    if (required)
      error(positionOf(text, kind.objectOffset),
            formatv("{0} kind '{1}' needs '{2}'", kind.key, kind.kind, key));
    return std::nullopt;
  }
  std::optional<int64_t> n = value->getAsInteger();
  if (!n || *n < 0 || *n > kMaxDim) {
    error(kind.keyPos(key, true),
          formatv("'{0}' must be an integer from 0 to {1}, got {2}", key,
                  kMaxDim, describe(*value)));
    return std::nullopt;
  }
  if (*n < min) {
    error(kind.keyPos(key, true),
          formatv("'{0}' must be at least {1} ({2}), got {3}", key, min,
                  meaning, *n));
    return std::nullopt;
  }
  return n;
}

void ConfigReader::readAttention(const KindObject &kind, LayerKinds &k) {
  auto count = [&](StringRef key, bool required, int64_t min = 0,
                   StringRef meaning = "") {
    return readKindCount(kind, key, required, min, meaning);
  };
  if (kind.kind == "sliding_window") {
    k.window = count("window", true);
    k.globalTokens = count("global_tokens", false).value_or(0);
  }
  if (kind.kind == "block_sparse") {
    k.block = count("block", true, 1, "the positions of a block");
    k.windowBlocks = count("window_blocks", false).value_or(1);
    k.globalBlocks = count("global_blocks", false).value_or(1);
    k.randomBlocks = count("random_blocks", false).value_or(0);
  }
  if (kind.kind == "linformer")
    k.linformerK = count("k", true, 1,
                         "the rows linformer projects the keys and values to");
  if (kind.kind == "performer")
    k.performerFeatures =
        count("features", true, 1,
              "the random features performer maps each query and key to");
}

void ConfigReader::readFeedForward(const KindObject &kind, LayerKinds &k) {
  if (kind.kind != "moe")
    return;
  std::optional<int64_t> experts =
      readKindCount(kind, "experts", true, 1, "the FFNs a token is routed to");
  std::optional<int64_t> topK = readKindCount(
      kind, "top_k", true, 1, "the experts each token is routed to");
  if (!experts || !topK)
    return;
  if (*topK > *experts) {
    error(kind.keyPos("top_k", true),
          formatv("'top_k' {0} is more than 'experts' {1}: each token picks "
                  "top_k distinct experts",
                  *topK, *experts));
    return;
  }
  if (*experts > kMaxExperts) {
    error(kind.keyPos("experts", true),
          formatv("'experts' is {0}, above the supported maximum {1}", *experts,
                  kMaxExperts));
    return;
  }
  k.experts = MixtureOfExperts{*experts, *topK};
}

/// The kinds of a mamba layer.
LayerKinds mambaLayer() {
  LayerKinds k;
  k.mamba = true;
  return k;
}

void ConfigReader::readLayers(ModelConfig &c) {
  const json::Value *v = object.get("layers");
  if (!v)
    return;
  if (c.architecture != Architecture::Decoder) {
    error("layers", formatv("'layers' applies to architecture 'decoder' "
                            "only, not '{0}'",
                            stringifyArchitecture(c.architecture)));
    return;
  }
  const json::Array *entries = v->getAsArray();
  if (!entries) {
    error("layers",
          formatv("'layers' must be a list of 'num_layers' entries such as "
                  "[\"attention\", {{\"kind\": \"attention\", \"ffn\": "
                  "{0}}], got {1}",
                  kFfnExample, describe(*v)));
    return;
  }
  if (int64_t(entries->size()) != c.numDecoderLayers) {
    error("layers",
          formatv("'layers' has {0} {1}, but 'num_layers' is {2}",
                  entries->size(), entries->size() == 1 ? "entry" : "entries",
                  c.numDecoderLayers));
    return;
  }
  std::vector<size_t> offsets = scanArrayElements(text, valueOffset("layers"));
  std::vector<LayerKinds> layers;
  for (auto [i, entry] : llvm::enumerate(*entries)) {
    size_t offset = i < offsets.size() ? offsets[i] : valueOffset("layers");
    Position at = positionOf(text, offset);
    std::string name = formatv("layers[{0}]", i).str();
    // The model's kinds unless the entry gives its own.
    LayerKinds &k = layers.emplace_back(c.kinds);
    if (std::optional<StringRef> kind = entry.getAsString()) {
      if (*kind == "mamba")
        k = mambaLayer();
      else if (*kind != "attention")
        error(at, formatv("'{0}' kind must be one of attention, mamba; got {1}",
                          name, describe(entry)));
      continue;
    }
    if (!entry.getAsObject()) {
      error(at, formatv("'{0}' must be \"attention\", \"mamba\" or an object "
                        "such as {{\"kind\": \"attention\", \"attention\": "
                        "{1}}, got {2}",
                        name, kAttentionExample, describe(entry)));
      continue;
    }
    std::optional<KindObject> layer =
        readKindValue(name, entry, offset, kLayerKinds, "");
    if (!layer)
      continue;
    if (layer->kind == "mamba") {
      k = mambaLayer();
      continue;
    }
    // A layer's own `attention` and `ffn` replace the model's.
    auto valueOf = [&](StringRef key) -> size_t {
      for (const KeyLocation &kl : llvm::reverse(layer->inner))
        if (kl.key == key)
          return kl.valueOffset;
      return offset;
    };
    if (const json::Value *a = layer->object->get("attention")) {
      if (std::optional<KindObject> kind =
              readKindValue("attention", *a, valueOf("attention"),
                            kAttentionKinds, kAttentionExample)) {
        LayerKinds own;
        readAttention(*kind, own);
        own.experts = k.experts;
        k = own;
        checkAttention(c, k, positionOf(text, valueOf("attention")),
                       object.get("causal") != nullptr);
      }
    }
    if (const json::Value *f = layer->object->get("ffn")) {
      if (std::optional<KindObject> kind = readKindValue(
              "ffn", *f, valueOf("ffn"), kFfnKinds, kFfnExample)) {
        k.experts.reset();
        readFeedForward(*kind, k);
      }
    }
  }
  c.decoderLayerKinds = std::move(layers);
}

bool ConfigReader::onlyMambaLayers() const {
  const json::Value *v = object.get("layers");
  const json::Array *entries = v ? v->getAsArray() : nullptr;
  if (!entries || entries->empty())
    return false;
  return llvm::all_of(*entries, [](const json::Value &entry) {
    if (std::optional<StringRef> kind = entry.getAsString())
      return *kind == "mamba";
    const json::Object *o = entry.getAsObject();
    const json::Value *kind = o ? o->get("kind") : nullptr;
    return kind && kind->getAsString() == std::optional<StringRef>("mamba");
  });
}

void ConfigReader::readMamba(ModelConfig &c) {
  bool used = llvm::any_of(c.decoderLayerKinds,
                           [](const LayerKinds &k) { return k.mamba; });
  const json::Value *v = object.get("mamba");
  if (!v) {
    if (used)
      c.mamba = MambaSizes{};
  } else if (!used) {
    // A `layers` in error says nothing of its mamba layers.
    if (failed)
      return;
    error("mamba", "'mamba' sizes the mixers of mamba layers, but no "
                   "'layers' entry is \"mamba\"");
    return;
  } else if (!v->getAsObject()) {
    error("mamba", formatv("'mamba' must be an object such as {{\"d_state\": "
                           "16, \"d_conv\": 4, \"expand\": 2, \"dt_rank\": "
                           "\"auto\"}, got {0}",
                           describe(*v)));
    return;
  }
  if (!used)
    return;
  MambaSizes sizes;
  bool autoRank = true;
  if (v) {
    const json::Object &o = *v->getAsObject();
    size_t objectOffset = 0;
    std::vector<KeyLocation> inner =
        scanObjectKeys(text, valueOffset("mamba"), objectOffset);
    auto at = [&](StringRef key, bool value) {
      for (const KeyLocation &k : llvm::reverse(inner))
        if (k.key == key)
          return positionOf(text, value ? k.valueOffset : k.keyOffset);
      return positionOf(text, objectOffset);
    };
    for (auto [i, k] : llvm::enumerate(inner)) {
      bool duplicate = false;
      for (size_t j = 0; j < i && !duplicate; ++j)
        duplicate = inner[j].key == k.key;
      if (duplicate)
        error(positionOf(text, k.keyOffset),
              formatv("duplicate key '{0}' in 'mamba'", k.key));
      else if (!llvm::is_contained(kMambaKeys, StringRef(k.key)))
        error(positionOf(text, k.keyOffset),
              formatv("unknown key '{0}' in 'mamba' (it takes {1})", k.key,
                      llvm::join(ArrayRef<StringRef>(kMambaKeys), ", ")));
    }
    auto count = [&](StringRef key, StringRef meaning, int64_t &into) -> bool {
      const json::Value *value = o.get(key);
      if (!value)
        return false;
      std::optional<int64_t> n = value->getAsInteger();
      if (!n || *n < 1 || *n > kMaxDim) {
        error(at(key, true),
              formatv("'mamba' '{0}' ({1}) must be an integer from 1 to {2}, "
                      "got {3}",
                      key, meaning, kMaxDim, describe(*value)));
        return false;
      }
      into = *n;
      return true;
    };
    count("d_state", "the scan's state size per channel", sizes.stateSize);
    count("d_conv", "the causal conv's kernel width", sizes.convWidth);
    count("expand", "d_inner = expand x d_model", sizes.expand);
    if (const json::Value *rank = o.get("dt_rank")) {
      if (rank->getAsString() == std::optional<StringRef>("auto"))
        autoRank = true;
      else if (rank->getAsInteger())
        autoRank = !count("dt_rank", "the rank of the step-size projection",
                          sizes.dtRank);
      else {
        error(at("dt_rank", true),
              formatv("'mamba' 'dt_rank' must be a positive integer or "
                      "\"auto\" (ceil(d_model / 16)), got {0}",
                      describe(*rank)));
        autoRank = false;
      }
    }
    if (sizes.expand * c.dModel > kMaxDim)
      error(at("expand", true),
            formatv("'mamba' d_inner = expand {0} x d_model {1} is above the "
                    "supported maximum {2}",
                    sizes.expand, c.dModel, kMaxDim));
  }
  if (autoRank)
    sizes.dtRank = (c.dModel + 15) / 16;
  c.mamba = sizes;
}

void ConfigReader::checkAttention(const ModelConfig &c, const LayerKinds &k,
                                  Position at, bool causalGiven) {
  if (k.linformerK && c.causal)
    error(at,
          formatv("attention kind 'linformer' is never causal, but this "
                  "{0} is causal{1}: linformer's projection mixes every "
                  "position into each key",
                  stringifyArchitecture(c.architecture),
                  causalGiven ? "" : " by default (set \"causal\": false)"));
}

std::optional<int64_t> ConfigReader::readInt(StringRef key, bool required,
                                             int64_t max) {
  const json::Value *v = object.get(key);
  if (!v) {
    if (required)
      missing(key);
    return std::nullopt;
  }
  std::optional<int64_t> n = v->getAsInteger();
  std::optional<double> x = v->getAsNumber();
  if (!n && x && *x > static_cast<double>(max) && std::floor(*x) == *x) {
    // Integral but past int64 (or written as 1e20): too big, not malformed.
    error(key, formatv("'{0}' is {1}, above the supported maximum {2}", key,
                       describe(*v), max));
    return std::nullopt;
  }
  if (!n || *n <= 0) {
    error(key, formatv("'{0}' must be a positive integer, got {1}", key,
                       describe(*v)));
    return std::nullopt;
  }
  if (*n > max) {
    error(key, formatv("'{0}' is {1}, above the supported maximum {2}", key, *n,
                       max));
    return std::nullopt;
  }
  return n;
}

std::optional<double> ConfigReader::readPositiveFloat(StringRef key) {
  const json::Value *v = object.get(key);
  if (!v)
    return std::nullopt;
  std::optional<double> x = v->getAsNumber();
  // The IR holds f32: the value must stay positive and finite as a float.
  if (!x || !std::isfinite(*x) || *x <= 0) {
    error(key, formatv("'{0}' must be a positive number, got {1}", key,
                       describe(*v)));
    return std::nullopt;
  }
  float f = static_cast<float>(*x);
  if (!std::isfinite(f) || !(f > 0.0f)) {
    error(key, formatv("'{0}' is {1}, outside the range of a 32-bit float", key,
                       describe(*v)));
    return std::nullopt;
  }
  return x;
}

std::optional<bool> ConfigReader::readBool(StringRef key) {
  const json::Value *v = object.get(key);
  if (!v)
    return std::nullopt;
  std::optional<bool> b = v->getAsBoolean();
  if (!b)
    error(key,
          formatv("'{0}' must be true or false, got {1}", key, describe(*v)));
  return b;
}

std::optional<std::string> ConfigReader::readString(StringRef key,
                                                    bool required) {
  const json::Value *v = object.get(key);
  if (!v) {
    if (required)
      missing(key);
    return std::nullopt;
  }
  std::optional<StringRef> s = v->getAsString();
  if (!s) {
    error(key, formatv("'{0}' must be a string, got {1}", key, describe(*v)));
    return std::nullopt;
  }
  return s->str();
}

std::optional<size_t> ConfigReader::readChoice(StringRef key,
                                               ArrayRef<StringRef> choices,
                                               bool required) {
  std::optional<std::string> s = readString(key, required);
  if (!s)
    return std::nullopt;
  for (auto [i, choice] : llvm::enumerate(choices))
    if (*s == choice)
      return i;
  error(key, formatv("'{0}' must be one of {1}; got {2}", key,
                     llvm::join(choices, ", "), describe(*object.get(key))));
  return std::nullopt;
}

std::optional<ModelConfig> ConfigReader::read(StringRef path) {
  checkKeys();
  ModelConfig c;

  // The default name is the file's stem ("model" for stdin); later stages
  // derive C identifiers from it.
  c.name = path == "-" ? "model" : sys::path::stem(path).str();
  if (std::optional<std::string> name = readString("name", false)) {
    if (name->empty() || !llvm::all_of(*name, [](char ch) {
          return isAlnum(ch) || ch == '_' || ch == '-' || ch == '.';
        }))
      error("name", formatv("'name' must be non-empty and use only letters, "
                            "digits, '_', '-' and '.', got '{0}'",
                            *name));
    else
      c.name = *name;
  }

  std::optional<size_t> arch = readChoice(
      "architecture", {"encoder", "decoder", "encoder_decoder"}, true);
  if (arch)
    c.architecture = static_cast<Architecture>(*arch);

  std::optional<int64_t> dModel = readInt("d_model", true, kMaxDim);
  // A stack of mamba layers only has no attention heads and no FFN.
  bool attentionFree = onlyMambaLayers();
  std::optional<int64_t> heads = readInt("num_heads", !attentionFree, kMaxDim);
  std::optional<int64_t> dFF = readInt("d_ff", !attentionFree, kMaxDim);
  if (attentionFree) {
    heads = heads.value_or(1);
    dFF = dFF.value_or(1);
  }
  std::optional<int64_t> layers = readInt("num_layers", false, kMaxLayers);
  std::optional<int64_t> encLayers =
      readInt("num_encoder_layers", false, kMaxLayers);
  std::optional<int64_t> decLayers =
      readInt("num_decoder_layers", false, kMaxLayers);
  std::optional<int64_t> vocab = readInt("vocab_size", false, kMaxDim);
  std::optional<int64_t> maxSeq = readInt("max_seq_len", true, kMaxDim);
  std::optional<int64_t> additiveDim = readInt("additive_dim", false, kMaxDim);
  std::optional<int64_t> kvHeads = readInt("num_kv_heads", false, kMaxDim);
  std::optional<int64_t> typeVocab = readInt("type_vocab_size", false, kMaxDim);

  if (std::optional<size_t> p = readChoice(
          "positional", {"sinusoidal", "learned", "rope", "none"}, false))
    c.positional = static_cast<Positional>(*p);
  if (std::optional<size_t> s =
          readChoice("rope_style", {"half", "interleaved"}, false))
    c.ropeStyle = static_cast<RopeStyle>(*s);
  if (std::optional<double> base = readPositiveFloat("rope_base"))
    c.ropeBase = *base;
  if (std::optional<size_t> s =
          readChoice("embedding_scale", {"none", "sqrt_d_model"}, false))
    c.embeddingScale = static_cast<EmbeddingScale>(*s);
  if (std::optional<size_t> n = readChoice("norm", {"post", "pre"}, false))
    c.norm = static_cast<NormPlacement>(*n);
  if (std::optional<size_t> t =
          readChoice("norm_type", {"layer_norm", "rms_norm"}, false))
    c.normType = static_cast<NormType>(*t);
  if (std::optional<double> eps = readPositiveFloat("norm_eps"))
    c.normEps = *eps;
  std::optional<bool> finalNorm = readBool("final_norm");
  if (std::optional<size_t> a = readChoice(
          "activation", {"relu", "gelu", "gelu_tanh", "silu"}, false))
    c.activation = static_cast<Activation>(*a);
  if (std::optional<size_t> s =
          readChoice("attention_score",
                     {"dot", "scaled_dot", "bilinear", "additive"}, false))
    c.score = static_cast<ScoreKind>(*s);
  std::optional<bool> causal = readBool("causal");
  if (std::optional<KindObject> kind =
          readKindObject("attention", kAttentionKinds, kAttentionExample))
    readAttention(*kind, c.kinds);
  if (std::optional<KindObject> kind =
          readKindObject("ffn", kFfnKinds, kFfnExample))
    readFeedForward(*kind, c.kinds);
  std::optional<bool> lmHead = readBool("lm_head");
  std::optional<bool> tie = readBool("tie_embeddings");
  std::optional<bool> gated = readBool("ffn_gated");
  std::optional<bool> bias = readBool("bias");
  std::optional<bool> embeddingNorm = readBool("embedding_norm");

  // Cross-key rules only make sense once every key read cleanly.
  if (failed || !arch || !dModel || !heads || !dFF || !maxSeq)
    return std::nullopt;

  c.dModel = *dModel;
  c.numHeads = *heads;
  c.dFF = *dFF;
  c.maxSeqLen = *maxSeq;
  c.vocabSize = vocab;

  if (c.dModel % c.numHeads != 0)
    error("num_heads", formatv("'d_model' {0} is not divisible by "
                               "'num_heads' {1}",
                               c.dModel, c.numHeads));
  c.numKVHeads = kvHeads.value_or(c.numHeads);
  if (c.numHeads % c.numKVHeads != 0)
    error("num_kv_heads",
          formatv("'num_kv_heads' {0} does not divide 'num_heads' {1}; "
                  "grouped-query attention gives each key/value head the "
                  "same number of query heads",
                  c.numKVHeads, c.numHeads));
  c.ffnGated = gated.value_or(false);
  c.bias = bias.value_or(true);

  if (c.architecture == Architecture::EncoderDecoder) {
    if (layers && encLayers && decLayers)
      warning("num_layers", "'num_layers' has no effect when "
                            "'num_encoder_layers' and 'num_decoder_layers' "
                            "are both given");
    c.numEncoderLayers = encLayers.value_or(layers.value_or(0));
    c.numDecoderLayers = decLayers.value_or(layers.value_or(0));
    if (!c.numEncoderLayers || !c.numDecoderLayers)
      error(objectPos,
            "encoder_decoder needs 'num_encoder_layers' and "
            "'num_decoder_layers' (or 'num_layers' for both stacks)");
  } else {
    for (StringRef key : {"num_encoder_layers", "num_decoder_layers"})
      if (has(key))
        error(key, formatv("'{0}' applies to encoder_decoder only; use "
                           "'num_layers' for a single stack",
                           key));
    if (!layers)
      error(objectPos, "missing required key 'num_layers'");
    else if (c.architecture == Architecture::Encoder)
      c.numEncoderLayers = *layers;
    else
      c.numDecoderLayers = *layers;
  }

  if (c.positional == Positional::Rope) {
    if (c.dModel % c.numHeads == 0 && c.headDim() % 2 != 0)
      error("positional",
            formatv("rope needs an even head size, but d_model {0} / "
                    "num_heads {1} = {2}",
                    c.dModel, c.numHeads, c.headDim()));
  } else {
    for (StringRef key : {"rope_style", "rope_base"})
      if (has(key))
        warning(key, formatv("'{0}' has no effect unless 'positional' is "
                             "'rope'",
                             key));
  }

  if (c.score == ScoreKind::Additive)
    c.additiveDim = additiveDim.value_or(c.dModel / c.numHeads);
  else if (additiveDim)
    warning("additive_dim", "'additive_dim' has no effect unless "
                            "'attention_score' is 'additive'");

  if (c.embeddingScale != EmbeddingScale::None && !vocab)
    warning("embedding_scale", "'embedding_scale' scales token embeddings "
                               "only; without 'vocab_size' inputs are float "
                               "embeddings, taken as they are");

  c.finalNorm = finalNorm.value_or(c.norm == NormPlacement::Pre);
  c.causal = causal.value_or(c.architecture != Architecture::Encoder);
  if (c.kinds.linformerK)
    checkAttention(c, c.kinds, valuePos("attention"), causal.has_value());
  readLayers(c);
  readMamba(c);
  // The scores a kind takes: once for the model, whichever layers have it.
  if (c.anyLayer([](const LayerKinds &k) { return bool(k.linformerK); }) &&
      c.score != ScoreKind::ScaledDot)
    error("attention_score",
          formatv("attention kind 'linformer' takes scaled_dot scores, "
                  "got '{0}'",
                  stringifyScoreKind(c.score)));
  if (c.anyLayer(
          [](const LayerKinds &k) { return bool(k.performerFeatures); }) &&
      c.score != ScoreKind::ScaledDot)
    error("attention_score",
          formatv("attention kind 'performer' takes scaled_dot scores, got "
                  "'{0}'",
                  stringifyScoreKind(c.score)));
  c.lmHead = lmHead.value_or(vocab.has_value());
  if (c.lmHead && !vocab)
    error("lm_head", "'lm_head' needs 'vocab_size' (the logits' width)");
  c.tieEmbeddings = tie.value_or(true);
  c.embeddingNorm = embeddingNorm.value_or(false);
  c.typeVocabSize = typeVocab;
  if (typeVocab && c.architecture != Architecture::Encoder)
    error("type_vocab_size",
          formatv("'type_vocab_size' needs architecture 'encoder' (BERT's "
                  "token types), not '{0}'",
                  stringifyArchitecture(c.architecture)));
  else if (typeVocab && !vocab)
    error("type_vocab_size", "'type_vocab_size' needs 'vocab_size': token "
                             "types are added to token embeddings");
  if (tie && !c.lmHead)
    warning("tie_embeddings", "'tie_embeddings' has no effect without an LM "
                              "head");

  if (failed)
    return std::nullopt;
  return c;
}

} // namespace

bool LayerKinds::operator==(const LayerKinds &o) const {
  auto moe = [](const std::optional<MixtureOfExperts> &m) {
    return m ? std::make_pair(m->experts, m->topK)
             : std::make_pair(int64_t(0), int64_t(0));
  };
  return mamba == o.mamba && window == o.window &&
         globalTokens == o.globalTokens && linformerK == o.linformerK &&
         performerFeatures == o.performerFeatures && block == o.block &&
         windowBlocks == o.windowBlocks && globalBlocks == o.globalBlocks &&
         randomBlocks == o.randomBlocks && moe(experts) == moe(o.experts);
}

bool ModelConfig::anyLayer(
    llvm::function_ref<bool(const LayerKinds &)> pred) const {
  if (decoderLayerKinds.empty() || numEncoderLayers > 0)
    if (pred(kinds))
      return true;
  return llvm::any_of(decoderLayerKinds, pred);
}

std::pair<unsigned, unsigned> ConfigPositions::of(StringRef key) const {
  for (const auto &[name, pos] : values)
    if (name == key)
      return pos;
  return {objectLine, objectColumn};
}

std::optional<ModelConfig>
parseModelConfig(StringRef path, StringRef text,
                 std::vector<ConfigDiagnostic> &diags,
                 ConfigPositions *positions) {
  if (size_t deep = findDeepNesting(text, kMaxJsonDepth);
      deep != StringRef::npos) {
    Position pos = positionOf(text, deep);
    diags.push_back({ConfigDiagnostic::Kind::Error, pos.line, pos.column,
                     formatv("JSON nested deeper than {0} levels; a model "
                             "description is one object of plain values",
                             kMaxJsonDepth)
                         .str()});
    return std::nullopt;
  }
  Expected<json::Value> root = json::parse(text);
  if (!root) {
    // json::ParseError keeps its position private; its message is
    // "[LINE:COL, byte=N]: WHAT".
    std::string message = toString(root.takeError());
    SmallVector<StringRef, 4> m;
    Regex located("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$");
    unsigned line = 1, column = 1;
    if (located.match(message, &m)) {
      m[1].getAsInteger(10, line);
      m[2].getAsInteger(10, column);
      message = ("invalid JSON: " + m[3]).str();
    }
    diags.push_back({ConfigDiagnostic::Kind::Error, std::max(line, 1u),
                     std::max(column, 1u), message});
    return std::nullopt;
  }
  const json::Object *object = root->getAsObject();
  size_t objectOffset = 0;
  std::vector<KeyLocation> keys = scanTopLevelKeys(text, objectOffset);
  if (!object) {
    Position pos = positionOf(text, text.find_first_not_of(" \t\r\n"));
    diags.push_back({ConfigDiagnostic::Kind::Error, pos.line, pos.column,
                     "a model description must be a JSON object"});
    return std::nullopt;
  }
  Position objectPos = positionOf(text, objectOffset);
  if (positions) {
    positions->objectLine = objectPos.line;
    positions->objectColumn = objectPos.column;
    for (const KeyLocation &k : keys) {
      Position p = positionOf(text, k.valueOffset);
      positions->values.push_back({k.key, {p.line, p.column}});
    }
  }
  return ConfigReader(text, *object, std::move(keys), objectPos, diags)
      .read(path);
}

size_t findDeepJsonNesting(StringRef text, unsigned maxDepth) {
  return findDeepNesting(text, maxDepth);
}

std::pair<unsigned, unsigned> jsonPositionOf(StringRef text, size_t offset) {
  Position p = positionOf(text, offset);
  return {p.line, p.column};
}

ConfigPositions jsonValuePositions(StringRef text) {
  ConfigPositions positions;
  size_t objectOffset = 0;
  std::vector<KeyLocation> keys = scanTopLevelKeys(text, objectOffset);
  Position objectPos = positionOf(text, objectOffset);
  positions.objectLine = objectPos.line;
  positions.objectColumn = objectPos.column;
  for (const KeyLocation &k : keys) {
    Position p = positionOf(text, k.valueOffset);
    positions.values.push_back({k.key, {p.line, p.column}});
  }
  return positions;
}

StringRef stringifyArchitecture(Architecture arch) {
  switch (arch) {
  case Architecture::Encoder:
    return "encoder";
  case Architecture::Decoder:
    return "decoder";
  case Architecture::EncoderDecoder:
    return "encoder_decoder";
  }
  llvm_unreachable("unknown architecture");
}

StringRef stringifyPositional(Positional positional) {
  switch (positional) {
  case Positional::Sinusoidal:
    return "sinusoidal";
  case Positional::Learned:
    return "learned";
  case Positional::Rope:
    return "rope";
  case Positional::None:
    return "none";
  }
  llvm_unreachable("unknown positional kind");
}

} // namespace tfm
