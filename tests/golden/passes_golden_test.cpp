// Golden tests of the rewriting passes: the text after each pass of the
// default pipeline, for every example, pinned in tests/golden/passes/.
// PROXC_UPDATE_GOLDEN=1 rewrites them (review the diff).

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "frontend/parser.h"
#include "ir/printer.h"
#include "pipeline/pipeline.h"
#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

namespace fs = std::filesystem;

struct GoldenCase {
  std::string example;
  std::string solver;
};

class PassGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(PassGolden, EachPassOutputMatches) {
  const GoldenCase& c = GetParam();
  std::string path = test::source_dir() + "/examples/" + c.example;
  std::string dir = fs::path(path).parent_path().string();
  Problem cur = parse_program_file(path).problem;
  PassOptions o;
  o.solver = c.solver;
  o.operator_norm = operator_norm_oracle("bound");  // the scale pass's oracle (pipeline.h)
  std::string stem = c.example;
  for (char& ch : stem) {
    if (ch == '/') ch = '_';
  }
  stem = stem.substr(0, stem.size() - 5) + "." + c.solver;
  int n = 0;
  for (const std::string& name : default_pipeline()) {
    cur = find_pass(name).run(cur, o);
    char num[16];
    std::snprintf(num, sizeof num, "%02d", ++n);
    std::string golden = test::source_dir() + "/tests/golden/passes/" + stem + "." + num + "_" + name + ".prox";
    std::string text = print_text(cur, {dir});
    if (std::getenv("PROXC_UPDATE_GOLDEN")) write_file_atomic(golden, text);
    EXPECT_EQ(text, read_file(golden)) << golden;
  }
}

std::vector<GoldenCase> cases() {
  std::vector<GoldenCase> out;
  for (const char* e : {"denoise_tv_aniso.prox", "denoise_tv_iso.prox", "deconv_tv.prox", "inpaint.prox",
                        "demosaic.prox", "deblur_photo/deblur.prox", "superres/superres.prox"}) {
    out.push_back({e, "pc"});
  }
  out.push_back({"denoise_tv_iso.prox", "admm"});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Examples, PassGolden, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           std::string s = info.param.example + "_" + info.param.solver;
                           for (char& ch : s) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace proxc::internal
