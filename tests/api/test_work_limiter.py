"""tracker.api.work_limiter: room by units of work, waiters first come first served, a
timeout, and units given back by a waiter cancelled after its grant."""

from __future__ import annotations

import anyio

from tracker.api.work_limiter import WorkLimiter


def test_work_fits_until_capacity_then_waits_for_room() -> None:
    async def main() -> list[str]:
        limiter, log = WorkLimiter(10), []
        assert await limiter.acquire(6, 1) and await limiter.acquire(4, 1)
        assert not await limiter.acquire(1, 0.05)  # full: it waited, then timed out

        async def wait_for(name: str, units: int) -> None:
            assert await limiter.acquire(units, 5)
            log.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_for, "big", 8)
            await anyio.sleep(0.01)
            tg.start_soon(wait_for, "small", 1)  # fits after the first release, but waits its turn
            await anyio.sleep(0.01)
            limiter.release(4)
            await anyio.sleep(0.01)
            assert log == [] and limiter.free == 4
            limiter.release(6)
        assert limiter.free == 1
        return log

    assert anyio.run(main) == ["big", "small"]


def test_an_oversized_request_counts_as_full_and_a_cancelled_waiter_leaves_no_trace() -> None:
    async def main() -> None:
        limiter = WorkLimiter(10)
        assert await limiter.acquire(50, 1) and limiter.free == 0
        with anyio.move_on_after(0.05):
            await limiter.acquire(3, 5)
        limiter.release(50)
        assert limiter.free == 10
        assert await limiter.acquire(10, 0.01)

    anyio.run(main)
