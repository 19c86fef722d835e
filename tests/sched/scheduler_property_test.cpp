// A randomized property test: thousands of scheduler steps over random arrivals, lengths, shared
// prefixes, stop tokens and cancellations, with a KV cache small enough to force preemption. No
// request is lost or finishes twice, no block leaks, no plan breaks a limit, and every ignore_eos
// request gets exactly its max_tokens.
#include <algorithm>
#include <map>
#include <ostream>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "sched/cudagraph_sizes.h"
#include "sched/scheduler.h"

namespace paceline {
namespace {

constexpr int32_t kEos = 2;

struct Variant {
  const char* name;
  ScheduleKind kind;
  int32_t speculative_tokens = 0;
  int64_t interval = 0;  // PrefillDelayer on when > 0
  int64_t long_prefill_threshold = 0;
  bool prefix_caching = true;
  KvPolicy policy = KvPolicy::kLru;
  int64_t host_blocks = 0;  // a host KV tier of this many blocks
  AdmissionPolicy admission = AdmissionPolicy::kFcfs;
  int load_failure_percent = 0;  // of the host tier's loads, that fail (no forward then runs)
  int64_t copy_budget = 0;       // --kv-offloading-max-blocks-per-step
};

void PrintTo(const Variant& v, std::ostream* os) {
  *os << v.name;
}

struct Expected {
  int64_t max_tokens = 0;
  bool ignore_eos = false;
  int64_t streamed = 0;
};

class Simulation {
 public:
  explicit Simulation(const Variant& v)
      : scheduler_(make_config(v), clock_), rng_(7), load_failure_percent_(v.load_failure_percent) {
    for (int i = 0; i < 4; ++i) prefixes_.push_back(random_tokens(8 + i * 12));
    prefixes_.emplace_back();  // some prompts share nothing
  }

  static SchedulerConfig make_config(const Variant& v) {
    SchedulerConfig c;
    c.schedule = v.kind;
    c.max_num_seqs = 8;
    c.max_num_batched_tokens = 96;
    c.max_model_len = 160;
    c.block_size = 4;
    c.num_kv_blocks = 64;
    c.enable_prefix_caching = v.prefix_caching;
    c.kv_policy = v.policy;
    c.num_host_kv_blocks = v.host_blocks;
    c.kv_offloading_max_blocks_per_step = v.copy_budget;
    c.admission = v.admission;
    c.lpm_max_wait_ms = 20;  // 20 steps of the test's 1 ms clock
    c.long_prefill_token_threshold = v.long_prefill_threshold;
    c.cudagraph_capture_sizes = {1, 2, 4};
    if (v.speculative_tokens > 0) {
      c.speculative.speculative_tokens = v.speculative_tokens;
      c.speculative.acceptance_rate = 0.6;
    }
    c.delayer.prefill_decode_interval = v.interval;
    c.seed = 11;
    return c;
  }

  void run(int steps, int arrival_steps) {
    for (int step = 0; step < steps; ++step) {
      if (step < arrival_steps) arrive();
      if (step < arrival_steps && uniform(100) < 3) cancel_one();
      if (step >= arrival_steps && !scheduler_.has_unfinished()) break;
      one_step();
      clock_.advance_ns(1'000'000);
    }
  }

  void expect_all_done() const {
    EXPECT_FALSE(scheduler_.has_unfinished());
    EXPECT_TRUE(live_.empty());
    EXPECT_EQ(finished_.size(), static_cast<size_t>(next_id_ - 1));
    EXPECT_EQ(scheduler_.kv().num_free_blocks(), scheduler_.kv().num_blocks());
    for (int32_t b = 0; b < scheduler_.kv().num_blocks(); ++b) {
      EXPECT_EQ(scheduler_.kv().pool().ref_count(b), 0);
    }
  }

  const Scheduler& scheduler() const { return scheduler_; }
  int64_t steps_run() const { return steps_; }  // passes that planned a forward

 private:
  uint64_t uniform(uint64_t n) { return rng_() % n; }

  std::vector<int32_t> random_tokens(int n) {
    std::vector<int32_t> t;
    for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>(10 + uniform(5000)));
    return t;
  }

  void arrive() {
    if (uniform(100) >= 12) return;
    std::vector<int32_t> prompt = prefixes_[uniform(prefixes_.size())];
    auto tail = random_tokens(1 + static_cast<int>(uniform(60)));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    RequestParams p;
    p.max_tokens = 1 + static_cast<int64_t>(uniform(40));
    p.ignore_eos = uniform(100) < 70;
    p.eos_token_ids = {kEos};
    if (uniform(100) < 20) p.min_tokens = static_cast<int64_t>(uniform(p.max_tokens + 1));
    const uint64_t id = next_id_++;
    scheduler_.add_request(id, std::move(prompt), p);
    live_[id] = {p.max_tokens, p.ignore_eos, 0};
  }

  void cancel_one() {
    if (live_.empty()) return;
    auto it = std::next(live_.begin(), static_cast<long>(uniform(live_.size())));
    const uint64_t id = it->first;
    auto out = scheduler_.cancel(id);
    ASSERT_TRUE(out.has_value()) << id;
    EXPECT_EQ(out->finish_reason, FinishReason::kAbort);
    EXPECT_EQ(out->usage.completion_tokens, it->second.streamed);
    finish(id);
  }

  void finish(uint64_t id) {
    EXPECT_TRUE(finished_.insert(id).second) << "request " << id << " finished twice";
    live_.erase(id);
  }

  // What each block holds, as an identity of the tokens its KV was computed for: the
  // executor's copies and writes applied to a shadow of both tiers, and every row checked to
  // read the KV of its own tokens. Speculative rows compute drafts, so they are not tracked.
  static uint64_t kv_identity(const std::vector<int32_t>& tokens, int64_t end) {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t i = 0; i < end; ++i) {
      h = (h ^ static_cast<uint64_t>(tokens[static_cast<size_t>(i)])) * 1099511628211ULL;
    }
    return h;
  }

  // The copies, then the forward unless a load failed; returns the loads that failed.
  std::vector<BlockCopy> shadow_execute(const StepPlan& plan) {
    const int64_t bs = scheduler_.config().block_size;
    if (gpu_kv_.empty()) {
      gpu_kv_.assign(static_cast<size_t>(scheduler_.kv().num_blocks()), 0);
      host_kv_.assign(static_cast<size_t>(scheduler_.config().num_host_kv_blocks), 0);
    }
    for (const BlockCopy& c : plan.kv_transfers.stores) {
      host_kv_.at(static_cast<size_t>(c.host_block)) = gpu_kv_.at(static_cast<size_t>(c.gpu_block));
    }
    std::vector<BlockCopy> failed;
    for (const BlockCopy& c : plan.kv_transfers.loads) {
      if (static_cast<int>(uniform(100)) < load_failure_percent_) {
        failed.push_back(c);  // the block keeps whatever it held
        continue;
      }
      gpu_kv_.at(static_cast<size_t>(c.gpu_block)) = host_kv_.at(static_cast<size_t>(c.host_block));
    }
    if (!failed.empty()) return failed;
    for (const ScheduledSeq& s : plan.seqs) {
      const std::vector<int32_t>& tokens = scheduler_.find(s.request_id)->tokens;
      for (int64_t i = 0; i * bs < s.start_pos; ++i) {  // what the row reads
        const int64_t filled = std::min(bs, s.start_pos - i * bs);
        EXPECT_EQ(gpu_kv_[static_cast<size_t>(s.block_table[static_cast<size_t>(i)])],
                  kv_identity(tokens, i * bs + filled))
            << "request " << s.request_id << " block " << i << " holds another sequence's KV";
      }
      const int64_t end = s.start_pos + static_cast<int64_t>(s.tokens.size());
      for (int64_t i = s.start_pos / bs; i * bs < end; ++i) {  // what it writes
        gpu_kv_[static_cast<size_t>(s.block_table[static_cast<size_t>(i)])] =
            kv_identity(tokens, std::min((i + 1) * bs, end));
      }
    }
    return failed;
  }

  StepResult execute(const StepPlan& plan) {
    StepResult result;
    result.step_id = plan.step_id;
    if (scheduler_.config().speculative.speculative_tokens == 0) {
      result.failed_loads = shadow_execute(plan);
    }
    if (!result.failed_loads.empty()) {
      for (const ScheduledSeq& s : plan.seqs) result.seqs.push_back({s.request_id, {}});
      return result;
    }
    for (const ScheduledSeq& s : plan.seqs) {
      std::vector<int32_t> sampled;
      for (int i = 0; i < s.num_logits; ++i) {
        sampled.push_back(uniform(100) < 4 ? kEos : static_cast<int32_t>(10 + uniform(5000)));
      }
      result.seqs.push_back({s.request_id, sampled});
    }
    return result;
  }

  void check_plan(const StepPlan& plan) {
    const SchedulerConfig& c = scheduler_.config();
    if (scheduler_.has_unfinished()) {
      ASSERT_FALSE(plan.seqs.empty()) << "stalled";
    }
    EXPECT_LE(plan.num_tokens(), c.max_num_batched_tokens);
    EXPECT_LE(static_cast<int64_t>(plan.seqs.size()), c.max_num_seqs);
    if (c.schedule == ScheduleKind::kSeparate) {
      EXPECT_NE(plan.kind, ForwardKind::kMixed);
    }
    if (plan.kind == ForwardKind::kDecode && !plan.seqs.empty()) {
      EXPECT_EQ(plan.padded_batch_size, padded_batch_size(scheduler_.cudagraph_capture_sizes(),
                                                          static_cast<int32_t>(plan.seqs.size())));
    }
    // Admissions stay within the copy budget while a decode runs (alone, a reload may not).
    if (c.kv_offloading_max_blocks_per_step > 0 && plan.kind != ForwardKind::kPrefill) {
      EXPECT_LE(plan.kv_transfers.loads.size(),
                static_cast<size_t>(c.kv_offloading_max_blocks_per_step))
          << "loads beyond the copy budget";
    }
    std::set<uint64_t> ids;
    for (const ScheduledSeq& s : plan.seqs) {
      EXPECT_TRUE(ids.insert(s.request_id).second) << "request twice in one plan";
      EXPECT_TRUE(live_.contains(s.request_id));
      EXPECT_FALSE(s.tokens.empty());
      const int64_t end = s.start_pos + static_cast<int64_t>(s.tokens.size());
      EXPECT_LE(end, c.max_model_len);
      EXPECT_GE(static_cast<int64_t>(s.block_table.size()) * c.block_size, end);
      const Request* r = scheduler_.find(s.request_id);
      ASSERT_NE(r, nullptr);
      EXPECT_EQ(r->status, RequestStatus::kRunning);
      // The row views the leading blocks of the request's own table, which the executor reads.
      ASSERT_LE(s.block_table.size(), r->blocks.ids.size());
      EXPECT_TRUE(std::equal(s.block_table.begin(), s.block_table.end(), r->blocks.ids.begin()));
    }
  }

  // Every reference a block holds belongs to a block table of a live request.
  void check_blocks() {
    const KvManager& kv = scheduler_.kv();
    EXPECT_GE(kv.num_free_blocks(), 0);
    EXPECT_LE(kv.usage(), 1.0);
    int64_t refs = 0, held = 0, in_use = 0;
    for (int32_t b = 0; b < kv.num_blocks(); ++b) {
      refs += kv.pool().ref_count(b);
      in_use += kv.pool().ref_count(b) > 0 ? 1 : 0;
    }
    for (const auto& [id, e] : live_) {
      const Request& r = *scheduler_.find(id);
      held += static_cast<int64_t>(r.blocks.ids.size());
      EXPECT_EQ(r.num_output_tokens(), e.streamed);
      if (r.status == RequestStatus::kRunning) {
        // A decoding request has KV for every token but the last; a prefill for its chunks.
        if (!r.in_prefill()) {
          EXPECT_EQ(r.num_computed_tokens, r.num_tokens() - 1);
        }
        EXPECT_GE(static_cast<int64_t>(r.blocks.ids.size()) * kv.block_size(),
                  r.num_computed_tokens);
      } else {
        EXPECT_TRUE(r.blocks.ids.empty());
        EXPECT_EQ(r.num_computed_tokens, 0);
      }
    }
    EXPECT_EQ(refs, held);
    EXPECT_EQ(in_use, kv.num_blocks() - kv.num_free_blocks());
  }

  void one_step() {
    StepPlan plan = scheduler_.schedule();
    check_plan(plan);
    steps_ += plan.seqs.empty() ? 0 : 1;
    for (const RequestOutput& out : scheduler_.update(plan, execute(plan))) {
      auto it = live_.find(out.request_id);
      ASSERT_NE(it, live_.end()) << "output for a finished request " << out.request_id;
      it->second.streamed += static_cast<int64_t>(out.new_token_ids.size());
      EXPECT_LE(it->second.streamed, it->second.max_tokens);
      if (!out.finished) continue;
      EXPECT_EQ(out.usage.completion_tokens, it->second.streamed);
      if (it->second.ignore_eos && out.finish_reason != FinishReason::kStop) {
        EXPECT_EQ(out.usage.completion_tokens, it->second.max_tokens);
      }
      if (out.finish_reason == FinishReason::kLength) {
        EXPECT_EQ(out.usage.completion_tokens, it->second.max_tokens);
      }
      if (it->second.ignore_eos) {
        EXPECT_NE(out.stop_token_id, kEos);
      }
      finish(out.request_id);
    }
    check_blocks();
  }

  VirtualClock clock_;
  Scheduler scheduler_;
  std::mt19937_64 rng_;
  int load_failure_percent_ = 0;
  std::vector<std::vector<int32_t>> prefixes_;
  std::map<uint64_t, Expected> live_;
  std::set<uint64_t> finished_;
  std::vector<uint64_t> gpu_kv_, host_kv_;  // shadow_execute's view of both tiers
  uint64_t next_id_ = 1;
  int64_t steps_ = 0;
};

class SchedulerProperty : public ::testing::TestWithParam<Variant> {};

TEST_P(SchedulerProperty, NoRequestLostNoBlockLeakedNoLimitBroken) {
  Simulation sim(GetParam());
  sim.run(/*steps=*/40000, /*arrival_steps=*/16000);
  sim.expect_all_done();
  const SchedulerStats st = sim.scheduler().stats();
  EXPECT_GE(sim.steps_run(), 10000);
  EXPECT_GT(st.preemptions, 0) << "the KV cache was never tight";
  EXPECT_GT(st.finished_abort, 0);
  if (GetParam().prefix_caching) {
    EXPECT_GT(st.prefix_cache_hits, 0);
  }
  if (GetParam().host_blocks > 0) {
    EXPECT_GT(st.prefix_cache_host_hits, 0) << "nothing came back from the host tier";
    EXPECT_GT(st.kv_stored_blocks, 0);
    if (GetParam().load_failure_percent > 0) {
      EXPECT_GT(st.kv_load_failures, 0) << "no load failed";
    }
    const BlockPool& host = *sim.scheduler().kv().host_pool();
    for (int32_t b = 0; b < host.num_blocks(); ++b) EXPECT_EQ(host.ref_count(b), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Compositions, SchedulerProperty,
    ::testing::Values(Variant{"separate", ScheduleKind::kSeparate},
                      Variant{"mixed", ScheduleKind::kMixed},
                      Variant{"separate_chunked_no_cache", ScheduleKind::kSeparate, 0, 0, 16,
                              false},
                      Variant{"mixed_chunked", ScheduleKind::kMixed, 0, 0, 16},
                      Variant{"separate_spec_delayer", ScheduleKind::kSeparate, 3, 4, 0},
                      Variant{"mixed_spec_delayer", ScheduleKind::kMixed, 2, 2, 24},
                      Variant{"separate_reuse_host", ScheduleKind::kSeparate, 0, 0, 0, true,
                              KvPolicy::kReuse, 24},
                      Variant{"mixed_chunked_lpm_host", ScheduleKind::kMixed, 0, 4, 16, true,
                              KvPolicy::kLru, 24, AdmissionPolicy::kLpm},
                      Variant{"separate_reuse_lpm", ScheduleKind::kSeparate, 0, 0, 0, true,
                              KvPolicy::kReuse, 0, AdmissionPolicy::kLpm},
                      Variant{"separate_reuse_host_load_failures", ScheduleKind::kSeparate, 0, 0, 0,
                              true, KvPolicy::kReuse, 24, AdmissionPolicy::kFcfs, 20},
                      Variant{"mixed_chunked_host_load_failures", ScheduleKind::kMixed, 0, 4, 16,
                              true, KvPolicy::kLru, 24, AdmissionPolicy::kFcfs, 20},
                      Variant{"separate_reuse_host_copy_budget", ScheduleKind::kSeparate, 0, 0, 0,
                              true, KvPolicy::kReuse, 24, AdmissionPolicy::kFcfs, 0, 2},
                      Variant{"mixed_lpm_host_copy_budget_load_failures", ScheduleKind::kMixed, 0,
                              2, 16, true, KvPolicy::kReuse, 24, AdmissionPolicy::kLpm, 20, 1},
                      Variant{"separate_reuse_short_first_host", ScheduleKind::kSeparate, 0, 0, 0,
                              true, KvPolicy::kReuse, 24, AdmissionPolicy::kShortFirst},
                      Variant{"mixed_chunked_short_first_delayer_host_copy_budget_load_failures",
                              ScheduleKind::kMixed, 0, 2, 16, true, KvPolicy::kReuse, 24,
                              AdmissionPolicy::kShortFirst, 20, 1}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace paceline
