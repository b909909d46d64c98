//===- InputsTest.cpp - checking a forward pass's inputs ------------------===//

#include "tfm/runtime/Inputs.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

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
  ModelInfo m = {};
  m.name = "m";
  m.inputs = inputs;
  m.numInputs = count;
  m.dModel = 4;
  m.vocabSize = vocab;
  m.outputWidth = vocab ? vocab : 4;
  m.maxSeqLen = 6;
  m.maxBatch = 2;
  m.forward = noForward;
  return m;
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

// BERT's inputs: ids of a vocabulary of 10, token types of 2, optional.
const InputInfo kWithTokenTypes[] = {{"input_ids", InputKind::TokenIds, 10},
                                     {"token_type_ids", InputKind::TokenIds, 2,
                                      /*zerosLike=*/0}};

TEST(Inputs, AbsentTokenTypesAreZerosOfTheIdsShape) {
  ModelInfo m = model(kWithTokenTypes, 2);
  const int32_t ids[] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[] = {2, 3};
  int32_t scratch0[12], scratch1[12];
  std::fill(std::begin(scratch1), std::end(scratch1), 7);
  Prepared p =
      prepare(m, {{DType::I32, 2, shape, ids}, TensorRef{}},
              {"ids.npy", "input 'token_type_ids'"}, scratch0, scratch1);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[1].data, scratch1);
  EXPECT_EQ(p.views[1].batch, 2);
  EXPECT_EQ(p.views[1].seq, 3);
  EXPECT_TRUE(
      std::all_of(scratch1, scratch1 + 6, [](int v) { return v == 0; }));
  EXPECT_EQ(scratch1[6], 7); // nothing past batch * seq
  EXPECT_EQ(p.output.rank, 3);
  EXPECT_EQ(p.output.shape[1], 3);
}

TEST(Inputs, TokenTypesAreCheckedAgainstTheirOwnBound) {
  ModelInfo m = model(kWithTokenTypes, 2);
  const int32_t ids[] = {9, 2, 3};
  const int64_t types[] = {0, 1, 1};
  const int64_t shape[] = {1, 3};
  int32_t scratch0[12], scratch1[12];
  Prepared p =
      prepare(m, {{DType::I32, 2, shape, ids}, {DType::I64, 2, shape, types}},
              {"ids.npy", "types.npy"}, scratch0, scratch1);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[1].data, scratch1);
  EXPECT_EQ(scratch1[0], 0);
  EXPECT_EQ(scratch1[2], 1);

  // An id the vocabulary has is out of the token types' range.
  const int32_t badTypes[] = {0, 2, 0};
  p = prepare(m,
              {{DType::I32, 2, shape, ids}, {DType::I32, 2, shape, badTypes}},
              {"ids.npy", "types.npy"}, scratch0, scratch1);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "types.npy: token type id 2 at position [0, 1] is out of "
                     "range [0, 2)");
}

TEST(Inputs, TokenTypesMustHaveTheIdsShape) {
  ModelInfo m = model(kWithTokenTypes, 2);
  const int32_t ids[] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[] = {2, 3}, other[] = {1, 6}, flat[] = {6};
  int32_t scratch0[12], scratch1[12];
  const int32_t zeros[6] = {};
  Prepared p =
      prepare(m, {{DType::I32, 2, shape, ids}, {DType::I32, 2, other, zeros}},
              {"ids.npy", "types.npy"}, scratch0, scratch1);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error,
            "types.npy: shape [1, 6] does not match ids.npy (expected [2, 3])");
  p = prepare(m, {{DType::I32, 2, shape, ids}, {DType::I32, 1, flat, zeros}},
              {"ids.npy", "types.npy"}, scratch0, scratch1);
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error,
            "types.npy: shape [6] does not match ids.npy (expected [2, 3])");
  // Unbatched ids take unbatched token types.
  p = prepare(m, {{DType::I32, 1, flat, ids}, {DType::I32, 1, flat, zeros}},
              {"ids.npy", "types.npy"}, scratch0, scratch1);
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.output.rank, 2);
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

// Padding masks (contract section 8): prepareMasks
//===----------------------------------------------------------------------===//

const MaskInfo kMask[] = {{"mask", 0}};
const MaskInfo kSeq2SeqMasks[] = {{"src_mask", 0}, {"tgt_mask", 1}};

ModelInfo maskedModel(const InputInfo *inputs, size_t count,
                      const MaskInfo *masks, size_t numMasks,
                      int64_t vocab = 10) {
  ModelInfo m = model(inputs, count, vocab);
  m.masks = masks;
  m.numMasks = numMasks;
  return m;
}

constexpr float kUnwritten = -7.0f;

/// prepareInputs, then prepareMasks on its views; each mask's scratch holds
/// maxBatch * maxSeqLen (12) floats, kUnwritten until written.
struct PreparedMasks {
  bool ok;
  std::string error;
  InputView views[4];
  float scratch[2][12];
};

PreparedMasks prepareWithMasks(const ModelInfo &m,
                               std::initializer_list<TensorRef> inputs,
                               std::initializer_list<TensorRef> masks,
                               std::initializer_list<const char *> sources) {
  PreparedMasks p;
  for (auto &row : p.scratch)
    std::fill(std::begin(row), std::end(row), kUnwritten);
  const char *inputSources[] = {"src.npy", "tgt.npy"};
  int32_t ids[2][12];
  int32_t *idScratch[] = {ids[0], ids[1]};
  OutputShape output;
  char error[256] = "";
  if (!prepareInputs(m, inputs.begin(), inputSources, idScratch, p.views,
                     output, error, sizeof(error))) {
    p.ok = false;
    p.error = std::string("prepareInputs: ") + error;
    return p;
  }
  float *scratch[] = {p.scratch[0], p.scratch[1]};
  p.ok = prepareMasks(m, inputs.begin(), masks.begin(), sources.begin(),
                      scratch, p.views, error, sizeof(error));
  p.error = error;
  return p;
}

std::vector<float> floats(const float *data, size_t n) {
  return std::vector<float>(data, data + n);
}

TEST(Masks, EveryDTypeBothShapesWrittenAsOnesAndZeros) {
  ModelInfo m = maskedModel(kIds, 1, kMask, 1);
  const int32_t ids[6] = {1, 2, 3, 4, 5, 6};
  const int64_t batched[] = {2, 3}, flat[] = {3};
  // Row 0: [1, 1, 0]; row 1: [0, 1, 1].
  const int32_t i32[6] = {1, 1, 0, 0, 1, 1};
  const int64_t i64[6] = {1, 1, 0, 0, 1, 1};
  const uint8_t b8[6] = {1, 1, 0, 0, 1, 1};
  const float f32[6] = {1, 1, 0, -0.0f, 1, 1}; // -0 is padding too
  const std::vector<float> expected = {1, 1, 0, 0, 1, 1};
  struct Case {
    DType dtype;
    const void *data;
  };
  for (Case c : {Case{DType::I32, i32}, Case{DType::I64, i64},
                 Case{DType::Bool, b8}, Case{DType::F32, f32}}) {
    SCOPED_TRACE(dtypeName(c.dtype));
    PreparedMasks p =
        prepareWithMasks(m, {{DType::I32, 2, batched, ids}},
                         {{c.dtype, 2, batched, c.data}}, {"m.npy"});
    ASSERT_TRUE(p.ok) << p.error;
    // The mask's view follows the inputs', of its input's batch and seq.
    EXPECT_EQ(p.views[1].data, p.scratch[0]);
    EXPECT_EQ(p.views[1].batch, 2);
    EXPECT_EQ(p.views[1].seq, 3);
    EXPECT_EQ(floats(p.scratch[0], 6), expected);
    EXPECT_EQ(p.scratch[0][6], kUnwritten); // nothing past batch * seq

    // [seq], as the ids are.
    p = prepareWithMasks(m, {{DType::I32, 1, flat, ids}},
                         {{c.dtype, 1, flat, c.data}}, {"m.npy"});
    ASSERT_TRUE(p.ok) << p.error;
    EXPECT_EQ(p.views[1].batch, 1);
    EXPECT_EQ(p.views[1].seq, 3);
    EXPECT_EQ(floats(p.scratch[0], 3), std::vector<float>({1, 1, 0}));
    EXPECT_EQ(p.scratch[0][3], kUnwritten);
  }
}

TEST(Masks, EmbeddingsTakeTheirShapeWithoutDModel) {
  ModelInfo m = maskedModel(kEmbeddings, 1, kMask, 1, 0);
  float values[2 * 3 * 4] = {};
  const int64_t batched[] = {2, 3, 4}, flat[] = {3, 4};
  const int64_t maskBatched[] = {2, 3}, maskFlat[] = {3};
  const int32_t mask[6] = {1, 0, 0, 1, 1, 1};
  PreparedMasks p =
      prepareWithMasks(m, {{DType::F32, 3, batched, values}},
                       {{DType::I32, 2, maskBatched, mask}}, {"m.npy"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(floats(p.scratch[0], 6), std::vector<float>({1, 0, 0, 1, 1, 1}));
  p = prepareWithMasks(m, {{DType::F32, 2, flat, values}},
                       {{DType::I32, 1, maskFlat, mask}}, {"m.npy"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(floats(p.scratch[0], 3), std::vector<float>({1, 0, 0}));
  // The embeddings' own shape is not a mask's.
  EXPECT_EQ(prepareWithMasks(m, {{DType::F32, 3, batched, values}},
                             {{DType::F32, 3, batched, values}}, {"m.npy"})
                .error,
            "m.npy: a padding mask of shape [2, 3, 4] does not match input "
            "'input' (expected [2, 3], the input's [batch, seq])");
}

TEST(Masks, AbsentMasksAreAllOnes) {
  ModelInfo m = maskedModel(kIds, 1, kMask, 1);
  const int32_t ids[6] = {};
  const int64_t batched[] = {2, 3};
  PreparedMasks p = prepareWithMasks(m, {{DType::I32, 2, batched, ids}},
                                     {TensorRef{}}, {"input 'mask'"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[1].data, p.scratch[0]);
  EXPECT_EQ(p.views[1].batch, 2);
  EXPECT_EQ(p.views[1].seq, 3);
  EXPECT_EQ(floats(p.scratch[0], 6), std::vector<float>(6, 1.0f));
  EXPECT_EQ(p.scratch[0][6], kUnwritten);
  // A null data pointer is "none", whatever the rest of the tensor says.
  const int64_t wrong[] = {5};
  p = prepareWithMasks(m, {{DType::I32, 2, batched, ids}},
                       {{DType(7), 1, wrong, nullptr}}, {"input 'mask'"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(floats(p.scratch[0], 6), std::vector<float>(6, 1.0f));
}

TEST(Masks, EncoderDecoderMasksFollowTheirOwnInputs) {
  ModelInfo m = maskedModel(kSeq2Seq, 2, kSeq2SeqMasks, 2);
  const int32_t ids[12] = {};
  const int64_t src[] = {2, 5}, tgt[] = {2, 3};
  const int64_t srcMask[10] = {1, 1, 1, 0, 0, 1, 1, 1, 1, 1};
  PreparedMasks p = prepareWithMasks(
      m, {{DType::I32, 2, src, ids}, {DType::I32, 2, tgt, ids}},
      {{DType::I64, 2, src, srcMask}, TensorRef{}},
      {"src_mask.npy", "input 'tgt_mask'"});
  ASSERT_TRUE(p.ok) << p.error;
  EXPECT_EQ(p.views[2].data, p.scratch[0]);
  EXPECT_EQ(p.views[2].seq, 5);
  EXPECT_EQ(p.views[3].data, p.scratch[1]);
  EXPECT_EQ(p.views[3].seq, 3);
  EXPECT_EQ(floats(p.scratch[0], 10),
            std::vector<float>({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(floats(p.scratch[1], 6), std::vector<float>(6, 1.0f));
  // The source's mask on the target: the message names the target.
  p = prepareWithMasks(m,
                       {{DType::I32, 2, src, ids}, {DType::I32, 2, tgt, ids}},
                       {TensorRef{}, {DType::I64, 2, src, srcMask}},
                       {"input 'src_mask'", "tgt_mask.npy"});
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.error, "tgt_mask.npy: a padding mask of shape [2, 5] does not "
                     "match input 'tgt' (expected [2, 3], the input's "
                     "[batch, seq])");
}

TEST(Masks, WrongShapeNamesTheInputAndItsShape) {
  ModelInfo m = maskedModel(kIds, 1, kMask, 1);
  const int32_t ids[6] = {}, ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t batched[] = {2, 3}, flat[] = {3}, longer[] = {2, 4},
                single[] = {1, 3}, six[] = {6};
  auto error = [&](const int64_t *inputShape, int inputRank,
                   const int64_t *maskShape, int maskRank) {
    return prepareWithMasks(m, {{DType::I32, inputRank, inputShape, ids}},
                            {{DType::I32, maskRank, maskShape, ones}},
                            {"m.npy"})
        .error;
  };
  EXPECT_EQ(error(batched, 2, longer, 2),
            "m.npy: a padding mask of shape [2, 4] does not match input "
            "'input' (expected [2, 3], the input's [batch, seq])");
  EXPECT_EQ(error(batched, 2, single, 2),
            "m.npy: a padding mask of shape [1, 3] does not match input "
            "'input' (expected [2, 3], the input's [batch, seq])");
  // The same elements in another shape are still another shape.
  EXPECT_EQ(error(batched, 2, six, 1),
            "m.npy: a padding mask of shape [6] does not match input 'input' "
            "(expected [2, 3], the input's [batch, seq])");
  EXPECT_EQ(error(flat, 1, single, 2),
            "m.npy: a padding mask of shape [1, 3] does not match input "
            "'input' (expected [3], the input's [seq])");
  EXPECT_EQ(error(flat, 1, six, 1),
            "m.npy: a padding mask of shape [6] does not match input 'input' "
            "(expected [3], the input's [seq])");
}

TEST(Masks, ValuesOtherThanZeroAndOneNameThePosition) {
  ModelInfo m = maskedModel(kIds, 1, kMask, 1);
  const int32_t ids[6] = {};
  const int64_t batched[] = {2, 3}, flat[] = {3};
  const int32_t two[6] = {1, 1, 1, 1, 2, 1};
  const int64_t minusOne[3] = {1, -1, 1};
  const int64_t huge[3] = {1, int64_t(1) << 32, 1}; // 1 if narrowed to int32
  const uint8_t boolTwo[3] = {1, 0, 2};
  const float half[6] = {1, 1, 1, 1, 1, 0.5f};
  const float nan[3] = {1, std::numeric_limits<float>::quiet_NaN(), 1};
  const float inf[3] = {std::numeric_limits<float>::infinity(), 1, 1};
  auto error = [&](DType dtype, const int64_t *shape, int rank,
                   const void *data) {
    return prepareWithMasks(m, {{DType::I32, rank, shape, ids}},
                            {{dtype, rank, shape, data}}, {"m.npy"})
        .error;
  };
  EXPECT_EQ(error(DType::I32, batched, 2, two),
            "m.npy: padding mask value 2 at [1, 1] is not 0 or 1 (1: a real "
            "token, 0: padding)");
  EXPECT_EQ(error(DType::I64, flat, 1, minusOne),
            "m.npy: padding mask value -1 at [1] is not 0 or 1 (1: a real "
            "token, 0: padding)");
  EXPECT_EQ(error(DType::I64, flat, 1, huge),
            "m.npy: padding mask value 4294967296 at [1] is not 0 or 1 (1: a "
            "real token, 0: padding)");
  EXPECT_EQ(error(DType::Bool, flat, 1, boolTwo),
            "m.npy: padding mask value 2 at [2] is not 0 or 1 (1: a real "
            "token, 0: padding)");
  EXPECT_EQ(error(DType::F32, batched, 2, half),
            "m.npy: padding mask value 0.5 at [1, 2] is not 0 or 1 (1: a real "
            "token, 0: padding)");
  EXPECT_EQ(error(DType::F32, flat, 1, nan),
            "m.npy: padding mask value nan at [1] is not 0 or 1 (1: a real "
            "token, 0: padding)");
  EXPECT_EQ(error(DType::F32, flat, 1, inf),
            "m.npy: padding mask value inf at [0] is not 0 or 1 (1: a real "
            "token, 0: padding)");
}

TEST(Masks, ARowWithNoRealTokenIsAnError) {
  ModelInfo m = maskedModel(kIds, 1, kMask, 1);
  const int32_t ids[6] = {};
  const int64_t batched[] = {2, 3}, flat[] = {3};
  const int32_t secondRowEmpty[6] = {0, 1, 0, 0, 0, 0};
  const float zeros[3] = {0, -0.0f, 0};
  const uint8_t firstRowEmpty[6] = {0, 0, 0, 1, 1, 1};
  EXPECT_EQ(prepareWithMasks(m, {{DType::I32, 2, batched, ids}},
                             {{DType::I32, 2, batched, secondRowEmpty}},
                             {"m.npy"})
                .error,
            "m.npy: row 1 of the padding mask has no real token (all 0)");
  EXPECT_EQ(prepareWithMasks(m, {{DType::I32, 2, batched, ids}},
                             {{DType::Bool, 2, batched, firstRowEmpty}},
                             {"m.npy"})
                .error,
            "m.npy: row 0 of the padding mask has no real token (all 0)");
  EXPECT_EQ(prepareWithMasks(m, {{DType::I32, 1, flat, ids}},
                             {{DType::F32, 1, flat, zeros}}, {"input 'mask'"})
                .error,
            "input 'mask': the padding mask has no real token (all 0)");
}

TEST(Masks, UnknownDTypeIsAnError) {
  ModelInfo m = maskedModel(kIds, 1, kMask, 1);
  const int32_t ids[3] = {}, mask[3] = {1, 1, 1};
  const int64_t flat[] = {3};
  EXPECT_EQ(prepareWithMasks(m, {{DType::I32, 1, flat, ids}},
                             {{DType(7), 1, flat, mask}}, {"m.npy"})
                .error,
            "m.npy: a padding mask must be int32, int64, bool or float32, "
            "not unknown");
}

TEST(Masks, AMaskOfAnInputTheModelLacksIsAnInternalError) {
  const MaskInfo stray[] = {{"mask", 1}};
  ModelInfo m = maskedModel(kIds, 1, stray, 1);
  const int32_t ids[3] = {};
  const int64_t flat[] = {3};
  EXPECT_EQ(prepareWithMasks(m, {{DType::I32, 1, flat, ids}}, {TensorRef{}},
                             {"m.npy"})
                .error,
            "internal error: mask 'mask' is of input 1 of 1");
}

} // namespace
