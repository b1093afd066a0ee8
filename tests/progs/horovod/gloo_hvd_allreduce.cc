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

#include "hvd_gloo_store.h"

namespace {

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
