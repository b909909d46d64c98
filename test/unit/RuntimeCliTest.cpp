//===- RuntimeCliTest.cpp - the compiled executable's command line --------===//
//
// Runs tfm-fake-model and tfm-fake-seq2seq (FakeModel.cpp and
// FakeSeq2SeqModel.cpp linked with the runtime's main()) as a user would,
// checking exit statuses exactly and that each message names the file and
// the problem.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"
#include "tfm/runtime/Npy.h"

#include "gtest/gtest.h"

#include <regex>

using namespace tfm::rt;
using namespace tfm::test;

namespace {

RunResult fake(const std::string &args) {
  return runCommand(std::string(TFM_FAKE_MODEL) + " " + args);
}
RunResult seq2seq(const std::string &args) {
  return runCommand(std::string(TFM_FAKE_SEQ2SEQ) + " " + args);
}

/// Expects exit status 1 and an error on stderr containing `message`.
void expectUserError(const RunResult &run, const std::string &message) {
  EXPECT_EQ(run.exitCode, 1) << run.err;
  EXPECT_NE(run.err.find("error: " + message), std::string::npos)
      << "stderr: " << run.err;
  EXPECT_EQ(run.out, "");
}

std::string npyFile(const std::string &name, const std::string &descr,
                    const std::vector<int64_t> &shape,
                    const std::string &data) {
  std::string path = tempPath(name);
  writeFile(path, npyImage(descr, shape, data));
  return path;
}

std::string weightsFile(const std::vector<StTensor> &tensors) {
  std::string path = tempPath("w.safetensors");
  writeFile(path, safetensorsImage(tensors));
  return path;
}

const StTensor kEmbed = {
    "embed.weight", "F32", {16, 8}, std::string(16 * 8 * 4, '\0')};
const StTensor kBias = {"bias", "F32", {8}, f32Bytes({1, 2, 3, 4, 5, 6, 7, 8})};

TEST(RuntimeCli, RunsWithNoFilesAtAll) {
  RunResult run = fake("");
  EXPECT_EQ(run.exitCode, 0) << run.err;
  EXPECT_NE(run.out.find("output: float32 [2, 32, 8]\n"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("checksum: "), std::string::npos);
  EXPECT_EQ(run.err, "");
  // Deterministic: a second run prints the same.
  EXPECT_EQ(fake("").out, run.out);
}

TEST(RuntimeCli, BenchLineIsTheLastLineInTheContractFormat) {
  RunResult run = fake("--bench 3");
  ASSERT_EQ(run.exitCode, 0) << run.err;
  ASSERT_FALSE(run.out.empty());
  ASSERT_EQ(run.out.back(), '\n');
  std::string last =
      run.out.substr(run.out.rfind('\n', run.out.size() - 2) + 1);
  EXPECT_TRUE(std::regex_match(
      last, std::regex("bench: median_ms=[0-9]+\\.[0-9]{2} "
                       "min_ms=[0-9]+\\.[0-9]{2} gflops=[0-9]+\\.[0-9] "
                       "runs=3 threads=1\n")))
      << last;
  RunResult threaded = fake("--bench 2 --warmup 0 --threads 2");
  EXPECT_NE(threaded.out.find("runs=2 threads=2\n"), std::string::npos)
      << threaded.out;
}

TEST(RuntimeCli, OutputIsByteIdenticalForAnyThreadCount) {
  std::string one = tempPath("one.npy"), two = tempPath("two.npy"),
              four = tempPath("four.npy");
  ASSERT_EQ(fake("--threads 1 --output " + one).exitCode, 0);
  ASSERT_EQ(fake("--threads 2 --output " + two).exitCode, 0);
  ASSERT_EQ(fake("--threads=4 --output=" + four).exitCode, 0);
  std::string bytes = readFile(one);
  EXPECT_GT(bytes.size(), 2u * 32 * 8 * 4);
  EXPECT_EQ(bytes, readFile(two));
  EXPECT_EQ(bytes, readFile(four));
}

TEST(RuntimeCli, ComputesWithGivenWeightsAndInput) {
  std::string weights = weightsFile({kEmbed, kBias});
  std::string input = npyFile("ids.npy", "<i8", {2}, i64Bytes({5, 15}));
  std::string output = tempPath("out.npy");
  RunResult run = fake("--weights " + weights + " --input input=" + input +
                       " --output " + output);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_EQ(run.out, "");
  NpyArray result;
  std::string error;
  ASSERT_TRUE(readNpy(output.c_str(), result, error)) << error;
  // No batch in, none out; zero embeddings leave bias + 0.01 * position.
  EXPECT_EQ(result.shape, std::vector<int64_t>({2, 8}));
  const float *out = static_cast<const float *>(result.data.data());
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[8 + 3], 4.01f);
}

TEST(RuntimeCli, AcceptsHalfFloatWeights) {
  std::string weights = weightsFile(
      {{"embed.weight", "BF16", {16, 8}, std::string(16 * 8 * 2, '\0')},
       {"bias", "F16", {8}, f16Bytes({0x3c00, 0, 0, 0, 0, 0, 0, 0})}});
  std::string input = npyFile("ids.npy", "<i4", {1, 1}, i32Bytes({0}));
  RunResult run = fake("--weights " + weights + " --input input=" + input);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  EXPECT_NE(run.out.find("output: float32 [1, 1, 8]\nfirst: 1 0 0"),
            std::string::npos)
      << run.out;
}

TEST(RuntimeCli, MissingTensor) {
  std::string weights = weightsFile({kEmbed});
  expectUserError(fake("--weights " + weights),
                  weights + ": missing tensor 'bias' [8]");
}

TEST(RuntimeCli, ExtraTensor) {
  std::string weights =
      weightsFile({kEmbed, kBias, {"foo", "F32", {1}, f32Bytes({1})}});
  expectUserError(fake("--weights " + weights),
                  weights + ": unexpected tensor 'foo' [1]");
}

TEST(RuntimeCli, MisshapenTensor) {
  std::string weights = weightsFile(
      {{"embed.weight", "F32", {16, 7}, std::string(16 * 7 * 4, '\0')}, kBias});
  expectUserError(fake("--weights " + weights),
                  weights + ": tensor 'embed.weight' has shape [16, 7], "
                            "expected [16, 8]");
}

TEST(RuntimeCli, TruncatedTensor) {
  std::string path = tempPath("cut.safetensors");
  std::string image = safetensorsImage({kEmbed, kBias});
  writeFile(path, image.substr(0, image.size() - 5));
  expectUserError(fake("--weights " + path),
                  path + ": tensor 'bias' data [512, 544) exceeds the file's "
                         "data (539 bytes)");
}

TEST(RuntimeCli, WrongWeightDType) {
  std::string weights = weightsFile(
      {kEmbed, {"bias", "I32", {8}, i32Bytes({0, 0, 0, 0, 0, 0, 0, 0})}});
  expectUserError(fake("--weights " + weights),
                  weights + ": tensor 'bias' has dtype I32");
}

TEST(RuntimeCli, UnreadableWeights) {
  expectUserError(fake("--weights /nonexistent.safetensors"),
                  "/nonexistent.safetensors: cannot open: No such file or "
                  "directory");
}

TEST(RuntimeCli, WrongInputDType) {
  std::string input = npyFile("f.npy", "<f4", {3}, f32Bytes({1, 2, 3}));
  expectUserError(fake("--input input=" + input),
                  input + ": token ids must be int32 or int64, not float32");
  input = npyFile("d.npy", "<f8", {1}, std::string(8, '\0'));
  expectUserError(fake("--input input=" + input),
                  input + ": unsupported dtype '<f8'");
}

TEST(RuntimeCli, BadNpy) {
  std::string path = tempPath("bad.npy");
  writeFile(path, "not numpy at all");
  expectUserError(fake("--input input=" + path),
                  path + ": not a .npy file (bad magic)");
  std::string cut = tempPath("cut.npy");
  std::string image = npyImage("<i4", {4}, i32Bytes({1, 2, 3, 4}));
  writeFile(cut, image.substr(0, image.size() - 4));
  expectUserError(fake("--input input=" + cut),
                  cut + ": truncated: shape [4] of int32 needs 16 bytes");
  expectUserError(fake("--input input=/nonexistent.npy"),
                  "/nonexistent.npy: cannot open");
}

TEST(RuntimeCli, OutOfRangeTokenId) {
  std::string input =
      npyFile("ids.npy", "<i4", {1, 4}, i32Bytes({0, 1, 2, 16}));
  expectUserError(fake("--input input=" + input),
                  input + ": token id 16 at position [0, 3] is out of range "
                          "[0, 16)");
}

TEST(RuntimeCli, SequenceTooLong) {
  std::string input =
      npyFile("long.npy", "<i4", {40}, i32Bytes(std::vector<int32_t>(40, 1)));
  expectUserError(fake("--input input=" + input),
                  input + ": sequence length 40 exceeds the compiled maximum "
                          "32 (tfm-compile --max-seq-len)");
  input = npyFile("wide.npy", "<i4", {3, 1}, i32Bytes({1, 1, 1}));
  expectUserError(fake("--input input=" + input),
                  input + ": batch 3 exceeds the compiled maximum 2 "
                          "(tfm-compile --max-batch)");
}

TEST(RuntimeCli, BadFlags) {
  expectUserError(fake("--input foo=x.npy"),
                  "--input foo=x.npy: unknown input 'foo' (this model's "
                  "inputs: input)");
  expectUserError(fake("--input x.npy"),
                  "--input expects NAME=FILE, not 'x.npy'");
  expectUserError(fake("--threads 0"),
                  "--threads expects an integer from 1 to 1024, not '0'");
  expectUserError(fake("--bench"), "--bench expects a value");
  expectUserError(fake("--bench 2x"), "--bench expects an integer");
  expectUserError(fake("--frobnicate"),
                  "unknown option '--frobnicate' (see --help)");
  expectUserError(fake("stray"), "unexpected argument 'stray'");
  expectUserError(fake("--generate 4"), "this model cannot --generate");
  expectUserError(fake("--temperature 0.5"),
                  "--temperature, --top-k, --seed and --step-logits go with "
                  "--generate N");
}

// Padding masks and attention maps (contract sections 8 and 9) on models
// that have neither: the fakes (the compiled models' tests run the real
// thing, CompiledEncoderTest.cpp and the others).
TEST(RuntimeCli, ModelWithoutMasksSaysItTakesNone) {
  std::string mask = npyFile("mask.npy", "<i4", {2}, i32Bytes({1, 0}));
  std::string ids = npyFile("ids.npy", "<i4", {2}, i32Bytes({1, 2}));
  expectUserError(fake("--input input=" + ids + " --input mask=" + mask),
                  "--input mask=" + mask +
                      ": unknown input 'mask' (this model's inputs: input); "
                      "this model takes no padding mask: its attention "
                      "mixes every position");
  expectUserError(seq2seq("--input src_mask=" + mask),
                  "--input src_mask=" + mask +
                      ": unknown input 'src_mask' (this model's inputs: src "
                      "and tgt); this model takes no padding mask: its "
                      "attention mixes every position");
  // Another unknown name is only unknown.
  RunResult other = fake("--input masks=" + mask);
  EXPECT_EQ(other.exitCode, 1);
  EXPECT_EQ(other.err.find("padding mask"), std::string::npos) << other.err;
}

TEST(RuntimeCli, DumpAttentionNeedsAnExistingDirectory) {
  std::string missing = tempPath("no-such-dir");
  expectUserError(fake("--dump-attention " + missing),
                  "--dump-attention " + missing +
                      ": not a directory (it must exist)");
  std::string file = npyFile("ids.npy", "<i4", {2}, i32Bytes({1, 2}));
  expectUserError(fake("--dump-attention=" + file),
                  "--dump-attention " + file +
                      ": not a directory (it must exist)");
  expectUserError(fake("--dump-attention"),
                  "--dump-attention expects a value (see --help)");
  // A model without attention maps writes none, and runs as usual.
  std::string dir = tempPath("maps");
  ASSERT_EQ(runCommand("mkdir " + dir).exitCode, 0);
  RunResult run = fake("--dump-attention " + dir);
  EXPECT_EQ(run.exitCode, 0) << run.err;
  EXPECT_EQ(run.out, fake("").out);
  EXPECT_EQ(runCommand("ls -A " + dir).out, "");
  // With --generate, a model that cannot generate says so first (the
  // compiled decoder's test sees the refusal of the two together).
  expectUserError(fake("--generate 2 --dump-attention " + dir),
                  "this model cannot --generate");
}

TEST(RuntimeCli, UnwritableOutput) {
  expectUserError(fake("--output /nonexistent/out.npy"),
                  "/nonexistent/out.npy: cannot write");
}

TEST(RuntimeCli, Help) {
  RunResult run = fake("--help");
  EXPECT_EQ(run.exitCode, 0);
  EXPECT_NE(run.out.find("usage: tfm-fake-model [--weights W.safetensors]"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("Limits: seq <= 32, batch <= 2"), std::string::npos);
}

TEST(RuntimeCli, EncoderDecoderSharesAnAliasedEmbedding) {
  std::string weights = weightsFile(
      {{"embed.weight", "F32", {16, 8}, std::string(16 * 8 * 4, '\0')}});
  std::string src =
      npyFile("src.npy", "<i4", {1, 5}, i32Bytes({1, 2, 3, 4, 5}));
  std::string tgt = npyFile("tgt.npy", "<i8", {3}, i64Bytes({7, 8, 9}));
  RunResult run = seq2seq("--weights " + weights + " --input src=" + src +
                          " --input tgt=" + tgt);
  ASSERT_EQ(run.exitCode, 0) << run.err;
  // The target had no batch dimension, so neither has the output.
  EXPECT_NE(run.out.find("output: float32 [3, 8]\n"), std::string::npos)
      << run.out;
}

TEST(RuntimeCli, EncoderDecoderInputErrors) {
  std::string src =
      npyFile("src.npy", "<i4", {1, 5}, i32Bytes({1, 2, 3, 4, 5}));
  std::string tgt = npyFile("tgt.npy", "<i4", {2, 2}, i32Bytes({1, 2, 3, 4}));
  expectUserError(seq2seq("--input src=" + src + " --input tgt=" + tgt),
                  tgt + ": batch 2 does not match batch 1 of " + src);
  expectUserError(seq2seq("--input src=" + src),
                  "missing --input tgt=FILE (this model's inputs: src and "
                  "tgt;");
  expectUserError(
      seq2seq("--input input=" + src),
      "--input input=" + src +
          ": unknown input 'input' (this model's inputs: src and tgt)");
  expectUserError(seq2seq("--input src=" + src + " --input src=" + src),
                  "--input src is given twice");
  RunResult run = seq2seq("--bench 1");
  EXPECT_EQ(run.exitCode, 0) << run.err;
}

} // namespace

namespace {

// The executable refuses TFM_SIMD where the model cannot follow it: a
// target its CPU lacks, or code with no targets to choose from.
TEST(RuntimeCli, SimdTargetFromEnvironment) {
  EXPECT_EQ(
      runCommand("TFM_SIMD=avx2 " + std::string(TFM_FAKE_MODEL) + " --bench 1")
          .exitCode,
      0);
  expectUserError(
      runCommand("TFM_SIMD=sse4 " + std::string(TFM_FAKE_MODEL) + " "),
      "TFM_SIMD=sse4: this CPU has no such target");
  expectUserError(
      runCommand("TFM_SIMD=avx2 " + std::string(TFM_FAKE_SEQ2SEQ) + " "),
      "TFM_SIMD=avx2: this model's code has no SIMD targets to choose from "
      "(only the Highway backend's, --backend=hwy, has)");
}

} // namespace
