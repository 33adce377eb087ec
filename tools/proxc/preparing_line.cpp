#include "preparing_line.h"

#include <chrono>
#include <cstdio>

namespace proxc_cli {

PreparingLine::PreparingLine(bool shown) {
  if (!shown) return;
  thread_ = std::thread([this] {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_for(lock, std::chrono::seconds(2), [this] { return stopped_; })) return;
    do {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "\r  preparing the solve (the passes, then compiling its pipelines): %.0f s   ", s);
      std::fflush(stderr);
      printed_ = true;
    } while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopped_; }));
  });
}

void PreparingLine::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  if (printed_) std::fprintf(stderr, "\r%80s\r", "");
}

PreparingLine::~PreparingLine() {
  stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace proxc_cli
