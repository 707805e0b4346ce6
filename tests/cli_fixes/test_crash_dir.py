"""Issue 13 review, defect 7: the crash log directory is private (0700), also when an older
Hangar created it 0755."""

from __future__ import annotations

import stat

from hangar.errors import crash_log_dir
from hangar.paths import crash_dir


def test_crash_dir_is_private() -> None:
    assert stat.S_IMODE(crash_log_dir().stat().st_mode) == 0o700


def test_existing_open_crash_dir_is_made_private() -> None:
    crash_dir().mkdir(mode=0o755, parents=True)
    crash_dir().chmod(0o755)
    assert crash_log_dir() == crash_dir()
    assert stat.S_IMODE(crash_dir().stat().st_mode) == 0o700
