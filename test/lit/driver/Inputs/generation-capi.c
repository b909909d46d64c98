/* Checks a compiled model's generation C API (NAME_prefill, NAME_decode)
   against NAME_forward: prefill's logits equal the last row of a forward
   over the prompt, each decode step's equal the matching row of a forward
   over the whole sequence, within the contract's tolerance. Then the
   errors: decode before prefill, too many positions, the wrong number of
   inputs, a batch other than the prefill's.

   Compile with -DMODEL=name -DSEQ2SEQ=0|1 and -I the folder of name.h. The
   model takes token ids, has an LM head, max batch 1 and max seq len >= 8.
   Prints one line per check, "ok ..." or "FAIL ..."; exits 1 on a FAIL. */
#define STR2(x) #x
#define STR(x) STR2(x)
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#include STR(MODEL.h)

#include <math.h>
#include <stdio.h>
#include <string.h>

enum {
  kSrc = 5,
  kPrompt = 3,
  kNew = 4,
  kTotal = kPrompt + kNew,
  kVocab = 4096
};

static int failures;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok" : "FAIL", what);
  failures += !ok;
}

static tfm_tensor ids(int32_t *data, int64_t seq) {
  tfm_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = TFM_I32;
  t.rank = 2;
  t.shape[0] = 1;
  t.shape[1] = seq;
  t.data = data;
  return t;
}

/* max |a - b| <= 1e-4 * (1 + max |b|) over n values. */
static int close(const float *a, const float *b, int64_t n) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = fabs((double)a[i] - b[i]);
    worst = d > worst ? d : worst;
    scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
  }
  return worst <= 1e-4 * (1 + scale);
}

static float reference[kTotal * kVocab], step[kTotal * kVocab];

int main(void) {
  char err[512] = "";
  tfm_model *m = CAT(MODEL, _create)(NULL, err, sizeof err);
  if (!m) {
    printf("FAIL create: %s\n", err);
    return 1;
  }
  int32_t src[kSrc] = {7, 1, 4, 9, 2};
  int32_t tgt[kTotal] = {3, 5, 8, 1, 6, 2, 9};
  tfm_tensor inputs[2];
  size_t n = SEQ2SEQ ? 2 : 1;
  inputs[0] = ids(src, kSrc);

  /* The reference: one forward over the whole target. */
  inputs[n - 1] = ids(tgt, kTotal);
  tfm_tensor out;
  memset(&out, 0, sizeof out);
  out.data = reference;
  int rc = CAT(MODEL, _forward)(m, inputs, n, &out);
  check(rc == 0 && out.rank == 3 && out.shape[1] == kTotal, "forward");
  int64_t vocab = out.shape[2];
  if (vocab > kVocab) {
    printf("FAIL vocab %lld is too large for this test\n", (long long)vocab);
    return 1;
  }

  /* Decode before any prefill is an error. */
  tfm_tensor one = ids(tgt + kPrompt, 1);
  out.data = step;
  rc = CAT(MODEL, _decode)(m, &one, &out);
  check(rc == 1 && strstr(CAT(MODEL, _last_error)(m), "prefill first"),
        "decode before prefill fails");

  /* prefill over the prompt: the last prompt row. */
  inputs[n - 1] = ids(tgt, kPrompt);
  rc = CAT(MODEL, _prefill)(m, inputs, n, &out);
  check(rc == 0 && out.rank == 3 && out.shape[0] == 1 && out.shape[1] == 1 &&
            out.shape[2] == vocab &&
            close(step, reference + (kPrompt - 1) * vocab, vocab),
        "prefill = last row of forward");

  /* One token per decode step. */
  int steps_ok = 1;
  for (int t = kPrompt; t < kTotal; ++t) {
    one = ids(tgt + t, 1);
    rc = CAT(MODEL, _decode)(m, &one, &out);
    steps_ok &= rc == 0 && out.shape[1] == 1 &&
                close(step, reference + t * vocab, vocab);
  }
  check(steps_ok, "decode steps = rows of forward");

  /* Again from a fresh prefill, the new tokens in one decode call. */
  rc = CAT(MODEL, _prefill)(m, inputs, n, &out);
  tfm_tensor chunk = ids(tgt + kPrompt, kNew);
  rc |= CAT(MODEL, _decode)(m, &chunk, &out);
  check(rc == 0 && out.shape[1] == kNew &&
            close(step, reference + kPrompt * vocab, kNew * vocab),
        "prefill again, decode a chunk = rows of forward");

  /* Past the compiled maximum sequence length. */
  int32_t many[64] = {0};
  tfm_tensor tooMany = ids(many, 64);
  rc = CAT(MODEL, _decode)(m, &tooMany, &out);
  check(rc == 1 && strstr(CAT(MODEL, _last_error)(m), "exceed"),
        "decode past max seq len fails");

  /* prefill takes the inputs of forward, decode one tensor. */
  rc = CAT(MODEL, _prefill)(m, inputs, n + 1, &out);
  check(rc == 1 && strstr(CAT(MODEL, _last_error)(m), "input(s)"),
        "prefill with the wrong number of inputs fails");

  /* A batch of 2 when the prefill had 1 (max batch is 1: rejected either
     way, never read past the cache). */
  int32_t two[2] = {1, 2};
  tfm_tensor batch2 = ids(two, 1);
  batch2.shape[0] = 2;
  rc = CAT(MODEL, _decode)(m, &batch2, &out);
  check(rc == 1, "decode with another batch fails");

  CAT(MODEL, _destroy)(m);
  return failures ? 1 : 0;
}
