#!/bin/sh
# Install the Debian packages named as arguments when running as root; otherwise name the missing ones.
missing=""
for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing="$missing $package"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "installing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends $missing
else
    echo "missing Debian packages:$missing (run 'sudo apt-get install$missing'); tests needing them will skip," \
         "or fail under HWGW_REQUIRE_PEERS=1" >&2
fi
