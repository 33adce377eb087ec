// Properties of the rewriting passes: on random problems every pass
// preserves the objective (verified in double by the emulator), the text and
// JSON round trips hold after each pass, and resuming from any dump gives a
// final dump byte-identical to the uninterrupted run.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "frontend/parser.h"
#include "frontend/json.h"
#include "ir/printer.h"
#include "pipeline/pipeline.h"
#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using ::testing::HasSubstr;

// A random problem in .prox text over data files written to `dir`.
std::string random_problem(std::mt19937_64* rng) {
  auto r = [&](int n) { return static_cast<int>((*rng)() % static_cast<uint64_t>(n)); };
  const char* terms[] = {
      "sum_squares(x - b)",
      "sum_squares(conv(k, x) - b)",
      "sum_squares(mul_elemwise(m, x) - b, alpha=0.5)",
      "0.1 * norm1(grad(x))",
      "0.05 * group_norm1(grad(x), [2])",
      "nonneg(x)",
      "nonneg(mul_elemwise(w, x))",
      "sum_squares(x, gamma=0.3, d=1)",
      "0.2 * sum_squares(2 * x - 0.25)",
      "norm1(-3 * grad(x) + 0.5, beta=0.7, b=0.1)",
      "box(x, lower=-1, upper=2)",
      "0.3 * sum_squares(subsample(x, [2, 3]) - 0.5)",
      "sum_entries(x, c=0.25)",
      "poisson_norm(x + 1, c1)",
      "norm1(x - b, c=0.5, gamma=0.1)",
      // Affine residuals in every position (absorb normalises them all).
      "sum_squares(b - x)",
      "sum_squares(0.5 * (conv(k, x) - b))",
      "sum_squares(-(mul_elemwise(m, x) - b))",
      "sum_squares(b - mul_elemwise(m, x), c=w)",
      "sum_squares(conv(k, x - b) + 2, gamma=0.2, c=0.1)",
      "norm1(grad(2 * b - x) - 1, c=0.3, beta=2, b=0.5)",
      "sum_squares(x - conv(k, b) + 0.5 * m, c=w, gamma=0.3, d=2)",
      "0.5 * norm1(-(3 * (x - b) + w), b=m)",
  };
  std::string text =
      "b = load(\"b.npy\")\nk = load(\"k.npy\")\nm = load(\"m.npy\")\nw = load(\"w.npy\")\nc1 = load(\"c1.npy\")\n"
      "x = variable(9, 8)\nminimize ";
  int n = 1 + r(4);
  for (int i = 0; i < n; ++i) text += (i ? " + " : "") + std::string(terms[r(static_cast<int>(std::size(terms)))]);
  return text + "\n";
}

class RandomProblems : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir();
    std::mt19937_64 rng(4);
    std::uniform_real_distribution<float> u(0.1f, 1.0f);
    auto write = [&](const std::string& name, Shape s) {
      Array a(s);
      for (float& v : a.data) v = u(rng);
      io_write(dir_ + "/" + name, a);
    };
    write("b.npy", {9, 8});
    write("k.npy", {3, 3});
    write("m.npy", {9, 8});
    write("w.npy", {9, 8});
    write("c1.npy", {9, 8});
  }
  static void io_write(const std::string& path, const Array& a);
  std::string dir_;
};

}  // namespace
}  // namespace proxc::internal

#include "io/npy.h"

namespace proxc::internal {
namespace {

void RandomProblems::io_write(const std::string& path, const Array& a) { io::write_npy(path, a); }

TEST_F(RandomProblems, EveryPassPreservesTheObjectiveAndRoundTrips) {
  std::mt19937_64 rng(20261130);
  int verified = 0, scaled = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::string text = random_problem(&rng);
    SCOPED_TRACE(text);
    for (const std::string& solver : known_solvers()) {
      Problem cur = parse_program(text, "random.prox", dir_).problem;
      PassOptions o;
      o.solver = solver;
      o.operator_norm = operator_norm_oracle("bound");  // the scale pass's oracle (pipeline.h)
      for (const std::string& name : default_pipeline()) {
        Problem next;
        try {
          next = find_pass(name).run(cur, o);
        } catch (const UserError& e) {
          // No pass refuses these problems (absorb normalises every offset).
          ADD_FAILURE() << "pass " << name << " refused: " << e.what();
          break;
        }
        verify_passes_invariants(next);
        double err = objective_difference(cur, next);
        EXPECT_LE(err, kObjectiveTolerance) << "pass " << name << ", solver " << solver;
        ++verified;
        scaled += name == "scale";
        std::string t1 = print_text(next, {dir_});
        EXPECT_EQ(print_text(parse_program(t1, "printed.prox", dir_).problem, {dir_}), t1) << name;
        JsonPrintOptions jo;
        jo.base_dir = dir_;
        std::string j1 = print_json(next, jo);
        EXPECT_EQ(print_json(parse_json(j1, "dump.json", dir_), jo), j1) << name;
        cur = std::move(next);
      }
    }
  }
  // The property was checked on many pass runs, most problems reaching the end.
  EXPECT_GT(verified, 600);
  EXPECT_GT(scaled, 120);
}

TEST_F(RandomProblems, TheObjectiveCheckCatchesAWrongRewrite) {
  Problem p = parse_program("b = load(\"b.npy\")\nx = variable(9, 8)\nminimize sum_squares(x - b) + 0.1 * norm1(grad(x))\n",
                            "p.prox", dir_)
                  .problem;
  Problem wrong = p;
  wrong.terms[1].alpha = 0.1000001;  // a rewrite that is off by a relative 1e-6
  EXPECT_GT(objective_difference(p, wrong), kObjectiveTolerance);
  PassOptions bound;
  bound.operator_norm = operator_norm_oracle("bound");
  Problem unscaled = scale_pass(split_pass(absorb_pass(p, {}), {}), bound);
  unscaled.knorm = 1;  // forgetting the recorded factor changes the objective in user units
  EXPECT_GT(objective_difference(p, unscaled), kObjectiveTolerance);
}

TEST(Passes, ResumingFromAnyDumpGivesTheSameFinalDump) {
  namespace fs = std::filesystem;
  std::string root = test::temp_dir();
  PathPolicy::allow(test::source_dir() + "/examples");  // the dumps refer to the examples' data
  for (const char* example : {"deconv_tv.prox", "superres/superres.prox", "demosaic.prox"}) {
    SCOPED_TRACE(example);
    Problem p = parse_program_file(test::source_dir() + "/examples/" + example).problem;
    PassManagerOptions o;
    o.dump_dir = root + "/full";
    o.verify_each = true;
    run_passes(p, o);
    const auto pipeline = default_pipeline();
    std::string last = "0" + std::to_string(pipeline.size()) + "_" + pipeline.back() + ".json";
    std::string full = read_file(o.dump_dir + "/" + last);
    for (size_t k = 1; k < pipeline.size(); ++k) {
      std::string dump = o.dump_dir + "/0" + std::to_string(k) + "_" + pipeline[k - 1] + ".json";
      Problem mid = parse_json(read_file(dump), dump, o.dump_dir);
      PassManagerOptions r;
      r.dump_dir = root + "/resume" + std::to_string(k);  // a sibling: the same relative data paths
      run_passes(mid, r);
      EXPECT_EQ(read_file(r.dump_dir + "/" + last), full) << "resumed after " << dump;
      // The text dumps reload and continue too.
      std::string text_dump = dump.substr(0, dump.size() - 5) + ".prox";
      Problem from_text = parse_program_file(text_dump).problem;
      EXPECT_EQ(from_text.passes_run, mid.passes_run);
      EXPECT_EQ(print_text(run_passes(from_text, PassManagerOptions{})), print_text(run_passes(mid, PassManagerOptions{})));
    }
  }
}

TEST(Passes, PipelineMustContinueTheRecord) {
  Problem p = parse_program("x = variable(3)\nminimize sum_squares(x)\n", "p.prox", ".").problem;
  PassManagerOptions o;
  o.pipeline = {"absorb", "split"};
  Problem q = run_passes(p, o);
  EXPECT_EQ(q.passes_run, std::vector<std::string>({"absorb", "split"}));
  PassManagerOptions d;  // default pipeline: absorb, merge, ... does not continue [absorb, split]
  EXPECT_THAT(test::user_error_of([&] { run_passes(q, d); }), HasSubstr("do not start the pipeline"));
  // The passes that continue the record run after it, as a whole pipeline that starts with it does.
  PassManagerOptions first;
  first.pipeline = {"absorb", "merge"};
  Problem half = run_passes(p, first);
  PassManagerOptions rest, whole;
  rest.pipeline = {"split", "scale"};
  whole.pipeline = {"absorb", "merge", "split", "scale"};
  Problem a = run_passes(half, rest), b = run_passes(half, whole);
  EXPECT_EQ(a.passes_run, std::vector<std::string>({"absorb", "merge", "split", "scale"}));
  EXPECT_EQ(print_text(a), print_text(b));
  PassManagerOptions twice;
  twice.pipeline = {"merge", "split"};
  EXPECT_THAT(test::user_error_of([&] { run_passes(half, twice); }), HasSubstr("would run merge again"));
  o.pipeline = {"frobnicate"};
  EXPECT_THAT(test::user_error_of([&] { run_passes(p, o); }), HasSubstr("unknown pass 'frobnicate'"));
  PassManagerOptions s;
  s.pipeline = {"scale"};
  EXPECT_THAT(test::user_error_of([&] { run_passes(p, s); }), HasSubstr("run the split pass first"));
}

TEST(Passes, AbsorbMovesOffsetsScalesAndWeights) {
  std::string dir = test::temp_dir();
  Problem p = parse_program(
                  "b = array([2, 2], [1, 2, 3, 4])\nw = array([2, 2], [1, 2, 0.5, 3])\nx = variable(2, 2)\n"
                  "minimize sum_squares(x - b) + norm1(2 * grad(x) - 0.5) + nonneg(mul_elemwise(w, x))\n"
                  "  + sum_squares(-x + 1)\n",
                  "p.prox", dir)
                  .problem;
  Problem q = absorb_pass(p, PassOptions{});
  EXPECT_EQ(print_text(q),
            "passes_run = [\"absorb\"]\n"
            "x = variable(2, 2)\n"
            "b = array([2, 2], [1, 2, 3, 4])\n"
            "minimize least_squares(x, b=b)\n"
            "    + norm1(grad(x), beta=2, b=0.5)\n"
            "    + nonneg(x)\n"
            "    + least_squares(x, beta=-1, b=-1)\n");
  EXPECT_LE(objective_difference(p, q), kObjectiveTolerance);
}

// ProxImaL's absorb=False absorbs no operator but every offset (its Problem.solve
// runs absorb_offset on each function whatever absorb says): the offsets move
// into b, the scalings, weights and direct least squares stay.
TEST(Passes, AbsorbOfOffsetsOnlyLeavesTheOperators) {
  std::string dir = test::temp_dir();
  Problem p = parse_program(
                  "b = array([2, 2], [1, 2, 3, 4])\nw = array([2, 2], [1, 2, 0.5, 3])\nx = variable(2, 2)\n"
                  "minimize sum_squares(x - b) + norm1(2 * grad(x) - 0.5) + nonneg(mul_elemwise(w, x))\n"
                  "  + sum_squares(-2 * x - b)\n",
                  "p.prox", dir)
                  .problem;
  PassOptions offsets;
  offsets.absorb_operators = false;
  Problem q = absorb_pass(p, offsets);
  EXPECT_EQ(print_text(q),
            "passes_run = [\"absorb\"]\n"
            "x = variable(2, 2)\n"
            "b = array([2, 2], [1, 2, 3, 4])\n"
            "w = array([2, 2], [1, 2, 0.5, 3])\n"
            "minimize sum_squares(x, b=b)\n"
            "    + norm1(2 * grad(x), b=0.5)\n"
            "    + nonneg(mul_elemwise(w, x))\n"
            "    + sum_squares(-2 * x, b=b)\n");
  EXPECT_LE(objective_difference(p, q), kObjectiveTolerance);
  // After the scale pass absorb would strip the psi operands' 1/knorm: refused.
  PassOptions bound;
  bound.operator_norm = [](const Expr&) { return 2.0; };
  const Problem scaled = scale_pass(split_pass(absorb_pass(p, {}), {}), bound);
  EXPECT_THAT(test::user_error_of([&] { absorb_pass(scaled, offsets); }), HasSubstr("already scaled"));
}

TEST(Passes, AbsorbNormalisesEveryAffineResidual) {
  // Offsets in any position and sign, under scalings and linear operators,
  // end in b (and c, d) as constant expressions of the data, printed as such.
  std::string dir = test::temp_dir();
  Problem p = parse_program(
                  "b = array([2, 2], [1, 2, 3, 4])\nk = array([1, 2], [0.25, 0.75])\nx = variable(2, 2)\n"
                  "minimize sum_squares(b - x) + sum_squares(0.5 * (conv(k, x) - b)) + norm1(grad(x - b))\n"
                  "  + sum_squares(conv(k, x - b)) + sum_squares(x - conv(k, b) + 1, c=b, gamma=0.5)\n",
                  "p.prox", dir)
                  .problem;
  Problem q = absorb_pass(p, PassOptions{});
  EXPECT_EQ(print_text(q),
            "passes_run = [\"absorb\"]\n"
            "x = variable(2, 2)\n"
            "b = array([2, 2], [1, 2, 3, 4])\n"
            "k = array([1, 2], [0.25, 0.75])\n"
            "e = -conv(k, b) + 1\n"
            "minimize least_squares(x, beta=-1, b=-b)\n"
            "    + least_squares(conv(k, x), beta=0.5, b=0.5 * b)\n"
            "    + norm1(grad(x), b=grad(b))\n"
            "    + least_squares(conv(k, x), b=conv(k, b))\n"
            // e0 = 1 - conv(k, b) = [-0.25, -0.75, -2.25, -2.75]; d = <b, e0> + 0.5||e0||² = -19.5 + 6.625
            "    + sum_squares(x, b=-e, c=b + e, gamma=0.5, d=-12.875)\n");
  EXPECT_LE(objective_difference(p, q), kObjectiveTolerance);
  // The printed form parses back to the same problem.
  const std::string text = print_text(q, {dir});
  EXPECT_EQ(print_text(parse_program(text, "q.prox", dir).problem, {dir}), text);
}

TEST(Passes, MergeFoldsAPlainQuadratic) {
  Problem p = parse_program("x = variable(3)\nminimize nonneg(x) + 2 * sum_squares(x, b=1)\n", "p.prox", ".").problem;
  Problem q = merge_pass(p, PassOptions{});
  EXPECT_EQ(print_text(q),
            "passes_run = [\"merge\"]\n"
            "x = variable(3)\n"
            "minimize nonneg(x, c=-4, gamma=2, d=6)\n");
  EXPECT_LE(objective_difference(p, q), kObjectiveTolerance);
}

// A lone least-squares term is psi for every solver (ProxImaL partitions only
// problems of several functions), so K is never empty; beside another term it
// is omega (for admm because norm1(x)'s operator is Gram-diagonal too).
TEST(Passes, SplitKeepsALoneTermInPsi) {
  const std::string dir = test::temp_dir();
  Problem lone = absorb_pass(
      parse_program(
          "w = array([3], [2, 2, 2])\nx = variable(3)\nminimize sum_squares(mul_elemwise(w, x) - 1)\n",
          "p.prox", dir)
          .problem,
      {});
  Problem two = absorb_pass(
      parse_program("x = variable(3)\nminimize sum_squares(x - 1) + norm1(x)\n", "q.prox", dir).problem, {});
  ASSERT_EQ(lone.terms[0].kind, FunctionKind::LeastSquares);
  for (const char* solver : {"pc", "ladmm", "hqs", "admm"}) {
    PassOptions o;
    o.solver = solver;
    EXPECT_EQ(split_pass(lone, o).terms[0].role, TermRole::Psi) << solver;
    EXPECT_EQ(split_pass(two, o).terms[0].role, TermRole::Omega) << solver;
  }
}

// admm partitions as ProxImaL's admm.partition: when every term's operator is
// Gram-diagonal in the Fourier domain (or every one in space), the
// least_squares terms diagonal in that domain are omega, the domain with more
// of them winning, Fourier on a tie; never all of them. pc and ladmm take the
// least_squares terms diagonal in space, or in frequency where more are (space
// on a tie), when one direct solve takes them, else the first one, else the
// first function of the variable itself (ProxImaL's pock_chambolle.partition);
// hqs the first least_squares term.
TEST(Passes, SplitPartitionsAsProximal) {
  const std::string dir = test::temp_dir();
  const std::string decls =
      "k = array([3], [1, 2, 3])\nm = array([3], [1, 0, 2])\nb = array([3], [1, 2, 3])\ni = array([1, 2], "
      "[0, 2])\n"
      "x = variable(3)\n";
  struct Case {
    const char* objective;
    // The roles, 'o' omega and 'p' psi, in the terms' order.
    std::string admm, hqs, pc;
  };
  const Case cases[] = {
      // The first two as ProxImaL 0.1.7's admm.partition splits them (run in a scratch venv).
      {"nonneg(x) + sum_squares(conv(k, x) - b)", "po", "po", "po"},
      {"sum_squares(mul_elemwise(m, x) - b) + nonneg(x) + 0.1 * norm1(x)", "opp", "opp", "opp"},
      // grad is Gram-diagonal in neither domain: no omega for admm.
      {"sum_squares(x - b) + norm1(grad(x))", "pp", "op", "op"},
      // Fourier: both quadratics (x is diagonal there too; pc: ProxImaL's max_diag_set, more
      // there than in space); hqs takes the first only.
      {"sum_squares(x - b) + sum_squares(conv(k, x) - b) + norm1(x)", "oop", "opp", "oop"},
      // Two kernels: no one FFT solve for pc (the first alone); admm's x-update is then CG.
      {"sum_squares(conv(k, x) - b) + sum_squares(conv(m, x)) + norm1(x)", "oop", "opp", "opp"},
      // conv is not Gram-diagonal in space, mul_elemwise not in frequency (pc: space wins the tie).
      {"sum_squares(mul_elemwise(m, x) - b) + sum_squares(conv(k, x) - b) + nonneg(x)", "ppp", "opp", "opp"},
      {"sum_squares(conv(k, x) - b) + sum_squares(mul_elemwise(m, x) - b) + nonneg(x)", "ppp", "opp", "pop"},
      // Space: a subsample is Gram-diagonal there.
      {"norm1(subsample(x, [2])) + sum_squares(x - b)", "po", "po", "po"},
      {"norm1(uneven_subsample(x, i)) + sum_squares(x - b)", "po", "po", "po"},
      // A pure least-squares problem keeps a psi term (ProxImaL refuses it).
      {"sum_squares(x - b) + sum_squares(conv(k, x))", "pp", "op", "op"},
      // No least squares: pc and ladmm take the first function of x itself (its prox).
      {"norm1(grad(x)) + nonneg(x) + norm1(x)", "ppp", "ppp", "pop"},
      {"poisson_norm(conv(k, x), b) + nonneg(x)", "pp", "pp", "po"},
  };
  for (const Case& c : cases) {
    const Problem p =
        absorb_pass(parse_program(decls + "minimize " + c.objective + "\n", "p.prox", dir).problem, {});
    for (const char* solver : {"admm", "hqs", "pc", "ladmm"}) {
      PassOptions o;
      o.solver = solver;
      const Problem q = split_pass(p, o);
      std::string roles;
      for (const FunctionTerm& t : q.terms) {
        roles += t.role == TermRole::Omega ? 'o' : 'p';
        if (t.role == TermRole::Psi) EXPECT_NE(t.kind, FunctionKind::LeastSquares) << c.objective;
      }
      const std::string want = std::string(solver) == "admm"  ? c.admm
                               : std::string(solver) == "hqs" ? c.hqs
                                                              : c.pc;
      EXPECT_EQ(roles, want) << c.objective << " " << solver;
      EXPECT_EQ(passes_record_violation(q), "") << c.objective << " " << solver;
    }
  }
  // pc takes several omega terms only where one direct solve takes them.
  PassOptions o;
  o.solver = "pc";
  auto split = [&](const Case& c) {
    return split_pass(
        absorb_pass(parse_program(decls + "minimize " + c.objective + "\n", "p.prox", dir).problem, {}), o);
  };
  Problem two = split(cases[5]);  // mul_elemwise and conv
  two.terms[1].role = TermRole::Omega;
  two.terms[1].kind = FunctionKind::LeastSquares;
  EXPECT_THAT(passes_record_violation(two),
              HasSubstr("2 omega terms of one variable that one direct solve cannot take together"));
  two.solver = "admm";
  EXPECT_EQ(passes_record_violation(two), "");
  // A function of x itself as omega is for pc and ladmm only.
  Problem nonneg = split(cases[10]);  // norm1(grad(x)) + nonneg(x) + norm1(x)
  nonneg.solver = "admm";
  EXPECT_THAT(passes_record_violation(nonneg), HasSubstr("for admm only a least_squares term can be"));
}

// A user's split with an omega least squares of a vstack of parts of two
// variables (ProxImaL's sum_squares(vstack([x, y]), b)): one omega term per
// part, b sliced to each part's shape, the objective unchanged; the record
// check takes omega terms of one variable each, and refuses a term of two.
TEST(Passes, AStackedOmegaOfTwoVariablesSplitsIntoOneTermPerPart) {
  const std::string dir = test::temp_dir();
  const Problem p =
      absorb_pass(parse_program("x = variable(2)\ny = variable(1, 2)\nb = array([4], [1, 2, 3, 4])\n"
                                "minimize sum_squares(vstack([x, 2 * y]) - b) + nonneg(x)\n",
                                "p.prox", dir)
                      .problem,
                  {});
  for (const char* solver : {"pc", "ladmm", "admm", "hqs"}) {
    SCOPED_TRACE(solver);
    PassOptions o;
    o.solver = solver;
    o.roles = {TermRole::Omega, TermRole::Psi};
    const Problem q = split_pass(p, o);
    ASSERT_EQ(q.terms.size(), 3u);
    const std::vector<double> b0 = {1, 2}, b1 = {3, 4};
    for (size_t j = 0; j < 2; ++j) {
      const FunctionTerm& t = q.terms[j];
      EXPECT_EQ(t.role, TermRole::Omega);
      EXPECT_EQ(t.kind, FunctionKind::LeastSquares);
      ASSERT_TRUE(t.b.is_array());
      EXPECT_EQ(t.b.array->shape, j == 0 ? Shape{2} : Shape({1, 2}));
      const Array& values = t.b.array->constant->array;
      EXPECT_EQ(std::vector<double>(values.data.begin(), values.data.end()), j == 0 ? b0 : b1);
    }
    EXPECT_EQ(q.terms[2].role, TermRole::Psi);
    EXPECT_EQ(passes_record_violation(q), "");
    EXPECT_LT(objective_difference(p, q), 1e-12);
  }
  // A term of two variables as omega (a dump's roles) is named.
  PassOptions o;
  o.solver = "pc";
  o.roles = {TermRole::Omega, TermRole::Psi};
  Problem q = split_pass(p, o);
  q.terms.erase(q.terms.begin() + 1);
  q.terms[0].arg = p.terms[0].arg;
  EXPECT_THAT(passes_record_violation(q),
              HasSubstr("term 1 (least_squares) is omega and depends on 2 variables"));
}

}  // namespace
}  // namespace proxc::internal
