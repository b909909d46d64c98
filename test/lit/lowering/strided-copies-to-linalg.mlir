// RUN: tfm-opt %s --tfm-strided-copies-to-linalg | FileCheck %s

// --tfm-strided-copies-to-linalg: a copy into a strided view (a cache
// slice) becomes linalg.copy (loops later); a copy between contiguous
// buffers stays a memref.copy (a memcpy later).

// CHECK-LABEL: func.func @into_slice(
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK-NEXT: linalg.copy ins(%arg0 : memref<1x4x8xf32>) outs(%[[VIEW]] : memref<1x4x8xf32, strided<[512, 128, 1], offset: ?>>)
// CHECK-NOT: memref.copy
func.func @into_slice(%src: memref<1x4x8xf32>, %cache: memref<2x4x16x8xf32>, %pos: index) {
  %view = memref.subview %cache[0, 0, %pos, 0] [1, 4, 1, 8] [1, 1, 1, 1] : memref<2x4x16x8xf32> to memref<1x4x8xf32, strided<[512, 128, 1], offset: ?>>
  memref.copy %src, %view : memref<1x4x8xf32> to memref<1x4x8xf32, strided<[512, 128, 1], offset: ?>>
  return
}

// CHECK-LABEL: func.func @contiguous(
// CHECK-NEXT: memref.copy %arg0, %arg1
// CHECK-NOT: linalg.copy
func.func @contiguous(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  return
}
