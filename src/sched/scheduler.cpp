#include "sched/scheduler.h"

#include <algorithm>
#include <unordered_set>

#include "base/error.h"
#include "sched/cudagraph_sizes.h"

namespace paceline {
namespace {

const SchedulerConfig& validated(const SchedulerConfig& config) {
  config.validate();
  return config;
}

uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

Scheduler::Scheduler(const SchedulerConfig& config, const Clock& clock)
    : config_(validated(config)),
      clock_(clock),
      kv_(KvConfig{.num_blocks = config.num_kv_blocks,
                   .block_size = config.block_size,
                   .enable_prefix_caching = config.enable_prefix_caching,
                   .policy = config.kv_policy,
                   .num_host_blocks = config.num_host_kv_blocks,
                   .max_copy_blocks_per_step = config.kv_offloading_max_blocks_per_step},
          &clock) {
  cudagraph_sizes_ = config_.cudagraph_capture_sizes;
  if (cudagraph_sizes_.empty()) {
    cudagraph_sizes_ = default_cudagraph_capture_sizes(static_cast<int32_t>(config_.max_num_seqs));
  }
  std::sort(cudagraph_sizes_.begin(), cudagraph_sizes_.end());
  auto spec = std::make_unique<SpecAcceptance>(config_.speculative);  // validates either way
  if (spec->speculative_tokens() > 0) spec_ = std::move(spec);
  config_.delayer.max_num_batched_tokens = config_.max_num_batched_tokens;
  if (config_.delayer.active()) delayer_ = std::make_unique<PrefillDelayer>(config_.delayer);
}

Scheduler::~Scheduler() = default;

void Scheduler::add_request(uint64_t id, std::vector<int32_t> prompt, RequestParams params) {
  if (requests_.contains(id)) fail("request {} already exists", id);
  if (prompt.empty()) fail("request {}: the prompt is empty", id);
  if (params.max_tokens < 1) fail("request {}: max_tokens must be at least 1", id);
  if (params.min_tokens < 0 || params.min_tokens > params.max_tokens) {
    fail("request {}: min_tokens ({}) must be between 0 and max_tokens ({})", id, params.min_tokens,
         params.max_tokens);
  }
  if (params.prompt_logprobs && params.logprobs < 0) {
    fail("request {}: prompt logprobs need logprobs >= 0 (the top entries per token)", id);
  }
  if (params.logprobs < -1 || params.logprobs > kMaxTopLogprobs) {
    fail("request {}: logprobs must be between -1 (none) and {}, got {}", id, kMaxTopLogprobs,
         params.logprobs);
  }
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  if (prompt_len + params.max_tokens > config_.max_model_len) {
    fail(
        "request {}: this model's maximum context length is {} tokens, but {} were requested "
        "({} in the prompt, {} for the completion)",
        id, config_.max_model_len, prompt_len + params.max_tokens, prompt_len, params.max_tokens);
  }
  // At most prompt + max_tokens - 1 positions ever hold KV (the last token is never computed).
  const int64_t blocks =
      (prompt_len + params.max_tokens - 1 + config_.block_size - 1) / config_.block_size;
  if (blocks > kv_.num_blocks()) {
    fail("request {}: needs {} KV blocks but the KV cache holds only {}", id, blocks,
         kv_.num_blocks());
  }
  const int64_t arrival = params.arrival_ns.value_or(clock_.now_ns());
  auto request = std::make_unique<Request>(id, std::move(prompt), std::move(params), arrival);
  kv_.want_prefix(request->blocks, request->tokens, arrival);
  waiting_.push_back(request.get());
  requests_.emplace(id, std::move(request));
}

std::optional<RequestOutput> Scheduler::cancel(uint64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return std::nullopt;
  Request& r = *it->second;
  if (r.status == RequestStatus::kRunning) {
    std::erase(running_, &r);
  } else {
    std::erase(waiting_, &r);
    kv_.unwant_prefix(r.blocks);  // nobody waits for its prefix any more
  }
  r.status = RequestStatus::kFinished;
  r.finish_reason = FinishReason::kAbort;
  release(r);
  RequestOutput out = r.make_output();
  requests_.erase(it);
  return out;
}

std::vector<RequestOutput> Scheduler::update(const StepPlan& plan, const StepResult& result) {
  std::vector<RequestOutput> outputs;
  if (plan.seqs.empty()) return outputs;
  if (in_flight_step_ != plan.step_id) {
    fail("update() for step {}, which is not the step awaiting its result", plan.step_id);
  }
  if (result.seqs.size() != plan.seqs.size()) {
    fail("step {}: the result has {} rows, the plan {}", plan.step_id, result.seqs.size(),
         plan.seqs.size());
  }
  in_flight_step_.reset();
  if (!result.failed_loads.empty()) {
    recover_failed_loads(result.failed_loads);
    return outputs;
  }
  if (delayer_ && plan.kind != ForwardKind::kDecode) delayer_->on_prefill_ran();
  const uint64_t step_seed = spec_step_seed(config_.seed, plan.step_id);

  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const ScheduledSeq& row = plan.seqs[i];
    const SeqResult& res = result.seqs[i];
    if (res.request_id != row.request_id) {
      fail("step {}: result row {} is for request {}, the plan's for {}", plan.step_id, i,
           res.request_id, row.request_id);
    }
    auto it = requests_.find(row.request_id);
    if (it == requests_.end() || it->second->status != RequestStatus::kRunning) continue;
    Request& r = *it->second;
    RequestOutput out;
    const auto row_tokens = static_cast<int64_t>(row.tokens.size());
    if (!res.prompt_logprobs.empty()) {
      r.prompt_logprobs.insert(r.prompt_logprobs.end(), res.prompt_logprobs.begin(),
                               res.prompt_logprobs.end());
      r.prompt_logprobs_next += static_cast<int64_t>(res.prompt_logprobs.size());
    }
    if (r.in_prefill()) {
      r.num_computed_tokens += row_tokens;
      totals_.prefill_tokens += row_tokens;
      if (!r.in_prefill()) commit(r, res, 1, /*decode=*/false, out);
    } else {
      int64_t accepted = 1;
      if (spec_ && row_tokens > 1) {
        accepted = std::min<int64_t>(spec_->accepted_tokens(step_seed, r.id), row_tokens);
      }
      commit(r, res, accepted, /*decode=*/true, out);
    }
    kv_.cache_computed_blocks(r.blocks, r.tokens, r.num_computed_tokens);
    if (r.finished()) release(r);
    if (!out.new_token_ids.empty() || r.finished()) {
      std::vector<int32_t> new_tokens = std::move(out.new_token_ids);
      std::vector<RowLogprobs> new_logprobs = std::move(out.new_logprobs);
      out = r.make_output();
      out.new_token_ids = std::move(new_tokens);
      out.new_logprobs = std::move(new_logprobs);
      out.prompt_logprobs = std::move(r.prompt_logprobs);
      r.prompt_logprobs.clear();
      outputs.push_back(std::move(out));
    }
  }
  std::erase_if(running_, [](const Request* r) { return r->finished(); });
  for (const RequestOutput& out : outputs) {
    if (out.finished) requests_.erase(out.request_id);
  }
  return outputs;
}

// No forward ran. A request whose computed prefix covers a block whose load failed goes back to
// the first such block: those tokens are prefilled again, no longer a prefix hit. Fresh blocks
// are never shared, so only the request that owns a load's target can be covering it.
void Scheduler::recover_failed_loads(std::span<const BlockCopy> failed) {
  kv_.forget_failed_loads(failed);
  const std::unordered_set<int32_t> lost = [&] {
    std::unordered_set<int32_t> blocks;
    for (const BlockCopy& c : failed) blocks.insert(c.gpu_block);
    return blocks;
  }();
  for (Request* r : running_) {
    const std::vector<int32_t>& ids = r->blocks.ids;
    const auto it =
        std::find_if(ids.begin(), ids.end(), [&](int32_t b) { return lost.contains(b); });
    const int64_t from = static_cast<int64_t>(it - ids.begin()) * config_.block_size;
    if (it == ids.end() || from >= r->num_computed_tokens) continue;
    // Host blocks not yet loaded (under the copy budget) are recomputed too.
    const int64_t recomputed =
        r->num_computed_tokens - from +
        static_cast<int64_t>(r->blocks.pending_loads.size()) * config_.block_size;
    kv_.uncount_host_hit(r->blocks, recomputed);
    if (r->num_preemptions == 0) r->num_cached_tokens -= recomputed;  // its first admission
    r->num_computed_tokens = from;
  }
}

// Commits the first num_tokens sampled tokens of a row, stopping early at a stop condition. A
// decode row's committed tokens also advance the computed count: their KV was written this step.
void Scheduler::commit(Request& r, const SeqResult& res, int64_t num_tokens, bool decode,
                       RequestOutput& out) {
  if (static_cast<int64_t>(res.tokens.size()) < num_tokens) {
    fail("request {}: the executor sampled {} tokens, {} are needed", r.id, res.tokens.size(),
         num_tokens);
  }
  for (int64_t j = 0; j < num_tokens; ++j) {
    if (decode) ++r.num_computed_tokens;
    out.new_token_ids.push_back(res.tokens[static_cast<size_t>(j)]);
    if (static_cast<int64_t>(res.logprobs.size()) > j) {
      out.new_logprobs.push_back(res.logprobs[static_cast<size_t>(j)]);
    }
    ++totals_.generation_tokens;
    if (r.append_output(res.tokens[static_cast<size_t>(j)])) break;
  }
}

// Frees a finished request's KV blocks and counts how it ended; the caller unlinks it.
void Scheduler::release(Request& r) {
  kv_.free(r.blocks);
  switch (*r.finish_reason) {
    case FinishReason::kStop:
      ++totals_.finished_stop;
      break;
    case FinishReason::kLength:
      ++totals_.finished_length;
      break;
    case FinishReason::kAbort:
      ++totals_.finished_abort;
      break;
  }
}

uint64_t Scheduler::sampling_seed(const Request& r) const {
  return r.params.sampling.seed.value_or(mix64(config_.seed ^ mix64(r.id)));
}

const Request* Scheduler::find(uint64_t id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s = totals_;
  s.num_running = num_running();
  s.num_waiting = num_waiting();
  s.num_kv_blocks = kv_.num_blocks();
  s.num_free_kv_blocks = kv_.num_free_blocks();
  s.kv_usage = kv_.usage();
  s.prefix_cache_queries = kv_.stats().prefix_queries;
  s.prefix_cache_hits = kv_.stats().prefix_hits;
  s.prefix_cache_host_hits = kv_.stats().host_hits;
  s.kv_stored_blocks = kv_.stats().stored_blocks;
  s.kv_loaded_blocks = kv_.stats().loaded_blocks;
  s.kv_load_failures = kv_.stats().load_failures;
  if (const BlockPool* host = kv_.host_pool()) {
    s.num_host_kv_blocks = host->num_blocks();
    s.num_host_kv_cached = host->num_cached();
  }
  if (delayer_) s.delayer = delayer_->counters();
  return s;
}

}  // namespace paceline
