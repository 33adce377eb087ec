// The generic host loop of every solver over a split, scaled problem: the
// compile of the algorithm's programs (and the caller's objective program),
// the state, the iterations with a convergence check every check_every,
// checkpoints, and the result in the user's units. What differs between the
// algorithms is theirs (algorithm.h, one file each); the passes and the
// objective are the caller's (src/pipeline/solve.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "ir/printer.h"
#include "solvers/algorithm.h"
#include "solvers/cg.h"
#include "solvers/checkpoint.h"
#include "solvers/compiled.h"
#include "solvers/slabs.h"
#include "solvers/solver.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/format.h"

namespace proxc::internal {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The enum value of a name a backend reports.
template <typename Kind>
Kind kind_of(const std::string& name) {
  Kind k{};
  internal_assert(from_string(name, &k)) << "no such kind: '" << name << "'";
  return k;
}

// One solve, phase by phase.
class HostLoop {
 public:
  // p: split and scaled; slabs: this rank's part of it in a distributed
  // solve (null otherwise).
  HostLoop(const Problem& user, const Problem& p, const Slabs* slabs, const SolverOptions& o, Backend& backend,
           const ObjectiveHooks& objective, SolveResult* result)
      : problem_(user),
        whole_(p),
        p_(slabs ? slabs->problem() : p),
        slabs_(slabs),
        objective_hooks_(objective),
        o_(o),
        backend_(backend),
        result_(*result),
        sum_(result->summary),
        algorithm_(Algorithm::create(o.solver)) {}

  void run() {
    // On a GPU the state stays on the device between runs (resident_); an
    // error on the way leaves the host arrays the caller's again.
    struct BackToHost {
      Backend& backend;
      ~BackToHost() {
        try {
          backend.to_host();
        } catch (...) {  // (already unwinding, or finish() brought them back)
        }
      }
    } back_to_host{backend_};
    const MemoryUse use("the solve (" + o_.solver + "'s state and the pipelines' buffers)");
    prepare();
    compile();
    init_state();
    iterate();
    finish();
  }

 private:
  // The summary's kinds, the layout; refuse a state that would not fit
  // before allocating it.
  void prepare() {
    sum_.solver = algorithm_->kind();
    sum_.backend_requested = kind_of<BackendKind>(backend_.name());
    sum_.backend_used = sum_.backend_requested;
    sum_.schedule_requested = kind_of<ScheduleKind>(backend_.schedule_requested());
    sum_.target_requested = backend_.target_requested();
    sum_.target_used = backend_.target_used();
    sum_.knorm = p_.variable_scale() * p_.variable_scale();
    l_ = layout_of(p_);
    whole_l_ = layout_of(whole_);
    user_assert(!l_.vars.empty()) << "the problem has no variable";
    m_ = static_cast<double>(total_size(psi_args(whole_l_)));
    n_ = static_cast<double>(total_size(whole_l_.vars));
    // The state (x and its companions, z/u or y per psi term) and the
    // pipelines' temporaries, about 4 buffers of each.
    const double bytes =
        4.0 * sizeof(float) * static_cast<double>(total_size(l_.vars) + total_size(psi_args(l_)));
    user_assert(bytes <= static_cast<double>(Limits::max_array_bytes()))
        << "solve: the solver's buffers need about " << format_bytes(bytes) << ", more than " << memory_budget_text();
  }

  // The iteration program, the CG programs where the x-update needs them and
  // the caller's objective programs, at once (Backend::compile_many).
  void compile() {
    const auto t0 = Clock::now();
    std::vector<StepProgram> programs = {iteration_program(p_, o_)};
    const std::vector<StepProgram> cg = cg_step_programs(p_, o_);
    programs.insert(programs.end(), cg.begin(), cg.end());
    if (slabs_) {
      // (Not the objective's: they run on rank 0, on the whole problem.)
      for (StepProgram& program : programs) program = slabs_->masked(program);
    }
    programs.insert(programs.end(), objective_hooks_.programs.begin(), objective_hooks_.programs.end());
    compiled_ = compile_hoisted(backend_, programs);
    sum_.fuse = o_.fuse;
    blocked_ = compiled_[0]->blocked_in_time();
    for (size_t i = 0; i < 1 + cg.size(); ++i) compiled_[i]->profile_into(&sum_.programs);
    for (size_t i = 1 + cg.size(); i < compiled_.size(); ++i) objective_runs_.push_back(compiled_[i].get());
    if (!cg.empty())
      cg_ = std::make_unique<CgXUpdate>(l_, o_, compiled_[1].get(), compiled_[2].get(), compiled_[3].get(), slabs_);
    // The state stays on a GPU from run to run unless the host works on it
    // between runs: a CG x-update, the exchange of ghost rows.
    resident_ = backend_.keeps_arrays_on_device() && !cg_ && !slabs_;
    x_outputs_ = true;
    for (size_t v = 0; v < l_.vars.size(); ++v) {
      bool out = false;
      for (const auto& [name, step] : programs[0].outputs) out = out || name == l_.name(v);
      x_outputs_ = x_outputs_ && out;
    }
    sum_.compile_s = since(t0);
  }

  // The state in the scaled units s = sqrt(knorm)·x: x0 or zeros, then the
  // algorithm's own arrays; a checkpoint's state when resuming.
  void init_state() {
    const double scale = p_.variable_scale();
    const PrintPlan names(problem_);  // the names the user sees (the passes keep the variable nodes)
    for (size_t v = 0; v < l_.vars.size(); ++v) {
      Array x(whole_l_.vars[v]->shape);
      auto it = o_.x0.find(names.name(whole_l_.vars[v].get()));
      if (it != o_.x0.end()) {
        user_assert(it->second.shape == x.shape)
            << "x0 for '" << l_.vars[v]->name_hint << "' has shape " << shape_to_string(it->second.shape)
            << ", the variable " << shape_to_string(x.shape);
        for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(it->second.data[i] * scale);
      }
      state_[l_.name(v)] = slabs_ ? slabs_->slice(x) : std::move(x);
    }
    algorithm_->init_state(l_, &state_);
    algorithm_->init_check_state(l_, o_, &state_);
    levels_ = algorithm_->rho_levels(o_);
    params_ = algorithm_->adaptive_params(o_);
    // A signature of the split, scaled problem and the options that shape
    // the iterates, so a checkpoint only resumes the same run.
    // Step sizes other than the defaults are part of it (the defaults' signature is the one
    // checkpoints had before step sizes were options).
    auto steps_text = [](const StepSizes& st) {
      std::string t;
      for (double v : {st.pc_tau, st.pc_sigma, st.pc_theta, st.ladmm_lambda, st.ladmm_mu, st.admm_rho}) {
        t += "|" + format_double(v);
      }
      return t;
    };
    const std::string steps = steps_text(o_.steps);
    // max_iters only where it places the continuation levels (hqs without
    // max_inner_iters): elsewhere a checkpoint resumes with a larger --iters.
    const bool spread = levels_.size() > 1 && o_.hqs_max_inner_iters == 0;
    const SolverOptions defaults;
    const bool hqs_defaults = o_.hqs_rho_0 == defaults.hqs_rho_0 && o_.hqs_rho_scale == defaults.hqs_rho_scale &&
                              o_.hqs_max_inner_iters == defaults.hqs_max_inner_iters;
    TextPrintOptions text;
    text.hash_inline = true;  // the data's hash, not its values printed
    signature_ = content_hash(
        print_text(whole_, text) + "|" + o_.solver + "|" + std::to_string(o_.fuse) + "|" +
        (spread ? std::to_string(o_.max_iters) : std::string("-")) + "|" + format_double(o_.hqs_rho_max) +
        (steps == steps_text(StepSizes()) ? "" : steps) +
        (hqs_defaults ? "" : "|" + format_double(o_.hqs_rho_0) + "|" + format_double(o_.hqs_rho_scale) + "|" +
                                 std::to_string(o_.hqs_max_inner_iters)) +
        (o_.proximal_stopping ? "|proximal-stopping|" + std::to_string(o_.check_every) : "") +
        (o_.adaptive_steps ? "|adaptive|" + std::to_string(o_.check_every) : ""));
    if (!o_.resume_path.empty()) resume();
    last_checkpoint_ = ran_ = checked_iteration_ = it0_ = it_;
    // (pc under ProxImaL's rule does not check its first run whatever C is.)
    copies_ = o_.check_every > o_.fuse ||
              (o_.proximal_stopping && algorithm_->kind() == SolverKind::PockChambolle);
    keep_checked();
  }

  // The continuation level of iteration `it`, and the first iteration of a
  // level: max_iters spread evenly over the levels, or each level
  // hqs_max_inner_iters iterations.
  size_t level_at(int it) const {
    if (levels_.size() <= 1) return 0;
    const size_t k = o_.hqs_max_inner_iters > 0
                         ? static_cast<size_t>(it / o_.hqs_max_inner_iters)
                         : static_cast<size_t>(it) * levels_.size() / static_cast<size_t>(o_.max_iters);
    return std::min(levels_.size() - 1, k);
  }
  int level_start(size_t level) const {
    if (o_.hqs_max_inner_iters > 0) return static_cast<int>(std::min<size_t>(level * o_.hqs_max_inner_iters, INT32_MAX));
    return static_cast<int>((level * static_cast<size_t>(o_.max_iters) + levels_.size() - 1) / levels_.size());
  }

  // A checkpoint holds the whole arrays: a distributed solve's resumes on
  // any number of ranks, or on one process.
  void checkpoint(int iteration) {
    if (o_.checkpoint_path.empty()) return;
    on_host();
    if (!slabs_)
      return save_checkpoint(o_.checkpoint_path, o_.solver, signature_, iteration, state_, params_);
    std::map<std::string, Array> whole;
    for (const auto& [k, a] : state_) whole[k] = slabs_->gather(a);
    if (slabs_->comm().rank() == 0)
      save_checkpoint(o_.checkpoint_path, o_.solver, signature_, iteration, whole, params_);
  }

  void resume() {
    if (!slabs_) {
      it_ = load_checkpoint(o_.resume_path, o_.solver, signature_, o_.max_iters, &state_, &params_);
      return;
    }
    std::map<std::string, Array> whole;
    for (const auto& [k, a] : state_) whole[k] = Array(slabs_->whole(a.shape));
    it_ = load_checkpoint(o_.resume_path, o_.solver, signature_, o_.max_iters, &whole, &params_);
    for (auto& [k, a] : state_) a = slabs_->slice(whole.at(k));
  }

  // The variables of the last check that passed, kept when runs between
  // checks overwrite them (a failed check returns them). Where the
  // iteration program outputs them, the run after the check leaves them in
  // out_ (the old storage of its adopted outputs), which the next run would
  // overwrite: set_checked_aside() swaps them with checked_x_'s arrays once
  // after_run has read them, no copy (on a GPU, no trip to the host).
  // Otherwise (a CG x-update on the host changes them in place) they are
  // copied.
  void keep_checked() {
    checked_iteration_ = ran_;
    if (!copies_) return;
    if (x_outputs_) {
      aside_pending_ = true;
      return;
    }
    on_host();  // (not resident: the CG x-update runs on the host)
    for (size_t v = 0; v < l_.vars.size(); ++v) checked_x_[l_.name(v)] = state_.at(l_.name(v));
  }
  void set_checked_aside() {
    if (!aside_pending_) return;
    aside_pending_ = false;
    for (size_t v = 0; v < l_.vars.size(); ++v) std::swap(checked_x_[l_.name(v)], out_.arrays.at(l_.name(v)));
  }

  // A run's outputs become the state, the stopping rule's after_run sees
  // the state before, and the last check's variables are set aside.
  void adopt_run() {
    adopt_outputs();
    if (algorithm_->after_run_uses_arrays(o_, ran_ - 1)) on_host();
    algorithm_->after_run(l_, o_, ran_ - 1, out_.arrays, &state_);
    set_checked_aside();
  }

  // Before the host reads or writes the state: on a GPU, every array a
  // resident run left there comes back (and the next run copies the state
  // up again).
  void on_host() const {
    if (resident_) backend_.to_host();
  }

  // A run's outputs become the state; the arrays they replace are the next
  // run's output storage.
  // In a distributed solve, their ghost rows then come from the neighbours.
  void adopt_outputs() {
    for (auto& [k, a] : out_.arrays) {
      std::swap(state_[k], a);
      if (slabs_) slabs_->exchange(&state_[k]);
    }
  }

  // Whether any rank says yes (one rank alone: whether this one does).
  bool any_rank(bool yes) const { return slabs_ ? slabs_->sum(yes ? 1.0 : 0.0) > 0 : yes; }
  // Whether this process reports: rank 0 of a distributed solve.
  bool reports() const { return !slabs_ || slabs_->comm().rank() == 0; }

  // Convergence is checked every check_every iterations (see SolverOptions):
  // a run is a check when it crosses a multiple of check_every, ends the
  // solve, or follows a run after which the time limit was up or an
  // interrupt came.
  void iterate() {
    if (o_.started) o_.started();
    start_ = Clock::now();
    sum_.termination = Termination::MaxIterations;
    while (it_ < o_.max_iters) {
      const size_t level = level_at(it_);
      // (Adaptive steps: admm's rho is among the params.)
      const auto adapted_rho = params_.find(state_names::kRho);
      const double rho = adapted_rho != params_.end() ? adapted_rho->second : levels_[level];
      if (cg_ && !cg_->run(&state_, rho, &sum_.cg_steps)) {
        sum_.termination = Termination::Diverged;
        break;
      }
      StepInputs in;
      for (auto& [k, a] : state_) in.buffers[k] = &a;
      if (slabs_) {
        for (const auto& [k, a] : slabs_->masks()) in.buffers[k] = &a;
      }
      if (algorithm_->takes_rho()) in.params[state_names::kRho] = rho;
      const int done = it_ + o_.fuse;  // fuse is 1 except for pc and ladmm
      const bool scheduled = on_schedule();
      const bool check = stop_next_ || done >= o_.max_iters || scheduled;
      in.params[kCheckParam] = check ? 1 : 0;
      in.resident = resident_;
      for (const auto& [k, v] : params_) {
        if (k[0] != '_') in.params[k] = v;
      }
      compiled_[0]->run_into(in, &out_);  // into the arrays of two iterations ago
      ran_ += o_.fuse;
      if (!check) {
        // (Runs without a check are the ones blocked in time: SolverSummary::fuse_blocked_in_time.)
        sum_.fuse_blocked_in_time = blocked_;
        adopt_run();
        it_ = done;
        snapshot();
        // (A distributed solve looks at the clock and interrupts at its checks,
        // where the ranks agree.)
        stop_next_ = !slabs_ && ((o_.interrupt && o_.interrupt->load()) ||
                                 (o_.time_limit_s > 0 && since(start_) >= o_.time_limit_s));
        continue;
      }
      if (!after_check(done, level, scheduled)) break;
    }
    sum_.iterate_s = since(start_);
  }

  // The iterate to the snapshot callback when the run just done reached a
  // multiple of snapshot_every iterations.
  void snapshot() {
    const int n = o_.snapshot_every;
    if (n <= 0 || !o_.snapshot_callback || ran_ / n == (ran_ - o_.fuse) / n) return;
    std::map<std::string, Array> x;
    user_iterate(&x);
    if (reports()) o_.snapshot_callback(std::min(ran_, o_.max_iters), x);
  }

  // Whether the next run (iterations ran_ + 1 ... ran_ + fuse) checks by the
  // schedule: after a multiple of check_every iterations; under ProxImaL's
  // rule (pc, ladmm, admm) after iterations 1, C + 1, 2C + 1, ... (its
  // checks at i % C == 0, i counted from 0), Pock–Chambolle's from C + 1.
  bool on_schedule() const {
    const int c = o_.check_every;
    // (hqs keeps proxc's schedule: ProxImaL's hqs has a rule of its own per level.)
    if (!o_.proximal_stopping || algorithm_->kind() == SolverKind::HQS) return (ran_ + o_.fuse) / c > ran_ / c;
    auto floor_div = [](int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
    const bool crosses = floor_div(ran_ + o_.fuse - 1, c) > floor_div(ran_ - 1, c);
    return crosses && !(algorithm_->kind() == SolverKind::PockChambolle && ran_ == 0);
  }

  // A convergence the absolute tolerance alone decided: in both tests the
  // absolute part (eps_abs times a root of a size) is over 1/kShare times
  // the relative part (eps_rel times the iterates' norms), and eps_abs is
  // over kFloor of the iterates' root mean square (eps_rel/share > kFloor:
  // below it eps_abs asks for about what float32 iterates resolve, and the
  // stop cannot be far off). Most often the problem's values are small against eps_abs, and
  // the residuals pass while the iterates still move by much of themselves:
  // TV denoising at 512² with its data and weight scaled by 1e-3 stopped
  // after 20 iterations 1.5 % above its optimum (relative part 0.00095 of
  // the absolute one), by 1e-2 after 50 iterations 0.2 % above (0.0095).
  // The bundled examples at the defaults give 0.030–1.0 (ladmm's and
  // admm's scale, ‖Kx‖, is mostly gradients, smaller than the image), so
  // they are not warned (docs/solvers.md, "Units"). Said in the summary's
  // warnings, with the eps_abs that would give eps_rel its say.
  void warn_if_absolute_stop(const IterationInfo& info) {
    constexpr double kShare = 0.01, kFloor = 1e-5;
    if (o_.eps_abs <= 0 || o_.eps_rel <= 0) return;
    // The tolerances at norms of zero are their absolute parts.
    StepOutputs zero_norms;
    for (const auto& [name, v] : out_.scalars) zero_norms.scalars[name] = 0;
    IterationInfo a;
    algorithm_->tolerances(zero_norms, m_, n_, o_, &a);
    if (!(a.eps_pri > 0 && a.eps_dual > 0)) return;
    const double share =
        std::max((info.eps_pri - a.eps_pri) / a.eps_pri, (info.eps_dual - a.eps_dual) / a.eps_dual);
    // (A share of 0, iterates of 0, is an exact stop: no warning.)
    if (!(share > 0 && share < kShare && o_.eps_rel > kFloor * share)) return;
    char buf[640];
    std::snprintf(buf, sizeof buf,
                  "converged by the absolute tolerance alone: in both tests its part (eps_abs = %g times the "
                  "root of a size) is %.3g times the relative part (eps_rel = %g times the iterates' norms), "
                  "so the result may be short of the optimum; if the problem's values are far below 1, "
                  "scale the data to values near 1, or set eps_abs to %.1g or less",
                  o_.eps_abs, 1 / share, o_.eps_rel, o_.eps_abs * share);
    sum_.warnings.push_back(buf);
  }

  // A checking run's residuals, the stopping rule, the callback, checkpoints
  // and limits; false when the solve stops (sum_.termination says why).
  bool after_check(int done, size_t level, bool scheduled) {
    IterationInfo info;
    info.iteration = std::min(ran_, o_.max_iters);
    // Whether the state is finite: every array A is when the check's
    // ‖A‖² (add_finiteness_norms) is below FLT_MAX (then every |a| < 1.8e19;
    // a NaN compares false); otherwise, or for a program without the norms,
    // a pass over the arrays here decides.
    bool finite = !out_.arrays.empty();
    for (const auto& [name, a] : out_.arrays) {
      const auto norm = out_.scalars.find(state_names::finite(name));
      finite = finite && norm != out_.scalars.end() && norm->second < std::numeric_limits<float>::max();
    }
    if (!finite) {
      on_host();
      finite = all_finite(out_.arrays);
    }
    if (slabs_) {
      // The owned rows' norms summed over the ranks, and whether any rank's state went bad.
      out_.scalars["not finite"] = finite ? 0 : 1;
      slabs_->sum(&out_.scalars);
      finite = out_.scalars.at("not finite") == 0;
      out_.scalars.erase("not finite");
    }
    info.r = std::sqrt(out_.scalars.at(state_names::kR2));
    info.s = std::sqrt(out_.scalars.at(state_names::kS2));
    algorithm_->tolerances(out_, m_, n_, o_, &info);
    info.seconds = since(start_);
    if (!std::isfinite(info.r) || !std::isfinite(info.s) || !finite) {
      sum_.termination = Termination::Diverged;
      on_host();
      if (copies_ && checked_iteration_ != ran_ - o_.fuse) {
        // Runs since the last check overwrote the state: its variables were kept.
        for (auto& [k, a] : checked_x_) state_[k] = std::move(a);
        state_whole_ = false;
      }  // else the state before this run, still in state_, passed the last check
      sum_.iterations = checked_iteration_;
      return false;
    }
    adopt_run();
    it_ = done;
    result_.history.push_back(info);
    sum_.last = info;
    sum_.iterations = info.iteration;
    keep_checked();
    snapshot();
    // The callbacks see every check, the one that converges too; a stop they
    // ask for at a converged check leaves it converged.
    bool user_stop = false;
    if (o_.objective_each_check || o_.iterate_callback) {
      std::map<std::string, Array> x;
      const auto xs = user_iterate(&x);
      if (reports()) {
        info.objective = user_objective(xs);
        result_.history.back().objective = info.objective;
        sum_.last.objective = info.objective;
        user_stop = o_.iterate_callback && !o_.iterate_callback(info, x);
      }
    }
    user_stop = user_stop || (reports() && o_.callback && !o_.callback(info));
    user_stop = any_rank(user_stop);
    // Under ProxImaL's rule only its checks stop a solve: one forced by the
    // last iteration, the time limit or an interrupt is reported, and pc's
    // residuals there mix iterates of different ages.
    const bool stopping = (o_.eps_abs > 0 || o_.eps_rel > 0) && (scheduled || !o_.proximal_stopping);
    if (stopping && info.r <= info.eps_pri && info.s <= info.eps_dual) {
      if (level + 1 < levels_.size() && !user_stop) {
        // Converged for this rho: continue with the next, larger one.
        it_ = std::max(it_, level_start(level + 1));
        return true;
      }
      if (level + 1 == levels_.size()) {
        sum_.termination = Termination::Converged;
        warn_if_absolute_stop(info);
        return false;
      }
    }
    // Adaptive steps change at the scheduled checks that do not converge
    // (one that stops the solve too, so that its checkpoint resumes as the
    // run would have gone on; not at a check forced by the last iteration,
    // a time limit or an interrupt, which a longer run would not make).
    // Every rank has the same r and s, so adapts alike.
    if (scheduled && !params_.empty()) {
      if (algorithm_->adapt_rescales_state(info, params_)) on_host();
      if (algorithm_->adapt(l_, info, &params_, &state_)) ++sum_.step_changes;
    }
    if (user_stop) {
      sum_.termination = Termination::UserStop;
      return false;
    }
    if (o_.checkpoint_every > 0 && it_ - last_checkpoint_ >= o_.checkpoint_every) {
      checkpoint(it_);
      last_checkpoint_ = it_;
    }
    if (any_rank(o_.interrupt && o_.interrupt->load())) {
      sum_.termination = Termination::Interrupted;
      return false;
    }
    if (any_rank(o_.time_limit_s > 0 && info.seconds >= o_.time_limit_s)) {
      sum_.termination = Termination::TimeLimit;
      return false;
    }
    return true;
  }

  // Back to the user's units, and the user's objective there. The passes
  // keep the variable nodes, so they are the user's; results are named as
  // the printer names them (unique even when two variables share a hint).
  void finish() {
    // The state comes back from a GPU (the other arrays are scratch now).
    if (resident_) {
      std::vector<const Array*> state;
      for (const auto& [k, a] : state_) state.push_back(&a);
      backend_.to_host_only(state);
    }
    // After the runs: an autoscheduled pipeline that failed when it ran fell
    // back to the default schedule then (HalideBackend).
    sum_.schedule_used = kind_of<ScheduleKind>(backend_.schedule_used());
    sum_.target_fft = backend_.fft_used();
    if (slabs_) {
      sum_.distributed.ranks = slabs_->comm().size();
      sum_.distributed.ghost_rows = slabs_->ghost_rows();
      sum_.distributed.halo_bytes_per_run = ran_ > it0_ ? slabs_->bytes_sent() * o_.fuse / (ran_ - it0_) : 0;
      sum_.distributed.communicate_s = slabs_->communicate_seconds();
    }
    for (const auto& [k, v] : params_) {
      if (k[0] != '_') sum_.adapted_steps[k == state_names::kRho ? "admm_rho" : k] = v;
    }
    // A diverged state whose variables alone were restored is not saved over the last good checkpoint.
    if (!o_.checkpoint_path.empty() && state_whole_) checkpoint(it_);
    const auto xs = user_iterate(&result_.x);
    const PrintPlan names(problem_);
    for (const Expr& v : whole_l_.vars) result_.variables.emplace_back(v, names.name(v.get()));
    if (objective_hooks_.evaluate && reports()) {
      evaluate_objective(xs, &sum_);
      // A finite iterate whose objective is not (a term's value overflowed
      // float32, say) is no answer: a failure, never "converged".
      // (With nonneg, at x or at max(x, 0): a log of a slightly negative x is not the answer's fault.)
      const bool finite = std::isfinite(sum_.objective) ||
                          (sum_.has_projection && std::isfinite(sum_.objective_at_projection));
      if (!finite && sum_.termination != Termination::Diverged) {
        sum_.warnings.push_back("the objective at the result is " +
                                std::string(std::isnan(sum_.objective) ? "nan" : "inf") +
                                " though the iterate is finite: the solve failed (a term's value beyond float32?)");
        sum_.termination = Termination::Diverged;
      }
    }
  }

  // The variables of the state in the user's units, by the names the user
  // sees (the passes keep the variable nodes), into *x; the same by node.
  // A distributed solve gathers them on rank 0 (empty arrays elsewhere).
  std::map<const ExprNode*, const Array*> user_iterate(std::map<std::string, Array>* x) const {
    on_host();
    const double scale = p_.variable_scale();
    std::map<const ExprNode*, const Array*> xs;
    const PrintPlan names(problem_);
    for (size_t v = 0; v < l_.vars.size(); ++v) {
      Array a = slabs_ ? slabs_->gather(state_.at(l_.name(v))) : state_.at(l_.name(v));
      for (float& f : a.data) f = static_cast<float>(f / scale);
      const std::string& name = names.name(whole_l_.vars[v].get());
      (*x)[name] = std::move(a);
      xs[whole_l_.vars[v].get()] = &x->at(name);
    }
    return xs;
  }

  void evaluate_objective(const std::map<const ExprNode*, const Array*>& xs, SolverSummary* summary) const {
    std::vector<std::function<StepOutputs(const StepInputs&)>> runs;
    for (InvariantStep* step : objective_runs_) runs.push_back([step](const StepInputs& in) { return step->run(in); });
    objective_hooks_.evaluate(xs, runs, summary);
  }

  // The user's objective at an iterate (NaN without the objective hooks):
  // at its projection onto the constraints when the problem has nonneg or
  // box terms, where rounding leaves the iterate itself infeasible (+inf).
  double user_objective(const std::map<const ExprNode*, const Array*>& xs) const {
    if (!objective_hooks_.evaluate) return std::numeric_limits<double>::quiet_NaN();
    SolverSummary s;
    evaluate_objective(xs, &s);
    return s.has_projection ? s.objective_at_projection : s.objective;
  }

  const Problem& problem_;  // the user's: it names the variables
  const Problem& whole_;    // split and scaled
  const Problem& p_;        // the same, or this rank's slab of it
  const Slabs* slabs_;      // null unless distributed
  const ObjectiveHooks& objective_hooks_;
  const SolverOptions& o_;
  Backend& backend_;
  SolveResult& result_;
  SolverSummary& sum_;
  std::unique_ptr<Algorithm> algorithm_;
  Layout l_, whole_l_;   // of p_ and whole_
  double m_ = 0, n_ = 0;  // the sizes of K's output and the variables (whole)
  std::vector<std::unique_ptr<InvariantStep>> compiled_;  // the iteration, the CG programs, the objective
  std::vector<InvariantStep*> objective_runs_;            // the objective hooks' programs, compiled
  std::unique_ptr<CgXUpdate> cg_;
  std::map<std::string, Array> state_;
  std::vector<double> levels_;  // the penalty per level (one level but for hqs)
  std::string signature_;
  int it_ = 0;   // iterations done (HQS skips the rest of a level once it converges there)
  int ran_ = 0;  // iterations run
  bool blocked_ = false;  // whether the iteration program's runs without a check are blocked in time
  int it0_ = 0;  // the iteration the solve started from (a checkpoint's)
  int last_checkpoint_ = 0;
  Clock::time_point start_;
  StepOutputs out_;      // after the first run: the arrays of the state before last, reused as outputs
  bool copies_ = false;  // whether runs between checks overwrite the variables of the last check
  bool x_outputs_ = true;       // whether the iteration program outputs the variables (keep_checked)
  bool aside_pending_ = false;  // whether the next adopted run leaves the checked variables in out_
  bool resident_ = false;       // whether runs leave the state on a GPU (StepInputs::resident)
  std::map<std::string, Array> checked_x_;
  int checked_iteration_ = 0;
  bool stop_next_ = false;
  // Adaptive steps' run-time parameters and state (Algorithm::adaptive_params).
  std::map<std::string, double> params_;
  bool state_whole_ = true;  // false when a divergence left only the variables restored
};

}  // namespace

SolveResult run_solver(const Problem& user, const Problem& p, const SolverOptions& options, Backend& backend,
                       const ObjectiveHooks& objective) {
  options.validate();
  internal_assert(p.solver == options.solver && p.knorm > 0)
      << "run_solver: the problem must be split for " << options.solver
      << " and scaled (pipeline/solve.h runs the passes first)";
  SolveResult result;
  std::unique_ptr<Slabs> slabs;
  if (options.communicator) {
    std::vector<StepProgram> programs = cg_step_programs(p, options);
    programs.push_back(iteration_program(p, options));
    slabs = std::make_unique<Slabs>(p, programs, *options.communicator);
  }
  HostLoop(user, p, slabs.get(), options, backend, objective, &result).run();
  return result;
}

StepProgram iteration_program(const Problem& p, const SolverOptions& o) {
  StepProgram prog = Algorithm::create(o.solver)->iteration(layout_of(p), o);
  add_finiteness_norms(&prog);
  return eliminate_common_subexpressions(prog);
}

void add_finiteness_norms(StepProgram* prog) {
  if (prog->check_outputs().empty()) return;
  const size_t n = prog->outputs.size();
  for (size_t k = 0; k < n; ++k) {
    const auto [name, step] = prog->outputs[k];
    if (!step->shape.empty()) prog->outputs.push_back({state_names::finite(name), Builder::norm2({step})});
  }
}

std::vector<StepProgram> cg_step_programs(const Problem& p, const SolverOptions& o) {
  const Layout l = layout_of(p);
  if (!Algorithm::create(o.solver)->host_cg(l, o)) return {};
  CgPrograms c = cg_programs(l);
  return {c.init, c.apply, c.update};
}

}  // namespace proxc::internal
