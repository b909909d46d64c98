// RUN: tfm-opt %s -split-input-file -verify-diagnostics

// One section per diagnostic of the tfm_codegen verifiers
// (CodegenDialect.cpp): its attributes, and where each discardable
// attribute may sit.

// L2 blocks are weight columns, never fewer than none.
func.func @linear_tiling_negative_block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gemm_tiling l2Columns must be 0 (panel by panel) or positive, got -32}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = -32, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// An L2 block is whole panels on every target.
func.func @linear_tiling_block_splits_a_panel(%x: tensor<4x8xf32>, %w: tensor<64x8xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{gemm_tiling l2Columns (48) must be a whole number of every target's panels, not of 32 columns}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 48, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<64x8xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// A tile's columns are one to four whole vectors of its target.
func.func @linear_tiling_cols_not_vectors(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gemm_tiling cols256 must be 1 to 4 vectors of 8 floats, got 12}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 12, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @linear_tiling_cols_too_wide(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gemm_tiling cols512 must be 1 to 4 vectors of 16 floats, got 80}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 80, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @linear_tiling_no_cols(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gemm_tiling cols128 must be 1 to 4 vectors of 4 floats, got 0}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 0, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A register tile has 1 to 16 rows on each vector width.
func.func @linear_tiling_no_rows(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gemm_tiling rows512 must be in [1, 16], got 0}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 0, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @linear_tiling_too_many_rows(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gemm_tiling rows256 must be in [1, 16], got 17}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 17, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @linear_tiling_negative_rows(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gemm_tiling rows128 must be in [1, 16], got -1}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = -1, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A tiling written without its register tile.
func.func @linear_tiling_missing_rows(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected ','}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// In L2 blocks a task's next panel is a block of tasks away: no prefetch.
func.func @linear_tiling_prefetch_in_blocks(%x: tensor<4x8xf32>, %w: tensor<64x8xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{gemm_tiling prefetches only panel by panel (l2Columns = 0), got l2Columns = 64 with prefetch256 = l1}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 64, prefetch512 = none, prefetch256 = l1, prefetch128 = none>} : (tensor<4x8xf32>, tensor<64x8xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// Not one of the kinds of prefetch.
func.func @linear_tiling_bad_prefetch(%x: tensor<4x8xf32>, %w: tensor<64x8xf32>) -> tensor<4x64xf32> {
  // expected-error @+2 {{expected ::mlir::tfm::codegen::GemmPrefetch to be one of: none, l1, l2}}
  // expected-error @+1 {{failed to parse TfmCodegen_GemmTilingAttr parameter 'prefetch512' which is to be a `::mlir::tfm::codegen::GemmPrefetch`}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = l3, prefetch256 = l3, prefetch128 = l3>} : (tensor<4x8xf32>, tensor<64x8xf32>) -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

// A task has 1 to 16 query rows on each vector width.
func.func @attention_tiling_no_rows(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{attention_tiling queryRows512 must be in [1, 16], got 0}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 0, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @attention_tiling_too_many_rows(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{attention_tiling queryRows256 must be in [1, 16], got 17}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q causal {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 17, queryRows128 = 2, keyBlock = 64>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @attention_tiling_negative_rows(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{attention_tiling queryRows128 must be in [1, 16], got -2}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = -2, keyBlock = 64>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// A block of keys is a whole number of vectors on every target (16 lanes at most).
func.func @attention_tiling_block_not_vectors(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{attention_tiling keyBlock must be a multiple of 16 in [16, 1024], got 40}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 40>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @attention_tiling_block_empty(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{attention_tiling keyBlock must be a multiple of 16 in [16, 1024], got 0}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 0>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// A task's scores (rows x keyBlock floats) live on its stack.
func.func @attention_tiling_block_too_long(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{attention_tiling keyBlock must be a multiple of 16 in [16, 1024], got 1040}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 1040>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// A tiling written without its key block.
func.func @attention_tiling_missing_block(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{expected ','}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// A GEMM's tiling is not an attention's.
func.func @attention_tiling_of_gemm(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm_codegen.gemm_tiling' belongs on a tfm.linear or tfm.grouped_linear}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l2, prefetch128 = l2>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

// A frame slot (tfm-plan-memory's #tfm_codegen.slot) names its buffer,
// starts on a 64-byte line and holds something.
func.func @slot_unaligned(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+1 {{frame slot 'result 0' offset must be a non-negative multiple of 16 floats (a 64-byte line), got 8}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 8, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slot_empty(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+1 {{frame slot 'result 0' must hold at least one float, got 0}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 0>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A slot holds a result or one of the scratch buffers ops declare.
func.func @slot_unknown_buffer(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+2 {{expected ::mlir::tfm::codegen::FrameBuffer to be one of: result, keys_transposed, bilinear_queries, additive_keys, additive_queries, rotary_cos, rotary_sin, feature_sums, features_transposed}}
  // expected-error @+1 {{failed to parse TfmCodegen_FrameSlotAttr parameter 'buffer' which is to be a `::mlir::tfm::codegen::FrameBuffer`}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<keysT, offset = 0, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// tfm_codegen.frame lists slots inside the function's frame that do not
// overlap // (an op's buffers are all live while it runs).
func.func @frame_not_slots(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+1 {{'tfm_codegen.frame' must be an array of #tfm_codegen.slot, got [0]}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [0]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @frame_without_size(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tfm_codegen.frame' needs the enclosing function's 'tfm_codegen.frame_floats'}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slot_outside_frame(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 16 : i64} {
  // expected-error @+1 {{frame slot 'rotary_cos' (floats 16 to 22) lies outside the function's frame of 16 floats}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 6>, #tfm_codegen.slot<rotary_cos, offset = 16, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slots_overlap(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+1 {{frame slots 'result 0' and 'keys_transposed' of one op overlap}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 20>, #tfm_codegen.slot<keys_transposed, offset = 16, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// expected-error @+1 {{'tfm_codegen.frame_floats' must be a non-negative i64, got -16 : i64}}
func.func @frame_negative(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = -16 : i64} {
  return %x : tensor<2x3xf32>
}

// -----

// expected-error @+1 {{'tfm_codegen.frame_floats' belongs on a function}}
module attributes {tfm_codegen.frame_floats = 16 : i64} {
}

// -----

func.func @attention_additive_tiling(%q: tensor<1x4x5x8xf32>, %wk: tensor<4x16x8xf32>, %wq: tensor<4x16x8xf32>, %v: tensor<4x16xf32>) -> tensor<1x4x5x8xf32> {
  // expected-error @+1 {{additive scores are taken one key at a time: no 'tfm_codegen.attention_tiling' applies}}
  %0 = tfm.attention <additive> %q, %q, %q params(%wk, %wq, %v) {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} : (tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<1x4x5x8xf32>
  return %0 : tensor<1x4x5x8xf32>
}

// -----

func.func @attention_tiling_not_a_tiling(%q: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
  // expected-error @+1 {{'tfm_codegen.attention_tiling' must be a #tfm_codegen.attention_tiling, got #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l2, prefetch128 = l2>}}
  %0 = tfm.attention <scaled_dot> %q, %q, %q {tfm_codegen.attention_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l2, prefetch128 = l2>} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
  return %0 : tensor<?x4x?x8xf32>
}

// -----

func.func @gemm_tiling_not_a_tiling(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tfm_codegen.gemm_tiling' must be a #tfm_codegen.gemm_tiling, got 8 : i64}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = 8} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @attention_tiling_on_linear(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tfm_codegen.attention_tiling' belongs on a tfm.attention}}
  %0 = tfm.linear %x, %w {tfm_codegen.attention_tiling = #tfm_codegen.attention_tiling<queryRows512 = 8, queryRows256 = 2, queryRows128 = 2, keyBlock = 64>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A slot's index numbers a result; a scratch buffer has none.
func.func @slot_scratch_index(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+1 {{frame slot 'keys_transposed' is a scratch buffer: it has no result index, got 1}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<keys_transposed, index = 1, offset = 0, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slot_negative_index(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+1 {{frame slot result index must be non-negative, got -1}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, index = -1, offset = 0, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slot_missing_result(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+1 {{frame slot 'result 1' names a result the op (1 results) does not have}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, index = 1, offset = 0, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// One buffer twice is two buffers in one place.
func.func @slot_twice(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
  // expected-error @+1 {{frame slots 'result 0' and 'result 0' of one op overlap}}
  %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 6>, #tfm_codegen.slot<result, offset = 0, floats = 6>]} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @frame_floats_not_i64(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 16 : i32} {
  // expected-error @-1 {{'tfm_codegen.frame_floats' must be a non-negative i64, got 16 : i32}}
  return %x : tensor<2x3xf32>
}

// -----

// Only a tfm.rotary rotates in place.
func.func @in_place_not_rotary(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tfm_codegen.in_place' is a unit attribute of a tfm.rotary}}
  %0 = tfm.add %x, %x {tfm_codegen.in_place} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @in_place_not_unit(%x: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+1 {{'tfm_codegen.in_place' is a unit attribute of a tfm.rotary}}
  %0 = tfm.rotary <half> %x {tfm_codegen.in_place = 1} : tensor<1x2x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @unknown_attribute(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tfm_codegen.tiling' is not a tfm_codegen attribute (gemm_tiling, attention_tiling, frame, frame_floats, in_place)}}
  %0 = tfm.add %x, %x {tfm_codegen.tiling = 1} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
