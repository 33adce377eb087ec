// The memory budget holds for the whole process (issue 63, item 3): the
// large arrays in use together -- decoded files, the passes' constants, the
// solver's state, the pipelines' buffers -- stay within --max-memory, and a
// request beyond it is refused before it is allocated, with exit 2 and what
// did not fit. Each case measures the command's peak resident memory.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <vector>

#include "io/array_io.h"
#include "support/file_util.h"
#include "test_util.h"

extern char** environ;

namespace proxc::internal {
namespace {

using ::testing::HasSubstr;

struct Measured {
  int exit_code = -1;
  std::string out;
  long peak_mib = 0;  // the child's largest resident set
};

// Runs the proxc command with `args`, its output into `log`, and measures it.
Measured run_measured(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> words{test::proxc_binary()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  Measured m;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) return m;
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  struct rusage ru {};
  if (::wait4(pid, &status, 0, &ru) != pid) return m;
  m.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  m.out = read_file(log);
  m.peak_mib = ru.ru_maxrss / 1024;
  return m;
}

// What a proxc process takes besides its arrays: the program, libHalide and
// LLVM, a compile, FFTW's plans, small arrays (docs/cli.md, --max-memory).
constexpr long kBesidesArraysMiB = 350;

TEST(MemoryBudget, ThePassesOfALargeConstantStayWithinTheBudget) {
  // b is 36 MiB; opt's passes fold copies of it (1.31 GB for a 144 MB b under
  // --max-memory 200M, before).
  const std::string dir = test::temp_dir();
  Array b(Shape{3000, 3000});
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = static_cast<float>(i % 97) / 97.0f;
  io::save_array(dir + "/b.npy", b);
  test::write_text(dir + "/p.prox", "b = load(\"b.npy\")\nx = variable(shape(b))\nminimize sum_squares(2 * x - b)\n");
  for (const std::vector<std::string>& command : {std::vector<std::string>{"opt", dir + "/p.prox"},
                                                    std::vector<std::string>{"solve", dir + "/p.prox", "--iters", "5"}}) {
    std::vector<std::string> args{"--max-memory", "60M"};
    args.insert(args.end(), command.begin(), command.end());
    const Measured r = run_measured(args, dir + "/out.txt");
    EXPECT_EQ(r.exit_code, 2) << command[0] << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("the memory budget of 60.0 MiB")) << command[0];
    EXPECT_LT(r.peak_mib, 60 + kBesidesArraysMiB) << command[0] << "\n" << r.out;
  }
  // With room, the same commands run.
  const Measured fits = run_measured({"--max-memory", "1G", "solve", dir + "/p.prox", "--iters", "5"}, dir + "/out.txt");
  EXPECT_EQ(fits.exit_code, 0) << fits.out;
}

// How much the passes need beside the data: folding `0.5 * (x - b)` into
// sum_squares' b = 0.5·b takes one double copy of b per operator, and a
// derived constant that float32 holds exactly keeps no double values. A b
// of 4 MiB opts in 40 MiB (it needed 64, before: the emulator copied each
// operand three times and every folded constant kept its doubles).
TEST(MemoryBudget, ThePassesNeedAFewCopiesOfAConstant) {
  const std::string dir = test::temp_dir();
  Array b(Shape{1024, 1024});
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = static_cast<float>(i % 89) / 89.0f;
  io::save_array(dir + "/b.npy", b);
  test::write_text(dir + "/p.prox", "b = load(\"b.npy\")\nx = variable(shape(b))\n"
                                    "minimize sum_squares(0.5 * (x - b)) + 0.1 * norm1(grad(x))\n");
  const Measured r = run_measured({"--max-memory", "40M", "opt", dir + "/p.prox", "-o", dir + "/o.prox"},
                                  dir + "/out.txt");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(read_file(dir + "/o.prox"), HasSubstr("b=0.5 * b"));
}

TEST(MemoryBudget, ImagesThatDoNotFitTogetherAreRefusedWhileReadingThem) {
  // Two PNGs of 4000² pixels: a few KiB of file each, 61 MiB each once
  // decoded. Either fits in 100 MiB; both do not.
  const std::string dir = test::temp_dir();
  io::save_array(dir + "/a.png", Array(Shape{4000, 4000}));
  io::save_array(dir + "/b.png", Array(Shape{4000, 4000}));
  test::write_text(dir + "/p.prox",
                   "a = load(\"a.png\")\nb = load(\"b.png\")\nx = variable(shape(b))\n"
                   "minimize sum_squares(x - b) + sum_squares(x - a)\n");
  const Measured r = run_measured({"--max-memory", "100M", "solve", dir + "/p.prox"}, dir + "/out.txt");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("the memory budget of 100.0 MiB"));
  EXPECT_THAT(r.out, HasSubstr("for reading " + dir + "/b.png"));
  EXPECT_LT(r.peak_mib, 100 + kBesidesArraysMiB) << r.out;
}

TEST(MemoryBudget, ASolveWhoseStateDoesNotFitIsRefusedAndStaysWithinTheBudget) {
  // TV denoising of 2000² (15 MiB an array): pc's state and buffers do not fit in 80 MiB.
  const std::string dir = test::temp_dir();
  test::write_text(dir + "/p.prox",
                   "b = gaussian([2000, 2000], 300)\nx = variable(shape(b))\n"
                   "minimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2])\n");
  for (const char* backend : {"halide", "emulate"}) {
    const Measured r = run_measured({"--max-memory", "80M", "solve", dir + "/p.prox", "--iters", "5", "--backend",
                                     backend, "--cache-dir", "off"},
                                    dir + "/out.txt");
    EXPECT_EQ(r.exit_code, 2) << backend << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("80.0 MiB")) << backend;
    EXPECT_LT(r.peak_mib, 80 + kBesidesArraysMiB) << backend << "\n" << r.out;
  }
}

}  // namespace
}  // namespace proxc::internal
