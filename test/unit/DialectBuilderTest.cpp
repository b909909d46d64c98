//===- DialectBuilderTest.cpp - tfm IR built through the C++ API ----------===//
//
// Builds a post-norm encoder block with the generated builders, the way the
// frontend does, and checks that verification, type inference and the
// diagnostics behave as the dialect documents.
//
//===----------------------------------------------------------------------===//

#include "tfm/IR/TfmDialect.h"
#include "tfm/IR/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr int64_t kDModel = 32, kHeads = 4, kDFF = 64;

class EncoderBlockTest : public ::testing::Test {
protected:
  EncoderBlockTest() : builder(&context) {
    context.loadDialect<TfmDialect, func::FuncDialect>();
    loc = builder.getUnknownLoc();
    module = ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module->getBody());
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }

  /// Declares `name` at module level and reads it at the insertion point of
  /// `body`.
  Value weight(OpBuilder &body, StringRef name, ArrayRef<int64_t> shape) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(module->getBody());
    ParamOp::create(builder, loc, builder.getStringAttr(name),
                    TypeAttr::get(f32(shape)), /*alias=*/StringAttr());
    return WeightOp::create(body, loc, f32(shape), name);
  }

  /// Builds `func.func @encoder_block` and returns the op whose result the
  /// function returns.
  Operation *buildEncoderBlock(int64_t w2Rows = kDModel) {
    const int64_t dyn = ShapedType::kDynamic;
    RankedTensorType act = f32({dyn, dyn, kDModel});
    auto func = func::FuncOp::create(builder, loc, "encoder_block",
                                     builder.getFunctionType({act}, {act}));
    OpBuilder body = OpBuilder::atBlockEnd(func.addEntryBlock());
    Value x = func.getArgument(0);

    Value attn = MultiHeadAttentionOp::create(
        body, loc, act, ScoreKind::ScaledDot, x, /*memory=*/Value(), kHeads,
        /*num_kv_heads=*/IntegerAttr(),
        weight(body, "layers.0.self_attn.in_proj_weight",
               {3 * kDModel, kDModel}),
        weight(body, "layers.0.self_attn.in_proj_bias", {3 * kDModel}),
        weight(body, "layers.0.self_attn.out_proj.weight", {kDModel, kDModel}),
        weight(body, "layers.0.self_attn.out_proj.bias", {kDModel}),
        /*score_params=*/ValueRange(), /*mask=*/MaskAttr(),
        /*rope=*/RopeStyleAttr(), /*rope_base=*/FloatAttr(), /*cache=*/Value(),
        /*position=*/Value(), /*cache_read_only=*/false,
        /*proj_e=*/Value(), /*proj_f=*/Value(), /*features=*/Value(),
        /*block_pattern=*/Value(), /*key_padding=*/Value(),
        /*weights_slot=*/Value());
    Value h = AddOp::create(body, loc, x, attn);
    h = LayerNormOp::create(body, loc, /*rms=*/UnitAttr(), h,
                            weight(body, "layers.0.norm1.weight", {kDModel}),
                            weight(body, "layers.0.norm1.bias", {kDModel}),
                            body.getF32FloatAttr(1e-5f));
    Value ff = FeedForwardOp::create(
        body, loc, act, Activation::Gelu, /*gated=*/false, h,
        weight(body, "layers.0.linear1.weight", {kDFF, kDModel}),
        weight(body, "layers.0.linear1.bias", {kDFF}),
        weight(body, "layers.0.linear2.weight", {w2Rows, kDFF}),
        weight(body, "layers.0.linear2.bias", {kDModel}));
    h = AddOp::create(body, loc, h, ff);
    auto norm =
        LayerNormOp::create(body, loc, /*rms=*/UnitAttr(), h,
                            weight(body, "layers.0.norm2.weight", {kDModel}),
                            weight(body, "layers.0.norm2.bias", {kDModel}),
                            body.getF32FloatAttr(1e-5f));
    func::ReturnOp::create(body, loc, norm.getResult());
    return norm;
  }

  /// Verifies the module and returns every diagnostic it produced.
  std::string verifyAndCollect(bool &ok) {
    std::string messages;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      messages += diag.str() + "\n";
      return success();
    });
    ok = succeeded(verify(*module));
    return messages;
  }

  MLIRContext context;
  OpBuilder builder;
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module;
};

TEST_F(EncoderBlockTest, BuiltBlockVerifies) {
  buildEncoderBlock();
  bool ok = false;
  std::string messages = verifyAndCollect(ok);
  EXPECT_TRUE(ok) << messages;
  EXPECT_EQ(messages, "");

  int params = 0;
  module->walk([&](ParamOp) { ++params; });
  EXPECT_EQ(params, 12); // 4 attention, 4 norm, 4 feed-forward tensors
}

TEST_F(EncoderBlockTest, MisshapenWeightIsNamedInTheDiagnostic) {
  buildEncoderBlock(/*w2Rows=*/kDModel + 1);
  bool ok = true;
  std::string messages = verifyAndCollect(ok);
  EXPECT_FALSE(ok);
  EXPECT_NE(messages.find("w2 must be [32, 64], got 'tensor<33x64xf32>'"),
            std::string::npos)
      << messages;
}

TEST_F(EncoderBlockTest, LinearInfersItsResultType) {
  const int64_t dyn = ShapedType::kDynamic;
  auto func = func::FuncOp::create(
      builder, loc, "proj", builder.getFunctionType({f32({dyn, 7, 32})}, {}));
  OpBuilder body = OpBuilder::atBlockEnd(func.addEntryBlock());
  auto linear =
      LinearOp::create(body, loc, func.getArgument(0),
                       weight(body, "w", {48, 32}), weight(body, "b", {48}));
  EXPECT_EQ(linear.getType(), f32({dyn, 7, 48}));

  auto heads = SplitHeadsOp::create(body, loc, linear.getResult(), 3);
  EXPECT_EQ(heads.getType(), f32({dyn, 3, 7, 16}));
  auto attn = AttentionOp::create(body, loc, ScoreKind::Dot, heads, heads,
                                  heads, ValueRange(), /*causal=*/true);
  EXPECT_EQ(attn.getType(), f32({dyn, 3, 7, 16}));
  auto merged = MergeHeadsOp::create(body, loc, attn.getResult());
  EXPECT_EQ(merged.getType(), f32({dyn, 7, 48}));
  func::ReturnOp::create(body, loc);

  bool ok = false;
  std::string messages = verifyAndCollect(ok);
  EXPECT_TRUE(ok) << messages;
}

TEST_F(EncoderBlockTest, WeightMustNameAParam) {
  auto func = func::FuncOp::create(builder, loc, "dangling",
                                   builder.getFunctionType({}, {}));
  OpBuilder body = OpBuilder::atBlockEnd(func.addEntryBlock());
  WeightOp::create(body, loc, f32({4}), "nowhere");
  func::ReturnOp::create(body, loc);
  bool ok = true;
  std::string messages = verifyAndCollect(ok);
  EXPECT_FALSE(ok);
  EXPECT_NE(messages.find("@nowhere does not name a tfm.param"),
            std::string::npos)
      << messages;
}

} // namespace
