"""Wire codes of LWP 3.0 (LEGO's "LEGO Wireless Protocol 3.0.00" document, sections named per enum)."""

from __future__ import annotations

from enum import IntEnum, IntFlag

#: The hub's one GATT service and its one characteristic (§1, "LEGO Hub Service").
HUB_SERVICE_UUID = "00001623-1212-efde-1623-785feabcd123"
HUB_CHARACTERISTIC_UUID = "00001624-1212-efde-1623-785feabcd123"
#: LEGO System A/S, the company id of the hubs' advertised manufacturer data (§2).
LEGO_COMPANY_ID = 0x0397


class MessageType(IntEnum):
    """§3.3 Message Types."""

    HUB_PROPERTIES = 0x01
    HUB_ACTIONS = 0x02
    HUB_ALERTS = 0x03
    HUB_ATTACHED_IO = 0x04
    GENERIC_ERROR = 0x05
    HW_NETWORK_COMMANDS = 0x08
    FW_BOOT_MODE = 0x10
    FW_LOCK_MEMORY = 0x11
    FW_LOCK_STATUS_REQUEST = 0x12
    FW_LOCK_STATUS = 0x13
    PORT_INFORMATION_REQUEST = 0x21
    PORT_MODE_INFORMATION_REQUEST = 0x22
    PORT_INPUT_FORMAT_SETUP_SINGLE = 0x41
    PORT_INPUT_FORMAT_SETUP_COMBINED = 0x42
    PORT_INFORMATION = 0x43
    PORT_MODE_INFORMATION = 0x44
    PORT_VALUE_SINGLE = 0x45
    PORT_VALUE_COMBINED = 0x46
    PORT_INPUT_FORMAT_SINGLE = 0x47
    PORT_INPUT_FORMAT_COMBINED = 0x48
    VIRTUAL_PORT_SETUP = 0x61
    PORT_OUTPUT_COMMAND = 0x81
    PORT_OUTPUT_COMMAND_FEEDBACK = 0x82


class HubProperty(IntEnum):
    """§3.5.3 Hub Property Reference."""

    ADVERTISING_NAME = 0x01
    BUTTON = 0x02
    FW_VERSION = 0x03
    HW_VERSION = 0x04
    RSSI = 0x05
    BATTERY_VOLTAGE = 0x06
    BATTERY_TYPE = 0x07
    MANUFACTURER_NAME = 0x08
    RADIO_FW_VERSION = 0x09
    LWP_VERSION = 0x0A
    SYSTEM_TYPE_ID = 0x0B
    HW_NETWORK_ID = 0x0C
    PRIMARY_MAC = 0x0D
    SECONDARY_MAC = 0x0E
    HW_NETWORK_FAMILY = 0x0F


class PropertyOperation(IntEnum):
    """§3.5.4 Hub Property Operation."""

    SET = 0x01
    ENABLE_UPDATES = 0x02
    DISABLE_UPDATES = 0x03
    RESET = 0x04
    REQUEST_UPDATE = 0x05
    UPDATE = 0x06


class HubAction(IntEnum):
    """§3.6 Hub Actions (0x01-0x2F downstream, 0x30-0x32 upstream)."""

    SWITCH_OFF = 0x01
    DISCONNECT = 0x02
    VCC_PORT_ON = 0x03
    VCC_PORT_OFF = 0x04
    ACTIVATE_BUSY = 0x05
    RESET_BUSY = 0x06
    SHUTDOWN = 0x2F
    WILL_SWITCH_OFF = 0x30
    WILL_DISCONNECT = 0x31
    WILL_GO_INTO_BOOT_MODE = 0x32


class AlertType(IntEnum):
    """§3.7 Hub Alerts: alert types."""

    LOW_VOLTAGE = 0x01
    HIGH_CURRENT = 0x02
    LOW_SIGNAL = 0x03
    OVER_POWER = 0x04


class AlertOperation(IntEnum):
    """§3.7 Hub Alerts: operations."""

    ENABLE_UPDATES = 0x01
    DISABLE_UPDATES = 0x02
    REQUEST_UPDATES = 0x03
    UPDATE = 0x04


class IoEvent(IntEnum):
    """§3.8.3 Hub Attached I/O events."""

    DETACHED = 0x00
    ATTACHED = 0x01
    ATTACHED_VIRTUAL = 0x02


class ErrorCode(IntEnum):
    """§3.9.2 Generic error codes."""

    ACK = 0x01
    MACK = 0x02
    BUFFER_OVERFLOW = 0x03
    TIMEOUT = 0x04
    COMMAND_NOT_RECOGNIZED = 0x05
    INVALID_USE = 0x06
    OVERCURRENT = 0x07
    INTERNAL_ERROR = 0x08


class IoType(IntEnum):
    """§3.8.4 IO Type IDs, and later ones as LEGO's own apps and libraries (pybricks, node-poweredup) name them."""

    MOTOR = 0x0001
    TRAIN_MOTOR = 0x0002
    BUTTON = 0x0005
    LED_LIGHT = 0x0008
    VOLTAGE = 0x0014
    CURRENT = 0x0015
    PIEZO_TONE = 0x0016
    RGB_LIGHT = 0x0017
    EXTERNAL_TILT = 0x0022
    MOTION_SENSOR = 0x0023
    COLOR_DISTANCE_SENSOR = 0x0025
    EXTERNAL_MOTOR_TACHO = 0x0026
    INTERNAL_MOTOR_TACHO = 0x0027
    INTERNAL_TILT = 0x0028
    TECHNIC_LARGE_MOTOR = 0x002E
    TECHNIC_XL_MOTOR = 0x002F
    TECHNIC_MEDIUM_ANGULAR_MOTOR = 0x0030
    TECHNIC_LARGE_ANGULAR_MOTOR = 0x0031
    TECHNIC_HUB_GESTURE = 0x0036
    TECHNIC_HUB_ACCELEROMETER = 0x0039
    TECHNIC_HUB_GYRO = 0x003A
    TECHNIC_HUB_TILT = 0x003B
    TECHNIC_HUB_TEMPERATURE = 0x003C
    TECHNIC_MEDIUM_ANGULAR_MOTOR_GREY = 0x004B
    TECHNIC_LARGE_ANGULAR_MOTOR_GREY = 0x004C


class SystemType(IntEnum):
    """§2.1 System Type and Device Number (SSS DDDDD), plus the Technic Medium hub (0x80) of later hubs."""

    WEDO_HUB = 0x00
    DUPLO_TRAIN = 0x20
    BOOST_MOVE_HUB = 0x40
    CITY_HUB = 0x41
    REMOTE_CONTROL = 0x42
    TECHNIC_HUB = 0x80


class Startup(IntEnum):
    """§3.26.2 Startup information (high nibble of the Startup and Completion byte)."""

    BUFFER = 0x0
    IMMEDIATE = 0x1


class Completion(IntEnum):
    """§3.26.2 Completion information (low nibble)."""

    NONE = 0x0
    FEEDBACK = 0x1


class SubCommand(IntEnum):
    """§3.27 Port Output sub commands used here (StartPower and SetRgb go through WriteDirectModeData)."""

    SET_ACC_TIME = 0x05
    SET_DEC_TIME = 0x06
    START_SPEED = 0x07
    START_SPEED_FOR_TIME = 0x09
    START_SPEED_FOR_DEGREES = 0x0B
    GOTO_ABSOLUTE_POSITION = 0x0D
    WRITE_DIRECT = 0x50
    WRITE_DIRECT_MODE_DATA = 0x51


class EndState(IntEnum):
    """§3.27.7 EndState after a timed or positioned move."""

    FLOAT = 0
    HOLD = 126
    BRAKE = 127


class Feedback(IntFlag):
    """§3.32 Port Output Command Feedback bits."""

    IN_PROGRESS = 0x01
    COMPLETED = 0x02
    DISCARDED = 0x04
    IDLE = 0x08
    BUSY_FULL = 0x10


#: StartPower(Power) special values (§3.27.1).
POWER_FLOAT = 0
POWER_BRAKE = 127
