# SPDX-License-Identifier: LGPL-2.1-or-later
"""Python binding of libforgeyard-sandbox over its C ABI (ctypes only).

    import forgeyard as fy

    caps = fy.probe()
    with fy.Policy(fy.Profile.RELEASE) as pol:
        pol.load_json({"resources": {"wall_time": "60s"}})
        pol.set_stdio(fy.Stream.OUT, fy.StdioMode.FILE, path="/tmp/out.txt")
        with pol.prepare(["/bin/sh", "-c", "echo hi"], caps) as plan, plan.start() as h:
            with h.wait(timeout=None) as res:  # (None on timeout when one is given)
                print(res.outcome.name, res.exit_code, res.to_dict())

Every failing call raises forgeyard.Error. Every C object is owned by one
Python object and freed exactly once: by close(), by leaving its `with`
block, or (as a fallback) when it is garbage collected.
"""
import ctypes
import json as _json
import os
import math
import sys
import threading
import time
import weakref

from . import _lib
from ._lib import lib as _c
from ._constants import (CONSTANTS, CONSTANTS_PATH, ENUMS, ErrorCode, Step, Level, Cap, Profile,
                         Control, ControlState, Mode, Limit, Net, Dns, NetHost, Proto, Stream, StdioMode, Outcome,
                         CancelReason, Stage, Usage, Left, ProbeFlag, ShellsStat)

# Every FY_* constant of the headers as a module attribute (forgeyard.FY_E_POLICY, ...).
globals().update(CONSTANTS)

LIBRARY_PATH = _lib.loaded_path or _lib.path

# The constants must describe the library loaded: same major version (the
# ABI), and no newer minor than the library (new constants need new code).
_lib_version = _c.fy_version()
if "FY_VERSION" in CONSTANTS and (CONSTANTS["FY_VERSION"] >> 16 != _lib_version >> 16
                                  or CONSTANTS["FY_VERSION"] >> 8 > _lib_version >> 8):
    raise ImportError("forgeyard: %s is for version %#x, the library %s is version %#x"
                      % (CONSTANTS_PATH, CONSTANTS["FY_VERSION"], LIBRARY_PATH, _lib_version))
UNLIMITED = CONSTANTS["FY_UNLIMITED"]

__all__ = ["Error", "Caps", "Policy", "Prepared", "Handle", "Result", "Shells", "Action", "ActionAttempt",
           "ActionResult", "probe", "version",
           "version_string", "CONSTANTS", "CONSTANTS_PATH", "LIBRARY_PATH", "UNLIMITED"] + \
          [e.__name__ for e in ENUMS] + sorted(CONSTANTS)


def _s(b):
    return None if b is None else b.decode("utf-8", "replace")


def _b(s, what="argument", none_ok=False):
    """A C string: a NUL inside would cut it there in C (an environment name
    "A\\0EVIL" became "A"): refused. None raises TypeError (in an argv it
    became the array's NULL end, cutting the command) unless none_ok, where
    NULL means something (a default)."""
    if s is None:
        if none_ok:
            return None
        raise TypeError("%s: expected str, bytes or path, got None" % what)
    if isinstance(s, os.PathLike):
        s = os.fspath(s)
    if isinstance(s, str):
        s = s.encode("utf-8")
    elif not isinstance(s, bytes):
        raise TypeError("%s: expected str, bytes or path, got %s" % (what, type(s).__name__))
    if b"\0" in s:
        raise ValueError("%s: holds a NUL byte" % what)
    return s


def _u64(v, what="value"):
    """An unsigned 64-bit integer, checked (ctypes would wrap -2 or 2**64+5)."""
    v = int(v)
    if v < 0 or v > 0xFFFFFFFFFFFFFFFF:
        raise ValueError("%s: %d is not an unsigned 64-bit integer" % (what, v))
    return v


def _u32(v, what="value"):
    """An unsigned 32-bit integer (a C uint32_t), checked: ctypes wrapped
    2**32 + Profile.RELEASE to RELEASE."""
    v = int(v)
    if v < 0 or v > 0xFFFFFFFF:
        raise ValueError("%s: %d is not an unsigned 32-bit integer" % (what, v))
    return v


def _i32(v, what="value"):
    """A C int, checked: ctypes wrapped fd=2**32+1 to 1 (the host's stdout)."""
    v = int(v)
    if v < -0x80000000 or v > 0x7FFFFFFF:
        raise ValueError("%s: %d is out of the range of a C int" % (what, v))
    return v


def _enum_or_int(enum_cls, v):
    try:
        return enum_cls(v)
    except ValueError:
        return v


def _seconds(timeout):
    """A timeout in seconds, checked: None (or infinity) -> None (no limit)."""
    if timeout is None:
        return None
    if math.isnan(timeout) or timeout < 0:
        raise ValueError("timeout must be >= 0 seconds or None, not %r" % (timeout,))
    return None if math.isinf(timeout) else timeout


def _usec(timeout):
    """Seconds (int/float) -> microseconds; None (or infinity) -> FY_UNLIMITED."""
    timeout = _seconds(timeout)
    if timeout is None:
        return UNLIMITED
    return min(int(timeout * 1000000), UNLIMITED - 1)


# Handle.wait() waits in slices of at most this many seconds: between two C
# calls the interpreter runs pending signal handlers (KeyboardInterrupt, a
# SIGTERM handler that cancels), which it cannot do while fy_handle_wait runs.
_WAIT_SLICE = 0.1


class Error(Exception):
    """A failed libforgeyard-sandbox call.

    code (negative FY_E_*, as ErrorCode when known), code_name ("FY_E_POLICY"),
    step (FY_STEP_*, as Step when known), step_name ("policy"), message,
    os_code (errno or 0), location (the JSON path of a policy error, e.g.
    "$.resources.memory", else None), function (the C function that failed).
    """

    def __init__(self, code, step=0, message=None, os_code=0, location=None, function=None):
        code, step = int(code), int(step)
        c_code = -0x80000000 <= code <= 0x7FFFFFFF
        self.code = _enum_or_int(ErrorCode, code)
        self.code_name = (_s(_c.fy_error_name(code)) if c_code else None) or str(code)
        self.step = _enum_or_int(Step, step)
        self.step_name = _s(_c.fy_step_name(step)) if 0 <= step <= 0xFFFFFFFF else None
        self.message = message if message is not None else \
            ((_s(_c.fy_strerror(code)) if c_code else None) or "")
        self.os_code = os_code
        self.location = location
        self.function = function
        super().__init__(str(self))

    path = property(lambda self: self.location, doc="alias of location")

    def __reduce__(self):
        # Exception's own reduce re-calls __init__ with args == (str(self),):
        # the message became the code (pickle, copy and ProcessPoolExecutor failed).
        return (type(self), (int(self.code), int(self.step), self.message, self.os_code, self.location,
                             self.function), dict(self.__dict__))

    def __str__(self):
        s = self.code_name
        if self.function:
            s = "%s: %s" % (self.function, s)
        if self.location:
            s += " at " + self.location
        s += ": " + self.message
        if self.step:
            s += " (step %s)" % (self.step_name or int(self.step))
        if self.os_code:
            s += " [os error %d]" % self.os_code
        return s

    @classmethod
    def _take(cls, errp, rc, function):
        """Builds an Error from an fy_error * (which it frees) or from rc alone."""
        if not errp:
            return cls(rc, function=function)
        try:
            code = _c.fy_error_code(errp)
            return cls(code if code < 0 else rc, _c.fy_error_step(errp), _s(_c.fy_error_message(errp)),
                       _c.fy_error_os_code(errp), _s(_c.fy_error_location(errp)), function)
        finally:
            _c.fy_error_free(errp)


# Per thread, one slot per binding call in progress: the first exception an
# output callback raised during that call (ctypes would print and drop it).
_tls = threading.local()


def _hand_over(exc):
    """Keeps exc for the innermost binding call in progress on this thread;
    False when there is none."""
    slots = getattr(_tls, "slots", None)
    if not slots:
        return False
    if slots[-1] is None:
        slots[-1] = exc
    return True


# A signal pending when the library calls a stdio callback raises its
# KeyboardInterrupt as the callback's Python code starts, before any try: ctypes
# then hands it to sys.unraisablehook, which would print and drop it. For the
# binding's own callbacks the exception goes to the call in progress instead.
_prev_unraisablehook = getattr(sys, "unraisablehook", None)


def _unraisablehook(u):
    if getattr(u.object, "_forgeyard_callback", False) and u.exc_value is not None \
            and _hand_over(u.exc_value):
        return
    _prev_unraisablehook(u)


if _prev_unraisablehook is not None:
    sys.unraisablehook = _unraisablehook


def _call(fn, *args):
    """Calls fn(*args, &err); raises Error when it returns < 0. Frees the error.
    An exception an output callback raised during the call (KeyboardInterrupt
    included) is raised here once the C call has returned."""
    err = _lib.fy_error_p()
    slots = getattr(_tls, "slots", None)
    if slots is None:
        slots = _tls.slots = []
    depth = len(slots)
    slots.append(None)
    try:
        rc = fn(*args, ctypes.byref(err))
    finally:
        exc = slots[depth]
        del slots[depth:]
    if exc is not None:
        if err:
            _c.fy_error_free(err)
        raise exc
    if rc < 0:
        raise Error._take(err, rc, fn.__name__)
    if err:  # not expected on success; never leak it
        _c.fy_error_free(err)
    return rc


def _check(rc, function):
    """For the calls without an fy_error ** (accessors): rc < 0 raises."""
    if rc < 0:
        raise Error(rc, function=function)
    return rc


def _call_json(fn, obj):
    out = ctypes.c_void_p()
    _call(fn, obj, ctypes.byref(out))
    try:
        return ctypes.string_at(out.value).decode("utf-8") if out.value else ""
    finally:
        _c.fy_free(out)


def _finalize(freefn, ptr):
    if ptr:
        freefn(ptr)


def _acquire(obj):
    """Counts obj as in use (checked and counted under its guard's lock, so a
    close() in another thread either happens before, and this raises
    ValueError, or after the call, and raises RuntimeError meanwhile).
    Returns the guard to give to _release."""
    g = obj._guard()
    with g._mu:
        if obj.closed:
            raise ValueError("%s is closed" % type(obj).__name__)
        g._busy += 1
    return g


def _release(g):
    with g._mu:
        g._busy -= 1


class _Using:
    """`with _Using((obj, cls, "name"), ...)`: every object not None, whose C
    pointer the call passes, counted as in use for the call like self (close()
    of an argument from another thread freed it under the C call: a double
    free). An object not of cls raises TypeError."""

    def __init__(self, *items):
        self._items = items
        self._held = []

    def __enter__(self):
        try:
            for obj, cls, what in self._items:
                if obj is None:
                    continue
                if not isinstance(obj, cls):
                    raise TypeError("%s: expected forgeyard.%s, got %s"
                                    % (what, cls.__name__, type(obj).__name__))
                self._held.append(_acquire(obj))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        while self._held:
            _release(self._held.pop())
        return False


def _guarded(fn):
    """fn (a method of an _Owned) counted as in use while it runs: close() from
    another thread meanwhile raises instead of freeing the C object under a
    call that released the GIL (every ctypes call does). Objects passed as
    arguments are held by the method itself (_Using)."""
    def wrapper(self, *args, **kwargs):
        g = _acquire(self)
        try:
            return fn(self, *args, **kwargs)
        finally:
            _release(g)
    wrapper.__name__ = fn.__name__
    wrapper.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
    wrapper.__doc__ = fn.__doc__
    return wrapper


class _Owned:
    """One C object, freed exactly once (close(), `with`, or garbage collection).

    Every public method and property counts the object as in use while it runs;
    close() of an object in use by another thread raises RuntimeError (the C
    object is never freed under a call in progress: cancel() a wait(), then
    close() after it returns)."""
    _free = None
    _busy = 0

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, v in list(vars(cls).items()):
            if name.startswith("_") or name == "close":
                continue
            if isinstance(v, property) and v.fget is not None:
                setattr(cls, name, property(_guarded(v.fget), v.fset, v.fdel, v.__doc__))
            elif callable(v) and not isinstance(v, (classmethod, staticmethod, type)):
                setattr(cls, name, _guarded(v))

    def _own(self, ptr):
        self._ptr = ptr
        self._mu = threading.Lock()
        self._busy = 0
        # weakref.finalize runs at most once: close() and the GC path share it.
        self._fin = weakref.finalize(self, _finalize, type(self)._free, ptr)

    def _guard(self):
        """The object whose in-use count covers this one (itself)."""
        return self

    @property
    def _p(self):
        p = getattr(self, "_ptr", None)
        if p is None or not p:
            raise ValueError("%s is closed" % type(self).__name__)
        return p

    @property
    def closed(self):
        return getattr(self, "_ptr", None) is None

    def _detach(self):
        """Under the guard's lock: refuses while in use, else marks closed; the
        finalizer to run (outside the lock), or None."""
        g = self._guard()
        if g._busy:
            raise RuntimeError("%s.close(): in use by another thread (cancel it, then close "
                               "after the call returns)" % type(self).__name__)
        fin = getattr(self, "_fin", None)
        if fin is not None:
            self._ptr = None
        return fin

    def close(self):
        mu = getattr(self._guard(), "_mu", None)
        if mu is None:
            return
        with mu:
            fin = self._detach()
        if fin is not None:
            fin()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# ---------------------------------------------------------------------------
# Capabilities

def _cap(cap):
    if isinstance(cap, str):
        key = cap.upper().replace("-", "_")
        try:
            return Cap[key]
        except KeyError:
            for c in Cap:
                if _s(_c.fy_cap_name(c)) == cap:
                    return c
            raise ValueError("unknown capability %r" % cap) from None
    return _u32(cap, "cap")


class Caps(_Owned):
    """A capability snapshot (fy_caps). Get one with probe()."""
    _free = staticmethod(_c.fy_caps_free)

    def __init__(self, ptr):
        self._own(ptr)

    def has(self, cap):
        """True when the host has cap (a Cap, its int, or a name: "userns", "USERNS")."""
        return bool(_check(_c.fy_caps_has(self._p, _cap(cap)), "fy_caps_has"))

    def value(self, cap):
        """The capability's value (e.g. the Landlock ABI), or None when absent."""
        v = ctypes.c_int64()
        rc = _c.fy_caps_value(self._p, _cap(cap), ctypes.byref(v))
        if rc < 0:
            if rc == CONSTANTS["FY_E_NOTFOUND"]:
                return None
            raise Error(rc, function="fy_caps_value")
        return v.value

    def reason(self, cap):
        return _s(_c.fy_caps_reason(self._p, _cap(cap)))

    def hint(self, cap):
        return _s(_c.fy_caps_hint(self._p, _cap(cap)))

    @property
    def max_level(self):
        return _enum_or_int(Level, _check(_c.fy_caps_max_level(self._p), "fy_caps_max_level"))

    @property
    def from_snapshot(self):
        return bool(_check(_c.fy_caps_from_snapshot(self._p), "fy_caps_from_snapshot"))

    def to_json(self):
        return _call_json(_c.fy_caps_to_json, self._p)

    def to_dict(self):
        return _json.loads(self.to_json())


def probe(flags=0, snapshot_dir=None, snapshot=False):
    """fy_probe (or, with snapshot=True, fy_probe_snapshot in snapshot_dir) -> Caps."""
    ret = _lib.fy_caps_p()
    if snapshot:
        _call(_c.fy_probe_snapshot, _u64(flags, "flags"), _b(snapshot_dir, "snapshot_dir", none_ok=True),
              ctypes.byref(ret))
    else:
        _call(_c.fy_probe, _u64(flags, "flags"), ctypes.byref(ret))
    return Caps(ret)


# ---------------------------------------------------------------------------
# Policy

def _profile(profile):
    if isinstance(profile, str):
        rc = _c.fy_profile_from_name(_b(profile))
        if rc < 0:
            raise Error(rc, CONSTANTS["FY_STEP_POLICY"], "unknown profile %r" % profile,
                        function="fy_profile_from_name")
        return rc
    return _u32(profile, "profile")


class _Keep:
    """Python callables the C side holds pointers to: kept alive as long as any
    policy, plan or handle made from them lives."""

    def __init__(self):
        self.items = {}


class Policy(_Owned):
    """A mutable policy builder (fy_policy). profile: a Profile, its int or its name."""
    _free = staticmethod(_c.fy_policy_free)

    def __init__(self, profile=Profile.STANDARD_CI, json=None):
        ret = _lib.fy_policy_p()
        _call(_c.fy_policy_new, _profile(profile), ctypes.byref(ret))
        self._own(ret)
        self._keep = _Keep()
        if json is not None:
            try:
                self.load_json(json)
            except BaseException:
                self.close()
                raise

    @classmethod
    def from_json(cls, doc, profile=Profile.STANDARD_CI):
        """A policy of profile with the JSON document (str, bytes or dict) applied."""
        return cls(profile, json=doc)

    def load_json(self, doc):
        """fy_policy_load_json: all or nothing; errors carry the JSON path (Error.location)."""
        if isinstance(doc, (dict, list)):
            doc = _json.dumps(doc)
        data = _b(doc, "json")
        _call(_c.fy_policy_load_json, self._p, data, len(data))
        return self

    def to_json(self):
        return _call_json(_c.fy_policy_to_json, self._p)

    def to_dict(self):
        return _json.loads(self.to_json())

    def validate(self):
        _call(_c.fy_policy_validate, self._p)
        return self

    def set_isolation(self, min_level, preferred_level):
        _call(_c.fy_policy_set_isolation, self._p, _u32(min_level, "min_level"),
              _u32(preferred_level, "preferred_level"))
        return self

    def set_level_floor(self, level):
        _call(_c.fy_policy_set_level_floor, self._p, _u32(level, "level"))
        return self

    def set_control(self, control, mode):
        _call(_c.fy_policy_set_control, self._p, _u32(control, "control"), _u32(mode, "mode"))
        return self

    def set_limit(self, limit, value):
        _call(_c.fy_policy_set_limit, self._p, _u32(limit, "limit"), _u64(value, "limit"))
        return self

    def get_limit(self, limit):
        v = ctypes.c_uint64()
        _check(_c.fy_policy_get_limit(self._p, _u32(limit, "limit"), ctypes.byref(v)), "fy_policy_get_limit")
        return v.value

    def add_bind(self, host_path, target, flags=0):
        _call(_c.fy_policy_add_bind, self._p, _b(host_path, "host_path"), _b(target, "target"), _u32(flags, "flags"))
        return self

    def set_workdir(self, path):
        _call(_c.fy_policy_set_workdir, self._p, _b(path, "path"))
        return self

    def set_env(self, name, value):
        _call(_c.fy_policy_set_env, self._p, _b(name, "env name"), _b(value, "env value"))
        return self

    def set_network(self, mode):
        _call(_c.fy_policy_set_network, self._p, _u32(mode, "mode"))
        return self

    def set_platform_property(self, name, value):
        """fy_policy_set_platform_property: a scheduler's property as a requirement
        (only ever stricter; unknown ones raise Error FY_E_UNSUPPORTED)."""
        _call(_c.fy_policy_set_platform_property, self._p, _b(name), _b(value))
        return self

    def set_dns(self, dns):
        _call(_c.fy_policy_set_dns, self._p, _u32(dns, "dns"))
        return self

    def add_destination(self, host, proto=None, port_min=1, port_max=None):
        """fy_policy_add_destination: a name, an address or a CIDR block; Proto.TCP by default;
        port_max defaults to port_min."""
        _call(_c.fy_policy_add_destination, self._p, _b(host, "host"),
              _u32(Proto.TCP if proto is None else proto, "proto"), _u32(port_min, "port_min"),
              _u32(port_min if port_max is None else port_max, "port_max"))
        return self

    def set_network_host(self, setting, value):
        """fy_policy_set_network_host: NetHost.UPLINK, HOSTS_FILE or LINK_SUBNET (None: the default)."""
        _call(_c.fy_policy_set_network_host, self._p, _u32(setting, "setting"), _b(value, "value", none_ok=True))
        return self

    def set_state_dir(self, path):
        """Where live sandboxes are recorded (None: the library's default)."""
        _call(_c.fy_policy_set_state_dir, self._p, _b(path, "path", none_ok=True))
        return self

    def set_stdio(self, stream, mode, fd=-1, path=None):
        """fy_policy_set_stdio. StdioMode.FD duplicates fd (the caller keeps its own);
        StdioMode.FILE creates path (must not exist); StdioMode.PIPE: read the host end
        with Handle.stdio_fd()."""
        if hasattr(fd, "fileno"):
            fd = fd.fileno()
        _call(_c.fy_policy_set_stdio, self._p, _u32(stream, "stream"), _u32(mode, "mode"), _i32(fd, "fd"),
              _b(path, "path", none_ok=True))
        self._keep.items.pop(int(stream), None)
        return self

    def set_stdio_callback(self, stream, fn):
        """Live output (StdioMode.CALLBACK): fn(stream, data) with data bytes, and a last
        call with data None when the stream ended. Called on the thread in Handle.wait()
        or Handle.process(). The first exception it raises (KeyboardInterrupt included)
        is raised by that wait()/process() once the library call has returned (the
        attempt goes on: cancel() it); later output still reaches fn.
        fn None sets the stream back to StdioMode.NULL."""
        stream = _u32(stream, "stream")
        if fn is None:
            _call(_c.fy_policy_set_stdio_callback, self._p, stream, _lib.fy_output_fn(), None)
            self._keep.items.pop(stream, None)
            return self
        if not callable(fn):
            raise TypeError("set_stdio_callback: fn must be callable or None, got %s" % type(fn).__name__)

        def trampoline(_userdata, s, data, length):
            try:
                fn(_enum_or_int(Stream, s), None if not data else ctypes.string_at(data, length))
            except BaseException as e:  # noqa: B036 (KeyboardInterrupt too: handed to the caller)
                if not _hand_over(e):
                    raise  # no binding call to hand it to: ctypes prints it

        trampoline._forgeyard_callback = True

        cfn = _lib.fy_output_fn(trampoline)
        _call(_c.fy_policy_set_stdio_callback, self._p, stream, cfn, None)
        self._keep.items[stream] = cfn
        return self

    def prepare(self, argv, caps=None):
        """fy_prepare -> Prepared. caps None: the library's cached probe."""
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv must be a sequence of strings, not a single string")
        args = [_b(a, "argv") for a in argv]
        arr = (ctypes.c_char_p * (len(args) + 1))(*args, None)
        ret = _lib.fy_prepared_p()
        with _Using((caps, Caps, "caps")):
            _call(_c.fy_prepare, self._p, caps._p if caps is not None else None, arr, ctypes.byref(ret))
        return Prepared(ret, dict(self._keep.items))

    def run(self, argv, caps=None, timeout=None):
        """prepare + start + wait. Returns the Result; on timeout the attempt is
        cancelled (CancelReason.USER) and its cancelled result returned. An exception
        while it waits (KeyboardInterrupt, or one a stdio callback raised) closes the
        handle, which kills the sandbox at once, and is raised."""
        with self.prepare(argv, caps) as plan, plan.start() as h:
            res = h.wait(timeout)
            if res is None:
                h.cancel()
                res = h.wait(None)
            return res


# ---------------------------------------------------------------------------
# Plan, handle, result

class Prepared(_Owned):
    """An immutable, negotiated plan (fy_prepared). Can start many attempts."""
    _free = staticmethod(_c.fy_prepared_free)

    def __init__(self, ptr, keep=None):
        self._own(ptr)
        self._keep = keep or {}

    @property
    def backend(self):
        return _s(_c.fy_prepared_backend(self._p))

    @property
    def level(self):
        return _enum_or_int(Level, _check(_c.fy_prepared_level(self._p), "fy_prepared_level"))

    def control(self, control):
        """ControlState of a Control after negotiation."""
        return _enum_or_int(ControlState, _check(_c.fy_prepared_control(self._p, _u32(control, "control")),
                                                 "fy_prepared_control"))

    @property
    def is_impure(self):
        return bool(_check(_c.fy_prepared_is_impure(self._p), "fy_prepared_is_impure"))

    def to_json(self):
        return _call_json(_c.fy_prepared_to_json, self._p)

    def to_dict(self):
        return _json.loads(self.to_json())

    def start(self, shells=None):
        """fy_start -> Handle (returns at once); with shells (a Shells set), in one
        of its pre-started shells when one fits (fy_start_shell)."""
        ret = _lib.fy_handle_p()
        if shells is None:
            _call(_c.fy_start, self._p, ctypes.byref(ret))
        else:
            with _Using((shells, Shells, "shells")):
                _call(_c.fy_start_shell, self._p, shells._p, ctypes.byref(ret))
        return Handle(ret, self._keep)


class Shells(_Owned):
    """A host-owned set of pre-started sandbox shells (fy_shells_new(3)) shaped like
    `prepared`: up to `count` kept ready by fill(), each discarded after `idle`
    seconds unclaimed. Prepared.start(shells=...) claims one. close() discards every
    shell (witnessed)."""
    _free = staticmethod(_c.fy_shells_free)

    def __init__(self, prepared, count=1, idle=60.0):
        ret = _lib.fy_shells_p()
        count, idle = _u32(count, "count"), _usec(idle)
        with _Using((prepared, Prepared, "prepared")):
            _call(_c.fy_shells_new, prepared._p, count, idle, ctypes.byref(ret))
        self._own(ret)
        self._prepared = prepared  # the set keeps its own reference; this keeps the object

    def fill(self):
        """fy_shells_fill: makes shells until `count` are ready; how many are ready."""
        return _call(_c.fy_shells_fill, self._p)

    def stat(self, what):
        """A ShellsStat counter (READY, MADE, CLAIMED, DISCARDED, LEFT)."""
        v = ctypes.c_uint64()
        _check(_c.fy_shells_stat(self._p, _u32(what, "what"), ctypes.byref(v)), "fy_shells_stat")
        return v.value


class Handle(_Owned):
    """A running attempt (fy_handle). close() (fy_handle_free) of a handle still
    running kills the sandbox at once, without a grace period and without a result
    (fy_handle_free(3)): cancel() and wait() first to let the workload stop."""
    _free = staticmethod(_c.fy_handle_free)

    def __init__(self, ptr, keep=None):
        self._own(ptr)
        self._keep = keep or {}
        self._lock = threading.Lock()

    def fileno(self):
        """fy_handle_get_fd: readable when process() has work to do (owned by the handle)."""
        return _check(_c.fy_handle_get_fd(self._p), "fy_handle_get_fd")

    def stdio_fd(self, stream):
        """fy_handle_get_stdio_fd for a StdioMode.PIPE stream. For Stream.OUT/ERR the fd
        stays owned by the handle (do not close it); for Stream.IN it is handed over:
        the caller must close it (os.close) to send end-of-file."""
        return _check(_c.fy_handle_get_stdio_fd(self._p, _u32(stream, "stream")), "fy_handle_get_stdio_fd")

    def stdin(self):
        """The stdin pipe as a binary file object the caller owns (close() = EOF)."""
        return os.fdopen(self.stdio_fd(Stream.IN), "wb")

    @property
    def timeout(self):
        """Seconds until the next library deadline, or None when there is none."""
        v = ctypes.c_uint64()
        rc = _check(_c.fy_handle_get_timeout_usec(self._p, ctypes.byref(v)), "fy_handle_get_timeout_usec")
        if rc == 0 or v.value == UNLIMITED:
            return None
        return v.value / 1e6

    def _drive(self, fn, *args):
        res = _lib.fy_result_p()
        try:
            rc = _call(fn, self._p, *args, ctypes.byref(res))
        except BaseException:
            if res:  # a callback raised in the call that ended the attempt: the
                _c.fy_result_free(res)  # next wait()/process() returns the result again
            raise
        return Result(res) if rc == 1 and res else None

    def process(self):
        """fy_handle_process: does the pending work; Result when over, else None."""
        return self._drive(_c.fy_handle_process)

    def wait(self, timeout=None):
        """fy_handle_wait: Result when the attempt is over, None when timeout (seconds;
        None or infinity: no limit) passed first. Releases the GIL: cancel() from another
        thread works. Waits in slices of at most 0.1 s, so Python signal handlers run
        meanwhile: a KeyboardInterrupt (or any exception a handler or a stdio callback
        raises) leaves wait() and the attempt RUNS ON, the handle still valid: cancel()
        and wait() again, or close() it (which kills the sandbox at once)."""
        timeout = _seconds(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if deadline is None:
                last, s = False, _WAIT_SLICE
            else:
                left = deadline - time.monotonic()
                last, s = left <= _WAIT_SLICE, max(0.0, min(left, _WAIT_SLICE))
            res = self._drive(_c.fy_handle_wait, int(s * 1000000))
            if res is not None or last:
                return res

    def cancel(self, reason=CancelReason.USER):
        """fy_handle_cancel: asks the attempt to end (soft, then hard after the grace)."""
        _call(_c.fy_handle_cancel, self._p, _u32(reason, "reason"))


class Result(_Owned):
    """The typed result of one attempt (fy_result)."""
    _free = staticmethod(_c.fy_result_free)

    def __init__(self, ptr):
        self._own(ptr)

    @property
    def outcome(self):
        return _enum_or_int(Outcome, _check(_c.fy_result_outcome(self._p), "fy_result_outcome"))

    @property
    def outcome_name(self):
        return _s(_c.fy_outcome_name(int(self.outcome)))

    @property
    def exit_code(self):
        """0..255 when the workload exited, else None."""
        rc = _c.fy_result_exit_code(self._p)
        if rc == CONSTANTS["FY_E_STATE"]:
            return None
        return _check(rc, "fy_result_exit_code")

    @property
    def signal(self):
        return _check(_c.fy_result_signal(self._p), "fy_result_signal")

    @property
    def cancel_reason(self):
        """A CancelReason for Outcome.CANCELLED, else None."""
        rc = _check(_c.fy_result_cancel_reason(self._p), "fy_result_cancel_reason")
        return _enum_or_int(CancelReason, rc) if rc else None

    @property
    def detail(self):
        return _s(_c.fy_result_detail(self._p))

    @property
    def error_step(self):
        return _enum_or_int(Step, _c.fy_result_error_step(self._p))

    @property
    def error_os_code(self):
        return _c.fy_result_error_os_code(self._p)

    @property
    def level(self):
        return _enum_or_int(Level, _check(_c.fy_result_level(self._p), "fy_result_level"))

    def _u64(self, fn, what, name):
        v = ctypes.c_uint64()
        rc = fn(self._p, _u32(what, "what"), ctypes.byref(v))
        if rc == CONSTANTS["FY_E_NOTFOUND"]:
            return None
        _check(rc, name)
        return v.value

    def stage_usec(self, stage):
        """Duration of a Stage in microseconds, None when not recorded."""
        return self._u64(_c.fy_result_stage_usec, stage, "fy_result_stage_usec")

    def usage(self, what):
        """A Usage figure, None when this host could not measure it."""
        return self._u64(_c.fy_result_usage, what, "fy_result_usage")

    def cleanup(self, what):
        """How many of a Left kind were left behind after cleanup."""
        return self._u64(_c.fy_result_cleanup, what, "fy_result_cleanup")

    @property
    def output_truncated(self):
        return bool(_check(_c.fy_result_output_truncated(self._p), "fy_result_output_truncated"))

    @property
    def prestarted(self):
        """Whether the attempt ran in a pre-started shell (fy_result_prestarted)."""
        return bool(_check(_c.fy_result_prestarted(self._p), "fy_result_prestarted"))

    def to_json(self):
        return _call_json(_c.fy_result_to_json, self._p)

    def to_dict(self):
        return _json.loads(self.to_json())

    def __repr__(self):
        if self.closed:
            return "<forgeyard.Result closed>"
        return "<forgeyard.Result %s exit_code=%r>" % (self.outcome_name, self.exit_code)



# ---------------------------------------------------------------------------
# Hermetic actions (fy-action.h, forgeyard-action(5))

class Action(_Owned):
    """An action (fy_action): argv, environment, platform properties, an input root
    and declared outputs. Build it with the setters or from an action document."""
    _free = staticmethod(_c.fy_action_free)

    def __init__(self, json=None):
        ret = _lib.fy_action_p()
        if json is None:
            _call(_c.fy_action_new, ctypes.byref(ret))
        else:
            doc = _json.dumps(json) if isinstance(json, dict) else json
            data = _b(doc, "json")
            _call(_c.fy_action_from_json, data, len(data), ctypes.byref(ret))
        self._own(ret)

    def set_argv(self, argv):
        args = [_b(a, "argv") for a in argv]
        arr = (ctypes.c_char_p * (len(args) + 1))(*args, None)
        _call(_c.fy_action_set_argv, self._p, arr)
        return self

    def set_env(self, name, value):
        """value None removes name."""
        _call(_c.fy_action_set_env, self._p, _b(name, "env name"), _b(value) if value is not None else None)
        return self

    def set_platform_property(self, name, value):
        _call(_c.fy_action_set_platform_property, self._p, _b(name), _b(value) if value is not None else None)
        return self

    def set_input_root(self, path, archive=False):
        kind = CONSTANTS["FY_INPUT_ARCHIVE"] if archive else CONSTANTS["FY_INPUT_DIRECTORY"]
        _call(_c.fy_action_set_input_root, self._p, _b(os.fspath(path)), kind)
        return self

    def set_working_directory(self, path):
        _call(_c.fy_action_set_working_directory, self._p, _b(path) if path else None)
        return self

    def add_output(self, path, kind="file"):
        """kind: "file", "directory" or "any" (REAPI output_paths)."""
        k = {"file": "FY_OUTPUT_FILE", "directory": "FY_OUTPUT_DIRECTORY", "any": "FY_OUTPUT_ANY"}.get(kind)
        if k is None:
            raise ValueError("add_output: kind must be \"file\", \"directory\" or \"any\", not %r" % (kind,))
        _call(_c.fy_action_add_output, self._p, _b(path), CONSTANTS[k])
        return self

    def set_output_directory(self, path):
        _call(_c.fy_action_set_output_directory, self._p, _b(os.fspath(path)) if path else None)
        return self

    def set_stdio_path(self, stream, path):
        _call(_c.fy_action_set_stdio_path, self._p, _u32(stream, "stream"), _b(os.fspath(path)) if path else None)
        return self

    def set_scratch_directory(self, path):
        _call(_c.fy_action_set_scratch_directory, self._p, _b(os.fspath(path)) if path else None)
        return self

    def set_limit(self, name, value):
        """name: "output_bytes", "output_entries", "input_entries" or "input_bytes"."""
        limit = CONSTANTS.get("FY_ACTION_LIMIT_" + str(name).upper())
        if limit is None:
            raise ValueError("set_limit: unknown action limit %r" % (name,))
        _call(_c.fy_action_set_limit, self._p, limit, _u64(value, name))
        return self

    def to_json(self):
        return _call_json(_c.fy_action_to_json, self._p)

    def to_dict(self):
        return _json.loads(self.to_json())

    @property
    def digest(self):
        """"sha256:<hex>" of the canonical document without host paths."""
        return _call_json(_c.fy_action_digest, self._p)

    def start(self, policy, caps=None):
        """fy_action_start -> ActionAttempt (the sandbox runs)."""
        ret = _lib.fy_action_attempt_p()
        if policy is None:
            raise TypeError("policy: expected forgeyard.Policy, got None")
        with _Using((policy, Policy, "policy"), (caps, Caps, "caps")):
            _call(_c.fy_action_start, self._p, policy._p, caps._p if caps is not None else None,
                  ctypes.byref(ret))
        return ActionAttempt(ret, dict(policy._keep.items))

    def run(self, policy, caps=None, timeout=None):
        """start + finish. On timeout (seconds) the attempt is cancelled. An exception
        while it waits (KeyboardInterrupt) closes the attempt: the sandbox is killed."""
        with self.start(policy, caps) as att:
            if timeout is not None and att.handle.wait(timeout) is None:
                att.handle.cancel()
            return att.finish()


class _BorrowedHandle(Handle):
    """The attempt's handle: owned by the attempt, never freed here. It keeps
    its attempt alive (fy_action_attempt_free frees the handle with it), so its
    close() does not kill the sandbox: cancel() it, or close the attempt."""
    _free = staticmethod(lambda ptr: None)

    def __init__(self, ptr, keep, owner):
        super().__init__(ptr, keep)
        self._owner = owner

    def _guard(self):
        return self._owner  # a wait() on it keeps the attempt in use


class ActionAttempt(_Owned):
    """A running action (fy_action_attempt). close() kills a running sandbox and
    removes everything the attempt made."""
    _free = staticmethod(_c.fy_action_attempt_free)

    def __init__(self, ptr, keep=None):
        self._own(ptr)
        self._keep = keep or {}
        self.handle = _BorrowedHandle(_c.fy_action_attempt_handle(ptr), self._keep, self)

    def finish(self):
        """fy_action_finish -> ActionResult (waits for the sandbox; once). Waits through
        handle.wait() first, so a KeyboardInterrupt is raised meanwhile (the attempt runs
        on: cancel() it, or close() the attempt to kill it)."""
        self.handle.wait(None).close()
        ret = _lib.fy_action_result_p()
        _call(_c.fy_action_finish, self._p, ctypes.byref(ret))
        return ActionResult(ret)

    def close(self):
        mu = getattr(self, "_mu", None)
        if mu is None:
            return
        with mu:
            fin = self._detach()  # (raises while it or its handle is in use)
            self.handle._ptr = None
        if fin is not None:
            fin()


class ActionResult(_Owned):
    """The result of an action (fy_action_result)."""
    _free = staticmethod(_c.fy_action_result_free)

    def __init__(self, ptr):
        self._own(ptr)

    @property
    def outcome(self):
        return _enum_or_int(Outcome, _check(_c.fy_action_result_outcome(self._p), "fy_action_result_outcome"))

    @property
    def exit_code(self):
        rc = _c.fy_action_result_exit_code(self._p)
        return None if rc < 0 else rc

    @property
    def detail(self):
        return _s(_c.fy_action_result_detail(self._p))

    def to_json(self):
        return _call_json(_c.fy_action_result_to_json, self._p)

    def to_dict(self):
        return _json.loads(self.to_json())

    def __repr__(self):
        if self.closed:
            return "<forgeyard.ActionResult closed>"
        return "<forgeyard.ActionResult %s exit_code=%r>" % (outcome_name(self.outcome), self.exit_code)

# ---------------------------------------------------------------------------
# Names and version

def version():
    """fy_version(): (major << 16 | minor << 8 | micro) of the loaded library."""
    return _c.fy_version()


def version_string():
    return _s(_c.fy_version_string())


def error_name(code):
    return _s(_c.fy_error_name(_i32(code, "code")))


def strerror(code):
    return _s(_c.fy_strerror(_i32(code, "code")))


def step_name(step):
    return _s(_c.fy_step_name(_u32(step, "step")))


def cap_name(cap):
    return _s(_c.fy_cap_name(_u32(cap, "cap")))


def level_name(level):
    return _s(_c.fy_level_name(_u32(level, "level")))


def control_name(control):
    return _s(_c.fy_control_name(_u32(control, "control")))


def profile_name(profile):
    return _s(_c.fy_profile_name(_u32(profile, "profile")))


def outcome_name(outcome):
    return _s(_c.fy_outcome_name(_u32(outcome, "outcome")))


def cancel_reason_name(reason):
    return _s(_c.fy_cancel_reason_name(_u32(reason, "reason")))
