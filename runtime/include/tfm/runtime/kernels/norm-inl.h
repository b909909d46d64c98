// Normalisation of one row: layer norm as nn.LayerNorm computes it (biased
// variance, eps inside the square root) and RMS norm as LLaMA's RMSNorm does
// (x / sqrt(mean(x^2) + eps) * weight).

#if defined(TFM_RUNTIME_KERNELS_NORM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TFM_RUNTIME_KERNELS_NORM_INL_H_
#undef TFM_RUNTIME_KERNELS_NORM_INL_H_
#else
#define TFM_RUNTIME_KERNELS_NORM_INL_H_
#endif

#include <cmath>
#include <cstddef>

#include "hwy/highway.h"
#include "tfm/runtime/kernels/vector-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tfm::rt::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// y = (x - mean) / sqrt(var + eps) * gamma + beta over n features. Two
/// passes (mean, then centred squares) keep the variance accurate when the
/// mean is large. x may equal y.
HWY_INLINE void LayerNormRow(const float *x, const float *HWY_RESTRICT gamma,
                             const float *HWY_RESTRICT beta, float eps,
                             size_t n, float *y) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    sum = hn::Add(sum, hn::LoadU(d, x + i));
  float total = hn::GetLane(hn::SumOfLanes(d, sum));
  for (; i < n; ++i)
    total += x[i];
  const float mean = total / static_cast<float>(n);

  const auto meanV = hn::Set(d, mean);
  auto sq = hn::Zero(d);
  for (i = 0; i + lanes <= n; i += lanes) {
    const auto c = hn::Sub(hn::LoadU(d, x + i), meanV);
    sq = hn::MulAdd(c, c, sq);
  }
  float squares = hn::GetLane(hn::SumOfLanes(d, sq));
  for (; i < n; ++i)
    squares += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt(squares / static_cast<float>(n) + eps);

  const auto rstdV = hn::Set(d, rstd);
  for (i = 0; i + lanes <= n; i += lanes) {
    const auto c = hn::Mul(hn::Sub(hn::LoadU(d, x + i), meanV), rstdV);
    hn::StoreU(hn::MulAdd(c, hn::LoadU(d, gamma + i), hn::LoadU(d, beta + i)),
               d, y + i);
  }
  for (; i < n; ++i)
    y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
}

/// y = LayerNormRow(a + b): the residual add and the norm in one pass over
/// the row, bit-identical to Add then LayerNormRow. The sum goes to `sum`,
/// or (null) only through `y`.
HWY_INLINE void AddLayerNormRow(const float *a, const float *b,
                                const float *HWY_RESTRICT gamma,
                                const float *HWY_RESTRICT beta, float eps,
                                size_t n, float *sum, float *y) {
  float *s = sum ? sum : y;
  Add(a, b, s, n);
  LayerNormRow(s, gamma, beta, eps, n, y);
}

/// y = x / sqrt(mean(x^2) + eps) * gamma over n features (RMSNorm: no
/// centring, no bias). x may equal y.
HWY_INLINE void RmsNormRow(const float *x, const float *HWY_RESTRICT gamma,
                           float eps, size_t n, float *y) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto sq = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    sq = hn::MulAdd(v, v, sq);
  }
  float squares = hn::GetLane(hn::SumOfLanes(d, sq));
  for (; i < n; ++i)
    squares += x[i] * x[i];
  const float rms = 1.0f / std::sqrt(squares / static_cast<float>(n) + eps);

  const auto rmsV = hn::Set(d, rms);
  for (i = 0; i + lanes <= n; i += lanes)
    hn::StoreU(
        hn::Mul(hn::Mul(hn::LoadU(d, x + i), rmsV), hn::LoadU(d, gamma + i)), d,
        y + i);
  for (; i < n; ++i)
    y[i] = x[i] * rms * gamma[i];
}

/// y = RmsNormRow(a + b), the sum to `sum` or (null) only through `y`.
HWY_INLINE void AddRmsNormRow(const float *a, const float *b,
                              const float *HWY_RESTRICT gamma, float eps,
                              size_t n, float *sum, float *y) {
  float *s = sum ? sum : y;
  Add(a, b, s, n);
  RmsNormRow(s, gamma, eps, n, y);
}

} // namespace HWY_NAMESPACE
} // namespace tfm::rt::kernels
HWY_AFTER_NAMESPACE();

#endif // TFM_RUNTIME_KERNELS_NORM_INL_H_
