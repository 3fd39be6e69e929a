"""A private asyncio loop on a daemon thread, so synchronous callers can drive asyncssh.

`Sandbox.run` is synchronous (the graph's nodes and the CLI call it directly); one loop per sandbox
keeps the SSH connection alive between jobs, which is what keeps the per-job overhead small.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class AsyncRunner:
    """Runs coroutines on its own event loop thread and waits for their results."""

    def __init__(self, name: str = "aka-sandbox-ssh") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
