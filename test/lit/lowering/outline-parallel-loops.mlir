// RUN: tfm-opt %s -split-input-file --tfm-outline-parallel-loops | FileCheck %s

// --tfm-outline-parallel-loops: an outermost normalized scf.forall without
// results becomes a call of a dispatch function (defined by the glue, which
// runs the body on the thread pool) with the iteration count and the
// captured values; its body a function of the linear index (delinearized,
// row-major: the last dimension fastest) and the captures; constants are
// cloned into it, not captured.

// CHECK-LABEL: func.func @tiles(
// CHECK-SAME: %[[X:.*]]: memref<?x8xf32>, %[[Y:.*]]: memref<?x3x8xf32>, %[[S:.*]]: f32, %[[N:.*]]: index)
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[COUNT:.*]] = arith.muli %[[N]], %[[C3]] : index
// CHECK-NEXT: call @__tfm_parallel_0(%[[COUNT]], %[[X]], %[[S]], %[[Y]]) : (index, memref<?x8xf32>, f32, memref<?x3x8xf32>) -> ()
// CHECK-NOT: scf.forall
// CHECK: return
// CHECK-LABEL: func.func @__tfm_parallel_0_body(
// CHECK-SAME: %[[I:.*]]: index, %[[BX:.*]]: memref<?x8xf32>, %[[BS:.*]]: f32, %[[BY:.*]]: memref<?x3x8xf32>) attributes {llvm.emit_c_interface}
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[B3:.*]] = arith.constant 3 : index
// CHECK-NEXT: %[[COL:.*]] = arith.remui %[[I]], %[[B3]] : index
// CHECK-NEXT: %[[ROW:.*]] = arith.divui %[[I]], %[[B3]] : index
// CHECK-NEXT: %[[V:.*]] = memref.load %[[BX]][%[[ROW]], %[[ZERO]]]
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[V]], %[[BS]] : f32
// CHECK-NEXT: memref.store %[[P]], %[[BY]][%[[ROW]], %[[COL]], %[[ZERO]]]
// CHECK-NEXT: return
// CHECK: func.func private @__tfm_parallel_0(index, memref<?x8xf32>, f32, memref<?x3x8xf32>) attributes {llvm.emit_c_interface}
func.func @tiles(%x: memref<?x8xf32>, %y: memref<?x3x8xf32>, %s: f32, %n: index) {
  %c0 = arith.constant 0 : index
  scf.forall (%i, %j) in (%n, 3) {
    %v = memref.load %x[%i, %c0] : memref<?x8xf32>
    %p = arith.mulf %v, %s : f32
    memref.store %p, %y[%i, %j, %c0] : memref<?x3x8xf32>
  }
  return
}

// -----

// Loops inside a parallel loop's body stay in the body; each outermost
// loop of a module gets its own number. A dynamic inner trip count is
// captured.
// CHECK-LABEL: func.func @nested(
// CHECK: call @__tfm_parallel_0(
// CHECK: call @__tfm_parallel_1(
// CHECK: call @__tfm_parallel_2(%{{.*}}, %arg2, %arg1, %arg3) : (index, f32, memref<2xf32>, index)
// CHECK-LABEL: func.func @__tfm_parallel_0_body(
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK-LABEL: func.func @__tfm_parallel_1_body(
// CHECK-NOT: scf.forall
// CHECK-LABEL: func.func @__tfm_parallel_2_body(
// CHECK-SAME: %[[I:.*]]: index, %{{.*}}: f32, %{{.*}}: memref<2xf32>, %[[M:.*]]: index)
// CHECK-NEXT: %{{.*}} = arith.remui %[[I]], %[[M]] : index
// CHECK-NEXT: %{{.*}} = arith.divui %[[I]], %[[M]] : index
func.func @nested(%y: memref<2x4xf32>, %z: memref<2xf32>, %s: f32, %m: index) {
  scf.forall (%i) in (2) {
    scf.forall (%j) in (4) {
      memref.store %s, %y[%i, %j] : memref<2x4xf32>
    }
  }
  scf.forall (%i) in (2) {
    memref.store %s, %z[%i] : memref<2xf32>
  }
  scf.forall (%i, %j) in (2, %m) {
    memref.store %s, %z[%i] : memref<2xf32>
  }
  return
}

// -----

// Left alone: a loop that is not normalized (step 2), one that captures a
// vector (no C type), one with results (on tensors, before bufferization).
// CHECK-LABEL: func.func @untouched(
// CHECK: scf.forall (%{{.*}}) = (0) to (8) step (2)
// CHECK: scf.forall (%{{.*}}) in (8)
// CHECK: vector.store
// CHECK: scf.forall (%{{.*}}) in (8) shared_outs
// CHECK-NOT: __tfm_parallel
func.func @untouched(%y: memref<8xf32>, %v: vector<4xf32>, %t: tensor<8xf32>, %s: f32) -> tensor<8xf32> {
  scf.forall (%i) = (0) to (8) step (2) {
    memref.store %s, %y[%i] : memref<8xf32>
  }
  scf.forall (%i) in (8) {
    vector.store %v, %y[%i] : memref<8xf32>, vector<4xf32>
  }
  %r = scf.forall (%i) in (8) shared_outs(%o = %t) -> (tensor<8xf32>) {
    %one = tensor.from_elements %s : tensor<1xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %one into %o[%i] [1] [1] : tensor<1xf32> into tensor<8xf32>
    }
  }
  return %r : tensor<8xf32>
}
