//===- InputsTest.cpp - checking a forward pass's inputs ------------------===//

#include "tfm/runtime/Inputs.h"

#include "gtest/gtest.h"

#include <string>

using namespace tfm::rt;

namespace {

void noForward(const float *const *, const InputView *, float *, Arena &,
               ThreadPool &) {}

const InputInfo kIds[] = {{"input", InputKind::TokenIds}};
const InputInfo kEmbeddings[] = {{"input", InputKind::Embeddings}};
const InputInfo kSeq2Seq[] = {{"src", InputKind::TokenIds},
                              {"tgt", InputKind::TokenIds}};

// vocab 10, d_model 4, logits of width 10, seq <= 6, batch <= 2.
ModelInfo model(const InputInfo *inputs, size_t count, int64_t vocab = 10) {
  return {
      "m", nullptr, 0,       inputs,  count,     4, vocab,   vocab ? vocab : 4,
      6,   2,       0,       nullptr, noForward, 0, nullptr, nullptr,
      0,   nullptr, nullptr, nullptr};
}

struct Prepared {
  bool ok;
  std::string error;
  InputView views[2];
  OutputShape output;
};

Prepared prepare(const ModelInfo &m, std::initializer_list<TensorRef> tensors,
                 std::initializer_list<const char *> sources,
                 int32_t *scratch0 = nullptr, int32_t *scratch1 = nullptr) {
  Prepared p;
  char error[256] = "";
  int32_t *scratch[] = {scratch0, scratch1};
  p.ok = prepareInputs(m, tensors.begin(), sources.begin(), scratch, p.views,
                       p.output, error, sizeof(error));
  p.error = error;
  return p;
}

TEST(Inputs, TokenIdsWithAndWithoutBatch) {
  ModelInfo m = model(kIds, 1);
  const int32_t ids[] = {1, 2, 3, 4, 5, 6};
  const int64_t flat[] = {6}, batched[] = {2, 3};
  Prepared p = prepare(m, {{DType::I32, 1, flat, ids}}, {"x.npy"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[0].batch, 1);
  EXPECT_EQ(p.views[0].seq, 6);
  EXPECT_EQ(p.views[0].data, ids); // int32 used in place
  EXPECT_EQ(p.output.rank, 2);
  EXPECT_EQ(p.output.shape[0], 6);
  EXPECT_EQ(p.output.shape[1], 10);

  p = prepare(m, {{DType::I32, 2, batched, ids}}, {"x.npy"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[0].batch, 2);
  EXPECT_EQ(p.views[0].seq, 3);
  EXPECT_EQ(p.output.rank, 3);
  EXPECT_EQ(p.output.elements(), 2u * 3 * 10);
}

TEST(Inputs, Int64IdsAreNarrowedIntoScratch) {
  ModelInfo m = model(kIds, 1);
  const int64_t ids[] = {9, 0, 4};
  const int64_t shape[] = {1, 3};
  int32_t scratch[12] = {};
  Prepared p = prepare(m, {{DType::I64, 2, shape, ids}}, {"x.npy"}, scratch);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[0].data, scratch);
  EXPECT_EQ(scratch[0], 9);
  EXPECT_EQ(scratch[2], 4);
}

TEST(Inputs, OutOfRangeIdNamesPositionAndValue) {
  ModelInfo m = model(kIds, 1);
  const int64_t ids[] = {1, 2, 3, 4, 10, 5};
  const int64_t shape[] = {2, 3};
  int32_t scratch[12];
  Prepared p = prepare(m, {{DType::I64, 2, shape, ids}}, {"ids.npy"}, scratch);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error,
            "ids.npy: token id 10 at position [1, 1] is out of range [0, 10)");
  const int32_t negative[] = {0, -3};
  const int64_t flat[] = {2};
  p = prepare(m, {{DType::I32, 1, flat, negative}}, {"ids.npy"});
  EXPECT_EQ(p.error,
            "ids.npy: token id -3 at position [1] is out of range [0, 10)");
}

TEST(Inputs, LimitsSayWhichOptionRaisesThem) {
  ModelInfo m = model(kIds, 1);
  int32_t ids[40] = {};
  const int64_t tooLong[] = {40}, tooWide[] = {3, 2}, empty[] = {0};
  EXPECT_EQ(prepare(m, {{DType::I32, 1, tooLong, ids}}, {"x.npy"}).error,
            "x.npy: sequence length 40 exceeds the compiled maximum 6 "
            "(tfm-compile --max-seq-len)");
  EXPECT_EQ(prepare(m, {{DType::I32, 2, tooWide, ids}}, {"x.npy"}).error,
            "x.npy: batch 3 exceeds the compiled maximum 2 (tfm-compile "
            "--max-batch)");
  EXPECT_EQ(prepare(m, {{DType::I32, 1, empty, ids}}, {"x.npy"}).error,
            "x.npy: sequence length 0 is not allowed (at least 1)");
}

TEST(Inputs, WrongDTypeOrRankForTokenIds) {
  ModelInfo m = model(kIds, 1);
  float values[4] = {};
  const int64_t flat[] = {4}, cube[] = {1, 2, 2};
  EXPECT_EQ(prepare(m, {{DType::F32, 1, flat, values}}, {"x.npy"}).error,
            "x.npy: token ids must be int32 or int64, not float32");
  EXPECT_EQ(prepare(m, {{DType::I32, 3, cube, values}}, {"x.npy"}).error,
            "x.npy: token ids must have shape [seq] or [batch, seq], not [1, "
            "2, 2]");
}

TEST(Inputs, EmbeddingsNeedFloat32AndDModel) {
  ModelInfo m = model(kEmbeddings, 1, 0);
  float values[2 * 3 * 4] = {};
  const int64_t batched[] = {2, 3, 4}, flat[] = {3, 4}, narrow[] = {3, 5},
                row[] = {4};
  Prepared p = prepare(m, {{DType::F32, 3, batched, values}}, {"e.npy"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[0].batch, 2);
  EXPECT_EQ(p.views[0].seq, 3);
  EXPECT_EQ(p.output.rank, 3);
  EXPECT_EQ(p.output.shape[2], 4);
  p = prepare(m, {{DType::F32, 2, flat, values}}, {"e.npy"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.output.rank, 2);
  EXPECT_EQ(prepare(m, {{DType::F32, 2, narrow, values}}, {"e.npy"}).error,
            "e.npy: embeddings of shape [3, 5] have last dimension 5, "
            "expected d_model 4");
  EXPECT_EQ(prepare(m, {{DType::F32, 1, row, values}}, {"e.npy"}).error,
            "e.npy: embeddings must have shape [seq, 4] or [batch, seq, 4], "
            "not [4]");
  EXPECT_EQ(prepare(m, {{DType::I64, 2, flat, values}}, {"e.npy"}).error,
            "e.npy: embeddings must be float32, not int64");
}

TEST(Inputs, EncoderDecoderBatchesMustMatchSeqsMayDiffer) {
  ModelInfo m = model(kSeq2Seq, 2);
  int32_t ids[12] = {};
  const int64_t src[] = {2, 5}, tgt[] = {2, 3}, single[] = {1, 3}, flat[] = {4};
  Prepared p =
      prepare(m, {{DType::I32, 2, src, ids}, {DType::I32, 2, tgt, ids}},
              {"src.npy", "tgt.npy"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[0].seq, 5);
  EXPECT_EQ(p.views[1].seq, 3);
  EXPECT_EQ(p.output.shape[1], 3); // the last input's seq
  EXPECT_EQ(prepare(m,
                    {{DType::I32, 2, src, ids}, {DType::I32, 2, single, ids}},
                    {"src.npy", "tgt.npy"})
                .error,
            "tgt.npy: batch 1 does not match batch 2 of src.npy");
  // The output has a batch dimension iff the last input has one.
  p = prepare(m, {{DType::I32, 2, single, ids}, {DType::I32, 1, flat, ids}},
              {"src.npy", "tgt.npy"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.output.rank, 2);
  EXPECT_EQ(p.output.shape[0], 4);
}

TEST(Inputs, NullDataIsAnError) {
  ModelInfo m = model(kIds, 1);
  const int64_t flat[] = {2};
  EXPECT_EQ(
      prepare(m, {{DType::I32, 1, flat, nullptr}}, {"input 'input'"}).error,
      "input 'input': data pointer is null");
}

TEST(Inputs, DefaultInputsHaveTheLargestShapeAndAreDeterministic) {
  ModelInfo ids = model(kIds, 1);
  DefaultInput a = makeDefaultInput(ids, 0), b = makeDefaultInput(ids, 0);
  EXPECT_EQ(a.rank, 2);
  EXPECT_EQ(a.shape[0], 2);
  EXPECT_EQ(a.shape[1], 6);
  ASSERT_EQ(a.ids.size(), 12u);
  EXPECT_EQ(a.ids, b.ids);
  for (int32_t id : a.ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 10);
  }
  ModelInfo floats = model(kEmbeddings, 1, 0);
  DefaultInput e = makeDefaultInput(floats, 0);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.shape[2], 4);
  EXPECT_EQ(e.floats.size(), 2u * 6 * 4);
  Prepared p = prepare(floats, {e.ref()}, {"input"});
  EXPECT_TRUE(p.ok) << p.error;
}

} // namespace
