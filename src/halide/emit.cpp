// The printed forms of a step program's pipeline: Halide's statement, C and
// HTML, and the standalone generator source (halide_backend.h).
#include "halide/backend_impl.h"

namespace proxc::internal {

std::string halide_emit(const StepProgram& program, const std::string& kind, const HalideOptions& options) {
  return halide_boundary([&]() -> std::string {
    check_schedule_name(options.schedule);
    user_assert(kind == "stmt" || kind == "c" || kind == "html" || kind == "source")
        << "--emit: unknown form '" << kind << "' (step, source, stmt, c or html)";
    if (kind == "source") {
      const Autoscheduler* as = find_autoscheduler(options.schedule);
      // A GPU target's generator builds the GPU schedule (run it with a GPU target).
      if (!as) return hl::generator_source(program, lower_for(program, parse_target(options.target, /*this_machine=*/false)));
      return hl::generator_source(program, hl::lower(program, halide_ops::Schedule::None), plugin_path(*as),
                                  as->name);
    }
    Halide::Target t = parse_target(options.target, /*this_machine=*/false);
    std::string used;
    // C: without a schedule (scalar loops, values inlined): Halide 14's C
    // backend writes the default schedule's vector shuffles of odd widths
    // (a float7 shuffled as a float8) in code that does not compile.
    hl::Lowered L = kind == "c" ? hl::lower(program, halide_ops::Schedule::None)
                                : lower_scheduled(program, options.schedule, t, &used);
    std::vector<Halide::Argument> args = L.graph->arguments();
    std::string tmp =
        (std::filesystem::temp_directory_path() / ("proxc_emit_" + std::to_string(::getpid()))).string();
    std::string path = tmp + (kind == "stmt" ? ".stmt" : kind == "c" ? ".c" : ".html");
    if (kind == "stmt")
      L.pipeline.compile_to_lowered_stmt(path, args, Halide::Text, t);
    else if (kind == "html")
      L.pipeline.compile_to_lowered_stmt(path, args, Halide::HTML, t);
    else
      L.pipeline.compile_to_c(path, args, "proxc_step", t);
    std::string text = read_file(path);
    std::remove(path.c_str());
    return text;
  });
}

}  // namespace proxc::internal
