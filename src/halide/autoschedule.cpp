// Halide's autoschedulers through the plugins Halide 21 ships, with a
// fallback to proxc's default schedule (backend_impl.h).
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
#ifndef PROXC_PLUGIN_ANDERSON2021
#define PROXC_PLUGIN_ANDERSON2021 ""
#endif

const Autoscheduler kAutoschedulers[] = {
    {"mullapudi2016", "Mullapudi2016", PROXC_PLUGIN_MULLAPUDI2016},
    {"adams2019", "Adams2019", PROXC_PLUGIN_ADAMS2019},
    {"li2018", "Li2018", PROXC_PLUGIN_LI2018},
    {"anderson2021", "Anderson2021", PROXC_PLUGIN_ANDERSON2021},  // GPU targets only
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
// set (a Halide built elsewhere), else beside the libHalide this process loaded.
std::string plugin_path(const Autoscheduler& a) {
  const char* dir = std::getenv("PROXC_HALIDE_PLUGIN_DIR");
  if (dir && *dir) return std::string(dir) + "/libautoschedule_" + a.option + ".so";
  // Beside the libHalide this process loaded (the `halide` wheel ships them
  // together), else where the Halide proxc was built with had it.
  std::error_code ec;
  const std::filesystem::path beside = std::filesystem::path(hl::halide_library_path()).parent_path() /
                                       (std::string("libautoschedule_") + a.option + ".so");
  return std::filesystem::exists(beside, ec) ? beside.string() : std::string(a.plugin);
}

// Lowers `p` with the schedule asked for. An autoscheduler that fails (or is
// missing) leaves the default schedule and a warning; *used says which ran.
hl::Lowered lower_scheduled(const StepProgram& p, const std::string& schedule, const Halide::Target& t,
                            std::string* used) {
  *used = "default";
  const Autoscheduler* as = find_autoscheduler(schedule);
  if (!as) return lower_for(p, t);
  std::string why;
  const std::string plugin = plugin_path(*as);
  hl::Lowered L = hl::lower(p, halide_ops::Schedule::None);
  if (!L.spectra_sources.empty() || !L.otf_sources.empty()) {
    // (Halide 14's autoschedulers failed or crashed on them; not tried since.)
    why = "proxc does not autoschedule around the FFT extern stage of this pipeline";
  } else if (!L.graph->black_boxes().empty() || !L.graph->prox_fns().empty()) {
    // An autoscheduler may call the extern stage per tile, from several
    // threads: each call would run the user's whole operator.
    why = "the pipeline calls user code (black-box operators, prox functions), which must run once on whole arrays";
  } else if (std::string(as->option) == "anderson2021" && !t.has_gpu_feature()) {
    why = "Anderson2021 schedules GPU targets only, and " + t.to_string() + " has no GPU feature";
  } else if (plugin.empty() || !std::filesystem::exists(plugin)) {
    why = "its plugin " + (plugin.empty() ? std::string("libautoschedule_") + as->option + ".so" : plugin) +
          " is not installed (the halide wheel ships it)";
  } else {
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
  return lower_for(p, t);
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
