// How the proxc command stops on SIGINT, SIGTERM and SIGHUP.
#pragma once

#include <atomic>

namespace proxc_cli {

/// Set by the first signal once a convergence check has run: the solve stops
/// at its next check, writes the iterate and a final checkpoint, and the
/// command exits with 128 + the signal (stop_signal()).
extern std::atomic<bool> g_interrupted;

/// The signal that stopped the command, 0 if none.
int stop_signal();

/// Installs the handler, for each signal the command was not started to
/// ignore (nohup). Before the iterations begin (parsing, the passes,
/// compiling: nothing to save yet, and compiling a large problem can take
/// long) a signal stops the command at once, as its default action does,
/// after removing the temporary files being written; so does a second signal.
void handle_stop_signals();

/// SIGPIPE and SIGXFSZ ignored, so that writing to a closed pipe or over
/// the file size limit is an error the command reports (EPIPE, EFBIG).
void ignore_write_signals();

/// SolverOptions::started for a solve: from here on a signal stops the solve
/// at its next check. (An MPI batch calls it at once: its ranks without a
/// frame must wait for the others, not die.)
void iterations_started();

/// For proxc_cli::run_batch: the signal number, read after each frame.
extern std::atomic<int> g_signal;

}  // namespace proxc_cli
