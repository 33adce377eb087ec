// Outputs that meet through symbolic links (issue 63, item 1): a link not
// yet there (dangling) makes two outputs one file as an existing one does,
// and a link made during a run makes the write refuse, not overwrite what
// the link names.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "io/array_io.h"
#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using ::testing::HasSubstr;

test::CommandResult proxc(const std::string& args) {
  return test::run_command("timeout 120 " + shell_quote(test::proxc_binary()) + " " + args + " 2>&1");
}

Array filled(float v) {
  Array a(Shape{4, 5});
  std::fill(a.data.begin(), a.data.end(), v);
  return a;
}

TEST(OutputLinks, ADanglingLinkMakesTwoOutputsOneFile) {
  const std::string dir = test::temp_dir();
  test::write_text(dir + "/p.prox", "x = variable(4, 5)\nb = load(\"b.npy\")\nminimize sum_squares(x - b)\n");
  io::save_array(dir + "/b.npy", filled(0.5f));
  auto at = [&](const std::string& f) { return shell_quote(dir + "/" + f); };
  const std::string solve = "solve " + at("p.prox") + " --iters 10 ";
  // The log through a link to the result, which is not there yet.
  fs::create_symlink("n1.npy", dir + "/n1link.csv");
  auto log = proxc(solve + "-o " + at("n1.npy") + " --log " + at("n1link.csv"));
  EXPECT_EQ(log.exit_code, 2) << log.out;
  EXPECT_THAT(log.out, HasSubstr("are one file: one output would overwrite the other"));
  EXPECT_FALSE(fs::exists(dir + "/n1.npy"));
  // A checkpoint through a link to the log, and a link to the data.
  fs::create_symlink("l2.csv", dir + "/ck.bin");
  auto checkpoint = proxc(solve + "--log " + at("l2.csv") + " --checkpoint " + at("ck.bin"));
  EXPECT_EQ(checkpoint.exit_code, 2) << checkpoint.out;
  EXPECT_THAT(checkpoint.out, HasSubstr("are one file"));
  fs::create_symlink("b.npy", dir + "/r.npy");
  auto data = proxc(solve + "-o " + at("r.npy"));
  EXPECT_EQ(data.exit_code, 2) << data.out;
  EXPECT_THAT(data.out, HasSubstr("the output would overwrite an input"));
  EXPECT_EQ(io::load_array(dir + "/b.npy").data[0], 0.5f);
  // The report's page through a link to the result.
  fs::create_directories(dir + "/rep");
  fs::create_symlink("../res.npy", dir + "/rep/index.html");
  auto report = proxc(solve + "-o " + at("res.npy") + " --report " + at("rep"));
  EXPECT_EQ(report.exit_code, 2) << report.out;
  EXPECT_THAT(report.out, HasSubstr("are one file"));
  EXPECT_FALSE(fs::exists(dir + "/res.npy"));
  // A batch result through a link to another frame's result.
  fs::create_directories(dir + "/frames");
  io::save_array(dir + "/frames/f0.npy", filled(0.25f));
  io::save_array(dir + "/frames/f1.npy", filled(0.75f));
  fs::create_directories(dir + "/od2");
  fs::create_symlink("f1.npy", dir + "/od2/f0.npy");
  auto batch = proxc("batch " + at("p.prox") + " --set " + shell_quote("b=" + dir + "/frames/*.npy") + " -o " +
                     at("od2") + " --iters 5");
  EXPECT_EQ(batch.exit_code, 2) << batch.out;
  EXPECT_THAT(batch.out, HasSubstr("are one file"));
  EXPECT_FALSE(fs::exists(dir + "/od2/f1.npy"));
  // Without the link, the same commands write.
  fs::remove(dir + "/n1link.csv");
  EXPECT_EQ(proxc(solve + "-o " + at("n1.npy") + " --log " + at("n1link.csv")).exit_code, 0);
}

// The solve runs until its second snapshot is there; then the link is made
// and SIGINT stops the solve, which writes its iterate.
TEST(OutputLinks, ALinkMadeDuringTheRunIsNotWrittenThrough) {
  const std::string dir = test::temp_dir();
  test::write_text(dir + "/long.prox",
                   "x = variable(64, 64)\nb = load(\"b.npy\")\n"
                   "minimize sum_squares(x - b) + 0.01 * norm1(grad(x))\n");
  Array b(Shape{64, 64});
  std::fill(b.data.begin(), b.data.end(), 0.5f);
  io::save_array(dir + "/b.npy", b);
  const std::string before = read_file(dir + "/b.npy");
  for (const std::string flag : {"-o", "--log"}) {
    const std::string out = dir + "/out" + (flag == "-o" ? ".npy" : ".csv");
    const std::string second = dir + "/snap_iter0000002.npy";
    fs::remove(second);
    // env: a background job of the shell would start with SIGINT ignored.
    // (No timeout(1) between: it sends the signal to the command and to its
    // process group, and a second SIGINT ends proxc at once.)
    const std::string cmd = "env --default-signal " + shell_quote(test::proxc_binary()) + " solve " +
                            shell_quote(dir + "/long.prox") +
                            " --backend emulate --iters 1000000 --eps-abs 0 --eps-rel 0 --check-every 1 " +
                            "--save-every 1 " + (flag == "-o" ? "" : "-o " + shell_quote(dir + "/snap.npy")) +
                            " " + flag + " " + shell_quote(out) + " > " + shell_quote(dir + "/out.txt") + " 2>&1";
    const std::string snapshot = flag == "-o" ? dir + "/out_iter0000002.npy" : second;
    auto r = test::run_command("(" + cmd + ") & pid=$!; for i in $(seq 1200); do [ -e " + shell_quote(snapshot) +
                               " ] && break; sleep 0.05; done; ln -s b.npy " + shell_quote(out) +
                               "; kill -INT $pid; wait $pid; echo rc=$?");
    const std::string said = read_file(dir + "/out.txt");
    EXPECT_THAT(r.out, HasSubstr("rc=2")) << flag << "\n" << said;
    EXPECT_THAT(said, HasSubstr(out + ": not written: it named " + out + " when the run began and names " + dir +
                                "/b.npy now"))
        << flag;
    EXPECT_EQ(read_file(dir + "/b.npy"), before) << flag;
    fs::remove(out);
  }
}

TEST(OutputLinks, AKeptOutputRefusesAWriteThroughANewLink) {
  const std::string dir = test::temp_dir();
  test::write_text(dir + "/data.txt", "the data\n");
  keep_output_target(dir + "/out.txt");
  fs::create_symlink("data.txt", dir + "/out.txt");
  try {
    write_file_atomic(dir + "/out.txt", "the result\n");
    ADD_FAILURE() << "written through a link made after the output was kept";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("when the run began"));
  }
  EXPECT_EQ(read_file(dir + "/data.txt"), "the data\n");
  // A link there when it was kept is written through, as before.
  keep_output_target(dir + "/out.txt");
  write_file_atomic(dir + "/out.txt", "the result\n");
  EXPECT_EQ(read_file(dir + "/data.txt"), "the result\n");
  EXPECT_EQ(output_target(dir + "/out.txt"), dir + "/data.txt");
}

}  // namespace
}  // namespace proxc::internal
