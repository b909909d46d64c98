//===- AttentionWeights.cpp - attention maps on request -------------------===//

#include "tfm/runtime/AttentionWeights.h"

namespace tfm::rt {

namespace {
std::vector<AttentionMap> *collector = nullptr;
} // namespace

void collectAttentionWeights(std::vector<AttentionMap> *maps) {
  collector = maps;
}

bool attentionWeightsWanted(int64_t slot) {
  return collector && slot >= 0 && size_t(slot) < collector->size();
}

float *attentionWeightsFor(int64_t slot, int64_t batch, int64_t heads,
                           int64_t queries, int64_t keys) {
  if (!attentionWeightsWanted(slot))
    return nullptr;
  AttentionMap &map = (*collector)[size_t(slot)];
  map.shape[0] = batch;
  map.shape[1] = heads;
  map.shape[2] = queries;
  map.shape[3] = keys;
  map.values.assign(size_t(batch * heads * queries * keys), 0.0f);
  map.written = true;
  return map.values.data();
}

} // namespace tfm::rt
