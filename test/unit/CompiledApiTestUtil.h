//===- CompiledApiTestUtil.h - calling a compiled model's C API -*- C++ -*-===//
//
// What the compiled-model tests share: a tfm_tensor over caller data, and a
// forward pass through a model's NAME_forward / NAME_last_error that copies
// out its status, message and output.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_COMPILEDAPITESTUTIL_H
#define TFM_TEST_COMPILEDAPITESTUTIL_H

#include "tfm/tfm.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tfm::test {

inline tfm_tensor tensor(int32_t dtype, std::vector<int64_t> shape,
                         const void *data) {
  tfm_tensor t = {};
  t.dtype = dtype;
  t.rank = int32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    t.shape[i] = shape[i];
  t.data = const_cast<void *>(data);
  return t;
}

/// A forward pass's status, message and a copy of its output.
struct ForwardResult {
  int status;
  std::string error;
  std::vector<float> out;
  std::vector<int64_t> shape;
};

using ForwardFn = int (*)(tfm_model *, const tfm_tensor *, size_t,
                          tfm_tensor *);
using LastErrorFn = const char *(*)(const tfm_model *);

inline ForwardResult runForward(ForwardFn forward, LastErrorFn lastError,
                                tfm_model *model,
                                const std::vector<tfm_tensor> &inputs) {
  tfm_tensor output = {};
  ForwardResult r;
  r.status = forward(model, inputs.data(), inputs.size(), &output);
  r.error = lastError(model);
  if (r.status == 0) {
    size_t count = 1;
    for (int d = 0; d < output.rank; ++d) {
      r.shape.push_back(output.shape[d]);
      count *= size_t(output.shape[d]);
    }
    const float *data = static_cast<const float *>(output.data);
    r.out.assign(data, data + count);
  }
  return r;
}

} // namespace tfm::test

#endif // TFM_TEST_COMPILEDAPITESTUTIL_H
