#pragma once
// Where a step's GPU time goes, from the start and end of every kernel the GPU ran over a window of
// identical steps (CUPTI's kernel records, exec/cuda/cupti_timeline.h, taken by `paceline check
// --timing --kernel-timeline FILE`): per kernel, its launches a step, how long they ran, and how
// long the GPU sat without a kernel right before them. The last is what a profiler that replays
// kernels one at a time (ncu, scripts/gpu_kernel_times) cannot show: the gaps between the
// kernels of a CUDA graph. Plain C++ (no CUDA), so the arithmetic is tested on any machine.
#include <cstdint>
#include <string>
#include <vector>

namespace paceline {

// One kernel execution: its (mangled or plain) name and its start and end on the GPU's clock.
struct KernelRecord {
  std::string name;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

struct KernelTimelineRow {
  std::string name;                    // short_kernel_name of the records' names
  double launches_per_step = 0;        // launches over the window / steps
  double busy_us_per_step = 0;         // the launches' run time (end - start) / steps
  double idle_before_us_per_step = 0;  // time with no kernel running right before each launch
                                       // (within its step) / steps
};

struct KernelTimelineSummary {
  int steps = 0;
  double launches_per_step = 0;
  double span_us_per_step = 0;  // the first kernel's start to the last one's end, mean of the steps
  double busy_us_per_step = 0;  // time some kernel runs (overlapping kernels counted once)
  double idle_us_per_step = 0;  // span - busy: the gaps between a step's kernels
  std::vector<KernelTimelineRow> rows;  // by busy + idle before, largest first
};

// The records of `steps` steps, in any order, cut into steps: into equal runs of launches when
// the count divides evenly (a CUDA graph's steps), else at the steps - 1 longest gaps. A kernel's
// idle time before it is the time since the latest end of the kernels started before it in its
// step (none for a step's first kernel; zero when it overlaps). steps < 1 or no records: an empty
// summary.
KernelTimelineSummary summarize_kernel_timeline(std::vector<KernelRecord> records, int steps);

// The summary as a markdown section titled `title`: the step's span, busy and idle time, and a
// table of the kernels.
std::string kernel_timeline_markdown(const KernelTimelineSummary& summary,
                                     const std::string& title);

// A kernel's name for a table: demangled when it is a mangled C++ name, without the return type,
// the parameter list and paceline's namespaces (template arguments kept): "void
// paceline::cuda::(anonymous namespace)::rms_norm_kernel<4>(float const*, int)" gives
// "rms_norm_kernel<4>". Names that are not C++ (cuBLAS's) are kept as they are.
std::string short_kernel_name(const std::string& name);

}  // namespace paceline
