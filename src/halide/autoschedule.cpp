// Halide's autoschedulers through Debian's plugins, with a fallback to
// proxc's default schedule (backend_impl.h).
#include "halide/backend_impl.h"

namespace proxc::internal {

#ifndef PROXC_PLUGIN_MULLAPUDI2016
#define PROXC_PLUGIN_MULLAPUDI2016 ""
#endif
#ifndef PROXC_PLUGIN_ADAMS2019
#define PROXC_PLUGIN_ADAMS2019 ""
#endif
#ifndef PROXC_PLUGIN_LI2018
#define PROXC_PLUGIN_LI2018 ""
#endif

const Autoscheduler kAutoschedulers[] = {
    {"mullapudi2016", "Mullapudi2016", PROXC_PLUGIN_MULLAPUDI2016},
    {"adams2019", "Adams2019", PROXC_PLUGIN_ADAMS2019},
    {"li2018", "Li2018", PROXC_PLUGIN_LI2018},
};

const Autoscheduler* find_autoscheduler(const std::string& s) {
  for (const Autoscheduler& a : kAutoschedulers) {
    if (s == a.option) return &a;
  }
  return nullptr;
}

// Warns that an autoscheduler's schedule did not work (`head` says how;
// `why`: Halide's message) and the default schedule is used instead.
void warn_schedule_fallback(const std::string& head, std::string why) {
  while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
  warn(head + " (" + why + "); using the default schedule");
}

// The plugin library of an autoscheduler: in $PROXC_HALIDE_PLUGIN_DIR when
// set (a Halide built elsewhere), else where Debian's Halide put it.
std::string plugin_path(const Autoscheduler& a) {
  const char* dir = std::getenv("PROXC_HALIDE_PLUGIN_DIR");
  if (dir && *dir) return std::string(dir) + "/libautoschedule_" + a.option + ".so";
  return a.plugin;
}

// Lowers `p` with the schedule asked for. An autoscheduler that fails (or is
// missing) leaves the default schedule and a warning; *used says which ran.
hl::Lowered lower_scheduled(const StepProgram& p, const std::string& schedule, const Halide::Target& t,
                            std::string* used) {
  *used = "default";
  const Autoscheduler* as = find_autoscheduler(schedule);
  if (!as) return hl::lower(p);
  std::string why;
  const std::string plugin = plugin_path(*as);
  hl::Lowered L = hl::lower(p, halide_ops::Schedule::None);
  if (!L.spectra_sources.empty() || !L.otf_sources.empty()) {
    why = "Halide 14's autoschedulers cannot schedule around the FFT extern stage of this pipeline";
  } else if (!L.graph->black_boxes().empty() || !L.graph->prox_fns().empty()) {
    // An autoscheduler may call the extern stage per tile, from several
    // threads: each call would run the user's whole operator.
    why = "the pipeline calls user code (black-box operators, prox functions), which must run once on whole arrays";
  } else if (plugin.empty() || !std::filesystem::exists(plugin)) {
    why = "its plugin " + (plugin.empty() ? std::string("libautoschedule_") + as->option + ".so" : plugin) +
          " is not installed (libhalide14-0-dev ships it)";
  } else {
    // Adams2019's beam search takes minutes per pipeline; greedy (beam 1)
    // unless the user sets HL_BEAM_SIZE.
    if (std::string(as->option) == "adams2019") ::setenv("HL_BEAM_SIZE", "1", 0);
    try {
      L.graph->set_estimates(L.extent_values, L.scalar_values);
      L.graph->auto_schedule(plugin, as->name, t);
      L.pipeline = L.graph->pipeline();
      *used = schedule;
      return L;
    } catch (const Halide::Error& e) {
      why = e.what();
    }
  }
  warn_schedule_fallback("--schedule " + schedule + " failed for " + program_label(p), why);
  return hl::lower(p);
}

const std::vector<std::string>& halide_schedules() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Autoscheduler& a : kAutoschedulers) n.push_back(a.option);
    return n;
  }();
  return names;
}

void check_schedule_name(const std::string& schedule) {
  if (schedule == "default" || find_autoscheduler(schedule)) return;
  std::string all = "default";
  for (const std::string& n : halide_schedules()) all += ", " + n;
  throw UserError("--schedule: unknown schedule '" + schedule + "' (one of: " + all + ")");
}

}  // namespace proxc::internal
