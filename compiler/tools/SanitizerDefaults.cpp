//===- SanitizerDefaults.cpp - ASan options for tools that use MLIR -------===//
//
// Linked into every executable that uses libMLIR.so/libLLVM.so when built
// with ASan (TFM_SANITIZE, and the fuzz targets). LLVM's BumpPtrAllocator
// poisons its free slab space by hand when the code that inlines it is
// instrumented, and unpoisons what it hands out; libMLIR.so is not
// instrumented, so memory it takes from a slab our code poisoned reads as
// "use-after-poison" although it is fine. Manual poisoning is turned off;
// every other check of ASan stays on.
//
//===----------------------------------------------------------------------===//

extern "C" const char *__asan_default_options();

extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}
