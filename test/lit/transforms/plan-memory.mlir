// RUN: not tfm-opt %s -split-input-file --tfm-plan-memory 2>/dev/null | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-plan-memory=remarks=true -verify-diagnostics -o /dev/null

// --tfm-plan-memory: every buffer a function's Highway code takes (op
// results, op scratch) gets a static place in the function's frame, sized
// at the module's tfm.max_batch x tfm.max_seq_len; space is reused once a
// buffer is dead. Offsets are whole 64-byte lines (16 floats). The cases it
// must leave alone say why in a remark; sizes it cannot plan are errors.

// Bounds: batch 2, seq 8: [?, ?, 32] is 512 floats, [?, ?, 64] 1024.

// A chain of GEMMs: %0 is dead once %1 is computed, so %2 reuses its
// place; the returned value is the caller's (no slot).
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: attributes {tfm.frame_floats = 1536 : i64}
// CHECK-NEXT: %0 = tfm.linear {{.*}} {tfm.frame = [#tfm.slot<"result0", offset = 0, floats = 1024>]}
// CHECK-NEXT: %1 = tfm.linear {{.*}} {tfm.frame = [#tfm.slot<"result0", offset = 1024, floats = 512>]}
// CHECK-NEXT: %2 = tfm.linear {{.*}} {tfm.frame = [#tfm.slot<"result0", offset = 0, floats = 1024>]}
// CHECK-NEXT: %3 = tfm.linear %2, %arg2 :
// CHECK-NEXT: return %3

// Self-attention with rotary positions: the stacked Q/K/V rows, a cos and
// a sin table for Q and for K (8 x 4 floats each), the merged heads and
// the transposed keys (2 x 4 heads x 8 x 8) are scratch, free after the op;
// its result stays until the add.
// CHECK-LABEL: func.func @self_attention_rope(
// CHECK-SAME: attributes {tfm.frame_floats = 3200 : i64}
// CHECK-NEXT: %0 = tfm.multi_head_attention {{.*}} {rope = #tfm.rope<half>, tfm.frame = [#tfm.slot<"qkv", offset = 0, floats = 1536>, #tfm.slot<"ropeCos", offset = 1536, floats = 32>, #tfm.slot<"ropeSin", offset = 1568, floats = 32>, #tfm.slot<"ropeCos", offset = 1600, floats = 32>, #tfm.slot<"ropeSin", offset = 1632, floats = 32>, #tfm.slot<"heads", offset = 1664, floats = 512>, #tfm.slot<"keysT", offset = 2176, floats = 512>, #tfm.slot<"result0", offset = 2688, floats = 512>]}
// CHECK-NEXT: %1 = tfm.add %0, %arg0 :

// Cross-attention: Q, then K and V of the memory ([2, ?, 32]: 8 rows of
// 64 per sequence), the heads, the memory's keys transposed.
// CHECK-LABEL: func.func @cross_attention(
// CHECK-SAME: attributes {tfm.frame_floats = 2560 : i64}
// CHECK-NEXT: tfm.multi_head_attention <dot> %arg0 memory %arg1 {{.*}} {tfm.frame = [#tfm.slot<"q", offset = 0, floats = 512>, #tfm.slot<"kv", offset = 512, floats = 1024>, #tfm.slot<"heads", offset = 1536, floats = 512>, #tfm.slot<"keysT", offset = 2048, floats = 512>]}

// Bilinear scores fold W into each query row (a scratch copy); the
// returned result has no slot.
// CHECK-LABEL: func.func @flash_bilinear(
// CHECK-SAME: attributes {tfm.frame_floats = 2560 : i64}
// CHECK-NEXT: %0 = tfm.linear {{.*}} {tfm.frame = [#tfm.slot<"result0", offset = 0, floats = 1536>]}
// CHECK-NEXT: %1 = tfm.flash_attention <bilinear> %0 {{.*}} {tfm.frame = [#tfm.slot<"qW", offset = 1536, floats = 512>, #tfm.slot<"keysT", offset = 2048, floats = 512>]}

// Rotary positions rotate Q and K in place in a frame buffer no other op
// reads; an argument's rows are copied first.
// CHECK-LABEL: func.func @flash_rope(
// CHECK-SAME: attributes {tfm.frame_floats = 2176 : i64}
// CHECK-NEXT: %0 = tfm.flash_attention <scaled_dot> %arg0 {{.*}} {rope = #tfm.rope<half>, tfm.frame = [#tfm.slot<"qkv", offset = 0, floats = 1536>, #tfm.slot<"ropeCos", offset = 1536, floats = 32>, #tfm.slot<"ropeSin", offset = 1568, floats = 32>, #tfm.slot<"ropeCos", offset = 1600, floats = 32>, #tfm.slot<"ropeSin", offset = 1632, floats = 32>, #tfm.slot<"keysT", offset = 1664, floats = 512>]}
// CHECK-NEXT: %1 = tfm.linear {{.*}} {tfm.frame = [#tfm.slot<"result0", offset = 0, floats = 1536>]}
// CHECK-NEXT: %2 = tfm.flash_attention <scaled_dot> %1 {{.*}} {rope = #tfm.rope<half>, tfm.frame = [#tfm.slot<"ropeCos", offset = 1536, floats = 32>, #tfm.slot<"ropeSin", offset = 1568, floats = 32>, #tfm.slot<"ropeCos", offset = 1600, floats = 32>, #tfm.slot<"ropeSin", offset = 1632, floats = 32>, #tfm.slot<"keysT", offset = 1664, floats = 512>]}

// An unfused FFN: its hidden layer is scratch, taken before its result.
// CHECK-LABEL: func.func @ffn(
// CHECK-SAME: attributes {tfm.frame_floats = 1536 : i64}
// CHECK-NEXT: %0 = tfm.ffn <relu> {{.*}} {tfm.frame = [#tfm.slot<"hidden", offset = 0, floats = 1024>, #tfm.slot<"result0", offset = 1024, floats = 512>]}

// add_layer_norm stores its sum (result 0) only when something reads it;
// the normalised rows (result 1) come first. An op's results never share
// space with its operands: the second norm's rows go after both.
// CHECK-LABEL: func.func @add_layer_norm(
// CHECK-SAME: attributes {tfm.frame_floats = 1536 : i64}
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm {{.*}} {tfm.frame = [#tfm.slot<"result1", offset = 0, floats = 512>, #tfm.slot<"result0", offset = 512, floats = 512>]}
// CHECK-NEXT: %sum_0, %result_1 = tfm.add_layer_norm %sum, %result, {{.*}} {tfm.frame = [#tfm.slot<"result1", offset = 1024, floats = 512>]}

// A call's result lives in the caller's frame; the callee's frame is its
// own (taken above the caller's at run time).
// CHECK-LABEL: func.func @caller(
// CHECK-SAME: attributes {tfm.frame_floats = 512 : i64}
// CHECK-NEXT: %0 = call @chain({{.*}}) {tfm.frame = [#tfm.slot<"result0", offset = 0, floats = 512>]}
// CHECK-NEXT: %1 = call @chain(%0, {{.*}}) :
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 8 : i64} {
  // expected-remark @+1 {{in @chain: frame of 6144 bytes for 3 buffers (10240 bytes if none shared space)}}
  func.func @chain(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
    %0 = tfm.linear %x, %w1 : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
    %1 = tfm.linear %0, %w2 : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
    %2 = tfm.linear %1, %w1 : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
    %3 = tfm.linear %2, %w2 : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
    return %3 : tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @self_attention_rope: frame of 12800 bytes for 8 buffers (12800 bytes if none shared space)}}
  func.func @self_attention_rope(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
    %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    %1 = tfm.add %0, %x : tensor<?x?x32xf32>
    return %1 : tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @cross_attention: frame of 10240 bytes for 4 buffers (10240 bytes if none shared space)}}
  func.func @cross_attention(%x: tensor<2x?x32xf32>, %m: tensor<2x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<2x?x32xf32> {
    %0 = tfm.multi_head_attention <dot> %x memory %m heads 4 in_proj(%wi, %bi) out_proj(%wo, %bo) : (tensor<2x?x32xf32>, tensor<2x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
    return %0 : tensor<2x?x32xf32>
  }

  // expected-remark @+1 {{in @flash_bilinear: frame of 10240 bytes for 3 buffers (10240 bytes if none shared space)}}
  func.func @flash_bilinear(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %w: tensor<4x8x8xf32>) -> tensor<?x?x32xf32> {
    %0 = tfm.linear %x, %wi, %bi : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
    %1 = tfm.flash_attention <bilinear> %0 heads 4 params(%w) : (tensor<?x?x96xf32>, tensor<4x8x8xf32>) -> tensor<?x?x32xf32>
    return %1 : tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @flash_rope: frame of 8704 bytes for 12 buffers (17408 bytes if none shared space)}}
  func.func @flash_rope(%qkv: tensor<?x?x96xf32>, %x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>) {
    %0 = tfm.flash_attention <scaled_dot> %qkv heads 4 {rope = #tfm.rope<half>} : (tensor<?x?x96xf32>) -> tensor<?x?x32xf32>
    %1 = tfm.linear %x, %wi : (tensor<?x?x32xf32>, tensor<96x32xf32>) -> tensor<?x?x96xf32>
    %2 = tfm.flash_attention <scaled_dot> %1 heads 4 {rope = #tfm.rope<half>} : (tensor<?x?x96xf32>) -> tensor<?x?x32xf32>
    return %0, %2 : tensor<?x?x32xf32>, tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @ffn: frame of 6144 bytes for 2 buffers (6144 bytes if none shared space)}}
  func.func @ffn(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<32x64xf32>, %b2: tensor<32xf32>) -> tensor<?x?x32xf32> {
    %0 = tfm.ffn <relu> %x, %w1, %b1, %w2, %b2 : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    %1 = tfm.add %0, %x : tensor<?x?x32xf32>
    return %1 : tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @add_layer_norm: frame of 6144 bytes for 3 buffers (6144 bytes if none shared space)}}
  func.func @add_layer_norm(%a: tensor<?x?x32xf32>, %b: tensor<?x?x32xf32>, %g: tensor<32xf32>, %beta: tensor<32xf32>) -> tensor<?x?x32xf32> {
    %sum, %norm = tfm.add_layer_norm %a, %b, %g, %beta : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
    %sum2, %norm2 = tfm.add_layer_norm %sum, %norm, %g, %beta : tensor<?x?x32xf32>, tensor<32xf32>, tensor<32xf32>
    %0 = tfm.add %norm2, %a : tensor<?x?x32xf32>
    return %0 : tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @caller: frame of 2048 bytes for 1 buffers (2048 bytes if none shared space)}}
  func.func @caller(%x: tensor<?x?x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
    %0 = call @chain(%x, %w1, %w2) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
    %1 = call @chain(%0, %w1, %w2) : (tensor<?x?x32xf32>, tensor<64x32xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
    return %1 : tensor<?x?x32xf32>
  }
}

// -----

// Key/value caches live outside the frame: attention over a cache takes no
// transposed keys; additive scores over a read-only cache project every
// key it can hold (16 positions: 2 x 4 heads x 16 x 16 floats).
// CHECK-LABEL: func.func @cached(
// CHECK-SAME: attributes {tfm.frame_floats = 4736 : i64}
// CHECK: tfm.cache @self
// CHECK-NOT: tfm.frame
// CHECK: tfm.multi_head_attention <scaled_dot> {{.*}} {rope = #tfm.rope<half>, tfm.frame = [#tfm.slot<"qkv", offset = 0, floats = 1536>, #tfm.slot<"ropeCos", offset = 1536, floats = 32>, #tfm.slot<"ropeSin", offset = 1568, floats = 32>, #tfm.slot<"ropeCos", offset = 1600, floats = 32>, #tfm.slot<"ropeSin", offset = 1632, floats = 32>, #tfm.slot<"heads", offset = 1664, floats = 512>, #tfm.slot<"result0", offset = 2176, floats = 512>]}
// CHECK: tfm.multi_head_attention <additive> {{.*}} {tfm.frame = [#tfm.slot<"q", offset = 0, floats = 512>, #tfm.slot<"heads", offset = 512, floats = 512>, #tfm.slot<"keyProj", offset = 2688, floats = 2048>, #tfm.slot<"queryProj", offset = 1024, floats = 1024>]}
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 8 : i64} {
  tfm.kv_cache @self : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  tfm.kv_cache @cross : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  // expected-remark @+1 {{in @cached: frame of 18944 bytes for 11 buffers (27136 bytes if none shared space)}}
  func.func @cached(%x: tensor<?x?x32xf32>, %pos: index, %len: index, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %wk: tensor<4x16x8xf32>, %wq: tensor<4x16x8xf32>, %va: tensor<4x16xf32>) -> tensor<?x?x32xf32> {
    %c = tfm.cache @self : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
    %m = tfm.cache @cross : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
    %0 = tfm.multi_head_attention <scaled_dot> %x heads 4 cache(%c at %pos) in_proj(%wi, %bi) out_proj(%wo, %bo) causal {rope = #tfm.rope<half>} : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
    %1 = tfm.multi_head_attention <additive> %0 heads 4 cache(%m upto %len) in_proj(%wi, %bi) out_proj(%wo, %bo) params(%wk, %wq, %va) : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>, tensor<32x32xf32>, tensor<32xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, index) -> tensor<?x?x32xf32>
    return %1 : tensor<?x?x32xf32>
  }
}

// -----

// Static shapes need no bounds.
// CHECK-LABEL: func.func @static_shapes(
// CHECK-SAME: attributes {tfm.frame_floats = 48 : i64}
// CHECK-NEXT: tfm.add {{.*}} {tfm.frame = [#tfm.slot<"result0", offset = 0, floats = 6>]}
// CHECK-NEXT: tfm.add {{.*}} {tfm.frame = [#tfm.slot<"result0", offset = 16, floats = 6>]}
// CHECK-NEXT: tfm.add {{.*}} {tfm.frame = [#tfm.slot<"result0", offset = 32, floats = 6>]}
// CHECK-NEXT: tfm.add %0, %2 :
// Left alone: a function planned before keeps its plan; without bounds,
// dynamic sizes have no maximum; a declaration has nothing to plan.
// CHECK-LABEL: func.func @planned(
// CHECK-SAME: attributes {tfm.frame_floats = 64 : i64}
// CHECK-NEXT: {tfm.frame = [#tfm.slot<"result0", offset = 32, floats = 6>]}
module {
  // expected-remark @+1 {{in @static_shapes: frame of 192 bytes for 3 buffers (192 bytes if none shared space)}}
  func.func @static_shapes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = tfm.add %x, %x : tensor<2x3xf32>
    %1 = tfm.add %0, %x : tensor<2x3xf32>
    %2 = tfm.add %1, %x : tensor<2x3xf32>
    %3 = tfm.add %0, %2 : tensor<2x3xf32>
    return %3 : tensor<2x3xf32>
  }
  // expected-remark @+1 {{in @planned: frame kept: it was already planned}}
  func.func @planned(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm.frame_floats = 64 : i64} {
    %0 = tfm.add %x, %x {tfm.frame = [#tfm.slot<"result0", offset = 32, floats = 6>]} : tensor<2x3xf32>
    %1 = tfm.add %0, %x : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}

// -----

// CHECK-LABEL: func.func @unbounded(
// CHECK-NOT: tfm.frame
// CHECK: return
module {
  // expected-remark @+1 {{in @unbounded: no frame planned: the module has no positive tfm.max_batch and tfm.max_seq_len to size dynamic dimensions by}}
  func.func @unbounded(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
    %0 = tfm.add %x, %x : tensor<?x?x32xf32>
    %1 = tfm.add %0, %x : tensor<?x?x32xf32>
    return %1 : tensor<?x?x32xf32>
  }
}

// -----

// Errors: a dynamic dimension past batch and sequence; a buffer larger
// than any frame (2^42 floats).
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  func.func @dynamic_feature(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
    // expected-error @+1 {{dimension 2 of 'tensor<?x?x?xf32>' is dynamic: a frame can only bound batch (0) and sequence (1) dimensions}}
    %0 = tfm.add %x, %x : tensor<?x?x?xf32>
    %1 = tfm.add %0, %x : tensor<?x?x?xf32>
    return %1 : tensor<?x?x?xf32>
  }
}

// -----

module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  func.func @huge(%x: tensor<65536x65536x1024xf32>) -> tensor<65536x65536x1024xf32> {
    // expected-error @+1 {{frame buffer 'result0' needs 4398046511104 floats, more than a frame can hold (2^40)}}
    %0 = tfm.add %x, %x : tensor<65536x65536x1024xf32>
    %1 = tfm.add %0, %x : tensor<65536x65536x1024xf32>
    return %1 : tensor<65536x65536x1024xf32>
  }
}
