"""The ROS 2 face: the gateway as ROS 2 nodes on a DDS domain, without ROS (docs/ros2.md).

A bare Cyclone DDS participant (PyPI `cyclonedds`, the `ros2` extra) speaks what rmw speaks: topics
`rt/<ros name>`, DDS type names `pkg::msg::dds_::Type_`, `typehash=RIHS01_<hex>;` in each
endpoint's USER_DATA, and the nodes on `ros_discovery_info`. Samples are CDR from the shared type
layer (`gateway.ros.typesupport`), written as raw bytes. Modules:

- `availability`: whether the extra can run here, and why not;
- `qos`: the QoS of each kind of topic, as rclpy's profiles set them;
- `dds`: the participant, raw writers and readers (the only module that imports `cyclonedds`
  besides `discovery`);
- `discovery`: `ros_discovery_info`, the node identities;
- `graph`: which node publishes and subscribes what (from the ROS naming rule, `gateway.ros.names`);
- `commands`: command topics as subscriptions, each under a lease while a ROS publisher is on it;
- `face`: the face contract (`gateway.faces.contract.Face`) over all of it.
"""
