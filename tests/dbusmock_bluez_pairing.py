"""python-dbusmock's `bluez5` template, with pairing as bluetoothd does it: through the caller's agent.

The stock template's `Device1.Pair` marks a device paired at once and asks no agent. Here a device
added with `AddPairable(adapter, address, name, answer)` pairs the way the device would:

- `pin`: BlueZ asks the agent of the caller of `Pair` for a PIN (`RequestPinCode`), and the device
  accepts only the Wii Remote's sync-button PIN, the adapter's address bytes reversed (wiimote.md
  §1.3); otherwise `org.bluez.Error.AuthenticationFailed`, as a real remote answers;
- `confirm`: BlueZ asks the agent to confirm passkey 123456 (`RequestConfirmation`), as for a BLE
  device that shows it;
- `refuse`: the device refuses (`AuthenticationFailed`) without a question;
- `silent`: the device never answers; `CancelPairing` ends it with `AuthenticationCanceled`.

An agent's refusal fails `Pair` with `org.bluez.Error.AuthenticationRejected`. `DenyAgents()` makes
`RegisterAgent` answer `org.freedesktop.DBus.Error.AccessDenied`, as the bus does for a user its
policy does not let talk to BlueZ. Loaded by path, in the mock's process (dbus-python), by
tests/test_pairing.py.
"""

import time
from typing import Any

import dbus
from dbusmock import mockobject
from dbusmock.templates import bluez5
from dbusmock.templates.bluez5 import (  # noqa: F401 (the Mock interface's methods the template exports)
    AddAdapter,
    AddDevice,
    BlockDevice,
    ConnectDevice,
    DisconnectDevice,
    PairDevice,
    RemoveAdapter,
    RemoveAdapterWithDevices,
)

BUS_NAME = bluez5.BUS_NAME
MAIN_OBJ = bluez5.MAIN_OBJ
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True

MOCK = bluez5.BLUEZ_MOCK_IFACE
DEVICE = bluez5.DEVICE_IFACE
ADAPTER = bluez5.ADAPTER_IFACE
AGENT_MANAGER = bluez5.AGENT_MANAGER_IFACE
AGENT = "org.bluez.Agent1"
PASSKEY = 123456


def load(mock: Any, parameters: dict[str, Any]) -> None:
    bluez5.load(mock, parameters)
    manager = mockobject.objects["/org/bluez"]
    manager.agents = {}
    manager.deny = False
    manager.methods[AGENT_MANAGER]["RegisterAgent"] = ("os", "", "", Calls.register_agent)
    manager.methods[AGENT_MANAGER]["UnregisterAgent"] = ("o", "", "", Calls.unregister_agent)


@dbus.service.method(MOCK, in_signature="", out_signature="")
def DenyAgents(self: Any) -> None:
    mockobject.objects["/org/bluez"].deny = True


@dbus.service.method(MOCK, in_signature="ssss", out_signature="s")
def AddPairable(self: Any, adapter_name: str, address: str, name: str, answer: str) -> str:
    path = AddDevice(self, adapter_name, address, name)
    device = mockobject.objects[path]
    device.answer = str(answer)
    device.adapter_name = str(adapter_name)
    device.pending = None
    device.methods[DEVICE]["Pair"] = ("", "", "", Calls.pair)
    device.methods[DEVICE]["CancelPairing"] = ("", "", "", Calls.cancel_pairing)
    device.methods[DEVICE]["Connect"] = ("", "", "", Calls.connect)
    return str(path)


def _failed(name: str, text: str) -> Any:
    return dbus.exceptions.DBusException(text, name="org.bluez.Error." + name)


class Calls:
    """The methods put in place of the template's (in a class: AddTemplate exports every module-level method on /)."""

    @dbus.service.method(AGENT_MANAGER, in_signature="os", out_signature="", sender_keyword="sender")
    def register_agent(manager: Any, path: str, capability: str, sender: str | None = None) -> None:
        if manager.deny:
            raise dbus.exceptions.DBusException(
                "Rejected send message: policy denies it", name="org.freedesktop.DBus.Error.AccessDenied"
            )
        if sender in manager.agents:
            raise dbus.exceptions.DBusException("Already exists", name="org.bluez.Error.AlreadyExists")
        manager.agents[sender] = str(path)

    @dbus.service.method(AGENT_MANAGER, in_signature="o", out_signature="", sender_keyword="sender")
    def unregister_agent(manager: Any, path: str, sender: str | None = None) -> None:
        if manager.agents.get(sender) != str(path):
            raise dbus.exceptions.DBusException("Does not exist", name="org.bluez.Error.DoesNotExist")
        del manager.agents[sender]

    @dbus.service.method(
        DEVICE, in_signature="", out_signature="", sender_keyword="sender", async_callbacks=("ok", "err")
    )
    def pair(
        device: Any,
        sender: str | None = None,
        ok: Any = None,  # dbus-python passes both (async_callbacks)
        err: Any = None,
    ) -> None:
        device.call_log.append((int(time.time()), "Pair", []))
        if device.paired:
            err(_failed("AlreadyExists", "Already Exists"))
            return
        if device.answer == "refuse":
            err(_failed("AuthenticationFailed", "Authentication Failed"))
            return
        if device.answer == "silent":
            device.pending = err
            return
        agent = mockobject.objects["/org/bluez"].agents.get(sender)
        if agent is None:
            err(_failed("AuthenticationFailed", "no agent to ask"))
            return
        path = device.__dbus_object_path__
        address = device.props[DEVICE]["Address"]

        def paired(*_: Any) -> None:
            PairDevice(None, device.adapter_name, address)
            ok()

        def rejected(error: Any) -> None:
            err(_failed("AuthenticationRejected", f"Authentication Rejected: {error.get_dbus_message()}"))

        def pin_given(pin: str) -> None:
            adapter = mockobject.objects["/org/bluez/" + device.adapter_name]
            expected = bytes.fromhex(str(adapter.props[ADAPTER]["Address"]).replace(":", ""))[::-1]
            if str(pin).encode("latin-1") == expected:
                paired()
            else:
                err(_failed("AuthenticationFailed", "Authentication Failed"))

        bus = device.connection
        if device.answer == "pin":
            bus.call_async(
                sender, agent, AGENT, "RequestPinCode", "o", (path,), reply_handler=pin_given, error_handler=rejected
            )
        else:
            bus.call_async(
                sender,
                agent,
                AGENT,
                "RequestConfirmation",
                "ou",
                (path, PASSKEY),
                reply_handler=paired,
                error_handler=rejected,
            )

    @dbus.service.method(DEVICE, in_signature="", out_signature="")
    def cancel_pairing(device: Any) -> None:
        device.call_log.append((int(time.time()), "CancelPairing", []))
        if device.pending is None:
            raise _failed("DoesNotExist", "No pairing in progress")
        device.pending(_failed("AuthenticationCanceled", "Authentication Canceled"))
        device.pending = None

    @dbus.service.method(DEVICE, in_signature="", out_signature="")
    def connect(device: Any) -> None:
        """As the template's, and the property follows (GetAll says Connected, as bluetoothd's does)."""
        if device.props[DEVICE]["Connected"]:
            raise _failed("AlreadyConnected", "Already Connected")
        device.call_log.append((int(time.time()), "Connect", []))
        device.UpdateProperties(DEVICE, {"Connected": dbus.Boolean(True)})
