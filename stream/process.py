"""Child processes (workers started by the demo, benchmarks and tests)."""

from __future__ import annotations

import subprocess


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
