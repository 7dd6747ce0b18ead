#!/bin/sh
# Install hwgateway as a systemd service:
#   /opt/hwgateway/venv            the program (scripts/install-venv.sh), with the extras in EXTRAS
#   /usr/local/bin/hwgateway       a link to it, so `hwgateway check-config ...` works from a shell
#   /etc/hwgateway/config.toml     the configuration (kept when it exists); the folder is root:hwgateway 0750,
#                                  as the unit's ConfigurationDirectoryMode= sets it at every start
#   /etc/systemd/system/hwgateway.service and /etc/udev/rules.d/60-hwgateway.rules
#   the system user and group "hwgateway" and its device groups (scripts/install-user.sh)
# EXTRAS: the optional dependencies to install, comma-separated; unset: gamepad,ble (every device kind
# the README describes); EXTRAS= (empty): none.
# With DESTDIR=/staging/root the files go under that root, and users, udev and systemd are left alone
# (packaging, and `make check-install`).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
root=${DESTDIR:-}
if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then
    echo "install-service: run as root (sudo make install)" >&2
    exit 1
fi
"$src/scripts/install-venv.sh" "$root/opt/hwgateway/venv" "${EXTRAS-gamepad,ble}"
install -d -m 0755 "$root/etc/systemd/system" "$root/etc/udev/rules.d" "$root/usr/local/bin"
# The mode the unit's ConfigurationDirectoryMode= gives it (also to a folder an older install made 0755).
install -d -m 0750 "$root/etc/hwgateway"
chmod 0750 "$root/etc/hwgateway"
# An absolute link: right once the staging root is the real one.
ln -sfn /opt/hwgateway/venv/bin/hwgateway "$root/usr/local/bin/hwgateway"
if [ -e "$root/etc/hwgateway/config.toml" ]; then
    echo "keeping the existing $root/etc/hwgateway/config.toml"
else
    install -m 0640 "$src/config.toml" "$root/etc/hwgateway/config.toml"
fi
install -m 0644 "$src/systemd/hwgateway.service" "$root/etc/systemd/system/hwgateway.service"
install -m 0644 "$src/systemd/60-hwgateway.rules" "$root/etc/udev/rules.d/60-hwgateway.rules"
if [ -n "$root" ]; then
    echo "installed under $root"
    exit 0
fi
"$src/scripts/install-user.sh"
# systemd does not chown a ConfigurationDirectory= (it stays root's): the group lets the service in.
chgrp hwgateway /etc/hwgateway /etc/hwgateway/config.toml
if command -v udevadm >/dev/null; then
    udevadm control --reload && udevadm trigger || echo "udev did not reload; replug the devices" >&2
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    echo "installed. Check the config as the service reads it: sudo -u hwgateway hwgateway check-config /etc/hwgateway/config.toml"
    echo "Start it with: systemctl enable --now hwgateway; logs: journalctl -u hwgateway -f"
else
    echo "installed. systemd is not running here: start /opt/hwgateway/venv/bin/hwgateway run yourself"
fi
