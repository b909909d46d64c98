// RUN: tfm-opt %s --tfm-lower-to-llvm | FileCheck %s
// RUN: tfm-opt %s --tfm-lower-to-llvm | FileCheck %s --check-prefix=NOCALL

// A Mamba mixer's decode step through the whole LLVM lowering: the conv's
// window and the scan's state read from and written back to the state
// buffer, the zeroed window (at offset 0), the conv's rows and the scan's
// blocks of channels each an outlined parallel loop; the scan's body is
// vectors of 16 channels: masked loads and stores (the 24 channels are a
// full vector and 8 lanes of a second), FMAs on vector<16xf32>, exp and
// softplus's log1p as polynomials (no libm call, no transfer op left).

// NOCALL-NOT: vector.transfer
// NOCALL-NOT: llvm.call @expf
// NOCALL-NOT: llvm.call @log1pf
// NOCALL-NOT: llvm.call @logf
// NOCALL-NOT: llvm.intr.log

// CHECK-LABEL: llvm.func @mixer_step(
// CHECK: llvm.call @__tfm_parallel_0(
// CHECK: llvm.call @__tfm_parallel_1(
// CHECK: llvm.call @__tfm_parallel_2(
// CHECK: llvm.return
// The conv: one row block's rows, three taps and the bias as FMAs.
// CHECK-LABEL: llvm.func @__tfm_parallel_1_body(
// CHECK-COUNT-3: llvm.intr.fma({{.*}}) : (f32, f32, f32) -> f32
// The scan.
// CHECK-LABEL: llvm.func @__tfm_parallel_2_body(
// CHECK: llvm.intr.masked.load %{{.+}} : (!llvm.ptr, vector<16xi1>, vector<16xf32>) -> vector<16xf32>
// CHECK: llvm.intr.fma(%{{.+}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK: llvm.intr.masked.store %{{.+}} : vector<16xf32>, vector<16xi1> into !llvm.ptr
// CHECK: llvm.return
func.func @mixer_step(%x: tensor<?x?x24xf32>, %w: tensor<24x1x3xf32>, %cb: tensor<24xf32>, %dt: tensor<?x?x24xf32>, %a: tensor<24x4xf32>, %bm: tensor<?x?x4xf32>, %cm: tensor<?x?x4xf32>, %d: tensor<24xf32>, %z: tensor<?x?x24xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 2, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x?x24xf32> {
  %u = tfm.causal_conv1d %x, %w, %cb offset %p state(%s) : (tensor<?x?x24xf32>, tensor<24x1x3xf32>, tensor<24xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x?x24xf32>
  %y = tfm.selective_scan %u, %dt, %a, %bm, %cm, %d, %z offset %p state(%s) : (tensor<?x?x24xf32>, tensor<?x?x24xf32>, tensor<24x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<24xf32>, tensor<?x?x24xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 24, convWidth = 3, stateSize = 4>) -> tensor<?x?x24xf32>
  return %y : tensor<?x?x24xf32>
}
