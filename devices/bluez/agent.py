"""The pairing agent (`org.bluez.Agent1`) the gateway registers for one pairing window.

BlueZ asks the agent of whoever called `Device1.Pair` for what the pairing needs: a PIN (a Wii
Remote without BlueZ's wiimote plugin), a passkey to type in (a BLE device with a keypad-less
display), a yes to a passkey both sides show, or an authorisation. The agent answers only for the
device being paired, and only while the window is open; anything else is refused
(`org.bluez.Error.Rejected`), with the reason kept in `refusal` for the outcome. Each question is
told to `progress` as it comes (a passkey to type on the device, say).
"""

from collections.abc import Callable
from typing import NoReturn

from dbus_fast import DBusError
from dbus_fast.annotations import DBusObjectPath, DBusStr, DBusUInt16, DBusUInt32
from dbus_fast.service import ServiceInterface, method

from devices.bluez.dbus import AGENT
from devices.bluez.pin import agent_pin

REJECTED = "org.bluez.Error.Rejected"
CANCELED = "org.bluez.Error.Canceled"


class PairingAgent(ServiceInterface):  # its methods bear the D-Bus names BlueZ calls
    """Answers BlueZ for the device at `target` (its object path, set once it is found).

    `pin` is the PIN to give when asked (a Wii Remote's, `devices.bluez.pin`), `passkey` the one to
    type in when asked (None: refuse, saying how to give one); `progress` hears each step in words.
    """

    def __init__(self, pin: bytes | None, passkey: int | None, progress: Callable[[str], None]) -> None:
        super().__init__(AGENT)
        self.target = ""
        self.open = True
        self.refusal = ""
        self._pin = pin
        self._passkey = passkey
        self._progress = progress

    def _check(self, device: str, question: str) -> None:
        if not self.open or device != self.target:
            self._refuse(f"BlueZ asked {question} for {device}, which this pairing is not for")

    def _refuse(self, why: str, keep: bool = False) -> NoReturn:
        if keep:
            self.refusal = why
        self._progress(why)
        raise DBusError(REJECTED, why)

    @method()
    def Release(self) -> None:
        """BlueZ no longer uses this agent."""
        self.open = False

    @method()
    def RequestPinCode(self, device: DBusObjectPath) -> DBusStr:
        """The PIN of a legacy pairing: a Wii Remote's sync-button PIN, when a D-Bus string can carry it."""
        self._check(device, "for a PIN")
        if self._pin is None:
            self._refuse("the device asks for a PIN, and only a Wii Remote's is known here", keep=True)
        pin = agent_pin(self._pin)
        if pin is None:
            self._refuse(
                "the Wii Remote's PIN (the adapter's address, reversed) has a byte a BlueZ agent cannot send: "
                "use a bluetoothd with its wiimote plugin (Debian's has it), which answers the PIN itself",
                keep=True,
            )
        self._progress("answered the Wii Remote's PIN (the adapter's address, reversed)")
        return pin

    @method()
    def DisplayPinCode(self, device: DBusObjectPath, pincode: DBusStr) -> None:
        """A PIN to type on the device's keyboard."""
        self._check(device, "to show a PIN")
        self._progress(f"type {pincode} on the device, then Enter")

    @method()
    def RequestPasskey(self, device: DBusObjectPath) -> DBusUInt32:
        """The passkey the device shows, as given with the request."""
        self._check(device, "for a passkey")
        if self._passkey is None:
            self._refuse("the device asks for the passkey it shows: pair again giving it (--passkey N)", keep=True)
        self._progress("answered the passkey given")
        return self._passkey

    @method()
    def DisplayPasskey(self, device: DBusObjectPath, passkey: DBusUInt32, entered: DBusUInt16) -> None:
        """A passkey to type on the device (`entered` digits so far)."""
        self._check(device, "to show a passkey")
        self._progress(f"type {passkey:06d} on the device ({entered} typed so far)")

    @method()
    def RequestConfirmation(self, device: DBusObjectPath, passkey: DBusUInt32) -> None:
        """Both sides show `passkey`: yes, for the device being paired within its window."""
        self._check(device, "to confirm a passkey")
        self._progress(f"confirmed passkey {passkey:06d} (check that the device shows the same)")

    @method()
    def RequestAuthorization(self, device: DBusObjectPath) -> None:
        """A pairing without a passkey ("just works"): yes, for the device being paired."""
        self._check(device, "to authorise a pairing")
        self._progress("authorised the pairing")

    @method()
    def AuthorizeService(self, device: DBusObjectPath, uuid: DBusStr) -> None:
        """A service connection of the device being paired: yes."""
        self._check(device, f"to authorise service {uuid}")

    @method()
    def Cancel(self) -> None:
        """BlueZ gave up on the question it asked."""
        self._progress("BlueZ cancelled its question to the agent")
