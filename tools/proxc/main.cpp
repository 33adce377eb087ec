// proxc: the command-line client of the proxc library.
//
// Exit codes: 0 ok, 1 a check failed, 2 user error, 3 internal error (a bug).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "check/check_command.h"
#include "emulate/emulate_backend.h"
#include "halide/halide_backend.h"
#include "passes/pass_manager.h"
#include "proxc/proxc.h"
#include "support/array.h"
#include "support/file_util.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitUserError = 2;
constexpr int kExitInternalError = 3;

struct CommonOptions {
  std::string max_memory;
};

// "4G", "512M", "100000" -> bytes.
int64_t parse_bytes(const std::string& s) {
  size_t idx = 0;
  double v = 0;
  try {
    v = std::stod(s, &idx);
  } catch (...) {
    throw proxc::UserError("--max-memory: expected a size such as 4G or 512M, got '" + s + "'");
  }
  std::string unit = s.substr(idx);
  double mult = unit.empty() || unit == "B" ? 1 : unit == "K" || unit == "KiB" ? 1024.0
                : unit == "M" || unit == "MiB" ? 1024.0 * 1024 : unit == "G" || unit == "GiB" ? 1024.0 * 1024 * 1024
                : -1;
  if (mult < 0 || !(v > 0)) throw proxc::UserError("--max-memory: expected a size such as 4G or 512M, got '" + s + "'");
  return static_cast<int64_t>(v * mult);
}

// Writes `text` to `out` (atomically) or to stdout when `out` is empty.
void emit(const std::string& text, const std::string& out) {
  if (out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    proxc::write_file_atomic(out, text);
  }
}

// The first line where two texts differ, for round-trip failures.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t line = 1, i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) {
    if (a[i] == '\n') ++line;
    ++i;
  }
  auto line_at = [](const std::string& s, size_t pos) {
    size_t start = s.rfind('\n', pos == 0 ? 0 : pos - 1);
    start = start == std::string::npos ? 0 : start + 1;
    size_t end = s.find('\n', pos);
    return s.substr(start, end == std::string::npos ? std::string::npos : end - start);
  };
  return "line " + std::to_string(line) + ":\n  first:  " + line_at(a, i) + "\n  second: " + line_at(b, i);
}

struct ParseCommand {
  std::string file;
  std::string emit_kind = "text";
  std::string output;
  bool verify_roundtrip = false;
  bool inline_constants = false;

  int run() const {
    proxc::Problem p = proxc::load_problem(file);
    std::string in_dir = std::filesystem::path(file).parent_path().string();
    if (in_dir.empty()) in_dir = ".";
    if (verify_roundtrip) {
      int rc = verify(p, in_dir);
      if (rc != kExitOk) return rc;
    }
    // Paths are written relative to where the output lands.
    std::string base = output.empty() ? "" : std::filesystem::path(output).parent_path().string();
    std::string text;
    if (emit_kind == "text") {
      text = proxc::print_text(p, {base});
    } else if (emit_kind == "json") {
      proxc::JsonPrintOptions o;
      o.base_dir = base;
      o.inline_constants = inline_constants;
      text = proxc::print_json(p, o);
    } else if (emit_kind == "dot") {
      text = proxc::print_dot(p);
    } else {
      text = proxc::print_latex(p);
    }
    emit(text, output);
    return kExitOk;
  }

  // print → parse → print must be byte-identical, in text and in JSON.
  static int verify(const proxc::Problem& p, const std::string& dir) {
    std::string text1 = proxc::print_text(p, {dir});
    std::string text2 = proxc::print_text(proxc::parse_program(text1, "<printed>", dir).problem, {dir});
    if (text1 != text2) {
      std::cerr << "proxc: round trip failed: print -> parse -> print differs at " << first_difference(text1, text2)
                << "\n";
      return kExitCheckFailed;
    }
    proxc::JsonPrintOptions o;
    o.base_dir = dir;
    std::string json1 = proxc::print_json(p, o);
    proxc::Problem from_json = proxc::parse_json(json1, "<printed json>", dir);
    std::string json2 = proxc::print_json(from_json, o);
    if (json1 != json2) {
      std::cerr << "proxc: round trip failed: JSON -> IR -> JSON differs at " << first_difference(json1, json2)
                << "\n";
      return kExitCheckFailed;
    }
    std::string text3 = proxc::print_text(from_json, {dir});
    if (text1 != text3) {
      std::cerr << "proxc: round trip failed: text of the JSON reload differs at " << first_difference(text1, text3)
                << "\n";
      return kExitCheckFailed;
    }
    std::cerr << "proxc: round trip ok (text and JSON)\n";
    return kExitOk;
  }
};

struct OptCommand {
  std::string file;
  std::string passes;
  std::string solver = "pc";
  std::string norm = "bound";
  std::string dump_dir;
  std::string output;
  std::string emit_kind = "text";
  bool print_after_all = false;
  bool verify_each = false;
  bool time_passes = false;

  int run() const {
    proxc::Problem p = proxc::load_problem(file);
    proxc::PassManagerOptions o;
    if (!passes.empty()) {
      size_t start = 0;
      while (start <= passes.size()) {
        size_t comma = passes.find(',', start);
        std::string name = passes.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!name.empty()) o.pipeline.push_back(name);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    proxc::check_solver_name(solver);
    o.pass.solver = solver;
    o.pass.norm = norm;
    o.dump_dir = dump_dir;
    o.print_after_all = print_after_all;
    o.verify_each = verify_each;
    o.time_passes = time_passes;
    o.log = &std::cerr;
    proxc::Problem out = proxc::run_passes(p, o);
    std::string base = output.empty() ? "" : std::filesystem::path(output).parent_path().string();
    if (emit_kind == "json") {
      proxc::JsonPrintOptions jo;
      jo.base_dir = base;
      emit(proxc::print_json(out, jo), output);
    } else {
      emit(proxc::print_text(out, {base}), output);
    }
    return kExitOk;
  }
};

struct CheckCommand {
  std::string file;
  std::string backend = "emulate";
  bool json = false;
  uint64_t seed = 1;
  std::string break_adjoint;  // testing the checker: break this operator kind's adjoint
  std::string target = "host";

  int run() const {
    proxc::Problem p = proxc::load_problem(file);
    proxc::emulate::EmulateDebug debug;
    if (!break_adjoint.empty()) {
      if (!proxc::expr_kind_from_string(break_adjoint, &debug.broken_kind)) {
        throw proxc::UserError("--debug-break-adjoint: unknown operator '" + break_adjoint + "'");
      }
      debug.break_adjoint = true;
    }
    std::unique_ptr<proxc::Backend> b;
    if (backend == "halide") {
      if (debug.break_adjoint) throw proxc::UserError("--debug-break-adjoint needs --backend emulate");
      proxc::HalideOptions ho;
      ho.target = target;
      b = proxc::make_halide_backend(ho);
    } else {
      b = proxc::make_emulate_backend(debug);
    }
    proxc::ProblemCheck c = proxc::check_problem(*b, p, seed);
    std::string text = json ? proxc::format_check_json(c) : proxc::format_check_text(c);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return c.passed ? kExitOk : kExitCheckFailed;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"proxc: a compiler for proximal image-optimization problems.\n"
               "Exit codes: 0 ok, 1 a check failed, 2 user error, 3 internal error (a bug)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "proxc 0.1.0");
  CommonOptions common;
  app.add_option("--max-memory", common.max_memory,
                 "Refuse any array larger than this (e.g. 4G, 512M); default: the machine's memory");

  ParseCommand parse;
  CLI::App* parse_cmd = app.add_subcommand("parse", "Parse a problem (.prox or .json) and print it in a chosen form");
  parse_cmd->fallthrough();
  parse_cmd->add_option("FILE", parse.file, "Problem file (.prox text or .json dump)")->required();
  parse_cmd->add_option("--emit", parse.emit_kind,
                        "Output form: text (canonical .prox), json, dot (operator DAG for Graphviz), "
                        "latex (the objective as an equation)")
      ->check(CLI::IsMember({"text", "json", "dot", "latex"}));
  parse_cmd->add_option("-o,--output", parse.output, "Write to this file (whole or not at all) instead of stdout");
  parse_cmd->add_flag("--verify-roundtrip", parse.verify_roundtrip,
                      "Check print -> parse -> print is byte-identical, in text and JSON (exit 1 if not)");
  parse_cmd->add_flag("--inline-constants", parse.inline_constants,
                      "With --emit json: store constants' values inline instead of by path and hash");

  OptCommand opt;
  CLI::App* opt_cmd = app.add_subcommand(
      "opt", "Run rewriting passes (absorb, merge, split, scale) on a problem or continue from a JSON dump");
  opt_cmd->fallthrough();
  opt_cmd->add_option("FILE", opt.file, "Problem file (.prox text or .json dump)")->required();
  opt_cmd->add_option("--passes", opt.passes, "Comma-separated passes to run (default: absorb,merge,split,scale)");
  opt_cmd->add_option("--solver", opt.solver, "Solver the split prepares for")
      ->check(CLI::IsMember({"pc", "ladmm", "admm", "hqs"}));
  opt_cmd->add_option("--norm", opt.norm, "How the scale pass gets ||K||: bound (ProxImaL's) or power")
      ->check(CLI::IsMember({"bound", "power"}));
  opt_cmd->add_option("--dump-ir", opt.dump_dir, "Write NN_<pass>.prox and NN_<pass>.json here after each pass");
  opt_cmd->add_flag("--print-after-all", opt.print_after_all, "Print the problem after each pass (stderr)");
  opt_cmd->add_flag("--verify-each", opt.verify_each,
                    "Verify the IR and that the objective is preserved after each pass");
  opt_cmd->add_flag("--time-passes", opt.time_passes, "Report each pass's time (stderr)");
  opt_cmd->add_option("--emit", opt.emit_kind, "Output form: text or json")->check(CLI::IsMember({"text", "json"}));
  opt_cmd->add_option("-o,--output", opt.output, "Write the result here instead of stdout");

  CheckCommand check;
  CLI::App* check_cmd = app.add_subcommand(
      "check", "Dot-test every operator and the whole K of a problem; estimate ||K|| (exit 1 if a check fails)");
  check_cmd->fallthrough();
  check_cmd->add_option("FILE", check.file, "Problem file (.prox text or .json dump)")->required();
  check_cmd->add_option("--backend", check.backend, "Backend that computes K and K' (emulate or halide)")
      ->check(CLI::IsMember({"emulate", "halide"}));
  check_cmd->add_option("--target", check.target, "Halide target string for --backend halide (host, host-cuda, ...)");
  check_cmd->add_flag("--json", check.json, "Print one JSON object instead of a table");
  check_cmd->add_option("--seed", check.seed, "Seed of the random test vectors");
  check_cmd->add_option("--debug-break-adjoint", check.break_adjoint,
                        "For testing the checker: compute this operator kind's adjoint wrongly")
      ->group("");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUserError;
  }
  try {
    if (!common.max_memory.empty()) proxc::Limits::set_max_array_bytes(parse_bytes(common.max_memory));
    if (parse_cmd->parsed()) return parse.run();
    if (check_cmd->parsed()) return check.run();
    if (opt_cmd->parsed()) return opt.run();
  } catch (const proxc::UserError& e) {
    std::cerr << e.what() << "\n";
    return kExitUserError;
  } catch (const proxc::InternalError& e) {
    std::cerr << e.what() << "\nPlease report this bug with the input that caused it.\n";
    return kExitInternalError;
  } catch (const std::bad_alloc&) {
    std::cerr << "proxc: out of memory\n";
    return kExitUserError;
  } catch (const std::exception& e) {
    std::cerr << "internal error (a bug in proxc): unexpected exception: " << e.what() << "\n";
    return kExitInternalError;
  }
  return kExitOk;
}
