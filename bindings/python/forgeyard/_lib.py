# SPDX-License-Identifier: LGPL-2.1-or-later
"""Loads libforgeyard-sandbox and declares the prototype of every function the
binding calls (ctypes only: nothing is compiled).

The library is FORGEYARD_LIBRARY (a path to libforgeyard-sandbox.so.0) when
set, else what ctypes.util.find_library("forgeyard-sandbox") finds, else the
soname "libforgeyard-sandbox.so.0" through the dynamic loader's search path.
"""
import ctypes
import ctypes.util
import os

from ctypes import (POINTER, CFUNCTYPE, c_char_p, c_int, c_int64, c_size_t, c_uint32, c_uint64,
                    c_void_p)

SONAME = "libforgeyard-sandbox.so.0"


def _load():
    tried = []
    env = os.environ.get("FORGEYARD_LIBRARY")
    if env:
        try:
            return ctypes.CDLL(env), env
        except OSError as e:
            raise ImportError("forgeyard: cannot load FORGEYARD_LIBRARY=%r: %s" % (env, e)) from e
    for name in (ctypes.util.find_library("forgeyard-sandbox"), SONAME):
        if not name:
            continue
        try:
            return ctypes.CDLL(name), name
        except OSError as e:
            tried.append("%s (%s)" % (name, e))
    raise ImportError("forgeyard: libforgeyard-sandbox not found; set FORGEYARD_LIBRARY to the path "
                      "of %s (tried: %s)" % (SONAME, "; ".join(tried) or SONAME))


lib, path = _load()


def _path_of_loaded():
    """The file the loader actually mapped (for finding <prefix>/share)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libforgeyard-sandbox" in line:
                    return line.split(None, 5)[-1].strip()
    except OSError:
        pass
    return path if os.path.isabs(path) else None


loaded_path = _path_of_loaded()

# Opaque object pointers: distinct c_void_p subclasses keep the prototypes readable
# and stop ctypes from turning a returned pointer into a (truncated) int.
class fy_error_p(c_void_p): pass
class fy_caps_p(c_void_p): pass
class fy_policy_p(c_void_p): pass
class fy_prepared_p(c_void_p): pass
class fy_action_p(c_void_p): pass
class fy_action_attempt_p(c_void_p): pass
class fy_action_result_p(c_void_p): pass
class fy_handle_p(c_void_p): pass
class fy_result_p(c_void_p): pass
class fy_shells_p(c_void_p): pass


ERR = POINTER(fy_error_p)
OUT_JSON = POINTER(c_void_p)  # char **: read with ctypes.string_at, freed with fy_free

# void (*fy_output_fn)(void *userdata, uint32_t stream, const void *data, size_t len)
fy_output_fn = CFUNCTYPE(None, c_void_p, c_uint32, c_void_p, c_size_t)

_PROTOTYPES = {
    # fy-common.h / fy-version.h
    "fy_free": (None, [c_void_p]),
    "fy_version": (c_uint32, []),
    "fy_version_string": (c_char_p, []),
    # fy-error.h
    "fy_error_code": (c_int, [fy_error_p]),
    "fy_error_step": (c_uint32, [fy_error_p]),
    "fy_error_os_code": (c_int64, [fy_error_p]),
    "fy_error_message": (c_char_p, [fy_error_p]),
    "fy_error_location": (c_char_p, [fy_error_p]),
    "fy_error_free": (None, [fy_error_p]),
    "fy_strerror": (c_char_p, [c_int]),
    "fy_error_name": (c_char_p, [c_int]),
    "fy_step_name": (c_char_p, [c_uint32]),
    # fy-caps.h
    "fy_probe": (c_int, [c_uint64, POINTER(fy_caps_p), ERR]),
    "fy_probe_snapshot": (c_int, [c_uint64, c_char_p, POINTER(fy_caps_p), ERR]),
    "fy_caps_from_snapshot": (c_int, [fy_caps_p]),
    "fy_caps_free": (None, [fy_caps_p]),
    "fy_caps_has": (c_int, [fy_caps_p, c_uint32]),
    "fy_caps_value": (c_int, [fy_caps_p, c_uint32, POINTER(c_int64)]),
    "fy_caps_reason": (c_char_p, [fy_caps_p, c_uint32]),
    "fy_caps_hint": (c_char_p, [fy_caps_p, c_uint32]),
    "fy_caps_max_level": (c_int, [fy_caps_p]),
    "fy_caps_to_json": (c_int, [fy_caps_p, OUT_JSON, ERR]),
    "fy_cap_name": (c_char_p, [c_uint32]),
    "fy_level_name": (c_char_p, [c_uint32]),
    # fy-policy.h
    "fy_policy_new": (c_int, [c_uint32, POINTER(fy_policy_p), ERR]),
    "fy_policy_free": (None, [fy_policy_p]),
    "fy_policy_load_json": (c_int, [fy_policy_p, c_char_p, c_size_t, ERR]),
    "fy_policy_to_json": (c_int, [fy_policy_p, OUT_JSON, ERR]),
    "fy_policy_validate": (c_int, [fy_policy_p, ERR]),
    "fy_policy_set_limit": (c_int, [fy_policy_p, c_uint32, c_uint64, ERR]),
    "fy_policy_get_limit": (c_int, [fy_policy_p, c_uint32, POINTER(c_uint64)]),
    "fy_policy_set_control": (c_int, [fy_policy_p, c_uint32, c_uint32, ERR]),
    "fy_policy_set_isolation": (c_int, [fy_policy_p, c_uint32, c_uint32, ERR]),
    "fy_policy_set_level_floor": (c_int, [fy_policy_p, c_uint32, ERR]),
    "fy_policy_add_bind": (c_int, [fy_policy_p, c_char_p, c_char_p, c_uint32, ERR]),
    "fy_policy_set_workdir": (c_int, [fy_policy_p, c_char_p, ERR]),
    "fy_policy_set_env": (c_int, [fy_policy_p, c_char_p, c_char_p, ERR]),
    "fy_policy_set_network": (c_int, [fy_policy_p, c_uint32, ERR]),
    "fy_policy_set_dns": (c_int, [fy_policy_p, c_uint32, ERR]),
    "fy_policy_add_destination": (c_int, [fy_policy_p, c_char_p, c_uint32, c_uint32, c_uint32, ERR]),
    "fy_policy_set_network_host": (c_int, [fy_policy_p, c_uint32, c_char_p, ERR]),
    "fy_policy_set_stdio": (c_int, [fy_policy_p, c_uint32, c_uint32, c_int, c_char_p, ERR]),
    "fy_policy_set_stdio_callback": (c_int, [fy_policy_p, c_uint32, fy_output_fn, c_void_p, ERR]),
    "fy_policy_set_state_dir": (c_int, [fy_policy_p, c_char_p, ERR]),
    "fy_control_name": (c_char_p, [c_uint32]),
    "fy_profile_name": (c_char_p, [c_uint32]),
    "fy_profile_from_name": (c_int, [c_char_p]),
    # fy-prepared.h
    "fy_prepare": (c_int, [fy_policy_p, fy_caps_p, POINTER(c_char_p), POINTER(fy_prepared_p), ERR]),
    "fy_prepared_free": (None, [fy_prepared_p]),
    "fy_prepared_backend": (c_char_p, [fy_prepared_p]),
    "fy_prepared_level": (c_int, [fy_prepared_p]),
    "fy_prepared_control": (c_int, [fy_prepared_p, c_uint32]),
    "fy_prepared_is_impure": (c_int, [fy_prepared_p]),
    "fy_prepared_to_json": (c_int, [fy_prepared_p, OUT_JSON, ERR]),
    # fy-handle.h
    "fy_start": (c_int, [fy_prepared_p, POINTER(fy_handle_p), ERR]),
    "fy_handle_get_fd": (c_int, [fy_handle_p]),
    "fy_handle_get_stdio_fd": (c_int, [fy_handle_p, c_uint32]),
    "fy_handle_get_timeout_usec": (c_int, [fy_handle_p, POINTER(c_uint64)]),
    "fy_handle_process": (c_int, [fy_handle_p, POINTER(fy_result_p), ERR]),
    "fy_handle_wait": (c_int, [fy_handle_p, c_uint64, POINTER(fy_result_p), ERR]),
    "fy_handle_cancel": (c_int, [fy_handle_p, c_uint32, ERR]),
    "fy_handle_free": (None, [fy_handle_p]),
    # fy-result.h
    "fy_result_outcome": (c_int, [fy_result_p]),
    "fy_result_exit_code": (c_int, [fy_result_p]),
    "fy_result_signal": (c_int, [fy_result_p]),
    "fy_result_cancel_reason": (c_int, [fy_result_p]),
    "fy_result_detail": (c_char_p, [fy_result_p]),
    "fy_result_error_step": (c_uint32, [fy_result_p]),
    "fy_result_error_os_code": (c_int64, [fy_result_p]),
    "fy_result_level": (c_int, [fy_result_p]),
    "fy_result_stage_usec": (c_int, [fy_result_p, c_uint32, POINTER(c_uint64)]),
    "fy_result_usage": (c_int, [fy_result_p, c_uint32, POINTER(c_uint64)]),
    "fy_result_cleanup": (c_int, [fy_result_p, c_uint32, POINTER(c_uint64)]),
    "fy_result_output_truncated": (c_int, [fy_result_p]),
    "fy_result_prestarted": (c_int, [fy_result_p]),
    # fy-shells.h
    "fy_shells_new": (c_int, [fy_prepared_p, c_uint32, c_uint64, POINTER(fy_shells_p), ERR]),
    "fy_shells_fill": (c_int, [fy_shells_p, ERR]),
    "fy_start_shell": (c_int, [fy_prepared_p, fy_shells_p, POINTER(fy_handle_p), ERR]),
    "fy_shells_stat": (c_int, [fy_shells_p, c_uint32, POINTER(c_uint64)]),
    "fy_shells_free": (None, [fy_shells_p]),
    "fy_result_to_json": (c_int, [fy_result_p, OUT_JSON, ERR]),
    "fy_result_free": (None, [fy_result_p]),
    "fy_outcome_name": (c_char_p, [c_uint32]),
    "fy_cancel_reason_name": (c_char_p, [c_uint32]),
    "fy_policy_set_platform_property": (c_int, [fy_policy_p, c_char_p, c_char_p, ERR]),
    # fy-action.h
    "fy_action_new": (c_int, [POINTER(fy_action_p), ERR]),
    "fy_action_from_json": (c_int, [c_char_p, c_size_t, POINTER(fy_action_p), ERR]),
    "fy_action_free": (None, [fy_action_p]),
    "fy_action_set_argv": (c_int, [fy_action_p, POINTER(c_char_p), ERR]),
    "fy_action_set_env": (c_int, [fy_action_p, c_char_p, c_char_p, ERR]),
    "fy_action_set_platform_property": (c_int, [fy_action_p, c_char_p, c_char_p, ERR]),
    "fy_action_set_input_root": (c_int, [fy_action_p, c_char_p, c_uint32, ERR]),
    "fy_action_set_working_directory": (c_int, [fy_action_p, c_char_p, ERR]),
    "fy_action_add_output": (c_int, [fy_action_p, c_char_p, c_uint32, ERR]),
    "fy_action_set_output_directory": (c_int, [fy_action_p, c_char_p, ERR]),
    "fy_action_set_stdio_path": (c_int, [fy_action_p, c_uint32, c_char_p, ERR]),
    "fy_action_set_scratch_directory": (c_int, [fy_action_p, c_char_p, ERR]),
    "fy_action_set_limit": (c_int, [fy_action_p, c_uint32, c_uint64, ERR]),
    "fy_action_to_json": (c_int, [fy_action_p, OUT_JSON, ERR]),
    "fy_action_digest": (c_int, [fy_action_p, OUT_JSON, ERR]),
    "fy_action_start": (c_int, [fy_action_p, fy_policy_p, fy_caps_p, POINTER(fy_action_attempt_p), ERR]),
    "fy_action_attempt_handle": (fy_handle_p, [fy_action_attempt_p]),
    "fy_action_finish": (c_int, [fy_action_attempt_p, POINTER(fy_action_result_p), ERR]),
    "fy_action_attempt_free": (None, [fy_action_attempt_p]),
    "fy_action_result_outcome": (c_int, [fy_action_result_p]),
    "fy_action_result_exit_code": (c_int, [fy_action_result_p]),
    "fy_action_result_detail": (c_char_p, [fy_action_result_p]),
    "fy_action_result_to_json": (c_int, [fy_action_result_p, OUT_JSON, ERR]),
    "fy_action_result_free": (None, [fy_action_result_p]),
}

for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    _fn = getattr(lib, _name)  # AttributeError here means the library lacks an export
    _fn.restype = _restype
    _fn.argtypes = _argtypes
del _name, _restype, _argtypes, _fn
