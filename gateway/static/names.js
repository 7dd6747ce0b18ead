// Readouts named as their makers name things: the micro:bit's buttons A and B, its magnetometer in
// µT, a LEGO hub's ports by letter and its built-in sensors by what they are, the Kortex arm's state
// by its ArmState name, and the arm's cyclic-loop counters with what a dropped cycle is and a warning
// when many are.

import { h, shortType } from "./dom.js";
import { viewFor } from "./widgets.js";

/** Button names by device kind, when the device does not name its own (`capabilities.controller`). */
export const KIND_BUTTONS = { microbit: ["A", "B"], lego_hub: ["hub button"] };
/** What a LEGO port's stream carries, by its message type (the attached or built-in device). */
const LEGO_PORT_DEVICES = {
  LegoMotor: "motor",
  LegoTilt: "tilt sensor",
  LegoColorDistance: "colour and distance sensor",
};
/** More dropped cycles than this share is worth a warning. */
const DROPPED_WARN = 0.01;
const TESLA_TO_MICRO = 1e6;

/**
 * A stream's heading: its topic below the device id, or its maker's name where the topic is an id.
 * A LEGO hub's external connectors are "port A" to "port D" (LEGO's letters); its built-in devices
 * sit on numbered ports (0x63 is the Technic hub's tilt sensor), named by what they are.
 */
export function streamTitle(device, subtopic, type) {
  const port = device?.kind === "lego_hub" ? /^port\/(.+)$/.exec(subtopic) : null;
  if (!port) return subtopic;
  if (/^[A-Z]$/.test(port[1])) return `port ${port[1]}`;
  return `built-in ${LEGO_PORT_DEVICES[shortType(type)] || "device"} (port ${port[1]})`;
}

/** hwgateway/MicrobitState: buttons A and B by name, the magnetic field in µT. */
export function microbitStateWidget(described) {
  const schema = structuredClone(described?.schema || { type: "object", properties: {} });
  const props = schema.properties || {};
  const button = props.buttons?.items || { type: "integer", minimum: 0, maximum: 2 };
  if (props.buttons) props.buttons = { type: "object", properties: { A: button, B: button } };
  if (props.magnetic_field) {
    props["magnetic_field µT"] = props.magnetic_field;
    delete props.magnetic_field;
  }
  const view = viewFor(schema, "");
  return {
    el: h("div", { class: "widget generic" }, view.el, h("p", { class: "hint" }, "buttons: 0 up, 1 pressed, 2 long press")),
    update(data) {
      const [a, b] = data.buttons || [];
      const field = data.magnetic_field || {};
      const micro = Object.fromEntries(Object.entries(field).map(([k, v]) => [k, Math.round(v * TESLA_TO_MICRO * 10) / 10]));
      view.set({ ...data, buttons: { A: a, B: b }, "magnetic_field µT": micro });
    },
  };
}

/** kortex/Base/ArmStateNotification: the state's ArmState name beside its number. */
export function armStateWidget(described) {
  const names = Object.entries(described?.constants || {});
  const state = h("b", { class: "arm-state" }, "–");
  const time = h("span", { class: "hint" });
  return {
    el: h("div", { class: "widget" }, h("span", { class: "key" }, "arm state "), state, " ", time),
    update(data) {
      const found = names.find(([, value]) => value === data.active_state);
      const name = found ? found[0].replace(/^ARMSTATE_/, "").replace(/_/g, " ").toLowerCase() : "unknown";
      state.textContent = `${name} (${data.active_state})`;
      state.dataset.state = found ? found[0] : "";
    },
  };
}

/** hwgateway/KortexCyclicStats: the counters, and a sentence on dropped cycles. */
export function cyclicStatsWidget(described) {
  const view = viewFor(described?.schema, "");
  const note = h("p", { class: "cyclic-note" });
  return {
    el: h("div", { class: "widget generic" }, note, view.el),
    update(data) {
      view.set(data);
      const cycles = Number(data.cycles) || 0;
      const dropped = Number(data.dropped) || 0;
      const share = cycles ? dropped / cycles : 0;
      note.dataset.severity = share > DROPPED_WARN ? "warn" : "info";
      note.textContent =
        `${dropped.toLocaleString("en")} of ${cycles.toLocaleString("en")} cycles dropped (${(share * 100).toFixed(1)} %): ` +
        "a dropped cycle is a request the arm did not answer within the reply timeout; " +
        (share > DROPPED_WARN
          ? "this many means the link or the machine is too slow for the cyclic rate."
          : "a few are normal.");
    },
  };
}
