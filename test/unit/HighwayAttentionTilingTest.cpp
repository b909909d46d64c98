//===- HighwayAttentionTilingTest.cpp - the backend follows the tiles -----===//
//
// tfm-select-attention-tiling records each blocked attention's query rows
// per task and keys per block in #tfm.attention_tiling; the Highway emitter
// must take those tiles, not its own choice, make the same choice itself
// where none was recorded, and never emit a task of no rows or a block of
// part of a vector from IR the verifier did not see (the C++ API).
//
//===----------------------------------------------------------------------===//

#include "HighwayEmitTest.h"

#include "tfm/IR/TfmOps.h"

#include <string>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// One scaled dot-product self-attention of 4 heads of 8 over at most
/// 1 x maxSeqLen rows.
std::string model(int maxSeqLen) {
  return ::tfm::test::boundedModule("attention_tiling", maxSeqLen, R"mlir(
  func.func @forward(%qkv: tensor<?x?x96xf32> {tfm.input = "input"}) -> (tensor<?x?x32xf32> {tfm.output = "y"}) {
    %0 = tfm.flash_attention <scaled_dot> %qkv heads 4 : (tensor<?x?x96xf32>) -> tensor<?x?x32xf32>
    return %0 : tensor<?x?x32xf32>
  }
)mlir");
}

class HighwayAttentionTilingTest : public ::tfm::test::HighwayEmitTest {
protected:
  HighwayAttentionTilingTest() : HighwayEmitTest(model(100).c_str()) {}

  FlashAttentionOp attention() { return firstOp<FlashAttentionOp>(); }

  /// Whether the emitted C++ has `line`.
  static bool has(const std::string &text, const std::string &line) {
    return text.find(line) != std::string::npos;
  }
};

TEST_F(HighwayAttentionTilingTest, FollowsTheRecordedTiles) {
  ASSERT_TRUE(module);
  attention().setTilingAttr(AttentionTilingAttr::get(&context, 5, 3, 1, 32));
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  EXPECT_TRUE(has(text, "// Attention tiles (#tfm.attention_tiling): 5 query "
                        "rows a task on 512-bit vectors, 3 on 256-bit, 1 on "
                        "128-bit; blocks of 32 keys."))
      << text;
  EXPECT_TRUE(
      has(text, "constexpr size_t queryRows = k::ForVectorBits(5, 3, 1);"))
      << text;
  EXPECT_TRUE(has(text, "constexpr size_t keyBlock = 32;")) << text;
  EXPECT_TRUE(has(text, "k::TransposedKeyScoresRows<queryRows, keyBlock>("))
      << text;
  EXPECT_TRUE(has(text, "k::OnlineSoftmaxBlockRows<queryRows, keyBlock>("))
      << text;
  EXPECT_FALSE(has(text, "ForVectorBits(8, 2, 2)")) << text;
}

TEST_F(HighwayAttentionTilingTest, ChoosesTheTilesWithoutThem) {
  ASSERT_TRUE(module);
  ASSERT_FALSE(attention().getTilingAttr());
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  // Up to 100 rows and keys: the rule's 8, 2 and 2 rows, 64 keys.
  EXPECT_TRUE(has(text, "// Attention tiles (chosen here: no "
                        "#tfm.attention_tiling): 8 query rows a task on "
                        "512-bit vectors, 2 on 256-bit, 2 on 128-bit; blocks "
                        "of 64 keys."))
      << text;
  EXPECT_TRUE(has(text, "k::ForVectorBits(8, 2, 2)")) << text;
  EXPECT_TRUE(has(text, "constexpr size_t keyBlock = 64;")) << text;
}

TEST_F(HighwayAttentionTilingTest, TilesOfAtMostTheSequence) {
  // One row at most (a decoding step's shape): tasks of one row, one
  // vector's worth of keys per block.
  parse(model(1));
  ASSERT_TRUE(module);
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  EXPECT_TRUE(has(text, "k::ForVectorBits(1, 1, 1)")) << text;
  EXPECT_TRUE(has(text, "constexpr size_t keyBlock = 16;")) << text;
}

TEST_F(HighwayAttentionTilingTest, UnverifiedTilesAreBounded) {
  // AttentionTilingAttr::get does not verify: rows 0, 40 and 20 become 1,
  // 16 and 16; a block of 1000 keys (not whole vectors) 992.
  ASSERT_TRUE(module);
  attention().setTilingAttr(
      AttentionTilingAttr::get(&context, 0, 40, 20, 1000));
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  EXPECT_TRUE(has(text, "k::ForVectorBits(1, 16, 16)")) << text;
  EXPECT_TRUE(has(text, "constexpr size_t keyBlock = 992;")) << text;
}

} // namespace
