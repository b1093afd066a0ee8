// hvd_gloo_store.h - Horovod's HTTP store and rendezvous, for the gloo test programs.
//
// What horovod/common/gloo/http_store.cc and gloo_context.cc do against the
// rendezvous server, on libgloo: one HTTP request per TCP connection, up to 3
// tries 500 ms apart, a 10 ms poll in wait(), and Rendezvous() = full mesh,
// barrier, DELETE /<scope>/<rank>. Shared by gloo_hvd_allreduce (one round)
// and gloo_hvd_elastic (a round after every reset). Header-only: each
// program is one translation unit.
#ifndef DLRT_HVD_GLOO_STORE_H
#define DLRT_HVD_GLOO_STORE_H

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "tests/progs/gloo_compat.h"

namespace {

// As Horovod's http_store.h.
constexpr int kMaxRetryTimes = 3;
constexpr int kRetryWaitingTimeMs = 500;
constexpr int kPollMs = 10;

struct HttpResponse {
  int status = 0;
  std::string body;
};

// One request per TCP connection, like Horovod's third_party HTTPRequest:
// "METHOD /scope/key HTTP/1.1", Host, Content-Length; read until
// Content-Length bytes of body (or EOF).
HttpResponse httpRequest(const std::string& addr, int port, const std::string& method,
                         const std::string& path, const std::string& body, int io_timeout_s) {
  struct addrinfo hints = {}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  std::string port_s = std::to_string(port);
  int rc = getaddrinfo(addr.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0)
    throw std::runtime_error("cannot resolve " + addr + ": " + gai_strerror(rc));
  int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
  if (fd < 0) {
    freeaddrinfo(res);
    throw std::runtime_error(std::string("socket: ") + strerror(errno));
  }
  struct timeval tv = {io_timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
    int e = errno;
    freeaddrinfo(res);
    close(fd);
    throw std::runtime_error("connect " + addr + ":" + port_s + ": " + strerror(e));
  }
  freeaddrinfo(res);

  std::string req = method + " " + path + " HTTP/1.1\r\nHost: " + addr + ":" + port_s +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  for (size_t off = 0; off < req.size();) {
    ssize_t n = send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      close(fd);
      throw std::runtime_error(std::string("send: ") + strerror(e));
    }
    off += size_t(n);
  }

  std::string in;
  size_t head_end = std::string::npos, want = std::string::npos;
  char buf[4096];
  for (;;) {
    if (head_end != std::string::npos && want != std::string::npos &&
        in.size() >= head_end + want)
      break;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      throw std::runtime_error(std::string("recv: ") + strerror(e));
    }
    if (n == 0)
      break;
    in.append(buf, size_t(n));
    if (head_end == std::string::npos) {
      size_t p = in.find("\r\n\r\n");
      if (p != std::string::npos) {
        head_end = p + 4;
        std::string head = in.substr(0, p);
        for (auto& c : head)
          c = char(tolower((unsigned char)c));
        size_t cl = head.find("\r\ncontent-length:");
        if (cl != std::string::npos)
          want = std::strtoul(head.c_str() + cl + 17, nullptr, 10);
      }
    }
  }
  close(fd);
  if (head_end == std::string::npos ||
      (in.compare(0, 9, "HTTP/1.0 ") != 0 && in.compare(0, 9, "HTTP/1.1 ") != 0))
    throw std::runtime_error("malformed HTTP response to " + method + " " + path);
  HttpResponse r;
  r.status = std::atoi(in.c_str() + 9);
  r.body = in.substr(head_end, want == std::string::npos ? std::string::npos : want);
  return r;
}

class HTTPStore : public gloo::rendezvous::Store {
 public:
  HTTPStore(std::string addr, int port, std::string scope, int rank, int timeout_s)
      : addr_(std::move(addr)), port_(port), prefix_("/" + scope + "/"), rank_(rank),
        timeout_s_(timeout_s) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    perform("PUT", key, std::string(data.begin(), data.end()));
  }

  std::vector<char> get(const std::string& key) override {
    HttpResponse r = perform("GET", key, "");
    if (r.status == 404)
      return {};
    return std::vector<char>(r.body.begin(), r.body.end());
  }

  void wait(const std::vector<std::string>& keys) override {
    wait(keys, std::chrono::seconds(timeout_s_));
  }

  // Horovod's HTTPStore::wait: poll GET of every key every 10 ms.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    const auto start = std::chrono::steady_clock::now();
    while (!checkKeys(keys)) {
      if (std::chrono::steady_clock::now() - start > timeout) {
        std::string list;
        for (const auto& k : keys)
          list += (list.empty() ? "" : ",") + k;
        throw std::runtime_error("wait timeout after " + std::to_string(timeout.count() / 1000) +
                                 " s for key(s) " + prefix_ + list +
                                 ": a peer never arrived; raise HOROVOD_GLOO_TIMEOUT_SECONDS or check that every rank started");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
    }
  }

  // HTTPStore::Finalize.
  void finalize() { perform("DELETE", std::to_string(rank_), ""); }

 private:
  bool checkKeys(const std::vector<std::string>& keys) {
    for (const auto& k : keys)
      if (perform("GET", k, "").status == 404)
        return false;
    return true;
  }

  // HTTPStore::PerformHTTP: up to 3 tries, 500 ms apart, until 200 or 404.
  HttpResponse perform(const std::string& method, const std::string& key, const std::string& body) {
    std::string last;
    for (int i = 0; i < kMaxRetryTimes; i++) {
      try {
        HttpResponse r = httpRequest(addr_, port_, method, prefix_ + key, body, timeout_s_);
        if (r.status == 200 || r.status == 404)
          return r;
        last = "HTTP status " + std::to_string(r.status);
      } catch (std::exception& e) {
        last = e.what();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(kRetryWaitingTimeMs));
    }
    throw std::runtime_error(method + " " + prefix_ + key + " failed " +
                             std::to_string(kMaxRetryTimes) + " times (" + last +
                             "): is the rendezvous server at " + addr_ + ":" +
                             std::to_string(port_) + " up?");
  }

  std::string addr_;
  int port_;
  std::string prefix_;
  int rank_;
  int timeout_s_;
};

int envInt(const char* name, int def) {
  const char* v = getenv(name);
  if (!v || !*v)
    return def;
  char* end;
  long x = strtol(v, &end, 10);
  if (*end)
    throw std::runtime_error(std::string(name) + "='" + v + "' is not a number");
  return int(x);
}

std::string envStr(const char* name, const char* def) {
  const char* v = getenv(name);
  return v ? v : def;
}

// Horovod's Rendezvous(): connect a full mesh through the scope's store, a
// barrier, then tell the server this rank is done with the scope.
std::shared_ptr<gloo::rendezvous::Context> rendezvous(
    const std::string& scope, const std::string& addr, int port, int rank, int size,
    std::shared_ptr<gloo::transport::Device>& dev, int timeout_s) {
  auto store = std::make_shared<HTTPStore>(addr, port, scope, rank, timeout_s);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->setTimeout(std::chrono::seconds(timeout_s));
  dlrt_gloo::connect_full_mesh(*ctx, store, dev);
  gloo::BarrierOptions opts(ctx);
  gloo::barrier(opts);
  store->finalize();
  return ctx;
}

}  // namespace

#endif
