// RUN: tfm-opt %s -split-input-file --tfm-select-gemm-tiling | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-select-gemm-tiling=remarks=true -verify-diagnostics -o /dev/null
// RUN: tfm-opt %s -split-input-file --tfm-select-gemm-tiling="l1-bytes=32768 l2-bytes=262144" | FileCheck %s --check-prefix=SMALL
// RUN: not tfm-opt %s -split-input-file --tfm-select-gemm-tiling="l1-bytes=0" 2>&1 | FileCheck %s --check-prefix=BAD

// --tfm-select-gemm-tiling (defaults: 48 KiB L1, 1 MiB L2): the order in
// which each tfm.linear takes its weight's panels (each target's register tile and panel width), with the
// reasons in a remark; the linears it must leave alone say why.

// BAD: error: tfm-select-gemm-tiling: l1-bytes and l2-bytes must be positive, got 0 and 1048576

// GPT-2 small at seq 512: the Q/K/V GEMM's rows (512 x 768 floats) do not
// fit in half of L2: blocks of 5 panels of 96 KiB, no prefetch in blocks.
// The FFN's second GEMM (depth 3072): one 384 KiB panel at a time, the most
// half of L2 holds; each row block prefetches its share of the next one
// into L2 (two panels and 8 rows of 3072 fit in 1 MiB).
// CHECK-LABEL: func.func @gpt2_s512(
// CHECK-NEXT: %0 = tfm.linear %arg0, %arg1, %arg2 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 160, prefetch512 = none, prefetch256 = none, prefetch128 = none>} :
// CHECK-NEXT: %1 = tfm.linear %arg3, %arg4 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l2, prefetch128 = l2>} :
// With 32 KiB of L1 and 256 KiB of L2: blocks of one panel (96 KiB: two
// do not fit in 128), so panel by panel; each target prefetches its own
// panel: 96 KiB (512-bit) and 48 KiB (256-bit) ones into L2 (two and a
// tile's rows fit in 256), 24 KiB ones (128-bit) into L1 (one fits); no
// target's two panels of depth 3072 fit in L2 beside its rows.
// SMALL-LABEL: func.func @gpt2_s512(
// SMALL-NEXT: {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l2, prefetch128 = l1>}
// SMALL-NEXT: {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>}
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 512 : i64} {
  func.func @gpt2_s512(%x: tensor<?x?x768xf32>, %w: tensor<2304x768xf32>, %b: tensor<2304xf32>, %h: tensor<?x?x3072xf32>, %w2: tensor<768x3072xf32>) -> (tensor<?x?x2304xf32>, tensor<?x?x768xf32>) {
    // expected-remark @+1 {{in @gpt2_s512: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); L2 blocks of 160 weight columns (480 KiB): the rows (1536 KiB) do not fit in half of the 1024 KiB L2; none prefetched (in blocks, a task's next panel is a block of tasks away)}}
    %0 = tfm.linear %x, %w, %b : (tensor<?x?x768xf32>, tensor<2304x768xf32>, tensor<2304xf32>) -> tensor<?x?x2304xf32>
    // expected-remark @+1 {{in @gpt2_s512: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows (6144 KiB) do not fit in half of the 1024 KiB L2, nor do two panels (384 KiB each); prefetched on 512-bit: the next panel into L2 by every row block, a share each (two panels of 384 KiB and 8 rows fit in 1024 KiB), on 256-bit: the next panel into L2 by every row block, a share each (two panels of 192 KiB and 6 rows fit in 1024 KiB), on 128-bit: the next panel into L2 by every row block, a share each (two panels of 96 KiB and 6 rows fit in 1024 KiB)}}
    %1 = tfm.linear %h, %w2 : (tensor<?x?x3072xf32>, tensor<768x3072xf32>) -> tensor<?x?x768xf32>
    return %0, %1 : tensor<?x?x2304xf32>, tensor<?x?x768xf32>
  }
}

// -----

// d 256 at seq 64, batch 2: the rows (128 x 256 floats) fit in half of L2,
// panel by panel; each target prefetches its own panel width. Depth 256:
// into L1 on every target (AVX-512's 32 KiB panels: 1.5 of them fit in
// 48 KiB). Depth 1024: 128 KiB (512-bit) and 64 KiB (256-bit) panels into
// L2, a share per row block, 32 KiB (128-bit) ones into L1 (one fits).
// Depth 4096: two 512 KiB panels do not fit in L2, nothing prefetched with
// 512-bit vectors; the narrower targets' 256 and 128 KiB ones into L2.
// CHECK-LABEL: func.func @d256(
// CHECK-NEXT: %0 = tfm.linear %arg0, %arg1 activation <relu> {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} :
// CHECK-NEXT: %1 = tfm.linear %0, %arg2 residual %arg0 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l2, prefetch128 = l1>} :
// CHECK-NEXT: %2 = tfm.linear %arg3, %arg4 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = l2, prefetch128 = l2>} :
// With 32 KiB of L1 and 256 KiB of L2: the first GEMM's rows (128 KiB)
// still fit in half of L2; its 32 KiB panels (512-bit) into L2 (1.5 do not
// fit in L1), the narrower ones into L1; the second's rows (512 KiB) do
// not fit, one 128 KiB panel fills that half: panel by panel, 128 KiB
// panels not prefetched (two do not fit in L2 beside 8 rows), 64 KiB ones
// into L2, 32 KiB ones into L1.
// SMALL-LABEL: func.func @d256(
// SMALL-NEXT: {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l1, prefetch128 = l1>}
// SMALL-NEXT: {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = l2, prefetch128 = l1>}
// SMALL-NEXT: {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>}
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 64 : i64} {
  func.func @d256(%x: tensor<?x?x256xf32>, %w1: tensor<1024x256xf32>, %w2: tensor<256x1024xf32>, %big: tensor<?x?x4096xf32>, %w3: tensor<64x4096xf32>) -> (tensor<?x?x256xf32>, tensor<?x?x64xf32>) {
    // expected-remark @+1 {{in @d256: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows (128 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L1 (1.5 panels of 32 KiB fit in 48 KiB), on 256-bit: the next panel into L1 (a panel of 16 KiB fits in 48 KiB), on 128-bit: the next panel into L1 (a panel of 8 KiB fits in 48 KiB)}}
    %0 = tfm.linear %x, %w1 activation <relu> : (tensor<?x?x256xf32>, tensor<1024x256xf32>) -> tensor<?x?x1024xf32>
    // expected-remark @+1 {{in @d256: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows (512 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L2 by every row block, a share each (two panels of 128 KiB and 8 rows fit in 1024 KiB), on 256-bit: the next panel into L2 by every row block, a share each (two panels of 64 KiB and 6 rows fit in 1024 KiB), on 128-bit: the next panel into L1 (a panel of 32 KiB fits in 48 KiB)}}
    %1 = tfm.linear %0, %w2 residual %x : (tensor<?x?x1024xf32>, tensor<256x1024xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
    // expected-remark @+1 {{in @d256: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows (2048 KiB) do not fit in half of the 1024 KiB L2, nor do two panels (512 KiB each); prefetched on 512-bit: none (two panels of 512 KiB and 8 rows do not fit in 1024 KiB), on 256-bit: the next panel into L2 by every row block, a share each (two panels of 256 KiB and 6 rows fit in 1024 KiB), on 128-bit: the next panel into L2 by every row block, a share each (two panels of 128 KiB and 6 rows fit in 1024 KiB)}}
    %2 = tfm.linear %big, %w3 : (tensor<?x?x4096xf32>, tensor<64x4096xf32>) -> tensor<?x?x64xf32>
    return %1, %2 : tensor<?x?x256xf32>, tensor<?x?x64xf32>
  }
}

// -----

// Static rows need no module bounds; a single panel has none to prefetch.
// A GEMM of fewer rows than a register tile holds has tiles of its rows:
// 4 of them (3 still on 256-bit vectors, 1 on 128-bit); one row (a decoding
// step) in tiles of one row everywhere.
// CHECK-LABEL: func.func @static_rows(
// CHECK-NEXT: tfm.linear %arg0, %arg1 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 4, cols512 = 32, rows256 = 4, cols256 = 16, rows128 = 4, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} :
// CHECK-NEXT: tfm.linear %arg2, %arg3 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 1, cols512 = 32, rows256 = 1, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} :
// CHECK-NEXT: tfm.linear %arg4, %arg3 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 2, cols512 = 32, rows256 = 2, cols256 = 16, rows128 = 2, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} :
func.func @static_rows(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %step: tensor<1x1x64xf32>, %w2: tensor<128x64xf32>, %two: tensor<2x1x64xf32>) -> (tensor<4x8xf32>, tensor<1x1x128xf32>, tensor<2x1x128xf32>) {
  // expected-remark @+1 {{in @static_rows: GEMM tiling: register tiles of 4 x 32 on 512-bit vectors, 4 x 16 on 256-bit, 4 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows (1 KiB) fit in half of the 1024 KiB L2; no panel follows to prefetch}}
  %0 = tfm.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  // expected-remark @+1 {{in @static_rows: GEMM tiling: register tiles of 1 x 32 on 512-bit vectors, 1 x 16 on 256-bit, 1 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows (1 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L1 (1.5 panels of 8 KiB fit in 48 KiB), on 256-bit: the next panel into L1 (a panel of 4 KiB fits in 48 KiB), on 128-bit: the next panel into L1 (a panel of 2 KiB fits in 48 KiB)}}
  %1 = tfm.linear %step, %w2 : (tensor<1x1x64xf32>, tensor<128x64xf32>) -> tensor<1x1x128xf32>
  // expected-remark @+1 {{in @static_rows: GEMM tiling: register tiles of 2 x 32 on 512-bit vectors, 2 x 16 on 256-bit, 2 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows (1 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L1 (1.5 panels of 8 KiB fit in 48 KiB), on 256-bit: the next panel into L1 (a panel of 4 KiB fits in 48 KiB), on 128-bit: the next panel into L1 (a panel of 2 KiB fits in 48 KiB)}}
  %2 = tfm.linear %two, %w2 : (tensor<2x1x64xf32>, tensor<128x64xf32>) -> tensor<2x1x128xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<1x1x128xf32>, tensor<2x1x128xf32>
}

// -----

// Not touched: a linear with a tiling already, one whose dynamic rows the
// module does not bound, and ones whose weight has a dynamic or zero size.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NEXT: %0 = tfm.linear %arg0, %arg1 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 96, prefetch512 = none, prefetch256 = none, prefetch128 = none>} :
// CHECK-NEXT: %1 = tfm.linear %arg2, %arg1 :
// CHECK-NEXT: %2 = tfm.linear %arg0, %arg3 :
// CHECK-NEXT: %3 = tfm.linear %arg0, %arg4 :
// CHECK-NEXT: return
func.func @left_alone(%x: tensor<4x8xf32>, %w: tensor<64x8xf32>, %y: tensor<?x?x8xf32>, %wd: tensor<?x8xf32>, %w0: tensor<0x8xf32>) -> (tensor<4x64xf32>, tensor<?x?x64xf32>, tensor<4x?xf32>, tensor<4x0xf32>) {
  // expected-remark @+1 {{in @left_alone: GEMM tiling kept: it was already chosen}}
  %0 = tfm.linear %x, %w {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 96, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<4x8xf32>, tensor<64x8xf32>) -> tensor<4x64xf32>
  // expected-remark @+1 {{in @left_alone: no GEMM tiling chosen: its rows have a dynamic dimension and the module has no positive tfm.max_batch and tfm.max_seq_len to bound it}}
  %1 = tfm.linear %y, %w : (tensor<?x?x8xf32>, tensor<64x8xf32>) -> tensor<?x?x64xf32>
  // expected-remark @+1 {{in @left_alone: no GEMM tiling chosen: the weight 'tensor<?x8xf32>' has no static, non-empty shape to pack in panels}}
  %2 = tfm.linear %x, %wd : (tensor<4x8xf32>, tensor<?x8xf32>) -> tensor<4x?xf32>
  // expected-remark @+1 {{in @left_alone: no GEMM tiling chosen: the weight 'tensor<0x8xf32>' has no static, non-empty shape to pack in panels}}
  %3 = tfm.linear %x, %w0 : (tensor<4x8xf32>, tensor<0x8xf32>) -> tensor<4x0xf32>
  return %0, %1, %2, %3 : tensor<4x64xf32>, tensor<?x?x64xf32>, tensor<4x?xf32>, tensor<4x0xf32>
}

// -----

// Huge bounds and dimensions saturate: the biggest blocks L2 holds.
// CHECK-LABEL: func.func @huge(
// CHECK-NEXT: tfm.linear %arg0, %arg1 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 128, prefetch512 = none, prefetch256 = none, prefetch128 = none>} :
module attributes {tfm.max_batch = 9223372036854775807 : i64, tfm.max_seq_len = 9223372036854775807 : i64} {
  func.func @huge(%x: tensor<?x?x1024xf32>, %w: tensor<4096x1024xf32>) -> tensor<?x?x4096xf32> {
    // expected-remark @+1 {{in @huge: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); L2 blocks of 128 weight columns (512 KiB): the rows (18014398509481984 KiB) do not fit in half of the 1024 KiB L2; none prefetched (in blocks, a task's next panel is a block of tasks away)}}
    %0 = tfm.linear %x, %w : (tensor<?x?x1024xf32>, tensor<4096x1024xf32>) -> tensor<?x?x4096xf32>
    return %0 : tensor<?x?x4096xf32>
  }
}

// -----

// A mixture of experts' GEMMs at seq 512: an expert takes each token at
// most once, so a tfm.grouped_linear's rows are bounded by the tokens
// (1 x 512, tfm.max_batch x tfm.max_seq_len), not by the 1024 (token, slot)
// pairs; with 2 groups of 2 slots, the rows a group typically has (tokens
// x slots / groups) are as many. linear1 (depth 256): 512 rows of 256
// floats fit in half of L2,
// panel by panel, tiled as the tfm.linear over the same tokens' rows (1024
// rows would not fit: L2 blocks). linear2 (depth 1024, the scatter and the
// residual do not change it): the rows (2048 KiB) do not fit, L2 blocks of
// 128 columns.
// CHECK-LABEL: func.func @moe_s512(
// CHECK-NEXT: %0 = tfm.grouped_linear %arg0 groups %arg1 weights(%arg2, %arg2) activation <silu> {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} :
// CHECK-NEXT: %1 = tfm.grouped_linear %0 groups %arg1 weights(%arg3, %arg3) scatter %arg4, %arg5 residual %arg6 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 128, prefetch512 = none, prefetch256 = none, prefetch128 = none>} :
// CHECK-NEXT: %2 = tfm.linear %arg6, %arg2 {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} :
// With 32 KiB of L1 and 256 KiB of L2: linear1's rows (512 KiB) do not fit
// in half of L2, blocks of 128 columns (4 x 32 KiB); linear2's block would
// be one 128 KiB panel: panel by panel, two do not fit beside 8 rows.
// SMALL-LABEL: func.func @moe_s512(
// SMALL-NEXT: {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 128, prefetch512 = none, prefetch256 = none, prefetch128 = none>}
// SMALL-NEXT: {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = l2, prefetch128 = l1>}
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 512 : i64} {
  func.func @moe_s512(%xs: tensor<?x?x2x256xf32>, %s: tensor<3xi32>, %w1: tensor<1024x256xf32>, %w2: tensor<256x1024xf32>, %t: tensor<?x?x2xi32>, %rw: tensor<?x?x2xf32>, %x: tensor<?x?x256xf32>) -> (tensor<?x?x256xf32>, tensor<?x?x1024xf32>) {
    // expected-remark @+1 {{in @moe_s512: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows a group typically has (512 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L1 (1.5 panels of 32 KiB fit in 48 KiB), on 256-bit: the next panel into L1 (a panel of 16 KiB fits in 48 KiB), on 128-bit: the next panel into L1 (a panel of 8 KiB fits in 48 KiB)}}
    %h = tfm.grouped_linear %xs groups %s weights(%w1, %w1) activation <silu> : (tensor<?x?x2x256xf32>, tensor<3xi32>, tensor<1024x256xf32>, tensor<1024x256xf32>) -> tensor<?x?x2x1024xf32>
    // expected-remark @+1 {{in @moe_s512: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); L2 blocks of 128 weight columns (512 KiB): the rows a group typically has (2048 KiB) do not fit in half of the 1024 KiB L2; none prefetched (in blocks, a task's next panel is a block of tasks away)}}
    %y = tfm.grouped_linear %h groups %s weights(%w2, %w2) scatter %t, %rw residual %x : (tensor<?x?x2x1024xf32>, tensor<3xi32>, tensor<256x1024xf32>, tensor<256x1024xf32>, tensor<?x?x2xi32>, tensor<?x?x2xf32>, tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
    // expected-remark @+1 {{in @moe_s512: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows (512 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L1 (1.5 panels of 32 KiB fit in 48 KiB), on 256-bit: the next panel into L1 (a panel of 16 KiB fits in 48 KiB), on 128-bit: the next panel into L1 (a panel of 8 KiB fits in 48 KiB)}}
    %l = tfm.linear %x, %w1 : (tensor<?x?x256xf32>, tensor<1024x256xf32>) -> tensor<?x?x1024xf32>
    return %y, %l : tensor<?x?x256xf32>, tensor<?x?x1024xf32>
  }
}

// -----

// 8 experts of 2 slots a token: balanced, a group has 512 x 2 / 8 = 128 of
// the 512 rows it may have. The order of the panels is chosen for 128 rows
// of depth 1024 (512 KiB, half of L2: panel by panel, the next panel into
// L2, with 128-bit vectors into L1), not for 512 (2 MiB: L2 blocks, which
// prefetch nothing: measured on
// Sapphire Rapids with a mixture of experts' FFN at seq 512, 8 experts,
// top-2, the layer ~7% faster so); the register tiles are 8 rows either
// way.
// CHECK-LABEL: func.func @moe_8_experts(
// CHECK-NEXT: tfm.grouped_linear %arg0 groups %arg1 weights(%arg2, %arg2, %arg2, %arg2, %arg2, %arg2, %arg2, %arg2) {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = l2, prefetch256 = l2, prefetch128 = l1>} :
// With 256 KiB of L2 the 512 KiB of rows do not fit in half of it, and a
// 128 KiB panel fills that half: panel by panel, nothing prefetched with
// 512-bit vectors, 64 KiB panels into L2, 32 KiB ones into L1.
// SMALL-LABEL: func.func @moe_8_experts(
// SMALL-NEXT: {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = l2, prefetch128 = l1>}
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 512 : i64} {
  func.func @moe_8_experts(%xs: tensor<?x?x2x1024xf32>, %s: tensor<9xi32>, %w: tensor<256x1024xf32>) -> tensor<?x?x2x256xf32> {
    // expected-remark @+1 {{in @moe_8_experts: GEMM tiling: register tiles of 8 x 32 on 512-bit vectors, 6 x 16 on 256-bit, 6 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows a group typically has (512 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L2 by every row block, a share each (two panels of 128 KiB and 8 rows fit in 1024 KiB), on 256-bit: the next panel into L2 by every row block, a share each (two panels of 64 KiB and 6 rows fit in 1024 KiB), on 128-bit: the next panel into L1 (a panel of 32 KiB fits in 48 KiB)}}
    %h = tfm.grouped_linear %xs groups %s weights(%w, %w, %w, %w, %w, %w, %w, %w) : (tensor<?x?x2x1024xf32>, tensor<9xi32>, tensor<256x1024xf32>, tensor<256x1024xf32>, tensor<256x1024xf32>, tensor<256x1024xf32>, tensor<256x1024xf32>, tensor<256x1024xf32>, tensor<256x1024xf32>, tensor<256x1024xf32>) -> tensor<?x?x2x256xf32>
    return %h : tensor<?x?x2x256xf32>
  }
}

// -----

// Static tokens need no module bounds: 3 tokens of 2 slots have tiles of 3
// rows, one token's 2 slots (a rank-2 input) tiles of one row.
// CHECK-LABEL: func.func @grouped_static_rows(
// CHECK-NEXT: tfm.grouped_linear %arg0 groups %arg1 weights(%arg2, %arg2) {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 3, cols512 = 32, rows256 = 3, cols256 = 16, rows128 = 3, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} :
// CHECK-NEXT: tfm.grouped_linear %arg3 groups %arg1 weights(%arg2, %arg2) {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 1, cols512 = 32, rows256 = 1, cols256 = 16, rows128 = 1, cols128 = 8, l2Columns = 0, prefetch512 = l1, prefetch256 = l1, prefetch128 = l1>} :
func.func @grouped_static_rows(%xs: tensor<1x3x2x64xf32>, %s: tensor<3xi32>, %w: tensor<128x64xf32>, %one: tensor<2x64xf32>) -> (tensor<1x3x2x128xf32>, tensor<2x128xf32>) {
  // expected-remark @+1 {{in @grouped_static_rows: GEMM tiling: register tiles of 3 x 32 on 512-bit vectors, 3 x 16 on 256-bit, 3 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows a group typically has (1 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L1 (1.5 panels of 8 KiB fit in 48 KiB), on 256-bit: the next panel into L1 (a panel of 4 KiB fits in 48 KiB), on 128-bit: the next panel into L1 (a panel of 2 KiB fits in 48 KiB)}}
  %0 = tfm.grouped_linear %xs groups %s weights(%w, %w) : (tensor<1x3x2x64xf32>, tensor<3xi32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<1x3x2x128xf32>
  // expected-remark @+1 {{in @grouped_static_rows: GEMM tiling: register tiles of 1 x 32 on 512-bit vectors, 1 x 16 on 256-bit, 1 x 8 on 128-bit (rows x columns, the packed panel's width); panel by panel: the rows a group typically has (1 KiB) fit in half of the 1024 KiB L2; prefetched on 512-bit: the next panel into L1 (1.5 panels of 8 KiB fit in 48 KiB), on 256-bit: the next panel into L1 (a panel of 4 KiB fits in 48 KiB), on 128-bit: the next panel into L1 (a panel of 2 KiB fits in 48 KiB)}}
  %1 = tfm.grouped_linear %one groups %s weights(%w, %w) : (tensor<2x64xf32>, tensor<3xi32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<2x128xf32>
  return %0, %1 : tensor<1x3x2x128xf32>, tensor<2x128xf32>
}

// -----

// Grouped GEMMs left alone, as linears are: dynamic tokens the module does
// not bound, a tiling already chosen. (Their weights are static: the
// verifier requires it.)
// CHECK-LABEL: func.func @grouped_left_alone(
// CHECK-NEXT: %0 = tfm.grouped_linear %arg0 groups %arg1 weights(%arg2, %arg2) :
// CHECK-NEXT: %1 = tfm.grouped_linear %arg3 groups %arg1 weights(%arg2, %arg2) {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} :
// CHECK-NEXT: return
func.func @grouped_left_alone(%xs: tensor<?x?x2x64xf32>, %s: tensor<3xi32>, %w: tensor<128x64xf32>, %st: tensor<1x3x2x64xf32>) -> (tensor<?x?x2x128xf32>, tensor<1x3x2x128xf32>) {
  // expected-remark @+1 {{in @grouped_left_alone: no GEMM tiling chosen: its rows have a dynamic dimension and the module has no positive tfm.max_batch and tfm.max_seq_len to bound it}}
  %0 = tfm.grouped_linear %xs groups %s weights(%w, %w) : (tensor<?x?x2x64xf32>, tensor<3xi32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<?x?x2x128xf32>
  // expected-remark @+1 {{in @grouped_left_alone: GEMM tiling kept: it was already chosen}}
  %1 = tfm.grouped_linear %st groups %s weights(%w, %w) {tfm_codegen.gemm_tiling = #tfm_codegen.gemm_tiling<rows512 = 8, cols512 = 32, rows256 = 6, cols256 = 16, rows128 = 6, cols128 = 8, l2Columns = 0, prefetch512 = none, prefetch256 = none, prefetch128 = none>} : (tensor<1x3x2x64xf32>, tensor<3xi32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<1x3x2x128xf32>
  return %0, %1 : tensor<?x?x2x128xf32>, tensor<1x3x2x128xf32>
}
