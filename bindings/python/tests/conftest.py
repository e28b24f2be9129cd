# SPDX-License-Identifier: LGPL-2.1-or-later
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import forgeyard as fy  # noqa: E402


@pytest.fixture
def policy(tmp_path):
    """A release-profile policy with a wall-clock limit and a state dir under tmp_path."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with fy.Policy(fy.Profile.RELEASE) as p:
        p.set_limit(fy.Limit.WALL_TIME, 60 * 1000000)
        p.set_limit(fy.Limit.GRACE, 100000)
        p.set_state_dir(str(state))
        yield p
