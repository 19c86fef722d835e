// The small-M GEMM of decode rows (src/exec/cuda/gemm_small_m.h): against a double-precision
// reference on the projections of Qwen3-8B and an odd shape; a row's bits the same at M = 1, 17,
// 64 and 200 (four row groups) in any position, in a call shared with cuBLASLt rows and through a
// CUDA graph; and the step layout that puts the one-token sequences first. With
// PACELINE_GEMM_BENCH=1 the kernel is timed against cuBLASLt's kept algorithm at M = 1, 8, 16
// and 64.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_util.h"

#if PACELINE_HAVE_CUDA
#include "decode_test_util.h"
#include "exec/cuda/gemm.h"
#include "exec/cuda/gemm_small_m.h"
#include "exec/cuda/step_inputs.h"

namespace paceline {
namespace {

using cuda::bf16;
using cuda::DeviceBuffer;

struct Shape {
  const char* name;
  int64_t k, n;
};

// Qwen3-8B's projections, and two odd ones: k not a multiple of the 64-wide k-blocks (a partial
// block), n not a multiple of 16 (a partial warp tile) nor of 64 (a partial block tile), with
// six split-K pieces of one k-block (328, a cluster of six) and with one (64, no cluster).
const std::vector<Shape> kShapes = {
    {"qkv_proj", 4096, 6144},   {"o_proj", 4096, 4096}, {"gate_up_proj", 4096, 24576},
    {"down_proj", 12288, 4096}, {"odd", 328, 83},       {"one_piece", 64, 40},
};
// The bench's shapes: the four projections and lm_head.
const std::vector<Shape> kBenchShapes = [] {
  std::vector<Shape> v(kShapes.begin(), kShapes.begin() + 4);
  v.push_back({"lm_head", 4096, 151936});
  return v;
}();
constexpr int64_t kRows = 64;
// Rows of the largest calls (four row groups, the rows repeating the 64), and the rows the
// buffers hold.
constexpr int64_t kMany = 200;
constexpr int64_t kCapRows = 256;

std::vector<uint16_t> random_bf16(size_t n, uint64_t seed) {
  std::vector<uint16_t> v(n);
  testing::FastRandom rng(seed);
  for (uint16_t& x : v) x = testing::bf16_bits(rng.uniform());
  return v;
}

// x [kRows, k], w [n, k] in bf16, y0 [kRows, n] (the residual a beta = 1 call adds to), on the
// host and the device; y has room for a cuBLASLt call's padding.
struct Operands {
  Shape s;
  std::vector<uint16_t> hx, hw;
  std::vector<float> hy0;
  DeviceBuffer x, w, y0, y;
  Operands(const Shape& shape, uint64_t seed)
      : s(shape),
        hx(random_bf16(static_cast<size_t>(kRows * s.k), seed)),
        hw(random_bf16(static_cast<size_t>(s.n * s.k), seed + 1)),
        hy0(static_cast<size_t>(kRows * s.n)),
        x(static_cast<size_t>(cuda::gemm_buffer_rows(kCapRows) * s.k) * 2),
        w(testing::upload(hw)),
        y(static_cast<size_t>(cuda::gemm_buffer_rows(kCapRows) * s.n) * sizeof(float)) {
    testing::FastRandom rng(seed + 2);
    for (float& f : hy0) f = rng.uniform();
    y0 = testing::upload(hy0);
    set_x(hx);
  }
  void set_x(const std::vector<uint16_t>& rows_of_x) {
    PACELINE_CUDA_CHECK(cudaMemset(x.as<void>(), 0, x.bytes()));
    PACELINE_CUDA_CHECK(
        cudaMemcpy(x.as<void>(), rows_of_x.data(), rows_of_x.size() * 2, cudaMemcpyHostToDevice));
  }
  // y = y0 (row r of y gets row y0_row[r] of y0), then the GEMM of `rows` rows, the first
  // `small` of them through the small-M kernel.
  std::vector<float> run(cuda::Gemm& g, int64_t rows, int64_t small, float beta,
                         const std::vector<int>& y0_row) {
    for (int64_t r = 0; r < rows; ++r) {
      PACELINE_CUDA_CHECK(cudaMemcpy(y.as<float>() + r * s.n, y0.as<float>() + y0_row[r] * s.n,
                                     static_cast<size_t>(s.n) * sizeof(float),
                                     cudaMemcpyDeviceToDevice));
    }
    g.run_f32(x.as<bf16>(), rows, s.k, w.as<bf16>(), s.n, y.as<float>(), beta, small);
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    return testing::download<float>(y, static_cast<size_t>(rows * s.n));
  }
};

std::vector<int> identity(int64_t rows) {
  std::vector<int> v(static_cast<size_t>(rows));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
  return v;
}

// dot[r][f] = sum_k x[r][k] w[f][k] and abs[r][f] = sum_k |x[r][k] w[f][k]| in double (the
// products of bf16 values are exact), over the host's threads.
void reference(const Operands& op, std::vector<double>& dot, std::vector<double>& abs_sum) {
  const Shape& s = op.s;
  std::vector<float> x(op.hx.size()), w(op.hw.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = testing::bf16_value(op.hx[i]);
  for (size_t i = 0; i < w.size(); ++i) w[i] = testing::bf16_value(op.hw[i]);
  dot.assign(static_cast<size_t>(kRows * s.n), 0.0);
  abs_sum.assign(dot.size(), 0.0);
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int id = 0; id < threads; ++id) {
    pool.emplace_back([&, id] {
      for (int64_t f = id; f < s.n; f += threads) {
        const float* wf = w.data() + f * s.k;
        for (int64_t r = 0; r < kRows; ++r) {
          const float* xr = x.data() + r * s.k;
          double d = 0.0, a = 0.0;
          for (int64_t k = 0; k < s.k; ++k) {
            const double p = static_cast<double>(xr[k]) * wf[k];
            d += p;
            a += std::fabs(p);
          }
          dot[static_cast<size_t>(r * s.n + f)] = d;
          abs_sum[static_cast<size_t>(r * s.n + f)] = a;
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
}

// Tolerance: the products are exact in float32 (bf16 x bf16), so the only error is the float32
// accumulation: at most about (steps of the sum) x 2^-24 x sum |x w|, with a few hundred steps
// for k = 12,288 (MMAs of 16 k in sequence, then the pieces) and the tensor cores' own
// alignment of the 16 products: 1e-4 x sum |x w| holds with room, while a lost or mispaired
// k-block (the bugs this can have) is off by a whole product's share of the sum. beta = 1 adds
// one more rounding of the result.
TEST(CudaGemmSmallM, MatchesDoubleReference) {
  PACELINE_REQUIRE_GPU();
  cuda::Gemm g(nullptr);
  g.set_small_m(true);  // opt-in in serving (gemm.h); these tests are about the kernel
  uint64_t seed = 11;
  for (const Shape& s : kShapes) {
    Operands op(s, seed += 5);
    std::vector<double> dot, abs_sum;
    reference(op, dot, abs_sum);
    const cuda::SmallMPlan plan = cuda::gemm_small_m_plan(s.k, s.n);
    std::printf("[ small-m ] %s k %lld n %lld: %lld feature tiles x %lld pieces of %lld k-blocks\n",
                s.name, static_cast<long long>(s.k), static_cast<long long>(s.n),
                static_cast<long long>(plan.tiles), static_cast<long long>(plan.pieces),
                static_cast<long long>(plan.blocks_per_piece));
    for (int64_t rows : {1, 3, 8, 12, 17, 64}) {
      for (float beta : {0.0f, 1.0f}) {
        const std::vector<float> y = op.run(g, rows, rows, beta, identity(rows));
        double worst = 0.0;
        size_t bad = 0;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t f = 0; f < s.n; ++f) {
            const auto i = static_cast<size_t>(r * s.n + f);
            const double want = dot[i] + (beta != 0.0f ? op.hy0[i] : 0.0);
            const double err = std::fabs(y[i] - want);
            const double tol = 1e-4 * abs_sum[i] + std::ldexp(std::fabs(want), -22) + 1e-30;
            worst = std::max(worst, err / tol);
            bad += err <= tol ? 0 : 1;  // NaN counts as bad
          }
        }
        EXPECT_EQ(bad, 0u) << s.name << ", " << rows << " rows, beta " << beta << ": worst error "
                           << worst << " of the tolerance";
      }
    }
  }
}

// The same row, alone (M = 1), among 17 rows at another position, and among 64 in reverse
// order, with beta 0 and 1: the same bits.
// The device runs a launch in the waves its plan counted on, for each projection of Qwen3-8B and
// lm_head at any row count of a group: a cluster (the split-K pieces of a feature tile) that
// finds no room waits for another wave and doubles the call (qkv_proj's 48 clusters of five
// blocks against 47 places when a block took 97 KB of shared memory). The room it plans with is
// the device's, printed for the record.
TEST(CudaGemmSmallM, LaunchesTakeTheWavesThePlanCountedOn) {
  PACELINE_REQUIRE_GPU();
  const cuda::SmallMClusterRoom& room = cuda::gemm_small_m_cluster_room();
  std::printf("[ small-m room ] clusters at once by size 1..8:");
  for (int p = 1; p <= static_cast<int>(cuda::kSmallMMaxPieces); ++p) {
    std::printf(" %lld", static_cast<long long>(room.clusters[p]));
  }
  std::printf("\n");
  for (const Shape& s : kBenchShapes) {
    const cuda::SmallMPlan plan = cuda::gemm_small_m_plan(s.k, s.n);
    ASSERT_GE(plan.pieces, 1) << s.name;
    const int64_t planned = (plan.tiles + room.clusters[plan.pieces] - 1) / room.clusters[plan.pieces];
    std::printf("[ small-m plan ] %s: %lld tiles, %lld pieces of %lld k-blocks, %lld waves\n",
                s.name, static_cast<long long>(plan.tiles), static_cast<long long>(plan.pieces),
                static_cast<long long>(plan.blocks_per_piece), static_cast<long long>(planned));
    for (int rows : {1, 8, 16, 32, 64}) {
      int clusters = 0, resident = 0;
      ASSERT_EQ(cuda::gemm_small_m_cluster_fit(rows, s.k, s.n, &clusters, &resident), cudaSuccess);
      ASSERT_GT(resident, 0);
      EXPECT_LE((clusters + resident - 1) / resident, planned) << s.name << " at " << rows << " rows";
    }
  }
}

// The executor's choice: decode rows take the small-M kernel when no step decodes more than 64
// sequences, cuBLASLt otherwise; the environment overrides.
TEST(CudaGemmSmallM, ChosenWhenStepsDecodeAtMost64Sequences) {
  if (std::getenv("PACELINE_GEMM_SMALL_M") != nullptr) {
    GTEST_SKIP() << "PACELINE_GEMM_SMALL_M decides in this run";
  }
  EXPECT_TRUE(cuda::gemm_small_m_for(1));
  EXPECT_TRUE(cuda::gemm_small_m_for(32));
  EXPECT_TRUE(cuda::gemm_small_m_for(64));
  EXPECT_FALSE(cuda::gemm_small_m_for(65));
  EXPECT_FALSE(cuda::gemm_small_m_for(256));
  setenv("PACELINE_GEMM_SMALL_M", "1", 1);
  EXPECT_TRUE(cuda::gemm_small_m_for(256));
  setenv("PACELINE_GEMM_SMALL_M", "0", 1);
  EXPECT_FALSE(cuda::gemm_small_m_for(1));
  unsetenv("PACELINE_GEMM_SMALL_M");
}

TEST(CudaGemmSmallM, RowBitsDoNotDependOnTheBatch) {
  PACELINE_REQUIRE_GPU();
  cuda::Gemm g(nullptr);
  g.set_small_m(true);  // opt-in in serving (gemm.h); these tests are about the kernel
  uint64_t seed = 101;
  for (const Shape& s : kShapes) {
    Operands op(s, seed += 5);
    const auto row = [&](int64_t r) {
      return std::vector<uint16_t>(op.hx.begin() + r * s.k, op.hx.begin() + (r + 1) * s.k);
    };
    for (float beta : {0.0f, 1.0f}) {
      op.set_x(op.hx);
      const std::vector<float> all = op.run(g, kRows, kRows, beta, identity(kRows));
      const auto same = [&](const std::vector<float>& got, int64_t at, int64_t r) {
        return std::memcmp(got.data() + at * s.n, all.data() + r * s.n,
                           static_cast<size_t>(s.n) * sizeof(float)) == 0;
      };
      // Reversed: row r at 63 - r.
      std::vector<uint16_t> reversed;
      std::vector<int> y0_reversed;
      for (int64_t r = kRows - 1; r >= 0; --r) {
        const std::vector<uint16_t> v = row(r);
        reversed.insert(reversed.end(), v.begin(), v.end());
        y0_reversed.push_back(static_cast<int>(r));
      }
      op.set_x(reversed);
      const std::vector<float> rev = op.run(g, kRows, kRows, beta, y0_reversed);
      for (int64_t r = 0; r < kRows; ++r) {
        EXPECT_TRUE(same(rev, kRows - 1 - r, r)) << s.name << " beta " << beta << ": row " << r;
      }
      // 200 rows, row i being row i % 64: four row groups in one launch.
      std::vector<uint16_t> many;
      std::vector<int> y0_many;
      for (int64_t i = 0; i < kMany; ++i) {
        const std::vector<uint16_t> v = row(i % kRows);
        many.insert(many.end(), v.begin(), v.end());
        y0_many.push_back(static_cast<int>(i % kRows));
      }
      op.set_x(many);
      const std::vector<float> got_many = op.run(g, kMany, kMany, beta, y0_many);
      for (int64_t i = 0; i < kMany; ++i) {
        EXPECT_TRUE(same(got_many, i, i % kRows))
            << s.name << " beta " << beta << ": row " << i % kRows << " at " << i << " of 200";
      }
      for (int64_t r : {0, 37, 63}) {
        op.set_x(row(r));
        EXPECT_TRUE(same(op.run(g, 1, 1, beta, {static_cast<int>(r)}), 0, r))
            << s.name << " beta " << beta << ": row " << r << " alone";
        // 17 rows starting at r - 9 (mod 64): row r at position 9.
        std::vector<uint16_t> window;
        std::vector<int> y0_window;
        for (int64_t i = 0; i < 17; ++i) {
          const int64_t src = (r - 9 + i + kRows) % kRows;
          const std::vector<uint16_t> v = row(src);
          window.insert(window.end(), v.begin(), v.end());
          y0_window.push_back(static_cast<int>(src));
        }
        op.set_x(window);
        const std::vector<float> got = op.run(g, 17, 17, beta, y0_window);
        for (int64_t i = 0; i < 17; ++i) {
          EXPECT_TRUE(same(got, i, (r - 9 + i + kRows) % kRows))
              << s.name << " beta " << beta << ": row " << r << " window position " << i;
        }
      }
    }
  }
}

// A call of 70 rows whose first 5 are small-M rows (a mixed step) gives those 5 the bits of a
// small-M call of their own, and the other 65 the bits of a cuBLASLt call of their own; 70 small
// rows (two row groups) give each row its bits alone; a CUDA
// graph of the small-M call replays the eager bits. PACELINE_GEMM_SMALL_M's off switch
// (set_small_m(false)) sends the small rows to cuBLASLt's decode algorithm.
TEST(CudaGemmSmallM, MixedCallAndGraphKeepTheBits) {
  PACELINE_REQUIRE_GPU();
  cudaStream_t stream = nullptr;
  PACELINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    cuda::Gemm g(stream);
    g.set_small_m(true);  // opt-in in serving (gemm.h); these tests are about the kernel
    const Shape s{"o_proj", 4096, 4096};
    constexpr int64_t kMixed = 70, kSmall = 5;
    const float beta = 1.0f;
    const std::vector<uint16_t> hx = random_bf16(static_cast<size_t>(kMixed * s.k), 5);
    const std::vector<uint16_t> hw = random_bf16(static_cast<size_t>(s.n * s.k), 6);
    std::vector<float> hy0(static_cast<size_t>(kMixed * s.n));
    testing::FastRandom rng(7);
    for (float& f : hy0) f = rng.uniform();
    const int64_t cap = cuda::gemm_buffer_rows(kMixed);
    DeviceBuffer x(static_cast<size_t>(cap * s.k) * 2), w = testing::upload(hw);
    DeviceBuffer y(static_cast<size_t>(cap * s.n) * sizeof(float));
    PACELINE_CUDA_CHECK(cudaMemset(x.as<void>(), 0, x.bytes()));
    PACELINE_CUDA_CHECK(cudaMemcpy(x.as<void>(), hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
    // Copies run on the legacy stream, which `stream` does not wait for: each is followed by a
    // device-wide synchronization.
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    const auto reset_y = [&] {
      PACELINE_CUDA_CHECK(
          cudaMemcpy(y.as<void>(), hy0.data(), hy0.size() * sizeof(float), cudaMemcpyHostToDevice));
      PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    };
    const auto result = [&] {
      PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
      return testing::download<float>(y, static_cast<size_t>(kMixed * s.n));
    };
    const auto rows_equal = [&](const std::vector<float>& a, const std::vector<float>& b,
                                int64_t from, int64_t to) {
      return std::memcmp(a.data() + from * s.n, b.data() + from * s.n,
                         static_cast<size_t>((to - from) * s.n) * sizeof(float)) == 0;
    };
    const auto run = [&](int64_t rows, int64_t small) {
      g.run_f32(x.as<bf16>(), rows, s.k, w.as<bf16>(), s.n, y.as<float>(), beta, small);
    };
    reset_y();
    run(kMixed, kSmall);
    const std::vector<float> mixed = result();
    reset_y();
    run(kSmall, kSmall);
    const std::vector<float> small_alone = result();
    EXPECT_TRUE(rows_equal(mixed, small_alone, 0, kSmall));
    // The cuBLASLt rows: the same x rows as a call of their own from row 0.
    DeviceBuffer x2(static_cast<size_t>(cap * s.k) * 2), y2(y.bytes());
    PACELINE_CUDA_CHECK(cudaMemset(x2.as<void>(), 0, x2.bytes()));
    PACELINE_CUDA_CHECK(cudaMemcpy(x2.as<void>(), hx.data() + kSmall * s.k,
                                   static_cast<size_t>((kMixed - kSmall) * s.k) * 2,
                                   cudaMemcpyHostToDevice));
    PACELINE_CUDA_CHECK(cudaMemcpy(y2.as<void>(), hy0.data() + kSmall * s.n,
                                   static_cast<size_t>((kMixed - kSmall) * s.n) * sizeof(float),
                                   cudaMemcpyHostToDevice));
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    g.run_f32(x2.as<bf16>(), kMixed - kSmall, s.k, w.as<bf16>(), s.n, y2.as<float>(), beta, 0);
    PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> rest =
        testing::download<float>(y2, static_cast<size_t>((kMixed - kSmall) * s.n));
    EXPECT_EQ(std::memcmp(rest.data(), mixed.data() + kSmall * s.n, rest.size() * sizeof(float)),
              0);
    // All 70 rows small (two row groups in one launch): rows 0-4 as alone, and row 66 as a call
    // of its own (x2 holds x from row 5, so row 66 is x2's row 61; y2 likewise).
    reset_y();
    run(kMixed, kMixed);
    const std::vector<float> two_groups = result();
    EXPECT_TRUE(rows_equal(two_groups, small_alone, 0, kSmall));
    PACELINE_CUDA_CHECK(cudaMemcpy(y2.as<void>(), hy0.data() + kSmall * s.n,
                                   static_cast<size_t>((kMixed - kSmall) * s.n) * sizeof(float),
                                   cudaMemcpyHostToDevice));
    PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
    g.run_f32(x2.as<bf16>() + 61 * s.k, 1, s.k, w.as<bf16>(), s.n, y2.as<float>() + 61 * s.n, beta,
              1);
    PACELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> alone66 =
        testing::download<float>(y2, static_cast<size_t>((kMixed - kSmall) * s.n));
    EXPECT_EQ(std::memcmp(alone66.data() + 61 * s.n, two_groups.data() + 66 * s.n,
                          static_cast<size_t>(s.n) * sizeof(float)),
              0);

    // The small-M call in a CUDA graph, replayed twice.
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    PACELINE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    run(kSmall, kSmall);
    PACELINE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    PACELINE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 2; ++replay) {
      reset_y();
      PACELINE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      EXPECT_TRUE(rows_equal(result(), small_alone, 0, kSmall)) << "replay " << replay;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);

    // Switched off: the small rows are cuBLASLt's decode rows (the bits of a cuBLASLt call of
    // those rows alone), the others as before.
    g.set_small_m(false);
    reset_y();
    run(kMixed, kSmall);
    const std::vector<float> off = result();
    EXPECT_TRUE(rows_equal(off, mixed, kSmall, kMixed));
    reset_y();
    run(kSmall, kSmall);
    EXPECT_TRUE(rows_equal(off, result(), 0, kSmall));
  }
  cudaStreamDestroy(stream);
}

// Host side, no GPU needed: one-token sequences are laid out first, logit rows stay in the
// plan's order, and small_gemm_rows counts the one-token rows.
// gate_up and SwiGLU in one call (launch_gemm_small_m_swiglu): the bits of the plain call
// followed by the SwiGLU kernel on its gate and up in turns, for a row alone and in groups of up
// to four, through a cluster of split-K pieces and without one (k 64: one piece). And
// Gemm::run_swiglu in a mixed call, its decode rows by the small-M kernel and its prefill rows by
// cuBLASLt and the SwiGLU kernel: the bits of run_f32 followed by that kernel. The outputs start
// as different garbage, so an element neither path writes fails too.
TEST(CudaGemmSmallM, SwigluInTheEpilogueGivesTheBitsOfTheGemmThenTheKernel) {
  PACELINE_REQUIRE_GPU();
  struct SwigluShape {
    const char* name;
    int64_t k, width;
  };
  uint64_t seed = 71;
  for (const SwigluShape s : {SwigluShape{"gate_up_proj", 4096, 12288},
                              SwigluShape{"one_piece", 64, 128}, SwigluShape{"odd_k", 328, 192}}) {
    const int64_t n = 2 * s.width;
    const cuda::SmallMPlan plan = cuda::gemm_small_m_plan(s.k, n);
    SCOPED_TRACE(::testing::Message() << s.name << " (" << plan.pieces << " pieces)");
    const std::vector<uint16_t> hx = random_bf16(static_cast<size_t>(kCapRows * s.k), seed++);
    DeviceBuffer x(static_cast<size_t>(cuda::gemm_buffer_rows(kCapRows) * s.k) * 2);
    PACELINE_CUDA_CHECK(cudaMemset(x.as<void>(), 0, x.bytes()));
    PACELINE_CUDA_CHECK(cudaMemcpy(x.as<void>(), hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
    const DeviceBuffer w = testing::upload(random_bf16(static_cast<size_t>(n * s.k), seed++));
    DeviceBuffer gate_up(static_cast<size_t>(cuda::gemm_buffer_rows(kCapRows) * n) * 4);
    DeviceBuffer want(static_cast<size_t>(kCapRows * s.width) * 2), got(want.bytes());
    auto outputs = [&](int64_t rows) {
      PACELINE_CUDA_CHECK(cudaDeviceSynchronize());
      const auto size = static_cast<size_t>(rows * s.width);
      return std::make_pair(testing::download<uint16_t>(want, size),
                            testing::download<uint16_t>(got, size));
    };
    auto garbage = [&] {
      PACELINE_CUDA_CHECK(cudaMemset(want.as<void>(), 0x00, want.bytes()));
      PACELINE_CUDA_CHECK(cudaMemset(got.as<void>(), 0xff, got.bytes()));
    };
    for (const int rows : {1, 17, 64, 200}) {
      garbage();
      ASSERT_EQ(cuda::launch_gemm_small_m(x.as<bf16>(), rows, s.k, w.as<bf16>(), n,
                                          gate_up.as<float>(), false, 0.0f, nullptr),
                cudaSuccess);
      ASSERT_EQ(cuda::launch_swiglu(gate_up.as<float>(), s.width, rows, want.as<bf16>(), nullptr,
                                    cuda::kSwigluTurn),
                cudaSuccess);
      ASSERT_EQ(cuda::launch_gemm_small_m_swiglu(x.as<bf16>(), rows, s.k, w.as<bf16>(), s.width,
                                                 got.as<bf16>(), nullptr),
                cudaSuccess);
      const auto [a, b] = outputs(rows);
      EXPECT_EQ(a, b) << rows << " rows";
    }
    cuda::Gemm g(nullptr);
    g.set_small_m(true);
    constexpr int64_t kMixed = 45, kDecode = 5;
    garbage();
    g.run_f32(x.as<bf16>(), kMixed, s.k, w.as<bf16>(), n, gate_up.as<float>(), 0.0f, kDecode);
    ASSERT_EQ(cuda::launch_swiglu(gate_up.as<float>(), s.width, kMixed, want.as<bf16>(), nullptr,
                                  cuda::kSwigluTurn),
              cudaSuccess);
    g.run_swiglu(x.as<bf16>(), kMixed, s.k, w.as<bf16>(), s.width, gate_up.as<float>(),
                 got.as<bf16>(), kDecode);
    const auto [a, b] = outputs(kMixed);
    EXPECT_EQ(a, b) << "a mixed call";
  }
}

TEST(CudaGemmSmallM, StepLayoutPutsOneTokenSequencesFirst) {
  const std::vector<int32_t> table = {0, 1, 2, 3};
  StepPlan plan;
  const auto add = [&](uint64_t id, int tokens, int64_t start, int32_t logits) {
    ScheduledSeq s;
    s.request_id = id;
    s.tokens.assign(static_cast<size_t>(tokens), 7);
    s.start_pos = start;
    s.block_table = table;
    s.num_logits = logits;
    plan.seqs.push_back(s);
  };
  add(1, 20, 0, 1);  // prefill: rows after the one-token ones
  add(2, 1, 30, 1);  // decode
  add(3, 3, 10, 3);  // speculative verify: decode attention, cuBLASLt GEMM
  add(4, 1, 5, 1);   // decode
  cuda::StepLimits lim;
  lim.vocab_size = 100;
  lim.num_blocks = 4;
  lim.block_size = 16;
  const cuda::HostStep h = cuda::host_step_from_plan(plan, lim);
  ASSERT_EQ(h.rows(), 25);
  EXPECT_EQ(h.small_gemm_rows, 2);
  EXPECT_EQ(h.positions[0], 30);   // request 2
  EXPECT_EQ(h.positions[1], 5);    // request 4
  EXPECT_EQ(h.positions[2], 0);    // request 1's first token
  EXPECT_EQ(h.positions[22], 10);  // request 3's first token
  // Logits in plan order: request 1's last row, request 2, request 3's three, request 4.
  EXPECT_EQ(h.logit_rows, (std::vector<int32_t>{21, 0, 22, 23, 24, 1}));
  // Decode attention rows: requests 2, 4 and 3; one prefill tile set for request 1 at row 2.
  EXPECT_EQ(h.decode_rows, (std::vector<int32_t>{0, 1, 22, 23, 24}));
  ASSERT_GE(h.num_tiles(), 1);
  EXPECT_EQ(h.tiles[1], 2);
}

// Weight bytes streamed per second by the small-M kernel and by cuBLASLt's kept algorithm
// (today's path: rows padded to 128), for each projection at M = 1, 8, 16 and 64: the median of
// 25 timings of 20 calls each, rotating over copies of the weight that together exceed the L2
// (60 MB) several times, so that every call reads its weight from HBM.
TEST(CudaGemmBench, SmallMAgainstCublas) {
  PACELINE_REQUIRE_GPU();
  if (std::getenv("PACELINE_GEMM_BENCH") == nullptr) {
    GTEST_SKIP() << "set PACELINE_GEMM_BENCH=1 to time the GEMMs";
  }
  cuda::Gemm g(nullptr);
  g.set_small_m(true);  // opt-in in serving (gemm.h); these tests are about the kernel
  cudaEvent_t a, b;
  PACELINE_CUDA_CHECK(cudaEventCreate(&a));
  PACELINE_CUDA_CHECK(cudaEventCreate(&b));
  constexpr int kCalls = 20, kTimings = 25;
  // PACELINE_GEMM_BENCH_SHAPE=name times that shape alone (for a profiler's run).
  const char* only = std::getenv("PACELINE_GEMM_BENCH_SHAPE");
  for (const Shape& s : kBenchShapes) {
    if (only != nullptr && std::strcmp(only, s.name) != 0) continue;
    const size_t wbytes = static_cast<size_t>(s.n * s.k) * 2;
    const size_t copies = std::max<size_t>(2, (size_t{256} << 20) / wbytes + 1);
    std::vector<DeviceBuffer> ws;
    for (size_t c = 0; c < copies; ++c) {
      ws.emplace_back(wbytes);
      PACELINE_CUDA_CHECK(cudaMemset(ws.back().as<void>(), 0x3b, wbytes));
    }
    const int64_t cap = cuda::gemm_buffer_rows(kRows);
    DeviceBuffer x(static_cast<size_t>(cap * s.k) * 2);
    DeviceBuffer y(static_cast<size_t>(cap * s.n) * sizeof(float));
    PACELINE_CUDA_CHECK(cudaMemset(x.as<void>(), 0x3c, x.bytes()));
    PACELINE_CUDA_CHECK(cudaMemset(y.as<void>(), 0, y.bytes()));
    const float beta = s.n == 4096 ? 1.0f : 0.0f;  // o_proj and down_proj add to the residual
    for (int64_t rows : {1, 8, 16, 32, 64, 128}) {
      double ms[2] = {0, 0};
      for (int path = 0; path < 2; ++path) {
        // Both paths time decode rows: the small-M kernel, or with it off cuBLASLt's decode rows'
        // algorithm (chosen at 128 rows). Rows passed as not-small would be prefill rows and take
        // the algorithm chosen at 8,192 rows instead (what this bench timed from 2026-12-03,
        // when prefill rows got their own algorithm, to the fix).
        g.set_small_m(path == 0);
        const int64_t small = rows;
        size_t next = 0;
        std::vector<float> t;
        for (int i = 0; i <= kTimings; ++i) {
          PACELINE_CUDA_CHECK(cudaEventRecord(a));
          for (int c = 0; c < kCalls; ++c) {
            g.run_f32(x.as<bf16>(), rows, s.k, ws[next].as<bf16>(), s.n, y.as<float>(), beta,
                      small);
            next = (next + 1) % copies;
          }
          PACELINE_CUDA_CHECK(cudaEventRecord(b));
          PACELINE_CUDA_CHECK(cudaEventSynchronize(b));
          float m = 0;
          PACELINE_CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
          if (i > 0) t.push_back(m / kCalls);  // the first is a warm-up
        }
        std::sort(t.begin(), t.end());
        ms[path] = t[t.size() / 2];
      }
      int clusters = 0, resident = 0;
      PACELINE_CUDA_CHECK(cuda::gemm_small_m_cluster_fit(
          static_cast<int>(std::min(rows, cuda::kSmallMRows)), s.k, s.n, &clusters, &resident));
      std::printf(
          "[ small-m bench ] %s k %lld n %lld, M %lld: small-M %.4f ms (%.0f GB/s), "
          "cuBLASLt %.4f ms (%.0f GB/s), cuBLASLt / small-M %.2f; clusters %d, resident %d\n",
          s.name, static_cast<long long>(s.k), static_cast<long long>(s.n),
          static_cast<long long>(rows), ms[0], static_cast<double>(wbytes) / ms[0] / 1e6, ms[1],
          static_cast<double>(wbytes) / ms[1] / 1e6, ms[1] / ms[0], clusters, resident);
    }
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

}  // namespace
}  // namespace paceline

#else
TEST(CudaGemmSmallM, NeedsCudaBuild) {
  GTEST_SKIP() << "this build has no CUDA";
}
#endif
