# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of the ctypes binding against the built library (bounded: every wait
has a timeout; no network; files only under pytest's tmp_path)."""
import os
import threading
import time

import pytest

import forgeyard as fy

WAIT = 30  # seconds: upper bound of every wait


def fds():
    return sorted(os.listdir("/proc/self/fd"))


def run(policy, argv):
    with policy.prepare(argv) as plan, plan.start() as h:
        res = h.wait(timeout=WAIT)
        assert res is not None, "attempt did not end within %ss" % WAIT
        return res


def test_constants_come_from_json():
    assert fy.CONSTANTS_PATH and os.path.exists(fy.CONSTANTS_PATH)
    assert fy.FY_E_POLICY == fy.ErrorCode.POLICY < 0
    assert fy.Outcome.SUCCEEDED == fy.CONSTANTS["FY_OUTCOME_SUCCEEDED"]
    assert fy.version() == fy.FY_VERSION
    assert fy.version_string() == "%d.%d.%d" % (fy.FY_VERSION_MAJOR, fy.FY_VERSION_MINOR,
                                                fy.FY_VERSION_MICRO)
    assert fy.outcome_name(fy.Outcome.TIMED_OUT) == "timed-out"
    assert fy.error_name(fy.ErrorCode.POLICY) == "FY_E_POLICY"


def test_probe():
    with fy.probe() as caps:
        d = caps.to_dict()
        assert "capabilities" in d
        assert isinstance(caps.max_level, fy.Level)
        assert caps.has(fy.Cap.SECCOMP) in (True, False)
        assert caps.has("userns") == caps.has(fy.Cap.USERNS)
        if not caps.has(fy.Cap.FIRECRACKER):
            assert caps.value(fy.Cap.FIRECRACKER) in (None, 0)
    assert caps.closed
    with pytest.raises(ValueError):
        caps.to_json()
    caps.close()  # a second close is a no-op


def test_policy_json_error_has_path():
    with fy.Policy(fy.Profile.RELEASE) as p:
        with pytest.raises(fy.Error) as ei:
            p.load_json({"resources": {"memory": "lots"}})
        e = ei.value
        assert isinstance(e, Exception)
        assert e.code == fy.ErrorCode.POLICY and e.code_name == "FY_E_POLICY"
        assert e.step == fy.Step.POLICY and e.step_name == "policy"
        assert e.location == "$.resources.memory"
        assert e.message and "$.resources.memory" in str(e)
        assert e.os_code == 0
        with pytest.raises(fy.Error) as ei:
            p.load_json("{not json")
        assert ei.value.code == fy.ErrorCode.POLICY
        # all or nothing: the policy still works
        assert p.to_dict()["profile"] == "release"


def test_network_restricted_settings():
    with fy.Policy(fy.Profile.STANDARD_CI) as p:
        p.add_destination("198.51.100.7", fy.Proto.TCP, 443).set_network(fy.Net.RESTRICTED)
        p.set_network_host(fy.NetHost.LINK_SUBNET, "10.99.0.0/16").set_network_host(fy.NetHost.LINK_SUBNET, None)
        d = p.to_dict()["network"]
        assert d["mode"] == "restricted" and d["destinations"][0]["ports"] == [443, 443]
        with pytest.raises(fy.Error) as ei:
            p.set_network_host(fy.NetHost.LINK_SUBNET, "100.64.0.0/16")  # covers the sandbox's own link
        assert ei.value.code == fy.ErrorCode.INVAL and ei.value.location == "$.network.host"
        with pytest.raises(fy.Error) as ei:
            p.add_destination("198.51.100.7", fy.Proto.TCP, 0)
        assert ei.value.code == fy.ErrorCode.POLICY and ei.value.location == "$.network.destinations[1].ports"


def test_policy_profiles_and_json_round_trip():
    for prof in fy.Profile:
        with fy.Policy(prof) as p:
            assert p.to_dict()["profile"] == fy.profile_name(prof)
    with fy.Policy.from_json('{"resources": {"memory": "512MiB"}}', profile="standard-ci") as p:
        assert p.get_limit(fy.Limit.MEMORY) == 512 << 20
    with pytest.raises(fy.Error) as ei:
        fy.Policy("no-such-profile")
    assert ei.value.code == fy.ErrorCode.NOTFOUND


def test_error_fields_from_bad_argv(policy):
    with pytest.raises(fy.Error) as ei:
        policy.prepare([""])
    e = ei.value
    assert e.code == fy.ErrorCode.INVAL
    assert isinstance(e.step, int) and e.message
    assert e.function == "fy_prepare"


def test_true_exits_0(policy):
    before = fds()
    with run(policy, ["/bin/true"]) as res:
        assert res.outcome == fy.Outcome.SUCCEEDED
        assert res.outcome_name == "succeeded"
        assert res.exit_code == 0
        assert res.signal == 0 and res.cancel_reason is None
        assert res.cleanup(fy.Left.PROCESSES) == 0
    assert fds() == before


def test_exit_code_3(policy):
    with run(policy, ["/bin/sh", "-c", "exit 3"]) as res:
        assert res.outcome == fy.Outcome.FAILED
        assert res.exit_code == 3


def test_result_json_keys(policy):
    with run(policy, ["/bin/true"]) as res:
        d = res.to_dict()
    for key in ("outcome", "exit_code", "signal", "cancel_reason", "level", "backend", "isolation",
                "usage", "stage_usec", "cleanup", "contract_id", "version"):
        assert key in d, key
    assert d["outcome"] == "succeeded" and d["exit_code"] == 0


def test_pre_started_shells(policy):
    before = fds()
    with policy.prepare(["/bin/sh", "-c", "exit 4"]) as plan, fy.Shells(plan, count=2, idle=30) as shells:
        assert shells.fill() == 2
        assert shells.stat(fy.ShellsStat.READY) == 2
        with plan.start(shells=shells) as h:
            res = h.wait(timeout=WAIT)
        assert res.exit_code == 4 and res.prestarted
        assert res.stage_usec(fy.Stage.CLAIM) is not None
        assert res.to_dict()["isolation"]["prestarted"] is True
        res.close()
        assert shells.stat(fy.ShellsStat.CLAIMED) == 1
        with plan.start() as h:
            res = h.wait(timeout=WAIT)
        assert not res.prestarted
        res.close()
    assert fds() == before


def test_prepared_plan(policy):
    with policy.prepare(["/bin/true"]) as plan:
        assert plan.backend
        assert isinstance(plan.level, fy.Level)
        assert plan.control(fy.Control.SECCOMP) in tuple(fy.ControlState)
        assert plan.is_impure is False
        assert "backend" in plan.to_dict()


def test_stdout_to_file(policy, tmp_path):
    out = tmp_path / "out.txt"
    policy.set_stdio(fy.Stream.OUT, fy.StdioMode.FILE, path=str(out))
    with run(policy, ["/bin/sh", "-c", "echo hello-from-sandbox"]) as res:
        assert res.outcome == fy.Outcome.SUCCEEDED
        assert res.usage(fy.Usage.STDOUT_BYTES) == len("hello-from-sandbox\n")
    assert out.read_text() == "hello-from-sandbox\n"


def test_stdout_pipe(policy):
    policy.set_stdio(fy.Stream.OUT, fy.StdioMode.PIPE)
    before = fds()
    with policy.prepare(["/bin/sh", "-c", "echo through-the-pipe"]) as plan, plan.start() as h:
        fd = h.stdio_fd(fy.Stream.OUT)
        data = b""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            chunk = os.read(fd, 4096)  # the workload exits: EOF
            if not chunk:
                break
            data += chunk
        with h.wait(timeout=WAIT) as res:
            assert res.outcome == fy.Outcome.SUCCEEDED
    assert data == b"through-the-pipe\n"
    assert fds() == before


def test_stdout_callback(policy):
    got = []
    policy.set_stdio_callback(fy.Stream.OUT, lambda stream, data: got.append((stream, data)))
    with run(policy, ["/bin/sh", "-c", "echo live"]) as res:
        assert res.outcome == fy.Outcome.SUCCEEDED
    assert b"".join(d for _, d in got if d) == b"live\n"
    assert got[-1] == (fy.Stream.OUT, None)


def test_cancel_sleep(policy):
    with policy.prepare(["/bin/sleep", "30"]) as plan, plan.start() as h:
        assert h.wait(timeout=0.2) is None  # still running
        t0 = time.monotonic()
        h.cancel(fy.CancelReason.SUPERSEDED)
        with h.wait(timeout=WAIT) as res:
            assert res is not None
            assert res.outcome == fy.Outcome.CANCELLED
            assert res.cancel_reason == fy.CancelReason.SUPERSEDED
            assert res.exit_code is None
            assert res.to_dict()["cancel_reason"] == "superseded"
        assert time.monotonic() - t0 < 10


def test_cancel_from_another_thread(policy):
    with policy.prepare(["/bin/sleep", "30"]) as plan, plan.start() as h:
        timer = threading.Timer(0.3, h.cancel)
        timer.start()
        try:
            t0 = time.monotonic()
            with h.wait(timeout=WAIT) as res:
                assert res.outcome == fy.Outcome.CANCELLED
                assert res.cancel_reason == fy.CancelReason.USER
            assert time.monotonic() - t0 < 10
        finally:
            timer.cancel()


def test_wall_time_limit(policy):
    policy.set_limit(fy.Limit.WALL_TIME, 300000)
    with run(policy, ["/bin/sleep", "30"]) as res:
        assert res.outcome == fy.Outcome.TIMED_OUT


def test_run_helper_and_process_loop(policy):
    with policy.run(["/bin/true"], timeout=WAIT) as res:
        assert res.exit_code == 0
    import select
    with policy.prepare(["/bin/true"]) as plan, plan.start() as h:
        res = None
        deadline = time.monotonic() + WAIT
        while res is None and time.monotonic() < deadline:
            select.select([h.fileno()], [], [], 0.05)
            res = h.process()
        assert res is not None and res.outcome == fy.Outcome.SUCCEEDED
        res.close()


def test_objects_freed_once_and_no_fd_leak(policy):
    before = fds()
    for _ in range(3):
        plan = policy.prepare(["/bin/true"])
        h = plan.start()
        res = h.wait(timeout=WAIT)
        res.close(); res.close()
        h.close(); h.close()
        plan.close(); plan.close()
    # garbage collection as the fallback
    plan = policy.prepare(["/bin/true"])
    h = plan.start()
    res = h.wait(timeout=WAIT)
    del res, h, plan
    import gc
    gc.collect()
    assert fds() == before


# ---- actions ----

def _input(tmp_path):
    root = tmp_path / "in"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.c").write_text("int main(void) { return 0; }\n")
    os.chmod(tmp_path, 0o755)
    for d in (root, root / "src"):
        os.chmod(d, 0o755)
    os.chmod(root / "src" / "a.c", 0o644)
    return root


def test_action_outputs_and_digests(policy, tmp_path):
    import hashlib
    root = _input(tmp_path)
    out = tmp_path / "out"
    with fy.Action() as a:
        a.set_argv(["/bin/sh", "-c", "mkdir -p o && cp src/a.c o/a.o && echo junk > j"])
        a.set_env("PATH", "/usr/bin:/bin").set_input_root(root).add_output("o", "directory")
        a.set_output_directory(out).set_platform_property("OSFamily", "linux")
        assert a.digest.startswith("sha256:")
        with a.run(policy) as res:
            assert res.outcome == fy.Outcome.SUCCEEDED and res.exit_code == 0
            d = res.to_dict()
    digest = "sha256:" + hashlib.sha256((root / "src" / "a.c").read_bytes()).hexdigest()
    assert [(f["path"], f["digest"]) for f in d["output_files"]] == [("o/a.o", digest)]
    assert d["undeclared"]["paths"] == ["j"]
    assert (out / "o" / "a.o").read_bytes() == (root / "src" / "a.c").read_bytes()
    assert not (root / "o").exists() and not (root / "j").exists()


def test_action_document_errors_name_the_path():
    with pytest.raises(fy.Error) as e:
        fy.Action({"version": 1, "arguments": ["x"], "input_root": {"directory": "/x"},
                   "outputs": {"files": ["../up"]}})
    assert e.value.code == fy.ErrorCode.INVAL
    assert e.value.location == "$.outputs.files[0]"


def test_action_refuses_unknown_property(policy, tmp_path):
    root = _input(tmp_path)
    with fy.Action({"version": 1, "arguments": ["/bin/true"], "input_root": {"directory": str(root)},
                    "platform": {"gpu": "1"}}) as a:
        with pytest.raises(fy.Error) as e:
            a.start(policy)
    assert e.value.code == fy.ErrorCode.UNSUPPORTED
    assert e.value.location == "$.platform.gpu"


def test_action_cancel(policy, tmp_path):
    root = _input(tmp_path)
    with fy.Action({"version": 1, "arguments": ["/bin/sleep", "60"], "input_root": {"directory": str(root)}}) as a:
        with a.start(policy) as att:
            att.handle.cancel()
            with att.finish() as res:
                assert res.outcome == fy.Outcome.CANCELLED
                assert res.exit_code is None


def test_action_handle_keeps_its_attempt(policy, tmp_path):
    # The attempt owns the handle: a handle kept after the attempt object
    # is dropped must still be the live handle, never freed memory.
    import gc
    root = _input(tmp_path)
    with fy.Action({"version": 1, "arguments": ["/bin/sleep", "60"], "input_root": {"directory": str(root)}}) as a:
        h = a.start(policy).handle
        gc.collect()
        assert not h.closed
        h.cancel()
        with h._owner.finish() as res:
            assert res.outcome == fy.Outcome.CANCELLED
        h._owner.close()
        assert h.closed


def test_policy_platform_property(policy):
    policy.set_platform_property("network", "deny")
    with pytest.raises(fy.Error) as e:
        policy.set_platform_property("network", "allow")
    assert e.value.code == fy.ErrorCode.UNSUPPORTED


def test_close_while_another_thread_waits_raises(policy, tmp_path):
    # close() from another thread while finish() or wait() is inside the C
    # library (the GIL released) freed the attempt under it (a segfault
    # with MALLOC_PERTURB_): it raises now, and works once the call is over.
    root = _input(tmp_path)
    for how in ("finish", "wait"):
        with fy.Action({"version": 1, "arguments": ["/bin/sleep", "60"],
                        "input_root": {"directory": str(root)}}) as a:
            att = a.start(policy)
            errors = []

            def closer():
                time.sleep(0.3)
                for obj in (att, att.handle):
                    try:
                        obj.close()
                        errors.append("closed under a call")
                    except RuntimeError as e:
                        errors.append(str(e))
                att.handle.cancel()

            t = threading.Thread(target=closer)
            t.start()
            if how == "finish":
                res = att.finish()
            else:
                att.handle.wait()
                res = att.finish()
            t.join()
            with res:
                assert res.outcome == fy.Outcome.CANCELLED
            assert len(errors) == 2 and all("in use by another thread" in e for e in errors), errors
            att.close()
            assert att.closed and att.handle.closed
            with pytest.raises(ValueError):
                att.handle.cancel()


def test_nul_bytes_and_out_of_range_integers_refused():
    # ctypes cut a string at its first NUL (an environment name "A\0EVIL"
    # became "A") and wrapped integers (2**64+5 became 5, -2 became 2**64-2).
    a = fy.Action()
    for bad in (lambda: a.set_env("A\0EVIL", "1"), lambda: a.set_argv(["a\0b"]),
                lambda: a.set_env("A", b"x\0y")):
        with pytest.raises(ValueError):
            bad()
    for v in (2 ** 64 + 5, -2):
        with pytest.raises(ValueError):
            a.set_limit("output_bytes", v)
    with pytest.raises(fy.Error) as e:
        a.set_limit("output_bytes", 2 ** 63 + 1)  # above what the JSON form holds
    assert e.value.code == fy.ErrorCode.INVAL and e.value.location == "$.limits.output_bytes"
    p = fy.Policy(fy.Profile.STANDARD_CI)
    with pytest.raises(ValueError):
        p.set_limit(fy.Limit.MEMORY, -1)


def _closing_during(monkeypatch, name, victims):
    """Replaces the C function `name` by one that, while the call is in
    progress (in C, with the GIL released), closes each victim from another
    thread: that must raise RuntimeError (the argument is in use). The real
    function runs only when nothing was freed under it (never a crash here)."""
    real = getattr(fy._c, name)
    seen = []

    def during(*args):
        for v in victims:
            def closer():
                try:
                    v.close()
                    seen.append("closed")
                except RuntimeError as e:
                    seen.append(str(e))
            t = threading.Thread(target=closer)
            t.start()
            t.join(10)
        if any(v.closed for v in victims):
            raise AssertionError("%s: an argument was freed under the call" % name)
        return real(*args)

    during.__name__ = name
    monkeypatch.setattr(fy._c, name, during)
    return seen


def test_arguments_of_a_running_call_cannot_be_closed(policy, tmp_path, monkeypatch):
    # Only self was counted in use: plan.close() during fy.Shells(plan) in
    # another thread freed the plan under fy_shells_new (double free, abort);
    # likewise caps under prepare(), shells under start(), policy and caps
    # under Action.start().
    with fy.probe() as caps:
        seen = _closing_during(monkeypatch, "fy_prepare", [caps])
        plan = policy.prepare(["/bin/sh", "-c", "exit 5"], caps=caps)
        monkeypatch.undo()
        assert len(seen) == 1 and "in use" in seen[0] and not caps.closed
        with plan:
            seen = _closing_during(monkeypatch, "fy_shells_new", [plan])
            shells = fy.Shells(plan, count=1, idle=30)
            monkeypatch.undo()
            assert len(seen) == 1 and "in use" in seen[0] and not plan.closed
            with shells:
                seen = _closing_during(monkeypatch, "fy_start_shell", [shells])
                h = plan.start(shells=shells)
                monkeypatch.undo()
                assert len(seen) == 1 and "in use" in seen[0] and not shells.closed
                with h, h.wait(timeout=WAIT) as res:
                    assert res.exit_code == 5
            with pytest.raises(ValueError):
                plan.start(shells=shells)  # closed argument: refused before C sees it
            with pytest.raises(TypeError):
                plan.start(shells=policy)
        root = _input(tmp_path)
        with fy.Action({"version": 1, "arguments": ["/bin/true"], "input_root": {"directory": str(root)}}) as a:
            seen = _closing_during(monkeypatch, "fy_action_start", [policy, caps])
            att = a.start(policy, caps)
            monkeypatch.undo()
            assert len(seen) == 2 and all("in use" in s for s in seen), seen
            with att, att.finish() as res:
                assert res.outcome == fy.Outcome.SUCCEEDED
    # once the calls are over, close() works
    assert caps.closed and plan.closed and shells.closed


class _Alarm(Exception):
    pass


def _with_alarm(seconds, handler):
    import signal
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return lambda: (signal.setitimer(signal.ITIMER_REAL, 0), signal.signal(signal.SIGALRM, old))


def test_signal_handlers_run_during_wait(policy, tmp_path):
    # fy_handle_wait retries poll() on EINTR: with the whole timeout in one C
    # call, Ctrl-C or a SIGTERM handler ran only when the workload ended.
    with policy.prepare(["/bin/sleep", "5"]) as plan:
        # a handler that raises: wait() raises it at once, the attempt runs on
        with plan.start() as h:
            def boom(*_):
                raise _Alarm()
            undo = _with_alarm(0.3, boom)
            t0 = time.monotonic()
            try:
                with pytest.raises(_Alarm):
                    h.wait(timeout=WAIT)
            finally:
                undo()
            assert time.monotonic() - t0 < 3
            assert h.wait(timeout=0) is None  # still running, the handle still valid
            h.cancel()
            with h.wait(timeout=WAIT) as res:
                assert res.outcome == fy.Outcome.CANCELLED
        # a handler that cancels (a CI runner being stopped)
        with plan.start() as h:
            undo = _with_alarm(0.3, lambda *_: h.cancel(fy.CancelReason.SUPERSEDED))
            t0 = time.monotonic()
            try:
                with h.wait(timeout=WAIT) as res:
                    assert res.outcome == fy.Outcome.CANCELLED
                    assert res.cancel_reason == fy.CancelReason.SUPERSEDED
            finally:
                undo()
            assert time.monotonic() - t0 < 3
    # a timeout of infinity is no limit; NaN is refused like a negative one
    with policy.prepare(["/bin/true"]) as plan, plan.start() as h:
        with h.wait(float("inf")) as res:
            assert res.exit_code == 0
        for bad in (float("nan"), -1):
            with pytest.raises(ValueError):
                h.wait(bad)


def test_signal_during_action_finish(policy, tmp_path):
    root = _input(tmp_path)
    with fy.Action({"version": 1, "arguments": ["/bin/sleep", "5"], "input_root": {"directory": str(root)}}) as a:
        with a.start(policy) as att:
            def boom(*_):
                raise _Alarm()
            undo = _with_alarm(0.3, boom)
            t0 = time.monotonic()
            try:
                with pytest.raises(_Alarm):
                    att.finish()
            finally:
                undo()
            assert time.monotonic() - t0 < 3
            att.handle.cancel()
            with att.finish() as res:
                assert res.outcome == fy.Outcome.CANCELLED


def test_callback_exceptions_reach_the_caller(policy):
    # ctypes printed and dropped an exception raised in a stdio callback,
    # KeyboardInterrupt included: Ctrl-C during CALLBACK output was lost and
    # the workload ran to its end.
    got = []

    def cb(stream, data):
        got.append(data)
        if data:
            raise KeyboardInterrupt()

    policy.set_stdio_callback(fy.Stream.OUT, cb)
    with policy.prepare(["/bin/sh", "-c", "echo one; sleep 5; echo two"]) as plan, plan.start() as h:
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            h.wait(timeout=WAIT)
        assert time.monotonic() - t0 < 3
        h.cancel()
        with h.wait(timeout=WAIT) as res:  # the handle is still usable
            assert res.outcome == fy.Outcome.CANCELLED
    assert got[0] == b"one\n"
    # an exception of the call that ends the attempt: raised, and the result is
    # there for the next wait()
    policy.set_stdio_callback(fy.Stream.OUT, lambda s, d: 1 / 0 if d is None else None)
    with policy.prepare(["/bin/true"]) as plan, plan.start() as h:
        with pytest.raises(ZeroDivisionError):
            h.wait(timeout=WAIT)
        with h.wait(timeout=WAIT) as res:
            assert res.exit_code == 0
    with pytest.raises(TypeError):
        policy.set_stdio_callback(fy.Stream.OUT, 5)


def test_none_in_strings_refused(policy):
    # None became the NULL end of the argv array: ["/bin/echo", "a", None, "b"]
    # ran "echo a". Now it, and None where C needs a string, raise TypeError.
    for argv in (["/bin/echo", "a", None, "b"], [None], ["/bin/echo", 5]):
        with pytest.raises(TypeError):
            policy.prepare(argv)
    a = fy.Action()
    with pytest.raises(TypeError):
        a.set_argv(["/bin/echo", "a", None, "b"])
    for bad in (lambda: policy.set_env("A", None), lambda: policy.set_env(None, "x"),
                lambda: policy.add_bind(None, "/mnt"), lambda: policy.add_bind("/tmp", None),
                lambda: policy.set_workdir(None), lambda: a.set_env(None, "x"),
                lambda: a.add_output(None)):
        with pytest.raises(TypeError):
            bad()
    assert "A" not in policy.to_dict().get("environment", {}).get("set", {})
    # where NULL means the default, None still works
    policy.set_network_host(fy.NetHost.LINK_SUBNET, None)
    a.set_env("X", "1").set_env("X", None)


def test_integers_out_of_range_refused(policy):
    # ctypes wrapped every int given to a uint32_t/int/uint64_t parameter:
    # fd=2**32+1 connected the host's stdout (fd 1), Policy(2**32 + RELEASE)
    # made a release policy, error_name(2**32) was "FY_OK".
    big32, big64 = 2 ** 32, 2 ** 64
    bad = [
        lambda: policy.set_stdio(fy.Stream.OUT, fy.StdioMode.FD, fd=big32 + 1),
        lambda: policy.set_stdio(fy.Stream.OUT, fy.StdioMode.FD, fd=-big32 - 1),
        lambda: policy.set_stdio(big32 + fy.Stream.OUT, fy.StdioMode.NULL),
        lambda: fy.probe(big64),
        lambda: fy.probe(-1),
        lambda: fy.Policy(big32 + fy.Profile.RELEASE),
        lambda: policy.set_limit(big32 + fy.Limit.WALL_TIME, 1),
        lambda: policy.get_limit(-1),
        lambda: policy.add_destination("198.51.100.7", fy.Proto.TCP, big32 + 80),
        lambda: policy.set_network(big32),
        lambda: fy.error_name(big32),
        lambda: fy.strerror(-2 ** 31 - 1),
        lambda: fy.step_name(-1),
        lambda: fy.outcome_name(big32),
    ]
    for i, f in enumerate(bad):
        with pytest.raises(ValueError):
            f()
            pytest.fail("case %d accepted" % i)
    with fy.probe() as caps:
        with pytest.raises(ValueError):
            caps.value(big32 + fy.Cap.USERNS)
        with pytest.raises(ValueError):
            caps.has(-1)
    with policy.prepare(["/bin/true"]) as plan:
        with pytest.raises(ValueError):
            fy.Shells(plan, count=big32 + 1)
        with pytest.raises(ValueError):
            plan.control(big32)
        with plan.start() as h:
            with pytest.raises(ValueError):
                h.cancel(big32 + fy.CancelReason.USER)
            with h.wait(timeout=WAIT) as res:
                assert res.outcome == fy.Outcome.SUCCEEDED
                with pytest.raises(ValueError):
                    res.usage(big32)
    assert fy.error_name(fy.ErrorCode.POLICY) == "FY_E_POLICY"
    assert str(fy.Error(big32)) .startswith(str(big32))  # no C call with a wrapped code


def _raise_policy_error():
    fy.Policy("release", json='{"resources": {"memory": "lots"}}')


def test_error_pickles_and_copies():
    # __init__ was re-called with the message as the code: pickle.loads,
    # copy.copy and a ProcessPoolExecutor job raising fy.Error all failed.
    import copy
    import pickle
    with pytest.raises(fy.Error) as ei:
        _raise_policy_error()
    e = ei.value
    e.extra = "kept"
    for e2 in (pickle.loads(pickle.dumps(e)), copy.copy(e), copy.deepcopy(e)):
        assert type(e2) is fy.Error and e2 is not e
        for attr in ("code", "code_name", "step", "step_name", "message", "os_code", "location", "function",
                     "extra"):
            assert getattr(e2, attr) == getattr(e, attr), attr
        assert e2.code == fy.ErrorCode.POLICY and str(e2) == str(e) and e2.args == e.args
    import concurrent.futures
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as ex:
        fut = ex.submit(_raise_policy_error)
        with pytest.raises(fy.Error) as ei:
            fut.result(timeout=WAIT)
    assert ei.value.location == "$.resources.memory"


def test_action_bad_names_raise_value_error():
    with fy.Action() as a:
        with pytest.raises(ValueError):
            a.set_limit("bogus", 1)
        with pytest.raises(ValueError):
            a.add_output("x", "dir")
        a.set_limit("output_bytes", 1).add_output("x", "any")
