//===- HighwayFramePlanTest.cpp - the Highway backend follows tfm.frame ---===//
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

namespace {

// One unfused FFN ([?, ?, 8] -> 16 -> 8) and a residual add, at batch 1 and
// seq 4: the FFN's hidden layer (4 x 16 floats) is scratch, its result
// (4 x 8) lives until the add.
constexpr const char *kModel = R"mlir(
module @frame_plan attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  tfm.param @w1 : tensor<16x8xf32>
  tfm.param @b1 : tensor<16xf32>
  tfm.param @w2 : tensor<8x16xf32>
  tfm.param @b2 : tensor<8xf32>
  func.func @forward(%x: tensor<?x?x8xf32> {tfm.input = "input"}) -> (tensor<?x?x8xf32> {tfm.output = "hidden"}) {
    %w1 = tfm.weight @w1 : tensor<16x8xf32>
    %b1 = tfm.weight @b1 : tensor<16xf32>
    %w2 = tfm.weight @w2 : tensor<8x16xf32>
    %b2 = tfm.weight @b2 : tensor<8xf32>
    %0 = tfm.ffn <relu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %1 = tfm.add %0, %x : tensor<?x?x8xf32>
    return %1 : tensor<?x?x8xf32>
  }
}
)mlir";

class HighwayFramePlanTest : public ::tfm::test::HighwayEmitTest {
protected:
  HighwayFramePlanTest() : HighwayEmitTest(kModel) {}

  FeedForwardOp ffn() { return firstOp<FeedForwardOp>(); }

  /// Plans the module as tfm-plan-memory does.
  void plan() {
    auto forward = module->lookupSymbol<func::FuncOp>("forward");
    ASSERT_TRUE(succeeded(planFrame(forward, FrameBounds{1, 4})));
  }

  /// Replaces the FFN's slots by `slots` (name, offset, floats).
  void setSlots(ArrayRef<std::tuple<const char *, int64_t, int64_t>> slots) {
    SmallVector<Attribute> list;
    for (auto [name, offset, floats] : slots)
      list.push_back(FrameSlotAttr::get(&context, name, offset, floats));
    ffn()->setAttr("tfm.frame", ArrayAttr::get(&context, list));
  }
};

TEST_F(HighwayFramePlanTest, PlansAndFollows) {
  ASSERT_TRUE(module);
  plan();
  auto slots = ffn()->getAttrOfType<ArrayAttr>("tfm.frame");
  ASSERT_TRUE(slots);
  ASSERT_EQ(slots.size(), 2u);
  auto hidden = cast<FrameSlotAttr>(slots[0]);
  auto result = cast<FrameSlotAttr>(slots[1]);
  EXPECT_EQ(hidden.getName(), "hidden");
  EXPECT_EQ(hidden.getOffset(), 0);
  EXPECT_EQ(hidden.getFloats(), 64);
  EXPECT_EQ(result.getName(), "result0");
  EXPECT_EQ(result.getOffset(), 64);
  EXPECT_EQ(result.getFloats(), 32);

  // Moved by hand (still valid: nothing else is live), the code follows.
  setSlots({{"hidden", 32, 64}, {"result0", 0, 32}});
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  EXPECT_NE(text.find("arena.take(96); // 384 bytes, planned"),
            std::string::npos);
  EXPECT_NE(text.find("= frame + 32;"), std::string::npos) << text;
  EXPECT_NE(text.find("= frame + 0;"), std::string::npos) << text;
  EXPECT_EQ(text.find("= frame + 64;"), std::string::npos) << text;
}

TEST_F(HighwayFramePlanTest, PlansWhenThePassDidNotRun) {
  ASSERT_TRUE(module);
  std::string text;
  ASSERT_TRUE(emit(text)) << text;
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  auto floats = forward->getAttrOfType<IntegerAttr>("tfm.frame_floats");
  ASSERT_TRUE(floats);
  EXPECT_EQ(floats.getInt(), 96);
  EXPECT_NE(text.find("= frame + 64;"), std::string::npos) << text;
}

struct BadPlan {
  const char *what;
  std::vector<std::tuple<const char *, int64_t, int64_t>> slots;
  const char *error;
};

TEST_F(HighwayFramePlanTest, RefusesAPlanItsCodeDoesNotMatch) {
  const BadPlan cases[] = {
      {"no scratch",
       {{"result0", 64, 32}},
       "the memory plan (tfm.frame) has no slot 'hidden' for this op's code"},
      {"no result",
       {{"hidden", 0, 64}},
       "the memory plan (tfm.frame) has no slot 'result0' for this op's code"},
      {"small scratch",
       {{"hidden", 0, 48}, {"result0", 64, 32}},
       "frame slot 'hidden' holds 48 floats; the code needs 64"},
      {"small result",
       {{"hidden", 0, 64}, {"result0", 64, 31}},
       "frame slot 'result0' holds 31 floats; the code needs 32"},
      {"past the frame",
       {{"hidden", 48, 64}, {"result0", 0, 32}},
       "frame slot 'hidden' (floats 48 to 112) ends past the function's "
       "frame of 96 floats"},
      {"other scratch",
       {{"keysT", 0, 64}, {"result0", 64, 32}},
       "the code takes scratch 'hidden' where the memory plan (tfm.frame) "
       "has 'keysT'"},
      {"extra slot",
       {{"hidden", 0, 64}, {"result0", 64, 32}, {"qkv", 64, 16}},
       "the memory plan (tfm.frame) has a slot 'qkv' this op's code does "
       "not take"},
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
