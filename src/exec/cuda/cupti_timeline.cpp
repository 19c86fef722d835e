#include "exec/cuda/cupti_timeline.h"

#include <cuda_runtime.h>
#include <cupti_activity.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>

#include "base/error.h"

namespace paceline::cuda {
namespace {

// The CUPTI entry points used, resolved from the library at run time.
struct Cupti {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

const Cupti& cupti() {
  static const Cupti loaded = [] {
    void* lib = nullptr;
    std::string errors;
    for (const char* name : {"libcupti.so.13", "libcupti.so"}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
      const char* e = dlerror();
      errors += fmt::format("{}{}", errors.empty() ? "" : "; ", e != nullptr ? e : name);
    }
    if (lib == nullptr) {
      fail(
          "--kernel-timeline needs CUPTI, the CUDA toolkit's profiling library (libcupti.so.13), "
          "on the library path (LD_LIBRARY_PATH; `scripts/gpu_check --stage` bundles it): {}",
          errors);
    }
    Cupti c;
    auto resolve = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(lib, name));
      if (f == nullptr)
        fail("--kernel-timeline: CUPTI has no {} (a CUPTI older than CUDA 13?)", name);
    };
    resolve(c.register_callbacks, "cuptiActivityRegisterCallbacks");
    resolve(c.enable, "cuptiActivityEnable");
    resolve(c.disable, "cuptiActivityDisable");
    resolve(c.flush_all, "cuptiActivityFlushAll");
    resolve(c.next_record, "cuptiActivityGetNextRecord");
    resolve(c.dropped_records, "cuptiActivityGetNumDroppedRecords");
    resolve(c.timestamp, "cuptiGetTimestamp");
    resolve(c.result_string, "cuptiGetResultString");
    return c;
  }();
  return loaded;
}

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cupti().result_string(r, &text);
  fail("--kernel-timeline: {} failed: {}", what, text != nullptr ? text : "unknown CUPTI error");
}

// The kernels CUPTI has handed over while a window is open (its buffers come back from its own
// thread or on a flush); the ones outside windows (weights, graph capture, the invariance check)
// are dropped as they come.
std::mutex records_mutex;
std::vector<KernelRecord> records;
bool recording = false;

constexpr size_t kBufferBytes = size_t{8} << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    CUpti_Activity* r = nullptr;
    while (recording && cupti().next_record(buffer, valid, &r) == CUPTI_SUCCESS) {
      if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
          r->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
        continue;
      }
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      records.push_back({k->name != nullptr ? k->name : "(unnamed)", k->start, k->end});
    }
  }
  std::free(buffer);
}

void flush() {
  if (cudaDeviceSynchronize() != cudaSuccess) fail("--kernel-timeline: the device failed");
  check(cupti().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
}

}  // namespace

std::unique_ptr<CuptiTimeline> CuptiTimeline::start() {
  const Cupti& c = cupti();
  check(c.register_callbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check(c.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  return std::unique_ptr<CuptiTimeline>(new CuptiTimeline());
}

CuptiTimeline::~CuptiTimeline() {
  cudaDeviceSynchronize();
  cupti().flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cupti().disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

void CuptiTimeline::begin_window() {
  flush();
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    records.clear();
    recording = true;
  }
  check(cupti().timestamp(&window_start_), "cuptiGetTimestamp");
}

std::vector<KernelRecord> CuptiTimeline::end_window(uint64_t* dropped) {
  flush();
  std::vector<KernelRecord> out;
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    recording = false;
    for (KernelRecord& r : records) {
      if (r.start_ns >= window_start_) out.push_back(std::move(r));
    }
    records.clear();
  }
  std::sort(out.begin(), out.end(),
            [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  if (dropped != nullptr) {
    size_t n = 0;
    *dropped = cupti().dropped_records(nullptr, 0, &n) == CUPTI_SUCCESS ? n : 0;
  }
  return out;
}

}  // namespace paceline::cuda
