# lit configuration for tfm: IR tests run tfm-opt (and later tfm-compile)
# and check their output with FileCheck.
import os

import lit.formats

config.name = "tfm"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".json", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfm_obj_root, "test", "lit")

# Our tools first, then LLVM's FileCheck, not, count, split-file.
path = os.pathsep.join(
    [config.tfm_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
)
config.environment["PATH"] = path + os.pathsep + os.environ.get("PATH", "")
config.substitutions.append(("%examples", os.path.join(config.tfm_src_root, "examples")))
# Programs that link a compiled model's library need the sanitizer runtime
# of a TFM_SANITIZE build: `%{sanitize_flags}` gives them its flags.
config.substitutions.append(("%{sanitize_flags}", config.tfm_sanitize_flags))
# `%{npy_close} A.npy B.npy --atol X --rtol Y`: two outputs the same within
# rounding (Inputs/npy-close.py; numpy, as the e2e harness uses).
config.substitutions.append(
    ("%{npy_close}", "/usr/bin/python3 " + os.path.join(config.test_source_root, "Inputs", "npy-close.py"))
)
