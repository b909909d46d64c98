//===- FuzzCheck.h - invariants the fuzz targets check ----------*- C++ -*-===//
//
// Release builds compile assert() away; these checks stay, and a broken one
// is a finding (libFuzzer saves the input that broke it).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FUZZ_FUZZCHECK_H
#define TFM_FUZZ_FUZZCHECK_H

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                 \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s: %s\n", __FILE__,     \
                   __LINE__, #cond, what);                                     \
      std::abort();                                                            \
    }                                                                          \
  } while (false)

#endif // TFM_FUZZ_FUZZCHECK_H
