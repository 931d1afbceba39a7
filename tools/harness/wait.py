"""The harness's one way to wait: poll a condition until a deadline.

Nothing sleeps a fixed time and then checks: a wait ends as soon as what it
waits for holds, and fails with what it saw last when the deadline (chosen
generous, for a loaded 2-core machine) passes first."""
import time

POLL_S = 0.02  # between two looks; short against every deadline
# For anything a process should do soon, on a loaded 2-core machine.
DEADLINE_S = 120


def until(get, pred, timeout, what, alive=None, describe=repr):
    """The first get() for which pred() holds. Raises AssertionError naming
    `what` and the last value (through `describe`) once `timeout` seconds
    passed, or as soon as alive() says the process that would make it hold
    has ended (after one more look)."""
    end = time.monotonic() + timeout
    while True:
        running = alive() if alive else True
        value = get()
        if pred(value):
            return value
        if not running:
            raise AssertionError(f"no {what}: the process ended; last: {describe(value)}")
        if time.monotonic() > end:
            raise AssertionError(f"no {what} within {timeout}s; last: {describe(value)}")
        time.sleep(POLL_S)
