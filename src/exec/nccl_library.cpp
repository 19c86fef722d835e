#include "exec/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "base/error.h"

namespace paceline::nccl {

std::string version_string(int code) {
  if (code <= 0) return "unknown";
  // NCCL_VERSION(X, Y, Z): X * 1000 + Y * 100 + Z up to 2.8, X * 10000 + Y * 100 + Z from 2.9.
  const bool wide = code >= 10000;
  const int major = wide ? code / 10000 : code / 1000;
  const int minor = wide ? code % 10000 / 100 : code % 1000 / 100;
  return fmt::format("{}.{}.{}", major, minor, code % 100);
}

// The C signatures of the entry points (NCCL's documented API; the enums are ints there).
struct Library::Entry {
  int (*get_version)(int*) = nullptr;
  int (*get_unique_id)(UniqueId*) = nullptr;
  int (*comm_init_rank)(Comm*, int, UniqueId, int) = nullptr;
  int (*comm_init_all)(Comm*, int, const int*) = nullptr;
  int (*comm_destroy)(Comm) = nullptr;
  int (*all_reduce)(const void*, void*, size_t, int, int, Comm, Stream) = nullptr;
  int (*all_gather)(const void*, void*, size_t, int, Comm, Stream) = nullptr;
  int (*group_start)() = nullptr;
  int (*group_end)() = nullptr;
  const char* (*get_error_string)(int) = nullptr;
};

namespace {

constexpr const char* kWhatNeedsIt =
    "tensor parallelism over several GPUs (--tensor-parallel-size N > 1 on the cuda executor) "
    "needs NCCL";

template <typename F>
void resolve(void* handle, const std::string& path, const char* name, F*& fn) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    const char* error = dlerror();
    const std::string why = error != nullptr ? error : "not found";  // before dlclose frees it
    dlclose(handle);
    fail("{}: no {} in it ({}): not NCCL, or an NCCL without that entry point; {}", path, name, why,
         kWhatNeedsIt);
  }
  fn = reinterpret_cast<F*>(symbol);
}

Result result_of(int code) {
  return static_cast<Result>(code);
}

}  // namespace

std::unique_ptr<Library> Library::load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    fail(
        "cannot load {} ({}); {}: install it (NVIDIA's libnccl2 package) or put its folder on "
        "LD_LIBRARY_PATH",
        path, why != nullptr ? why : "not found", kWhatNeedsIt);
  }
  auto entry = std::make_unique<Entry>();
  resolve(handle, path, "ncclGetVersion", entry->get_version);
  resolve(handle, path, "ncclGetUniqueId", entry->get_unique_id);
  resolve(handle, path, "ncclCommInitRank", entry->comm_init_rank);
  resolve(handle, path, "ncclCommInitAll", entry->comm_init_all);
  resolve(handle, path, "ncclCommDestroy", entry->comm_destroy);
  resolve(handle, path, "ncclAllReduce", entry->all_reduce);
  resolve(handle, path, "ncclAllGather", entry->all_gather);
  resolve(handle, path, "ncclGroupStart", entry->group_start);
  resolve(handle, path, "ncclGroupEnd", entry->group_end);
  resolve(handle, path, "ncclGetErrorString", entry->get_error_string);
  std::unique_ptr<Library> library(new Library(path, handle));
  library->entry_ = std::move(entry);
  return library;
}

Library::Library(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}

Library::~Library() {
  if (handle_ != nullptr) dlclose(handle_);
}

int Library::version() const {
  int code = 0;
  return entry_->get_version(&code) == 0 ? code : 0;
}

Result Library::get_unique_id(UniqueId* id) const {
  return result_of(entry_->get_unique_id(id));
}

Result Library::comm_init_rank(Comm* comm, int nranks, const UniqueId& id, int rank) const {
  return result_of(entry_->comm_init_rank(comm, nranks, id, rank));
}

Result Library::comm_init_all(Comm* comms, int ndev, const int* devices) const {
  return result_of(entry_->comm_init_all(comms, ndev, devices));
}

Result Library::comm_destroy(Comm comm) const {
  return result_of(entry_->comm_destroy(comm));
}

Result Library::all_reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                           Comm comm, Stream stream) const {
  return result_of(entry_->all_reduce(send, recv, count, static_cast<int>(type),
                                      static_cast<int>(op), comm, stream));
}

Result Library::all_gather(const void* send, void* recv, size_t send_count, DataType type,
                           Comm comm, Stream stream) const {
  return result_of(
      entry_->all_gather(send, recv, send_count, static_cast<int>(type), comm, stream));
}

Result Library::group_start() const {
  return result_of(entry_->group_start());
}
Result Library::group_end() const {
  return result_of(entry_->group_end());
}

std::string Library::error_string(Result result) const {
  const char* s = entry_->get_error_string(static_cast<int>(result));
  return s != nullptr ? s : fmt::format("NCCL error {}", static_cast<int>(result));
}

std::optional<std::string> keep_nvls_off() {
  const char* before = std::getenv("NCCL_NVLS_ENABLE");
  std::optional<std::string> replaced;
  if (before != nullptr && std::strcmp(before, "0") != 0) replaced = before;
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  return replaced;
}

}  // namespace paceline::nccl
