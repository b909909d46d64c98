//===- ModelGlue.cpp - kModel, the weight tables and the C API ------------===//

#include "tfm/Lowering/ModelGlue.h"

#include <cstdio>

#include "tfm/IR/TfmOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

using namespace mlir;
using namespace mlir::tfm;

namespace tfm {

namespace {

/// `text` as a C++ string literal (a path, a tensor name).
std::string cppString(StringRef text) {
  std::string literal = "\"";
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) {
      char octal[8];
      std::snprintf(octal, sizeof(octal), "\\%03o", unsigned(c));
      literal += octal;
      continue;
    }
    if (c == '"' || c == '\\')
      literal += '\\';
    literal += c;
  }
  return literal + "\"";
}

/// PyTorch's default initialisation of the module a weight belongs to, by
/// its state_dict name: what `--weights`-less runs fill it with.
std::pair<StringRef, float> defaultInit(StringRef name,
                                        ArrayRef<int64_t> shape) {
  auto uniform = [](int64_t fanIn) {
    return 1.0f / std::sqrt(static_cast<float>(fanIn));
  };
  if (name.ends_with("in_proj_weight")) // xavier_uniform over [3d, d]
    return {"Uniform",
            std::sqrt(6.0f / static_cast<float>(shape[0] + shape[1]))};
  if (name.ends_with("in_proj_bias") || name.ends_with("out_proj.bias"))
    return {"Zeros", 0.0f};
  if (name.contains("norm") && name.ends_with(".weight"))
    return {"Ones", 0.0f};
  if (name.contains("norm") && name.ends_with(".bias"))
    return {"Zeros", 0.0f};
  if (name.contains("embed"))
    return {"Normal", 1.0f};
  if (name.ends_with(".bias")) // nn.Linear bias: fan-in of its weight
    return {"Uniform", 0.0f};
  // nn.Linear weights [out, in] and per-head score tensors [h, a, dk]: 1/sqrt
  // of the last dimension.
  return {"Uniform", uniform(shape.back())};
}

/// The runtime's name (tfm::rt::WeightFormat) of the format a weight is
/// kept in.
StringRef runtimeFormat(std::optional<WeightFormat> format) {
  if (!format)
    return "F32";
  switch (*format) {
  case WeightFormat::BF16:
    return "BF16";
  case WeightFormat::F16:
    return "F16";
  case WeightFormat::Int8:
    return "Int8";
  }
  llvm_unreachable("unknown weight format");
}

void emitParamTable(const ModelGlue &glue, MutableArrayRef<ParamOp> params,
                    const llvm::StringMap<unsigned> &paramIndex,
                    raw_ostream &os) {
  // A checkpoint's tensors that make a weight, where its layout differs.
  for (auto [i, p] : llvm::enumerate(params)) {
    std::optional<ArrayAttr> sources = p.getSources();
    if (!sources)
      continue;
    SmallVector<std::string> names;
    for (Attribute s : *sources)
      names.push_back("\"" + cast<StringAttr>(s).getValue().str() + "\"");
    os << "static const char *const kSources" << i << "[] = {"
       << llvm::join(names, ", ") << "};\n";
  }
  os << "static const tfm::rt::ParamInfo kParams[] = {\n";
  for (auto [i, p] : llvm::enumerate(params)) {
    ArrayRef<int64_t> shape = p.getTensorType().getShape();
    auto [init, bound] = defaultInit(p.getSymName(), shape);
    if (p.getBlockIds())
      std::tie(init, bound) = std::pair<StringRef, float>("BlockIds", 0.0f);
    if (init == "Uniform" && bound == 0.0f) {
      // A Linear bias: its weight is the same name with ".weight".
      std::string weightName =
          (p.getSymName().drop_back(strlen("bias")) + "weight").str();
      auto it = paramIndex.find(weightName);
      int64_t fanIn =
          it == paramIndex.end()
              ? shape.back()
              : params[it->second].getTensorType().getShape().back();
      bound = 1.0f / std::sqrt(static_cast<float>(fanIn));
    }
    SmallVector<std::string> dims;
    for (int64_t d : shape)
      dims.push_back(std::to_string(d));
    std::optional<ArrayAttr> sources = p.getSources();
    os << llvm::formatv(
        "    {{\"{0}\", {1}, {2}, {{{3}}, "
        "tfm::rt::ParamInit::{4}, {5:e9}f, {6}, {7}, {8}, {9}, "
        "tfm::rt::WeightFormat::{10}},\n",
        p.getSymName(),
        p.getAlias() ? "\"" + p.getAlias()->str() + "\""
                     : std::string("nullptr"),
        shape.size(), llvm::join(dims, ", "), init, bound,
        sources ? "kSources" + std::to_string(i) : std::string("nullptr"),
        sources ? sources->size() : 0, p.getTransposed() ? "true" : "false",
        p.getBlockIds() ? "true" : "false", runtimeFormat(p.getFormat()));
  }
  os << "};\n\n";
}

void emitPacking(const ModelGlue &glue, MutableArrayRef<ParamOp> params,
                 raw_ostream &os) {
  os << "// GEMM weights, packed once after loading: panels of `width` output\n"
        "// columns (zero-padded), each holding every k; a stacked weight\n"
        "// (in_proj's Q, K, V) is packed segment by segment.\n"
        "// The weight of a GEMM with bf16 inputs (--compute=bf16) is packed\n"
        "// rounded to bfloat16. A panel element is a float, or (`element` 1\n"
        "// and 2) the 16 bits of a bf16 or f16 value, or (`element` 3) an\n"
        "// int8 value: then each panel's values are followed by a row of\n"
        "// `width` scales per block of kInt8Block k's (the weight's values\n"
        "// are the converted ones, each q x s: packed, q and s again).\n"
        "static void *packPanels(const float *src, int64_t k, int64_t "
        "rowOffset, int64_t rows, int64_t width, bool bf16, int element, "
        "void *out) {\n"
        "  if (element == 3) {\n"
        "    constexpr int64_t block = tfm::rt::kInt8Block;\n"
        "    int8_t *q = static_cast<int8_t *>(out);\n"
        "    for (int64_t p = 0; p < (rows + width - 1) / width; ++p) {\n"
        "      float *scales = reinterpret_cast<float *>(q + k * width);\n"
        "      for (int64_t j = 0; j < width; ++j) {\n"
        "        const int64_t n = p * width + j;\n"
        "        const float *row = src + (rowOffset + n) * k;\n"
        "        for (int64_t k0 = 0; k0 < k; k0 += block) {\n"
        "          const int64_t end = std::min(k, k0 + block);\n"
        "          const float s = n < rows ? "
        "tfm::rt::int8ScaleOfConverted(row + k0, end - k0) : 0.0f;\n"
        "          scales[k0 / block * width + j] = s;\n"
        "          for (int64_t kk = k0; kk < end; ++kk)\n"
        "            q[kk * width + j] = n < rows ? "
        "tfm::rt::int8Value(row[kk], s) : int8_t(0);\n"
        "        }\n"
        "      }\n"
        "      q += k * width + (k + block - 1) / block * width * "
        "int64_t(sizeof(float));\n"
        "    }\n"
        "    return q;\n"
        "  }\n"
        "  float *f = static_cast<float *>(out);\n"
        "  uint16_t *h = static_cast<uint16_t *>(out);\n"
        "  for (int64_t p = 0; p < (rows + width - 1) / width; ++p)\n"
        "    for (int64_t kk = 0; kk < k; ++kk)\n"
        "      for (int64_t j = 0; j < width; ++j) {\n"
        "        const int64_t n = p * width + j;\n"
        "        float v = n < rows ? src[(rowOffset + n) * k + kk] : 0.0f;\n"
        "        if (bf16)\n"
        "          v = tfm::rt::roundToBFloat16(v);\n"
        "        if (element == 0)\n"
        "          *f++ = v;\n"
        "        else\n"
        "          *h++ = element == 1 ? tfm::rt::bfloat16Bits(v) : "
        "tfm::rt::halfBits(v);\n"
        "      }\n"
        "  return element == 0 ? static_cast<void *>(f) : "
        "static_cast<void *>(h);\n"
        "}\n\n";
  if (llvm::any_of(glue.packs, [](const PackSpec &p) {
        return p.element == PackSpec::Element::I8;
      }))
    os << "// The packed sizes below count int8 panels' scales per block of "
       << PackSpec::kInt8Block << ".\n"
       << "static_assert(tfm::rt::kInt8Block == " << PackSpec::kInt8Block
       << ", \"the runtime's int8 blocks are the compiler's\");\n\n";
  SmallVector<std::string> sizes;
  for (const PackSpec &p : glue.packs)
    sizes.push_back(std::to_string(p.maxFloats()));
  sizes.push_back("0"); // keeps the array non-empty
  os << "static const size_t kPackedFloats[] = {" << llvm::join(sizes, ", ")
     << "};\n\n";
  os << "static void packWeights(const float *const *w, float *const *packed) "
        "{\n";
  bool perTarget = llvm::any_of(glue.packs, std::mem_fn(&PackSpec::perTarget));
  if (perTarget) {
    assert(glue.vectorBits && "a per-target panel width needs the dispatch");
    os << "  // The panel widths of the target the forward pass runs on.\n";
    os << "  const int64_t bits = vectorBitsDispatch();\n";
  }
  for (auto [j, p] : llvm::enumerate(glue.packs)) {
    os << "  // " << params[p.param].getSymName() << ": " << p.segments << " x "
       << p.segmentRows << " rows, k = " << p.k
       << (p.bf16 ? ", rounded to bf16" : "")
       << (p.element == PackSpec::Element::BF16  ? ", bf16 panels"
           : p.element == PackSpec::Element::F16 ? ", f16 panels"
           : p.element == PackSpec::Element::I8  ? ", int8 panels"
                                                 : "")
       << "\n";
    os << "  {\n    void *dst = packed[" << j << "];\n";
    std::string width = std::to_string(p.panelCols[0]);
    if (p.perTarget())
      width = llvm::formatv("bits >= 512 ? {0} : bits >= 256 ? {1} : {2}",
                            p.panelCols[0], p.panelCols[1], p.panelCols[2]);
    os << "    const int64_t width = " << width << ";\n";
    os << "    for (int64_t s = 0; s < " << p.segments << "; ++s)\n";
    os << "      dst = packPanels(w[" << p.param << "], " << p.k << ", s * "
       << p.segmentRows << ", " << p.segmentRows << ", width, "
       << (p.bf16 ? "true" : "false") << ", " << int(p.element)
       << ", dst);\n  }\n";
  }
  os << "}\n\n";
}

} // namespace

void emitModelGlue(const ModelGlue &glue, raw_ostream &out) {
  ModuleOp module = glue.module;
  SmallVector<ParamOp> params;
  llvm::StringMap<unsigned> paramIndex;
  for (ParamOp p : module.getOps<ParamOp>()) {
    paramIndex[p.getSymName()] = params.size();
    params.push_back(p);
  }
  SmallVector<KVCacheDeclOp> caches(module.getOps<KVCacheDeclOp>());
  auto intAttr = [&](StringRef name) -> int64_t {
    if (auto a = module->getAttrOfType<IntegerAttr>(name))
      return a.getInt();
    return 1;
  };

  // A checkpoint folder's weights file, loaded when the user gives none.
  std::string defaultWeights = "nullptr";
  if (auto file = module->getAttrOfType<StringAttr>("tfm.weights_file"))
    defaultWeights = cppString(file.getValue());

  // Inputs and the output, from the entry point's signature.
  func::FuncOp entry = glue.entry;
  SmallVector<std::string> inputs, masks;
  int64_t dModel = 0, vocab = 0;
  for (auto [i, arg] : llvm::enumerate(entry.getArguments())) {
    auto type = cast<RankedTensorType>(arg.getType());
    auto name = entry.getArgAttrOfType<StringAttr>(i, "tfm.input");
    // A padding mask, after the inputs: of the input `tfm.mask_of`.
    if (auto of = entry.getArgAttrOfType<IntegerAttr>(i, "tfm.mask_of")) {
      masks.push_back(llvm::formatv("{{\"{0}\", {1}}",
                                    name ? name.getValue() : "mask",
                                    of.getInt())
                          .str());
      continue;
    }
    bool tokens = type.getElementType().isInteger(32);
    if (!tokens)
      dModel = type.getShape().back();
    // The ids' bound: the rows of the table they index.
    int64_t bound = 0;
    Value ids = arg;
    entry.walk([&](EmbeddingOp e) {
      if (e.getIds() == ids) {
        bound = e.getTable().getType().getDimSize(0);
        dModel = e.getTable().getType().getDimSize(1);
      }
    });
    if (inputs.empty())
      vocab = bound;
    auto zerosLike = entry.getArgAttrOfType<IntegerAttr>(i, "tfm.zeros_like");
    inputs.push_back(
        llvm::formatv("{{\"{0}\", tfm::rt::InputKind::{1}, {2}, {3}}",
                      name ? name.getValue() : "input",
                      tokens ? "TokenIds" : "Embeddings", bound,
                      zerosLike ? zerosLike.getInt() : -1)
            .str());
  }
  auto resultType = cast<RankedTensorType>(entry.getResultTypes()[0]);
  StringRef name = module.getSymName() ? *module.getSymName() : "model";
  StringRef cName = glue.cName;

  SmallVector<std::string> cacheSizes;
  for (KVCacheDeclOp c : caches) {
    cacheSizes.push_back(std::to_string(c.getType().getFloats()));
  }
  cacheSizes.push_back("0"); // keeps the array non-empty
  out << "// Each tfm.kv_cache's floats (in its type's layout: an attention's "
         "keys and values, a mamba mixer's window and state), kept across "
         "calls.\n"
      << "static const size_t kCacheFloats[] = {"
      << llvm::join(cacheSizes, ", ") << "};\n\n"
      << glue.flopsDefinition;
  emitParamTable(glue, params, paramIndex, out);
  emitPacking(glue, params, out);
  out << "static const tfm::rt::InputInfo kInputs[] = {"
      << llvm::join(inputs, ", ") << "};\n\n";
  if (!masks.empty())
    out << "static const tfm::rt::MaskInfo kMasks[] = {"
        << llvm::join(masks, ", ") << "};\n\n";
  SmallVector<std::string> maps;
  if (auto names = module->getAttrOfType<ArrayAttr>("tfm.attention_maps"))
    for (Attribute name : names)
      maps.push_back("\"" + cast<StringAttr>(name).getValue().str() + "\"");
  bool writesMaps = glue.attentionMapsUnsupported.empty();
  auto masksRefused =
      module->getAttrOfType<StringAttr>("tfm.padding_masks_refused");
  SmallVector<std::string> ignored;
  if (auto names = module->getAttrOfType<ArrayAttr>("tfm.ignored_tensors"))
    for (Attribute name : names)
      ignored.push_back(cppString(cast<StringAttr>(name).getValue()));
  if (!ignored.empty())
    out << "static const char *const kIgnoredTensors[] = {"
        << llvm::join(ignored, ", ") << "};\n\n";
  if (writesMaps && !maps.empty())
    out << "static const char *const kAttentionMaps[] = {"
        << llvm::join(maps, ", ") << "};\n\n";
  out << "} // namespace tfm_generated\n\n"
      << "const tfm::rt::ModelInfo tfm::rt::kModel = {\n"
      << "    \"" << name << "\",\n"
      << "    tfm_generated::kParams, " << params.size() << ",\n"
      << "    tfm_generated::kInputs, " << inputs.size() << ",\n"
      << "    /*dModel=*/" << dModel << ", /*vocabSize=*/" << vocab
      << ", /*outputWidth=*/" << resultType.getShape().back() << ",\n"
      << "    /*maxSeqLen=*/" << intAttr("tfm.max_seq_len") << ", /*maxBatch=*/"
      << intAttr("tfm.max_batch") << ",\n"
      << "    /*arenaBytes=*/" << glue.arenaBytes << ",\n"
      << "    tfm_generated::matmulFlops, tfm_generated::forwardDispatch,\n"
      << "    /*numPacked=*/" << glue.packs.size()
      << ", tfm_generated::kPackedFloats, tfm_generated::packWeights,\n"
      << "    /*numCaches=*/" << (glue.generation ? caches.size() : 0)
      << ", tfm_generated::kCacheFloats,\n"
      << (glue.generation ? "    tfm_generated::prefillDispatch, "
                            "tfm_generated::decodeDispatch,\n"
                          : "    nullptr, nullptr,\n")
      << "    /*defaultWeights=*/" << defaultWeights << ",\n"
      << "    /*limitSimd=*/"
      << (glue.vectorBits ? "tfm_generated::limitSimd" : "nullptr") << ",\n"
      << "    /*masks=*/"
      << (masks.empty() ? "nullptr" : "tfm_generated::kMasks") << ", "
      << masks.size() << ",\n"
      << "    /*attentionMaps=*/"
      << (writesMaps && !maps.empty() ? "tfm_generated::kAttentionMaps"
                                      : "nullptr")
      << ", " << (writesMaps ? maps.size() : 0) << ", "
      << (writesMaps ? std::string("nullptr")
                     : "\"" + glue.attentionMapsUnsupported + "\"")
      << ",\n    /*masksRefused=*/"
      << (masksRefused ? "\"" + masksRefused.getValue().str() + "\""
                       : std::string("nullptr"))
      << ",\n    /*ignoredTensors=*/"
      << (ignored.empty() ? "nullptr" : "tfm_generated::kIgnoredTensors")
      << ", " << ignored.size() << ",\n    /*regenerates=*/"
      << (module->hasAttr("tfm.regenerates") ? "true" : "false") << "};\n\n"
      << "// The C API of contract section 5, under the model's name.\n"
      << "extern \"C\" {\n"
      << "tfm_model *" << cName
      << "_create(const char *weights_path, char *err, size_t err_len) {\n"
      << "  return tfm_rt_create(&tfm::rt::kModel, weights_path, err, "
         "err_len);\n"
      << "}\n"
      << "int " << cName
      << "_forward(tfm_model *model, const tfm_tensor *inputs, size_t "
         "n_inputs, tfm_tensor *output) {\n"
      << "  return tfm_rt_forward(model, inputs, n_inputs, output);\n"
      << "}\n"
      << "int " << cName
      << "_prefill(tfm_model *model, const tfm_tensor *inputs, size_t "
         "n_inputs, tfm_tensor *output) {\n"
      << "  return tfm_rt_prefill(model, inputs, n_inputs, output);\n"
      << "}\n"
      << "int " << cName
      << "_decode(tfm_model *model, const tfm_tensor *tokens, tfm_tensor "
         "*output) {\n"
      << "  return tfm_rt_decode(model, tokens, output);\n"
      << "}\n"
      << "const char *" << cName << "_last_error(const tfm_model *model) {\n"
      << "  return tfm_rt_last_error(model);\n"
      << "}\n"
      << "void " << cName << "_destroy(tfm_model *model) { "
      << "tfm_rt_destroy(model); }\n"
      << "}\n";
}

} // namespace tfm
