"""The client's one clock, in the service's seconds.

As the sandbox turns its time scale into one clock object once (``runtime/clock.py``), the client's
assembler turns the settings' time scale into a :class:`ServiceClock` once: every wait, deadline and
elapsed time of the client is then in the service's seconds, and only what is real by nature (a
request's timeout on the network, the limiters' windows shared with other processes on wall time)
asks the clock how long its service seconds take (:meth:`ServiceClock.real`).
"""

from mediagen_nb.runtime.clock import Clock


class ServiceClock:
    """``machine`` (the wall clock, or a manual sandbox's stepping clock) seen in the service's seconds:
    a service running ``scale`` times faster than the machine (a time-scaled sandbox), or as fast (1)."""

    def __init__(self, machine: Clock, scale: float = 1.0) -> None:
        if not 0 < scale < float("inf"):
            raise ValueError("a clock's time scale must be positive and finite")
        self.machine = machine
        self.scale = scale

    def __repr__(self) -> str:
        return f"ServiceClock({self.machine!r}, x{self.scale:g})"

    @property
    def label(self) -> str:
        """How fast the service's time runs, for reprs and banners: ``time x600``."""
        return f"time x{self.scale:g}"

    def now(self) -> float:
        """The moment on the machine's clock (Unix seconds): what the limiters' shared windows are kept on."""
        return self.machine.now()

    def monotonic(self) -> float:
        """Service seconds, for deadlines and elapsed times."""
        return self.machine.monotonic() * self.scale

    def sleep(self, seconds: float) -> None:
        """Block this thread for ``seconds`` of service time."""
        self.machine.sleep(self.real(seconds))

    async def wait(self, seconds: float) -> None:
        """Wait ``seconds`` of service time in this task."""
        await self.machine.wait(self.real(seconds))

    def real(self, seconds: float) -> float:
        """The machine's seconds that ``seconds`` of service time take."""
        return seconds / self.scale

    def service(self, seconds: float) -> float:
        """The service's seconds that ``seconds`` on the machine's clock take."""
        return seconds * self.scale
