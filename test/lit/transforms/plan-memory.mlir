// RUN: not tfm-opt %s -split-input-file --tfm-plan-memory 2>/dev/null | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-plan-memory=remarks=true -verify-diagnostics -o /dev/null

// --tfm-plan-memory: every buffer a function's Highway code takes (op
// results, op scratch) gets a static place in the function's frame, sized
// at the module's tfm.max_batch x tfm.max_seq_len; space is reused once a
// buffer is dead. Offsets are whole 64-byte lines (16 floats). Views
// (tfm.split_heads, tfm.merge_heads, tfm.slice_rows, tfm.cache_read, a
// tfm.rotary in place) take no slot: the buffer they view lives as long as
// they are read. The cases it must leave alone say why in a remark; sizes
// it cannot plan are errors.

// Bounds: batch 2, seq 8: [?, ?, 32] is 512 floats, [?, ?, 64] 1024,
// [?, ?, 96] 1536; per head, [?, 4, ?, 8] is 512.

// A chain of GEMMs: %0 is dead once %1 is computed, so %2 reuses its
// place; the returned value is the caller's (no slot).
// CHECK-LABEL: func.func @chain(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 1536 : i64}
// CHECK-NEXT: %0 = tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 1024>]}
// CHECK-NEXT: %1 = tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1024, floats = 512>]}
// CHECK-NEXT: %2 = tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 1024>]}
// CHECK-NEXT: %3 = tfm.linear %2, %arg2 :
// CHECK-NEXT: return %3

// Self-attention with rotary positions, as tfm-decompose-attention leaves
// it: the Q/K/V GEMM's rows (1536 floats) are read only through its three
// split_heads views, so both rotaries rotate Q and K in place (tfm_codegen.in_place,
// no result slot; each a cos and a sin table of 8 x 4 floats, scratch).
// The attention's result (the heads merged) and its transposed keys go
// above the rows, which stay alive until the attention, their last reader
// through the views; the out_proj GEMM then reuses their place, and the
// attention's result lives until it through merge_heads.
// CHECK-LABEL: func.func @self_attention_rope(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 2560 : i64}
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 1536>]}
// CHECK-NEXT: %[[Q:.+]] = tfm.split_heads %[[QKV]] part 0 of 3 into 4 heads :
// CHECK-NEXT: %[[K:.+]] = tfm.split_heads %[[QKV]] part 1 of 3 into 4 heads :
// CHECK-NEXT: %[[V:.+]] = tfm.split_heads %[[QKV]] part 2 of 3 into 4 heads :
// CHECK-NEXT: %[[RQ:.+]] = tfm.rotary <half> %[[Q]] {tfm_codegen.frame = [#tfm_codegen.slot<rotary_cos, offset = 1536, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 1568, floats = 32>], tfm_codegen.in_place} :
// CHECK-NEXT: %[[RK:.+]] = tfm.rotary <half> %[[K]] {tfm_codegen.frame = [#tfm_codegen.slot<rotary_cos, offset = 1536, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 1568, floats = 32>], tfm_codegen.in_place} :
// CHECK-NEXT: %[[O:.+]] = tfm.attention <scaled_dot> %[[RQ]], %[[RK]], %[[V]] causal {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 512>, #tfm_codegen.slot<keys_transposed, offset = 2048, floats = 512>]} :
// CHECK-NEXT: %[[M:.+]] = tfm.merge_heads %[[O]] : tensor
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[M]], {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>]}
// CHECK-NEXT: tfm.add %[[Y]], %arg0 :

// Cross-attention: the weight's row slices are views of an argument (no
// slot); Q of the query (512), K and V of the memory in one GEMM ([2, ?,
// 64]: 1024), the attention's result and the memory's keys transposed.
// CHECK-LABEL: func.func @cross_attention(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 2560 : i64}
// CHECK-NEXT: tfm.slice_rows %arg2 from 0 : tensor
// CHECK-NEXT: tfm.slice_rows %arg3 from 0 : tensor
// CHECK-NEXT: tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>]}
// CHECK-NEXT: tfm.split_heads {{.*}} : tensor
// CHECK-NEXT: tfm.slice_rows %arg2 from 32 : tensor
// CHECK-NEXT: tfm.slice_rows %arg3 from 32 : tensor
// CHECK-NEXT: tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 512, floats = 1024>]}
// CHECK-NEXT: tfm.split_heads {{.*}} : tensor
// CHECK-NEXT: tfm.split_heads {{.*}} : tensor
// CHECK-NEXT: tfm.attention <dot> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 512>, #tfm_codegen.slot<keys_transposed, offset = 2048, floats = 512>]}
// CHECK-NEXT: tfm.merge_heads {{.*}} : tensor
// CHECK-NEXT: tfm.linear {{.*}} : (tensor

// Bilinear scores fold W into each query row (bilinear_queries, scratch, after the
// result); the returned merge_heads is a view of the attention's result,
// which has a slot of its own (the return copies it out).
// CHECK-LABEL: func.func @bilinear(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 3072 : i64}
// CHECK-NEXT: tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 1536>]}
// CHECK: tfm.attention <bilinear> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 512>, #tfm_codegen.slot<bilinear_queries, offset = 2048, floats = 512>, #tfm_codegen.slot<keys_transposed, offset = 2560, floats = 512>]}
// CHECK-NEXT: tfm.merge_heads {{.*}} : tensor

// Additive scores project the keys and the queries (2 x 4 heads x 8 x 16
// floats each) and take no transposed keys.
// CHECK-LABEL: func.func @additive(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 4096 : i64}
// CHECK: tfm.attention <additive> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 512>, #tfm_codegen.slot<additive_keys, offset = 2048, floats = 1024>, #tfm_codegen.slot<additive_queries, offset = 3072, floats = 1024>]}

// Rotaries that must copy (a result slot before their tables, no
// tfm_codegen.in_place): rows of an argument (the caller's, not to be written),
// and rows of a GEMM that another op (the add) also reads unrotated. The
// first attention's result is returned through merge_heads and stays; the
// copies are dead after the attention that reads them.
// CHECK-LABEL: func.func @rope_copies(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 4096 : i64}
// CHECK-NEXT: tfm.split_heads %arg0 part 0 of 3
// CHECK-NEXT: tfm.split_heads %arg0 part 1 of 3
// CHECK-NEXT: tfm.split_heads %arg0 part 2 of 3
// CHECK-NEXT: tfm.rotary <half> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>, #tfm_codegen.slot<rotary_cos, offset = 512, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 544, floats = 32>]} :
// CHECK-NEXT: tfm.rotary <half> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 512, floats = 512>, #tfm_codegen.slot<rotary_cos, offset = 1024, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 1056, floats = 32>]} :
// CHECK-NEXT: tfm.attention <scaled_dot> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1024, floats = 512>, #tfm_codegen.slot<keys_transposed, offset = 1536, floats = 512>]}
// CHECK-NEXT: tfm.merge_heads
// CHECK-NEXT: %[[P:.+]] = tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 1536>]}
// CHECK-NEXT: tfm.split_heads %[[P]] part 0 of 3
// CHECK-NEXT: tfm.split_heads %[[P]] part 1 of 3
// CHECK-NEXT: tfm.split_heads %[[P]] part 2 of 3
// CHECK-NEXT: tfm.rotary <half> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>, #tfm_codegen.slot<rotary_cos, offset = 512, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 544, floats = 32>]} :
// CHECK-NEXT: tfm.rotary <half> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 512, floats = 512>, #tfm_codegen.slot<rotary_cos, offset = 3072, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 3104, floats = 32>]} :
// CHECK-NEXT: tfm.attention <scaled_dot> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 3072, floats = 512>, #tfm_codegen.slot<keys_transposed, offset = 3584, floats = 512>]}
// CHECK-NEXT: tfm.merge_heads
// CHECK-NEXT: tfm.add %[[P]], %[[P]] :
// CHECK-NOT: tfm_codegen.in_place
// CHECK: return

// Views keep the buffer they view alive: the Q/K/V rows (at 0) are read by
// the attention through their split_heads views only after two more GEMMs,
// so those GEMMs go above them (1536, 2560) and only the add after the
// attention reuses offset 0. The attention's result takes the first GEMM's
// place, dead by then.
// CHECK-LABEL: func.func @view_alive(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 3072 : i64}
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 1536>]}
// CHECK-NEXT: tfm.split_heads %[[QKV]]
// CHECK-NEXT: tfm.split_heads %[[QKV]]
// CHECK-NEXT: tfm.split_heads %[[QKV]]
// CHECK-NEXT: tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 1024>]}
// CHECK-NEXT: tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 2560, floats = 512>]}
// CHECK-NEXT: tfm.attention <dot> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 512>, #tfm_codegen.slot<keys_transposed, offset = 2048, floats = 512>]}
// CHECK-NEXT: tfm.merge_heads
// CHECK-NEXT: tfm.add {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>]}
// CHECK-NEXT: tfm.add {{.*}} : tensor

// add_layer_norm stores its sum (result 0) only when something reads it;
// the normalised rows (result 1) come first. An op's results never share
// space with its operands: the second norm's rows go after both.
// CHECK-LABEL: func.func @add_layer_norm(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 1536 : i64}
// CHECK-NEXT: %sum, %result = tfm.add_layer_norm {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, index = 1, offset = 0, floats = 512>, #tfm_codegen.slot<result, offset = 512, floats = 512>]}
// CHECK-NEXT: %sum_0, %result_1 = tfm.add_layer_norm %sum, %result, {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, index = 1, offset = 1024, floats = 512>]}

// A call's result lives in the caller's frame; the callee's frame is its
// own (taken above the caller's at run time).
// CHECK-LABEL: func.func @caller(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 512 : i64}
// CHECK-NEXT: %0 = call @chain({{.*}}) {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>]}
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

  // expected-remark @+1 {{in @self_attention_rope: frame of 10240 bytes for 8 buffers (12800 bytes if none shared space)}}
  func.func @self_attention_rope(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<?x?x32xf32> {
    %qkv = tfm.linear %x, %wi, %bi : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %rq = tfm.rotary <half> %q : tensor<?x4x?x8xf32>
    %rk = tfm.rotary <half> %k : tensor<?x4x?x8xf32>
    %o = tfm.attention <scaled_dot> %rq, %rk, %v causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    %y = tfm.linear %m, %wo, %bo : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    %r = tfm.add %y, %x : tensor<?x?x32xf32>
    return %r : tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @cross_attention: frame of 10240 bytes for 4 buffers (10240 bytes if none shared space)}}
  func.func @cross_attention(%x: tensor<2x?x32xf32>, %mem: tensor<2x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>) -> tensor<2x?x32xf32> {
    %wq = tfm.slice_rows %wi from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
    %bq = tfm.slice_rows %bi from 0 : tensor<96xf32> -> tensor<32xf32>
    %qr = tfm.linear %x, %wq, %bq : (tensor<2x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
    %q = tfm.split_heads %qr into 4 heads : tensor<2x?x32xf32> -> tensor<2x4x?x8xf32>
    %wkv = tfm.slice_rows %wi from 32 : tensor<96x32xf32> -> tensor<64x32xf32>
    %bkv = tfm.slice_rows %bi from 32 : tensor<96xf32> -> tensor<64xf32>
    %kv = tfm.linear %mem, %wkv, %bkv : (tensor<2x?x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<2x?x64xf32>
    %k = tfm.split_heads %kv part 0 of 2 into 4 heads : tensor<2x?x64xf32> -> tensor<2x4x?x8xf32>
    %v = tfm.split_heads %kv part 1 of 2 into 4 heads : tensor<2x?x64xf32> -> tensor<2x4x?x8xf32>
    %o = tfm.attention <dot> %q, %k, %v : (tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>) -> tensor<2x4x?x8xf32>
    %m = tfm.merge_heads %o : tensor<2x4x?x8xf32> -> tensor<2x?x32xf32>
    %y = tfm.linear %m, %wo, %bo : (tensor<2x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<2x?x32xf32>
    return %y : tensor<2x?x32xf32>
  }

  // expected-remark @+1 {{in @bilinear: frame of 12288 bytes for 4 buffers (12288 bytes if none shared space)}}
  func.func @bilinear(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %w: tensor<4x8x8xf32>) -> tensor<?x?x32xf32> {
    %qkv = tfm.linear %x, %wi, %bi : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %o = tfm.attention <bilinear> %q, %k, %v params(%w) : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x8x8xf32>) -> tensor<?x4x?x8xf32>
    %m = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    return %m : tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @additive: frame of 16384 bytes for 4 buffers (16384 bytes if none shared space)}}
  func.func @additive(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %wk: tensor<4x16x8xf32>, %wq: tensor<4x16x8xf32>, %va: tensor<4x16xf32>) -> tensor<?x?x32xf32> {
    %qkv = tfm.linear %x, %wi : (tensor<?x?x32xf32>, tensor<96x32xf32>) -> tensor<?x?x96xf32>
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %o = tfm.attention <additive> %q, %k, %v params(%wk, %wq, %va) causal : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<?x4x?x8xf32>
    %m = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    return %m : tensor<?x?x32xf32>
  }

  // expected-remark @+1 {{in @rope_copies: frame of 16384 bytes for 17 buffers (23552 bytes if none shared space)}}
  func.func @rope_copies(%qkv: tensor<?x?x96xf32>, %x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x96xf32>) {
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %rq = tfm.rotary <half> %q : tensor<?x4x?x8xf32>
    %rk = tfm.rotary <half> %k : tensor<?x4x?x8xf32>
    %o = tfm.attention <scaled_dot> %rq, %rk, %v : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    %p = tfm.linear %x, %wi : (tensor<?x?x32xf32>, tensor<96x32xf32>) -> tensor<?x?x96xf32>
    %q2 = tfm.split_heads %p part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k2 = tfm.split_heads %p part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v2 = tfm.split_heads %p part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %rq2 = tfm.rotary <half> %q2 : tensor<?x4x?x8xf32>
    %rk2 = tfm.rotary <half> %k2 : tensor<?x4x?x8xf32>
    %o2 = tfm.attention <scaled_dot> %rq2, %rk2, %v2 : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m2 = tfm.merge_heads %o2 : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    %s = tfm.add %p, %p : tensor<?x?x96xf32>
    return %m, %m2, %s : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x96xf32>
  }

  // expected-remark @+1 {{in @view_alive: frame of 12288 bytes for 6 buffers (18432 bytes if none shared space)}}
  func.func @view_alive(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
    %qkv = tfm.linear %x, %wi : (tensor<?x?x32xf32>, tensor<96x32xf32>) -> tensor<?x?x96xf32>
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %h = tfm.linear %x, %w1 : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
    %g = tfm.linear %h, %w2 : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
    %o = tfm.attention <dot> %q, %k, %v : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    %s = tfm.add %g, %m : tensor<?x?x32xf32>
    %r = tfm.add %s, %x : tensor<?x?x32xf32>
    return %r : tensor<?x?x32xf32>
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

// Key/value caches live outside the frame: tfm.cache, cache_append and
// cache_read take no slot (neither do the index ops). A decode step's
// self-attention rotates Q and K in place (their rows read only through
// split_heads), appends the rotated K and the V, and attends over the
// cache: no transposed keys (the cache holds them so). Cross-attention over
// a read-only cache: the Q GEMM over a slice of in_proj, then additive
// scores that project every key the cache can hold (16 positions: 2 x 4
// heads x 16 x 16 floats) and a dot-product attention over the same keys,
// again without keys_transposed.
// CHECK-LABEL: func.func @cached(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 4096 : i64}
// CHECK-NOT: tfm_codegen.frame =
// CHECK: %[[QKV:.+]] = tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 1536>]}
// CHECK-NEXT: tfm.split_heads %[[QKV]] part 0 of 3 into 4 heads :
// CHECK-NEXT: tfm.split_heads %[[QKV]] part 1 of 3 into 4 heads :
// CHECK-NEXT: tfm.split_heads %[[QKV]] part 2 of 3 into 4 heads :
// CHECK-NEXT: tfm.rotary <half> {{.*}} offset %arg1 {tfm_codegen.frame = [#tfm_codegen.slot<rotary_cos, offset = 1536, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 1568, floats = 32>], tfm_codegen.in_place} :
// CHECK-NEXT: tfm.rotary <half> {{.*}} offset %arg1 {tfm_codegen.frame = [#tfm_codegen.slot<rotary_cos, offset = 1536, floats = 32>, #tfm_codegen.slot<rotary_sin, offset = 1568, floats = 32>], tfm_codegen.in_place} :
// CHECK-NEXT: tfm.cache_append {{.*}} : <
// CHECK-NEXT: tfm.cache_read {{.*}} : <
// CHECK-NEXT: tfm.attention <scaled_dot> {{.*}} causal offset %arg1 {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 512>]} :
// CHECK-NEXT: tfm.merge_heads
// CHECK-NEXT: tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>]}
// CHECK-NEXT: tfm.slice_rows %arg3 from 0 : tensor
// CHECK-NEXT: tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 512, floats = 512>]}
// CHECK-NEXT: tfm.split_heads {{.*}} : tensor
// CHECK-NEXT: tfm.cache_read {{.*}} : <
// CHECK-NEXT: tfm.attention <additive> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>, #tfm_codegen.slot<additive_keys, offset = 1024, floats = 2048>, #tfm_codegen.slot<additive_queries, offset = 3072, floats = 1024>]}
// CHECK-NEXT: tfm.attention <dot> {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1024, floats = 512>]}
// CHECK-NEXT: tfm.add {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 512, floats = 512>]}
// CHECK-NEXT: tfm.merge_heads
// CHECK-NEXT: return
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 8 : i64} {
  tfm.kv_cache @self : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  tfm.kv_cache @cross : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
  // expected-remark @+1 {{in @cached: frame of 16384 bytes for 13 buffers (31232 bytes if none shared space)}}
  func.func @cached(%x: tensor<?x?x32xf32>, %pos: index, %len: index, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %bo: tensor<32xf32>, %wk: tensor<4x16x8xf32>, %wq: tensor<4x16x8xf32>, %va: tensor<4x16xf32>) -> tensor<?x?x32xf32> {
    %c = tfm.cache @self : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
    %mc = tfm.cache @cross : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
    %c0 = arith.constant 0 : index
    %b = tensor.dim %x, %c0 : tensor<?x?x32xf32>
    %qkv = tfm.linear %x, %wi, %bi : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %rq = tfm.rotary <half> %q offset %pos : tensor<?x4x?x8xf32>
    %rk = tfm.rotary <half> %k offset %pos : tensor<?x4x?x8xf32>
    %n = tfm.cache_append %c, %rk, %v at %pos : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>, tensor<?x4x?x8xf32>
    %kc, %vc = tfm.cache_read %c[%b, %n] : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
    %o = tfm.attention <scaled_dot> %rq, %kc, %vc causal offset %pos : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, index) -> tensor<?x4x?x8xf32>
    %m = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    %y = tfm.linear %m, %wo, %bo : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
    %wq2 = tfm.slice_rows %wi from 0 : tensor<96x32xf32> -> tensor<32x32xf32>
    %qr2 = tfm.linear %y, %wq2 : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
    %q2 = tfm.split_heads %qr2 into 4 heads : tensor<?x?x32xf32> -> tensor<?x4x?x8xf32>
    %km, %vm = tfm.cache_read %mc[%b, %len] : !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 16, headDim = 8>
    %o2 = tfm.attention <additive> %q2, %km, %vm params(%wk, %wq, %va) : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<?x4x?x8xf32>
    %o3 = tfm.attention <dot> %q2, %km, %vm : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %s = tfm.add %o2, %o3 : tensor<?x4x?x8xf32>
    %m2 = tfm.merge_heads %s : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    return %m2 : tensor<?x?x32xf32>
  }
}

// -----

// Static shapes need no bounds.
// CHECK-LABEL: func.func @static_shapes(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 48 : i64}
// CHECK-NEXT: tfm.add {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 6>]}
// CHECK-NEXT: tfm.add {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 16, floats = 6>]}
// CHECK-NEXT: tfm.add {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 32, floats = 6>]}
// CHECK-NEXT: tfm.add %0, %2 :
// Left alone: a function planned before keeps its plan; without bounds,
// dynamic sizes have no maximum; a declaration has nothing to plan.
// CHECK-LABEL: func.func @planned(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 64 : i64}
// CHECK-NEXT: {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 32, floats = 6>]}
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
  func.func @planned(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {tfm_codegen.frame_floats = 64 : i64} {
    %0 = tfm.add %x, %x {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 32, floats = 6>]} : tensor<2x3xf32>
    %1 = tfm.add %0, %x : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}

// -----

// CHECK-LABEL: func.func @unbounded(
// CHECK-NOT: tfm_codegen.frame
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

// A dynamic dimension past the first is bounded as a sequence (per-head
// [batch, heads, seq, dk] tensors have theirs third): [1, 4, 4] floats.
// CHECK-LABEL: func.func @dynamic_dims(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 16 : i64}
// CHECK-NEXT: tfm.add {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 16>]}
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  // expected-remark @+1 {{in @dynamic_dims: frame of 64 bytes for 1 buffers (64 bytes if none shared space)}}
  func.func @dynamic_dims(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
    %0 = tfm.add %x, %x : tensor<?x?x?xf32>
    %1 = tfm.add %0, %x : tensor<?x?x?xf32>
    return %1 : tensor<?x?x?xf32>
  }
}

// -----

// Performer (batch 2, seq 8, 4 heads, M = 6): each tfm.feature_map's
// result, [2, 4, 8, 6] (384 floats); the causal tfm.linear_attention's
// result (its heads merged, 512) and its feature_sums scratch, each
// (sequence, head)'s M x (dv + 1) sums: 2 x 4 x 6 x 9 = 432. The Q/K/V rows
// stay alive until the linear attention, which reads the values through
// their view; the out_proj GEMM then reuses their place.
// CHECK-LABEL: func.func @performer(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 3248 : i64}
// CHECK-NEXT: %[[QKV:.+]] = tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 1536>]}
// CHECK-NEXT: tfm.split_heads %[[QKV]] part 0 of 3
// CHECK-NEXT: tfm.split_heads %[[QKV]] part 1 of 3
// CHECK-NEXT: tfm.split_heads %[[QKV]] part 2 of 3
// CHECK-NEXT: tfm.feature_map {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1536, floats = 384>]} :
// CHECK-NEXT: tfm.feature_map {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 1920, floats = 384>]} :
// CHECK-NEXT: tfm.linear_attention {{.*}} causal {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 2304, floats = 512>, #tfm_codegen.slot<feature_sums, offset = 2816, floats = 432>]} :
// CHECK-NEXT: tfm.merge_heads
// CHECK-NEXT: tfm.linear {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 512>]}
// CHECK-NEXT: tfm.add {{.*}} : tensor
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 8 : i64} {
  // expected-remark @+1 {{in @performer: frame of 12992 bytes for 6 buffers (15040 bytes if none shared space)}}
  func.func @performer(%x: tensor<?x?x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %w: tensor<4x6x8xf32>) -> tensor<?x?x32xf32> {
    %qkv = tfm.linear %x, %wi, %bi : (tensor<?x?x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x?x96xf32>
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x?x96xf32> -> tensor<?x4x?x8xf32>
    %fq = tfm.feature_map %q by %w : tensor<?x4x?x8xf32>, tensor<4x6x8xf32>
    %fk = tfm.feature_map %k by %w : tensor<?x4x?x8xf32>, tensor<4x6x8xf32>
    %o = tfm.linear_attention %fq, %fk, %v causal : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    %m = tfm.merge_heads %o : tensor<?x4x?x8xf32> -> tensor<?x?x32xf32>
    %y = tfm.linear %m, %wo : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
    %r = tfm.add %y, %x : tensor<?x?x32xf32>
    return %r : tensor<?x?x32xf32>
  }
}

// -----

// A performer decode step whose linear attention carries its sums in the
// cache (`sums`): no feature_sums scratch, its result the one slot.
// CHECK-LABEL: func.func @performer_step(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 352 : i64}
// CHECK: tfm.linear_attention {{.*}} causal offset %arg5 sums(%arg6) {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 288, floats = 64>]} :
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 8 : i64} {
  // expected-remark @+1 {{in @performer_step: frame of 1408 bytes for 4 buffers (1408 bytes if none shared space)}}
  func.func @performer_step(%x: tensor<?x1x32xf32>, %wi: tensor<96x32xf32>, %bi: tensor<96xf32>, %wo: tensor<32x32xf32>, %w: tensor<4x6x8xf32>, %pos: index, %c: !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 8, headDim = 8, features = 6>) -> tensor<?x1x32xf32> {
    %qkv = tfm.linear %x, %wi, %bi : (tensor<?x1x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<?x1x96xf32>
    %q = tfm.split_heads %qkv part 0 of 3 into 4 heads : tensor<?x1x96xf32> -> tensor<?x4x1x8xf32>
    %k = tfm.split_heads %qkv part 1 of 3 into 4 heads : tensor<?x1x96xf32> -> tensor<?x4x1x8xf32>
    %v = tfm.split_heads %qkv part 2 of 3 into 4 heads : tensor<?x1x96xf32> -> tensor<?x4x1x8xf32>
    %fq = tfm.feature_map %q by %w : tensor<?x4x1x8xf32>, tensor<4x6x8xf32>
    %fk = tfm.feature_map %k by %w : tensor<?x4x1x8xf32>, tensor<4x6x8xf32>
    %o = tfm.linear_attention %fq, %fk, %v causal offset %pos sums(%c) : (tensor<?x4x1x6xf32>, tensor<?x4x1x6xf32>, tensor<?x4x1x8xf32>, index, !tfm.kv_cache<maxBatch = 2, heads = 4, maxSeq = 8, headDim = 8, features = 6>) -> tensor<?x4x1x8xf32>
    %m = tfm.merge_heads %o : tensor<?x4x1x8xf32> -> tensor<?x1x32xf32>
    %y = tfm.linear %m, %wo : (tensor<?x1x32xf32>, tensor<32x32xf32>) -> tensor<?x1x32xf32>
    return %y : tensor<?x1x32xf32>
  }
}

// -----

// A feature map whose calls may map 32 rows (batch 2 x seq 16, the
// Highway code's kFeatureMapTransposeRows) takes a features_transposed
// scratch beside its result ([2, 4, 16, 6], 768 floats): W transposed, 4
// heads x 8 x 6 = 192 floats, dead once the map is written (the second
// map's result reuses the first one's; the linear attention's feature_sums
// the second one's). The maps of 2 x 8 rows above take none.
// CHECK-LABEL: func.func @performer_long(
// CHECK-SAME: attributes {tfm_codegen.frame_floats = 1968 : i64}
// CHECK-NEXT: tfm.feature_map {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = 768>, #tfm_codegen.slot<features_transposed, offset = 768, floats = 192>]} :
// CHECK-NEXT: tfm.feature_map {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 768, floats = 768>, #tfm_codegen.slot<features_transposed, offset = 1536, floats = 192>]} :
// CHECK-NEXT: tfm.linear_attention {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<feature_sums, offset = 1536, floats = 432>]} :
module attributes {tfm.max_batch = 2 : i64, tfm.max_seq_len = 16 : i64} {
  // expected-remark @+1 {{in @performer_long: frame of 7872 bytes for 5 buffers (9408 bytes if none shared space)}}
  func.func @performer_long(%q: tensor<?x4x?x8xf32>, %k: tensor<?x4x?x8xf32>, %v: tensor<?x4x?x8xf32>, %w: tensor<4x6x8xf32>) -> tensor<?x4x?x8xf32> {
    %fq = tfm.feature_map %q by %w : tensor<?x4x?x8xf32>, tensor<4x6x8xf32>
    %fk = tfm.feature_map %k by %w : tensor<?x4x?x8xf32>, tensor<4x6x8xf32>
    %o = tfm.linear_attention %fq, %fk, %v : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    return %o : tensor<?x4x?x8xf32>
  }
}

// -----

// Keys a cache holds count at the cache's maxima (1 x 64 rows here, the
// module's 1 x 8 notwithstanding), as the Highway code counts them: a
// features_transposed slot.
// CHECK-LABEL: func.func @performer_cache_keys(
// CHECK: tfm.feature_map {{.*}} {tfm_codegen.frame = [#tfm_codegen.slot<result, offset = 0, floats = {{[0-9]+}}>, #tfm_codegen.slot<features_transposed, offset = {{[0-9]+}}, floats = 192>]} :
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 8 : i64} {
  // expected-remark @+1 {{in @performer_cache_keys:}}
  func.func @performer_cache_keys(%c: !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 64, headDim = 8>, %b: index, %n: index, %w: tensor<4x6x8xf32>, %v: tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32> {
    %k, %vc = tfm.cache_read %c[%b, %n] : !tfm.kv_cache<maxBatch = 1, heads = 4, maxSeq = 64, headDim = 8>
    %fk = tfm.feature_map %k by %w : tensor<?x4x?x8xf32>, tensor<4x6x8xf32>
    %o = tfm.linear_attention %fk, %fk, %v : (tensor<?x4x?x6xf32>, tensor<?x4x?x6xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x8xf32>
    return %o : tensor<?x4x?x8xf32>
  }
}

// -----

// Error: a buffer larger than any frame (2^42 floats).
module attributes {tfm.max_batch = 1 : i64, tfm.max_seq_len = 4 : i64} {
  func.func @huge(%x: tensor<65536x65536x1024xf32>) -> tensor<65536x65536x1024xf32> {
    // expected-error @+1 {{frame buffer 'result 0' needs 4398046511104 floats, more than a frame can hold (2^40)}}
    %0 = tfm.add %x, %x : tensor<65536x65536x1024xf32>
    %1 = tfm.add %0, %x : tensor<65536x65536x1024xf32>
    return %1 : tensor<65536x65536x1024xf32>
  }
}
