// Numbers checked where they enter (issue 63, item 7): proxc computes in
// float32, so a factor, a parameter or a literal beyond ±3.4e38 is refused
// where it is written (file:line:col, or the JSON file and field), a product
// the passes form beyond it is refused before the solve, and a solve whose
// objective is not finite ends as a failure, never "converged" (exit 0 with
// an objective of nan or inf, before).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using test::shell_quote;
using ::testing::HasSubstr;
using ::testing::Not;

test::CommandResult proxc(const std::string& args) {
  return test::run_command("timeout 120 " + shell_quote(test::proxc_binary()) + " " + args + " 2>&1");
}

TEST(Numbers, BeyondFloat32IsRefusedWhereItIsWritten) {
  const std::string dir = test::temp_dir();
  struct Case {
    std::string objective, where, message;
  } cases[] = {
      {"1e39 * norm1(x)", ":3:10: error: ", "1e39 is beyond float32's range"},
      {"sum_squares(x - b) + 1e39 * norm1(x)", ":3:31: error: ", "1e39 is beyond float32's range"},
      {"sum_squares(x) + norm1(x, c=-1e39)", ":3:", "beyond float32's range"},
      {"sum_squares(x, b=1e39)", ":3:", "beyond float32's range"},
      {"1e20 * 1e20 * norm1(x)", ":3:15: error: ", "the result of '*', 1e+40, is beyond float32's range"},
      {"sum_squares(x - b) + norm1(x / 1e-39)", ":3:", "is beyond float32's range"},
  };
  int n = 0;
  for (const Case& c : cases) {
    const std::string file = dir + "/p" + std::to_string(n++) + ".prox";
    test::write_text(file, "x = variable(8, 8)\nb = gaussian(8, 2)\nminimize " + c.objective + "\n");
    for (const char* command : {"parse", "solve"}) {
      auto r = proxc(std::string(command) + " " + shell_quote(file) +
                     (std::string(command) == "parse" ? " -o " + shell_quote(dir + "/out.prox") : " --iters 20"));
      EXPECT_EQ(r.exit_code, 2) << command << " " << c.objective << "\n" << r.out;
      EXPECT_THAT(r.out, HasSubstr(file + c.where)) << c.objective;
      EXPECT_THAT(r.out, HasSubstr(c.message)) << c.objective;
      EXPECT_THAT(r.out, Not(HasSubstr("converged"))) << c.objective;
    }
  }
}

TEST(Numbers, AJsonFieldBeyondFloat32IsRefusedByName) {
  const std::string dir = test::temp_dir();
  test::write_text(dir + "/p.prox",
                   "x = variable(8, 8)\nb = gaussian(8, 2)\nminimize sum_squares(x - b) + 0.5 * norm1(x)\n");
  ASSERT_EQ(proxc("parse " + shell_quote(dir + "/p.prox") + " -o " + shell_quote(dir + "/p.json")).exit_code, 0);
  std::string json = read_file(dir + "/p.json");
  const size_t at = json.find("\"alpha\": 0.5");
  ASSERT_NE(at, std::string::npos) << json;
  json.replace(at, 12, "\"alpha\": 1e39");
  test::write_text(dir + "/p.json", json);
  auto r = proxc("solve " + shell_quote(dir + "/p.json") + " --iters 20");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr(dir + "/p.json: "));
  EXPECT_THAT(r.out, HasSubstr("field \"alpha\" is 1e+39, beyond float32's range"));
}

TEST(Numbers, AProductThePassesFormBeyondFloat32IsRefusedBeforeTheSolve) {
  const std::string dir = test::temp_dir();
  // Each factor fits; the prox scales by alpha * beta^2 = 1e90.
  test::write_text(dir + "/p.prox",
                   "x = variable(8, 8)\nb = gaussian(8, 2)\nminimize 1e30 * sum_squares(1e30 * x - b) + norm1(x)\n");
  for (const char* solver : {"pc", "admm"}) {
    auto r = proxc("solve " + shell_quote(dir + "/p.prox") + " --iters 20 --solver " + solver);
    EXPECT_EQ(r.exit_code, 2) << solver << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("after the passes, term ")) << solver;
    EXPECT_THAT(r.out, HasSubstr("beyond float32's range")) << solver;
    EXPECT_THAT(r.out, Not(HasSubstr("converged"))) << solver;
  }
  // Within the range, the same form solves.
  test::write_text(dir + "/q.prox",
                   "x = variable(8, 8)\nb = gaussian(8, 2)\nminimize 1e3 * sum_squares(1e3 * x - b) + norm1(x)\n");
  EXPECT_EQ(proxc("solve " + shell_quote(dir + "/q.prox") + " --iters 20").exit_code, 0);
}

// The objective is NaN at a finite iterate (here a prox function of the
// user's whose value is not a number): a failure, exit 1, not "converged".
TEST(Numbers, ASolveWhoseObjectiveIsNotFiniteFails) {
  const std::string dir = test::temp_dir();
  const std::string plugin = "--plugin " + shell_quote(PROXC_TEST_PLUGIN) + " ";
  const std::string head = "x = variable(16, 12)\nb = gaussian([16, 12], 3)\nminimize sum_squares(x - b) + ";
  test::write_text(dir + "/nan.prox", head + "0.1 * nan_value(grad(x), scale=0.5)\n");
  test::write_text(dir + "/fine.prox", head + "0.1 * soft_threshold(grad(x), scale=0.5)\n");
  for (const char* backend : {"halide", "emulate"}) {
    auto r = proxc(plugin + "solve " + shell_quote(dir + "/nan.prox") + " --iters 30 --backend " + backend);
    EXPECT_EQ(r.exit_code, 1) << backend << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("diverged")) << backend;
    EXPECT_THAT(r.out, HasSubstr("the objective at the result is nan though the iterate is finite")) << backend;
    EXPECT_THAT(r.out, Not(HasSubstr("converged"))) << backend;
    auto fine = proxc(plugin + "solve " + shell_quote(dir + "/fine.prox") + " --iters 30 --backend " + backend);
    EXPECT_EQ(fine.exit_code, 0) << backend << "\n" << fine.out;
  }
}

}  // namespace
}  // namespace proxc::internal
