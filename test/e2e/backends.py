"""What a backend refuses to compile, as tfm-compile says it (exit 1): the
harnesses (run_e2e.py, run_generate.py) check that refusal instead of
running a case whose model has a feature the backend does not lower yet
(docs/reference.md, "Not yet")."""


import os


class BackendRefusal(Exception):
    """tfm-compile refused the case's model for the backend, as expected."""


def refusal(model, backend):
    """The error tfm-compile must give for `model` (a description dict) with
    `backend`, or None when it must compile it."""
    ffn = model.get("ffn")
    if backend == "llvm" and isinstance(ffn, dict) and ffn.get("kind") == "moe":
        return "error: ffn kind 'moe' is not supported by the LLVM backend yet"
    return None


def check(model, backend, returncode, stderr, exe):
    """After tfm-compile ran: raises BackendRefusal when it refused as
    `refusal` says it must; returns an error text when it should have
    refused and did not (or refused otherwise), else None."""
    want = refusal(model, backend)
    if want is None:
        return None
    if returncode == 1 and want in stderr and not os.path.exists(exe):
        raise BackendRefusal(want)
    return ("tfm-compile --backend=%s exited %d; expected exit 1 with %r and no executable: %s"
            % (backend, returncode, want, stderr.strip()[-300:]))

