//===- HighwayAttentionTilingTest.cpp - the backend follows the tiles -----===//
//
// tfm-select-attention-tiling records each blocked attention's query rows
// per task and keys per block in #tfm_codegen.attention_tiling; the Highway
// emitter must take those tiles, refuse an attention without them (it chooses
// nothing itself), and never emit a task of no rows or a block of part of
// a vector from IR the verifier did not see (the C++ API).
//
//===----------------------------------------------------------------------===//

#include "HighwayEmitTest.h"

#include "tfm/IR/TfmOps.h"

#include <string>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace {

/// One scaled dot-product self-attention of 4 heads of 8 over at most
/// 1 x maxSeqLen rows, as tfm-decompose-attention leaves it.
std::string model(int maxSeqLen) {
  return ::tfm::test::boundedModule("attention_tiling", maxSeqLen, R"mlir(
  func.func @forward(%qkv: tensor<?x?x96xf32> {tfm.input = "input"}) -> (tensor<?x?x32xf32> {tfm.output = "y"}) {
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %o = tfm.attention <scaled_dot> %q, %k, %v : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %0 = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    return %0 : tensor<?x?x32xf32>
  }
)mlir");
}

class HighwayAttentionTilingTest : public ::tfm::test::HighwayEmitTest {
protected:
  HighwayAttentionTilingTest() : HighwayEmitTest(model(100).c_str()) {}

  AttentionOp attention() { return firstOp<AttentionOp>(); }

  /// Whether the emitted C++ has `line`.
  static bool has(const std::string &text, const std::string &line) {
    return text.find(line) != std::string::npos;
  }
};

TEST_F(HighwayAttentionTilingTest, FollowsTheRecordedTiles) {
  ASSERT_TRUE(module);
  attention()->setAttr(AttentionTilingName::getNameStr(),
                       AttentionTilingAttr::get(&context, 5, 3, 1, 32));
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  EXPECT_TRUE(has(text,
                  "// Attention tiles (#tfm_codegen.attention_tiling): 5 query "
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

TEST_F(HighwayAttentionTilingTest, RefusesAnAttentionWithoutTiles) {
  // The tiles are tfm-select-attention-tiling's choice: the emitter makes
  // none.
  ASSERT_TRUE(module);
  ASSERT_FALSE(getAttentionTiling(attention()));
  std::string text;
  ASSERT_FALSE(emit(text)) << text;
  EXPECT_TRUE(has(text,
                  "tfm.attention has no tfm_codegen.attention_tiling: the "
                  "Highway backend follows tfm-select-attention-tiling"))
      << text;
}

TEST_F(HighwayAttentionTilingTest, UnverifiedTilesAreBounded) {
  // AttentionTilingAttr::get does not verify: rows 0, 40 and 20 become 1,
  // 16 and 16; a block of 1000 keys (not whole vectors) 992.
  ASSERT_TRUE(module);
  attention()->setAttr(AttentionTilingName::getNameStr(),
                       AttentionTilingAttr::get(&context, 0, 40, 20, 1000));
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  EXPECT_TRUE(has(text, "k::ForVectorBits(1, 16, 16)")) << text;
  EXPECT_TRUE(has(text, "constexpr size_t keyBlock = 992;")) << text;
}

} // namespace
