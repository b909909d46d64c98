// A program that uses a model compiled with --emit=lib:
//
//   tfm-compile examples/tiny-decoder.json --emit=lib -o out/libtiny_decoder.so
//   c++ -std=c++17 -I out examples/use-library/main.cpp -L out -ltiny_decoder \
//       -Wl,-rpath,$PWD/out -o use-library
//   ./use-library [weights.safetensors]
//
// MODEL names the model (its C identifier); it defaults to tiny_decoder.
// The model must take token ids (vocab_size set).

#ifndef MODEL
#define MODEL tiny_decoder
#endif
#define TFM_STR2(x) #x
#define TFM_STR(x) TFM_STR2(x)
#define TFM_CAT2(a, b) a##b
#define TFM_CAT(a, b) TFM_CAT2(a, b)
#include TFM_STR(MODEL.h)

#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  char err[512] = "";
  tfm_model *model =
      TFM_CAT(MODEL, _create)(argc > 1 ? argv[1] : nullptr, err, sizeof err);
  if (!model) {
    std::fprintf(stderr, "create failed: %s\n", err);
    return 1;
  }

  // One sequence of 5 token ids, without a batch dimension.
  std::vector<int32_t> ids = {1, 2, 3, 4, 5};
  tfm_tensor input = {};
  input.dtype = TFM_I32;
  input.rank = 1;
  input.shape[0] = static_cast<int64_t>(ids.size());
  input.data = ids.data();

  // Run it twice: a model is created once and run many times.
  tfm_tensor output = {};
  for (int run = 0; run < 2; ++run) {
    output.data = nullptr; // use the model's own output buffer
    if (TFM_CAT(MODEL, _forward)(model, &input, 1, &output) != 0) {
      std::fprintf(stderr, "forward failed\n");
      TFM_CAT(MODEL, _destroy)(model);
      return 1;
    }
  }

  const float *logits = static_cast<const float *>(output.data);
  int64_t count = 1;
  std::printf("output shape [");
  for (int i = 0; i < output.rank; ++i) {
    std::printf(i ? ", %lld" : "%lld", static_cast<long long>(output.shape[i]));
    count *= output.shape[i];
  }
  double sum = 0;
  for (int64_t i = 0; i < count; ++i)
    sum += logits[i];
  std::printf("] sum %.6f first %.6f\n", sum, count ? logits[0] : 0.0f);
  TFM_CAT(MODEL, _destroy)(model);
  return 0;
}
