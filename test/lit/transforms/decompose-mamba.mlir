// RUN: tfm-opt %s -split-input-file --tfm-decompose-mamba | FileCheck %s
// RUN: tfm-opt %s -split-input-file --tfm-decompose-mamba=remarks=true -verify-diagnostics -o /dev/null

// --tfm-decompose-mamba: a mixer's projections as GEMMs over the rows of
// its stacked weights (in_proj's u and z halves, x_proj's dt, B and C
// rows), the conv and the scan as ops of their own; a decode step's state
// goes to both.

// CHECK-LABEL: func.func @mixer(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x32xf32>, %[[WIN:[a-z0-9]+]]: tensor<128x32xf32>, %[[CW:[a-z0-9]+]]: tensor<64x1x4xf32>, %[[CB:[a-z0-9]+]]: tensor<64xf32>, %[[WX:[a-z0-9]+]]: tensor<18x64xf32>, %[[WDT:[a-z0-9]+]]: tensor<64x2xf32>, %[[BDT:[a-z0-9]+]]: tensor<64xf32>, %[[A:[a-z0-9]+]]: tensor<64x8xf32>, %[[D:[a-z0-9]+]]: tensor<64xf32>, %[[WOUT:[a-z0-9]+]]: tensor<32x64xf32>)
// CHECK-NEXT: %[[WU:.+]] = tfm.slice_rows %[[WIN]] from 0 : tensor<128x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: %[[U:.+]] = tfm.linear %[[X]], %[[WU]] : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %[[WZ:.+]] = tfm.slice_rows %[[WIN]] from 64 : tensor<128x32xf32> -> tensor<64x32xf32>
// CHECK-NEXT: %[[Z:.+]] = tfm.linear %[[X]], %[[WZ]] : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %[[UC:.+]] = tfm.causal_conv1d %[[U]], %[[CW]], %[[CB]] : (tensor<?x?x64xf32>, tensor<64x1x4xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %[[WDTR:.+]] = tfm.slice_rows %[[WX]] from 0 : tensor<18x64xf32> -> tensor<2x64xf32>
// CHECK-NEXT: %[[DT:.+]] = tfm.linear %[[UC]], %[[WDTR]] : (tensor<?x?x64xf32>, tensor<2x64xf32>) -> tensor<?x?x2xf32>
// CHECK-NEXT: %[[WB:.+]] = tfm.slice_rows %[[WX]] from 2 : tensor<18x64xf32> -> tensor<8x64xf32>
// CHECK-NEXT: %[[B:.+]] = tfm.linear %[[UC]], %[[WB]] : (tensor<?x?x64xf32>, tensor<8x64xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[WC:.+]] = tfm.slice_rows %[[WX]] from 10 : tensor<18x64xf32> -> tensor<8x64xf32>
// CHECK-NEXT: %[[C:.+]] = tfm.linear %[[UC]], %[[WC]] : (tensor<?x?x64xf32>, tensor<8x64xf32>) -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[DELTA:.+]] = tfm.linear %[[DT]], %[[WDT]], %[[BDT]] : (tensor<?x?x2xf32>, tensor<64x2xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.selective_scan %[[UC]], %[[DELTA]], %[[A]], %[[B]], %[[C]], %[[D]], %[[Z]] : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
// CHECK-NEXT: %[[OUT:.+]] = tfm.linear %[[Y]], %[[WOUT]] : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT: return %[[OUT]]
func.func @mixer(%x: tensor<?x?x32xf32>, %win: tensor<128x32xf32>, %cw: tensor<64x1x4xf32>, %cb: tensor<64xf32>, %wx: tensor<18x64xf32>, %wdt: tensor<64x2xf32>, %bdt: tensor<64xf32>, %a: tensor<64x8xf32>, %d: tensor<64xf32>, %wout: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  // expected-remark @+1 {{mamba mixer (64 channels, state 8, dt_rank 2, conv width 4): in_proj, x_proj, dt_proj and out_proj as GEMMs; the causal conv with its bias and SiLU in one pass (tfm.causal_conv1d); softplus, the recurrence, C . h, the D skip and the SiLU(z) gate in one scan over the sequence (tfm.selective_scan)}}
  %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout : (tensor<?x?x32xf32>, tensor<128x32xf32>, tensor<64x1x4xf32>, tensor<64xf32>, tensor<18x64xf32>, tensor<64x2xf32>, tensor<64xf32>, tensor<64x8xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// A decode step: both sequence ops carry the state from the position.
// CHECK-LABEL: func.func @mixer_step(
// CHECK-SAME: %[[P:[a-z0-9]+]]: index, %[[S:[a-z0-9]+]]: !tfm.mamba_state<maxBatch = 2, channels = 16, convWidth = 3, stateSize = 4>)
// CHECK: tfm.causal_conv1d {{.*}} offset %[[P]] state(%[[S]])
// CHECK: tfm.selective_scan {{.*}} offset %[[P]] state(%[[S]])
// CHECK-NOT: tfm.mamba_mixer
func.func @mixer_step(%x: tensor<?x1x8xf32>, %win: tensor<32x8xf32>, %cw: tensor<16x1x3xf32>, %cb: tensor<16xf32>, %wx: tensor<9x16xf32>, %wdt: tensor<16x1xf32>, %bdt: tensor<16xf32>, %a: tensor<16x4xf32>, %d: tensor<16xf32>, %wout: tensor<8x16xf32>, %p: index, %s: !tfm.mamba_state<maxBatch = 2, channels = 16, convWidth = 3, stateSize = 4>) -> tensor<?x1x8xf32> {
  // expected-remark @+1 {{mamba mixer (16 channels, state 4, dt_rank 1, conv width 3): in_proj, x_proj, dt_proj and out_proj as GEMMs; the causal conv with its bias and SiLU in one pass (tfm.causal_conv1d); softplus, the recurrence, C . h, the D skip and the SiLU(z) gate in one scan over the sequence (tfm.selective_scan), both carrying the mixer's state from step to step (a step costs the same at any position)}}
  %0 = tfm.mamba_mixer %x in_proj %win conv(%cw, %cb) x_proj %wx dt_proj(%wdt, %bdt) a_log %a d %d out_proj %wout offset %p state(%s) : (tensor<?x1x8xf32>, tensor<32x8xf32>, tensor<16x1x3xf32>, tensor<16xf32>, tensor<9x16xf32>, tensor<16x1xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<16xf32>, tensor<8x16xf32>, index, !tfm.mamba_state<maxBatch = 2, channels = 16, convWidth = 3, stateSize = 4>) -> tensor<?x1x8xf32>
  return %0 : tensor<?x1x8xf32>
}
