#!/bin/sh
# Install hwgateway as a systemd service:
#   /opt/hwgateway/venv            the program (scripts/install-venv.sh)
#   /etc/hwgateway/config.toml     the configuration (kept when it exists)
#   /etc/systemd/system/hwgateway.service and /etc/udev/rules.d/60-hwgateway.rules
#   the system user and group "hwgateway" (member of dialout for serial ports)
# With DESTDIR=/staging/root the files go under that root, and users, udev and systemd are left alone
# (packaging, and `make check-install`).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
root=${DESTDIR:-}
if [ -z "$root" ] && [ "$(id -u)" != 0 ]; then
    echo "install-service: run as root (sudo make install)" >&2
    exit 1
fi
"$src/scripts/install-venv.sh" "$root/opt/hwgateway/venv" "${EXTRAS:-}"
install -d -m 0755 "$root/etc/hwgateway" "$root/etc/systemd/system" "$root/etc/udev/rules.d"
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
getent group hwgateway >/dev/null || groupadd --system hwgateway
getent passwd hwgateway >/dev/null || useradd --system --gid hwgateway --groups dialout \
    --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin hwgateway
chgrp hwgateway /etc/hwgateway/config.toml
if command -v udevadm >/dev/null; then
    udevadm control --reload && udevadm trigger || echo "udev did not reload; replug the devices" >&2
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    echo "installed. Start it with: systemctl enable --now hwgateway; logs: journalctl -u hwgateway -f"
else
    echo "installed. systemd is not running here: start /opt/hwgateway/venv/bin/hwgateway run yourself"
fi
