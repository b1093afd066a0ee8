// gloo_hvd_allreduce - a real libgloo job that rendezvouses the way Horovod does.
//
// Horovod's gloo controller (horovod/common/gloo/gloo_context.cc) reads the
// HOROVOD_* variables, builds three gloo contexts through an HTTP store
// (horovod/common/gloo/http_store.cc) against the rendezvous server horovodrun
// starts: scope "global" (rank, size), then "local_<HOROVOD_HOSTNAME>"
// (local_rank, local_size), then "cross_<local_rank>" (cross_rank,
// cross_size). Each is a full-mesh connect, a barrier, and DELETE
// /<scope>/<rank>. This program does exactly that against dlrt-hvd-driver,
// then allreduces the ranks on the global context and checks the sum, so a
// pass proves the driver and the worker environment are right for Horovod.
//
// Output: "rank R of N: allreduce ok sum=S" and exit 0, or a one-line error on
// stderr and exit 1.

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

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
  HTTPStore store(addr, port, scope, rank, timeout_s);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
  ctx->setTimeout(std::chrono::seconds(timeout_s));
  ctx->connectFullMesh(store, dev);
  gloo::BarrierOptions opts(ctx);
  gloo::barrier(opts);
  store.finalize();
  return ctx;
}

// Wall clock in ns, comparable across the nodes of the local test cluster
// (one kernel): the benchmark takes the latest rank's time past "global".
long long nowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace

// --times: also print "rank R: past global at <ns>" (bench/hvd-wireup.sh).
int main(int argc, char** argv) {
  int rank = -1;
  bool times = argc > 1 && !strcmp(argv[1], "--times");
  try {
    // Defaults as gloo_context.cc.
    std::string hostname = envStr("HOROVOD_HOSTNAME", "localhost");
    rank = envInt("HOROVOD_RANK", 0);
    int size = envInt("HOROVOD_SIZE", 1);
    int local_rank = envInt("HOROVOD_LOCAL_RANK", 0);
    int local_size = envInt("HOROVOD_LOCAL_SIZE", 1);
    int cross_rank = envInt("HOROVOD_CROSS_RANK", 0);
    int cross_size = envInt("HOROVOD_CROSS_SIZE", 1);
    std::string addr = envStr("HOROVOD_GLOO_RENDEZVOUS_ADDR", "");
    int port = envInt("HOROVOD_GLOO_RENDEZVOUS_PORT", -1);
    int timeout_s = envInt("HOROVOD_GLOO_TIMEOUT_SECONDS", 30);
    std::string iface = envStr("HOROVOD_GLOO_IFACE", "");

    if (addr.empty() || port <= 0)
      throw std::runtime_error(
          "HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT are not set: run under srun --dl-runtime=horovod --dl-horovod=gloo");
    if (rank < 0 || rank >= size || local_rank < 0 || local_rank >= local_size ||
        cross_rank < 0 || cross_rank >= cross_size)
      throw std::runtime_error("inconsistent HOROVOD_* rank variables");

    gloo::transport::tcp::attr attr;
    if (!iface.empty())
      attr.iface = iface;
    else {
      // gloo's default when no interface is given: the address of the host name.
      char h[256] = "";
      gethostname(h, sizeof(h) - 1);
      attr.hostname = h;
    }
    attr.ai_family = AF_INET;
    auto dev = gloo::transport::tcp::CreateDevice(attr);

    auto global = rendezvous("global", addr, port, rank, size, dev, timeout_s);
    if (times)
      printf("rank %d: past global at %lld\n", rank, nowNs());
    auto local = rendezvous("local_" + hostname, addr, port, local_rank, local_size, dev, timeout_s);
    auto cross = rendezvous("cross_" + std::to_string(local_rank), addr, port, cross_rank,
                            cross_size, dev, timeout_s);

    // Sum of ranks on the global context: N*(N-1)/2 on every rank.
    std::vector<long long> data{rank};
    gloo::AllreduceOptions opts(global);
    opts.setOutput(data.data(), data.size());
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(
        &gloo::sum<long long>));
    opts.setTimeout(std::chrono::seconds(timeout_s));
    gloo::allreduce(opts);
    long long want = (long long)size * (size - 1) / 2;
    if (data[0] != want) {
      fprintf(stderr, "rank %d of %d: allreduce FAILED sum=%lld want %lld\n", rank, size,
              data[0], want);
      return 1;
    }

    // The local and cross contexts must work too: allreduce a 1 on each.
    std::vector<long long> one{1};
    gloo::AllreduceOptions lo(local);
    lo.setOutput(one.data(), one.size());
    lo.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(
        &gloo::sum<long long>));
    gloo::allreduce(lo);
    std::vector<long long> cone{1};
    gloo::AllreduceOptions co(cross);
    co.setOutput(cone.data(), cone.size());
    co.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(
        &gloo::sum<long long>));
    gloo::allreduce(co);
    if (one[0] != local_size || cone[0] != cross_size) {
      fprintf(stderr, "rank %d of %d: local/cross allreduce FAILED (%lld of %d, %lld of %d)\n",
              rank, size, one[0], local_size, cone[0], cross_size);
      return 1;
    }
    printf("rank %d of %d: allreduce ok sum=%lld\n", rank, size, data[0]);
    return 0;
  } catch (std::exception& e) {
    fprintf(stderr, "gloo_hvd_allreduce: rank %d: %s\n", rank, e.what());
    return 1;
  }
}
