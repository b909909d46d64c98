/*===- tfm.h - types of the C API of a compiled model -------------*- C -*-===*\
|*                                                                            *|
|* Shared by every library tfm-compile emits: the generated NAME.h pastes     *|
|* this file in, so it must stay plain C (C99) with a guard that lets two     *|
|* model headers be included in one translation unit.                         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TFM_TFM_H
#define TFM_TFM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A model created once (weights loaded, memory allocated) and run many
   times. Opaque; one forward pass at a time per model. */
typedef struct tfm_model tfm_model;

/* Element types of tfm_tensor.dtype. */
#define TFM_F32 0
#define TFM_I32 1
#define TFM_I64 2
#define TFM_BOOL 3 /* one byte per element, 0 or 1: padding masks only */

#define TFM_MAX_RANK 4

/* A dense C-order tensor the caller owns. Inputs: token ids (TFM_I32 or
   TFM_I64, [seq] or [batch, seq]) or embeddings (TFM_F32, [seq, d_model] or
   [batch, seq, d_model]); after them, optionally, one padding mask per input
   (TFM_I32, TFM_I64, TFM_BOOL or TFM_F32, the input's [seq] or [batch, seq],
   1 for a real token and 0 for padding; data NULL: no mask for that input).
   The output is always TFM_F32. */
typedef struct {
  int32_t dtype;
  int32_t rank;
  int64_t shape[TFM_MAX_RANK];
  void *data;
} tfm_tensor;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TFM_TFM_H */
