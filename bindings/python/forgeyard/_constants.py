# SPDX-License-Identifier: LGPL-2.1-or-later
"""The FY_* constants, read from the constants.json the build generates
(lib/gen-constants.py) instead of being copied here by hand.

Search order: FORGEYARD_CONSTANTS; `pkg-config --variable=constants
forgeyard-sandbox`; <prefix>/share/forgeyard-sandbox/constants.json for the
prefixes above the loaded library, sys.prefix, $XDG_DATA_DIRS, /usr/local and
/usr. ImportError when none is found.
"""
import enum
import json
import os
import shutil
import subprocess
import sys

from . import _lib

REL = os.path.join("forgeyard-sandbox", "constants.json")


def _candidates():
    env = os.environ.get("FORGEYARD_CONSTANTS")
    if env:
        yield env, True
        return
    if shutil.which("pkg-config"):
        try:
            out = subprocess.run(["pkg-config", "--variable=constants", "forgeyard-sandbox"],
                                 capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                yield out.stdout.strip(), False
        except (OSError, subprocess.SubprocessError):
            pass
    dirs = []
    if _lib.loaded_path:
        d = os.path.dirname(os.path.realpath(_lib.loaded_path))
        while d and d != os.path.dirname(d):  # .../lib[/<triplet>] -> .../share
            d = os.path.dirname(d)
            dirs.append(os.path.join(d, "share"))
    dirs.append(os.path.join(sys.prefix, "share"))
    dirs += [p for p in os.environ.get("XDG_DATA_DIRS", "").split(":") if p]
    dirs += ["/usr/local/share", "/usr/share"]
    seen = set()
    for d in dirs:
        if d not in seen:
            seen.add(d)
            yield os.path.join(d, REL), False


def _load():
    tried = []
    for path, explicit in _candidates():
        tried.append(path)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            if explicit:
                break
            continue
        except (OSError, ValueError) as e:
            raise ImportError("forgeyard: cannot read constants %s: %s" % (path, e)) from e
        if not isinstance(data, dict) or not all(isinstance(v, int) for v in data.values()):
            raise ImportError("forgeyard: %s is not a constants.json of libforgeyard-sandbox" % path)
        return data, path
    raise ImportError("forgeyard: constants.json not found; set FORGEYARD_CONSTANTS to the file the "
                      "build writes (build/lib/constants.json) or install the library (tried: %s)"
                      % ", ".join(tried))


CONSTANTS, CONSTANTS_PATH = _load()


def _enum(name, prefix, exclude=(), extra=None):
    members = {}
    for k, v in sorted(CONSTANTS.items(), key=lambda kv: kv[1]):
        if k.startswith(prefix) and not k.endswith("_") and not any(k.startswith(x) for x in exclude):
            members[k[len(prefix):]] = v
    if extra:
        for k, v in extra.items():
            if k in CONSTANTS:
                members[v] = CONSTANTS[k]
    return enum.IntEnum(name, members)


# Enums over the groups of the headers (member names without the FY_<GROUP>_ prefix).
ErrorCode = _enum("ErrorCode", "FY_E_", extra={"FY_OK": "OK"})
Step = _enum("Step", "FY_STEP_")
Level = _enum("Level", "FY_LEVEL_")
Cap = _enum("Cap", "FY_CAP_")
Profile = _enum("Profile", "FY_PROFILE_")
Control = _enum("Control", "FY_CONTROL_", exclude=("FY_CONTROL_STATE_",))
ControlState = _enum("ControlState", "FY_CONTROL_STATE_")
Mode = _enum("Mode", "FY_MODE_")
Limit = _enum("Limit", "FY_LIMIT_")
Net = _enum("Net", "FY_NET_")
Dns = _enum("Dns", "FY_DNS_")
NetHost = _enum("NetHost", "FY_NETHOST_", exclude=("FY_NETHOST_MAX_",))
Proto = _enum("Proto", "FY_PROTO_")
Stream = _enum("Stream", "FY_STD", exclude=("FY_STDIO_",))  # IN, OUT, ERR
StdioMode = _enum("StdioMode", "FY_STDIO_")
Outcome = _enum("Outcome", "FY_OUTCOME_")
CancelReason = _enum("CancelReason", "FY_CANCEL_")
Stage = _enum("Stage", "FY_STAGE_")
Usage = _enum("Usage", "FY_USAGE_")
Left = _enum("Left", "FY_LEFT_")
ProbeFlag = _enum("ProbeFlag", "FY_PROBE_")
ShellsStat = _enum("ShellsStat", "FY_SHELLS_")

ENUMS = [ErrorCode, Step, Level, Cap, Profile, Control, ControlState, Mode, Limit, Net, Dns, NetHost, Proto, Stream,
         StdioMode, Outcome, CancelReason, Stage, Usage, Left, ProbeFlag, ShellsStat]
