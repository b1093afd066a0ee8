// gloo_compat.h - gloo's rendezvous API in both its forms, for the test programs that link
// the distribution's libgloo: until 2025 Context::connectFullMesh and PrefixStore took the
// store by reference (Debian 12 and 13); since upstream's "use shared Stores" they take a
// std::shared_ptr<Store> (Debian unstable). The form is chosen at compile time by what the
// installed headers accept, so no gloo version number (which did not change) is needed.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>

namespace dlrt_gloo {

// The newer form: connectFullMesh(std::shared_ptr<Store>, dev).
template <typename Ctx, typename S, typename Dev>
auto connect_full_mesh(Ctx& ctx, const std::shared_ptr<S>& store, Dev& dev, int)
    -> decltype(ctx.connectFullMesh(std::shared_ptr<gloo::rendezvous::Store>(store), dev)) {
  ctx.connectFullMesh(std::shared_ptr<gloo::rendezvous::Store>(store), dev);
}

// The older form: connectFullMesh(Store&, dev).
template <typename Ctx, typename S, typename Dev>
void connect_full_mesh(Ctx& ctx, const std::shared_ptr<S>& store, Dev& dev, long) {
  ctx.connectFullMesh(*store, dev);
}

// Connect every pair of ranks through the store (the store outlives the call).
template <typename Ctx, typename S, typename Dev>
void connect_full_mesh(Ctx& ctx, const std::shared_ptr<S>& store, Dev& dev) {
  connect_full_mesh(ctx, store, dev, 0);
}

// A PrefixStore over base, in whichever form its constructor takes the base.
template <typename P = gloo::rendezvous::PrefixStore>
std::shared_ptr<P> prefix_store(const std::string& prefix,
                                const std::shared_ptr<gloo::rendezvous::Store>& base) {
  if constexpr (std::is_constructible<P, const std::string&,
                                      std::shared_ptr<gloo::rendezvous::Store>>::value)
    return std::make_shared<P>(prefix, base);
  else
    return std::make_shared<P>(prefix, *base);
}

}  // namespace dlrt_gloo
