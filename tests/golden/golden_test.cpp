// Golden tests: the canonical text of every example is pinned in
// tests/golden/expected/, and every example round-trips through text and JSON.
// Run with PROXC_UPDATE_GOLDEN=1 to rewrite the expected files (then review
// the diff).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "frontend/load.h"
#include "frontend/parser.h"
#include "frontend/json.h"
#include "ir/dot.h"
#include "ir/latex.h"
#include "ir/operators.h"
#include "ir/printer.h"
#include "proxc/black_box.h"
#include "support/file_util.h"
#include "support/names.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

namespace fs = std::filesystem;

// photos/deblur_lens.prox uses the black box of examples/plugins/lens_blur.cpp
// (linked in): registered before any example is read.
extern "C" int proxc_plugin_init(proxc_register_black_box_fn);
const int kLensBlurRegistered = proxc_plugin_init(proxc_register_black_box);

using test::example_files;

class Example : public ::testing::TestWithParam<std::string> {};

TEST_P(Example, CanonicalTextMatchesGolden) {
  std::string path = test::source_dir() + "/examples/" + GetParam();
  std::string dir = fs::path(path).parent_path().string();
  Problem p = parse_program_file(path).problem;
  std::string text = print_text(p, {dir});
  std::string name = GetParam();
  std::replace(name.begin(), name.end(), '/', '_');
  std::string golden = test::source_dir() + "/tests/golden/expected/" + name;
  if (std::getenv("PROXC_UPDATE_GOLDEN")) write_file_atomic(golden, text);
  EXPECT_EQ(text, read_file(golden)) << "golden file " << golden;
}

TEST_P(Example, TextRoundTripIsByteIdentical) {
  std::string path = test::source_dir() + "/examples/" + GetParam();
  std::string dir = fs::path(path).parent_path().string();
  std::string a = print_text(parse_program_file(path).problem, {dir});
  std::string b = print_text(parse_program(a, "printed.prox", dir).problem, {dir});
  EXPECT_EQ(a, b);
}

TEST_P(Example, JsonRoundTripIsIdenticalAndGivesTheSameText) {
  std::string path = test::source_dir() + "/examples/" + GetParam();
  std::string dir = fs::path(path).parent_path().string();
  Problem p = parse_program_file(path).problem;
  for (bool inline_constants : {false, true}) {
    JsonPrintOptions o;
    o.base_dir = dir;
    o.inline_constants = inline_constants;
    std::string j1 = print_json(p, o);
    Problem q = parse_json(j1, "dump.json", dir);
    EXPECT_EQ(print_json(q, o), j1);
    if (!inline_constants) {
      EXPECT_EQ(print_text(q, {dir}), print_text(p, {dir}));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, Example, ::testing::ValuesIn(example_files()),
                         test::path_param_name);

// tests/golden/operators/every_op.prox uses every operator of the table
// (ir/operators.h) and every slot role; its four printed forms are pinned (they
// were written by the printers before the table drove them) and it round-trips.
TEST(EveryOperator, PrintedFormsMatchGolden) {
  std::string dir = test::source_dir() + "/tests/golden/operators";
  Problem p = parse_program_file(dir + "/every_op.prox").problem;
  JsonPrintOptions o;
  o.base_dir = dir;
  const std::pair<const char*, std::string> forms[] = {{"prox", print_text(p, {dir})},
                                                       {"json", print_json(p, o)},
                                                       {"tex", print_latex(p)},
                                                       {"dot", print_dot(p)}};
  for (const auto& [ext, printed] : forms) {
    std::string golden = dir + "/every_op.expected." + ext;
    if (std::getenv("PROXC_UPDATE_GOLDEN")) write_file_atomic(golden, printed);
    EXPECT_EQ(printed, read_file(golden)) << "golden file " << golden;
  }
  std::string text = print_text(p, {dir});
  EXPECT_EQ(print_text(parse_program(text, "printed.prox", dir).problem, {dir}), text);
  std::string json = print_json(p, o);
  EXPECT_EQ(print_json(parse_json(json, "dump.json", dir), o), json);
  // Every operator kind of the table appears in the problem.
  std::set<ExprKind> seen;
  for (const Expr& e : topo_order(p)) seen.insert(e->kind);
  for (const OperatorInfo& op : operator_table()) EXPECT_TRUE(seen.count(op.kind)) << op.keyword;
  std::set<FunctionKind> functions;
  for (const FunctionTerm& t : p.terms) functions.insert(t.kind);
  EXPECT_EQ(functions.size(), static_cast<size_t>(FunctionKind::LeastSquares) + 1);  // prox_fn: patch_NLM
}

TEST(EveryOperator, CallKeywordsAreReservedNames) {
  for (const OperatorInfo& op : operator_table()) {
    if (op.syntax == OperatorSyntax::Call) {
      EXPECT_TRUE(NameScope::is_reserved(op.keyword)) << op.keyword;
    }
  }
  for (size_t k = 0; k <= static_cast<size_t>(FunctionKind::LeastSquares); ++k) {
    const char* keyword = to_string(static_cast<FunctionKind>(k));
    EXPECT_TRUE(NameScope::is_reserved(keyword)) << keyword;
  }
  EXPECT_TRUE(NameScope::is_reserved("hstack"));
}

TEST(EveryOperator, WithArgsRebuildsEachNodeAsItWas) {
  // with_args through make_operator: the same operands give the same node, new
  // ones a node of the same kind and attributes.
  std::string dir = test::source_dir() + "/tests/golden/operators";
  Problem p = parse_program_file(dir + "/every_op.prox").problem;
  for (const Expr& e : topo_order(p)) {
    if (e->is_variable() || e->is_constant()) continue;
    EXPECT_EQ(with_args(e, e->args), e);
    std::vector<Expr> copies;
    for (const Expr& a : e->args) copies.push_back(with_name_hint(a, a->name_hint));
    Expr r = with_args(e, copies);
    ASSERT_NE(r, e);
    EXPECT_EQ(r->kind, e->kind);
    EXPECT_EQ(r->shape, e->shape);
    EXPECT_EQ(r->ints, e->ints);
    EXPECT_EQ(r->scalar, e->scalar);
    EXPECT_EQ(r->str, e->str);
    EXPECT_EQ(r->linear_args().size(), e->linear_args().size());
  }
}

TEST(Examples, AllListedExamplesExist) {
  // The issue pins these; a rename must be deliberate.
  auto files = example_files();
  for (const char* f : {"denoise_tv_aniso.prox", "denoise_tv_iso.prox", "deconv_tv.prox", "inpaint.prox",
                        "demosaic.prox", "deblur_photo/deblur.prox", "superres/superres.prox"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), f), files.end()) << f;
  }
}

}  // namespace
}  // namespace proxc::internal
