"""Child processes (workers started by the demo, benchmarks and tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def stop(process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """Ask a child to stop (SIGTERM, so it shuts down cleanly), and kill it if it has not within ``timeout``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (state first, then parent PID ...); Linux only.
    Raises OSError when the process is gone."""
    # The command name is in parentheses and may itself hold spaces or ")": split after the last one.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a running process has used so far (Linux /proc)."""
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """The most resident memory a running process has had (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0
