//===- AttentionWeights.h - attention maps on request -----------*- C++ -*-===//
//
// The executable's --dump-attention (contract section 9): while a collector
// is set, each attention the compiler marked (tfm.attention's `weights_to`)
// asks for a buffer here and writes its softmax weights into it. No
// collector (the C API, every other run): the generated code gets null and
// computes nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_ATTENTIONWEIGHTS_H
#define TFM_RUNTIME_ATTENTIONWEIGHTS_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tfm::rt {

/// One attention's weights: float32 [batch, heads, queries, keys].
struct AttentionMap {
  int64_t shape[4] = {0, 0, 0, 0};
  std::vector<float> values;
  bool written = false;
};

/// Starts collecting into `maps` (one per ModelInfo::attentionMaps slot),
/// or stops (null). Not thread-safe: set it around a forward pass.
void collectAttentionWeights(std::vector<AttentionMap> *maps);

/// Whether map `slot` is collected now: generated code that computes the
/// weights apart from the attention asks first.
bool attentionWeightsWanted(int64_t slot);

/// Called by generated code, outside its parallel loops: the buffer for
/// map `slot` of that shape, or null when nothing is collected.
float *attentionWeightsFor(int64_t slot, int64_t batch, int64_t heads,
                           int64_t queries, int64_t keys);

} // namespace tfm::rt

#endif // TFM_RUNTIME_ATTENTIONWEIGHTS_H
