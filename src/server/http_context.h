#pragma once
// State that the server, its sessions and their response writers share. Writers may outlive the
// server (a handler's thread keeps them), so they hold this, never the server or the io_context.
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "server/http_router.h"
#include "server/http_server.h"

namespace paceline {

class HttpSession;

struct HttpContext {
  HttpServerOptions options;
  HttpRouter router;
  HttpHeaderCheck header_check;  // empty: every header passes

  std::atomic<size_t> open_connections{0};
  std::atomic<size_t> active_requests{0};
  std::atomic<bool> draining{false};  // stop_accepting() was called: close after each response

  // A writer posts to its session only under a shared lock while `loop_alive` holds; the server
  // clears it (exclusive lock) before destroying the io_context the sessions' sockets live on.
  std::shared_mutex life_mutex;
  bool loop_alive = true;

  // Every live session, for stop(); a session removes itself when it is destroyed.
  std::mutex sessions_mutex;
  std::unordered_map<const HttpSession*, std::weak_ptr<HttpSession>> sessions;
};

}  // namespace paceline
