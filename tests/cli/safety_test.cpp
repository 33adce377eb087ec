// Nothing harmed, nothing lost (issue 27): outputs written through links and
// into devices with their permissions kept, standard output checked, outputs
// checked before a solve, unique temporary names, regular files only,
// checkpoints verified, dumps' numbers validated, signals that stop a solve
// with its iterate written and 128 + the signal.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "io/array_io.h"
#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using ::testing::HasSubstr;
using ::testing::Not;

test::CommandResult proxc(const std::string& args) {
  return test::run_command("timeout 120 " + shell_quote(test::proxc_binary()) + " " + args + " 2>&1");
}

std::string example(const std::string& name) { return shell_quote(test::source_dir() + "/examples/" + name); }

// A small denoising problem of its own folder (solves in well under a second).
std::string small_problem(const std::string& dir) {
  test::write_text(dir + "/p.prox",
                   "x = variable(32, 32)\nb = gaussian(32, 6)\n"
                   "minimize sum_squares(x - b) + 0.01 * norm1(grad(x))\n");
  return dir + "/p.prox";
}

TEST(CliSafety, OutputsGoThroughLinksIntoDevicesAndKeepPermissions) {
  std::string dir = test::temp_dir();
  std::string prox = small_problem(dir);
  // A link to a file: the link stays a link, the file it names gets the result.
  test::write_text(dir + "/real.npy", "old");
  fs::create_symlink("real.npy", dir + "/link.npy");
  ASSERT_EQ(proxc("solve " + shell_quote(prox) + " --iters 5 -o " + shell_quote(dir + "/link.npy")).exit_code,
            0);
  EXPECT_TRUE(fs::is_symlink(dir + "/link.npy"));
  EXPECT_GT(fs::file_size(dir + "/real.npy"), 32u * 32u * 4u);
  // A link to a character device: the device stays a device.
  fs::create_symlink("/dev/null", dir + "/null.npy");
  ASSERT_EQ(proxc("solve " + shell_quote(prox) + " --iters 5 -o " + shell_quote(dir + "/null.npy")).exit_code,
            0);
  EXPECT_TRUE(fs::is_symlink(dir + "/null.npy"));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // A mode-600 file stays 600.
  test::write_text(dir + "/private.npy", "old");
  ASSERT_EQ(::chmod((dir + "/private.npy").c_str(), 0600), 0);
  ASSERT_EQ(
      proxc("solve " + shell_quote(prox) + " --iters 5 -o " + shell_quote(dir + "/private.npy")).exit_code,
      0);
  struct stat st;
  ASSERT_EQ(::stat((dir + "/private.npy").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temporary file is left behind.
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr("tmp-proxc")));
  }
}

TEST(CliSafety, AFolderInPlaceOfTheOutputIsRefusedBeforeSolving) {
  std::string dir = test::temp_dir();
  std::string prox = small_problem(dir);
  fs::create_directories(dir + "/out.npy");
  auto r = proxc("solve " + shell_quote(prox) + " --iters 5 -o " + shell_quote(dir + "/out.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("it is a folder"));
  EXPECT_TRUE(fs::is_directory(dir + "/out.npy"));
}

TEST(CliSafety, WriteErrorsOnStandardOutputAreFailures) {
  for (const std::string& cmd :
       {"parse " + example("inpaint.prox") + " --emit json", "parse " + example("deconv_tv.prox"),
        "solve " + example("denoise_tv_iso.prox") + " --iters 3 --backend emulate --json"}) {
    auto full = test::run_command(shell_quote(test::proxc_binary()) + " " + cmd + " > /dev/full 2>&1");
    EXPECT_NE(full.exit_code, 0) << cmd;
    auto closed = test::run_command(shell_quote(test::proxc_binary()) + " " + cmd + " 2>&1 >&-");
    EXPECT_NE(closed.exit_code, 0) << cmd;
    EXPECT_THAT(closed.out, HasSubstr("standard output: write failed")) << cmd;
  }
}

TEST(CliSafety, BadOutputsAreFoundBeforeIterating) {
  std::string dir = test::temp_dir();
  std::string prox = small_problem(dir);
  // A million iterations would take minutes: each of these must stop at once.
  const std::string long_solve = "solve " + shell_quote(prox) + " --iters 1000000 --eps-abs 0 --eps-rel 0 ";
  struct Case {
    std::string args, message;
  } cases[] = {
      {"-o " + shell_quote(dir + "/x.xyz"), "unknown array file extension"},
      {"-o " + shell_quote(dir + "/no/such/folder/x.npy"), "does not exist"},
      {"-o ''", "the path is empty"},
      {"--log " + shell_quote(dir + "/missing/log.csv") + " -o " + shell_quote(dir + "/x.npy"),
       "does not exist"},
      {"--checkpoint " + shell_quote(dir + "/missing/state.ckpt"), "--checkpoint"},
      // A reference image of another shape, without --log too (it was found after the solve).
      {"--reference " + example("photos/camera.png") + " -o " + shell_quote(dir + "/x.npy"),
       "camera.png: shape (512, 512), the variable (32, 32)"},
  };
  for (const Case& c : cases) {
    auto r = proxc(long_solve + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.message)) << c.args;
  }
  EXPECT_FALSE(fs::exists(dir + "/x.npy"));
}

// An output on the path of another output or of an input is refused before the
// solve, naming both (they overwrote each other, exit 0); every file stays as
// it was. A checkpoint may continue the file it resumed from.
TEST(CliSafety, OutputsNeverShareAFileWithEachOtherOrAnInput) {
  std::string dir = test::temp_dir();
  test::write_text(dir + "/p.prox", "x = variable(4, 5)\nb = load(\"b.npy\")\nminimize sum_squares(x - b)\n");
  auto filled = [](float v) {
    Array a(Shape{4, 5});
    std::fill(a.data.begin(), a.data.end(), v);
    return a;
  };
  io::save_array(dir + "/b.npy", filled(0.5f));
  io::save_array(dir + "/x0.npy", filled(0.25f));
  test::write_text(dir + "/r.npy", "what was here");
  const std::string solve = "solve " + shell_quote(dir + "/p.prox") + " --iters 20 ";
  auto at = [&](const char* f) { return shell_quote(dir + "/" + f); };
  struct Case {
    std::string args, message;
  } cases[] = {
      {"-o " + at("r.npy") + " --log " + at("r.npy"), "one output would overwrite the other"},
      {"-o " + at("r.npy") + " --checkpoint " + at("./r.npy"), "one output would overwrite the other"},
      {"--log " + at("p.prox"), "the output would overwrite an input"},
      {"-o " + at("b.npy"), "the output would overwrite an input"},
      {"--x0 " + at("x0.npy") + " --log " + at("x0.npy"), "--x0"},
      {"-o " + at("s.npy") + " --save-every 10 --log " + at("s_iter0010.npy"), "snapshot of"},
  };
  for (const Case& c : cases) {
    auto r = proxc(solve + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.message)) << c.args;
    if (c.message != "snapshot of") EXPECT_THAT(r.out, HasSubstr("are one file")) << c.args;
  }
  EXPECT_EQ(read_file(dir + "/r.npy"), "what was here");
  EXPECT_EQ(io::load_array(dir + "/b.npy").data[0], 0.5f);
  EXPECT_THAT(read_file(dir + "/p.prox"), HasSubstr("minimize"));
  EXPECT_FALSE(fs::exists(dir + "/s.npy"));
  // A restart from the result it replaces (--x0 is read whole first), and from a snapshot.
  io::save_array(dir + "/warm.npy", filled(0.25f));
  auto warm = proxc(solve + "--x0 " + at("warm.npy") + " -o " + at("warm.npy"));
  EXPECT_EQ(warm.exit_code, 0) << warm.out;
  EXPECT_NEAR(io::load_array(dir + "/warm.npy").data[0], 0.5f, 1e-3);
  io::save_array(dir + "/w_iter0010.npy", filled(0.25f));
  auto snap = proxc(solve + "--x0 " + at("w_iter0010.npy") + " -o " + at("w.npy") + " --save-every 10");
  EXPECT_EQ(snap.exit_code, 0) << snap.out;
  // With --fuse 4 the snapshots are named after runs of 4: iteration 12 is one.
  auto fused = proxc(solve + "-o " + at("f.npy") + " --save-every 10 --fuse 4 --log " + at("f_iter0012.npy"));
  EXPECT_EQ(fused.exit_code, 2) << fused.out;
  EXPECT_THAT(fused.out, HasSubstr("snapshot of"));
  // --resume and --checkpoint on one file: a run continuing its own checkpoint.
  auto first = proxc(solve + "--checkpoint " + at("ck.bin"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto again = proxc("solve " + shell_quote(dir + "/p.prox") + " --iters 40 --resume " + at("ck.bin") +
                     " --checkpoint " + at("ck.bin"));
  EXPECT_EQ(again.exit_code, 0) << again.out;
  // batch: results written over the frames they come from.
  fs::create_directories(dir + "/frames");
  io::save_array(dir + "/frames/a.npy", filled(0.5f));
  auto batch = proxc("batch " + shell_quote(dir + "/p.prox") + " --set " +
                     shell_quote("b=" + dir + "/frames/*.npy") + " -o " + at("frames") + " --iters 5");
  EXPECT_EQ(batch.exit_code, 2) << batch.out;
  EXPECT_THAT(batch.out, HasSubstr("the output would overwrite an input"));
  EXPECT_EQ(io::load_array(dir + "/frames/a.npy").data[0], 0.5f);
  // batch's report writes frame<i>_input.png and frame<i>_result.png: a result of that name is refused.
  fs::create_directories(dir + "/named");
  io::save_array(dir + "/named/frame0_result.npy", filled(0.5f));
  auto report =
      proxc("batch " + shell_quote(dir + "/p.prox") + " --set " + shell_quote("b=" + dir + "/named/*.npy") +
            " -o " + at("out") + " --format png --report " + at("out") + " --iters 5");
  EXPECT_EQ(report.exit_code, 2) << report.out;
  EXPECT_THAT(report.out, HasSubstr("--report's " + dir + "/out/frame0_result.png are one file"));
  EXPECT_FALSE(fs::exists(dir + "/out/frame0_result.png"));
}

// parse, opt, compile and montage refuse an -o that is an input (they wrote
// over the problem or its data with exit 0), and opt an -o in its dump folder
// (a pass's dump and the result in one file).
TEST(CliSafety, EveryCommandsOutputStaysOffItsInputs) {
  std::string dir = test::temp_dir();
  test::write_text(dir + "/p.prox", "x = variable(4, 5)\nb = load(\"b.npy\")\nminimize sum_squares(x - b)\n");
  Array b(Shape{4, 5});
  std::fill(b.data.begin(), b.data.end(), 0.5f);
  io::save_array(dir + "/b.npy", b);
  auto at = [&](const char* f) { return shell_quote(dir + "/" + f); };
  const std::string p = at("p.prox");
  struct Case {
    std::string args, message;
  } cases[] = {
      {"parse " + p + " -o " + at("b.npy"), "the data " + dir + "/b.npy and -o"},
      {"parse " + p + " -o " + at("./p.prox"), "the problem " + dir + "/p.prox and -o"},
      {"parse " + p + " --emit json -o " + at("b.npy"), "the output would overwrite an input"},
      {"opt " + p + " -o " + at("p.prox"), "the output would overwrite an input"},
      {"opt " + p + " --dump-ir " + at("dump") + " -o " + at("dump/01_absorb.json"),
       "in the --dump-ir folder"},
      {"opt " + p + " --dump-ir " + at("dump/") + " -o " + at("dump/./03_split.prox"),
       "in the --dump-ir folder"},
      {"compile " + p + " --emit stmt -o " + at("b.npy"), "the output would overwrite an input"},
      {"montage " + at("b.npy") + " " + at("b.npy") + " -o " + at("b.npy"),
       "the output would overwrite an input"},
  };
  for (const Case& c : cases) {
    auto r = proxc(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.message)) << c.args;
  }
  EXPECT_EQ(io::load_array(dir + "/b.npy").data[0], 0.5f);
  EXPECT_THAT(read_file(dir + "/p.prox"), HasSubstr("load(\"b.npy\")"));
  EXPECT_FALSE(fs::exists(dir + "/dump/01_absorb.json"));
  // Outputs elsewhere, or of other names in the dump folder, are written as before.
  auto ok = proxc("opt " + p + " --dump-ir " + at("dump") + " -o " + at("final.json"));
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_TRUE(fs::exists(dir + "/dump/01_absorb.json") && fs::exists(dir + "/final.json"));
  auto beside = proxc("opt " + p + " --dump-ir " + at("dump") + " -o " + at("dump/final.prox"));
  EXPECT_EQ(beside.exit_code, 0) << beside.out;
  // A dump continued into its own folder writes the later passes' dumps beside it.
  const std::string before = read_file(dir + "/dump/02_merge.json");
  auto again = proxc("opt " + at("dump/02_merge.json") + " --passes split,scale --dump-ir " + at("dump"));
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(read_file(dir + "/dump/02_merge.json"), before);
}

TEST(CliSafety, TwoProcessesWritingOneOutputBothSucceed) {
  // Four processes that finish together, each writing 4 MB to one path: with one
  // fixed temporary name they truncate and rename each other's file.
  std::string dir = test::temp_dir();
  test::write_text(dir + "/p.prox",
                   "x = variable(1024, 1024)\nb = gaussian(1024, 100)\nminimize sum_squares(x - b)\n");
  std::string one = shell_quote(test::proxc_binary()) + " solve " + shell_quote(dir + "/p.prox") +
                    " --backend emulate --iters 1 -o " + shell_quote(dir + "/same.npy") + " > /dev/null";
  for (int round = 0; round < 3; ++round) {
    auto r = test::run_command("(" + one + " & " + one + " & " + one + " & " + one +
                               " & wait %1 && wait %2 && wait %3 && wait %4) 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.out;
  }
  auto check = proxc("metrics " + shell_quote(dir + "/same.npy") + " " + shell_quote(dir + "/same.npy"));
  EXPECT_EQ(check.exit_code, 0) << check.out;
}

TEST(CliSafety, OnlyRegularFilesAreRead) {
  std::string dir = test::temp_dir();
  ASSERT_EQ(::mkfifo((dir + "/fifo.prox").c_str(), 0600), 0);
  auto r = proxc("parse " + shell_quote(dir + "/fifo.prox"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("not a regular file"));
  ASSERT_EQ(::mkfifo((dir + "/b.npy").c_str(), 0600), 0);
  test::write_text(dir + "/p.prox", "b = load(\"b.npy\")\nx = variable(4, 4)\nminimize sum_squares(x - b)\n");
  r = proxc("parse " + shell_quote(dir + "/p.prox"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("not a regular file"));
  fs::create_symlink("/dev/zero", dir + "/zero.npy");
  r = proxc("metrics " + shell_quote(dir + "/zero.npy") + " " + shell_quote(dir + "/zero.npy"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("not a regular file"));
}

TEST(CliSafety, OversizedProblemFilesAreRefused) {
  std::string dir = test::temp_dir();
  std::string text = "x = variable(4, 4)\n";
  text += std::string(17 << 20, '\n');
  text += "minimize sum_squares(x)\n";
  test::write_text(dir + "/big.prox", text);
  auto r = proxc("parse " + shell_quote(dir + "/big.prox"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("16 MiB"));
}

// A split made without merge (a dump of `opt --passes absorb,split`, or the
// Python package's split of the user's own) continues with the passes after
// its last: solve and compile run the scale pass, with and without
// --no-merge. It solves to ProxImaL's x = [82.785927, 0, 0] (admm; the
// optimum of ProxImaL's test_algs problem); it was refused before
// ("would run absorb again", "would run split again").
TEST(CliSafety, ARecordWithoutMergeContinues) {
  std::string dir = test::temp_dir();
  test::write_text(dir + "/split.prox",
                   "passes_run = [\"absorb\", \"split\"]\nsolver = \"admm\"\nx = variable(3)\n"
                   "k = array([3], [1, 2, 3])\nc = array([3], [-41, 413, 2])\n"
                   "minimize psi(nonneg(x)) + omega(least_squares(conv(k, x), b=c))\n");
  for (const char* extra : {"", " --no-merge"}) {
    auto r =
        proxc("solve " + shell_quote(dir + "/split.prox") + " --solver admm --eps-abs 1e-5 --eps-rel 1e-5" +
              extra + " -o " + shell_quote(dir + "/x.npy"));
    ASSERT_EQ(r.exit_code, 0) << extra << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("admm: converged")) << extra;
    const auto x = io::load_array(dir + "/x.npy");
    ASSERT_EQ(x.data.size(), 3u);
    EXPECT_NEAR(x.data[0], 82.785927, 4e-3) << extra;
    EXPECT_NEAR(x.data[1], 0, 4e-3) << extra;
    EXPECT_NEAR(x.data[2], 0, 4e-3) << extra;
  }
  auto c = proxc("compile " + shell_quote(dir + "/split.prox") + " --solver admm");
  EXPECT_EQ(c.exit_code, 0) << c.out;
  // A record that skipped split, a split with every term omega, and a record
  // out of the default order are refused.
  const struct {
    const char* text;
    const char* message;
  } refused[] = {
      {"passes_run = [\"absorb\", \"scale\"]\nknorm = 2\nx = variable(3)\nminimize sum_squares(x)\n",
       "absorb again"},
      {"passes_run = [\"absorb\", \"split\"]\nsolver = \"admm\"\nx = variable(3)\n"
       "minimize omega(least_squares(x))\n",
       "at least one term must be psi"},
      {"passes_run = [\"merge\", \"absorb\"]\nx = variable(3)\nminimize sum_squares(x)\n", "again"},
  };
  for (const auto& c : refused) {
    test::write_text(dir + "/refused.prox", c.text);
    auto r = proxc("solve " + shell_quote(dir + "/refused.prox") + " --solver admm --iters 5");
    EXPECT_EQ(r.exit_code, 2) << c.text << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.message)) << c.text;
  }
}

TEST(CliSafety, DumpsWithImpossibleRecordsAreRefused) {
  std::string dir = test::temp_dir();
  std::string prox = small_problem(dir);
  ASSERT_EQ(proxc("opt " + shell_quote(prox) + " -o " + shell_quote(dir + "/scaled.prox")).exit_code, 0);
  std::string text = read_file(dir + "/scaled.prox");
  size_t at = text.find("knorm = ");
  ASSERT_NE(at, std::string::npos);
  size_t end = text.find('\n', at);
  // (1e300 is refused before, as a number beyond float32: Numbers.BeyondFloat32IsRefusedWhereItIsWritten.)
  for (const char* knorm : {"1e-300", "1e35"}) {
    std::string bad = text.substr(0, at) + "knorm = " + knorm + text.substr(end);
    test::write_text(dir + "/bad.prox", bad);
    auto r = proxc("solve " + shell_quote(dir + "/bad.prox") + " --iters 5");
    EXPECT_EQ(r.exit_code, 2) << knorm << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("outside [1e-30, 1e+30]")) << knorm;
  }
  // A knorm without the scale pass in the record.
  std::string unscaled = "knorm = 2\nx = variable(4, 4)\nminimize sum_squares(x)\n";
  test::write_text(dir + "/unscaled.prox", unscaled);
  auto r = proxc("solve " + shell_quote(dir + "/unscaled.prox") + " --iters 5");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("knorm is recorded but the scale pass has not run"));
  // A knorm that is not the one the psi operands were scaled by: the result's
  // units hang on it (it solved and wrote a result off by sqrt(knorm)).
  std::string edited = text.substr(0, at) + "knorm = 1" + text.substr(end);
  test::write_text(dir + "/edited.prox", edited);
  r = proxc("solve " + shell_quote(dir + "/edited.prox") + " --iters 5 -o " + shell_quote(dir + "/x.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("is not scaled by 1/knorm"));
  EXPECT_FALSE(fs::exists(dir + "/x.npy"));
  // Roles no split pass gives: the user's words, not a bug report.
  std::string omega = text;
  for (size_t p = omega.find("psi("); p != std::string::npos; p = omega.find("psi(", p))
    omega.replace(p, 4, "omega(");
  test::write_text(dir + "/omega.prox", omega);
  r = proxc("solve " + shell_quote(dir + "/omega.prox") + " --iters 5");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(
      r.out,
      HasSubstr("is omega, which only a least_squares term or a function of the variable itself can be"));
  EXPECT_THAT(r.out, Not(HasSubstr("internal error")));
  // compile checks the record as solve does: pc's omega nonneg(x) is no term
  // admm's x-update can take (it would be solved as a quadratic), and a
  // problem split for pc is not compiled for admm.
  test::write_text(dir + "/nonneg.prox",
                   "b = gaussian([8, 8], 2)\nx = variable(8, 8)\n"
                   "minimize 0.1 * norm1(grad(x)) + nonneg(x) + norm1(x - b)\n");
  ASSERT_EQ(
      proxc("opt " + shell_quote(dir + "/nonneg.prox") + " -o " + shell_quote(dir + "/pc.prox")).exit_code,
      0);
  std::string pc = read_file(dir + "/pc.prox");
  EXPECT_THAT(pc, HasSubstr("omega(nonneg("));
  r = proxc("compile " + shell_quote(dir + "/pc.prox") + " --solver admm --emit step");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("was split for the solver 'pc'"));
  const std::string pc_solver = "solver = \"pc\"";
  const size_t solver_at = pc.find(pc_solver);
  ASSERT_NE(solver_at, std::string::npos);
  test::write_text(dir + "/admm.prox", pc.replace(solver_at, pc_solver.size(), "solver = \"admm\""));
  for (const std::string command : {"compile --emit step", "solve --iters 5"}) {
    r = proxc(command + " " + shell_quote(dir + "/admm.prox") + " --solver admm");
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("is omega, which for admm only a least_squares term can be")) << command;
  }
}

TEST(CliSafety, ATinySigmaGaussianIsAnImpulseNotNaN) {
  std::string dir = test::temp_dir();
  test::write_text(dir + "/p.prox",
                   "x = variable(16, 16)\nb = gaussian(16, 4)\n"
                   "minimize sum_squares(conv(gaussian(7, 1e-300), x) - b) + 0.01 * norm1(grad(x))\n");
  auto r = proxc("solve " + shell_quote(dir + "/p.prox") + " --iters 20 --backend emulate -o " +
                 shell_quote(dir + "/x.npy"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("diverged")));
  EXPECT_THAT(r.out, Not(HasSubstr("nan")));
}

// Starts a long solve, sends `sig` once it has checked (its second snapshot is
// written: a signal before the iterations begin stops the command at once), and
// returns its exit code.
int solve_and_signal(const std::string& dir, const char* sig, const std::string& out, int check_every = 1) {
  test::write_text(dir + "/long.prox",
                   "x = variable(256, 256)\nb = gaussian(256, 30)\n"
                   "minimize sum_squares(x - b) + 0.01 * norm1(grad(x))\n");
  // A background job of a shell without job control starts with SIGINT
  // ignored, which proxc keeps (SignalsIgnoredAtStartStayIgnored): env gives
  // it the default back, as a terminal's foreground job has it.
  std::string cmd = "env --default-signal " + shell_quote(test::proxc_binary()) + " solve " + shell_quote(dir + "/long.prox") +
                    " --backend emulate --iters 1000000 --eps-abs 0 --eps-rel 0 --check-every " +
                    std::to_string(check_every) + " --save-every 1 -o " + shell_quote(out) + " > " +
                    shell_quote(dir + "/out.txt") + " 2>&1";
  const std::string second = out.substr(0, out.size() - 4) + "_iter0000002.npy";  // 7 digits: --iters 1000000
  auto r = test::run_command("(" + cmd + ") & pid=$!; for i in $(seq 1200); do [ -e " + shell_quote(second) +
                             " ] && break; sleep 0.05; done; kill -" + sig + " $pid; wait $pid; echo rc=$?");
  size_t at = r.out.rfind("rc=");
  return at == std::string::npos ? -1 : std::stoi(r.out.substr(at + 3));
}

TEST(CliSafety, SignalsStopASolveWithItsIterateWritten) {
  std::string dir = test::temp_dir();
  const std::pair<const char*, int> signals[] = {{"INT", 130}, {"TERM", 143}, {"HUP", 129}};
  for (const auto& [sig, code] : signals) {
    std::string out = dir + "/x_" + sig + ".npy";
    EXPECT_EQ(solve_and_signal(dir, sig, out), code) << sig << ": " << read_file(dir + "/out.txt");
    EXPECT_TRUE(fs::exists(out)) << sig;
    EXPECT_THAT(read_file(dir + "/out.txt"), HasSubstr("interrupted")) << sig;
  }
  // Iterating, a signal stops the solve at its next run even when the only
  // check due is the last iteration's.
  const std::string out = dir + "/x_rare.npy";
  EXPECT_EQ(solve_and_signal(dir, "INT", out, 1000000), 130) << read_file(dir + "/out.txt");
  EXPECT_TRUE(fs::exists(out));
  EXPECT_THAT(read_file(dir + "/out.txt"), HasSubstr("interrupted"));
}

// nohup's SIGHUP, and a shell's SIGINT for a background job, stay ignored:
// the run goes on to its last iteration.
TEST(CliSafety, SignalsIgnoredAtStartStayIgnored) {
  const std::string dir = test::temp_dir();
  const std::string prox = small_problem(dir), out = dir + "/x.npy";
  for (const char* sig : {"HUP", "INT"}) {
    const std::string cmd = "env --ignore-signal=" + std::string(sig) + " " + shell_quote(test::proxc_binary()) +
                            " solve " + shell_quote(prox) +
                            " --backend emulate --iters 4000 --eps-abs 0 --eps-rel 0 --save-every 1000 -o " +
                            shell_quote(out) + " > " + shell_quote(dir + "/out.txt") + " 2>&1";
    // The signal reaches the process while it iterates ("sent": it was still there).
    auto r = test::run_command("(" + cmd + ") & pid=$!; for i in $(seq 1200); do [ -e " +
                               shell_quote(dir + "/x_iter1000.npy") + " ] && break; sleep 0.01; done; kill -" + sig +
                               " $pid && echo sent; wait $pid; echo rc=$?");
    const std::string said = read_file(dir + "/out.txt");
    EXPECT_THAT(r.out, HasSubstr("sent")) << sig << ": the solve ended before the signal";
    EXPECT_THAT(r.out, HasSubstr("rc=0")) << sig << "\n" << said;
    EXPECT_THAT(said, HasSubstr("max_iterations")) << sig;
    EXPECT_THAT(said, Not(HasSubstr("interrupted"))) << sig;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().filename().string().rfind("x_iter", 0) == 0) fs::remove(e.path());
    }
  }
}

// A reader that closed standard output ends the command quietly with 141
// (128 + SIGPIPE, as a shell reports a command SIGPIPE ended); it used to
// be killed by the signal.
TEST(CliSafety, AClosedStandardOutputIsAQuietExit) {
  const std::string dir = test::temp_dir();
  const std::string prox = small_problem(dir);
  // perl (Debian's perl-base is essential) tells an exit from a death by a
  // signal, which a shell's $? does not: "exit 141, signal 0".
  const std::string perl =
      "perl -e 'system @ARGV[1..$#ARGV]; open(F, \">\", $ARGV[0]); "
      "printf F \"exit %d, signal %d\\n\", $? >> 8, $? & 127' ";
  test::run_command("( sleep 0.5; " + perl + shell_quote(dir + "/rc.txt") + " " + shell_quote(test::proxc_binary()) +
                    " parse " + shell_quote(prox) + " 2> " + shell_quote(dir + "/err.txt") + " ) | true");
  EXPECT_EQ(read_file(dir + "/rc.txt"), "exit 141, signal 0\n");
  EXPECT_EQ(read_file(dir + "/err.txt"), "");
}

// Over ulimit -f, a write is an error the command reports (it died of
// SIGXFSZ, leaving its temporary behind), and nothing is left half written.
TEST(CliSafety, AFileSizeLimitIsAWriteErrorWithNothingLeft) {
  const std::string dir = test::temp_dir();
  test::write_text(dir + "/big.prox", "x = variable(256, 256)\nb = gaussian(256, 30)\nminimize sum_squares(x - b)\n");
  test::write_text(dir + "/old.npy", "what was here");
  for (const std::string& o : {std::string("-o old.npy"), std::string("-o new.h5:/x"),
                               std::string("--checkpoint ck.bin")}) {
    // 64 blocks of 512 bytes (dash's unit): the result, 256 KiB, does not fit.
    // Nor would a compiled pipeline, and LLVM ends the process when a write
    // passes the limit: an empty cache is used read-only, saying why.
    fs::remove_all(dir + "/cache");
    auto r = test::run_command("cd " + shell_quote(dir) + " && ulimit -f 64 && " +
                               shell_quote(test::proxc_binary()) + " solve big.prox --iters 3 --cache-dir cache " + o +
                               " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << o << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("File too large")) << o;
    EXPECT_THAT(r.out, HasSubstr("cache is used read-only: a file size limit of 32.0 KiB is set (ulimit -f)")) << o;
    EXPECT_THAT(r.out, Not(HasSubstr("crashed"))) << o;
  }
  EXPECT_EQ(read_file(dir + "/old.npy"), "what was here");
  EXPECT_FALSE(fs::exists(dir + "/new.h5"));
  EXPECT_FALSE(fs::exists(dir + "/ck.bin"));
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().rfind('.', 0), std::string::npos) << e.path() << " was left behind";
  }
}

// compile --aot under a file size limit: LLVM writes the library and ends
// the process when a write passes the limit (exit 1, "LLVM ERROR: IO
// failure on output stream", an empty output folder left, before), so the
// compile is refused before it starts. Without the limit the library is
// written whole, with no scratch folder left in the output folder, and a
// failed compile leaves no folder it made.
TEST(CliSafety, AnAotCompileUnderAFileSizeLimitIsRefusedUpFront) {
  const std::string dir = test::temp_dir();
  const std::string problem = shell_quote(test::source_dir() + "/examples/denoise_tv_iso.prox");
  auto r = test::run_command("cd " + shell_quote(dir) + " && ulimit -f 200 && " +
                             shell_quote(test::proxc_binary()) + " compile " + problem + " --aot lib 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("a file size limit of 100.0 KiB is set (ulimit -f)"));
  EXPECT_THAT(r.out, Not(HasSubstr("LLVM ERROR")));
  EXPECT_FALSE(fs::exists(dir + "/lib"));
  auto bad = proxc("compile " + problem + " --aot " + shell_quote(dir + "/named") + " --name 1bad");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_FALSE(fs::exists(dir + "/named"));
  auto ok = proxc("compile " + problem + " --aot " + shell_quote(dir + "/lib") + " --name tv");
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir + "/lib")) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"tv.a", "tv.h", "tv.json", "tv_call.h"}));
}

// What a process killed outright left beside an output (its temporaries,
// named after its pid) goes at the next write of that output; files of
// names like them that are not proxc's stay.
TEST(CliSafety, TemporariesOfAKilledProcessGoAtTheNextWrite) {
  const std::string dir = test::temp_dir();
  const std::string prox = small_problem(dir);
  const std::string gone = "4194000";  // above any pid this machine has given (pid_max is 4194304 at most)
  const std::string left[] = {".x.npy." + gone + ".0.tmp-proxc", ".r.h5.proxc-h5-" + gone + "-0"};
  const std::string kept[] = {".x.npy.2023.bak", ".x.npy." + gone + ".0.tmp-proxc.mine", "x.npy." + gone + ".0.tmp-proxc",
                              ".x.npy." + std::to_string(::getpid()) + ".0.tmp-proxc"};  // a live process's
  for (const std::string& f : left) test::write_text(dir + "/" + f, "partial");
  for (const std::string& f : kept) test::write_text(dir + "/" + f, "someone's");
  auto npy = proxc("solve " + shell_quote(prox) + " --iters 3 -o " + shell_quote(dir + "/x.npy"));
  ASSERT_EQ(npy.exit_code, 0) << npy.out;
  auto h5 = proxc("solve " + shell_quote(prox) + " --iters 3 -o " + shell_quote(dir + "/r.h5:/x"));
  ASSERT_EQ(h5.exit_code, 0) << h5.out;
  for (const std::string& f : left) EXPECT_FALSE(fs::exists(dir + "/" + f)) << f;
  for (const std::string& f : kept) EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
}

// A signal before the iterations begin (here while compiling a problem of many terms,
// which takes minutes) stops the command at once: exit 128 + the signal, no
// summary, the output left as it was. It used to wait for the first check. Once
// iterating, a signal waits for the next check even when that is the last one.
TEST(CliSafety, ASignalWhileCompilingStopsAtOnce) {
  std::string dir = test::temp_dir();
  std::string text = "x = variable(3, 3)\nminimize sum_squares(x, b=1)";
  for (int i = 0; i < 150; ++i) text += " + norm1(x, b=" + std::to_string(i) + ")";  // a minute or more
  test::write_text(dir + "/many.prox", text + "\n");
  test::write_text(dir + "/x.npy", "what was here");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = test::run_command("cd " + shell_quote(dir) + " && (" + shell_quote(test::proxc_binary()) +
                             " solve many.prox --iters 5 --cache-dir off -o x.npy > out.txt 2>&1 & pid=$!; "
                             "sleep 1; kill -TERM $pid; wait $pid; echo rc=$?)");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_THAT(r.out, HasSubstr("rc=143"));
  EXPECT_LT(seconds, 30) << r.out;
  EXPECT_EQ(read_file(dir + "/x.npy"), "what was here");
  EXPECT_THAT(read_file(dir + "/out.txt"), Not(HasSubstr("interrupted")));
}

// Halide's compile grows with the square of a program's size: a problem too
// large to compile in minutes is refused at once, naming the size, the
// limit and what works instead (the emulator, which compiles nothing).
TEST(CliSafety, AProgramTooLargeToCompileIsRefusedUpFront) {
  std::string dir = test::temp_dir();
  std::string text = "x = variable(3, 3)\nminimize sum_squares(x, b=1)";
  for (int i = 0; i < 250; ++i) text += " + norm1(x, b=" + std::to_string(i) + ")";
  test::write_text(dir + "/huge.prox", text + "\n");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = proxc("solve " + shell_quote(dir + "/huge.prox") + " --iters 5 --cache-dir off");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("the Halide backend compiles programs of at most 3072 operations (about 190 function "
                               "terms), and this problem's pc_iteration has "));
  EXPECT_THAT(r.out, HasSubstr("Solve it with --backend emulate"));
  auto emulated = proxc("solve " + shell_quote(dir + "/huge.prox") + " --iters 5 --backend emulate");
  EXPECT_EQ(emulated.exit_code, 0) << emulated.out;
  auto compiled = proxc("compile " + shell_quote(dir + "/huge.prox") + " --cache-dir off");
  EXPECT_EQ(compiled.exit_code, 2) << compiled.out;
  EXPECT_THAT(compiled.out, HasSubstr("at most 3072 operations"));
}

// A solve whose preparation (the passes, the compile) lasts shows on a
// terminal a line saying so, once a second after the first two; without a
// terminal nothing (the other tests read proxc's output through pipes).
TEST(CliSafety, ALongPreparationShowsALineOnATerminal) {
  std::string dir = test::temp_dir();
  std::string text = "x = variable(3, 3)\nminimize sum_squares(x, b=1)";
  for (int i = 0; i < 150; ++i) text += " + norm1(x, b=" + std::to_string(i) + ")";  // a minute or more
  test::write_text(dir + "/many.prox", text + "\n");
  // script(1) gives proxc a terminal and copies what it writes to tty.txt.
  auto r = test::run_command(
      "cd " + shell_quote(dir) + " && (script -qec " +
      shell_quote("sh -c 'echo $$ > pid; exec " + test::proxc_binary() + " solve many.prox --iters 5 --cache-dir off'") +
      " tty.txt > /dev/null & s=$!; sleep 4; kill -TERM $(cat pid); wait $s; echo rc=$?)");
  EXPECT_THAT(r.out, HasSubstr("rc=143"));
  const std::string tty = read_file(dir + "/tty.txt");
  EXPECT_THAT(tty, HasSubstr("\r  preparing the solve (the passes, then compiling its pipelines): 2 s"));
  EXPECT_THAT(tty, HasSubstr("compiling its pipelines): 3 s"));
  EXPECT_THAT(tty, Not(HasSubstr(": 1 s")));
}

// The objective a brief report prints ("..., objective 0.123, ...").
std::string objective_of(const std::string& report) {
  size_t at = report.find("objective ");
  return at == std::string::npos ? ""
                                 : report.substr(at + 10, report.find_first_of(" ,(", at + 10) - at - 10);
}

TEST(CliSafety, DamagedCacheEntriesAreRebuiltNotLoaded) {
  std::string dir = test::temp_dir(), cache = dir + "/cache";
  std::string a = small_problem(dir);
  test::write_text(dir + "/q.prox",
                   "x = variable(24, 40)\nb = gaussian([24, 40], 5)\n"
                   "minimize sum_squares(x - b) + 0.02 * group_norm1(grad(x), [2]) + nonneg(x)\n");
  std::string b = dir + "/q.prox";
  auto solve = [&](const std::string& prox) {
    return proxc("solve " + shell_quote(prox) + " --iters 30 --cache-dir " + shell_quote(cache));
  };
  auto first_a = solve(a), first_b = solve(b);
  ASSERT_EQ(first_a.exit_code, 0) << first_a.out;
  ASSERT_EQ(first_b.exit_code, 0) << first_b.out;
  std::vector<std::string> pipelines, runtimes;
  for (const auto& e : fs::directory_iterator(cache)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() != ".so") continue;
    (name.rfind("runtime-", 0) == 0 ? runtimes : pipelines).push_back(e.path().string());
    EXPECT_TRUE(fs::exists(e.path().string() + ".sum")) << name;
  }
  ASSERT_EQ(runtimes.size(), 1u);
  ASSERT_GE(pipelines.size(), 2u);
  auto damage = [&](const std::string& path, bool garbage) {
    std::string bytes = read_file(path);
    bytes = garbage ? std::string(bytes.size(), '\x5a') : bytes.substr(0, bytes.size() / 2);
    test::write_text(path, bytes);
  };
  auto expect_rebuilt = [&](const std::string& what) {
    auto r = solve(a);
    EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("is unusable")) << what;
    EXPECT_EQ(objective_of(r.out), objective_of(first_a.out)) << what;
    auto again = solve(a);  // rebuilt: loads quietly
    EXPECT_THAT(again.out, Not(HasSubstr("is unusable"))) << what;
  };
  for (const std::string& p : pipelines) damage(p, false);
  expect_rebuilt("truncated pipelines");
  damage(runtimes[0], false);
  expect_rebuilt("a truncated runtime");
  damage(runtimes[0], true);
  expect_rebuilt("a garbage runtime");
  // Two entries swapped, each with its own checksum file.
  pipelines.clear();
  for (const auto& e : fs::directory_iterator(cache)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".so" && name.rfind("runtime-", 0) != 0)
      pipelines.push_back(e.path().string());
  }
  ASSERT_GE(pipelines.size(), 2u);
  fs::rename(pipelines[0], dir + "/swap");
  fs::rename(pipelines[1], pipelines[0]);
  fs::rename(dir + "/swap", pipelines[1]);
  auto ra = solve(a), rb = solve(b);
  EXPECT_EQ(objective_of(ra.out), objective_of(first_a.out)) << ra.out;
  EXPECT_EQ(objective_of(rb.out), objective_of(first_b.out)) << rb.out;
  EXPECT_THAT(ra.out + rb.out, HasSubstr("is unusable"));
  // A temporary an interrupted process left an hour ago goes at the next compile.
  test::write_text(cache + "/abc.so.tmp999_0", "partial");
  ASSERT_EQ(test::run_command("touch -d '2 hours ago' " + shell_quote(cache + "/abc.so.tmp999_0")).exit_code,
            0);
  for (const std::string& p : pipelines) fs::remove(p);
  ASSERT_EQ(solve(a).exit_code, 0);
  EXPECT_FALSE(fs::exists(cache + "/abc.so.tmp999_0"));
}

TEST(CliSafety, AReadOnlyCacheStillServesItsEntries) {
  if (::geteuid() != 0) GTEST_SKIP() << "runs proxc as another user, which needs root";
  // (Root may write anywhere: the read-only folder is read by the user nobody.)
  std::string dir = test::temp_dir(), cache = dir + "/cache";
  std::string args =
      "compile " + example("inpaint.prox") + " --solver ladmm --cache-dir " + shell_quote(cache);
  auto first = proxc(args);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  ASSERT_EQ(test::run_command("chmod -R a+rX " + shell_quote(dir) + " && chmod 555 " + shell_quote(cache))
                .exit_code,
            0);
  auto r = test::run_command("setpriv --reuid=65534 --regid=65534 --clear-groups -- " +
                             shell_quote(test::proxc_binary()) + " " + args + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("0 pipelines compiled, 2 loaded from the on-disk cache"));
  EXPECT_THAT(r.out, HasSubstr("is not writable"));
  ::chmod(cache.c_str(), 0755);
}

TEST(CliSafety, CheckHonoursTheMemoryLimit) {
  std::string dir = test::temp_dir();
  test::write_text(dir + "/big.prox",
                   "x = variable(1024, 1024)\nb = gaussian(1024, 100)\n"
                   "minimize sum_squares(x - b) + 0.01 * norm1(grad(x))\n");
  auto r = proxc("--max-memory 20M check " + shell_quote(dir + "/big.prox") + " --backend emulate");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("check: the dot tests need about"));
  // Solve refuses the same problem under the same limit.
  EXPECT_EQ(proxc("--max-memory 20M solve " + shell_quote(dir + "/big.prox") + " --iters 2").exit_code, 2);
}

TEST(CliSafety, UnclearInputsGetClearAnswers) {
  std::string dir = test::temp_dir();
  // A UTF-8 byte-order mark is accepted.
  test::write_text(dir + "/bom.prox", "\xEF\xBB\xBFx = variable(4, 4)\nminimize sum_squares(x)\n");
  auto bom = proxc("parse " + shell_quote(dir + "/bom.prox"));
  EXPECT_EQ(bom.exit_code, 0) << bom.out;
  // An error on a line of 100,000 characters shows a window around the caret.
  std::string line = "x = variable(4, 4) + " + std::string(50000, ' ') + "@" + std::string(50000, ' ');
  test::write_text(dir + "/long.prox", line + "\nminimize sum_squares(x)\n");
  auto longline = proxc("parse " + shell_quote(dir + "/long.prox"));
  EXPECT_EQ(longline.exit_code, 2);
  EXPECT_LT(longline.out.size(), 1000u) << longline.out.size();
  EXPECT_THAT(longline.out, HasSubstr("1:50022: error"));
  EXPECT_THAT(longline.out, HasSubstr("...  "));
  EXPECT_THAT(longline.out, HasSubstr("^"));
  // A key twice in one JSON object is refused.
  ASSERT_EQ(
      proxc("parse " + example("denoise_tv_iso.prox") + " --emit json -o " + shell_quote(dir + "/d.json"))
          .exit_code,
      0);
  std::string json = read_file(dir + "/d.json");
  size_t at = json.find("\"knorm\"");
  ASSERT_NE(at, std::string::npos);
  test::write_text(dir + "/dup.json", json.substr(0, at) + "\"knorm\": 0,\n  " + json.substr(at));
  auto dup = proxc("--allow-path " + example("") + " parse " + shell_quote(dir + "/dup.json"));
  EXPECT_EQ(dup.exit_code, 2) << dup.out;
  EXPECT_THAT(dup.out, HasSubstr("the key \"knorm\" appears twice"));
}

// Mistakes on the command line are named as the user typed them.
TEST(CliSafety, CommandLineMistakesAreNamedAsTyped) {
  const std::string p = example("inpaint.prox");
  // A reference for PSNR and SSIM must be an image (2 or 3 axes), found before the solve.
  const std::string dir = test::temp_dir();
  test::write_text(dir + "/line.prox", "x = variable(16)\nminimize sum_squares(x - 1)\n");
  io::save_array(dir + "/line.npy", Array(Shape{16}));
  struct Case {
    std::string args, message;
  } cases[] = {
      {"foo",
       "unknown command 'foo' (one of: parse, opt, solve, batch, compile, montage, metrics and check)"},
      {"--max-memory 4G foo", "unknown command 'foo'"},
      {"solve " + shell_quote(dir + "/line.prox") + " --reference " + shell_quote(dir + "/line.npy") + " -o " +
           shell_quote(dir + "/x.npy"),
       "line.npy: an image of 2 or 3 axes, got shape (16,)"},
      // NaN is no setting left out; infinity no step size.
      {"solve " + p + " --iters 5 --tau nan", "--tau: must be a finite number, got 'nan'"},
      {"solve " + p + " --iters 5 --sigma inf", "--sigma: must be a finite number, got 'inf'"},
      {"solve " + p + " --iters 5 --solver admm --cg-tol nan", "--cg-tol: must be a finite number"},
      // compile checks --fuse as solve does, by the flag's name.
      {"compile " + p + " --fuse 0 --emit step", "--fuse: fuse must be in 1..64, got 0"},
      {"compile " + p + " --solver admm --fuse 2 --emit step", "--fuse: only pc and ladmm unroll iterations"},
      {"compile " + p + " --target '' --emit step", "--target: target must not be empty"},
  };
  for (const Case& c : cases) {
    auto r = proxc(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.message)) << c.args;
    EXPECT_THAT(r.out, Not(HasSubstr("SolverOptions"))) << c.args;
  }
  EXPECT_FALSE(fs::exists(dir + "/x.npy"));
}

TEST(CliSafety, DecodersRefuseDeclaredSizesBeforeAllocating) {
  std::string dir = test::temp_dir();
  // A 68-byte PNG that declares 2^31 - 1 x 1 pixels: refused from its header, at once.
  const unsigned char png[] = {
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x7f,
      0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x85, 0x5d, 0x6c, 0x01, 0x00,
      0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60, 0x80, 0x01, 0x00, 0x00, 0x0a, 0x00,
      0x01, 0x7f, 0x80, 0x74, 0x5e, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
  test::write_text(dir + "/wide.png", std::string(reinterpret_cast<const char*>(png), sizeof png));
  auto t0 = std::chrono::steady_clock::now();
  auto r = proxc("metrics " + shell_quote(dir + "/wide.png") + " " + shell_quote(dir + "/wide.png"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("far too short for a 2147483647 x 1 image"));
  EXPECT_LT(seconds, 2.0) << "the header was checked after allocating";
  // A sparse 3 GB .npy with --max-memory 1G: refused from its size, before it is read.
  ASSERT_EQ(test::run_command("truncate -s 3G " + shell_quote(dir + "/big.npy")).exit_code, 0);
  t0 = std::chrono::steady_clock::now();
  r = proxc("--max-memory 1G metrics " + shell_quote(dir + "/big.npy") + " " + shell_quote(dir + "/big.npy"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("over the limit"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}

TEST(CliSafety, AZeroOperatorSaysWhichTerms) {
  std::string dir = test::temp_dir();
  test::write_text(dir + "/zero.prox",
                   "x = variable(2, 2)\nw = array([2, 2], [0, 0, 0, 0])\nb = array([2, 2], [1, 2, 3, 4])\n"
                   "minimize sum_squares(x - b) + norm1(mul_elemwise(w, x))\n");
  auto r = proxc("solve " + shell_quote(dir + "/zero.prox") + " --iters 5");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("||K|| is 0"));
  EXPECT_THAT(r.out, HasSubstr("K stacks the operands of norm1(mul_elemwise(w, x))"));
  // check's table prints a zero operator's error as --json does (0), not -nan.
  auto c = proxc("check " + shell_quote(dir + "/zero.prox"));
  EXPECT_THAT(c.out, Not(HasSubstr("nan"))) << c.out;
}

// -o naming a folder says so; --cache-dir: an empty path is refused (as every
// path), a file in the folder's place is said and the pipelines are compiled
// in memory.
TEST(CliSafety, FoldersAndFilesInEachOthersPlaceAreSaid) {
  std::string dir = test::temp_dir();
  std::string prox = small_problem(dir);
  auto empty = proxc("solve " + shell_quote(prox) + " --iters 5 --cache-dir ''");
  EXPECT_EQ(empty.exit_code, 2) << empty.out;
  EXPECT_THAT(empty.out, HasSubstr("the path is empty"));
  // -o naming a folder says so.
  fs::create_directories(dir + "/outdir");
  auto folder = proxc("solve " + shell_quote(prox) + " --iters 5 -o " + shell_quote(dir + "/outdir"));
  EXPECT_EQ(folder.exit_code, 2) << folder.out;
  EXPECT_THAT(folder.out, HasSubstr("a folder, not an array file"));
  test::write_text(dir + "/afile", "not a folder");
  auto file = proxc("solve " + shell_quote(prox) + " --iters 5 --cache-dir " + shell_quote(dir + "/afile"));
  EXPECT_EQ(file.exit_code, 0) << file.out;
  EXPECT_THAT(file.out, HasSubstr("is not a folder"));
  EXPECT_EQ(read_file(dir + "/afile"), "not a folder");
}

TEST(CliSafety, DescriptorPathsAreWrittenIntoNotReplaced) {
  std::string dir = test::temp_dir();
  const std::string bin = shell_quote(test::proxc_binary());
  // -o /dev/stdout into a pipe, and appended to a file the shell opened with >>.
  auto piped = test::run_command(bin + " parse " + example("inpaint.prox") + " -o /dev/stdout | cat");
  EXPECT_EQ(piped.exit_code, 0) << piped.out;
  EXPECT_THAT(piped.out, HasSubstr("minimize"));
  test::write_text(dir + "/log.txt", "first line\n");
  auto appended = test::run_command(bin + " parse " + example("inpaint.prox") + " -o /dev/stdout >> " +
                                    shell_quote(dir + "/log.txt"));
  EXPECT_EQ(appended.exit_code, 0) << appended.out;
  std::string log = read_file(dir + "/log.txt");
  EXPECT_EQ(log.rfind("first line\n", 0), 0u) << log.substr(0, 40);
  EXPECT_THAT(log, HasSubstr("minimize"));
  // A FIFO that no process reads: an error, not a hang.
  ASSERT_EQ(::mkfifo((dir + "/out.prox").c_str(), 0600), 0);
  auto fifo = proxc("parse " + example("inpaint.prox") + " -o " + shell_quote(dir + "/out.prox"));
  EXPECT_EQ(fifo.exit_code, 2) << fifo.out;
  EXPECT_THAT(fifo.out, HasSubstr("no process reads this FIFO"));
}

TEST(CliSafety, ADeepExpressionIsRefusedWhereItIsWritten) {
  // 1998 negations bound by name: within the IR's limit of 2000, but the
  // passes add levels; refused at the line that goes past 1900, not later in a
  // pass without a location.
  std::string dir = test::temp_dir();
  std::string text = "x = variable(4, 4)\nb = gaussian(4, 1)\na0 = x\n";
  for (int i = 1; i < 1999; ++i) text += "a" + std::to_string(i) + " = -a" + std::to_string(i - 1) + "\n";
  text += "minimize sum_squares(a1998 - b) + norm1(grad(a1998))\n";
  test::write_text(dir + "/deep.prox", text);
  auto r = proxc("solve " + shell_quote(dir + "/deep.prox") + " --iters 3 --backend emulate");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("deep.prox:1903:9: error: the expression nests 1901 operators deep"));
}

TEST(CliSafety, AnAddressSpaceLimitIsOutOfMemoryNotABug) {
  // Where the limit bites depends on the machine: at each, proxc either works
  // or says it ran out of memory (exit 2) -- never "internal error" (exit 3),
  // nor an uncaught exception (Halide 21's errors are not std::exceptions).
  for (const char* kib : {"250000", "300000", "350000", "400000"}) {
    auto r = test::run_command("ulimit -v " + std::string(kib) + "; " + shell_quote(test::proxc_binary()) +
                               " solve " + example("deconv_tv.prox") + " --iters 3 --cache-dir off 2>&1");
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << kib << ": " << r.out;
    if (r.exit_code == 2) EXPECT_THAT(r.out, HasSubstr("out of memory")) << kib;
    EXPECT_THAT(r.out, Not(HasSubstr("internal error"))) << kib;
  }
}

}  // namespace
}  // namespace proxc::internal
