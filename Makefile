# hwgateway: `make demo` runs the gateway with simulated devices; `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Debian packages the tests use: unshare (util-linux) and ip (iproute2) for the loopback-only namespace,
# systemd-analyze (systemd) for the unit, chromium for the dashboard, aseba (asebaplayground, asebaswitch)
# and socat (serial pty bridge) for the Aseba / Thymio tests, locales (localedef's en_US source, which
# Debian's Aseba compiler needs) for the compiler's reference test, nodejs and npm for the roslib
# (roslibjs) client tests of the rosbridge face, the npm Foxglove client for the Foxglove face (npm only where no npm is installed: NodeSource's nodejs
# ships its own and conflicts with Debian's), mosquitto (the broker) and mosquitto-clients
# (mosquitto_sub/pub) for the MQTT bridge tests; the npm @mcap/core reader for the record tests; Thymio Suite's
# npm client (thymio-api, bundled by esbuild) for the TDM face; cmake and g++ for rosidl, which builds the
# ROS 2 test peer's classes of the gateway's message packages; dbus-daemon for the private system bus of the
# BlueZ pairing tests, with libdbus-1-dev, libglib2.0-dev and pkg-config to build dbus-python (python-dbusmock's).
DEB_PACKAGES := util-linux iproute2 systemd chromium aseba socat locales nodejs mosquitto mosquitto-clients cmake g++ \
	dbus-daemon libdbus-1-dev libglib2.0-dev pkg-config
# Node test clients, each with a committed package-lock.json that `npm ci` installs as it is.
NODE_TEST_DIRS := tests/node/rosbridge tests/node/foxglove tests/node/mcap tests/node/thymio

# The ROS 2 test peers (tests/test_ros2_face.py): rclpy from PyPI in a venv per distribution (Jazzy, and
# Kilted as a second one), with rclpy's classes of every gateway message package built by rosidl
# (scripts/build-ros2-peer.sh; per peer: wheels ~2 min once, messages ~8 min of CPU).
ROS2_PEER := .venv-ros2
ROS2_PEER_KILTED := .venv-ros2-kilted
ROS2_PEER_INPUTS := scripts/build-ros2-peer.sh tests/ros2_peer/msg_packages.py \
	$(wildcard gateway/ros/*.py) $(wildcard gateway/messages/*.py)

# Home Assistant's own code for tests/test_ha_discovery.py: homeassistant and just the packages its MQTT
# platforms' discovery schemas import, all pinned and installed --no-deps into their own venv (the whole
# homeassistant install pulls some hundred packages; this is ~30, ~2 min once, then cached by the stamp).
HA_VENV := .venv-ha

.PHONY: demo test lint typecheck pytest fuzz deb-deps node-deps ros2-peer ha-venv bench install check-install clean

$(VENV)/.runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[gamepad,ble,demo,zeroconf]'
	touch $@

$(VENV)/.test: pyproject.toml $(VENV)/.runtime
	$(BIN)/pip install --quiet -e '.[test,dev,gamepad,ble,demo,zeroconf,ros2]'
	touch $@

$(ROS2_PEER)/.stamp: $(VENV)/.test $(ROS2_PEER_INPUTS) tests/ros2_peer/requirements.txt
	PYTHON=$(PYTHON) scripts/build-ros2-peer.sh $(ROS2_PEER) tests/ros2_peer/requirements.txt

$(ROS2_PEER_KILTED)/.stamp: $(VENV)/.test $(ROS2_PEER_INPUTS) tests/ros2_peer/requirements-kilted.txt
	PYTHON=$(PYTHON) scripts/build-ros2-peer.sh $(ROS2_PEER_KILTED) tests/ros2_peer/requirements-kilted.txt

ros2-peer: deb-deps $(ROS2_PEER)/.stamp $(ROS2_PEER_KILTED)/.stamp

$(HA_VENV)/.stamp: tests/ha/requirements.txt
	rm -rf $(HA_VENV)
	$(PYTHON) -m venv $(HA_VENV)
	$(HA_VENV)/bin/pip install --quiet --no-deps -r tests/ha/requirements.txt
	touch $@

ha-venv: $(HA_VENV)/.stamp

demo: $(VENV)/.runtime
	$(BIN)/hwgateway demo $(DEMO_ARGS)

test: deb-deps $(VENV)/.test node-deps ros2-peer ha-venv lint typecheck pytest check-install

deb-deps:
	@scripts/install-deb-deps.sh $(DEB_PACKAGES)

node-deps: deb-deps
	@command -v npm >/dev/null || scripts/install-deb-deps.sh npm
	@for dir in $(NODE_TEST_DIRS); do (cd $$dir && npm ci --no-audit --no-fund --loglevel=error) || exit 1; done

lint: $(VENV)/.test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.test
	$(BIN)/mypy

# Tests run in a fresh network namespace holding only loopback, so nothing can leave this host, on
# PYTEST_WORKERS pytest-xdist workers: most tests wait on sockets and peer processes, so more workers
# than cores pay; on 2 cores, 4 workers starved the timing-bound tests (18 failed, demo starts over 15 s)
# where 3 ran the suite in 7.9 min with one failure. Each file runs whole on one worker (--dist loadfile),
# so a module's shared daemon starts once; free ports, temp dirs and Unix sockets are per worker. The
# slowest files start first (tests/conftest.py's SLOW_FILES_FIRST), not the ones with the most tests.
#
# The project's own modules are compiled to bytecode first: every test that starts the daemon or a
# `hwgateway` command runs a new interpreter, and where PYTHONDONTWRITEBYTECODE is set (as on some CI
# machines) each of them would compile the whole source again (0.3 s of CPU per start on 2 cores,
# seen here). Reading .pyc files is not affected by that setting.
PYTEST_WORKERS ?= 3
pytest: $(VENV)/.test
	$(BIN)/python -m compileall -q gateway devices protocols hwgateway bench tests > /dev/null
	scripts/loopback-only.sh $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The fuzz targets only, each with HWGW_FUZZ_SCALE (default 50) times its `make test` budget, and as
# many times the per-test timeout (pyproject's 60 s: at scale 50 the slowest target took 62 s here).
HWGW_FUZZ_SCALE ?= 50
fuzz: $(VENV)/.test
	HWGW_FUZZ_SCALE=$(HWGW_FUZZ_SCALE) scripts/loopback-only.sh $(BIN)/python -m pytest -m fuzz -p no:cacheprovider --timeout=$$((60 * $(HWGW_FUZZ_SCALE))) $(PYTEST_ARGS)

# Install as a systemd service (root): /opt/hwgateway, /etc/hwgateway, the unit and the udev rules,
# the user; EXTRAS (default gamepad,ble: every extra a device kind needs) picks the extras, EXTRAS= none.
install:
	scripts/install-service.sh

# The same install into a staging root (with the default EXTRAS), then tests/staged checks it: the
# venv holds every extra, `hwgateway` on PATH checks a config using every device kind, the modes.
check-install: $(VENV)/.test
	rm -rf build/stage
	DESTDIR=$(CURDIR)/build/stage scripts/install-service.sh
	HWGW_STAGE=$(CURDIR)/build/stage $(BIN)/python -m pytest -p no:cacheprovider tests/staged

bench: $(VENV)/.test
	scripts/loopback-only.sh $(BIN)/python bench/fanout.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(ROS2_PEER) $(ROS2_PEER_KILTED) $(HA_VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
