#include "engine/engine.h"

#include "base/error.h"
#include "base/log.h"

namespace paceline {

namespace {

// A callback that throws must not take the engine thread (and every other request) down.
void call_guarded(const TokenCallback& cb, const TokenEvent& ev) {
  try {
    cb(ev);
  } catch (const std::exception& e) {
    spdlog::error("request {}: token callback failed: {}", ev.request_id, e.what());
  } catch (...) {
    spdlog::error("request {}: token callback failed", ev.request_id);
  }
}

}  // namespace

Engine::Engine(SchedulerConfig config, std::unique_ptr<Executor> executor, const Clock& clock,
               MetricsRegistry* metrics, const PrefillDelayerSources* delayer_sources)
    : clock_(clock), core_(std::move(config), std::move(executor), clock, metrics) {
  if (auto* d = core_.scheduler().delayer()) {
    spdlog::info("{}", delayer_sources ? d->describe(*delayer_sources) : d->describe());
  }
}

Engine::~Engine() { stop(); }

void Engine::start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Engine::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t Engine::submit(std::vector<int32_t> prompt, RequestParams params, TokenCallback on_event) {
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    id = next_id_++;
    callbacks_.emplace(id, std::move(on_event));
    if (!params.arrival_ns) params.arrival_ns = clock_.now_ns();
    inbox_.push_back({id, std::move(prompt), std::move(params)});
  }
  cv_.notify_all();
  return id;
}

void Engine::cancel(uint64_t request_id) {
  {
    std::lock_guard lock(mu_);
    cancels_.push_back(request_id);
  }
  cv_.notify_all();
}

void Engine::reset_prefix_cache(std::function<void(int64_t)> done) {
  {
    std::lock_guard lock(mu_);
    resets_.push_back(std::move(done));
  }
  cv_.notify_all();
}

int64_t Engine::num_unfinished() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(callbacks_.size());
}

void Engine::drain_inbox() {
  std::deque<Submission> inbox;
  std::vector<uint64_t> cancels;
  {
    std::lock_guard lock(mu_);
    inbox.swap(inbox_);
    cancels.swap(cancels_);
  }
  for (auto& s : inbox) {
    try {
      core_.add(s.id, std::move(s.prompt), std::move(s.params));
    } catch (const Error& e) {
      TokenEvent ev;
      ev.request_id = s.id;
      ev.finished = true;
      ev.finish_reason = FinishReason::kAbort;
      ev.error = e.what();
      finish(s.id, std::move(ev));
    }
  }
  for (uint64_t id : cancels) {
    if (auto out = core_.cancel(id)) deliver(*out);
  }
  if (!core_.step_in_flight()) reset_prefix_caches();
}

// Resets wait for the drain between steps (the one during a forward leaves them queued).
void Engine::reset_prefix_caches() {
  std::vector<std::function<void(int64_t)>> resets;
  {
    std::lock_guard lock(mu_);
    resets.swap(resets_);
  }
  if (resets.empty()) return;
  const int64_t dropped = core_.reset_prefix_cache();
  for (auto& done : resets) {
    try {
      if (done) done(dropped);
    } catch (const std::exception& e) {
      spdlog::error("reset_prefix_cache callback failed: {}", e.what());
    }
  }
}

void Engine::deliver(const RequestOutput& out) {
  TokenEvent ev;
  ev.request_id = out.request_id;
  ev.token_ids = out.new_token_ids;
  ev.logprobs = out.new_logprobs;
  ev.prompt_logprobs = out.prompt_logprobs;
  ev.finished = out.finished;
  ev.finish_reason = out.finish_reason;
  ev.stop_token_id = out.stop_token_id;
  ev.usage = out.usage;
  if (out.finished) {
    finish(out.request_id, std::move(ev));
    return;
  }
  TokenCallback cb;
  {
    std::lock_guard lock(mu_);
    auto it = callbacks_.find(out.request_id);
    if (it == callbacks_.end()) return;
    cb = it->second;
  }
  call_guarded(cb, ev);
}

// The request's last event: its callback is called once more and forgotten.
void Engine::finish(uint64_t id, TokenEvent ev) {
  TokenCallback cb;
  {
    std::lock_guard lock(mu_);
    auto it = callbacks_.find(id);
    if (it == callbacks_.end()) return;
    cb = std::move(it->second);
    callbacks_.erase(it);
  }
  call_guarded(cb, ev);
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || !inbox_.empty() || !cancels_.empty() || !resets_.empty() ||
               core_.has_unfinished();
      });
      if (stopping_) break;
    }
    drain_inbox();
    if (!core_.begin_step()) {
      // Nothing runnable (e.g. every request is waiting for KV that a cancel will free): wait for
      // the next message rather than spin.
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(1));
      continue;
    }
    drain_inbox();  // what came during the forward, cancels included, before its update
    core_.end_step([this](const RequestOutput& out) { deliver(out); });
  }
  core_.flush_step_log();
  abort_all();
}

// Stopping: every request still known ends with an abort event.
void Engine::abort_all() {
  drain_inbox();
  std::vector<uint64_t> ids;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, cb] : callbacks_) ids.push_back(id);
  }
  for (uint64_t id : ids) {
    if (auto out = core_.cancel(id)) {
      deliver(*out);
      continue;
    }
    TokenEvent ev;
    ev.request_id = id;
    ev.finished = true;
    ev.finish_reason = FinishReason::kAbort;
    finish(id, std::move(ev));
  }
}

}  // namespace paceline
