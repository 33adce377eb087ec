// proxc: the command-line client of the proxc library.
//
// Exit codes: 0 ok, 1 a check failed, 2 user error, 3 internal error (a bug),
// 141 standard output closed by its reader, 128 + N stopped by signal N.

#include <poll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <system_error>

#include "batch.h"
#include "flags.h"
#include "preparing_line.h"
#include "proxc/proxc.h"
#include "report.h"
#include "signals.h"
#include "solve_output.h"

namespace {

using proxc_cli::add_halide_flags;
using proxc_cli::HalideFlags;
using proxc_cli::one_of;
using proxc_cli::parse_kind;
using proxc_cli::SolverFlags;

constexpr int kExitOk = 0;
constexpr int kExitCheckFailed = 1;
constexpr int kExitUserError = 2;
constexpr int kExitInternalError = 3;
// As a shell reports a command that SIGPIPE ended (128 + 13), which proxc
// ignores: `proxc parse p.prox | head -1` ends quietly, its files whole.
constexpr int kExitStdoutClosed = 141;

// Thrown when standard output's reader has gone: not the command's error.
struct StdoutClosed {};

// Whether standard output is a pipe or socket whose reader closed it.
bool stdout_reader_gone() {
  struct pollfd p {STDOUT_FILENO, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

struct CommonOptions {
  std::string max_memory;
  std::vector<std::string> allow_paths;
  std::vector<std::string> plugins;
};

// Flushes standard output; a UserError when what was written did not all
// arrive (a full disk, a closed descriptor), so that a truncated document
// never ends with exit 0.
void flush_stdout() {
  std::cout.flush();
  errno = 0;
  const bool ok = std::fflush(stdout) == 0 && !std::ferror(stdout) && std::cout.good();
  if (!ok) {
    const int err = errno;
    if (err == EPIPE || stdout_reader_gone()) throw StdoutClosed{};
    throw proxc::UserError(std::string("standard output: write failed") +
                           (err ? std::string(": ") + std::strerror(err) : std::string()));
  }
}

// An option that names a file or folder: an empty name is refused, not taken as "none".
const CLI::Validator kPath(
    [](std::string& s) { return s.empty() ? std::string("the path is empty") : std::string(); }, "PATH");

// Writes `text` to `out` (atomically) or to stdout when `out` is empty.
void emit(const std::string& text, const std::string& out) {
  if (out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    flush_stdout();
  } else {
    proxc::write_file(out, text);
  }
}

struct ParseCommand {
  std::string file;
  std::string emit_kind;  // empty: from -o's extension (problem_form)
  std::string output;
  bool verify_roundtrip = false;
  bool inline_constants = false;

  int run() const {
    const proxc::ProblemFormat form = proxc_cli::problem_form(emit_kind, output, true);
    proxc::Problem p = proxc::load_problem(file);
    proxc_cli::check_output_apart(p, file, output);
    std::string in_dir = std::filesystem::path(file).parent_path().string();
    if (in_dir.empty()) in_dir = ".";
    if (verify_roundtrip) {
      int rc = verify(p, in_dir);
      if (rc != kExitOk) return rc;
    }
    // Paths are written relative to where the output lands.
    proxc::PrintOptions o;
    o.base_dir = output.empty() ? "" : std::filesystem::path(output).parent_path().string();
    o.inline_constants = inline_constants;
    emit(p.print(form, o), output);
    return kExitOk;
  }

  // print → parse → print must be byte-identical, in text and in JSON.
  static int verify(const proxc::Problem& p, const std::string& dir) {
    proxc::PrintOptions o;
    o.base_dir = dir;
    std::string text1 = p.print(proxc::ProblemFormat::Text, o);
    std::string text2 = proxc::parse_problem(text1, "<printed>", dir).print(proxc::ProblemFormat::Text, o);
    if (text1 != text2) {
      std::cerr << "proxc: round trip failed: print -> parse -> print differs at "
                << proxc_cli::first_difference(text1, text2) << "\n";
      return kExitCheckFailed;
    }
    std::string json1 = p.print(proxc::ProblemFormat::Json, o);
    proxc::Problem from_json = proxc::parse_problem_json(json1, "<printed json>", dir);
    std::string json2 = from_json.print(proxc::ProblemFormat::Json, o);
    if (json1 != json2) {
      std::cerr << "proxc: round trip failed: JSON -> IR -> JSON differs at "
                << proxc_cli::first_difference(json1, json2) << "\n";
      return kExitCheckFailed;
    }
    std::string text3 = from_json.print(proxc::ProblemFormat::Text, o);
    if (text1 != text3) {
      std::cerr << "proxc: round trip failed: text of the JSON reload differs at "
                << proxc_cli::first_difference(text1, text3) << "\n";
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
  std::string emit_kind;  // empty: from -o's extension (problem_form)
  bool print_after_all = false;
  bool verify_each = false;
  bool time_passes = false;

  int run() const {
    const proxc::ProblemFormat form = proxc_cli::problem_form(emit_kind, output, false);
    proxc::Problem p = proxc::load_problem(file);
    proxc_cli::check_output_apart(p, file, output, dump_dir);
    proxc::PassOptions o;
    std::istringstream names(passes);  // comma-separated; empty names skipped
    for (std::string name; std::getline(names, name, ',');) {
      if (!name.empty()) o.pipeline.push_back(name);
    }
    o.solver = parse_kind<proxc::SolverKind>("--solver", "solver", solver);
    o.norm = parse_kind<proxc::NormKind>("--norm", "norm", norm);
    o.dump_dir = dump_dir;
    o.print_after_all = print_after_all;
    o.verify_each = verify_each;
    o.time_passes = time_passes;
    o.log = &std::cerr;
    proxc::Problem out = proxc::run_passes(p, o);
    proxc::PrintOptions po;
    po.base_dir = output.empty() ? "" : std::filesystem::path(output).parent_path().string();
    emit(out.print(form, po), output);
    return kExitOk;
  }
};

struct SolveCommand {
  std::string file;
  SolverFlags settings;
  std::string solver = "pc";
  std::string backend = "halide";
  HalideFlags halide;
  proxc::SolverOptions options;
  std::vector<std::string> outputs;
  std::string log;
  std::string report;
  int save_every = 0;
  std::string reference;
  std::string x0;
  std::vector<std::string> sets;
  bool json = false;
  bool full = false;
  bool batch = false;       // `proxc batch`: --set NAME=GLOB names the frames
  proxc_cli::Ranks ranks;   // batch: the MPI ranks sharing the frames; solve --distributed: the rows
  bool distributed = false;
  std::string out_dir;      // batch: -o DIR
  std::string format;       // batch: --format
  std::string h5_layout;    // --h5-layout: the storage of HDF5 outputs
  proxc::SaveOptions save;  // ... parsed

  int run() {
    auto t0 = std::chrono::steady_clock::now();
    proxc::Problem p = proxc::load_problem(file);
    proxc_cli::BatchJob job{file, "", "", out_dir, format, report, json};
    for (const std::string& s : sets) {
      auto eq = s.find('=');
      if (eq == std::string::npos || eq == 0)
        throw proxc::UserError("--set expects NAME=FILE, got '" + s + "'");
      if (batch && proxc_cli::is_glob(s.substr(eq + 1))) {
        if (!job.name.empty()) throw proxc::UserError("--set: one pattern names the frames; got two (" + job.name + ", " + s.substr(0, eq) + ")");
        job.name = s.substr(0, eq);
        job.pattern = s.substr(eq + 1);
        continue;
      }
      try {
        p.set_constant(s.substr(0, eq), s.substr(eq + 1));
      } catch (const proxc::UserError& e) {
        throw proxc::UserError(proxc_cli::as_flag(e.what(), "set_constant", "--set"));
      }
    }
    double parse_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<proxc::Expr> vars = p.variables();
    if (!x0.empty()) {
      if (vars.size() != 1) throw proxc::UserError("--x0 needs a problem with one variable");
      options.x0[vars[0].name()] = proxc::load_array(x0);
    }
    options.solver = parse_kind<proxc::SolverKind>("--solver", "solver", solver);
    settings.apply(&options);
    options.backend = parse_kind<proxc::BackendKind>("--backend", "backend", backend);
    options.schedule = parse_kind<proxc::ScheduleKind>("--schedule", "schedule", halide.schedule);
    options.target = halide.target;
    options.cache_dir = halide.cache_dir;
    options.snapshot_every = save_every;
    if (distributed) options.communicator = proxc_cli::communicator(ranks);
    options.validate(proxc::OptionSpelling::CommandLine);
    if (batch) {
      if (job.name.empty()) {
        throw proxc::UserError(
            "batch needs --set NAME=GLOB: a pattern (*, ?, [...]) naming the frames' files" +
            (sets.empty() ? std::string() : "; --set " + sets.back() + " names one file"));
      }
      proxc_cli::handle_stop_signals();
      options.interrupt = &proxc_cli::g_interrupted;
      options.started = proxc_cli::iterations_started;
      if (ranks.size > 1) proxc_cli::iterations_started();
      const int rc = proxc_cli::run_batch(p, options, job, ranks, &proxc_cli::g_signal);
      flush_stdout();
      return rc;
    }
    // Every output is checked before the solve, not found unwritable after it.
    const std::vector<std::pair<std::string, std::string>> files = proxc_cli::output_files(p, outputs);
    check_h5_layout(files);
    for (const auto& [name, f] : files) {
      for (const proxc::Expr& v : vars)
        if (p.name_of(v) == name) proxc::check_save_path(f, v.shape(), save_options(f));
    }
    if (!report.empty()) proxc_cli::check_report_dir(report);
    add_snapshots(files);
    // --log: the objective at every check, and PSNR and SSIM against --reference.
    std::vector<std::pair<double, double>> quality;
    const proxc::Array ref = reference.empty() ? proxc::Array() : proxc_cli::load_reference(reference, vars);
    if (!log.empty()) proxc::check_writable(log);
    options.objective_each_check = !log.empty() || !report.empty();
    if (!log.empty() && !reference.empty()) {
      options.iterate_callback = [&](const proxc::IterationInfo&, const std::map<std::string, proxc::Array>& x) {
        quality.emplace_back(proxc::psnr(x.begin()->second, ref), proxc::ssim(x.begin()->second, ref));
        return true;
      };
    }
    if (!options.checkpoint_path.empty()) {
      try {
        proxc::check_writable(options.checkpoint_path);
      } catch (const proxc::UserError& e) {
        throw proxc::UserError(std::string("--checkpoint: ") + e.what());
      }
    }
    const proxc::Shape ref_shape = ref.shape();
    proxc_cli::check_solve_files(
        p, {file, x0, reference, options.resume_path, log, options.checkpoint_path, files, save_every,
            options.max_iters,
            report.empty()
                ? std::vector<std::string>{}
                : proxc_cli::solve_report_files(report, p, reference.empty() ? nullptr : &ref_shape)});
    proxc_cli::handle_stop_signals();
    options.interrupt = &proxc_cli::g_interrupted;
    if (isatty(STDERR_FILENO) && !json) {
      options.callback =
          [this, last = std::chrono::steady_clock::time_point()](const proxc::IterationInfo& i) mutable {
            auto now = std::chrono::steady_clock::now();
            if (now - last > std::chrono::milliseconds(100)) {
              last = now;
              std::fprintf(stderr, "\r  iteration %d/%d  r %.2e (eps %.2e)  s %.2e (eps %.2e)   ",
                           i.iteration, options.max_iters, i.r, i.eps_pri, i.s, i.eps_dual);
            }
            return true;
          };
    }
    proxc_cli::PreparingLine preparing(isatty(STDERR_FILENO) && !json && ranks.rank == 0);
    options.started = [&preparing] {
      proxc_cli::iterations_started();
      preparing.stop();
    };
    proxc::SolverSummary summary = proxc::solve(p, options);
    preparing.stop();
    if (options.callback) std::fprintf(stderr, "\r%80s\r", "");
    if (ranks.rank != 0) return kExitOk;  // --distributed: rank 0 has the result and reports
    summary.parse_s = parse_s;
    if (!full || json)  // (--full's report lists them)
      for (const std::string& w : summary.warnings) std::fprintf(stderr, "proxc: warning: %s\n", w.c_str());
    std::map<std::string, proxc::Expr> by_name;
    for (const proxc::Expr& v : vars) by_name.emplace(p.name_of(v), v);
    std::vector<std::string> written;
    for (const auto& [name, f] : files) {
      proxc::save_array(f, p.value(by_name.at(name)), save_options(f));
      written.push_back(f);
    }
    if (!log.empty()) proxc::write_file(log, proxc_cli::log_csv(summary, quality));
    double ps = 0, ss = 0;
    if (!reference.empty()) {
      const proxc::Array x = p.value(vars[0]);
      ps = proxc::psnr(x, ref);
      ss = proxc::ssim(x, ref);
    }
    if (!report.empty()) proxc_cli::write_solve_report(report, file, p, summary, written, reference, ps, ss);
    if (json) {
      std::string j = summary.to_json();
      if (!reference.empty()) {
        j.pop_back();  // the closing brace
        while (!j.empty() && (j.back() == '\n' || j.back() == ' ')) j.pop_back();
        char buf[128];
        std::snprintf(buf, sizeof buf, ",\n \"psnr\": %.6f,\n \"ssim\": %.6f\n}", ps, ss);
        j += buf;
      }
      std::cout << j << "\n";
    } else {
      std::cout << (full ? summary.full_report() : summary.brief_report() + "\n");
      if (!reference.empty()) std::printf("PSNR %.2f dB, SSIM %.4f against %s\n", ps, ss, reference.c_str());
      // The files written, by their real names (one per variable).
      if (!written.empty()) std::printf("wrote %s\n", proxc_cli::join_names(written).c_str());
      if (!report.empty()) std::printf("report %s/index.html\n", report.c_str());
    }
    flush_stdout();
    if (proxc_cli::stop_signal() != 0)
      return 128 + proxc_cli::stop_signal();  // stopped by a signal: not a finished run
    return summary.termination == proxc::Termination::Diverged ? kExitCheckFailed : kExitOk;
  }

  // --h5-layout: parsed, and refused when no output is an HDF5 dataset (it
  // would be ignored).
  void check_h5_layout(const std::vector<std::pair<std::string, std::string>>& files) {
    if (h5_layout.empty()) return;
    save = proxc::parse_save_options(h5_layout, "--h5-layout");
    for (const auto& [name, f] : files)
      if (proxc::is_hdf5_path(f)) return;
    throw proxc::UserError("--h5-layout " + h5_layout + ": no -o is an HDF5 dataset (result.h5:/recon); the layout " +
                           "is HDF5 storage");
  }

  // The storage of output `f`: --h5-layout's for HDF5 datasets, the format's own for others.
  proxc::SaveOptions save_options(const std::string& f) const {
    return proxc::is_hdf5_path(f) ? save : proxc::SaveOptions();
  }

  // --save-every N: each output's snapshot after every N iterations, named after it.
  void add_snapshots(const std::vector<std::pair<std::string, std::string>>& files) {
    if (options.snapshot_every <= 0) return;
    if (files.empty()) throw proxc::UserError("--save-every needs -o: the snapshots are named after the output");
    options.snapshot_every = save_every;
    options.snapshot_callback = [files, this](int iteration, const std::map<std::string, proxc::Array>& x) {
      for (const auto& [name, f] : files) {
        proxc::save_array(proxc_cli::snapshot_path(f, iteration, options.max_iters), x.at(name), save_options(f));
      }
    };
  }
};

struct CompileCommand {
  std::string file;
  std::string solver = "pc";
  std::string emit_kind;
  HalideFlags halide;
  std::string output;
  std::string aot_dir;
  std::string aot_name = "proxc_step";
  std::string program = "iteration";
  int fuse = 1;

  int run() const {
    proxc::Problem p = proxc::load_problem(file);
    proxc_cli::check_output_apart(p, file, output);
    proxc::CompileOptions o;
    o.solver = parse_kind<proxc::SolverKind>("--solver", "solver", solver);
    o.program = parse_kind<proxc::ProgramKind>("--program", "program", program);
    o.fuse = fuse;
    o.target = halide.target;
    o.schedule = parse_kind<proxc::ScheduleKind>("--schedule", "schedule", halide.schedule);
    o.cache_dir = halide.cache_dir;
    proxc_cli::check_compile_flags(o);
    proxc::Module m = proxc::compile(p, o);
    if (!aot_dir.empty()) {
      proxc::AotArtifacts a = m.compile_aot(aot_dir, aot_name);
      std::printf("wrote %s, %s, %s and %s\n", a.library.c_str(), a.header.c_str(), a.wrapper.c_str(),
                  a.manifest.c_str());
      if (a.needs_fft_runtime)
        std::puts("the pipeline has FFT solves: link proxc::runtime too (libproxc_runtime.a -lfftw3f_threads "
                  "-lfftw3f -ldl)");
      auto user_code = [](const char* what, const std::vector<std::string>& names) {
        if (names.empty()) return;
        std::printf("the pipeline calls %s:", what);
        for (const std::string& n : names) std::printf(" %s", n.c_str());
        std::printf("; link proxc::runtime (libproxc_runtime.a), and register them before the first call\n");
      };
      user_code("black-box operators", a.black_boxes);
      user_code("prox functions of your own", a.prox_fns);
      return kExitOk;
    }
    if (!emit_kind.empty()) {
      emit(m.emit(parse_kind<proxc::ProgramFormat>("--emit", "form", emit_kind)), output);
    } else {
      proxc::CompileReport r = m.compile();
      std::printf(
          "compiled %s (%zu outputs) for %s, schedule %s, in %.3f s: %d pipeline%s compiled, %d loaded from "
          "the on-disk cache (%s)\n",
          m.name().c_str(), m.outputs().size(), halide.target.c_str(), proxc::to_string(r.schedule_used),
          r.seconds, r.pipelines_compiled, r.pipelines_compiled == 1 ? "" : "s", r.pipelines_loaded,
          r.cache_dir.empty() ? "off" : r.cache_dir.c_str());
    }
    return kExitOk;
  }
};

struct MontageCommand {
  std::vector<std::string> images;
  std::string output;
  int run() const {
    proxc_cli::check_images_apart(images, output);
    std::vector<proxc::Array> arrays;
    for (const std::string& f : images) arrays.push_back(proxc::load_array(f));
    proxc::Array m = proxc::montage(arrays, images);
    proxc::save_array(output, m);
    std::printf("wrote %s (%s: %zu images side by side)\n", output.c_str(),
                proxc::shape_to_string(m.shape()).c_str(), images.size());
    return kExitOk;
  }
};

struct MetricsCommand {
  std::string image, reference;
  int run() const {
    proxc::Array x = proxc::load_array(image), ref = proxc::load_array(reference);
    std::printf("PSNR %.2f dB, SSIM %.4f (%s against %s)\n", proxc::psnr(x, ref), proxc::ssim(x, ref),
                image.c_str(), reference.c_str());
    return kExitOk;
  }
};

struct CheckCommand {
  std::string file;
  std::string backend = "emulate";
  bool json = false;
  proxc::CheckOptions options;

  int run() {
    proxc::Problem p = proxc::load_problem(file);
    options.backend = parse_kind<proxc::BackendKind>("--backend", "backend", backend);
    proxc::CheckReport c = proxc::check(p, options);
    const std::string& text = json ? c.json : c.text;
    std::fwrite(text.data(), 1, text.size(), stdout);
    return c.passed ? kExitOk : kExitCheckFailed;
  }
};

// The `parse` subcommand and its options.
CLI::App* add_parse(CLI::App& app, ParseCommand& parse) {
  CLI::App* parse_cmd =
      app.add_subcommand("parse", "Parse a problem (.prox or .json) and print it in a chosen form");
  parse_cmd->fallthrough();
  parse_cmd->add_option("FILE", parse.file, "Problem file (.prox text or .json dump)")->required();
  parse_cmd
      ->add_option("--emit", parse.emit_kind,
                   "Output form: text (canonical .prox), json, dot (operator DAG for Graphviz), "
                   "latex (the objective as an equation); default: -o's extension (.prox, .json, .dot, "
                   ".gv, .tex), else text")
      ->check(one_of<proxc::ProblemFormat>());
  parse_cmd
      ->add_option("-o,--output", parse.output, "Write to this file (whole or not at all) instead of stdout")
      ->check(kPath);
  parse_cmd->add_flag("--verify-roundtrip", parse.verify_roundtrip,
                      "Check print -> parse -> print is byte-identical, in text and JSON (exit 1 if not)");
  parse_cmd->add_flag("--inline-constants", parse.inline_constants,
                      "With --emit json: store constants' values inline instead of by path and hash");

  return parse_cmd;
}

// The `opt` subcommand and its options.
CLI::App* add_opt(CLI::App& app, OptCommand& opt) {
  CLI::App* opt_cmd = app.add_subcommand(
      "opt", "Run rewriting passes (absorb, merge, split, scale) on a problem or continue from a JSON dump");
  opt_cmd->fallthrough();
  opt_cmd->add_option("FILE", opt.file, "Problem file (.prox text or .json dump)")->required();
  opt_cmd->add_option("--passes", opt.passes,
                      "Comma-separated passes to run (default: absorb,merge,split,scale)");
  opt_cmd->add_option("--solver", opt.solver, "Solver the split prepares for")
      ->check(one_of<proxc::SolverKind>());
  opt_cmd
      ->add_option(
          "--norm", opt.norm,
          "How the scale pass gets ||K||: bound (ProxImaL's) or power (estimated: Lanczos iteration)")
      ->check(one_of<proxc::NormKind>());
  opt_cmd
      ->add_option("--dump-ir", opt.dump_dir, "Write NN_<pass>.prox and NN_<pass>.json here after each pass")
      ->check(kPath);
  opt_cmd->add_flag("--print-after-all", opt.print_after_all, "Print the problem after each pass (stderr)");
  opt_cmd->add_flag("--verify-each", opt.verify_each,
                    "Verify the IR and that the objective is preserved after each pass");
  opt_cmd->add_flag("--time-passes", opt.time_passes, "Report each pass's time (stderr)");
  opt_cmd
      ->add_option("--emit", opt.emit_kind,
                   "Output form: text or json (default: json for -o *.json, else text)")
      ->check(CLI::IsMember({"text", "json"}));
  opt_cmd->add_option("-o,--output", opt.output, "Write the result here instead of stdout")->check(kPath);

  return opt_cmd;
}

// Each solver's settings, by ProxImaL's names (docs/solvers.md).
void add_solver_settings(CLI::App* cmd, SolverFlags* f, proxc::SolverOptions* o) {
  auto group = [&](const char* name, const char* help, double* v) {
    cmd->add_option(name, *v, help)->group("Solver settings")->check(proxc_cli::kFinite);
  };
  group("--tau", "pc: primal step (default 1/sigma; tau * sigma <= 1)", &f->tau);
  group("--sigma", "pc: dual step (default 1, or 1/tau)", &f->sigma);
  group("--theta", "pc: extrapolation, in [0, 1] (default 1)", &f->theta);
  group("--lmb", "ladmm: lambda (default 1)", &f->lmb);
  group("--mu", "ladmm: mu, at most lambda (default lambda)", &f->mu);
  group("--rho", "admm: penalty (default 1)", &f->rho);
  cmd->add_flag(
         "--adaptive", f->adaptive,
         "pc, ladmm, admm: adapt the step sizes at the checks (pc's and ladmm's default; docs/solvers.md)")
      ->group("Solver settings")
      ->disable_flag_override();
  cmd->add_flag("--fixed-steps", f->fixed_steps, "pc, ladmm: keep the step sizes fixed (ProxImaL's)")
      ->group("Solver settings")
      ->disable_flag_override();
  group("--rho-0", "hqs: first penalty of the continuation (default 1)", &f->rho_0);
  group("--rho-scale", "hqs: factor between penalties (default 2*sqrt(2))", &f->rho_scale);
  group("--rho-max,--hqs-rho-max", "hqs: last penalty (default 256)", &f->rho_max);
  cmd->add_option("--max-inner-iters", f->max_inner_iters,
                  "hqs: most iterations per penalty (default: --iters spread over the penalties)")
      ->group("Solver settings");
  cmd->add_option("--cg-iters", o->cg_max_iters, "admm, hqs: most CG steps per x-update (default 50)")
      ->group("Solver settings");
  cmd->add_option("--cg-tol", o->cg_tol, "admm, hqs: CG relative tolerance (default 1e-6)")
      ->group("Solver settings")
      ->check(proxc_cli::kFinite);
  // ProxImaL's Problem(absorb=, merge=, try_diagonalize=, try_fast_norm=).
  cmd->add_flag("!--no-absorb", o->absorb,
                "Absorb only offsets into the functions, no operators (ProxImaL's absorb=False)")
      ->group("Passes");
  cmd->add_flag("!--no-merge", o->merge, "Skip the merge pass (merge=False)")->group("Passes");
  cmd->add_flag("!--no-diagonalize", o->diagonalize, "No direct least-squares solves (try_diagonalize=False)")
      ->group("Passes");
  cmd->add_option("--norm", f->norm, "||K|| for the scale pass: bound (default; try_fast_norm=True) or power")
      ->check(one_of<proxc::NormKind>())
      ->group("Passes");
}

// The `solve` subcommand and its options.
// The options `solve` and `batch` share.
void add_solve_common(CLI::App* solve_cmd, SolveCommand& solve) {
  solve_cmd->fallthrough();
  solve_cmd->add_option("FILE", solve.file, "Problem file (.prox text or .json dump)")->required();
  solve_cmd->add_option("--solver", solve.solver, "pc (Pock-Chambolle), ladmm, admm or hqs")
      ->check(one_of<proxc::SolverKind>());
  solve_cmd->add_option("--backend", solve.backend, "halide (compiled) or emulate (reference interpreter)")
      ->check(one_of<proxc::BackendKind>());
  add_halide_flags(solve_cmd, &solve.halide);
  solve_cmd->add_option("--iters", solve.options.max_iters, "Most iterations (default 1000)");
  solve_cmd->add_option("--eps-abs", solve.options.eps_abs,
                        "Absolute tolerance (default 3e-6; 0 with --eps-rel 0: "
                        "run exactly --iters)");
  solve_cmd->add_option("--eps-rel", solve.options.eps_rel, "Relative tolerance (default 3e-6)");
  solve_cmd->add_option("--time-limit", solve.options.time_limit_s,
                        "Stop after this many seconds of iterating");
  solve_cmd->add_option("--fuse", solve.options.fuse, "Iterations unrolled into one pipeline (pc, ladmm)");
  solve_cmd->add_option(
      "--check-every", solve.options.check_every,
      "Check convergence every N iterations and after the last (default 10; 1: every iteration)");
  add_solver_settings(solve_cmd, &solve.settings, &solve.options);
  solve_cmd
      ->add_option("--set", solve.sets,
                   solve.batch ? "NAME=GLOB: the frames (one solve per matching file); NAME=FILE: data for every frame"
                               : "NAME=FILE: replace a constant's data without recompiling; repeatable")
      ->allow_extra_args(false);
  solve_cmd->add_flag("--json", solve.json, solve.batch ? "Print one JSON object: a summary per frame"
                                                        : "Print the summary as one JSON object");
}

// `proxc batch`: the problem compiled once, solved per frame.
CLI::App* add_batch(CLI::App& app, SolveCommand& batch) {
  batch.batch = true;
  CLI::App* cmd = app.add_subcommand(
      "batch", "Solve a problem once per file a pattern matches (--set NAME=GLOB), compiling once");
  add_solve_common(cmd, batch);
  cmd->add_option("-o,--output", batch.out_dir, "Folder for the results, named after their inputs")->check(kPath);
  cmd->add_option("--format", batch.format, "The results' format: npy, png or tif (default: the input's)");
  cmd->add_option("--report", batch.report, "Write DIR/index.html: a row per frame")->check(kPath);
  return cmd;
}

// The `solve` subcommand and its options.
CLI::App* add_solve(CLI::App& app, SolveCommand& solve) {
  CLI::App* solve_cmd = app.add_subcommand("solve", "Solve a problem and write the result");
  add_solve_common(solve_cmd, solve);
  solve_cmd
      ->add_option("-o,--output", solve.outputs,
                   "Write the result (.npy, .png, .tif, .h5:/DATASET); NAME=FILE per variable; repeatable")
      ->check(kPath)
      ->allow_extra_args(false);
  solve_cmd->add_option("--save-every", solve.save_every, "Write the iterate every N iterations (OUT_iterNNNN)");
  solve_cmd->add_option("--h5-layout", solve.h5_layout,
                        "Store HDF5 outputs so: chunks=AxB|auto, gzip[=1..9], shuffle (comma-separated)");
  solve_cmd->add_option("--report", solve.report, "Write DIR/index.html: images, convergence plot, times")
      ->check(kPath);
  solve_cmd->add_option("--log", solve.log, "Write one CSV row per convergence check")->check(kPath);
  solve_cmd->add_option("--reference", solve.reference, "Ground truth: print PSNR and SSIM")->check(kPath);
  solve_cmd->add_option("--x0", solve.x0, "Start from this array (user units)")->check(kPath);
  solve_cmd
      ->add_option("--checkpoint", solve.options.checkpoint_path, "Save the whole solver state to this file")
      ->check(kPath);
  solve_cmd->add_option("--checkpoint-every", solve.options.checkpoint_every,
                        "... at the first check N iterations after the last save (and at the end)");
  solve_cmd
      ->add_option("--resume", solve.options.resume_path,
                   "Continue from a checkpoint of the same problem and solver")
      ->check(kPath);
  solve_cmd->add_flag("--full", solve.full, "Print the full report");
  solve_cmd->add_flag("--distributed", solve.distributed,
                      "Under mpirun: the ranks share the rows of one problem (docs/distributed.md)");
  return solve_cmd;
}

// The `compile` subcommand and its options.
CLI::App* add_compile(CLI::App& app, CompileCommand& compile) {
  CLI::App* compile_cmd = app.add_subcommand(
      "compile",
      "Lower one solver iteration to a step program and a fused Halide pipeline; JIT-compile or print it");
  compile_cmd->fallthrough();
  compile_cmd->add_option("FILE", compile.file, "Problem file (.prox text or .json dump)")->required();
  compile_cmd->add_option("--solver", compile.solver, "pc, ladmm, admm or hqs")
      ->check(one_of<proxc::SolverKind>());
  compile_cmd->add_option("--fuse", compile.fuse, "Iterations unrolled into the pipeline (pc, ladmm)");
  compile_cmd
      ->add_option("--program", compile.program,
                   "Which program: iteration (default), or a CG x-update's cg_init, cg_apply, cg_update "
                   "(admm, hqs)")
      ->check(one_of<proxc::ProgramKind>());
  compile_cmd
      ->add_option("--emit", compile.emit_kind,
                   "Print instead of compiling: step (the step program), source (a standalone C++ Halide "
                   "generator program building the same pipeline), stmt (Halide's lowered statement), "
                   "c (Halide's C output), html")
      ->check(one_of<proxc::ProgramFormat>());
  add_halide_flags(compile_cmd, &compile.halide);
  compile_cmd->add_option("-o,--output", compile.output, "Write the printed form here")->check(kPath);
  compile_cmd
      ->add_option("--aot", compile.aot_dir,
                   "Compile ahead of time into this folder: <name>.a, <name>.h, <name>_call.h, <name>.json")
      ->check(kPath);
  compile_cmd->add_option("--name", compile.aot_name, "Function name for --aot (default proxc_step)");

  return compile_cmd;
}

// The `check` subcommand and its options.
CLI::App* add_check(CLI::App& app, CheckCommand& check) {
  CLI::App* check_cmd = app.add_subcommand(
      "check",
      "Dot-test every operator and the whole K of a problem; estimate ||K|| (exit 1 if a check fails)");
  check_cmd->fallthrough();
  check_cmd->add_option("FILE", check.file, "Problem file (.prox text or .json dump)")->required();
  check_cmd->add_option("--backend", check.backend, "Backend that computes K and K' (emulate or halide)")
      ->check(one_of<proxc::BackendKind>());
  check_cmd->add_option("--target", check.options.target,
                        "Halide target string for --backend halide (host, host-cuda, ...)");
  check_cmd->add_flag("--json", check.json, "Print one JSON object instead of a table");
  check_cmd->add_option("--seed", check.options.seed, "Seed of the random test vectors");
  check_cmd
      ->add_option("--debug-break-adjoint", check.options.debug_break_adjoint,
                   "For testing the checker: compute this operator kind's adjoint wrongly")
      ->group("");

  return check_cmd;
}

// The `montage` and `metrics` subcommands.
std::pair<CLI::App*, CLI::App*> add_image_commands(CLI::App& app, MontageCommand& montage,
                                                   MetricsCommand& metrics) {
  CLI::App* montage_cmd =
      app.add_subcommand("montage", "Put images side by side (clamped to [0, 1]) in one image");
  montage_cmd->add_option("IMAGES", montage.images, "Images (.npy, .png, .tif) of the same height")
      ->required();
  montage_cmd->add_option("-o,--output", montage.output, "The side-by-side image (.png, .tif, .npy)")
      ->required()
      ->check(kPath);
  CLI::App* metrics_cmd = app.add_subcommand("metrics", "PSNR and SSIM of an image against a reference");
  metrics_cmd->add_option("IMAGE", metrics.image, "Image (.npy, .png, .tif)")->required();
  metrics_cmd->add_option("REFERENCE", metrics.reference, "Ground truth of the same shape")->required();

  return {montage_cmd, metrics_cmd};
}

// "parse, opt, ...": the commands, for a message.
std::string command_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* c : app.get_subcommands({})) names.push_back(c->get_name());
  return proxc_cli::join_names(names);
}

}  // namespace

// The command; an exception that escapes it is caught here, and on several
// MPI ranks *escaped says so (the other ranks may wait in a collective).
int run_command(int argc, char** argv, const proxc_cli::Ranks& ranks, bool* escaped) {
  CLI::App app{
      "proxc: a compiler for proximal image-optimization problems.\n"
      "Exit codes: 0 ok, 1 a check failed, 2 user error, 3 internal error (a bug)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("proxc ") + proxc::version());
  CommonOptions common;
  app.add_option("--max-memory", common.max_memory,
                 "Refuse any array larger than this (e.g. 4G, 512M); default: the machine's memory");
  app.add_option(
         "--allow-path", common.allow_paths,
         "Let problems read data from this folder too (default: only the problem's own folder); repeatable")
      ->allow_extra_args(false);
  app.add_option(
         "--plugin", common.plugins,
         "Load this shared library of black-box operators (see include/proxc/black_box.h); repeatable")
      ->allow_extra_args(false);

  ParseCommand parse;
  OptCommand opt;
  SolveCommand solve, batch;
  CompileCommand compile;
  MontageCommand montage;
  MetricsCommand metrics;
  CheckCommand check;
  CLI::App* parse_cmd = add_parse(app, parse);
  CLI::App* opt_cmd = add_opt(app, opt);
  CLI::App* solve_cmd = add_solve(app, solve);
  CLI::App* batch_cmd = add_batch(app, batch);
  CLI::App* compile_cmd = add_compile(app, compile);
  auto [montage_cmd, metrics_cmd] = add_image_commands(app, montage, metrics);
  CLI::App* check_cmd = add_check(app, check);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Under MPI, a rank that refuses its command line ends the job
    // (finalize_ranks aborts): the others would wait for it forever.
    if (const char* word = proxc_cli::unknown_command(app, argc, argv)) {  // `proxc foo`: name it
      std::fprintf(stderr, "proxc: unknown command '%s' (one of: %s)\n", word, command_names(app).c_str());
      *escaped = true;
      return kExitUserError;
    }
    int rc = app.exit(e);
    *escaped = rc != 0;
    return rc == 0 ? kExitOk : kExitUserError;
  }
  try {
    if (!common.max_memory.empty())
      proxc::set_max_array_bytes(proxc::parse_byte_size(common.max_memory, "--max-memory"));
    for (const std::string& d : common.allow_paths) proxc::allow_path(d);
    for (const std::string& lib : common.plugins) proxc::load_plugin(lib);
    if (ranks.size > 1 && !batch_cmd->parsed() && !(solve_cmd->parsed() && solve.distributed)) {
      throw proxc::UserError("under MPI (" + std::to_string(ranks.size) +
                             " ranks) proxc runs `batch`, whose frames the ranks share, and `solve --distributed`, "
                             "whose rows they share: run the other commands on one rank");
    }
    batch.ranks = solve.ranks = ranks;
    int rc = kExitOk;
    if (parse_cmd->parsed()) rc = parse.run();
    if (check_cmd->parsed()) rc = check.run();
    if (opt_cmd->parsed()) rc = opt.run();
    if (solve_cmd->parsed()) rc = solve.run();
    if (batch_cmd->parsed()) rc = batch.run();
    if (metrics_cmd->parsed()) rc = metrics.run();
    if (montage_cmd->parsed()) rc = montage.run();
    if (compile_cmd->parsed()) rc = compile.run();
    flush_stdout();  // a report that did not all arrive is not a success
    return rc;
  } catch (const StdoutClosed&) {
    *escaped = true;
    return kExitStdoutClosed;
  } catch (const proxc::UserError& e) {
    *escaped = true;
    std::cerr << e.what() << "\n";
    return kExitUserError;
  } catch (const proxc::InternalError& e) {
    *escaped = true;
    std::cerr << e.what() << "\nPlease report this bug with the input that caused it.\n";
    return kExitInternalError;
  } catch (const std::bad_alloc& e) {
    *escaped = true;
    // The memory budget's refusal says what did not fit (support/blocks.h).
    const std::string what = e.what();
    std::cerr << "proxc: out of memory" << (what == std::bad_alloc().what() ? "" : ": " + what) << "\n";
    return kExitUserError;
  } catch (const std::system_error& e) {
    *escaped = true;
    // A thread that could not start (no memory or address space for its stack).
    const bool thread = dynamic_cast<const std::filesystem::filesystem_error*>(&e) == nullptr;
    if (thread && (e.code() == std::errc::resource_unavailable_try_again || e.code() == std::errc::not_enough_memory)) {
      std::cerr << "proxc: out of memory: could not start a thread (" << e.what()
                << "; the machine's memory or an address-space limit such as ulimit -v)\n";
      return kExitUserError;
    }
    std::cerr << "internal error (a bug in proxc): unexpected exception: " << e.what() << "\n";
    return kExitInternalError;
  } catch (const std::exception& e) {
    *escaped = true;
    // Memory refused to the compiler (an address-space limit such as ulimit -v, or a full machine)
    // surfaces from Halide and LLVM as their own internal errors: a resource, not a bug.
    const std::string what = e.what();
    for (const char* sign : {"Cannot allocate memory", "mprotect failed", "out of memory", "bad_alloc"}) {
      if (what.find(sign) != std::string::npos) {
        std::cerr
            << "proxc: out of memory while compiling (the machine's memory or an address-space limit such "
               "as ulimit -v): "
            << what.substr(0, what.find('\n')) << "\n";
        return kExitUserError;
      }
    }
    std::cerr << "internal error (a bug in proxc): unexpected exception: " << what << "\n";
    return kExitInternalError;
  }
  return kExitOk;
}

int main(int argc, char** argv) {
  proxc_cli::ignore_write_signals();
  const proxc_cli::Ranks ranks = proxc_cli::init_ranks(&argc, &argv);
  bool escaped = false;
  const int rc = run_command(argc, argv, ranks, &escaped);
  proxc_cli::finalize_ranks(ranks, escaped ? rc : 0);
  return rc;
}
