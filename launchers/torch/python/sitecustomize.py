# dlrt's sitecustomize for the torch and torchrun runtimes (docs/torch.md, "torch
# built without libuv"). dlrt puts this folder first on the tasks' PYTHONPATH.
#
# torch 2.x's TCPStore asks for libuv unless told otherwise, and a torch built
# without it (Debian 13's python3-torch 2.6) then refuses to connect at all:
# "use_libuv was requested but PyTorch was built without libuv support". torch
# passes USE_LIBUV=0 on to some of its TCPStores only; the ones dlrt's paths go
# through (the env:// rendezvous with TORCHELASTIC_USE_AGENT_STORE=True, the
# c10d rendezvous backend of torchrun, the agent's shared store) never ask.
# This makes every TCPStore that does not choose itself follow USE_LIBUV and,
# where torch has no libuv, every TCPStore use its other backend, as the message
# suggests (the same protocol; torch's own env:// path asks for libuv explicitly).
# torch 1.x (no libuv backend) is left alone, and so is everything else.
import os as _os
import sys as _sys


def _chain():
    """Runs the sitecustomize this one hides (the distribution's), as site would."""
    import importlib.util

    here = _os.path.dirname(_os.path.abspath(__file__))
    for d in _sys.path:
        if not d or _os.path.abspath(d) == here:
            continue
        f = _os.path.join(d, "sitecustomize.py")
        if not _os.path.isfile(f):
            continue
        try:
            spec = importlib.util.spec_from_file_location("_dlrt_next_sitecustomize", f)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        except Exception as e:  # as site.execsitecustomize: say it, go on
            print("Error in sitecustomize %s; set PYTHONVERBOSE for traceback:\n%s: %s"
                  % (f, type(e).__name__, e), file=_sys.stderr)
        return


def _patch(td):
    base = getattr(td, "TCPStore", None)
    if base is None or not hasattr(base, "libuvBackend"):
        return  # torch 1.x: one backend, nothing to choose
    state = {"libuv": True}

    def without_libuv(args, kwargs):
        # use_libuv is the ninth parameter
        if len(args) >= 9:
            return args[:8] + (False,) + args[9:], kwargs
        return args, dict(kwargs, use_libuv=False)

    class TCPStore(base):
        def __init__(self, *args, **kwargs):
            chose = len(args) >= 9 or "use_libuv" in kwargs
            if not state["libuv"] or (not chose and _os.environ.get("USE_LIBUV", "1") == "0"):
                args, kwargs = without_libuv(args, kwargs)
            try:
                super().__init__(*args, **kwargs)
            except RuntimeError as e:
                # torch without libuv: the other backend, as its message suggests (torch's
                # own env:// path asks for libuv explicitly unless USE_LIBUV=0)
                if "without libuv" not in str(e):
                    raise
                state["libuv"] = False
                args, kwargs = without_libuv(args, kwargs)
                super().__init__(*args, **kwargs)

    TCPStore.__name__ = TCPStore.__qualname__ = "TCPStore"
    TCPStore.__module__ = base.__module__
    TCPStore.__doc__ = base.__doc__
    td.TCPStore = TCPStore
    # Modules torch.distributed imported already hold the name (rendezvous.py).
    for name, mod in list(_sys.modules.items()):
        if name.startswith("torch.distributed") and getattr(mod, "TCPStore", None) is base:
            mod.TCPStore = TCPStore


class _TorchDistributedHook:
    """Patches torch.distributed once it has been imported, if it ever is."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch.distributed":
            return None
        import importlib.util

        _sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            try:
                _patch(module)
            except Exception as e:  # never break torch over this
                print("dlrt: sitecustomize: cannot adapt torch's TCPStore: %s" % e,
                      file=_sys.stderr)

        spec.loader.exec_module = exec_module
        return spec


_chain()
_sys.meta_path.insert(0, _TorchDistributedHook())
