"""ROS naming and the ROS 2 type layer, shared by every ROS face and the ros2 recordings (pure, no I/O).

A face may import no other face, so what the rosbridge face, the ROS 2 face and the rosbag2
recorder share lives here, in the core. Public API:

- `gateway.ros.names`: the one naming rule of ROS graph names (device namespaces, topics, command
  topics, services: `RosNames`, `DeviceNaming`, `namings_of`, `ros_path`, `join`) and of ROS 1 style
  type names (`ros_type("kortex/Base/ArmStateNotification")` -> `kortex_driver/ArmStateNotification`,
  `bus_type` back).
- `gateway.ros.types`: the ROS 2 description of a message class, `msg_type(cls) -> MsgType`
  (`pkg/msg/Type` name, fields with `FieldType`, constants); `ros2_type(bus_type)` -> `pkg/msg/Type`
  (a service's request `pkg/srv/Type_Request`, its `<service>_Response` class `pkg/srv/...`).
- `gateway.ros.typesupport`: `for_bus_type(name)` / `for_class(cls)` -> `TypeSupport` with `name`,
  `dds_name` (`pkg::msg::dds_::Type_`), `definition` (`.msg` text), `schema` (`ros2msg` text with
  dependencies, as rosbag2 writes it in MCAP), `hash` (`RIHS01_<hex>`, rosidl's), `encode` and
  `decode` (CDR, XCDR1 little endian with its 4-byte header, from and to the plain dict the native
  face sends; `encode` takes the dataclass too). `JOY` is `sensor_msgs/msg/Joy`.
- `gateway.ros.joy`: `joy_of_controller_state(plain)` (a `creos_messages/ControllerState` as Joy)
  and `joy_topic(ros_topic)` (`/pad/state` -> `/pad/joy`).
- `gateway.ros.cdr.CdrError`: what encoding and decoding raise (hostile bytes: a clear error).
"""
