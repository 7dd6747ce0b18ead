// A device's own plot: pick any numeric field of any of its topics (the ones the page has received),
// see it over time with a time axis, pause the picture, and zoom between 5 s and 2 min. A LEGO motor's
// position is plotted from its first sample.

import { h } from "./dom.js";
import { TimePlot } from "./plot.js";

const WINDOWS_S = [5, 10, 30, 60, 120];
const KEEP_S = 120;
const MAX_SERIES = 6;
/** Fields plotted as soon as they appear: a LEGO motor's position. */
const AUTO_PLOT = [/\/port\/[A-Z]$/, /^position_deg$/];

/** Numeric leaves of `value`: [["accel.x", ["accel", "x"]], ["prox[0]", ["prox", 0]], ...] (arrays up to 16 items). */
function numericLeaves(value, prefix = "", steps = [], out = []) {
  if (typeof value === "number") out.push([prefix, steps]);
  else if (Array.isArray(value)) {
    if (value.length <= 16) value.forEach((item, i) => numericLeaves(item, `${prefix}[${i}]`, [...steps, i], out));
  } else if (value && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      if (key === "stamp" || key === "timestamp") continue; // the clock is the time axis
      numericLeaves(item, prefix ? `${prefix}.${key}` : key, [...steps, key], out);
    }
  }
  return out;
}

/** The value at `steps` in `data` (undefined when absent or not a number). */
function valueAt(data, steps) {
  let value = data;
  for (const step of steps) value = value?.[step];
  return typeof value === "number" ? value : undefined;
}

/** The picker for device `deviceId`: `{el, offer(topic, data)}`. */
export function createPicker(deviceId) {
  const known = new Map(); // "topic field" -> [topic, path, steps]
  const lastData = new Map(); // topic -> its last sample's data
  const listed = new Set(); // topics whose fields are in the list
  const chosen = []; // [{topic, path, label}]
  const select = h("select", { class: "pick-field", "aria-label": "numeric field to plot" }, h("option", { value: "" }, "pick a numeric field…"));
  const add = h("button", { type: "button", class: "pick-add" }, "Plot");
  const clear = h("button", { type: "button", class: "pick-clear" }, "Clear");
  const pause = h("button", { type: "button", class: "pick-pause", "aria-pressed": "false" }, "Pause");
  const zoom = h(
    "select",
    { class: "pick-window", "aria-label": "time window" },
    WINDOWS_S.map((s) => h("option", { value: String(s), selected: s === 10 }, `last ${s} s`)),
  );
  const slot = h("div", { class: "pick-plot" });
  const empty = h("p", { class: "hint" }, "Choose a field and press Plot: every numeric field the device publishes is listed.");
  let plot = null;

  const rebuild = () => {
    plot = chosen.length
      ? new TimePlot({
          labels: chosen.map((c) => c.label),
          windowS: Number(zoom.value),
          keepS: KEEP_S,
          height: 110,
          timeAxis: true,
        })
      : null;
    // The last value of each field at once (a topic that publishes only on change may not send again soon).
    if (plot) plot.push(chosen.map((c) => valueAt(lastData.get(c.topic), c.steps)));
    if (plot && pause.getAttribute("aria-pressed") === "true") plot.setPaused(true);
    slot.replaceChildren(plot ? plot.el : empty);
  };
  const choose = (topic, path, steps) => {
    if (chosen.some((c) => c.topic === topic && c.path === path) || chosen.length >= MAX_SERIES) return;
    const suffix = topic.slice(deviceId.length + 1);
    chosen.push({ topic, path, steps, label: `${suffix} ${path}` });
    rebuild();
  };
  add.addEventListener("click", () => {
    const entry = known.get(select.value);
    if (entry) choose(...entry);
  });
  clear.addEventListener("click", () => {
    chosen.length = 0;
    rebuild();
  });
  pause.addEventListener("click", () => {
    const paused = pause.getAttribute("aria-pressed") !== "true";
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume" : "Pause";
    plot?.setPaused(paused);
  });
  zoom.addEventListener("change", () => plot?.setWindow(Number(zoom.value)));
  rebuild();

  const el = h(
    "div",
    { class: "stream picker", dataset: { picker: deviceId } },
    h("h3", {}, "Plot", h("small", {}, "any numeric field, over time")),
    h("div", { class: "row" }, select, add, pause, zoom, clear),
    slot,
  );
  return {
    el,
    offer(topic, data) {
      lastData.set(topic, data);
      // A topic's fields are listed from its first sample (the work per sample stays small).
      if (!listed.has(topic)) {
        listed.add(topic);
        for (const [path, steps] of numericLeaves(data)) {
          const key = `${topic} ${path}`;
          if (known.has(key)) continue;
          known.set(key, [topic, path, steps]);
          select.append(h("option", { value: key }, `${topic.slice(deviceId.length + 1)} · ${path}`));
          if (AUTO_PLOT[0].test(topic) && AUTO_PLOT[1].test(path)) choose(topic, path, steps);
        }
      }
      if (!plot || !chosen.some((c) => c.topic === topic)) return;
      plot.push(chosen.map((c) => (c.topic === topic ? valueAt(data, c.steps) : undefined)));
    },
  };
}
