//===- NativeBuild.h - generated C++ -> object, executable, library -------===//

#ifndef TFM_DRIVER_NATIVEBUILD_H
#define TFM_DRIVER_NATIVEBUILD_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace tfm {

enum class ArtifactKind { Object, Executable, SharedLibrary };

struct NativeBuildOptions {
  /// -march=native and only the host's Highway target; otherwise every
  /// x86-64 target with run-time dispatch.
  bool native = true;
  /// Print each command and its time.
  bool verbose = false;
  /// The model's C identifier: a shared library exports `<cName>_*` only.
  std::string cName;
  /// Objects to link with the compiled C++ (the LLVM backend's code); for an
  /// object artifact, merged into it (a relocatable link).
  std::vector<std::string> extraObjects;
};

/// Compiles the generated C++ at `cppPath` (absolute) and produces `kind` at
/// `outPath`, linking the runtime. The C++ compiler is $TFM_CXX, else
/// clang++-22, clang++ or g++, whichever is found first. $TFM_CXXFLAGS and
/// $TFM_LDFLAGS (words split at spaces) are added to the compile and link
/// commands; in a sanitizer build (TFM_SANITIZE) both also get the
/// sanitizer flags the runtime was built with.
llvm::Error buildNative(llvm::StringRef cppPath, ArtifactKind kind,
                        llvm::StringRef outPath,
                        const NativeBuildOptions &options);

/// The C header of a compiled model's library: the runtime's tfm.h types and
/// the three functions under `cName`.
std::string modelHeader(llvm::StringRef modelName, llvm::StringRef cName);

} // namespace tfm

#endif // TFM_DRIVER_NATIVEBUILD_H
