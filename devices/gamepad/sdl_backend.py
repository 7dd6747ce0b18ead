"""The SDL thread: the one place that calls SDL, shared by every gamepad device of the process.

SDL's joystick state is process-global and not thread-safe, so one daemon thread owns it: it
initialises SDL, loads mappings, notices pads coming and going, reads the bound pads, and runs
the requests other threads queue (rumble, LED, virtual pads). It polls at `ACTIVE_HZ` while any
joystick is present and at `IDLE_HZ` otherwise; SDL offers no file descriptor to wait on, and its
own blocking wait is a poll loop too. Readings and events go to each claimant's `deliver` callback
(thread-safe; the adapter hands them to its event loop with `call_soon_threadsafe`).

The backend is reference counted: `acquire` starts it on first use, `release` stops it (closing
pads, stopping rumble, detaching virtual pads, `SDL_Quit`) when the last user leaves. A new backend
waits for the previous one's `SDL_Quit` before its `SDL_Init`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

if "PYSDL2_DLL_PATH" not in os.environ:
    # pysdl2-dll's wheel carries libSDL2; importing it points PySDL2 there. With PYSDL2_DLL_PATH set
    # (e.g. to Debian's libsdl2 on armv7, which has no wheel), that library is used instead.
    with contextlib.suppress(ImportError):
        import sdl2dll  # noqa: F401
import sdl2

from devices.gamepad.mappings import MappingFileError, read_mapping_file
from devices.gamepad.model import (
    BackendStopped,
    PadAttached,
    PadDetached,
    PadEvent,
    PadGone,
    PadInfo,
    PadSample,
    PadWaiting,
    Selector,
    VirtualOutputsChanged,
    VirtualSpec,
    controller_type_name,
    demo_motion,
)
from devices.gamepad.normalize import SDL_AXES, SDL_BUTTONS, RawPad
from devices.gamepad.sdl_virtual import VirtualPad, sdl_error

log = logging.getLogger(__name__)

#: Polls per second while a joystick is present, and while none is (hot-plug detection only).
ACTIVE_HZ = 125.0
IDLE_HZ = 2.0
#: Seconds `release` waits for the thread to shut SDL down.
JOIN_TIMEOUT_S = 5.0

T = TypeVar("T")

# Hints set before SDL_Init. Overrides win over the environment: SDL must leave SIGINT/SIGTERM to
# asyncio (else it swallows systemd's SIGTERM), and buttons must be positional (A = south = ✕) for
# the seed's order. The others are defaults the environment may change.
_OVERRIDE_HINTS = {b"SDL_NO_SIGNAL_HANDLERS": b"1", b"SDL_GAMECONTROLLER_USE_BUTTON_LABELS": b"0"}
_DEFAULT_HINTS = {b"SDL_VIDEODRIVER": b"dummy", b"SDL_JOYSTICK_ALLOW_BACKGROUND_EVENTS": b"1"}

_DEVICE_EVENTS = frozenset(
    {
        sdl2.SDL_JOYDEVICEADDED,
        sdl2.SDL_JOYDEVICEREMOVED,
        sdl2.SDL_CONTROLLERDEVICEADDED,
        sdl2.SDL_CONTROLLERDEVICEREMOVED,
        sdl2.SDL_CONTROLLERDEVICEREMAPPED,
    }
)


@dataclass(frozen=True, slots=True)
class SdlVersion:
    """The SDL library in use: its version and how many mappings it had built in."""

    version: str
    builtin_mappings: int


@dataclass(frozen=True, slots=True)
class MappingReport:
    """Mappings a file gave SDL: `added` new GUIDs, `updated` replaced mappings (later lines win)."""

    path: str
    added: int
    updated: int


@dataclass(eq=False)
class Claim:
    """A device's hold on one pad: which pad it wants, where its events go, what it has now.

    Fields other than `selector`, `deliver` and `virtual` belong to the SDL thread.
    """

    selector: Selector
    deliver: Callable[[PadEvent], None]
    virtual: VirtualSpec | None = None
    virtual_pad: VirtualPad | None = None
    pad: OpenPad | None = None
    waiting: str = ""
    #: Its pad was lost: the claim takes no other pad until its owner gives it up and claims again.
    lost: bool = False
    #: When the SDL thread last read its pad (s since the epoch; 0: never). Written by the SDL thread,
    #: read by the owner: a republished state is only as fresh as this (a stalled SDL thread ages it).
    read_wall: float = 0.0


@dataclass(eq=False)
class OpenPad:
    """A game controller opened for a claim (SDL thread only)."""

    controller: Any
    info: PadInfo
    last: RawPad | None = None
    rumble_until: float = 0.0
    trigger_rumble_until: float = 0.0

    def read(self) -> RawPad:
        """The pad's axes and buttons through SDL's GameController API."""
        get_axis, get_button = sdl2.SDL_GameControllerGetAxis, sdl2.SDL_GameControllerGetButton
        axes = tuple(int(get_axis(self.controller, axis)) for axis in range(SDL_AXES))
        buttons = tuple(bool(get_button(self.controller, button)) for button in range(SDL_BUTTONS))
        return RawPad(axes, buttons)


@dataclass(frozen=True, slots=True)
class PresentPad:
    """A joystick SDL sees, not opened (`hwgateway scan`).

    `guid`: 32 hex digits; `path` may be empty; `mapped`: SDL knows a game controller mapping for
    it; `virtual`: an SDL virtual joystick.
    """

    name: str
    guid: str
    path: str
    mapped: bool
    virtual: bool


@dataclass(eq=False)
class _Request:
    work: Callable[[], Any]
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future)


def _text(value: bytes | None) -> str:
    return value.decode(errors="replace") if value else ""


class SdlBackend:
    """The SDL-owning thread and the requests other threads make of it."""

    def __init__(self, previous: SdlBackend | None = None) -> None:
        self.refs = 0
        self._previous = previous
        self._requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._accepting = True
        self._accept_lock = threading.Lock()
        self._ready: concurrent.futures.Future[SdlVersion] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._main, name="sdl-gamepad", daemon=True)
        # Owned by the SDL thread:
        self._claims: list[Claim] = []
        self._virtual: list[VirtualPad] = []
        self._motion: dict[VirtualPad, float] = {}
        self._dirty = True

    # ---- any thread ------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """True until the thread is asked to stop or has stopped."""
        return not self._stopping.is_set() and (self._thread.is_alive() or not self._thread.ident)

    def start(self) -> None:
        """Start the SDL thread."""
        self._thread.start()

    def submit(self, work: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Run `work` on the SDL thread; the future holds its result or exception."""
        request = _Request(work)
        with self._accept_lock:
            if not self._accepting:
                request.future.set_exception(BackendStopped("the SDL thread has stopped"))
                return request.future
            self._requests.put(request)
        self._wake.set()
        return request.future

    async def call(self, work: Callable[[], T]) -> T:
        """Run `work` on the SDL thread and await its result."""
        return await asyncio.wrap_future(self.submit(work))

    async def ready(self) -> SdlVersion:
        """Wait for SDL_Init; raise `SdlError` when it failed."""
        return await asyncio.wrap_future(self._ready)

    def request_stop(self) -> None:
        """Ask the thread to finish its queued requests, release SDL and end."""
        self._stopping.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end (it must have been asked to stop)."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("SDL thread did not stop within %s s", timeout)

    # ---- requests (each runs on the SDL thread through `call`/`submit`) --------------------

    async def load_mappings(self, path: str) -> MappingReport:
        """Add the mappings of a GameControllerDB-format file; later mappings replace earlier ones."""
        return await self.call(lambda: self._load_mappings(path))

    async def claim(
        self,
        selector: Selector,
        deliver: Callable[[PadEvent], None],
        virtual: VirtualSpec | None = None,
        motion: bool = False,
    ) -> Claim:
        """Register a device that wants a pad and return its claim.

        With `virtual`, attach that virtual pad for the claim alone (playing `demo_motion` when
        `motion`) and bind only to it; otherwise bind the first free pad that `selector` matches.
        """
        future = self.submit(lambda: self._claim(Claim(selector, deliver, virtual), motion))
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            # The request may already be running on the SDL thread: give the claim back once it exists.
            future.add_done_callback(self._unclaim_abandoned)
            raise

    def _unclaim_abandoned(self, future: concurrent.futures.Future[Claim]) -> None:
        if not future.cancelled() and future.exception() is None:
            self.unclaim(future.result())

    def unclaim(self, claim: Claim) -> None:
        """Give the claim's pad up (rumble stopped, own virtual pad detached); no waiting."""
        self.submit(lambda: self._unclaim(claim))

    async def rumble(self, claim: Claim, low: int, high: int, duration_ms: int) -> None:
        """Rumble the claim's pad: motor strengths 0-65535 for `duration_ms` (SDL stops it then)."""
        await self.call(lambda: self._rumble(claim, low, high, duration_ms, triggers=False))

    async def rumble_triggers(self, claim: Claim, left: int, right: int, duration_ms: int) -> None:
        """Rumble the claim's pad's trigger motors: strengths 0-65535 for `duration_ms`."""
        await self.call(lambda: self._rumble(claim, left, right, duration_ms, triggers=True))

    async def set_led(self, claim: Claim, red: int, green: int, blue: int) -> None:
        """Set the claim's pad's LED colour, each channel 0-255."""
        await self.call(lambda: self._set_led(claim, red, green, blue))

    async def set_player_index(self, claim: Claim, index: int) -> None:
        """Set the claim's pad's player index (-1: none)."""
        await self.call(lambda: self._set_player_index(claim, index))

    def stop_rumble(self, claim: Claim, motors: bool = True, triggers: bool = True) -> None:
        """Stop the rumble (`motors`) and trigger rumble (`triggers`) on the claim's pad at once; no waiting."""
        self.submit(lambda: self._stop_rumble(claim, motors, triggers))

    async def present(self) -> list[PresentPad]:
        """Every joystick SDL sees now, opened or not (`hwgateway scan`)."""
        return await self.call(self._present)

    async def attach_virtual(
        self, spec: VirtualSpec, on_output: Callable[[Any], None] | None = None, motion: bool = False
    ) -> VirtualPad:
        """Attach a virtual pad anyone may claim (tests); `motion` plays `demo_motion` on it."""
        return await self.call(lambda: self._attach_virtual(spec, on_output, motion))

    async def set_virtual(
        self,
        pad: VirtualPad,
        axes: Mapping[int, int] | None = None,
        buttons: Mapping[int, bool] | None = None,
        hats: Mapping[int, int] | None = None,
    ) -> None:
        """Set a virtual pad's joystick inputs (see `VirtualPad.set_inputs`)."""
        await self.call(lambda: pad.set_inputs(axes, buttons, hats))

    async def detach_virtual(self, pad: VirtualPad) -> None:
        """Unplug a virtual pad."""
        await self.call(lambda: self._detach_virtual(pad))

    # ---- the SDL thread ----------------------------------------------------------------------

    def _main(self) -> None:
        if self._previous is not None:
            self._previous.join(JOIN_TIMEOUT_S)  # SDL is global: its SDL_Quit must come before our SDL_Init
            self._previous = None
        # Marked running first: a waiter cancelled meanwhile (a gateway that failed to start) can no
        # longer cancel it, so setting its result cannot raise InvalidStateError in this thread.
        waited_for = self._ready.set_running_or_notify_cancel()
        try:
            version = self._init_sdl()
        except Exception as error:
            if waited_for:
                self._ready.set_exception(error)
            self._close_requests()
            return
        if waited_for:
            self._ready.set_result(version)
        try:
            self._loop()
        except Exception as error:
            log.exception("SDL thread failed")
            self._stopping.set()
            for claim in self._claims:
                self._deliver(claim, PadDetached(claim.pad.info if claim.pad else None, f"SDL thread failed: {error}"))
        finally:
            self._close_requests()
            self._shutdown()

    def _init_sdl(self) -> SdlVersion:
        for name, value in _OVERRIDE_HINTS.items():
            sdl2.SDL_SetHintWithPriority(name, value, sdl2.SDL_HINT_OVERRIDE)
        for name, value in _DEFAULT_HINTS.items():
            sdl2.SDL_SetHint(name, value)
        if sdl2.SDL_Init(sdl2.SDL_INIT_GAMECONTROLLER | sdl2.SDL_INIT_EVENTS) != 0:
            raise sdl_error("SDL_Init failed")
        linked = sdl2.SDL_version()
        sdl2.SDL_GetVersion(ctypes.byref(linked))
        version = SdlVersion(f"{linked.major}.{linked.minor}.{linked.patch}", int(sdl2.SDL_GameControllerNumMappings()))
        log.info("SDL %s started with %d built-in mappings", version.version, version.builtin_mappings)
        return version

    def _loop(self) -> None:
        event = sdl2.SDL_Event()
        while not self._stopping.is_set():
            # Cleared before the work, so a request queued meanwhile cuts the next wait short.
            self._wake.clear()
            self._run_requests()
            now = time.monotonic()
            for pad, started in self._motion.items():
                if pad.attached:
                    pad.apply(demo_motion(now - started))
            while sdl2.SDL_PollEvent(ctypes.byref(event)):
                if event.type in _DEVICE_EVENTS:
                    self._dirty = True
            if self._dirty:
                self._dirty = False
                self._reconcile()
            self._read_pads()
            active = sdl2.SDL_NumJoysticks() > 0
            self._wake.wait(1.0 / (ACTIVE_HZ if active else IDLE_HZ))

    def _run_requests(self) -> None:
        while True:
            try:
                request = self._requests.get_nowait()
            except queue.Empty:
                return
            if not request.future.set_running_or_notify_cancel():
                continue
            try:
                request.future.set_result(request.work())
            except Exception as error:
                request.future.set_exception(error)

    def _close_requests(self) -> None:
        with self._accept_lock:
            self._accepting = False
        # Requests queued before the stop still run (an unclaim stops its pad's rumble).
        self._run_requests()

    def _shutdown(self) -> None:
        for claim in self._claims:
            self._release_pad(claim)
        for pad in self._virtual:
            pad.detach()
        self._claims.clear()
        self._virtual.clear()
        self._motion.clear()
        sdl2.SDL_Quit()
        log.info("SDL stopped")

    def _deliver(self, claim: Claim, event: PadEvent) -> None:
        try:
            claim.deliver(event)
        except Exception:
            log.exception("gamepad event handler failed")

    def _read_pads(self) -> None:
        wall, now = time.time(), time.monotonic()
        for claim in self._claims:
            pad = claim.pad
            if pad is None:
                continue
            raw = pad.read()
            claim.read_wall = wall
            if raw != pad.last:
                pad.last = raw
                self._deliver(claim, PadSample(raw, wall, now))

    def _reconcile(self) -> None:
        """Match pads to claims after pads came, went or got mappings."""
        present = {int(sdl2.SDL_JoystickGetDeviceInstanceID(i)): i for i in range(int(sdl2.SDL_NumJoysticks()))}
        for claim in self._claims:
            pad = claim.pad
            if pad is not None and (
                pad.info.instance_id not in present or not sdl2.SDL_GameControllerGetAttached(pad.controller)
            ):
                self._release_pad(claim)
                claim.lost = True
                self._deliver(claim, PadDetached(pad.info, "detached"))
        taken = {claim.pad.info.instance_id for claim in self._claims if claim.pad is not None}
        reserved = {claim.virtual_pad.instance_id: claim for claim in self._claims if claim.virtual_pad is not None}
        unmapped = [
            f"{_text(sdl2.SDL_JoystickNameForIndex(index))} (GUID {self._guid(index)})"
            for index in present.values()
            if not sdl2.SDL_IsGameController(index)
        ]
        for claim in self._claims:
            if claim.pad is not None or claim.lost:
                continue
            for instance, index in sorted(present.items(), key=lambda item: item[1]):
                owner = reserved.get(instance)
                if instance in taken or (owner is not None and owner is not claim):
                    continue
                if claim.virtual_pad is not None and instance != claim.virtual_pad.instance_id:
                    continue
                if not sdl2.SDL_IsGameController(index):
                    continue
                if claim.virtual_pad is None and not claim.selector.may_match(
                    _text(sdl2.SDL_GameControllerNameForIndex(index)),
                    self._guid(index),
                    _text(sdl2.SDL_GameControllerPathForIndex(index)),
                ):
                    continue  # opening a pad only to compare its serial is left for the last check
                if self._open(claim, index):
                    taken.add(instance)
                    break
            else:
                self._report_waiting(claim, unmapped)

    def _report_waiting(self, claim: Claim, unmapped: list[str]) -> None:
        wanted = f"virtual pad {claim.virtual.name!r}" if claim.virtual else claim.selector.describe()
        detail = f"waiting for {wanted}"
        if unmapped:
            detail += "; joysticks without a game controller mapping: " + ", ".join(unmapped)
        if detail != claim.waiting:
            claim.waiting = detail
            self._deliver(claim, PadWaiting(detail))

    def _present(self) -> list[PresentPad]:
        return [
            PresentPad(
                name=_text(sdl2.SDL_JoystickNameForIndex(index)),
                guid=self._guid(index),
                path=_text(sdl2.SDL_JoystickPathForIndex(index)),
                mapped=bool(sdl2.SDL_IsGameController(index)),
                virtual=bool(sdl2.SDL_JoystickIsVirtual(index)),
            )
            for index in range(int(sdl2.SDL_NumJoysticks()))
        ]

    def _guid(self, index: int) -> str:
        buffer = ctypes.create_string_buffer(33)
        sdl2.SDL_JoystickGetGUIDString(sdl2.SDL_JoystickGetDeviceGUID(index), buffer, 33)
        return buffer.value.decode()

    def _open(self, claim: Claim, index: int) -> bool:
        """Open device `index` for `claim` if it is the pad the claim wants."""
        controller = sdl2.SDL_GameControllerOpen(index)
        if not controller:
            log.warning("%s", sdl_error(f"cannot open game controller {index}"))
            return False
        joystick = sdl2.SDL_GameControllerGetJoystick(controller)
        info = PadInfo(
            instance_id=int(sdl2.SDL_JoystickInstanceID(joystick)),
            name=_text(sdl2.SDL_GameControllerName(controller)),
            guid=self._guid(index),
            serial=_text(sdl2.SDL_GameControllerGetSerial(controller)),
            path=_text(sdl2.SDL_GameControllerPath(controller)),
            vendor_id=int(sdl2.SDL_GameControllerGetVendor(controller)),
            product_id=int(sdl2.SDL_GameControllerGetProduct(controller)),
            type=controller_type_name(int(sdl2.SDL_GameControllerGetType(controller))),
            rumble=bool(sdl2.SDL_GameControllerHasRumble(controller)),
            trigger_rumble=bool(sdl2.SDL_GameControllerHasRumbleTriggers(controller)),
            led=bool(sdl2.SDL_GameControllerHasLED(controller)),
            virtual=bool(sdl2.SDL_JoystickIsVirtual(index)),
        )
        if claim.virtual_pad is None and not claim.selector.matches(info):
            sdl2.SDL_GameControllerClose(controller)
            return False
        claim.pad = OpenPad(controller, info)
        claim.waiting = ""
        log.info("pad %r (%s) bound", info.name, info.key)
        self._deliver(claim, PadAttached(info))
        return True

    def _release_pad(self, claim: Claim) -> None:
        pad, claim.pad = claim.pad, None
        if pad is None:
            return
        if sdl2.SDL_GameControllerGetAttached(pad.controller):
            # Closing alone does not stop a motor when another handle (a virtual pad's) keeps the joystick open.
            self._stop_pad_rumble(pad)
        sdl2.SDL_GameControllerClose(pad.controller)

    def _load_mappings(self, path: str) -> MappingReport:
        added = updated = 0
        for mapping in read_mapping_file(path, _text(sdl2.SDL_GetPlatform())):
            result = int(sdl2.SDL_GameControllerAddMapping(mapping.text.encode()))
            if result < 0:
                raise MappingFileError(f"{path}:{mapping.line}: {sdl_error('SDL refused the mapping')}")
            added += result
            updated += 1 - result
        self._dirty = True
        return MappingReport(path, added, updated)

    def _claim(self, claim: Claim, motion: bool) -> Claim:
        if claim.virtual is not None:
            claim.virtual_pad = self._attach_virtual(claim.virtual, self._forward_outputs(claim), motion)
        self._claims.append(claim)
        self._dirty = True
        return claim

    def _forward_outputs(self, claim: Claim) -> Callable[[Any], None]:
        return lambda outputs: self._deliver(claim, VirtualOutputsChanged(outputs))

    def _unclaim(self, claim: Claim) -> None:
        if claim not in self._claims:
            return
        self._release_pad(claim)
        self._claims.remove(claim)
        if claim.virtual_pad is not None:
            self._detach_virtual(claim.virtual_pad)
        self._dirty = True

    def _attach_virtual(self, spec: VirtualSpec, on_output: Callable[[Any], None] | None, motion: bool) -> VirtualPad:
        pad = VirtualPad(spec, on_output)
        self._virtual.append(pad)
        if motion:
            self._motion[pad] = time.monotonic()
        self._dirty = True
        return pad

    def _detach_virtual(self, pad: VirtualPad) -> None:
        pad.detach()
        self._motion.pop(pad, None)
        if pad in self._virtual:
            self._virtual.remove(pad)
        self._dirty = True

    def _pad_of(self, claim: Claim) -> OpenPad:
        if claim.pad is None:
            raise PadGone("no pad is attached")
        return claim.pad

    def _rumble(self, claim: Claim, first: int, second: int, duration_ms: int, triggers: bool) -> None:
        pad = self._pad_of(claim)
        if duration_ms <= 0:
            first = second = 0  # SDL would rumble forever with no duration; zero time means stop
        call = sdl2.SDL_GameControllerRumbleTriggers if triggers else sdl2.SDL_GameControllerRumble
        if call(pad.controller, first, second, duration_ms) < 0:
            raise sdl_error("trigger rumble failed" if triggers else "rumble failed")
        until = time.monotonic() + duration_ms / 1000.0 if first or second else 0.0
        if triggers:
            pad.trigger_rumble_until = until
        else:
            pad.rumble_until = until

    def _stop_rumble(self, claim: Claim, motors: bool, triggers: bool) -> None:
        if claim.pad is not None:
            self._stop_pad_rumble(claim.pad, motors, triggers)

    def _stop_pad_rumble(self, pad: OpenPad, motors: bool = True, triggers: bool = True) -> None:
        # Only a motor that may still run gets a stop, so an expired rumble sees no second (0, 0).
        now = time.monotonic()
        if motors:
            if pad.rumble_until > now:
                sdl2.SDL_GameControllerRumble(pad.controller, 0, 0, 0)
            pad.rumble_until = 0.0
        if triggers:
            if pad.trigger_rumble_until > now:
                sdl2.SDL_GameControllerRumbleTriggers(pad.controller, 0, 0, 0)
            pad.trigger_rumble_until = 0.0

    def _set_led(self, claim: Claim, red: int, green: int, blue: int) -> None:
        if sdl2.SDL_GameControllerSetLED(self._pad_of(claim).controller, red, green, blue) < 0:
            raise sdl_error("setting the LED failed")

    def _set_player_index(self, claim: Claim, index: int) -> None:
        sdl2.SDL_GameControllerSetPlayerIndex(self._pad_of(claim).controller, index)


# ---- the process-wide backend --------------------------------------------------------------------

_lock = threading.Lock()
#: The backend new users join; None when none runs (or the last one is stopping).
_current: SdlBackend | None = None
#: The most recently started backend, which a new one waits for before its SDL_Init.
_latest: SdlBackend | None = None


def acquire() -> SdlBackend:
    """The running SDL backend, started if needed; pair every call with `release`."""
    global _current, _latest
    with _lock:
        if _current is None or not _current.alive:
            _current = _latest = SdlBackend(previous=_latest)
            _current.start()
        _current.refs += 1
        return _current


async def release(backend: SdlBackend) -> None:
    """Drop one use of `backend`; the last one stops the thread and waits (off the event loop) for SDL_Quit."""
    global _current
    with _lock:
        backend.refs -= 1
        if backend.refs > 0:
            return
        if _current is backend:
            _current = None
        backend.request_stop()
    await asyncio.to_thread(backend.join, JOIN_TIMEOUT_S)
