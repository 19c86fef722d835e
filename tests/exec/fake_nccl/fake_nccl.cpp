// A stand-in for libnccl.so.2 with the entry points paceline resolves (nccl_library_test.cpp):
// one rank on the host, so that a collective is a copy of host memory. Built twice by CMake: as
// is, and with FAKE_NCCL_WITHOUT_ALL_GATHER (a library that lacks one entry point).
#include <cstddef>
#include <cstring>

namespace {
int element_bytes(int type) {
  return type == 7 ? 4 : type == 6 || type == 9 ? 2 : 0;
}
int communicators = 0;
}  // namespace

extern "C" {

int ncclGetVersion(int* version) {
  *version = 22809;  // 2.28.9
  return 0;
}

int ncclGetUniqueId(void* id) {
  std::memset(id, 7, 128);
  return 0;
}

struct FakeId {
  char bytes[128];
};

int ncclCommInitRank(void** comm, int nranks, FakeId id, int rank) {
  if (nranks != 1 || rank != 0 || id.bytes[0] != 7) return 4;  // ncclInvalidArgument
  *comm = &communicators;
  ++communicators;
  return 0;
}

int ncclCommInitAll(void** comms, int ndev, const int*) {
  for (int i = 0; i < ndev; ++i) comms[i] = &communicators;
  communicators += ndev;
  return 0;
}

int ncclCommDestroy(void* comm) {
  if (comm != &communicators) return 4;
  --communicators;
  return 0;
}

int ncclAllReduce(const void* send, void* recv, size_t count, int type, int op, void* comm, void*) {
  if (comm != &communicators || op != 0 || element_bytes(type) == 0) return 4;
  std::memmove(recv, send, count * static_cast<size_t>(element_bytes(type)));
  return 0;
}

#ifndef FAKE_NCCL_WITHOUT_ALL_GATHER
int ncclAllGather(const void* send, void* recv, size_t count, int type, void* comm, void*) {
  if (comm != &communicators || element_bytes(type) == 0) return 4;
  std::memmove(recv, send, count * static_cast<size_t>(element_bytes(type)));
  return 0;
}
#endif

int ncclGroupStart() {
  return 0;
}
int ncclGroupEnd() {
  return 0;
}

const char* ncclGetErrorString(int result) {
  return result == 4 ? "invalid argument (fake)" : result == 0 ? "no error (fake)" : nullptr;
}

}  // extern "C"
