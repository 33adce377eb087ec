// Every dump of every example prints and reloads from anywhere (issue 63,
// item 8): `proxc opt EXAMPLE --dump-ir D` writes the problem after each pass
// as text and JSON; from another folder, each text dump parses and prints
// back byte for byte (`parse --verify-roundtrip`), its reprint into a third
// folder keeps the data's pins and reloads there, and each JSON dump resumes
// (`opt D/NN.json`) to the final dump the first run wrote. The examples are
// listed from the folder, so a new one is covered without touching this file.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

namespace fs = std::filesystem;
using test::shell_quote;
using ::testing::HasSubstr;

using test::example_files;

// photos/deblur_lens.prox calls the black box of examples/plugins/lens_blur.cpp.
std::string plugin_flag() { return "--plugin " + shell_quote(PROXC_LENS_BLUR_PLUGIN) + " "; }

// Runs proxc in `folder`, so that nothing resolves against the test's own.
test::CommandResult proxc_in(const std::string& folder, const std::string& args) {
  return test::run_command("cd " + shell_quote(folder) + " && timeout 300 " + shell_quote(test::proxc_binary()) +
                           " " + plugin_flag() + args + " 2>&1");
}

std::vector<std::string> dumps(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ext) out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ExampleDumps : public ::testing::TestWithParam<std::string> {};

TEST_P(ExampleDumps, PrintAndReloadFromAnotherFolder) {
  const std::string dir = test::temp_dir();
  const std::string example = test::source_dir() + "/examples/" + GetParam();
  fs::create_directories(dir + "/elsewhere/deeper");
  auto opt = proxc_in(dir, "opt " + shell_quote(example) + " --dump-ir d");
  ASSERT_EQ(opt.exit_code, 0) << opt.out;
  const std::vector<std::string> texts = dumps(dir + "/d", ".prox");
  const std::vector<std::string> jsons = dumps(dir + "/d", ".json");
  ASSERT_GE(texts.size(), 4u) << "one dump per pass";
  ASSERT_EQ(jsons.size(), texts.size());
  const std::string final_text = read_file(dir + "/d/" + texts.back());
  for (const std::string& f : texts) {
    const std::string dump = shell_quote(dir + "/d/" + f);
    auto again = proxc_in(dir + "/elsewhere", "parse " + dump + " --verify-roundtrip");
    EXPECT_EQ(again.exit_code, 0) << f << ": " << again.out;
    const std::string reprint = dir + "/elsewhere/deeper/" + f;
    auto printed = proxc_in(dir + "/elsewhere", "parse " + dump + " -o " + shell_quote(reprint));
    ASSERT_EQ(printed.exit_code, 0) << f << ": " << printed.out;
    // The reprint, two folders away from the dump, reloads: its loads are
    // pinned by content, and print back as the dump does.
    auto reload = proxc_in(dir, "parse " + shell_quote(reprint) + " --verify-roundtrip");
    EXPECT_EQ(reload.exit_code, 0) << f << ": " << reload.out;
    if (final_text.find("load(") != std::string::npos) {
      EXPECT_THAT(read_file(reprint), HasSubstr("hash=\"xxh3-128:")) << f;
    }
  }
  // Each JSON dump resumes where it was written and ends at the same problem.
  for (const std::string& f : jsons) {
    const std::string out = dir + "/elsewhere/resumed.prox";
    auto resumed = proxc_in(dir + "/elsewhere", "opt " + shell_quote(dir + "/d/" + f) + " -o " + shell_quote(out));
    ASSERT_EQ(resumed.exit_code, 0) << f << ": " << resumed.out;
    auto a = proxc_in(dir, "parse " + shell_quote(out));
    auto b = proxc_in(dir, "parse " + shell_quote(dir + "/d/" + texts.back()));
    ASSERT_EQ(a.exit_code, 0) << a.out;
    ASSERT_EQ(b.exit_code, 0) << b.out;
    EXPECT_THAT(a.out, HasSubstr("minimize"));
    EXPECT_EQ(a.out, b.out) << f << " resumed to another problem than " << texts.back();
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExampleDumps, ::testing::ValuesIn(example_files()),
                         test::path_param_name);

}  // namespace
}  // namespace proxc::internal
