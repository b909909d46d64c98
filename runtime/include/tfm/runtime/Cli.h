//===- Cli.h - the compiled executable's command line -----------*- C++ -*-===//

#ifndef TFM_RUNTIME_CLI_H
#define TFM_RUNTIME_CLI_H

#include "tfm/runtime/Model.h"

namespace tfm::rt {

/// The whole program behind `./model [--weights W] [--input NAME=FILE ...]
/// [--output OUT.npy] [--threads N] [--bench N] [--warmup N]`. Returns the
/// exit status: 0 on success, 1 on bad flags or input (message on stderr).
int runModelMain(const ModelInfo &model, int argc, char **argv);

} // namespace tfm::rt

#endif // TFM_RUNTIME_CLI_H
