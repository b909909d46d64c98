//===- HighwayFramePlanTest.cpp - the Highway backend follows tfm_codegen.frame
//---===//
//
// tfm-plan-memory places each buffer; the Highway emitter takes the planned
// slots and must refuse a plan its code does not match (a missing, small,
// extra or misordered slot) rather than write outside it. tfm-compile
// cannot be fed such a plan, so these go through the C++ API.
//
//===----------------------------------------------------------------------===//

#include "HighwayEmitTest.h"

#include "tfm/IR/TfmOps.h"
#include "tfm/Transforms/MemoryPlan.h"

#include <string>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::codegen;

namespace {

// One self-attention core of 2 heads of 4 over the Q/K/V rows of a GEMM
// ([?, ?, 8] -> 24), then a residual add, at batch 1 and seq 4: the GEMM's
// rows (4 x 24 floats) live until the attention (its heads are views of
// them); the attention takes its result (4 x 8, stored merged) and scratch
// for the transposed keys (2 x 4 x 4); the add's result is the function's.
constexpr const char *kModel = R"mlir(
module @frame_plan attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  tfm.param @w : tensor<24x8xf32>
  func.func @forward(%x: tensor<?x?x8xf32> {tfm.input = "input"}) -> (tensor<?x?x8xf32> {tfm.output = "hidden"}) {
    %w = tfm.weight @w : tensor<24x8xf32>
    %qkv = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 4, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<?x?x8xf32>, tensor<24x8xf32>) -> tensor<?x?x24xf32>
    %q = tfm.split_heads %qkv part 0 of 3 into 2 heads : tensor<?x?x24xf32> -> tensor<?x2x?x4xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 2 heads : tensor<?x?x24xf32> -> tensor<?x2x?x4xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 2 heads : tensor<?x?x24xf32> -> tensor<?x2x?x4xf32>
    %o = tfm.attention <dot> %q, %k, %v {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 4, queryRows256 = 2, queryRows128 = 2, keyBlock = 16>} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %m = tfm.merge_heads %o : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
    %1 = tfm.add %m, %x : tensor<?x?x8xf32>
    return %1 : tensor<?x?x8xf32>
  }
}
)mlir";

class HighwayFramePlanTest : public ::tfm::test::HighwayEmitTest {
protected:
  HighwayFramePlanTest() : HighwayEmitTest(kModel) {}

  AttentionOp attention() { return firstOp<AttentionOp>(); }

  /// Plans the module as tfm-plan-memory does.
  void plan() {
    auto forward = module->lookupSymbol<func::FuncOp>("forward");
    ASSERT_TRUE(succeeded(planFrame(forward, FrameBounds{1, 4})));
  }

  /// Replaces the attention's slots by `slots` (buffer, offset, floats).
  void setSlots(ArrayRef<std::tuple<FrameBuffer, int64_t, int64_t>> slots) {
    SmallVector<Attribute> list;
    for (auto [buffer, offset, floats] : slots)
      list.push_back(FrameSlotAttr::get(&context, buffer, 0, offset, floats));
    attention()->setAttr(FrameName::getNameStr(),
                         ArrayAttr::get(&context, list));
  }
};

TEST_F(HighwayFramePlanTest, PlansAndFollows) {
  ASSERT_TRUE(module);
  plan();
  auto slots = attention()->getAttrOfType<ArrayAttr>(FrameName::getNameStr());
  ASSERT_TRUE(slots);
  ASSERT_EQ(slots.size(), 2u);
  auto result = cast<FrameSlotAttr>(slots[0]);
  auto keys = cast<FrameSlotAttr>(slots[1]);
  EXPECT_EQ(result.getBuffer(), FrameBuffer::Result);
  EXPECT_EQ(result.getIndex(), 0);
  EXPECT_EQ(result.getOffset(), 96);
  EXPECT_EQ(result.getFloats(), 32);
  EXPECT_EQ(keys.getBuffer(), FrameBuffer::KeysTransposed);
  EXPECT_EQ(keys.getOffset(), 128);
  EXPECT_EQ(keys.getFloats(), 32);
  // The views take no slot.
  module->walk([](SplitHeadsOp view) {
    EXPECT_FALSE(view->hasAttr(FrameName::getNameStr()));
  });

  // Swapped by hand (still valid: nothing else is live there), the code
  // follows.
  setSlots(
      {{FrameBuffer::Result, 128, 32}, {FrameBuffer::KeysTransposed, 96, 32}});
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  EXPECT_NE(text.find("arena.take(160); // 640 bytes, planned"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("= frame + 128;\n"), std::string::npos) << text;
  EXPECT_NE(text.find("keys_transposed2 = frame + 96;"), std::string::npos)
      << text;
}

TEST_F(HighwayFramePlanTest, PlansWhenThePassDidNotRun) {
  ASSERT_TRUE(module);
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto floats =
      forward->getAttrOfType<IntegerAttr>(FrameFloatsName::getNameStr());
  ASSERT_TRUE(floats);
  EXPECT_EQ(floats.getInt(), 160);
  EXPECT_NE(text.find("keys_transposed2 = frame + 128;"), std::string::npos)
      << text;
}

struct BadPlan {
  const char *what;
  std::vector<std::tuple<FrameBuffer, int64_t, int64_t>> slots;
  const char *error;
};

TEST_F(HighwayFramePlanTest, RefusesAPlanItsCodeDoesNotMatch) {
  const BadPlan cases[] = {
      {"no scratch",
       {{FrameBuffer::Result, 96, 32}},
       "the memory plan (tfm_codegen.frame) has no slot 'keys_transposed' "
       "for this op's code"},
      {"no result",
       {{FrameBuffer::KeysTransposed, 128, 32}},
       "the memory plan (tfm_codegen.frame) has no slot 'result 0' for this "
       "op's code"},
      {"small scratch",
       {{FrameBuffer::Result, 96, 32}, {FrameBuffer::KeysTransposed, 128, 16}},
       "frame slot 'keys_transposed' holds 16 floats; the code needs 32"},
      {"small result",
       {{FrameBuffer::Result, 96, 31}, {FrameBuffer::KeysTransposed, 128, 32}},
       "frame slot 'result 0' holds 31 floats; the code needs 32"},
      {"past the frame",
       {{FrameBuffer::Result, 96, 32}, {FrameBuffer::KeysTransposed, 144, 32}},
       "frame slot 'keys_transposed' (floats 144 to 176) ends past the "
       "function's "
       "frame of 160 floats"},
      {"other scratch",
       {{FrameBuffer::Result, 96, 32}, {FrameBuffer::BilinearQueries, 128, 32}},
       "the code takes scratch 'keys_transposed' where the memory plan "
       "(tfm_codegen.frame) has 'bilinear_queries'"},
      {"extra slot",
       {{FrameBuffer::Result, 96, 32},
        {FrameBuffer::KeysTransposed, 128, 32},
        {FrameBuffer::RotaryCos, 128, 16}},
       "the memory plan (tfm_codegen.frame) has a slot 'rotary_cos' this "
       "op's code does not take"},
  };
  for (const BadPlan &bad : cases) {
    parse(kModel);
    ASSERT_TRUE(module);
    plan();
    setSlots(bad.slots);
    std::string text;
    EXPECT_FALSE(emit(text)) << bad.what;
    EXPECT_NE(text.find("the Highway backend cannot follow the memory plan: "),
              std::string::npos)
        << bad.what << ": " << text;
    EXPECT_NE(text.find(bad.error), std::string::npos)
        << bad.what << ": " << text;
  }
}

} // namespace
