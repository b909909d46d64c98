// RUN: tfm-opt %s -split-input-file --tfm-approximate-math | FileCheck %s

// f32 exp, erf and tanh become arithmetic (polynomials, with FMAs and the
// exponent built by bit manipulation): nothing left for libm.
// CHECK-LABEL: func.func @approximated(
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// CHECK: math.fma
// CHECK: arith.bitcast
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// CHECK: return
func.func @approximated(%x: f32, %v: vector<16xf32>) -> (f32, f32, vector<16xf32>) {
  %e = math.exp %x : f32
  %r = math.erf %x : f32
  %t = math.tanh %v : vector<16xf32>
  return %e, %r, %t : f32, f32, vector<16xf32>
}

// -----

// Left alone: f64 (the angles of positional encodings, computed in double
// as the reference does) and the f32 ops the pass does not name.
// CHECK-LABEL: func.func @untouched(
// CHECK-NEXT: math.exp %arg0 : f64
// CHECK-NEXT: math.sin %arg0 : f64
// CHECK-NEXT: math.sqrt %arg1 : f32
// CHECK-NEXT: math.powf %arg1, %arg1 : f32
// CHECK-NEXT: return
func.func @untouched(%d: f64, %x: f32) -> (f64, f64, f32, f32) {
  %e = math.exp %d : f64
  %s = math.sin %d : f64
  %q = math.sqrt %x : f32
  %p = math.powf %x, %x : f32
  return %e, %s, %q, %p : f64, f64, f32, f32
}
