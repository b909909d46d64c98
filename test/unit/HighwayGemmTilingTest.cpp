//===- HighwayGemmTilingTest.cpp - the Highway backend follows the tiling -===//
//
// tfm-select-gemm-tiling records each GEMM's register tile in
// #tfm_codegen.gemm_tiling; the Highway emitter must take that tile, not its
// own choice, and make the same choice itself where no tiling was recorded.
// tfm-compile always runs the pass with the same rule, so a tile other
// than the rule's can only come through the C++ API.
//
//===----------------------------------------------------------------------===//

#include "HighwayEmitTest.h"

#include "tfm/IR/TfmOps.h"

#include <string>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace {

/// One GEMM of at most 1 x maxSeqLen rows ([?, ?, 8] x [40, 8]^T: two
/// panels).
std::string model(int maxSeqLen) {
  return ::tfm::test::boundedModule("gemm_tiling", maxSeqLen,
                                    R"mlir(
  tfm.param @w : tensor<40x8xf32>
  func.func @forward(%x: tensor<?x?x8xf32> {tfm.input = "input"}) -> (tensor<?x?x40xf32> {tfm.output = "y"}) {
    %w = tfm.weight @w : tensor<40x8xf32>
    %0 = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<40x8xf32>) -> tensor<?x?x40xf32>
    return %0 : tensor<?x?x40xf32>
  }
)mlir");
}

class HighwayGemmTilingTest : public ::tfm::test::HighwayEmitTest {
protected:
  HighwayGemmTilingTest() : HighwayEmitTest(model(12).c_str()) {}

  LinearOp linear() { return firstOp<LinearOp>(); }
};

TEST_F(HighwayGemmTilingTest, FollowsTheRecordedTile) {
  ASSERT_TRUE(module);
  linear()->setAttr(GemmTilingName::getNameStr(),
                    GemmTilingAttr::get(&context, 5, 16, 2, 24, 7, 4, 0,
                                        GemmPrefetch::L2, GemmPrefetch::L1,
                                        GemmPrefetch::None));
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  EXPECT_NE(text.find("width of the panels the weight is packed in: 5 x 16 on "
                      "512-bit vectors, 2 x 24 on 256-bit, 7 x 4 on 128-bit."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("constexpr size_t tileRows = k::ForVectorBits(5, 2, 7);"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("constexpr int64_t panelCols = k::ForVectorBits(16, 24, 4);"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("k::GemmTileRows<tileRows, size_t(panelCols)>("),
            std::string::npos)
      << text;
  // The weight is packed in the width of the target that runs.
  EXPECT_NE(text.find("const int64_t width = bits >= 512 ? 16 : bits >= 256 ? "
                      "24 : 4;"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("ForVectorBits(8, 6, 6)"), std::string::npos) << text;
  // Each target's own prefetch: L2 on 512-bit vectors, L1 on 256, none on
  // 128, the code asking for its kind.
  EXPECT_NE(
      text.find("constexpr size_t prefetchKind = k::ForVectorBits(2, 1, 0);"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("const float *nextPanel = prefetchKind == 1 && r0 + "
                      "nRows >= rows && panel + 1 < panels ? "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("const bool hasNext = prefetchKind == 2 && panel + 1 < "
                      "panels && firstLine < lines;"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(", cols, nextPanel, l2At, size_t(l2Lines));"),
            std::string::npos)
      << text;
}

TEST_F(HighwayGemmTilingTest, RefusesALinearWithoutATile) {
  // The tile is tfm-select-gemm-tiling's choice: the emitter makes none.
  ASSERT_TRUE(module);
  ASSERT_FALSE(getGemmTiling(linear()));
  std::string text;
  ASSERT_FALSE(emit(text)) << text;
  EXPECT_NE(text.find("tfm.linear has no tfm_codegen.gemm_tiling: the Highway "
                      "backend follows tfm-select-gemm-tiling"),
            std::string::npos)
      << text;
}

} // namespace
