"""A local web site that behaves like a search engine's AI-answer page, for the web benchmark and tests.

``/answer?q=...`` serves ``examples/web_answer.html`` (an answer with dated,
cited sources; the query is echoed on the page), ``/empty`` a page without
the answer element, ``/blocked`` a refusal page like a search engine shows
to robots, and ``/hang`` never answers. Queries served are recorded.
"""

from __future__ import annotations

import threading
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ANSWER_PAGE = (Path(__file__).parent / "examples" / "web_answer.html").read_text(encoding="utf-8")
EMPTY_PAGE = "<!doctype html><html><head><title>Nothing</title></head><body><p>Nothing to see.</p></body></html>"
BLOCKED_PAGE = ("<!doctype html><html><body><h1>Sorry...</h1><p>Our systems have detected unusual traffic"
                " from your computer network.</p></body></html>")
# Selectors that read the example answer page.
ANSWER_SELECTOR = "#answer"
PARAGRAPH_SELECTOR = "p"
LINK_SELECTOR = "#sources a"
DATE_SELECTOR = "time, .date"


class ExamplePages:
    """Serves on 127.0.0.1 on a free port from a daemon thread until :meth:`close`."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.queries: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path == "/hang":
                    site.release.wait(120)  # never answers while anyone waits
                    return
                query = parse_qs(parts.query).get("q", [""])[0]
                body = {"/answer": ANSWER_PAGE.replace("{query}", escape(query)), "/empty": EMPTY_PAGE,
                        "/blocked": BLOCKED_PAGE}.get(parts.path)
                if body is None:
                    self.send_error(404)
                    return
                site.queries.append(query)
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="example-pages", daemon=True)
        self._thread.start()

    def url_template(self, path: str = "/answer") -> str:
        return f"http://127.0.0.1:{self.port}{path}?q={{query}}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ExamplePages:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
