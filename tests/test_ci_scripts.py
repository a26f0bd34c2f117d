"""The CI helper scripts, run for real with stand-in system commands on PATH.

``.ci/install_report_deps.sh`` once failed about one run in five: ``fc-list | grep -q`` under
``set -o pipefail`` fails when grep exits at the first match and fc-list dies of SIGPIPE. Here a
stand-in ``fc-list`` prints the match first and then a lot more, which makes that race certain,
and the script must still succeed every time.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "install_report_deps.sh"


def _command(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fake_system(tmp_path):
    """A PATH with stand-ins: packages missing per dpkg-query, apt-get logging its calls, a large fc-list."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    _command(bin_dir, "dpkg-query", "exit 1")  # nothing installed yet
    _command(bin_dir, "apt-get", f'echo "$@" >> {log}')
    _command(bin_dir, "sudo", '"$@"')
    _command(bin_dir, "id", "echo 1000")
    _command(bin_dir, "chromium", "exit 0")
    # The CJK family first, then 200,000 more lines: grep -q would stop reading long before the end.
    _command(bin_dir, "fc-list", 'echo "Noto Sans CJK SC"; seq 1 200000 | sed "s/^/DejaVu Sans /"')
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    return env, log, bin_dir


@pytest.mark.slow
def test_install_report_deps_passes_when_font_is_listed_early(fake_system):
    env, log, _ = fake_system
    for _ in range(5):
        done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().endswith("installed: chromium fonts-noto-cjk")
    calls = log.read_text(encoding="utf-8").splitlines()
    assert calls[:2] == ["update -qq", "install -y -qq --no-install-recommends chromium fonts-noto-cjk"]


def test_install_report_deps_fails_when_font_is_missing(fake_system):
    env, _, bin_dir = fake_system
    _command(bin_dir, "fc-list", 'seq 1 1000 | sed "s/^/DejaVu Sans /"')
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Noto Sans CJK font not found after install" in done.stderr


def test_install_report_deps_does_nothing_when_installed(fake_system):
    env, log, bin_dir = fake_system
    _command(bin_dir, "dpkg-query", 'printf "install ok installed"')
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == "report deps already installed: chromium fonts-noto-cjk"
    assert not log.exists()


ROOT = SCRIPT.parents[1]
TESTS = ROOT / ".ci" / "test"


def _stand_in_pytest(tmp_path: Path, fast_code: int, slow_code: int) -> tuple[dict, Path]:
    """A stand-in pytest that logs its arguments and exits with the given code per tier."""
    log = tmp_path / "pytest.log"
    _command(tmp_path, "pytest", f'echo "$@" >> {log}\ncase "$*" in *"not slow"*) exit {fast_code};; *) exit {slow_code};; esac')
    return {**os.environ, "PYTEST": str(tmp_path / "pytest")}, log


def test_ci_tests_run_the_fast_tier_then_the_slow_tier_then_the_framework_checks(tmp_path):
    env, log = _stand_in_pytest(tmp_path, 0, 0)
    done = subprocess.run(["bash", str(TESTS), "-x"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert log.read_text(encoding="utf-8").splitlines() == [
        "-m not slow and not framework_checks and not realserver -x", "-m slow and not framework_checks and not realserver -x",
        "-m framework_checks -x"]


def test_ci_tests_stop_after_a_failing_fast_tier(tmp_path):
    env, log = _stand_in_pytest(tmp_path, 1, 0)
    done = subprocess.run(["bash", str(TESTS)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "fast tier failed (pytest exit code 1)" in done.stderr
    assert log.read_text(encoding="utf-8").splitlines() == ["-m not slow and not framework_checks and not realserver"]


@pytest.mark.parametrize("fast_code, slow_code, tier", [(5, 0, "fast"), (0, 5, "slow")])
def test_ci_tests_fail_when_a_tier_collects_nothing(tmp_path, fast_code, slow_code, tier):
    """pytest exits 5 when nothing is collected (a marker typo, a moved folder): CI must fail."""
    env, _ = _stand_in_pytest(tmp_path, fast_code, slow_code)
    done = subprocess.run(["bash", str(TESTS)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 5
    assert f"{tier} tier collected no tests (pytest exit code 5)" in done.stderr


def test_readme_test_command_is_what_ci_runs_last():
    """CI's last command is the test command the documentation gives developers, verbatim."""
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    last = [ln for ln in lines if ln and not ln.startswith("#")][-1]
    assert last == "bash .ci/test"
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    documented = {ln.split("#", 1)[0].strip() for doc in docs if doc.is_file()
                  for ln in doc.read_text(encoding="utf-8").splitlines()}
    assert last in documented
