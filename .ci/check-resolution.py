"""Prove that `pip install -e ".[dev]"` resolves at once on a fresh machine.

Run by `.ci/run` before anything else is installed (and by hand: `python3 .ci/check-resolution.py`).
It creates a throwaway venv, upgrades its pip to the current release, and runs
`pip install --dry-run --ignore-installed --no-cache-dir -e ".[EXTRAS]"` under a time limit, so
every wheel pip considers is fetched as on a new machine. It fails, saying which package and
what to do, when

* resolution takes longer than the limit (default 240 s), or
* pip backtracks: it says "looking at multiple versions of X", or it fetched more than
  ``--max-candidates`` (default 3) versions of one package.

Usage: python3 .ci/check-resolution.py [--extras dev] [--limit 240] [--max-candidates 3]
Prints one line per check and exits 0 when resolution was direct, 1 otherwise.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# A wheel or sdist pip fetched or read while resolving: "Downloading name-1.2.3-py3-none-any.whl",
# "Processing /path/name-1.2.3-....whl", "Using cached name-1.2.3.tar.gz".
_FETCHED = re.compile(
    r"^\s*(?:Downloading|Processing|Using cached)\s+(?:\S*/)?"
    r"(?P<name>[A-Za-z0-9][A-Za-z0-9._]*?)-(?P<version>\d[^-\s]*?)(?:-[^\s]*)?\.(?:whl|tar\.gz|zip)\b"
)
_BACKTRACK = re.compile(r"pip is (?:still )?looking at multiple versions of (\S+)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def candidates(log: str) -> dict[str, set[str]]:
    """Package name -> the versions pip fetched for it, read from pip's output."""
    seen: dict[str, set[str]] = defaultdict(set)
    for line in log.splitlines():
        match = _FETCHED.match(line)
        if match:
            seen[_normal(match["name"])].add(match["version"])
    return seen


def _resolve(extras: str, limit: float) -> tuple[str, float, int | None]:
    with tempfile.TemporaryDirectory(prefix="mnemon-resolve-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        subprocess.run([*pip, "install", "-q", "--upgrade", "pip"], check=True)
        command = [*pip, "install", "--dry-run", "--ignore-installed", "--no-cache-dir"]
        command += ["-e", f"{ROOT}[{extras}]"]
        started = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout
            return out or "", time.monotonic() - started, None
        return done.stdout + done.stderr, time.monotonic() - started, done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="dev")
    parser.add_argument("--limit", type=float, default=240.0)
    parser.add_argument("--max-candidates", type=int, default=3)
    args = parser.parse_args(argv)
    log, seconds, code = _resolve(args.extras, args.limit)
    problems: list[str] = []
    if code is None:
        problems.append(f"resolution did not finish within {args.limit:.0f} s")
    elif code != 0:
        problems.append(f"pip exited {code}:\n{log[-3000:]}")
    for name in sorted(set(_BACKTRACK.findall(log))):
        problems.append(f"pip backtracked on {name}")
    for name, versions in sorted(candidates(log).items()):
        if len(versions) > args.max_candidates:
            listed = ", ".join(sorted(versions)[:8])
            problems.append(f"pip fetched {len(versions)} versions of {name} ({listed}, ...)")
    print(f"resolution of .[{args.extras}]: {seconds:.1f} s in a fresh venv with current pip")
    if problems:
        print("RESOLUTION CHECK FAILED: a fresh install would backtrack. Narrow the bounds in")
        print("pyproject.toml so that the newest allowed release of each named package fits:")
        for problem in problems:
            print(f"  - {problem}")
        return 1
    most = max((len(v) for v in candidates(log).values()), default=0)
    print(f"resolution check passed: no backtracking, at most {most} version(s) of any package")
    return 0


if __name__ == "__main__":
    sys.exit(main())
