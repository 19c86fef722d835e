#pragma once
// Kernel start and end times as the GPU ran them, CUDA graphs included, from CUPTI's activity
// records (the CUDA toolkit's profiling library, loaded at run time so that nothing else needs it:
// libcupti.so.13 on the library path, which `scripts/gpu_check --stage` puts in the bundle). For
// `paceline check --timing --kernel-timeline FILE`; exec/kernel_timeline.h sums the records up.
// One recorder per process (CUPTI's buffers are process-wide).
#include <cstdint>
#include <memory>
#include <vector>

#include "exec/kernel_timeline.h"

namespace paceline::cuda {

class CuptiTimeline {
 public:
  // Loads CUPTI and starts recording every kernel launched from now on (start it before CUDA
  // graphs are instantiated, so that their kernels are recorded too). Fails with what is missing
  // when CUPTI cannot be loaded or refuses.
  static std::unique_ptr<CuptiTimeline> start();
  ~CuptiTimeline();
  CuptiTimeline(const CuptiTimeline&) = delete;
  CuptiTimeline& operator=(const CuptiTimeline&) = delete;

  // Keeps the kernels that start from now on (forgets the ones before).
  void begin_window();
  // Waits for the device, and returns the kernels run since begin_window, in start order.
  // `dropped` (if given) gets how many records CUPTI could not keep.
  std::vector<KernelRecord> end_window(uint64_t* dropped = nullptr);

 private:
  CuptiTimeline() = default;
  uint64_t window_start_ = 0;
};

}  // namespace paceline::cuda
