// The activity panel: recent device events from the bus (Aseba and micro:bit events), availability
// and lock changes, and this page's commands with their results, newest first. The daemon's own log
// stays in journald; this is what the page itself saw.

import { h } from "./dom.js";

const KEEP = 150;
/** An event topic firing again within this time is periodic (a Thymio's `state` event). */
const PERIODIC_MS = 1000;
const EVENT_TYPES = new Set(["asebaros_msgs/Event", "asebaros_msgs/AnonymousEvent", "hwgateway/MicrobitEvent"]);

const lastSeen = new Map();
const periodic = new Set();

let list = null;
let counter = null;

/** The panel's element (once). */
export function activityPanel() {
  list = h("ol", { class: "activity-list", "aria-live": "polite" });
  counter = h("span", { class: "count" }, "nothing yet");
  const clear = h("button", { type: "button", class: "clear" }, "Clear");
  clear.addEventListener("click", () => {
    list.replaceChildren();
    counter.textContent = "cleared";
  });
  return h(
    "details",
    { id: "activity", class: "activity", open: true },
    h("summary", {}, "Activity ", counter, " ", h("small", {}, "device events, availability, commands and results")),
    clear,
    list,
  );
}

/** Add a line: `kind` (event, status, command, result, error, estop), the device (or ""), the text. */
export function logActivity(kind, device, text) {
  if (!list) return;
  const now = new Date();
  const time = now.toTimeString().slice(0, 8);
  list.prepend(
    h(
      "li",
      { class: "activity-item", dataset: { kind, about: device } },
      h("time", { datetime: now.toISOString() }, time),
      h("span", { class: "activity-kind" }, kind),
      device ? h("b", {}, device) : null,
      h("span", { class: "activity-text" }, text),
    ),
  );
  while (list.children.length > KEEP) list.lastChild.remove();
  counter.textContent = `${list.children.length} recent`;
}

/** A bus sample: logged when its type is a device event; an event that fires periodically (a Thymio's
 * `state` event, several a second) is said once, as periodic, and then left to its card. */
export function maybeLogEvent(message) {
  if (!EVENT_TYPES.has(message.type) || periodic.has(message.topic)) return;
  const now = performance.now();
  const last = lastSeen.get(message.topic);
  lastSeen.set(message.topic, now);
  const device = message.topic.slice(0, message.topic.indexOf("/"));
  const data = message.data || {};
  const what = data.name || data.event || message.topic.slice(message.topic.lastIndexOf("/") + 1);
  if (last !== undefined && now - last < PERIODIC_MS) {
    periodic.add(message.topic);
    logActivity("event", device, `${what} fires periodically: its values are in the card, not logged here`);
    return;
  }
  const words = Array.isArray(data.data) ? `[${data.data.slice(0, 8).join(", ")}${data.data.length > 8 ? ", …" : ""}]` : "";
  logActivity("event", device, `${what} ${words}`.trim());
}
