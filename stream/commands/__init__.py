"""One module per CLI command; each exposes an async ``run_*`` taking the parsed args and Settings."""
