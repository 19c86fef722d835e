#pragma once
// NCCL loaded at run time (dlopen), for tensor parallelism over several GPUs (issue 18,
// docs/tensor-parallel.md). The development machines' Debian sources have no NCCL package and the
// GPU machines ship libnccl.so.2, so paceline declares the few entry points it needs from NCCL's
// documented C API and resolves them when a run asks for more than one GPU: the build and CI need
// nothing new, and a machine without NCCL refuses at startup naming the library. Plain C++ (no
// CUDA headers): streams and communicators are opaque pointers here.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace paceline::nccl {

// NCCL's ncclResult_t, ncclDataType_t and ncclRedOp_t values, as its documentation lists them.
enum class Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};
enum class DataType : int { kFloat16 = 6, kFloat32 = 7, kBfloat16 = 9 };
enum class RedOp : int { kSum = 0 };

// ncclUniqueId: NCCL_UNIQUE_ID_BYTES (128) opaque bytes that rank 0 makes and every rank passes
// to its communicator's initialization.
struct UniqueId {
  char internal[128];
};
using Comm = void*;    // ncclComm_t
using Stream = void*;  // cudaStream_t

// "2.28.9" from ncclGetVersion's code: major * 10000 + minor * 100 + patch since NCCL 2.9, major
// * 1000 + minor * 100 + patch before.
std::string version_string(int code);

// The library name tried when none is given: what the GPU machines' NCCL installs.
inline constexpr const char* kDefaultLibrary = "libnccl.so.2";

class Library {
 public:
  // Loads `path` and resolves every entry point below; throws paceline::Error naming the library
  // and why (dlopen's message, or the first missing symbol) and what needs it.
  static std::unique_ptr<Library> load(const std::string& path = kDefaultLibrary);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const std::string& path() const { return path_; }
  int version() const;  // ncclGetVersion's code (0 if the call fails)

  Result get_unique_id(UniqueId* id) const;
  Result comm_init_rank(Comm* comm, int nranks, const UniqueId& id, int rank) const;
  Result comm_init_all(Comm* comms, int ndev, const int* devices) const;
  Result comm_destroy(Comm comm) const;
  Result all_reduce(const void* send, void* recv, size_t count, DataType type, RedOp op, Comm comm,
                    Stream stream) const;
  Result all_gather(const void* send, void* recv, size_t send_count, DataType type, Comm comm,
                    Stream stream) const;
  Result group_start() const;
  Result group_end() const;
  std::string error_string(Result result) const;

 private:
  struct Entry;
  Library(std::string path, void* handle);
  std::string path_;
  void* handle_ = nullptr;
  std::unique_ptr<Entry> entry_;
};

// NVLink multicast (NVLS) off for this process and every process it starts: NCCL_NVLS_ENABLE=0 in
// the environment, which NCCL reads when a communicator is created (the GPU machines are shared,
// and a program that uses multicast can take their GPUs out of service). Call it before creating
// any communicator. Returns the value it replaced when that was set and not "0", so the caller can
// say so.
std::optional<std::string> keep_nvls_off();

}  // namespace paceline::nccl
