#!/bin/sh
# The service's system user and group "hwgateway", a member of the groups of the devices it drives:
#   dialout    USB serial ports (Thymio robots and dongles: /dev/ttyACM*, /dev/ttyUSB*)
#   input      evdev nodes (/dev/input/event*): gamepads SDL reads there, and their rumble, which
#              SDL writes to the same node (force feedback), so the service opens them read/write
#   bluetooth  BlueZ's D-Bus policy on Debian (micro:bit, LEGO hubs), where that group exists
# The group hwgateway itself gets hidraw nodes and Thymio ports from 60-hwgateway.rules.
# An existing user (an older install) is added to the groups it lacks. Run by install-service.sh as root.
set -eu
groups=dialout,input
# udev's package creates "input" on Debian; a system without it gets it here (its nodes stay root's
# until udev gives them to the group, as systemd's default rules do).
getent group input >/dev/null || groupadd --system input
getent group bluetooth >/dev/null && groups="$groups,bluetooth"
getent group hwgateway >/dev/null || groupadd --system hwgateway
if getent passwd hwgateway >/dev/null; then
    usermod --append --groups "$groups" hwgateway
else
    useradd --system --gid hwgateway --groups "$groups" \
        --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin hwgateway
fi
echo "user hwgateway: groups hwgateway,$groups"
