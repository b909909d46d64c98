//===- AttentionKernelsTest.cpp - blocked attention
//-------------------------===//
//
// Against scalar references: see KernelTestSupport.h.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include "tfm/IR/KeySpan.h"

namespace {
using namespace tfm::kernel_test;
using RowKeys = mlir::tfm::KeySpan::RowKeys;

// Blocked attention: TransposedKeyScoresRows + OnlineSoftmaxBlockRows
//===----------------------------------------------------------------------===//

/// One head's keys and values, laid out as the generated code reads them:
/// keys transposed (kt[f * ldk + j]), values by row (v[j * ldv + c]), both
/// with NaN padding that must never be read.
struct KeysValues {
  size_t sk, dk, dv, ldk, ldv;
  std::vector<float> kt, v;

  KeysValues(size_t sk, size_t dk, size_t dv)
      : sk(sk), dk(dk), dv(dv), ldk(sk + 3), ldv(dv + 2), kt(dk * ldk, kNaN),
        v(sk * ldv, kNaN) {}
  float key(size_t j, size_t f) const { return kt[f * ldk + j]; }
  float &key(size_t j, size_t f) { return kt[f * ldk + j]; }
  float value(size_t j, size_t c) const { return v[j * ldv + c]; }
  float &value(size_t j, size_t c) { return v[j * ldv + c]; }
};

/// The query rows of one task: each real row's query and output have their
/// own buffers; outputs sit between sentinels.
struct QueryRows {
  // A whole vector: a full store past the end lands in the sentinel.
  static constexpr size_t kPad = hn::MaxLanes(hn::ScalableTag<float>());
  size_t dk, dv;
  std::vector<std::vector<float>> q, outStore;

  QueryRows(size_t rows, size_t dk, size_t dv)
      : dk(dk), dv(dv), q(rows, std::vector<float>(dk)),
        outStore(rows, std::vector<float>(dv + 2 * kPad, kSentinel)) {}
  float *out(size_t r) { return outStore[r].data() + kPad; }
};

/// A padding mask over the keys (contract section 8), as the generated
/// code hands it to OnlineSoftmaxBlockRows: sk floats, 1 a real key, 0
/// padding (`mask` empty: none). `asEmitted` runs the task the way
/// AttentionEmitter emits it (no mask read when every key is real, blocks
/// that are all padding skipped, neither scored nor passed to the kernel);
/// without it every block goes through the kernel with its slice of the
/// mask, so the kernel alone must keep padded keys out.
struct KeyPadding {
  std::vector<float> mask;
  bool asEmitted = false;
  const float *data() const { return mask.empty() ? nullptr : mask.data(); }
};

/// Whether key j is one of the row's keys (and, with a mask, a real one).
bool seen(const RowKeys &row, size_t j, const float *keyMask = nullptr) {
  if (keyMask && keyMask[j] == 0.0f)
    return false;
  return int64_t(j) < row.prefix ||
         (row.first <= int64_t(j) && int64_t(j) < row.end);
}

/// softmax(scale q k^T) v over the row's keys (the real ones of them, with
/// a mask), in double; all zeros for a row left with no key, as the
/// generated code's normaliser (0 for a sum of 0) leaves it.
std::vector<double> referenceAttention(const std::vector<float> &q,
                                       const KeysValues &kv, const RowKeys &row,
                                       float scale,
                                       const float *keyMask = nullptr) {
  std::vector<double> scores(kv.sk, -INFINITY);
  double maxScore = -INFINITY;
  for (size_t j = 0; j < kv.sk; ++j) {
    if (!seen(row, j, keyMask))
      continue;
    double s = 0;
    for (size_t f = 0; f < kv.dk; ++f)
      s += double(q[f]) * kv.key(j, f);
    scores[j] = s * scale;
    maxScore = std::max(maxScore, scores[j]);
  }
  double sum = 0;
  for (size_t j = 0; j < kv.sk; ++j)
    if (seen(row, j, keyMask))
      sum += scores[j] = std::exp(scores[j] - maxScore);
  std::vector<double> out(kv.dv, 0.0);
  for (size_t j = 0; j < kv.sk; ++j)
    if (seen(row, j, keyMask))
      for (size_t c = 0; c < kv.dv; ++c)
        out[c] += scores[j] / sum * kv.value(j, c);
  return out;
}

/// The attention of one task of `rows` (<= kRows) query rows, exactly as
/// AttentionEmitter's emitAttentionCore emits it for tiles of kRows query
/// rows and kKeyBlock keys: rows past the last repeat its query and output
/// pointers and keys; row r sees the keys [0, prefix) and [first, end) of
/// keys[r]. The global keys [0, prefix) first, in blocks of their own; then
/// the band from the smallest first key to the largest end. With a padding
/// mask, see KeyPadding; each row's normaliser is then 1 / sum, or 0 for a
/// row left with no key (sum 0). `sums` (rows floats, or null) gets each
/// row's softmax state sum before the normalisation.
template <size_t kRows, size_t kKeyBlock>
void runBlockedAttention(QueryRows &qr, size_t rows, const KeysValues &kv,
                         const std::vector<RowKeys> &rowKeys, float scale,
                         const KeyPadding &padding, float *sums) {
  const float *mask = padding.data();
  if (mask && padding.asEmitted && k::AllEqual(mask, kv.sk, 1.0f))
    mask = nullptr; // no padded key in this sequence
  const float *qs[kRows];
  float *os[kRows];
  int64_t keys[kRows], first[kRows], prefix[kRows];
  k::OnlineSoftmax states[kRows];
  for (size_t r = 0; r < kRows; ++r) {
    const size_t i = std::min(r, rows - 1);
    qs[r] = qr.q[i].data();
    os[r] = qr.out(i);
    keys[r] = rowKeys[i].end;
    first[r] = rowKeys[i].first;
    prefix[r] = rowKeys[i].prefix;
    if (r < rows)
      k::Zero(os[r], kv.dv);
  }
  HWY_ALIGN float s[kRows * kKeyBlock];
  auto keyBlocks = [&](int64_t begin, int64_t end, const int64_t *rowFirst,
                       const int64_t *rowEnd) {
    for (int64_t j0 = begin; j0 < end; j0 += kKeyBlock) {
      const int64_t n = std::min<int64_t>(kKeyBlock, end - j0);
      if (mask && padding.asEmitted && k::AllEqual(mask + j0, size_t(n), 0.0f))
        continue; // every key of the block is padding
      k::TransposedKeyScoresRows<kRows, kKeyBlock>(rows, qs, kv.kt.data() + j0,
                                                   kv.ldk, n, kv.dk, scale, s);
      size_t blockFirst[kRows], blockKeys[kRows];
      for (size_t r = 0; r < rows; ++r) {
        if (rowFirst)
          blockFirst[r] = size_t(std::clamp<int64_t>(rowFirst[r] - j0, 0, n));
        blockKeys[r] = size_t(std::clamp<int64_t>(rowEnd[r] - j0, 0, n));
      }
      k::OnlineSoftmaxBlockRows<kRows, kKeyBlock>(
          states, s, n, rowFirst ? blockFirst : nullptr, blockKeys,
          mask ? mask + j0 : nullptr, rows, kv.v.data() + j0 * kv.ldv, kv.ldv,
          os, kv.dv);
    }
  };
  int64_t prefixKeys = 0, bandBegin = first[0], bandEnd = 0;
  for (size_t r = 0; r < rows; ++r) {
    prefixKeys = std::max(prefixKeys, prefix[r]);
    bandBegin = std::min(bandBegin, first[r]);
    bandEnd = std::max(bandEnd, keys[r]);
  }
  keyBlocks(0, prefixKeys, nullptr, prefix);
  keyBlocks(bandBegin, bandEnd, first, keys);
  for (size_t r = 0; r < rows; ++r) {
    if (sums)
      sums[r] = states[r].sum;
    const float inverse =
        padding.data() ? (states[r].sum > 0.0f ? 1.0f / states[r].sum : 0.0f)
                       : 1.0f / states[r].sum;
    k::Scale(inverse, os[r], os[r], kv.dv);
  }
}

/// A tile of the blocked attention and its instance of the kernels.
struct AttentionTile {
  size_t rows;
  size_t keyBlock;
  void (*run)(QueryRows &, size_t, const KeysValues &,
              const std::vector<RowKeys> &, float, const KeyPadding &, float *);
};

template <size_t kRows, size_t kKeyBlock> AttentionTile attentionTile() {
  return {kRows, kKeyBlock, &runBlockedAttention<kRows, kKeyBlock>};
}

/// This target's default tile (tfm-select-attention-tiling's for long
/// sequences) and others #tfm_codegen.attention_tiling allows: one row (a
/// decoding step's), the most rows, blocks of one vector's worth of keys and of
/// several passes.
std::vector<AttentionTile> attentionTiles() {
  return {attentionTile<k::ForVectorBits(8, 2, 2), 64>(),
          attentionTile<1, 16>(), attentionTile<3, 48>(),
          attentionTile<16, 128>()};
}

std::string tileName(const AttentionTile &tile) {
  return "tile " + std::to_string(tile.rows) + " rows x " +
         std::to_string(tile.keyBlock) + " keys";
}

/// Runs the blocked attention and checks every real row against the
/// reference, and the sentinels around its output. The tolerance is
/// relative to the values' magnitude, widened by the float rounding of the
/// scores (eps times the sum of |terms|), which large scores make matter.
/// With a padding mask, a row left with no real key must have a state sum
/// of exactly 0 and a finite (zero) output.
void checkBlockedAttention(const AttentionTile &tile, QueryRows &qr,
                           size_t rows, const KeysValues &kv,
                           const std::vector<RowKeys> &rowKeys, float scale,
                           const KeyPadding &padding = {}) {
  const float *mask = padding.data();
  std::vector<float> sums(rows, kNaN);
  tile.run(qr, rows, kv, rowKeys, scale, padding, sums.data());
  for (size_t r = 0; r < rows; ++r) {
    const RowKeys &row = rowKeys[r];
    SCOPED_TRACE("row " + std::to_string(r) + " of " + std::to_string(rows) +
                 ", keys [0, " + std::to_string(row.prefix) + ") and [" +
                 std::to_string(row.first) + ", " + std::to_string(row.end) +
                 ")");
    const std::vector<double> ref =
        referenceAttention(qr.q[r], kv, row, scale, mask);
    bool anyKey = false;
    double maxValue = 0, maxScoreTerms = 0;
    for (size_t j = 0; j < kv.sk; ++j) {
      if (!seen(row, j, mask))
        continue;
      anyKey = true;
      double terms = 0;
      for (size_t f = 0; f < kv.dk; ++f)
        terms += std::fabs(double(qr.q[r][f]) * kv.key(j, f));
      maxScoreTerms = std::max(maxScoreTerms, terms * scale);
      for (size_t c = 0; c < kv.dv; ++c)
        maxValue = std::max(maxValue, std::fabs(double(kv.value(j, c))));
    }
    const double tol =
        maxValue *
        (1e-5 + 4 * std::numeric_limits<float>::epsilon() * maxScoreTerms);
    const std::vector<float> &store = qr.outStore[r];
    for (size_t i = 0; i < store.size(); ++i) {
      if (i < QueryRows::kPad || i >= QueryRows::kPad + kv.dv) {
        EXPECT_TRUE(sameBits(store[i], kSentinel))
            << "written at " << int64_t(i) - int64_t(QueryRows::kPad);
        continue;
      }
      const size_t c = i - QueryRows::kPad;
      EXPECT_NEAR(store[i], ref[c], tol) << "out[" << c << "]";
      if (!anyKey)
        EXPECT_TRUE(std::isfinite(store[i]))
            << "out[" << c << "] of a row with no real key";
    }
    if (anyKey)
      EXPECT_GT(sums[r], 0.0f);
    else
      EXPECT_EQ(sums[r], 0.0f) << "the state sum of a row with no real key";
  }
}

/// Key limits of one task: every row all sk keys, or causal ones that grow
/// by one per row from first (clamped to sk).
std::vector<RowKeys> keyLimits(size_t rows, size_t sk, size_t first) {
  std::vector<RowKeys> limits(rows);
  for (size_t r = 0; r < rows; ++r)
    limits[r].end = int64_t(std::min(sk, first + r));
  return limits;
}

struct AttentionShape {
  size_t dk;
  size_t sk;
};

void PrintTo(const AttentionShape &shape, std::ostream *os) {
  *os << "dk " << shape.dk << " sk " << shape.sk;
}

/// Keys in [-1, 1] and values of fillUniform.
KeysValues randomKeysValues(std::mt19937 &rng, size_t sk, size_t dk,
                            size_t dv) {
  KeysValues kv(sk, dk, dv);
  for (size_t j = 0; j < sk; ++j) {
    for (size_t f = 0; f < dk; ++f)
      kv.key(j, f) = std::uniform_real_distribution<float>(-1, 1)(rng);
    fillUniform(rng, &kv.value(j, 0), dv);
  }
  return kv;
}

class BlockedAttentionTest
    : public KernelTest,
      public ::testing::WithParamInterface<AttentionShape> {};

TEST_P(BlockedAttentionTest, MatchesNaiveSoftmax) {
  const size_t dk = GetParam().dk, sk = GetParam().sk, dv = dk;
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(2000 + dk * 53 + sk);
  const KeysValues kv = randomKeysValues(rng, sk, dk, dv);
  // Scores of a few units: weights far from uniform.
  const float scale = 2.0f / std::sqrt(float(dk));

  for (const AttentionTile &tile : attentionTiles()) {
    // The first row's limit: 1 (the first causal row), ones whose rows
    // straddle the ends of the first and second blocks (some rows take no
    // key of the last block), and sk (not causal).
    const size_t qRows = tile.rows, block = tile.keyBlock;
    std::vector<size_t> firsts = {1,
                                  2,
                                  block - qRows / 2,
                                  block,
                                  block + 1,
                                  2 * block - 1,
                                  2 * block + 3,
                                  sk > qRows ? sk - qRows + 1 : 1,
                                  sk};
    for (size_t rows = 1; rows <= qRows; ++rows) {
      QueryRows qr(rows, dk, dv);
      for (auto &q : qr.q)
        fillUniform(rng, q.data(), dk);
      for (size_t first : firsts) {
        if (first > sk)
          continue;
        SCOPED_TRACE(tileName(tile) + ": dk " + std::to_string(dk) + " sk " +
                     std::to_string(sk) + " rows " + std::to_string(rows) +
                     (first == sk ? " not causal"
                                  : " causal from " + std::to_string(first)));
        for (auto &store : qr.outStore)
          std::fill(store.begin(), store.end(), kSentinel);
        checkBlockedAttention(tile, qr, rows, kv, keyLimits(rows, sk, first),
                              scale);
      }
    }
  }
}

/// A sliding window of `window` keys each side (causal: before), with
/// `global` global tokens: the span #tfm.mask gives (MaskAttr::getKeySpan).
mlir::tfm::KeySpan windowSpan(int64_t window, bool causal, int64_t global) {
  mlir::tfm::KeySpan span;
  span.begin = {-window, 1, 1};
  span.end = mlir::tfm::KeyBound{causal ? 1 : window + 1, 1, 1};
  span.globalKeys = global;
  if (causal && global)
    span.globalEnd = mlir::tfm::KeyBound{1, 1, 1};
  return span;
}

TEST_P(BlockedAttentionTest, WindowsAndGlobalTokens) {
  const size_t dk = GetParam().dk, sk = GetParam().sk, dv = dk;
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(3000 + dk * 53 + sk);
  const KeysValues kv = randomKeysValues(rng, sk, dk, dv);
  const float scale = 2.0f / std::sqrt(float(dk));
  for (const AttentionTile &tile : attentionTiles())
    for (int64_t window : {0, 2, 17, 70})
      for (bool causal : {false, true})
        for (int64_t global : {0, 1, 5}) {
          const mlir::tfm::KeySpan span = windowSpan(window, causal, global);
          // Tasks at the start (global rows), straddling the global
          // positions, in the middle and at the end.
          for (size_t start : {size_t(0), size_t(1), size_t(4), size_t(30),
                               sk > tile.rows ? sk - tile.rows : 0}) {
            if (start >= sk)
              continue;
            const size_t rows = std::min(tile.rows, sk - start);
            QueryRows qr(rows, dk, dv);
            for (auto &q : qr.q)
              fillUniform(rng, q.data(), dk);
            std::vector<RowKeys> rowKeys(rows);
            for (size_t r = 0; r < rows; ++r)
              rowKeys[r] = span.rowKeys(int64_t(start + r), 0, int64_t(sk));
            SCOPED_TRACE(tileName(tile) + ": dk " + std::to_string(dk) +
                         " sk " + std::to_string(sk) + " window " +
                         std::to_string(window) + (causal ? " causal" : "") +
                         " global " + std::to_string(global) + " rows " +
                         std::to_string(start) + ".." +
                         std::to_string(start + rows));
            checkBlockedAttention(tile, qr, rows, kv, rowKeys, scale);
          }
        }
}

/// The padding masks of PaddedKeys, for sk keys in blocks of `block`.
struct MaskCase {
  std::string name;
  std::vector<float> mask;
};

std::vector<MaskCase> paddingMasks(std::mt19937 &rng, size_t sk, size_t block) {
  std::vector<MaskCase> cases;
  auto add = [&](std::string name, auto real) {
    MaskCase c{std::move(name), std::vector<float>(sk)};
    for (size_t j = 0; j < sk; ++j)
      c.mask[j] = real(j) ? 1.0f : 0.0f;
    cases.push_back(std::move(c));
  };
  // Random holes, about a third of the keys.
  std::bernoulli_distribution hole(1.0 / 3);
  std::vector<bool> holes(sk);
  for (size_t j = 0; j < sk; ++j)
    holes[j] = hole(rng);
  add("random holes", [&](size_t j) { return !holes[j]; });
  // Right padding (a batch's shorter sequence), past a block's end or not.
  add("right padded",
      [&](size_t j) { return j < std::max<size_t>(1, sk * 2 / 3); });
  // The whole second block padding (the first if there is only one): rows
  // that reach past it take keys before and after it.
  add("a padded block", [&](size_t j) {
    return sk > block ? (j < block || j >= 2 * block) : j >= sk / 2 + 1;
  });
  // The whole first block padding (all but the last key if there is only
  // one): causal rows that end inside it are left with no real key at all,
  // the others have real keys in a later block only.
  add("first block padded",
      [&](size_t j) { return j >= std::min(block, sk - 1); });
  // Every other key: padding in every vector of every block.
  add("alternate", [&](size_t j) { return j % 2 == 0; });
  // One real key, the last: every row that does not reach it has none.
  add("last key only", [&](size_t j) { return j + 1 == sk; });
  // No padding at all, given as a mask of ones.
  add("all real", [](size_t) { return true; });
  return cases;
}

/// Padded keys (the key padding mask of contract section 8) get no
/// weight: the kernel's `keyMask` against the reference that drops them,
/// for full and causal rows, each mask both the way the generated code runs
/// it (all-padding blocks skipped) and with every block through the kernel.
TEST_P(BlockedAttentionTest, PaddedKeys) {
  const size_t dk = GetParam().dk, sk = GetParam().sk, dv = dk;
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(4000 + dk * 53 + sk);
  const KeysValues kv = randomKeysValues(rng, sk, dk, dv);
  const float scale = 2.0f / std::sqrt(float(dk));
  for (const AttentionTile &tile : attentionTiles()) {
    const size_t qRows = tile.rows, block = tile.keyBlock;
    for (const MaskCase &mc : paddingMasks(rng, sk, block)) {
      // Padded keys that would win the softmax and values that would show
      // any weight they got: large scores, values of 1e4.
      KeysValues kvp = kv;
      for (size_t j = 0; j < sk; ++j)
        if (mc.mask[j] == 0.0f) {
          for (size_t f = 0; f < dk; ++f)
            kvp.key(j, f) *= 8.0f;
          for (size_t c = 0; c < dv; ++c)
            kvp.value(j, c) *= 1e4f;
        }
      for (bool asEmitted : {false, true}) {
        const KeyPadding padding{mc.mask, asEmitted};
        for (size_t rows : {size_t(1), (qRows + 1) / 2, qRows}) {
          QueryRows qr(rows, dk, dv);
          for (auto &q : qr.q)
            fillUniform(rng, q.data(), dk);
          for (size_t first :
               {size_t(1), size_t(2), block, block + 1, 2 * block + 3, sk}) {
            if (first > sk)
              continue;
            SCOPED_TRACE(
                tileName(tile) + ": dk " + std::to_string(dk) + " sk " +
                std::to_string(sk) + " rows " + std::to_string(rows) +
                (first == sk ? " not causal"
                             : " causal from " + std::to_string(first)) +
                ", mask " + mc.name +
                (asEmitted ? " (padded blocks skipped)" : ""));
            for (auto &store : qr.outStore)
              std::fill(store.begin(), store.end(), kSentinel);
            checkBlockedAttention(tile, qr, rows, kvp,
                                  keyLimits(rows, sk, first), scale, padding);
          }
        }
      }
    }
  }
}

/// Padding with a sliding window and global tokens (masks apply to
/// sliding_window attention too): the global keys' blocks take the mask as
/// well as the band's.
TEST_P(BlockedAttentionTest, PaddedKeysInWindows) {
  const size_t dk = GetParam().dk, sk = GetParam().sk, dv = dk;
  SCOPED_TRACE("target " + targetName());
  std::mt19937 rng(5000 + dk * 53 + sk);
  const KeysValues kv = randomKeysValues(rng, sk, dk, dv);
  const float scale = 2.0f / std::sqrt(float(dk));
  for (const AttentionTile &tile : attentionTiles())
    for (const MaskCase &mc : paddingMasks(rng, sk, tile.keyBlock)) {
      for (int64_t window : {0, 17})
        for (bool causal : {false, true})
          for (int64_t global : {0, 5}) {
            const mlir::tfm::KeySpan span = windowSpan(window, causal, global);
            for (size_t start :
                 {size_t(0), size_t(4), sk > tile.rows ? sk - tile.rows : 0}) {
              if (start >= sk)
                continue;
              const size_t rows = std::min(tile.rows, sk - start);
              QueryRows qr(rows, dk, dv);
              for (auto &q : qr.q)
                fillUniform(rng, q.data(), dk);
              std::vector<RowKeys> rowKeys(rows);
              for (size_t r = 0; r < rows; ++r)
                rowKeys[r] = span.rowKeys(int64_t(start + r), 0, int64_t(sk));
              SCOPED_TRACE(tileName(tile) + ": dk " + std::to_string(dk) +
                           " sk " + std::to_string(sk) + " window " +
                           std::to_string(window) + (causal ? " causal" : "") +
                           " global " + std::to_string(global) + " rows " +
                           std::to_string(start) + ".." +
                           std::to_string(start + rows) + ", mask " + mc.name);
              checkBlockedAttention(tile, qr, rows, kv, rowKeys, scale,
                                    KeyPadding{mc.mask, true});
            }
          }
    }
}

std::vector<AttentionShape> attentionShapes() {
  std::vector<AttentionShape> shapes;
  for (size_t dk : {8, 24, 64, 80})
    for (size_t sk : {1, 7, 64, 65, 200})
      shapes.push_back({dk, sk});
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockedAttentionTest, ::testing::ValuesIn(attentionShapes()),
    [](const ::testing::TestParamInfo<AttentionShape> &info) {
      return "Dk" + std::to_string(info.param.dk) + "_Keys" +
             std::to_string(info.param.sk);
    });

/// Scores of +-30 and more that rise, fall or jump from block to block: the
/// running max changes by tens between blocks, so the rescale of the sum
/// and of the output (by exp(-60) and the like) must be right, and a new
/// maximum inside a block must not overflow the exponentials.
class BlockedAttentionLargeScoresTest : public KernelTest {};

TEST_F(BlockedAttentionLargeScoresTest, RescalesRunningMax) {
  SCOPED_TRACE("target " + targetName());
  const size_t sk = 200;
  enum Trend { Rising, Falling, Jumping };
  const char *const trendNames[] = {"rising", "falling", "jumping"};
  for (size_t dk : {8, 64, 80}) {
    const size_t dv = dk;
    const float scale = 1.0f / std::sqrt(float(dk));
    for (Trend trend : {Rising, Falling, Jumping}) {
      std::mt19937 rng(3000 + dk * 3 + trend);
      // Feature 0 carries the trend: k_j[0] = t_j sqrt(dk) and q[0] in
      // [0.5, 1.5] make row r's score about q_r[0] t_j, plus O(1) noise
      // from the other features.
      KeysValues kv(sk, dk, dv);
      std::uniform_real_distribution<float> noise(-1, 1), jump(-35, 35);
      for (size_t j = 0; j < sk; ++j) {
        const float t = trend == Rising    ? -30.0f + 60.0f * j / (sk - 1)
                        : trend == Falling ? 30.0f - 60.0f * j / (sk - 1)
                                           : jump(rng);
        kv.key(j, 0) = t / scale;
        for (size_t f = 1; f < dk; ++f)
          kv.key(j, f) = noise(rng);
        fillUniform(rng, &kv.value(j, 0), dv);
      }
      for (const AttentionTile &tile : attentionTiles())
        for (size_t rows : {size_t(1), tile.rows}) {
          QueryRows qr(rows, dk, dv);
          for (auto &q : qr.q) {
            fillUniform(rng, q.data(), dk);
            q[0] = std::uniform_real_distribution<float>(0.5f, 1.5f)(rng);
          }
          for (size_t first : {size_t(1), tile.keyBlock - 1, sk}) {
            SCOPED_TRACE(tileName(tile) + ": dk " + std::to_string(dk) + " " +
                         trendNames[trend] + " rows " + std::to_string(rows) +
                         " first limit " + std::to_string(first));
            for (auto &store : qr.outStore)
              std::fill(store.begin(), store.end(), kSentinel);
            checkBlockedAttention(tile, qr, rows, kv,
                                  keyLimits(rows, sk, first), scale);
          }
        }
    }
  }
}

/// Padded keys with the largest scores of all (rising scores, the last
/// keys padding; jumping ones with the keys above 10 padded): the running
/// max must come from the real keys alone, or their weights underflow.
TEST_F(BlockedAttentionLargeScoresTest, PaddedKeysHoldTheLargestScores) {
  SCOPED_TRACE("target " + targetName());
  const size_t sk = 200;
  for (size_t dk : {8, 64}) {
    const size_t dv = dk;
    const float scale = 1.0f / std::sqrt(float(dk));
    for (bool jumping : {false, true}) {
      std::mt19937 rng(6000 + dk * 3 + jumping);
      KeysValues kv(sk, dk, dv);
      KeyPadding padding;
      padding.mask.resize(sk);
      std::uniform_real_distribution<float> noise(-1, 1), jump(-35, 35);
      for (size_t j = 0; j < sk; ++j) {
        const float t = jumping ? jump(rng) : -30.0f + 60.0f * j / (sk - 1);
        kv.key(j, 0) = t / scale;
        for (size_t f = 1; f < dk; ++f)
          kv.key(j, f) = noise(rng);
        fillUniform(rng, &kv.value(j, 0), dv);
        padding.mask[j] = (jumping ? t <= 10.0f : j < 150) ? 1.0f : 0.0f;
      }
      for (const AttentionTile &tile : attentionTiles())
        for (bool asEmitted : {false, true})
          for (size_t rows : {size_t(1), tile.rows}) {
            padding.asEmitted = asEmitted;
            QueryRows qr(rows, dk, dv);
            for (auto &q : qr.q) {
              fillUniform(rng, q.data(), dk);
              q[0] = std::uniform_real_distribution<float>(0.5f, 1.5f)(rng);
            }
            for (size_t first : {size_t(1), tile.keyBlock - 1, sk}) {
              SCOPED_TRACE(tileName(tile) + ": dk " + std::to_string(dk) +
                           (jumping ? " jumping" : " rising") + " rows " +
                           std::to_string(rows) + " first limit " +
                           std::to_string(first) +
                           (asEmitted ? " (padded blocks skipped)" : ""));
              for (auto &store : qr.outStore)
                std::fill(store.begin(), store.end(), kSentinel);
              checkBlockedAttention(tile, qr, rows, kv,
                                    keyLimits(rows, sk, first), scale, padding);
            }
          }
    }
  }
}

} // namespace
