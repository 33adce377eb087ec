// Bad input: every mistake gives a located UserError with a clear message,
// never an InternalError or a crash. Each case sits next to the message it
// expects.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "frontend/load.h"
#include "frontend/parser.h"
#include "io/hdf5.h"
#include "io/npy.h"
#include "frontend/json.h"
#include "ir/printer.h"
#include "support/array.h"
#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using ::testing::HasSubstr;

struct BadText {
  const char* name;
  const char* text;
  const char* where;    // "line:col" expected after the file name
  const char* message;  // a key part of the message
};

// Texts that need no data files. Files used by the others are made in the
// fixture: good.npy (4, 5), k.npy (3, 3).
const BadText kBadTexts[] = {
    {"unknown_function", "x = variable(4, 5)\nminimize sum_squares(blur(x))\n", "2:22", "unknown function 'blur'"},
    {"wrong_arity", "x = variable(4, 5)\nminimize sum_squares(conv(x))\n", "2:22",
     "conv takes 2 positional arguments, got 1"},
    {"wrong_keyword", "x = variable(4, 5)\nminimize norm1(x, alpah=2)\n", "2:19",
     "norm1 has no keyword 'alpah' (allowed: alpha, beta, b, c, gamma, d)"},
    {"keyword_on_operator", "x = variable(4, 5)\nminimize norm1(grad(x, axis=1))\n", "2:24", "grad has no keyword 'axis' (allowed: dims, boundary)"},
    {"shape_mismatch", "x = variable(4, 5)\ny = variable(4, 6)\nminimize sum_squares(x - y)\n", "3:24",
     "'-': shapes (4, 5) and (4, 6) do not match"},
    {"shape_mismatch_in_data", "b = load(\"good.npy\")\nx = variable(5, 4)\nminimize sum_squares(x - b)\n", "3:24",
     "shapes (5, 4) and (4, 5) do not match"},
    {"shape_mismatch_weight", "w = load(\"good.npy\")\nx = variable(4, 6)\nminimize sum_squares(mul_elemwise(w, x))\n",
     "3:22", "mul_elemwise: weight shape (4, 5) does not match operand shape (4, 6)"},
    {"undefined_name", "x = variable(4, 5)\nminimize sum_squares(x - b)\n", "2:26", "undefined name 'b'"},
    {"duplicate_name", "x = variable(4, 5)\nx = variable(4, 5)\nminimize norm1(x)\n", "2:1",
     "'x' is already defined (at line 1)"},
    {"assign_builtin", "grad = variable(4, 5)\nminimize norm1(grad)\n", "1:1", "'grad' is a built-in name"},
    {"missing_file", "b = load(\"nope.npy\")\nx = variable(shape(b))\nminimize norm1(x - b)\n", "1:5",
     "nope.npy: cannot open file: no such file or directory"},
    {"unterminated_string", "b = load(\"good.npy)\nminimize norm1(b)\n", "1:10", "unterminated string"},
    {"stray_byte", "x = variable(4, 5)\nminimize norm1(x) \xc3\xa9\n", "2:19", "stray byte 0xC3"},
    {"stray_character", "x = variable(4, 5)\nminimize norm1(x) @ 2\n", "2:19", "unexpected character '@'"},
    {"empty_file", "", "1:1", "empty problem: no 'minimize' statement"},
    {"only_comments", "# nothing here\n\n", "1:1", "empty problem"},
    {"no_minimize", "x = variable(4, 5)\n", "2:1", "no 'minimize' statement"},
    {"two_minimize", "x = variable(4, 5)\nminimize norm1(x)\nminimize nonneg(x)\n", "3:1",
     "a second 'minimize' statement; a problem has exactly one (the first is at line 2)"},
    {"zero_size", "x = variable(0, 5)\nminimize norm1(x)\n", "1:5", "extents must be positive"},
    {"negative_size", "x = variable(-4, 5)\nminimize norm1(x)\n", "1:5", "extents must be positive"},
    {"fractional_size", "x = variable(4.5, 5)\nminimize norm1(x)\n", "1:14", "must be an integer, got 4.5"},
    {"too_large", "x = variable(100000, 100000, 100000)\nminimize norm1(x)\n", "1:5",
     "variable 'x' of shape (100000, 100000, 100000) would need"},
    {"five_dims", "x = variable(2, 2, 2, 2, 2)\nminimize norm1(x)\n", "1:5", "a variable has 1 to 4 dimensions"},
    {"minimize_expression", "x = variable(4, 5)\nminimize grad(x)\n", "2:10",
     "'minimize' needs a sum of function terms"},
    {"subtract_term", "x = variable(4, 5)\nminimize norm1(x) - nonneg(x)\n", "2:19", "cannot subtract a function term"},
    {"negative_factor", "x = variable(4, 5)\nminimize -2 * norm1(x)\n", "2:10", "factor of a function term must be"},
    {"negate_term", "x = variable(4, 5)\nminimize -norm1(x)\n", "2:10", "cannot negate a function term"},
    {"product_of_expressions", "x = variable(4, 5)\nminimize norm1(x * x)\n", "2:18",
     "cannot multiply two expressions (not linear); for a constant weight use mul_elemwise(w, x)"},
    {"division_by_zero", "x = variable(4, 5)\nminimize norm1(x / 0)\n", "2:18", "division by zero"},
    {"bad_statement", "x = variable(4, 5)\nnorm1(x)\nminimize norm1(x)\n", "2:1", "expected a statement"},
    {"missing_paren", "x = variable(4, 5)\nminimize norm1(grad(x)\n", "3:1", "expected ',' or ')' in the call of 'norm1'"},
    {"extra_paren", "x = variable(4, 5)\nminimize norm1(x))\n", "2:18", "expected the end of the statement, found ')'"},
    {"bad_number", "x = variable(4, 5)\nminimize 1e * norm1(x)\n", "2:10", "exponent has no digits"},
    {"name_starting_with_digit", "x = variable(4, 5)\nminimize 2x * norm1(x)\n", "2:11", "malformed number"},
    {"negative_alpha", "x = variable(4, 5)\nminimize norm1(x, alpha=-1)\n", "2:10", "alpha (the factor in front) must be"},
    {"zero_beta", "x = variable(4, 5)\nminimize norm1(x, beta=0)\n", "2:10", "beta must be finite in float32 and nonzero"},
    {"keyword_twice", "x = variable(4, 5)\nminimize norm1(x, beta=1, beta=2)\n", "2:27", "keyword 'beta' given twice"},
    {"positional_after_keyword", "x = variable(4, 5)\nminimize norm1(x, beta=1, 2)\n", "2:27",
     "a positional argument cannot follow keyword arguments"},
    {"group_axes_missing", "x = variable(4, 5)\nminimize group_norm1(grad(x))\n", "2:10",
     "group_norm1 needs the group axes"},
    {"group_axis_out_of_range", "x = variable(4, 5)\nminimize group_norm1(grad(x), [3])\n", "2:10",
     "axis 3 is out of range for operand shape (4, 5, 2)"},
    {"subsample_steps", "x = variable(4, 5)\nminimize norm1(subsample(x, [2]))\n", "2:16",
     "subsample: needs one step per axis"},
    {"conv_kernel_expression", "x = variable(4, 5)\nminimize norm1(conv(x, x))\n", "2:21",
     "conv: the kernel (first argument) must be a constant"},
    {"term_of_constant", "b = load(\"good.npy\")\nx = variable(4, 5)\nminimize norm1(grad(b)) + norm1(x)\n", "3:10",
     "the operand has no variable; a term must depend on a variable"},
    {"constant_overflows", "b = load(\"good.npy\")\nx = variable(4, 5)\nminimize norm1(1e30 * (1e30 + b) + x)\n",
     "3:21", "scale: the value of this constant expression is not finite in float32"},
    {"call_a_name", "x = variable(4, 5)\nminimize norm1(x(1))\n", "2:16", "'x' is a name, not a function"},
    {"bare_builtin", "x = variable(4, 5)\nminimize norm1(grad)\n", "2:16", "'grad' is a function; call it with (...)"},
    {"load_needs_string", "b = load(good)\nminimize norm1(b)\n", "1:10", "undefined name 'good'"},
    {"load_number", "b = load(3)\nminimize norm1(b)\n", "1:10", "load: the path must be a string"},
    {"deep_nesting", nullptr, "1:", "nested too deeply"},
    {"poisson_without_counts", "x = variable(4, 5)\nminimize poisson_norm(x)\n", "2:10", "poisson_norm needs the counts"},
    {"box_infeasible", "x = variable(4, 5)\nminimize box(x, lower=1, upper=0)\n", "2:10",
     "lower bound 1 is above upper bound 0"},
    {"huge_number", "x = variable(4, 5)\nminimize 1e999 * norm1(x)\n", "2:10", "number 1e999 is too large"},
    {"kernel_too_large", "k = load(\"good.npy\")\nx = variable(3, 3)\nminimize norm1(conv(k, x))\n", "3:16",
     "conv: kernel shape (4, 5) is larger than operand shape (3, 3)"},
    {"infinite_extent", "x = variable(inf, 4)\n", "1:14", "variable: each extent must be an integer, got inf"},
    {"term_factor_overflow", "x = variable(4)\nminimize 1e30 * (1e30 * norm1(x))\n", "2:15",
     "the factor of a function term overflows: 1e+30 * 1e+30 is beyond float32's range"},
    {"number_beyond_float32", "x = variable(4)\nminimize 1e300 * norm1(x)\n", "2:10",
     "1e300 is beyond float32's range (±3.4e38), in which proxc computes"},
    {"string_not_utf8", "solver = \"p\\xC0\\x80\"\n", "1:10",
     "the string is not UTF-8 text (byte 0xC0 at offset 1 of its value)"},
    {"path_with_nul", "b = load(\"good\\x00.npy\")\nx = variable(4, 5)\nminimize sum_squares(x - b)\n", "1:5",
     "the path \"good\\x00.npy\" contains a NUL byte"},
    {"raw_string_not_utf8", "solver = \"p\xFFq\"\n", "1:10",
     "the string is not UTF-8 text (byte 0xFF at offset 1 of its value)"},
};

class ErrorTest : public ::testing::TestWithParam<BadText> {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    io::write_npy(dir_ + "/good.npy", Array(Shape{4, 5}));
    io::write_npy(dir_ + "/k.npy", Array(Shape{3, 3}));
  }
  std::string dir_;
};

TEST_P(ErrorTest, ReportsLocatedUserError) {
  const BadText& c = GetParam();
  std::string text;
  if (c.text) {
    text = c.text;
  } else {  // deep_nesting
    text = "y = " + std::string(300, '(') + "1" + std::string(300, ')') + "\nx = variable(2)\nminimize norm1(x)\n";
  }
  std::string path = dir_ + "/bad.prox";
  test::write_text(path, text);
  std::string msg = test::user_error_of([&] { load_problem(path); });
  EXPECT_THAT(msg, ::testing::StartsWith(path + ":" + c.where)) << msg;
  EXPECT_THAT(msg, HasSubstr("error: "));
  EXPECT_THAT(msg, HasSubstr(c.message)) << msg;
  EXPECT_THAT(msg, HasSubstr("\n  ")) << "expected the source line:\n" << msg;
  EXPECT_THAT(msg, HasSubstr("^")) << "expected a caret under the source line:\n" << msg;
}

INSTANTIATE_TEST_SUITE_P(BadText, ErrorTest, ::testing::ValuesIn(kBadTexts),
                         [](const ::testing::TestParamInfo<BadText>& info) { return std::string(info.param.name); });

// ---- Data files ----

class BadData : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir(); }
  // Parses a problem that loads `file` and returns the error message.
  std::string error_loading(const std::string& file, const std::string& bytes) {
    test::write_text(dir_ + "/" + file, bytes);
    test::write_text(dir_ + "/p.prox", "b = load(\"" + file + "\")\nx = variable(shape(b))\nminimize sum_squares(x - b)\n");
    return test::user_error_of([&] { load_problem(dir_ + "/p.prox"); });
  }
  std::string npy_with_header(const std::string& dict, const std::string& payload) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + payload;
  }
  std::string dir_;
};

TEST_F(BadData, TruncatedNpy) {
  std::string full = io::encode_npy(Array(Shape{4, 5}));
  std::string msg = error_loading("t.npy", full.substr(0, full.size() - 7));
  EXPECT_THAT(msg, HasSubstr(dir_ + "/p.prox:1:5: error: "));
  EXPECT_THAT(msg, HasSubstr("t.npy"));
}

TEST_F(BadData, MalformedNpyMagic) {
  EXPECT_THAT(error_loading("m.npy", "not an npy file at all"), HasSubstr("m.npy"));
}

TEST_F(BadData, UnsupportedDtype) {
  std::string msg = error_loading("c.npy", npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
                                                            std::string(16, '\0')));
  EXPECT_THAT(msg, HasSubstr("unsupported dtype '<c8'"));
}

TEST_F(BadData, NanInData) {
  Array a(Shape{2, 3});
  a.data[4] = std::nanf("");
  std::string msg = error_loading("nan.npy", io::encode_npy(a));
  EXPECT_THAT(msg, HasSubstr("entry (1, 1) is NaN"));
}

TEST_F(BadData, InfInData) {
  Array a(Shape{2, 3});
  a.data[0] = -INFINITY;
  EXPECT_THAT(error_loading("inf.npy", io::encode_npy(a)), HasSubstr("entry (0, 0) is -Inf"));
}

TEST_F(BadData, AbsurdShapeRefusedBeforeAllocating) {
  std::string msg = error_loading(
      "big.npy", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 100000), }", ""));
  EXPECT_THAT(msg, HasSubstr("big.npy"));
}

TEST_F(BadData, TruncatedPngAndTiff) {
  EXPECT_THAT(error_loading("t.png", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16)), HasSubstr("t.png"));
  EXPECT_THAT(error_loading("t.tif", std::string("II*\0\x08\0\0\0", 8)), HasSubstr("t.tif"));
}

TEST_F(BadData, EmptyDataFile) { EXPECT_THAT(error_loading("e.npy", ""), HasSubstr("e.npy")); }

TEST_F(BadData, UnknownExtension) { EXPECT_THAT(error_loading("d.bmp", "BM"), HasSubstr("d.bmp")); }

// ---- JSON dumps ----

TEST(BadJson, ReportsPathAndField) {
  std::string dir = test::temp_dir();
  auto err = [&](const std::string& text) {
    test::write_text(dir + "/p.json", text);
    return test::user_error_of([&] { load_problem(dir + "/p.json"); });
  };
  EXPECT_THAT(err("{"), HasSubstr("p.json: invalid JSON"));
  EXPECT_THAT(err("[]"), HasSubstr("expected a JSON object"));
  EXPECT_THAT(err("{\"format\": \"other\"}"), HasSubstr("not a proxc problem"));
  EXPECT_THAT(err("{\"format\": \"proxc.problem\", \"version\": 9}"), HasSubstr("unsupported version 9"));
  EXPECT_THAT(err("{\"format\": \"proxc.problem\", \"version\": 1, \"nodes\": [{\"id\": 0, \"kind\": \"variable\", "
                  "\"shape\": [0]}], \"terms\": []}"),
              HasSubstr("nodes[0]: variable: extents must be positive"));
  EXPECT_THAT(err("{\"format\": \"proxc.problem\", \"version\": 1, \"nodes\": [{\"id\": 0, \"kind\": \"grad\", "
                  "\"shape\": [2], \"args\": [0], \"dims\": 1}], \"terms\": []}"),
              HasSubstr("nodes[0]: node reference 0 does not name an earlier node"));
  EXPECT_THAT(err("{\"format\": \"proxc.problem\", \"version\": 1, \"nodes\": [{\"id\": 0, \"kind\": \"variable\", "
                  "\"shape\": [2]}], \"terms\": [{\"function\": \"norm2\"}]}"),
              HasSubstr("terms[0]: unknown function \"norm2\""));
}

// Every input a fuzzer once crashed on (fuzz/regressions/<target>/) now gives
// a UserError or a problem, never a crash or an InternalError; a problem
// prints, and its text and JSON read back to the same text (the property the
// prox and json fuzz targets check).
TEST(FuzzRegressions, EveryFoundInputIsHandled) {
  namespace fs = std::filesystem;
  int checked = 0;
  for (const auto& target : fs::directory_iterator(test::source_dir() + "/fuzz/regressions")) {
    for (const auto& f : fs::directory_iterator(target.path())) {
      SCOPED_TRACE(f.path().string());
      std::string bytes = read_file(f.path().string());
      std::string kind = target.path().filename().string();
      try {
        if (kind == "json" || kind == "prox") {
          const Problem p = kind == "json" ? parse_json(bytes, "fuzz.json", "/nonexistent-fuzz-dir")
                                           : parse_program(bytes, "fuzz.prox", "/nonexistent-fuzz-dir").problem;
          const std::string text = print_text(p);
          try {
            EXPECT_EQ(print_text(parse_program(text, "printed.prox", "/nonexistent-fuzz-dir").problem), text);
            EXPECT_EQ(print_text(parse_json(print_json(p), "printed.json", "/nonexistent-fuzz-dir")), text);
          } catch (const UserError& e) {
            ADD_FAILURE() << "the printed problem does not read back: " << e.what() << "\n" << text;
          }
        } else if (kind == "npy") {
          io::parse_npy(bytes, "fuzz.npy");
        } else if (kind == "hdf5") {
          // As fuzz_hdf5 reads it: every dataset (a chunk shorter than a chunk once read past its buffer).
          for (const std::string& d : io::hdf5_datasets(bytes, "fuzz.h5", 8)) {
            try {
              io::decode_hdf5(bytes, d, "fuzz.h5");
            } catch (const UserError&) {
            }
          }
          io::encode_hdf5(&bytes, "/proxc/out", Array({2, 3}), "fuzz.h5");  // and a write, as fuzz_hdf5 does
        } else {
          ADD_FAILURE() << "unknown regression folder " << kind;
        }
      } catch (const UserError&) {
      } catch (const InternalError& e) {
        ADD_FAILURE() << e.what();
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(BadJson, ChangedDataFileIsDetectedByHash) {
  std::string dir = test::temp_dir();
  io::write_npy(dir + "/b.npy", Array(Shape{2, 2}));
  test::write_text(dir + "/p.prox", "b = load(\"b.npy\")\nx = variable(2, 2)\nminimize sum_squares(x - b)\n");
  JsonPrintOptions o;
  o.base_dir = dir;
  std::string json = print_json(load_problem(dir + "/p.prox"), o);
  test::write_text(dir + "/p.json", json);
  load_problem(dir + "/p.json");
  Array changed(Shape{2, 2});
  changed.data[0] = 1;
  io::write_npy(dir + "/b.npy", changed);
  EXPECT_THAT(test::user_error_of([&] { load_problem(dir + "/p.json"); }),
              HasSubstr("the file changed since the problem was saved"));
}

}  // namespace
}  // namespace proxc::internal
