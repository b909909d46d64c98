//===- CApi.h - what a generated NAME_* C API forwards to -------*- C++ -*-===//
//
// The generated library defines NAME_create/forward/destroy as one-line
// forwards to these, passing its own `tfm::rt::kModel`; the runtime thus holds
// the whole C API once instead of in every generated file.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_CAPI_H
#define TFM_RUNTIME_CAPI_H

#include "tfm/runtime/Model.h"
#include "tfm/tfm.h"

extern "C" {

/// Loads the weights (`weights_path` null: deterministic random ones) and
/// allocates all memory a forward pass needs. Threads: $TFM_NUM_THREADS, or
/// 1. Returns null on error with the message in `err` (when non-null).
tfm_model *tfm_rt_create(const tfm::rt::ModelInfo *model,
                         const char *weights_path, char *err, size_t err_len);

/// Runs one forward pass. `inputs` follow ModelInfo::inputs in order. If
/// `output->data` is null it is set to the model's own buffer (valid until
/// the next call); else it must hold batch * seq * outputWidth floats.
/// dtype, rank and shape of `output` are always set. Returns 0 on success,
/// else 1 with the message in tfm_rt_last_error. Allocates nothing.
int tfm_rt_forward(tfm_model *model, const tfm_tensor *inputs, size_t n_inputs,
                   tfm_tensor *output);

/// Generation with the key/value cache (decoder and encoder_decoder models
/// with token ids and an LM head). prefill takes the inputs of forward (the
/// prompt; for encoder_decoder src and the start of tgt), runs them from
/// position 0 and writes the logits of the last position ([batch, 1,
/// vocab]); decode runs the next target tokens ([seq] or [batch, seq], the
/// prefill's batch) at the positions after everything so far and writes
/// their logits ([batch, seq, vocab]). Output as for tfm_rt_forward.
int tfm_rt_prefill(tfm_model *model, const tfm_tensor *inputs, size_t n_inputs,
                   tfm_tensor *output);
int tfm_rt_decode(tfm_model *model, const tfm_tensor *tokens,
                  tfm_tensor *output);

/// The message of the last failed call, or "" after a success.
const char *tfm_rt_last_error(const tfm_model *model);

void tfm_rt_destroy(tfm_model *model);

} // extern "C"

#endif // TFM_RUNTIME_CAPI_H
