// gloo_hvd_elastic - elastic Horovod's worker loop on libgloo, against dlrt-hvd-driver.
//
// What hvd.elastic.run does around a training function (horovod/common/
// elastic.py run_fn, with horovod/torch/elastic state): sync the state from
// rank 0, train and commit after every step; when a collective fails
// (HorovodInternalError: a peer is gone), restore the last commit, reset
// (hvd.shutdown + hvd.init) and go on. hvd.init after a reset is
// horovod/common/gloo/gloo_context.cc with HOROVOD_ELASTIC=1: GET
// /rank_and_size/<HOROVOD_HOSTNAME>:<HOROVOD_LOCAL_RANK> from the rendezvous
// server, "-1,..." = this slot was removed (the worker ends, "<host>[<lr>]
// has been removed from elastic job"), else the six numbers become the
// HOROVOD_* variables and the three scopes rendezvous again.
//
// Every step allreduces the ranks on the global context and checks the sum
// N*(N-1)/2 for the world it is in, and a 1 on the local and cross contexts
// against local_size and cross_size: a wrong answer from the driver fails the
// step with exit 1.
//
//   gloo_hvd_elastic --steps S [--pause-at K --flag DIR]
//
// With --pause-at, every worker writes DIR/ready.<rank> ("<pid> <host>") before step
// K and waits (at most 600 s) for DIR/go, so a test can take a node away at a
// known point. Output: "rank R of N: elastic ok steps=S rounds=K" (R and N of
// the last round) and exit 0.

#include <sys/stat.h>

#include <fstream>

#include "hvd_gloo_store.h"

namespace {

struct Contexts {
  std::shared_ptr<gloo::rendezvous::Context> global, local, cross;
  int rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
};

std::vector<int> parseSix(const std::string& s) {
  std::vector<int> v;
  size_t p = 0;
  while (p <= s.size() && v.size() < 6) {
    size_t q = s.find(',', p);
    if (q == std::string::npos)
      q = s.size();
    v.push_back(std::atoi(s.substr(p, q - p).c_str()));
    p = q + 1;
  }
  if (v.size() != 6)
    throw std::runtime_error("rank_and_size answered '" + s + "', not six numbers");
  return v;
}

// gloo_context.cc, elastic && reset_: ask the server for this slot's place.
// The server may hold the answer until the round is decided (its barrier):
// the read waits up to 600 s.
void askRankAndSize(const std::string& addr, int port, const std::string& host) {
  int lr = envInt("HOROVOD_LOCAL_RANK", 0);
  std::string key = host + ":" + std::to_string(lr);
  HttpResponse r;
  for (int i = 0;; i++) {
    try {
      r = httpRequest(addr, port, "GET", "/rank_and_size/" + key, "", 600);
      if (r.status == 200)
        break;
    } catch (std::exception& e) {
      if (i == 2)
        throw;
    }
    if (i == 2)
      throw std::runtime_error("GET /rank_and_size/" + key + " answered " + std::to_string(r.status));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::vector<int> v = parseSix(r.body);
  if (v[0] == -1)
    throw std::invalid_argument(host + "[" + std::to_string(lr) + "] has been removed from elastic job");
  const char* names[] = {"HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK",
                         "HOROVOD_LOCAL_SIZE", "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE"};
  for (int k = 0; k < 6; k++)
    setenv(names[k], std::to_string(v[k]).c_str(), 1);
}

Contexts init(bool reset, std::shared_ptr<gloo::transport::Device>& dev) {
  std::string host = envStr("HOROVOD_HOSTNAME", "localhost");
  std::string addr = envStr("HOROVOD_GLOO_RENDEZVOUS_ADDR", "");
  int port = envInt("HOROVOD_GLOO_RENDEZVOUS_PORT", -1);
  int timeout_s = envInt("HOROVOD_GLOO_TIMEOUT_SECONDS", 30);
  if (addr.empty() || port <= 0)
    throw std::invalid_argument("HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT are not set: run under srun --dl-runtime=horovod");
  if (reset)
    askRankAndSize(addr, port, host);
  Contexts c;
  c.rank = envInt("HOROVOD_RANK", 0);
  c.size = envInt("HOROVOD_SIZE", 1);
  c.local_rank = envInt("HOROVOD_LOCAL_RANK", 0);
  c.local_size = envInt("HOROVOD_LOCAL_SIZE", 1);
  c.cross_rank = envInt("HOROVOD_CROSS_RANK", 0);
  c.cross_size = envInt("HOROVOD_CROSS_SIZE", 1);
  c.global = rendezvous("global", addr, port, c.rank, c.size, dev, timeout_s);
  c.local = rendezvous("local_" + host, addr, port, c.local_rank, c.local_size, dev, timeout_s);
  c.cross = rendezvous("cross_" + std::to_string(c.local_rank), addr, port, c.cross_rank,
                       c.cross_size, dev, timeout_s);
  return c;
}

long long sum(const std::shared_ptr<gloo::rendezvous::Context>& ctx, long long v) {
  std::vector<long long> data{v};
  gloo::AllreduceOptions opts(ctx);
  opts.setOutput(data.data(), data.size());
  opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(
      &gloo::sum<long long>));
  gloo::allreduce(opts);
  return data[0];
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 10, pause_at = -1;
  std::string flag;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--steps"))
      steps = std::atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--pause-at"))
      pause_at = std::atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--flag"))
      flag = argv[i + 1];
  }
  int rank = envInt("HOROVOD_RANK", 0);
  try {
    std::string iface = envStr("HOROVOD_GLOO_IFACE", "");
    gloo::transport::tcp::attr attr;
    if (!iface.empty())
      attr.iface = iface;
    attr.ai_family = AF_INET;
    auto dev = gloo::transport::tcp::CreateDevice(attr);

    // The state: the step reached, committed after every step.
    int committed = 0, rounds = 0;
    bool reset = false, paused = false;
    Contexts c;
    for (;;) {
      int step = committed;
      try {
        c = init(reset, dev);
        rounds++;
        rank = c.rank;
        // state.sync(): rank 0's committed state to everyone.
        step = (int)sum(c.global, c.rank == 0 ? committed : 0);
        for (; step < steps; step++) {
          if (step == pause_at && !paused && !flag.empty()) {
            std::ofstream(flag + "/ready." + std::to_string(c.rank))
                << getpid() << " " << envStr("HOROVOD_HOSTNAME", "localhost") << "\n";
            for (int t = 0; t < 6000 && !exists(flag + "/go"); t++)
              std::this_thread::sleep_for(std::chrono::milliseconds(100));
            paused = true;
          }
          long long got = sum(c.global, c.rank), want = (long long)c.size * (c.size - 1) / 2;
          if (got != want) {
            fprintf(stderr, "rank %d of %d: step %d: allreduce sum=%lld want %lld\n", c.rank,
                    c.size, step, got, want);
            return 1;
          }
          long long l = sum(c.local, 1), x = sum(c.cross, 1);
          if (l != c.local_size || x != c.cross_size) {
            fprintf(stderr, "rank %d of %d: step %d: local %lld of %d, cross %lld of %d\n",
                    c.rank, c.size, step, l, c.local_size, x, c.cross_size);
            return 1;
          }
          committed = step + 1;  // state.commit()
        }
        printf("rank %d of %d: elastic ok steps=%d rounds=%d\n", c.rank, c.size, committed, rounds);
        fflush(stdout);
        return 0;
      } catch (std::invalid_argument&) {
        throw;  // not a peer failure: the worker ends
      } catch (std::exception& e) {
        // HorovodInternalError: state.restore(), reset(), go on.
        fprintf(stderr, "rank %d: round %d failed at step %d (%s): reset\n", c.rank, rounds, step,
                e.what());
        c = Contexts();
        reset = true;
      }
    }
  } catch (std::exception& e) {
    fprintf(stderr, "gloo_hvd_elastic: rank %d: %s\n", rank, e.what());
    return 1;
  }
}
