//===- ModelMemoryTest.cpp - the memory a model description needs ---------===//
//
// The weight and cache counts must equal what the frontend declares (every
// tfm.param and tfm.kv_cache of the built module), for every architecture
// and option that adds parameters or caches; a model over the budget fails with
// the sizes that make it big, at the key that dominates.
//
//===----------------------------------------------------------------------===//

#include "tfm/Frontend/ModelMemory.h"
#include "tfm/Frontend/ModelBuilder.h"
#include "tfm/Frontend/ModelConfig.h"
#include "tfm/IR/TfmOps.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <string>

using namespace tfm;

namespace {

ModelConfig parse(const std::string &json, ConfigPositions *positions) {
  std::vector<ConfigDiagnostic> diags;
  std::optional<ModelConfig> c =
      parseModelConfig("m.json", json, diags, positions);
  EXPECT_TRUE(c) << json << "\n"
                 << (diags.empty() ? "" : diags.front().message);
  return c.value_or(ModelConfig());
}

struct Declared {
  double paramBytes = 0, cacheBytes = 0;
};

/// Bytes of every tfm.param and tfm.kv_cache (keys and values) of the
/// module built for `json` at batch 2.
Declared declaredBytes(const std::string &json) {
  ModelConfig c = parse(json, nullptr);
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> m =
      buildModel(context, c, {c.maxSeqLen, 2}, "m.json");
  Declared bytes;
  for (mlir::tfm::ParamOp p : m->getBody()->getOps<mlir::tfm::ParamOp>())
    bytes.paramBytes +=
        4.0 *
        double(
            mlir::cast<mlir::RankedTensorType>(p.getType()).getNumElements());
  for (mlir::tfm::KVCacheDeclOp k :
       m->getBody()->getOps<mlir::tfm::KVCacheDeclOp>()) {
    auto t = mlir::cast<mlir::tfm::StateBufferTypeInterface>(k.getType());
    bytes.cacheBytes += 4.0 * double(t.getFloats());
  }
  return bytes;
}

MemoryEstimate estimate(const std::string &json) {
  ModelConfig c = parse(json, nullptr);
  return estimateModelMemory(c, {c.maxSeqLen, 2});
}

TEST(ModelMemoryTest, CountsMatchTheDeclaredParametersAndCaches) {
  const char *base = R"("d_model": 24, "num_heads": 3, "d_ff": 40,
                        "max_seq_len": 11, )";
  for (std::string extra : {
           R"("architecture": "encoder", "num_layers": 2)",
           R"("architecture": "decoder", "num_layers": 3, "vocab_size": 17)",
           R"("architecture": "decoder", "num_layers": 1, "vocab_size": 17,
              "tie_embeddings": false, "norm": "pre")",
           R"("architecture": "decoder", "num_layers": 1, "vocab_size": 17,
              "lm_head": false, "positional": "learned")",
           R"("architecture": "encoder", "num_layers": 2,
              "attention_score": "bilinear", "final_norm": true)",
           R"("architecture": "encoder", "num_layers": 2,
              "attention_score": "additive", "additive_dim": 5)",
           R"("architecture": "encoder_decoder", "num_encoder_layers": 2,
              "num_decoder_layers": 3, "vocab_size": 19,
              "positional": "learned", "attention_score": "additive")",
           R"("architecture": "encoder_decoder", "num_layers": 1,
              "vocab_size": 19, "tie_embeddings": false, "norm": "pre",
              "attention_score": "bilinear")",
           R"("architecture": "decoder", "num_layers": 2, "vocab_size": 17,
              "norm": "pre", "norm_type": "rms_norm", "ffn_gated": true,
              "num_kv_heads": 1, "bias": false, "activation": "silu",
              "positional": "rope", "rope_style": "half")",
           R"("architecture": "encoder_decoder", "num_layers": 1,
              "vocab_size": 19, "num_kv_heads": 1, "bias": false,
              "ffn_gated": true, "final_norm": true)",
           R"("architecture": "encoder", "num_layers": 1,
              "norm_type": "rms_norm", "final_norm": true)",
           // Sliding windows: a ring of G + W positions where that is
           // fewer than max_seq_len (11), every position where it is not.
           R"("architecture": "decoder", "num_layers": 1, "vocab_size": 17,
              "attention": {"kind": "sliding_window", "window": 3,
                            "global_tokens": 2})",
           R"("architecture": "decoder", "num_layers": 1, "vocab_size": 17,
              "attention": {"kind": "sliding_window", "window": 10,
                            "global_tokens": 1})",
           R"("architecture": "encoder_decoder", "num_layers": 1,
              "vocab_size": 19, "num_kv_heads": 1,
              "attention": {"kind": "sliding_window", "window": 0,
                            "global_tokens": 1})",
       }) {
    std::string json = "{" + std::string(base) + extra + "}";
    Declared declared = declaredBytes(json);
    MemoryEstimate estimated = estimate(json);
    EXPECT_EQ(estimated.weightBytes, declared.paramBytes) << json;
    EXPECT_EQ(estimated.cacheBytes, declared.cacheBytes) << json;
  }
}

TEST(ModelMemoryTest, SlidingWindowCacheKeepsItsWindow) {
  // Batch 2, 3 heads of 8, keys and values: 384 bytes a position kept.
  auto cache = [](const char *attention) {
    return declaredBytes(std::string(R"({"architecture": "decoder",
        "d_model": 24, "num_heads": 3, "d_ff": 40, "max_seq_len": 11,
        "num_layers": 1, "vocab_size": 17, "attention": )") +
                         attention + "}")
        .cacheBytes;
  };
  EXPECT_EQ(cache(R"({"kind": "full"})"), 384 * 11);
  EXPECT_EQ(cache(R"({"kind": "sliding_window", "window": 3,
                      "global_tokens": 2})"),
            384 * 5);
  EXPECT_EQ(cache(R"({"kind": "sliding_window", "window": 4})"), 384 * 4);
  EXPECT_EQ(cache(R"({"kind": "sliding_window", "window": 9,
                      "global_tokens": 2})"),
            384 * 11);
}

TEST(ModelMemoryTest, FormatBytes) {
  EXPECT_EQ(formatBytes(0), "0 bytes");
  EXPECT_EQ(formatBytes(999), "999 bytes");
  EXPECT_EQ(formatBytes(1000), "1.0 KB");
  EXPECT_EQ(formatBytes(512e3), "512 KB");
  EXPECT_EQ(formatBytes(24.6e9), "25 GB");
  EXPECT_EQ(formatBytes(1.2e12), "1.2 TB");
  EXPECT_EQ(formatBytes(9.96e12), "10 TB");
  EXPECT_EQ(formatBytes(3e21), "3000 EB");
}

TEST(ModelMemoryTest, TooBigForTheBudget) {
  ConfigPositions positions;
  ModelConfig c = parse(R"({
  "architecture": "decoder", "d_model": 4096, "num_heads": 1,
  "d_ff": 1, "num_layers": 1, "max_seq_len": 1,
  "vocab_size": 16777216
})",
                        &positions);
  MemoryBudget budget{uint64_t(24) << 30, "this machine's 26 GB"};
  std::optional<ConfigDiagnostic> d =
      checkModelMemory(c, {c.maxSeqLen, 1}, positions, budget);
  ASSERT_TRUE(d);
  // At vocab_size: the embedding dominates.
  EXPECT_EQ(d->line, 4u);
  EXPECT_EQ(d->column, 17u);
  EXPECT_EQ(d->message,
            "this model needs 275 GB of memory, more than this machine's 26 "
            "GB: 275 GB of weights (vocab_size 16777216 x d_model 4096: 275 "
            "GB; 1 layers of d_model 4096, d_ff 1: 269 MB) and at least 67 "
            "MB of activations and 33 KB of key/value cache at batch 1, seq "
            "1");

  // d_model 2^24 makes the layers the biggest part.
  ConfigPositions wide;
  c = parse(R"({"architecture": "encoder", "d_model": 16777216,
      "num_heads": 1, "d_ff": 1, "num_layers": 1, "max_seq_len": 1})",
            &wide);
  d = checkModelMemory(c, {1, 1}, wide, budget);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->line, 1u);
  EXPECT_EQ(d->column, 40u);
  EXPECT_NE(d->message.find("4.5 PB of weights (1 layers of d_model 16777216, "
                            "d_ff 1: 4.5 PB)"),
            std::string::npos)
      << d->message;

  // Small enough: no error; the same at tfm-compile's largest limits: the
  // activations dominate, and the error points at max_seq_len.
  ConfigPositions small;
  c = parse(R"({"architecture": "encoder", "d_model": 8,
      "num_heads": 2, "d_ff": 16, "num_layers": 1, "max_seq_len": 16})",
            &small);
  EXPECT_FALSE(checkModelMemory(c, {16, 1}, small, budget));
  d = checkModelMemory(c, {int64_t(1) << 24, int64_t(1) << 16}, small, budget);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->line, 2u);
  EXPECT_EQ(d->column, 67u);
  EXPECT_NE(d->message.find("2.4 KB of weights (1 layers of d_model 8, d_ff "
                            "16: 2.4 KB) and at least 246 TB of activations "
                            "at batch 65536, seq 16777216"),
            std::string::npos)
      << d->message;
}

TEST(ModelMemoryTest, BudgetFromTheEnvironment) {
  std::string error;
  ASSERT_EQ(setenv("TFM_MEMORY_LIMIT", "64G", 1), 0);
  std::optional<MemoryBudget> b = memoryBudget(error);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->bytes, uint64_t(64e9));
  EXPECT_EQ(b->what, "the 64 GB of TFM_MEMORY_LIMIT");
  for (const char *bad : {"x", "0", "-5", "99999999999999T", "1.5G"}) {
    ASSERT_EQ(setenv("TFM_MEMORY_LIMIT", bad, 1), 0);
    EXPECT_FALSE(memoryBudget(error)) << bad;
    EXPECT_NE(error.find("TFM_MEMORY_LIMIT"), std::string::npos);
  }
  ASSERT_EQ(unsetenv("TFM_MEMORY_LIMIT"), 0);
  b = memoryBudget(error);
  ASSERT_TRUE(b);
  EXPECT_GT(b->bytes, uint64_t(1) << 20);
  EXPECT_EQ(b->what.rfind("this machine's ", 0), 0u);
}

} // namespace
