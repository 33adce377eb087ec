// The command line's flags shared by its commands: kinds by name, Halide's
// flags, the solvers' settings by ProxImaL's names.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "proxc/proxc.h"

namespace proxc_cli {

// A kind given on the command line (--schedule adams2019): UserError naming
// the flag and the choices for an unknown name.
template <typename Kind>
Kind parse_kind(const std::string& flag, const char* noun, const std::string& name) {
  Kind k{};
  if (!proxc::from_string(name, &k)) {
    std::string all;
    for (const std::string& n : proxc::kind_names<Kind>()) all += (all.empty() ? "" : ", ") + n;
    throw proxc::UserError(flag + ": unknown " + noun + " '" + name + "' (one of: " + all + ")");
  }
  return k;
}

// The form `parse` and `opt` write a problem in: --emit's when given, else the
// one -o's extension names (.json or .JSON, as the loader reads them; .prox;
// for parse also .dot, .gv and .tex), else text. --emit against the extension
// (`--emit text -o p.json`) is refused: the file would not load back as what
// its name says.
inline proxc::ProblemFormat problem_form(const std::string& emit_kind, const std::string& output,
                                         bool graph_forms) {
  const std::string ext = std::filesystem::path(output).extension().string();
  std::string implied;
  if (ext == ".json" || ext == ".JSON") implied = "json";
  if (ext == ".prox") implied = "text";
  if (graph_forms && (ext == ".dot" || ext == ".gv")) implied = "dot";
  if (graph_forms && ext == ".tex") implied = "latex";
  if (!emit_kind.empty() && !implied.empty() && emit_kind != implied)
    throw proxc::UserError("--emit " + emit_kind + " and -o " + output + ": a " + ext + " file holds " +
                           implied + "; name the output for its form, or leave --emit out");
  const std::string form = !emit_kind.empty() ? emit_kind : !implied.empty() ? implied : "text";
  return parse_kind<proxc::ProblemFormat>("--emit", "form", form);
}

// A number that must be finite (the solvers' settings): "nan" or "inf" is
// refused, not taken as a setting left out (which SolverFlags marks NaN).
inline const CLI::Validator kFinite(
    [](std::string& s) {
      const double v = std::strtod(s.c_str(), nullptr);
      return std::isfinite(v) ? std::string() : "must be a finite number, got '" + s + "'";
    },
    "");

// compile()'s rules for its options, checked first so that the messages
// name the flags (--fuse, --target), not the API's fields (SolverOptions.fuse).
inline void check_compile_flags(const proxc::CompileOptions& o) {
  proxc::SolverOptions s;
  s.solver = o.solver;
  s.fuse = o.fuse;
  s.target = o.target;
  s.schedule = o.schedule;
  s.adaptive_steps = false;  // as compile() sets it
  s.validate(proxc::OptionSpelling::CommandLine);
}

// After a failed parse with no command found: the first word of the command
// line that is neither an option nor the value of one of app's options that
// take a value (`proxc --max-memory 4G foo` → "foo"), or null.
inline const char* unknown_command(CLI::App& app, int argc, char** argv) {
  if (!app.get_subcommands().empty()) return nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.empty() || a[0] != '-') return argv[i];
    const CLI::Option* o = a.find('=') == std::string::npos ? app.get_option_no_throw(a) : nullptr;
    if (o && o->get_type_size() > 0) ++i;  // its value follows
  }
  return nullptr;
}

template <typename Kind>
CLI::IsMember one_of() {
  return CLI::IsMember(proxc::kind_names<Kind>());
}

// --target, --schedule and --cache-dir: how solve and compile use Halide.
struct HalideFlags {
  std::string target = "host";
  std::string schedule = "default";
  std::string cache_dir;
};

inline void add_halide_flags(CLI::App* cmd, HalideFlags* o) {
  cmd->add_option("--target", o->target, "Halide target string (host, x86-64-linux-avx2, ...)");
  cmd->add_option("--schedule", o->schedule,
                  "default, or an autoscheduler: mullapudi2016, adams2019, li2018, anderson2021 (GPU targets; "
                  "falls back to the default with a warning)");
  cmd->add_option(
         "--cache-dir", o->cache_dir,
         "On-disk cache of compiled pipelines (default $PROXC_CACHE_DIR, else $XDG_CACHE_HOME/proxc or "
         "~/.cache/proxc; off: none)")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("the path is empty (off: no cache)") : "";
      });
}

// The solvers' settings by ProxImaL's names, unset until given (NaN, -1).
struct SolverFlags {
  double tau = NAN, sigma = NAN, theta = NAN;  // pc
  double lmb = NAN, mu = NAN;                  // ladmm
  double rho = NAN;                            // admm
  double rho_0 = NAN, rho_scale = NAN, rho_max = NAN;
  int max_inner_iters = -1;  // hqs
  bool adaptive = false, fixed_steps = false;
  std::string norm = "bound";

  // Into the options, with ProxImaL's rules for what is left out (on the
  // scaled problem, ||K|| = 1): pc sigma = 1 and tau = 1/sigma, or sigma =
  // 1/tau when only tau is given; theta = 1; ladmm mu = lmb; a setting of
  // another solver than the one chosen is an error.
  void apply(proxc::SolverOptions* o) const {
    const proxc::SolverKind s = o->solver;
    auto only = [&](bool given, const char* flag, proxc::SolverKind owner) {
      if (given && s != owner) {
        throw proxc::UserError(std::string(flag) + " is a setting of " + proxc::to_string(owner) +
                               ", not of the solver " + proxc::to_string(s));
      }
      return given;
    };
    using K = proxc::SolverKind;
    const bool t = only(!std::isnan(tau), "--tau", K::PockChambolle), g = only(!std::isnan(sigma), "--sigma", K::PockChambolle);
    if (g) o->steps.pc_sigma = sigma;
    if (t) o->steps.pc_tau = tau;
    if (g && !t) o->steps.pc_tau = 1 / sigma;
    if (t && !g) o->steps.pc_sigma = 1 / tau;
    if (only(!std::isnan(theta), "--theta", K::PockChambolle)) o->steps.pc_theta = theta;
    if (only(!std::isnan(lmb), "--lmb", K::LinearizedADMM)) o->steps.ladmm_lambda = o->steps.ladmm_mu = lmb;
    if (only(!std::isnan(mu), "--mu", K::LinearizedADMM)) o->steps.ladmm_mu = mu;
    if (only(!std::isnan(rho), "--rho", K::ADMM)) o->steps.admm_rho = rho;
    if (only(!std::isnan(rho_0), "--rho-0", K::HQS)) o->hqs_rho_0 = rho_0;
    if (only(!std::isnan(rho_scale), "--rho-scale", K::HQS)) o->hqs_rho_scale = rho_scale;
    if (only(!std::isnan(rho_max), "--rho-max", K::HQS)) o->hqs_rho_max = rho_max;
    if (only(max_inner_iters >= 0, "--max-inner-iters", K::HQS)) o->hqs_max_inner_iters = max_inner_iters;
    o->norm = parse_kind<proxc::NormKind>("--norm", "norm", norm);
    if (adaptive && fixed_steps) throw proxc::UserError("--adaptive and --fixed-steps: give one of them");
    if (adaptive || fixed_steps) o->adaptive_steps = adaptive;
  }
};

}  // namespace proxc_cli
