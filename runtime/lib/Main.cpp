//===- Main.cpp - main() of a compiled model's executable -----------------===//
//
// Alone in its own library so that the runtime library proper never refers
// to the generated `kModel`: the C API and the tests link without one.
//
//===----------------------------------------------------------------------===//

#include "tfm/runtime/Cli.h"

int main(int argc, char **argv) {
  return tfm::rt::runModelMain(tfm::rt::kModel, argc, argv);
}
