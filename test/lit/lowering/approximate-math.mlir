// RUN: tfm-opt %s --tfm-approximate-math | FileCheck %s
// RUN: tfm-opt %s --tfm-lower-to-llvm | FileCheck %s --check-prefix=LLVM

// --tfm-approximate-math: math.erf, math.exp, math.tanh and math.log1p
// (GELU, softmax, GELU's tanh form, Mamba's softplus; log1p through log,
// which goes too) become arithmetic (upstream's polynomials, with FMAs);
// sqrt, sin, cos and powf stay for LLVM and libm.

// CHECK-LABEL: func.func @gelu_erf(
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK-NOT: math.erf
// CHECK: return
func.func @gelu_erf(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @softmax_exp(
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK-NOT: math.exp
// CHECK: return
func.func @softmax_exp(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @gelu_tanh(
// CHECK-NOT: math.tanh
// CHECK: math.fma
// CHECK-NOT: math.tanh
// CHECK: return
func.func @gelu_tanh(%x: f32) -> f32 {
  %0 = math.tanh %x : f32
  return %0 : f32
}

// Softplus's log1p (of vectors across channels, in the selective scan):
// Kahan's x log(1 + x) / ((1 + x) - 1), its log a polynomial too.
// CHECK-LABEL: func.func @softplus_log1p(
// CHECK-NOT: math.log
// CHECK: math.fma
// CHECK-NOT: math.log
// CHECK: return
func.func @softplus_log1p(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.log1p %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// In a loop body (a linalg.generic's region), as the element-wise ops have
// them.
// CHECK-LABEL: func.func @in_generic(
// CHECK: linalg.generic
// CHECK-NOT: math.erf
// CHECK: linalg.yield
func.func @in_generic(%x: memref<4xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.erf %in : f32
    linalg.yield %0 : f32
  }
  return
}

// Must not touch: sqrt is an instruction; sin and cos (rotary positions'
// angles) and powf need libm's accuracy.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NEXT: math.sqrt
// CHECK-NEXT: math.sin
// CHECK-NEXT: math.cos
// CHECK-NEXT: math.powf
func.func @left_alone(%x: f32, %y: f32) -> (f32, f32, f32, f32) {
  %0 = math.sqrt %x : f32
  %1 = math.sin %x : f32
  %2 = math.cos %x : f32
  %3 = math.powf %x, %y : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// Through the whole lowering: the approximations' FMAs are LLVM's fma
// intrinsic, not calls to libm's fmaf; erf, exp, tanh and log1p call
// nothing;
// sin, cos and powf are LLVM's intrinsics (libm's sinf, cosf and powf in
// the object).
// LLVM-NOT: llvm.call @erff
// LLVM-NOT: llvm.call @expf
// LLVM-NOT: llvm.call @tanhf
// LLVM-NOT: llvm.call @log1pf
// LLVM-NOT: llvm.call @logf
// LLVM-NOT: llvm.intr.log
// LLVM-NOT: @fmaf
// LLVM-LABEL: llvm.func @gelu_erf(
// LLVM: llvm.intr.fma
// LLVM-LABEL: llvm.func @softplus_log1p(
// LLVM: llvm.intr.fma{{.*}}vector<16xf32>
// LLVM-LABEL: llvm.func @left_alone(
// LLVM: llvm.intr.sqrt
// LLVM: llvm.intr.sin
// LLVM: llvm.intr.cos
// LLVM: llvm.intr.pow
