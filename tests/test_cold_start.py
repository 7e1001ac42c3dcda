"""First use in a fresh environment: the compile notice and the numba cache.

Each test runs a small kernel in fresh Python processes (the notice and the cache
are per process and per environment), so it takes a few seconds.
"""

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skstein
from skstein._compiling import expected_seconds, notice

PACKAGE = Path(skstein.__file__).parent

# one small parallel kernel; prints its numba cache hits and misses in this process
SCRIPT = """
import numpy as np
from skstein._numba.bootstrap import centred_counts
out = centred_counts(np.zeros((3, 4), dtype=np.int32), np.empty((3, 4)))
assert np.allclose(out.sum(axis=1), 0.0)
stats = centred_counts.stats
print("hits", sum(stats.cache_hits.values()), "misses", sum(stats.cache_misses.values()))
"""


def _run(env, cwd, *, terminal=False):
    """Run SCRIPT in ``cwd``; return (stdout, stderr). With ``terminal``, stderr is a
    pseudo-terminal."""
    if not terminal:
        res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=cwd,
                             capture_output=True, text=True, check=True, timeout=120)
        return res.stdout, res.stderr
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, cwd=cwd,
                                stdout=subprocess.PIPE, stderr=slave, text=True)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal is closed when the child exits
                break
            if not data:
                break
            chunks.append(data)
        out = proc.communicate(timeout=120)[0]
        assert proc.returncode == 0
    finally:
        os.close(master)
    return out, b"".join(chunks).decode()


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(extra)
    return env


def test_notice_once_on_a_terminal_and_only_when_compiling(tmp_path):
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(PACKAGE.parent))
    out, err = _run(env, tmp_path, terminal=True)
    assert "misses 1" in out
    line = notice(expected_seconds("skstein._numba.bootstrap"))
    assert err.count("compiling skstein's kernels") == 1 and line in err
    # the kernel is now cached: no compile, no notice
    out, err = _run(env, tmp_path, terminal=True)
    assert "hits 1 misses 0" in out
    assert "compiling" not in err


def test_no_notice_when_stderr_is_not_a_terminal(tmp_path):
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(PACKAGE.parent))
    out, err = _run(env, tmp_path)
    assert "misses 1" in out
    assert "compiling" not in err


def test_cache_works_when_the_package_directory_is_not_writable(tmp_path):
    # A copy of the package whose __pycache__ folders cannot be created: each is a
    # plain file, which blocks even root (file permissions do not). Numba then keeps
    # the kernels in the user-wide cache (XDG_CACHE_HOME/numba), and a second process
    # loads them from there instead of compiling again.
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "skstein",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    for folder in [site / "skstein", *(p for p in (site / "skstein").rglob("*") if p.is_dir())]:
        (folder / "__pycache__").write_text("")
    with pytest.raises(OSError):
        os.makedirs(site / "skstein" / "_numba" / "__pycache__", exist_ok=True)
    user_cache = tmp_path / "user-cache"
    # (the processes run in tmp_path, so the copy is the skstein they import)
    env = _env(PYTHONPATH=str(site), XDG_CACHE_HOME=str(user_cache),
               PYTHONDONTWRITEBYTECODE="1")
    out, _ = _run(env, tmp_path)
    assert "hits 0 misses 1" in out
    cached = list(user_cache.rglob("bootstrap.centred_counts-*.nbi"))
    assert cached, "numba did not fall back to the user-wide cache"
    out, _ = _run(env, tmp_path)
    assert "hits 1 misses 0" in out
