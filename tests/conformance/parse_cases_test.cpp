// Every expr, decls and problem text of ../shared/conformance/cases.json
// (ProxImaL's reference cases) parses with its data files and round-trips.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "frontend/parser.h"
#include "frontend/json.h"
#include "ir/printer.h"
#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

nlohmann::json load_cases() {
  return nlohmann::json::parse(read_file(test::conformance_dir() + "/cases.json"));
}

// The whole .prox text of a case: a problem for solve cases; for the others
// the declarations and a minimize over the expression.
std::string case_text(const nlohmann::json& c) {
  std::string kind = c["kind"];
  if (kind == "solve") return c["problem"];
  std::string text = c["decls"].get<std::string>() + "\n";
  if (kind == "linop_forward" || kind == "linop_adjoint") return text + "minimize sum_squares(" + c["expr"].get<std::string>() + ")\n";
  return text + "minimize " + c["expr"].get<std::string>() + "\n";
}

TEST(ConformanceCases, ThereAre114) { EXPECT_EQ(load_cases().size(), 114u); }

TEST(ConformanceCases, EveryTextParsesAndRoundTrips) {
  const std::string dir = test::conformance_dir();
  int checked = 0;
  for (const auto& c : load_cases()) {
    SCOPED_TRACE(c["id"].get<std::string>());
    std::string text = case_text(c);
    ParsedProgram prog = parse_program(text, c["id"].get<std::string>() + ".prox", dir);
    std::string a = print_text(prog.problem, {dir});
    std::string b = print_text(parse_program(a, "printed.prox", dir).problem, {dir});
    EXPECT_EQ(a, b);
    JsonPrintOptions o;
    o.base_dir = dir;
    std::string j = print_json(prog.problem, o);
    EXPECT_EQ(print_json(parse_json(j, "dump.json", dir), o), j);
    // The variable is bound under the name the case gives.
    if (c.contains("variable")) {
      std::string name = c["variable"]["name"];
      ASSERT_TRUE(prog.names.count(name));
      EXPECT_EQ(prog.names.at(name)->shape, c["variable"]["shape"].get<Shape>());
    }
    ++checked;
  }
  EXPECT_EQ(checked, 114);
}

TEST(ConformanceCases, LinopOutputShapesMatchTheCases) {
  const std::string dir = test::conformance_dir();
  for (const auto& c : load_cases()) {
    if (c["kind"] != "linop_forward") continue;
    SCOPED_TRACE(c["id"].get<std::string>());
    Problem p = parse_program(case_text(c), "case.prox", dir).problem;
    EXPECT_EQ(p.terms[0].arg->shape, c["output_shape"].get<Shape>());
  }
}

}  // namespace
}  // namespace proxc::internal
