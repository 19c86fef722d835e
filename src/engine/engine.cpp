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
    : config_(std::move(config)), executor_(std::move(executor)), clock_(clock) {
  const KvCacheShape kv = executor_->kv_cache_shape();
  config_.num_kv_blocks = kv.num_blocks;
  config_.block_size = kv.block_size;
  scheduler_ = std::make_unique<Scheduler>(config_, clock_);
  if (metrics) metrics_ = std::make_unique<EngineMetrics>(*metrics);
  if (auto* d = scheduler_->delayer()) {
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
      scheduler_->add_request(s.id, std::move(s.prompt), std::move(s.params));
    } catch (const Error& e) {
      TokenEvent ev;
      ev.request_id = s.id;
      ev.finished = true;
      ev.finish_reason = FinishReason::kAbort;
      ev.error = e.what();
      TokenCallback cb;
      {
        std::lock_guard lock(mu_);
        auto it = callbacks_.find(s.id);
        if (it != callbacks_.end()) {
          cb = std::move(it->second);
          callbacks_.erase(it);
        }
      }
      if (cb) call_guarded(cb, ev);
    }
  }
  std::vector<RequestOutput> aborted;
  for (uint64_t id : cancels) {
    if (auto out = scheduler_->cancel(id)) aborted.push_back(std::move(*out));
  }
  if (!aborted.empty() && metrics_) metrics_->on_step(StepPlan{}, StepResult{}, scheduler_->stats());
  for (const auto& out : aborted) deliver(out);
}

void Engine::deliver(const RequestOutput& out) {
  TokenEvent ev;
  ev.request_id = out.request_id;
  ev.token_ids = out.new_token_ids;
  ev.finished = out.finished;
  ev.finish_reason = out.finish_reason;
  ev.stop_token_id = out.stop_token_id;
  ev.usage = out.usage;
  TokenCallback cb;
  {
    std::lock_guard lock(mu_);
    auto it = callbacks_.find(out.request_id);
    if (it == callbacks_.end()) return;
    if (out.finished) {
      cb = std::move(it->second);
      callbacks_.erase(it);
    } else {
      cb = it->second;
    }
  }
  if (out.finished && metrics_) {
    if (out.first_scheduled_ns >= 0) {
      metrics_->on_first_scheduled(static_cast<double>(out.first_scheduled_ns - out.arrival_ns) *
                                   1e-9);
    }
    metrics_->on_finished(out.usage);
  }
  call_guarded(cb, ev);
}

void Engine::log_delayer_stats() {
  auto* d = scheduler_->delayer();
  if (!d) return;
  if (auto line = d->stats_line_if_due()) spdlog::info("{}", *line);
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || !inbox_.empty() || !cancels_.empty() || scheduler_->has_unfinished();
      });
      if (stopping_) break;
    }
    const int64_t iteration_start = clock_.now_ns();
    drain_inbox();
    StepPlan plan = scheduler_->schedule();
    if (plan.seqs.empty()) {
      // Nothing runnable (e.g. every request is waiting for KV that a cancel will free): wait for
      // the next message rather than spin.
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(1));
      continue;
    }
    StepResult result;
    const int64_t execute_start = clock_.now_ns();
    try {
      result = executor_->execute(plan);
    } catch (const std::exception& e) {
      spdlog::error("executor failed on step {}: {}", plan.step_id, e.what());
      for (const auto& s : plan.seqs) {
        if (auto out = scheduler_->cancel(s.request_id)) deliver(*out);
      }
      continue;
    }
    const int64_t execute_end = clock_.now_ns();
    std::vector<RequestOutput> outputs = scheduler_->update(plan, result);
    // Metrics first, so whoever sees a request finish also sees the gauges after its step.
    if (metrics_) metrics_->on_step(plan, result, scheduler_->stats());
    for (const auto& out : outputs) deliver(out);
    log_delayer_stats();
    if (step_log_) {
      const int64_t end = clock_.now_ns();
      step_log_->record(plan, {execute_start, execute_end - execute_start,
                               (execute_start - iteration_start) + (end - execute_end)});
    }
  }
  if (step_log_) step_log_->flush();
  // Stopping: every request still known ends with an abort event.
  drain_inbox();
  std::vector<uint64_t> ids;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, cb] : callbacks_) ids.push_back(id);
  }
  for (uint64_t id : ids) {
    if (auto out = scheduler_->cancel(id)) {
      deliver(*out);
    } else {
      TokenEvent ev;
      ev.request_id = id;
      ev.finished = true;
      ev.finish_reason = FinishReason::kAbort;
      TokenCallback cb;
      {
        std::lock_guard lock(mu_);
        auto it = callbacks_.find(id);
        if (it == callbacks_.end()) continue;
        cb = std::move(it->second);
        callbacks_.erase(it);
      }
      call_guarded(cb, ev);
    }
  }
}

}  // namespace paceline
