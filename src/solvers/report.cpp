// The reports of a solve: SolverSummary's one line, its full report and its
// JSON object (docs/cli.md), and the names of how a solve ended.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "proxc/solver.h"

namespace proxc {

const char* to_string(Termination t) {
  switch (t) {
    case Termination::NotRun:
      return "not_run";
    case Termination::Converged:
      return "converged";
    case Termination::MaxIterations:
      return "max_iterations";
    case Termination::TimeLimit:
      return "time_limit";
    case Termination::UserStop:
      return "user_stop";
    case Termination::Interrupted:
      return "interrupted";
    case Termination::Diverged:
      return "diverged";
  }
  return "?";
}

namespace {
// " (leaves out f, g: no value)", or "" when the objective has every term.
std::string leaves_out_note(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string s = " (leaves out";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : " ") + names[i];
  return s + ": no value)";
}
}  // namespace

std::string SolverSummary::brief_report() const {
  char buf[320];
  char obj[96];
  if (has_projection)
    std::snprintf(obj, sizeof obj, "objective %.6g (at max(x, 0): %.6g)", objective, objective_at_projection);
  else
    std::snprintf(obj, sizeof obj, "objective %.6g", objective);
  std::snprintf(buf, sizeof buf, "%s: %s after %d iterations, %s, %.3f s iterating (%s)", to_string(solver),
                to_string(termination), iterations, obj, iterate_s, to_string(backend_used));
  return buf + leaves_out_note(objective_leaves_out);
}

std::string SolverSummary::full_report() const {
  std::ostringstream out;
  char buf[256];
  out << "solver            " << to_string(solver) << " (backend " << to_string(backend_used);
  if (backend_used != backend_requested) out << ", asked for " << to_string(backend_requested);
  out << ", schedule " << to_string(schedule_used) << ")\n";
  if (backend_used == BackendKind::Halide) {
    out << "target            " << target_used;
    if (target_used != target_requested) out << " (asked for " << target_requested << ")";
    if (target_fft.find("(device") != std::string::npos) out << ", FFTs by " << target_fft;
    out << "\n";
  }
  if (fuse > 1) {
    out << "fuse              " << fuse << " iterations per run"
        << (fuse_blocked_in_time ? ", blocked in time" : ", not blocked in time") << "\n";
  }
  out << "termination       " << to_string(termination) << "\n";
  out << "iterations        " << iterations << "\n";
  std::snprintf(buf, sizeof buf, "residuals         r %.3e (eps %.3e), s %.3e (eps %.3e)\n", last.r,
                last.eps_pri, last.s, last.eps_dual);
  out << buf;
  std::snprintf(buf, sizeof buf, "objective         %.9g", objective);
  out << buf << leaves_out_note(objective_leaves_out) << "\n";
  if (has_projection) {
    std::snprintf(buf, sizeof buf, "objective at max(x, 0)  %.9g\n", objective_at_projection);
    out << buf;
  }
  for (const std::string& w : warnings) out << "warning           " << w << "\n";
  std::snprintf(buf, sizeof buf, "knorm             %.17g\n", knorm);
  out << buf;
  if (cg_steps > 0) {
    std::snprintf(buf, sizeof buf, "cg steps          %d (%.1f per iteration)\n", cg_steps,
                  iterations > 0 ? static_cast<double>(cg_steps) / iterations : 0.0);
    out << buf;
  }
  if (!adapted_steps.empty()) {
    out << "adapted steps    ";
    for (const auto& [name, v] : adapted_steps) {
      std::snprintf(buf, sizeof buf, " %s %.6g", name.c_str(), v);
      out << buf;
    }
    out << " (" << step_changes << " changes)\n";
  }
  if (distributed.ranks > 0) {
    std::snprintf(buf, sizeof buf, "distributed       %d ranks, %d ghost rows, %.0f halo bytes per run, %.3f s communicating\n",
                  distributed.ranks, distributed.ghost_rows, distributed.halo_bytes_per_run, distributed.communicate_s);
    out << buf;
  }
  std::snprintf(buf, sizeof buf,
                "time              parse %.3f s, passes %.3f s, compile %.3f s, iterate %.3f s", parse_s,
                passes_s, compile_s, iterate_s);
  out << buf;
  if (iterations > 0) {
    std::snprintf(buf, sizeof buf, " (%.3f ms per iteration)", 1e3 * iterate_s / iterations);
    out << buf;
  }
  out << "\n";
  for (const ProgramTime& t : programs) {
    std::snprintf(buf, sizeof buf, "  %-22s %7d runs, %9.3f s (%.3f ms per run, %4.1f %% of iterate)\n",
                  t.name.c_str(), t.runs, t.seconds, t.runs > 0 ? 1e3 * t.seconds / t.runs : 0.0,
                  iterate_s > 0 ? 100 * t.seconds / iterate_s : 0.0);
    out << buf;
  }
  return out.str();
}

std::string SolverSummary::to_json() const {
  nlohmann::ordered_json j;
  auto num = [](double v) -> nlohmann::ordered_json {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (std::isnan(v)) return "nan";
    return v;
  };
  j["solver"] = to_string(solver);
  j["termination"] = to_string(termination);
  j["iterations"] = iterations;
  j["objective"] = num(objective);
  if (has_projection) j["objective_at_projection"] = num(objective_at_projection);
  if (!objective_leaves_out.empty()) j["objective_leaves_out"] = objective_leaves_out;
  if (!warnings.empty()) j["warnings"] = warnings;
  j["residuals"] = {{"r", num(last.r)},
                    {"s", num(last.s)},
                    {"eps_pri", num(last.eps_pri)},
                    {"eps_dual", num(last.eps_dual)}};
  j["seconds"] = {{"parse", parse_s}, {"passes", passes_s}, {"compile", compile_s}, {"iterate", iterate_s}};
  j["backend"] = {{"requested", to_string(backend_requested)}, {"used", to_string(backend_used)}};
  j["schedule"] = {{"requested", to_string(schedule_requested)}, {"used", to_string(schedule_used)}};
  j["target"] = {{"requested", target_requested}, {"used", target_used}, {"fft", target_fft}};
  j["fuse"] = {{"iterations", fuse}, {"blocked_in_time", fuse_blocked_in_time}};
  j["knorm"] = knorm;
  j["cg_steps"] = cg_steps;
  if (!adapted_steps.empty()) {
    j["adapted_steps"] = adapted_steps;
    j["step_changes"] = step_changes;
  }
  if (distributed.ranks > 0) {
    j["distributed"] = {{"ranks", distributed.ranks},
                        {"ghost_rows", distributed.ghost_rows},
                        {"halo_bytes_per_run", distributed.halo_bytes_per_run},
                        {"communicate_seconds", distributed.communicate_s}};
  }
  j["programs"] = nlohmann::ordered_json::array();
  for (const ProgramTime& t : programs)
    j["programs"].push_back({{"name", t.name}, {"runs", t.runs}, {"seconds", t.seconds}});
  return j.dump(1);
}

}  // namespace proxc
