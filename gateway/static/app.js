// The hwgateway dashboard: every device live, and its commands. A client like any other: it uses only
// the public WebSocket protocol (hello, auth, list_devices, describe, subscribe, command, estop; an
// admin token's scan, pair and reload, in admin.js).

import { OPEN, describeWho, refusalFor } from "./access.js";
import { activityPanel, logActivity, maybeLogEvent } from "./activity.js";
import { createAdmin } from "./admin.js";
import { Connection } from "./connection.js";
import { allowControl, createControl, sentence } from "./controls.js";
import { h, shortType } from "./dom.js";
import { layoutCards, relayout } from "./layout.js";
import { streamTitle } from "./names.js";
import { createPicker } from "./picker.js";
import { createWidget, eventLayout } from "./widgets.js";

/** Enough for smooth plots; the gateway coalesces faster topics to this rate per topic. */
const MAX_RATE_HZ = 30;
const TOKEN_KEY = "hwgateway.token";

const ui = {
  connection: document.getElementById("connection"),
  server: document.getElementById("server"),
  auth: document.getElementById("auth"),
  token: document.getElementById("token"),
  authError: document.getElementById("auth-error"),
  estop: document.getElementById("estop"),
  estopResult: document.getElementById("estop-result"),
  devices: document.getElementById("devices"),
  empty: document.getElementById("empty"),
  filter: document.getElementById("filter"),
  collapseAll: document.getElementById("collapse-all"),
  expandAll: document.getElementById("expand-all"),
  shown: document.getElementById("shown"),
  who: document.getElementById("who"),
  estopWhy: document.getElementById("estop-why"),
};
ui.devices.before(activityPanel());
const COLLAPSED_KEY = "hwgateway.collapsed";

/** Described types by name (filled by `describe`), kept across reconnections. */
const known = new Map();
const describing = new Map();
/** Devices by id: {info, card, status, detail, streamsEl, streams: Map(topic → stream)}. */
let devices = new Map();
let subscription = null;
let refreshTimer = null;
/** Who the page is signed in as (the `auth` answer), or null before signing in. */
let who = null;

const connection = new Connection(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`, {
  onHello,
  onPush,
  onStatus,
});

// Add device (scan), Pair and Reload, above the device cards; a reload that changed something lists them again.
ui.devices.before(createAdmin(connection, { onReloaded: () => ready() }));

// -- connection and sign-in ------------------------------------------------------------------------

function setConnection(state, text) {
  document.body.dataset.connection = state;
  ui.connection.dataset.state = state;
  ui.connection.textContent = text;
  setEstopAvailable(state);
}

/** STOP ALL needs an open, signed-in session: otherwise it is shown unavailable, saying why. */
function setEstopAvailable(state) {
  const why = {
    connecting: "STOP ALL is unavailable: the page is still connecting to the gateway.",
    closed: "STOP ALL is unavailable: the page has no connection to the gateway. Stop devices at the robot.",
    auth: "STOP ALL is unavailable until you sign in with a token (any valid token may stop everything).",
    error: "",
  }[state];
  const unavailable = Boolean(why) || (state === "error" && !who);
  ui.estop.disabled = unavailable;
  ui.estop.setAttribute("aria-disabled", String(unavailable));
  ui.estopWhy.hidden = !unavailable;
  ui.estopWhy.textContent = unavailable ? why || "STOP ALL is unavailable: the gateway refused this page." : "";
  ui.estop.title = unavailable ? ui.estopWhy.textContent : "Emergency stop: every device stops its actuators now";
}

function onStatus(status, detail) {
  if (status === "connecting") setConnection("connecting", "connecting…");
  if (status === "waiting") {
    setConnection("closed", `disconnected: ${detail}`);
    logActivity("status", "", `disconnected from the gateway: ${detail}`);
    subscription = null; // subscriptions end with the session
    who = null; // a new session signs in again
    // Without the gateway nobody knows how a device is doing: say so instead of showing the last status.
    for (const device of devices.values()) {
      device.card.classList.add("stale");
      showStatus(device, "unknown", "", "no connection to the gateway");
    }
  }
}

async function onHello(hello) {
  ui.server.textContent = `${hello.server} ${hello.version} · session ${hello.session}`;
  if (!hello.auth_required) {
    who = OPEN;
    showWho();
    return ready();
  }
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) return authenticate(token);
  askForToken("");
}

function showWho() {
  ui.who.textContent = describeWho(who);
  ui.who.dataset.role = who?.role || "";
  ui.who.hidden = !who;
}

/** Grey out each control the signed-in token may not send, saying why. */
function applyAccess(device) {
  for (const control of device.fieldset.querySelectorAll("fieldset.control")) {
    const type = control.dataset.command;
    allowControl(control, refusalFor(who, device.info.id, known.get(type)));
  }
}

function askForToken(message) {
  setConnection("auth", "token needed");
  ui.auth.hidden = false;
  ui.authError.textContent = message;
  ui.token.focus();
}

async function authenticate(token) {
  setConnection("auth", "signing in…");
  const result = await connection.request("auth", { token });
  if (!result.ok) {
    sessionStorage.removeItem(TOKEN_KEY);
    return askForToken(`${result.error.code}: ${result.error.message}`);
  }
  who = { name: result.data.name ?? "token", role: result.data.role ?? "admin", devices: result.data.devices ?? ["*"] };
  showWho();
  logActivity("status", "", describeWho(who));
  sessionStorage.setItem(TOKEN_KEY, token);
  ui.auth.hidden = true;
  ui.token.value = "";
  ui.authError.textContent = "";
  return ready();
}

ui.auth.addEventListener("submit", (event) => {
  event.preventDefault();
  const token = ui.token.value.trim();
  if (token) authenticate(token);
});

/** Signed in (or no auth): list the devices, describe their types, subscribe to everything. */
async function ready() {
  setConnection("loading", "loading devices…");
  const listed = await connection.request("list_devices");
  if (!listed.ok) return setConnection("error", `list_devices failed: ${listed.error.code}: ${listed.error.message}`);
  await renderDevices(listed.data.devices);
  if (subscription !== null) await connection.request("unsubscribe", { subscription });
  // A new subscription re-sends every topic's latest sample, so freshly built panels fill at once.
  const subscribed = await connection.request("subscribe", { topics: ["**"], max_rate_hz: MAX_RATE_HZ });
  if (!subscribed.ok)
    return setConnection("error", `subscribe failed: ${subscribed.error.code}: ${subscribed.error.message}`);
  subscription = subscribed.data.subscription;
  setConnection("ready", "connected");
}

async function describe(type) {
  if (!describing.has(type)) {
    const pending = connection.request("describe", { type }).then((result) => {
      if (result.ok) {
        known.set(type, result.data);
        return result.data;
      }
      describing.delete(type); // try again next time
      console.warn(`hwgateway: describe ${type} failed: ${result.error.code}: ${result.error.message}`);
      return null;
    });
    describing.set(type, pending);
  }
  return describing.get(type);
}

// -- devices ---------------------------------------------------------------------------------------

async function renderDevices(list) {
  await Promise.all([...new Set(list.flatMap((d) => [...d.publishes, ...d.accepts]))].map(describe));
  devices = new Map(list.map((info) => [info.id, buildDevice(info)]));
  ui.empty.hidden = list.length > 0;
  applyFilter(false);
  layoutCards(
    ui.devices,
    [...devices.values()].map((device) => device.card),
  );
}

function buildDevice(info) {
  const status = h("span", { class: "status" });
  const lock = h("span", { class: "lock", hidden: true });
  const detail = h("p", { class: "detail" });
  const streamsEl = h("div", { class: "streams" });
  const picker = createPicker(info.id);
  const readback = info.accepts.includes("thymio_msgs/Led") ? thymioReadback(info.id) : null;
  const controls = info.accepts.map((type) =>
    createControl({
      device: info,
      type,
      described: known.get(type),
      send: async (t, data, timeout_s) => {
        const result = await command(info.id, t, data, timeout_s);
        logResult(info.id, t, data, result, timeout_s);
        // What the robot now holds, read from it: the command's own result only says it was sent.
        if (readback && t !== GET_VARIABLE) readback.refresh();
        return result;
      },
    }),
  );
  const toggle = h("button", { class: "toggle", type: "button", "aria-expanded": "true", title: "collapse" }, "▾");
  const reason = h("p", { class: "disabled-reason", hidden: true });
  const fieldset = h("fieldset", {}, controls);
  const card = h(
    "section",
    { class: "device", dataset: { device: info.id, kind: info.kind } },
    h("header", {}, toggle, h("h2", {}, info.id), h("span", { class: "kind" }, info.kind), lock, status),
    detail,
    h(
      "div",
      { class: "body" },
      capabilities(info.capabilities),
      streamsEl,
      picker.el,
      readback?.el,
      controls.length ? h("div", { class: "controls" }, h("h3", {}, "Commands"), reason, fieldset) : null,
    ),
  );
  const device = { info, card, status, lock, detail, streamsEl, streams: new Map(), toggle, reason, fieldset, picker };
  toggle.addEventListener("click", () => setCollapsed(device, !card.classList.contains("collapsed"), true));
  setCollapsed(device, collapsedIds().has(info.id), false);
  setStatus(device, info.status, info.detail);
  setLock(device, info.locked_by);
  applyAccess(device);
  if (readback && info.status === "connected") readback.refresh();
  return device;
}

// -- a Thymio's outputs, read back from the robot ------------------------------------------------------

const GET_VARIABLE = "asebaros_msgs/GetVariable";
/** Variables where the gateway's Thymio program keeps the last command of each kind. */
const THYMIO_READBACK = [
  ["gw.led_top", "top LED", "rgb"],
  ["gw.led_bottom_left", "bottom left LED", "rgb"],
  ["gw.led_bottom_right", "bottom right LED", "rgb"],
  ["gw.sound", "last tone", "tone"],
  ["gw.system_sound", "system sound", "number"],
];
/** Thymio LED intensities run 0..32; tone durations are in 1/60 s. */
const THYMIO_LED_MAX = 32;
const SOUND_TICKS_PER_S = 60;

function thymioReadback(deviceId) {
  const rows = THYMIO_READBACK.map(([variable, label, kind]) => {
    const swatch = kind === "rgb" ? h("span", { class: "swatch-big" }) : null;
    const text = h("span", { class: "text" }, "–");
    const el = h(
      "div",
      { class: "field", dataset: { readback: variable } },
      h("span", { class: "key" }, label),
      h("span", { class: "value" }, swatch, text),
    );
    return { variable, kind, swatch, text, el };
  });
  const el = h(
    "div",
    { class: "stream readback" },
    h("h3", {}, "On the robot", h("small", {}, "read back with GetVariable")),
    h("div", { class: "fields" }, rows.map((row) => row.el)),
  );
  let pending = null;
  async function refresh() {
    for (const row of rows) {
      const result = await command(deviceId, GET_VARIABLE, { variable: row.variable });
      if (!result.ok) {
        row.text.textContent = `– (${result.error.code})`;
        continue;
      }
      const words = result.data.data || [];
      if (row.kind === "rgb") {
        row.swatch.style.background = `rgb(${words.map((w) => Math.round((255 * w) / THYMIO_LED_MAX)).join(", ")})`;
        row.text.textContent = `${words.join(", ")} of ${THYMIO_LED_MAX}`;
      } else if (row.kind === "tone") {
        const [frequency, ticks] = words;
        row.text.textContent = `${frequency} Hz for ${(ticks / SOUND_TICKS_PER_S).toFixed(2)} s`;
      } else {
        row.text.textContent = words.join(", ");
      }
    }
  }
  return {
    el,
    refresh() {
      // One read at a time; a command during a read asks for one more read afterwards.
      pending = (pending || Promise.resolve()).then(refresh).finally(() => (pending = null));
    },
  };
}

// -- collapsing and filtering (remembered in this browser) -------------------------------------------

function collapsedIds() {
  try {
    return new Set(JSON.parse(localStorage.getItem(COLLAPSED_KEY) || "[]"));
  } catch {
    return new Set();
  }
}

function setCollapsed(device, collapsed, remember) {
  device.card.classList.toggle("collapsed", collapsed);
  device.toggle.textContent = collapsed ? "▸" : "▾";
  device.toggle.setAttribute("aria-expanded", String(!collapsed));
  device.toggle.title = collapsed ? "expand" : "collapse";
  if (!remember) return;
  const ids = collapsedIds();
  if (collapsed) ids.add(device.info.id);
  else ids.delete(device.info.id);
  localStorage.setItem(COLLAPSED_KEY, JSON.stringify([...ids]));
}

function applyFilter(deal = true) {
  const words = ui.filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const device of devices.values()) {
    const text = `${device.info.id} ${device.info.kind}`.toLowerCase();
    const visible = words.every((word) => text.includes(word));
    device.card.hidden = !visible;
    shown += visible ? 1 : 0;
  }
  ui.shown.textContent = words.length ? `${shown} of ${devices.size} devices` : `${devices.size} devices`;
  if (deal) relayout();
}

ui.filter.addEventListener("input", () => applyFilter());
ui.collapseAll.addEventListener("click", () => {
  for (const device of devices.values()) if (!device.card.hidden) setCollapsed(device, true, true);
  relayout();
});
ui.expandAll.addEventListener("click", () => {
  for (const device of devices.values()) if (!device.card.hidden) setCollapsed(device, false, true);
  relayout();
});

function capabilities(caps) {
  const parts = Object.entries(caps || {})
    // names and layouts for the widgets, not for reading
    .filter(([name, value]) => value !== false && name !== "controller" && name !== "events")
    .map(([name, value]) =>
      value === true ? name : `${name} ${typeof value === "object" ? JSON.stringify(value) : value}`,
    );
  return parts.length ? h("p", { class: "caps" }, parts.join(" · ")) : null;
}

function setStatus(device, status, detail) {
  device.card.classList.remove("stale");
  showStatus(device, status, detail, status === "connected" ? "" : `the device is ${status}`);
}

/** The badge, the detail line (red only when the device failed) and whether its controls can be used. */
function showStatus(device, status, detail, disabledBecause) {
  device.status.textContent = status;
  device.status.dataset.status = status;
  device.card.dataset.status = status;
  device.detail.textContent = detail || "";
  device.detail.hidden = !detail;
  device.detail.dataset.severity = status === "disconnected" ? "error" : "info";
  device.fieldset.disabled = Boolean(disabledBecause);
  device.reason.hidden = !disabledBecause;
  device.reason.textContent = disabledBecause ? `Commands are off: ${disabledBecause}.` : "";
}

/** Who holds the device's exclusive control lock: others' commands are answered `locked` meanwhile. */
function setLock(device, holder) {
  device.lockedBy = holder || null;
  device.lock.hidden = !holder;
  device.lock.textContent = holder ? `locked by ${holder}` : "";
  device.lock.title = holder ? `client ${holder} has exclusive control; other clients' commands are refused` : "";
}

/** Commands and their results in the activity panel; a held drive logs its first send and its release only. */
const holding = new Map();
function logResult(device, type, data, result, timeout_s) {
  const key = `${device} ${type}`;
  if (timeout_s && holding.has(key) && result.ok) return;
  if (timeout_s) holding.set(key, true);
  setTimeout(() => holding.delete(key), 1000);
  const sent = `${type} ${JSON.stringify(data)}`;
  const text = sent.length > 160 ? `${sent.slice(0, 157)}…` : sent;
  if (result.ok) logActivity("command", device, `${text} → ok`);
  else logActivity("error", device, `${text} → ${result.error.code}: ${sentence(result.error.message)}`);
}

function command(device, type, data, timeout_s) {
  return connection.request("command", { device, type, data, ...(timeout_s ? { timeout_s } : {}) });
}

// A device the page does not know yet (added while connected): list again, once per burst.
function refreshSoon() {
  if (refreshTimer || document.body.dataset.connection !== "ready") return;
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    ready();
  }, 300);
}

const ASEBA_EVENT = "asebaros_msgs/Event";
const relisting = new Set();

/** A script loaded since the page listed `device` names events it does not know: list it again (once a burst). */
function relistSoon(device) {
  if (relisting.has(device.info.id)) return;
  relisting.add(device.info.id);
  setTimeout(async () => {
    const listed = await connection.request("list_devices");
    const fresh = listed.ok && listed.data.devices.find((d) => d.id === device.info.id);
    // The widgets hold `device.info`: update it in place rather than rebuilding the card.
    if (fresh) device.info.capabilities = fresh.capabilities;
    setTimeout(() => relisting.delete(device.info.id), 2000);
  }, 300);
}

// -- pushes ----------------------------------------------------------------------------------------

function onPush(message) {
  if (message.op === "state") return onState(message);
  if (message.op === "device") {
    const device = devices.get(message.device);
    if (device) {
      if (device.card.dataset.status !== message.status)
        logActivity("status", message.device, `${message.status}${message.detail ? `: ${message.detail}` : ""}`);
      if ((device.lockedBy || null) !== (message.locked_by || null))
        logActivity("status", message.device, message.locked_by ? `locked by ${message.locked_by}` : "unlocked");
      setStatus(device, message.status, message.detail);
      setLock(device, message.locked_by);
    } else refreshSoon();
  } else if (message.op === "close") {
    setConnection("closed", `closed by the gateway: ${message.code}: ${message.reason}`);
  }
}

function onState(message) {
  const id = message.topic.slice(0, message.topic.indexOf("/"));
  const device = devices.get(id);
  if (!device) return refreshSoon();
  maybeLogEvent(message);
  if (message.type === ASEBA_EVENT && !eventLayout(device.info, message.topic)) relistSoon(device);
  let stream = device.streams.get(message.topic);
  if (!stream || stream.type !== message.type) {
    stream?.el.remove();
    stream = createStream(device, message);
    device.streams.set(message.topic, stream);
  }
  stream.receive(message);
  device.picker.offer(message.topic, message.data);
}

function createStream(device, message) {
  const widget = createWidget(message.type, known.get(message.type), device.info, message.topic);
  const subtopic = message.topic.slice(device.info.id.length + 1);
  const meta = h("span", { class: "meta" });
  const el = h(
    "div",
    { class: "stream", dataset: { topic: message.topic, type: message.type } },
    h("h3", {}, streamTitle(device.info, subtopic, message.type), h("small", {}, shortType(message.type)), meta),
    widget.el,
  );
  // Panels follow the device's `publishes` order (its main state first), then topic names, whatever
  // order their first samples arrive in.
  const rank = (type) => {
    const index = device.info.publishes.indexOf(type);
    return index < 0 ? device.info.publishes.length : index;
  };
  const before = (a, b) => rank(a.type) - rank(b.type) || (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0);
  const after = [...device.streamsEl.children].find((other) => before(message, other.dataset) < 0);
  device.streamsEl.insertBefore(el, after || null);
  let count = 0;
  let since = performance.now();
  let rate = "";
  return {
    el,
    type: message.type,
    receive(sample) {
      widget.update(sample.data);
      count += 1;
      const now = performance.now();
      if (now - since >= 1000) {
        rate = ` · ${((count * 1000) / (now - since)).toFixed(0)}/s`;
        count = 0;
        since = now;
      }
      meta.textContent = `seq ${sample.seq}${rate}`;
    },
  };
}

// -- emergency stop --------------------------------------------------------------------------------

ui.estop.addEventListener("click", async () => {
  ui.estopResult.dataset.state = "pending";
  ui.estopResult.textContent = "stopping…";
  const result = await connection.request("estop");
  logActivity("estop", "", result.ok ? `STOP ALL: ${result.data.devices.length} devices answered` : `STOP ALL refused: ${result.error.message}`);
  if (!result.ok) {
    ui.estopResult.dataset.state = "error";
    ui.estopResult.textContent = `✗ estop: ${result.error.code}: ${result.error.message}`;
    return;
  }
  const stopped = result.data.devices.filter((d) => d.ok).map((d) => d.device);
  const failed = result.data.devices.filter((d) => !d.ok).map((d) => `${d.device} (${d.error})`);
  ui.estopResult.dataset.state = failed.length ? "error" : "ok";
  ui.estopResult.textContent = failed.length
    ? `✗ failed: ${failed.join(", ")}; stopped: ${stopped.join(", ") || "none"}`
    : `✓ stopped ${stopped.join(", ") || "no devices"}`;
});

connection.start();
