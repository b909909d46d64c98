//===- NativeBuild.cpp - generated C++ -> object, executable, library -----===//
//
// clang++-22 is the compiler of choice: install-deps.sh installs it (so it is
// there wherever tfm-compile is), it is the compiler tfm itself is built
// with, and it compiles Highway's per-target code faster than g++-12.
//
//===----------------------------------------------------------------------===//

#include "NativeBuild.h"

#include "tfm/Driver/RuntimePaths.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>

using namespace llvm;

namespace tfm {

namespace {

Expected<std::string> findCompiler() {
  if (const char *env = std::getenv("TFM_CXX"); env && *env) {
    if (ErrorOr<std::string> p = sys::findProgramByName(env))
      return *p;
    return createStringError(inconvertibleErrorCode(),
                             "TFM_CXX='%s' is not an executable on PATH", env);
  }
  for (StringRef name : {"clang++-22", "clang++", "g++"})
    if (ErrorOr<std::string> p = sys::findProgramByName(name))
      return *p;
  return createStringError(inconvertibleErrorCode(),
                           "no C++ compiler found (tried clang++-22, clang++, "
                           "g++); run scripts/install-deps.sh or set TFM_CXX");
}

/// Runs `args`; on failure returns an error carrying the command's output.
Error run(ArrayRef<std::string> args, bool verbose, StringRef stage) {
  SmallVector<StringRef> refs(args.begin(), args.end());
  SmallString<128> log;
  if (std::error_code ec = sys::fs::createTemporaryFile("tfm-cxx", "log", log))
    return errorCodeToError(ec);
  std::optional<StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  if (verbose)
    errs() << "tfm-compile: $ " << join(args, " ") << "\n";
  auto start = std::chrono::steady_clock::now();
  std::string message;
  int rc = sys::ExecuteAndWait(args[0], refs, std::nullopt, redirects, 0, 0,
                               &message);
  std::chrono::duration<double, std::milli> ms =
      std::chrono::steady_clock::now() - start;
  if (verbose)
    errs() << format("tfm-compile: %-28s %9.2f ms\n", stage.str().c_str(),
                     ms.count());
  std::string output;
  if (ErrorOr<std::unique_ptr<MemoryBuffer>> b = MemoryBuffer::getFile(log))
    output = (*b)->getBuffer().str();
  sys::fs::remove(log);
  if (rc == 0)
    return Error::success();
  if (output.size() > 4000)
    output = "...\n" + output.substr(output.size() - 4000);
  return createStringError(
      inconvertibleErrorCode(), "%s failed (%s):\n%s", stage.str().c_str(),
      rc < 0 ? message.c_str() : ("exit " + std::to_string(rc)).c_str(),
      output.c_str());
}

/// Appends the words of `flags` (split at spaces; no quoting) to `args`.
void appendFlags(std::vector<std::string> &args, StringRef flags) {
  SmallVector<StringRef> words;
  flags.split(words, ' ', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef w : words)
    args.push_back(w.str());
}

/// The flags the runtime was built with that a model must share (the
/// sanitizers of a TFM_SANITIZE build), then $`envVar`.
void appendExtraFlags(std::vector<std::string> &args, const char *envVar) {
  appendFlags(args, TFM_MODEL_SANITIZE_FLAGS);
  if (const char *env = std::getenv(envVar))
    appendFlags(args, env);
}

} // namespace

Error buildNative(StringRef cppPath, ArtifactKind kind, StringRef outPath,
                  const NativeBuildOptions &options) {
  Expected<std::string> cxx = findCompiler();
  if (!cxx)
    return cxx.takeError();

  bool merge = kind == ArtifactKind::Object && !options.extraObjects.empty();
  std::string objPath = kind == ArtifactKind::Object && !merge
                            ? outPath.str()
                            : (cppPath.drop_back(4) + ".o").str();
  // -O2: the code is explicit SIMD already; -O3 took a 2-layer
  // encoder_decoder's C++ from 7.6 to 11 s and made no measured difference
  // to its speed (BERT-base seq 128, GPT-2 small seq 512, 1 thread).
  // TFM_CXXFLAGS comes later on the line: TFM_CXXFLAGS=-O3 restores it.
  std::vector<std::string> compile = {
      *cxx,
      "-std=c++17",
      "-O2",
      "-fPIC",
      "-fno-exceptions",
      "-I" TFM_RUNTIME_INCLUDE_DIR,
      "-I" + sys::path::parent_path(cppPath).str()};
  if (options.native) {
    compile.push_back("-march=native");
    compile.push_back("-DHWY_COMPILE_ONLY_STATIC=1");
  }
  appendExtraFlags(compile, "TFM_CXXFLAGS");
  compile.insert(compile.end(), {"-c", cppPath.str(), "-o", objPath});
  if (Error e = run(compile, options.verbose, "compile generated C++"))
    return e;
  if (merge) {
    std::vector<std::string> relink = {*cxx, "-r", "-nostdlib", objPath};
    relink.insert(relink.end(), options.extraObjects.begin(),
                  options.extraObjects.end());
    relink.insert(relink.end(), {"-o", outPath.str()});
    return run(relink, options.verbose, "merge objects");
  }
  if (kind == ArtifactKind::Object)
    return Error::success();

  std::vector<std::string> link = {*cxx, "-Wl,--gc-sections"};
  if (kind == ArtifactKind::SharedLibrary) {
    // Export the model's C API only: the runtime (and the LLVM Support code
    // in it) stays private, so it cannot clash with another LLVM in the
    // process that loads the library.
    SmallString<128> script(sys::path::parent_path(cppPath));
    sys::path::append(script, "exports.map");
    std::error_code ec;
    raw_fd_ostream os(script, ec);
    if (ec)
      return errorCodeToError(ec);
    os << "{ global: " << options.cName << "_*; local: *; };\n";
    os.close();
    link.insert(link.end(), {"-shared", "-Wl,--exclude-libs,ALL",
                             "-Wl,--version-script=" + script.str().str()});
  }
  appendExtraFlags(link, "TFM_LDFLAGS");
  link.push_back(objPath);
  link.insert(link.end(), options.extraObjects.begin(),
              options.extraObjects.end());
  if (kind == ArtifactKind::Executable)
    link.push_back(TFM_RUNTIME_MAIN_LIB);
  for (StringRef lib : split(TFM_RUNTIME_LINK_LIBS, ';'))
    if (!lib.empty())
      link.push_back(lib.str());
  link.insert(link.end(), {"-o", outPath.str()});
  return run(link, options.verbose,
             kind == ArtifactKind::Executable ? "link executable"
                                              : "link shared library");
}

std::string modelHeader(StringRef modelName, StringRef cName) {
  std::string types;
  if (ErrorOr<std::unique_ptr<MemoryBuffer>> b =
          MemoryBuffer::getFile(TFM_RUNTIME_INCLUDE_DIR "/tfm/tfm.h"))
    types = (*b)->getBuffer().str();
  std::string guard = "TFM_MODEL_" + StringRef(cName).upper() + "_H";
  return formatv(R"(/* Generated by tfm-compile for model '{0}'. C and C++. */
#ifndef {2}
#define {2}

{3}
#ifdef __cplusplus
extern "C" {{
#endif

/* Loads the weights (NULL: deterministic random weights) and prepares every
   buffer; returns NULL and a message in err on failure. */
tfm_model *{1}_create(const char *weights_path, char *err, size_t err_len);
/* Runs one forward pass; 0 on success, else {1}_last_error says why.
   Inputs in the order of the model's inputs (input; or src, tgt). If
   output->data is NULL it is pointed at the model's own buffer. Allocates
   nothing. */
int {1}_forward(tfm_model *model, const tfm_tensor *inputs, size_t n_inputs,
                tfm_tensor *output);
/* Generation with the key/value cache (decoder and encoder_decoder models
   with token ids and an LM head; others return 1): prefill takes the inputs
   of {1}_forward (the prompt; or src and the start of tgt), runs them from
   position 0 and writes the last position's logits ([batch, 1, vocab]);
   decode runs the next target tokens ([seq] or [batch, seq], the prefill's
   batch) after everything so far and writes their logits. Output as for
   {1}_forward. */
int {1}_prefill(tfm_model *model, const tfm_tensor *inputs, size_t n_inputs,
                tfm_tensor *output);
int {1}_decode(tfm_model *model, const tfm_tensor *tokens, tfm_tensor *output);
/* The message of the last failed call on model ("" after a success). */
const char *{1}_last_error(const tfm_model *model);
void {1}_destroy(tfm_model *model);

#ifdef __cplusplus
}
#endif
#endif /* {2} */
)",
                 modelName, cName, guard, types)
      .str();
}

} // namespace tfm
